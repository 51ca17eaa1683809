//! The 2026-07-28 HTTP headers that mirror a request's content, made by the session (the
//! HTTP transport sends what its context gives, and reads no message to make headers):
//! `Mcp-Name` for `tools/call`, `prompts/get` and `resources/read`, and a tool call's
//! `Mcp-Param-*` headers from the tool's `x-mcp-header` annotations, as the last
//! `tools/list` described them. A tool whose annotations are invalid is left out of that
//! listing, as a [`ListingProblem`](super::ListingProblem). The rules and the value
//! encoding are `switchboard-protocol`'s `headers`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use switchboard_protocol::headers::{ParamHeaders, header_params, header_text, header_value};
use switchboard_protocol::{ShapeError, Tool, methods};

use crate::params::BaseParams;

/// The header parameters of the tools a session knows, for a transport that sends headers.
#[derive(Debug, Default)]
pub(super) struct ContentHeaders {
    /// By tool name (names the server chose: std's hash), from the last listing.
    params: Mutex<HashMap<String, ParamHeaders>>,
}

impl ContentHeaders {
    /// Takes the header parameters of a new listing's tools (the earlier listing's go).
    pub(super) fn learn(&self, tools: &[Tool]) {
        let params = tools
            .iter()
            .filter_map(|tool| {
                let params = header_params(&tool.input_schema).ok()?;
                (!params.is_empty()).then(|| (tool.name.clone(), params))
            })
            .collect();
        *self.params.lock().unwrap_or_else(|p| p.into_inner()) = params;
    }

    /// The headers of one request: `Mcp-Name`, and a tool call's `Mcp-Param-*`.
    pub(super) fn for_request(&self, method: &str, base: BaseParams<'_>) -> Vec<(String, String)> {
        let named = Named::of(method, base);
        let mut headers = Vec::new();
        let Some(name) = named.name else {
            return headers;
        };
        headers.push(("mcp-name".to_owned(), header_text(name)));
        if method != methods::TOOLS_CALL {
            return headers;
        }
        let params = self.params.lock().unwrap_or_else(|p| p.into_inner());
        for (header, property) in params.get(name).into_iter().flatten() {
            let argument = named.arguments.and_then(|a| a.get(property));
            match header_value(argument) {
                Some(Ok(text)) => headers.push((format!("mcp-param-{header}"), text)),
                // The value itself stays out of the log: it is the caller's argument, of
                // any size.
                Some(Err(_)) => {
                    tracing::warn!(
                        tool = %name,
                        %property,
                        "header parameter not sent: its value is not a string, a boolean or an integer within ±(2^53−1)"
                    );
                }
                None => {}
            }
        }
        headers
    }
}

/// What a request names, and a tool call's arguments.
struct Named<'a> {
    name: Option<&'a str>,
    arguments: Option<&'a Value>,
}

impl<'a> Named<'a> {
    fn of(method: &str, base: BaseParams<'a>) -> Named<'a> {
        let key = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
            methods::RESOURCES_READ => "uri",
            _ => {
                return Named {
                    name: None,
                    arguments: None,
                };
            }
        };
        match base {
            BaseParams::ToolCall { name, arguments } => Named {
                name: Some(name),
                arguments,
            },
            BaseParams::Tree(params) => Named {
                name: params.get(key).and_then(Value::as_str),
                arguments: params.get("arguments"),
            },
        }
    }
}

/// Reads one `tools/list` entry whose `x-mcp-header` annotations must be valid: a tool
/// with an invalid one is left out (the listing reports it as a problem).
pub(super) fn tool_with_valid_headers(text: &str) -> Result<Tool, ShapeError> {
    let tool = Tool::from_json_text(text)?;
    match header_params(&tool.input_schema) {
        Ok(_) => Ok(tool),
        Err(problem) => Err(ShapeError::new(format!(
            "tool `{}` left out: {problem}",
            tool.name
        ))),
    }
}
