//! The server core: what an MCP server offers, apart from the era it is spoken in and the
//! transport it travels on.
//!
//! A [`Service`] answers typed [`ServiceRequest`]s (the lists, `tools/call`, `prompts/get`,
//! `resources/read`, completion, resource subscriptions) and publishes [`ServiceEvent`]s
//! (list changes, resource updates, log messages). The core does the rest, the same way for
//! every transport:
//! - the era of each request ([`route`]): a request whose `_meta` names a modern protocol
//!   version is served statelessly under that version (its `_meta` validated: version,
//!   client capabilities); anything else is legacy, scoped to the `initialize` of its
//!   stdio process or HTTP session;
//! - the requests of the era itself: `initialize` (version negotiation), `ping`,
//!   `server/discover`, `logging/setLevel`; the methods an era does not have are -32601;
//! - the shape of results per era ([`finish`]): modern results carry `resultType`, the
//!   server's identity and, where the protocol asks, caching hints; legacy results carry
//!   none of them;
//! - `subscriptions/listen` streams ([`listen`]): the acknowledgement first, then the
//!   events the client asked for, each tagged with the subscription.
//!
//! Transports ([`crate::stdio`], [`crate::http`]) frame messages, keep the requests in
//! flight and their cancellation, and carry each request's notifications (progress, log
//! messages) on the right channel.

pub mod ask;
pub mod finish;
pub mod identity;
pub mod listen;
pub mod route;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_protocol::{
    EmptyResult, Era, Implementation, ListChangedCapability, LoggingMessageParams, ProgressParams,
    ResourceUpdatedParams, ResourcesCapability, ServerCapabilities, methods,
};
use switchboard_text::redact::Secrets;
use switchboard_wire::ErrorObject;
use tokio::sync::{broadcast, mpsc};

pub use ask::{
    AskError, CLIENT_ANSWER_DEADLINE, ClientAsker, ClientMethod, ClientQuestion, QUESTION_BUFFER,
    SessionKey,
};
pub use identity::{ClientIdentity, GrantClaims, Grants, PresentedToken, TokenFingerprint};
use tokio_util::sync::CancellationToken;

/// A boxed future a service returns.
pub type ServiceFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a request's answer is: a result object, or a JSON-RPC error.
pub type Answer = Result<Value, ErrorObject>;

/// The empty result (`ping`, `logging/setLevel`, subscriptions).
pub fn empty_result() -> Value {
    switchboard_protocol::to_json(&EmptyResult {})
}

/// An MCP server's offer, independent of era and transport.
///
/// Every method is called from the transport's tasks; a handler that runs long watches
/// [`RequestContext::cancel`].
pub trait Service: Send + Sync + 'static {
    /// Who the server is and what it offers (fixed for the service's life).
    fn info(&self) -> &ServerInfo;
    /// Instructions for the model, read for each `initialize` and `server/discover` (they
    /// may change: a gateway's grow as its servers start, so it may wait a little).
    fn instructions(&self) -> ServiceFuture<Option<String>>;
    /// Answers one request.
    fn handle(&self, request: ServiceRequest, context: RequestContext) -> ServiceFuture<Answer>;
    /// The events this server announces, for one client (each client subscribes once).
    fn events(&self) -> broadcast::Receiver<ServiceEvent>;
    /// A tool's `x-mcp-header` parameters (2026-07-28) as the service lists the tool at
    /// `endpoint` (`None`: the default one; a profile's name): `(header name, argument
    /// name)` pairs whose `Mcp-Param-{Name}` headers the HTTP transport checks against a
    /// call's arguments. None by default (a service whose tools mark none).
    fn header_params(&self, tool: &str, endpoint: Option<&str>) -> Vec<(String, String)> {
        let _ = (tool, endpoint);
        Vec::new()
    }
    /// Whether the service serves the endpoint named `name` (the HTTP transport's
    /// `/mcp/<name>`, a gateway's profile); none by default.
    fn serves_endpoint(&self, name: &str) -> bool {
        let _ = name;
        false
    }
}

/// The server's identity and capabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// Who the server says it is (`serverInfo`).
    pub implementation: Implementation,
    /// What is offered.
    pub capabilities: Capabilities,
    /// Caching hints put on modern results that need them and do not carry their own.
    pub cache: CacheHints,
}

/// What a server offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// `tools/list`, `tools/call`.
    pub tools: bool,
    /// `prompts/list`, `prompts/get`.
    pub prompts: bool,
    /// `resources/list`, `resources/templates/list`, `resources/read`.
    pub resources: bool,
    /// `resources/subscribe` (legacy) and resource subscriptions on listen streams.
    pub resource_subscriptions: bool,
    /// `completion/complete`.
    pub completions: bool,
    /// `notifications/message` (log messages).
    pub logging: bool,
    /// Whether the offered lists announce their changes (`listChanged`): a server whose
    /// lists never change says no.
    pub list_changes: bool,
}

