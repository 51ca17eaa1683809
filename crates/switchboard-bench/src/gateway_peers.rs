//! Scenario 10: our gateway beside the gateways a user could install today, each fronting
//! the same stdio server (`switchboard-bench trivial-server`) over Streamable HTTP on loopback.
//!
//! The gateways (peers pinned by `scripts/peers/gateways.sh`):
//! - ours: `switchboard serve --http 127.0.0.1:PORT --config … --server trivial --no-prefix`,
//!   driven in the legacy era (the peers' era) and, for reference, in 2026-07-28;
//! - npm `supergateway` 4.0.0 (`--stdio CMD --outputTransport streamableHttp --stateful`);
//! - npm `mcp-proxy` 6.7.19 (punkpeye's, `--server stream`, at `/mcp`);
//! - PyPI `mcp-proxy` 0.13.0 (sparfenyuk's; it serves SSE and Streamable HTTP at `/mcp` at once);
//! - PyPI `fastmcp` 4.2.3's proxy (`scripts/peers/fastmcp_proxy.py`: `create_proxy`, which
//!   replaced `FastMCP.as_proxy`, over a `StdioTransport`, served with `transport="http"`).
//!
//! The node peers run on target/peers' Node 22 with `scripts/peers/loopback.cjs` preloaded
//! (so they listen on 127.0.0.1 only); every peer's own request logging is turned down, so
//! that none pays for a log line per call that ours does not write.
//!
//! One load driver, ours: `switchboard-bench gateway-load` ([`load`]) opens N sessions with
//! `Session::connect_http` (legacy: `initialize`, `Mcp-Session-Id` and the GET stream; at
//! most [`GatewayLoadArgs::connect_parallel`] handshakes at a time), makes warm-up calls on
//! each, then every session makes sequential `tools/call echo` calls until the window
//! closes (or its call cap is reached); calls/s, p50/p99 over every call of the window, and
//! the gateway's CPU time over the window. The same driver with `--server` opens N stdio
//! sessions straight to N trivial servers: the direct baseline of the "added" latency.
//!
//! The gateway's process tree: the gateway process and every descendant except the
//! upstream servers (processes running the upstream program, shells that wrap them, and
//! their descendants). Its RSS is the sum of their `VmRSS`, its CPU the sum of their
//! `utime + stime` (`/proc/PID/stat`). The upstream servers are counted (and their RSS
//! summed) apart: a peer that starts one upstream per session shows it there.
//!
//! Open loop (`gateway-load --rate R`): each session's calls are set at fixed times, R
//! calls/s over all the sessions, and a call that waited for the one before it counts from
//! its set time. [`run_scenario`] runs ours and the direct baseline this way at 256
//! sessions and the fastest peer's calls/s there ([`paced_runs`]): the latency a hop adds
//! at a load every gateway carries, where the closed loop's p99 at 256 sessions is the
//! queue's.
//!
//! Memory ([`memory`], `gateway-load --idle-sessions M`): the fresh gateway's RSS before
//! any client, then after one session made 100 calls (the base), then with M more sessions
//! open and idle; per session = (loaded − base) / M.
//!
//! [`run_scenario`] (the driver's part) starts each gateway afresh for every round, runs
//! the loads at 1, 16 and 256 sessions and the Python SDK client (`bench/py_client.py
//! --url`, the foreign check) at one session against it, then measures memory once per
//! gateway on a fresh instance. Every process it starts is in a process group of its own,
//! killed when its run ends.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, Session, SessionConfig};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cli::{EraArg, GatewayLoadArgs};
use crate::driver::{HttpServer, Paths, free_port, loadavg, run_bounded};
use crate::stats::{self, RunResult};

/// The session counts of the load runs.
pub const SESSION_COUNTS: [usize; 3] = [1, 16, 256];

/// Sessions of the paced (open-loop) runs.
pub const PACED_SESSIONS: usize = 256;

/// Sessions held open in the memory measurement.
pub const IDLE_SESSIONS: usize = 1000;

/// The scenario's id for `run --only` (matched exactly: `--only gateway` is scenario 7).
pub const SCENARIO_ID: &str = "gateway-peers";

/// A gateway of the scenario, or the direct baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gateway {
    /// No gateway: N stdio sessions straight to N trivial servers.
    Direct,
    /// `switchboard serve --http`, driven in the legacy era.
    Ours,
    /// The same gateway driven in the 2026-07-28 era (stateless; for reference).
    OursModern,
    /// npm `supergateway` 4.0.0, stateful Streamable HTTP.
    Supergateway,
    /// npm `mcp-proxy` 6.7.19 (punkpeye's).
    McpProxyNpm,
    /// PyPI `mcp-proxy` 0.13.0 (sparfenyuk's).
    McpProxyPy,
    /// PyPI `fastmcp` 4.2.3's proxy.
    Fastmcp,
}

impl Gateway {
    /// Every gateway, in table order.
    pub const ALL: [Gateway; 7] = [
        Gateway::Direct,
        Gateway::Ours,
        Gateway::OursModern,
        Gateway::Supergateway,
        Gateway::McpProxyNpm,
        Gateway::McpProxyPy,
        Gateway::Fastmcp,
    ];

    /// The peers (not ours, not the baseline).
    pub fn is_peer(self) -> bool {
        !matches!(self, Gateway::Direct | Gateway::Ours | Gateway::OursModern)
    }

