//! Each deliberately broken mode shows its defining fault.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpgid};
use serde_json::{Value, json};
use switchboard_testkit::wait::{self, TEST_DEADLINE};
use switchboard_wire::{MalformedKind, decode};

use crate::support::{Fixture, QUIET_PERIOD, initialize_params};

#[tokio::test]
async fn no_init_reply_stays_silent_and_exits_on_eof() {
    let mut fixture = Fixture::spawn(&["--mode", "no-init-reply", "--era", "both"]);
    fixture
        .request(1, "initialize", initialize_params("2025-11-25"))
        .await;
    fixture.request(2, "server/discover", json!({})).await;
    fixture.expect_silence().await;
    fixture.close_stdin();
    assert!(fixture.wait_exit().await.success());
}

#[tokio::test]
async fn wrong_version() {
    let mut fixture = Fixture::spawn(&["--mode", "wrong-version"]);
    let response: Value = serde_json::from_str(&fixture.legacy_handshake().await).expect("json");
    assert_eq!(response["result"]["protocolVersion"], "1999-01-01");
}

#[tokio::test]
async fn garbage_stdout() {
    let mut fixture = Fixture::spawn(&["--mode", "garbage-stdout"]);
    assert_eq!(fixture.next_line().await, "Starting fixture server v1.0...");
    assert_eq!(fixture.next_line().await, r#"{"not":"jsonrpc"}"#);
    assert_eq!(fixture.next_line().await, "{broken json");
    fixture.request(1, "ping", json!({})).await;
    let banner = fixture.next_line().await;
    assert!(decode(banner.as_bytes()).is_err(), "banner: {banner}");
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
}

#[tokio::test]
async fn no_jsonrpc_field() {
    let mut fixture = Fixture::spawn(&["--mode", "no-jsonrpc-field"]);
    let response = fixture.call(1, "ping", json!({})).await;
    assert_eq!(response, r#"{"result":{},"id":1}"#);
    let decoded = decode(response.as_bytes());
    assert!(matches!(decoded, Err(m) if m.kind == MalformedKind::WrongVersion));
}

#[tokio::test]
async fn crash_mid_call() {
    let mut fixture = Fixture::spawn(&["--mode", "crash-mid-call"]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(fixture.wait_exit().await.code(), Some(3));
    fixture.expect_stdout_closed().await;
    fixture
        .wait_for_stderr("fixture: crashing on purpose\n")
        .await;
}

#[tokio::test]
async fn wrong_id() {
    let mut fixture = Fixture::spawn(&["--mode", "wrong-id"]);
    fixture.legacy_handshake().await;
    let response = fixture
        .call(
            5,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(
        response,
        r#"{"jsonrpc":"2.0","id":1005,"result":{"content":[{"type":"text","text":"x"}]}}"#
    );
}

#[tokio::test]
async fn ignores_cancel() {
    let mut fixture = Fixture::spawn(&["--mode", "ignores-cancel"]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "slow", "arguments": {"duration_ms": 300, "steps": 3}}),
        )
        .await;
    fixture
        .notify(
            "notifications/cancelled",
            json!({"requestId": 2, "reason": "bored"}),
        )
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}"#
    );
    fixture
        .wait_for_stderr("fixture: ignoring cancel 2\n")
        .await;
}

