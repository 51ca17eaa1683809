//! Scenario 11: one gateway holding ten thousand legacy sessions and ten thousand GET
//! streams, its memory per session and per stream, every session still served, and what
//! happens past the default session cap.
//!
//! The gateway: `switchboard serve --http 127.0.0.1:PORT --config … --server trivial
//! --no-prefix` in front of one stdio `switchboard-bench trivial-server` (the gateway of
//! scenario 10). Every connection of the driver comes from 127.0.0.1, unauthenticated: one
//! client as the gateway counts them, so for the scale run its per-client caps are raised
//! with the global ones ([`scale_caps`]: sessions, connections, streams, requests in flight
//! and, from its default of 16, the unauthenticated connections of one address).
//!
//! The driver (`switchboard-bench gateway-scale`, [`main`]) speaks HTTP itself (reqwest, one
//! connection pool) so that a session is what the gateway holds for it and no more: the
//! session client of the other scenarios opens a GET stream with every session.
//! - scale ([`ScalePhase::Scale`]): the gateway's RSS fresh; after a warm-up (the pool's
//!   connections open, a session per connection made calls and was deleted) the base; with
//!   N sessions open (`initialize` + `notifications/initialized` each, at most
//!   `--parallel` at a time, all on the pool's keep-alive connections) → KiB per idle
//!   session; with a GET stream open and held on each of them (a connection each) → KiB per
//!   stream; then one `tools/call echo` on every session (at most `--parallel` at a time)
//!   and the answers counted: every session must be served. `/healthz?detail` at the end
//!   says what the gateway counted.
//! - cap ([`ScalePhase::Cap`]): the gateway at its default `--max-sessions` (1024; only the
//!   per-client session cap raised to it, so that the global cap is the one reached): 1024
//!   sessions opened, each then used once in a known order (a ping), K more opened one by
//!   one; then every first session pinged again: the K evicted must be exactly the K least
//!   recently used, and every later one must answer.
//!
//! RSS is read from `/proc` (the gateway's tree without its upstream server, as scenario
//! 10 reads it). The driver raises its soft descriptor limit to the hard one (N streams
//! need N sockets on each side), and the `run` driver does the same before it starts the
//! gateway, which inherits it; both say so in the results.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::driver::{HttpServer, Paths, free_port, loadavg, run_bounded};
use crate::gateway_peers::{GatewayPaths, parse_line, tree_memory};

/// The scenario's id for `run --only` (matched exactly).
pub const SCENARIO_ID: &str = "gateway-scale";

/// Sessions (and GET streams) of the scale run.
pub const SESSIONS: usize = 10_000;

/// The gateway's default session cap (`serve --max-sessions`), reached in the cap run.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// Sessions opened past the default cap in the cap run.
pub const PAST_THE_CAP: usize = 100;

/// The goal: KiB of gateway memory per idle legacy session at [`SESSIONS`].
pub const GOAL_KIB_PER_IDLE_SESSION: f64 = 20.0;

/// Longest one driver run of the scenario may take (the `run` driver kills it then).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(900);

/// The protocol version the driver's sessions ask for.
const LEGACY_VERSION: &str = "2025-11-25";

/// Longest one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest the GET streams' heads may take to arrive, all of them.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(300);

/// Which run of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScalePhase {
    /// N sessions, N GET streams, a call on every session (the caps raised).
    Scale,
    /// Past the default session cap: which sessions are evicted.
    Cap,
}

/// Arguments of `gateway-scale` (the scenario's load driver).
#[derive(Debug, Clone, Args)]
pub struct GatewayScaleArgs {
    /// Which run.
    #[arg(long, value_enum)]
    pub phase: ScalePhase,
    /// The gateway's Streamable HTTP URL.
    #[arg(long)]
    pub url: String,
    /// The gateway's process (its tree's RSS is measured).
    #[arg(long)]
    pub gateway_pid: u32,
    /// The upstream server's program (its processes are not the gateway's).
    #[arg(long)]
    pub upstream_exe: Option<PathBuf>,
    /// Sessions (and GET streams) of the scale run; sessions up to the cap in the cap run.
    #[arg(long, default_value_t = SESSIONS)]
    pub sessions: usize,
    /// Sessions opened past the cap in the cap run.
    #[arg(long, default_value_t = PAST_THE_CAP)]
    pub past_the_cap: usize,
    /// Requests (or stream openings) in flight at once.
    #[arg(long, default_value_t = 64)]
    pub parallel: usize,
}

