//! A call's trace context ([`CallOptions::trace`]) reaches the server twice over HTTP: as
//! the `traceparent`/`tracestate` headers and as `params._meta` (the only place over
//! stdio), next to the session's own `_meta` entries; a call without one sends neither.

use std::time::Duration;

use serde_json::Value;
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, EraChoice, Session, SessionConfig, TraceContext};
use switchboard_testkit::canned::{self, CannedRequest, read_request};
use switchboard_testkit::wait::within;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::support::TEST_DEADLINE;

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}"#;
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A legacy server that answers `initialize` and `tools/call` and hands each `tools/call`
/// request it got to the test. Bounded: at most 20 connections.
async fn recording_server() -> (String, mpsc::Receiver<CannedRequest>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    );
    let (calls, called) = mpsc::channel(8);
    tokio::spawn(async move {
        for _ in 0..20 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let calls = calls.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let body = request.json();
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let response = match body.get("method").and_then(Value::as_str) {
                    Some("initialize") => canned::answer(
                        "200 OK",
                        "application/json",
                        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INIT_RESULT}}}"#),
                    ),
                    Some("tools/call") => {
                        let _ = calls.send(request).await;
                        canned::answer(
                            "200 OK",
                            "application/json",
                            &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#),
                        )
                    }
                    _ => canned::empty_answer("202 Accepted"),
                };
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, called)
}

/// The request's `traceparent` and `tracestate` headers and its `params._meta`.
fn seen(request: &CannedRequest) -> (Vec<String>, Value) {
    let headers = request
        .head
        .lines()
        .filter(|line| {
            let line = line.to_ascii_lowercase();
            line.starts_with("traceparent:") || line.starts_with("tracestate:")
        })
        .map(str::to_owned)
        .collect();
    (headers, request.json()["params"]["_meta"].clone())
}

#[tokio::test]
async fn a_calls_trace_context_goes_as_headers_and_in_meta() {
    let (url, mut called) = recording_server().await;
    let mut config = SessionConfig::new("canned");
    config.era = EraChoice::Legacy;
    config.request_timeout = Duration::from_secs(5);
    let session = within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("canned", &url), config),
    )
    .await
    .expect("connect");
    let traced = CallOptions {
        trace: Some(TraceContext {
            traceparent: PARENT.to_owned(),
            tracestate: Some("vendor=1".to_owned()),
        }),
        ..CallOptions::default()
    };
    for options in [traced, CallOptions::default()] {
        within(
            "the call",
            TEST_DEADLINE,
            session.call_tool_raw("anything", None, &options),
        )
        .await
        .expect("answered");
    }
    let traced = within("the traced call", TEST_DEADLINE, called.recv())
        .await
        .expect("recorded");
    let plain = within("the plain call", TEST_DEADLINE, called.recv())
        .await
        .expect("recorded");
    let (headers, meta) = seen(&traced);
    let headers: Vec<String> = headers.iter().map(|h| h.to_ascii_lowercase()).collect();
    assert_eq!(
        headers,
        [
            format!("traceparent: {PARENT}"),
            "tracestate: vendor=1".to_owned()
        ]
    );
    assert_eq!(
        (&meta["traceparent"], &meta["tracestate"]),
        (&Value::from(PARENT), &Value::from("vendor=1")),
        "{meta}"
    );
    assert!(
        meta.get("progressToken").is_some(),
        "the session's own entry is kept: {meta}"
    );
    let (headers, meta) = seen(&plain);
    assert_eq!(headers, Vec::<String>::new());
    assert!(meta.get("traceparent").is_none(), "{meta}");
}
