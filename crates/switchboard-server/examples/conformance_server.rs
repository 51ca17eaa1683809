//! The official MCP conformance suite's server fixture, written on the server core: the
//! tools, resources, prompts and completions its server scenarios call by name, in both
//! protocol eras, with the 2026-07-28 multi-round-trip (`input_required`) flows whose
//! `requestState` is HMAC-protected, bound to its request and expiring.
//!
//! Run it on stdio (`cargo run -p switchboard-server --example conformance_server`) or on
//! Streamable HTTP with `--http 127.0.0.1:0` (the URL is printed on stderr). In the legacy
//! era a tool asks the client during the call (`sampling/createMessage`,
//! `elicitation/create`, with [`RequestContext::ask_client`]); 2026-07-28 clients get the
//! same questions as `input_required` results.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Map, Value, json};
use switchboard_protocol::error_codes::{
    MISSING_REQUIRED_CLIENT_CAPABILITY, RESOURCE_NOT_FOUND_LEGACY,
};
use switchboard_protocol::{Era, Implementation};
use switchboard_server::core::{
    Answer, CacheHints, CallTool, Capabilities, ClientFacts, ClientMethod, GetPrompt, InputRound,
    LogLevel, LogMessage, RequestContext, ServerInfo, Service, ServiceEvent, ServiceFuture,
    ServiceRequest,
};
use switchboard_server::http::{HttpServeOptions, HttpServer};
use switchboard_server::stdio::StdioOptions;
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::{INTERNAL_ERROR, INVALID_PARAMS};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file (a header and one silent sample).
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";
/// A legacy call's event stream is closed after this long without the answer, and the
/// client resumes it (2025-11-25 polling).
const POLL_AFTER: Duration = Duration::from_millis(1000);
/// How long `test_reconnection` runs: past [`POLL_AFTER`], so its stream is closed mid-call,
/// and less than twice it, so the resumed stream carries the answer before its own poll (half
/// a poll of margin either way, for a loaded machine).
const RECONNECTION_CALL: Duration = Duration::from_millis(1500);

/// How long a `requestState` stays good.
const STATE_LIFETIME: Duration = Duration::from_secs(300);
/// The longest `requestState` accepted (ours are far shorter).
const MAX_STATE_BYTES: usize = 8 * 1024;

struct Conformance {
    info: ServerInfo,
    events: broadcast::Sender<ServiceEvent>,
    key: hmac::Key,
    subscriptions: Mutex<BTreeSet<String>>,
}

fn text(text: impl Into<String>) -> Value {
    json!({ "type": "text", "text": text.into() })
}

fn text_result(message: impl Into<String>) -> Answer {
    Ok(json!({ "content": [text(message)] }))
}

fn bad_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(INVALID_PARAMS, message)
}

fn no_arguments() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn tool(name: &str, description: &str) -> Value {
    json!({ "name": name, "description": description, "inputSchema": no_arguments() })
}