impl Capabilities {
    /// Everything offered, lists that change included (a gateway's offer).
    pub const EVERYTHING: Capabilities = Capabilities {
        tools: true,
        prompts: true,
        resources: true,
        resource_subscriptions: true,
        completions: true,
        logging: true,
        list_changes: true,
    };

    /// The capabilities as `initialize` and `server/discover` declare them.
    pub fn declared(self) -> ServerCapabilities {
        let list = ListChangedCapability {
            list_changed: self.list_changes,
        };
        let declared = |offered: bool| offered.then(|| Value::Object(Map::new()));
        ServerCapabilities {
            tools: self.tools.then_some(list),
            prompts: self.prompts.then_some(list),
            resources: self.resources.then_some(ResourcesCapability {
                list_changed: self.list_changes,
                subscribe: self.resource_subscriptions,
            }),
            completions: declared(self.completions),
            logging: declared(self.logging),
            experimental: None,
            extensions: None,
        }
    }

    /// Whether a request kind is offered (a request that is not gets -32601).
    pub fn offers(self, request: &ServiceRequest) -> bool {
        match request {
            ServiceRequest::ListTools(_) | ServiceRequest::CallTool(_) => self.tools,
            ServiceRequest::ListPrompts(_) | ServiceRequest::GetPrompt(_) => self.prompts,
            ServiceRequest::ListResources(_)
            | ServiceRequest::ListResourceTemplates(_)
            | ServiceRequest::ReadResource(_) => self.resources,
            ServiceRequest::Subscribe { .. } | ServiceRequest::Unsubscribe { .. } => {
                self.resource_subscriptions
            }
            ServiceRequest::Complete(_) => self.completions,
        }
    }
}

/// Caching hints for modern results (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long a client may reuse a result, in milliseconds.
    pub ttl_ms: u64,
    /// Whether a result may be shared across users.
    pub scope: CacheScope,
}

impl Default for CacheHints {
    /// Not reusable, not shared: always correct, if not fast.
    fn default() -> CacheHints {
        CacheHints {
            ttl_ms: 0,
            scope: CacheScope::Private,
        }
    }
}

/// `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Holds no user-specific data; may be shared.
    Public,
    /// For the requesting user only.
    Private,
}

impl CacheScope {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// A request a [`Service`] answers, its parameters read and checked for shape.
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceRequest {
    /// `tools/list`.
    ListTools(Page),
    /// `tools/call`.
    CallTool(CallTool),
    /// `prompts/list`.
    ListPrompts(Page),
    /// `prompts/get`.
    GetPrompt(GetPrompt),
    /// `resources/list`.
    ListResources(Page),
    /// `resources/templates/list`.
    ListResourceTemplates(Page),
    /// `resources/read`.
    ReadResource(ReadResource),
    /// `completion/complete`, its parameters as sent (`ref`, `argument`, `context`).
    Complete(Map<String, Value>),
    /// `resources/subscribe` (legacy era; a listen stream's resource subscriptions are
    /// the core's).
    Subscribe {
        /// The resource.
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        /// The resource.
        uri: String,
    },
}

impl ServiceRequest {
    /// The method this request came as.
    pub fn method(&self) -> &'static str {
        match self {
            ServiceRequest::ListTools(_) => methods::TOOLS_LIST,
            ServiceRequest::CallTool(_) => methods::TOOLS_CALL,
            ServiceRequest::ListPrompts(_) => methods::PROMPTS_LIST,
            ServiceRequest::GetPrompt(_) => methods::PROMPTS_GET,
            ServiceRequest::ListResources(_) => methods::RESOURCES_LIST,
            ServiceRequest::ListResourceTemplates(_) => methods::RESOURCES_TEMPLATES_LIST,
            ServiceRequest::ReadResource(_) => methods::RESOURCES_READ,
            ServiceRequest::Complete(_) => methods::COMPLETION_COMPLETE,
            ServiceRequest::Subscribe { .. } => methods::RESOURCES_SUBSCRIBE,
            ServiceRequest::Unsubscribe { .. } => methods::RESOURCES_UNSUBSCRIBE,
        }
    }
}

/// A list request's page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The cursor of the page wanted (none: the first).
    pub cursor: Option<String>,
}

/// The parts of a multi-round-trip retry (2026-07-28): the client's answers to the input
/// requests of an earlier `input_required` result, and the state that result carried.
/// Treat both as attacker-controlled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRound {
    /// `inputResponses`, by the keys the server chose.
    pub responses: Option<Map<String, Value>>,
    /// `requestState`, byte for byte as the server sent it.
    pub request_state: Option<String>,
}

