//! `--trace` and `SWITCHBOARD_TRACE=FILE`: every frame both ways as NDJSON, with the
//! entry's secret values gone even where the server echoes them back.

use serde_json::{Value, json};
use switchboard_testkit::locate::{fixture_bin, workspace_root};

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
/// `result`/`error` for an answer), the id masked.
fn shape(trace: &str) -> String {
    assert!(
        !trace.contains(SECRET),
        "the secret is in the trace:\n{trace}"
    );
    let mut shapes = Vec::new();
    for line in trace.lines() {
        let line: Value = serde_json::from_str(line).expect("every trace line is JSON");
        let ts = line["ts"].as_str().expect("ts is a string");
        assert!(
            ts.len() == 24 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z'),
            "ts is RFC 3339 with milliseconds: {ts}"
        );
        assert_eq!(line["server"], "fx", "{line}");
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
        shapes.push(format!("{dir} {what}{id}"));
    }
    shapes.join("\n")
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
