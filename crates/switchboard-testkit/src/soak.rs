//! The chaos soak: the gateway (`switchboard serve`) over five fixture servers, driven by
//! many `tools/call`s at a fixed concurrency while servers are killed (SIGKILL) and frozen
//! (SIGSTOP, later SIGCONT) at random, and some calls overrun their server's deadline or
//! are cancelled by the client.
//!
//! Everything is observed from outside, as a client and through `/proc`: every call
//! resolves within its deadline, as a result that answers what was asked or as a typed
//! error (a JSON-RPC error, or a tool result with `isError`); the gateway's open fds, threads
//! and RSS after the run are within a bounded slack of their values after warm-up (both
//! measured with every server up and no call in flight); no server process is left
//! unreaped while the gateway runs, and none outlives it after its input closes.
//!
//! [`run`] returns a [`SoakReport`] with the figures and the problems found (it does not
//! panic on a problem; the caller decides). `scripts/soak.sh` runs a long soak through the
//! `switchboard-soak` binary; the CLI's tests run a short one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use switchboard_wire::{Connection, ConnectionOptions, Inbound};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};

/// How many fixture servers the gateway serves.
pub const SERVERS: usize = 5;
/// Each server's request deadline (its `timeout` in the config), in seconds.
const UPSTREAM_TIMEOUT_SECS: u64 = 2;
/// How long an overrunning call asks its tool to take: beyond the server's deadline.
const OVERRUN_MS: u64 = 5_000;
/// The longest any call may take, from the client's side: a server being restarted is
/// waited for (the runtime's ready wait, 10 s) and then gets its request deadline.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);
/// A server is killed at most once in this long: the runtime's circuit breaker opens after
/// 5 failures within 60 s, and the soak wants restarts, not a broken server.
const KILL_SPACING: Duration = Duration::from_secs(21);
/// How long a frozen server stays stopped, at most: longer than its request deadline, so
/// some calls to it fail on that deadline.
const MAX_FREEZE: Duration = Duration::from_millis(3_000);
/// How long every server may take to be back and answering before a measurement.
const SETTLE_DEADLINE: Duration = Duration::from_secs(60);
/// How long the gateway may take to exit after its input closes (close grace 5 s, flush
/// 2 s, stopping five servers).
const EXIT_DEADLINE: Duration = Duration::from_secs(60);
/// Slack allowed between warm-up and end: open fds.
const FD_SLACK: u64 = 8;
/// Slack allowed between warm-up and end: threads.
const THREAD_SLACK: u64 = 4;
/// Slack allowed between warm-up and end: RSS, in KiB, plus a tenth of the warm-up value.
const RSS_SLACK_KIB: u64 = 8 * 1024;
/// Problems kept in the report (the rest are counted).
const MAX_PROBLEMS: usize = 50;
/// Bytes of the gateway's stderr kept for the report.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// What to run.
#[derive(Clone)]
pub struct SoakPlan {
    /// The `switchboard` binary.
    pub switchboard: PathBuf,
    /// The `switchboard-fixture` binary.
    pub fixture: PathBuf,
    /// Calls to make in all (warm-up included).
    pub calls: u64,
    /// Calls in flight at once.
    pub in_flight: usize,
    /// Seed of every random choice (calls, servers, chaos), for a rerun.
    pub seed: u64,
    /// Where the gateway's config file is written.
    pub work_dir: PathBuf,
    /// Pause between two chaos actions.
    pub chaos_every: Duration,
    /// Called every few seconds with a line saying how far the soak is.
    pub on_progress: Option<ProgressHook>,
}

/// Receives a line of progress (the binary prints it on stderr).
pub type ProgressHook = Arc<dyn Fn(&str) + Send + Sync>;

/// How often [`SoakPlan::on_progress`] is called.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

impl fmt::Debug for SoakPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoakPlan")
            .field("switchboard", &self.switchboard)
            .field("fixture", &self.fixture)
            .field("calls", &self.calls)
            .field("in_flight", &self.in_flight)
            .field("seed", &self.seed)
            .field("work_dir", &self.work_dir)
            .field("chaos_every", &self.chaos_every)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

