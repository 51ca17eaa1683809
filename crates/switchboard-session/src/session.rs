//! The session: era detection, handshake, requests with deadlines, and inbound dispatch.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use switchboard_http::HttpOptions;
use switchboard_protocol::{
    CallToolResult, DiscoverResult, Era, Implementation, LATEST_LEGACY_VERSION, LEGACY_VERSIONS,
    ListPage, MODERN_VERSION, MODERN_VERSIONS, NextCursor, PageEntries, ProgressParams, Prompt,
    Resource, ResourceTemplate, ResultType, ServerCapabilities, SubscriptionFilter, Tool,
    error_codes, meta, methods,
};
use switchboard_wire::stdio::{
    ChildProcess, ProcessSpec, ShutdownGrace, ShutdownReport, StdioOptions, StdioTransport,
};
use switchboard_wire::{
    CloseReason, Connection, DEFAULT_MAX_FRAME_BYTES, ErrorObject, Inbound, Malformed,
    MessageContext, Notification, PendingCall, RequestId, Response, UnexpectedReason, WireError,
    WireStats, codes,
};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{ListingCap, SessionError};
use crate::handler::{ClientHandler, NoHandler};
use crate::params::{BaseParams, InputRound, MetaPrefix, RequestParams};

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraChoice {
    /// Probe with `server/discover`, fall back to `initialize`.
    Auto,
    /// Only `initialize`.
    Legacy,
    /// Only the stateless 2026-07-28 protocol.
    Modern,
}

impl EraChoice {
    /// The choice a configuration's `era` names (`legacy`, `modern`; anything else, or
    /// nothing, is `auto`: config validation reports unknown names).
    pub fn from_config(name: Option<&str>) -> EraChoice {
        match name {
            Some("legacy") => EraChoice::Legacy,
            Some("modern") => EraChoice::Modern,
            _ => EraChoice::Auto,
        }
    }
}

/// Session settings. [`SessionConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct SessionConfig {
    /// The server's name (from configuration), used in every error and log line.
    pub server_name: Arc<str>,
    /// Who we say we are.
    pub client_info: Implementation,
    /// Era selection.
    pub era: EraChoice,
    /// A pinned protocol version; `None` negotiates the newest both sides speak.
    pub protocol_version: Option<String>,
    /// Deadline for the whole connection setup (probe and handshake).
    pub connect_timeout: Duration,
    /// How long the `server/discover` probe may stay unanswered before `initialize` is sent too.
    pub probe_timeout: Duration,
    /// Default per-request deadline; progress notifications reset it for tool calls.
    pub request_timeout: Duration,
    /// Hard ceiling on a tool call, however much progress it reports.
    pub max_call_duration: Duration,
    /// Maximum pages followed in one listing.
    pub max_list_pages: usize,
    /// Maximum entries, valid or not, across one listing's pages; more fails the listing
    /// with [`SessionError::ListingTooLarge`] before they are read. Default 10 000: hosts
    /// hand tools to a model by the tens or hundreds (OpenAI's API takes at most 128 per
    /// request), so this is far past any usable listing while bounding what a read listing
    /// costs (a typed tool is a few KiB).
    pub max_list_items: usize,
    /// Maximum result bytes across one listing's pages. Default 32 MiB, twice the frame
    /// cap: a single page may fill a frame, and a listing spread over pages gets that room
    /// again. Without it a server paging fresh cursors could send 100 pages of 16 MiB.
    pub max_list_bytes: usize,
    /// Maximum `input_required` rounds for one request.
    pub max_input_rounds: usize,
    /// Capacity of the event channel; slow subscribers miss events (counted).
    pub event_capacity: usize,
    /// The host's handler for roots and input requests.
    pub handler: Arc<dyn ClientHandler>,
}

impl SessionConfig {
    /// Defaults: auto era, 30 s connect, 2 s probe, 60 s requests, 10 min ceiling.
    pub fn new(server_name: &str) -> SessionConfig {
        SessionConfig {
            server_name: Arc::from(server_name),
            client_info: Implementation {
                name: "switchboard".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: Some("Switchboard".into()),
            },
            era: EraChoice::Auto,
            protocol_version: None,
            connect_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(60),
            max_call_duration: Duration::from_secs(600),
            max_list_pages: 100,
            max_list_items: 10_000,
            max_list_bytes: 2 * DEFAULT_MAX_FRAME_BYTES,
            max_input_rounds: 8,
            event_capacity: 1024,
            handler: Arc::new(NoHandler),
        }
    }
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("server_name", &self.server_name)
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// Per-call options; unset fields take the session's defaults.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Deadline for this call (idle deadline for tool calls: progress resets it).
    pub timeout: Option<Duration>,
    /// Hard ceiling for this call.
    pub max_duration: Option<Duration>,
    /// Cancelling this token sends `notifications/cancelled` and ends the call.
    pub cancel: Option<CancellationToken>,
    /// Receives the call's progress notifications.
    pub progress: Option<mpsc::Sender<ProgressParams>>,
}

/// A connected transport: a connection, its inbound stream, and the process behind it.
#[derive(Debug)]
pub struct Transport {
    /// The JSON-RPC connection.
    pub connection: Connection,
    /// What the peer sends outside of responses.
    pub inbound: mpsc::Receiver<Inbound>,
    /// The child process, for stdio.
    pub process: Option<ChildProcess>,
}

impl From<StdioTransport> for Transport {
    fn from(stdio: StdioTransport) -> Transport {
        Transport {
            connection: stdio.connection,
            inbound: stdio.inbound,
            process: Some(stdio.process),
        }
    }
}

/// What was agreed with the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiated {
    /// The era in use.
    pub era: Era,
    /// The protocol version in use.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who the server says it is (display only).
    pub server_info: Option<Implementation>,
    /// The server's guidance for the model.
    pub instructions: Option<String>,
}

/// Something the server sent that is not the response to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A notification (progress, list changes, logs, …).
    Notification(Notification),
    /// A frame that was not a JSON-RPC message.
    Malformed(Malformed),
    /// A response no request was waiting for.
    UnexpectedResponse {
        /// The response.
        response: Response,
        /// Why.
        reason: UnexpectedReason,
    },
    /// A request from the server, after it was answered.
    ServerRequest {
        /// Its method.
        method: String,
        /// Whether we answered it with an error.
        refused: bool,
    },
}

/// Counters for a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Wire-level counters.
    pub wire: WireStats,
    /// Notifications received.
    pub notifications: u64,
    /// Server requests refused (undeclared capability, or any request in the modern era).
    pub refused_server_requests: u64,
    /// Progress notifications for tokens we do not (or no longer) own.
    pub stray_progress: u64,
}

/// A listing followed through all its pages.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    /// The valid items, first occurrence of each name kept.
    pub items: Vec<T>,
    /// Entries that were invalid or duplicated.
    pub problems: Vec<ListingProblem>,
    /// How many pages were fetched.
    pub pages: usize,
}

