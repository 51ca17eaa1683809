//! A hostile server's text never reaches the terminal raw: the `hostile-text` fixture puts
//! clear-screen, clipboard-write (OSC 52) and hyperlink (OSC 8) sequences, BEL, `\r`, a C1
//! CSI (U+009B) and a right-to-left override (U+202E) in everything it controls; every
//! command's stdout and stderr must show them as visible escapes, and `--json` must still
//! parse back to exactly what the server sent.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_session::{Session, SessionConfig};
use switchboard_testkit::fixture::HOSTILE_TEXT;
use switchboard_testkit::wait::{TEST_DEADLINE, within};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};

use crate::{Run, config, fixture_entry, switchboard};

/// Characters that act on a terminal: ESC, BEL, CR, the C1 CSI and the RTL override.
const RAW: &[char] = &['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'];

/// How the escapes must look instead: visible, so the reader sees what was sent.
const VISIBLE: &[&str] = &[
    "\\u{1b}[2Jcleared",
    "\\u{1b}]52;c;aGFja2Vk\\u{7}clipboard",
    "\\u{1b}]8;;https://evil.example/",
    "bell\\u{7}",
    "return\\u{d} over",
    "\\u{9b}31m",
    "\\u{202e}reversed",
];

fn assert_no_raw(what: &str, text: &str) {
    let found: Vec<char> = text.chars().filter(|c| RAW.contains(c)).collect();
    assert!(
        found.is_empty(),
        "{what} reached the terminal raw: {found:?}\n{}",
        text.escape_debug()
    );
}

fn assert_safe(what: &str, run: &Run) {
    assert_no_raw(&format!("{what} (stdout)"), &run.stdout);
    assert_no_raw(&format!("{what} (stderr)"), &run.stderr);
}

fn assert_visible(what: &str, text: &str) {
    for visible in VISIBLE {
        assert!(text.contains(visible), "{what} lacks {visible}:\n{text}");
    }
}

fn hostile_config() -> String {
    config(json!({"h": fixture_entry(&["--mode", "hostile-text"])}))
        .display()
        .to_string()
}

#[test]
fn tools_shows_server_info_names_and_descriptions_escaped() {
    let path = hostile_config();
    let tools = switchboard(&["tools", "--config", &path]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert_safe("tools", &tools);
    let header = tools.stdout.lines().next().unwrap_or_default();
    assert_visible("the serverInfo in the header", header);
    let named = tools
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("hostile_"))
        .unwrap_or_default();
    assert_visible("the hostile tool's name and description", named);

    let json = switchboard(&["tools", "--config", &path, "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert_safe("tools --json", &json);
    let parsed: Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert_eq!(
        parsed["h"]["serverInfo"]["name"],
        format!("switchboard-fixture{HOSTILE_TEXT}"),
        "--json keeps the exact value"
    );
    let names: Vec<&str> = parsed["h"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&format!("hostile_{HOSTILE_TEXT}").as_str()),
        "{names:?}"
    );
}

#[test]
fn call_shows_results_rpc_errors_tool_lists_and_stderr_tails_escaped() {
    let path = hostile_config();
    let result = switchboard(&["call", "--config", &path, "h", "shout"]);
    assert_eq!(result.code, 0, "{}", result.stderr);
    assert_safe("a result", &result);
    assert_visible("a result", &result.stdout);

    let json = switchboard(&["call", "--config", &path, "h", "shout", "--json"]);
    assert_safe("a result as JSON", &json);
    let parsed: Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert_eq!(parsed["content"][0]["text"], HOSTILE_TEXT);

    let rpc_error = switchboard(&["call", "--config", &path, "h", "rpc_error"]);
    assert_eq!(rpc_error.code, 3, "{}", rpc_error.stderr);
    assert_safe("a JSON-RPC error", &rpc_error);
    assert_visible("a JSON-RPC error", &rpc_error.stderr);

    let unknown = switchboard(&["call", "--config", &path, "h", "nope"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert_safe("an unknown tool's error", &unknown);
    let tool_list = unknown
        .stderr
        .split("its tools: ")
        .nth(1)
        .unwrap_or_default();
    assert_visible("the \"its tools:\" list", tool_list);

    let crash = switchboard(&["call", "--config", &path, "h", "crash"]);
    assert_eq!(crash.code, 3, "{}", crash.stderr);
    assert_safe("a crash", &crash);
    let tail = crash
        .stderr
        .split("--- last stderr output ---")
        .nth(1)
        .unwrap_or_default();
    assert_visible("a stderr tail", tail);
}

#[test]
fn check_reports_show_the_servers_text_escaped() {
    let path = hostile_config();
    let junit = crate::workspace_root()
        .join("target/cli-tests")
        .join(format!("hostile-junit-{}.xml", std::process::id()));
    let junit = junit.display().to_string();
    let text = switchboard(&["check", "--config", &path, "--junit", &junit]);
    assert_safe("check", &text);
    assert!(text.stdout.contains("\\u{9b}31m"), "{}", text.stdout);
    let report = std::fs::read_to_string(&junit).expect("junit report");
    assert_no_raw("the JUnit report", &report);

    let json = switchboard(&["check", "--config", &path, "--json"]);
    assert_safe("check --json", &json);
    let parsed: Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert_eq!(
        parsed["servers"][0]["server_info"]["name"],
        format!("switchboard-fixture{HOSTILE_TEXT}")
    );
}

#[tokio::test]
async fn the_gateways_startup_report_and_logs_show_a_failed_servers_stderr_escaped() {
    let path = config(json!({
        "good": fixture_entry(&["--mode", "hostile-text"]),
        "failing": fixture_entry(&["--mode", "hostile-exit"]),
    }));
    let spec = ProcessSpec {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        args: vec![
            "serve".into(),
            "--config".into(),
            path.display().to_string(),
        ],
        env: crate::no_era_memo_env(),
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
    assert_no_raw("the gateway's stderr", &stderr);
    let (logs, report) = stderr.split_once("server(s) ready").unwrap_or_default();
    assert!(
        report.contains("fixture: failing: \\u{1b}[2Jcleared"),
        "the startup report shows the failed server's stderr tail escaped:\n{stderr}"
    );
    // The log says the server failed on one line; the stderr block is the report's.
    let warning = logs
        .lines()
        .find(|line| line.contains(" WARN "))
        .unwrap_or("");
    assert!(
        warning.contains("server failed") && warning.contains("exit status: 2"),
        "the WARN log line says why, on one line:\n{stderr}"
    );
    assert!(
        !logs.contains("fixture: failing"),
        "no log line carries the stderr block:\n{stderr}"
    );
}
