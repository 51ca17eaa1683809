//! The gateway: every server a [`Runtime`] operates, served as one MCP server.
//!
//! [`Gateway::new`] is the one way to make a gateway: it builds the runtime with the
//! gateway's [`ClientRelay`] as its host, and gives the gateway the same relay, so a
//! server's questions during a call (elicitation, sampling) reach the client of the call.
//! [`GatewayService`] is a [`Service`] of `switchboard-server`'s core, so the gateway
//! speaks both eras on every transport of that crate ([`Gateway::serve`] runs it on a
//! reader/writer pair; [`Gateway::start`] gives the service the HTTP transport takes). It
//! starts the runtime (enable) when it is started and leaves disposing it to the
//! runtime's owner. `initialize` and `server/discover` wait
//! for the servers' start a little (bounded by [`GatewayOptions::initialize_wait`]) so
//! that their `instructions` carry the servers'. The gateway offers tools, prompts and
//! resources:
//! - `tools/list` returns the runtime's snapshot (exported names `<server>__<tool>`, or the
//!   tools' own names when the runtime was built with
//!   [`Naming::Unprefixed`](switchboard_runtime::naming::Naming), schemas as bridged). It
//!   waits for the servers' start (bounded by [`GatewayOptions::startup_wait`]), so a
//!   client that lists right after `initialize` sees every server that came up; later
//!   changes are events ([`ServiceEvent::ToolsChanged`]), which the core announces.
//! - `tools/call` goes through [`Runtime::call_tool_raw`] (routing, argument validation
//!   against the bridged schema, deadlines, waiting for a restarting server), not through
//!   the agent-facing [`Tool`]/`ToolOutput` conversion: the
//!   server's result passes unchanged (`isError`, `structuredContent`, `_meta`, every
//!   content block), and so does its JSON-RPC error (code, message, data). Arguments that
//!   do not fit the schema get a result with `isError` saying why (nothing is sent). A
//!   timeout, a server that closed or is unavailable, a transport failure and an answer
//!   that cannot be passed on are JSON-RPC errors with the gateway's [`codes`], naming the
//!   server (and, for a timeout, how long the gateway waited). A cancelled request is
//!   cancelled upstream; the upstream server's progress is forwarded under the client's
//!   progress token. A call of a tool the tool lock holds (the snapshot's `held`) is not
//!   "unknown": it gets [`codes::TOOL_HELD`] with why it is held and the command that
//!   accepts it.
//! - `prompts/list` names each prompt as the snapshot names tools (`<server>__<prompt>`, or
//!   its own name unprefixed); `prompts/get` goes to its server. `resources/list` and
//!   `resources/templates/list` pass URIs through unchanged (a URI or template an earlier
//!   server already listed is left out); `resources/read` goes to the server that listed
//!   the URI, else to the first server with a template whose fixed prefix the URI starts
//!   with, else "resource not found". `completion/complete` goes to the server of the
//!   prompt or resource it names (a server without completions gives no values). Server
//!   errors are passed through as they are; other failures get the gateway's [`codes`] as
//!   for tools.
//! - An unknown tool or prompt is a JSON-RPC error (-32602) naming it.
//! - With a [`ResultGuard`] ([`GatewayOptions::guard`], `serve --guard`), a tool result, a
//!   prompt or a resource whose text reads like an order to the model is withheld (a tool
//!   error, or [`codes::RESULT_WITHHELD`]) or passed with a warning put first; `guard.rs`
//!   says what is scanned and which findings count. The audit log records a withheld tool
//!   result as `withheld`, not as the tool's error (a per-request `WithheldNote`).
//! - With rate limits ([`GatewayOptions::rate_limits`], `serve`'s `rateLimits`), a
//!   `tools/call` over one of them is refused at once with [`codes::RATE_LIMITED`], naming
//!   the limit and when to retry; `rate_limits.rs` says how limits combine. With a
//!   shared store (`serve --state redis://…`, `shared_state.rs`) every instance decides
//!   the same buckets.
//! - With [`GatewayOptions::credentials`] (`serve`'s `upstreamCredentials`), a
//!   `tools/call`, `prompts/get` or `resources/read` for a per-caller server goes over the
//!   client's own upstream session, opened with the client's own credential; a client with
//!   none is refused with [`codes::CREDENTIALS`] (`credentials.rs`).
//! - With [`GatewayOptions::metrics`] (`serve --metrics`), every `tools/call` is counted
//!   by server, tool and outcome, with its latency, and the servers' states are read at
//!   each scrape (`metrics.rs`; the CLI serves the text).
//!
//! Secrets stay in: everything a client is sent passes one rule, the runtime's
//! [`Runtime::secrets`] (every configured `${VAR}` expansion, `env` and header value and URL
//! credential) replaced by `<redacted>`, the rule the CLI's terminal and `--trace` apply.
//! `handle` applies it to each answer (result or error) and, through
//! [`RequestContext::hiding`], to the request's progress and log messages and its questions
//! to the client; the servers' own log messages and resource updates get it where they
//! become events. How much of an upstream failure a client hears is [`ErrorDetail`]'s:
//! everything (stdio), or which server failed and how (HTTP); the full account always goes
//! to the operator's log.
//!
//! With [`traces::Traces`] ([`GatewayOptions::traces`], `serve --otlp`), each request is a
//! span (its parent the client's `_meta.traceparent`), with a `gateway.policy` child and,
//! for `tools/call`, a child for the upstream call whose trace context the server is sent
//! (`traces.rs` says what the spans hold and never hold).
//!
//! A server's log message that its session could not tie to one call goes only to the
//! clients of the one identity it can only be about, else only to the operator's log
//! (`audience.rs` has the rule): a server that logs its users' queries does not tell one
//! client's data to another.

mod audience;
pub mod audit;
pub mod credentials;
mod documents;
pub mod guard;
pub mod metrics;
pub mod policy;
pub mod profiles;
pub mod rate_limits;
pub mod relay;
pub mod shared_state;
pub mod traces;

use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_protocol::{Era, Implementation, ProgressParams};
use switchboard_runtime::naming::{Naming, ToolRoute};
use switchboard_runtime::{
    ClientRequest, HostHandler, NoticeKind, Runtime, RuntimeOptions, ServerRequestError, Snapshot,
    StartupReport, Tool, ToolContext,
};
use switchboard_session::{ForClient, SessionError};
use switchboard_text::peer_text::PeerText;
use switchboard_text::redact::Secrets;
use switchboard_wire::codes::{INTERNAL_ERROR, INVALID_PARAMS};
use switchboard_wire::{ConnectionOptions, ErrorObject};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use switchboard_server::core::{
    Answer, CacheHints, CallTool, Capabilities, InputRound, LogLevel, LogMessage, RequestContext,
    ServerInfo, Service, ServiceEvent, ServiceFuture, ServiceRequest,
};
use switchboard_server::stdio::{self, StdioOptions};

use crate::audience::Audiences;
use crate::guard::ResultGuard;
use crate::relay::{ClientRelay, WaitingRequest};

pub use documents::{HttpDocumentFetcher, NoHttpClient};
pub use switchboard_server::stdio::{CLOSE_FLUSH, MAX_IN_FLIGHT, MAX_PENDING_REPLIES};

/// Progress notifications buffered per call before the oldest wait.
const PROGRESS_BUFFER: usize = 32;
/// Events buffered for a slow client before it is told it lagged.
const EVENT_BUFFER: usize = 64;

/// The gateway's own JSON-RPC error codes (in the range JSON-RPC leaves to
/// implementations; MCP reserves -32020 and above, and gives -32002 to "resource not
/// found" in the legacy protocol versions). An upstream server's own error is passed on
/// with its own code, never with one of these.
pub mod codes {
    pub use switchboard_server::stdio::codes::{BUSY, UNFINISHED_AT_CLOSE};
    /// The upstream server did not answer within its deadline (a cancellation was sent to
    /// it). The message names the server and how long the gateway waited; `data` holds
    /// `server` and `waitedMs`. (-32001 is "request timeout" in the TypeScript SDK's
    /// vocabulary too.)
    pub const UPSTREAM_TIMEOUT: i64 = -32001;
    /// The upstream server could not take the request: its connection closed (the process
    /// exited; it is being restarted), its transport failed (an HTTP status, a stream that
    /// ended first), or it is not ready or no longer configured. The message names the
    /// server and what happened; `data` holds `server`. The call may or may not have run.
    /// A request a server restart interrupted was sent again once when that is safe
    /// (listings, reads, prompts, completions, tools annotated read-only or idempotent);
    /// otherwise its message says that the server restarted while it was in flight and
    /// that it was not retried because it may have had effects.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32005;
    /// The upstream server's answer could not be passed on: malformed, over the frame
    /// limit, or not a tool result. The message names the server and what was wrong;
    /// `data` holds `server`.
    pub const UPSTREAM_BAD_ANSWER: i64 = -32006;
    /// The tool is held by the tool lock: its server lists it, but it is new, changed or
    /// renamed since it was pinned (or the lock cannot be used), so it is left out until
    /// approved. The message says why and what to do; `data` holds `server`, `tool` (its
    /// wire name) and `reason`.
    pub const TOOL_HELD: i64 = -32007;
    /// The server's answer to `prompts/get` or `resources/read` carries what reads like an
    /// order to the model, and the gateway's result guard (`serve --guard`) withheld it.
    /// The message names the server, the prompt or resource, the rule and where; `data`
    /// holds `server`, `prompt` or `uri`, `rules` (finding ids) and `place`. A withheld
    /// tool result is a result with `isError` instead, as the model can read it.
    pub const RESULT_WITHHELD: i64 = -32008;
    /// The gateway's policy (`policy.rs`) does not let this client use what it asked for,
    /// or not with these arguments. The message names the rule and what it refused;
    /// `data` holds `rule`.
    pub const POLICY_DENIED: i64 = -32010;
    /// A rate limit or quota of `serve`'s `rateLimits` has no room for the call: it was not
    /// made. The message names the limit, its rate and when to retry; `data` holds `limit`
    /// and `retryAfterMs` (`rate_limits.rs`).
    pub const RATE_LIMITED: i64 = -32009;
    /// The server is called with each client's own credentials (`credentials.rs`), and
    /// this client has none there: it has no identity of its own, no tokens are stored
    /// for it and none could be exchanged, or its session could not be opened. The
    /// message says what to do (e.g. the `switchboard login SERVER --as IDENTITY` to run);
    /// `data` holds `server` and `identity`.
    pub const CREDENTIALS: i64 = -32011;
}

