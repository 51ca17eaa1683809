//! The start-up scenarios (4–6): cold start of many servers through `switchboard-runtime`,
//! a large catalog listed and bridged, the runtime's RSS with many live servers, and the
//! pieces of the one-shot CLI comparison (`bare-start`, `measure-child`).
//!
//! Each subcommand runs once in a fresh process and prints one JSON line of named metrics
//! ([`Metrics`]); the driver runs them in rounds and the report takes medians.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use switchboard_config::{Origin, ServerEntry, TransportEntry};
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{Runtime, RuntimeOptions};
use switchboard_session::{CallOptions, Session, SessionConfig};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};

use crate::cli::{ClientArgs, MeasureArgs, StartupArgs};

/// Named measurements of one run (milliseconds, kilobytes, counts: the name says which).
pub type Metrics = BTreeMap<String, f64>;

/// The JSON line a start-up subcommand prints.
pub fn to_line(metrics: &Metrics) -> String {
    json!({ "metrics": metrics }).to_string()
}

/// Parses the last metrics line of a process's stdout.
pub fn from_stdout(stdout: &str) -> Option<Metrics> {
    stdout
        .lines()
        .rev()
        .filter(|l| l.trim_start().starts_with('{'))
        .find_map(|l| {
            let value: serde_json::Value = serde_json::from_str(l).ok()?;
            serde_json::from_value(value.get("metrics")?.clone()).ok()
        })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `switchboard-fixture` next to this binary, unless given.
fn fixture_path(args: &StartupArgs) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.fixture {
        return Ok(path.clone());
    }
    let exe = std::env::current_exe().context("locating this binary")?;
    Ok(exe.with_file_name("switchboard-fixture"))
}

/// A stdio server entry for the runtime.
pub fn entry(name: &str, command: &Path, args: Vec<String>) -> ServerEntry {
    let transport = TransportEntry::Stdio {
        command: command.display().to_string(),
        args,
        env: Vec::new(),
        cwd: None,
    };
    ServerEntry::new(name, transport).with_origin(Origin::described("<bench>"))
}

fn spec(program: &Path, args: Vec<String>) -> ProcessSpec {
    ProcessSpec {
        program: program.display().to_string(),
        args,
        env: Vec::new(),
        cwd: None,
        sandbox: None,
    }
}

/// One server's own start: spawn + initialize + `tools/list`, timed; then shut down
/// (untimed). Returns the time and the number of tools listed.
pub async fn solo_start(program: &Path, args: Vec<String>) -> anyhow::Result<(Duration, usize)> {
    let spec = spec(program, args);
    let started = Instant::now();
    let (session, count) = start_and_list(&spec).await?;
    let took = started.elapsed();
    session.shutdown(ShutdownGrace::default()).await;
    Ok((took, count))
}

/// Spawn + initialize + `tools/list`; returns the session and the number of tools.
async fn start_and_list(spec: &ProcessSpec) -> anyhow::Result<(Session, usize)> {
    let session = Session::spawn_stdio(
        spec,
        StdioOptions::new("bench"),
        SessionConfig::new("bench"),
    )
    .await
    .with_context(|| format!("starting {spec:?}"))?;
    let listing = session.list_tools().await.context("tools/list")?;
    Ok((session, listing.items.len()))
}

/// Enables a runtime over `entries`, timing `enable` (which returns once every server has
/// settled and the snapshot is published). Fails unless every server is ready.
async fn enable_timed(entries: Vec<ServerEntry>) -> anyhow::Result<(Runtime, Duration)> {
    let count = entries.len();
    let runtime = Runtime::new(RuntimeOptions::new(ServerSource::Entries(entries)));
    let started = Instant::now();
    let report = runtime.enable().await.context("enable")?;
    let took = started.elapsed();
    let ready = report.ready().count();
    if ready != count {
        let report = report.to_string();
        runtime.dispose().await;
        bail!("only {ready} of {count} servers became ready:\n{report}");
    }
    Ok((runtime, took))
}