/// What the scale run measured (one JSON line on stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScaleResult {
    /// Sessions asked for.
    pub sessions: usize,
    /// The driver's descriptor limit (soft) while it ran, and whether it raised it.
    pub fd_limit: u64,
    /// The gateway's descriptor limit (soft), read from `/proc/PID/limits`.
    pub gateway_fd_limit: Option<u64>,
    /// The gateway tree's RSS fresh, in KiB.
    pub fresh_rss_kib: u64,
    /// After the warm-up (the pool's connections open), in KiB.
    pub base_rss_kib: u64,
    /// With the sessions open and idle, in KiB.
    pub sessions_rss_kib: u64,
    /// With a GET stream held on each, in KiB.
    pub streams_rss_kib: u64,
    /// After a call on every session (streams still held), in KiB.
    pub served_rss_kib: u64,
    /// Sessions opened (initialize answered with a session id, initialized accepted).
    pub sessions_opened: usize,
    /// GET streams open (200 `text/event-stream`) and still held at the end.
    pub streams_opened: usize,
    /// Sessions whose call was answered with the echo.
    pub served: usize,
    /// The first failure of each phase, if any.
    pub errors: Vec<String>,
    /// Seconds to open the sessions, the streams, and to serve the calls.
    pub open_s: f64,
    /// Seconds to open the streams.
    pub streams_s: f64,
    /// Seconds to make a call on every session.
    pub serve_s: f64,
    /// `/healthz?detail`'s `current` at the end (the gateway's own counts).
    pub health_current: Option<Value>,
}

impl ScaleResult {
    /// (sessions − base) per session opened, in KiB.
    pub fn kib_per_idle_session(&self) -> Option<f64> {
        (self.sessions_opened > 0).then(|| {
            (self.sessions_rss_kib as f64 - self.base_rss_kib as f64) / self.sessions_opened as f64
        })
    }

    /// (streams − sessions) per stream opened, in KiB.
    pub fn kib_per_stream(&self) -> Option<f64> {
        (self.streams_opened > 0).then(|| {
            (self.streams_rss_kib as f64 - self.sessions_rss_kib as f64)
                / self.streams_opened as f64
        })
    }

    /// Whether every session was opened, held its stream and was served.
    pub fn all_served(&self) -> bool {
        self.sessions_opened == self.sessions
            && self.streams_opened == self.sessions
            && self.served == self.sessions
    }
}

/// What the cap run measured (one JSON line on stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CapResult {
    /// Sessions opened up to the cap (the cap).
    pub at_cap: usize,
    /// Sessions opened past it, one by one.
    pub past_the_cap: usize,
    /// Of those, opened (initialize answered 200 with a session id).
    pub past_opened: usize,
    /// Sessions of the first batch that answered 404 afterwards (evicted).
    pub evicted: usize,
    /// Whether the evicted ones were exactly the least recently used.
    pub evicted_oldest_first: bool,
    /// Sessions of the first batch that still answered.
    pub still_served: usize,
    /// Every later session answered.
    pub later_served: usize,
    /// `/healthz?detail`: `current.sessions` and `evicted.sessions`.
    pub health_sessions: Option<u64>,
    /// The gateway's eviction count.
    pub health_evicted: Option<u64>,
    /// The first failure, if any.
    pub errors: Vec<String>,
}

impl CapResult {
    /// Whether the cap held as the flag's help says: K in, the K oldest out, the rest served.
    pub fn as_documented(&self) -> bool {
        self.past_opened == self.past_the_cap
            && self.evicted == self.past_the_cap
            && self.evicted_oldest_first
            && self.still_served == self.at_cap - self.past_the_cap
            && self.later_served == self.past_the_cap
            && self.health_sessions == Some(self.at_cap as u64)
    }
}

