//! What a server answers with and announces, beyond the definitions in `types.rs`: prompt
//! messages, the list results, the parameters of its notifications and the `data` of its
//! errors.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ContentBlock, LogLevel, Prompt, Resource, ResourceTemplate, SubscriptionFilter, Tool};

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// The result of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// This page's tools.
    pub tools: Vec<Tool>,
    /// The cursor of the next page (none: this is the last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The result of `prompts/list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// This page's prompts.
    pub prompts: Vec<Prompt>,
    /// The cursor of the next page (none: this is the last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The result of `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// This page's resources.
    pub resources: Vec<Resource>,
    /// The cursor of the next page (none: this is the last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The result of `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// This page's templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// The cursor of the next page (none: this is the last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Parameters of `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceUpdatedParams {
    /// The resource that changed.
    pub uri: String,
}

/// Parameters of `notifications/message` (a log message).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggingMessageParams {
    /// Its severity.
    pub level: LogLevel,
    /// The message (any JSON).
    pub data: Value,
    /// Who logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
}

/// Parameters of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The id of the request withdrawn.
    pub request_id: Value,
    /// Why.
    pub reason: String,
}

/// Parameters of `notifications/subscriptions/acknowledged` (2026-07-28): the part of the
/// listen request's filter the server honours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubscriptionsAcknowledgedParams {
    /// The honoured filter.
    pub notifications: SubscriptionFilter,
}

/// The `data` of error -32022 (2026-07-28): the protocol version asked for is not one the
/// server speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnsupportedVersionData {
    /// The versions the server speaks.
    pub supported: Vec<String>,
    /// The version the request named.
    pub requested: String,
}

/// The `data` of a resource-not-found error: the URI asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceNotFoundData {
    /// The resource.
    pub uri: String,
}

/// A result with nothing in it (`ping`, `logging/setLevel`, subscriptions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmptyResult {}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::{
        CallToolResult, ListChangedCapability, PromptArgument, ReadResourceResult,
        ResourceContents, ResourcesCapability, ServerCapabilities, ToolAnnotations, to_json,
    };

    #[test]
    fn a_server_answer_serializes_in_the_wire_shape() {
        let tool = Tool {
            name: "ship".into(),
            title: Some("Ship".into()),
            description: Some("Ships.".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations {
                read_only_hint: Some(true),
                ..ToolAnnotations::default()
            },
            raw: Value::Null,
        };
        let blocks = vec![
            ContentBlock::Text { text: "t".into() },
            ContentBlock::Image {
                data: "AA==".into(),
                mime_type: "image/png".into(),
            },
            ContentBlock::Resource {
                resource: json!({"uri": "u", "text": "x"}),
            },
            ContentBlock::from_json(json!({"type": "resource_link", "uri": "u", "name": "n"})),
        ];
        let prompt = Prompt {
            name: "greet".into(),
            title: Some("Greet".into()),
            description: Some("Greets.".into()),
            arguments: vec![PromptArgument {
                name: "who".into(),
                description: None,
                required: true,
            }],
        };
        let capabilities = ServerCapabilities {
            tools: Some(ListChangedCapability { list_changed: true }),
            resources: Some(ResourcesCapability {
                list_changed: false,
                subscribe: false,
            }),
            logging: Some(json!({})),
            completions: Some(json!({})),
            ..ServerCapabilities::default()
        };
        let lines = [
            to_json(&ListToolsResult {
                tools: vec![tool],
                next_cursor: None,
            }),
            to_json(&CallToolResult::of(blocks)),
            to_json(&CallToolResult::error_text("no")),
            to_json(&ListPromptsResult {
                prompts: vec![prompt],
                next_cursor: Some("2".into()),
            }),
            to_json(&GetPromptResult {
                description: Some("Greets.".into()),
                messages: vec![PromptMessage::user("hi"), PromptMessage::assistant("hello")],
            }),
            to_json(&ReadResourceResult {
                contents: vec![ResourceContents {
                    uri: "u".into(),
                    mime_type: Some("text/plain".into()),
                    text: Some("x".into()),
                    blob: None,
                }],
            }),
            to_json(&capabilities),
            to_json(&LoggingMessageParams {
                level: LogLevel::Warning,
                data: json!("careful"),
                logger: Some("fx".into()),
            }),
        ]
        .map(|line| line.to_string());
        expect![[r#"
            {"tools":[{"name":"ship","title":"Ship","description":"Ships.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}
            {"content":[{"type":"text","text":"t"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"resource","resource":{"uri":"u","text":"x"}},{"type":"resource_link","uri":"u","name":"n"}]}
            {"content":[{"type":"text","text":"no"}],"isError":true}
            {"prompts":[{"name":"greet","title":"Greet","description":"Greets.","arguments":[{"name":"who","required":true}]}],"nextCursor":"2"}
            {"description":"Greets.","messages":[{"role":"user","content":{"type":"text","text":"hi"}},{"role":"assistant","content":{"type":"text","text":"hello"}}]}
            {"contents":[{"uri":"u","mimeType":"text/plain","text":"x"}]}
            {"tools":{"listChanged":true},"resources":{"listChanged":false},"completions":{},"logging":{}}
            {"level":"warning","data":"careful","logger":"fx"}"#]].assert_eq(&lines.join("\n"));
    }
}
