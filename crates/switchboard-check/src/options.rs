//! How a check run behaves: deadlines and grace periods, which tools the user allows the
//! checker to call, limits, and an observer for progress.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::error::CheckError;
use crate::report::CheckResult;

/// A tool call the user allows, with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name on the server.
    pub tool: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
}

impl ToolCall {
    /// A call from a tool name and its arguments as JSON text (an object).
    pub fn parse(tool: &str, arguments: &str) -> Result<ToolCall, CheckError> {
        let invalid = |detail: String| CheckError::InvalidCall {
            tool: tool.to_owned(),
            detail,
        };
        match serde_json::from_str::<Value>(arguments) {
            Ok(value @ Value::Object(_)) => Ok(ToolCall {
                tool: tool.to_owned(),
                arguments: value,
            }),
            Ok(_) => Err(invalid(
                "arguments must be a JSON object, e.g. '{\"text\":\"hi\"}'".into(),
            )),
            Err(e) => Err(invalid(format!(
                "arguments are not valid JSON ({e}); write a JSON object, e.g. '{{\"text\":\"hi\"}}'"
            ))),
        }
    }
}

/// Receives progress while checks run (the CLI draws it on a terminal). Called from the
/// task that runs the checks; keep it quick.
pub trait Observer: Send + Sync {
    /// A check started on a server.
    fn started(&self, server: &str, check: &'static str) {
        let _ = (server, check);
    }
    /// A check finished on a server.
    fn finished(&self, server: &str, result: &CheckResult) {
        let _ = (server, result);
    }
}

/// Settings for a run. [`Options::default`] gives short deadlines suited to a local stdio
/// server; every wait the checker does is bounded by one of these.
#[derive(Clone)]
pub struct Options {
    /// Deadline for starting and initializing the server.
    pub connect_timeout: Duration,
    /// Deadline for each request (tool calls included).
    pub request_timeout: Duration,
    /// How long the checker watches after a cancellation for a result or progress.
    pub cancel_grace: Duration,
    /// How long the server may take to exit after stdin closes (and again after SIGTERM).
    pub shutdown_grace: Duration,
    /// How long the derived long call for `cancellation` asks the tool to run.
    pub long_call_duration: Duration,
    /// Largest acceptable serialized result of a normal call, in bytes.
    pub max_result_bytes: usize,
    /// Tools the user allows to be called, with arguments (`--call TOOL ARGS`). Tools not
    /// annotated read-only are called only when named here.
    pub calls: Vec<ToolCall>,
    /// The long call for `cancellation` (`--long-call TOOL ARGS`).
    pub long_call: Option<ToolCall>,
    /// Progress receiver.
    pub observer: Option<Arc<dyn Observer>>,
}

impl Default for Options {
    /// Connect 10 s, requests 5 s, cancel grace 1 s, shutdown grace 1 s, long call 3 s,
    /// results 100 KiB.
    fn default() -> Self {
        Options {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            cancel_grace: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(1),
            long_call_duration: Duration::from_secs(3),
            max_result_bytes: 100 * 1024,
            calls: Vec::new(),
            long_call: None,
            observer: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("cancel_grace", &self.cancel_grace)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("long_call_duration", &self.long_call_duration)
            .field("max_result_bytes", &self.max_result_bytes)
            .field("calls", &self.calls)
            .field("long_call", &self.long_call)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}
