//! The tool set of `switchboard-rmcp-peer`, written with rmcp's
//! `#[tool_router]` / `#[tool_handler]` macros exactly as an ordinary rmcp
//! server would be.
//!
//! Tools:
//! - `echo {text}`: returns the text as one text content block (read-only).
//! - `add {a, b}`: returns the decimal sum of two integers (read-only).
//! - `slow {duration_ms = 5000, steps = 5}`: sleeps in `steps` equal steps,
//!   reporting `notifications/progress` after each step when the request
//!   carries a progress token, and stops as soon as the client cancels it.
//! - `fail {}`: always returns a tool result with `isError: true`.
//!
//! Argument validation is left to rmcp's `Parameters<T>` extractor, so
//! invalid arguments are reported the way rmcp reports them for any server.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, Implementation, ProgressNotificationParam,
        ServerCapabilities, ServerConfig,
    },
    schemars::{self, JsonSchema},
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use serde::Deserialize;

/// Server name reported in `serverInfo` (initialize) and by `server/discover`.
const SERVER_NAME: &str = "switchboard-rmcp-peer";

/// Arguments of the `echo` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EchoArgs {
    /// The text to echo back.
    text: String,
}

/// Arguments of the `add` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    /// The left-hand operand.
    a: i64,
    /// The right-hand operand.
    b: i64,
}

/// Arguments of the `slow` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SlowArgs {
    /// Total time to sleep, in milliseconds.
    #[serde(default = "default_duration_ms")]
    duration_ms: u64,
    /// Number of equal steps to sleep in; a progress notification follows each step.
    #[serde(default = "default_steps")]
    steps: u32,
}

fn default_duration_ms() -> u64 {
    5000
}

fn default_steps() -> u32 {
    5
}

/// The interop peer's MCP server: a stateless set of test tools.
#[derive(Debug, Clone)]
pub(crate) struct PeerServer {
    tool_router: ToolRouter<Self>,
}

impl PeerServer {
    /// Creates the server with its tool router built once up front.
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl PeerServer {
    /// Echo the given text back as a single text content block.
    #[tool(annotations(read_only_hint = true))]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    /// Add two integers and return their sum as text.
    #[tool(annotations(read_only_hint = true))]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        // Widen so that no pair of i64 operands can overflow.
        (i128::from(a) + i128::from(b)).to_string()
    }

    /// Sleep for `duration_ms` in `steps` equal steps, sending a progress
    /// notification after each step when the request has a progress token;
    /// stops promptly when the request is cancelled. Returns "done".
    #[tool]
    async fn slow(
        &self,
        Parameters(SlowArgs { duration_ms, steps }): Parameters<SlowArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let progress_token = context.meta.get_progress_token();
        let total = Duration::from_millis(duration_ms);
        // With zero steps, sleep the whole duration once and report no progress.
        let (step_count, step) = match steps {
            0 => (1, total),
            n => (n, total / n),
        };
        for i in 1..=step_count {
            tokio::select! {
                () = context.ct.cancelled() => {
                    // rmcp drops the response to a cancelled request; this
                    // only ends the handler.
                    return Err(ErrorData::internal_error("request cancelled", None));
                }
                () = tokio::time::sleep(step) => {}
            }
            if steps > 0
                && let Some(token) = &progress_token
            {
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(i))
                    .with_total(f64::from(steps));
                // A closed transport ends the service anyway; nothing to do here.
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        Ok("done".to_owned())
    }

    /// Always fail: returns a tool result with isError set.
    #[tool]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("this tool always fails")])
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PeerServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_four_tools_with_expected_annotations() {
        let server = PeerServer::new();
        let tools = server.tool_router.list_all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["add", "echo", "fail", "slow"]);
        for tool in &tools {
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            let expected = matches!(tool.name.as_ref(), "echo" | "add").then_some(true);
            assert_eq!(read_only, expected, "readOnlyHint of {}", tool.name);
        }
    }

    #[test]
    fn server_info_carries_the_peer_name() {
        let info = PeerServer::new().get_info();
        assert_eq!(info.server_info.name, SERVER_NAME);
        assert!(info.capabilities.tools.is_some());
    }
}
