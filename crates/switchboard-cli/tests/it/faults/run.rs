//! Running one case from the outside, as a user would: write its config, start its hostile
//! servers, run the real `switchboard` binary, and observe what a host can see — exit
//! status, stdout, stderr, peak memory, open descriptors, and every process the case left
//! behind.
//!
//! - Peak memory is exact and race-free: `switchboard` runs as the only child of
//!   `switchboard-peak`, a small launcher that reaps it and reports its `ru_maxrss`, the
//!   kernel's high-water mark of its resident set, kept after it exited. (Spawned from the
//!   test process directly, that figure would start from the test process's own memory,
//!   which Linux hands to a child at `exec`.) It covers `switchboard` and every descendant
//!   it reaped (the larger of them), so memory cases use servers that cost little
//!   themselves: canned HTTP servers live in the test process, and stdio ones stream from
//!   fixed buffers.
//! - Leftover processes are found by a unique token: every stdio server entry gets
//!   `SWITCHBOARD_FAULT_CASE=<token>` in its environment, which descendants inherit even
//!   when they daemonise. After `switchboard` exited, `/proc/*/environ` must soon hold no
//!   process with the token; any that stay are listed and killed (by pid, after checking
//!   the token again).
//! - Deadlines only detect hangs: a command still running at its case's deadline is killed
//!   and the case fails. A memory guard (`/proc/PID/status`, polled) kills a command whose
//!   resident set runs far past the case's bound, so that a growth bug costs the machine
//!   little; the exact figure comes from `wait4`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard_testkit::locate::{fixture_bin, peak_bin, workspace_root};
use switchboard_testkit::serve::HttpServer;
use switchboard_testkit::wait;

use super::canned::{CannedServer, Tripwire, closed_port_addr};
use super::table::{
    Case, Check, Close, Cmd, INITIALIZE, INITIALIZED, LOCK_SCRIPT, LockFile, ServeScript, Server,
};

/// The environment variable that marks a case's processes.
pub(crate) const TOKEN_VAR: &str = "SWITCHBOARD_FAULT_CASE";
/// The environment variable holding a case's secret (for `${SWITCHBOARD_FAULT_SECRET}`).
pub(crate) const SECRET_VAR: &str = "SWITCHBOARD_FAULT_SECRET";
/// How long a case's processes get to disappear after `switchboard` exited.
const LEFTOVER_SETTLE: Duration = Duration::from_secs(5);
/// How long the gateway's descriptors get to come down to the case's limit once every
/// request was answered.
pub(crate) const FD_SETTLE: Duration = Duration::from_secs(3);
/// How long output readers get to see EOF after `switchboard` exited.
const OUTPUT_SETTLE: Duration = Duration::from_secs(3);
/// Bytes of stdout and of stderr kept (the rest is counted).
const CAPTURE_BYTES: usize = 8 * 1024 * 1024;
/// The memory guard: a command is killed once its resident set exceeds this multiple of
/// the case's bound (or [`GUARD_DEFAULT_BYTES`] without one).
const GUARD_FACTOR: u64 = 2;
const GUARD_DEFAULT_BYTES: u64 = 1024 * 1024 * 1024;
/// How often the running command is looked at.
const POLL: Duration = Duration::from_millis(10);

/// Shared by every case of a test process: the async runtime of the canned servers.
#[derive(Debug)]
pub(crate) struct Harness {
    runtime: tokio::runtime::Runtime,
}

impl Harness {
    /// The test process's harness, started by the first case that asks.
    pub(crate) fn shared() -> &'static Harness {
        static SHARED: OnceLock<Harness> = OnceLock::new();
        SHARED.get_or_init(|| Harness {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the canned servers"),
        })
    }
}

/// A case's own directory (its config, token file and `switchboard-peak`'s report):
/// `target/fault-matrix/NAME-PID`, kept when the case fails (to rerun it by hand).
pub(crate) fn case_dir(case: &Case) -> PathBuf {
    workspace_root()
        .join("target")
        .join("fault-matrix")
        .join(format!("{}-{}", case.name, std::process::id()))
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    Exited(i32),
    Signalled(i32),
    /// Still running at the case's deadline: a hang.
    Hung,
    /// Killed by the memory guard at this resident size.
    MemoryGuard(u64),
}

