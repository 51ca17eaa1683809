//! The stdio transport: an MCP server as a child process speaking newline-delimited JSON-RPC.
//!
//! The child is started without a shell, from an explicit program, arguments, environment
//! and working directory, in its own process group, with an allow-listed environment plus
//! the owner marker ([`crate::orphans::OWNER_VAR`]). Its stderr is drained all the time
//! into a bounded tail (attached to errors) and emitted as `tracing` events. Once the child
//! has exited, its stdout is read only for a short drain: a descendant that keeps the pipe
//! open does not keep the connection open. [`ChildProcess::shutdown`] closes stdin, then
//! signals the group with SIGTERM and SIGKILL after grace periods, reaps the child, and
//! kills (and, when adopted, reaps) every descendant left: its process tree and every
//! process carrying its marker, wherever it was re-parented. Dropping a [`ChildProcess`]
//! kills all of them at once.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::connection::{
    CloseProbe, CloseReason, Connection, ConnectionOptions, EXIT_STATUS_WAIT, Inbound,
};
use crate::framing::{Frame, LineBuffer};
use crate::orphans::{self, Marker};
use crate::proc::{self, ProcessId};
use crate::sandbox::{self, ChildEnv, SandboxGuard, SandboxSpawn};

/// Environment variables a child inherits from us when set (the official SDKs' list plus
/// locale and temp-dir variables). Everything else must be configured explicitly.
pub const INHERITED_ENV_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "TZ",
];

/// What to run. There is no `Default`: every field is a decision.
#[derive(Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The program: a path, or a name looked up in the child's `PATH`.
    pub program: String,
    /// Arguments, passed as they are (no shell).
    pub args: Vec<String>,
    /// Environment entries added on top of [`INHERITED_ENV_VARS`]; they win over inherited ones.
    pub env: Vec<(String, String)>,
    /// Working directory; `None` means our own.
    pub cwd: Option<PathBuf>,
    /// The sandbox to start it in (Linux); `None` starts it with our own rights.
    pub sandbox: Option<Box<SandboxSpawn>>,
}

impl fmt::Debug for ProcessSpec {
    /// Environment values are secrets: only their names are shown. Arguments may hold
    /// secrets (a `${TOKEN}` expansion): only their number is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProcessSpec")
            .field("program", &self.program)
            .field("arg_count", &self.args.len())
            .field("env", &env_names)
            .field("cwd", &self.cwd)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

/// Settings for a stdio connection.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// Connection settings (peer name, frame limit, tap).
    pub connection: ConnectionOptions,
    /// How many bytes of stderr to keep for error messages.
    pub stderr_tail_bytes: usize,
}

impl StdioOptions {
    /// Defaults for a server with this name.
    pub fn new(server_name: &str) -> StdioOptions {
        StdioOptions {
            connection: ConnectionOptions::new(server_name),
            stderr_tail_bytes: 8 * 1024,
        }
    }
}

/// The server could not be started.
#[derive(Debug, thiserror::Error)]
#[error("could not start server `{server}`: {detail}")]
pub struct SpawnError {
    /// The server's name.
    pub server: Arc<str>,
    /// What went wrong and what to do about it.
    pub detail: String,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

impl SpawnError {
    /// True if the program was not found.
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
}

/// A started server: its connection, its inbound stream and its process.
#[derive(Debug)]
pub struct StdioTransport {
    /// The JSON-RPC connection over the child's stdin and stdout.
    pub connection: Connection,
    /// Everything the server sends that is not a response to a waiting request.
    pub inbound: tokio::sync::mpsc::Receiver<Inbound>,
    /// The child process.
    pub process: ChildProcess,
}

/// Grace periods for [`ChildProcess::shutdown`].
#[derive(Debug, Clone, Copy)]
pub struct ShutdownGrace {
    /// How long to wait for an exit after closing stdin.
    pub after_stdin_close: Duration,
    /// How long to wait after SIGTERM before SIGKILL.
    pub after_sigterm: Duration,
}

impl Default for ShutdownGrace {
    fn default() -> Self {
        ShutdownGrace {
            after_stdin_close: Duration::from_secs(2),
            after_sigterm: Duration::from_secs(2),
        }
    }
}

/// What it took to stop the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownStep {
    /// It exited by itself after stdin was closed.
    StdinClosed,
    /// It needed SIGTERM.
    Sigterm,
    /// It needed SIGKILL.
    Sigkill,
    /// It had already exited.
    AlreadyExited,
}