#[tokio::test]
async fn stubborn_survives_eof_and_sigterm() {
    let mut fixture = Fixture::spawn(&["--mode", "stubborn"]);
    assert_eq!(
        fixture.call(1, "ping", json!({})).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    let pid = Pid::from_raw(fixture.pid());
    fixture.close_stdin();
    tokio::time::sleep(QUIET_PERIOD).await;
    assert!(fixture.is_running(), "exited on EOF");
    kill(pid, Signal::SIGTERM).expect("send SIGTERM");
    tokio::time::sleep(QUIET_PERIOD).await;
    assert!(fixture.is_running(), "exited on SIGTERM");
    kill(pid, Signal::SIGKILL).expect("send SIGKILL");
    assert_eq!(fixture.wait_exit().await.signal(), Some(9));
}

#[tokio::test]
async fn exit_gate_holds_the_exit_until_the_file_exists() {
    let gate = std::env::temp_dir().join(format!("fixture-exit-gate-{}", std::process::id()));
    let _ = std::fs::remove_file(&gate);
    let mut fixture = Fixture::spawn(&["--exit-gate", &gate.display().to_string()]);
    assert_eq!(
        fixture.call(1, "ping", json!({})).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    fixture.close_stdin();
    tokio::time::sleep(QUIET_PERIOD).await;
    assert!(fixture.is_running(), "exited before the gate opened");
    std::fs::write(&gate, b"").expect("open the gate");
    assert!(fixture.wait_exit().await.success());
    let _ = std::fs::remove_file(&gate);
}

#[tokio::test]
async fn forks_grandchildren() {
    let mut fixture = Fixture::spawn(&["--mode", "forks-grandchild"]);
    assert_eq!(
        fixture.call(1, "ping", json!({})).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    let stderr = wait::until_async("both grandchildren's pids on stderr", TEST_DEADLINE, || {
        let text = fixture.stderr_text();
        let both = text.matches("fixture: grandchild ").count() == 2 && text.ends_with('\n');
        std::future::ready(both.then_some(text))
    })
    .await;
    let pids: Vec<Pid> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("fixture: grandchild "))
        .map(|pid| Pid::from_raw(pid.parse().expect("pid")))
        .collect();
    assert_eq!(pids.len(), 2);
    let fixture_group = getpgid(Some(Pid::from_raw(fixture.pid()))).expect("fixture pgid");
    assert_eq!(getpgid(Some(pids[0])).expect("pgid"), fixture_group);
    assert_eq!(
        getpgid(Some(pids[1])).expect("pgid"),
        pids[1],
        "own process group"
    );
    for pid in pids {
        kill(pid, Signal::SIGKILL).expect("kill grandchild");
    }
    fixture.kill().await;
}

#[tokio::test]
async fn stderr_flood_does_not_disturb_serving() {
    let mut fixture = Fixture::spawn(&["--mode", "stderr-flood"]);
    fixture.legacy_handshake().await;
    for id in 2..20 {
        assert_eq!(
            fixture.call(id, "ping", json!({})).await,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
        );
    }
    wait::until_async("1 MiB of stderr", Duration::from_secs(5), || {
        std::future::ready(fixture.stderr_bytes() >= 1024 * 1024)
    })
    .await;
    assert!(
        fixture
            .stderr_text()
            .starts_with("fixture: flood line 0000000001 ")
    );
    fixture.close_stdin();
    assert!(fixture.wait_exit().await.success());
}

#[tokio::test]
async fn long_line_before_tools_list() {
    let mut fixture = Fixture::spawn(&["--mode", "long-line", "--long-line-bytes", "3000000"]);
    fixture.legacy_handshake().await;
    fixture.request(2, "tools/list", json!({})).await;
    let long = fixture.next_line().await;
    assert_eq!(long.len(), 3_000_000);
    assert!(decode(long.as_bytes()).is_ok());
    let response: Value = fixture.next_json().await;
    assert_eq!(response["id"], 2);
    assert_eq!(response["result"]["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn pagination_loop() {
    let mut fixture = Fixture::spawn(&["--mode", "pagination-loop"]);
    fixture.legacy_handshake().await;
    for (id, params) in [(2, json!({})), (3, json!({"cursor": "again"}))] {
        let page: Value =
            serde_json::from_str(&fixture.call(id, "tools/list", params).await).expect("json");
        assert_eq!(page["result"]["nextCursor"], "again");
        assert_eq!(page["result"]["tools"].as_array().map(Vec::len), Some(1));
    }
}

#[tokio::test]
async fn exit_immediately() {
    let mut fixture = Fixture::spawn(&["--mode", "exit-immediately"]);
    assert_eq!(fixture.wait_exit().await.code(), Some(2));
    fixture.expect_stdout_closed().await;
    fixture
        .wait_for_stderr("fixture: bad configuration, exiting\n")
        .await;
}

#[tokio::test]
async fn sleeper_keeps_running() {
    let mut fixture = Fixture::spawn(&["--mode", "sleeper"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(fixture.is_running());
    fixture.kill().await;
}

#[tokio::test]
async fn notification_instead_of_response() {
    let mut fixture = Fixture::spawn(&["--mode", "notification-instead-of-response"]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "psst"}}),
        )
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"switchboard-fixture","data":"psst"}}"#
    );
    assert_eq!(
        fixture.call(3, "ping", json!({})).await,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
}

#[tokio::test]
async fn bad_flags_are_a_usage_error() {
    let mut fixture = Fixture::spawn(&["--mode", "no-such-mode"]);
    assert_eq!(fixture.wait_exit().await.code(), Some(64));
    fixture.wait_for_stderr("unknown mode `no-such-mode`").await;
}
