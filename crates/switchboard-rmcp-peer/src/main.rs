//! `switchboard-rmcp-peer`: a reference MCP server built on the official Rust
//! SDK (`rmcp`), served over stdio, or over Streamable HTTP with `--http PORT`.
//!
//! Switchboard's client tests and benchmarks spawn this binary as an interop
//! peer, so it deliberately stays an ordinary rmcp server: the tools, the prompt
//! and the resources live in [`server`], every protocol behaviour (initialization, version negotiation,
//! argument errors, cancellation, progress, shutdown, and over HTTP sessions,
//! streams and Host checks) is the SDK's own, and nothing is special-cased for
//! our client.
//!
//! Over stdio, stdout carries only newline-delimited JSON-RPC and the server
//! exits with status 0 when stdin reaches EOF. Over HTTP it listens on
//! `127.0.0.1:PORT` (loopback only; port 0: a free one), prints its endpoint's URL
//! (`http://127.0.0.1:PORT/mcp`) as the one line of its stdout once it listens, and
//! serves with rmcp's `StreamableHttpService` and
//! its default configuration, served by hyper's HTTP/1 connection handler,
//! until it is killed. Accepted connections get `TCP_NODELAY`, as production
//! HTTP servers set it: without it the kernel holds the first event of an SSE
//! answer (written after the head) until the client's delayed ACK of the head,
//! about 40 ms per call on loopback. A transport or startup error is returned from `main`,
//! which reports it on stderr and exits non-zero.
//!
//! # Map
//!
//! An MCP server on the official Rust SDK (`rmcp`: tools, a prompt, text and binary
//! resources and a template, as the Python peer `scripts/peers/fastmcp_server.py` has
//! them), over stdio or Streamable HTTP (`--http PORT`: rmcp's `StreamableHttpService`
//! behind hyper), used only as an interop peer in tests and benchmarks. Not published.

mod server;

use std::sync::Arc;

use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            // `stdio_pipes` is rmcp's recommended stdio transport when both streams
            // are pipes (how MCP clients launch servers); it falls back to the
            // blocking `stdio()` handles otherwise.
            let running = server::PeerServer::new()
                .serve(rmcp::transport::stdio_pipes())
                .await?;
            running.waiting().await?;
            Ok(())
        }
        [flag, port] if flag == "--http" => serve_http(port.parse()?).await,
        _ => Err(format!("usage: switchboard-rmcp-peer [--http PORT]; got {args:?}").into()),
    }
}

async fn serve_http(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let service = StreamableHttpService::new(
        || Ok(server::PeerServer::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The one line of stdout over HTTP: whoever started it with port 0 learns the port.
    let url = format!("http://{}/mcp", listener.local_addr()?);
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{url}")?;
        stdout.flush()?;
    }
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = connection.await;
        });
    }
}