/// The outcome of [`ChildProcess::shutdown`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The last step needed.
    pub step: ShutdownStep,
    /// The exit status as text.
    pub exit_status: Option<String>,
    /// How long shutdown took.
    pub elapsed: Duration,
    /// Descendant processes still alive after the server exited, which were killed: its
    /// process tree and every process carrying its marker, wherever re-parented.
    pub descendants_killed: usize,
}

/// The last bytes a process wrote to stderr.
#[derive(Debug)]
struct StderrTail {
    bytes: VecDeque<u8>,
    cap: usize,
    total: u64,
}

impl StderrTail {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let data = if data.len() > self.cap {
            &data[data.len() - self.cap..]
        } else {
            data
        };
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        // Start at a line boundary when the tail was cut.
        let start = if self.total > self.bytes.len() as u64 {
            all.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1)
        } else {
            0
        };
        String::from_utf8_lossy(&all[start..]).into_owned()
    }
}

struct ProcessShared {
    server: Arc<str>,
    pid: u32,
    /// When the child started (clock ticks since boot): none of its descendants is older.
    start_time: u64,
    marker: Marker,
    exit: watch::Receiver<Option<String>>,
    stderr: Mutex<StderrTail>,
    stderr_done: watch::Receiver<bool>,
    /// Set when stdout was still open after the drain that followed the child's exit.
    stdout_held: AtomicBool,
    /// Whether it runs in a sandbox (its failures may be the sandbox's refusals).
    containment: Containment,
}

/// Whether a server runs in a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Containment {
    Sandboxed,
    Plain,
}

impl ProcessShared {
    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .text()
    }

    async fn wait_exit(&self, deadline: Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(deadline, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => status.clone(),
            _ => self.exit.borrow().clone(),
        }
    }

    async fn close_reason(&self, mut reason: CloseReason) -> CloseReason {
        reason.exit_status = self.wait_exit(EXIT_STATUS_WAIT).await;
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(Duration::from_millis(100), done.wait_for(|d| *d)).await;
        let tail = self.stderr_tail();
        if reason.exit_status.is_some() {
            reason.summary = if self.stdout_held.load(Ordering::Relaxed) {
                "the server process exited (a process it left behind still held its output)".into()
            } else {
                "the server process exited".into()
            };
            if self.containment == Containment::Sandboxed
                && let Some(note) = sandbox::failure_note(&tail)
            {
                reason.summary = format!("{}; {note}", reason.summary);
            }
        }
        reason.stderr_tail = Some(tail);
        reason
    }

    /// The live processes this server started, directly or not: its tree (when `root` is
    /// still linked to it) and every process carrying its marker. Not the server itself.
    fn descendants(&self) -> Vec<ProcessId> {
        let all = proc::all_processes();
        let mut found = self.tree(&all);
        for process in orphans::carrying(&all, &self.marker.token, self.start_time) {
            if !found.contains(&process) {
                found.push(process);
            }
        }
        found.retain(|p| p.pid != self.pid);
        found
    }

    /// The server's process tree, while the pid is still the server's: once it exited and
    /// was reaped, the pid may belong to an unrelated process, whose tree is not ours.
    fn tree(&self, all: &[proc::StatLine]) -> Vec<ProcessId> {
        let ours = all
            .iter()
            .any(|p| p.pid == self.pid && p.start_time == self.start_time && self.start_time != 0);
        if ours {
            proc::tree_in(all, self.pid)
        } else {
            Vec::new()
        }
    }

    /// True when the pid is the server's or free; false when an unrelated process has
    /// taken it (then its process group is not the server's either).
    fn pid_is_ours_or_free(&self) -> bool {
        proc::read_stat(self.pid).is_none_or(|p| p.start_time == self.start_time)
    }

    /// Stops and kills every descendant: those of `known` still alive, the current tree and
    /// every process carrying the marker. Returns what was killed.
    fn kill_descendants(&self, known: &[ProcessId]) -> Vec<ProcessId> {
        orphans::freeze_and_kill(|all| {
            let mut targets: Vec<ProcessId> = known.to_vec();
            targets.extend(self.tree(all));
            targets.extend(orphans::carrying(all, &self.marker.token, self.start_time));
            targets.retain(|p| p.pid != self.pid);
            targets.dedup();
            targets
        })
    }
}

