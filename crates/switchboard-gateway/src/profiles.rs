//! Profiles: several endpoints from one gateway, each its own view of the servers.
//!
//! A [`Profile`] is served at `/mcp/<name>` over HTTP (the default `/mcp` is the whole
//! gateway, as without profiles). It has
//! - its servers (`None`: all of them) and a tool selection (allow and deny patterns of
//!   the exported names): what it leaves out is neither listed nor callable, and a call of
//!   it is "unknown tool", as for a tool no server has;
//! - its own policy, which replaces the top-level one at this endpoint (`policy.rs`);
//! - per-tool overrides ([`ToolOverride`]): a new name (the old one is then unknown here),
//!   a description replaced or amended, and arguments fixed by the operator. Fixed
//!   arguments are taken out of the schema the client sees (its `properties` and
//!   `required`), and every call gets them; a call that sends one anyway is refused
//!   (-32602 naming it), never silently overwritten.
//!
//! Requests are rewritten before they are judged and answered ([`Profile::inbound`]: the
//! client's name becomes the exported name, the fixed arguments are put in), so the policy
//! and the audit see the tool the upstream gets; listings are rewritten on the way out
//! ([`Profile::outbound`]). Prompts and resources follow the profile's servers.

use serde_json::{Map, Value, json};
use switchboard_runtime::Snapshot;
use switchboard_server::core::ServiceRequest;
use switchboard_text::wildcard::Wildcard;
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::INVALID_PARAMS;

use crate::policy::{Listing, Policy};

/// One profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Its name, the last segment of its endpoint's path.
    pub name: String,
    /// Its servers (`None`: every server).
    pub servers: Option<Vec<String>>,
    /// Tools it lists (exported names; `None`: every tool of its servers).
    pub allow_tools: Option<Vec<Wildcard>>,
    /// Tools it leaves out (over `allow_tools`).
    pub deny_tools: Vec<Wildcard>,
    /// Its own policy (`None`: the gateway's).
    pub policy: Option<Policy>,
    /// Per-tool changes.
    pub overrides: Vec<ToolOverride>,
}

/// What a profile changes of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOverride {
    /// The tool's exported name (`<server>__<tool>`).
    pub tool: String,
    /// The name clients of the profile know it by.
    pub rename: Option<String>,
    /// Its description, replaced or amended.
    pub description: Option<DescriptionChange>,
    /// Arguments the operator fixes: hidden from the schema, put into every call.
    pub fixed: Map<String, Value>,
}

/// A description's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescriptionChange {
    /// This text instead.
    Replace(String),
    /// This text after the server's.
    Append(String),
}

impl Profile {
    /// Whether the profile has `server`.
    fn has_server(&self, server: Option<&str>) -> bool {
        match (&self.servers, server) {
            (None, _) => true,
            (Some(servers), Some(server)) => servers.iter().any(|s| s == server),
            (Some(_), None) => false,
        }
    }

    /// Whether the profile lists the tool `exported` of `server`.
    fn lists_tool(&self, exported: &str, server: Option<&str>) -> bool {
        self.has_server(server)
            && self
                .allow_tools
                .as_ref()
                .is_none_or(|allow| allow.iter().any(|p| p.matches(exported)))
            && !self.deny_tools.iter().any(|p| p.matches(exported))
            // A tool another one is renamed to is that one here.
            && !self
                .overrides
                .iter()
                .any(|o| o.rename.as_deref() == Some(exported) && o.tool != exported)
    }

    /// The override of the tool exported as `exported`.
    fn override_of(&self, exported: &str) -> Option<&ToolOverride> {
        self.overrides.iter().find(|o| o.tool == exported)
    }

