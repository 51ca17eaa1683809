//! `switchboard conformance-client URL`: Switchboard's client as the client under test of the
//! official MCP conformance suite (`conformance client --command "switchboard
//! conformance-client"`). The runner names the scenario in `MCP_CONFORMANCE_SCENARIO`,
//! optionally the protocol version in `MCP_CONFORMANCE_PROTOCOL_VERSION`, and passes the
//! scenario server's URL as the last argument.
//!
//! The client does what an ordinary host would: connect, list tools, and call the tools the
//! scenario context names (`toolCalls`) or else each tool with arguments derived from its schema, accepting elicitations with the schema's defaults
//! (a response stream the server closes early is resumed by the transport itself). A
//! server that declares the skills extension has its skills listed and, as an agent would
//! ask for them, loaded and verified (see `use_skills`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_http::HttpOptions;
use switchboard_session::{
    CallOptions, ClientHandler, EraChoice, HandlerFuture, Session, SessionConfig,
};
use switchboard_wire::stdio::ShutdownGrace;

/// Accepts elicitations, filling every field from the schema's `default` (SEP-1034).
struct AcceptWithDefaults;

impl ClientHandler for AcceptWithDefaults {
    fn supports_elicitation(&self) -> bool {
        true
    }

    fn elicit(&self, _server: &str, params: Value) -> HandlerFuture {
        let mut content = Map::new();
        if let Some(properties) = params
            .pointer("/requestedSchema/properties")
            .and_then(Value::as_object)
        {
            for (name, property) in properties {
                if let Some(default) = property.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        Box::pin(async move { Ok(json!({"action": "accept", "content": content})) })
    }
}

/// Which skills the conformance client's agent asks its host to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkillRequests {
    /// None: the host only builds its registry from the listing.
    None,
    /// Every listed skill, and then every file each loaded skill lists.
    EachListed,
}

/// The skills extension as a host uses it: the listing alone builds the registry (no file
/// is read); a skill is loaded when the agent asks for it, verified against its entry, and
/// its files are read through the loaded skill. A skill or file that fails verification
/// is logged and its content not used.
async fn use_skills(session: &Session, agent: SkillRequests) {
    let listing = match session.list_skills().await {
        Ok(listing) => listing,
        Err(error) => {
            tracing::warn!(%error, "skills/list failed");
            return;
        }
    };
    for problem in &listing.problems {
        tracing::warn!(detail = %problem.detail, "skills/list entry skipped");
    }
    if agent == SkillRequests::None {
        return;
    }
    for entry in &listing.items {
        let skill = match session.load_skill(entry).await {
            Ok(skill) => skill,
            Err(error) => {
                tracing::warn!(skill = %entry.uri, %error, "skill not loaded");
                continue;
            }
        };
        let files: Vec<&str> = match &skill.entry.resources {
            switchboard_protocol::SkillResources::Listed(files) => files
                .iter()
                .map(|file| file.uri.as_str())
                .filter(|uri| *uri != skill.entry.uri)
                .collect(),
            switchboard_protocol::SkillResources::Dynamic => Vec::new(),
        };
        for uri in files {
            if let Err(error) = session.read_skill_file(&skill, uri).await {
                tracing::warn!(skill = %entry.uri, file = %uri, %error, "skill file not used");
            }
        }
    }
}

/// Arguments from a tool's schema: every property, with a default or a simple value of its type.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let value = property.get("default").cloned().unwrap_or_else(|| {
                match property.get("type").and_then(Value::as_str) {
                    Some("integer") | Some("number") => json!(2),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("conformance"),
                }
            });
            arguments.insert(name.clone(), value);
        }
    }
    Value::Object(arguments)
}

