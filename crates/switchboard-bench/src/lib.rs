//! The Switchboard benchmark harness.
//!
//! One binary, `switchboard-bench`, holds every Rust participant of the benchmarks and the
//! driver that runs them:
//!
//! - [`ours`]: our client (`switchboard-session`) making sequential or pipelined
//!   `tools/call` echo calls against any stdio server;
//! - [`rmcp_client`]: the same measurement with the official Rust SDK's client (`rmcp`);
//! - [`raw_pipe`]: the floor, two processes passing the same JSON bytes back and forth over
//!   blocking pipes with no MCP logic;
//! - [`trivial_server`]: a minimal blocking Rust MCP echo server;
//! - [`trivial_http`]: the same over Streamable HTTP (keep-alive, either era), and
//!   [`raw_http`], the HTTP floor: a keep-alive POST loop of prebuilt bytes against canned
//!   answers (both on [`http1`], the least HTTP/1.1 they need);
//! - [`startup`]: the start-up scenarios (cold start of many servers through
//!   `switchboard-runtime`, a 10,000-tool catalog, RSS with many live servers, the one-shot
//!   CLI's baseline and a wall-time/peak-RSS wrapper);
//! - [`sandbox`]: the sandbox scenario's starts (unsandboxed, in the default sandbox and in
//!   relaxed ones); its per-call half is [`ours`] with `--sandbox-launcher`;
//! - [`gateway_peers`]: scenario 10, our gateway beside the gateways a user could install
//!   (supergateway, mcp-proxy from npm and PyPI, FastMCP's proxy), one load driver for all;
//! - [`gateway_scale`]: scenario 11, one gateway holding 10,000 legacy sessions and GET
//!   streams (memory per session and per stream, every session served) and its session cap;
//! - [`driver`]: runs every client against every server in interleaved rounds, in three CPU
//!   regimes, measures instructions per call with callgrind, and writes the report
//!   ([`report`]) and the raw numbers.
//!
//! Every client process prints exactly one JSON line, a [`stats::RunResult`], on stdout.
//! The TypeScript and Python SDK clients live in `bench/` at the repository root and print
//! the same line.
//!
//! # Map
//!
//! The benchmark harness (`scripts/bench.sh` runs it): our client, rmcp's, the TS and
//! Python SDK clients (`bench/*.mjs|py`) and a raw blocking pipe floor against the same
//! servers, over stdio and over Streamable HTTP on loopback (both eras; its own trivial
//! HTTP server and a raw keep-alive HTTP/1.1 floor), in pinned/split/unpinned CPU regimes,
//! plus callgrind instruction counts; writes `BENCHMARKS.md` (tables generated,
//! `bench/NOTES.md` appended). Its tests are smoke runs with no timing assertions. Not
//! published.

// The driver reports progress on stderr and the clients their result on stdout: printing
// is this crate's interface.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod callgrind;
pub mod cli;
pub mod driver;
pub mod gateway_peers;
pub mod gateway_scale;
pub mod http1;
pub mod machine;
pub mod ours;
pub mod raw_http;
pub mod raw_pipe;
pub mod report;
pub mod rmcp_client;
pub mod sandbox;
pub mod startup;
pub mod stats;
pub mod trivial_http;
pub mod trivial_server;