/// One invalid or duplicate entry in a listing.
#[derive(Debug, Clone)]
pub struct ListingProblem {
    /// The page it was on (from 1).
    pub page: usize,
    /// What is wrong.
    pub detail: String,
    /// The entry as received, as JSON text (it may not be readable as a tree).
    pub raw: Box<RawValue>,
}

impl PartialEq for ListingProblem {
    /// Entries compare by their text, as received.
    fn eq(&self, other: &Self) -> bool {
        (self.page, &self.detail, self.raw.get()) == (other.page, &other.detail, other.raw.get())
    }
}

struct Inner {
    server: Arc<str>,
    connection: Connection,
    negotiated: Negotiated,
    config: SessionConfig,
    client_capabilities: Value,
    /// The constant `_meta` entries of every request (modern era; empty for legacy).
    meta_prefix: MetaPrefix,
    /// What the transport is told about every message: the negotiated version.
    context: MessageContext,
    routes: Arc<ProgressRoutes>,
    events: broadcast::Sender<SessionEvent>,
    counters: Arc<Counters>,
    process: Option<ChildProcess>,
    dispatch: JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.dispatch.abort();
    }
}

#[derive(Default)]
struct Counters {
    notifications: AtomicU64,
    refused_server_requests: AtomicU64,
    stray_progress: AtomicU64,
}

/// Progress bookkeeping. Nothing is registered for an ordinary call: the dispatch task
/// stamps when progress last arrived for a request that is still pending, and the call
/// looks at the stamp only when its idle deadline fires. A channel is registered only
/// when the host asked to receive the progress.
struct ProgressRoutes {
    /// Hosts' progress sinks, by request id (= progress token).
    sinks: Mutex<HashMap<RequestId, mpsc::Sender<ProgressParams>>>,
    /// When progress last arrived, by request id; bounded by the pending requests.
    stamps: Mutex<HashMap<RequestId, Instant>>,
    /// Inbound events the dispatch task has handled, compared with
    /// `Connection::inbound_delivered` by a call that wants all of its progress.
    handled: watch::Sender<u64>,
}

impl Default for ProgressRoutes {
    fn default() -> Self {
        ProgressRoutes {
            sinks: Mutex::default(),
            stamps: Mutex::default(),
            handled: watch::Sender::new(0),
        }
    }
}

/// How long a finished call with a progress sink waits for the dispatch task to route the
/// progress that arrived before its result.
const PROGRESS_FLUSH_WAIT: Duration = Duration::from_millis(100);

/// The most progress stamps kept before stale ones are swept.
const MAX_PROGRESS_STAMPS: usize = 1024;

impl ProgressRoutes {
    fn sinks(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, mpsc::Sender<ProgressParams>>> {
        self.sinks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stamps(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Instant>> {
        self.stamps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When progress last arrived for `id`.
    fn last_progress(&self, id: &RequestId) -> Option<Instant> {
        self.stamps().get(id).copied()
    }

    /// Waits (bounded) until the dispatch task has handled `delivered` inbound events.
    async fn flushed(&self, delivered: u64) {
        let mut handled = self.handled.subscribe();
        let _ = tokio::time::timeout(
            PROGRESS_FLUSH_WAIT,
            handled.wait_for(|handled| *handled >= delivered),
        )
        .await;
    }
}

/// Forgets a call's progress bookkeeping when it ends, however it ends.
struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    id: RequestId,
    has_sink: bool,
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        if self.has_sink {
            self.routes.sinks().remove(&self.id);
        }
        let mut stamps = self.routes.stamps();
        if !stamps.is_empty() {
            stamps.remove(&self.id);
        }
    }
}

/// A live MCP client session. Cheap to clone; the server process (for stdio) is killed when
/// the last clone is dropped, or stopped gracefully with [`Session::shutdown`].
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.inner.server)
            .field("negotiated", &self.inner.negotiated)
            .finish()
    }
}

/// The state shared by the connect phase and the session.
struct Wiring {
    server: Arc<str>,
    connection: Connection,
    routes: Arc<ProgressRoutes>,
    events: broadcast::Sender<SessionEvent>,
    counters: Arc<Counters>,
    client_capabilities: Value,
    era: Arc<Mutex<Option<Era>>>,
}

impl Session {
    /// Starts `spec` as a child process and connects to it.
    pub async fn spawn_stdio(
        spec: &ProcessSpec,
        options: StdioOptions,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        let stdio = switchboard_wire::stdio::spawn(spec, options)?;
        Session::connect(stdio.into(), config).await
    }

    /// Connects to a Streamable HTTP server.
    pub async fn connect_http(
        options: HttpOptions,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        let http = switchboard_http::connect(options)?;
        let transport = Transport {
            connection: http.connection,
            inbound: http.inbound,
            process: None,
        };
        Session::connect(transport, config).await
    }

    /// Connects over `transport`: era detection and handshake, within
    /// `config.connect_timeout`. On failure the process (if any) is killed.
    pub async fn connect(
        transport: Transport,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        let Transport {
            connection,
            inbound,
            process,
        } = transport;
        let server = config.server_name.clone();
        connection.set_cancel_notice(cancel_notice);
        let (events, _) = broadcast::channel(config.event_capacity.max(1));
        let wiring = Wiring {
            server: server.clone(),
            connection: connection.clone(),
            routes: Arc::new(ProgressRoutes::default()),
            events,
            counters: Arc::new(Counters::default()),
            client_capabilities: client_capabilities(config.handler.as_ref()),
            era: Arc::new(Mutex::new(None)),
        };
        let dispatch = tokio::spawn(dispatch_loop(DispatchState {
            server: server.clone(),
            connection: connection.clone(),
            inbound,
            handler: config.handler.clone(),
            routes: wiring.routes.clone(),
            events: wiring.events.clone(),
            counters: wiring.counters.clone(),
            era: wiring.era.clone(),
        }));
        let deadline = Instant::now() + config.connect_timeout;
        let negotiated = match tokio::time::timeout_at(deadline, negotiate(&wiring, &config)).await
        {
            Ok(Ok(negotiated)) => negotiated,
            Ok(Err(error)) => {
                dispatch.abort();
                return Err(error);
            }
            Err(_) => {
                dispatch.abort();
                let stderr_tail = process.as_ref().map(ChildProcess::stderr_tail);
                return Err(SessionError::Timeout {
                    server,
                    method: "initialize".into(),
                    after: config.connect_timeout,
                    stderr_tail,
                });
            }
        };
        *wiring.era.lock().unwrap_or_else(|p| p.into_inner()) = Some(negotiated.era);
        tracing::debug!(
            server = %server,
            era = %negotiated.era,
            version = %negotiated.protocol_version,
            "session ready"
        );
        let negotiated_version = negotiated.protocol_version.clone();
        let meta_prefix = match negotiated.era {
            Era::Modern => MetaPrefix::modern(
                &negotiated.protocol_version,
                &wiring.client_capabilities,
                &config.client_info,
            ),
            Era::Legacy => MetaPrefix::default(),
        };
        Ok(Session {
            inner: Arc::new(Inner {
                server,
                connection,
                negotiated,
                client_capabilities: wiring.client_capabilities,
                meta_prefix,
                context: MessageContext::version(&Arc::from(negotiated_version.as_str())),
                routes: wiring.routes,
                events: wiring.events,
                counters: wiring.counters,
                config,
                process,
                dispatch,
            }),
        })
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        &self.inner.server
    }

