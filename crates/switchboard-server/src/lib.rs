//! Switchboard as an MCP server.
//!
//! [`core`] is what every MCP server built here shares: a [`core::Service`] answers typed
//! requests, and the core serves it in both eras (2026-07-28 with per-request `_meta`, and
//! `initialize` with 2025-11-25 and earlier) on the transports of this crate. The authoring
//! kit ([`author`]) makes a service of typed Rust tools, prompts and resources: an MCP
//! server in a few lines. The gateway (`switchboard-gateway`) is another such service;
//! this crate depends on no client crate.

pub mod author;
pub mod core;
pub mod http;
pub mod stdio;