impl SoakPlan {
    /// 32 calls in flight, a chaos action every 250 ms, a seed from the clock, the config
    /// in the system's temporary directory.
    pub fn new(switchboard: PathBuf, fixture: PathBuf, calls: u64) -> SoakPlan {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        SoakPlan {
            switchboard,
            fixture,
            calls,
            in_flight: 32,
            seed,
            work_dir: std::env::temp_dir(),
            chaos_every: Duration::from_millis(250),
            on_progress: None,
        }
    }

    fn warmup_calls(&self) -> u64 {
        (self.calls / 10).max(self.calls.min(500))
    }
}

/// The gateway's footprint at one moment, read from `/proc`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
    /// Resident set size, KiB.
    pub rss_kib: u64,
    /// Server processes alive (children of the gateway carrying the soak's marker).
    pub servers: u64,
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fds {}, threads {}, RSS {} KiB, servers {}",
            self.fds, self.threads, self.rss_kib, self.servers
        )
    }
}

/// What a soak did and found.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// The seed it ran with.
    pub seed: u64,
    /// Calls made.
    pub calls: u64,
    /// Results that answered what was asked.
    pub results: u64,
    /// Tool results with `isError` (a typed error: e.g. the server's deadline, a crash).
    pub tool_errors: u64,
    /// The tool errors by what they say (see `tool_error_class`).
    pub tool_error_classes: BTreeMap<String, u64>,
    /// JSON-RPC errors, by code.
    pub rpc_errors: BTreeMap<i64, u64>,
    /// Calls the client cancelled (no answer expected).
    pub cancelled: u64,
    /// Calls with no answer within [`CALL_DEADLINE`], or failed by the connection itself.
    pub unresolved: u64,
    /// Answers that arrived for calls already cancelled (a race the protocol allows).
    pub late_answers: u64,
    /// Progress notifications received.
    pub progress: u64,
    /// Servers killed with SIGKILL.
    pub kills: u64,
    /// Servers frozen with SIGSTOP (and thawed).
    pub freezes: u64,
    /// Server processes seen in all (5 at the start, one more per restart observed).
    pub server_processes_seen: u64,
    /// Wall time of the calls.
    pub elapsed: Duration,
    /// Call latencies: median, 99th percentile, maximum.
    pub latency: [Duration; 3],
    /// After warm-up.
    pub warm: Option<Figures>,
    /// At the end.
    pub end: Option<Figures>,
    /// Server processes left after the gateway exited.
    pub orphans: u64,
    /// How the gateway ended after its input closed.
    pub exit: String,
    /// Everything that broke a promise, first ones kept (see `problems_dropped`).
    pub problems: Vec<String>,
    /// Problems beyond the kept ones.
    pub problems_dropped: u64,
    /// The end of the gateway's stderr (for a failed run), control characters escaped.
    pub stderr_tail: String,
}

impl SoakReport {
    /// Whether the soak found nothing wrong.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        } else {
            self.problems_dropped += 1;
        }
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64().max(0.001);
        writeln!(f, "soak seed {}", self.seed)?;
        writeln!(
            f,
            "calls: {} in {:.1} s ({:.0}/s); latency p50 {:?}, p99 {:?}, max {:?}",
            self.calls,
            secs,
            self.calls as f64 / secs,
            self.latency[0],
            self.latency[1],
            self.latency[2]
        )?;
        writeln!(
            f,
            "resolved: {} results, {} tool errors {:?}, JSON-RPC errors {:?}, {} cancelled by the \
             client; {} unresolved; {} late answers; {} progress notifications",
            self.results,
            self.tool_errors,
            self.tool_error_classes,
            self.rpc_errors,
            self.cancelled,
            self.unresolved,
            self.late_answers,
            self.progress
        )?;
        writeln!(
            f,
            "chaos: {} kills, {} freezes; {} server processes seen",
            self.kills, self.freezes, self.server_processes_seen
        )?;
        let show =
            |figures: &Option<Figures>| figures.map_or("not measured".into(), |f| f.to_string());
        writeln!(f, "after warm-up: {}", show(&self.warm))?;
        writeln!(f, "at the end:    {}", show(&self.end))?;
        writeln!(f, "exit: {}; orphans: {}", self.exit, self.orphans)?;
        if self.problems.is_empty() {
            write!(f, "no problems")
        } else {
            writeln!(
                f,
                "{} problems:",
                self.problems.len() as u64 + self.problems_dropped
            )?;
            for problem in &self.problems {
                writeln!(f, "  - {problem}")?;
            }
            write!(f, "gateway stderr (tail):\n{}", self.stderr_tail)
        }
    }
}