    /// What was negotiated.
    pub fn negotiated(&self) -> &Negotiated {
        &self.inner.negotiated
    }

    /// The underlying connection (for raw traffic, e.g. by the checker).
    pub fn connection(&self) -> &Connection {
        &self.inner.connection
    }

    /// The server process id, for stdio.
    pub fn pid(&self) -> Option<u32> {
        self.inner.process.as_ref().map(ChildProcess::pid)
    }

    /// The server process, for stdio.
    pub fn process(&self) -> Option<&ChildProcess> {
        self.inner.process.as_ref()
    }

    /// Subscribes to events from now on.
    pub fn events(&self) -> broadcast::Receiver<SessionEvent> {
        self.inner.events.subscribe()
    }

    /// Counters so far.
    pub fn stats(&self) -> SessionStats {
        let c = &self.inner.counters;
        SessionStats {
            wire: self.inner.connection.stats(),
            notifications: c.notifications.load(Ordering::Relaxed),
            refused_server_requests: c.refused_server_requests.load(Ordering::Relaxed),
            stray_progress: c.stray_progress.load(Ordering::Relaxed),
        }
    }

    /// Why the transport closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.inner.connection.close_reason()
    }

    /// Waits until the transport closes.
    pub async fn closed(&self) -> CloseReason {
        self.inner.connection.closed().await
    }

    /// Stops the server as the specification says (stdin closed, then signals), bounded by
    /// the grace periods. Returns `None` for transports without a process.
    pub async fn shutdown(&self, grace: ShutdownGrace) -> Option<ShutdownReport> {
        match &self.inner.process {
            Some(process) => Some(process.shutdown(&self.inner.connection, grace).await),
            None => {
                // Remote: closing our side ends the session (HTTP sends DELETE for a legacy
                // session); wait for that, bounded by the grace period.
                self.inner.connection.close_write().await;
                let _ =
                    tokio::time::timeout(grace.after_stdin_close, self.inner.connection.closed())
                        .await;
                None
            }
        }
    }

    /// Lists all tools, following cursors. Invalid and duplicate entries are reported in
    /// [`Listing::problems`], not dropped silently.
    pub async fn list_tools(&self) -> Result<Listing<Tool>, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.tools.is_some(),
            "tools",
            methods::TOOLS_LIST,
        )?;
        self.list_all(methods::TOOLS_LIST, "tools", Tool::from_json_text, |t| {
            t.name.clone()
        })
        .await
    }

    /// Lists all prompts.
    pub async fn list_prompts(&self) -> Result<Listing<Prompt>, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.prompts.is_some(),
            "prompts",
            methods::PROMPTS_LIST,
        )?;
        self.list_all(methods::PROMPTS_LIST, "prompts", from_text, |p: &Prompt| {
            p.name.clone()
        })
        .await
    }

    /// Lists all resources.
    pub async fn list_resources(&self) -> Result<Listing<Resource>, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.resources.is_some(),
            "resources",
            methods::RESOURCES_LIST,
        )?;
        self.list_all(
            methods::RESOURCES_LIST,
            "resources",
            from_text,
            |r: &Resource| r.uri.clone(),
        )
        .await
    }

    /// Lists all resource templates.
    pub async fn list_resource_templates(&self) -> Result<Listing<ResourceTemplate>, SessionError> {
        let method = methods::RESOURCES_TEMPLATES_LIST;
        self.require(
            self.inner.negotiated.capabilities.resources.is_some(),
            "resources",
            method,
        )?;
        self.list_all(
            method,
            "resourceTemplates",
            from_text,
            |t: &ResourceTemplate| t.uri_template.clone(),
        )
        .await
    }

    /// Calls a tool. A result with `isError: true` is `Ok`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
        options: &CallOptions,
    ) -> Result<CallToolResult, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.tools.is_some(),
            "tools",
            methods::TOOLS_CALL,
        )?;
        let base = BaseParams::ToolCall {
            name,
            arguments: arguments.as_ref(),
        };
        self.request_with_input(methods::TOOLS_CALL, base, options, true, |raw| {
            CallToolResult::from_json_text(raw.get())
        })
        .await
    }

    /// Gets a prompt (the raw result: `description` and `messages`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.prompts.is_some(),
            "prompts",
            methods::PROMPTS_GET,
        )?;
        let mut params = json!({ "name": name });
        if let Some(arguments) = arguments {
            params["arguments"] = arguments;
        }
        self.request_with_input(
            methods::PROMPTS_GET,
            BaseParams::Tree(&params),
            &CallOptions::default(),
            false,
            read_tree,
        )
        .await
    }

    /// Reads a resource (the raw result: `contents`).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.resources.is_some(),
            "resources",
            methods::RESOURCES_READ,
        )?;
        self.request_with_input(
            methods::RESOURCES_READ,
            BaseParams::Tree(&json!({ "uri": uri })),
            &CallOptions::default(),
            false,
            read_tree,
        )
        .await
    }

    /// Asks for argument completions; at most 100 values are kept.
    pub async fn complete(
        &self,
        reference: Value,
        argument_name: &str,
        value: &str,
    ) -> Result<Vec<String>, SessionError> {
        let method = methods::COMPLETION_COMPLETE;
        self.require(
            self.inner.negotiated.capabilities.completions.is_some(),
            "completions",
            method,
        )?;
        let params =
            json!({ "ref": reference, "argument": { "name": argument_name, "value": value } });
        let result = self
            .request(method, Some(params), &CallOptions::default())
            .await?;
        let values = result
            .pointer("/completion/values")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                self.protocol(method, "the result has no `completion.values` array".into())
            })?;
        Ok(values
            .iter()
            .filter_map(Value::as_str)
            .take(100)
            .map(str::to_owned)
            .collect())
    }

    /// Opens a modern `subscriptions/listen` stream and waits for its acknowledgement.
    /// Notifications on it arrive as [`SessionEvent::Notification`]s tagged with the
    /// returned subscription id. Dropping the returned call cancels the subscription.
    pub async fn listen(
        &self,
        filter: &SubscriptionFilter,
    ) -> Result<(PendingCall, SubscriptionFilter), SessionError> {
        let method = methods::SUBSCRIPTIONS_LISTEN;
        if self.inner.negotiated.era != Era::Modern {
            return Err(self.protocol(method, "subscriptions need the 2026-07-28 protocol; legacy servers send list changes without one".into()));
        }
        let mut events = self.events();
        let params = self.with_meta(json!({ "notifications": filter }), None);
        let id = self.inner.connection.allocate_id();
        let mut call = self
            .inner
            .connection
            .send_request_in(&self.inner.context, id.clone(), method, Some(&params))
            .await
            .map_err(|e| self.wire_error(method, e))?;
        call.cancel_on_drop("subscription closed by the client");
        let deadline = Instant::now() + self.inner.config.request_timeout;
        loop {
            let event = tokio::time::timeout_at(deadline, events.recv()).await;
            match event {
                Err(_) => return Err(self.timeout(method, self.inner.config.request_timeout)),
                Ok(Err(broadcast::error::RecvError::Closed)) => {
                    let reason = self.inner.connection.closed().await;
                    return Err(SessionError::Closed {
                        server: self.inner.server.clone(),
                        reason,
                    });
                }
                Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
                Ok(Ok(SessionEvent::Notification(n)))
                    if n.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED =>
                {
                    let params = n.params.unwrap_or(Value::Null);
                    let tagged = params.pointer(&format!(
                        "/_meta/{}",
                        meta::SUBSCRIPTION_ID.replace('/', "~1")
                    ));
                    if tagged.and_then(RequestId::from_json).as_ref() != Some(&id) {
                        continue;
                    }
                    let honoured = params
                        .get("notifications")
                        .and_then(|f| serde_json::from_value(f.clone()).ok())
                        .unwrap_or_default();
                    return Ok((call, honoured));
                }
                Ok(Ok(_)) => continue,
            }
        }
    }

    /// Sends any request with the session's metadata and deadlines, and returns the raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        let params = params.unwrap_or_else(|| json!({}));
        let raw = self
            .send_and_wait(method, BaseParams::Tree(&params), None, options, false)
            .await?;
        let result = read_tree(&raw)
            .1
            .map_err(|detail| self.protocol(method, detail))?;
        self.check_result_type(method, &result)?;
        Ok(result)
    }

    fn require(
        &self,
        declared: bool,
        capability: &'static str,
        method: &str,
    ) -> Result<(), SessionError> {
        if declared {
            Ok(())
        } else {
            Err(SessionError::NotDeclared {
                server: self.inner.server.clone(),
                capability,
                method: method.to_owned(),
            })
        }
    }

    fn protocol(&self, method: &str, detail: String) -> SessionError {
        SessionError::Protocol {
            server: self.inner.server.clone(),
            method: method.to_owned(),
            detail,
        }
    }

    fn wire_error(&self, method: &str, error: WireError) -> SessionError {
        SessionError::from_wire(&self.inner.server, method, error)
    }

    fn timeout(&self, method: &str, after: Duration) -> SessionError {
        SessionError::Timeout {
            server: self.inner.server.clone(),
            method: method.to_owned(),
            after,
            stderr_tail: self.inner.process.as_ref().map(ChildProcess::stderr_tail),
        }
    }

    fn check_result_type(&self, method: &str, result: &Value) -> Result<(), SessionError> {
        self.require_complete(method, ResultType::of(result))
    }

    fn require_complete(&self, method: &str, kind: ResultType) -> Result<(), SessionError> {
        match kind {
            ResultType::Complete => Ok(()),
            ResultType::InputRequired => Err(self.protocol(
                method,
                "`input_required` is not allowed for this method".into(),
            )),
            ResultType::Other(other) => {
                Err(self.protocol(method, format!("unknown `resultType` \"{other}\"")))
            }
        }
    }

    /// Adds the modern `_meta` fields (and a progress token) to request params.
    fn with_meta(&self, params: Value, progress_token: Option<&RequestId>) -> Value {
        add_meta(
            params,
            self.inner.negotiated.era,
            &MetaFields {
                version: &self.inner.negotiated.protocol_version,
                client_capabilities: &self.inner.client_capabilities,
                client_info: &self.inner.config.client_info,
            },
            progress_token,
        )
    }

    /// A request that may answer `input_required` (tools/call, prompts/get, resources/read):
    /// fulfils input requests and retries with a new id, up to the round cap. `read` turns
    /// the result's JSON text into its `resultType` and the caller's type.
    async fn request_with_input<T>(
        &self,
        method: &str,
        base: BaseParams<'_>,
        options: &CallOptions,
        is_tool_call: bool,
        read: impl Fn(&RawValue) -> (ResultType, Result<T, String>),
    ) -> Result<T, SessionError> {
        let mut input: Option<InputRound> = None;
        for _round in 0..=self.inner.config.max_input_rounds {
            let raw = self
                .send_and_wait(method, base, input.as_ref(), options, is_tool_call)
                .await?;
            let (kind, result) = read(&raw);
            match kind {
                ResultType::Complete => {
                    return result.map_err(|detail| self.protocol(method, detail));
                }
                ResultType::Other(other) => {
                    return Err(self.protocol(method, format!("unknown `resultType` \"{other}\"")));
                }
                ResultType::InputRequired => {
                    if self.inner.negotiated.era != Era::Modern {
                        return Err(self
                            .protocol(method, "`input_required` from a legacy-era server".into()));
                    }
                    let tree = read_tree(&raw)
                        .1
                        .map_err(|detail| self.protocol(method, detail))?;
                    input = Some(self.fulfil_input(method, &tree).await?);
                }
            }
        }
        Err(self.protocol(
            method,
            format!(
                "the server still wanted input after {} rounds",
                self.inner.config.max_input_rounds
            ),
        ))
    }

    async fn fulfil_input(&self, method: &str, result: &Value) -> Result<InputRound, SessionError> {
        let requests = result.get("inputRequests");
        let state = result.get("requestState").cloned();
        if requests.is_none() && state.is_none() {
            return Err(self.protocol(
                method,
                "`input_required` without `inputRequests` or `requestState`".into(),
            ));
        }
        if let Some(state) = &state
            && !state.is_string()
        {
            return Err(self.protocol(method, "`requestState` is not a string".into()));
        }
        let mut responses = Map::new();
        if let Some(requests) = requests {
            let requests = requests
                .as_object()
                .ok_or_else(|| self.protocol(method, "`inputRequests` is not an object".into()))?;
            let handler = &self.inner.config.handler;
            for (key, request) in requests {
                let input_method = request.get("method").and_then(Value::as_str).unwrap_or("");
                let input_params = request.get("params").cloned().unwrap_or(Value::Null);
                let response = match input_method {
                    methods::ELICITATION_CREATE if handler.supports_elicitation() => {
                        handler.elicit(&self.inner.server, input_params).await
                    }
                    methods::ROOTS_LIST => match handler.roots() {
                        Some(roots) => Ok(json!({ "roots": roots })),
                        None => Err(ErrorObject::new(
                            codes::METHOD_NOT_FOUND,
                            "roots not declared",
                        )),
                    },
                    _ => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, "not declared")),
                };
                match response {
                    Ok(value) => {
                        responses.insert(key.clone(), value);
                    }
                    Err(_) => {
                        return Err(self.protocol(
                            method,
                            format!("the server asked for `{input_method}` input, which this client did not declare"),
                        ));
                    }
                }
            }
        }
        Ok(InputRound {
            responses: Value::Object(responses),
            state,
        })
    }

    /// Sends one request (with the era's `_meta` envelope) and waits for its answer under the
    /// deadlines, forwarding progress.
    async fn send_and_wait(
        &self,
        method: &str,
        base: BaseParams<'_>,
        input: Option<&InputRound>,
        options: &CallOptions,
        is_tool_call: bool,
    ) -> Result<Box<RawValue>, SessionError> {
        let inner = &*self.inner;
        let connection = &inner.connection;
        let id = connection.allocate_id();
        let wants_progress = is_tool_call || options.progress.is_some();
        if let Some(sink) = &options.progress {
            inner.routes.sinks().insert(id.clone(), sink.clone());
        }
        let _route = RouteGuard {
            routes: &inner.routes,
            id: id.clone(),
            has_sink: options.progress.is_some(),
        };
        let params = RequestParams {
            base,
            input,
            meta: &inner.meta_prefix,
            progress_token: wants_progress.then_some(&id),
        };
        let idle = options.timeout.unwrap_or(inner.config.request_timeout);
        let started = Instant::now();
        let ceiling = started
            + options
                .max_duration
                .unwrap_or(inner.config.max_call_duration)
                .max(idle);
        let mut deadline = (started + idle).min(ceiling);
        let send = connection.send_request_in(&inner.context, id.clone(), method, Some(&params));
        let mut call = match tokio::time::timeout_at(deadline, send).await {
            Ok(Ok(call)) => call,
            Ok(Err(error)) => return Err(self.wire_error(method, error)),
            Err(_) => return Err(self.timeout(method, idle)),
        };
        call.cancel_on_drop("request abandoned by the caller");
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                biased;
                outcome = call.response_raw() => {
                    if options.progress.is_some() {
                        // Progress the server sent before its result is in the inbound
                        // stream already: let it reach the sink before the sink goes away.
                        inner.routes.flushed(connection.inbound_delivered()).await;
                    }
                    return match outcome {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(error)) => Err(SessionError::Rpc { server: inner.server.clone(), method: method.to_owned(), error }),
                        Err(error) => Err(self.wire_error(method, error)),
                    };
                }
                () = tokio::time::sleep_until(deadline) => {
                    // Progress extends a tool call's idle deadline, never past the ceiling.
                    if is_tool_call
                        && let Some(last) = inner.routes.last_progress(&id)
                        && (last + idle).min(ceiling) > deadline
                    {
                        deadline = (last + idle).min(ceiling);
                        continue;
                    }
                    let after = deadline - started;
                    let _ = call.cancel(&format!("timed out after {after:?}")).await;
                    return Err(self.timeout(method, after));
                }
                () = &mut cancelled => {
                    let reason = "cancelled by the client".to_owned();
                    let _ = call.cancel(&reason).await;
                    return Err(SessionError::Cancelled { server: inner.server.clone(), method: method.to_owned(), reason });
                }
            }
        }
    }

    /// Follows a listing's pages under its caps (pages, entries, bytes). Each page's
    /// entries are read straight from its JSON text, one at a time, so an entry that cannot
    /// be read is a [`ListingProblem`] and no tree of the whole page is built.
    async fn list_all<T>(
        &self,
        method: &str,
        field: &str,
        parse: fn(&str) -> Result<T, String>,
        key: fn(&T) -> String,
    ) -> Result<Listing<T>, SessionError> {
        let config = &self.inner.config;
        let mut listing = Listing {
            items: Vec::new(),
            problems: Vec::new(),
            pages: 0,
        };
        let mut seen_names = HashSet::new();
        let mut seen_cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut bytes = 0usize;
        loop {
            if listing.pages >= config.max_list_pages {
                return Err(self.too_large(method, ListingCap::Pages, listing.pages + 1));
            }
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let raw = self
                .send_and_wait(
                    method,
                    BaseParams::Tree(&params),
                    None,
                    &CallOptions::default(),
                    false,
                )
                .await?;
            listing.pages += 1;
            let page = listing.pages;
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > config.max_list_bytes {
                return Err(self.too_large(method, ListingCap::Bytes, bytes));
            }
            let entries_so_far = listing.items.len() + listing.problems.len();
            let room = config.max_list_items.saturating_sub(entries_so_far);
            let result = ListPage::from_json_text(raw.get(), field, room)
                .map_err(|detail| self.protocol(method, detail))?;
            self.require_complete(method, result.result_type)?;
            let entries = match result.entries {
                PageEntries::Within(entries) => entries,
                PageEntries::Over { count } => {
                    let seen = entries_so_far.saturating_add(count);
                    return Err(self.too_large(method, ListingCap::Items, seen));
                }
                PageEntries::Missing => {
                    return Err(self.protocol(method, format!("the result has no `{field}` array")));
                }
            };
            for entry in entries {
                match parse(entry.get()) {
                    Ok(item) => {
                        let name = key(&item);
                        if seen_names.insert(name.clone()) {
                            listing.items.push(item);
                        } else {
                            listing.problems.push(ListingProblem {
                                page,
                                detail: format!("duplicate entry `{name}`; the first one is kept"),
                                raw: entry.to_owned(),
                            });
                        }
                    }
                    Err(detail) => listing.problems.push(ListingProblem {
                        page,
                        detail,
                        raw: entry.to_owned(),
                    }),
                }
            }
            match result.next_cursor {
                NextCursor::End => return Ok(listing),
                NextCursor::Next(next) => {
                    if !seen_cursors.insert(next.clone()) {
                        return Err(self.protocol(
                            method,
                            format!("pagination loop: cursor {next:?} was returned twice"),
                        ));
                    }
                    cursor = Some(next);
                }
                NextCursor::NotAString(other) => {
                    return Err(self.protocol(
                        method,
                        format!("`nextCursor` is not a string: {}", other.get()),
                    ));
                }
            }
        }
    }

    fn too_large(&self, method: &str, cap: ListingCap, seen: usize) -> SessionError {
        let config = &self.inner.config;
        let limit = match cap {
            ListingCap::Pages => config.max_list_pages,
            ListingCap::Items => config.max_list_items,
            ListingCap::Bytes => config.max_list_bytes,
        };
        SessionError::ListingTooLarge {
            server: self.inner.server.clone(),
            method: method.to_owned(),
            cap,
            limit,
            seen,
        }
    }
}