/// What the gateway wrote back, as an MCP client sees it.
#[derive(Debug, Default, Clone)]
pub(crate) struct GatewayView {
    /// Ids of requests written.
    pub(crate) requested: Vec<Value>,
    /// Ids of responses read, in order.
    pub(crate) answered: Vec<Value>,
    /// Response lines by id (for the transcript).
    pub(crate) responses: Vec<(Value, String)>,
    /// Methods of notifications read.
    pub(crate) notifications: BTreeSet<String>,
    /// Stdout lines that were not JSON-RPC.
    pub(crate) other_lines: Vec<String>,
    /// Open file descriptors once every request was answered.
    pub(crate) fds: Option<usize>,
}

impl GatewayView {
    fn all_answered(&self) -> bool {
        self.requested
            .iter()
            .all(|id| self.answered.iter().any(|a| a == id))
    }

    /// What is wrong with the answers, if anything.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut unanswered = Vec::new();
        for id in &self.requested {
            match self.answered.iter().filter(|a| *a == id).count() {
                1 => {}
                0 => unanswered.push(id.to_string()),
                n => problems.push(format!("request {id} was answered {n} times")),
            }
        }
        match unanswered.len() {
            0 => {}
            1 => problems.push(format!("request {} was never answered", unanswered[0])),
            n => problems.push(format!(
                "{n} requests were never answered (ids {}{})",
                unanswered[..n.min(5)].join(", "),
                if n > 5 { ", …" } else { "" }
            )),
        }
        for id in &self.answered {
            if !self.requested.contains(id) {
                problems.push(format!("an answer carries id {id}, which no request had"));
            }
        }
        problems
    }
}

/// Everything observed about one run.
#[derive(Debug)]
pub(crate) struct Observed {
    pub(crate) end: End,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    /// Peak resident set (bytes) of `switchboard` and the descendants it reaped.
    pub(crate) peak_rss: u64,
    /// Processes with the case's token still running after the settle time.
    pub(crate) leftovers: Vec<String>,
    pub(crate) tripwire_hits: usize,
    pub(crate) gateway: Option<GatewayView>,
    /// Paths and addresses to hide in the transcript: (text, placeholder).
    pub(crate) replacements: Vec<(String, String)>,
    pub(crate) secret: String,
    /// Something about the output readers (a descendant still holding a pipe).
    pub(crate) notes: Vec<String>,
}

/// Servers kept alive for the duration of a run.
#[derive(Debug, Default)]
struct Live {
    canned: Vec<CannedServer>,
    http: Vec<HttpServer>,
}

