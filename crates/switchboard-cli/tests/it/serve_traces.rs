//! `switchboard serve --otlp URL`: spans reach a real OTLP/HTTP receiver (the official
//! `opentelemetry-proto` messages decode them, `scripts/peers/otlp_receiver.py`), over stdio
//! and HTTP: one per request, its `gateway.policy` child and, for `tools/call`, the upstream
//! call's child, whose trace context the upstream server is sent. A client's `traceparent`
//! is the request span's parent; a malformed one starts a new trace. No argument value and
//! no configured secret reaches the receiver. A collector that is down, or never answers,
//! costs the calls nothing: one warning, and the count at exit.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{Value, json};
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, EraChoice, Session, SessionConfig, TraceContext};
use switchboard_testkit::locate::{fixture_bin, peer_path, workspace_root};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::serve::{GRACE, gateway_with_env};
use crate::serve_http::HttpGateway;
use crate::{config, scratch_dir};

/// A configured secret (the fixture's env value) that must reach no span.
const SECRET: &str = "otlp-secret-env-9b1e";
/// An argument value that must reach no span.
const SECRET_ARGUMENT: &str = "otlp-argument-value-5c2d";
/// The client's own span.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// A client's span sent only as the HTTP `traceparent` header.
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_SPAN: &str = "b7ad6b7169203331";

fn client_parent() -> TraceContext {
    TraceContext {
        traceparent: format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"),
        tracestate: Some("client=1".to_owned()),
    }
}