/// Runs the soak on a runtime of its own.
///
/// # Panics
///
/// If the async runtime cannot be built or the config cannot be written (test support).
pub fn run(plan: &SoakPlan) -> SoakReport {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the soak");
    runtime.block_on(soak(plan))
}

/// A splitmix64 generator: deterministic per seed, good enough to pick calls and victims.
#[derive(Debug, Clone)]
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One call's plan.
#[derive(Debug, Clone)]
enum CallKind {
    Echo(String),
    Add(i64, i64),
    Slow {
        ms: u64,
        steps: u64,
        progress: bool,
    },
    /// `slow` for longer than the server's deadline: must end as a typed error.
    Overrun,
    /// `slow`, cancelled by the client after a moment: no answer expected.
    Cancelled {
        after: Duration,
    },
    /// A tool no server has: a JSON-RPC error.
    UnknownTool,
}

impl CallKind {
    fn pick(dice: &mut Dice, index: u64) -> CallKind {
        match dice.below(1000) {
            0..5 => CallKind::Overrun,
            5..15 => CallKind::Cancelled {
                after: Duration::from_millis(10 + dice.below(90)),
            },
            15..20 => CallKind::UnknownTool,
            20..80 => CallKind::Slow {
                ms: 10 + dice.below(90),
                steps: 1 + dice.below(3),
                progress: dice.below(2) == 0,
            },
            80..200 => CallKind::Add(dice.below(1 << 20) as i64, dice.below(1 << 20) as i64),
            _ => CallKind::Echo(format!("call {index} {:x}", dice.next())),
        }
    }

    /// The tool name (without the server prefix) and the call's parameters.
    fn request(&self, server: usize) -> Value {
        let (tool, arguments, progress) = match self {
            CallKind::Echo(text) => ("echo", json!({"text": text}), false),
            CallKind::Add(a, b) => ("add", json!({"a": a, "b": b}), false),
            CallKind::Slow {
                ms,
                steps,
                progress,
            } => (
                "slow",
                json!({"duration_ms": ms, "steps": steps}),
                *progress,
            ),
            CallKind::Overrun => (
                "slow",
                json!({"duration_ms": OVERRUN_MS, "steps": 1}),
                false,
            ),
            CallKind::Cancelled { .. } => {
                ("slow", json!({"duration_ms": 1_500, "steps": 3}), false)
            }
            CallKind::UnknownTool => ("no_such_tool", json!({}), false),
        };
        let mut params = json!({"name": format!("s{server}__{tool}"), "arguments": arguments});
        if progress {
            params["_meta"] = json!({"progressToken": format!("p{server}-{tool}")});
        }
        params
    }
}

/// How one call ended.
#[derive(Debug)]
enum Outcome {
    Result,
    ToolError(String),
    RpcError(i64),
    Cancelled,
    /// A promise broken: the text says which.
    Problem(String),
}

/// State shared by the call workers and the chaos task.
struct Soak {
    plan: SoakPlan,
    connection: Connection,
    gateway_pid: u32,
    /// The marker every server's command line carries (`--name <marker>-s<i>`).
    marker: String,
    next_call: AtomicU64,
    outcomes: Mutex<Tally>,
    progress: AtomicU64,
    seen_servers: Mutex<BTreeSet<u32>>,
}

#[derive(Default)]
struct Tally {
    results: u64,
    tool_errors: u64,
    tool_error_classes: BTreeMap<String, u64>,
    rpc_errors: BTreeMap<i64, u64>,
    cancelled: u64,
    unresolved: u64,
    /// One per call (bounded by the plan's call count).
    latencies: Vec<Duration>,
    problems: Vec<String>,
    problems_dropped: u64,
}

