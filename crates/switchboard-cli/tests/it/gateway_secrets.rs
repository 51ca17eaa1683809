//! The gateway never sends its servers' secrets to a client. Upstreams that fail in the ways
//! that quote them back: a stdio server that wrote its environment to stderr and then
//! crashes, one that times out, and an HTTP server whose 500 page quotes the request's URL
//! and headers (`echo-headers-on-call`). Secrets come from `${VAR}` expansions and from
//! literal `env` and `headers` values. Over stdio the client is told everything the gateway
//! knows, secrets replaced; over HTTP it is told which server failed and how, while the
//! operator's log keeps the whole account (secrets replaced there too); `--full-errors`
//! gives HTTP clients the stdio account.

use std::path::{Path, PathBuf};

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, Session, SessionConfig, SessionError};
use switchboard_testkit::locate::fixture_bin;
use switchboard_testkit::serve::HttpServer;
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::config;
use crate::serve_http::HttpGateway;

const VARIABLE: &str = "SWITCHBOARD_TEST_GATEWAY_SECRET";
const EXPANDED: &str = "tok-expanded-5a4b3c2d1e";
const LITERAL_ENV: &str = "lit-env-s3cret-0042";
const LITERAL_HEADER: &str = "lit-header-s3cret-0043";
const SECRETS: [&str; 3] = [EXPANDED, LITERAL_ENV, LITERAL_HEADER];

/// Three servers that fail: `crashes` (its `crash` tool), `stalls` (a 1 s deadline) and
/// `echoes` (HTTP, 500 quoting the request).
fn failing_servers(echoing: &HttpServer) -> PathBuf {
    let reference = format!("${{{VARIABLE}}}");
    let script = format!(
        "echo \"starting with API_KEY=$API_KEY TEAM=$TEAM_TOKEN\" >&2; exec '{}'",
        fixture_bin().display()
    );
    let stdio = |timeout: &str| {
        json!({
            "command": "sh",
            "args": ["-c", format!("{script} --mode hostile-text")],
            "env": {"API_KEY": reference, "TEAM_TOKEN": LITERAL_ENV},
            "timeout": timeout,
        })
    };
    config(json!({
        "crashes": stdio("60s"),
        "stalls": stdio("1s"),
        "echoes": {
            "type": "http",
            "url": format!("{}?key={reference}", echoing.url()),
            "headers": {
                "Authorization": format!("Bearer {reference}"),
                "X-Team-Key": LITERAL_HEADER,
            },
        },
    }))
}

/// Calls whose answers would quote a secret, each with what the client gets: a result's
/// text, or an error as `code message` and its `data` (ports and paths replaced). Three
/// fail; the first has its server echo a secret back in its result.
async fn calls_that_quote_secrets(session: &Session) -> String {
    let calls = [
        (
            "crashes__echo",
            json!({"text": format!("the team token is {LITERAL_ENV}")}),
        ),
        ("crashes__crash", json!({})),
        ("stalls__slow", json!({"duration_ms": 60_000})),
        ("echoes__echo", json!({"text": "hi"})),
    ];
    let options = CallOptions {
        timeout: Some(TEST_DEADLINE),
        ..CallOptions::default()
    };
    let mut told = Vec::new();
    for (tool, arguments) in calls {
        let outcome = within(tool, TEST_DEADLINE, async {
            session
                .call_tool_raw(tool, Some(&arguments), &options)
                .await
        })
        .await;
        let line = match outcome {
            Ok(result) => format!("{tool}: {}", result["content"][0]["text"]),
            Err(SessionError::Rpc { error, .. }) => format!(
                "{tool}: {} {}\n  data: {}",
                error.code,
                error.message,
                error.data.unwrap_or(Value::Null)
            ),
            Err(other) => format!("{tool}: not a JSON-RPC error: {other}"),
        };
        told.push(line);
    }
    let text = told.join("\n");
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "a client was told a secret:\n{text}"
        );
    }
    normalise(&text)
}

/// `switchboard serve --http FLAGS` with the servers at `path`, and a client of it.
async fn through_http(path: &Path, flags: &[&str]) -> (HttpGateway, Session) {
    let gateway = HttpGateway::start(path, flags, &[(VARIABLE, EXPANDED)]);
    let session = within(
        "the handshake",
        TEST_DEADLINE,
        Session::connect_http(
            HttpOptions::new("gw", gateway.url()),
            SessionConfig::new("gw"),
        ),
    )
    .await
    .expect("connected");
    (gateway, session)
}

/// `text` with the fixture's path, loopback ports and session ids replaced. An excerpt cut
/// after the session id is cut at a fixed length, so where the cut falls moves with the
/// id's length: what follows the id, up to the count of bytes left out, is shown as `…`.
fn normalise(text: &str) -> String {
    let text = with_ports_hidden(text).replace(&fixture_bin().display().to_string(), "<fixture>");
    let Some((before, after)) = text.split_once("mcp-session-id: ") else {
        return text;
    };
    let end = after.find("\\n").unwrap_or(after.len());
    let rest = &after[end..];
    let rest = match rest.find(" more bytes)") {
        Some(at) => format!("…{}", &rest[at + " more bytes)".len()..]),
        None => rest.to_owned(),
    };
    format!("{before}mcp-session-id: <id>{rest}")
}