fn tools() -> Value {
    let mut tools = vec![
        tool("test_simple_text", "Returns a simple text block."),
        tool("test_image_content", "Returns a PNG image."),
        tool("test_audio_content", "Returns a WAV clip."),
        tool(
            "test_embedded_resource",
            "Returns an embedded text resource.",
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        tool(
            "test_tool_with_logging",
            "Logs three messages while it runs.",
        ),
        tool("test_logging_tool", "Logs three messages while it runs."),
        tool("test_error_handling", "Always fails with a tool error."),
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100.",
        ),
        tool("test_trigger_tool_change", "Announces a tool list change."),
        tool(
            "test_trigger_prompt_change",
            "Announces a prompt list change.",
        ),
        tool(
            "test_missing_capability",
            "Needs the client's sampling capability (-32021 without).",
        ),
        json!({
            "name": "test_sampling",
            "description": "Asks the client's model to answer `prompt` (sampling/createMessage).",
            "inputSchema": {
                "type": "object",
                "properties": { "prompt": { "type": "string", "description": "The prompt." } },
                "required": ["prompt"],
            },
        }),
        json!({
            "name": "test_elicitation",
            "description": "Asks the user for a username and email, showing `message`.",
            "inputSchema": {
                "type": "object",
                "properties": { "message": { "type": "string", "description": "What the user is shown." } },
                "required": ["message"],
            },
        }),
        tool(
            "test_reconnection",
            "Runs past the stream poll, so its stream is closed mid-call and resumed.",
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user with defaults for every primitive type (SEP-1034).",
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks the user with every enum form (SEP-1330).",
        ),
        tool(
            "test_streaming_elicitation",
            "Asks for the user's name (input_required, 2026-07-28).",
        ),
        json!({
            "name": "test_param_headers",
            "description": "Echoes `region`, mirrored in the Mcp-Param-Region header.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": { "type": "string", "description": "A region.", "x-mcp-header": "Region" },
                },
                "required": ["region"],
            },
        }),
        json!({
            "name": "json_schema_2020_12_tool",
            "description": "Carries a JSON Schema 2020-12 input schema.",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": { "street": { "type": "string" }, "city": { "type": "string" } },
                    },
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" },
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false,
            },
        }),
    ];
    for flow in Flow::ALL {
        tools.push(tool(flow.tool(), flow.description()));
    }
    json!({ "tools": tools })
}

fn prompts() -> Value {
    let argument = |name: &str, description: &str| json!({ "name": name, "description": description, "required": true });
    json!({ "prompts": [
        { "name": "test_simple_prompt", "description": "A prompt without arguments." },
        {
            "name": "test_prompt_with_arguments",
            "description": "A prompt with two arguments.",
            "arguments": [argument("arg1", "First test argument"), argument("arg2", "Second test argument")],
        },
        {
            "name": "test_prompt_with_embedded_resource",
            "description": "A prompt embedding a resource.",
            "arguments": [argument("resourceUri", "URI of the resource to embed")],
        },
        { "name": "test_prompt_with_image", "description": "A prompt with an image." },
        {
            "name": "test_input_required_result_prompt",
            "description": "Asks for context first (input_required, 2026-07-28).",
        },
    ]})
}

fn resources() -> Value {
    json!({ "resources": [
        {
            "uri": "test://static-text", "name": "static-text",
            "description": "A static text resource.", "mimeType": "text/plain",
        },
        {
            "uri": "test://static-binary", "name": "static-binary",
            "description": "A static PNG.", "mimeType": "image/png",
        },
        {
            "uri": "test://watched-resource", "name": "watched-resource",
            "description": "A resource to subscribe to.", "mimeType": "text/plain",
        },
    ]})
}

fn read_resource(uri: &str) -> Answer {
    let content = match uri {
        "test://static-text" => json!({
            "uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }),
        "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": PNG }),
        "test://watched-resource" => json!({
            "uri": uri, "mimeType": "text/plain", "text": "Watched resource content.",
        }),
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
            .filter(|id| !id.is_empty() && !id.contains('/'))
        {
            Some(id) => json!({
                "uri": uri, "mimeType": "application/json",
                "text": json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
            }),
            None => {
                let mut error = ErrorObject::new(RESOURCE_NOT_FOUND_LEGACY, "Resource not found");
                error.data = Some(json!({ "uri": uri }));
                return Err(error);
            }
        },
    };
    Ok(json!({ "contents": [content] }))
}

fn get_prompt(request: &GetPrompt) -> Answer {
    let argument = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get(name))
            .and_then(Value::as_str)
            .ok_or_else(|| bad_params(format!("prompt `{}` needs `{name}`", request.name)))
    };
    let user = |content: Value| json!({ "role": "user", "content": content });
    let messages = match request.name.as_str() {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => {
            let (first, second) = (argument("arg1")?, argument("arg2")?);
            vec![user(text(format!(
                "Prompt with arguments: arg1='{first}', arg2='{second}'"
            )))]
        }
        "test_prompt_with_embedded_resource" => vec![
            user(json!({ "type": "resource", "resource": {
                "uri": argument("resourceUri")?, "mimeType": "text/plain",
                "text": "Embedded resource content for testing.",
            }})),
            user(text("Please process the embedded resource above.")),
        ],
        "test_prompt_with_image" => vec![
            user(json!({ "type": "image", "data": PNG, "mimeType": "image/png" })),
            user(text("Please analyze the image above.")),
        ],
        other => return Err(bad_params(format!("no prompt named `{other}`"))),
    };
    Ok(json!({ "messages": messages }))
}

