//! Tools: a name, a description, and a handler taking a typed input. The input type's
//! schema is the tool's `inputSchema`; the handler's return type says whether the tool
//! has an `outputSchema` ([`Structured`]) or returns plain content ([`String`],
//! [`ToolResult`]).

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_protocol::{CallToolResult, ContentBlock, ToolAnnotations};

use super::error::ToolError;
use super::schema;
use crate::core::{RequestContext, ServiceFuture};

/// What a tool's handler gives back on success.
///
/// Implemented for [`String`] and `&'static str` (one text block), [`ToolResult`] (blocks
/// and structured content of your choosing, no `outputSchema`) and [`Structured`] (typed
/// structured content: the tool declares the type's schema as its `outputSchema`).
pub trait ToolReturn: Send + 'static {
    /// The `outputSchema` a tool returning this type declares, if any.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The result.
    fn into_result(self) -> Result<ToolResult, ToolError>;
}

/// A tool result: content blocks and, optionally, structured content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    content: Vec<ContentBlock>,
    structured: Option<Value>,
}

impl ToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult::default().with_content(ContentBlock::Text { text: text.into() })
    }

    /// Adds a content block (text, image, audio, resource link, embedded resource).
    pub fn with_content(mut self, block: ContentBlock) -> ToolResult {
        self.content.push(block);
        self
    }

    /// Sets the structured content (a JSON object).
    pub fn with_structured(mut self, value: Value) -> ToolResult {
        self.structured = Some(value);
        self
    }

    /// The `tools/call` result.
    pub(crate) fn into_call_result(self) -> CallToolResult {
        CallToolResult {
            structured_content: self.structured,
            ..CallToolResult::of(self.content)
        }
    }
}

impl ToolReturn for ToolResult {
    fn into_result(self) -> Result<ToolResult, ToolError> {
        Ok(self)
    }
}

impl ToolReturn for String {
    fn into_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

impl ToolReturn for &'static str {
    fn into_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

/// Typed structured content: `structuredContent` is `T` serialized, the tool's
/// `outputSchema` is `T`'s schema, and the text block is the same JSON (for clients that
/// read only `content`, as the specification recommends) unless [`Structured::with_text`]
/// says something shorter.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured<T> {
    value: T,
    text: Option<String>,
}

impl<T> Structured<T> {
    /// Structured content `value`.
    pub fn new(value: T) -> Structured<T> {
        Structured { value, text: None }
    }

    /// The text block to send instead of the JSON.
    pub fn with_text(mut self, text: impl Into<String>) -> Structured<T> {
        self.text = Some(text.into());
        self
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> ToolReturn for Structured<T> {
    fn output_schema() -> Option<Value> {
        Some(schema::output_schema::<T>())
    }

    fn into_result(self) -> Result<ToolResult, ToolError> {
        let value = serde_json::to_value(&self.value).map_err(|error| {
            ToolError::new(format!(
                "the tool's result could not be serialized: {error}"
            ))
        })?;
        let text = match self.text {
            Some(text) => text,
            None => value.to_string(),
        };
        Ok(ToolResult::text(text).with_structured(value))
    }
}

/// The input of a tool that takes no arguments (`{}`; anything else is refused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

impl JsonSchema for NoArguments {
    fn schema_name() -> Cow<'static, str> {
        "NoArguments".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "object", "properties": {}, "additionalProperties": false })
    }
}

/// A handler with its input type erased: arguments (already checked against the schema)
/// in, the running handler out, or why the arguments do not make the input type.
pub(crate) type Erased<T> = Arc<
    dyn Fn(Value, RequestContext) -> Result<ServiceFuture<Result<T, ToolError>>, String>
        + Send
        + Sync,
>;

/// Erases a typed handler's input type.
pub(crate) fn erase<I, T, F, Fut>(handler: F) -> Erased<T>
where
    I: DeserializeOwned + Send + 'static,
    F: Fn(I, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send + 'static,
{
    Arc::new(move |arguments: Value, context| {
        let input: I = serde_json::from_value(arguments).map_err(|e| e.to_string())?;
        Ok(Box::pin(handler(input, context)))
    })
}

/// One tool, ready to register with [`super::ServerBuilder::tool`].
pub struct Tool {
    /// The `tools/list` entry.
    pub(crate) definition: switchboard_protocol::Tool,
    pub(crate) handler: Erased<ToolResult>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.definition.name)
            .field("description", &self.definition.description)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool named `name` (1–128 of `A–Z a–z 0–9 _ - .`) that `description` explains to
    /// the model, answered by `handler`: an async fn or closure taking the typed input
    /// and the request's context (cancellation, progress, log messages).
    ///
    /// The input type derives `serde::Deserialize` and `schemars::JsonSchema`; its doc
    /// comments become the schema's descriptions, `#[serde(default)]` fields are optional,
    /// and `#[serde(deny_unknown_fields)]` refuses keys it does not name.
    pub fn new<I, O, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolReturn,
        F: Fn(I, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let handler = erase(move |input: I, context| {
            let running = handler(input, context);
            async move { running.await.and_then(O::into_result) }
        });
        let definition = switchboard_protocol::Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: schema::input_schema::<I>(),
            output_schema: O::output_schema(),
            annotations: ToolAnnotations::default(),
            raw: Value::Null,
        };
        Tool {
            definition,
            handler,
        }
    }

    /// A human-readable name for displays.
    pub fn title(mut self, title: impl Into<String>) -> Tool {
        self.definition.title = Some(title.into());
        self
    }

    /// Annotates the tool as not modifying its environment (`readOnlyHint`). Clients may
    /// call such tools without asking; `switchboard check` calls only these unprompted.
    pub fn read_only(mut self) -> Tool {
        self.definition.annotations.read_only_hint = Some(true);
        self
    }

    /// Annotates the tool as possibly destroying data (`destructiveHint`).
    pub fn destructive(mut self) -> Tool {
        self.definition.annotations.destructive_hint = Some(true);
        self
    }

    /// Annotates the tool as idempotent: repeating a call has no further effect
    /// (`idempotentHint`).
    pub fn idempotent(mut self) -> Tool {
        self.definition.annotations.idempotent_hint = Some(true);
        self
    }

    /// Annotates the tool as reaching an open world of external entities
    /// (`openWorldHint`).
    pub fn open_world(mut self) -> Tool {
        self.definition.annotations.open_world_hint = Some(true);
        self
    }
}

/// Whether clients accept a tool name: 1–128 of `A–Z a–z 0–9 _ - .` (2025-11-25).
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!(
            "has a name of {} bytes; tool names have 1 to 128",
            name.len()
        ));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        Some(c) => Err(format!(
            "has {c:?} in its name; tool names use only A–Z, a–z, 0–9, `_`, `-` and `.`"
        )),
        None => Ok(()),
    }
}
