//! The era memo: an `auto` server that turned out legacy is sent `initialize` first on the
//! next connect and never `server/discover`; a corrupt memo is ignored; a wrong hint is
//! corrected; the memo holds no secret. `serve` takes and teaches it for its upstream
//! servers; `check` probes whatever the memo says and teaches it what it found.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_testkit::locate::fixture_bin;

use crate::{config, switchboard_with_env};

const SECRET: &str = "s3cret-token";

/// A fresh folder for one test's memo and traces.
fn scratch(name: &str) -> PathBuf {
    crate::scratch_dir(&format!("era-memo-{name}"))
}

/// The environment that puts the memo at `memo` and the trace in `trace`.
fn memo_and_trace<'a>(memo: &'a Path, trace: &'a Path) -> [(&'static str, &'a str); 2] {
    [
        ("SWITCHBOARD_ERA_MEMO", memo.to_str().expect("utf-8 path")),
        ("SWITCHBOARD_TRACE", trace.to_str().expect("utf-8 path")),
    ]
}

/// Runs `switchboard tools fx` with the memo at `memo`; the methods it sent, in order.
fn methods_sent(config: &str, memo: &Path, trace: &Path) -> Vec<String> {
    run_traced(&["tools", "fx", "--config", config], memo, trace)
}

/// Runs `switchboard ARGS` with the memo at `memo`; the handshake methods it sent to `fx`.
fn run_traced(args: &[&str], memo: &Path, trace: &Path) -> Vec<String> {
    let _ = std::fs::remove_file(trace);
    let run = switchboard_with_env(args, &memo_and_trace(memo, trace));
    assert!(
        run.code == 0 || (args[0] == "check" && run.code == 1),
        "{}",
        run.stderr
    );
    handshakes_in(trace)
}

/// The `server/discover` and `initialize` requests the trace at `trace` saw sent to `fx`.
fn handshakes_in(trace: &Path) -> Vec<String> {
    let trace = std::fs::read_to_string(trace).expect("the trace file");
    trace
        .lines()
        .filter_map(|line| {
            let line: Value = serde_json::from_str(line).expect("every trace line is JSON");
            let sent = line["dir"] == "send" && line["server"] == "fx";
            let method = line["frame"]["method"].as_str().map(str::to_owned);
            method.filter(|_| sent)
        })
        .filter(|method| method == "server/discover" || method == "initialize")
        .collect()
}

/// Runs `switchboard serve` with the memo at `memo` until its client has listed the tools
/// (its servers have started); the handshake methods it sent to `fx`.
async fn serve_methods_sent(config: &str, memo: &Path, trace: &Path) -> Vec<String> {
    let _ = std::fs::remove_file(trace);
    let env = memo_and_trace(memo, trace);
    let gateway = crate::serve::gateway_with_env(Path::new(config), &[], &env).await;
    let tools = crate::support::listed_tools(&gateway).await;
    assert!(!tools.is_empty(), "fx started");
    let _ = gateway.shutdown(crate::serve::GRACE).await;
    handshakes_in(trace)
}

fn fixture_config(args: &[&str]) -> String {
    let path = config(json!({
        "fx": { "command": fixture_bin(), "args": args, "env": {"TOKEN": SECRET} },
    }));
    path.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn a_remembered_legacy_server_gets_initialize_first_and_no_probe() {
    let dir = scratch("round-trip");
    let (memo, trace) = (dir.join("eras.json"), dir.join("trace.ndjson"));
    let config = fixture_config(&[]);
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["server/discover", "initialize"],
        "the first connect probes"
    );
    let text = std::fs::read_to_string(&memo).expect("the memo is written");
    assert!(!text.contains(SECRET), "the memo holds a secret:\n{text}");
    assert!(
        !text.contains("TOKEN"),
        "the memo names the environment:\n{text}"
    );
    assert!(text.contains("\"legacy\""), "{text}");
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["initialize"],
        "the second connect trusts the memo"
    );
}

#[test]
fn a_corrupt_memo_is_ignored_and_replaced() {
    let dir = scratch("corrupt");
    let (memo, trace) = (dir.join("eras.json"), dir.join("trace.ndjson"));
    std::fs::write(
        &memo,
        "{\"format\": \"switchboard-eras/1\", \"servers\": [tru",
    )
    .expect("write");
    let config = fixture_config(&[]);
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["server/discover", "initialize"]
    );
    assert_eq!(methods_sent(&config, &memo, &trace), ["initialize"]);
}

#[test]
fn a_wrong_legacy_hint_falls_back_to_the_probe_and_is_corrected() {
    let dir = scratch("wrong-hint");
    let (memo, trace) = (dir.join("eras.json"), dir.join("trace.ndjson"));
    let config = fixture_config(&["--era", "modern"]);
    let identity = json!({ "command": fixture_bin(), "args": ["--era", "modern"] }).to_string();
    let wrong = json!({
        "format": "switchboard-eras/1",
        "servers": [{ "server": identity, "era": "legacy" }],
    });
    std::fs::write(&memo, wrong.to_string()).expect("write");
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["initialize", "server/discover"],
        "the hint is tried, then the probe"
    );
    let text = std::fs::read_to_string(&memo).expect("the memo");
    assert!(
        text.contains("\"modern\"") && !text.contains("\"legacy\""),
        "{text}"
    );
    assert_eq!(methods_sent(&config, &memo, &trace), ["server/discover"]);
}

#[tokio::test]
async fn serve_starts_a_remembered_legacy_server_with_initialize_and_teaches_the_memo() {
    let dir = scratch("serve");
    let (memo, trace) = (dir.join("eras.json"), dir.join("trace.ndjson"));
    let config = fixture_config(&[]);
    assert_eq!(
        serve_methods_sent(&config, &memo, &trace).await,
        ["server/discover", "initialize"],
        "the first start probes"
    );
    let text = std::fs::read_to_string(&memo).expect("serve wrote the memo");
    assert!(
        text.contains("\"legacy\"") && !text.contains(SECRET),
        "{text}"
    );
    assert_eq!(
        serve_methods_sent(&config, &memo, &trace).await,
        ["initialize"],
        "the next start trusts the memo"
    );
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["initialize"],
        "and so do the verbs"
    );
}

#[test]
fn check_probes_despite_the_memo_and_records_what_it_found() {
    let dir = scratch("check");
    let (memo, trace) = (dir.join("eras.json"), dir.join("trace.ndjson"));
    let config = fixture_config(&[]);
    let check = ["check", "fx", "--config", config.as_str()];
    let first = run_traced(&check, &memo, &trace);
    assert_eq!(
        first.first().map(String::as_str),
        Some("server/discover"),
        "{first:?}"
    );
    let text = std::fs::read_to_string(&memo).expect("check wrote the memo");
    assert!(
        text.contains("\"legacy\"") && !text.contains(SECRET),
        "{text}"
    );
    assert_eq!(
        methods_sent(&config, &memo, &trace),
        ["initialize"],
        "the verbs take what the check found"
    );
    let again = run_traced(&check, &memo, &trace);
    assert_eq!(
        again.first().map(String::as_str),
        Some("server/discover"),
        "the check probes the modern era whatever the memo says: {again:?}"
    );
}
