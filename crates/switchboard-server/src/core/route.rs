//! The era of a request and what becomes of it: answered by the core (`initialize`,
//! `ping`, `server/discover`, `logging/setLevel`), streamed (`subscriptions/listen`),
//! refused (a method the era lacks, missing or bad `_meta`, parameters of the wrong shape),
//! or handed to the service as a typed [`ServiceRequest`].
//!
//! A request whose `_meta` carries `io.modelcontextprotocol/protocolVersion` is modern: the
//! version must be one we serve (else -32022 with the versions we do), the client's
//! capabilities must be there (else -32602), and `initialize`, `ping`, `logging/setLevel`
//! and `resources/(un)subscribe` do not exist (-32601). Any other request is legacy and is
//! served under the facts its `initialize` left (the transport keeps them per stdio process
//! or HTTP session).

use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_protocol::{
    Era, MODERN_VERSIONS, UnsupportedVersionData, meta, methods, supported_versions, to_json,
};
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::{INVALID_PARAMS, METHOD_NOT_FOUND};

use super::listen::ListenFilter;
use super::{
    CallTool, Capabilities, ClientFacts, ClientIdentity, GetPrompt, InputRound, LogLevel, Page,
    ReadResource, ServiceRequest,
};

/// What becomes of one request.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one lives per request, briefly, by value; boxing the request would add an allocation to every call"
)]
pub enum Routed {
    /// `initialize` (legacy): negotiate, answer, and keep the facts for the session.
    Initialize(Initialize),
    /// `ping` (legacy): answered with `{}`.
    Ping,
    /// `server/discover` (modern).
    Discover(ClientFacts),
    /// `logging/setLevel` (legacy): the session's level from now on.
    SetLogLevel(LogLevel),
    /// `subscriptions/listen` (modern): a stream until the client or the server ends it.
    Listen {
        /// What the client asked to hear about.
        filter: ListenFilter,
        /// Who asks.
        facts: ClientFacts,
    },
    /// For the service.
    Serve {
        /// The typed request.
        request: ServiceRequest,
        /// Who asks, for this request.
        facts: ClientFacts,
        /// The request's `_meta`.
        meta: Option<Map<String, Value>>,
    },
    /// Refused without being worked on.
    Refused(Refusal),
}

impl Routed {
    /// Names who asks, on the facts the request carries (a transport that knows its
    /// client's identity sets it once the request is routed).
    pub fn set_identity(&mut self, identity: ClientIdentity) {
        if let Some(facts) = self.facts_mut() {
            facts.identity = identity;
        }
    }

    /// Names who asks and at which endpoint (`None`: the default one; a profile's name).
    pub fn set_caller(&mut self, identity: ClientIdentity, endpoint: Option<Arc<str>>) {
        if let Some(facts) = self.facts_mut() {
            facts.identity = identity;
            facts.endpoint = endpoint;
        }
    }

    fn facts_mut(&mut self) -> Option<&mut ClientFacts> {
        match self {
            Routed::Discover(facts)
            | Routed::Listen { facts, .. }
            | Routed::Serve { facts, .. } => Some(facts),
            Routed::Initialize(_) | Routed::Ping | Routed::SetLogLevel(_) | Routed::Refused(_) => {
                None
            }
        }
    }
}

/// `initialize`'s parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Initialize {
    /// The version the client asked for.
    pub requested: Option<String>,
    /// The client's capabilities.
    pub capabilities: Value,
    /// The client's `clientInfo`.
    pub info: Option<Value>,
}

impl Initialize {
    /// The facts of the session this `initialize` opens, under the version negotiated.
    pub fn facts(&self, negotiated: &str) -> ClientFacts {
        ClientFacts {
            era: Era::Legacy,
            protocol_version: Arc::from(negotiated),
            capabilities: Arc::new(self.capabilities.clone()),
            info: self.info.clone().map(Arc::new),
            log_level: None,
            identity: ClientIdentity::Local,
            endpoint: None,
        }
    }
}

/// A request refused by the core, with the HTTP status a Streamable HTTP server gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The JSON-RPC error.
    pub error: ErrorObject,
    /// The HTTP status (400 for bad `_meta` or versions, 404 for a method a modern
    /// request cannot have, 200 for other errors of legacy requests).
    pub http_status: u16,
}

