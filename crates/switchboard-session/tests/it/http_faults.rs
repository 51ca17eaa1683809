//! HTTP faults from the reference list, each against a tiny loopback server that answers
//! every POST with one canned reply: a typed error within the deadline, nothing leaked.

use std::time::Duration;

use expect_test::expect;
use serde_json::Value;
use switchboard_http::HttpOptions;
use switchboard_protocol::Tool;
use switchboard_session::{
    CallOptions, EraChoice, Listing, Repeatable, Session, SessionConfig, SessionError,
};
use switchboard_testkit::canned::{self, read_request};
use switchboard_testkit::wait::within;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::support::TEST_DEADLINE;

/// How the canned server answers the request under test.
#[derive(Clone, Copy)]
enum Fault {
    WrongContentType,
    EmptyOk,
    StreamEndsEarly,
    OtherId,
    Oversized,
    Trickle,
    Redirect,
    ResetMidStream,
    Unauthorized,
    /// A 2024-11-05 server whose `endpoint` event points at another origin.
    ForeignEndpoint,
}

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}"#;

/// Serves `initialize` (and anything else the handshake needs) properly, and `tools/call`
/// with the fault. Bounded: stops after 40 connections or when the test ends.
async fn canned_server(fault: Fault) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    );
    let task = tokio::spawn(async move {
        for _ in 0..40 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let (buf, body) = (&request.raw, request.json());
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let method = body.get("method").and_then(Value::as_str).unwrap_or("");
                let reply = canned::answer;
                let is_get = buf.starts_with(b"GET ");
                if let (true, Fault::ForeignEndpoint) = (is_get, fault) {
                    let stream = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\nevent: endpoint\ndata: http://evil.example/messages\n\n";
                    let _ = socket.write_all(stream.as_bytes()).await;
                    let _ = socket.shutdown().await;
                    return;
                }
                let response = match method {
                    "initialize" if matches!(fault, Fault::ForeignEndpoint) => canned::empty_answer("404 Not Found"),
                    "initialize" => reply("200 OK", "application/json", &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INIT_RESULT}}}"#)),
                    "tools/call" => match fault {
                        Fault::WrongContentType => reply("200 OK", "text/html", "<html>hello</html>"),
                        Fault::EmptyOk => reply("200 OK", "application/json", ""),
                        Fault::StreamEndsEarly => reply("200 OK", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"),
                        Fault::OtherId => reply("200 OK", "application/json", r#"{"jsonrpc":"2.0","id":99999,"result":{"content":[]}}"#),
                        Fault::Oversized => reply("200 OK", "application/json", &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#, "x".repeat(300_000))),
                        Fault::Redirect => "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://10.0.0.1/steal\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                        Fault::Unauthorized => "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                        Fault::Trickle => {
                            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n").await;
                            for _ in 0..100 {
                                if socket.write_all(b" ").await.is_err() {
                                    return;
                                }
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                            return;
                        }
                        Fault::ForeignEndpoint => return,
                        Fault::ResetMidStream => {
                            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n10\r\ndata: {\"jsonrpc\"").await;
                            return;
                        }
                    },
                    _ => canned::empty_answer("202 Accepted"),
                };
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, task)
}

async fn call_with_fault(
    fault: Fault,
) -> Result<switchboard_protocol::CallToolResult, SessionError> {
    let (url, server) = canned_server(fault).await;
    let mut config = SessionConfig::new("canned");
    config.era = EraChoice::Legacy;
    config.request_timeout = Duration::from_millis(800);
    let mut options = HttpOptions::new("canned", &url);
    options.max_body_bytes = 100_000;
    let session = within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(options, config),
    )
    .await
    .expect("connect");
    let outcome = within(
        "the faulty call",
        TEST_DEADLINE,
        session.call_tool("anything", None, &CallOptions::default()),
    )
    .await;
    server.abort();
    outcome
}

/// The transport's failure as `status | message` (digits of the message masked): HTTP
/// failures are typed transport errors, never dressed up as JSON-RPC errors.
fn transport_failure(
    outcome: &Result<switchboard_protocol::CallToolResult, SessionError>,
) -> String {
    match outcome {
        Err(SessionError::Transport { error, .. }) => format!(
            "{} | {}",
            error
                .http_status()
                .map_or_else(|| "-".to_owned(), |s| s.to_string()),
            error.to_string().replace(|c: char| c.is_ascii_digit(), "N")
        ),
        // A stream that ended first may have run the call (a restarted server's would).
        Err(SessionError::Restarted { cause, .. }) => format!(
            "restarted | {}",
            cause.replace(|c: char| c.is_ascii_digit(), "N")
        ),
        other => format!("not a transport error: {other:?}"),
    }
}

#[tokio::test]
async fn each_http_fault_is_a_typed_error_within_its_deadline() {
    let cases = [
        (
            Fault::WrongContentType,
            "200 | HTTP NNN OK from http://NNN.N.N.N:NNNNN/mcp: <html>hello</html>",
        ),
        (
            Fault::EmptyOk,
            "200 | the server answered HTTP NNN OK with no response to the request",
        ),
        (
            Fault::StreamEndsEarly,
            "restarted | the server's event stream ended before it answered (HTTP NNN OK)",
        ),
        (
            Fault::OtherId,
            "200 | the server answered this request's POST with a message for request NNNNN",
        ),
        (
            Fault::Oversized,
            "- | the server's response body is larger than the NNNNNN-byte limit",
        ),
        (
            Fault::Redirect,
            "307 | HTTP NNN Temporary Redirect from http://NNN.N.N.N:NNNNN/mcp",
        ),
        (
            Fault::Unauthorized,
            "401 | HTTP NNN Unauthorized from http://NNN.N.N.N:NNNNN/mcp: the server requires authorization (configure an Authorization header)",
        ),
    ];
    for (fault, expected) in cases {
        // A fault that waited for the deadline would be a timeout, not this answer.
        let outcome = call_with_fault(fault).await;
        assert_eq!(transport_failure(&outcome), expected);
    }
}

#[tokio::test]
async fn a_trickling_body_hits_the_deadline_and_a_reset_closes_the_transport() {
    let outcome = call_with_fault(Fault::Trickle).await;
    assert!(
        matches!(outcome, Err(SessionError::Timeout { .. })),
        "{outcome:?}"
    );

    let outcome = call_with_fault(Fault::ResetMidStream).await;
    let error = outcome.expect_err("reset");
    assert!(error.is_closed(), "{error}");
    assert!(
        error.to_string().contains("broke during a response"),
        "{error}"
    );
}

#[tokio::test]
async fn an_sse_endpoint_on_another_origin_is_refused() {
    let (url, server) = canned_server(Fault::ForeignEndpoint).await;
    let mut config = SessionConfig::new("canned");
    config.era = EraChoice::Legacy;
    let outcome = within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("canned", &url), config),
    )
    .await;
    server.abort();
    let error = outcome.expect_err("refused");
    let message = error.to_string();
    assert!(message.contains("HTTP+SSE (2024-11-05) fallback failed too: refusing the message endpoint http://evil.example/messages: it is on another origin"), "{message}");
}

