//! Message types a client reads and writes, and a server answers with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ShapeError;

/// Describes a client or server implementation (self-asserted: display only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the implementation does, in a sentence (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The implementation's website (2025-11-25).
    #[serde(
        default,
        rename = "websiteUrl",
        skip_serializing_if = "Option::is_none"
    )]
    pub website_url: Option<String>,
}

/// `{ "listChanged": bool }` style capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// Whether the server sends list-changed notifications.
    #[serde(default)]
    pub list_changed: bool,
}

/// The resources capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the server sends list-changed notifications.
    #[serde(default)]
    pub list_changed: bool,
    /// Whether the server supports subscriptions to resource updates.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subscribe: bool,
}

/// What a server declared it offers. Absent means not offered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Logging (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// Result of `initialize` (legacy era).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who the server says it is.
    pub server_info: Implementation,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Result of `server/discover` (modern era).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result metadata (may carry `io.modelcontextprotocol/serverInfo`).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Hints about a tool's behaviour. Untrusted unless the server is trusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating the call has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// True when no hint is given (a definition then has no `annotations`).
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A tool definition. `raw` keeps the definition exactly as the server sent it; the
/// definition serializes from the typed fields (a server's `tools/list` entry), not `raw`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name on the wire.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (`Value::Null` when the server sent none).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// The whole definition as received (`Value::Null` for one made here).
    #[serde(skip)]
    pub raw: Value,
}

impl Tool {
    /// Reads one tool definition. Fails only when there is no usable name; other oddities
    /// (missing schema, bad annotations) are kept for checks to report.
    pub fn from_json(raw: Value) -> Result<Tool, ShapeError> {
        let object = raw
            .as_object()
            .ok_or("the tool definition is not an object")?;
        let name = match object.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(_) => return Err("the tool's `name` is not a string".into()),
            None => return Err("the tool has no `name`".into()),
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let annotations = object
            .get("annotations")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default();
        Ok(Tool {
            title: text("title"),
            description: text("description"),
            input_schema: object.get("inputSchema").cloned().unwrap_or(Value::Null),
            output_schema: object.get("outputSchema").cloned(),
            annotations,
            name,
            raw,
        })
    }

    /// Reads one tool definition from its JSON text (one entry of a `tools/list` page). A
    /// definition that is not a tree (nested deeper than the parser's limit) fails like one
    /// without a name, named by its `name` when that can still be read.
    pub fn from_json_text(text: &str) -> Result<Tool, ShapeError> {
        match serde_json::from_str::<Value>(text) {
            Ok(raw) => Tool::from_json(raw),
            Err(error) => {
                /// The name alone: skipping the other members has no depth limit.
                #[derive(Deserialize)]
                struct NameOnly {
                    name: String,
                }
                Err(match serde_json::from_str::<NameOnly>(text) {
                    Ok(NameOnly { name }) => {
                        format!("tool `{name}` cannot be read: {error}").into()
                    }
                    Err(_) => format!("the tool definition cannot be read: {error}").into(),
                })
            }
        }
    }

    /// True when the server marked the tool read-only.
    pub fn is_read_only(&self) -> bool {
        self.annotations.read_only_hint == Some(true)
    }
}

/// One content block of a tool result or prompt message.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// The resource name.
        name: String,
        /// The block as received.
        raw: Value,
    },
    /// An embedded resource.
    Resource {
        /// The `resource` object as received (text or blob contents).
        resource: Value,
    },
    /// A block type we do not know; kept whole.
    Unknown {
        /// Its `type` field, if any.
        kind: String,
        /// The block as received.
        raw: Value,
    },
}

impl ContentBlock {
    /// Reads a content block; anything unrecognised becomes [`ContentBlock::Unknown`].
    pub fn from_json(raw: Value) -> ContentBlock {
        let kind = raw
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
        let known = match kind.as_str() {
            "text" => text("text").map(|text| ContentBlock::Text { text }),
            "image" | "audio" => match (text("data"), text("mimeType")) {
                (Some(data), Some(mime_type)) if kind == "image" => {
                    Some(ContentBlock::Image { data, mime_type })
                }
                (Some(data), Some(mime_type)) => Some(ContentBlock::Audio { data, mime_type }),
                _ => None,
            },
            "resource_link" => match (text("uri"), text("name")) {
                (Some(uri), Some(name)) => Some(ContentBlock::ResourceLink {
                    uri,
                    name,
                    raw: raw.clone(),
                }),
                _ => None,
            },
            "resource" => {
                raw.get("resource")
                    .filter(|r| r.is_object())
                    .map(|r| ContentBlock::Resource {
                        resource: r.clone(),
                    })
            }
            _ => None,
        };
        known.unwrap_or(ContentBlock::Unknown { kind, raw })
    }