/// `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTool {
    /// The tool's name.
    pub name: String,
    /// Its arguments (an empty object when none were sent).
    pub arguments: Map<String, Value>,
    /// A multi-round-trip retry's answers, if this is one.
    pub input: InputRound,
}

/// `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPrompt {
    /// The prompt's name.
    pub name: String,
    /// Its arguments, if any.
    pub arguments: Option<Map<String, Value>>,
    /// A multi-round-trip retry's answers, if this is one.
    pub input: InputRound,
}

/// `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResource {
    /// The resource.
    pub uri: String,
    /// A multi-round-trip retry's answers, if this is one.
    pub input: InputRound,
}

/// Something a server announces to its clients.
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceEvent {
    /// The tool list changed.
    ToolsChanged,
    /// The prompt list changed.
    PromptsChanged,
    /// The resource list (or the template list) changed.
    ResourcesChanged,
    /// A resource changed (clients subscribed to it are told).
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// A log message not tied to one request (legacy clients at or above their level,
    /// among those it is for).
    Log {
        /// The message.
        message: LogMessage,
        /// Who may hear it.
        audience: Audience,
    },
}

/// Who may hear an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    /// Every client.
    Everyone,
    /// The clients of this identity only (what a gateway's server said while only that
    /// identity's requests waited on it).
    Only(ClientIdentity),
}

impl ServiceEvent {
    /// Whether the event may be told to a client of this identity; a transport asks
    /// before it tells a client anything.
    pub fn is_for(&self, identity: &ClientIdentity) -> bool {
        match self {
            ServiceEvent::ToolsChanged
            | ServiceEvent::PromptsChanged
            | ServiceEvent::ResourcesChanged
            | ServiceEvent::ResourceUpdated { .. }
            | ServiceEvent::Log {
                audience: Audience::Everyone,
                ..
            } => true,
            ServiceEvent::Log {
                audience: Audience::Only(only),
                ..
            } => only == identity,
        }
    }
}

/// A log message: `notifications/message`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// Who logged it (a gateway names the upstream server).
    pub logger: Option<String>,
    /// The message (any JSON).
    pub data: Value,
}

impl LogMessage {
    /// The notification's parameters.
    pub fn to_params(&self) -> Value {
        switchboard_protocol::to_json(&LoggingMessageParams {
            level: self.level,
            data: self.data.clone(),
            logger: self.logger.clone(),
        })
    }
}

pub use switchboard_protocol::LogLevel;

/// A notification the server sends a client: for one request (progress, log messages),
/// for a listen stream, or on its own (list changes).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerNotification {
    /// The method.
    pub method: &'static str,
    /// Its parameters.
    pub params: Value,
}

/// The parameters of a notification that has none (a list changed).
pub fn no_params() -> Value {
    Value::Object(Map::new())
}

/// The parameters of `notifications/resources/updated`.
pub fn resource_updated(uri: &str) -> Value {
    switchboard_protocol::to_json(&ResourceUpdatedParams {
        uri: uri.to_owned(),
    })
}

/// Notifications for one request waiting to be carried at most; a handler that sends more
/// waits for room (and its cancellation stops the wait).
pub const REQUEST_NOTIFICATION_BUFFER: usize = 64;

/// The era and protocol version a request is served under, and what the client declared.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientFacts {
    /// The request's era.
    pub era: Era,
    /// The protocol version (negotiated by `initialize`, or the request's own).
    pub protocol_version: Arc<str>,
    /// The client's capabilities (legacy: from `initialize`; modern: this request's).
    pub capabilities: Arc<Value>,
    /// The client's self-described implementation, if it sent one (display only).
    pub info: Option<Arc<Value>>,
    /// Log messages at or above this level reach the client during the request (legacy:
    /// the session's `logging/setLevel`; modern: the request's `logLevel`); none without.
    pub log_level: Option<LogLevel>,
    /// Who the client is (stdio: [`ClientIdentity::Local`]; HTTP: the credential that
    /// passed, else the peer's address). A legacy session's requests carry the identity of
    /// the request that opened it.
    pub identity: ClientIdentity,
    /// The endpoint asked: `None` for the default one (`/mcp`, stdio), a profile's name for
    /// `/mcp/<profile>` (a legacy session stays at the endpoint that opened it).
    pub endpoint: Option<Arc<str>>,
}