/// Runs one case and observes it.
pub(crate) fn run_case(harness: &Harness, case: &Case) -> Observed {
    let dir = case_dir(case);
    std::fs::create_dir_all(&dir).expect("create the case directory");
    let token = format!("sbf-{}-{}", std::process::id(), case.name);
    let secret = format!("hunter2-{}", case.name);
    let tripwire = harness.runtime.block_on(Tripwire::start());
    let fixture = fixture_bin().display().to_string();
    let mut replacements = vec![
        (dir.display().to_string(), "<dir>".to_owned()),
        (fixture.clone(), "<fixture>".to_owned()),
        (workspace_root().display().to_string(), "<root>".to_owned()),
        (
            tripwire.url.trim_start_matches("http://").to_owned(),
            "<tripwire>".to_owned(),
        ),
    ];
    let mut live = Live::default();
    let mut entries = Map::new();
    let mut env = Map::new();
    env.insert(TOKEN_VAR.to_owned(), json!(token));
    for (key, value) in case.settings.env {
        env.insert((*key).to_owned(), json!(value));
    }
    for (index, server) in case.servers.iter().enumerate() {
        let name = server_name(index);
        let mut entry = match server {
            Server::Fixture(args) => json!({
                "command": fixture,
                "args": substitute(args, &fixture, &tripwire.url),
                "env": env,
            }),
            Server::Command { program, args } => json!({
                "command": program,
                "args": substitute(args, &fixture, &tripwire.url),
                "env": env,
            }),
            Server::Entry(text) => serde_json::from_str(text).expect("a JSON entry"),
            Server::FixtureHttp { fault, args } => {
                let mut all = vec!["--http-fault", fault];
                all.extend_from_slice(args);
                let http = HttpServer::fixture(&all);
                let url = http.url().to_owned();
                replacements.push((
                    url.trim_start_matches("http://")
                        .trim_end_matches("/mcp")
                        .to_owned(),
                    format!("<http-{name}>"),
                ));
                live.http.push(http);
                json!({"type": "http", "url": url})
            }
            Server::Canned { script, url } => {
                let canned = harness
                    .runtime
                    .block_on(CannedServer::start(*script, tripwire.url.clone()));
                replacements.push((canned.addr.clone(), format!("<canned-{name}>")));
                let url = url.replace("{addr}", &canned.addr);
                live.canned.push(canned);
                json!({"type": "http", "url": url})
            }
            Server::Nowhere => {
                let addr = harness.runtime.block_on(closed_port_addr());
                replacements.push((addr.clone(), "<closed-port>".to_owned()));
                json!({"type": "http", "url": format!("http://{addr}/mcp")})
            }
        };
        let settings = case.settings;
        for (key, value) in [
            ("timeout", settings.timeout),
            ("startupTimeout", settings.startup),
            ("era", settings.era),
        ] {
            if let Some(value) = value {
                entry[key] = json!(value);
            }
        }
        if let (Some(sandbox), Some(_)) = (settings.sandbox, entry.get("command")) {
            entry["sandbox"] = serde_json::from_str(sandbox).expect("a JSON sandbox");
        }
        entries.insert(name, entry);
    }
    let config = dir.join("mcp.json");
    let text = serde_json::to_string_pretty(&json!({"mcpServers": entries})).expect("json");
    std::fs::write(&config, text).expect("write the config");
    if let Cmd::ServeBesideLock { lock } = &case.command {
        leave_lock(&dir.join("mcp.tool-lock.json"), lock);
    }
    let config = config.display().to_string();

    let mut args: Vec<String> = Vec::new();
    match &case.command {
        Cmd::Tools => args.extend(["tools".into(), "--config".into(), config]),
        Cmd::Call { tool, args: call } => args.extend([
            "call".into(),
            "--config".into(),
            config,
            "s".into(),
            (*tool).into(),
            (*call).into(),
        ]),
        Cmd::Check { flags } => {
            args.extend(["check".into(), "--config".into(), config, "s".into()]);
            args.extend(flags.iter().map(|f| (*f).to_owned()));
        }
        Cmd::Serve { .. } | Cmd::ServeBesideLock { .. } => {
            args.extend(["serve".into(), "--config".into(), config])
        }
        Cmd::Login => args.extend([
            "login".into(),
            "--config".into(),
            config,
            "s".into(),
            "--no-browser".into(),
        ]),
    }
    let memory_bound = case.outcome.checks.iter().find_map(|c| match c {
        Check::PeakMemory(bound) => Some(bound.bytes),
        _ => None,
    });
    let guard = memory_bound.map_or(GUARD_DEFAULT_BYTES, |b| b * GUARD_FACTOR);
    let fd_limit = case.outcome.checks.iter().find_map(|c| match c {
        Check::GatewayFdsAtMost(limit) => Some(*limit),
        _ => None,
    });
    let run = Launch {
        args: &args,
        token: &token,
        secret: &secret,
        // A directory the store creates itself, so it is private (0700) as the store demands.
        token_file: &dir.join("tokens").join("tokens.json"),
        peak_report: &dir.join("peak.txt"),
        tripwire_url: &tripwire.url,
        serve: match &case.command {
            Cmd::Serve { script, close } => Some((lines_of(script), *close)),
            Cmd::ServeBesideLock { .. } => Some((
                LOCK_SCRIPT.iter().map(|l| (*l).to_owned()).collect(),
                Close::AfterAnswers,
            )),
            _ => None,
        },
        deadline: case.outcome.deadline,
        memory_guard: guard,
        fd_limit,
    }
    .run();
    let leftovers = settle_leftovers(&token);
    let tripwire_hits = tripwire.hits();
    // Stop the servers inside the runtime (their tasks are aborted on drop).
    let _guard = harness.runtime.enter();
    drop(live);
    drop(tripwire);
    Observed {
        end: run.end,
        stdout: run.stdout,
        stderr: run.stderr,
        peak_rss: run.peak_rss,
        leftovers,
        tripwire_hits,
        gateway: run.gateway,
        replacements,
        secret,
        notes: run.notes,
    }
}