fn from_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid entry: {e}"))
}

struct MetaFields<'a> {
    version: &'a str,
    client_capabilities: &'a Value,
    client_info: &'a Implementation,
}

fn add_meta(
    mut params: Value,
    era: Era,
    fields: &MetaFields<'_>,
    progress_token: Option<&RequestId>,
) -> Value {
    if era == Era::Modern
        && let Some(object) = params.as_object_mut()
    {
        let meta_entry = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta_object) = meta_entry.as_object_mut() {
            meta_object.insert(meta::PROTOCOL_VERSION.into(), Value::from(fields.version));
            meta_object.insert(
                meta::CLIENT_CAPABILITIES.into(),
                fields.client_capabilities.clone(),
            );
            meta_object.insert(meta::CLIENT_INFO.into(), json!(fields.client_info));
        }
    }
    match progress_token {
        Some(token) => set_progress_token(params, token),
        None => params,
    }
}

fn set_progress_token(mut params: Value, token: &RequestId) -> Value {
    if let Some(object) = params.as_object_mut() {
        let meta_entry = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta_object) = meta_entry.as_object_mut() {
            meta_object.insert(meta::PROGRESS_TOKEN.into(), token.to_json());
        }
    }
    params
}

/// Reads a result's JSON text as a tree, with its `resultType`.
fn read_tree(raw: &RawValue) -> (ResultType, Result<Value, String>) {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(value) => (ResultType::of(&value), Ok(value)),
        Err(e) => (
            ResultType::Complete,
            Err(format!("the result is not valid JSON: {e}")),
        ),
    }
}