impl Tally {
    fn problem(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        } else {
            self.problems_dropped += 1;
        }
    }
}

async fn soak(plan: &SoakPlan) -> SoakReport {
    let mut report = SoakReport {
        seed: plan.seed,
        ..SoakReport::default()
    };
    let marker = format!("soak-{}-{}", std::process::id(), plan.seed % 1_000_000);
    let config = plan.work_dir.join(format!("{marker}.json"));
    std::fs::write(&config, config_text(plan, &marker)).expect("write the soak config");
    let mut child = match tokio::process::Command::new(&plan.switchboard)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        // The soak measures the gateway, not the user's era memo.
        .env("SWITCHBOARD_ERA_MEMO", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            report.problem(format!("could not start the gateway: {error}"));
            return report;
        }
    };
    let gateway_pid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        report.problem("the gateway's pipes are missing".into());
        return report;
    };
    let stderr_tail = Arc::new(Mutex::new(Vec::new()));
    let stderr_task = tokio::spawn(keep_tail(stderr, stderr_tail.clone()));
    let (connection, inbound) =
        Connection::start(stdout, stdin, ConnectionOptions::new("gateway"), None);
    // The soak's cancellations are MCP's, as a host's would be.
    connection.set_cancel_notice(|id, reason| {
        (
            switchboard_protocol::methods::CANCELLED,
            serde_json::json!({ "requestId": id, "reason": reason }),
        )
    });
    let shared = Arc::new(Soak {
        plan: plan.clone(),
        connection: connection.clone(),
        gateway_pid,
        marker: marker.clone(),
        next_call: AtomicU64::new(0),
        outcomes: Mutex::new(Tally::default()),
        progress: AtomicU64::new(0),
        seen_servers: Mutex::new(BTreeSet::new()),
    });
    let inbound_task = tokio::spawn(watch_inbound(shared.clone(), inbound));
    let progress_task = plan
        .on_progress
        .clone()
        .map(|hook| tokio::spawn(report_progress(shared.clone(), hook)));
    let mut problems = Vec::new();
    if let Err(problem) = handshake(&connection).await {
        problems.push(problem);
    } else {
        let started = Instant::now();
        let mut chaos = Chaos::new(plan.seed);
        let mut phases = vec![plan.warmup_calls().min(plan.calls), plan.calls];
        phases.dedup();
        for until in phases {
            let (stop_tx, stop_rx) = watch::channel(false);
            let running = tokio::spawn(chaos.run(shared.clone(), stop_rx));
            run_calls(&shared, until).await;
            let _ = stop_tx.send(true);
            chaos = match running.await {
                Ok(chaos) => chaos,
                Err(error) => {
                    problems.push(format!("the chaos task failed: {error}"));
                    Chaos::new(plan.seed)
                }
            };
            let measured = match settle(&shared).await {
                Ok(()) => Some(figures(&shared)),
                Err(problem) => {
                    problems.push(problem);
                    None
                }
            };
            if until == plan.calls {
                report.end = measured;
            } else {
                report.warm = measured;
            }
        }
        report.elapsed = started.elapsed();
        report.kills = chaos.kills;
        report.freezes = chaos.freezes;
    }
    // Close the gateway's input: it answers what is left, stops its servers and exits.
    connection.close_write().await;
    report.exit = match tokio::time::timeout(EXIT_DEADLINE, child.wait()).await {
        Ok(Ok(status)) if status.success() => "exited 0 after its input closed".into(),
        Ok(Ok(status)) => {
            problems.push(format!("the gateway ended with {status}"));
            status.to_string()
        }
        Ok(Err(error)) => {
            problems.push(format!("waiting for the gateway failed: {error}"));
            "unknown".into()
        }
        Err(_) => {
            problems.push(format!(
                "the gateway did not exit within {EXIT_DEADLINE:?} of its input closing"
            ));
            let _ = child.kill().await;
            "killed: it did not exit".into()
        }
    };
    let left = marked_processes(&marker);
    report.orphans = left.len() as u64;
    if !left.is_empty() {
        problems.push(format!(
            "{} server processes outlived the gateway: {:?}",
            left.len(),
            left.iter().map(|p| p.pid).collect::<Vec<_>>()
        ));
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), stderr_task).await;
    inbound_task.abort();
    if let Some(task) = progress_task {
        task.abort();
    }
    let _ = std::fs::remove_file(&config);
    let tally = std::mem::take(&mut *lock(&shared.outcomes));
    report.calls = shared.next_call.load(Ordering::Relaxed).min(plan.calls);
    report.results = tally.results;
    report.tool_errors = tally.tool_errors;
    report.tool_error_classes = tally.tool_error_classes;
    report.rpc_errors = tally.rpc_errors;
    report.cancelled = tally.cancelled;
    report.unresolved = tally.unresolved;
    report.late_answers = connection.stats().late_responses;
    report.progress = shared.progress.load(Ordering::Relaxed);
    report.server_processes_seen = lock(&shared.seen_servers).len() as u64;
    let mut latencies = tally.latencies;
    latencies.sort();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies.get(index).copied().unwrap_or_default()
    };
    report.latency = [at(0.5), at(0.99), at(1.0)];
    report.problems_dropped += tally.problems_dropped;
    for problem in tally.problems.into_iter().chain(problems) {
        report.problem(problem);
    }
    if let (Some(warm), Some(end)) = (report.warm, report.end) {
        for problem in growth(warm, end) {
            report.problem(problem);
        }
    }
    // Server-controlled text (the servers' stderr tails) never reaches a terminal raw.
    report.stderr_tail = String::from_utf8_lossy(&lock(&stderr_tail))
        .lines()
        .map(|line| switchboard_wire::excerpt(line.as_bytes(), STDERR_TAIL_BYTES))
        .collect::<Vec<_>>()
        .join("\n");
    report
}