/// Leaves what the case says where the config's tool lock belongs.
fn leave_lock(path: &Path, lock: &LockFile) {
    match lock {
        LockFile::Bytes(bytes) => std::fs::write(path, bytes).expect("write the lock"),
        LockFile::Directory => std::fs::create_dir_all(path).expect("make the lock a folder"),
        LockFile::DanglingLink => std::os::unix::fs::symlink(path.with_extension("gone"), path)
            .expect("link the lock to nothing"),
    }
}

fn server_name(index: usize) -> String {
    ["s", "t", "u", "v", "w"]
        .get(index)
        .map_or_else(|| format!("s{index}"), |n| (*n).to_owned())
}

fn substitute(args: &[&str], fixture: &str, tripwire: &str) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{fixture}", fixture)
                .replace("{tripwire}", tripwire)
        })
        .collect()
}

fn lines_of(script: &ServeScript) -> Vec<String> {
    match script {
        ServeScript::Lines(lines) => lines.iter().map(|l| (*l).to_owned()).collect(),
        ServeScript::ManyCalls { tool, args, count } => {
            let mut lines = vec![INITIALIZE.to_owned(), INITIALIZED.to_owned()];
            for n in 0..*count {
                lines.push(format!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#,
                    n + 2
                ));
            }
            lines
        }
    }
}

/// One `switchboard` invocation.
struct Launch<'a> {
    args: &'a [String],
    token: &'a str,
    secret: &'a str,
    token_file: &'a Path,
    /// Where `switchboard-peak` reports switchboard's pid, end and peak memory.
    peak_report: &'a Path,
    /// Where every connection to an address off loopback is sent (see [`proxied_to`]).
    tripwire_url: &'a str,
    serve: Option<(Vec<String>, Close)>,
    deadline: Duration,
    memory_guard: u64,
    /// The case's descriptor limit once every request is answered: the count is read
    /// until it is within the limit or [`FD_SETTLE`] has passed.
    fd_limit: Option<usize>,
}

/// The proxy settings every command runs with: a connection to any address off loopback
/// goes to the tripwire (where it is counted, and goes no further) instead of leaving the
/// machine, so a case whose server names a link-local or private address cannot reach it
/// even if the rule that refuses it regressed. Loopback is reached directly.
fn proxied_to(tripwire_url: &str) -> Vec<(&'static str, String)> {
    let proxies = crate::PROXY_VARIABLES.map(|name| (name, tripwire_url.to_owned()));
    let direct = crate::NO_PROXY_VARIABLES.map(|name| (name, "127.0.0.1,localhost,::1".to_owned()));
    proxies.into_iter().chain(direct).collect()
}

struct Finished {
    end: End,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    peak_rss: u64,
    gateway: Option<GatewayView>,
    notes: Vec<String>,
}

/// A bounded capture of one output stream, filled by a reader thread.
#[derive(Debug, Default)]
struct Capture {
    bytes: Vec<u8>,
    dropped: usize,
    done: bool,
}

type Shared<T> = Arc<Mutex<T>>;

fn lock<T>(shared: &Shared<T>) -> std::sync::MutexGuard<'_, T> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn capture_stream(stream: impl Read + Send + 'static, into: Shared<Capture>) {
    std::thread::spawn(move || {
        let mut stream = stream;
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut capture = lock(&into);
                    let room = CAPTURE_BYTES.saturating_sub(capture.bytes.len());
                    let kept = n.min(room);
                    capture.bytes.extend_from_slice(&chunk[..kept]);
                    capture.dropped += n - kept;
                }
            }
        }
        lock(&into).done = true;
    });
}