/// Both runs as the results keep them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScaleRun {
    /// The scale run, or why it did not run.
    pub scale: Option<ScaleResult>,
    /// Why the scale run failed.
    pub scale_error: Option<String>,
    /// The cap run.
    pub cap: Option<CapResult>,
    /// Why the cap run failed.
    pub cap_error: Option<String>,
    /// The gateway's flags of the scale run.
    pub scale_flags: Vec<String>,
    /// The `run` driver's descriptor limit when it started the gateways (and whether it was
    /// raised), as text.
    pub fd_note: String,
    /// Load average before and after.
    pub load: Vec<(String, String)>,
}

impl ScaleRun {
    /// Failures of the scenario: a run that failed, a session not served, a cap not held.
    pub fn failures(&self) -> usize {
        let scale = self.scale.as_ref().is_none_or(|r| !r.all_served());
        let cap = self.cap.as_ref().is_none_or(|r| !r.as_documented());
        usize::from(scale) + usize::from(cap)
    }
}

/// The gateway's cap flags of the scale run: every cap raised past `sessions` (one
/// loopback client holds them all).
pub fn scale_caps(sessions: usize, parallel: usize) -> Vec<String> {
    let sessions_cap = sessions.to_string();
    let connections = (sessions + 4 * parallel + 64).to_string();
    let in_flight = (4 * parallel).max(1024).to_string();
    let unauthenticated = (4 * parallel).max(16).to_string();
    [
        ("--max-sessions", &sessions_cap),
        ("--max-sessions-per-client", &sessions_cap),
        ("--max-connections", &connections),
        ("--max-connections-per-client", &connections),
        ("--max-streams-per-client", &sessions_cap),
        ("--max-in-flight", &in_flight),
        ("--max-in-flight-per-client", &in_flight),
        ("--max-unauthenticated-per-client", &unauthenticated),
    ]
    .into_iter()
    .flat_map(|(flag, value)| [flag.to_owned(), value.clone()])
    .collect()
}

/// The gateway's flags of the cap run: the default `--max-sessions`, the per-client one
/// raised to it (else one client's own cap, 64, is reached first), and the client's
/// connections (new and kept alive) raised past the requests in flight at once.
fn cap_flags(parallel: usize) -> Vec<String> {
    let connections = (4 * parallel).max(64).to_string();
    vec![
        "--max-sessions-per-client".into(),
        DEFAULT_MAX_SESSIONS.to_string(),
        "--max-connections-per-client".into(),
        connections.clone(),
        "--max-unauthenticated-per-client".into(),
        connections,
    ]
}

/// Raises this process's soft descriptor limit to its hard one; the limit now, and what it
/// was when it was raised.
pub fn raise_fd_limit() -> (u64, Option<u64>) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return (0, None);
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return (hard, Some(soft));
    }
    (soft, None)
}