/// Called once with the startup report, when every server has started or failed.
pub type StartedHook = Box<dyn FnOnce(&StartupReport) + Send>;

/// How the gateway presents itself and how long it waits.
pub struct GatewayOptions {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// The client connection's settings, for [`Gateway::serve`] (its name appears in logs).
    pub connection: ConnectionOptions,
    /// Longest wait of `tools/list` and `tools/call` for the servers' start; after it they
    /// answer with the servers that are ready.
    pub startup_wait: Duration,
    /// Longest wait of `initialize` and `server/discover` for the servers' start (for their
    /// instructions); short, because clients give the handshake little time.
    pub initialize_wait: Duration,
    /// Receives the startup report (the CLI prints it on stderr).
    pub on_started: Option<StartedHook>,
    /// For [`Gateway::serve`]: how long the requests in flight when the client closes its side get
    /// to finish; after it, each unfinished one is answered with
    /// [`codes::UNFINISHED_AT_CLOSE`].
    pub close_grace: Duration,
    /// How much of an upstream failure a client is told.
    pub error_detail: ErrorDetail,
    /// The result guard: answers that carry an order to the model are withheld or marked
    /// (`guard.rs`). Off (`None`) by default.
    pub guard: Option<ResultGuard>,
    /// The audit log (`audit.rs`): one line per `tools/call`, `prompts/get` and
    /// `resources/read` answered. Off (`None`) by default; its owner ends it.
    pub audit: Option<Arc<dyn audit::AuditSink>>,
    /// Who may see and use what (`policy.rs`: no policy, every client sees everything)
    /// and the profiles served at `/mcp/<name>` (`profiles.rs`). Replaced while serving
    /// through [`Gateway::policy_control`].
    pub access: policy::Access,
    /// Rate limits and quotas on `tools/call` (`rate_limits.rs`); its owner replaces them
    /// on a reload. Off (`None`) by default.
    pub rate_limits: Option<Arc<rate_limits::CallLimits>>,
    /// Spans of the requests and their upstream calls (`traces.rs`). Off (`None`) by
    /// default; its owner flushes and ends the exporter.
    pub traces: Option<traces::Traces>,
    /// The metrics (`metrics.rs`): every `tools/call` counted, the servers' states read
    /// at each scrape. Off (`None`) by default; its owner serves [`metrics::GatewayMetrics::render`].
    pub metrics: Option<metrics::GatewayMetrics>,
    /// Which servers are called with each client's own credentials, and those credentials
    /// (`credentials.rs`). None (`None`) by default: every request goes out with the
    /// runtime's own.
    pub credentials: Option<Arc<dyn credentials::UpstreamCredentials>>,
    /// For [`Gateway::serve`]: the profile the stdio client is served, as an HTTP client
    /// of `/mcp/<profile>` is (`serve --profile`); `None`: the whole gateway. It must be
    /// one of [`GatewayOptions::access`]'s profiles.
    pub stdio_profile: Option<String>,
}

/// How much of an upstream failure (a timeout, a crash, an HTTP error) the gateway tells a
/// client. Either way the servers' configured secrets are hidden, and the operator's log
/// (`tracing`, at `warn`) has the whole account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorDetail {
    /// Everything the gateway knows: the server's last stderr lines, the upstream's
    /// address (without credentials), the start of an HTTP error body. For a client on
    /// the operator's own machine (the stdio gateway).
    #[default]
    Full,
    /// Which server failed, how (timed out, closed, HTTP status, bad answer) and what to
    /// do; nothing the server or its process wrote, and not its address. For remote
    /// clients (the HTTP gateway, unless its operator asks for [`ErrorDetail::Full`]).
    Brief,
}

impl GatewayOptions {
    /// Defaults: named `switchboard`, 60 s startup wait, 5 s for `initialize`.
    pub fn new(version: &str) -> GatewayOptions {
        GatewayOptions {
            name: "switchboard".into(),
            version: version.into(),
            connection: ConnectionOptions::new("client"),
            startup_wait: Duration::from_secs(60),
            initialize_wait: Duration::from_secs(5),
            on_started: None,
            close_grace: Duration::from_secs(5),
            error_detail: ErrorDetail::Full,
            guard: None,
            audit: None,
            access: policy::Access::default(),
            rate_limits: None,
            traces: None,
            metrics: None,
            credentials: None,
            stdio_profile: None,
        }
    }
}

impl fmt::Debug for GatewayOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayOptions")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("connection", &self.connection)
            .field("startup_wait", &self.startup_wait)
            .field("initialize_wait", &self.initialize_wait)
            .field("on_started", &self.on_started.is_some())
            .field("close_grace", &self.close_grace)
            .field("error_detail", &self.error_detail)
            .field("guard", &self.guard)
            .field("audit", &self.audit)
            .field("access", &self.access)
            .field("rate_limits", &self.rate_limits)
            .field("traces", &self.traces)
            .field("metrics", &self.metrics.is_some())
            .field("credentials", &self.credentials.is_some())
            .field("stdio_profile", &self.stdio_profile)
            .finish()
    }
}

/// What a gateway session did, for its owner's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayEnd {
    /// The startup report, if the servers finished starting while the client was there.
    pub startup: Option<StartupReport>,
    /// Requests answered (results and errors, refusals and failures at close included).
    pub answered: u64,
    /// Requests refused at once: beyond [`MAX_IN_FLIGHT`] ([`codes::BUSY`]), or reusing
    /// the id of a request in flight.
    pub refused: u64,
    /// Requests still unfinished when the close grace ended, answered with
    /// [`codes::UNFINISHED_AT_CLOSE`].
    pub unfinished: u64,
    /// Requests the client cancelled.
    pub cancelled: u64,
    /// Frames from the client that were not JSON-RPC (each answered with an error).
    pub malformed: u64,
}

/// A gateway and the runtime whose servers it serves, wired together: the runtime's host
/// is the gateway's [`ClientRelay`], which passes each server's questions during a call
/// (elicitation, sampling) to the client whose call waits on that server.
#[derive(Debug)]
pub struct Gateway {
    runtime: Runtime,
    relay: ClientRelay,
    options: GatewayOptions,
    policy: policy::PolicyControl,
}

impl Gateway {
    /// The runtime of `runtime_options` with the gateway's relay as its host (a host
    /// already in `runtime_options.policy.host` is replaced: the gateway's clients answer
    /// the servers' questions), and the gateway over it. Nothing starts until
    /// [`Gateway::serve`] or [`Gateway::start`].
    pub fn new(mut runtime_options: RuntimeOptions, mut options: GatewayOptions) -> Gateway {
        let relay = ClientRelay::new();
        runtime_options.policy.host = Some(HostHandler(Arc::new(relay.clone())));
        let policy = policy::PolicyControl::new(std::mem::take(&mut options.access));
        let runtime = Runtime::new(runtime_options);
        if let Some(metrics) = &options.metrics {
            metrics.watch_runtime(runtime.clone());
        }
        Gateway {
            runtime,
            relay,
            options,
            policy,
        }
    }

    /// Replaces the policy and profiles in force while the gateway serves (its owner's
    /// config reload).
    pub fn policy_control(&self) -> policy::PolicyControl {
        self.policy.clone()
    }

    /// The runtime (cheap to clone): its owner follows its snapshots, reloads it, and
    /// disposes it when serving is over.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Starts the runtime's servers (enable) and gives the gateway as a [`Service`], for a
    /// transport such as `switchboard_server::http::HttpServer`.
    pub fn start(self) -> Arc<GatewayService> {
        GatewayService::start(self.runtime, self.relay, self.options, self.policy)
    }