/// Reads the gateway's stdout line by line into the capture and the client's view.
fn read_gateway(
    stream: impl Read + Send + 'static,
    into: Shared<Capture>,
    view: Shared<GatewayView>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            {
                let mut capture = lock(&into);
                let room = CAPTURE_BYTES.saturating_sub(capture.bytes.len());
                let kept = line.len().min(room);
                capture.bytes.extend_from_slice(&line[..kept]);
                capture.dropped += line.len() - kept;
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_owned();
            let mut view = lock(&view);
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(message)) if message.contains_key("method") => {
                    let method = message["method"].as_str().unwrap_or("?").to_owned();
                    view.notifications.insert(method);
                }
                Ok(Value::Object(message))
                    if message.contains_key("result") || message.contains_key("error") =>
                {
                    let id = message.get("id").cloned().unwrap_or(Value::Null);
                    view.answered.push(id.clone());
                    view.responses.push((id, text));
                }
                _ => view.other_lines.push(text),
            }
        }
        lock(&into).done = true;
    });
}

/// Writes the gateway's stdin, then closes it when told (or at once).
fn write_gateway(mut stdin: ChildStdin, lines: Vec<String>, close: Close) -> mpsc::Sender<()> {
    let (sender, close_now) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        for line in lines {
            if stdin.write_all(line.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                return;
            }
        }
        let _ = stdin.flush();
        if close == Close::AfterAnswers {
            // Returns when told, or when the run is over (the sender is dropped).
            let _ = close_now.recv();
        }
        drop(stdin);
    });
    sender
}

impl Launch<'_> {
    fn run(self) -> Finished {
        // Through `switchboard-peak`, so the peak memory is switchboard's own (see there).
        let mut command = Command::new(peak_bin());
        command
            .arg("--report")
            .arg(self.peak_report)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_switchboard"))
            .args(self.args)
            .env(TOKEN_VAR, self.token)
            // Every run starts from the same probe order: no era remembered from another.
            .env("SWITCHBOARD_ERA_MEMO", "off")
            .env(SECRET_VAR, self.secret)
            .env("SWITCHBOARD_TOKEN_FILE", self.token_file)
            .envs(proxied_to(self.tripwire_url))
            .env_remove("SWITCHBOARD_LOG")
            .env_remove("RUST_LOG")
            .stdin(if self.serve.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut launcher = command.spawn().expect("spawn switchboard-peak");
        let pid = launched_pid(self.peak_report, &mut launcher);
        let stdout = Arc::new(Mutex::new(Capture::default()));
        let stderr = Arc::new(Mutex::new(Capture::default()));
        let gateway = Arc::new(Mutex::new(GatewayView::default()));
        if let Some(err) = launcher.stderr.take() {
            capture_stream(err, Arc::clone(&stderr));
        }
        let mut closer = None;
        match (&self.serve, launcher.stdout.take(), launcher.stdin.take()) {
            (Some((lines, close)), Some(out), Some(stdin)) => {
                lock(&gateway).requested = lines
                    .iter()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|m| m.get("method").is_some())
                    .filter_map(|m| m.get("id").cloned())
                    .collect();
                read_gateway(out, Arc::clone(&stdout), Arc::clone(&gateway));
                closer = Some(write_gateway(stdin, lines.clone(), *close));
            }
            (_, Some(out), _) => capture_stream(out, Arc::clone(&stdout)),
            _ => {}
        }
        let started = Instant::now();
        let mut asked_to_close = false;
        let ended = |launcher: &mut std::process::Child| {
            let _ = launcher.wait();
            read_peak_report(self.peak_report)
        };
        let (end, peak_rss) = loop {
            if launcher.try_wait().ok().flatten().is_some() {
                break read_peak_report(self.peak_report);
            }
            if started.elapsed() > self.deadline {
                kill(pid);
                let (_, rss) = ended(&mut launcher);
                break (End::Hung, rss);
            }
            let rss = crate::resident_bytes(u32::try_from(pid).unwrap_or(0));
            if rss > self.memory_guard {
                kill(pid);
                let (_, peak) = ended(&mut launcher);
                break (End::MemoryGuard(rss), peak);
            }
            if let Some(closer) = &closer
                && !asked_to_close
                && lock(&gateway).all_answered()
            {
                // switchboard has not been reaped yet, so its pid is still its own. A dropped
                // connection is closed by its own task a moment after the answer it carried
                // went out, so the count is given until FD_SETTLE to come down; a leak stays.
                let mut fds = None;
                let _ = wait::try_until(FD_SETTLE, || {
                    fds = open_fds(pid);
                    fds.zip(self.fd_limit).is_none_or(|(n, limit)| n <= limit)
                });
                lock(&gateway).fds = fds;
                let _ = closer.send(());
                asked_to_close = true;
            }
            std::thread::sleep(POLL);
        };
        drop(closer);
        let mut notes = Vec::new();
        // Whether they saw EOF in time is told by `done` below.
        let _ = wait::try_until(OUTPUT_SETTLE, || lock(&stdout).done && lock(&stderr).done);
        for (name, capture) in [("stdout", &stdout), ("stderr", &stderr)] {
            let capture = lock(capture);
            if !capture.done {
                notes.push(format!(
                    "switchboard's {name} was still held open by another process {OUTPUT_SETTLE:?} after it exited"
                ));
            }
            if capture.dropped > 0 {
                notes.push(format!(
                    "{} more bytes of {name} were not kept",
                    capture.dropped
                ));
            }
        }
        let take = |capture: &Shared<Capture>| std::mem::take(&mut lock(capture).bytes);
        Finished {
            end,
            stdout: take(&stdout),
            stderr: take(&stderr),
            peak_rss,
            gateway: self.serve.as_ref().map(|_| lock(&gateway).clone()),
            notes,
        }
    }
}