fn config_text(plan: &SoakPlan, marker: &str) -> String {
    let mut servers = serde_json::Map::new();
    for server in 0..SERVERS {
        // The last server ignores cancellation: its overrun and cancelled calls keep working
        // upstream after the gateway gave up on them.
        let mode = if server == SERVERS - 1 {
            "ignores-cancel"
        } else {
            "good"
        };
        servers.insert(
            format!("s{server}"),
            json!({
                "command": plan.fixture,
                "args": ["--mode", mode, "--name", format!("{marker}-s{server}")],
                "timeout": UPSTREAM_TIMEOUT_SECS,
            }),
        );
    }
    json!({ "mcpServers": servers }).to_string()
}

async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut tail = lock(&tail);
                tail.extend_from_slice(&buffer[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                tail.drain(..excess);
            }
        }
    }
}

/// Counts progress; anything else the gateway sends unasked is a problem.
async fn watch_inbound(shared: Arc<Soak>, mut inbound: mpsc::Receiver<Inbound>) {
    while let Some(event) = inbound.recv().await {
        let problem = match event {
            Inbound::Notification(n) if n.method == "notifications/progress" => {
                shared.progress.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Inbound::Notification(_) => continue, // list changes after restarts
            Inbound::UnexpectedResponse { response, .. } => {
                // Late answers to cancelled calls are counted by the connection.
                if response.id.is_none() {
                    format!(
                        "the gateway sent an error with id null: {:?}",
                        response.outcome
                    )
                } else {
                    continue;
                }
            }
            Inbound::Request(request) => {
                format!("the gateway sent a request: {}", request.method)
            }
            Inbound::Malformed(malformed) => {
                format!("the gateway sent a broken frame: {malformed}")
            }
        };
        lock(&shared.outcomes).problem(problem);
    }
}

async fn report_progress(shared: Arc<Soak>, hook: ProgressHook) {
    let started = Instant::now();
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let line = {
            let tally = lock(&shared.outcomes);
            format!(
                "{:>5.0} s: {} calls started; {} results, {} tool errors, {} JSON-RPC errors, \
                 {} cancelled, {} unresolved; gateway {}",
                started.elapsed().as_secs_f64(),
                shared.next_call.load(Ordering::Relaxed),
                tally.results,
                tally.tool_errors,
                tally.rpc_errors.values().sum::<u64>(),
                tally.cancelled,
                tally.unresolved,
                figures(&shared)
            )
        };
        hook(&line);
    }
}

