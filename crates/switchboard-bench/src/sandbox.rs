//! Scenario 9: what the sandbox (`switchboard-sandbox`, started through the launcher's
//! hidden `__sandbox-exec`) costs a stdio server: its start, and (through
//! [`crate::ours`] with `--sandbox-launcher`) its calls.
//!
//! `sandbox-start` starts `<this binary> trivial-server` again and again through
//! [`Session::spawn_stdio`] with a [`ProcessSpec`] carrying no sandbox, the default
//! sandbox, and relaxed ones that leave out one more part of it each, the variants
//! interleaved (their order rotating from one start to the next) and the starts apart by
//! an idle gap. Each start is spawn → initialize answered → first `tools/list` answered;
//! the shutdown after it is not timed.
//!
//! The gap matters: joining a cgroup v1 hierarchy (the pids cgroup) takes the kernel's
//! cgroup-threadgroup lock for writing, which waits for an RCU grace period unless another
//! writer took it moments before. Back-to-back starts share one grace period; a server
//! started on its own (the CLI's one start, a runtime enabling a server) waits for it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use switchboard_config::{SandboxChoice, SandboxPolicy};
use switchboard_session::{Session, SessionConfig};
use switchboard_wire::sandbox::SandboxSpawn;
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};

use crate::cli::SandboxStartArgs;
use crate::startup::Metrics;

/// The longest one start may take before the run fails.
const START_BOUND: Duration = Duration::from_secs(20);

/// A variant of the start: its metric prefix and its sandbox policy (`None`: unsandboxed).
#[derive(Debug, Clone)]
pub struct Variant {
    /// Metric prefix (`plain`, `sandboxed`, …).
    pub name: &'static str,
    /// The policy, if sandboxed.
    pub policy: Option<SandboxPolicy>,
}

/// The variants, in the order of the first round of starts: unsandboxed; the default
/// sandbox; then, each leaving out one more part: no user and network namespace
/// (`network: any`); no process limit, so no pids cgroup joined (`processes: unlimited`);
/// only the filesystem rules (also no open-file limit, no scopes). Differences between
/// neighbours say what each part costs; the last against `plain` is the launcher's own
/// exec, the start's preparation (temp folder, cgroup made, policy resolved) and the
/// Landlock filesystem ruleset.
pub fn variants() -> anyhow::Result<Vec<Variant>> {
    let relaxed = |value: serde_json::Value| -> anyhow::Result<SandboxPolicy> {
        match SandboxChoice::from_config(&value) {
            Ok(SandboxChoice::On(policy)) => Ok(policy),
            Ok(other) => bail!("{value} is not a sandbox policy: {other:?}"),
            Err(e) => bail!("{value}: {e}"),
        }
    };
    Ok(vec![
        Variant {
            name: "plain",
            policy: None,
        },
        Variant {
            name: "sandboxed",
            policy: Some(SandboxPolicy::default()),
        },
        Variant {
            name: "no_netns",
            policy: Some(relaxed(json!({ "network": "any" }))?),
        },
        Variant {
            name: "no_cgroup",
            policy: Some(relaxed(json!({
                "network": "any",
                "limits": { "processes": "unlimited" },
            }))?),
        },
        Variant {
            name: "fs_only",
            policy: Some(relaxed(json!({
                "network": "any",
                "scopes": false,
                "limits": { "processes": "unlimited", "openFiles": "unlimited" },
            }))?),
        },
    ])
}

/// The default sandbox through `launcher`, as the CLI starts a sandboxed server.
pub fn default_spawn(launcher: &Path) -> Box<SandboxSpawn> {
    spawn_with(SandboxPolicy::default(), launcher)
}

fn spawn_with(policy: SandboxPolicy, launcher: &Path) -> Box<SandboxSpawn> {
    Box::new(SandboxSpawn {
        policy,
        launcher: launcher.to_path_buf(),
        never_open: Vec::new(),
    })
}