fn client_capabilities(handler: &dyn ClientHandler) -> Value {
    let mut capabilities = Map::new();
    if handler.roots().is_some() {
        capabilities.insert("roots".into(), json!({ "listChanged": false }));
    }
    if handler.supports_elicitation() {
        capabilities.insert("elicitation".into(), json!({ "form": {} }));
    }
    Value::Object(capabilities)
}

// ---------------------------------------------------------------------------------------
// Negotiation

async fn negotiate(wiring: &Wiring, config: &SessionConfig) -> Result<Negotiated, SessionError> {
    let pinned = config.protocol_version.as_deref();
    let pinned_era = match pinned {
        None => None,
        Some(version) => match Era::of_version(version) {
            Some(era) => Some(era),
            None => {
                return Err(SessionError::VersionMismatch {
                    server: wiring.server.clone(),
                    offered: format!(
                        "(not asked: the configuration pins unknown version {version})"
                    ),
                    supported: switchboard_protocol::supported_versions().join(", "),
                });
            }
        },
    };
    let era = match (config.era, pinned_era) {
        (EraChoice::Legacy, Some(Era::Modern)) | (EraChoice::Modern, Some(Era::Legacy)) => {
            return Err(SessionError::VersionMismatch {
                server: wiring.server.clone(),
                offered: format!(
                    "(not asked: pinned version {} contradicts the pinned era)",
                    pinned.unwrap_or("")
                ),
                supported: switchboard_protocol::supported_versions().join(", "),
            });
        }
        (_, Some(era)) if config.era != EraChoice::Auto => Some(era),
        (EraChoice::Legacy, _) => Some(Era::Legacy),
        (EraChoice::Modern, _) => Some(Era::Modern),
        (EraChoice::Auto, pinned) => pinned,
    };
    match era {
        Some(Era::Legacy) => initialize(wiring, config, pinned).await,
        Some(Era::Modern) => {
            let version = pinned.unwrap_or(MODERN_VERSION);
            match discover(wiring, config, version, Refusals::default()).await? {
                DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                DiscoverOutcome::NotModern(detail) => Err(SessionError::Protocol {
                    server: wiring.server.clone(),
                    method: methods::SERVER_DISCOVER.into(),
                    detail: format!(
                        "the server does not speak the 2026-07-28 protocol ({detail}); set `era` to `auto` or `legacy`"
                    ),
                }),
                DiscoverOutcome::Refused(refused) => Err(refused.into_error(&wiring.server)),
            }
        }
        None => probe_then_initialize(wiring, config).await,
    }
}