async fn handshake(connection: &Connection) -> Result<(), String> {
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "switchboard-soak", "version": "1"},
    });
    let answer = tokio::time::timeout(
        CALL_DEADLINE,
        connection.request("initialize", Some(&params)),
    )
    .await;
    match answer {
        Ok(Ok(Ok(_))) => {}
        other => return Err(format!("initialize failed: {other:?}")),
    }
    connection
        .notify("notifications/initialized", None)
        .await
        .map_err(|e| format!("initialized: {e}"))
}

/// Makes calls until `until` calls were made in all, `plan.in_flight` at a time.
async fn run_calls(shared: &Arc<Soak>, until: u64) {
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..shared.plan.in_flight {
        let shared = shared.clone();
        let mut dice = Dice(
            shared
                .plan
                .seed
                .wrapping_mul(31)
                .wrapping_add(worker as u64 + until),
        );
        workers.spawn(async move {
            loop {
                let index = shared.next_call.fetch_add(1, Ordering::Relaxed);
                if index >= until {
                    shared.next_call.fetch_sub(1, Ordering::Relaxed);
                    return;
                }
                let server = dice.below(SERVERS as u64) as usize;
                let kind = CallKind::pick(&mut dice, index);
                let started = Instant::now();
                let outcome = one_call(&shared.connection, server, &kind).await;
                let mut tally = lock(&shared.outcomes);
                tally.latencies.push(started.elapsed());
                match outcome {
                    Outcome::Result => tally.results += 1,
                    Outcome::ToolError(class) => {
                        tally.tool_errors += 1;
                        *tally.tool_error_classes.entry(class).or_default() += 1;
                    }
                    Outcome::RpcError(code) => *tally.rpc_errors.entry(code).or_default() += 1,
                    Outcome::Cancelled => tally.cancelled += 1,
                    Outcome::Problem(problem) => {
                        tally.unresolved += 1;
                        tally.problem(format!("call {index} ({kind:?} on s{server}): {problem}"));
                    }
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
}

async fn one_call(connection: &Connection, server: usize, kind: &CallKind) -> Outcome {
    let params = kind.request(server);
    let id = connection.allocate_id();
    let mut call = match connection
        .send_request(id, "tools/call", Some(&params))
        .await
    {
        Ok(call) => call,
        Err(error) => return Outcome::Problem(format!("could not send: {error}")),
    };
    if let CallKind::Cancelled { after } = kind {
        tokio::select! {
            answer = call.response() => return judge(kind, answer),
            () = tokio::time::sleep(*after) => {}
        }
        return match call.cancel("the soak cancels some calls").await {
            Ok(()) => Outcome::Cancelled,
            Err(error) => Outcome::Problem(format!("could not cancel: {error}")),
        };
    }
    match tokio::time::timeout(CALL_DEADLINE, call.response()).await {
        Ok(answer) => judge(kind, answer),
        Err(_) => Outcome::Problem(format!("no answer within {CALL_DEADLINE:?}")),
    }
}

/// Whether an answer resolves the call: a result that answers what was asked, a tool
/// error, or a JSON-RPC error.
fn judge(
    kind: &CallKind,
    answer: Result<Result<Value, switchboard_wire::ErrorObject>, switchboard_wire::WireError>,
) -> Outcome {
    let result = match answer {
        Err(error) => return Outcome::Problem(format!("the connection failed: {error}")),
        Ok(Err(error)) => return Outcome::RpcError(error.code),
        Ok(Ok(result)) => result,
    };
    let text = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Outcome::ToolError(tool_error_class(text));
    }
    let right = match kind {
        CallKind::Echo(expected) => text == expected,
        CallKind::Add(a, b) => result.pointer("/structuredContent/sum") == Some(&json!(a + b)),
        CallKind::Slow { .. } | CallKind::Cancelled { .. } => text == "done",
        CallKind::Overrun => {
            return Outcome::Problem(format!(
                "a call beyond its server's {UPSTREAM_TIMEOUT_SECS} s deadline succeeded"
            ));
        }
        CallKind::UnknownTool => false,
    };
    if right {
        Outcome::Result
    } else {
        Outcome::Problem(format!("the result does not answer the call: {result}"))
    }
}

/// What kind of failure a tool error reports, in a few words.
fn tool_error_class(text: &str) -> String {
    let class = if text.contains("did not answer") {
        "server deadline"
    } else if text.contains("exited") || text.contains("closed") {
        "server died"
    } else if text.contains("not available") {
        "server unavailable"
    } else if text.contains("cancelled") {
        "cancelled"
    } else {
        return format!("other: {}", text.chars().take(80).collect::<String>());
    };
    class.to_owned()
}

/// The chaos between two measurements.
struct Chaos {
    dice: Dice,
    /// When each server was last killed (kept across phases: see [`KILL_SPACING`]).
    last_kill: [Option<Instant>; SERVERS],
    kills: u64,
    freezes: u64,
}

/// What the chaos does to one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blow {
    Kill,
    Freeze,
    /// Kill if the server's spacing allows, else freeze.
    Either,
}

impl Chaos {
    fn new(seed: u64) -> Chaos {
        Chaos {
            dice: Dice(seed ^ 0x5eed),
            last_kill: [None; SERVERS],
            kills: 0,
            freezes: 0,
        }
    }

    /// Opens with a kill and a freeze (so every phase has both), then kills or freezes a
    /// random server every `chaos_every` until told to stop.
    async fn run(mut self, shared: Arc<Soak>, stop: watch::Receiver<bool>) -> Chaos {
        let stopped = || {
            let mut stop = stop.clone();
            async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            }
        };
        let mut opening = vec![Blow::Freeze, Blow::Kill];
        loop {
            let blow = match opening.pop() {
                Some(blow) => blow,
                None => {
                    tokio::select! {
                        () = stopped() => break,
                        () = tokio::time::sleep(shared.plan.chaos_every) => {}
                    }
                    Blow::Either
                }
            };
            let server = self.dice.below(SERVERS as u64) as usize;
            let Some(victim) = shared
                .servers(Some(server))
                .into_iter()
                .find(|p| p.state != 'Z')
            else {
                continue; // being restarted
            };
            let pid = Pid::from_raw(victim.pid as i32);
            let may_kill = self.last_kill[server].is_none_or(|at| at.elapsed() >= KILL_SPACING);
            let kill_it = match blow {
                Blow::Kill => may_kill,
                Blow::Freeze => false,
                Blow::Either => may_kill && self.dice.below(2) == 0,
            };
            if kill_it {
                if kill(pid, Signal::SIGKILL).is_ok() {
                    self.last_kill[server] = Some(Instant::now());
                    self.kills += 1;
                }
            } else if kill(pid, Signal::SIGSTOP).is_ok() {
                self.freezes += 1;
                let freeze = Duration::from_millis(self.dice.below(MAX_FREEZE.as_millis() as u64));
                tokio::select! {
                    () = stopped() => {}
                    () = tokio::time::sleep(freeze) => {}
                }
                let _ = kill(pid, Signal::SIGCONT);
            }
        }
        self
    }
}

/// Waits until every server runs (one process each, none frozen or unreaped) and answers
/// a call through the gateway.
async fn settle(shared: &Soak) -> Result<(), String> {
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let mut waiting_for = String::new();
    while Instant::now() < deadline {
        let processes = shared.servers(None);
        for process in &processes {
            if process.state == 'T' {
                let _ = kill(Pid::from_raw(process.pid as i32), Signal::SIGCONT);
            }
        }
        waiting_for = settled(shared, &processes).await.err().unwrap_or_default();
        if waiting_for.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "the servers did not settle within {SETTLE_DEADLINE:?}: {waiting_for}"
    ))
}

async fn settled(shared: &Soak, processes: &[ServerProcess]) -> Result<(), String> {
    let zombies: Vec<u32> = processes
        .iter()
        .filter(|p| p.state == 'Z')
        .map(|p| p.pid)
        .collect();
    if !zombies.is_empty() {
        return Err(format!("unreaped server processes {zombies:?}"));
    }
    for server in 0..SERVERS {
        let count = processes
            .iter()
            .filter(|p| p.server == Some(server))
            .count();
        if count != 1 {
            return Err(format!("s{server} has {count} processes"));
        }
        let kind = CallKind::Echo(format!("settle s{server}"));
        match one_call(&shared.connection, server, &kind).await {
            Outcome::Result => {}
            other => return Err(format!("s{server} answered {other:?}")),
        }
    }
    Ok(())
}

fn figures(shared: &Soak) -> Figures {
    let proc_dir = PathBuf::from(format!("/proc/{}", shared.gateway_pid));
    let fds = std::fs::read_dir(proc_dir.join("fd")).map_or(0, |d| d.count() as u64);
    let status = std::fs::read_to_string(proc_dir.join("status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Figures {
        fds,
        threads: field("Threads:"),
        rss_kib: field("VmRSS:"),
        servers: shared
            .servers(None)
            .iter()
            .filter(|p| p.server.is_some() && p.state != 'Z')
            .count() as u64,
    }
}

/// What grew beyond its slack between warm-up and the end.
fn growth(warm: Figures, end: Figures) -> Vec<String> {
    let mut problems = Vec::new();
    if end.fds > warm.fds + FD_SLACK {
        problems.push(format!("open fds grew from {} to {}", warm.fds, end.fds));
    }
    if end.threads > warm.threads + THREAD_SLACK {
        problems.push(format!(
            "threads grew from {} to {}",
            warm.threads, end.threads
        ));
    }
    if end.rss_kib > warm.rss_kib + RSS_SLACK_KIB + warm.rss_kib / 10 {
        problems.push(format!(
            "RSS grew from {} KiB to {} KiB",
            warm.rss_kib, end.rss_kib
        ));
    }
    problems
}

/// A process carrying the soak's marker.
#[derive(Debug, Clone)]
struct ServerProcess {
    pid: u32,
    /// Which server, read from its `--name`.
    server: Option<usize>,
    /// The state letter from `/proc/<pid>/stat` (`Z`: unreaped, `T`: stopped).
    state: char,
}

impl Soak {
    /// The gateway's children carrying the marker (of one server, or all), recording
    /// their pids as seen.
    fn servers(&self, only: Option<usize>) -> Vec<ServerProcess> {
        let children = children_of(self.gateway_pid);
        let mut seen = lock(&self.seen_servers);
        let found: Vec<ServerProcess> = marked_processes(&self.marker)
            .into_iter()
            .chain(children.into_iter().filter(|c| c.state == 'Z'))
            .filter(|p| only.is_none() || p.server == only)
            .collect();
        seen.extend(found.iter().filter(|p| p.server.is_some()).map(|p| p.pid));
        found
    }
}

/// Processes whose command line carries `marker`, with the server index from it.
fn marked_processes(marker: &str) -> Vec<ServerProcess> {
    let mut found = Vec::new();
    for (pid, dir) in proc_entries() {
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        let Some(at) = cmdline.find(marker) else {
            continue;
        };
        let server = cmdline[at + marker.len()..]
            .strip_prefix("-s")
            .and_then(|rest| rest.split('\0').next())
            .and_then(|n| n.parse::<usize>().ok());
        found.push(ServerProcess {
            pid,
            server,
            state: stat_of(&dir).map_or('?', |(state, _)| state),
        });
    }
    found
}

/// Children of `parent` (any command line; zombies have none).
fn children_of(parent: u32) -> Vec<ServerProcess> {
    proc_entries()
        .filter_map(|(pid, dir)| {
            let (state, ppid) = stat_of(&dir)?;
            (ppid == parent).then_some(ServerProcess {
                pid,
                server: None,
                state,
            })
        })
        .collect()
}

fn proc_entries() -> impl Iterator<Item = (u32, PathBuf)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((pid, entry.path()))
        })
}

/// (state, parent pid) from `/proc/<pid>/stat`.
fn stat_of(dir: &Path) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces, so read after the last ')'.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
