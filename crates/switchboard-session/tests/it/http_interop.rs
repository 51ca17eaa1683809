//! The session over Streamable HTTP against real servers on 127.0.0.1: server-everything
//! (TypeScript SDK, legacy sessions) and a FastMCP server (Python SDK).

use serde_json::json;
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, CancellationToken, EraChoice, Session, SessionError};
use switchboard_testkit::serve::{EverythingMode, HttpServer, PeerCommand, free_port};
use switchboard_testkit::wait::within;
use switchboard_wire::stdio::ShutdownGrace;

use crate::support::*;

/// A real server on a loopback port of its own, killed when dropped; `restart` starts it
/// again on the same port.
pub(crate) struct HttpPeer {
    server: Option<HttpServer>,
    url: String,
    port: u16,
    /// The peer's command on a given port (0: a port of its own, reported).
    on_port: fn(u16) -> PeerCommand,
}

impl HttpPeer {
    fn start(on_port: fn(u16) -> PeerCommand) -> HttpPeer {
        let server = HttpServer::peer(on_port(0));
        HttpPeer {
            url: server.url().to_owned(),
            port: server.port(),
            server: Some(server),
            on_port,
        }
    }

    pub(crate) fn everything() -> HttpPeer {
        HttpPeer::start(|port| PeerCommand::everything_on(EverythingMode::StreamableHttp, port))
    }

    pub(crate) fn fastmcp() -> HttpPeer {
        HttpPeer::start(PeerCommand::fastmcp_on)
    }

    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }

    /// Kills the server and starts it again on the same port (its sessions are gone).
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.server = Some(HttpServer::peer((self.on_port)(self.port)));
    }

    /// Kills the server (and reaps it).
    pub(crate) fn stop(&mut self) {
        self.server = None;
    }
}

async fn connect_http(
    peer: &HttpPeer,
    name: &str,
    era: EraChoice,
) -> Result<Session, SessionError> {
    let mut config = quick_config(name);
    config.era = era;
    within(
        "connect over HTTP",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new(name, &peer.url()), config),
    )
    .await
}