/// The receiver: a Python process writing each span it decodes as a JSON line, gone when
/// dropped (its stdin closes, and it is killed).
struct Receiver {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        Receiver::start_with(dir, &[])
    }

    /// [`Receiver::start`] with the receiver's flags (`--hang`: it never answers).
    fn start_with(dir: &Path, flags: &[&str]) -> Receiver {
        let python = peer_path("target/peers/venv/bin/python");
        let script = workspace_root().join("scripts/peers/otlp_receiver.py");
        let out = dir.join("spans.jsonl");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(&out)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the OTLP receiver");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (to, from) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = to.send(first);
        });
        let line = from
            .recv_timeout(TEST_DEADLINE)
            .expect("the receiver says where it listens");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the receiver's first line names its port: {line:?} (is opentelemetry-proto installed? run scripts/peers.sh)"));
        Receiver {
            child,
            _stdin: stdin,
            port,
            out,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.port)
    }

    /// The spans received, once there are at least `count` (bounded wait).
    fn spans(&self, count: usize) -> Vec<Value> {
        let text = wait::until("the spans at the receiver", TEST_DEADLINE, || {
            std::fs::read_to_string(&self.out)
                .ok()
                .filter(|text| text.lines().count() >= count)
        });
        let raw = std::fs::read(self.out.with_extension("jsonl.raw")).expect("the raw bodies");
        for needle in [SECRET, SECRET_ARGUMENT] {
            assert!(!text.contains(needle), "{needle} reached a span: {text}");
            assert!(
                !raw.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{needle} is in a body the receiver got"
            );
        }
        text.lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans as trees, ids masked: each root with what its parent is (the client's span,
/// or none), then its children indented; attributes sorted; roots in name order.
fn trees(spans: &[Value]) -> String {
    let mut children: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    let ids: Vec<&str> = spans
        .iter()
        .map(|span| span["spanId"].as_str().expect("spanId"))
        .collect();
    let mut roots = Vec::new();
    for span in spans {
        let parent = span["parentSpanId"].as_str().expect("parentSpanId");
        if ids.contains(&parent) {
            children.entry(parent.to_owned()).or_default().push(span);
        } else {
            roots.push(span);
        }
    }
    let mut ordered: Vec<(String, &Value)> = roots
        .iter()
        .map(|root| (format!("{}  <- {}", line(root), parent_of(root)), *root))
        .collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (text, root) in ordered {
        lines.push(text);
        descend(root, &children, 1, &mut lines);
    }
    lines.join("\n")
}

/// What a root span's parent is.
fn parent_of(root: &Value) -> String {
    let parent = root["parentSpanId"].as_str().unwrap_or_default();
    if parent.is_empty() {
        "new trace".to_owned()
    } else if parent == CLIENT_SPAN && root["traceId"] == CLIENT_TRACE {
        format!(
            "child of the client's span, tracestate {}",
            root["traceState"]
        )
    } else if parent == HEADER_SPAN && root["traceId"] == HEADER_TRACE {
        "child of the span in the client's traceparent header".to_owned()
    } else {
        format!("child of an unknown span {parent}")
    }
}

fn descend(
    span: &Value,
    children: &BTreeMap<String, Vec<&Value>>,
    depth: usize,
    lines: &mut Vec<String>,
) {
    let id = span["spanId"].as_str().unwrap_or_default();
    let mut mine: Vec<&Value> = children.get(id).cloned().unwrap_or_default();
    mine.sort_by_key(|s| line(s));
    for child in mine {
        assert_eq!(
            child["traceId"], span["traceId"],
            "a child is in its parent's trace"
        );
        lines.push(format!("{}{}", "  ".repeat(depth), line(child)));
        descend(child, children, depth + 1, lines);
    }
}

/// `name [kind] {attributes} status`.
fn line(span: &Value) -> String {
    let attributes: BTreeMap<String, Value> = span["attributes"]
        .as_object()
        .map(|o| o.clone().into_iter().collect())
        .unwrap_or_default();
    let attributes: Vec<String> = attributes
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    format!(
        "{} [{}] {{{}}} {}",
        span["name"].as_str().unwrap_or_default(),
        span["kind"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("SPAN_KIND_"),
        attributes.join(" "),
        span["status"]["code"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("STATUS_CODE_"),
    )
}

/// The fixture, its environment holding the secret (the legacy era: one handshake).
fn secret_fixture() -> PathBuf {
    config(json!({
        "fx": { "command": fixture_bin(), "args": [], "env": {"TOKEN": SECRET}, "era": "legacy" },
    }))
}

/// `switchboard call --config CLIENT gw fx__add ARGUMENTS`, which must succeed: its output.
fn call_add(client: &str, arguments: &str) -> String {
    let call = crate::switchboard(&["call", "--config", client, "gw", "fx__add", arguments]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    call.stdout
}

fn traced(parent: Option<TraceContext>) -> CallOptions {
    CallOptions {
        trace: parent,
        ..CallOptions::default()
    }
}

/// The calls both tests make: an echo with the client's parent, an add with a malformed
/// one, an unknown tool with none.
async fn make_calls(session: &Session) {
    let malformed = TraceContext {
        traceparent: "00-not-a-trace-01".to_owned(),
        tracestate: None,
    };
    for (tool, arguments, parent) in [
        (
            "fx__echo",
            json!({"text": SECRET_ARGUMENT}),
            Some(client_parent()),
        ),
        ("fx__add", json!({"a": 2, "b": 3}), Some(malformed)),
        ("fx__no_such_tool", json!({}), None),
    ] {
        let _ = within(
            "tools/call",
            TEST_DEADLINE,
            session.call_tool_raw(tool, Some(&arguments), &traced(parent)),
        )
        .await;
    }
}

/// The upstream `tools/call` frames' `_meta.traceparent` (from `SWITCHBOARD_TRACE`), each
/// checked to name an upstream span of `spans`; how many there were.
fn upstream_parents_named(trace_file: &Path, spans: &[Value]) -> usize {
    let text = std::fs::read_to_string(trace_file).expect("the frame trace");
    let mut named = 0;
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).expect("a trace line");
        let frame = &line["frame"];
        if line["server"] != "fx" || line["dir"] != "send" || frame["method"] != "tools/call" {
            continue;
        }
        let parent = frame["params"]["_meta"]["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("the upstream call carries a traceparent: {frame}"));
        let upstream = spans
            .iter()
            .find(|span| {
                format!(
                    "00-{}-{}-01",
                    span["traceId"].as_str().unwrap_or_default(),
                    span["spanId"].as_str().unwrap_or_default()
                ) == parent
            })
            .unwrap_or_else(|| panic!("{parent} names no span"));
        assert_eq!(upstream["kind"], "SPAN_KIND_CLIENT", "{upstream}");
        named += 1;
    }
    named
}

#[tokio::test]
async fn stdio_calls_become_linked_spans_at_the_collector_without_secrets() {
    let dir = scratch_dir("serve-traces-stdio");
    let receiver = Receiver::start(&dir);
    let frames = dir.join("frames.ndjson");
    let frames_env = frames.display().to_string();
    let url = receiver.url();
    let session = gateway_with_env(
        &secret_fixture(),
        &["--otlp", &url],
        &[("SWITCHBOARD_TRACE", &frames_env)],
    )
    .await;
    make_calls(&session).await;
    session.shutdown(GRACE).await;

    // Three requests, each with its policy child; two reached their server.
    let spans = receiver.spans(3 * 2 + 2);
    expect_test::expect![[r#"
        tools/call fx__add [SERVER] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__add" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="pipe" switchboard.era="modern" switchboard.outcome="ok" switchboard.server="fx"} UNSET  <- new trace
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
          tools/call add [CLIENT] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="add" mcp.method.name="tools/call" switchboard.outcome="ok" switchboard.server="fx"} UNSET
        tools/call fx__echo [SERVER] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__echo" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="pipe" switchboard.era="modern" switchboard.outcome="ok" switchboard.server="fx"} UNSET  <- child of the client's span, tracestate "client=1"
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
          tools/call echo [CLIENT] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="echo" mcp.method.name="tools/call" switchboard.outcome="ok" switchboard.server="fx"} UNSET
        tools/call fx__no_such_tool [SERVER] {error.type="-32602" gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__no_such_tool" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="pipe" rpc.jsonrpc.error_code=-32602 switchboard.era="modern" switchboard.outcome="error"} ERROR  <- new trace
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET"#]].assert_eq(&trees(&spans));
    assert_eq!(upstream_parents_named(&frames, &spans), 2);
    let resource = &spans[0]["resource"];
    assert_eq!(resource["service.name"], "switchboard", "{resource}");
}

#[tokio::test]
async fn http_calls_take_the_clients_parent_and_the_spans_are_flushed_at_sigterm() {
    let dir = scratch_dir("serve-traces-http");
    let receiver = Receiver::start(&dir);
    let url = receiver.url();
    let config_path = secret_fixture();
    let mut gateway = HttpGateway::start(&config_path, &["--otlp", &url], &[]);
    let mut session_config = SessionConfig::new("gw");
    session_config.era = EraChoice::Modern;
    let session = within(
        "the handshake",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("gw", gateway.url()), session_config),
    )
    .await
    .expect("connected");
    make_calls(&session).await;
    drop(session);
    // A client that sends its parent only as the HTTP header (`switchboard call` with a
    // configured header): it lists, then calls.
    let header_client = config(json!({ "gw": {
        "url": gateway.url(), "era": "modern",
        "headers": {"traceparent": format!("00-{HEADER_TRACE}-{HEADER_SPAN}-01")}
    }}));
    let sum = call_add(&header_client.display().to_string(), r#"{"a": 40, "b": 2}"#);
    assert_eq!(sum.trim(), "42");
    assert_eq!(gateway.terminate(), Some(0));

    let spans = receiver.spans(8 + 5);
    expect_test::expect![[r#"
        tools/call fx__add [SERVER] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__add" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="tcp" switchboard.era="modern" switchboard.outcome="ok" switchboard.server="fx"} UNSET  <- child of the span in the client's traceparent header
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
          tools/call add [CLIENT] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="add" mcp.method.name="tools/call" switchboard.outcome="ok" switchboard.server="fx"} UNSET
        tools/call fx__add [SERVER] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__add" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="tcp" switchboard.era="modern" switchboard.outcome="ok" switchboard.server="fx"} UNSET  <- new trace
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
          tools/call add [CLIENT] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="add" mcp.method.name="tools/call" switchboard.outcome="ok" switchboard.server="fx"} UNSET
        tools/call fx__echo [SERVER] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__echo" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="tcp" switchboard.era="modern" switchboard.outcome="ok" switchboard.server="fx"} UNSET  <- child of the client's span, tracestate "client=1"
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
          tools/call echo [CLIENT] {gen_ai.operation.name="execute_tool" gen_ai.tool.name="echo" mcp.method.name="tools/call" switchboard.outcome="ok" switchboard.server="fx"} UNSET
        tools/call fx__no_such_tool [SERVER] {error.type="-32602" gen_ai.operation.name="execute_tool" gen_ai.tool.name="fx__no_such_tool" mcp.method.name="tools/call" mcp.protocol.version="2026-07-28" network.transport="tcp" rpc.jsonrpc.error_code=-32602 switchboard.era="modern" switchboard.outcome="error"} ERROR  <- new trace
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET
        tools/list [SERVER] {mcp.method.name="tools/list" mcp.protocol.version="2026-07-28" network.transport="tcp" switchboard.era="modern" switchboard.outcome="ok"} UNSET  <- child of the span in the client's traceparent header
          gateway.policy [INTERNAL] {switchboard.policy.decision="allow"} UNSET"#]].assert_eq(&trees(&spans));
}

#[test]
fn a_collector_that_is_down_costs_the_calls_nothing_and_is_said_once() {
    // A port nothing listens on: bind one, note it, let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/v1/traces");
    let mut gateway = HttpGateway::start(&secret_fixture(), &["--otlp", &url], &[]);
    let client = gateway.client_config("modern");
    for _ in 0..3 {
        assert_eq!(call_add(&client, r#"{"a": 1, "b": 2}"#).trim(), "3");
    }
    assert_eq!(gateway.terminate(), Some(0));
    let said: Vec<String> = gateway
        .stderr()
        .into_iter()
        .filter(|line| line.contains("traces"))
        .map(|line| line.replace(&port.to_string(), "PORT"))
        .collect();
    expect_test::expect![[r#"
        switchboard serve: traces: the collector at http://127.0.0.1:PORT/v1/traces did not take spans (nothing answers there); spans are dropped while this lasts (counted at exit; calls are not slowed)
        switchboard serve: traces: 0 span(s) exported to http://127.0.0.1:PORT/v1/traces, 0 dropped (queue full), 15 dropped (the collector did not take them), 0 unsent at exit"#]].assert_eq(&said.join("\n"));
}

#[test]
fn a_collector_that_never_answers_costs_the_calls_nothing_and_is_said_once() {
    let dir = scratch_dir("serve-traces-stuck");
    let receiver = Receiver::start_with(&dir, &["--hang"]);
    let url = receiver.url();
    let mut gateway = HttpGateway::start(&secret_fixture(), &["--otlp", &url], &[]);
    let client = gateway.client_config("modern");
    for _ in 0..3 {
        assert_eq!(call_add(&client, r#"{"a": 1, "b": 2}"#).trim(), "3");
    }
    assert_eq!(gateway.terminate(), Some(0));
    let said: Vec<String> = gateway
        .stderr()
        .into_iter()
        .filter(|line| line.contains("traces"))
        .map(|line| line.replace(&receiver.port.to_string(), "PORT"))
        .collect();
    // How many spans one stuck export holds and how many were still queued at exit
    // depends on when the batches left; that every one of them was lost does not.
    let [warning, summary] = said.as_slice() else {
        panic!("one warning and the counts at exit: {said:#?}");
    };
    expect_test::expect!["switchboard serve: traces: the collector at http://127.0.0.1:PORT/v1/traces did not take spans (no answer within 3 s); spans are dropped while this lasts (counted at exit; calls are not slowed)"].assert_eq(warning);
    assert!(
        summary.starts_with("switchboard serve: traces: 0 span(s) exported to http://127.0.0.1:PORT/v1/traces, 0 dropped (queue full), "),
        "{summary}"
    );
}
