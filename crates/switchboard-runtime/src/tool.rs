//! The `Tool` trait: what the host's built-in tools and bridged MCP tools both implement.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;
use switchboard_protocol::ProgressParams;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::output::ToolOutput;

/// A boxed future of a tool's output.
pub type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// What the agent loop gives a tool call.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// Cancelling it ends the call (an MCP call sends `notifications/cancelled`).
    pub cancel: CancellationToken,
    /// Receives progress updates, when the host wants them.
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    /// Overrides the call's deadline.
    pub timeout: Option<Duration>,
    /// Receives the server's log messages that can only be this call's (`params` of
    /// `notifications/message`; see `CallOptions::log_messages`); else they are notices.
    pub log_messages: Option<mpsc::Sender<serde_json::Value>>,
    /// The trace context an MCP call sends its server (`_meta.traceparent`, and the
    /// `traceparent` header over HTTP); none by default.
    pub trace: Option<switchboard_session::TraceContext>,
    /// The session to send an MCP call on in place of its server's own: one the host
    /// opened with [`ServerHandle::open_session_as`](crate::ServerHandle) for a caller's
    /// credentials. It must be a session of the tool's server; none by default.
    pub session: Option<switchboard_session::Session>,
}

/// A tool the agent loop can call. Built-in tools and bridged MCP tools implement it alike
/// and return through the same [`ToolOutput`] boundary.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// Description for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments (an object schema).
    fn input_schema(&self) -> &Value;
    /// Runs the tool. Failures are outputs with `is_error`, never panics.
    fn call(&self, arguments: Value, context: ToolContext) -> ToolFuture;
}