    /// Short name (logs, JSON).
    pub fn name(self) -> &'static str {
        match self {
            Gateway::Direct => "direct",
            Gateway::Ours => "ours",
            Gateway::OursModern => "ours-modern",
            Gateway::Supergateway => "supergateway",
            Gateway::McpProxyNpm => "mcp-proxy-npm",
            Gateway::McpProxyPy => "mcp-proxy-py",
            Gateway::Fastmcp => "fastmcp",
        }
    }

    /// How the tables name it.
    pub fn label(self) -> &'static str {
        match self {
            Gateway::Direct => "direct stdio (no gateway; the baseline)",
            Gateway::Ours => "**ours** (`switchboard serve --http`), legacy era",
            Gateway::OursModern => "ours, 2026-07-28 era (reference)",
            Gateway::Supergateway => "supergateway 4.0.0 (npm), `--stateful`",
            Gateway::McpProxyNpm => "mcp-proxy 6.7.19 (npm, punkpeye)",
            Gateway::McpProxyPy => "mcp-proxy 0.13.0 (PyPI, sparfenyuk)",
            Gateway::Fastmcp => "FastMCP 4.2.3 proxy (PyPI, `create_proxy`)",
        }
    }

    /// The era the load driver speaks to it.
    pub fn era(self) -> EraArg {
        match self {
            Gateway::OursModern => EraArg::Modern,
            _ => EraArg::Legacy,
        }
    }

    /// Whether the memory measurement applies (the modern era has no sessions to hold).
    pub fn has_sessions(self) -> bool {
        !matches!(self, Gateway::Direct | Gateway::OursModern)
    }
}

/// Where the gateways are (derived from the repository root and the driver's paths).
#[derive(Debug, Clone)]
pub struct GatewayPaths {
    node: PathBuf,
    loopback: PathBuf,
    supergateway: PathBuf,
    mcp_proxy_npm: PathBuf,
    mcp_proxy_py: PathBuf,
    fastmcp_python: PathBuf,
    fastmcp_proxy: PathBuf,
    cli: PathBuf,
    bench: PathBuf,
    config: PathBuf,
}

impl GatewayPaths {
    /// From the driver's paths.
    pub fn new(paths: &Paths) -> GatewayPaths {
        let gateways = paths.root.join("target/peers/gateways");
        GatewayPaths {
            node: paths.node.clone(),
            loopback: paths.loopback.clone(),
            supergateway: gateways.join("npm/node_modules/supergateway/dist/index.js"),
            mcp_proxy_npm: gateways.join("npm/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs"),
            mcp_proxy_py: gateways.join("mcp-proxy-venv/bin/mcp-proxy"),
            fastmcp_python: gateways.join("fastmcp-venv/bin/python"),
            fastmcp_proxy: paths.root.join("scripts/peers/fastmcp_proxy.py"),
            cli: paths.cli.clone(),
            bench: paths.bench.clone(),
            config: paths.out_dir.join("gateway-peers-mcp.json"),
        }
    }

    /// What `gateway` needs that is missing, if anything.
    pub fn missing(&self, gateway: Gateway) -> Option<String> {
        let needed: Vec<&Path> = match gateway {
            Gateway::Direct => vec![],
            Gateway::Ours | Gateway::OursModern => vec![&self.cli],
            Gateway::Supergateway => vec![&self.node, &self.loopback, &self.supergateway],
            Gateway::McpProxyNpm => vec![&self.node, &self.loopback, &self.mcp_proxy_npm],
            Gateway::McpProxyPy => vec![&self.mcp_proxy_py],
            Gateway::Fastmcp => vec![&self.fastmcp_python, &self.fastmcp_proxy],
        };
        needed.into_iter().find(|p| !p.exists()).map(|p| {
            format!(
                "{SCENARIO_ID}/{}: {} is missing (scripts/peers.sh installs it)",
                gateway.name(),
                p.display()
            )
        })
    }

    /// The upstream server's command line, the same behind every gateway.
    fn upstream(&self) -> Vec<String> {
        vec![
            self.bench.to_string_lossy().into_owned(),
            "trivial-server".into(),
        ]
    }

    /// Writes our gateway's mcp.json: the upstream as `trivial`.
    pub fn write_config(&self) -> anyhow::Result<()> {
        let upstream = self.upstream();
        let config = json!({"mcpServers": {"trivial": {
            "command": upstream[0],
            "args": &upstream[1..],
        }}});
        std::fs::write(&self.config, serde_json::to_string_pretty(&config)?)
            .with_context(|| format!("writing {}", self.config.display()))
    }

    /// Our gateway's command line on 127.0.0.1:`port` in front of the upstream, its caps
    /// left at their defaults.
    pub fn plain_gateway_argv(&self, port: u16) -> Vec<String> {
        vec![
            self.cli.to_string_lossy().into_owned(),
            "serve".into(),
            "--http".into(),
            format!("127.0.0.1:{port}"),
            "--config".into(),
            self.config.to_string_lossy().into_owned(),
            "--server".into(),
            "trivial".into(),
            "--no-prefix".into(),
        ]
    }

    /// The command line of `gateway` listening on 127.0.0.1:`port` (`None` for the baseline).
    pub fn gateway_argv(&self, gateway: Gateway, port: u16) -> Option<Vec<String>> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let upstream = self.upstream();
        let argv = match gateway {
            Gateway::Direct => return None,
            Gateway::Ours | Gateway::OursModern => {
                let mut argv = self.plain_gateway_argv(port);
                argv.extend(
                    [
                        // Its per-client limits are for clients on a network; here every session
                        // comes from one loopback address, unauthenticated (the peers have no such
                        // limits). Raised past what the scenario opens.
                        "--max-sessions",
                        "4096",
                        "--max-sessions-per-client",
                        "4096",
                        "--max-connections",
                        "8192",
                        "--max-connections-per-client",
                        "8192",
                        "--max-in-flight",
                        "4096",
                        "--max-in-flight-per-client",
                        "4096",
                        "--max-streams-per-client",
                        "4096",
                        "--max-unauthenticated-per-client",
                        "1024",
                    ]
                    .map(String::from),
                );
                argv
            }
            Gateway::Supergateway => vec![
                s(&self.node),
                "--require".into(),
                s(&self.loopback),
                s(&self.supergateway),
                "--stdio".into(),
                upstream.join(" "),
                "--outputTransport".into(),
                "streamableHttp".into(),
                "--stateful".into(),
                "--port".into(),
                port.to_string(),
                "--logLevel".into(),
                "none".into(),
            ],
            Gateway::McpProxyNpm => {
                let mut argv = vec![
                    s(&self.node),
                    "--require".into(),
                    s(&self.loopback),
                    s(&self.mcp_proxy_npm),
                    "--host".into(),
                    "127.0.0.1".into(),
                    "--port".into(),
                    port.to_string(),
                    "--server".into(),
                    "stream".into(),
                    "--".into(),
                ];
                argv.extend(upstream);
                argv
            }
            Gateway::McpProxyPy => {
                let mut argv = vec![
                    s(&self.mcp_proxy_py),
                    "--host".into(),
                    "127.0.0.1".into(),
                    "--port".into(),
                    port.to_string(),
                    "--log-level".into(),
                    "WARNING".into(),
                ];
                argv.extend(upstream);
                argv
            }
            Gateway::Fastmcp => {
                let mut argv = vec![
                    s(&self.fastmcp_python),
                    s(&self.fastmcp_proxy),
                    "--port".into(),
                    port.to_string(),
                    "--".into(),
                ];
                argv.extend(upstream);
                argv
            }
        };
        Some(argv)
    }
}