/// The soft descriptor limit of `pid`, from `/proc/PID/limits`.
fn fd_limit_of(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// `switchboard-bench gateway-scale`: one run; prints one JSON line.
pub fn main(args: &GatewayScaleArgs) -> anyhow::Result<String> {
    let (fd_limit, _) = raise_fd_limit();
    let needed = (args.sessions + 2 * args.parallel + 64) as u64;
    if args.phase == ScalePhase::Scale && fd_limit < needed {
        bail!("{needed} descriptors are needed and the limit is {fd_limit}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    let line = match args.phase {
        ScalePhase::Scale => {
            let mut result = runtime.block_on(scale(args))?;
            result.fd_limit = fd_limit;
            serde_json::to_string(&result)?
        }
        ScalePhase::Cap => serde_json::to_string(&runtime.block_on(cap(args))?)?,
    };
    // The held streams and connections go with the runtime, bounded.
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(line)
}

/// The driver's HTTP side: one client (one keep-alive pool) and the endpoint.
#[derive(Clone)]
struct Driver {
    client: reqwest::Client,
    url: String,
}

/// An open legacy session: its id.
#[derive(Debug, Clone)]
struct Opened {
    id: String,
}

impl Driver {
    fn new(url: &str) -> anyhow::Result<Driver> {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("building the HTTP client")?;
        Ok(Driver {
            client,
            url: url.to_owned(),
        })
    }

    fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", LEGACY_VERSION);
        }
        request
    }

    /// `initialize` then `notifications/initialized`.
    async fn open(&self) -> anyhow::Result<Opened> {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION, "capabilities": {},
            "clientInfo": {"name": "switchboard-bench", "version": "0"}}});
        let response = self.post(None, &initialize).send().await?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await?;
        let Some(id) = id.filter(|_| status.is_success()) else {
            bail!("initialize: {status} {}", clip(&body));
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(Some(&id), &initialized).send().await?;
        let status = response.status();
        if !status.is_success() {
            bail!("initialized: {status} {}", clip(&response.text().await?));
        }
        Ok(Opened { id })
    }

    /// `count` sessions, at most `parallel` handshakes at a time, in order.
    async fn open_many(&self, count: usize, parallel: usize) -> Vec<anyhow::Result<Opened>> {
        let driver = self.clone();
        bounded(vec![(); count], parallel, phase_bound(count), move |()| {
            let driver = driver.clone();
            async move { driver.open().await }
        })
        .await
    }

    /// One request on `session`; its JSON-RPC answer (from a JSON body or an event stream).
    async fn request(&self, session: &str, method: &str, params: Value) -> anyhow::Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
        let response = self.post(Some(session), &body).send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("{method}: {status} {}", clip(&text));
        }
        answer_in(&text).with_context(|| format!("{method}: no answer in {}", clip(&text)))
    }

    /// A call of `echo` that must come back with its text.
    async fn echo(&self, session: &str) -> anyhow::Result<()> {
        let answer = self
            .request(
                session,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "hello"}}),
            )
            .await?;
        let text = answer
            .pointer("/result/content/0/text")
            .and_then(Value::as_str);
        if text != Some("hello") || answer.pointer("/result/isError") == Some(&json!(true)) {
            bail!(
                "tools/call: unexpected answer {}",
                clip(&answer.to_string())
            );
        }
        Ok(())
    }

    /// The session's GET stream, held open: the response (its body unread).
    async fn stream(&self, session: &str) -> anyhow::Result<reqwest::Response> {
        let response = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY_VERSION)
            // The stream lives past the request timeout: only its head is bounded.
            .timeout(Duration::from_secs(24 * 3600))
            .send()
            .await?;
        let status = response.status();
        let streaming = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() || !streaming {
            bail!("GET stream: {status} {}", clip(&response.text().await?));
        }
        Ok(response)
    }

    /// DELETE.
    async fn close(&self, session: &str) -> anyhow::Result<()> {
        self.client
            .delete(&self.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY_VERSION)
            .send()
            .await?;
        Ok(())
    }

    /// `/healthz?detail`.
    async fn health(&self) -> anyhow::Result<Value> {
        let base = self.url.strip_suffix("/mcp").unwrap_or(&self.url);
        let text = self
            .client
            .get(format!("{base}/healthz?detail"))
            .send()
            .await?
            .text()
            .await?;
        serde_json::from_str(&text).context("the health detail is not JSON")
    }
}

/// The JSON-RPC answer in a body: the body itself, or the event-stream event with an `id`.
fn answer_in(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(value);
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
}

/// At most 200 characters of a peer's text, for an error.
fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Runs `work` on each item, at most `parallel` at once, all within `bound`; the outputs in
/// item order (`Err` for each that failed or was not done in time).
async fn bounded<I, T, F, Fut>(
    items: Vec<I>,
    parallel: usize,
    bound: Duration,
    work: F,
) -> Vec<anyhow::Result<T>>
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(parallel.max(1)));
    let work = Arc::new(work);
    let deadline = tokio::time::Instant::now() + bound;
    let count = items.len();
    let mut tasks = JoinSet::new();
    for (index, item) in items.into_iter().enumerate() {
        let gate = gate.clone();
        let work = work.clone();
        tasks.spawn(async move {
            let outcome = tokio::time::timeout_at(deadline, async {
                let _permit = gate.acquire_owned().await?;
                work(item).await
            })
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("not done within {bound:?}")));
            (index, outcome)
        });
    }
    let mut out: Vec<Option<anyhow::Result<T>>> = (0..count).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        if let Ok((index, outcome)) = joined {
            out[index] = Some(outcome);
        }
    }
    out.into_iter()
        .map(|o| o.unwrap_or_else(|| Err(anyhow::anyhow!("its task failed"))))
        .collect()
}

