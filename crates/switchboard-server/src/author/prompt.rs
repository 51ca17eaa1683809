//! Prompts: a name, a description, typed arguments (a struct of strings, whose fields and
//! doc comments become the prompt's `arguments`), and a handler returning messages.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use switchboard_protocol::ContentBlock;

use super::error::ToolError;
use super::schema;
use super::tool::{self, Erased};
use crate::core::RequestContext;

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: Role::User,
            content: ContentBlock::Text { text: text.into() },
        }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: Role::Assistant,
            content: ContentBlock::Text { text: text.into() },
        }
    }

    fn to_json(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        json!({ "role": role, "content": self.content.to_json() })
    }
}

/// The `prompts/get` result of messages.
pub(crate) fn result(description: &str, messages: &[PromptMessage]) -> Value {
    let messages: Vec<Value> = messages.iter().map(PromptMessage::to_json).collect();
    json!({ "description": description, "messages": messages })
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
    pub(crate) fn definition(&self) -> Result<Value, String> {
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
            let mut argument = Map::new();
            argument.insert("name".into(), json!(name));
            if let Some(description) = property.get("description") {
                argument.insert("description".into(), description.clone());
            }
            argument.insert("required".into(), json!(required.contains(&name.as_str())));
            arguments.push(Value::Object(argument));
        }
        let mut definition = json!({
            "name": self.name,
            "description": self.description,
            "arguments": arguments,
        });
        if let Some(title) = &self.title {
            definition["title"] = json!(title);
        }
        Ok(definition)
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