fn complete(params: &Map<String, Value>) -> Answer {
    let prefix = params
        .get("argument")
        .and_then(|argument| argument.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let values: Vec<&str> = ["paris", "park", "party"]
        .into_iter()
        .filter(|value| value.starts_with(prefix))
        .collect();
    Ok(json!({ "completion": { "values": values, "total": values.len(), "hasMore": false } }))
}

/// The multi-round-trip flows (2026-07-28), one tool or prompt each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Elicitation,
    Sampling,
    ListRoots,
    RequestState,
    MultipleInputs,
    MultiRound,
    TamperedState,
    Capabilities,
}

impl Flow {
    const ALL: [Flow; 8] = [
        Flow::Elicitation,
        Flow::Sampling,
        Flow::ListRoots,
        Flow::RequestState,
        Flow::MultipleInputs,
        Flow::MultiRound,
        Flow::TamperedState,
        Flow::Capabilities,
    ];

    fn tool(self) -> &'static str {
        match self {
            Flow::Elicitation => "test_input_required_result_elicitation",
            Flow::Sampling => "test_input_required_result_sampling",
            Flow::ListRoots => "test_input_required_result_list_roots",
            Flow::RequestState => "test_input_required_result_request_state",
            Flow::MultipleInputs => "test_input_required_result_multiple_inputs",
            Flow::MultiRound => "test_input_required_result_multi_round",
            Flow::TamperedState => "test_input_required_result_tampered_state",
            Flow::Capabilities => "test_input_required_result_capabilities",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Flow::Elicitation => "Asks the user's name, then greets them.",
            Flow::Sampling => "Asks the client's model a question, then returns its answer.",
            Flow::ListRoots => "Asks for the client's roots, then lists them.",
            Flow::RequestState => "Asks for a confirmation, with a signed requestState.",
            Flow::MultipleInputs => "Asks for a name, a greeting and the roots at once.",
            Flow::MultiRound => "Asks for a name, then a colour, in two rounds.",
            Flow::TamperedState => "Asks for a confirmation; refuses a tampered requestState.",
            Flow::Capabilities => "Asks only what the client's capabilities allow.",
        }
    }

    fn from_tool(name: &str) -> Option<Flow> {
        Flow::ALL.into_iter().find(|flow| flow.tool() == name)
    }
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field],
        },
    }})
}

fn sample(question: &str, max_tokens: u32) -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": question } }],
        "maxTokens": max_tokens,
    }})
}

fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// One answer of `inputResponses`: absent (ask again), or read, or malformed (an error).
fn response<'a>(
    round: &'a InputRound,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, ErrorObject> {
    match round
        .responses
        .as_ref()
        .and_then(|responses| responses.get(key))
    {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(answer)) => Ok(Some(answer)),
        Some(_) => Err(bad_params(format!(
            "`inputResponses.{key}` must be an object"
        ))),
    }
}

/// An elicitation answer's field, if the user accepted.
fn accepted<'a>(
    answer: &'a Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a Value>, ErrorObject> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => answer
            .get("content")
            .and_then(|content| content.get(field))
            .map(Some)
            .ok_or_else(|| {
                bad_params(format!("`inputResponses.{key}.content.{field}` is missing"))
            }),
        Some("decline" | "cancel") => Ok(None),
        _ => Err(bad_params(format!(
            "`inputResponses.{key}.action` must be accept, decline or cancel"
        ))),
    }
}

fn sampled_text(answer: &Map<String, Value>, key: &str) -> Result<String, ErrorObject> {
    answer
        .get("content")
        .and_then(|content| content.get("text"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad_params(format!("`inputResponses.{key}.content.text` is missing")))
}

fn roots_text(answer: &Map<String, Value>, key: &str) -> Result<String, ErrorObject> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_params(format!("`inputResponses.{key}.roots` must be an array")))?;
    Ok(roots
        .iter()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(", "))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0)
}