/// Splits outcomes into what worked and the first error (with how many failed).
fn sort_out<T>(outcomes: Vec<anyhow::Result<T>>, what: &str, errors: &mut Vec<String>) -> Vec<T> {
    let mut ok = Vec::with_capacity(outcomes.len());
    let mut failed = 0;
    let mut first = None;
    for outcome in outcomes {
        match outcome {
            Ok(v) => ok.push(v),
            Err(e) => {
                failed += 1;
                first.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    if let Some(first) = first {
        errors.push(format!("{what}: {failed} failed, the first: {first}"));
    }
    ok
}

/// The bound of one phase of `count` items.
fn phase_bound(count: usize) -> Duration {
    Duration::from_secs(120) + Duration::from_millis(20 * count as u64)
}

/// The scale run.
async fn scale(args: &GatewayScaleArgs) -> anyhow::Result<ScaleResult> {
    let pid = args.gateway_pid;
    let upstream_exe = args.upstream_exe.clone();
    let rss = move || tree_memory(pid, upstream_exe.as_deref()).0;
    let driver = Driver::new(&args.url)?;
    let mut result = ScaleResult {
        sessions: args.sessions,
        gateway_fd_limit: fd_limit_of(pid),
        fresh_rss_kib: rss(),
        ..ScaleResult::default()
    };
    // Warm-up: as many sessions as requests in flight at once (so the pool's connections
    // are open), ten calls each, then deleted.
    let warm = bounded(
        vec![(); args.parallel],
        args.parallel,
        phase_bound(args.parallel),
        {
            let driver = driver.clone();
            move |()| {
                let driver = driver.clone();
                async move {
                    let session = driver.open().await?;
                    for _ in 0..10 {
                        driver.echo(&session.id).await?;
                    }
                    driver.close(&session.id).await
                }
            }
        },
    )
    .await;
    let mut errors = Vec::new();
    sort_out(warm, "warm-up", &mut errors);
    if !errors.is_empty() {
        bail!("{}", errors.join("; "));
    }
    settle().await;
    result.base_rss_kib = rss();

    let started = Instant::now();
    let opened = driver.open_many(args.sessions, args.parallel).await;
    let sessions = sort_out(opened, "sessions", &mut result.errors);
    result.open_s = started.elapsed().as_secs_f64();
    result.sessions_opened = sessions.len();
    settle().await;
    result.sessions_rss_kib = rss();
    eprintln!(
        "gateway-scale: {} sessions open in {:.1} s; RSS {} → {} KiB",
        sessions.len(),
        result.open_s,
        result.base_rss_kib,
        result.sessions_rss_kib
    );

    let started = Instant::now();
    let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let streams = bounded(ids.clone(), args.parallel, STREAMS_TIMEOUT, {
        let driver = driver.clone();
        move |id: String| {
            let driver = driver.clone();
            async move { driver.stream(&id).await }
        }
    })
    .await;
    let held = sort_out(streams, "GET streams", &mut result.errors);
    result.streams_s = started.elapsed().as_secs_f64();
    settle().await;
    result.streams_rss_kib = rss();
    eprintln!(
        "gateway-scale: {} GET streams open in {:.1} s; RSS {} KiB",
        held.len(),
        result.streams_s,
        result.streams_rss_kib
    );

    let started = Instant::now();
    let served = Arc::new(AtomicUsize::new(0));
    let calls = bounded(ids, args.parallel, phase_bound(args.sessions), {
        let driver = driver.clone();
        let served = served.clone();
        move |id: String| {
            let driver = driver.clone();
            let served = served.clone();
            async move {
                driver.echo(&id).await?;
                served.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    })
    .await;
    sort_out(calls, "calls", &mut result.errors);
    result.serve_s = started.elapsed().as_secs_f64();
    result.served = served.load(Ordering::Relaxed);
    result.served_rss_kib = rss();
    // The streams must still be open: a stream the gateway ended has its body finished.
    result.streams_opened = held.len();
    match driver.health().await {
        Ok(detail) => result.health_current = detail.get("current").cloned(),
        Err(e) => result.errors.push(format!("healthz: {e:#}")),
    }
    eprintln!(
        "gateway-scale: {} of {} sessions served in {:.1} s; RSS {} KiB",
        result.served, args.sessions, result.serve_s, result.served_rss_kib
    );
    drop(held);
    Ok(result)
}

/// Lets the gateway finish what the last answers started before its RSS is read.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// The cap run.
async fn cap(args: &GatewayScaleArgs) -> anyhow::Result<CapResult> {
    let driver = Driver::new(&args.url)?;
    let mut result = CapResult {
        at_cap: args.sessions,
        past_the_cap: args.past_the_cap,
        ..CapResult::default()
    };
    let opened = driver.open_many(args.sessions, args.parallel).await;
    let first = sort_out(opened, "sessions up to the cap", &mut result.errors);
    if first.len() != args.sessions {
        bail!(
            "only {} of {} sessions opened: {}",
            first.len(),
            args.sessions,
            result.errors.join("; ")
        );
    }
    // A known order of use: the first session is the least recently used.
    for session in &first {
        driver
            .request(&session.id, "ping", json!({}))
            .await
            .context("using the sessions in order")?;
    }
    let mut later = Vec::new();
    for _ in 0..args.past_the_cap {
        match driver.open().await {
            Ok(session) => later.push(session),
            Err(e) => result.errors.push(format!("past the cap: {e:#}")),
        }
    }
    result.past_opened = later.len();
    let mut evicted = Vec::new();
    for (index, session) in first.iter().enumerate() {
        match driver.request(&session.id, "ping", json!({})).await {
            Ok(_) => result.still_served += 1,
            Err(e) if format!("{e:#}").contains("404") => evicted.push(index),
            Err(e) => result.errors.push(format!("a first session: {e:#}")),
        }
    }
    result.evicted = evicted.len();
    result.evicted_oldest_first = evicted.iter().copied().eq(0..args.past_the_cap);
    for session in &later {
        match driver.request(&session.id, "ping", json!({})).await {
            Ok(_) => result.later_served += 1,
            Err(e) => result.errors.push(format!("a later session: {e:#}")),
        }
    }
    let detail = driver.health().await?;
    result.health_sessions = detail.pointer("/current/sessions").and_then(Value::as_u64);
    result.health_evicted = detail.pointer("/evicted/sessions").and_then(Value::as_u64);
    Ok(result)
}

/// How big the scenario is.
#[derive(Debug, Clone, Copy)]
pub struct ScaleSizes {
    /// Sessions and streams of the scale run.
    pub sessions: usize,
    /// Requests in flight at once.
    pub parallel: usize,
    /// The cap run's cap and how far past it.
    pub cap: usize,
    /// Sessions past the cap.
    pub past_the_cap: usize,
}

impl ScaleSizes {
    /// A full or a smoke run's sizes.
    pub fn new(smoke: bool) -> ScaleSizes {
        if smoke {
            ScaleSizes {
                sessions: 200,
                parallel: 16,
                cap: DEFAULT_MAX_SESSIONS,
                past_the_cap: 10,
            }
        } else {
            ScaleSizes {
                sessions: SESSIONS,
                parallel: 64,
                cap: DEFAULT_MAX_SESSIONS,
                past_the_cap: PAST_THE_CAP,
            }
        }
    }
}

/// Starts our gateway with `flags` on a free port, its stderr to `log`.
fn start_gateway(
    places: &GatewayPaths,
    flags: &[String],
    log: &Path,
) -> anyhow::Result<HttpServer> {
    let port = free_port()?;
    let mut argv = places.plain_gateway_argv(port);
    argv.extend(flags.iter().cloned());
    let (program, rest) = argv.split_first().context("empty gateway command")?;
    let log_file =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = Command::new(program);
    command.args(rest).stderr(log_file);
    HttpServer::spawn(command, port)
        .with_context(|| format!("starting the gateway (see {})", log.display()))
}

/// Runs the scenario (the `run` driver's part): the scale run, then the cap run, each on a
/// fresh gateway.
pub fn run_scenario(
    paths: &Paths,
    sizes: ScaleSizes,
    timeout: Duration,
) -> anyhow::Result<ScaleRun> {
    let logs = paths.out_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let places = GatewayPaths::new(paths);
    places.write_config()?;
    let (limit, raised_from) = raise_fd_limit();
    let fd_note = match raised_from {
        Some(from) => format!(
            "Soft descriptor limit raised from {from} to {limit} (the hard limit) for the gateway and the driver"
        ),
        None => format!("Descriptor limit {limit} (soft = hard), not raised"),
    };
    eprintln!("bench: gateway-scale: {fd_note}");
    let mut run = ScaleRun {
        scale_flags: scale_caps(sizes.sessions, sizes.parallel),
        fd_note,
        load: vec![("gateway-scale start".into(), loadavg())],
        ..ScaleRun::default()
    };
    let driver_argv = |server: &HttpServer, phase: ScalePhase, sessions: usize| {
        vec![
            paths.bench.to_string_lossy().into_owned(),
            "gateway-scale".into(),
            "--phase".into(),
            match phase {
                ScalePhase::Scale => "scale".into(),
                ScalePhase::Cap => "cap".into(),
            },
            "--url".into(),
            server.url.clone(),
            "--gateway-pid".into(),
            server.pid().to_string(),
            "--upstream-exe".into(),
            paths.bench.to_string_lossy().into_owned(),
            "--sessions".into(),
            sessions.to_string(),
            "--past-the-cap".into(),
            sizes.past_the_cap.to_string(),
            "--parallel".into(),
            sizes.parallel.to_string(),
        ]
    };
    let outcome = start_gateway(
        &places,
        &run.scale_flags,
        &logs.join("gateway-scale.server.stderr"),
    )
    .and_then(|server| {
        let argv = driver_argv(&server, ScalePhase::Scale, sizes.sessions);
        let out = run_bounded(&argv, &logs.join("gateway-scale.stderr"), timeout)?;
        drop(server);
        parse_line::<ScaleResult>(&out)
    });
    match outcome {
        Ok(r) => {
            eprintln!(
                "bench: gateway-scale {} sessions: {:.1} KiB per idle session, {:.1} KiB per GET stream, {} of {} served{}",
                r.sessions,
                r.kib_per_idle_session().unwrap_or(f64::NAN),
                r.kib_per_stream().unwrap_or(f64::NAN),
                r.served,
                r.sessions,
                if r.errors.is_empty() {
                    String::new()
                } else {
                    format!("  FAILURES: {}", r.errors.join("; "))
                }
            );
            run.scale = Some(r);
        }
        Err(e) => {
            eprintln!("bench: gateway-scale FAILED: {e:#}");
            run.scale_error = Some(format!("{e:#}"));
        }
    }
    let outcome = start_gateway(
        &places,
        &cap_flags(sizes.parallel),
        &logs.join("gateway-cap.server.stderr"),
    )
    .and_then(|server| {
        let argv = driver_argv(&server, ScalePhase::Cap, sizes.cap);
        let out = run_bounded(&argv, &logs.join("gateway-cap.stderr"), timeout)?;
        drop(server);
        parse_line::<CapResult>(&out)
    });
    match outcome {
        Ok(r) => {
            eprintln!(
                "bench: gateway-scale cap {}: {} past it opened, {} evicted (oldest first: {}), {} still served",
                r.at_cap, r.past_opened, r.evicted, r.evicted_oldest_first, r.still_served
            );
            run.cap = Some(r);
        }
        Err(e) => {
            eprintln!("bench: gateway-scale cap FAILED: {e:#}");
            run.cap_error = Some(format!("{e:#}"));
        }
    }
    run.load.push(("gateway-scale end".into(), loadavg()));
    Ok(run)
}
