//! The floor: two processes passing one JSON line each way over blocking std pipes, with
//! no JSON parsing and no MCP logic. The bytes are those of a legacy-era `tools/call` echo
//! as our client sends it and of the fixture's answer.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cli::ClientArgs;
use crate::stats::RunResult;

/// The request line the client sends.
pub const REQUEST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"progressToken\":7}}}\n";

/// The response line the server answers every line with.
pub const RESPONSE: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n";

/// `raw-pipe-server`: answers every line on stdin with [`RESPONSE`] until EOF.
pub fn serve() -> io::Result<()> {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut output = stdout.lock();
    let mut line = Vec::with_capacity(512);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        output.write_all(RESPONSE)?;
        output.flush()?;
    }
}

/// `raw-pipe-client`: spawns `args.server`, then makes `args.warmup` untimed and
/// `args.calls` timed round trips, keeping `args.inflight` lines outstanding.
/// `--tool`, `--arg`, `--text` and `--runtime` are ignored.
pub fn run(args: &ClientArgs) -> anyhow::Result<RunResult> {
    let Some((program, server_args)) = args.server.split_first() else {
        bail!("--server needs a command");
    };
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(server_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("spawning {program}"))?;
    let outcome = exchange(&mut child, args, started);
    drop(child.stdin.take());
    let _ = child.wait();
    outcome
}

fn exchange(child: &mut Child, args: &ClientArgs, started: Instant) -> anyhow::Result<RunResult> {
    let mut stdin = child.stdin.take().context("no stdin pipe")?;
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout pipe")?);
    let mut line = Vec::with_capacity(512);
    let mut read_line = |line: &mut Vec<u8>| -> anyhow::Result<()> {
        line.clear();
        if stdout.read_until(b'\n', line)? == 0 {
            bail!("the server closed its stdout");
        }
        Ok(())
    };
    // First round trip doubles as "init".
    stdin.write_all(REQUEST)?;
    read_line(&mut line)?;
    let init = started.elapsed();
    for _ in 0..args.warmup {
        stdin.write_all(REQUEST)?;
        read_line(&mut line)?;
    }
    let inflight = args.inflight.max(1);
    let calls = args.calls;
    let mut latencies = Vec::with_capacity(calls as usize);
    let mut sent_at: VecDeque<Instant> = VecDeque::with_capacity(inflight);
    let mut sent = 0u64;
    let t0 = Instant::now();
    while sent < calls && sent_at.len() < inflight {
        sent_at.push_back(Instant::now());
        stdin.write_all(REQUEST)?;
        sent += 1;
    }
    while let Some(at) = sent_at.pop_front() {
        read_line(&mut line)?;
        latencies.push(at.elapsed().as_nanos() as u64);
        if sent < calls {
            sent_at.push_back(Instant::now());
            stdin.write_all(REQUEST)?;
            sent += 1;
        }
    }
    let elapsed: Duration = t0.elapsed();
    Ok(RunResult::from_latencies(
        "raw",
        inflight as u64,
        elapsed,
        &mut latencies,
        init,
        None,
    ))
}