impl Conformance {
    // `..Capabilities::default()` keeps this compiling when the core offers more.
    #[allow(clippy::needless_update)]
    fn new() -> Result<Conformance, ring::error::Unspecified> {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)?;
        Ok(Conformance {
            info: ServerInfo {
                implementation: Implementation {
                    name: "switchboard-conformance".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    title: Some("Switchboard conformance fixture".into()),
                    description: None,
                    website_url: None,
                },
                capabilities: Capabilities::EVERYTHING,
                cache: CacheHints::default(),
            },
            events: broadcast::channel(16).0,
            key,
            subscriptions: Mutex::new(BTreeSet::new()),
        })
    }

    /// A `requestState` for `binding` (the method and name it belongs to): the state as
    /// base64url JSON, a dot, and its HMAC-SHA256 tag.
    fn seal(&self, binding: &str, state: Value) -> String {
        let payload = json!({ "for": binding, "expires": now_ms() + STATE_LIFETIME.as_millis() as u64, "state": state });
        let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
        let tag = hmac::sign(&self.key, payload.as_bytes());
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The state `seal` put in `sealed`, if it is ours, for `binding` and not expired.
    fn open(&self, binding: &str, sealed: &str) -> Result<Value, ErrorObject> {
        let tampered = || {
            bad_params("`requestState` failed its integrity check (tampered, or not this server's)")
        };
        if sealed.len() > MAX_STATE_BYTES {
            return Err(tampered());
        }
        let (payload, tag) = sealed.split_once('.').ok_or_else(tampered)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| tampered())?;
        hmac::verify(&self.key, payload.as_bytes(), &tag).map_err(|_| tampered())?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| tampered())?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| tampered())?;
        if payload["for"].as_str() != Some(binding) {
            return Err(bad_params(format!(
                "`requestState` belongs to another request, not {binding}"
            )));
        }
        if payload["expires"]
            .as_u64()
            .is_none_or(|expires| expires < now_ms())
        {
            return Err(bad_params(
                "`requestState` has expired; call again without it",
            ));
        }
        Ok(payload["state"].clone())
    }

    /// An `input_required` result asking for `requests`; a client that did not declare
    /// the capability one of them needs is refused with -32021 instead (a server must
    /// never ask for input the client cannot give).
    fn input_required(
        &self,
        client: &ClientFacts,
        binding: &str,
        requests: Map<String, Value>,
        state: Option<Value>,
    ) -> Answer {
        for request in requests.values() {
            let needs = match request.get("method").and_then(Value::as_str) {
                Some("elicitation/create") => "elicitation",
                Some("sampling/createMessage") => "sampling",
                _ => "roots",
            };
            if !client.declares(needs) {
                let mut error = ErrorObject::new(
                    MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!(
                        "{binding} asks the client for input that needs its `{needs}` capability"
                    ),
                );
                error.data = Some(json!({ "requiredCapabilities": { needs: {} } }));
                return Err(error);
            }
        }
        let mut result = json!({ "resultType": "input_required", "inputRequests": requests });
        if let Some(state) = state {
            result["requestState"] = Value::String(self.seal(binding, state));
        }
        Ok(result)
    }

    /// The state a retry carries (none when it carries none).
    fn state(&self, binding: &str, round: &InputRound) -> Result<Option<Value>, ErrorObject> {
        round
            .request_state
            .as_deref()
            .map(|sealed| self.open(binding, sealed))
            .transpose()
    }

    /// Asks the client: during the call (legacy), or with an `input_required` result whose
    /// retry carries the answer (2026-07-28). A client that cannot be asked (or refuses)
    /// makes the call an error saying why.
    async fn ask(
        &self,
        call: &CallTool,
        context: &RequestContext,
        method: ClientMethod,
        params: Value,
    ) -> Result<Asked, ErrorObject> {
        if context.client.era == Era::Modern {
            if let Some(answer) = response(&call.input, "answer")? {
                return Ok(Asked::Answered(Value::Object(answer.clone())));
            }
            let request = json!({ "method": method.method(), "params": params });
            let binding = format!("tools/call {}", call.name);
            let requests = Map::from_iter([("answer".to_owned(), request)]);
            return Ok(Asked::InputRequired(self.input_required(
                &context.client,
                &binding,
                requests,
                None,
            )?));
        }
        match context.ask_client(method, params).await {
            Ok(answer) => Ok(Asked::Answered(answer)),
            Err(error) => Err(ErrorObject::new(INTERNAL_ERROR, error.to_string())),
        }
    }

    fn flow(&self, flow: Flow, call: &CallTool, context: &RequestContext) -> Answer {
        if context.client.era == Era::Legacy {
            return text_result_error(format!(
                "`{}` asks the client for input with an input_required result, which needs \
                 protocol version 2026-07-28",
                call.name
            ));
        }
        let binding = format!("tools/call {}", call.name);
        let round = &call.input;
        let state = self.state(&binding, round)?;
        let one = |key: &str, request: Value| Map::from_iter([(key.to_owned(), request)]);
        match flow {
            Flow::Elicitation => match response(round, "user_name")? {
                None => self.input_required(
                    &context.client,
                    &binding,
                    one("user_name", elicit("What is your name?", "name", "string")),
                    None,
                ),
                Some(answer) => match accepted(answer, "user_name", "name")? {
                    Some(name) => {
                        text_result(format!("Hello, {}!", name.as_str().unwrap_or("stranger")))
                    }
                    None => text_result("The user declined to give a name."),
                },
            },
            Flow::Sampling => match response(round, "capital_question")? {
                None => self.input_required(
                    &context.client,
                    &binding,
                    one(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    ),
                    None,
                ),
                Some(answer) => text_result(format!(
                    "The model says: {}",
                    sampled_text(answer, "capital_question")?
                )),
            },
            Flow::ListRoots => match response(round, "client_roots")? {
                None => self.input_required(
                    &context.client,
                    &binding,
                    one("client_roots", list_roots()),
                    None,
                ),
                Some(answer) => text_result(format!(
                    "The client's roots: {}",
                    roots_text(answer, "client_roots")?
                )),
            },
            Flow::RequestState | Flow::TamperedState => {
                match (response(round, "confirm")?, state) {
                    (Some(answer), Some(state)) if state["step"] == "confirm" => {
                        let confirmed = accepted(answer, "confirm", "ok")?
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        text_result(format!("state-ok: confirmed={confirmed}"))
                    }
                    _ => self.input_required(
                        &context.client,
                        &binding,
                        one("confirm", elicit("Please confirm", "ok", "boolean")),
                        Some(json!({ "step": "confirm" })),
                    ),
                }
            }
            Flow::MultipleInputs => {
                let answers = [
                    response(round, "user_name")?,
                    response(round, "greeting")?,
                    response(round, "client_roots")?,
                ];
                match (answers, state) {
                    ([Some(name), Some(greeting), Some(roots)], Some(_)) => {
                        let name = accepted(name, "user_name", "name")?
                            .and_then(Value::as_str)
                            .unwrap_or("stranger");
                        text_result(format!(
                            "{} {name}; roots: {}",
                            sampled_text(greeting, "greeting")?,
                            roots_text(roots, "client_roots")?
                        ))
                    }
                    _ => {
                        let requests = Map::from_iter([
                            (
                                "user_name".to_owned(),
                                elicit("What is your name?", "name", "string"),
                            ),
                            ("greeting".to_owned(), sample("Generate a greeting", 50)),
                            ("client_roots".to_owned(), list_roots()),
                        ]);
                        self.input_required(
                            &context.client,
                            &binding,
                            requests,
                            Some(json!({ "step": "all" })),
                        )
                    }
                }
            }
            Flow::MultiRound => {
                let step = state.as_ref().and_then(|state| state["step"].as_u64());
                match (step, response(round, "step1")?, response(round, "step2")?) {
                    (Some(1), Some(answer), _) => {
                        let name = accepted(answer, "step1", "name")?
                            .cloned()
                            .unwrap_or(Value::Null);
                        self.input_required(
                            &context.client,
                            &binding,
                            one(
                                "step2",
                                elicit("Step 2: What is your favorite color?", "color", "string"),
                            ),
                            Some(json!({ "step": 2, "name": name })),
                        )
                    }
                    (Some(2), _, Some(answer)) => {
                        let color = accepted(answer, "step2", "color")?
                            .and_then(Value::as_str)
                            .unwrap_or("none");
                        let name = state
                            .as_ref()
                            .and_then(|state| state["name"].as_str())
                            .unwrap_or("stranger");
                        text_result(format!("Hello {name}, your favorite color is {color}."))
                    }
                    _ => self.input_required(
                        &context.client,
                        &binding,
                        one(
                            "step1",
                            elicit("Step 1: What is your name?", "name", "string"),
                        ),
                        Some(json!({ "step": 1 })),
                    ),
                }
            }
            Flow::Capabilities => {
                let client = &context.client;
                let mut requests = Map::new();
                for (capability, key, request) in [
                    (
                        "elicitation",
                        "user_name",
                        elicit("What is your name?", "name", "string"),
                    ),
                    ("sampling", "greeting", sample("Generate a greeting", 50)),
                    ("roots", "client_roots", list_roots()),
                ] {
                    if client.declares(capability) && response(round, key)?.is_none() {
                        requests.insert(key.to_owned(), request);
                    }
                }
                if requests.is_empty() {
                    text_result("Everything the client's capabilities allow was answered.")
                } else {
                    self.input_required(&context.client, &binding, requests, None)
                }
            }
        }
    }

    fn prompt_flow(&self, request: &GetPrompt, context: &RequestContext) -> Answer {
        if context.client.era == Era::Legacy {
            return Err(bad_params(
                "this prompt asks for input with an input_required result, which needs protocol version 2026-07-28",
            ));
        }
        let binding = format!("prompts/get {}", request.name);
        match response(&request.input, "user_context")? {
            None => self.input_required(
                &context.client,
                &binding,
                Map::from_iter([(
                    "user_context".to_owned(),
                    elicit("What context should the prompt use?", "context", "string"),
                )]),
                None,
            ),
            Some(answer) => {
                let context = accepted(answer, "user_context", "context")?
                    .and_then(Value::as_str)
                    .unwrap_or("none");
                Ok(
                    json!({ "messages": [{ "role": "user", "content": text(format!("Use this context: {context}")) }] }),
                )
            }
        }
    }

    async fn call(self: Arc<Self>, call: CallTool, context: RequestContext) -> Answer {
        if let Some(flow) = Flow::from_tool(&call.name) {
            return self.flow(flow, &call, &context);
        }
        match call.name.as_str() {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => Ok(
                json!({ "content": [{ "type": "image", "data": PNG, "mimeType": "image/png" }] }),
            ),
            "test_audio_content" => Ok(
                json!({ "content": [{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }] }),
            ),
            "test_embedded_resource" => Ok(json!({ "content": [{ "type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            }}]})),
            "test_multiple_content_types" => Ok(json!({ "content": [
                text("Multiple content types test:"),
                { "type": "image", "data": PNG, "mimeType": "image/png" },
                { "type": "resource", "resource": {
                    "uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": json!({ "test": "data", "value": 123 }).to_string(),
                }},
            ]})),
            "test_tool_with_logging" | "test_logging_tool" => {
                for (pause, message) in [
                    (0, "Tool execution started"),
                    (50, "Tool processing data"),
                    (50, "Tool execution completed"),
                ] {
                    pause_for(&context, pause).await?;
                    context
                        .log(LogMessage {
                            level: LogLevel::Info,
                            logger: Some("conformance".into()),
                            data: json!(message),
                        })
                        .await;
                }
                text_result("Tool with logging executed successfully")
            }
            "test_error_handling" => {
                text_result_error("This tool intentionally returns an error for testing".into())
            }
            "test_tool_with_progress" => {
                for (pause, progress) in [(0, 0.0), (50, 50.0), (50, 100.0)] {
                    pause_for(&context, pause).await?;
                    context.progress(progress, Some(100.0), None).await;
                }
                text_result("Tool with progress executed successfully")
            }
            "test_trigger_tool_change" => {
                let _ = self.events.send(ServiceEvent::ToolsChanged);
                text_result("The tool list was announced as changed.")
            }
            "test_trigger_prompt_change" => {
                let _ = self.events.send(ServiceEvent::PromptsChanged);
                text_result("The prompt list was announced as changed.")
            }
            "test_missing_capability" => {
                if context.client.declares("sampling") {
                    text_result("The client declared sampling.")
                } else {
                    let mut error = ErrorObject::new(
                        MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "test_missing_capability needs the client's sampling capability",
                    );
                    error.data = Some(json!({ "requiredCapabilities": { "sampling": {} } }));
                    Err(error)
                }
            }
            "test_streaming_elicitation" => {
                let flow = CallTool {
                    name: Flow::Elicitation.tool().into(),
                    ..call
                };
                self.flow(Flow::Elicitation, &flow, &context)
            }
            "test_sampling" => {
                let Some(prompt) = call.arguments.get("prompt").and_then(Value::as_str) else {
                    return text_result_error("`prompt` (a string) is required".into());
                };
                let params = json!({
                    "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                    "maxTokens": 100,
                });
                let answer = match self
                    .ask(&call, &context, ClientMethod::Sampling, params)
                    .await?
                {
                    Asked::Answered(answer) => answer,
                    Asked::InputRequired(result) => return Ok(result),
                };
                let said = answer
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                text_result(format!("LLM response: {said}"))
            }
            "test_elicitation" => {
                let Some(message) = call.arguments.get("message").and_then(Value::as_str) else {
                    return text_result_error("`message` (a string) is required".into());
                };
                let params = json!({
                    "message": message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "username": { "type": "string", "description": "User's response" },
                            "email": { "type": "string", "description": "User's email address" },
                        },
                        "required": ["username", "email"],
                    },
                });
                let answer = match self
                    .ask(&call, &context, ClientMethod::Elicitation, params)
                    .await?
                {
                    Asked::Answered(answer) => answer,
                    Asked::InputRequired(result) => return Ok(result),
                };
                text_result(format!("User response: {answer}"))
            }
            "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
                let params = if call.name == "test_elicitation_sep1034_defaults" {
                    sep1034_defaults()
                } else {
                    sep1330_enums()
                };
                let answer = match self
                    .ask(&call, &context, ClientMethod::Elicitation, params)
                    .await?
                {
                    Asked::Answered(answer) => answer,
                    Asked::InputRequired(result) => return Ok(result),
                };
                text_result(elicitation_completed(&answer))
            }
            "test_reconnection" => {
                pause_for(&context, RECONNECTION_CALL.as_millis() as u64).await?;
                text_result("Reconnection test completed successfully")
            }
            "test_param_headers" => match call.arguments.get("region").and_then(Value::as_str) {
                Some(region) => text_result(format!("region: {region}")),
                None => text_result_error("`region` (a string) is required".into()),
            },
            "json_schema_2020_12_tool" => {
                text_result(format!("arguments: {}", Value::Object(call.arguments)))
            }
            other => Err(bad_params(format!("no tool named `{other}`"))),
        }
    }
}

/// What asking the client gave.
enum Asked {
    /// Its answer.
    Answered(Value),
    /// The call's result is to ask (2026-07-28: `input_required`).
    InputRequired(Value),
}

/// An elicitation with a default for every primitive type (SEP-1034).
fn sep1034_defaults() -> Value {
    json!({
        "message": "Defaults for every primitive type (SEP-1034)",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active",
                },
                "verified": { "type": "boolean", "description": "Verification status", "default": true },
            },
        },
    })
}

