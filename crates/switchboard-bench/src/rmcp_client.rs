//! The official Rust SDK's client (`rmcp` 3.11.0, `client` + `transport-child-process`,
//! and over HTTP `transport-streamable-http-client-reqwest`): the same measurement as
//! [`crate::ours`], the way rmcp's documentation writes a client.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
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
    let client = if let Some(url) = &args.url {
        let transport = StreamableHttpClientTransport::from_uri(url.as_str());
        ().serve(transport)
            .await
            .with_context(|| format!("initializing with {url}"))?
    } else {
        let Some((program, server_args)) = args.server.split_first() else {
            bail!("--server needs a command");
        };
        let mut command = tokio::process::Command::new(program);
        command.args(server_args);
        let transport = TokioChildProcess::new(command).context("spawning the server")?;
        ().serve(transport).await.context("initializing")?
    };
    let init = started.elapsed();
    let protocol = client
        .peer_info()
        .map(|info| info.protocol_version.to_string());
    let mut arguments = JsonObject::new();
    arguments.insert(args.arg.clone(), args.text.clone().into());
    let peer = client.peer().clone();

    for _ in 0..args.warmup {
        let result = peer
            .call_tool(
                CallToolRequestParams::new(args.tool.clone()).with_arguments(arguments.clone()),
            )
            .await?;
        let text = result
            .content
            .first()
            .and_then(|block| block.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        if result.is_error == Some(true) || !text.contains(args.text.as_str()) {
            bail!("unexpected echo result: {result:?}");
        }
    }

    let inflight = args.inflight.max(1);
    let (elapsed, mut latencies) =
        calls_from_tasks(&peer, &args.tool, &arguments, args.calls, inflight).await?;
    let result = RunResult::from_latencies(
        "rmcp",
        inflight as u64,
        elapsed,
        &mut latencies,
        init,
        protocol,
    );
    drop(peer);
    let _ = tokio::time::timeout(Duration::from_secs(10), client.cancel()).await;
    Ok(result)
}

/// `inflight` tasks (one for sequential calls), each making its share of the calls one
/// after the other, so that `inflight` calls are outstanding on the one connection (as in our client). Calls
/// are made from spawned tasks, as a host makes them: a call awaited in `block_on` itself
/// costs tokio's current-thread runtime an extra driver poll each time it wakes.
async fn calls_from_tasks(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: &JsonObject,
    calls: u64,
    inflight: usize,
) -> anyhow::Result<(Duration, Vec<u64>)> {
    let mut workers = JoinSet::new();
    let started = Instant::now();
    for worker in 0..inflight as u64 {
        let share = calls / inflight as u64 + u64::from(worker < calls % inflight as u64);
        let peer = peer.clone();
        let tool = tool.to_owned();
        let arguments = arguments.clone();
        workers.spawn(async move {
            let mut latencies = Vec::with_capacity(share as usize);
            for _ in 0..share {
                let t = Instant::now();
                let result = peer
                    .call_tool(
                        CallToolRequestParams::new(tool.clone()).with_arguments(arguments.clone()),
                    )
                    .await?;
                latencies.push(t.elapsed().as_nanos() as u64);
                if result.is_error == Some(true) {
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
