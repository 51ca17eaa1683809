//! Secrets never reach the terminal or a report: a token put by `${VAR}` into a URL's
//! userinfo, path and query, into headers and into a stdio server's arguments is absent
//! from every command's stdout and stderr (`tools`, `call`, `check` as text, JSON and
//! JUnit, and a debug-logged run), against a loopback port that refuses, an HTTP fixture
//! that answers 404 on the secret path, and a stdio server that echoes its arguments to
//! stderr before it exits; and the gateway's startup report and debug logs.

use std::time::Duration;

use serde_json::json;
use switchboard_session::{Session, SessionConfig};
use switchboard_testkit::serve::{HttpServer, free_port};
use switchboard_testkit::wait::{TEST_DEADLINE, within};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};

use crate::{Run, config, fixture_entry, switchboard_with_env, workspace_root};

const VARIABLE: &str = "SWITCHBOARD_TEST_SECRET_TOKEN";
const SECRET: &str = "tok-9f8e7d6c5b4a";

fn run(args: &[&str]) -> Run {
    switchboard_with_env(args, &[(VARIABLE, SECRET)])
}

fn run_logged(args: &[&str]) -> Run {
    switchboard_with_env(args, &[(VARIABLE, SECRET), ("SWITCHBOARD_LOG", "debug")])
}

fn assert_hidden(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(SECRET),
            "{what} shows the secret on {stream}:\n{text}"
        );
    }
}

#[test]
fn a_token_from_the_environment_never_reaches_the_terminal_or_a_report() {
    let refused = free_port();
    let http = HttpServer::fixture(&[]);
    let token = format!("${{{VARIABLE}}}");
    let path = config(json!({
        "refused": {
            "type": "http",
            "url": format!("http://user:{token}@127.0.0.1:{refused}/mcp/{token}?key={token}"),
            "headers": {"X-Api-Key": token},
        },
        "wrong-path": {
            "type": "http",
            "url": format!("{}/{token}?key={token}", http.url()),
            "headers": {"Authorization": format!("Bearer {token}")},
        },
        "query": {
            "type": "http",
            "url": format!("{}?key={token}", http.url()),
        },
        "echoes-args": fixture_entry(&["--mode", "good", &format!("--token={token}")]),
    }));
    let path = path.display().to_string();
    let junit = workspace_root()
        .join("target/cli-tests")
        .join(format!("secrets-junit-{}.xml", std::process::id()))
        .display()
        .to_string();

    let tools = run(&["tools", "--config", &path]);
    assert_eq!(tools.code, 3, "{}", tools.stderr);
    assert_hidden("tools", &tools);
    assert!(
        tools
            .stderr
            .contains("could not reach http://***@127.0.0.1:"),
        "the URL is named in its display form:\n{}",
        tools.stderr
    );
    assert!(
        tools
            .stderr
            .contains(&format!("/mcp/${{{VARIABLE}}}?key=***")),
        "an expansion in the path is shown as written:\n{}",
        tools.stderr
    );
    assert!(
        tools.stderr.contains("--token=<redacted>"),
        "a stderr tail that echoes an argument is redacted:\n{}",
        tools.stderr
    );
    assert!(
        tools.stdout.starts_with("query: "),
        "the server with a token in its query works:\n{}",
        tools.stdout
    );

    for server in ["refused", "wrong-path", "query", "echoes-args"] {
        let call = run(&[
            "call",
            "--config",
            &path,
            server,
            "echo",
            r#"{"text":"hi"}"#,
        ]);
        assert_hidden(&format!("call {server}"), &call);
        let logged = run_logged(&[
            "call",
            "--config",
            &path,
            server,
            "echo",
            r#"{"text":"hi"}"#,
        ]);
        assert_hidden(&format!("call {server} with debug logs"), &logged);
    }
    let logged = run_logged(&["tools", "--config", &path]);
    assert_hidden("tools with debug logs", &logged);
    assert!(logged.stderr.contains("DEBUG"), "{}", logged.stderr);

    // The servers that fail at once (a working one takes the whole suite's time).
    let failing = ["refused", "wrong-path", "echoes-args"];
    let check = run(&[
        &["check", "--config", &path, "--junit", &junit][..],
        &failing[..],
    ]
    .concat());
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert_hidden("check", &check);
    let report = std::fs::read_to_string(&junit).expect("junit report");
    assert!(
        !report.contains(SECRET),
        "the JUnit report shows the secret:\n{report}"
    );
    let json = run(&[&["check", "--config", &path, "--json"][..], &failing[..]].concat());
    assert_hidden("check --json", &json);
    serde_json::from_str::<serde_json::Value>(&json.stdout).expect("valid JSON");
}

#[tokio::test]
async fn the_gateways_startup_report_and_logs_hide_the_token() {
    let refused = free_port();
    let token = format!("${{{VARIABLE}}}");
    let path = config(json!({
        "good": fixture_entry(&[]),
        "refused": {
            "type": "http",
            "url": format!("http://127.0.0.1:{refused}/mcp/{token}?key={token}"),
        },
        "echoes-args": fixture_entry(&["--mode", "good", &format!("--token={token}")]),
    }));
    let spec = ProcessSpec {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        args: vec![
            "serve".into(),
            "--config".into(),
            path.display().to_string(),
        ],
        env: vec![
            (VARIABLE.into(), SECRET.into()),
            ("SWITCHBOARD_LOG".into(), "debug".into()),
            (crate::NO_ERA_MEMO.0.into(), crate::NO_ERA_MEMO.1.into()),
        ],
        cwd: None,
        sandbox: None,
    };
    let session = within(
        "the gateway's handshake",
        TEST_DEADLINE,
        Session::spawn_stdio(
            &spec,
            StdioOptions::new("gateway"),
            SessionConfig::new("gateway"),
        ),
    )
    .await
    .expect("the gateway initializes");
    let stderr = crate::support::stderr_of(&session);
    let _ = session
        .shutdown(ShutdownGrace {
            after_stdin_close: Duration::from_secs(5),
            after_sigterm: Duration::from_secs(1),
        })
        .await;
    assert!(stderr.contains("server(s) ready"), "{stderr}");
    assert!(
        !stderr.contains(SECRET),
        "the gateway's stderr shows the secret:\n{stderr}"
    );
}