/// What one `gateway-load` run measured (one JSON line on stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadResult {
    /// Sessions asked for.
    pub sessions: usize,
    /// Sessions that could not be opened.
    pub sessions_failed: usize,
    /// Calls that failed during the window (their session stopped there).
    pub calls_failed: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Calls answered in the window.
    pub calls: u64,
    /// Wall time of the window (until the last call in flight was answered), in seconds.
    pub elapsed_s: f64,
    /// `calls / elapsed_s`.
    pub calls_per_s: f64,
    /// Median latency of a call, in microseconds.
    pub p50_us: f64,
    /// 99th percentile, in microseconds.
    pub p99_us: f64,
    /// Time to open every session, in milliseconds.
    pub connect_ms: f64,
    /// CPU seconds (user + system) the gateway's tree used in the window.
    pub gateway_cpu_s: Option<f64>,
    /// CPU seconds the load driver itself used in the window.
    #[serde(default)]
    pub driver_cpu_s: f64,
    /// Upstream server processes in the gateway's tree after the window.
    pub upstream_processes: Option<usize>,
    /// The protocol version negotiated (first session).
    pub protocol: Option<String>,
}

/// What one `gateway-load --idle-sessions M` run measured (one JSON line on stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryResult {
    /// The gateway tree's RSS before any client, in KiB.
    pub idle_rss_kib: u64,
    /// After one session made 100 calls, in KiB.
    pub base_rss_kib: u64,
    /// With the idle sessions open too, in KiB.
    pub loaded_rss_kib: u64,
    /// Idle sessions asked for.
    pub sessions: usize,
    /// Idle sessions that could not be opened.
    pub sessions_failed: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Upstream server processes in the tree with the sessions open.
    pub upstream_processes: usize,
    /// Their RSS summed, in KiB.
    pub upstream_rss_kib: u64,
}

impl MemoryResult {
    /// (loaded − base) per open session, in KiB.
    pub fn per_session_kib(&self) -> Option<f64> {
        let open = self.sessions.checked_sub(self.sessions_failed)?;
        (open > 0).then(|| (self.loaded_rss_kib as f64 - self.base_rss_kib as f64) / open as f64)
    }

    /// The upstream servers' RSS per open session, in KiB.
    pub fn upstream_per_session_kib(&self) -> Option<f64> {
        let open = self.sessions.checked_sub(self.sessions_failed)?;
        (open > 0).then(|| self.upstream_rss_kib as f64 / open as f64)
    }
}

/// One process of a gateway's tree.
#[derive(Debug, Clone)]
struct TreeProcess {
    ticks: u64,
    rss_kib: u64,
    /// An upstream server, a shell wrapping one, or a descendant of either.
    upstream: bool,
    /// Runs the upstream program itself.
    server: bool,
}

/// USER_HZ: the unit of `utime`/`stime` in `/proc/PID/stat` (100 on every Linux ABI the
/// benchmarks run on).
const TICKS_PER_SECOND: f64 = 100.0;

/// `(ppid, utime + stime)` from `/proc/PID/stat`.
fn stat_of(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

fn rss_kib_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The program `pid` runs.
fn exe_of(pid: u32) -> Option<PathBuf> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let text = exe.to_string_lossy();
    Some(PathBuf::from(text.trim_end_matches(" (deleted)")))
}

/// Whether `exe` is a shell (in a gateway's tree, the wrapper a peer starts its upstream
/// command in).
fn is_shell(exe: &Path) -> bool {
    matches!(
        exe.file_name().and_then(|n| n.to_str()),
        Some("sh" | "dash" | "bash")
    )
}

/// The process tree under `root` (itself included), upstream servers marked.
fn tree(root: u32, upstream_exe: Option<&Path>) -> Vec<TreeProcess> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut ticks: HashMap<u32, u64> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some((ppid, t)) = stat_of(pid) {
                children.entry(ppid).or_default().push(pid);
                ticks.insert(pid, t);
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![(root, false)];
    while let Some((pid, inherited)) = stack.pop() {
        let Some(&t) = ticks.get(&pid) else { continue };
        let exe = if pid == root { None } else { exe_of(pid) };
        let server = exe
            .as_deref()
            .zip(upstream_exe)
            .is_some_and(|(exe, upstream)| exe == upstream);
        let upstream = inherited || server || exe.as_deref().is_some_and(is_shell);
        out.push(TreeProcess {
            ticks: t,
            rss_kib: rss_kib_of(pid),
            upstream,
            server,
        });
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            stack.push((child, upstream));
        }
    }
    out
}

/// The gateway's own CPU seconds so far (the tree without the upstream servers).
fn gateway_cpu_s(root: u32, upstream_exe: Option<&Path>) -> f64 {
    tree(root, upstream_exe)
        .iter()
        .filter(|p| !p.upstream)
        .map(|p| p.ticks)
        .sum::<u64>() as f64
        / TICKS_PER_SECOND
}

/// (gateway RSS in KiB, upstream servers, their tree's RSS in KiB).
pub(crate) fn tree_memory(root: u32, upstream_exe: Option<&Path>) -> (u64, usize, u64) {
    let all = tree(root, upstream_exe);
    let gateway = all.iter().filter(|p| !p.upstream).map(|p| p.rss_kib).sum();
    let servers = all.iter().filter(|p| p.server).count();
    let upstream = all.iter().filter(|p| p.upstream).map(|p| p.rss_kib).sum();
    (gateway, servers, upstream)
}