/// An elicitation with every enum form (SEP-1330).
fn sep1330_enums() -> Value {
    json!({
        "message": "Every enum form (SEP-1330)",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                "titledSingle": { "type": "string", "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" },
                ]},
                "legacyEnum": {
                    "type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                "titledMulti": { "type": "array", "items": { "anyOf": [
                    { "const": "value1", "title": "First Choice" },
                    { "const": "value2", "title": "Second Choice" },
                    { "const": "value3", "title": "Third Choice" },
                ]}},
            },
        },
    })
}

fn elicitation_completed(answer: &Value) -> String {
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("?");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    format!("Elicitation completed: action={action}, content={content}")
}

fn text_result_error(message: String) -> Answer {
    Ok(json!({ "content": [text(message)], "isError": true }))
}

/// Waits `ms` milliseconds, or fails when the call is cancelled.
async fn pause_for(context: &RequestContext, ms: u64) -> Result<(), ErrorObject> {
    if ms == 0 {
        return Ok(());
    }
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(()),
        () = context.cancel.cancelled() => Err(ErrorObject::new(INTERNAL_ERROR, "the call was cancelled")),
    }
}

/// The service handed to the transports (the state lives behind one `Arc`).
struct Shared(Arc<Conformance>);

impl Service for Shared {
    fn info(&self) -> &ServerInfo {
        &self.0.info
    }