/// After the child exited, how long its stdout may stay quiet before it counts as closed.
const EXIT_DRAIN_QUIET: Duration = Duration::from_millis(250);
/// After the child exited, the longest its stdout is read while output keeps coming.
const EXIT_DRAIN_MAX: Duration = Duration::from_secs(2);

/// The child's stdout, ending once the child has exited and a short drain has passed, even
/// if a descendant still holds the pipe: the server is what we talk to, and it is gone.
struct StdoutUntilExit<R> {
    inner: R,
    shared: Arc<ProcessShared>,
    exited: Pin<Box<dyn Future<Output = ()> + Send>>,
    drain: Option<Drain>,
}

struct Drain {
    quiet: Pin<Box<tokio::time::Sleep>>,
    max: Pin<Box<tokio::time::Sleep>>,
}

impl Drain {
    fn start() -> Drain {
        Drain {
            quiet: Box::pin(tokio::time::sleep(EXIT_DRAIN_QUIET)),
            max: Box::pin(tokio::time::sleep(EXIT_DRAIN_MAX)),
        }
    }
}

impl<R> StdoutUntilExit<R> {
    fn new(inner: R, shared: Arc<ProcessShared>) -> Self {
        let mut exit = shared.exit.clone();
        let exited = Box::pin(async move {
            // A dropped sender means the process is being torn down: treat it as exited.
            let _ = exit.wait_for(Option::is_some).await;
        });
        StdoutUntilExit {
            inner,
            shared,
            exited,
            drain: None,
        }
    }

    fn end(&self) -> Poll<io::Result<()>> {
        self.shared.stdout_held.store(true, Ordering::Relaxed);
        tracing::debug!(
            server = %self.shared.server,
            "the server exited but its output is still open (a descendant holds it); closing"
        );
        Poll::Ready(Ok(()))
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for StdoutUntilExit<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(drain) = &mut this.drain
            && drain.max.as_mut().poll(cx).is_ready()
        {
            return this.end();
        }
        if let Poll::Ready(outcome) = Pin::new(&mut this.inner).poll_read(cx, buf) {
            // Output that keeps coming is bounded by the drain too: an exit seen here starts
            // it. (A plain look, no waker: the reader comes back for more at once.)
            if this.drain.is_none() && this.shared.exit.borrow().is_some() {
                this.drain = Some(Drain::start());
            }
            return Poll::Ready(outcome);
        }
        // Only a read that has to wait registers for the exit: polling the exit future on
        // every read would cost more than the read.
        if this.drain.is_none() && this.exited.as_mut().poll(cx).is_ready() {
            let mut drain = Drain::start();
            if drain.max.as_mut().poll(cx).is_ready() {
                return this.end();
            }
            this.drain = Some(drain);
        }
        let quiet_passed = this
            .drain
            .as_mut()
            .is_some_and(|drain| drain.quiet.as_mut().poll(cx).is_ready());
        if quiet_passed {
            return this.end();
        }
        Poll::Pending
    }
}

/// A running server process. Dropping it kills the whole process group.
pub struct ChildProcess {
    shared: Arc<ProcessShared>,
    tasks: Vec<JoinHandle<()>>,
    /// A sandboxed start's temp folder and cgroup, removed after the process is killed.
    sandbox: Option<SandboxGuard>,
}

impl fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildProcess")
            .field("server", &self.shared.server)
            .field("pid", &self.shared.pid)
            .field("exit", &*self.shared.exit.borrow())
            .finish()
    }
}