/// This process's CPU seconds so far (user + system).
fn own_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

/// `switchboard-bench gateway-load`: a load run, or with `--idle-sessions` the memory
/// measurement; prints one JSON line.
pub fn main(args: &GatewayLoadArgs) -> anyhow::Result<String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    if args.idle_sessions > 0 {
        let result = runtime.block_on(memory(args))?;
        return Ok(serde_json::to_string(&result)?);
    }
    let result = runtime.block_on(load(args))?;
    Ok(serde_json::to_string(&result)?)
}

fn config(era: EraArg) -> SessionConfig {
    let mut config = SessionConfig::new("bench");
    config.era = era.choice();
    config
}

/// Opens one session: to `--url`, or a stdio session to a fresh `--server`.
async fn open(args: &GatewayLoadArgs) -> anyhow::Result<Session> {
    let session = if let Some(url) = &args.url {
        Session::connect_http(HttpOptions::new("bench", url), config(args.era))
            .await
            .with_context(|| format!("connecting to {url}"))?
    } else {
        let Some((program, rest)) = args.server.split_first() else {
            bail!("--url or --server is needed");
        };
        let spec = ProcessSpec {
            program: program.clone(),
            args: rest.to_vec(),
            env: Vec::new(),
            cwd: None,
            sandbox: None,
        };
        Session::spawn_stdio(&spec, StdioOptions::new("bench"), config(args.era))
            .await
            .with_context(|| format!("starting {program}"))?
    };
    Ok(session)
}

/// Opens `count` sessions, at most `--connect-parallel` handshakes at a time, each bounded
/// by `--connect-timeout-s`; the failures are returned as text.
async fn open_many(args: &Arc<GatewayLoadArgs>, count: usize) -> (Vec<Session>, Vec<String>) {
    let gate = Arc::new(Semaphore::new(args.connect_parallel.max(1)));
    let timeout = Duration::from_secs(args.connect_timeout_s);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut tasks = JoinSet::new();
    for _ in 0..count {
        let gate = gate.clone();
        let args = args.clone();
        tasks.spawn(async move {
            tokio::time::timeout_at(deadline, async {
                let _permit = gate.acquire_owned().await?;
                open(&args).await
            })
            .await
            .map_err(|_| {
                anyhow::anyhow!("the session was not open {timeout:?} after the first began")
            })?
        });
    }
    let mut sessions = Vec::with_capacity(count);
    let mut errors = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(session)) => sessions.push(session),
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(e) => errors.push(format!("a connecting task failed: {e}")),
        }
    }
    (sessions, errors)
}

/// Closes every session (concurrently, bounded).
async fn close_all(sessions: Vec<Session>) {
    let mut tasks = JoinSet::new();
    for session in sessions {
        tasks.spawn(async move { session.shutdown(ShutdownGrace::default()).await });
    }
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
}

/// Longest one call may take before its session counts it failed and stops.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest warm-up: slow gateways at many sessions warm up for this long at most.
const WARMUP_LIMIT: Duration = Duration::from_secs(10);

/// One echo call, checked, bounded by [`CALL_TIMEOUT`].
async fn echo(session: &Session, arguments: &serde_json::Value) -> anyhow::Result<()> {
    let result = tokio::time::timeout(
        CALL_TIMEOUT,
        session.call_tool("echo", Some(arguments), &CallOptions::default()),
    )
    .await
    .map_err(|_| anyhow::anyhow!("no answer within {CALL_TIMEOUT:?}"))??;
    if result.is_error {
        bail!("the tool reported an error: {result:?}");
    }
    Ok(())
}

/// The load run.
async fn load(args: &GatewayLoadArgs) -> anyhow::Result<LoadResult> {
    let args = Arc::new(args.clone());
    let connect_started = Instant::now();
    let (sessions, errors) = open_many(&args, args.sessions).await;
    let connect_ms = connect_started.elapsed().as_secs_f64() * 1000.0;
    let mut first_error = errors.first().cloned();
    let Some(first) = sessions.first() else {
        bail!(
            "no session opened ({} failed): {}",
            errors.len(),
            first_error.unwrap_or_default()
        );
    };
    let protocol = Some(first.negotiated().protocol_version.clone());
    let arguments = json!({ "text": "hello" });
    // Warm-up: every session, concurrently, for at most WARMUP_LIMIT.
    let warmup_deadline = Instant::now() + WARMUP_LIMIT;
    let mut warmups = JoinSet::new();
    for session in &sessions {
        let session = session.clone();
        let arguments = arguments.clone();
        let count = args.warmup;
        warmups.spawn(async move {
            for _ in 0..count {
                if Instant::now() >= warmup_deadline {
                    break;
                }
                echo(&session, &arguments).await?;
            }
            anyhow::Ok(())
        });
    }
    let mut calls_failed = 0;
    while let Some(joined) = warmups.join_next().await {
        if let Err(e) = joined.context("a warm-up task failed").and_then(|r| r) {
            calls_failed += 1;
            first_error.get_or_insert(format!("warm-up: {e:#}"));
        }
    }
    let watch = args.gateway_pid;
    let upstream_exe = args.upstream_exe.clone();
    let cpu_before = watch.map(|pid| gateway_cpu_s(pid, upstream_exe.as_deref()));
    let driver_before = own_cpu_s();
    let window = Duration::from_secs_f64(args.seconds.max(0.01));
    let started = Instant::now();
    let deadline = started + window;
    let mut workers = JoinSet::new();
    let pace = args.rate.filter(|r| *r > 0.0).map(|rate| Pace {
        interval: Duration::from_secs_f64(sessions.len() as f64 / rate),
        sessions: sessions.len() as u32,
    });
    for (index, session) in sessions.iter().enumerate() {
        let session = session.clone();
        let arguments = arguments.clone();
        let cap = args.max_calls;
        let mut schedule = pace.map(|pace| pace.schedule(started, index as u32));
        workers.spawn(async move {
            let mut latencies = Vec::new();
            let mut error = None;
            while (latencies.len() as u64) < cap && Instant::now() < deadline {
                let t = match &mut schedule {
                    None => Instant::now(),
                    Some(schedule) => match schedule.next(deadline).await {
                        Some(from) => from,
                        None => break,
                    },
                };
                match echo(&session, &arguments).await {
                    Ok(()) => latencies.push(t.elapsed().as_nanos() as u64),
                    Err(e) => {
                        error = Some(format!("{e:#}"));
                        break;
                    }
                }
            }
            (latencies, error)
        });
    }
    let mut latencies = Vec::new();
    while let Some(joined) = workers.join_next().await {
        let (mine, error) = joined.context("a load task failed")?;
        latencies.extend(mine);
        if let Some(e) = error {
            calls_failed += 1;
            first_error.get_or_insert(e);
        }
    }
    let elapsed = started.elapsed();
    let driver_cpu_s = own_cpu_s() - driver_before;
    let cpu_after = watch.map(|pid| gateway_cpu_s(pid, upstream_exe.as_deref()));
    let upstream_processes = watch.map(|pid| tree_memory(pid, upstream_exe.as_deref()).1);
    close_all(sessions).await;
    let summary = RunResult::from_latencies(
        "ours",
        args.sessions as u64,
        elapsed,
        &mut latencies,
        Duration::ZERO,
        protocol.clone(),
    );
    Ok(LoadResult {
        sessions: args.sessions,
        sessions_failed: errors.len(),
        calls_failed,
        first_error,
        calls: summary.calls,
        elapsed_s: summary.elapsed_s,
        calls_per_s: summary.calls_per_s,
        p50_us: summary.p50_us,
        p99_us: summary.p99_us,
        connect_ms,
        gateway_cpu_s: cpu_before.zip(cpu_after).map(|(b, a)| a - b),
        driver_cpu_s,
        upstream_processes,
        protocol,
    })
}