/// `switchboard` next to this binary, unless given.
fn launcher_path(args: &SandboxStartArgs) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.launcher {
        return Ok(path.clone());
    }
    let exe = std::env::current_exe().context("locating this binary")?;
    Ok(exe.with_file_name("switchboard"))
}

/// One start of `spec`: spawn → initialize → `tools/list`, timed (bounded by
/// [`START_BOUND`]); then the shutdown, untimed.
async fn one_start(spec: &ProcessSpec) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let start = async {
        let session = Session::spawn_stdio(
            spec,
            StdioOptions::new("bench"),
            SessionConfig::new("bench"),
        )
        .await
        .with_context(|| format!("starting {spec:?}"))?;
        match session.list_tools().await {
            Ok(listing) if !listing.items.is_empty() => Ok(session),
            Ok(_) => {
                session.shutdown(ShutdownGrace::default()).await;
                bail!("the server listed no tools")
            }
            Err(e) => {
                session.shutdown(ShutdownGrace::default()).await;
                Err(anyhow::Error::from(e).context("tools/list"))
            }
        }
    };
    let session = tokio::time::timeout(START_BOUND, start)
        .await
        .map_err(|_| anyhow::anyhow!("no start within {START_BOUND:?}: {spec:?}"))??;
    let took = started.elapsed();
    session.shutdown(ShutdownGrace::default()).await;
    Ok(took)
}

/// Scenario 9 (`sandbox-start`): one untimed and `--starts` timed starts of each variant,
/// interleaved, `--gap-ms` apart. Metrics per variant: `<name>_median_ms`, `<name>_p90_ms`; and
/// `added_median_ms` / `added_p90_ms`, the default sandbox's minus the unsandboxed.
pub async fn sandbox_start(args: &SandboxStartArgs, bench: &Path) -> anyhow::Result<Metrics> {
    let launcher = launcher_path(args)?;
    if !launcher.is_file() {
        bail!(
            "the sandbox launcher {} does not exist (build `switchboard`, or pass --launcher)",
            launcher.display()
        );
    }
    let variants = variants()?;
    let specs: Vec<ProcessSpec> = variants
        .iter()
        .map(|v| ProcessSpec {
            program: bench.display().to_string(),
            args: vec!["trivial-server".to_owned()],
            env: Vec::new(),
            cwd: None,
            sandbox: v.policy.clone().map(|p| spawn_with(p, &launcher)),
        })
        .collect();
    let mut times: Vec<Vec<u64>> = vec![Vec::with_capacity(args.starts); variants.len()];
    let gap = Duration::from_millis(args.gap_ms);
    // Round 0 is the warm-up: page cache, the launcher's first exec, the first cgroup.
    for round in 0..=args.starts.max(1) {
        for k in 0..specs.len() {
            let index = (k + round) % specs.len();
            tokio::time::sleep(gap).await;
            let took = one_start(&specs[index])
                .await
                .with_context(|| format!("start of variant {}", variants[index].name))?;
            if round > 0 {
                times[index].push(took.as_nanos() as u64);
            }
        }
    }
    let ms = |nanos: u64| nanos as f64 / 1e6;
    let mut metrics = Metrics::from([("starts".into(), args.starts.max(1) as f64)]);
    let mut figures = Vec::new();
    for (variant, times) in variants.iter().zip(times.iter_mut()) {
        times.sort_unstable();
        let median = crate::stats::median(&times.iter().map(|t| ms(*t)).collect::<Vec<_>>());
        let p90 = ms(crate::stats::percentile(times, 90.0));
        metrics.insert(format!("{}_median_ms", variant.name), median);
        metrics.insert(format!("{}_p90_ms", variant.name), p90);
        figures.push((median, p90));
    }
    if let (Some((plain_median, plain_p90)), Some((median, p90))) =
        (figures.first(), figures.get(1))
    {
        metrics.insert("added_median_ms".into(), median - plain_median);
        metrics.insert("added_p90_ms".into(), p90 - plain_p90);
    }
    Ok(metrics)
}
