//! Helpers: fixture entries with a unique marker, process counting, bounded waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use switchboard_config::{Origin, ServerEntry, ToolFilter, ToolPattern, TransportEntry};
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{Runtime, RuntimeOptions, ServerPolicy, Tool as _};
use switchboard_testkit::locate::fixture_bin;
pub(crate) use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

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
    entry(
        name,
        TransportEntry::Stdio {
            command: fixture_bin().display().to_string(),
            args,
            env: Vec::new(),
            cwd: None,
        },
    )
}

/// An entry for the Streamable HTTP server at `url`.
pub(crate) fn http_entry(name: &str, url: &str) -> ServerEntry {
    entry(
        name,
        TransportEntry::Http {
            url: url.to_owned(),
            headers: Vec::new(),
        },
    )
}

/// `entry` with a tool filter: `enabledTools` (when given) and `disabledTools` patterns.
pub(crate) fn filtered(
    mut entry: ServerEntry,
    enabled: Option<&[&str]>,
    disabled: &[&str],
) -> ServerEntry {
    let patterns = |texts: &[&str]| -> Vec<ToolPattern> {
        texts
            .iter()
            .map(|t| ToolPattern::new(t).expect("pattern"))
            .collect()
    };
    entry.tool_filter = ToolFilter::new(enabled.map(patterns), patterns(disabled)).expect("filter");
    entry
}

/// The exported names of `server`'s tools.
pub(crate) fn names_of(snapshot: &switchboard_runtime::Snapshot, server: &str) -> Vec<String> {
    snapshot
        .tools
        .iter()
        .filter(|t| t.server() == server)
        .map(|t| t.name().to_owned())
        .collect()
}

fn entry(name: &str, transport: TransportEntry) -> ServerEntry {
    ServerEntry::new(name, transport).with_origin(Origin::described("<test>"))
}

/// The `--exit-gate` file of fixtures that linger at stdin EOF until it exists. Dropped
/// unopened (a test that failed), it opens, so no server is left waiting; dropped after
/// [`ExitGate::open`], the file is removed.
pub(crate) struct ExitGate {
    path: std::path::PathBuf,
    opened: bool,
}

impl ExitGate {
    pub(crate) fn new(marker: &str) -> ExitGate {
        ExitGate {
            path: std::env::temp_dir().join(format!("{marker}.gate")),
            opened: false,
        }
    }

    /// The fixture flags that make a server wait for this gate.
    pub(crate) fn flags(&self) -> [String; 2] {
        ["--exit-gate".to_owned(), self.path.display().to_string()]
    }

    /// Lets the servers waiting at the gate exit.
    pub(crate) fn open(&mut self) {
        std::fs::write(&self.path, b"").expect("open the exit gate");
        self.opened = true;
    }
}

impl Drop for ExitGate {
    fn drop(&mut self) {
        if self.opened {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::write(&self.path, b"");
        }
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
        connect_hooks: None,
    };
    options.ready_wait = Duration::from_secs(5);
    options
}

/// One entry of the process table.
#[derive(Debug, Clone)]
struct ProcessEntry {
    pid: u32,
    /// Start time in clock ticks since boot (so a reused pid is not mistaken for it).
    start_time: u64,
    zombie: bool,
    cmdline: String,
}

impl ProcessEntry {
    /// Whether both are the same process (a pid, started at that time).
    fn same_process(&self, other: &ProcessEntry) -> bool {
        self.pid == other.pid && self.start_time == other.start_time
    }
}

/// Reads `/proc/<pid>/stat` and `/proc/<pid>/cmdline` (empty for a zombie).
fn process_entry(pid: u32) -> Option<ProcessEntry> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything; fields follow the last ')'.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    Some(ProcessEntry {
        pid,
        start_time: fields.get(19)?.parse().ok()?,
        zombie: fields.first()? == &"Z",
        cmdline: String::from_utf8_lossy(&cmdline).into_owned(),
    })
}

fn process_table() -> Vec<ProcessEntry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(process_entry)
        .collect()
}

/// Processes seen alive with a marker of this test process on their command line. A zombie's
/// command line reads empty, so a zombie is known by what it was when it lived.
static SEEN: Mutex<Vec<ProcessEntry>> = Mutex::new(Vec::new());

/// Whether `cmdline` carries a marker [`marker`] made in this test process.
fn ours(cmdline: &str) -> bool {
    let suffix = format!("-{}-", std::process::id());
    cmdline.split('\0').any(|arg| {
        arg.strip_prefix("rt-")
            .is_some_and(|rest| rest.contains(&suffix))
    })
}

/// Notes the live processes of every marker of this test process in [`SEEN`] (and forgets
/// those gone), so their zombies are recognised later.
fn note_ours(table: &[ProcessEntry]) -> std::sync::MutexGuard<'static, Vec<ProcessEntry>> {
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    // Gone, or the pid now names another process.
    seen.retain(|old| table.iter().any(|now| now.same_process(old)));
    for entry in table {
        if !entry.zombie && ours(&entry.cmdline) && !seen.iter().any(|old| old.same_process(entry))
        {
            seen.push(entry.clone());
        }
    }
    seen
}