/// An open loop's spacing: one call per `interval` on each of `sessions` sessions.
#[derive(Debug, Clone, Copy)]
struct Pace {
    interval: Duration,
    sessions: u32,
}

impl Pace {
    /// Session `index`'s calls: offset by its share of the interval, so that the calls of
    /// all the sessions arrive evenly rather than in bursts.
    fn schedule(self, started: Instant, index: u32) -> Schedule {
        Schedule {
            next: started + self.interval * index / self.sessions.max(1),
            interval: self.interval,
        }
    }
}

/// One session's set call times.
struct Schedule {
    next: Instant,
    interval: Duration,
}

impl Schedule {
    /// Waits for the next call's set time and returns when its latency counts from:
    /// the set time when the session's previous call was still in flight past it (the
    /// wait is the system's), else the moment the call goes out (the driver's own timer
    /// lateness is not the system's); `None` once the set time is past `deadline`.
    async fn next(&mut self, deadline: Instant) -> Option<Instant> {
        let set = self.next;
        if set >= deadline {
            return None;
        }
        self.next = set + self.interval;
        let now = Instant::now();
        if now > set {
            return Some(set);
        }
        tokio::time::sleep_until(set.into()).await;
        Some(Instant::now())
    }
}

/// The memory measurement.
async fn memory(args: &GatewayLoadArgs) -> anyhow::Result<MemoryResult> {
    let Some(pid) = args.gateway_pid else {
        bail!("--idle-sessions needs --gateway-pid");
    };
    let upstream_exe = args.upstream_exe.clone();
    let rss = || tree_memory(pid, upstream_exe.as_deref());
    let idle_rss_kib = rss().0;
    let args = Arc::new(args.clone());
    let first = open(&args).await.context("opening the first session")?;
    let arguments = json!({ "text": "hello" });
    for _ in 0..100 {
        echo(&first, &arguments).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base_rss_kib = rss().0;
    let (sessions, errors) = open_many(&args, args.idle_sessions).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (loaded_rss_kib, upstream_processes, upstream_rss_kib) = rss();
    let mut all = sessions;
    all.push(first);
    close_all(all).await;
    Ok(MemoryResult {
        idle_rss_kib,
        base_rss_kib,
        loaded_rss_kib,
        sessions: args.idle_sessions,
        sessions_failed: errors.len(),
        first_error: errors.first().cloned(),
        upstream_processes,
        upstream_rss_kib,
    })
}

/// The scenario's sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeersSettings {
    /// Rounds (each gateway started afresh in each).
    pub rounds: usize,
    /// The timed window of each load run, in seconds.
    pub window_s: f64,
    /// Warm-up calls per session.
    pub warmup: u64,
    /// Cap on calls per session in a window.
    pub max_calls: u64,
    /// Session counts of the load runs.
    pub session_counts: Vec<usize>,
    /// Idle sessions in the memory measurement.
    pub idle_sessions: usize,
    /// Calls of the Python SDK client's run (sequential, one session).
    pub foreign_calls: u64,
}

impl PeersSettings {
    /// The sizes of a full or a smoke run.
    pub fn new(smoke: bool, rounds: usize) -> PeersSettings {
        if smoke {
            PeersSettings {
                rounds: 1,
                window_s: 0.5,
                warmup: 3,
                max_calls: 2_000,
                session_counts: vec![1, 16],
                idle_sessions: 50,
                foreign_calls: 50,
            }
        } else {
            PeersSettings {
                rounds: rounds.clamp(1, 3),
                window_s: 3.0,
                warmup: 20,
                max_calls: 200_000,
                session_counts: SESSION_COUNTS.to_vec(),
                idle_sessions: IDLE_SESSIONS,
                foreign_calls: 300,
            }
        }
    }
}

/// One load run in the results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSample {
    /// The round (from 1).
    pub round: usize,
    /// The gateway.
    pub gateway: Gateway,
    /// Sessions.
    pub sessions: usize,
    /// What it measured, if it ran.
    pub result: Option<LoadResult>,
    /// Why it did not, if it did not.
    pub error: Option<String>,
}

/// One Python SDK client run in the results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForeignSample {
    /// The round (from 1).
    pub round: usize,
    /// The gateway.
    pub gateway: Gateway,
    /// What it printed, if it ran.
    pub result: Option<RunResult>,
    /// Why it did not, if it did not.
    pub error: Option<String>,
}