    /// The exported name of the tool clients of the profile call `name`: a renamed tool by
    /// its new name only.
    fn exported_name<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if let Some(renamed) = self
            .overrides
            .iter()
            .find(|o| o.rename.as_deref() == Some(name))
        {
            return Some(&renamed.tool);
        }
        match self.override_of(name) {
            Some(o) if o.rename.is_some() => None,
            _ => Some(name),
        }
    }

    /// The exported name of the tool the profile's clients call `name`, when the profile
    /// lists it, with the arguments the operator fixed for it (its clients send none).
    pub(crate) fn called_tool(
        &self,
        name: &str,
        snapshot: &Snapshot,
    ) -> Option<(String, Vec<String>)> {
        let exported = self.exported_name(name)?;
        let server = snapshot.tool(exported).map(|tool| tool.server());
        if !self.lists_tool(exported, server) {
            return None;
        }
        let fixed = self
            .override_of(exported)
            .map(|o| o.fixed.keys().cloned().collect())
            .unwrap_or_default();
        Some((exported.to_owned(), fixed))
    }

    /// Rewrites a request of the profile's client into the gateway's terms, or refuses
    /// what the profile does not have.
    pub(crate) fn inbound(
        &self,
        request: &mut ServiceRequest,
        snapshot: &Snapshot,
    ) -> Result<(), ErrorObject> {
        match request {
            ServiceRequest::CallTool(call) => {
                let Some((exported, _)) = self.called_tool(&call.name, snapshot) else {
                    return Err(ErrorObject::new(
                        INVALID_PARAMS,
                        format!(
                            "unknown tool `{}`: the profile `{}` has no such tool (tools/list shows its tools)",
                            call.name, self.name
                        ),
                    ));
                };
                if let Some(tool_override) = self.override_of(&exported) {
                    if let Some(sent) = call
                        .arguments
                        .keys()
                        .find(|key| tool_override.fixed.contains_key(*key))
                    {
                        return Err(ErrorObject::new(
                            INVALID_PARAMS,
                            format!(
                                "argument `{sent}` of tool `{}` is fixed by the operator of the profile `{}`; call it without it",
                                call.name, self.name
                            ),
                        ));
                    }
                    for (key, value) in &tool_override.fixed {
                        call.arguments.insert(key.clone(), value.clone());
                    }
                }
                call.name = exported;
                Ok(())
            }
            ServiceRequest::GetPrompt(get) => {
                let server = crate::prompt_routes(snapshot)
                    .remove(&get.name)
                    .map(|route| route.server);
                if self.has_server(server.as_deref()) {
                    Ok(())
                } else {
                    Err(ErrorObject::new(
                        INVALID_PARAMS,
                        format!(
                            "unknown prompt `{}`: the profile `{}` has no such prompt",
                            get.name, self.name
                        ),
                    ))
                }
            }
            ServiceRequest::ReadResource(read) => self.resource(&read.uri, snapshot),
            ServiceRequest::Subscribe { uri } => self.resource(uri, snapshot),
            _ => Ok(()),
        }
    }

    fn resource(&self, uri: &str, snapshot: &Snapshot) -> Result<(), ErrorObject> {
        let server = crate::resource_owner(snapshot, uri);
        if self.has_server(server.as_deref()) {
            Ok(())
        } else {
            Err(crate::resource_not_found(uri))
        }
    }

    /// Rewrites a listing's answer for the profile's clients: what it does not have left
    /// out, renamed tools under their new names, descriptions changed, fixed arguments
    /// taken out of the schemas.
    pub(crate) fn outbound(&self, listing: Listing, snapshot: &Snapshot, answer: &mut Value) {
        let key = match listing {
            Listing::Tools => "tools",
            Listing::Prompts => "prompts",
            Listing::Resources => "resources",
            Listing::Templates => "resourceTemplates",
        };
        let Some(Value::Array(items)) = answer.get_mut(key) else {
            return;
        };
        let prompts = (listing == Listing::Prompts).then(|| crate::prompt_routes(snapshot));
        items.retain(|item| {
            let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
            match listing {
                Listing::Tools => {
                    let name = text("name");
                    self.lists_tool(name, snapshot.tool(name).map(|tool| tool.server()))
                }
                Listing::Prompts => self.has_server(
                    prompts
                        .as_ref()
                        .and_then(|routes| routes.get(text("name")))
                        .map(|route| route.server.as_str()),
                ),
                Listing::Resources => {
                    let uri = text("uri");
                    self.has_server(
                        snapshot
                            .resources
                            .iter()
                            .find(|entry| entry.item.uri == uri)
                            .map(|entry| entry.server.as_str()),
                    )
                }
                Listing::Templates => {
                    let template = text("uriTemplate");
                    self.has_server(
                        snapshot
                            .resource_templates
                            .iter()
                            .find(|entry| entry.item.uri_template == template)
                            .map(|entry| entry.server.as_str()),
                    )
                }
            }
        });
        if listing == Listing::Tools {
            for tool in items.iter_mut() {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(tool_override) = self.override_of(name) {
                    tool_override.apply(tool);
                }
            }
        }
    }
}

impl ToolOverride {
    /// Changes a tool's definition as the profile's clients see it.
    fn apply(&self, tool: &mut Value) {
        if let Some(rename) = &self.rename {
            tool["name"] = json!(rename);
        }
        match &self.description {
            Some(DescriptionChange::Replace(text)) => tool["description"] = json!(text),
            Some(DescriptionChange::Append(text)) => {
                let before = tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let joined = if before.is_empty() {
                    text.clone()
                } else {
                    format!("{before}\n\n{text}")
                };
                tool["description"] = json!(joined);
            }
            None => {}
        }
        if self.fixed.is_empty() {
            return;
        }
        if let Some(Value::Object(properties)) = tool.pointer_mut("/inputSchema/properties") {
            properties.retain(|key, _| !self.fixed.contains_key(key));
        }
        if let Some(Value::Array(required)) = tool.pointer_mut("/inputSchema/required") {
            required.retain(|key| key.as_str().is_none_or(|key| !self.fixed.contains_key(key)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        let mut fixed = Map::new();
        fixed.insert("b".into(), json!(40));
        Profile {
            name: "calc".into(),
            servers: Some(vec!["fx".into()]),
            allow_tools: None,
            deny_tools: vec![Wildcard::new("fx__fail")],
            policy: None,
            overrides: vec![ToolOverride {
                tool: "fx__add".into(),
                rename: Some("add_forty".into()),
                description: Some(DescriptionChange::Append("Adds 40.".into())),
                fixed,
            }],
        }
    }

    #[test]
    fn a_renamed_tool_is_known_by_its_new_name_only() {
        let profile = profile();
        assert_eq!(profile.exported_name("add_forty"), Some("fx__add"));
        assert_eq!(profile.exported_name("fx__add"), None);
        assert_eq!(profile.exported_name("fx__echo"), Some("fx__echo"));
        assert!(!profile.lists_tool("fx__fail", Some("fx")));
        assert!(!profile.lists_tool("other__echo", Some("other")));
    }

    #[test]
    fn fixed_arguments_leave_the_schema_and_the_description_is_amended() {
        let mut tool = json!({
            "name": "fx__add",
            "description": "Adds two integers.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }
        });
        profile().overrides[0].apply(&mut tool);
        // Compared as values: the workspace may build serde_json keeping key order.
        assert_eq!(
            tool,
            json!({
                "name": "add_forty",
                "description": "Adds two integers.\n\nAdds 40.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}},
                    "required": ["a"]
                }
            })
        );
    }
}