impl Refusal {
    fn bad_params(message: impl Into<String>) -> Refusal {
        Refusal {
            error: ErrorObject::new(INVALID_PARAMS, message),
            http_status: 400,
        }
    }

    fn no_method(era: Era, message: impl Into<String>) -> Refusal {
        Refusal {
            error: ErrorObject::new(METHOD_NOT_FOUND, message),
            // Legacy clients read 404 as "session gone".
            http_status: if era == Era::Modern { 404 } else { 200 },
        }
    }

    /// -32022: a version we do not serve.
    pub fn unsupported_version(requested: &str) -> Refusal {
        Refusal {
            error: ErrorObject {
                code: switchboard_protocol::error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                message: format!(
                    "protocol version `{}` is not supported; this server speaks {}",
                    switchboard_text::peer_text::PeerText(requested),
                    supported_versions().join(", ")
                ),
                data: Some(to_json(&UnsupportedVersionData {
                    supported: supported_versions()
                        .into_iter()
                        .map(str::to_owned)
                        .collect(),
                    requested: requested.to_owned(),
                })),
            },
            http_status: 400,
        }
    }
}

/// Routes one request. `session` holds the facts the legacy `initialize` of this stdio
/// process or HTTP session left (none yet: legacy requests are served under the latest
/// legacy version with no client capabilities).
pub fn route(
    method: &str,
    params: Option<Value>,
    session: Option<&ClientFacts>,
    capabilities: Capabilities,
) -> Routed {
    let mut params = match params {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Routed::Refused(Refusal::bad_params("`params` must be an object")),
    };
    let request_meta = match params.get("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => Some(meta.clone()),
        Some(_) => return Routed::Refused(Refusal::bad_params("`params._meta` must be an object")),
    };
    let modern = request_meta
        .as_ref()
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .is_some();
    let facts = if modern {
        match modern_facts(request_meta.as_ref()) {
            Ok(facts) => facts,
            Err(refusal) => return Routed::Refused(refusal),
        }
    } else {
        if method == methods::SERVER_DISCOVER {
            return Routed::Refused(Refusal::bad_params(format!(
                "server/discover needs `params._meta` with `{}` and `{}`",
                meta::PROTOCOL_VERSION,
                meta::CLIENT_CAPABILITIES
            )));
        }
        session.cloned().unwrap_or_else(ClientFacts::legacy_default)
    };
    let era = facts.era;
    match (era, method) {
        (Era::Legacy, methods::INITIALIZE) => {
            return Routed::Initialize(Initialize {
                requested: params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                capabilities: params
                    .remove("capabilities")
                    .filter(Value::is_object)
                    .unwrap_or_else(|| Value::Object(Map::new())),
                info: params.remove("clientInfo"),
            });
        }
        (Era::Legacy, methods::PING) => return Routed::Ping,
        (Era::Legacy, methods::LOGGING_SET_LEVEL) => {
            return match params
                .get("level")
                .and_then(Value::as_str)
                .and_then(LogLevel::parse)
            {
                Some(level) => Routed::SetLogLevel(level),
                None => Routed::Refused(Refusal::bad_params(
                    "logging/setLevel needs `level`: one of debug, info, notice, warning, error, \
                     critical, alert, emergency",
                )),
            };
        }
        (Era::Modern, methods::SERVER_DISCOVER) => return Routed::Discover(facts),
        (Era::Modern, methods::SUBSCRIPTIONS_LISTEN) => {
            return match ListenFilter::from_params(&params) {
                Ok(filter) => Routed::Listen { filter, facts },
                Err(problem) => Routed::Refused(Refusal::bad_params(problem.to_string())),
            };
        }
        (
            Era::Modern,
            methods::INITIALIZE
            | methods::PING
            | methods::LOGGING_SET_LEVEL
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE,
        ) => {
            return Routed::Refused(Refusal::no_method(
                era,
                format!(
                    "`{method}` does not exist in protocol version {}",
                    facts.protocol_version
                ),
            ));
        }
        (Era::Legacy, methods::SUBSCRIPTIONS_LISTEN) => {
            return Routed::Refused(Refusal::no_method(
                era,
                "`subscriptions/listen` is a 2026-07-28 method; this session speaks an earlier \
                 version (use resources/subscribe and list_changed notifications)",
            ));
        }
        _ => {}
    }
    match service_request(method, params) {
        Ok(Some(request)) if capabilities.offers(&request) => Routed::Serve {
            request,
            facts,
            meta: request_meta,
        },
        Ok(Some(_)) | Ok(None) => Routed::Refused(Refusal::no_method(
            era,
            format!(
                "method `{}` is not offered by this server",
                switchboard_text::peer_text::PeerText(method)
            ),
        )),
        Err(message) => Routed::Refused(Refusal {
            error: ErrorObject::new(INVALID_PARAMS, message),
            http_status: if era == Era::Modern { 400 } else { 200 },
        }),
    }
}