    fn instructions(&self) -> ServiceFuture<Option<String>> {
        Box::pin(async { Some("The conformance suite's server fixture.".to_owned()) })
    }

    fn handle(&self, request: ServiceRequest, context: RequestContext) -> ServiceFuture<Answer> {
        let server = self.0.clone();
        Box::pin(async move {
            match request {
                ServiceRequest::ListTools(_) => Ok(tools()),
                ServiceRequest::CallTool(call) => server.call(call, context).await,
                ServiceRequest::ListPrompts(_) => Ok(prompts()),
                ServiceRequest::GetPrompt(request)
                    if request.name == "test_input_required_result_prompt" =>
                {
                    server.prompt_flow(&request, &context)
                }
                ServiceRequest::GetPrompt(request) => get_prompt(&request),
                ServiceRequest::ListResources(_) => Ok(resources()),
                ServiceRequest::ListResourceTemplates(_) => Ok(json!({ "resourceTemplates": [{
                    "uriTemplate": "test://template/{id}/data", "name": "template",
                    "description": "Data for an id.", "mimeType": "application/json",
                }]})),
                ServiceRequest::ReadResource(request) => read_resource(&request.uri),
                ServiceRequest::Complete(params) => complete(&params),
                ServiceRequest::Subscribe { uri } => {
                    lock(&server.subscriptions).insert(uri);
                    Ok(json!({}))
                }
                ServiceRequest::Unsubscribe { uri } => {
                    lock(&server.subscriptions).remove(&uri);
                    Ok(json!({}))
                }
            }
        })
    }