/// Starts `spec` as a child process and connects to it.
pub fn spawn(spec: &ProcessSpec, options: StdioOptions) -> Result<StdioTransport, SpawnError> {
    let server = options.connection.peer_name.clone();
    let marker = Marker::new();
    let prepared = match &spec.sandbox {
        Some(sandbox) => {
            let env = ChildEnv {
                configured: &spec.env,
            };
            let prepared = sandbox::prepare(
                sandbox,
                &spec.program,
                &spec.args,
                spec.cwd.as_deref(),
                &env,
                &marker.token,
            )
            .map_err(|detail| SpawnError {
                server: server.clone(),
                detail,
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            })?;
            Some(prepared)
        }
        None => None,
    };
    let mut command = match &prepared {
        Some(prepared) => {
            let mut command = Command::new(&prepared.launcher);
            command.args(&prepared.args);
            command
        }
        None => {
            let mut command = Command::new(&spec.program);
            command.args(&spec.args);
            command
        }
    };
    command
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for name in INHERITED_ENV_VARS {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    // After the configured entries: the marker is ours, not the configuration's; so is
    // a sandboxed server's temp folder, the only one it may write.
    command.env(orphans::OWNER_VAR, &marker.chain);
    if let Some(prepared) = &prepared {
        command.env("TMPDIR", &prepared.tmp);
    }
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    crate::die_with_parent(&mut command);
    let mut child = orphans::register_spawn(&marker.token, || command.spawn(), |c| c.id())
        .map_err(|source| SpawnError {
            detail: spawn_detail(spec, &source),
            server: server.clone(),
            source,
        })?;
    let pid = child.id().unwrap_or(0);
    let start_time = proc::read_stat(pid).map_or(0, |s| s.start_time);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SpawnError {
            server,
            detail: "the child's standard streams were not available".into(),
            source: io::Error::other("missing stdio pipes"),
        });
    };
    let (exit_tx, exit_rx) = watch::channel(None);
    let (stderr_done_tx, stderr_done_rx) = watch::channel(false);
    let shared = Arc::new(ProcessShared {
        server: server.clone(),
        pid,
        start_time,
        marker,
        exit: exit_rx,
        stderr: Mutex::new(StderrTail {
            bytes: VecDeque::new(),
            cap: options.stderr_tail_bytes.max(256),
            total: 0,
        }),
        stderr_done: stderr_done_rx,
        stdout_held: AtomicBool::new(false),
        containment: match &prepared {
            Some(_) => Containment::Sandboxed,
            None => Containment::Plain,
        },
    });
    let waiter = tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("exit status unknown: {e}"),
        };
        orphans::forget_spawned(pid);
        exit_tx.send_replace(Some(status));
    });
    let stderr_task = tokio::spawn(drain_stderr(shared.clone(), stderr, stderr_done_tx));
    let probe_shared = shared.clone();
    let probe: CloseProbe =
        Box::new(move |reason| Box::pin(async move { probe_shared.close_reason(reason).await }));
    let stdout = StdoutUntilExit::new(stdout, shared.clone());
    let (connection, inbound) = Connection::start(stdout, stdin, options.connection, Some(probe));
    tracing::debug!(
        server = %server,
        pid,
        program = %spec.program,
        sandbox = spec.sandbox.as_ref().map(|s| s.policy.describe()),
        "server started"
    );
    Ok(StdioTransport {
        connection,
        inbound,
        process: ChildProcess {
            shared,
            tasks: vec![waiter, stderr_task],
            sandbox: prepared.map(|p| p.guard),
        },
    })
}

fn spawn_detail(spec: &ProcessSpec, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => match &spec.cwd {
            Some(cwd) if !cwd.is_dir() => format!(
                "working directory `{}` does not exist; fix `cwd` in the server's configuration",
                cwd.display()
            ),
            _ => format!(
                "program `{}` was not found; check `command` in the server's configuration \
                 (a bare name is looked up in PATH)",
                spec.program
            ),
        },
        io::ErrorKind::PermissionDenied => format!(
            "program `{}` is not executable (permission denied); check the path and its mode",
            spec.program
        ),
        _ => format!("starting `{}` failed: {error}", spec.program),
    }
}

const STDERR_LINE_LOG_CAP: usize = 2048;

async fn drain_stderr(
    shared: Arc<ProcessShared>,
    mut stderr: tokio::process::ChildStderr,
    done: watch::Sender<bool>,
) {
    let mut lines = LineBuffer::new(STDERR_LINE_LOG_CAP);
    loop {
        let spare = lines.spare();
        let before = spare.len();
        match stderr.read_buf(spare).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        {
            let mut tail = shared.stderr.lock().unwrap_or_else(|p| p.into_inner());
            tail.push(&lines.spare()[before..]);
        }
        while let Some(frame) = lines.next_frame() {
            match frame {
                Frame::Line(line) => tracing::debug!(
                    target: "switchboard::stderr",
                    server = %shared.server,
                    "{}",
                    String::from_utf8_lossy(line)
                ),
                Frame::Oversized { len, .. } => tracing::debug!(
                    target: "switchboard::stderr",
                    server = %shared.server,
                    "<{len} bytes without a newline>"
                ),
            }
        }
    }
    done.send_replace(true);
}