/// Notes the live processes of this test process's markers (see [`processes_with`]).
pub(crate) fn note_live_processes() {
    drop(note_ours(&process_table()));
}

/// Processes whose command line contains `marker`: live ones, and zombies (exited but not
/// reaped by their parent), which are leftovers too. A zombie is recognised when a process
/// of that pid and start time was seen alive with the marker: by this call, by an earlier
/// one (for any marker of this test process) or by [`note_live_processes`].
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let table = process_table();
    let seen = note_ours(&table);
    let was_marked = |entry: &ProcessEntry| {
        seen.iter()
            .any(|old| old.same_process(entry) && old.cmdline.contains(marker))
    };
    table
        .iter()
        .filter(|entry| entry.cmdline.contains(marker) || (entry.zombie && was_marked(entry)))
        .map(|entry| entry.pid)
        .collect()
}

/// Waits until no process carries `marker`.
pub(crate) async fn no_processes_with(marker: &str) {
    wait::until_async(
        &format!("processes marked {marker} to exit"),
        TEST_DEADLINE,
        || async { processes_with(marker).is_empty() },
    )
    .await;
}

/// Calls the fixture's `add` tool by its exported name in `snapshot` and checks the sum.
pub(crate) async fn assert_adds(snapshot: &switchboard_runtime::Snapshot, tool: &str) {
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

/// Enables, asserting success. The servers' processes are noted while they live (see
/// [`processes_with`]), so they count as leftovers should they become zombies.
pub(crate) async fn enabled(runtime: &Runtime) -> switchboard_runtime::StartupReport {
    let report = within("enable", Duration::from_secs(30), runtime.enable())
        .await
        .expect("enable");
    note_live_processes();
    report
}

/// Waits until `server` is in a state matching `pick`.
pub(crate) async fn wait_state(
    runtime: &Runtime,
    server: &str,
    what: &str,
    pick: impl Fn(&switchboard_runtime::ServerState) -> bool,
) {
    wait::until_async(&format!("{server} to be {what}"), TEST_DEADLINE, || async {
        runtime
            .servers()
            .iter()
            .any(|s| s.name == server && pick(&s.state))
    })
    .await;
}

/// Starts a long `slow` call (20 s, progress every 100 ms) on `tool` and returns once its
/// first progress arrived, so the call is in flight at the server.
pub(crate) async fn started_slow_call(
    runtime: &Runtime,
    tool: &str,
) -> tokio::task::JoinHandle<switchboard_runtime::ToolOutput> {
    let slow = runtime
        .snapshot()
        .tool(tool)
        .expect("the slow tool")
        .clone();
    started_slow_call_on(slow).await
}

/// [`started_slow_call`] on any tool (a child's proxy, say).
pub(crate) async fn started_slow_call_on(
    slow: impl switchboard_runtime::Tool + 'static,
) -> tokio::task::JoinHandle<switchboard_runtime::ToolOutput> {
    let (context, first_progress) = context_with_progress();
    let call = tokio::spawn(async move { slow.call(slow_arguments(), context).await });
    first_progress.await;
    call
}

/// The arguments of a 20 s `slow` call with progress every 100 ms.
pub(crate) fn slow_arguments() -> serde_json::Value {
    serde_json::json!({"duration_ms": 20000, "steps": 200})
}

/// A call context with a progress sink, and a wait (bounded) for the first progress.
pub(crate) fn context_with_progress() -> (
    switchboard_runtime::ToolContext,
    impl std::future::Future<Output = ()>,
) {
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let context = switchboard_runtime::ToolContext {
        progress: Some(progress_tx),
        ..switchboard_runtime::ToolContext::default()
    };
    let first = async move {
        within(
            "the slow call's first progress",
            TEST_DEADLINE,
            progress_rx.recv(),
        )
        .await
        .expect("progress");
    };
    (context, first)
}

/// Asserts that no process carries `marker` now (no waiting: what has returned must
/// already have stopped them).
pub(crate) fn assert_no_processes_with(marker: &str, when: &str) {
    let left = processes_with(marker);
    assert!(left.is_empty(), "{when}, processes are left: {left:?}");
}

/// Whether `pid` is in the process table and not a zombie.
pub(crate) fn is_running(pid: u32) -> bool {
    process_entry(pid).is_some_and(|entry| !entry.zombie)
}

/// The leftover count itself: a child that exited and that nobody waited for (a zombie,
/// state `Z`) is still a leftover; once reaped, it is gone.
#[tokio::test]
async fn an_unreaped_child_counts_as_a_leftover() {
    let mark = marker("zombie");
    let mut child = std::process::Command::new(fixture_bin())
        .args(["--name", &mark])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the fixture");
    let pid = child.id();
    assert_eq!(processes_with(&mark), [pid], "the live child");
    // Stdin EOF: the fixture exits, and nobody waits for it yet.
    drop(child.stdin.take());
    wait::until_async("the child to become a zombie", TEST_DEADLINE, || async {
        process_entry(pid).is_some_and(|entry| entry.zombie)
    })
    .await;
    assert_eq!(processes_with(&mark), [pid], "a zombie is a leftover");
    child.wait().expect("reap the child");
    assert!(processes_with(&mark).is_empty(), "reaped, it is gone");
}