    /// Serves one client on `reader`/`writer` until it closes its side (for stdio: stdin
    /// EOF). Enables the runtime first thing; the caller disposes it afterwards.
    pub async fn serve<R, W>(self, reader: R, writer: W) -> GatewayEnd
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let stdio_options = StdioOptions {
            connection: self.options.connection.clone(),
            close_grace: self.options.close_grace,
            endpoint: self.options.stdio_profile.as_deref().map(Arc::from),
        };
        let gateway = self.start();
        let end = stdio::serve(gateway.clone(), reader, writer, stdio_options).await;
        GatewayEnd {
            startup: gateway.startup_report(),
            answered: end.answered,
            refused: end.refused,
            unfinished: end.unfinished,
            cancelled: end.cancelled,
            malformed: end.malformed,
        }
    }
}

/// The gateway as a [`Service`]: a runtime's servers as one MCP server.
pub struct GatewayService {
    core: Upstreams,
    info: ServerInfo,
    /// With unprefixed naming (one fronted server): that server's identity with the
    /// gateway's capabilities, set when it first came up.
    fronted: Arc<std::sync::OnceLock<ServerInfo>>,
    startup: Arc<Mutex<Option<StartupReport>>>,
    events: broadcast::Sender<ServiceEvent>,
    /// The enable and the snapshot watcher; stopped when the service goes.
    tasks: Vec<JoinHandle<()>>,
}

impl fmt::Debug for GatewayService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayService")
            .field("info", &self.info)
            .field("started", &*self.core.started.borrow())
            .finish_non_exhaustive()
    }
}

impl Drop for GatewayService {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl GatewayService {
    /// Starts the runtime's servers (enable) and serves them, the servers' questions during
    /// a call passed on by `relay` (the runtime's host). The runtime's owner disposes it
    /// when serving is over.
    fn start(
        runtime: Runtime,
        relay: ClientRelay,
        mut options: GatewayOptions,
        policy: policy::PolicyControl,
    ) -> Arc<GatewayService> {
        let (started_tx, started) = watch::channel(false);
        let startup = Arc::new(Mutex::new(None));
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let enabling = runtime.clone();
        let report_slot = startup.clone();
        let on_started = options.on_started.take();
        let fronted: Arc<std::sync::OnceLock<ServerInfo>> = Arc::default();
        let fronted_slot = fronted.clone();
        let own_info = gateway_info(&options);
        let fronting_info = own_info.clone();
        let enable = tokio::spawn(async move {
            match enabling.enable().await {
                Ok(report) => {
                    if let Some(info) = fronted_identity(&enabling, &report, &fronting_info) {
                        let _ = fronted_slot.set(info);
                    }
                    if let Some(hook) = on_started {
                        hook(&report);
                    }
                    *lock(&report_slot) = Some(report);
                }
                Err(error) => tracing::warn!(%error, "the servers could not be started"),
            }
            let _ = started_tx.send(true);
        });
        let listed_early = Arc::new(AtomicBool::new(false));
        let audiences = Arc::new(Audiences::default());
        let notices = tokio::spawn(pass_notices(
            runtime.clone(),
            audiences.clone(),
            events.clone(),
        ));
        let watcher = tokio::spawn(watch_catalogs(
            runtime.subscribe(),
            started.clone(),
            listed_early.clone(),
            events.clone(),
        ));
        let policy_in_force = policy.in_force();
        let announcer = tokio::spawn(policy::announce_replacements(
            policy.in_force(),
            events.clone(),
        ));
        Arc::new(GatewayService {
            core: Upstreams {
                runtime,
                started,
                listed_early,
                subscriptions: Arc::default(),
                relay,
                audiences,
                error_detail: options.error_detail,
                guard: options.guard.take().map(Arc::new),
                audit: options.audit.take(),
                policy: policy_in_force,
                rate_limits: options.rate_limits.take(),
                traces: options.traces.take(),
                metrics: options.metrics.take(),
                callers: options
                    .credentials
                    .take()
                    .map(|source| Arc::new(credentials::CallerSessions::new(source))),
                startup_wait: options.startup_wait,
                initialize_wait: options.initialize_wait,
            },
            info: own_info,
            fronted,
            startup,
            events,
            tasks: vec![enable, watcher, notices, announcer],
        })
    }

    /// The startup report, once every server has started or failed.
    pub fn startup_report(&self) -> Option<StartupReport> {
        lock(&self.startup).clone()
    }
}

/// The gateway's own identity and capabilities.
fn gateway_info(options: &GatewayOptions) -> ServerInfo {
    ServerInfo {
        implementation: Implementation {
            name: options.name.clone(),
            version: options.version.clone(),
            title: Some("Switchboard gateway".into()),
            description: None,
            website_url: None,
        },
        capabilities: Capabilities::EVERYTHING,
        cache: CacheHints::default(),
    }
}

/// Fronting one server under its own names: that server's identity (as a client talking to
/// it directly would see it) with the gateway's capabilities.
fn fronted_identity(
    runtime: &Runtime,
    report: &StartupReport,
    gateway: &ServerInfo,
) -> Option<ServerInfo> {
    if runtime.snapshot().naming != Naming::Unprefixed {
        return None;
    }
    let [only] = report.servers.as_slice() else {
        return None;
    };
    let identity = runtime.server(&only.name).identity()?;
    let secrets = runtime.secrets();
    let hidden = |text: String| secrets.redact(&text).into_owned();
    Some(ServerInfo {
        implementation: Implementation {
            name: hidden(identity.name),
            version: hidden(identity.version),
            title: identity.title.map(hidden),
            description: None,
            website_url: None,
        },
        ..gateway.clone()
    })
}

/// What a request's work needs of the gateway (cheap to clone into its future).
#[derive(Clone)]
struct Upstreams {
    runtime: Runtime,
    /// Becomes true when the runtime's first `enable` finished.
    started: watch::Receiver<bool>,
    /// Set when a list was answered before the servers finished starting (its client is
    /// then told every list changed when they have).
    listed_early: Arc<AtomicBool>,
    /// Resources subscribed to upstream, by URI: how many clients (sessions or listen
    /// streams) follow each; the upstream subscription ends with the last.
    subscriptions: Arc<Mutex<HashMap<String, usize>>>,
    /// Where the servers' questions during a request go.
    relay: ClientRelay,
    /// Who may hear what a server says outside any one call.
    audiences: Arc<Audiences>,
    error_detail: ErrorDetail,
    /// Scans answers for orders to the model, when `serve --guard` asked for it.
    guard: Option<Arc<ResultGuard>>,
    /// Where each call answered is recorded, when `serve --audit` asked for it.
    audit: Option<Arc<dyn audit::AuditSink>>,
    /// The policy and the profiles in force.
    policy: watch::Receiver<Arc<policy::Access>>,
    /// The rate limits on `tools/call`, when `rateLimits` sets some.
    rate_limits: Option<Arc<rate_limits::CallLimits>>,
    /// Where the spans go, when `serve --otlp` asked for them.
    traces: Option<traces::Traces>,
    /// Where each call is counted, when `serve --metrics` asked for it.
    metrics: Option<metrics::GatewayMetrics>,
    /// The callers' own upstream sessions, for the servers called with their credentials.
    callers: Option<Arc<credentials::CallerSessions>>,
    startup_wait: Duration,
    initialize_wait: Duration,
}

impl Upstreams {
    /// Registers a request to `server` with the relay and the audiences for as long as the
    /// value lives.
    fn waiting_on(&self, server: &str, context: &RequestContext) -> WaitingOn {
        WaitingOn {
            _relay: self.relay.waiting_on(server, context),
            _audience: self
                .audiences
                .waiting_on(server, context.client.identity.clone()),
        }
    }

    /// What is in force for `request`, with the request put in the gateway's terms (its
    /// profile's names and fixed arguments); else the refusal (a profile's "unknown", or
    /// the policy's denial naming its rule).
    fn judged(
        &self,
        request: &mut ServiceRequest,
        context: &RequestContext,
    ) -> Result<Arc<policy::Access>, ErrorObject> {
        let access = self.policy.borrow().clone();
        let profile = match context.client.endpoint.as_deref() {
            None => None,
            Some(name) => Some(access.profile(name).ok_or_else(|| {
                ErrorObject::new(
                    INVALID_PARAMS,
                    format!("the profile `{name}` is no longer served here"),
                )
            })?),
        };
        let snapshot = self.runtime.snapshot();
        if let Some(profile) = profile {
            profile.inbound(request, &snapshot)?;
        }
        if let Some(policy) = access.policy_at(profile) {
            let rules = policy.for_identity(&context.client.identity);
            policy::admit(&rules, request, &snapshot).map_err(|denial| denial.error())?;
        }
        Ok(access)
    }