enum DiscoverOutcome {
    Modern(Box<Negotiated>),
    NotModern(String),
    /// Every version offered was refused with -32022, though the server lists one of them.
    Refused(Refusals),
}

/// `server/discover` attempts that each ended in -32022.
#[derive(Debug, Default)]
struct Refusals {
    /// The versions offered, each once, in order.
    offered: Vec<String>,
    /// How many times `server/discover` was sent.
    attempts: usize,
    /// What the last refusal listed as supported.
    listed: String,
}

impl Refusals {
    fn refused(&mut self, version: &str, listed: String) {
        if !self.offered.iter().any(|v| v == version) {
            self.offered.push(version.to_owned());
        }
        self.attempts += 1;
        self.listed = listed;
    }

    fn into_error(self, server: &Arc<str>) -> SessionError {
        SessionError::VersionRefused {
            server: server.clone(),
            offered: self.offered,
            attempts: self.attempts,
            listed: self.listed,
        }
    }
}

/// How many times `server/discover` is sent with a version the server lists, after a
/// refusal (-32022) of the version before.
const DISCOVER_ATTEMPTS: usize = 2;

/// Sends `server/discover`, retrying on -32022 with a version from `data.supported`, at
/// most [`DISCOVER_ATTEMPTS`] times in all; `refusals` holds the attempts refused before.
async fn discover(
    wiring: &Wiring,
    config: &SessionConfig,
    version: &str,
    mut refusals: Refusals,
) -> Result<DiscoverOutcome, SessionError> {
    let mut version = version.to_owned();
    for _attempt in 0..DISCOVER_ATTEMPTS {
        let call = send_discover(wiring, config, &version).await?;
        match answer_of(wiring, call, methods::SERVER_DISCOVER).await? {
            Ok(result) => return Ok(discover_result(wiring, result, &version)),
            Err(error) => match modern_retry_version(&error) {
                RetryVersion::Retry {
                    version: next,
                    listed,
                } => {
                    refusals.refused(&version, listed);
                    version = next;
                }
                RetryVersion::OnlyLegacy(offered) => {
                    return Ok(DiscoverOutcome::NotModern(offered));
                }
                RetryVersion::NotRecognised => {
                    return Ok(DiscoverOutcome::NotModern(format!(
                        "it answered `server/discover` with: {error}"
                    )));
                }
            },
        }
    }
    Ok(DiscoverOutcome::Refused(refusals))
}

enum RetryVersion {
    /// Offer this version next; `listed` is what the server said it supports.
    Retry {
        version: String,
        listed: String,
    },
    OnlyLegacy(String),
    NotRecognised,
}

fn modern_retry_version(error: &ErrorObject) -> RetryVersion {
    if error.code != error_codes::UNSUPPORTED_PROTOCOL_VERSION {
        return RetryVersion::NotRecognised;
    }
    let supported: Vec<&str> = error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match MODERN_VERSIONS.iter().find(|v| supported.contains(v)) {
        Some(version) => RetryVersion::Retry {
            version: (*version).to_owned(),
            listed: supported.join(", "),
        },
        None => RetryVersion::OnlyLegacy(format!("it supports only {}", supported.join(", "))),
    }
}

async fn send_discover(
    wiring: &Wiring,
    config: &SessionConfig,
    version: &str,
) -> Result<PendingCall, SessionError> {
    let params = add_meta(
        json!({}),
        Era::Modern,
        &MetaFields {
            version,
            client_capabilities: &wiring.client_capabilities,
            client_info: &config.client_info,
        },
        None,
    );
    let id = wiring.connection.allocate_id();
    let context = MessageContext::version(&Arc::from(version));
    wiring
        .connection
        .send_request_in(&context, id, methods::SERVER_DISCOVER, Some(&params))
        .await
        .map_err(|e| SessionError::from_wire(&wiring.server, methods::SERVER_DISCOVER, e))
}

