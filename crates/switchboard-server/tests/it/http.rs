//! The Streamable HTTP transport over real TCP: a table of raw probes (method, headers,
//! body → status, content type, JSON-RPC code) covering its rules, then the behaviours a
//! table cannot show: progress on an event stream, cancellation per era, the GET stream,
//! listen streams, and shutdown.

use std::sync::Arc;
use std::time::Duration;

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_server::core::{Audience, LogLevel, LogMessage, ServiceEvent};
use switchboard_server::http::{
    BearerToken, BearerTokens, HttpEnd, HttpLimits, HttpServeOptions, HttpServer,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::probe_service::ProbeService;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// Bound of every wait in these tests.
const WAIT: Duration = Duration::from_secs(20);

struct Running {
    base: String,
    service: Arc<ProbeService>,
    shutdown: CancellationToken,
    served: std::sync::Mutex<Option<JoinHandle<HttpEnd>>>,
    client: reqwest::Client,
}

impl Running {
    async fn start(options: HttpServeOptions) -> Running {
        let service = ProbeService::new();
        let server = HttpServer::bind(
            "127.0.0.1:0".parse().expect("an address"),
            service.clone(),
            options,
        )
        .await
        .expect("bound");
        let base = format!("http://{}", server.local_addr());
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(server.serve(shutdown.clone()));
        Running {
            base,
            service,
            shutdown,
            served: std::sync::Mutex::new(Some(served)),
            client: reqwest::Client::builder()
                .timeout(WAIT)
                .build()
                .expect("a client"),
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    async fn stop(&self) -> HttpEnd {
        self.shutdown.cancel();
        let served = self
            .served
            .lock()
            .ok()
            .and_then(|mut served| served.take())
            .expect("stopped once");
        tokio::time::timeout(WAIT, served)
            .await
            .expect("serving ends")
            .expect("serving does not panic")
    }

    /// Opens a legacy session; its id.
    async fn session(&self) -> String {
        let response = self
            .post(&[], legacy_body(1, "initialize", json!({
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
            })))
            .await;
        assert_eq!(response.status(), 200);
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let _ = response.text().await;
        id
    }

    /// Ends a legacy session with DELETE.
    async fn end_session(&self, session: &str) {
        let ended = self
            .client
            .delete(self.url())
            .header("mcp-session-id", session)
            .send()
            .await
            .expect("a DELETE answer");
        assert_eq!(ended.status(), 204);
    }

    async fn post(&self, headers: &[(&str, String)], body: String) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.expect("an answer")
    }
}

fn legacy_body(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A modern request's body: `params` with the standard `_meta` added to its own.
fn modern_body(id: i64, method: &str, mut params: Value) -> String {
    let mut merged = meta();
    if let (Some(merged), Some(Value::Object(own))) = (merged.as_object_mut(), params.get("_meta"))
    {
        merged.extend(own.clone());
    }
    params["_meta"] = merged;
    legacy_body(id, method, params)
}

fn modern_headers(method: &str) -> Vec<(&'static str, String)> {
    vec![
        ("mcp-protocol-version", MODERN.to_owned()),
        ("mcp-method", method.to_owned()),
    ]
}

/// One raw probe.
struct Probe {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    /// Header values; `SESSION` is replaced by a fresh session's id.
    headers: Vec<(&'static str, String)>,
    body: Option<String>,
}

fn post(name: &'static str, headers: Vec<(&'static str, String)>, body: String) -> Probe {
    Probe {
        name,
        method: "POST",
        path: "/mcp",
        headers,
        body: Some(body),
    }
}

fn with(
    mut headers: Vec<(&'static str, String)>,
    more: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    for (name, value) in more {
        headers.retain(|(n, _)| n != name);
        headers.push((name, (*value).to_owned()));
    }
    headers
}

/// The status, content type, JSON-RPC outcome (for event streams: each message), and the
/// headers that matter.
async fn describe(response: reqwest::Response) -> String {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .split(';')
        .next()
        .unwrap_or("-")
        .to_owned();
    let mut line = format!("{status} {content_type}");
    let body = tokio::time::timeout(WAIT, response.text())
        .await
        .expect("the body ends")
        .unwrap_or_default();
    let outcome = |message: &Value| -> String {
        if let Some(code) = message.pointer("/error/code") {
            format!("error {code}")
        } else if message.get("result").is_some() {
            "result".to_owned()
        } else {
            message["method"].as_str().unwrap_or("?").to_owned()
        }
    };
    match content_type.as_str() {
        "application/json" => {
            let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            line.push_str(&format!(" {}", outcome(&message)));
        }
        "text/event-stream" => {
            let messages: Vec<String> = body
                .lines()
                .filter_map(|l| l.strip_prefix("data: ").or((l == "data:").then_some("")))
                .map(|data| match data.trim() {
                    // The priming event of a resumable stream: an id, `retry:`, no data.
                    "" => "priming".to_owned(),
                    data => outcome(&serde_json::from_str(data).unwrap_or(Value::Null)),
                })
                .collect();
            line.push_str(&format!(" [{}]", messages.join(", ")));
        }
        _ if !body.is_empty() => line.push_str(&format!(" {:?}", body.trim())),
        _ => {}
    }
    for name in [
        "mcp-session-id",
        "www-authenticate",
        "allow",
        "x-accel-buffering",
    ] {
        if let Some(value) = headers.get(name) {
            let shown = if name == "mcp-session-id" {
                format!("{} chars", value.len())
            } else {
                value.to_str().unwrap_or("?").to_owned()
            };
            line.push_str(&format!(" {name}: {shown}"));
        }
    }
    line
}

async fn run_probes(running: &Running, probes: Vec<Probe>) -> String {
    let mut lines = Vec::new();
    for probe in probes {
        let session = if probe.headers.iter().any(|(_, v)| v == "SESSION") {
            Some(running.session().await)
        } else {
            None
        };
        let method = reqwest::Method::from_bytes(probe.method.as_bytes()).expect("a method");
        let mut request = running
            .client
            .request(method, format!("{}{}", running.base, probe.path));
        for (name, value) in &probe.headers {
            let value = match (&session, value.as_str()) {
                (Some(id), "SESSION") => id.clone(),
                _ => value.clone(),
            };
            request = request.header(*name, value);
        }
        if let Some(body) = probe.body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.expect("an answer");
        lines.push(format!("{}: {}", probe.name, describe(response).await));
    }
    lines.join("\n")
}

fn echo_body(arguments: Value) -> String {
    modern_body(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": arguments}),
    )
}

fn call_body(id: i64, tool: &str) -> String {
    modern_body(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {"x": 1}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transport_rules_probe_by_probe() {
    let running = Running::start(HttpServeOptions {
        allowed_origins: vec!["https://app.example".into()],
        ..HttpServeOptions::default()
    })
    .await;
    let m = modern_headers;
    let list = || modern_body(1, "tools/list", json!({}));
    let call = || with(m("tools/call"), &[("mcp-name", "echo")]);
    let s =
        |more: &[(&'static str, &str)]| with(vec![("mcp-session-id", "SESSION".to_owned())], more);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(4 * 1024 * 1024)
    );
    let probes = vec![
        Probe { name: "health", method: "GET", path: "/healthz", headers: vec![], body: None },
        Probe { name: "other path", method: "GET", path: "/other", headers: vec![], body: None },
        Probe { name: "PUT", method: "PUT", path: "/mcp", headers: vec![], body: None },
        post("modern tools/list", m("tools/list"), list()),
        post("modern, Mcp-Method missing", vec![("mcp-protocol-version", MODERN.into())], list()),
        post("modern, Mcp-Method differs", m("tools/call"), list()),
        post("modern, Mcp-Method case differs", m("TOOLS/LIST"), list()),
        post("modern, header names in capitals", vec![("MCP-PROTOCOL-VERSION", MODERN.into()), ("MCP-METHOD", "tools/list".into())], list()),
        post("modern tools/call", call(), call_body(1, "echo")),
        post("modern tools/call, Mcp-Name missing", m("tools/call"), call_body(1, "echo")),
        post("modern tools/call, Mcp-Name differs", with(m("tools/call"), &[("mcp-name", "other")]), call_body(1, "echo")),
        post("modern tools/call, Mcp-Name with whitespace", with(m("tools/call"), &[("mcp-name", "  echo\t")]), call_body(1, "echo")),
        post("modern tools/call, Mcp-Name in Base64", with(m("tools/call"), &[("mcp-name", "=?base64?ZWNobw==?=")]), call_body(1, "echo")),
        post("modern tools/call, Mcp-Name bad Base64", with(m("tools/call"), &[("mcp-name", "=?base64?!!?=")]), call_body(1, "echo")),
        post("modern tools/call, Mcp-Param-* match", with(call(), &[("mcp-param-region", "eu-west"), ("mcp-param-count", "42.0")]), echo_body(json!({"region": "eu-west", "count": 42}))),
        post("modern tools/call, Mcp-Param-* in Base64", with(call(), &[("mcp-param-region", "=?base64?IGV1?=")]), echo_body(json!({"region": " eu"}))),
        post("modern tools/call, Mcp-Param-* missing", call(), echo_body(json!({"region": "eu-west"}))),
        post("modern tools/call, Mcp-Param-* differs", with(call(), &[("mcp-param-region", "us-east")]), echo_body(json!({"region": "eu-west"}))),
        post("modern tools/call, Mcp-Param-* for a null argument", call(), echo_body(json!({"region": null}))),
        post("modern resources/read, Mcp-Name = uri", with(m("resources/read"), &[("mcp-name", "probe://a")]), modern_body(1, "resources/read", json!({"uri": "probe://a"}))),
        post("modern tool that panics", with(m("tools/call"), &[("mcp-name", "panic")]), call_body(1, "panic")),
        post("modern unknown tool", with(m("tools/call"), &[("mcp-name", "nope")]), call_body(1, "nope")),
        post("modern body without the version header", vec![("mcp-method", "tools/list".into())], list()),
        post("modern header, body without a version", m("tools/list"), legacy_body(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}))),
        post("modern header, body without capabilities", m("tools/list"), legacy_body(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}))),
        post("modern header, body another version", m("tools/list"), legacy_body(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}))),
        post("unknown version in header and body", with(m("tools/list"), &[("mcp-protocol-version", "2099-01-01")]), legacy_body(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}))),
        post("unknown version in header only", vec![("mcp-protocol-version", "2099-01-01".into())], legacy_body(1, "tools/list", json!({}))),
        post("modern ping", m("ping"), modern_body(1, "ping", json!({}))),
        post("modern initialize", m("initialize"), modern_body(1, "initialize", json!({}))),
        post("modern server/discover", m("server/discover"), modern_body(1, "server/discover", json!({}))),
        post("modern with a made-up session id", with(m("tools/list"), &[("mcp-session-id", "made-up")]), list()),
        post("modern notification", m("notifications/initialized"), json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": meta()}}).to_string()),
        post("modern progress tool", with(m("tools/call"), &[("mcp-name", "progress")]), modern_body(1, "tools/call", json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}))),
        Probe { name: "modern GET", method: "GET", path: "/mcp", headers: vec![("mcp-protocol-version", MODERN.into())], body: None },
        Probe { name: "modern DELETE", method: "DELETE", path: "/mcp", headers: vec![("mcp-protocol-version", MODERN.into())], body: None },
        post("batch", vec![], format!("[{}]", legacy_body(1, "ping", json!({})))),
        post("not JSON", vec![], "hello".into()),
        post("not JSON-RPC", vec![], "{\"id\": 3}".into()),
        post("body over 4 MiB", vec![], big),
        post("foreign Origin", with(m("tools/list"), &[("origin", "http://evil.example")]), list()),
        post("loopback Origin", with(m("tools/list"), &[("origin", "http://localhost:5173")]), list()),
        post("allowed Origin", with(m("tools/list"), &[("origin", "https://app.example/")]), list()),
        post("Origin null", with(m("tools/list"), &[("origin", "null")]), list()),
        post("foreign Host", with(m("tools/list"), &[("host", "evil.example:80")]), list()),
        post("legacy initialize", vec![], legacy_body(1, "initialize", json!({"protocolVersion": LEGACY, "capabilities": {}}))),
        post("legacy initialize, old version", vec![], legacy_body(1, "initialize", json!({"protocolVersion": "2025-03-26", "capabilities": {}}))),
        post("legacy without a session", vec![], legacy_body(2, "tools/list", json!({}))),
        post("legacy, made-up session", vec![("mcp-session-id", "made-up".into())], legacy_body(2, "tools/list", json!({}))),
        post("legacy ping", s(&[]), legacy_body(2, "ping", json!({}))),
        post("legacy tools/list", s(&[("mcp-protocol-version", LEGACY)]), legacy_body(2, "tools/list", json!({}))),
        post("legacy, another version in the header", s(&[("mcp-protocol-version", "2025-06-18")]), legacy_body(2, "tools/list", json!({}))),
        post("legacy, an unknown version in the header", s(&[("mcp-protocol-version", "1999-01-01")]), legacy_body(2, "tools/list", json!({}))),
        post("legacy initialize again", s(&[]), legacy_body(2, "initialize", json!({"protocolVersion": LEGACY, "capabilities": {}}))),
        post("legacy subscriptions/listen", s(&[]), legacy_body(2, "subscriptions/listen", json!({}))),
        post("legacy unknown method", s(&[]), legacy_body(2, "nope/nope", json!({}))),
        post("legacy notifications/initialized", s(&[]), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()),
        post("legacy notifications/cancelled (nothing in flight)", s(&[]), json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}).to_string()),
        post("legacy client response", s(&[]), json!({"jsonrpc": "2.0", "id": 1, "result": {}}).to_string()),
        post("legacy progress tool", s(&[]), legacy_body(2, "tools/call", json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": 7}}))),
        post("legacy logging/setLevel", s(&[]), legacy_body(2, "logging/setLevel", json!({"level": "warning"}))),
        Probe { name: "legacy DELETE", method: "DELETE", path: "/mcp", headers: s(&[]), body: None },
        Probe { name: "legacy DELETE, made-up session", method: "DELETE", path: "/mcp", headers: vec![("mcp-session-id", "made-up".into())], body: None },
        Probe { name: "legacy GET without a session", method: "GET", path: "/mcp", headers: vec![], body: None },
    ];
    let table = run_probes(&running, probes).await;
    expect![[r#"
        health: 200 text/plain "ok"
        other path: 404 text/plain "not found; the MCP endpoint is /mcp"
        PUT: 405 application/json error -32600 allow: GET, POST, DELETE
        modern tools/list: 200 application/json result
        modern, Mcp-Method missing: 400 application/json error -32020
        modern, Mcp-Method differs: 400 application/json error -32020
        modern, Mcp-Method case differs: 400 application/json error -32020
        modern, header names in capitals: 200 application/json result
        modern tools/call: 200 application/json result
        modern tools/call, Mcp-Name missing: 400 application/json error -32020
        modern tools/call, Mcp-Name differs: 400 application/json error -32020
        modern tools/call, Mcp-Name with whitespace: 200 application/json result
        modern tools/call, Mcp-Name in Base64: 200 application/json result
        modern tools/call, Mcp-Name bad Base64: 400 application/json error -32020
        modern tools/call, Mcp-Param-* match: 200 application/json result
        modern tools/call, Mcp-Param-* in Base64: 200 application/json result
        modern tools/call, Mcp-Param-* missing: 400 application/json error -32020
        modern tools/call, Mcp-Param-* differs: 400 application/json error -32020
        modern tools/call, Mcp-Param-* for a null argument: 200 application/json result
        modern resources/read, Mcp-Name = uri: 200 application/json result
        modern tool that panics: 200 application/json error -32603
        modern unknown tool: 200 application/json error -32602
        modern body without the version header: 400 application/json error -32020
        modern header, body without a version: 400 application/json error -32602
        modern header, body without capabilities: 400 application/json error -32602
        modern header, body another version: 400 application/json error -32020
        unknown version in header and body: 400 application/json error -32022
        unknown version in header only: 400 application/json error -32022
        modern ping: 404 application/json error -32601
        modern initialize: 404 application/json error -32601
        modern server/discover: 200 application/json result
        modern with a made-up session id: 200 application/json result
        modern notification: 202 -
        modern progress tool: 200 text/event-stream [notifications/progress, notifications/progress, result] x-accel-buffering: no
        modern GET: 405 application/json error -32600 allow: POST
        modern DELETE: 405 application/json error -32600 allow: POST
        batch: 400 application/json error -32600
        not JSON: 400 application/json error -32700
        not JSON-RPC: 400 application/json error -32600
        body over 4 MiB: 413 application/json error -32600
        foreign Origin: 403 application/json error -32600
        loopback Origin: 200 application/json result
        allowed Origin: 200 application/json result
        Origin null: 403 application/json error -32600
        foreign Host: 403 application/json error -32600
        legacy initialize: 200 application/json result mcp-session-id: 64 chars
        legacy initialize, old version: 200 application/json result mcp-session-id: 64 chars
        legacy without a session: 400 application/json error -32600
        legacy, made-up session: 404 application/json error -32600
        legacy ping: 200 application/json result
        legacy tools/list: 200 application/json result
        legacy, another version in the header: 200 application/json result
        legacy, an unknown version in the header: 400 application/json error -32022
        legacy initialize again: 400 application/json error -32600
        legacy subscriptions/listen: 200 application/json error -32601
        legacy unknown method: 200 application/json error -32601
        legacy notifications/initialized: 202 -
        legacy notifications/cancelled (nothing in flight): 202 -
        legacy client response: 202 -
        legacy progress tool: 200 text/event-stream [priming, notifications/progress, notifications/progress, result] x-accel-buffering: no
        legacy logging/setLevel: 200 application/json result
        legacy DELETE: 204 -
        legacy DELETE, made-up session: 404 application/json error -32600
        legacy GET without a session: 400 application/json error -32600"#]].assert_eq(&table);
    running.stop().await;
}

/// Reads an event stream message by message.
struct Events {
    response: reqwest::Response,
    parser: switchboard_protocol::sse::SseParser,
    ready: std::collections::VecDeque<Value>,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        Events {
            response,
            parser: switchboard_protocol::sse::SseParser::new(1 << 20),
            ready: Default::default(),
        }
    }

    /// The next message; `None` when the stream ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk())
                .await
                .expect("the stream moves")
                .ok()??;
            for item in self.parser.push(&chunk) {
                if let switchboard_protocol::sse::SseItem::Event(event) = item {
                    self.ready
                        .push_back(serde_json::from_str(&event.data).expect("JSON"));
                }
            }
        }
    }

    /// Every message until the stream ends, one line each.
    async fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(message) = self.next().await {
            lines.push(message.to_string());
        }
        lines
    }
}