    /// The caller's own session with `server`, when it is called with each caller's
    /// credentials (`None`: the runtime's own session serves), or why the caller has none.
    async fn caller_session(
        &self,
        server: &str,
        context: &RequestContext,
    ) -> Result<Option<switchboard_session::Session>, ErrorObject> {
        match &self.callers {
            // Boxed: opening a caller's session is a large future, and only a per-caller
            // server's requests pay for it (every request's future would carry it inline).
            Some(callers) if callers.is_per_caller(server) => {
                Box::pin(callers.session_for(&self.runtime, server, &context.client.identity))
                    .await
                    .map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A listing's answer as the client may see it: what its policy does not grant left
    /// out, then its profile's view (what the profile has, renamed and rewritten).
    fn filtered(&self, answer: Answer, listed_for: ListedFor<'_>) -> Answer {
        let Some(listing) = listed_for.listing else {
            return answer;
        };
        let mut listed = answer?;
        let snapshot = self.runtime.snapshot();
        let profile = listed_for
            .endpoint
            .and_then(|name| listed_for.access.profile(name));
        if let Some(policy) = listed_for.access.policy_at(profile) {
            let rules = policy.for_identity(listed_for.identity);
            policy::filter_listing(&rules, listing, &snapshot, &mut listed);
        }
        if let Some(profile) = profile {
            profile.outbound(listing, &snapshot, &mut listed);
        }
        Ok(listed)
    }

    /// Waits until the servers have started (or failed), at most `wait`.
    async fn wait_for_start(&self, wait: Duration) {
        let mut started = self.started.clone();
        if tokio::time::timeout(wait, started.wait_for(|s| *s))
            .await
            .is_err()
        {
            tracing::warn!(
                ?wait,
                "servers are still starting; answering with the ones that are ready"
            );
        }
    }
}

/// Whom a listing is answered for: what is in force, at which endpoint, for whom.
struct ListedFor<'a> {
    access: &'a policy::Access,
    endpoint: Option<&'a str>,
    identity: &'a switchboard_server::core::ClientIdentity,
    /// The listing asked for (`None`: not a listing).
    listing: Option<policy::Listing>,
}

/// A request waiting on a server, as the relay and the audiences count it.
struct WaitingOn {
    _relay: WaitingRequest,
    _audience: crate::audience::Waiting,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Turns snapshot changes after the servers' start into list-change events: a list's event
/// when an entry of it was added, removed or redefined. The start itself is no change (lists
/// wait for it), unless a list was answered before it finished.
async fn watch_catalogs(
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    mut started: watch::Receiver<bool>,
    listed_early: Arc<AtomicBool>,
    events: broadcast::Sender<ServiceEvent>,
) {
    if started.wait_for(|started| *started).await.is_err() {
        return;
    }
    let first = snapshots.borrow_and_update().clone();
    let mut fingerprints = Catalog::ALL.map(|catalog| catalog.fingerprint(&first));
    if listed_early.load(Ordering::Relaxed) {
        for catalog in Catalog::ALL {
            let _ = events.send(catalog.changed_event());
        }
    }
    while snapshots.changed().await.is_ok() {
        let snapshot = snapshots.borrow_and_update().clone();
        for catalog in Catalog::ALL {
            let fingerprint = catalog.fingerprint(&snapshot);
            let seen = &mut fingerprints[catalog as usize];
            if *seen != fingerprint {
                *seen = fingerprint;
                // No receiver (no client yet) is fine: a client lists when it comes.
                let _ = events.send(catalog.changed_event());
            }
        }
    }
}

impl Service for GatewayService {
    fn info(&self) -> &ServerInfo {
        self.fronted.get().unwrap_or(&self.info)
    }

    fn instructions(&self) -> ServiceFuture<Option<String>> {
        let gateway = self.core.clone();
        Box::pin(async move {
            gateway.wait_for_start(gateway.initialize_wait).await;
            let snapshot = gateway.runtime.snapshot();
            // Fronting one server under its own names: its own instructions, as a client
            // talking to it directly would get them.
            let instructions = match snapshot.instructions.as_slice() {
                [only] if snapshot.naming == Naming::Unprefixed => only.item.clone(),
                _ => snapshot.system_prompt.clone(),
            };
            // The servers' words, like everything else a client is sent: secrets hidden.
            let instructions = gateway.runtime.secrets().redact(&instructions).into_owned();
            (!instructions.is_empty()).then_some(instructions)
        })
    }

    /// Everything a request sends its client passes here: the answer (result or error)
    /// and, through the context, its progress and log messages and its questions, each
    /// with the servers' configured secrets hidden (events are hidden in `pass_notices`).
    fn handle(&self, request: ServiceRequest, context: RequestContext) -> ServiceFuture<Answer> {
        let gateway = self.core.clone();
        Box::pin(async move {
            tokio::select! {
                () = gateway.wait_for_start(gateway.startup_wait) => {}
                // Cancelled before the servers came up: the answer is dropped anyway.
                () = context.cancel.cancelled() => {
                    return Err(ErrorObject::new(INTERNAL_ERROR, "cancelled"));
                }
            }
            gateway.audiences.served(&context.client.identity);
            let secrets = gateway.runtime.secrets();
            // The policy first (a refused call uses no rate), then the rate limits. The
            // audit log and the metrics see the request in the gateway's terms (a profile's
            // renamed tool by its exported name).
            let mut request = request;
            let judged = gateway.judged(&mut request, &context);
            let audited = gateway
                .audit
                .as_ref()
                .and_then(|_| gateway.audit_start(&request, &context));
            let metered = gateway
                .metrics
                .as_ref()
                .and_then(|m| m.call_started(&gateway.runtime.snapshot(), &request));
            let span = gateway.traces.as_ref().map(|t| {
                let denied_by = judged.as_ref().err().and_then(policy::denied_rule);
                t.request(&request, &context, &gateway.runtime, denied_by)
            });
            let identity = context.client.identity.clone();
            let endpoint = context.client.endpoint.clone();
            let withheld = guard::WithheldNote::default();
            // Pinned where it is made, so that the request's future holds it once (moved
            // into `.await` or into the span's future it would be held twice: every
            // request's future is boxed, and its size is copied on every request).
            let answering = std::pin::pin!({
                let gateway = gateway.clone();
                let secrets = secrets.clone();
                let withheld = withheld.clone();
                async move {
                    match judged {
                        Err(refused) => Err(refused),
                        Ok(access) => match gateway.over_rate_limit(&request, &context).await {
                            Some(refused) => Err(refused),
                            None => {
                                let listing = policy::Listing::of(&request);
                                let answer = gateway
                                    .answer(request, context.hiding(secrets), &withheld)
                                    .await;
                                let listed_for = ListedFor {
                                    access: &access,
                                    endpoint: endpoint.as_deref(),
                                    identity: &identity,
                                    listing,
                                };
                                gateway.filtered(answer, listed_for)
                            }
                        },
                    }
                }
            });
            let answer = match span {
                Some(span) => traces::answer_in(span, answering).await,
                None => answering.await,
            };
            let answer = hide_in_answer(&secrets, answer);
            if let (Some(log), Some(started)) = (&gateway.audit, audited) {
                log.record(started.finish(&answer, &withheld));
            }
            if let Some(meter) = metered {
                meter.finish(&answer);
            }
            if let (Some(metrics), Err(refused)) = (&gateway.metrics, &answer) {
                metrics.count_refusal(refused);
            }
            answer
        })
    }

    fn events(&self) -> broadcast::Receiver<ServiceEvent> {
        self.events.subscribe()
    }

    fn serves_endpoint(&self, name: &str) -> bool {
        self.core.policy.borrow().profile(name).is_some()
    }

    /// The `x-mcp-header` parameters of the tool as the gateway lists it at `endpoint`: a
    /// profile's tool by its new name, without the arguments the operator fixed (its
    /// clients send none); an invalid annotation marks none (the transport then checks no
    /// `Mcp-Param-*` for it).
    fn header_params(&self, tool: &str, endpoint: Option<&str>) -> Vec<(String, String)> {
        let snapshot = self.core.runtime.snapshot();
        let access = self.core.policy.borrow().clone();
        let (exported, fixed) = match endpoint {
            None => (tool.to_owned(), Vec::new()),
            Some(name) => match access
                .profile(name)
                .and_then(|profile| profile.called_tool(tool, &snapshot))
            {
                Some(called) => called,
                None => return Vec::new(),
            },
        };
        snapshot
            .tool(&exported)
            .and_then(|tool| switchboard_protocol::headers::header_params(tool.input_schema()).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, argument)| !fixed.contains(argument))
            .collect()
    }
}

impl Upstreams {
    /// The refusal of a `tools/call` over a rate limit (`rate_limits.rs`), if it is one.
    async fn over_rate_limit(
        &self,
        request: &ServiceRequest,
        context: &RequestContext,
    ) -> Option<ErrorObject> {
        let (Some(limits), ServiceRequest::CallTool(call)) = (&self.rate_limits, request) else {
            return None;
        };
        let refused = limits
            .admit(&context.client.identity, &call.name)
            .await
            .err()?;
        tracing::debug!(limit = %refused.limit, tool = %call.name, "call refused: {refused}");
        Some(refused.error())
    }

    /// The audit record of `request` before it is answered, for the calls the log
    /// records (`None` for the rest).
    fn audit_start(
        &self,
        request: &ServiceRequest,
        context: &RequestContext,
    ) -> Option<AuditStart> {
        let (name, digest) = match request {
            ServiceRequest::CallTool(call) => (
                Some(call.name.clone()),
                audit::arguments_digest(&Value::Object(call.arguments.clone())),
            ),
            ServiceRequest::GetPrompt(get) => (
                Some(get.name.clone()),
                audit::arguments_digest(&json!(get.arguments)),
            ),
            ServiceRequest::ReadResource(read) => {
                (None, audit::arguments_digest(&json!({ "uri": read.uri })))
            }
            _ => return None,
        };
        let method = request.method();
        let server = request_server(&self.runtime.snapshot(), request);
        Some(AuditStart {
            began: tokio::time::Instant::now(),
            record: audit::AuditRecord {
                at: std::time::SystemTime::now(),
                who: audit::AuditWho::of(&context.client.identity)
                    .at_profile(context.client.endpoint.as_deref()),
                method,
                server,
                name,
                arguments_digest: digest,
                outcome: audit::AuditOutcome::Ok,
                duration: Duration::ZERO,
            },
        })
    }

    /// The request's answer from the servers. Each branch's work is boxed: its future is
    /// kilobytes, and inline it would size (and be copied with) every request's future,
    /// whichever branch the request takes.
    async fn answer(
        &self,
        request: ServiceRequest,
        context: RequestContext,
        withheld: &guard::WithheldNote,
    ) -> Answer {
        let is_list = matches!(
            request,
            ServiceRequest::ListTools(_)
                | ServiceRequest::ListPrompts(_)
                | ServiceRequest::ListResources(_)
                | ServiceRequest::ListResourceTemplates(_)
        );
        if is_list && !*self.started.borrow() {
            self.listed_early.store(true, Ordering::Relaxed);
        }
        let snapshot = self.runtime.snapshot();
        match request {
            ServiceRequest::ListTools(_) => {
                let tools: Vec<Value> = snapshot.tools.iter().map(tool_definition).collect();
                Ok(json!({ "tools": tools }))
            }
            ServiceRequest::ListPrompts(_) => {
                Ok(json!({ "prompts": prompt_definitions(&snapshot) }))
            }
            ServiceRequest::ListResources(_) => {
                Ok(json!({ "resources": items(&snapshot.resources, "uri") }))
            }
            ServiceRequest::ListResourceTemplates(_) => Ok(json!({
                "resourceTemplates": items(&snapshot.resource_templates, "uriTemplate")
            })),
            ServiceRequest::CallTool(call) => {
                drop(snapshot);
                Box::pin(self.call(call, context, withheld)).await
            }
            ServiceRequest::GetPrompt(get) => {
                let Some(route) = prompt_routes(&snapshot).remove(&get.name) else {
                    return Err(ErrorObject::new(
                        INVALID_PARAMS,
                        format!(
                            "unknown prompt `{}`: this gateway has {} prompts (prompts/list shows them)",
                            get.name,
                            snapshot.prompts.len()
                        ),
                    ));
                };
                drop(snapshot);
                let _waiting = self.waiting_on(&route.server, &context);
                let own = self.caller_session(&route.server, &context).await?;
                let arguments = get.arguments.map(Value::Object);
                let mut params = json!({ "name": route.tool });
                if let Some(arguments) = &arguments {
                    params["arguments"] = arguments.clone();
                }
                let answer = Box::pin(with_input_rounds(&context, get.input, |for_client| async {
                    if let Some(session) = &own {
                        let method = switchboard_protocol::methods::PROMPTS_GET;
                        return on_own_session(session, method, params.clone(), for_client).await;
                    }
                    match for_client {
                        Some(for_client) => {
                            let request = ClientRequest {
                                method: switchboard_protocol::methods::PROMPTS_GET,
                                params: params.clone(),
                                for_client,
                            };
                            self.runtime
                                .server(&route.server)
                                .request_for_client(request)
                                .await
                        }
                        None => {
                            self.runtime
                                .server(&route.server)
                                .get_prompt(&route.tool, arguments.clone())
                                .await
                        }
                    }
                }))
                .await
                .map_err(|failure| self.relayed_error(failure))?;
                match &self.guard {
                    Some(guard) => {
                        let secrets = self.runtime.secrets();
                        guard.prompt(&route.server, &secrets.redact(&route.tool), answer)
                    }
                    None => Ok(answer),
                }
            }
            ServiceRequest::ReadResource(read) => {
                let Some(server) = resource_owner(&snapshot, &read.uri) else {
                    return Err(resource_not_found(&read.uri));
                };
                // Named in the operator's log only when the server listed it: a URI made
                // from a template may carry what the client asked for.
                let listed = snapshot
                    .resources
                    .iter()
                    .any(|r| r.server == server && r.item.uri == read.uri);
                drop(snapshot);
                let _waiting = self.waiting_on(&server, &context);
                let own = self.caller_session(&server, &context).await?;
                let answer = Box::pin(with_input_rounds(
                    &context,
                    read.input,
                    |for_client| async {
                        if let Some(session) = &own {
                            let method = switchboard_protocol::methods::RESOURCES_READ;
                            let params = json!({ "uri": read.uri });
                            return on_own_session(session, method, params, for_client).await;
                        }
                        match for_client {
                            Some(for_client) => {
                                let request = ClientRequest {
                                    method: switchboard_protocol::methods::RESOURCES_READ,
                                    params: json!({ "uri": read.uri }),
                                    for_client,
                                };
                                self.runtime
                                    .server(&server)
                                    .request_for_client(request)
                                    .await
                            }
                            None => self.runtime.server(&server).read_resource(&read.uri).await,
                        }
                    },
                ))
                .await
                .map_err(|failure| self.relayed_error(failure))?;
                match &self.guard {
                    Some(guard) => {
                        let secrets = self.runtime.secrets();
                        let named = listed.then(|| secrets.redact(&read.uri).into_owned());
                        guard.resource(&server, &read.uri, named, answer)
                    }
                    None => Ok(answer),
                }
            }
            ServiceRequest::Complete(params) => Box::pin(self.complete(&snapshot, params)).await,
            ServiceRequest::Subscribe { uri } => {
                let Some(server) = subscription_owner(&snapshot, &uri) else {
                    return Err(resource_not_found(&uri));
                };
                drop(snapshot);
                Box::pin(self.subscribe(&server, &uri)).await
            }
            ServiceRequest::Unsubscribe { uri } => {
                let Some(server) = subscription_owner(&snapshot, &uri) else {
                    return Ok(json!({}));
                };
                drop(snapshot);
                Box::pin(self.unsubscribe(&server, &uri)).await
            }
        }
    }

    /// Follows `uri` for one more client: the first subscribes upstream.
    async fn subscribe(&self, server: &str, uri: &str) -> Answer {
        let first = {
            let mut followers = lock(&self.subscriptions);
            let count = followers.entry(uri.to_owned()).or_default();
            *count += 1;
            *count == 1
        };
        if !first {
            return Ok(json!({}));
        }
        let refused = match self.runtime.server(server).subscribe_resource(uri).await {
            Ok(true) => return Ok(json!({})),
            Ok(false) => ErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "the server `{server}` behind this gateway offers no subscriptions to \
                     `{uri}`; read it again to see changes"
                ),
            ),
            Err(error) => self.upstream_error(error),
        };
        self.release(uri);
        Err(refused)
    }

