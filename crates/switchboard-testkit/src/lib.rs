//! Test support for Switchboard.
//!
//! - [`canned`]: one hand-written HTTP answer per request, for loopback servers in tests.
//! - [`fixture`]: a small synchronous MCP server over stdin/stdout, built from our own
//!   wire and protocol types, with well-behaved modes (`good`, `many-tools`) and
//!   deliberately broken ones (no reply, garbage on stdout, crashes, wrong ids, …), also
//!   served over Streamable HTTP with `--http`.
//!   The `switchboard-fixture` binary runs it (test binaries may call
//!   [`fixture::run_fixture`] too; the shipped `switchboard` binary never links it).
//! - [`jwt`]: an ES256 signing key and the JWTs it signs, for OAuth protected resources.
//! - [`locate`]: builds and finds the `switchboard-fixture` binary for tests in other
//!   crates.
//! - [`serve`]: HTTP servers for tests (the fixture behind its `--http` front end, real
//!   peers on a port), owned and killed on drop.
//! - [`soak`]: the chaos soak of the gateway (five fixture servers killed and frozen at
//!   random under a steady load of calls); the `switchboard-soak` binary runs it.
//! - [`wait`]: bounded waits (a future, a condition looked at again and again, a child's
//!   exit) that fail with a readable message.
//!
//! # Map
//!
//! Fixture MCP servers (`switchboard-fixture --mode …`), good and deliberately broken,
//! built on our own wire/protocol types, also over Streamable HTTP (`--http`,
//! `serve::HttpServer`: both eras, listen streams routed by their subscription id,
//! 2026-07-28 headers and their Base64 sentinel checked); test helpers that locate binaries
//! and peers and bound waits; `switchboard-peak`, a launcher that reports a command's own
//! peak memory (the fault matrix measures through it); `switchboard-soak`, the gateway's
//! chaos soak. Not published.

pub mod canned;
pub mod fixture;
pub mod jwt;
pub mod locate;
pub mod serve;
pub mod soak;
pub mod wait;