    fn events(&self) -> broadcast::Receiver<ServiceEvent> {
        self.0.events.subscribe()
    }

    fn header_params(&self, tool: &str, _endpoint: Option<&str>) -> Vec<(String, String)> {
        match tool {
            "test_param_headers" => vec![("Region".into(), "region".into())],
            _ => Vec::new(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service: Arc<dyn Service> = Arc::new(Shared(Arc::new(
        Conformance::new().map_err(|_| "no randomness for the requestState key")?,
    )));
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => {
            let (stdin, stdout) = switchboard_wire::stdio::own_stdio();
            switchboard_server::stdio::serve(service, stdin, stdout, StdioOptions::default()).await;
        }
        (Some("--http"), Some(addr)) => {
            let addr: SocketAddr = addr.parse()?;
            // Streams of calls that run long are polled (`test_reconnection` runs longer).
            let mut options = HttpServeOptions::default();
            options.limits.poll_after = Some(POLL_AFTER);
            let http = HttpServer::bind(addr, service, options).await?;
            // The one line a launcher waits for.
            writeln!(std::io::stderr(), "listening on {}", http.url())?;
            http.serve(CancellationToken::new()).await;
        }
        _ => return Err("usage: conformance_server [--http ADDR]".into()),
    }
    Ok(())
}