/// One memory measurement in the results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemorySample {
    /// The gateway.
    pub gateway: Gateway,
    /// What it measured, if it ran.
    pub result: Option<MemoryResult>,
    /// Why it did not, if it did not.
    pub error: Option<String>,
}

/// Everything scenario 10 produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeersRun {
    /// Its sizes.
    pub settings: PeersSettings,
    /// The peers' versions (from their installed package files).
    pub versions: BTreeMap<String, String>,
    /// Every load run.
    pub loads: Vec<LoadSample>,
    /// Every Python SDK client run.
    pub foreign: Vec<ForeignSample>,
    /// The memory measurements.
    pub memory: Vec<MemorySample>,
    /// `/proc/loadavg` at the start of each round and at the end.
    pub load: Vec<(String, String)>,
    /// The open-loop rate (calls/s) of the paced runs: the fastest peer's median calls/s
    /// at [`PACED_SESSIONS`] sessions.
    #[serde(default)]
    pub paced_rate: Option<f64>,
    /// The paced runs: ours and the direct baseline, open loop at `paced_rate`.
    #[serde(default)]
    pub paced: Vec<LoadSample>,
}

/// The median of one gateway's load runs at one session count.
#[derive(Debug, Clone)]
pub struct LoadSummary {
    /// Successful rounds.
    pub rounds: usize,
    /// Failed rounds (or rounds with failed sessions or calls).
    pub failures: usize,
    /// Median calls/s.
    pub calls_per_s: f64,
    /// Median p50 (µs).
    pub p50_us: f64,
    /// Median p99 (µs).
    pub p99_us: f64,
    /// Median gateway CPU seconds per 10,000 calls.
    pub cpu_s_per_10k: Option<f64>,
    /// Upstream processes seen (largest).
    pub upstream_processes: Option<usize>,
    /// The first error seen, if any.
    pub first_error: Option<String>,
}

impl PeersRun {
    /// The median over the rounds of `gateway` at `sessions` (`None` when nothing ran).
    pub fn summary(&self, gateway: Gateway, sessions: usize) -> Option<LoadSummary> {
        summarise(&self.loads, gateway, sessions)
    }

    /// The median over the rounds of `gateway`'s paced runs (`None` when none ran).
    pub fn paced_summary(&self, gateway: Gateway) -> Option<LoadSummary> {
        summarise(&self.paced, gateway, PACED_SESSIONS)
    }

    /// The fastest peer at `sessions` sessions and its median.
    pub fn fastest_peer(&self, sessions: usize) -> Option<(Gateway, LoadSummary)> {
        Gateway::ALL
            .into_iter()
            .filter(|g| g.is_peer())
            .filter_map(|g| Some((g, self.summary(g, sessions)?)))
            .filter(|(_, s)| s.rounds > 0 && s.calls_per_s.is_finite())
            .max_by(|a, b| a.1.calls_per_s.total_cmp(&b.1.calls_per_s))
    }

    /// The median calls/s of the Python SDK client through `gateway`.
    pub fn foreign_calls_per_s(&self, gateway: Gateway) -> Option<f64> {
        let values: Vec<f64> = self
            .foreign
            .iter()
            .filter(|s| s.gateway == gateway)
            .filter_map(|s| s.result.as_ref().map(|r| r.calls_per_s))
            .collect();
        (!values.is_empty()).then(|| stats::median(&values))
    }

    /// The first error of the Python SDK client through `gateway`.
    pub fn foreign_error(&self, gateway: Gateway) -> Option<&str> {
        self.foreign
            .iter()
            .filter(|s| s.gateway == gateway)
            .find_map(|s| s.error.as_deref())
    }

    /// The memory measurement of `gateway`.
    pub fn memory_of(&self, gateway: Gateway) -> Option<&MemorySample> {
        self.memory.iter().find(|m| m.gateway == gateway)
    }
}

/// The median over the rounds of `gateway` at `sessions` among `samples`.
fn summarise(samples: &[LoadSample], gateway: Gateway, sessions: usize) -> Option<LoadSummary> {
    let runs: Vec<&LoadSample> = samples
        .iter()
        .filter(|s| s.gateway == gateway && s.sessions == sessions)
        .collect();
    if runs.is_empty() {
        return None;
    }
    let ok: Vec<&LoadResult> = runs.iter().filter_map(|s| s.result.as_ref()).collect();
    let failures = runs
        .iter()
        .filter(|s| {
            s.result
                .as_ref()
                .is_none_or(|r| r.sessions_failed > 0 || r.calls_failed > 0)
        })
        .count();
    let first_error = runs.iter().find_map(|s| {
        s.error
            .clone()
            .or_else(|| s.result.as_ref().and_then(|r| r.first_error.clone()))
    });
    let med = |f: &dyn Fn(&LoadResult) -> f64| {
        stats::median(&ok.iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    let cpu: Vec<f64> = ok
        .iter()
        .filter(|r| r.calls > 0)
        .filter_map(|r| r.gateway_cpu_s.map(|c| c / r.calls as f64 * 10_000.0))
        .collect();
    Some(LoadSummary {
        rounds: ok.len(),
        failures,
        calls_per_s: med(&|r| r.calls_per_s),
        p50_us: med(&|r| r.p50_us),
        p99_us: med(&|r| r.p99_us),
        cpu_s_per_10k: (!cpu.is_empty()).then(|| stats::median(&cpu)),
        upstream_processes: ok.iter().filter_map(|r| r.upstream_processes).max(),
        first_error,
    })
}

/// The installed peers' versions, read from their package files.
fn versions(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let gateways = root.join("target/peers/gateways");
    for (name, file) in [
        ("supergateway", "npm/node_modules/supergateway/package.json"),
        ("mcp-proxy (npm)", "npm/node_modules/mcp-proxy/package.json"),
    ] {
        let version = std::fs::read_to_string(gateways.join(file))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("version")?.as_str().map(str::to_owned));
        if let Some(v) = version {
            out.insert(name.to_owned(), v);
        }
    }
    for (name, venv, package) in [
        ("mcp-proxy (PyPI)", "mcp-proxy-venv", "mcp_proxy"),
        ("fastmcp (PyPI)", "fastmcp-venv", "fastmcp"),
        ("mcp (under fastmcp)", "fastmcp-venv", "mcp"),
        ("mcp (under mcp-proxy)", "mcp-proxy-venv", "mcp"),
    ] {
        let site = gateways.join(venv).join("lib");
        let found = std::fs::read_dir(&site)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok()))
            .map(|python| python.path().join("site-packages"))
            .and_then(|site| std::fs::read_dir(site).ok())
            .and_then(|entries| {
                entries.flatten().find_map(|e| {
                    let file = e.file_name().to_string_lossy().into_owned();
                    let rest = file.strip_prefix(&format!("{package}-"))?;
                    let version = rest.strip_suffix(".dist-info")?;
                    version
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit())
                        .then(|| version.to_owned())
                })
            });
        if let Some(v) = found {
            out.insert(name.to_owned(), v);
        }
    }
    out
}