    /// One client less follows `uri`: the last unsubscribes upstream.
    async fn unsubscribe(&self, server: &str, uri: &str) -> Answer {
        if self.release(uri) {
            self.runtime
                .server(server)
                .unsubscribe_resource(uri)
                .await
                .map_err(|error| self.upstream_error(error))?;
        }
        Ok(json!({}))
    }

    /// Counts one follower of `uri` off; true when it was the last.
    fn release(&self, uri: &str) -> bool {
        let mut followers = lock(&self.subscriptions);
        match followers.get_mut(uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                followers.remove(uri);
                true
            }
            None => false,
        }
    }

    /// `completion/complete`, sent to the server of the prompt or resource it names.
    async fn complete(&self, snapshot: &Snapshot, params: Map<String, Value>) -> Answer {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
        let (server, upstream_ref) = match kind {
            "ref/prompt" => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
                let Some(route) = prompt_routes(snapshot).remove(name) else {
                    return Err(ErrorObject::new(
                        INVALID_PARAMS,
                        format!("unknown prompt `{name}` in the completion's `ref`"),
                    ));
                };
                (
                    route.server,
                    json!({ "type": "ref/prompt", "name": route.tool }),
                )
            }
            "ref/resource" => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
                let Some(server) = resource_owner(snapshot, uri) else {
                    return Err(resource_not_found(uri));
                };
                (server, reference.clone())
            }
            other => {
                return Err(ErrorObject::new(
                    INVALID_PARAMS,
                    format!(
                        "completion `ref.type` must be `ref/prompt` or `ref/resource`, not `{other}`"
                    ),
                ));
            }
        };
        let mut upstream = params;
        upstream.insert("ref".into(), upstream_ref);
        match self
            .runtime
            .server(&server)
            .complete_raw(Value::Object(upstream))
            .await
        {
            Ok(Some(result)) => Ok(result),
            // The server offers no completions: no values.
            Ok(None) => Ok(json!({ "completion": { "values": [], "hasMore": false } })),
            Err(error) => Err(self.upstream_error(error)),
        }
    }

    /// `tools/call`. A 2026-07-28 client's call is made for it: its capabilities reach the
    /// server, an `input_required` result comes back to it as the server sent it, and its
    /// retry's `inputResponses` and `requestState` go to the same server (the tool's name
    /// routes it) byte for byte; the gateway keeps no state between the rounds.
    async fn call(
        &self,
        call: CallTool,
        context: RequestContext,
        withheld: &guard::WithheldNote,
    ) -> Answer {
        let CallTool {
            name,
            arguments,
            input,
        } = call;
        let snapshot = self.runtime.snapshot();
        let Some(tool) = snapshot.tool(&name) else {
            return Err(match snapshot.held_tool(&name) {
                Some(held) => held_tool(held, self.error_detail),
                None => unknown_tool(&name, snapshot.tools.len()),
            });
        };
        let server = tool.server().to_owned();
        let wire_name = tool.wire_name().to_owned();
        let _waiting = self.waiting_on(&server, &context);
        let tools = snapshot.tools.len();
        drop(snapshot);
        // Channels only for what the client asked to hear: its progress, when it sent a
        // token; the call's log messages, when it asked for a level (the others hear the
        // servers' messages as the gateway's own).
        let (progress_tx, mut progress_rx) =
            heard_if::<ProgressParams>(context.progress_token().is_some());
        let (logs_tx, mut logs_rx) = heard_if::<Value>(context.client.log_level.is_some());
        let upstream = self
            .traces
            .as_ref()
            .map(|traces| traces.upstream(&server, &wire_name, &self.runtime.secrets()));
        let tool_context = ToolContext {
            cancel: context.cancel.clone(),
            progress: progress_tx,
            timeout: None,
            log_messages: logs_tx,
            trace: upstream
                .as_ref()
                .and_then(traces::UpstreamSpan::trace_context),
            session: self.caller_session(&server, &context).await?,
        };
        let pass_log = |params: Value| {
            let context = &context;
            let message = call_log(&server, &params);
            async move {
                if let Some(message) = message {
                    context.log(message).await;
                }
            }
        };
        let forward = |progress: ProgressParams| {
            let context = &context;
            async move {
                context
                    .progress(
                        progress.progress,
                        progress.total,
                        progress.message.as_deref(),
                    )
                    .await;
            }
        };
        let arguments = Value::Object(arguments);
        let calling = with_input_rounds(&context, input, |for_client| async {
            let arguments = arguments.clone();
            let tool_context = tool_context.clone();
            match for_client {
                Some(for_client) => {
                    self.runtime
                        .call_tool_for_client(&name, arguments, for_client, tool_context)
                        .await
                }
                None => {
                    self.runtime
                        .call_tool_raw(&name, arguments, tool_context)
                        .await
                }
            }
        });
        let mut running = std::pin::pin!(calling);
        let outcome = loop {
            tokio::select! {
                output = &mut running => break output,
                Some(progress) = next_heard(&mut progress_rx) => forward(progress).await,
                Some(params) = next_heard(&mut logs_rx) => pass_log(params).await,
            }
        };
        // Progress and log messages that arrived with the result go out before it.
        while let Some(Ok(progress)) = progress_rx.as_mut().map(mpsc::Receiver::try_recv) {
            forward(progress).await;
        }
        while let Some(Ok(params)) = logs_rx.as_mut().map(mpsc::Receiver::try_recv) {
            pass_log(params).await;
        }
        let answer = match outcome {
            Ok(result) => Ok(result),
            Err(error) => self.call_failed(error, &name, tools),
        };
        if let Some(span) = upstream {
            span.finish(&answer);
        }
        let result = answer?;
        Ok(match &self.guard {
            Some(guard) => {
                let secrets = self.runtime.secrets();
                guard.tool_result(&server, &secrets.redact(&wire_name), result, withheld)
            }
            None => result,
        })
    }

    /// A `tools/call` that got no result from its server, as the client sees it.
    fn call_failed(&self, error: Relayed, name: &str, tools: usize) -> Answer {
        match error {
            Relayed::Client(error) => Err(error),
            // Refused before anything was sent: a tool execution error the model can act on,
            // as MCP asks for input validation errors.
            Relayed::Upstream(ServerRequestError::InvalidArguments { detail, .. }) => Ok(json!({
                "content": [{"type": "text", "text": detail}],
                "isError": true,
            })),
            // The snapshot changed between the lookup and the call.
            Relayed::Upstream(ServerRequestError::UnknownTool { .. }) => {
                Err(unknown_tool(name, tools))
            }
            Relayed::Upstream(other) => Err(self.upstream_error(other)),
        }
    }
}

