//! The authoring kit: an MCP server written as typed Rust functions, served in both eras
//! (2026-07-28 and `initialize` with 2025-11-25 and earlier) by the core on every
//! transport of this crate. `docs/authoring.md` walks through a whole server.
//!
//! [`Server::builder`] collects [`Tool`]s, [`Prompt`]s and [`Resource`]s;
//! [`ServerBuilder::build`] checks them (names, schemas) and gives a [`Server`], which is a
//! [`crate::core::Service`].
//!
//! - A tool's input is a type deriving `serde::Deserialize` and `schemars::JsonSchema`:
//!   its schema is the tool's `inputSchema` (JSON Schema 2020-12, an object at the root,
//!   nested types under `$defs` with local references). Arguments are checked against it
//!   before the handler runs; arguments that do not fit are answered with an `isError`
//!   result naming the key and what is wrong, as MCP asks for input errors (the model
//!   can correct its call).
//! - A handler is an async fn or closure taking the input and the [`RequestContext`]
//!   (cancellation, progress, log messages) and returning `Result<O, ToolError>`: `O` is a
//!   [`String`], a [`ToolResult`], or [`Structured<T>`] (the tool then declares `T`'s schema
//!   as its `outputSchema` and returns `structuredContent`). [`ToolError::new`] is an
//!   `isError` result for the model; [`ToolError::protocol`] a JSON-RPC error.
//! - Every handler runs in a task of its own. A panic becomes an error naming the tool
//!   (the server goes on); a cancelled request aborts the task (its future is dropped at
//!   its next `.await`); a result over the cap ([`ServerBuilder::max_result_bytes`],
//!   [`DEFAULT_MAX_RESULT_BYTES`]) becomes an error that says the size and the cap, never
//!   a truncated result.
//! - Lists come in registration order, on one page (a cursor is refused with -32602). A
//!   built server's lists never change, so it announces nothing ([`Service::events`]
//!   gives a receiver that stays open and silent). No resource templates, subscriptions
//!   or completions.
//!
//! [`Service::events`]: crate::core::Service::events

mod error;
mod guard;
mod prompt;
mod resource;
mod schema;
mod server;
mod tool;

#[cfg(test)]
mod tests;

pub use error::{BuildError, ToolError};
pub use prompt::Prompt;
pub use resource::{Resource, ResourceContents};
pub use server::{DEFAULT_MAX_RESULT_BYTES, Server, ServerBuilder};
pub use tool::{NoArguments, Structured, Tool, ToolResult, ToolReturn};

pub use crate::core::{AskError, ClientMethod, LogLevel, LogMessage, RequestContext};
/// The schema derive, re-exported so that a server's version matches this crate's.
pub use schemars;
/// The content blocks of results and messages.
pub use switchboard_protocol::ContentBlock;
/// A prompt's messages and who speaks them.
pub use switchboard_protocol::{PromptMessage, Role};