/// How long `switchboard-peak` may take to start switchboard and say its pid.
const LAUNCH_DEADLINE: Duration = Duration::from_secs(30);

/// The pid of the switchboard process `switchboard-peak` started (from its report).
fn launched_pid(report: &Path, launcher: &mut std::process::Child) -> i32 {
    let pid = wait::until(
        "switchboard-peak to start switchboard",
        LAUNCH_DEADLINE,
        || {
            let read = || std::fs::read_to_string(report).unwrap_or_default();
            let pid = report_value(&read(), "pid");
            if pid.is_none() && launcher.try_wait().ok().flatten().is_some() {
                // Read again: it may have said the pid (and ended) since the first read.
                let text = read();
                let pid = report_value(&text, "pid");
                assert!(
                    pid.is_some(),
                    "switchboard-peak ended without starting switchboard: {text:?}"
                );
                return pid;
            }
            pid
        },
    );
    i32::try_from(pid).expect("pid")
}

/// How switchboard ended and its peak resident set in bytes, from the report
/// `switchboard-peak` wrote once it reaped it (its `ru_maxrss`: the kernel's high-water
/// mark, covering the descendants it reaped too).
fn read_peak_report(report: &Path) -> (End, u64) {
    let text = std::fs::read_to_string(report).unwrap_or_default();
    let peak = report_value(&text, "maxrss-kib").map_or(0, |kib| kib.unsigned_abs() * 1024);
    let end = match (report_value(&text, "exit"), report_value(&text, "signal")) {
        (Some(code), _) => End::Exited(i32::try_from(code).unwrap_or(-1)),
        (None, Some(signal)) => End::Signalled(i32::try_from(signal).unwrap_or(-1)),
        (None, None) => panic!("switchboard-peak wrote no end: {text:?}"),
    };
    (end, peak)
}

fn report_value(text: &str, key: &str) -> Option<i64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

fn kill(pid: i32) {
    use nix::sys::signal::{Signal, kill};
    let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
}

fn open_fds(pid: i32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(|entries| entries.count())
}

/// Processes whose environment carries the token: `(pid, command line)`.
fn marked_processes(token: &str) -> Vec<(i32, String)> {
    let needle = format!("{TOKEN_VAR}={token}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, cmdline.trim().to_owned()));
        }
    }
    found
}

/// Waits (bounded) for the case's processes to be gone; kills and lists any that stay.
fn settle_leftovers(token: &str) -> Vec<String> {
    if wait::try_until(LEFTOVER_SETTLE, || marked_processes(token).is_empty()).is_ok() {
        return Vec::new();
    }
    let mut listed = Vec::new();
    for (pid, cmdline) in marked_processes(token) {
        // Checked again just before: the pid must still carry the token.
        if marked_processes(token).iter().any(|(p, _)| *p == pid) {
            kill(pid);
        }
        listed.push(format!("pid {pid}: {cmdline}"));
    }
    listed
}