/// The facts of a modern request, from its `_meta`.
fn modern_facts(request_meta: Option<&Map<String, Value>>) -> Result<ClientFacts, Refusal> {
    let Some(request_meta) = request_meta else {
        return Err(Refusal::bad_params("missing `params._meta`"));
    };
    let version = match request_meta.get(meta::PROTOCOL_VERSION) {
        Some(Value::String(version)) => version,
        _ => {
            return Err(Refusal::bad_params(format!(
                "`_meta.{}` must be a string",
                meta::PROTOCOL_VERSION
            )));
        }
    };
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        return Err(Refusal::unsupported_version(version));
    }
    let capabilities = match request_meta.get(meta::CLIENT_CAPABILITIES) {
        Some(capabilities @ Value::Object(_)) => capabilities.clone(),
        Some(_) => {
            return Err(Refusal::bad_params(format!(
                "`_meta.{}` must be an object",
                meta::CLIENT_CAPABILITIES
            )));
        }
        None => {
            return Err(Refusal::bad_params(format!(
                "missing `_meta.{}` (required on every 2026-07-28 request; `{{}}` when the \
                 client has none)",
                meta::CLIENT_CAPABILITIES
            )));
        }
    };
    let log_level = match request_meta.get(meta::LOG_LEVEL) {
        None | Some(Value::Null) => None,
        Some(level) => match level.as_str().and_then(LogLevel::parse) {
            Some(level) => Some(level),
            None => {
                return Err(Refusal::bad_params(format!(
                    "`_meta.{}` must be one of debug, info, notice, warning, error, critical, \
                     alert, emergency",
                    meta::LOG_LEVEL
                )));
            }
        },
    };
    Ok(ClientFacts {
        era: Era::Modern,
        protocol_version: Arc::from(version.as_str()),
        capabilities: Arc::new(capabilities),
        info: request_meta.get(meta::CLIENT_INFO).cloned().map(Arc::new),
        log_level,
        identity: ClientIdentity::Local,
        endpoint: None,
    })
}

/// The typed request for a service method; `Ok(None)` for a method no service answers.
fn service_request(
    method: &str,
    mut params: Map<String, Value>,
) -> Result<Option<ServiceRequest>, String> {
    let request = match method {
        methods::TOOLS_LIST => ServiceRequest::ListTools(page(&params)?),
        methods::PROMPTS_LIST => ServiceRequest::ListPrompts(page(&params)?),
        methods::RESOURCES_LIST => ServiceRequest::ListResources(page(&params)?),
        methods::RESOURCES_TEMPLATES_LIST => ServiceRequest::ListResourceTemplates(page(&params)?),
        methods::TOOLS_CALL => ServiceRequest::CallTool(CallTool {
            name: required_string(&params, "name", method)?,
            arguments: match params.remove("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments,
                Some(_) => return Err("tools/call `arguments` must be an object".into()),
            },
            input: input_round(&mut params)?,
        }),
        methods::PROMPTS_GET => ServiceRequest::GetPrompt(GetPrompt {
            name: required_string(&params, "name", method)?,
            arguments: match params.remove("arguments") {
                None | Some(Value::Null) => None,
                Some(Value::Object(arguments)) => Some(arguments),
                Some(_) => return Err("prompts/get `arguments` must be an object".into()),
            },
            input: input_round(&mut params)?,
        }),
        methods::RESOURCES_READ => ServiceRequest::ReadResource(ReadResource {
            uri: required_string(&params, "uri", method)?,
            input: input_round(&mut params)?,
        }),
        methods::RESOURCES_SUBSCRIBE => ServiceRequest::Subscribe {
            uri: required_string(&params, "uri", method)?,
        },
        methods::RESOURCES_UNSUBSCRIBE => ServiceRequest::Unsubscribe {
            uri: required_string(&params, "uri", method)?,
        },
        methods::COMPLETION_COMPLETE => {
            if !params.get("ref").is_some_and(Value::is_object) {
                return Err("completion/complete needs `ref`, an object".into());
            }
            if !params.get("argument").is_some_and(Value::is_object) {
                return Err("completion/complete needs `argument`, an object".into());
            }
            params.shift_remove("_meta");
            ServiceRequest::Complete(params)
        }
        _ => return Ok(None),
    };
    Ok(Some(request))
}