/// Scenario 4 (`cold-start`): one untimed and `--solo` timed solo starts of the fixture,
/// one runtime enable of a single fixture server, then `--servers` fixture servers enabled
/// at once.
pub async fn cold_start(args: &StartupArgs) -> anyhow::Result<Metrics> {
    let fixture = fixture_path(args)?;
    solo_start(&fixture, Vec::new()).await?;
    let mut solos = Vec::new();
    for _ in 0..args.solo.max(1) {
        solos.push(ms(solo_start(&fixture, Vec::new()).await?.0));
    }
    let (one, enable_one) = enable_timed(vec![entry("s00", &fixture, Vec::new())]).await?;
    one.dispose().await;
    let entries = (0..args.servers)
        .map(|i| entry(&format!("s{i:02}"), &fixture, Vec::new()))
        .collect();
    let (runtime, parallel) = enable_timed(entries).await?;
    let tools = runtime.snapshot().tools.len();
    runtime.dispose().await;
    let parallel_bare = parallel_bare_starts(&fixture, args.servers).await?;
    let (lo, hi) = crate::stats::min_max(&solos);
    Ok(Metrics::from([
        ("servers".into(), args.servers as f64),
        ("parallel_ms".into(), ms(parallel)),
        ("solo_median_ms".into(), crate::stats::median(&solos)),
        ("solo_min_ms".into(), lo),
        ("solo_max_ms".into(), hi),
        ("enable_one_ms".into(), ms(enable_one)),
        ("parallel_bare_ms".into(), ms(parallel_bare)),
        ("tools".into(), tools as f64),
    ]))
}

/// `count` bare sessions started at once (no runtime): the time until the last one has
/// listed its tools (the shutdowns after that are not timed). What the machine allows for a
/// parallel start without the runtime.
async fn parallel_bare_starts(program: &Path, count: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..count {
        let spec = spec(program, Vec::new());
        set.spawn(async move {
            let session = start_and_list(&spec).await?.0;
            let listed = Instant::now();
            session.shutdown(ShutdownGrace::default()).await;
            anyhow::Ok(listed)
        });
    }
    let mut last = started;
    while let Some(joined) = set.join_next().await {
        last = last.max(joined.context("a start panicked")??);
    }
    Ok(last - started)
}

/// Scenario 6 (`scale`): a `--tools` catalog served by `<this binary> trivial-server`
/// (pre-serialised pages), first listed by a bare session (spawn + initialize + every page),
/// then enabled through the runtime: enable → snapshot published.
pub async fn scale(args: &StartupArgs, bench: &Path) -> anyhow::Result<Metrics> {
    let server_args = vec![
        "trivial-server".to_owned(),
        "--tools".to_owned(),
        args.tools.to_string(),
        "--page-size".to_owned(),
        args.page_size.to_string(),
    ];
    solo_start(bench, server_args.clone()).await?;
    let (list_alone, listed) = solo_start(bench, server_args.clone()).await?;
    if listed != args.tools {
        bail!("listed {listed} tools, expected {}", args.tools);
    }
    let (runtime, enable) = enable_timed(vec![entry("big", bench, server_args)]).await?;
    let bridged = runtime.snapshot().tools.len();
    runtime.dispose().await;
    if bridged != args.tools {
        bail!("bridged {bridged} tools, expected {}", args.tools);
    }
    Ok(Metrics::from([
        ("tools".into(), args.tools as f64),
        ("page_size".into(), args.page_size as f64),
        ("enable_to_snapshot_ms".into(), ms(enable)),
        ("list_alone_ms".into(), ms(list_alone)),
    ]))
}

