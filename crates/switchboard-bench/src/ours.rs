//! Our client: a `switchboard-session` [`Session`] over stdio or Streamable HTTP, making `tools/call` echo
//! calls one at a time or with many in flight on the one connection; a stdio server is
//! started in the default sandbox when `--sandbox-launcher` names a launcher.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard_http::HttpOptions;
use switchboard_protocol::ContentBlock;
use switchboard_session::{CallOptions, Session, SessionConfig};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};
use tokio::task::JoinSet;

use crate::cli::ClientArgs;
use crate::stats::RunResult;

/// Runs the benchmark on a runtime of the requested flavour and returns its result.
pub fn run(args: &ClientArgs) -> anyhow::Result<RunResult> {
    let runtime = args.runtime.build().context("building the tokio runtime")?;
    runtime.block_on(run_async(args))
}

/// The benchmark itself, on the caller's runtime.
pub async fn run_async(args: &ClientArgs) -> anyhow::Result<RunResult> {
    let started = Instant::now();
    let mut config = SessionConfig::new("bench");
    config.era = args.era.choice();
    let session = if let Some(url) = &args.url {
        Session::connect_http(HttpOptions::new("bench", url), config)
            .await
            .with_context(|| format!("connecting to {url}"))?
    } else {
        let Some((program, server_args)) = args.server.split_first() else {
            bail!("--server needs a command");
        };
        let spec = ProcessSpec {
            program: program.clone(),
            args: server_args.to_vec(),
            env: Vec::new(),
            cwd: None,
            sandbox: args
                .sandbox_launcher
                .as_deref()
                .map(crate::sandbox::default_spawn),
        };
        Session::spawn_stdio(&spec, StdioOptions::new("bench"), config)
            .await
            .with_context(|| format!("connecting to {spec:?}"))?
    };
    let init = started.elapsed();
    let protocol = Some(session.negotiated().protocol_version.clone());
    let arguments = json!({ args.arg.as_str(): args.text.as_str() });

    for _ in 0..args.warmup {
        let text = echo(&session, &args.tool, &arguments).await?;
        if !text.contains(args.text.as_str()) {
            bail!(
                "the echo answered {text:?}, expected it to contain {:?}",
                args.text
            );
        }
    }

    let inflight = args.inflight.max(1);
    let (elapsed, mut latencies) =
        calls_from_tasks(&session, &args.tool, &arguments, args.calls, inflight).await?;
    let result = RunResult::from_latencies(
        "ours",
        inflight as u64,
        elapsed,
        &mut latencies,
        init,
        protocol,
    );
    session.shutdown(ShutdownGrace::default()).await;
    Ok(result)
}

/// One echo call; returns the text of the first content block.
async fn echo(session: &Session, tool: &str, arguments: &Value) -> anyhow::Result<String> {
    let result = session
        .call_tool(tool, Some(arguments), &CallOptions::default())
        .await?;
    if result.is_error {
        bail!("the tool reported an error: {result:?}");
    }
    Ok(match result.content.into_iter().next() {
        Some(ContentBlock::Text { text }) => text,
        _ => String::new(),
    })
}

/// `inflight` tasks (one for sequential calls), each making its share of the calls one
/// after the other, so that `inflight` calls are outstanding on the one connection. Calls
/// are made from spawned tasks, as a host makes them: a call awaited in `block_on` itself
/// costs tokio's current-thread runtime an extra driver poll each time it wakes.
async fn calls_from_tasks(
    session: &Session,
    tool: &str,
    arguments: &Value,
    calls: u64,
    inflight: usize,
) -> anyhow::Result<(Duration, Vec<u64>)> {
    let mut workers = JoinSet::new();
    let started = Instant::now();
    for worker in 0..inflight as u64 {
        let share = calls / inflight as u64 + u64::from(worker < calls % inflight as u64);
        let session = session.clone();
        let tool = tool.to_owned();
        let arguments = arguments.clone();
        workers.spawn(async move {
            let mut latencies = Vec::with_capacity(share as usize);
            let options = CallOptions::default();
            for _ in 0..share {
                let t = Instant::now();
                let result = session.call_tool(&tool, Some(&arguments), &options).await?;
                latencies.push(t.elapsed().as_nanos() as u64);
                if result.is_error {
                    bail!("the tool reported an error: {result:?}");
                }
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(calls as usize);
    while let Some(joined) = workers.join_next().await {
        latencies.extend(joined.context("a calling task panicked")??);
    }
    Ok((started.elapsed(), latencies))
}
