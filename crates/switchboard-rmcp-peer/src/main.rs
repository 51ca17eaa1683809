//! `switchboard-rmcp-peer`: a reference MCP server built on the official Rust
//! SDK (`rmcp`), served over stdio.
//!
//! Switchboard's client tests and benchmarks spawn this binary as an interop
//! peer, so it deliberately stays an ordinary rmcp server: the tools live in
//! [`server`], every protocol behaviour (initialization, version negotiation,
//! argument errors, cancellation, progress, shutdown) is the SDK's own, and
//! nothing is special-cased for our client.
//!
//! Stdout carries only newline-delimited JSON-RPC. The server exits with
//! status 0 when stdin reaches EOF; a transport or startup error is returned
//! from `main`, which reports it on stderr and exits non-zero.

mod server;

use rmcp::ServiceExt as _;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `stdio_pipes` is rmcp's recommended stdio transport when both streams
    // are pipes (how MCP clients launch servers); it falls back to the
    // blocking `stdio()` handles otherwise.
    let running = server::PeerServer::new()
        .serve(rmcp::transport::stdio_pipes())
        .await?;
    running.waiting().await?;
    Ok(())
}
