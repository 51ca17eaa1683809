//! The tools, prompt and resources of `switchboard-rmcp-peer`, written with
//! rmcp's `#[tool_router]` / `#[tool_handler]` and `#[prompt_router]` /
//! `#[prompt_handler]` macros and `ServerHandler`'s resource methods, exactly
//! as an ordinary rmcp server would be.
//!
//! Tools:
//! - `echo {text}`: returns the text as one text content block (read-only).
//! - `add {a, b}`: returns the decimal sum of two integers (read-only).
//! - `slow {duration_ms = 5000, steps = 5}`: sleeps in `steps` equal steps,
//!   reporting `notifications/progress` after each step when the request
//!   carries a progress token, and stops as soon as the client cancels it.
//! - `fail {}`: always returns a tool result with `isError: true`.
//!
//! Prompt:
//! - `review {code, language?}`: one user message asking for a review of
//!   `code` (in `language` when it is given).
//!
//! Resources:
//! - `peer://readme`: text/plain, [`README_TEXT`].
//! - `peer://logo.png`: image/png, the bytes [`LOGO_BYTES`] as a blob.
//! - the template `peer://notes/{name}`: text/plain, "Note {name}.".
//!
//! Reading any other URI is rmcp's resource-not-found error.
//!
//! Argument validation is left to rmcp's `Parameters<T>` extractor, so
//! invalid arguments are reported the way rmcp reports them for any server.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{
        router::{prompt::PromptRouter, tool::ToolRouter},
        wrapper::Parameters,
    },
    model::{
        CallToolResult, ContentBlock, Implementation, ListResourceTemplatesResult,
        ListResourcesResult, PaginatedRequestParams, ProgressNotificationParam, PromptMessage,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
    },
    prompt, prompt_handler, prompt_router,
    schemars::{self, JsonSchema},
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use serde::Deserialize;

/// Server name reported in `serverInfo` (initialize) and by `server/discover`.
const SERVER_NAME: &str = "switchboard-rmcp-peer";

/// The text of `peer://readme`.
pub(crate) const README_TEXT: &str = "This is the Switchboard rmcp peer.";

/// The bytes of `peer://logo.png`: the PNG signature and two more bytes, so that
/// they are not UTF-8 and hold a NUL and a 0xFF.
pub(crate) const LOGO_BYTES: [u8; 10] = [
    0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0x00, 0xff,
];

/// [`LOGO_BYTES`] in base64, as a `blob` carries them.
const LOGO_BASE64: &str = "iVBORw0KGgoA/w==";

const README_URI: &str = "peer://readme";
const LOGO_URI: &str = "peer://logo.png";
const NOTES_TEMPLATE: &str = "peer://notes/{name}";
/// What every URI of the notes template starts with.
const NOTES_PREFIX: &str = "peer://notes/";

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

/// Arguments of the `review` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReviewArgs {
    /// The code to review.
    code: String,
    /// The language the code is written in.
    language: Option<String>,
}

fn default_duration_ms() -> u64 {
    5000
}

fn default_steps() -> u32 {
    5
}

/// The interop peer's MCP server: a stateless set of test tools, prompts and
/// resources.
#[derive(Debug, Clone)]
pub(crate) struct PeerServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl PeerServer {
    /// Creates the server with its tool and prompt routers built once up front.
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }
}

#[prompt_router]
impl PeerServer {
    /// Ask for a review of a piece of code.
    #[prompt]
    fn review(
        &self,
        Parameters(ReviewArgs { code, language }): Parameters<ReviewArgs>,
    ) -> Vec<PromptMessage> {
        let text = match language {
            Some(language) => format!("Please review this {language} code:\n{code}"),
            None => format!("Please review this code:\n{code}"),
        };
        vec![PromptMessage::new_text(Role::User, text)]
    }
}

/// The contents of the resource at `uri`, if there is one.
fn resource_contents(uri: &str) -> Option<ResourceContents> {
    match uri {
        README_URI => Some(ResourceContents::text(README_TEXT, uri)),
        LOGO_URI => Some(ResourceContents::blob(LOGO_BASE64, uri).with_mime_type("image/png")),
        _ => {
            let name = uri.strip_prefix(NOTES_PREFIX)?;
            (!name.is_empty() && !name.contains('/'))
                .then(|| ResourceContents::text(format!("Note {name}."), uri))
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
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for PeerServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(README_URI, "readme")
                .with_description("About this peer.")
                .with_mime_type("text/plain"),
            Resource::new(LOGO_URI, "logo")
                .with_description("A few bytes of PNG.")
                .with_mime_type("image/png")
                .with_size(LOGO_BYTES.len() as u64),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(NOTES_TEMPLATE, "note")
                .with_description("A note by name.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resource_contents(&request.uri)
            .map(|contents| ReadResourceResult::new(vec![contents]).into())
            .ok_or_else(|| {
                // The URI in `data`, as the 2026-07-28 revision asks of a missing resource.
                let data = rmcp::serde_json::json!({ "uri": request.uri });
                ErrorData::resource_not_found(format!("no resource {}", request.uri), Some(data))
            })
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
        assert!(info.capabilities.prompts.is_some());
        assert!(info.capabilities.resources.is_some());
    }

    #[test]
    fn the_review_prompt_has_one_required_and_one_optional_argument() {
        let prompts = PeerServer::new().prompt_router.list_all();
        let shown: Vec<String> = prompts
            .iter()
            .flat_map(|p| p.arguments.iter().flatten())
            .map(|a| format!("{} required={:?}", a.name, a.required))
            .collect();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0].name, "review");
        assert_eq!(
            shown,
            ["code required=Some(true)", "language required=Some(false)"]
        );
    }

    #[test]
    fn resources_read_as_text_blob_or_template_and_nothing_else() {
        use base64::Engine as _;
        let blob = base64::engine::general_purpose::STANDARD.encode(LOGO_BYTES);
        assert_eq!(blob, LOGO_BASE64);
        let shown = |uri: &str| format!("{:?}", resource_contents(uri));
        assert!(shown(README_URI).contains(README_TEXT));
        assert!(shown(LOGO_URI).contains(LOGO_BASE64));
        assert!(shown("peer://notes/ada").contains("Note ada."));
        for missing in ["peer://notes/", "peer://notes/a/b", "peer://other"] {
            assert!(resource_contents(missing).is_none(), "{missing}");
        }
    }
}