/// A channel for what a call passes on to its client, when the client is to hear it
/// (`None` both ends otherwise: nothing allocated for what nobody hears).
fn heard_if<T>(heard: bool) -> (Option<mpsc::Sender<T>>, Option<mpsc::Receiver<T>>) {
    if !heard {
        return (None, None);
    }
    let (sender, receiver) = mpsc::channel(PROGRESS_BUFFER);
    (Some(sender), Some(receiver))
}

/// The next item of a channel made by [`heard_if`]; never, when there is none.
async fn next_heard<T>(receiver: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// `prompts/get` or `resources/read` sent on a caller's own session (`credentials.rs`),
/// for that client (its capabilities and its retry's input passed on, as
/// [`switchboard_runtime::ServerHandle::request_for_client`] does) or plainly.
async fn on_own_session(
    session: &switchboard_session::Session,
    method: &'static str,
    params: Value,
    for_client: Option<switchboard_session::ForClient>,
) -> Result<Value, ServerRequestError> {
    let options = switchboard_session::CallOptions {
        for_client,
        ..switchboard_session::CallOptions::default()
    };
    let answer = match options.for_client.is_some() {
        true => session.request_for_client(method, params, &options).await,
        false => session.request(method, Some(params), &options).await,
    };
    Ok(answer?)
}

/// How a request ended, as its client sees it (the audit log's and the spans' outcome).
fn outcome_of(answer: &Answer) -> audit::AuditOutcome {
    match answer {
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => {
            audit::AuditOutcome::ToolError
        }
        Ok(_) => audit::AuditOutcome::Ok,
        Err(error) if error.code == codes::RESULT_WITHHELD => audit::AuditOutcome::Withheld,
        Err(error) => audit::AuditOutcome::Error(error.code),
    }
}

/// The server a request goes to, when it names one the snapshot knows.
fn request_server(snapshot: &Snapshot, request: &ServiceRequest) -> Option<String> {
    match request {
        ServiceRequest::CallTool(call) => snapshot.tool(&call.name).map(|t| t.server().to_owned()),
        ServiceRequest::GetPrompt(get) => {
            prompt_routes(snapshot).remove(&get.name).map(|r| r.server)
        }
        ServiceRequest::ReadResource(read) => resource_owner(snapshot, &read.uri),
        _ => None,
    }
}

/// A call's audit record, begun before it is answered.
struct AuditStart {
    began: tokio::time::Instant,
    record: audit::AuditRecord,
}

impl AuditStart {
    /// The record with how the call ended (a tool result the guard withheld is `withheld`,
    /// not the tool's error) and how long it took.
    fn finish(self, answer: &Answer, withheld: &guard::WithheldNote) -> audit::AuditRecord {
        let outcome = if withheld.withheld() {
            audit::AuditOutcome::Withheld
        } else {
            outcome_of(answer)
        };
        audit::AuditRecord {
            outcome,
            duration: self.began.elapsed(),
            ..self.record
        }
    }
}

/// Passes the servers' log messages (named after their server) and resource updates to the
/// clients.
async fn pass_notices(
    runtime: Runtime,
    audiences: Arc<Audiences>,
    events: broadcast::Sender<ServiceEvent>,
) {
    let mut notices = runtime.notices();
    loop {
        let notice = match notices.recv().await {
            Ok(notice) => notice,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "server log messages or resource updates were missed"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        // What a server says is what a client gets: the servers' secrets hidden, as in
        // everything else the gateway sends.
        let secrets = runtime.secrets();
        let event = match notice.kind {
            NoticeKind::ResourceUpdated { uri } => ServiceEvent::ResourceUpdated {
                uri: secrets.redact(&uri).into_owned(),
            },
            NoticeKind::Log {
                level,
                logger,
                mut data,
            } => {
                secrets.redact_json(&mut data);
                let logger = logger.map(|logger| secrets.redact(&logger).into_owned());
                let Some(message) = server_log(&notice.server, &level, logger.as_deref(), data)
                else {
                    continue;
                };
                match audiences.of_server(&notice.server) {
                    Some(audience) => ServiceEvent::Log { message, audience },
                    None => {
                        tracing::info!(
                            server = %notice.server,
                            level = message.level.as_str(),
                            data = %message.data,
                            "a server's log message, kept from the clients: it may be about \
                             any of several clients' requests"
                        );
                        continue;
                    }
                }
            }
            _ => continue,
        };
        let _ = events.send(event);
    }
}

/// A server's log message as the gateway passes it on: its logger named after the server
/// (`<server>/<logger>`); `None` (said in the log) for a level MCP does not have.
fn server_log(server: &str, level: &str, logger: Option<&str>, data: Value) -> Option<LogMessage> {
    let Some(level) = LogLevel::parse(level) else {
        tracing::debug!(server, level = %PeerText(level), "a log message with an unknown level");
        return None;
    };
    let logger = match logger {
        Some(logger) => format!("{server}/{logger}"),
        None => server.to_owned(),
    };
    Some(LogMessage {
        level,
        logger: Some(logger),
        data,
    })
}

/// A call's log message (`notifications/message` params) as the gateway passes it on.
fn call_log(server: &str, params: &Value) -> Option<LogMessage> {
    let level = params.get("level").and_then(Value::as_str).unwrap_or("");
    let logger = params.get("logger").and_then(Value::as_str);
    let data = params.get("data").cloned().unwrap_or(Value::Null);
    server_log(server, level, logger, data)
}

/// Rounds of input a legacy client's request may take at most: a 2026-07-28 server asking
/// for more is answered with an error.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// Inputs one round may ask a legacy client for at most (each is a question to a person or
/// a model): a server asking for more is answered with an error.
pub const MAX_INPUT_REQUESTS: usize = 16;

/// How a request made for a client failed.
enum Relayed {
    /// Upstream (or on the way there).
    Upstream(ServerRequestError),
    /// Asking the client for the input the server wanted.
    Client(ErrorObject),
}

/// Sends a request for `context`'s client: `send` gets what goes with it (`None`: the
/// gateway's own session's terms). A 2026-07-28 client's request goes once, with its
/// capabilities and its retry's input; an `input_required` result is its to fulfil. A
/// legacy client's request goes with its capabilities too, and when a 2026-07-28 server
/// answers `input_required`, the gateway asks this client during the request (its
/// questions go on this request's channel) and retries with the answers, at most
/// [`MAX_INPUT_ROUNDS`] times.
async fn with_input_rounds<F, Fut>(
    context: &RequestContext,
    input: InputRound,
    send: F,
) -> Result<Value, Relayed>
where
    F: Fn(Option<ForClient>) -> Fut,
    Fut: std::future::Future<Output = Result<Value, ServerRequestError>>,
{
    let capabilities = Some((*context.client.capabilities).clone());
    // The level the client wants goes with the request (a 2026-07-28 server reads it).
    let log_level = context
        .client
        .log_level
        .map(|level| level.as_str().to_owned());
    if context.client.era == Era::Modern {
        let for_client = ForClient {
            capabilities,
            input_responses: input.responses.map(Value::Object),
            request_state: input.request_state,
            log_level,
        };
        return send(Some(for_client)).await.map_err(Relayed::Upstream);
    }
    if context.session().is_none() {
        // Nobody to ask: the session's own host answers, as for any caller.
        return send(None).await.map_err(Relayed::Upstream);
    }
    let mut for_client = ForClient {
        capabilities,
        log_level,
        ..ForClient::default()
    };
    for _round in 0..=MAX_INPUT_ROUNDS {
        let result = send(Some(for_client.clone()))
            .await
            .map_err(Relayed::Upstream)?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        for_client.input_responses = Some(ask_for_input(context, &result).await?);
        for_client.request_state = result
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    Err(Relayed::Client(ErrorObject::new(
        INTERNAL_ERROR,
        format!(
            "the server still wanted input after {MAX_INPUT_ROUNDS} rounds of asking the client; \
             the request was given up"
        ),
    )))
}

/// Asks the client each of an `input_required` result's `inputRequests`; the answers by
/// key, as `inputResponses`.
async fn ask_for_input(context: &RequestContext, result: &Value) -> Result<Value, Relayed> {
    let requests = result.get("inputRequests").and_then(Value::as_object);
    if let Some(requests) = requests
        && requests.len() > MAX_INPUT_REQUESTS
    {
        return Err(Relayed::Client(ErrorObject::new(
            INTERNAL_ERROR,
            format!(
                "the server asked for {} inputs in one round, more than the {MAX_INPUT_REQUESTS} \
                 a client is asked at once; the request was given up",
                requests.len()
            ),
        )));
    }
    let mut responses = Map::new();
    for (key, request) in requests.into_iter().flatten() {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let Some(method) = switchboard_server::core::ClientMethod::from_method(method) else {
            return Err(Relayed::Client(ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "the server asked for `{}` input, which no client can be asked for",
                    PeerText(method)
                ),
            )));
        };
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        let answer = context
            .ask_client(method, params)
            .await
            .map_err(|error| Relayed::Client(error.to_error_object()))?;
        responses.insert(key.clone(), answer);
    }
    Ok(Value::Object(responses))
}

/// "Resource not found" (-32002 in the legacy era; the core gives modern clients -32602).
fn resource_not_found(uri: &str) -> ErrorObject {
    ErrorObject {
        code: switchboard_protocol::error_codes::RESOURCE_NOT_FOUND_LEGACY,
        message: format!("no server behind this gateway offers the resource `{uri}`"),
        data: Some(json!({ "uri": uri })),
    }
}

/// A tool as the gateway lists it: its server's definition (title, output schema,
/// annotations, `_meta`, …) under its exported name, with the description as bridged. The
/// input schema is the server's own, keywords and all (`$schema`, `$defs`, `$anchor`, as
/// JSON Schema 2020-12 clients expect them kept); arguments are checked against its
/// normalised equivalent, which is listed only when the server sent no object schema.
fn tool_definition(tool: &switchboard_runtime::BridgedTool) -> Value {
    let mut definition = match tool.definition() {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    definition.insert("name".into(), Value::String(tool.name().to_owned()));
    definition.insert(
        "description".into(),
        Value::String(tool.description().to_owned()),
    );
    if !definition.get("inputSchema").is_some_and(Value::is_object) {
        definition.insert("inputSchema".into(), tool.input_schema().clone());
    }
    Value::Object(definition)
}

/// The lists a client can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Catalog {
    Tools = 0,
    Prompts = 1,
    Resources = 2,
}

impl Catalog {
    const ALL: [Catalog; 3] = [Catalog::Tools, Catalog::Prompts, Catalog::Resources];

    fn changed_event(self) -> ServiceEvent {
        match self {
            Catalog::Tools => ServiceEvent::ToolsChanged,
            Catalog::Prompts => ServiceEvent::PromptsChanged,
            Catalog::Resources => ServiceEvent::ResourcesChanged,
        }
    }

    /// Changes whenever an entry of this list is added, removed or redefined.
    fn fingerprint(self, snapshot: &Snapshot) -> u64 {
        let mut hasher = DefaultHasher::new();
        match self {
            Catalog::Tools => {
                for tool in &snapshot.tools {
                    tool.name().hash(&mut hasher);
                    tool.description().hash(&mut hasher);
                    tool.input_schema().to_string().hash(&mut hasher);
                    tool.definition().to_string().hash(&mut hasher);
                }
            }
            Catalog::Prompts => prompt_definitions(snapshot).to_string().hash(&mut hasher),
            Catalog::Resources => {
                items(&snapshot.resources, "uri")
                    .to_string()
                    .hash(&mut hasher);
                items(&snapshot.resource_templates, "uriTemplate")
                    .to_string()
                    .hash(&mut hasher);
            }
        }
        hasher.finish()
    }
}

/// Every server's items as one JSON array, as the servers described them; an item whose
/// `key` (its URI or URI template) an earlier server already listed is left out, since
/// reads go to the first.
fn items<T: serde::Serialize>(items: &[switchboard_runtime::FromServer<T>], key: &str) -> Value {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for entry in items {
        let Ok(item) = serde_json::to_value(&entry.item) else {
            continue;
        };
        let identity = item.get(key).map(Value::to_string).unwrap_or_default();
        if seen.insert(identity) {
            out.push(item);
        } else {
            tracing::debug!(server = %entry.server, item = %item[key], "left out: an earlier server lists it");
        }
    }
    Value::Array(out)
}

/// Exported prompt names (named as the snapshot names tools: `<server>__<prompt>`, or the
/// prompt's own name when the runtime does not prefix) → (server, prompt name).
fn prompt_routes(snapshot: &Snapshot) -> std::collections::BTreeMap<String, ToolRoute> {
    let routes: Vec<ToolRoute> = snapshot
        .prompts
        .iter()
        .map(|entry| ToolRoute {
            server: entry.server.clone(),
            tool: entry.item.name.clone(),
        })
        .collect();
    snapshot.naming.assign(&routes)
}

/// The prompts under their exported names.
fn prompt_definitions(snapshot: &Snapshot) -> Value {
    let routes = prompt_routes(snapshot);
    let exported: HashMap<&ToolRoute, &String> =
        routes.iter().map(|(name, route)| (route, name)).collect();
    let mut prompts = Vec::new();
    for entry in &snapshot.prompts {
        let route = ToolRoute {
            server: entry.server.clone(),
            tool: entry.item.name.clone(),
        };
        let Some(name) = exported.get(&route) else {
            tracing::debug!(server = %entry.server, prompt = %entry.item.name, "left out: an earlier server's prompt has the same name");
            continue;
        };
        if let Ok(mut prompt) = serde_json::to_value(&entry.item) {
            prompt["name"] = Value::String((*name).clone());
            prompts.push(prompt);
        }
    }
    Value::Array(prompts)
}

impl Upstreams {
    /// A failed request to an upstream server as the client sees it: the server's own
    /// JSON-RPC error unchanged, else one of the gateway's [`codes`] naming the server,
    /// told as [`ErrorDetail`] says. The operator's log gets the whole account (the
    /// servers' secrets hidden there too). Secrets in what the client gets are hidden by
    /// `handle`, like everything else it sends.
    fn upstream_error(&self, error: ServerRequestError) -> ErrorObject {
        if let ServerRequestError::Session(SessionError::Rpc { error, .. }) = error {
            return error;
        }
        let full = error.to_string();
        if !matches!(
            error,
            ServerRequestError::UnknownTool { .. } | ServerRequestError::InvalidArguments { .. }
        ) {
            tracing::warn!(
                error = %self.runtime.secrets().redact(&full),
                "a request through the gateway failed"
            );
        }
        let message = match self.error_detail {
            ErrorDetail::Full => full,
            ErrorDetail::Brief => brief_failure(&error),
        };
        let (code, server, waited) = match error {
            ServerRequestError::Session(SessionError::Timeout { server, after, .. }) => {
                (codes::UPSTREAM_TIMEOUT, server.to_string(), Some(after))
            }
            ServerRequestError::Session(
                SessionError::Closed { server, .. }
                | SessionError::Transport { server, .. }
                | SessionError::Restarted { server, .. },
            ) => (codes::UPSTREAM_UNAVAILABLE, server.to_string(), None),
            ServerRequestError::NotConfigured { server }
            | ServerRequestError::Unavailable { server, .. } => {
                (codes::UPSTREAM_UNAVAILABLE, server, None)
            }
            ServerRequestError::Session(
                SessionError::MalformedAnswer { server, .. }
                | SessionError::AnswerTooLarge { server, .. }
                | SessionError::Protocol { server, .. },
            ) => (codes::UPSTREAM_BAD_ANSWER, server.to_string(), None),
            ServerRequestError::UnknownTool { .. }
            | ServerRequestError::InvalidArguments { .. } => {
                return ErrorObject::new(INVALID_PARAMS, message);
            }
            _ => return ErrorObject::new(INTERNAL_ERROR, message),
        };
        let mut data = json!({ "server": server });
        if let Some(waited) = waited {
            data["waitedMs"] = json!(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX));
        }
        ErrorObject {
            code,
            message,
            data: Some(data),
        }
    }

    /// How a request made for a client failed, as that client sees it.
    fn relayed_error(&self, failure: Relayed) -> ErrorObject {
        match failure {
            Relayed::Upstream(error) => self.upstream_error(error),
            Relayed::Client(error) => error,
        }
    }
}