/// A gateway the driver started, with the pid the measurements watch.
struct Running {
    server: HttpServer,
    pid: u32,
}

fn start(gateways: &GatewayPaths, gateway: Gateway, log: &Path) -> anyhow::Result<Option<Running>> {
    let port = free_port()?;
    let Some(argv) = gateways.gateway_argv(gateway, port) else {
        return Ok(None);
    };
    let (program, rest) = argv.split_first().context("empty gateway command")?;
    let log_file =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = Command::new(program);
    command.args(rest).stderr(log_file);
    let server = HttpServer::spawn(command, port)
        .with_context(|| format!("starting {} (see {})", gateway.name(), log.display()))?;
    let pid = server.pid();
    Ok(Some(Running { server, pid }))
}

/// The paced runs: ours and the direct baseline at [`PACED_SESSIONS`] sessions, open loop
/// at the fastest peer's median calls/s there, every round (on a fresh gateway each), so
/// that the latency ours adds is measured at a load every gateway of the scenario can
/// carry rather than behind a queue of its own making. Nothing runs when no peer did.
fn paced_runs(paths: &Paths, gateways: &[Gateway], run: &mut PeersRun, timeout: Duration) {
    let Some((_, fastest)) = run.fastest_peer(PACED_SESSIONS) else {
        return;
    };
    let rate = fastest.calls_per_s.round();
    run.paced_rate = Some(rate);
    let places = GatewayPaths::new(paths);
    let logs = paths.out_dir.join("logs");
    let paced = [Gateway::Direct, Gateway::Ours];
    for round in 1..=run.settings.rounds {
        for &gateway in paced.iter().filter(|g| gateways.contains(g)) {
            let server_log = logs.join(format!(
                "gateway-peers-{}-paced.server.stderr",
                gateway.name()
            ));
            let log = logs.join(format!("gateway-peers-{}-paced.stderr", gateway.name()));
            let outcome = start(&places, gateway, &server_log).and_then(|running| {
                let argv = load_argv(
                    paths,
                    &places,
                    gateway,
                    running.as_ref(),
                    PACED_SESSIONS,
                    &run.settings,
                );
                let argv = with_option(argv, "--rate", &rate.to_string());
                let outcome = run_bounded(&argv, &log, timeout)
                    .and_then(|out| parse_line::<LoadResult>(&out));
                drop(running);
                outcome
            });
            match &outcome {
                Ok(r) => eprintln!(
                    "bench: gateway-peers paced round {round} {:<14} {PACED_SESSIONS} sessions at {rate} calls/s: {:>9.0} calls/s  p50 {:>9.1} µs  p99 {:>9.1} µs",
                    gateway.name(),
                    r.calls_per_s,
                    r.p50_us,
                    r.p99_us,
                ),
                Err(e) => eprintln!(
                    "bench: gateway-peers paced round {round} {} FAILED: {e:#}",
                    gateway.name()
                ),
            }
            let (result, error) = split(outcome);
            run.paced.push(LoadSample {
                round,
                gateway,
                sessions: PACED_SESSIONS,
                result,
                error,
            });
        }
    }
}

/// The `gateway-load` command line against `gateway` (running as `running`).
fn load_argv(
    paths: &Paths,
    gateways: &GatewayPaths,
    gateway: Gateway,
    running: Option<&Running>,
    sessions: usize,
    settings: &PeersSettings,
) -> Vec<String> {
    let mut argv = vec![
        paths.bench.to_string_lossy().into_owned(),
        "gateway-load".into(),
        "--era".into(),
        gateway.era().flag().into(),
        "--sessions".into(),
        sessions.to_string(),
        "--seconds".into(),
        settings.window_s.to_string(),
        "--warmup".into(),
        settings.warmup.to_string(),
        "--max-calls".into(),
        settings.max_calls.to_string(),
        "--upstream-exe".into(),
        gateways.bench.to_string_lossy().into_owned(),
    ];
    match running {
        Some(running) => argv.extend([
            "--url".into(),
            running.server.url.clone(),
            "--gateway-pid".into(),
            running.pid.to_string(),
        ]),
        None => {
            argv.push("--server".into());
            argv.extend(gateways.upstream());
        }
    }
    argv
}

/// `argv` (a `gateway-load` command line) with one more option, put right after the
/// subcommand: a direct run's `--server` takes every argument after it as the server's.
fn with_option(mut argv: Vec<String>, name: &str, value: &str) -> Vec<String> {
    let at = argv.len().min(2);
    argv.splice(at..at, [name.to_owned(), value.to_owned()]);
    argv
}

/// A run's outcome as the results keep it: what it measured, or why it did not.
fn split<T>(outcome: anyhow::Result<T>) -> (Option<T>, Option<String>) {
    match outcome {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    }
}

/// The last JSON line of a command's stdout, parsed.
pub fn parse_line<T: for<'de> Deserialize<'de>>(stdout: &str) -> anyhow::Result<T> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .context("no JSON line on stdout")?;
    serde_json::from_str(line).with_context(|| format!("parsing {line:?}"))
}