/// A `/proc/self/status` field in kB.
pub fn status_kb(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Scenario 6 (`rss`): this process's resident set before and after enabling `--servers`
/// fixture servers (the runtime constructed, no server started yet, is the baseline).
pub async fn rss(args: &StartupArgs) -> anyhow::Result<Metrics> {
    let fixture = fixture_path(args)?;
    let entries = (0..args.servers)
        .map(|i| entry(&format!("s{i:02}"), &fixture, Vec::new()))
        .collect();
    let runtime = Runtime::new(RuntimeOptions::new(ServerSource::Entries(entries)));
    let before = status_kb("VmRSS:").context("reading VmRSS")?;
    let report = runtime.enable().await.context("enable")?;
    let ready = report.ready().count();
    // Let the servers' post-start traffic (notifications, stderr) settle.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = status_kb("VmRSS:").context("reading VmRSS")?;
    let peak = status_kb("VmHWM:").unwrap_or(f64::NAN);
    let live = runtime.live_processes();
    runtime.dispose().await;
    if ready != args.servers {
        bail!("only {ready} of {} servers became ready", args.servers);
    }
    Ok(Metrics::from([
        ("servers".into(), args.servers as f64),
        ("live_processes".into(), live as f64),
        ("rss_before_kb".into(), before),
        ("rss_after_kb".into(), after),
        ("growth_kb".into(), after - before),
        ("peak_kb".into(), peak),
    ]))
}

/// Scenario 5's baseline (`bare-start`): spawn + initialize + one echo call, timed; the
/// shutdown after it timed separately.
pub async fn bare_start(args: &ClientArgs) -> anyhow::Result<Metrics> {
    let Some((program, server_args)) = args.server.split_first() else {
        bail!("--server needs a command");
    };
    let spec = spec(Path::new(program), server_args.to_vec());
    let started = Instant::now();
    let session = Session::spawn_stdio(
        &spec,
        StdioOptions::new("bench"),
        SessionConfig::new("bench"),
    )
    .await
    .with_context(|| format!("starting {spec:?}"))?;
    let result = session
        .call_tool(
            &args.tool,
            Some(&json!({ args.arg.as_str(): args.text.as_str() })),
            &CallOptions::default(),
        )
        .await?;
    let start_call = started.elapsed();
    if result.is_error {
        bail!("the tool reported an error: {result:?}");
    }
    session.shutdown(ShutdownGrace::default()).await;
    Ok(Metrics::from([
        ("start_call_ms".into(), ms(start_call)),
        ("with_shutdown_ms".into(), ms(started.elapsed())),
    ]))
}

/// `measure-child`: runs the command to its end (stdin null, stdout captured and checked
/// against `--expect`, stderr inherited) and reports its wall time, its peak RSS (`getrusage(RUSAGE_CHILDREN)`: the
/// largest of the command and every descendant it reaped) and, prefixed `inner_`, the
/// metrics it printed itself, if any.
pub fn measure_child(args: &MeasureArgs) -> anyhow::Result<Metrics> {
    use nix::sys::resource::{UsageWho, getrusage};
    let (program, rest) = args.command.split_first().context("empty command")?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    let status = child.wait().context("waiting for the command")?;
    let wall = started.elapsed();
    if !status.success() {
        bail!("{program} exited with {status}");
    }
    if let Some(expected) = &args.expect
        && !stdout.contains(expected.as_str())
    {
        bail!("{program} printed no `{expected}`: {}", stdout.trim());
    }
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let mut metrics = Metrics::from([
        ("wall_ms".into(), ms(wall)),
        ("peak_rss_kb".into(), usage.max_rss() as f64),
    ]);
    for (k, v) in from_stdout(&stdout).unwrap_or_default() {
        metrics.insert(format!("inner_{k}"), v);
    }
    Ok(metrics)
}

/// Runs an async scenario on a fresh runtime of the requested flavour.
pub fn block_on<F: std::future::Future<Output = anyhow::Result<Metrics>>>(
    kind: crate::cli::RuntimeKind,
    future: impl FnOnce() -> F,
) -> anyhow::Result<Metrics> {
    let runtime = kind.build().context("building the tokio runtime")?;
    runtime.block_on(future())
}
