//! The HTTP floor: a keep-alive HTTP/1.1 POST loop on one loopback connection with no MCP
//! logic and no JSON parsing. `raw-http-client` writes prebuilt request bytes (those our
//! client sends for a `tools/call` echo in the era given by `--era`) with one `write` and
//! reads each answer by `Content-Length` ([`crate::http1::read_message`]);
//! `raw-http-server` answers every request with the canned bytes of the trivial HTTP
//! server's echo answer in that era.

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cli::{ClientArgs, EraArg};
use crate::http1::{self, Answer};
use crate::stats::RunResult;

/// The legacy-era request body (as our client sends it: the stdio line).
pub const LEGACY_REQUEST: &[u8] = crate::raw_pipe::REQUEST;

/// The modern-era (2026-07-28) request body (as our client sends it).
pub const MODERN_REQUEST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"switchboard\",\"version\":\"0.1.0\",\"title\":\"Switchboard\"},\"progressToken\":7}}}\n";

/// The legacy-era answer body (as the trivial HTTP server writes it).
pub const LEGACY_RESPONSE: &str =
    r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}"#;

/// The modern-era answer body.
pub const MODERN_RESPONSE: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}"#;

/// `raw-http-server --port P --era E`: the canned answer to every request, until stdin
/// closes.
pub fn serve(port: u16, era: EraArg) -> std::io::Result<()> {
    let body = match era {
        EraArg::Modern => MODERN_RESPONSE,
        EraArg::Legacy | EraArg::Auto => LEGACY_RESPONSE,
    };
    http1::serve(port, move |_| Answer::json(body.as_bytes().to_vec()))
}

/// The request bytes for `era` to `authority` (`127.0.0.1:PORT`): the headers our client
/// sends, in its order.
pub fn request_bytes(era: EraArg, authority: &str) -> Vec<u8> {
    let (body, era_headers) = match era {
        EraArg::Modern => (
            MODERN_REQUEST,
            "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n",
        ),
        EraArg::Legacy | EraArg::Auto => (
            LEGACY_REQUEST,
            "mcp-session-id: bench-1\r\nmcp-protocol-version: 2025-11-25\r\n",
        ),
    };
    let mut bytes = format!(
        "POST /mcp HTTP/1.1\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\n{era_headers}host: {authority}\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// `raw-http-client --url URL`: `args.warmup` untimed and `args.calls` timed sequential
/// round trips on one connection. `--tool`, `--arg`, `--text` and `--runtime` are ignored.
pub fn run(args: &ClientArgs) -> anyhow::Result<RunResult> {
    let Some(url) = &args.url else {
        bail!("--url is required");
    };
    if args.inflight > 1 {
        bail!("the HTTP floor is sequential only (--inflight 1)");
    }
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .with_context(|| format!("{url} is not an http:// URL"))?;
    let request = request_bytes(args.era, authority);
    let started = Instant::now();
    let stream = TcpStream::connect(authority).with_context(|| format!("connecting to {url}"))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mut round_trip = || -> anyhow::Result<()> {
        writer.write_all(&request)?;
        let answer = http1::read_message(&mut reader)?.context("the server closed")?;
        if !answer.start.starts_with("HTTP/1.1 200") {
            bail!("the server answered {}", answer.start);
        }
        Ok(())
    };
    // The first round trip doubles as "init".
    round_trip()?;
    let init = started.elapsed();
    for _ in 0..args.warmup {
        round_trip()?;
    }
    let mut latencies = Vec::with_capacity(args.calls as usize);
    let t0 = Instant::now();
    for _ in 0..args.calls {
        let t = Instant::now();
        round_trip()?;
        latencies.push(t.elapsed().as_nanos() as u64);
    }
    Ok(RunResult::from_latencies(
        "raw",
        1,
        t0.elapsed(),
        &mut latencies,
        init,
        None,
    ))
}