/// Runs the scenario: `gateways` (those whose peers are installed) in rotating order every
/// round, then the memory measurement of each.
pub fn run_scenario(
    paths: &Paths,
    gateways: &[Gateway],
    settings: &PeersSettings,
    timeout: Duration,
) -> anyhow::Result<PeersRun> {
    let logs = paths.out_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let places = GatewayPaths::new(paths);
    places.write_config()?;
    let mut run = PeersRun {
        settings: settings.clone(),
        versions: versions(&paths.root),
        loads: Vec::new(),
        foreign: Vec::new(),
        memory: Vec::new(),
        load: Vec::new(),
        paced_rate: None,
        paced: Vec::new(),
    };
    for round in 1..=settings.rounds {
        run.load
            .push((format!("gateway-peers round {round}"), loadavg()));
        let mut order = gateways.to_vec();
        let n = order.len().max(1);
        order.rotate_left(round % n);
        for gateway in order {
            let server_log = logs.join(format!("gateway-peers-{}.server.stderr", gateway.name()));
            let running = match start(&places, gateway, &server_log) {
                Ok(running) => running,
                Err(e) => {
                    eprintln!(
                        "bench: gateway-peers round {round} {} FAILED: {e:#}",
                        gateway.name()
                    );
                    for &sessions in &settings.session_counts {
                        run.loads.push(LoadSample {
                            round,
                            gateway,
                            sessions,
                            result: None,
                            error: Some(format!("{e:#}")),
                        });
                    }
                    continue;
                }
            };
            for &sessions in &settings.session_counts {
                let argv = load_argv(
                    paths,
                    &places,
                    gateway,
                    running.as_ref(),
                    sessions,
                    settings,
                );
                let log = logs.join(format!(
                    "gateway-peers-{}-{sessions}.stderr",
                    gateway.name()
                ));
                let outcome = run_bounded(&argv, &log, timeout)
                    .and_then(|out| parse_line::<LoadResult>(&out));
                match &outcome {
                    Ok(r) => eprintln!(
                        "bench: gateway-peers round {round} {:<14} {sessions:>4} sessions {:>9.0} calls/s  p50 {:>9.1} µs  p99 {:>9.1} µs  cpu {}{}",
                        gateway.name(),
                        r.calls_per_s,
                        r.p50_us,
                        r.p99_us,
                        r.gateway_cpu_s.map_or("–".into(), |c| format!("{c:.2} s")),
                        r.first_error
                            .as_ref()
                            .map_or(String::new(), |e| format!("  FAILURES: {e}")),
                    ),
                    Err(e) => eprintln!(
                        "bench: gateway-peers round {round} {} {sessions} sessions FAILED: {e:#}",
                        gateway.name()
                    ),
                }
                let (result, error) = split(outcome);
                run.loads.push(LoadSample {
                    round,
                    gateway,
                    sessions,
                    result,
                    error,
                });
            }
            if let Some(running) = &running
                && gateway != Gateway::OursModern
            {
                let argv = vec![
                    paths.python.to_string_lossy().into_owned(),
                    paths.py_client.to_string_lossy().into_owned(),
                    "--calls".into(),
                    settings.foreign_calls.to_string(),
                    "--warmup".into(),
                    settings.warmup.to_string(),
                    "--url".into(),
                    running.server.url.clone(),
                ];
                let log = logs.join(format!("gateway-peers-{}-py.stderr", gateway.name()));
                let outcome =
                    run_bounded(&argv, &log, timeout).and_then(|out| parse_line::<RunResult>(&out));
                match &outcome {
                    Ok(r) => eprintln!(
                        "bench: gateway-peers round {round} {:<14} python SDK client {:>7.0} calls/s",
                        gateway.name(),
                        r.calls_per_s
                    ),
                    Err(e) => eprintln!(
                        "bench: gateway-peers round {round} {} python SDK client FAILED: {e:#}",
                        gateway.name()
                    ),
                }
                let (result, error) = split(outcome);
                run.foreign.push(ForeignSample {
                    round,
                    gateway,
                    result,
                    error,
                });
            }
            drop(running);
        }
    }
    paced_runs(paths, gateways, &mut run, timeout);
    for &gateway in gateways.iter().filter(|g| g.has_sessions()) {
        let server_log = logs.join(format!(
            "gateway-peers-{}-memory.server.stderr",
            gateway.name()
        ));
        let outcome = start(&places, gateway, &server_log).and_then(|running| {
            let running = running.context("no gateway to measure")?;
            // Let a fresh interpreter finish starting before the idle figure.
            std::thread::sleep(Duration::from_secs(1));
            let argv = load_argv(paths, &places, gateway, Some(&running), 1, settings);
            let argv = with_option(argv, "--idle-sessions", &settings.idle_sessions.to_string());
            let log = logs.join(format!("gateway-peers-{}-memory.stderr", gateway.name()));
            let outcome =
                run_bounded(&argv, &log, timeout).and_then(|out| parse_line::<MemoryResult>(&out));
            drop(running);
            outcome
        });
        match &outcome {
            Ok(m) => eprintln!(
                "bench: gateway-peers memory {:<14} idle {} KiB, base {} KiB, {} sessions {} KiB ({:.1} KiB/session; {} upstream processes, {} KiB){}",
                gateway.name(),
                m.idle_rss_kib,
                m.base_rss_kib,
                m.sessions - m.sessions_failed,
                m.loaded_rss_kib,
                m.per_session_kib().unwrap_or(f64::NAN),
                m.upstream_processes,
                m.upstream_rss_kib,
                m.first_error.as_ref().map_or(String::new(), |e| format!(
                    "  FAILURES: {} ({e})",
                    m.sessions_failed
                )),
            ),
            Err(e) => eprintln!(
                "bench: gateway-peers memory {} FAILED: {e:#}",
                gateway.name()
            ),
        }
        let (result, error) = split(outcome);
        run.memory.push(MemorySample {
            gateway,
            result,
            error,
        });
    }
    run.load.push(("gateway-peers end".into(), loadavg()));
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::with_option;

    /// An option goes before a direct run's `--server`, which takes every argument after
    /// it as the server's own.
    #[test]
    fn options_go_before_the_server_command() {
        let direct = [
            "bench",
            "gateway-load",
            "--sessions",
            "256",
            "--server",
            "bench",
            "trivial-server",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            with_option(direct, "--rate", "2063").join(" "),
            "bench gateway-load --rate 2063 --sessions 256 --server bench trivial-server"
        );
    }
}
