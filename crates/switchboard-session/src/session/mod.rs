//! The session: era detection, handshake, requests with deadlines, and inbound dispatch.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use switchboard_http::HttpOptions;
use switchboard_protocol::{
    CallToolResult, DiscoverResult, Era, Implementation, LATEST_LEGACY_VERSION, LEGACY_VERSIONS,
    ListPage, LogLevel, MODERN_VERSION, MODERN_VERSIONS, NextCursor, PageEntries, ProgressParams,
    Prompt, ReadResourceResult, Resource, ResourceTemplate, ResultType, ServerCapabilities,
    ShapeError, SubscriptionFilter, Tool, error_codes, meta, methods,
};
use switchboard_wire::stdio::{
    ChildProcess, ProcessSpec, ShutdownGrace, ShutdownReport, StdioOptions, StdioTransport,
};
use switchboard_wire::{
    CloseReason, Connection, ErrorObject, Inbound, Malformed, MessageContext, Notification,
    PendingCall, RequestId, Response, UnexpectedReason, WireError, WireStats, codes,
};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{ListingCap, SessionError};
use crate::handler::ClientHandler;
use crate::params::{BaseParams, InputRound, MetaPrefix, RequestParams};

mod deadlines;
mod dispatch;
mod headers;
mod listing;
mod negotiate;
mod progress;
mod requests;
mod skills;

use crate::config::{CallOptions, EraChoice, ForClient, SessionConfig};
use deadlines::Deadlines;
use dispatch::{DispatchState, dispatch_loop};
use headers::ContentHeaders;
use negotiate::{cancel_notice, negotiate};
use progress::{ProgressRoutes, RouteGuard};
use requests::Progress;

/// A connected transport: a connection, its inbound stream, and the process behind it.
#[derive(Debug)]
pub struct ConnectionParts {
    /// The JSON-RPC connection.
    pub connection: Connection,
    /// What the peer sends outside of responses.
    pub inbound: mpsc::Receiver<Inbound>,
    /// The child process, for stdio.
    pub process: Option<ChildProcess>,
}

impl From<StdioTransport> for ConnectionParts {
    fn from(stdio: StdioTransport) -> ConnectionParts {
        ConnectionParts {
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
    /// A notification (list changes, logs, …; progress only when it names no request in
    /// flight: a call's own progress goes to the call).
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

/// What [`Session::set_log_level`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelSet {
    /// A legacy server acknowledged `logging/setLevel`.
    Sent,
    /// A 2026-07-28 server: the level goes with every later request.
    OnEveryRequest,
    /// The server declared no logging; nothing was sent.
    NotOffered,
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
    /// The prefix with the log level [`Session::set_log_level`] chose (modern era), read
    /// only once one was chosen.
    leveled_prefix: std::sync::RwLock<Option<Arc<MetaPrefix>>>,
    has_log_level: std::sync::atomic::AtomicBool,
    /// What the transport is told about every message: the negotiated version.
    context: MessageContext,
    /// The headers that mirror each request's content, when the transport sends headers
    /// and the era has them (2026-07-28 over HTTP); `None` otherwise.
    content_headers: Option<ContentHeaders>,
    routes: Arc<ProgressRoutes>,
    /// The deadlines of the requests waiting for answers, swept by `sweep`.
    deadlines: Arc<Deadlines>,
    events: broadcast::Sender<SessionEvent>,
    counters: Arc<Counters>,
    process: Option<ChildProcess>,
    dispatch: JoinHandle<()>,
    sweep: JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.dispatch.abort();
        self.sweep.abort();
    }
}

#[derive(Default)]
struct Counters {
    notifications: AtomicU64,
    refused_server_requests: AtomicU64,
    stray_progress: AtomicU64,
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

/// Whether a transport sends the headers the session makes for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    /// Streamable HTTP: headers travel with each request.
    Http,
    /// A byte stream (stdio, in-memory): there are no headers.
    Stream,
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
        let transport = ConnectionParts {
            connection: http.connection,
            inbound: http.inbound,
            process: None,
        };
        Session::connect_over(transport, config, Carrier::Http).await
    }

