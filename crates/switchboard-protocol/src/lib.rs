//! MCP protocol vocabulary: versions and eras, method names, `_meta` keys, error codes, and
//! the types of the messages a client reads and writes.
//!
//! Types mirror the specification and are named as it names them. Reading is lenient where
//! the specification allows growth (unknown fields are kept in `raw` or ignored) and strict
//! where a wrong shape would mislead the caller (a tool without a name is an error).
//! Serialization happens here and nowhere else in the client; the server crate answers with
//! these types too, so both sides share one model of each message.
//!
//! The HTTP rules both sides share are here too, as text rules with no I/O: [`sse`], the
//! server-sent events codec (an incremental parser with a cap on event size, and the
//! writer), and [`headers`], the 2026-07-28 `Mcp-*` header rules.
//!
//! # Map
//!
//! MCP vocabulary: versions and eras, method names, `_meta` keys, error codes, the types a
//! client reads and a server writes (`Tool`, `CallToolResult`, `ContentBlock`, …;
//! `answers.rs`: prompt messages, list results, notification parameters, error data; `to_json` makes
//! the tree of any of them; `arguments.rs`: `ArgumentCheck`, arguments checked against an
//! input schema with messages that name the key, for the CLI, the runtime and servers; `ReadResourceResult`; the
//! skills extension's `SkillEntry`, `skills.rs`: an entry's shape checked as it is read,
//! its files `{uri, sha256 digest, size}` or `"dynamic"`). Pure data; no I/O.

mod answers;
mod arguments;
mod call_result;
pub mod headers;
mod list_page;
mod log_level;
pub mod methods;
mod read_result;
mod shape;
mod skills;
pub mod sse;
mod types;
mod version;

pub use answers::{
    CancelledParams, EmptyResult, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingMessageParams, PromptMessage,
    ResourceNotFoundData, ResourceUpdatedParams, Role, SubscriptionsAcknowledgedParams,
    UnsupportedVersionData,
};
pub use arguments::{ArgumentCheck, ArgumentProblems, InvalidSchema};
pub use list_page::{ListPage, NextCursor, PageEntries};
pub use log_level::LogLevel;
pub use read_result::{ReadResourceResult, ResourceContents};
pub use shape::ShapeError;
pub use skills::{
    DYNAMIC_RESOURCES, MAX_SKILL_BYTES, MAX_SKILL_FILES, SKILLS_EXTENSION, Sha256Digest,
    SkillEntry, SkillFile, SkillResources, declares_skills,
};
pub use types::*;
pub use version::*;

/// Keys in `_meta` defined by the 2026-07-28 protocol.
pub mod meta {
    /// The protocol version of a request (modern era, required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for a request (modern era, required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's implementation info (modern era).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The server's implementation info on results (modern era).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The subscription a notification belongs to (modern era).
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The log level wanted for a request (modern era).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The progress token of a request (both eras).
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// The JSON tree of one of this crate's messages, as it goes on the wire.
///
/// Serializing these types to a tree cannot fail (their keys are strings, their leaves
/// strings, numbers, booleans and `Value`s); were it to, the tree is `null`.
pub fn to_json(message: &impl Message) -> serde_json::Value {
    serde_json::to_value(message).unwrap_or(serde_json::Value::Null)
}

/// The messages [`to_json`] takes: this crate's types that a peer sends.
pub trait Message: serde::Serialize + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! messages {
    ($($message:ty),* $(,)?) => {
        $(
            impl sealed::Sealed for $message {}
            impl Message for $message {}
        )*
    };
}

messages!(
    CallToolResult,
    CancelledParams,
    ContentBlock,
    DiscoverResult,
    EmptyResult,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListPromptsResult,
    ListResourceTemplatesResult,
    ListResourcesResult,
    ListToolsResult,
    LoggingMessageParams,
    ProgressParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceNotFoundData,
    ResourceUpdatedParams,
    ServerCapabilities,
    SubscriptionsAcknowledgedParams,
    Tool,
    UnsupportedVersionData,
);

/// A JSON value's kind as a message says it ("a string", "an object", "null"), for errors
/// and findings about a value of the wrong shape.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// MCP error codes beyond the JSON-RPC ones.
pub mod error_codes {
    /// Resource not found (2025-11-25 and earlier).
    pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
    /// HTTP headers do not match the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// A client capability the request needs was not declared (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
}
