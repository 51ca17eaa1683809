//! The slow tool: progress, completion, cancellation, and EOF while it runs.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Fixture, modern_meta};

#[tokio::test]
async fn progress_then_done() {
    let mut fixture = Fixture::spawn(&[]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 100, "steps": 2}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2,"message":"step 1"}}"#
    );
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2,"total":2,"message":"step 2"}}"#
    );
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}"#
    );
}

#[tokio::test]
async fn cancel_stops_without_a_result() {
    let mut fixture = Fixture::spawn(&[]);
    fixture.legacy_handshake().await;
    fixture
        .send(&json!({"jsonrpc": "2.0", "id": "abc", "method": "tools/call", "params":
            {"name": "slow", "arguments": {"duration_ms": 10000, "steps": 50}, "_meta": {"progressToken": 9}}}))
        .await;
    let progress: Value = fixture.next_json().await;
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], 9);
    fixture
        .notify(
            "notifications/cancelled",
            json!({"requestId": "abc", "reason": "user"}),
        )
        .await;
    fixture
        .wait_for_stderr("fixture: cancelled request \"abc\" reason=user\n")
        .await;
    // Other requests are still served, and no result for "abc" ever comes.
    fixture
        .request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "after"}}),
        )
        .await;
    loop {
        let line = fixture.next_json().await;
        if line["method"] == "notifications/progress" {
            continue;
        }
        assert_eq!(line["id"], 3, "unexpected line {line}");
        break;
    }
    fixture.expect_silence().await;
}

#[tokio::test]
async fn modern_cancel_with_integer_id() {
    let mut fixture = Fixture::spawn(&["--era", "modern"]);
    fixture
        .request(
            7,
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 10000}, "_meta": modern_meta()}),
        )
        .await;
    fixture
        .notify(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "timeout"}),
        )
        .await;
    fixture
        .wait_for_stderr("fixture: cancelled request 7 reason=timeout\n")
        .await;
    fixture.expect_silence().await;
}

#[tokio::test]
async fn eof_ends_the_fixture_promptly_while_a_call_runs() {
    let mut fixture = Fixture::spawn(&[]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 60000}}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    fixture.close_stdin();
    // The call would run for a minute; the fixture exits well within the hang detector's
    // deadline, and stdout closes without an answer to it: the call was abandoned, not
    // waited for.
    assert!(fixture.wait_exit().await.success());
    fixture.expect_stdout_closed().await;
}