fn slow_call(id: i64) -> (Vec<(&'static str, String)>, String) {
    (
        with(modern_headers("tools/call"), &[("mcp-name", "slow")]),
        modern_body(id, "tools/call", json!({"name": "slow", "arguments": {}})),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_notifies_first_is_answered_on_an_event_stream() {
    let running = Running::start(HttpServeOptions::default()).await;
    let response = running
        .post(
            &with(modern_headers("tools/call"), &[("mcp-name", "progress")]),
            modern_body(
                5,
                "tools/call",
                json!({"name": "progress", "arguments": {},
                "_meta": {"progressToken": "p", "io.modelcontextprotocol/logLevel": "info"}}),
            ),
        )
        .await;
    let lines = Events::new(response).rest().await;
    expect![[r#"
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1.0,"total":2.0,"message":"half"}}
        {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working","logger":"probe"}}
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2.0,"total":2.0}}
        {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"done"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"probe","version":"1.0.0"}}}}"#]]
    .assert_eq(&lines.join("\n"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_that_goes_away_cancels_a_legacy_one_cancels_by_notification() {
    let running = Arc::new(Running::start(HttpServeOptions::default()).await);
    let (headers, body) = slow_call(1);
    let call = {
        let running = running.clone();
        tokio::spawn(async move { running.post(&headers, body).await })
    };
    running
        .service
        .until("the modern call started", |s| s.slow_started == 1)
        .await;
    call.abort();
    running
        .service
        .until("the modern call cancelled", |s| s.slow_cancelled == 1)
        .await;

    let session = running.session().await;
    let on_session = vec![("mcp-session-id", session.clone())];
    let legacy_call = {
        let running = running.clone();
        let headers = on_session.clone();
        tokio::spawn(async move {
            running
                .post(
                    &headers,
                    legacy_body(2, "tools/call", json!({"name": "slow", "arguments": {}})),
                )
                .await
        })
    };
    running
        .service
        .until("the legacy call started", |s| s.slow_started == 2)
        .await;
    legacy_call.abort();
    let ping = running
        .post(&on_session, legacy_body(3, "ping", json!({})))
        .await;
    assert_eq!(ping.status(), 200);
    assert_eq!(
        running
            .service
            .seen
            .lock()
            .map(|s| s.slow_cancelled)
            .unwrap_or(0),
        1,
        "a legacy client going away cancels nothing"
    );
    let cancelled = running
        .post(
            &on_session,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}).to_string(),
        )
        .await;
    assert_eq!(cancelled.status(), 202);
    running
        .service
        .until("the legacy call cancelled", |s| s.slow_cancelled == 2)
        .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hears_what_it_asked_for_on_its_get_stream() {
    let running = Running::start(HttpServeOptions::default()).await;
    let session = running.session().await;
    let on_session = vec![("mcp-session-id", session.clone())];
    for (id, method, params) in [
        (2, "logging/setLevel", json!({"level": "warning"})),
        (3, "resources/subscribe", json!({"uri": "probe://a"})),
    ] {
        let answer = running
            .post(&on_session, legacy_body(id, method, params))
            .await;
        assert_eq!(describe(answer).await, "200 application/json result");
    }
    let get = |headers: Vec<(&'static str, String)>| {
        let mut request = running
            .client
            .get(running.url())
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.send()
    };
    let stream = get(on_session.clone()).await.expect("a GET answer");
    assert_eq!(stream.status(), 200);
    let second = get(on_session.clone()).await.expect("a GET answer");
    assert_eq!(describe(second).await, "409 application/json error -32600");
    let mut events = Events::new(stream);
    let log = |level| ServiceEvent::Log {
        message: LogMessage {
            level,
            logger: None,
            data: json!(level.as_str()),
        },
        audience: Audience::Everyone,
    };
    for event in [
        ServiceEvent::ToolsChanged,
        ServiceEvent::PromptsChanged,
        ServiceEvent::ResourceUpdated {
            uri: "probe://b".into(),
        },
        ServiceEvent::ResourceUpdated {
            uri: "probe://a".into(),
        },
        log(LogLevel::Info),
        log(LogLevel::Error),
    ] {
        running.service.announce(event);
    }
    let mut lines = Vec::new();
    for _ in 0..3 {
        lines.push(events.next().await.expect("an event").to_string());
    }
    running.end_session(&session).await;
    lines.extend(events.rest().await);
    expect![[r#"
        {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}
        {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"probe://a"}}
        {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"error"}}"#]]
    .assert_eq(&lines.join("\n"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_gets_its_events_and_at_shutdown_its_result() {
    let running = Running::start(HttpServeOptions::default()).await;
    let response = running
        .post(
            &modern_headers("subscriptions/listen"),
            modern_body(7, "subscriptions/listen", json!({"notifications": {
                "toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["probe://a"]}})),
        )
        .await;
    let mut events = Events::new(response);
    let mut lines = vec![
        events
            .next()
            .await
            .expect("the acknowledgement")
            .to_string(),
    ];
    running.service.announce(ServiceEvent::ResourcesChanged);
    running.service.announce(ServiceEvent::ToolsChanged);
    lines.push(events.next().await.expect("an event").to_string());
    let end = running.shutdown.clone();
    end.cancel();
    lines.extend(events.rest().await);
    expect![[r#"
        {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["probe://a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
        {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
        {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7,"io.modelcontextprotocol/serverInfo":{"name":"probe","version":"1.0.0"}}}}"#]]
    .assert_eq(&lines.join("\n"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_shutdown_a_request_past_the_grace_is_cancelled_and_answered() {
    let running = Arc::new(
        Running::start(HttpServeOptions {
            limits: HttpLimits {
                shutdown_grace: Duration::from_millis(100),
                ..HttpLimits::default()
            },
            ..HttpServeOptions::default()
        })
        .await,
    );
    let (headers, body) = slow_call(4);
    let call = {
        let running = running.clone();
        tokio::spawn(async move { describe(running.post(&headers, body).await).await })
    };
    running
        .service
        .until("the call started", |s| s.slow_started == 1)
        .await;
    running.shutdown.cancel();
    let answer = tokio::time::timeout(WAIT, call)
        .await
        .expect("answered")
        .expect("no panic");
    assert_eq!(answer, "200 application/json error -32603");
    running
        .service
        .until("the call cancelled", |s| s.slow_cancelled == 1)
        .await;
    let end = running.stop().await;
    assert_eq!(end.cancelled_at_shutdown, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_sessions_and_requests_in_flight_are_capped() {
    let running = Arc::new(
        Running::start(HttpServeOptions {
            bearer_tokens: BearerTokens::new(BearerToken::new("s3cret").into_iter().collect()),
            limits: HttpLimits {
                max_sessions: 1,
                max_in_flight_per_session: 1,
                ..HttpLimits::default()
            },
            ..HttpServeOptions::default()
        })
        .await,
    );
    let auth = |token: &str| vec![("authorization", format!("Bearer {token}"))];
    let init = || {
        legacy_body(
            1,
            "initialize",
            json!({"protocolVersion": LEGACY, "capabilities": {}}),
        )
    };
    let mut lines = vec![
        format!(
            "no token: {}",
            describe(running.post(&[], init()).await).await
        ),
        format!(
            "wrong token: {}",
            describe(running.post(&auth("guess"), init()).await).await
        ),
    ];
    let first = running.post(&auth("s3cret"), init()).await;
    let session = first
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    lines.push(format!("right token: {}", describe(first).await));
    let mut on_session = auth("s3cret");
    on_session.push(("mcp-session-id", session));
    let call = {
        let running = running.clone();
        let headers = on_session.clone();
        tokio::spawn(async move {
            describe(
                running
                    .post(
                        &headers,
                        legacy_body(2, "tools/call", json!({"name": "slow"})),
                    )
                    .await,
            )
            .await
        })
    };
    running
        .service
        .until("the call started", |s| s.slow_started == 1)
        .await;
    // The one session is busy: no room for another.
    lines.push(format!(
        "a second session while the first is busy: {}",
        describe(running.post(&auth("s3cret"), init()).await).await
    ));
    lines.push(format!(
        "a second request in flight: {}",
        describe(
            running
                .post(&on_session, legacy_body(3, "tools/list", json!({})))
                .await
        )
        .await
    ));
    running
        .post(&on_session, json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}).to_string())
        .await;
    lines.push(format!(
        "the cancelled call: {}",
        tokio::time::timeout(WAIT, call)
            .await
            .expect("answered")
            .expect("no panic")
    ));
    // Idle now (once its handler has wound down): a new session takes its place (the
    // least recently used idle one goes).
    running
        .service
        .until("the call cancelled", |s| s.slow_cancelled == 1)
        .await;
    let mut second = describe(running.post(&auth("s3cret"), init()).await).await;
    for _ in 0..100 {
        if !second.starts_with("503") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        second = describe(running.post(&auth("s3cret"), init()).await).await;
    }
    lines.push(format!("a second session once the first is idle: {second}"));
    lines.push(format!(
        "the first session, evicted: {}",
        describe(
            running
                .post(&on_session, legacy_body(4, "ping", json!({})))
                .await
        )
        .await
    ));
    expect![[r#"
        no token: 401 application/json error -32600 www-authenticate: Bearer
        wrong token: 401 application/json error -32600 www-authenticate: Bearer error="invalid_token"
        right token: 200 application/json result mcp-session-id: 64 chars
        a second session while the first is busy: 503 application/json error -32003
        a second request in flight: 503 application/json error -32003
        the cancelled call: 200 text/event-stream [] x-accel-buffering: no
        a second session once the first is idle: 200 application/json result mcp-session-id: 64 chars
        the first session, evicted: 404 application/json error -32600"#]].assert_eq(&lines.join("\n"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_expires() {
    let running = Running::start(HttpServeOptions {
        limits: HttpLimits {
            session_idle: Duration::ZERO,
            ..HttpLimits::default()
        },
        ..HttpServeOptions::default()
    })
    .await;
    let session = running.session().await;
    let ping = running
        .post(
            &[("mcp-session-id", session)],
            legacy_body(2, "ping", json!({})),
        )
        .await;
    assert_eq!(describe(ping).await, "404 application/json error -32600");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_setlevel_a_session_hears_every_log_message_and_updates_under_what_it_follows() {
    let running = Running::start(HttpServeOptions::default()).await;
    let session = running.session().await;
    let subscribed = running
        .post(
            &[("mcp-session-id", session.clone())],
            legacy_body(2, "resources/subscribe", json!({"uri": "probe://dir/"})),
        )
        .await;
    assert_eq!(describe(subscribed).await, "200 application/json result");
    let stream = running
        .client
        .get(running.url())
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("a GET answer");
    let mut events = Events::new(stream);
    for event in [
        ServiceEvent::Log {
            message: LogMessage {
                level: LogLevel::Debug,
                logger: None,
                data: json!("quiet"),
            },
            audience: Audience::Everyone,
        },
        ServiceEvent::ResourceUpdated {
            uri: "probe://elsewhere".into(),
        },
        ServiceEvent::ResourceUpdated {
            uri: "probe://dir/file".into(),
        },
    ] {
        running.service.announce(event);
    }
    let mut lines = Vec::new();
    for _ in 0..2 {
        lines.push(events.next().await.expect("an event").to_string());
    }
    expect![[r#"
        {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"quiet"}}
        {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"probe://dir/file"}}"#]].assert_eq(&lines.join("\n"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_subscribes_once_per_resource_and_unsubscribes_when_it_ends() {
    let running = Running::start(HttpServeOptions::default()).await;
    let session = running.session().await;
    let on_session = [("mcp-session-id", session.clone())];
    for (id, method, uri) in [
        (2, "resources/subscribe", "probe://a"),
        (3, "resources/subscribe", "probe://a"),
        (4, "resources/unsubscribe", "probe://never"),
        (5, "resources/subscribe", "probe://c"),
    ] {
        let answer = running
            .post(&on_session, legacy_body(id, method, json!({ "uri": uri })))
            .await;
        assert_eq!(describe(answer).await, "200 application/json result");
    }
    let seen = |s: &crate::probe_service::Seen| (s.subscribed, s.unsubscribed);
    assert_eq!(
        running.service.seen.lock().map(|s| seen(&s)).ok(),
        Some((2, 0))
    );
    running.end_session(&session).await;
    running
        .service
        .until("both resources unsubscribed", |s| seen(s) == (2, 2))
        .await;
    running.stop().await;
}

/// The events of an event-stream body: (id, data) pairs.
fn events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|event| !event.trim().is_empty() && !event.starts_with(':'))
        .map(|event| {
            let mut id = None;
            let mut data = String::new();
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            (id, data)
        })
        .collect()
}

/// A GET that resumes a session's stream from event `last`.
async fn resume(running: &Running, session: &str, last: &str) -> reqwest::Response {
    running
        .client
        .get(running.url())
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("last-event-id", last)
        .send()
        .await
        .expect("a GET answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_legacy_stream_is_resumed_with_last_event_id_until_the_answer() {
    let mut options = HttpServeOptions::default();
    options.limits.poll_after = Some(Duration::from_millis(100));
    let running = Running::start(options).await;
    let session = running.session().await;
    let headers = [
        ("mcp-session-id", session.clone()),
        ("mcp-protocol-version", LEGACY.to_owned()),
    ];
    // Unanswered after 100 ms: a stream that holds the priming event only, then closes.
    let call = legacy_body(7, "tools/call", json!({"name": "wait", "arguments": {}}));
    let first = running.post(&headers, call).await;
    let body = tokio::time::timeout(WAIT, first.text())
        .await
        .expect("the polled stream ends")
        .expect("a body");
    assert!(body.contains("retry: 100"), "{body}");
    let mut last = match events(&body).as_slice() {
        [(Some(id), data)] if data.is_empty() => id.clone(),
        other => panic!("one priming event, not {other:?}"),
    };
    // The client comes back with the last id it has, as often as the server lets it go.
    let mut answer = None;
    for _ in 0..50 {
        let resumed = resume(&running, &session, &last).await;
        assert_eq!(resumed.status(), 200, "resuming from {last}");
        let body = tokio::time::timeout(WAIT, resumed.text())
            .await
            .expect("the resumed stream ends")
            .expect("a body");
        for (id, data) in events(&body) {
            if let Some(id) = id {
                last = id;
            }
            if let Ok(message) = serde_json::from_str::<Value>(&data)
                && message["id"] == 7
            {
                answer = Some(message);
            }
        }
        if answer.is_some() {
            break;
        }
    }
    let answer = answer.expect("the answer arrived on a resumed stream");
    assert_eq!(answer["result"]["content"][0]["text"], "waited", "{answer}");
    // Its events are gone once it was taken: resuming again finds nothing.
    let again = resume(&running, &session, &last).await;
    assert_eq!(again.status(), 404);
    // An id that is not ours is refused.
    let foreign = resume(&running, &session, "not-an-id").await;
    assert_eq!(foreign.status(), 400);
    running.stop().await;
}

/// A client that connects from another loopback address (`127.0.0.2`): another peer.
fn client_from(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(WAIT)
        .local_address(address.parse::<std::net::IpAddr>().ok())
        .build()
        .expect("a client")
}

/// The text a `tools/call` answered with (a JSON body).
async fn answered_text(response: reqwest::Response) -> String {
    let text = response.text().await.expect("a body");
    let body: Value = serde_json::from_str(&text).expect("a JSON answer");
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {body}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_the_client_identity_and_sessions_keep_theirs() {
    let running = Running::start(HttpServeOptions::default()).await;
    // Without credentials, a client is its address; the service reads it on the request.
    let call = || modern_body(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
    let mut headers = modern_headers("tools/call");
    headers.push(("mcp-name", "whoami".to_owned()));
    let modern = running.post(&headers, call()).await;
    assert_eq!(answered_text(modern).await, "peer 127.0.0.1");
    // A legacy session keeps the identity of whoever opened it.
    let session = running.session().await;
    let on_session = vec![("mcp-session-id", session.clone())];
    let legacy = running
        .post(
            &on_session,
            legacy_body(3, "tools/call", json!({"name": "whoami"})),
        )
        .await;
    assert_eq!(answered_text(legacy).await, "peer 127.0.0.1");
    // Another client naming that session finds none (as for an unknown id): it cannot
    // call in it, listen on its GET stream, or end it.
    let other = client_from("127.0.0.2");
    let foreign_call = other
        .post(running.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .body(legacy_body(4, "tools/call", json!({"name": "whoami"})))
        .send()
        .await
        .expect("an answer");
    assert_eq!(foreign_call.status(), 404);
    let foreign_end = other
        .delete(running.url())
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("an answer");
    assert_eq!(foreign_end.status(), 404);
    // Its owner still has it.
    running.end_session(&session).await;
    running.stop().await;

    // With a bearer token, the client is the token, known by a fingerprint only.
    let running = Running::start(HttpServeOptions {
        bearer_tokens: BearerTokens::new(BearerToken::new("s3cret-identity").into_iter().collect()),
        ..HttpServeOptions::default()
    })
    .await;
    headers.push(("authorization", "Bearer s3cret-identity".to_owned()));
    let identity = answered_text(running.post(&headers, call()).await).await;
    assert!(identity.starts_with("token "), "{identity}");
    assert!(!identity.contains("s3cret"), "{identity}");
    running.stop().await;
}

/// `headers` with `more` added after them (a header already there is sent twice).
fn twice(
    mut headers: Vec<(&'static str, String)>,
    more: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    headers.extend(
        more.iter()
            .map(|(name, value)| (*name, (*value).to_owned())),
    );
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_header_sent_twice_is_refused() {
    // A proxy that routes on the last occurrence must see what the server checked: any
    // standard header sent twice is refused, whichever occurrence agrees with the body.
    let running = Running::start(HttpServeOptions::default()).await;
    let m = modern_headers;
    let call = || with(m("tools/call"), &[("mcp-name", "echo")]);
    let s =
        |more: &[(&'static str, &str)]| with(vec![("mcp-session-id", "SESSION".to_owned())], more);
    let probes = vec![
        post(
            "Mcp-Name twice, the last another tool",
            twice(call(), &[("mcp-name", "delete_everything")]),
            call_body(1, "echo"),
        ),
        post(
            "Mcp-Name twice, the same",
            twice(call(), &[("mcp-name", "echo")]),
            call_body(1, "echo"),
        ),
        post(
            "Mcp-Method twice",
            twice(call(), &[("mcp-method", "tools/list")]),
            call_body(1, "echo"),
        ),
        post(
            "MCP-Protocol-Version twice",
            twice(m("tools/list"), &[("mcp-protocol-version", LEGACY)]),
            modern_body(1, "tools/list", json!({})),
        ),
        post(
            "Mcp-Param-Region twice",
            twice(
                call(),
                &[
                    ("mcp-param-region", "eu-west"),
                    ("mcp-param-region", "us-east"),
                ],
            ),
            echo_body(json!({"region": "eu-west"})),
        ),
        post(
            "an undeclared Mcp-Param twice",
            twice(
                call(),
                &[("mcp-param-other", "a"), ("mcp-param-other", "b")],
            ),
            call_body(1, "echo"),
        ),
        post(
            "legacy, MCP-Protocol-Version twice",
            twice(
                s(&[("mcp-protocol-version", LEGACY)]),
                &[("mcp-protocol-version", "2025-06-18")],
            ),
            legacy_body(2, "tools/list", json!({})),
        ),
        Probe {
            name: "legacy GET, MCP-Protocol-Version twice",
            method: "GET",
            path: "/mcp",
            headers: twice(
                s(&[("mcp-protocol-version", LEGACY)]),
                &[("mcp-protocol-version", MODERN)],
            ),
            body: None,
        },
    ];
    let table = run_probes(&running, probes).await;
    expect![[r#"
        Mcp-Name twice, the last another tool: 400 application/json error -32020
        Mcp-Name twice, the same: 400 application/json error -32020
        Mcp-Method twice: 400 application/json error -32020
        MCP-Protocol-Version twice: 400 application/json error -32020
        Mcp-Param-Region twice: 400 application/json error -32020
        an undeclared Mcp-Param twice: 400 application/json error -32020
        legacy, MCP-Protocol-Version twice: 400 application/json error -32020
        legacy GET, MCP-Protocol-Version twice: 400 application/json error -32020"#]]
    .assert_eq(&table);
    running.stop().await;
}
