//! The HTTP transport keeps its connections: calls in a row to a server that keeps them
//! alive share one TCP connection (answers as JSON or as a response stream alike), each
//! request names its `Host`, a server that closes a connection after an answer gets a
//! new one for the next call, and a stream that never ends after its answer is let go.

use serde_json::Value;
use switchboard_http::HttpOptions;
use switchboard_session::{EraChoice, Session, SessionConfig};
use switchboard_testkit::canned::{
    CannedRequest, CountingServer, SEPARATE_WRITE, SEPARATE_WRITE_GAP, TRICKLE,
};
use switchboard_testkit::wait::{until_async, within};

use crate::support::TEST_DEADLINE;

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"kept","version":"1"}}"#;
const CALLS: usize = 10;

/// A whole answer that keeps the connection open (or closes it, when `close` says so).
fn kept_answer(status: &str, content_type: &str, body: &str, close: Connection) -> String {
    let connection = match close {
        Connection::Keep => "",
        Connection::Close => "connection: close\r\n",
    };
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{connection}\r\n{body}",
        body.len()
    )
}

#[derive(Clone, Copy)]
enum Connection {
    Keep,
    Close,
}

/// How the server answers `tools/list`.
#[derive(Clone, Copy)]
enum ListAnswer {
    /// A JSON body, the connection then kept or closed.
    Json(Connection),
    /// A response stream (`text/event-stream`, chunked) carrying the answer, then ending;
    /// the connection kept.
    Stream,
    /// The same, its end sent in a write of its own a moment after the event (rmcp's
    /// servers).
    StreamEndedApart,
    /// The answer's event, then a comment every moment and never an end.
    StreamThenTrickle,
}

/// A legacy server: `initialize` answered, notifications accepted, no GET stream, and
/// `tools/list` answered with an empty list as `list_answer` says.
async fn legacy_server(list_answer: ListAnswer) -> CountingServer {
    CountingServer::start_with(move |_, request: &CannedRequest| {
        if request.method() == "GET" {
            return kept_answer("405 Method Not Allowed", "text/plain", "", Connection::Keep);
        }
        let body = request.json();
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        match body.get("method").and_then(Value::as_str) {
            Some("initialize") => kept_answer(
                "200 OK",
                "application/json",
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INIT_RESULT}}}"#),
                Connection::Keep,
            ),
            Some("tools/list") => {
                let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[]}}}}"#);
                match list_answer {
                    ListAnswer::Json(after) => {
                        kept_answer("200 OK", "application/json", &answer, after)
                    }
                    ListAnswer::Stream
                    | ListAnswer::StreamEndedApart
                    | ListAnswer::StreamThenTrickle => {
                        // Chunked, as stream-answering servers send it: the body's end is
                        // a chunk of its own, after the event.
                        let event = format!("event: message\ndata: {answer}\n\n");
                        let end = match list_answer {
                            ListAnswer::StreamEndedApart => format!("{SEPARATE_WRITE}0\r\n\r\n"),
                            // An event-stream comment (`:` and a line end) as one chunk.
                            ListAnswer::StreamThenTrickle => format!("{TRICKLE}2\r\n:\n\r\n"),
                            _ => "0\r\n\r\n".to_owned(),
                        };
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                             transfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n{end}",
                            event.len()
                        )
                    }
                }
            }
            _ => kept_answer("202 Accepted", "text/plain", "", Connection::Keep),
        }
    })
    .await
}

/// A legacy-era session to `server`'s `/mcp`.
async fn connect_legacy(server: &CountingServer) -> Session {
    let url = format!("{}/mcp", server.origin());
    let mut config = SessionConfig::new("kept");
    config.era = EraChoice::Legacy;
    within(
        "connect",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("kept", &url), config),
    )
    .await
    .expect("connect")
}

async fn list_in_a_row(server: &CountingServer) {
    let session = connect_legacy(server).await;
    for _ in 0..CALLS {
        let listing = within("tools/list", TEST_DEADLINE, session.list_tools())
            .await
            .expect("tools/list");
        assert!(listing.items.is_empty());
    }
}

fn lists(server: &CountingServer) -> Vec<CannedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.json().get("method").and_then(Value::as_str) == Some("tools/list"))
        .collect()
}

#[tokio::test]
async fn calls_in_a_row_share_a_kept_connection_and_name_their_host() {
    let server = legacy_server(ListAnswer::Json(Connection::Keep)).await;
    list_in_a_row(&server).await;
    let lists = lists(&server);
    assert_eq!(lists.len(), CALLS);
    let host = format!("host: 127.0.0.1:{}", server.port());
    assert!(
        lists
            .iter()
            .all(|r| r.head.to_ascii_lowercase().contains(&host)),
        "{:?}",
        lists.first().map(|r| &r.head)
    );
    // The handshake's POSTs and the GET stream's refusal may overlap on a second
    // connection; the calls in a row add none.
    assert!(
        server.connections() <= 2,
        "{} connections",
        server.connections()
    );
}

#[tokio::test]
async fn a_connection_the_server_closed_is_replaced_for_the_next_call() {
    let server = legacy_server(ListAnswer::Json(Connection::Close)).await;
    list_in_a_row(&server).await;
    assert_eq!(lists(&server).len(), CALLS);
    assert!(
        server.connections() >= CALLS,
        "{} connections",
        server.connections()
    );
}

#[tokio::test]
async fn answers_on_a_response_stream_keep_their_connection_too() {
    let server = legacy_server(ListAnswer::Stream).await;
    list_in_a_row(&server).await;
    assert_eq!(lists(&server).len(), CALLS);
    assert!(
        server.connections() <= 2,
        "{} connections",
        server.connections()
    );
}

/// A stream whose end comes in a write of its own a moment after the answer: the
/// transport waits a moment for it, so the connection comes back for the next call. The
/// calls here are a few milliseconds apart (longer than the server's gap, shorter than the
/// transport's wait): without the wait every call would open a connection of its own.
#[tokio::test]
async fn answers_on_a_stream_ended_apart_keep_their_connection() {
    let server = legacy_server(ListAnswer::StreamEndedApart).await;
    let session = connect_legacy(&server).await;
    for _ in 0..CALLS {
        within("tools/list", TEST_DEADLINE, session.list_tools())
            .await
            .expect("tools/list");
        tokio::time::sleep(SEPARATE_WRITE_GAP * 5).await;
    }
    assert_eq!(lists(&server).len(), CALLS);
    // Two for the handshake at most, and a margin for a call that a busy machine made
    // before the end it waited for had come.
    assert!(
        server.connections() <= CALLS / 2,
        "{} connections",
        server.connections()
    );
}

/// A stream that goes on after its answer, a byte now and then and never an end: the
/// transport waits for its end once, briefly, not again after every byte (which would hold
/// the request and its connection for as long as the bytes keep coming, up to the body
/// cap: minutes at this pace), so it lets the stream and its connection go while the
/// server is still writing.
#[tokio::test]
async fn a_stream_that_trickles_on_after_its_answer_is_let_go() {
    let server = legacy_server(ListAnswer::StreamThenTrickle).await;
    let session = connect_legacy(&server).await;
    within("tools/list", TEST_DEADLINE, session.list_tools())
        .await
        .expect("tools/list");
    until_async(
        "the client to let the trickling stream go",
        TEST_DEADLINE,
        || async { server.trickles_cut() > 0 },
    )
    .await;
    drop(session);
}