impl ClientFacts {
    /// Facts for a legacy client that sent nothing yet (stdio before `initialize`).
    pub fn legacy_default() -> ClientFacts {
        ClientFacts {
            era: Era::Legacy,
            protocol_version: Arc::from(switchboard_protocol::LATEST_LEGACY_VERSION),
            capabilities: Arc::new(Value::Object(Map::new())),
            info: None,
            log_level: None,
            identity: ClientIdentity::Local,
            endpoint: None,
        }
    }

    /// Whether the client declared a capability (`elicitation`, `sampling`, `roots`).
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|value| !value.is_null())
    }
}

/// What a handler gets besides the request: who asks, the request's cancellation, and
/// where its progress and log messages go.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Era, version and declared capabilities of the client, for this request.
    pub client: ClientFacts,
    /// Cancelled when the answer is no longer wanted (the client cancelled, disconnected
    /// in the modern era, or the server is shutting down); the answer is then dropped.
    pub cancel: CancellationToken,
    /// The request's `_meta`, as sent (an authoring handler may read its own keys).
    pub meta: Option<Map<String, Value>>,
    progress_token: Option<Value>,
    notifications: Option<mpsc::Sender<ServerNotification>>,
    /// Where questions to the client go (legacy requests whose transport carries them),
    /// and the session they belong to.
    questions: Option<(mpsc::Sender<ClientQuestion>, SessionKey)>,
    /// Values hidden in everything this context sends the client.
    hidden: Arc<Secrets>,
}

impl RequestContext {
    /// A context; `notifications` carries the request's progress and log messages to
    /// its client (none: they are dropped, as for a client that cannot take them).
    pub fn new(
        client: ClientFacts,
        cancel: CancellationToken,
        meta: Option<Map<String, Value>>,
        notifications: Option<mpsc::Sender<ServerNotification>>,
    ) -> RequestContext {
        let progress_token = meta
            .as_ref()
            .and_then(|meta| meta.get(switchboard_protocol::meta::PROGRESS_TOKEN))
            .filter(|token| token.is_string() || token.is_i64() || token.is_u64())
            .cloned();
        RequestContext {
            client,
            cancel,
            meta,
            progress_token,
            notifications,
            questions: None,
            hidden: Arc::default(),
        }
    }

    /// The context with `secrets` replaced in everything it sends the client (progress
    /// and log messages, questions), as a gateway hides its servers' configured secrets.
    pub fn hiding(mut self, secrets: Arc<Secrets>) -> RequestContext {
        self.hidden = secrets;
        self
    }

    /// The context with a channel for questions to the client ([`RequestContext::ask_client`])
    /// in the legacy session `session`; the transport carries them.
    pub fn with_questions(
        mut self,
        questions: mpsc::Sender<ClientQuestion>,
        session: SessionKey,
    ) -> RequestContext {
        self.questions = Some((questions, session));
        self
    }

    /// The legacy session this request belongs to, when its transport carries questions.
    pub fn session(&self) -> Option<SessionKey> {
        self.questions.as_ref().map(|(_, session)| *session)
    }

    /// Asks the client (a legacy request only: elicitation, sampling, roots) and waits for
    /// its answer, at most [`CLIENT_ANSWER_DEADLINE`] and never past the request's
    /// cancellation. The client must have declared the method's capability.
    pub async fn ask_client(&self, method: ClientMethod, params: Value) -> Result<Value, AskError> {
        self.asker().ask(method, params).await
    }

    /// What asks this request's client, apart from the rest of the request (a gateway
    /// keeps it while it waits on a server for the request).
    pub fn asker(&self) -> ClientAsker {
        ClientAsker {
            client: self.client.clone(),
            cancel: self.cancel.clone(),
            questions: self.questions.clone(),
            hidden: self.hidden.clone(),
        }
    }

    /// The client's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.progress_token.as_ref()
    }

    /// Reports progress, if the client asked for it (else does nothing). `progress` must
    /// grow from one report to the next; the caller keeps it so.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let params = ProgressParams {
            progress_token: token.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        let params = switchboard_protocol::to_json(&params);
        self.notify(methods::PROGRESS, params).await;
    }

    /// Sends a log message about this request, if the client wants that level.
    pub async fn log(&self, message: LogMessage) {
        if self
            .client
            .log_level
            .is_some_and(|wanted| message.level >= wanted)
        {
            self.notify(methods::LOG_MESSAGE, message.to_params()).await;
        }
    }

    /// Whether progress and log messages of this request can reach the client.
    pub fn can_notify(&self) -> bool {
        self.notifications.is_some()
    }

    async fn notify(&self, method: &'static str, mut params: Value) {
        let Some(sender) = &self.notifications else {
            return;
        };
        self.hidden.redact_json(&mut params);
        tokio::select! {
            _ = sender.send(ServerNotification { method, params }) => {}
            () = self.cancel.cancelled() => {}
        }
    }
}