/// How the 2026-07-28 server behind [`modern_server`] treats `tools/call`.
#[derive(Clone, Copy)]
enum ModernRule {
    /// The first `tools/list` omits the annotation; later ones carry it, and calls
    /// without the header get 400 + -32020.
    AnnouncedLate,
    /// Every call gets 400 + -32020, whatever its headers.
    NeverSatisfied,
    /// The first call's event stream ends after a progress event, without the response;
    /// later calls are answered (headers are not checked).
    FirstStreamEnds,
    /// Every listing also has a tool, `weigh`, whose annotation is on a `number` (which
    /// may not be a header); calls without `Mcp-Param-Region` get 400 + -32020.
    InvalidAnnotationBeside,
}

/// Counts what a [`modern_server`] was asked.
#[derive(Default)]
struct Asked {
    listings: std::sync::atomic::AtomicUsize,
    /// The ids of the `tools/call` requests, in arrival order.
    call_ids: std::sync::Mutex<Vec<String>>,
}

/// A 2026-07-28 server with one tool, `weather`, whose `region` argument travels in
/// `Mcp-Param-Region`. Bounded: stops after 40 connections or when the test ends.
async fn modern_server(
    rule: ModernRule,
) -> (String, std::sync::Arc<Asked>, tokio::task::JoinHandle<()>) {
    use std::sync::atomic::Ordering::SeqCst;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    );
    let asked = std::sync::Arc::new(Asked::default());
    let counts = asked.clone();
    let task = tokio::spawn(async move {
        for _ in 0..40 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let asked = counts.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let (buf, body) = (&request.raw, request.json());
                let head = String::from_utf8_lossy(buf).to_ascii_lowercase();
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let method = body.get("method").and_then(Value::as_str).unwrap_or("");
                let answer = |status: &str, message: Value| {
                    canned::answer(status, "application/json", &message.to_string())
                };
                let region = serde_json::json!({"type": "string"});
                let response = match method {
                    "server/discover" => answer(
                        "200 OK",
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                        "resultType": "complete", "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "regional", "version": "1"}}}}),
                    ),
                    "tools/list" => {
                        let earlier = asked.listings.fetch_add(1, SeqCst);
                        let mut region = region;
                        if earlier > 0 || !matches!(rule, ModernRule::AnnouncedLate) {
                            region["x-mcp-header"] = Value::from("Region");
                        }
                        let mut tools = vec![
                            serde_json::json!({"name": "weather", "inputSchema": {"type": "object", "properties": {"region": region}}}),
                        ];
                        if matches!(rule, ModernRule::InvalidAnnotationBeside) {
                            tools.push(serde_json::json!({"name": "weigh", "inputSchema": {"type": "object", "properties": {
                                "weight": {"type": "number", "x-mcp-header": "Weight"}}}}));
                        }
                        answer(
                            "200 OK",
                            serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                            "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                            "tools": tools}}),
                        )
                    }
                    "tools/call" => {
                        let earlier = {
                            let mut ids = asked.call_ids.lock().expect("ids");
                            ids.push(id.to_string());
                            ids.len() - 1
                        };
                        let satisfied = match rule {
                            ModernRule::AnnouncedLate | ModernRule::InvalidAnnotationBeside => {
                                head.contains("\r\nmcp-param-region: eu\r\n")
                            }
                            ModernRule::NeverSatisfied => false,
                            ModernRule::FirstStreamEnds => true,
                        };
                        if matches!(rule, ModernRule::FirstStreamEnds) && earlier == 0 {
                            let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}"#;
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {progress}\n\n"
                            )
                        } else if satisfied {
                            answer(
                                "200 OK",
                                serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                                "resultType": "complete", "content": [{"type": "text", "text": "sunny in eu"}]}}),
                            )
                        } else {
                            answer(
                                "400 Bad Request",
                                serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                                "code": -32020, "message": "Mcp-Param-Region does not match the body"}}),
                            )
                        }
                    }
                    _ => answer(
                        "404 Not Found",
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32601, "message": "method not found"}}),
                    ),
                };
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, asked, task)
}