impl ChildProcess {
    /// The process id (also the process group id).
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&self) -> Option<String> {
        self.shared.exit.borrow().clone()
    }

    /// The last bytes the process wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail()
    }

    /// Waits up to `deadline` for the process to exit; returns its status if it did.
    pub async fn wait_exit(&self, deadline: Duration) -> Option<String> {
        self.shared.wait_exit(deadline).await
    }

    /// The live processes this server started, directly or not, without the server: its
    /// process tree, and every process carrying its marker (which finds daemonised
    /// descendants wherever they were re-parented, unless they cleared their environment;
    /// see [`crate::orphans`]).
    pub fn descendants(&self) -> Vec<ProcessId> {
        self.shared.descendants()
    }

    /// Stops the server: close stdin, wait, SIGTERM the group, wait, SIGKILL the group,
    /// then kill whatever is left of its descendants (see [`ChildProcess::descendants`])
    /// and reap those this process adopted. Bounded by the grace periods plus about two
    /// seconds.
    pub async fn shutdown(&self, connection: &Connection, grace: ShutdownGrace) -> ShutdownReport {
        let started = Instant::now();
        let tree = self.shared.descendants();
        let mut step = ShutdownStep::AlreadyExited;
        if self.exit_status().is_none() {
            step = ShutdownStep::StdinClosed;
            connection.close_write().await;
            if self.wait_exit(grace.after_stdin_close).await.is_none() {
                step = ShutdownStep::Sigterm;
                self.signal_group(Signal::SIGTERM);
                if self.wait_exit(grace.after_sigterm).await.is_none() {
                    step = ShutdownStep::Sigkill;
                    self.signal_group(Signal::SIGKILL);
                    self.wait_exit(Duration::from_secs(1)).await;
                }
            }
        }
        // Whatever is left in the group, in the tree or carrying the marker outlived the
        // server.
        self.signal_group(Signal::SIGKILL);
        let killed = self.shared.kill_descendants(&tree);
        orphans::reap(&killed, Duration::from_millis(500)).await;
        let report = ShutdownReport {
            step,
            exit_status: self.exit_status(),
            elapsed: started.elapsed(),
            descendants_killed: killed.len(),
        };
        tracing::debug!(server = %self.shared.server, ?report, "server stopped");
        report
    }

    /// Kills the process group and every descendant at once (used when a server must go
    /// now). Adopted descendants are reaped by the sweeper of an
    /// [`OrphanGuard`](crate::orphans::OrphanGuard), or by the next shutdown.
    pub fn kill(&self) {
        // Stopped first, the group forks no more and the tree stays linked while it is walked.
        self.signal_group(Signal::SIGSTOP);
        self.shared.kill_descendants(&[]);
        self.signal_group(Signal::SIGKILL);
    }

    fn signal_group(&self, signal: Signal) {
        if self.shared.pid == 0 {
            return;
        }
        let Ok(pid) = i32::try_from(self.shared.pid) else {
            return;
        };
        if !self.shared.pid_is_ours_or_free() {
            return;
        }
        // ESRCH (no such group) is the normal case once everything has exited.
        let _ = killpg(Pid::from_raw(pid), signal);
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
        for task in &self.tasks {
            task.abort();
        }
        // After the kill: the cgroup can only go once it is empty.
        drop(self.sandbox.take());
    }
}

/// A boxed async reader (this process's stdin, see [`own_stdio`]).
pub type OwnStdin = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
/// A boxed async writer (this process's stdout, see [`own_stdio`]).
pub type OwnStdout = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// This process's own stdin and stdout, for serving MCP over stdio. When they are pipes (as
/// an MCP client sets them up) they are switched to non-blocking mode and driven by the
/// reactor, so a round trip costs no hand-off to tokio's blocking threads; anything else (a
/// terminal, a file) falls back to tokio's stdio. Non-blocking mode belongs to the open
/// pipe, so a stderr redirected into stdout's pipe (`2>&1`) becomes non-blocking too: a log
/// line written while that pipe is full may then be cut (the protocol is not affected).
pub fn own_stdio() -> (OwnStdin, OwnStdout) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin: OwnStdin = match io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| pipe::Receiver::from_file(std::fs::File::from(fd)))
    {
        Ok(receiver) => Box::new(receiver),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let stdout: OwnStdout = match io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| pipe::Sender::from_file(std::fs::File::from(fd)))
    {
        Ok(sender) => Box::new(sender),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (stdin, stdout)
}