/// `127.0.0.1:PORT` → `127.0.0.1:<port>`.
fn with_ports_hidden(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("127.0.0.1:") {
        let (before, after) = rest.split_at(at + "127.0.0.1:".len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push_str("<port>");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_is_told_every_failure_in_full_without_the_secrets() {
    let echoing = HttpServer::fixture(&["--http-fault", "echo-headers-on-call"]);
    let path = failing_servers(&echoing);
    let session = crate::serve::gateway_with_env(&path, &[], &[(VARIABLE, EXPANDED)]).await;
    let told = calls_that_quote_secrets(&session).await;
    let stderr = crate::support::stderr_of(&session);
    let _ = session.shutdown(crate::serve::GRACE).await;
    for secret in SECRETS {
        assert!(
            !stderr.contains(secret),
            "the gateway's log shows a secret:\n{stderr}"
        );
    }
    expect![[r#"
        crashes__echo: "the team token is <redacted>"
        crashes__crash: -32005 server `crashes` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server process exited (exit status: 3)
        --- last stderr output ---
        starting with API_KEY=<redacted> TEAM=<redacted>
        fixture: starting: \u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed
        fixture: crashing: \u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed
          data: {"server":"crashes"}
        stalls__slow: -32001 server `stalls` did not answer `tools/call` within 1s; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)
        --- last stderr output ---
        starting with API_KEY=<redacted> TEAM=<redacted>
        fixture: starting: \u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed
          data: {"server":"stalls","waitedMs":1000}
        echoes__echo: -32005 server `echoes` gave no answer to `tools/call`: HTTP 500 Internal Server Error from http://127.0.0.1:<port>/mcp?key=***: Internal Server Error\nwhile handling POST /mcp?key=<redacted>\nauthorization: <redacted>\nx-team-key: <redacted>\naccept: application/json, text/event-stream\ncontent-type: application/json\nmcp-session-id: <id>…
          data: {"server":"echoes"}"#]].assert_eq(&told);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_client_is_told_which_server_failed_and_how_and_the_log_has_the_rest() {
    let echoing = HttpServer::fixture(&["--http-fault", "echo-headers-on-call"]);
    let path = failing_servers(&echoing);
    let (mut gateway, session) = through_http(&path, &[]).await;
    let told = calls_that_quote_secrets(&session).await;
    drop(session);
    let log = tokio::task::spawn_blocking(move || gateway.terminate_for_log().1.join("\n"))
        .await
        .expect("the log");
    for secret in SECRETS {
        assert!(
            !log.contains(secret),
            "the gateway's log shows a secret:\n{log}"
        );
    }
    for detail in [
        "starting with API_KEY=<redacted> TEAM=<redacted>",
        "did not answer `tools/call` within 1s",
        "HTTP 500 Internal Server Error from http://127.0.0.1:",
        "x-team-key: <redacted>",
    ] {
        assert!(
            log.contains(detail),
            "the operator's log lacks `{detail}`:\n{log}"
        );
    }
    expect![[r#"
        crashes__echo: "the team token is <redacted>"
        crashes__crash: -32005 server `crashes` behind this gateway restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects (the gateway's log has the details)
          data: {"server":"crashes"}
        stalls__slow: -32001 server `stalls` behind this gateway did not answer `tools/call` within 1s; the request was cancelled
          data: {"server":"stalls","waitedMs":1000}
        echoes__echo: -32005 server `echoes` behind this gateway gave no answer to `tools/call` (HTTP 500) (the gateway's log has the details)
          data: {"server":"echoes"}"#]].assert_eq(&told);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_errors_tell_an_http_client_what_a_stdio_client_is_told() {
    let echoing = HttpServer::fixture(&["--http-fault", "echo-headers-on-call"]);
    let path = failing_servers(&echoing);
    let (_gateway, session) = through_http(&path, &["--full-errors"]).await;
    let told = calls_that_quote_secrets(&session).await;
    // The stdio test's snapshot, line for line where the account is full.
    for detail in [
        "crashes__crash: -32005 server `crashes` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server process exited (exit status: 3)\n--- last stderr output ---\nstarting with API_KEY=<redacted> TEAM=<redacted>\n",
        "stalls__slow: -32001 server `stalls` did not answer `tools/call` within 1s;",
        "echoes__echo: -32005 server `echoes` gave no answer to `tools/call`: HTTP 500 Internal Server Error from http://127.0.0.1:<port>/mcp?key=***: Internal Server Error\\nwhile handling POST /mcp?key=<redacted>\\nauthorization: <redacted>\\nx-team-key: <redacted>",
    ] {
        assert!(told.contains(detail), "`{detail}` is not in:\n{told}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fronted_servers_identity_and_instructions_hide_the_secrets() {
    // The server's name is a `${VAR}` expansion: a fronting gateway presents it.
    let path = config(json!({
        "named": {
            "command": fixture_bin(),
            "args": ["--name", format!("${{{VARIABLE}}}")],
        },
    }));
    let session = crate::serve::gateway_with_env(
        &path,
        &["--server", "named", "--no-prefix"],
        &[(VARIABLE, EXPANDED)],
    )
    .await;
    let negotiated = session.negotiated();
    let shown = format!(
        "serverInfo: {:?}\ninstructions: {:?}",
        negotiated.server_info.as_ref().map(|info| &info.name),
        negotiated.instructions
    );
    let _ = session.shutdown(crate::serve::GRACE).await;
    expect![[r#"
        serverInfo: Some("<redacted>")
        instructions: Some("Fixture server for Switchboard tests.")"#]]
    .assert_eq(&shown);
}