async fn answer_of(
    wiring: &Wiring,
    mut call: PendingCall,
    method: &str,
) -> Result<Result<Value, ErrorObject>, SessionError> {
    call.response()
        .await
        .map_err(|e| SessionError::from_wire(&wiring.server, method, e))
}

fn discover_result(wiring: &Wiring, result: Value, version: &str) -> DiscoverOutcome {
    let parsed: DiscoverResult = match serde_json::from_value(result) {
        Ok(parsed) => parsed,
        Err(e) => {
            return DiscoverOutcome::NotModern(format!(
                "its `server/discover` result is not a DiscoverResult: {e}"
            ));
        }
    };
    let chosen = if parsed.supported_versions.iter().any(|v| v == version) {
        Some(version.to_owned())
    } else {
        MODERN_VERSIONS
            .iter()
            .find(|v| parsed.supported_versions.iter().any(|s| s == *v))
            .map(|v| (*v).to_owned())
    };
    let Some(protocol_version) = chosen else {
        return DiscoverOutcome::NotModern(format!(
            "it lists versions {}",
            parsed.supported_versions.join(", ")
        ));
    };
    let server_info = parsed
        .meta
        .as_ref()
        .and_then(|m| m.get(meta::SERVER_INFO))
        .and_then(|info| serde_json::from_value(info.clone()).ok());
    tracing::debug!(server = %wiring.server, "server/discover answered: modern era");
    DiscoverOutcome::Modern(Box::new(Negotiated {
        era: Era::Modern,
        protocol_version,
        capabilities: parsed.capabilities,
        server_info,
        instructions: parsed.instructions,
    }))
}

/// Auto mode: probe with `server/discover`; on any non-modern answer run `initialize`. If
/// the probe is silent past `probe_timeout`, `initialize` is sent too and the first usable
/// answer decides.
async fn probe_then_initialize(
    wiring: &Wiring,
    config: &SessionConfig,
) -> Result<Negotiated, SessionError> {
    let probe = send_discover(wiring, config, MODERN_VERSION).await?;
    let probe_answer = answer_of(wiring, probe, methods::SERVER_DISCOVER);
    tokio::pin!(probe_answer);
    let early = tokio::time::timeout(config.probe_timeout, &mut probe_answer).await;
    match early {
        Ok(answer) => {
            let answer = match answer {
                // A legacy server's sloppy "method not found" (an unreadable answer, an HTTP
                // refusal of the probe) is no reason to stop.
                Err(error) if is_no_modern_answer(&error) => {
                    tracing::debug!(server = %wiring.server, %error, "unreadable answer to server/discover");
                    return initialize(wiring, config, None).await;
                }
                answer => answer?,
            };
            match answer {
                Ok(result) => match discover_result(wiring, result, MODERN_VERSION) {
                    DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                    DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => {
                        initialize(wiring, config, None).await
                    }
                },
                Err(error) => match modern_retry_version(&error) {
                    RetryVersion::Retry { version, listed } => {
                        let mut refusals = Refusals::default();
                        refusals.refused(MODERN_VERSION, listed);
                        match discover(wiring, config, &version, refusals).await? {
                            DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                            DiscoverOutcome::NotModern(_) => initialize(wiring, config, None).await,
                            DiscoverOutcome::Refused(refusals) => {
                                initialize_after_refusals(wiring, config, refusals).await
                            }
                        }
                    }
                    _ => initialize(wiring, config, None).await,
                },
            }
        }
        Err(_) => {
            tracing::debug!(server = %wiring.server, "no answer to server/discover yet; sending initialize too");
            let init = initialize(wiring, config, None);
            tokio::pin!(init);
            tokio::select! {
                result = &mut init => match result {
                    Ok(negotiated) => Ok(negotiated),
                    // A server that already took the probe as a modern request may refuse
                    // `initialize`; its answer to the probe is then the one that counts. The
                    // wait for it is one more probe period.
                    Err(init_error) => match tokio::time::timeout(config.probe_timeout, probe_answer).await {
                        Ok(Ok(Ok(result))) => match discover_result(wiring, result, MODERN_VERSION) {
                            DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                            DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => Err(init_error),
                        },
                        _ => Err(init_error),
                    },
                },
                answer = &mut probe_answer => match answer {
                    Ok(Ok(result)) => match discover_result(wiring, result, MODERN_VERSION) {
                        DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                        DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => init.await,
                    },
                    Ok(Err(_)) => init.await,
                    Err(error) if is_no_modern_answer(&error) => init.await,
                    Err(error) => Err(error),
                },
            }
        }
    }
}

/// A failed `server/discover` probe that only says the server is not modern: its answer
/// could not be read, or the transport got none (a legacy HTTP server refusing the POST).
fn is_no_modern_answer(error: &SessionError) -> bool {
    error.is_bad_answer() || error.transport_error().is_some()
}

/// `initialize` once every modern version was refused: a server that speaks the legacy
/// protocol too is still used; for one that does not, the refusals are the error that says
/// why (not that it does not know `initialize`). A closed connection stays that error.
async fn initialize_after_refusals(
    wiring: &Wiring,
    config: &SessionConfig,
    refusals: Refusals,
) -> Result<Negotiated, SessionError> {
    match initialize(wiring, config, None).await {
        Ok(negotiated) => Ok(negotiated),
        Err(error) if error.is_closed() => Err(error),
        Err(error) => {
            tracing::debug!(server = %wiring.server, %error, "initialize after every version was refused");
            Err(refusals.into_error(&wiring.server))
        }
    }
}

/// The legacy handshake. `initialize` is never cancelled.
async fn initialize(
    wiring: &Wiring,
    config: &SessionConfig,
    pinned: Option<&str>,
) -> Result<Negotiated, SessionError> {
    let server = &wiring.server;
    let proposed = pinned.unwrap_or(LATEST_LEGACY_VERSION);
    let params = json!({
        "protocolVersion": proposed,
        "capabilities": wiring.client_capabilities,
        "clientInfo": config.client_info,
    });
    let id = wiring.connection.allocate_id();
    let call = wiring
        .connection
        .send_request(id, methods::INITIALIZE, Some(&params))
        .await
        .map_err(|e| SessionError::from_wire(server, methods::INITIALIZE, e))?;
    let result = match answer_of(wiring, call, methods::INITIALIZE).await? {
        Ok(result) => result,
        Err(error) => {
            return Err(SessionError::Rpc {
                server: server.clone(),
                method: methods::INITIALIZE.into(),
                error,
            });
        }
    };
    let protocol_error = |detail: String| SessionError::Protocol {
        server: server.clone(),
        method: methods::INITIALIZE.into(),
        detail,
    };
    let version = match result.get("protocolVersion") {
        Some(Value::String(version)) => version.clone(),
        Some(other) => {
            return Err(protocol_error(format!(
                "`protocolVersion` is not a string: {other}"
            )));
        }
        None => return Err(protocol_error("the result has no `protocolVersion`".into())),
    };
    let acceptable = match pinned {
        Some(pinned) => version == pinned,
        None => LEGACY_VERSIONS.contains(&version.as_str()),
    };
    if !acceptable {
        return Err(SessionError::VersionMismatch {
            server: server.clone(),
            offered: version,
            supported: match pinned {
                Some(pinned) => format!("{pinned} (pinned in the configuration)"),
                None => LEGACY_VERSIONS.join(", "),
            },
        });
    }
    let capabilities = match result.get("capabilities") {
        Some(capabilities) => serde_json::from_value(capabilities.clone())
            .map_err(|e| protocol_error(format!("invalid `capabilities`: {e}")))?,
        None => ServerCapabilities::default(),
    };
    let server_info = result
        .get("serverInfo")
        .and_then(|info| serde_json::from_value(info.clone()).ok());
    let instructions = result
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned);
    wiring
        .connection
        .notify_in(
            &MessageContext::version(&Arc::from(version.as_str())),
            methods::INITIALIZED,
            None,
        )
        .await
        .map_err(|e| SessionError::from_wire(server, methods::INITIALIZED, e))?;
    Ok(Negotiated {
        era: Era::Legacy,
        protocol_version: version,
        capabilities,
        server_info,
        instructions,
    })
}