    /// Connects over `transport`: era detection and handshake, within
    /// `config.connect_timeout`. On failure the process (if any) is killed.
    pub async fn connect(
        transport: ConnectionParts,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        Session::connect_over(transport, config, Carrier::Stream).await
    }

    /// [`Session::connect`] over a transport that is (or is not) the `carrier` of headers.
    async fn connect_over(
        transport: ConnectionParts,
        config: SessionConfig,
        carrier: Carrier,
    ) -> Result<Session, SessionError> {
        let ConnectionParts {
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
        let content_headers = (carrier == Carrier::Http && negotiated.era == Era::Modern)
            .then(ContentHeaders::default);
        let deadlines = Arc::new(Deadlines::default());
        let sweep = tokio::spawn(deadlines::sweep(deadlines.clone()));
        Ok(Session {
            inner: Arc::new(Inner {
                server,
                connection,
                negotiated,
                client_capabilities: wiring.client_capabilities,
                meta_prefix,
                leveled_prefix: std::sync::RwLock::new(None),
                has_log_level: std::sync::atomic::AtomicBool::new(false),
                context: MessageContext::version(&Arc::from(negotiated_version.as_str())),
                content_headers,
                routes: wiring.routes,
                deadlines,
                events: wiring.events,
                counters: wiring.counters,
                config,
                process,
                dispatch,
                sweep,
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
    /// [`Listing::problems`], not dropped silently. Over 2026-07-28 HTTP a tool whose
    /// `x-mcp-header` annotations are invalid is such an entry, and the listing's tools
    /// give each later `tools/call` its `Mcp-Param-*` headers.
    pub async fn list_tools(&self) -> Result<Listing<Tool>, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.tools.is_some(),
            "tools",
            methods::TOOLS_LIST,
        )?;
        let parse = match &self.inner.content_headers {
            Some(_) => headers::tool_with_valid_headers,
            None => Tool::from_json_text,
        };
        let listing = self
            .list_all(methods::TOOLS_LIST, "tools", parse, |t| t.name.clone())
            .await?;
        if let Some(content_headers) = &self.inner.content_headers {
            content_headers.learn(&listing.items);
        }
        Ok(listing)
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

    /// Calls a tool. A result with `isError: true` is `Ok`. The arguments are borrowed:
    /// they are written into the request as they are, never copied.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&Value>,
        options: &CallOptions,
    ) -> Result<CallToolResult, SessionError> {
        self.call_tool_reading(name, arguments, options, |raw| {
            CallToolResult::from_json_text(raw.get())
        })
        .await
    }

    /// Calls a tool and returns its result as the server sent it (every member kept:
    /// `isError`, `structuredContent`, `_meta`, content blocks as they are), for hosts
    /// that pass results on. The result is checked to be a tool result first (an object
    /// whose `content` and `isError` have the right types); one that is not is
    /// [`SessionError::Protocol`]. Deadlines, progress and cancellation as in
    /// [`Session::call_tool`].
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Option<&Value>,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        self.call_tool_reading(name, arguments, options, |raw| {
            let (kind, checked) = CallToolResult::from_json_text(raw.get());
            (kind, checked.and_then(|_| read_tree(raw).1))
        })
        .await
    }

    /// Calls a tool for a client of the caller's own ([`CallOptions::for_client`]; a
    /// gateway's): one request, with that client's capabilities and its retry's input
    /// round, whose result comes back as the server sent it — a complete tool result, or
    /// (2026-07-28) an `input_required` result for the client to fulfil and retry.
    pub async fn call_tool_for_client(
        &self,
        name: &str,
        arguments: Option<&Value>,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        let method = methods::TOOLS_CALL;
        self.require(
            self.inner.negotiated.capabilities.tools.is_some(),
            "tools",
            method,
        )?;
        let base = BaseParams::ToolCall { name, arguments };
        let input = for_client_round(options);
        let raw = self
            .send_and_wait(method, base, input.as_ref(), options, Progress::KeepsAlive)
            .await?;
        let (kind, checked) = CallToolResult::from_json_text(raw.get());
        if kind == ResultType::Complete {
            checked.map_err(|detail| self.protocol(method, detail))?;
        }
        self.passed_back(method, kind, &raw)
    }

    /// `prompts/get` or `resources/read` (`params` as the client sent them, without
    /// `_meta`) for a client of the caller's own, as [`Session::call_tool_for_client`] does
    /// for tools.
    pub async fn request_for_client(
        &self,
        method: &str,
        params: Value,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        let (offered, capability) = match method {
            methods::PROMPTS_GET => (
                self.inner.negotiated.capabilities.prompts.is_some(),
                "prompts",
            ),
            methods::RESOURCES_READ => (
                self.inner.negotiated.capabilities.resources.is_some(),
                "resources",
            ),
            _ => {
                return Err(self.protocol(
                    method,
                    "only tools/call, prompts/get and resources/read are made for a client",
                ));
            }
        };
        self.require(offered, capability, method)?;
        let input = for_client_round(options);
        let raw = self
            .send_and_wait(
                method,
                BaseParams::Tree(&params),
                input.as_ref(),
                options,
                Progress::ReportOnly,
            )
            .await?;
        let (kind, _) = read_tree(&raw);
        self.passed_back(method, kind, &raw)
    }

    /// A result made for a client: complete, or (2026-07-28) `input_required` with what
    /// it needs; as a tree.
    fn passed_back(
        &self,
        method: &str,
        kind: ResultType,
        raw: &RawValue,
    ) -> Result<Value, SessionError> {
        let tree = || {
            read_tree(raw)
                .1
                .map_err(|detail| self.protocol(method, detail))
        };
        match kind {
            ResultType::Complete => tree(),
            ResultType::InputRequired if self.inner.negotiated.era == Era::Modern => {
                let tree = tree()?;
                if tree.get("inputRequests").is_none() && tree.get("requestState").is_none() {
                    return Err(self.protocol(
                        method,
                        "`input_required` without `inputRequests` or `requestState`",
                    ));
                }
                Ok(tree)
            }
            ResultType::InputRequired => {
                Err(self.protocol(method, "`input_required` from a legacy-era server"))
            }
            ResultType::Other(other) => {
                Err(self.protocol(method, format!("unknown `resultType` \"{other}\"")))
            }
        }
    }

    /// `tools/call` with `read` turning the result text into the caller's type.
    async fn call_tool_reading<T>(
        &self,
        name: &str,
        arguments: Option<&Value>,
        options: &CallOptions,
        read: impl Fn(&RawValue) -> (ResultType, Result<T, ShapeError>),
    ) -> Result<T, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.tools.is_some(),
            "tools",
            methods::TOOLS_CALL,
        )?;
        let base = BaseParams::ToolCall { name, arguments };
        self.request_with_input(
            methods::TOOLS_CALL,
            base,
            options,
            Progress::KeepsAlive,
            read,
        )
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
            Progress::ReportOnly,
            read_tree,
        )
        .await
    }