/// What [`call_weather`] saw: the call's outcome, the tools listed (with the listing's
/// problems), how many listings the server saw and the ids of the calls it saw.
struct Weather {
    outcome: Result<String, String>,
    listing: Listing<Tool>,
    listings: usize,
    call_ids: Vec<String>,
}

/// Lists the tools, then calls `weather` once.
async fn call_weather(rule: ModernRule) -> Weather {
    call_weather_as(rule, Repeatable::ByMethod).await
}

/// [`call_weather`], the tool said to be safe to send again or not.
async fn call_weather_as(rule: ModernRule, repeatable: Repeatable) -> Weather {
    use std::sync::atomic::Ordering::SeqCst;
    let (url, asked, server) = modern_server(rule).await;
    let mut config = SessionConfig::new("regional");
    config.era = EraChoice::Modern;
    let session = within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("regional", &url), config),
    )
    .await
    .expect("connect");
    let listing = within("list", TEST_DEADLINE, session.list_tools())
        .await
        .expect("tools/list");
    let arguments = serde_json::json!({"region": "eu"});
    let outcome = within(
        "call",
        TEST_DEADLINE,
        session.call_tool(
            "weather",
            Some(&arguments),
            &CallOptions {
                repeatable,
                ..CallOptions::default()
            },
        ),
    )
    .await;
    server.abort();
    let outcome = match outcome {
        Ok(result) => Ok(format!("{:?}", result.content)),
        Err(error) => Err(error.to_string()),
    };
    let call_ids = asked.call_ids.lock().expect("ids").clone();
    Weather {
        outcome,
        listing,
        listings: asked.listings.load(SeqCst),
        call_ids,
    }
}