/// An OAuth client as a headless host would have: the authorization redirect is followed
/// directly, a pre-registered client comes from the scenario context.
fn oauth_client(context: &Value) -> Result<switchboard_auth::OAuthClient, String> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let pre_registered = text("client_id").map(|client_id| switchboard_auth::ClientCredentials {
        client_id,
        client_secret: text("client_secret"),
        private_key_pem: text("private_key_pem"),
        signing_algorithm: text("signing_algorithm"),
    });
    switchboard_auth::OAuthClient::new(switchboard_auth::OAuthConfig {
        client_name: "Switchboard".into(),
        redirect_uri: "http://127.0.0.1:33418/callback".into(),
        pre_registered,
        // The suite's scenario expects this document URL as the client id.
        client_metadata_url: Some("https://conformance-test.local/client-metadata.json".into()),
        want_refresh_tokens: true,
        max_step_ups: 2,
        acquire: switchboard_auth::Acquire::Authorize(Arc::new(
            switchboard_auth::FollowRedirectDriver::new().map_err(|e| e.to_string())?,
        )),
        identity_assertion: text("idp_token_endpoint").zip(text("idp_id_token")).map(
            |(idp_token_endpoint, id_token)| switchboard_auth::IdentityAssertion {
                idp_token_endpoint,
                id_token,
                idp_client_id: text("idp_client_id"),
            },
        ),
        // The workload identity scenario hands over the workload's token.
        workload_identity: text("valid_jwt").map(|token| switchboard_auth::WorkloadIdentity {
            token: switchboard_auth::WorkloadToken::Value(token),
        }),
        store: None,
    })
    .map_err(|e| e.to_string())
}

/// Runs one scenario; the exit code tells the runner whether the client itself failed.
pub(crate) async fn run(url: &str) -> Result<u8, String> {
    let mut config = SessionConfig::new("conformance");
    config.handler = Arc::new(AcceptWithDefaults);
    config.connect_timeout = Duration::from_secs(20);
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        config.era = match switchboard_protocol::Era::of_version(&version) {
            Some(switchboard_protocol::Era::Modern) => EraChoice::Modern,
            Some(switchboard_protocol::Era::Legacy) => EraChoice::Legacy,
            None => EraChoice::Auto,
        };
        config.protocol_version = Some(version);
    }
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut options = HttpOptions::new("conformance", url);
    options.authorizer = Some(Arc::new(oauth_client(&context)?));
    let session = Session::connect_http(options, config)
        .await
        .map_err(|e| e.to_string())?;
    if session.offers_skills() {
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        // The prefetch scenario checks what a host reads before its agent asks for a
        // skill, so there the agent asks for none.
        let agent = match scenario.as_str() {
            "sep-2640-client-no-prefetch" => SkillRequests::None,
            _ => SkillRequests::EachListed,
        };
        use_skills(&session, agent).await;
    }
    if session.negotiated().capabilities.tools.is_some() {
        let tools = session.list_tools().await.map_err(|e| e.to_string())?;
        // Newer suites name the exact calls to make in the scenario context.
        if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
            for call in calls {
                let name = call.get("name").and_then(Value::as_str).unwrap_or("");
                if let Err(error) = session
                    .call_tool(name, call.get("arguments"), &CallOptions::default())
                    .await
                {
                    tracing::warn!(tool = %name, %error, "conformance call failed");
                }
            }
            session
                .shutdown(ShutdownGrace {
                    after_stdin_close: Duration::from_secs(2),
                    after_sigterm: Duration::from_secs(1),
                })
                .await;
            return Ok(0);
        }
        // The preservation scenario asks for one tool's schema to be echoed back verbatim.
        let focal_schema = tools
            .items
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .map(|t| t.input_schema.clone());
        for tool in &tools.items {
            let arguments = match (&focal_schema, tool.name.as_str()) {
                (Some(schema), "json_schema_echo") => json!({ "schema": schema }),
                _ => arguments_for(&tool.input_schema),
            };
            if let Err(error) = session
                .call_tool(&tool.name, Some(&arguments), &CallOptions::default())
                .await
            {
                tracing::warn!(tool = %tool.name, %error, "conformance call failed");
            }
        }
    }
    session
        .shutdown(ShutdownGrace {
            after_stdin_close: Duration::from_secs(2),
            after_sigterm: Duration::from_secs(1),
        })
        .await;
    Ok(0)
}