struct HttpCase {
    name: &'static str,
    echo: serde_json::Value,
    echo_text: &'static str,
    invalid: (&'static str, serde_json::Value),
    long: (&'static str, serde_json::Value),
}

async fn check_http_peer(mut peer: HttpPeer, case: HttpCase, expected_era: &str) {
    let session = connect_http(&peer, case.name, EraChoice::Auto)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let n = session.negotiated();
    assert_eq!(format!("{} {}", n.era, n.protocol_version), expected_era);
    let tools = session.list_tools().await.expect("tools/list");
    assert!(tools.items.iter().any(|t| t.name == "echo"));
    let echo = session
        .call_tool("echo", Some(&case.echo), &CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(echo.text(), case.echo_text);
    match session
        .call_tool(
            case.invalid.0,
            Some(&case.invalid.1),
            &CallOptions::default(),
        )
        .await
    {
        Ok(result) => assert!(result.is_error, "{}: invalid arguments accepted", case.name),
        Err(error) => assert_eq!(
            error.rpc_error().map(|e| e.code),
            Some(-32602),
            "{}: {error}",
            case.name
        ),
    }

    // Cancel a long call once it is in flight at the server (it reported progress): it
    // ends at once and the session keeps working.
    let token = CancellationToken::new();
    let (progress, mut reported) = tokio::sync::mpsc::channel(64);
    let options = CallOptions {
        cancel: Some(token.clone()),
        progress: Some(progress),
        ..Default::default()
    };
    let canceller = tokio::spawn(async move {
        let _ = reported.recv().await;
        token.cancel();
    });
    let error = within(
        "the cancelled call",
        TEST_DEADLINE,
        session.call_tool(case.long.0, Some(&case.long.1), &options),
    )
    .await
    .expect_err("cancelled");
    assert!(matches!(error, SessionError::Cancelled { .. }), "{error}");
    canceller.await.expect("canceller");
    assert_eq!(
        session
            .call_tool("echo", Some(&case.echo), &CallOptions::default())
            .await
            .expect("echo")
            .text(),
        case.echo_text
    );

    // The server restarts: a legacy session is gone (404) and is re-initialized once,
    // transparently; a modern server has no session to lose.
    peer.restart();
    let after_restart = within(
        "a call after the restart",
        TEST_DEADLINE,
        session.call_tool("echo", Some(&case.echo), &CallOptions::default()),
    )
    .await;
    assert_eq!(
        after_restart.expect("echo after restart").text(),
        case.echo_text
    );

    // Killed mid-call: the outstanding call (5 s of work) fails with a transport error,
    // not with a timeout or an answer: the transport closed (a legacy stream that broke),
    // or, its 2026-07-28 stream lost, the call may have run and is not sent again.
    let (pending, mut reported) = in_flight(&session, case.long.0, case.long.1.clone());
    within("the call's first progress", TEST_DEADLINE, reported.recv()).await;
    peer.stop();
    let error = within("the outstanding call to fail", TEST_DEADLINE, pending)
        .await
        .expect("join")
        .expect_err("closed");
    assert!(
        error.is_closed() || error.is_restarted(),
        "{}: {error}",
        case.name
    );
    assert!(error.to_string().contains("127.0.0.1"), "{error}");
}

#[tokio::test]
async fn server_everything_over_http() {
    let case = HttpCase {
        name: "everything",
        echo: json!({"message": "hi"}),
        echo_text: "Echo: hi",
        invalid: ("get-sum", json!({"a": "x"})),
        long: (
            "trigger-long-running-operation",
            json!({"duration": 5, "steps": 50}),
        ),
    };
    check_http_peer(HttpPeer::everything(), case, "legacy 2025-11-25").await;
}

#[tokio::test]
async fn fastmcp_over_http() {
    let case = HttpCase {
        name: "fastmcp",
        echo: json!({"text": "hi"}),
        echo_text: "hi",
        invalid: ("add", json!({"a": "x"})),
        long: ("slow", json!({"duration_s": 5.0, "steps": 50})),
    };
    check_http_peer(HttpPeer::fastmcp(), case, "modern 2026-07-28").await;
}

#[tokio::test]
async fn closing_a_legacy_session_ends_it_and_unreachable_servers_fail_fast() {
    let peer = HttpPeer::everything();
    let session = connect_http(&peer, "everything", EraChoice::Auto)
        .await
        .expect("connect");
    within(
        "the session to shut down",
        TEST_DEADLINE,
        session.shutdown(ShutdownGrace::default()),
    )
    .await;
    assert!(
        session.close_reason().is_some(),
        "the connection is closed after shutdown"
    );

    // A port nobody listens on.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Refused, not timed out: the error is a closed transport that names the address.
    let error = within(
        "connect to nothing",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("nobody", &url), quick_config("nobody")),
    )
    .await
    .expect_err("refused");
    assert!(error.is_closed(), "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("could not reach {url}")),
        "{error}"
    );
    drop(peer);
}

#[tokio::test]
async fn a_2024_11_05_sse_server_is_reached_through_the_fallback() {
    let mut peer = HttpPeer::start(|port| PeerCommand::everything_on(EverythingMode::Sse, port));
    let url = peer.url();
    let session = within(
        "connect over HTTP+SSE",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("old", &url), quick_config("old")),
    )
    .await
    .expect("connect");
    assert_eq!(session.negotiated().era, switchboard_protocol::Era::Legacy);
    let echo = session
        .call_tool(
            "echo",
            Some(&json!({"message": "old"})),
            &CallOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!(echo.text(), "Echo: old");
    let (pending, mut reported) = in_flight(
        &session,
        "trigger-long-running-operation",
        json!({"duration": 5, "steps": 50}),
    );
    within("the call's first progress", TEST_DEADLINE, reported.recv()).await;
    peer.stop();
    let error = within("the outstanding call to fail", TEST_DEADLINE, pending)
        .await
        .expect("join")
        .expect_err("closed");
    assert!(error.is_closed(), "{error}");
}