    /// The block as JSON, in the wire shape.
    pub fn to_json(&self) -> Value {
        crate::to_json(self)
    }
}

/// The wire shape: `type` first, then the block's fields; a resource link or an unknown
/// block as received.
impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The typed blocks, borrowed.
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Typed<'a> {
            Text {
                text: &'a str,
            },
            Image {
                data: &'a str,
                #[serde(rename = "mimeType")]
                mime_type: &'a str,
            },
            Audio {
                data: &'a str,
                #[serde(rename = "mimeType")]
                mime_type: &'a str,
            },
            Resource {
                resource: &'a Value,
            },
        }
        let typed = match self {
            ContentBlock::Text { text } => Typed::Text { text },
            ContentBlock::Image { data, mime_type } => Typed::Image { data, mime_type },
            ContentBlock::Audio { data, mime_type } => Typed::Audio { data, mime_type },
            ContentBlock::Resource { resource } => Typed::Resource { resource },
            ContentBlock::ResourceLink { raw, .. } | ContentBlock::Unknown { raw, .. } => {
                return raw.serialize(serializer);
            }
        };
        typed.serialize(serializer)
    }
}

/// The result of `tools/call`. `is_error: true` is a tool failure the model should see,
/// not a protocol error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Structured result, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reported an error (sent only when it did).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// True when the server sent no `content` array at all (a spec violation we tolerate).
    #[serde(skip)]
    pub content_missing: bool,
}

impl CallToolResult {
    /// A result of `content`: no structured content, not an error.
    pub fn of(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult {
            content,
            structured_content: None,
            is_error: false,
            content_missing: false,
        }
    }

    /// An error result of one text block, for the model to read.
    pub fn error_text(message: impl Into<String>) -> CallToolResult {
        CallToolResult {
            is_error: true,
            ..CallToolResult::of(vec![ContentBlock::Text {
                text: message.into(),
            }])
        }
    }
}

impl CallToolResult {
    /// Reads a `tools/call` result.
    pub fn from_json(result: &Value) -> Result<CallToolResult, ShapeError> {
        let object = result
            .as_object()
            .ok_or("the tool result is not an object")?;
        let (content, content_missing) = match object.get("content") {
            Some(Value::Array(blocks)) => (
                blocks
                    .iter()
                    .cloned()
                    .map(ContentBlock::from_json)
                    .collect(),
                false,
            ),
            Some(_) => return Err("the tool result's `content` is not an array".into()),
            None => (Vec::new(), true),
        };
        let is_error = match object.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("the tool result's `isError` is not a boolean".into()),
        };
        Ok(CallToolResult {
            content,
            structured_content: object.get("structuredContent").cloned(),
            is_error,
            content_missing,
        })
    }

    /// Reads a `tools/call` result, taking ownership (no copy of the content).
    pub fn from_value(result: Value) -> Result<CallToolResult, ShapeError> {
        let Value::Object(mut object) = result else {
            return Err("the tool result is not an object".into());
        };
        let (content, content_missing) = match object.remove("content") {
            Some(Value::Array(blocks)) => (
                blocks.into_iter().map(ContentBlock::from_json).collect(),
                false,
            ),
            Some(_) => return Err("the tool result's `content` is not an array".into()),
            None => (Vec::new(), true),
        };
        let is_error = match object.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("the tool result's `isError` is not a boolean".into()),
        };
        Ok(CallToolResult {
            content,
            structured_content: object.remove("structuredContent"),
            is_error,
            content_missing,
        })
    }

    /// The text of all text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// A prompt template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// An argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// A resource the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// URI.
    pub uri: String,
    /// Name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A parameterised resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 URI template.
    pub uri_template: String,
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Parameters of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token of the request this is about.
    pub progress_token: Value,
    /// Progress so far.
    pub progress: f64,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// Message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A root the host exposes to servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Which notifications a modern `subscriptions/listen` stream carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// Tool list changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// Prompt list changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// Resource list changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// Resource URIs to watch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
}

/// The `resultType` of a modern result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ResultType {
    /// The final result (also what an absent `resultType` means).
    #[default]
    Complete,
    /// The server needs input first (multi round-trip request).
    InputRequired,
    /// Any other value: invalid for a client that did not opt into an extension.
    Other(String),
}

impl ResultType {
    /// Reads `resultType` from a result object.
    pub fn of(result: &Value) -> ResultType {
        match result.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => ResultType::Complete,
            Some("input_required") => ResultType::InputRequired,
            Some(other) => ResultType::Other(other.to_owned()),
        }
    }
}