/// An upstream failure told as [`ErrorDetail::Brief`]: which server, what kind of failure
/// and what to do, built from the error's kind alone (nothing the server or its process
/// wrote, no address).
fn brief_failure(error: &ServerRequestError) -> String {
    const SEE_LOG: &str = "the gateway's log has the details";
    let session = match error {
        ServerRequestError::NotConfigured { server } => {
            return format!("no server `{server}` is configured behind this gateway");
        }
        ServerRequestError::Unavailable { server, .. } => {
            return format!(
                "server `{server}` behind this gateway is not available right now; try again \
                 later ({SEE_LOG})"
            );
        }
        // The gateway's own words about the client's own request.
        ServerRequestError::UnknownTool { .. } | ServerRequestError::InvalidArguments { .. } => {
            return error.to_string();
        }
        ServerRequestError::Session(session) => session,
        _ => return format!("the gateway could not complete the request ({SEE_LOG})"),
    };
    match session {
        SessionError::Timeout {
            server,
            method,
            after,
            ..
        } => format!(
            "server `{server}` behind this gateway did not answer `{method}` within {after:?}; \
             the request was cancelled"
        ),
        SessionError::Restarted { server, method, .. } => format!(
            "server `{server}` behind this gateway restarted, or its connection broke, while \
             `{method}` was in flight; it was not retried because it may have had effects \
             ({SEE_LOG})"
        ),
        SessionError::Closed { server, .. } => {
            format!("server `{server}` behind this gateway closed its connection ({SEE_LOG})")
        }
        SessionError::Transport {
            server,
            method,
            error,
        } => {
            let status = error
                .http_status()
                .map(|code| format!(" (HTTP {code})"))
                .unwrap_or_default();
            format!(
                "server `{server}` behind this gateway gave no answer to `{method}`{status} ({SEE_LOG})"
            )
        }
        SessionError::Cancelled { server, method, .. } => {
            format!("`{method}` on server `{server}` behind this gateway was cancelled")
        }
        SessionError::MalformedAnswer { server, method, .. }
        | SessionError::Protocol { server, method, .. } => format!(
            "server `{server}` behind this gateway answered `{method}` with a message that \
             breaks the protocol ({SEE_LOG})"
        ),
        SessionError::AnswerTooLarge {
            server,
            method,
            limit,
            ..
        } => format!(
            "server `{server}` behind this gateway answered `{method}` with a message over \
             the {limit}-byte limit; ask for less"
        ),
        _ => format!("a server behind this gateway failed the request ({SEE_LOG})"),
    }
}