fn page(params: &Map<String, Value>) -> Result<Page, String> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(Page::default()),
        Some(Value::String(cursor)) => Ok(Page {
            cursor: Some(cursor.clone()),
        }),
        Some(_) => Err("`cursor` must be a string".into()),
    }
}

fn required_string(params: &Map<String, Value>, key: &str, method: &str) -> Result<String, String> {
    match params.get(key) {
        Some(Value::String(value)) => Ok(value.clone()),
        Some(_) => Err(format!("{method} `{key}` must be a string")),
        None => Err(format!("{method} needs `{key}`")),
    }
}

fn input_round(params: &mut Map<String, Value>) -> Result<InputRound, String> {
    let responses = match params.remove("inputResponses") {
        None | Some(Value::Null) => None,
        Some(Value::Object(responses)) => Some(responses),
        Some(_) => return Err("`inputResponses` must be an object".into()),
    };
    let request_state = match params.remove("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(state)) => Some(state),
        Some(_) => return Err("`requestState` must be a string".into()),
    };
    Ok(InputRound {
        responses,
        request_state,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn all() -> Capabilities {
        Capabilities::EVERYTHING
    }

    fn summary(method: &str, params: Value) -> String {
        match route(method, Some(params), None, all()) {
            Routed::Refused(refusal) => format!(
                "refused {} http {}: {}",
                refusal.error.code, refusal.http_status, refusal.error.message
            ),
            Routed::Serve { request, facts, .. } => {
                format!(
                    "serve {} ({} {})",
                    request.method(),
                    facts.era,
                    facts.protocol_version
                )
            }
            other => format!("{other:?}").chars().take(60).collect(),
        }
    }

    #[test]
    fn eras_and_refusals() {
        let modern =
            json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {}}});
        let mut with_tool = modern.clone();
        with_tool["name"] = json!("echo");
        let cases = [
            summary("tools/list", json!({})),
            summary("tools/list", modern.clone()),
            summary("tools/call", with_tool),
            summary("tools/call", modern.clone()),
            summary("ping", modern.clone()),
            summary("initialize", modern.clone()),
            summary("server/discover", json!({})),
            summary(
                "server/discover",
                json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}),
            ),
            summary(
                "server/discover",
                json!({"_meta": {meta::PROTOCOL_VERSION: "1900-01-01", meta::CLIENT_CAPABILITIES: {}}}),
            ),
            summary("subscriptions/listen", json!({})),
            summary("foo/bar", modern),
            summary("foo/bar", json!({})),
            summary("logging/setLevel", json!({"level": "loud"})),
        ];
        expect_test::expect![[r#"
            serve tools/list (legacy 2025-11-25)
            serve tools/list (modern 2026-07-28)
            serve tools/call (modern 2026-07-28)
            refused -32602 http 400: tools/call needs `name`
            refused -32601 http 404: `ping` does not exist in protocol version 2026-07-28
            refused -32601 http 404: `initialize` does not exist in protocol version 2026-07-28
            refused -32602 http 400: server/discover needs `params._meta` with `io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`
            refused -32602 http 400: missing `_meta.io.modelcontextprotocol/clientCapabilities` (required on every 2026-07-28 request; `{}` when the client has none)
            refused -32022 http 400: protocol version `1900-01-01` is not supported; this server speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05
            refused -32601 http 200: `subscriptions/listen` is a 2026-07-28 method; this session speaks an earlier version (use resources/subscribe and list_changed notifications)
            refused -32601 http 404: method `foo/bar` is not offered by this server
            refused -32601 http 200: method `foo/bar` is not offered by this server
            refused -32602 http 400: logging/setLevel needs `level`: one of debug, info, notice, warning, error, critical, alert, emergency"#]]
        .assert_eq(&cases.join("\n"));
    }
}
