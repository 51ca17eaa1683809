//! Helpers: fixture entries with a unique marker, process counting, bounded waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use switchboard_config::{Origin, ServerEntry, TransportEntry};
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{Runtime, RuntimeOptions, ServerPolicy};
use switchboard_testkit::locate::fixture_bin;
pub(crate) use switchboard_testkit::wait::{TEST_DEADLINE, within};

static MARKERS: AtomicUsize = AtomicUsize::new(0);

/// A marker unique to this test process and call, put on fixture command lines so a test
/// can count exactly its own processes.
pub(crate) fn marker(label: &str) -> String {
    format!(
        "rt-{label}-{}-{}",
        std::process::id(),
        MARKERS.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fixture server entry; `marker` is passed as its server name.
pub(crate) fn fixture_entry(name: &str, marker: &str, extra: &[&str]) -> ServerEntry {
    let mut args = vec!["--name".to_owned(), marker.to_owned()];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    ServerEntry {
        name: name.to_owned(),
        transport: TransportEntry::Stdio {
            command: fixture_bin().display().to_string(),
            args,
            env: Vec::new(),
            cwd: None,
        },
        enabled: true,
        timeout: None,
        startup_timeout: None,
        era: None,
        protocol_version: None,
        list_limits: Default::default(),
        tool_filter: Default::default(),
        origin: Origin {
            file: "<test>".into(),
            line: None,
        },
        provenance: Default::default(),
    }
}

/// Options with short deadlines and fast restarts.
pub(crate) fn options(entries: Vec<ServerEntry>) -> RuntimeOptions {
    let mut options = RuntimeOptions::new(ServerSource::Entries(entries));
    options.policy = ServerPolicy {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        restart: switchboard_runtime::RestartPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(400),
            breaker_failures: 4,
            breaker_window: Duration::from_secs(30),
        },
        list_changed_debounce: Duration::from_millis(50),
        shutdown: switchboard_wire::stdio::ShutdownGrace {
            after_stdin_close: Duration::from_secs(1),
            after_sigterm: Duration::from_secs(1),
        },
        authorizers: None,
        host: None,
    };
    options.ready_wait = Duration::from_secs(5);
    options
}

/// Live processes whose command line contains `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// Waits until no process carries `marker`.
pub(crate) async fn no_processes_with(marker: &str) {
    within(
        &format!("processes marked {marker} to exit"),
        TEST_DEADLINE,
        async {
            while !processes_with(marker).is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
}

/// Calls the fixture's `add` tool by its exported name in `snapshot` and checks the sum.
pub(crate) async fn assert_adds(snapshot: &switchboard_runtime::Snapshot, tool: &str) {
    use switchboard_runtime::Tool;
    let output = snapshot
        .tool(tool)
        .unwrap_or_else(|| panic!("no tool `{tool}`"))
        .call(
            serde_json::json!({"a": 40, "b": 2}),
            switchboard_runtime::ToolContext::default(),
        )
        .await;
    assert_eq!(
        output.structured_content,
        Some(serde_json::json!({"sum": 42}))
    );
}

/// Enables, asserting success.
pub(crate) async fn enabled(runtime: &Runtime) -> switchboard_runtime::StartupReport {
    within("enable", Duration::from_secs(30), runtime.enable())
        .await
        .expect("enable")
}

/// Waits until `server` is in a state matching `pick`.
pub(crate) async fn wait_state(
    runtime: &Runtime,
    server: &str,
    what: &str,
    pick: impl Fn(&switchboard_runtime::ServerState) -> bool,
) {
    within(&format!("{server} to be {what}"), TEST_DEADLINE, async {
        loop {
            if runtime
                .servers()
                .iter()
                .any(|s| s.name == server && pick(&s.state))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Starts a long `slow` call (20 s, progress every 100 ms) on `tool` and returns once its
/// first progress arrived, so the call is in flight at the server.
pub(crate) async fn started_slow_call(
    runtime: &Runtime,
    tool: &str,
) -> tokio::task::JoinHandle<switchboard_runtime::ToolOutput> {
    use switchboard_runtime::Tool as _;
    let slow = runtime
        .snapshot()
        .tool(tool)
        .expect("the slow tool")
        .clone();
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let context = switchboard_runtime::ToolContext {
        progress: Some(progress_tx),
        ..switchboard_runtime::ToolContext::default()
    };
    let call = tokio::spawn(async move {
        slow.call(
            serde_json::json!({"duration_ms": 20000, "steps": 200}),
            context,
        )
        .await
    });
    within(
        "the slow call's first progress",
        TEST_DEADLINE,
        progress_rx.recv(),
    )
    .await
    .expect("progress");
    call
}
