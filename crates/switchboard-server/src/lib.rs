//! Switchboard as an MCP server.
//!
//! [`core`] is what every MCP server built here shares: a [`core::Service`] answers typed
//! requests, and the core serves it in both eras (2026-07-28 with per-request `_meta`, and
//! `initialize` with 2025-11-25 and earlier) on the transports of this crate. The gateway
//! ([`gateway`]) is one such service: the tools, prompts and resources of every server a
//! [`switchboard_runtime::Runtime`] operates, passed through faithfully. The authoring
//! kit ([`author`]) makes a service of typed Rust tools, prompts and resources: an MCP
//! server in a few lines.

mod audience;
pub mod author;
pub mod core;
pub mod gateway;
pub mod http;
pub mod relay;
pub mod stdio;

/// `docs/authoring.md`, whose Rust snippets are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/authoring.md")]
pub struct AuthoringGuide;