/// `answer` with `secrets` hidden in its result, or in its error's message and data.
fn hide_in_answer(secrets: &Secrets, answer: Answer) -> Answer {
    if secrets.is_empty() {
        return answer;
    }
    match answer {
        Ok(mut result) => {
            secrets.redact_json(&mut result);
            Ok(result)
        }
        Err(mut error) => {
            error.message = secrets.redact(&error.message).into_owned();
            if let Some(data) = &mut error.data {
                secrets.redact_json(data);
            }
            Err(error)
        }
    }
}

/// The server that listed `uri`, else the first whose template's fixed prefix it starts with.
fn resource_owner(snapshot: &Snapshot, uri: &str) -> Option<String> {
    if uri.is_empty() {
        return None;
    }
    if let Some(entry) = snapshot.resources.iter().find(|r| r.item.uri == uri) {
        return Some(entry.server.clone());
    }
    snapshot
        .resource_templates
        .iter()
        .find(|t| {
            let template = &t.item.uri_template;
            let prefix = template.split('{').next().unwrap_or("");
            !prefix.is_empty() && uri.starts_with(prefix)
        })
        .map(|t| t.server.clone())
}

/// The server a subscription to `uri` goes to: the resource's owner, or else, when only
/// one server behind the gateway has resources, that one (a server may accept
/// subscriptions to resources it does not list, and there is no one else to ask).
fn subscription_owner(snapshot: &Snapshot, uri: &str) -> Option<String> {
    resource_owner(snapshot, uri).or_else(|| {
        let mut servers = snapshot.resources.iter().map(|entry| &entry.server).chain(
            snapshot
                .resource_templates
                .iter()
                .map(|entry| &entry.server),
        );
        let first = servers.next()?;
        servers.all(|server| server == first).then(|| first.clone())
    })
}

/// The error for a `tools/call` of a tool the lock holds: why, and how to accept it (for a
/// remote client, [`ErrorDetail::Brief`], without the operator's paths and commands).
fn held_tool(held: &switchboard_runtime::HeldTool, detail: ErrorDetail) -> ErrorObject {
    let message = match detail {
        ErrorDetail::Full => held.message(),
        ErrorDetail::Brief => format!(
            "`{}` is held by this gateway's tool lock: {}; its operator accepts it with \
             `switchboard scan --update`",
            held.name,
            held.hold.reason()
        ),
    };
    ErrorObject {
        code: codes::TOOL_HELD,
        message,
        data: Some(json!({
            "server": held.server,
            "tool": held.tool,
            "reason": held.hold.reason(),
        })),
    }
}

/// The error for a `tools/call` whose name the gateway does not know.
fn unknown_tool(name: &str, tools: usize) -> ErrorObject {
    let message = if name.is_empty() {
        "tools/call needs `params.name`, the tool's name".to_owned()
    } else {
        format!("unknown tool `{name}`: this gateway has {tools} tools (tools/list shows them)")
    };
    ErrorObject::new(INVALID_PARAMS, message)
}
