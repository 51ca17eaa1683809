//! Shared helpers: starting fixture servers, bounded waits, process checks.

use std::time::Duration;

use switchboard_session::{Session, SessionConfig, SessionError, SessionEvent};
use switchboard_testkit::locate::fixture_bin;
pub(crate) use switchboard_testkit::locate::{peer_path, rmcp_peer_bin};
use switchboard_testkit::wait::{self, within};
use switchboard_wire::stdio::{ProcessSpec, StdioOptions};

pub(crate) use switchboard_testkit::wait::TEST_DEADLINE;

/// A fixture server with these arguments.
pub(crate) fn fixture(args: &[&str]) -> ProcessSpec {
    ProcessSpec {
        program: fixture_bin().display().to_string(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Vec::new(),
        cwd: None,
        sandbox: None,
    }
}

/// Session settings with short deadlines suited to tests.
pub(crate) fn quick_config(name: &str) -> SessionConfig {
    let mut config = SessionConfig::new(name);
    config.connect_timeout = Duration::from_secs(5);
    config.probe_timeout = Duration::from_millis(500);
    config.request_timeout = Duration::from_secs(5);
    config
}

/// Connects to `spec` with `config`, bounded by the test deadline.
pub(crate) async fn connect(
    spec: &ProcessSpec,
    config: SessionConfig,
) -> Result<Session, SessionError> {
    let name = config.server_name.to_string();
    within(
        "connect",
        TEST_DEADLINE,
        Session::spawn_stdio(spec, StdioOptions::new(&name), config),
    )
    .await
}

/// Connects to a fixture with default test settings; panics on failure.
pub(crate) async fn connect_fixture(args: &[&str]) -> Session {
    match connect(&fixture(args), quick_config("fixture")).await {
        Ok(session) => session,
        Err(e) => panic!("fixture {args:?} did not connect: {e}"),
    }
}

/// Waits until the server's stderr contains `needle`.
pub(crate) async fn stderr_contains(session: &Session, needle: &str) -> String {
    let process = session.process().expect("stdio session");
    wait::until_async(
        &format!("stderr to contain {needle:?}"),
        TEST_DEADLINE,
        || async {
            let tail = process.stderr_tail();
            tail.contains(needle).then_some(tail)
        },
    )
    .await
}

/// Waits for the first event matching `pick`.
pub(crate) async fn next_event<T>(
    events: &mut tokio::sync::broadcast::Receiver<SessionEvent>,
    what: &str,
    pick: impl Fn(&SessionEvent) -> Option<T>,
) -> T {
    within(what, TEST_DEADLINE, async {
        loop {
            match events.recv().await {
                Ok(event) => {
                    if let Some(found) = pick(&event) {
                        return found;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("event stream ended while waiting for {what}: {e}"),
            }
        }
    })
    .await
}

/// Shuts the session down and asserts no process of its tree survives.
pub(crate) async fn shutdown_clean(session: Session) -> switchboard_wire::stdio::ShutdownReport {
    let pid = session.pid().expect("stdio session");
    let tree = switchboard_wire::proc::descendants(pid);
    let grace = switchboard_wire::stdio::ShutdownGrace {
        after_stdin_close: Duration::from_secs(2),
        after_sigterm: Duration::from_secs(1),
    };
    let report = within("shutdown", TEST_DEADLINE, session.shutdown(grace))
        .await
        .expect("stdio");
    assert_no_survivors(pid, &tree).await;
    report
}

/// Asserts that the group `pgid` is empty and no process of `tree` is alive (bounded wait
/// for the kernel to reap).
pub(crate) async fn assert_no_survivors(pgid: u32, tree: &[switchboard_wire::proc::ProcessId]) {
    wait::until_async(
        "the server's processes to disappear",
        TEST_DEADLINE,
        || async {
            switchboard_wire::proc::group_members(pgid).is_empty()
                && !tree.iter().any(|p| switchboard_wire::proc::is_alive(*p))
        },
    )
    .await;
}

/// Starts `tool` in the background with a progress token; its progress notifications
/// arrive on the receiver (the first one says the call is in flight at the server).
pub(crate) fn in_flight(
    session: &Session,
    tool: &str,
    arguments: serde_json::Value,
) -> (
    tokio::task::JoinHandle<Result<switchboard_protocol::CallToolResult, SessionError>>,
    tokio::sync::mpsc::Receiver<switchboard_protocol::ProgressParams>,
) {
    let (progress, reported) = tokio::sync::mpsc::channel(64);
    let session = session.clone();
    let tool = tool.to_owned();
    let call = tokio::spawn(async move {
        let options = switchboard_session::CallOptions {
            progress: Some(progress),
            ..switchboard_session::CallOptions::default()
        };
        session.call_tool(&tool, Some(&arguments), &options).await
    });
    (call, reported)
}
