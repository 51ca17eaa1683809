//! Prompts: a name, a description, typed arguments (a struct of strings, whose fields and
//! doc comments become the prompt's `arguments`), and a handler returning messages.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_protocol::{GetPromptResult, PromptArgument, PromptMessage};

use super::error::ToolError;
use super::schema;
use super::tool::{self, Erased};
use crate::core::RequestContext;

/// The `prompts/get` result of messages.
pub(crate) fn result(description: &str, messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult {
        description: Some(description.to_owned()),
        messages,
    }
}

/// One prompt, ready to register with [`super::ServerBuilder::prompt`].
pub struct Prompt {
    pub(crate) name: String,
    title: Option<String>,
    pub(crate) description: String,
    pub(crate) arguments_schema: Value,
    pub(crate) handler: Erased<Vec<PromptMessage>>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt answered by `handler`. The arguments type is a struct of `String` (and
    /// `Option<String>`, or `#[serde(default)]`, for optional ones) fields; each field is
    /// an argument, its doc comment the argument's description. Use
    /// [`super::NoArguments`] for a prompt without arguments.
    pub fn new<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Prompt
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
    {
        let handler = tool::erase(handler);
        Prompt {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments_schema: schema::input_schema::<I>(),
            handler,
        }
    }

    /// A human-readable name for displays.
    pub fn title(mut self, title: impl Into<String>) -> Prompt {
        self.title = Some(title.into());
        self
    }

    /// The `prompts/list` entry, or why the arguments type does not describe prompt
    /// arguments (they are strings).
    pub(crate) fn definition(&self) -> Result<switchboard_protocol::Prompt, String> {
        schema::require_object_root(&self.arguments_schema)?;
        let required: Vec<&str> = self
            .arguments_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut arguments = Vec::new();
        let properties = self
            .arguments_schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten();
        for (name, property) in properties {
            if !is_string(property) {
                return Err(format!(
                    "has argument `{name}` that is not a string; prompt arguments are strings"
                ));
            }
            arguments.push(PromptArgument {
                name: name.clone(),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: required.contains(&name.as_str()),
            });
        }
        Ok(switchboard_protocol::Prompt {
            name: self.name.clone(),
            title: self.title.clone(),
            description: Some(self.description.clone()),
            arguments,
        })
    }
}

/// `{"type": "string"}`, or `["string", "null"]` (an `Option<String>`).
fn is_string(property: &Value) -> bool {
    match property.get("type") {
        Some(Value::String(kind)) => kind == "string",
        Some(Value::Array(kinds)) => kinds
            .iter()
            .all(|kind| matches!(kind.as_str(), Some("string" | "null"))),
        _ => false,
    }
}