    /// Reads a resource (the raw result: `contents`).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, SessionError> {
        self.read_resource_reading(uri, read_tree).await
    }

    /// Reads a resource as typed contents, straight from the result's text (no tree).
    pub async fn read_resource_contents(
        &self,
        uri: &str,
    ) -> Result<ReadResourceResult, SessionError> {
        self.read_resource_reading(uri, |raw| ReadResourceResult::from_json_text(raw.get()))
            .await
    }

    /// `resources/read` with `read` turning the result text into the caller's type.
    async fn read_resource_reading<T>(
        &self,
        uri: &str,
        read: impl Fn(&RawValue) -> (ResultType, Result<T, ShapeError>),
    ) -> Result<T, SessionError> {
        self.require(
            self.inner.negotiated.capabilities.resources.is_some(),
            "resources",
            methods::RESOURCES_READ,
        )?;
        self.request_with_input(
            methods::RESOURCES_READ,
            BaseParams::Tree(&json!({ "uri": uri })),
            &CallOptions::default(),
            Progress::ReportOnly,
            read,
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
            .ok_or_else(|| self.protocol(method, "the result has no `completion.values` array"))?;
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
            return Err(self.protocol(method, "subscriptions need the 2026-07-28 protocol; legacy servers send list changes without one"));
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

    /// Asks the server for log messages at `level` and above: `logging/setLevel` to a
    /// legacy server that declared logging; a 2026-07-28 server has no such method and
    /// hears the level with every later request instead (`_meta`; a request made for a
    /// gateway's client, `CallOptions::for_client`, carries that client's level instead).
    pub async fn set_log_level(&self, level: LogLevel) -> Result<LevelSet, SessionError> {
        match self.inner.negotiated.era {
            Era::Modern => {
                let chosen = ForClient {
                    log_level: Some(level.as_str().to_owned()),
                    ..ForClient::default()
                };
                let prefix = self.inner.meta_prefix.for_client(&chosen).map(Arc::new);
                *self
                    .inner
                    .leveled_prefix
                    .write()
                    .unwrap_or_else(|p| p.into_inner()) = prefix;
                self.inner
                    .has_log_level
                    .store(true, std::sync::atomic::Ordering::Release);
                Ok(LevelSet::OnEveryRequest)
            }
            Era::Legacy => {
                if self.inner.negotiated.capabilities.logging.is_none() {
                    return Ok(LevelSet::NotOffered);
                }
                self.request(
                    methods::LOGGING_SET_LEVEL,
                    Some(json!({ "level": level.as_str() })),
                    &CallOptions::default(),
                )
                .await?;
                Ok(LevelSet::Sent)
            }
        }
    }

    /// The `_meta` prefix with the chosen log level, once one was chosen.
    pub(super) fn leveled_prefix(&self) -> Option<Arc<MetaPrefix>> {
        if !self
            .inner
            .has_log_level
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return None;
        }
        self.inner
            .leveled_prefix
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends any request with the session's metadata and deadlines, and returns the raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        let raw = self.send_params(method, params, options).await?;
        let result = read_tree(&raw)
            .1
            .map_err(|detail| self.protocol(method, detail))?;
        self.check_result_type(method, &result)?;
        Ok(result)
    }

    /// Like [`Session::request`], but a 2026-07-28 `input_required` result (to
    /// `tools/call`, `prompts/get` or `resources/read`) comes back as it came instead of
    /// being answered: for a caller that judges the server's question itself (the checker).
    pub async fn request_unanswered(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, SessionError> {
        let raw = self.send_params(method, params, options).await?;
        let (kind, _) = read_tree(&raw);
        self.passed_back(method, kind, &raw)
    }

    /// Sends a request with these params (none: `{}`) and waits for its raw result.
    async fn send_params(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, SessionError> {
        let params = params.unwrap_or_else(|| json!({}));
        self.send_and_wait(
            method,
            BaseParams::Tree(&params),
            None,
            options,
            Progress::ReportOnly,
        )
        .await
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

    fn protocol(&self, method: &str, detail: impl std::fmt::Display) -> SessionError {
        SessionError::Protocol {
            server: self.inner.server.clone(),
            method: method.to_owned(),
            detail: detail.to_string(),
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
            ResultType::InputRequired => {
                Err(self.protocol(method, "`input_required` is not allowed for this method"))
            }
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
}

fn from_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ShapeError> {
    serde_json::from_str(text).map_err(|e| ShapeError::new(format!("invalid entry: {e}")))
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
/// The input round of a client's retry ([`CallOptions::for_client`]), if it is one.
fn for_client_round(options: &CallOptions) -> Option<InputRound> {
    options.for_client.as_ref().and_then(|client| {
        let retry = client.input_responses.is_some() || client.request_state.is_some();
        retry.then(|| InputRound {
            responses: client.input_responses.clone().unwrap_or_else(|| json!({})),
            state: client.request_state.clone().map(Value::String),
        })
    })
}

fn read_tree(raw: &RawValue) -> (ResultType, Result<Value, ShapeError>) {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(value) => (ResultType::of(&value), Ok(value)),
        Err(e) => (
            ResultType::Complete,
            Err(format!("the result is not valid JSON: {e}").into()),
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
    if handler.supports_sampling() {
        capabilities.insert("sampling".into(), json!({}));
    }
    Value::Object(capabilities)
}