#[tokio::test]
async fn a_header_mismatch_relists_the_tools_and_retries_once() {
    let late = call_weather(ModernRule::AnnouncedLate).await;
    assert_eq!(
        late.outcome.as_deref(),
        Ok(r#"[Text { text: "sunny in eu" }]"#)
    );
    assert_eq!((late.listings, late.call_ids.len()), (2, 2));

    let never = call_weather(ModernRule::NeverSatisfied).await;
    let message = never.outcome.expect_err("still mismatched");
    assert!(
        message.contains(
            "answered `tools/call` with an error: Mcp-Param-Region does not match the body (code -32020)"
        ),
        "{message}"
    );
    assert_eq!(
        (never.listings, never.call_ids.len()),
        (2, 2),
        "one re-listing, one retry"
    );
}

#[tokio::test]
async fn a_tool_with_an_invalid_header_annotation_is_a_listing_problem_and_the_others_work() {
    let seen = call_weather(ModernRule::InvalidAnnotationBeside).await;
    let names: Vec<&str> = seen.listing.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["weather"]);
    let problems: Vec<(usize, &str)> = seen
        .listing
        .problems
        .iter()
        .map(|p| (p.page, p.detail.as_str()))
        .collect();
    assert_eq!(
        problems,
        [(
            1,
            "tool `weigh` left out: `x-mcp-header` on `weight` of type number (only string, integer and boolean may be headers)"
        )]
    );
    assert!(seen.listing.problems[0].raw.get().contains("\"weigh\""));
    assert_eq!(
        seen.outcome.as_deref(),
        Ok(r#"[Text { text: "sunny in eu" }]"#),
        "the call carried the header the listing described"
    );
    assert_eq!((seen.listings, seen.call_ids.len()), (1, 1));
}

#[tokio::test]
async fn a_lost_modern_response_stream_reissues_a_safe_request_under_a_new_id_and_fails_another() {
    // A tool its caller knows to be safe to run twice (read-only or idempotent).
    let seen = call_weather_as(ModernRule::FirstStreamEnds, Repeatable::Idempotent).await;
    assert_eq!(
        seen.outcome.as_deref(),
        Ok(r#"[Text { text: "sunny in eu" }]"#)
    );
    let calls = seen.call_ids;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(calls[0], calls[1], "the re-issued request has a new id");

    // Any other tool: the call may have had effects, so it is not sent again.
    let seen = call_weather(ModernRule::FirstStreamEnds).await;
    expect!["server `regional` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server's event stream ended before it answered (HTTP 200 OK)"]
        .assert_eq(seen.outcome.as_ref().expect_err("not sent again"));
    assert_eq!(seen.call_ids.len(), 1, "sent once");
}

/// A legacy server that opens its GET stream slowly and, like many servers, would drop a
/// message meant for that stream while none is open. `tools/call` answers whether the GET
/// stream was open when the call arrived. Bounded: 20 connections, 5 s per GET stream.
async fn slow_get_stream_server() -> (String, tokio::task::JoinHandle<()>) {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    );
    let get_open = std::sync::Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(async move {
        for _ in 0..20 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let get_open = get_open.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let (buf, body) = (&request.raw, request.json());
                if buf.starts_with(b"GET ") {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    get_open.store(true, SeqCst);
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(head.as_bytes()).await;
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    return;
                }
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let result = match body.get("method").and_then(Value::as_str) {
                    Some("initialize") => INIT_RESULT.to_owned(),
                    Some("tools/call") => format!(
                        r#"{{"content":[{{"type":"text","text":"GET stream open: {}"}}]}}"#,
                        get_open.load(SeqCst)
                    ),
                    _ => {
                        let accepted = canned::empty_answer("202 Accepted");
                        let _ = socket.write_all(accepted.as_bytes()).await;
                        return;
                    }
                };
                let message = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{message}",
                    message.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, task)
}

#[tokio::test]
async fn requests_wait_for_the_get_stream_to_open_so_its_messages_are_not_lost() {
    let (url, server) = slow_get_stream_server().await;
    let mut config = SessionConfig::new("slow-get");
    config.era = EraChoice::Legacy;
    let session = within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("slow-get", &url), config),
    )
    .await
    .expect("connect");
    let result = within(
        "the first call",
        TEST_DEADLINE,
        session.call_tool("anything", None, &CallOptions::default()),
    )
    .await
    .expect("answered");
    server.abort();
    assert_eq!(
        format!("{:?}", result.content),
        r#"[Text { text: "GET stream open: true" }]"#
    );
}