/// MCP's cancellation: `notifications/cancelled` naming the request and why.
fn cancel_notice(id: &RequestId, reason: &str) -> (&'static str, Value) {
    (
        methods::CANCELLED,
        json!({ "requestId": id, "reason": reason }),
    )
}

// ---------------------------------------------------------------------------------------
// Inbound dispatch

struct DispatchState {
    server: Arc<str>,
    connection: Connection,
    inbound: mpsc::Receiver<Inbound>,
    handler: Arc<dyn ClientHandler>,
    routes: Arc<ProgressRoutes>,
    events: broadcast::Sender<SessionEvent>,
    counters: Arc<Counters>,
    era: Arc<Mutex<Option<Era>>>,
}

/// Drains the inbound stream for the session's whole life: routes progress, answers server
/// requests, and publishes everything as events. Ends when the connection closes.
async fn dispatch_loop(mut state: DispatchState) {
    let mut handler_tasks = tokio::task::JoinSet::new();
    loop {
        let inbound = tokio::select! {
            inbound = state.inbound.recv() => inbound,
            Some(_) = handler_tasks.join_next(), if !handler_tasks.is_empty() => continue,
        };
        let Some(inbound) = inbound else { break };
        handle_inbound(&state, &mut handler_tasks, inbound).await;
        state.routes.handled.send_modify(|handled| *handled += 1);
    }
    handler_tasks.abort_all();
}

/// Routes progress, answers a server request (in a task when the handler takes time), and
/// publishes the event.
async fn handle_inbound(
    state: &DispatchState,
    handler_tasks: &mut tokio::task::JoinSet<()>,
    inbound: Inbound,
) {
    match inbound {
        Inbound::Notification(notification) => {
            state.counters.notifications.fetch_add(1, Ordering::Relaxed);
            if notification.method == methods::PROGRESS {
                route_progress(state, &notification);
            }
            let _ = state.events.send(SessionEvent::Notification(notification));
        }
        Inbound::Request(request) => {
            let era = *state.era.lock().unwrap_or_else(|p| p.into_inner());
            let answer = answer_server_request(state, era, &request.method, request.params.clone());
            match answer {
                ServerAnswer::Now(outcome) => {
                    let refused = outcome.is_err();
                    if refused {
                        state
                            .counters
                            .refused_server_requests
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = state
                        .connection
                        .respond(&request.id, outcome.as_ref())
                        .await;
                    let _ = state.events.send(SessionEvent::ServerRequest {
                        method: request.method,
                        refused,
                    });
                }
                ServerAnswer::Later(future) => {
                    let connection = state.connection.clone();
                    let events = state.events.clone();
                    handler_tasks.spawn(async move {
                        let outcome = future.await;
                        let refused = outcome.is_err();
                        let _ = connection.respond(&request.id, outcome.as_ref()).await;
                        let _ = events.send(SessionEvent::ServerRequest {
                            method: request.method,
                            refused,
                        });
                    });
                }
            }
        }
        Inbound::Malformed(malformed) => {
            tracing::debug!(server = %state.server, %malformed, "malformed frame from server");
            let _ = state.events.send(SessionEvent::Malformed(malformed));
        }
        Inbound::UnexpectedResponse { response, reason } => {
            let _ = state
                .events
                .send(SessionEvent::UnexpectedResponse { response, reason });
        }
    }
}

fn route_progress(state: &DispatchState, notification: &Notification) {
    let parsed: Option<ProgressParams> = notification
        .params
        .as_ref()
        .and_then(|p| serde_json::from_value(p.clone()).ok());
    let Some(progress) = parsed else {
        state
            .counters
            .stray_progress
            .fetch_add(1, Ordering::Relaxed);
        return;
    };
    let token = RequestId::from_json(&progress.progress_token);
    let pending = token
        .as_ref()
        .is_some_and(|id| state.connection.is_pending(id));
    // A call that asked for its progress keeps its sink until the progress sent before its
    // result was routed, so the sink also counts for a request just answered.
    let sink = token
        .as_ref()
        .and_then(|id| state.routes.sinks().get(id).cloned());
    let Some(token) = token.filter(|_| pending || sink.is_some()) else {
        state
            .counters
            .stray_progress
            .fetch_add(1, Ordering::Relaxed);
        return;
    };
    if pending {
        let mut stamps = state.routes.stamps();
        if stamps.len() >= MAX_PROGRESS_STAMPS {
            stamps.retain(|id, _| state.connection.is_pending(id));
        }
        stamps.insert(token, Instant::now());
    }
    // Progress is lossy by nature: if the host is behind, this update is skipped.
    if let Some(sink) = sink {
        let _ = sink.try_send(progress);
    }
}

enum ServerAnswer {
    Now(Result<Value, ErrorObject>),
    Later(crate::handler::HandlerFuture),
}

fn answer_server_request(
    state: &DispatchState,
    era: Option<Era>,
    method: &str,
    params: Option<Value>,
) -> ServerAnswer {
    let not_found =
        |why: &str| ServerAnswer::Now(Err(ErrorObject::new(codes::METHOD_NOT_FOUND, why)));
    if era == Some(Era::Modern) {
        return not_found("servers must not send requests in protocol 2026-07-28");
    }
    match method {
        methods::PING => ServerAnswer::Now(Ok(json!({}))),
        methods::ROOTS_LIST => match state.handler.roots() {
            Some(roots) => ServerAnswer::Now(Ok(json!({ "roots": roots }))),
            None => not_found("this client did not declare the roots capability"),
        },
        methods::ELICITATION_CREATE if state.handler.supports_elicitation() => ServerAnswer::Later(
            state
                .handler
                .elicit(&state.server, params.unwrap_or(Value::Null)),
        ),
        _ => not_found(&format!("this client does not offer `{method}`")),
    }
}
