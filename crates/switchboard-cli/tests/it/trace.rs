//! `--trace` and `SWITCHBOARD_TRACE=FILE`: every frame both ways as NDJSON, with the
//! entry's secret values gone even where the server echoes them back; for the verbs,
//! `check`, and `serve` (its servers' frames and its own client's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_session::CallOptions;
use switchboard_testkit::locate::{fixture_bin, workspace_root};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::{config, switchboard, switchboard_with_env};

const SECRET: &str = "s3cret-value";

/// A config with the fixture (`fx`, the legacy era, so that `initialize` is spoken) whose
/// environment holds the secret.
fn secret_config() -> String {
    let path = config(json!({
        "fx": {
            "command": fixture_bin(),
            "args": [],
            "env": {"TOKEN": SECRET},
            "era": "legacy",
        },
    }));
    path.to_str().expect("utf-8 path").to_owned()
}

/// Checks each line's fields and says what it carries: its direction and method (or
/// `result`/`error` for an answer), the id masked; every line is `fx`'s.
fn shape(trace: &str) -> String {
    let by_peer = shapes_by_peer(trace);
    assert_eq!(by_peer.keys().collect::<Vec<_>>(), ["server fx"], "{trace}");
    by_peer
        .into_values()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each line's shape (see [`shape`]) under whose it is (`server NAME`, `client HOW`), in
/// order; no line holds the secret.
fn shapes_by_peer(trace: &str) -> BTreeMap<String, Vec<String>> {
    assert!(
        !trace.contains(SECRET),
        "the secret is in the trace:\n{trace}"
    );
    let mut shapes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in trace.lines() {
        let line: Value = serde_json::from_str(line).expect("every trace line is JSON");
        let ts = line["ts"].as_str().expect("ts is a string");
        assert!(
            ts.len() == 24 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z'),
            "ts is RFC 3339 with milliseconds: {ts}"
        );
        let peer = match (line["server"].as_str(), line["client"].as_str()) {
            (Some(server), None) => format!("server {server}"),
            (None, Some(client)) => format!("client {client}"),
            _ => panic!("a line names its server or its client: {line}"),
        };
        let dir = line["dir"].as_str().expect("dir is a string");
        assert!(dir == "send" || dir == "recv", "{line}");
        let frame = &line["frame"];
        let what = match (frame.get("method"), frame.get("result"), frame.get("error")) {
            (Some(method), _, _) => method.as_str().expect("method").to_owned(),
            (None, Some(_), _) => "result".to_owned(),
            (None, None, Some(_)) => "error".to_owned(),
            _ => format!("? {frame}"),
        };
        let id = if frame.get("id").is_some() {
            " #id"
        } else {
            ""
        };
        shapes
            .entry(peer)
            .or_default()
            .push(format!("{dir} {what}{id}"));
    }
    shapes
}

/// A fresh trace file in a test's own folder.
fn trace_file(name: &str) -> PathBuf {
    crate::scratch_dir(&format!("trace-{name}")).join("trace.ndjson")
}

fn read_trace(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the trace file")
}

#[test]
fn a_trace_file_holds_every_frame_both_ways_without_the_secret() {
    let path = secret_config();
    let dir = workspace_root().join("target/cli-tests");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let trace_file = dir.join(format!("trace-{}.ndjson", std::process::id()));
    let _ = std::fs::remove_file(&trace_file);
    let trace_path = trace_file.to_str().expect("utf-8 path");
    let text = format!("text={SECRET}");
    let run = switchboard_with_env(
        &["call", "fx", "echo", &text, "--config", &path],
        &[("SWITCHBOARD_TRACE", trace_path)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "the trace went to the file only");
    assert!(run.stdout.contains(SECRET), "results are shown as they are");
    let trace = std::fs::read_to_string(&trace_file).expect("the trace file");
    assert!(trace.contains("<redacted>"), "{trace}");
    expect_test::expect![[r#"
        send initialize #id
        recv result #id
        send notifications/initialized
        send tools/list #id
        recv result #id
        send tools/call #id
        recv result #id"#]]
    .assert_eq(&shape(&trace));
}

#[test]
fn trace_to_stderr_is_ndjson_without_the_secret() {
    let path = secret_config();
    let text = format!("text={SECRET}");
    let run = switchboard(&["--trace", "call", "fx", "echo", &text, "--config", &path]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown = shape(&run.stderr);
    assert!(
        shown.starts_with("send initialize #id\nrecv result #id"),
        "{shown}"
    );
    assert!(
        shown.ends_with("send tools/call #id\nrecv result #id"),
        "{shown}"
    );
    let after_the_verb = switchboard(&["tools", "fx", "--trace", "--config", &path]);
    assert_eq!(after_the_verb.code, 0, "{}", after_the_verb.stderr);
    assert!(shape(&after_the_verb.stderr).contains("send tools/list #id"));
}

#[test]
fn check_traces_every_session_it_opens_without_the_secret() {
    let trace_path = trace_file("check");
    // `auto`, so that the check's `server/discover` probe is traced too.
    let path = config(json!({
        "fx": { "command": fixture_bin(), "args": [], "env": {"TOKEN": SECRET} },
    }));
    let arguments = json!({ "text": SECRET }).to_string();
    let run = switchboard_with_env(
        &[
            "check",
            "fx",
            "--config",
            path.to_str().expect("utf-8 path"),
            "--call",
            "echo",
            &arguments,
        ],
        &[(
            "SWITCHBOARD_TRACE",
            trace_path.to_str().expect("utf-8 path"),
        )],
    );
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let trace = read_trace(&trace_path);
    assert!(trace.contains("<redacted>"), "the echoed secret: {trace}");
    let by_peer = shapes_by_peer(&trace);
    assert_eq!(by_peer.keys().collect::<Vec<_>>(), ["server fx"], "{trace}");
    // The checker's sessions run side by side: what is sent, once each, in a stable order.
    let mut sent: Vec<&str> = by_peer["server fx"]
        .iter()
        .filter_map(|shape| shape.strip_prefix("send "))
        .collect();
    sent.sort_unstable();
    sent.dedup();
    expect_test::expect![[r#"
        completion/complete #id
        initialize #id
        notifications/cancelled
        notifications/initialized
        ping #id
        prompts/get #id
        prompts/list #id
        resources/list #id
        resources/read #id
        resources/subscribe #id
        resources/unsubscribe #id
        server/discover #id
        tools/call #id
        tools/list #id"#]]
    .assert_eq(&sent.join("\n"));
}

#[tokio::test]
async fn serve_traces_its_servers_and_its_own_client_without_the_secret() {
    let trace_path = trace_file("serve");
    let path = secret_config();
    let trace = trace_path.to_str().expect("utf-8 path");
    let gateway =
        crate::serve::gateway_with_env(Path::new(&path), &[], &[("SWITCHBOARD_TRACE", trace)])
            .await;
    let result = within(
        "tools/call through the gateway",
        TEST_DEADLINE,
        gateway.call_tool(
            "fx__echo",
            Some(&json!({ "text": SECRET })),
            &CallOptions::default(),
        ),
    )
    .await
    .expect("the call is answered");
    let content = format!("{:?}", result.content);
    assert!(
        !content.contains(SECRET) && content.contains("<redacted>"),
        "the gateway hides its servers' secrets in what it sends a client, results too: {content}"
    );
    let _ = gateway.shutdown(crate::serve::GRACE).await;
    let trace = read_trace(&trace_path);
    let shown: Vec<String> = shapes_by_peer(&trace)
        .into_iter()
        .map(|(peer, shapes)| format!("{peer}:\n  {}", shapes.join("\n  ")))
        .collect();
    expect_test::expect![[r#"
        client stdio:
          recv server/discover #id
          send result #id
          recv tools/call #id
          send result #id
        server fx:
          send initialize #id
          recv result #id
          send notifications/initialized
          send tools/list #id
          send prompts/list #id
          send resources/list #id
          send resources/templates/list #id
          recv result #id
          recv result #id
          recv result #id
          recv result #id
          send tools/call #id
          recv result #id"#]]
    .assert_eq(&shown.join("\n"));
}
