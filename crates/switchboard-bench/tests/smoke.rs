//! A tiny smoke of the benchmark harness, so `cargo test --workspace` keeps it working: our
//! client (in process) and the rmcp client against the fixture, sequential and pipelined,
//! our client against the trivial server, and the raw pipe floor through the driver's
//! process runner. Counts only — no timing assertions.

use std::time::Duration;

use switchboard_bench::cli::{ClientArgs, RuntimeKind};
use switchboard_bench::driver::{Regime, run_client};
use switchboard_bench::{ours, rmcp_client};

/// Hard bound on each step (they take milliseconds).
const STEP: Duration = Duration::from_secs(30);

const BENCH: &str = env!("CARGO_BIN_EXE_switchboard-bench");

fn args(server: Vec<String>, calls: u64, inflight: usize) -> ClientArgs {
    ClientArgs {
        calls,
        warmup: 3,
        inflight,
        tool: "echo".into(),
        arg: "text".into(),
        text: "hello".into(),
        runtime: RuntimeKind::Current,
        server,
    }
}

fn fixture() -> Vec<String> {
    vec![
        switchboard_testkit::locate::fixture_bin()
            .to_string_lossy()
            .into_owned(),
    ]
}

#[tokio::test]
async fn our_client_against_the_fixture_sequential_and_pipelined() {
    let sequential = tokio::time::timeout(STEP, ours::run_async(&args(fixture(), 20, 1)))
        .await
        .expect("bounded")
        .expect("sequential run");
    assert_eq!(
        (
            sequential.client.as_str(),
            sequential.calls,
            sequential.inflight
        ),
        ("ours", 20, 1)
    );
    assert_eq!(sequential.protocol.as_deref(), Some("2025-11-25"));

    let pipelined = tokio::time::timeout(STEP, ours::run_async(&args(fixture(), 40, 8)))
        .await
        .expect("bounded")
        .expect("pipelined run");
    assert_eq!((pipelined.calls, pipelined.inflight), (40, 8));
}

#[tokio::test]
async fn our_client_against_the_trivial_server() {
    let server = vec![BENCH.to_owned(), "trivial-server".to_owned()];
    let result = tokio::time::timeout(STEP, ours::run_async(&args(server, 10, 1)))
        .await
        .expect("bounded")
        .expect("run");
    assert_eq!(result.calls, 10);
}

#[tokio::test]
async fn rmcp_client_against_the_fixture() {
    let result = tokio::time::timeout(STEP, rmcp_client::run_async(&args(fixture(), 10, 4)))
        .await
        .expect("bounded")
        .expect("run");
    assert_eq!((result.client.as_str(), result.calls), ("rmcp", 10));
}

#[test]
fn raw_pipe_floor_through_the_process_runner() {
    let dir = std::env::temp_dir().join(format!("switchboard-bench-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let argv: Vec<String> = [
        BENCH,
        "raw-pipe-client",
        "--calls",
        "30",
        "--warmup",
        "2",
        "--inflight",
        "4",
        "--server",
        BENCH,
        "raw-pipe-server",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let result =
        run_client(&argv, Regime::Unpinned, &dir.join("raw.stderr"), STEP).expect("raw run");
    assert_eq!(
        (result.client.as_str(), result.calls, result.inflight),
        ("raw", 30, 4)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
