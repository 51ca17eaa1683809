//! The gateway: every server a [`Runtime`] operates, served to one MCP client as one server.
//!
//! The client speaks the `initialize` protocol family (2024-11-05 … 2025-11-25); a
//! `server/discover` probe is answered "method not found", which sends modern clients to
//! `initialize`. `initialize` waits for the servers' start a little (bounded by
//! [`GatewayOptions::initialize_wait`]) so that its `instructions` carry theirs. The gateway
//! offers tools, prompts and resources:
//! - `tools/list` returns the runtime's snapshot (exported names `<server>__<tool>`, or the
//!   tools' own names when the runtime was built with
//!   [`Naming::Unprefixed`](switchboard_runtime::naming::Naming), schemas as bridged). It
//!   waits for the servers' start (bounded by [`GatewayOptions::startup_wait`]), so a
//!   client that lists right after `initialize` sees every server that came up; later
//!   changes are announced with `notifications/tools/list_changed`.
//! - `tools/call` goes through [`Runtime::call_tool_raw`] (routing, argument validation
//!   against the bridged schema, deadlines, waiting for a restarting server), not through
//!   the agent-facing [`Tool`]/`ToolOutput` conversion: the server's result passes
//!   unchanged (`isError`, `structuredContent`, `_meta`, every content block), and so does
//!   its JSON-RPC error (code, message, data). Arguments that do not fit the schema get a
//!   result with `isError` saying why (nothing is sent). A timeout, a server that closed or
//!   is unavailable, a transport failure and an answer that cannot be passed on are
//!   JSON-RPC errors with the gateway's [`codes`], naming the server (and, for a timeout,
//!   how long the gateway waited). `notifications/cancelled` from the client cancels the
//!   call upstream and its answer is dropped, as the protocol asks; the upstream server's
//!   progress is forwarded under the client's progress token.
//! - `prompts/list` names each prompt as the snapshot names tools (`<server>__<prompt>`, or
//!   its own name unprefixed); `prompts/get` goes to its server. `resources/list` and
//!   `resources/templates/list` pass URIs through unchanged (a URI or template an earlier
//!   server already listed is left out);
//!   `resources/read` goes to the server that listed the URI, else to the first server with
//!   a template whose fixed prefix the URI starts with, else -32002. Server errors are
//!   passed through as they are; other failures get the gateway's [`codes`] as for tools.
//! - Each list is announced with its `list_changed` notification when it changes after
//!   the client listed it.
//! - An unknown tool is a JSON-RPC error (-32602) naming it; a frame that is not JSON-RPC
//!   gets -32700/-32600, with the frame's own id when it is an object whose `id` can be
//!   read (and no request in flight uses it), else with `id: null`; nothing the client
//!   sends is silently dropped.
//!
//! # Load and the end of the connection
//!
//! The gateway works on at most [`MAX_IN_FLIGHT`] requests at once; a request beyond them
//! is refused at once with [`codes::BUSY`], so the client's input is always read (a
//! `notifications/cancelled` or the end of input is seen however many calls hang), and
//! nothing queues without a bound. Immediate answers (refusals, errors for broken frames)
//! wait to be written at most [`MAX_PENDING_REPLIES`] at a time: only a client that does
//! not read its output fills them, and then it is paused by its own pipe.
//!
//! When the client closes its side (stdin EOF), the gateway stops reading, lets the
//! requests in flight finish for [`GatewayOptions::close_grace`], then answers every one
//! still unfinished with [`codes::UNFINISHED_AT_CLOSE`] and cancels it upstream, gives the
//! answers [`CLOSE_FLUSH`] to be written, and returns.
//!
//! The runtime is started here (enable) but not stopped: its owner disposes it after
//! [`serve`] returns.

use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::{LATEST_LEGACY_VERSION, LEGACY_VERSIONS, ProgressParams, methods};
use switchboard_runtime::naming::ToolRoute;
use switchboard_runtime::{
    Runtime, ServerRequestError, Snapshot, StartupReport, Tool, ToolContext,
};
use switchboard_session::SessionError;
use switchboard_wire::codes::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
};
use switchboard_wire::{
    Connection, ConnectionOptions, ErrorObject, Inbound, Malformed, MalformedKind, Notification,
    Outgoing, Request, RequestId,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Progress notifications buffered per call before the oldest wait.
const PROGRESS_BUFFER: usize = 32;
/// Requests worked on at once at most; a request beyond them is refused at once with
/// [`codes::BUSY`], so a flooding client grows neither our task set nor a queue.
pub const MAX_IN_FLIGHT: usize = 256;
/// Immediate answers (refusals, errors for broken frames) waiting to be written at most;
/// beyond them the gateway stops reading until one is written. Only a client that does
/// not read its output gets there.
pub const MAX_PENDING_REPLIES: usize = 256;
/// After the close grace: how long the failures of unfinished requests get to be written,
/// and their calls to send their cancellations upstream, before everything is stopped.
pub const CLOSE_FLUSH: Duration = Duration::from_secs(2);

/// The gateway's own JSON-RPC error codes (in the range JSON-RPC leaves to
/// implementations; MCP reserves -32020 and above, and gives -32002 to "resource not
/// found" in the protocol versions the gateway serves). An upstream server's own error is
/// passed on with its own code, never with one of these.
pub mod codes {
    /// The client closed the connection (stdin EOF) and the request was not finished
    /// within the close grace; it was cancelled upstream. (-32000 is "connection closed"
    /// in the TypeScript SDK's vocabulary too.)
    pub const UNFINISHED_AT_CLOSE: i64 = -32000;
    /// Refused without being worked on: the gateway was already working on
    /// [`MAX_IN_FLIGHT`](super::MAX_IN_FLIGHT) requests. Sending it again after an answer
    /// arrives is safe.
    pub const BUSY: i64 = -32003;
    /// The upstream server did not answer within its deadline (a cancellation was sent to
    /// it). The message names the server and how long the gateway waited; `data` holds
    /// `server` and `waitedMs`. (-32001 is "request timeout" in the TypeScript SDK's
    /// vocabulary too.)
    pub const UPSTREAM_TIMEOUT: i64 = -32001;
    /// The upstream server could not take the request: its connection closed (the process
    /// exited; it is being restarted), its transport failed (an HTTP status, a stream that
    /// ended first), or it is not ready or no longer configured. The message names the
    /// server and what happened; `data` holds `server`. The call may or may not have run.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32005;
    /// The upstream server's answer could not be passed on: malformed, over the frame
    /// limit, or not a tool result. The message names the server and what was wrong;
    /// `data` holds `server`.
    pub const UPSTREAM_BAD_ANSWER: i64 = -32006;
}

/// Called once with the startup report, when every server has started or failed.
pub type StartedHook = Box<dyn FnOnce(&StartupReport) + Send>;

/// How the gateway presents itself and how long it waits.
pub struct GatewayOptions {
    /// `serverInfo.name` in the `initialize` answer.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// The client connection's settings (its name appears in logs).
    pub connection: ConnectionOptions,
    /// Longest wait of `tools/list` and `tools/call` for the servers' start; after it they
    /// answer with the servers that are ready.
    pub startup_wait: Duration,
    /// Longest wait of `initialize` for the servers' start (for their instructions); short,
    /// because clients give `initialize` little time.
    pub initialize_wait: Duration,
    /// Receives the startup report (the CLI prints it on stderr).
    pub on_started: Option<StartedHook>,
    /// How long the requests in flight when the client closes its side get to finish;
    /// after it, each unfinished one is answered with [`codes::UNFINISHED_AT_CLOSE`].
    pub close_grace: Duration,
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
    /// Tool calls the client cancelled.
    pub cancelled: u64,
    /// Frames from the client that were not JSON-RPC (each answered with an error).
    pub malformed: u64,
}

/// State shared by the request tasks.
struct Shared {
    runtime: Runtime,
    connection: Connection,
    /// Becomes true when the runtime's first `enable` finished.
    started: watch::Receiver<bool>,
    startup_wait: Duration,
    initialize_wait: Duration,
    identity: Identity,
    /// The requests being worked on; whoever takes a request's entry out answers it.
    in_flight: Mutex<InFlight>,
    counts: Mutex<GatewayEnd>,
}

/// The requests being worked on, by the client's id. Taking an entry out is the right to
/// answer (or, for a tool call the client cancelled, to stay silent): the request's own
/// task, the client's cancellation and the close each try, and only one succeeds, so every
/// request gets exactly one answer.
#[derive(Default)]
struct InFlight {
    entries: HashMap<RequestId, Entry>,
    /// Tells apart two requests that used the same id one after the other.
    next_serial: u64,
}

struct Entry {
    serial: u64,
    /// Cancelled when the request's answer is no longer wanted (the client cancelled it, or
    /// the close grace ended): the work stops and its server is told.
    cancel: CancellationToken,
    client_cancel: ClientCancel,
}

/// Whether `notifications/cancelled` from the client applies to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientCancel {
    /// A tool call: cancelling it stops it upstream, and it gets no answer.
    Honoured,
    /// Anything else: answered anyway.
    Ignored,
}

/// What becomes of a request the client sent.
enum Admission {
    /// Worked on; the ticket answers it.
    Admitted(Ticket),
    /// A request in flight already uses its id.
    IdInUse,
    /// [`MAX_IN_FLIGHT`] requests are being worked on.
    Busy,
}

/// A request's claim on its in-flight entry.
struct Ticket {
    id: RequestId,
    serial: u64,
    cancel: CancellationToken,
}

impl InFlight {
    /// Registers a request if its id is free and fewer than [`MAX_IN_FLIGHT`] requests
    /// are being worked on (`working`, which counts calls winding down after the client
    /// cancelled them too).
    fn admit(&mut self, id: &RequestId, client_cancel: ClientCancel, working: usize) -> Admission {
        if self.entries.contains_key(id) {
            return Admission::IdInUse;
        }
        if working >= MAX_IN_FLIGHT {
            return Admission::Busy;
        }
        self.next_serial += 1;
        let serial = self.next_serial;
        let cancel = CancellationToken::new();
        self.entries.insert(
            id.clone(),
            Entry {
                serial,
                cancel: cancel.clone(),
                client_cancel,
            },
        );
        Admission::Admitted(Ticket {
            id: id.clone(),
            serial,
            cancel,
        })
    }

    /// Takes the ticket's entry out; false if the client's cancellation or the close took
    /// it first.
    fn take(&mut self, ticket: &Ticket) -> bool {
        let ours = self
            .entries
            .get(&ticket.id)
            .is_some_and(|entry| entry.serial == ticket.serial);
        if ours {
            self.entries.remove(&ticket.id);
        }
        ours
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves one client on `reader`/`writer` until it closes its side (for stdio: stdin EOF).
/// Enables the runtime first thing; the caller disposes it afterwards.
pub async fn serve<R, W>(
    runtime: Runtime,
    reader: R,
    writer: W,
    mut options: GatewayOptions,
) -> GatewayEnd
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (connection, mut inbound) = Connection::start(reader, writer, options.connection, None);
    let (started_tx, started) = watch::channel(false);
    let shared = Arc::new(Shared {
        runtime: runtime.clone(),
        connection,
        started,
        startup_wait: options.startup_wait,
        initialize_wait: options.initialize_wait,
        identity: Identity {
            name: options.name,
            version: options.version,
        },
        in_flight: Mutex::new(InFlight::default()),
        counts: Mutex::new(GatewayEnd::default()),
    });
    let enabling = runtime.clone();
    let mut enable = Some(tokio::spawn(async move { enabling.enable().await }));
    let mut snapshots = runtime.subscribe();
    let mut initialized = false;
    // What the client was last told about the tools (by a listing or a notification).
    let mut announced: [Option<u64>; 3] = [None; 3];
    // Requests being worked on (at most MAX_IN_FLIGHT), and answers being written at once.
    let mut work: JoinSet<Option<(Catalog, u64)>> = JoinSet::new();
    let mut replies: JoinSet<()> = JoinSet::new();
    // Set when the client closed its side: the end of the close grace.
    let mut closing: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        if closing.is_some() && work.is_empty() {
            break;
        }
        tokio::select! {
            message = inbound.recv(), if closing.is_none() && replies.len() < MAX_PENDING_REPLIES => match message {
                None => closing = Some(Box::pin(tokio::time::sleep(options.close_grace))),
                Some(Inbound::Request(request)) => {
                    if let Some(catalog) = Catalog::listed_by(&request.method) {
                        announced[catalog as usize] = None; // set when the listing is built
                    }
                    accept(&shared, request, &mut work, &mut replies);
                }
                Some(Inbound::Notification(notification)) => {
                    if notification.method == methods::INITIALIZED {
                        initialized = true;
                    }
                    on_notification(&shared, &notification);
                }
                Some(Inbound::Malformed(malformed)) => on_malformed(&shared, &malformed, &mut replies),
                Some(Inbound::UnexpectedResponse { response, reason }) => {
                    tracing::warn!(?reason, id = ?response.id, "the client answered a request the gateway never sent");
                }
            },
            joined = async {
                match enable.as_mut() {
                    Some(handle) => handle.await,
                    None => std::future::pending().await,
                }
            }, if enable.is_some() => {
                enable = None;
                let _ = started_tx.send(true);
                match joined {
                    Ok(Ok(report)) => {
                        if let Some(hook) = options.on_started.take() {
                            hook(&report);
                        }
                        lock(&shared.counts).startup = Some(report);
                    }
                    Ok(Err(error)) => tracing::warn!(%error, "the servers could not be started"),
                    Err(error) => tracing::warn!(%error, "starting the servers failed"),
                }
            }
            Ok(()) = snapshots.changed(), if closing.is_none() => {
                let snapshot = snapshots.borrow_and_update().clone();
                for catalog in Catalog::ALL {
                    let fingerprint = catalog.fingerprint(&snapshot);
                    let seen = &mut announced[catalog as usize];
                    if initialized && seen.is_some_and(|seen| seen != fingerprint) {
                        *seen = Some(fingerprint);
                        let _ = shared.connection.notify(catalog.changed_notification(), None).await;
                    }
                }
            }
            Some(finished) = work.join_next(), if !work.is_empty() => {
                if let Ok(Some((catalog, fingerprint))) = finished {
                    announced[catalog as usize].get_or_insert(fingerprint);
                }
            }
            Some(_) = replies.join_next(), if !replies.is_empty() => {}
            () = async {
                match closing.as_mut() {
                    Some(grace) => grace.await,
                    None => std::future::pending().await,
                }
            }, if closing.is_some() => break,
        }
    }
    close(&shared, work, replies, options.close_grace).await;
    if let Some(enable) = enable {
        enable.abort();
    }
    lock(&shared.counts).clone()
}

/// The client left (or the close grace ended): answers every request still in flight with
/// [`codes::UNFINISHED_AT_CLOSE`] and cancels it (its server is told), then gives the
/// answers and cancellations [`CLOSE_FLUSH`] to go out before stopping what is left.
async fn close(
    shared: &Shared,
    mut work: JoinSet<Option<(Catalog, u64)>>,
    mut replies: JoinSet<()>,
    grace: Duration,
) {
    let mut unfinished: Vec<(RequestId, Entry)> = lock(&shared.in_flight).entries.drain().collect();
    unfinished.sort_by_key(|(_, entry)| entry.serial); // answered in the order they came
    for (_, entry) in &unfinished {
        entry.cancel.cancel();
    }
    {
        let mut counts = lock(&shared.counts);
        let count = unfinished.len() as u64;
        counts.unfinished += count;
        counts.answered += count;
    }
    if !unfinished.is_empty() {
        tracing::warn!(
            requests = unfinished.len(),
            ?grace,
            "the client closed the connection; failing the requests still unfinished"
        );
    }
    let message = format!(
        "cancelled unfinished: the client closed its input and this request did not finish \
         within the {grace:?} close grace"
    );
    let flushed = tokio::time::timeout(CLOSE_FLUSH, async {
        for (id, _) in &unfinished {
            let error = ErrorObject::new(codes::UNFINISHED_AT_CLOSE, message.clone());
            if let Err(error) = shared.connection.respond(id, Err(&error)).await {
                tracing::debug!(%error, "the client is gone; an answer was not delivered");
                break;
            }
        }
        while replies.join_next().await.is_some() {}
        // Cancelled calls end at once, telling their servers.
        while work.join_next().await.is_some() {}
    })
    .await;
    if flushed.is_err() {
        tracing::warn!(
            ?CLOSE_FLUSH,
            "answers or cancellations were still pending at close; stopped"
        );
    }
    work.abort_all();
    replies.abort_all();
}

/// Starts work on a request, or refuses it at once: beyond [`MAX_IN_FLIGHT`], or when a
/// request in flight already uses its id.
fn accept(
    shared: &Arc<Shared>,
    request: Request,
    work: &mut JoinSet<Option<(Catalog, u64)>>,
    replies: &mut JoinSet<()>,
) {
    let client_cancel = if request.method == methods::TOOLS_CALL {
        ClientCancel::Honoured
    } else {
        ClientCancel::Ignored
    };
    let admission = lock(&shared.in_flight).admit(&request.id, client_cancel, work.len());
    let (id, error) = match admission {
        Admission::Admitted(ticket) => return dispatch(shared, request, ticket, work),
        // Answering with the id would read as the answer to the request in flight.
        Admission::IdInUse => (
            None,
            ErrorObject::new(
                INVALID_REQUEST,
                format!(
                    "request id {} is already used by a request in flight; ids must be unique \
                     among the requests waiting for an answer",
                    request.id
                ),
            ),
        ),
        Admission::Busy => (
            Some(request.id),
            ErrorObject {
                code: codes::BUSY,
                message: format!(
                    "the gateway is busy: it is already working on {MAX_IN_FLIGHT} requests, the \
                     most it takes at once; this one was not started (send it again once an \
                     answer arrives)"
                ),
                data: Some(json!({ "maxInFlight": MAX_IN_FLIGHT })),
            },
        ),
    };
    let mut counts = lock(&shared.counts);
    counts.refused += 1;
    counts.answered += 1;
    drop(counts);
    reply_now(shared, replies, id, error);
}

/// Answers a frame that is not JSON-RPC: with its own id when it carries one that no
/// request in flight uses, else with `id: null`.
fn on_malformed(shared: &Arc<Shared>, malformed: &Malformed, replies: &mut JoinSet<()>) {
    lock(&shared.counts).malformed += 1;
    let code = match malformed.kind {
        MalformedKind::InvalidUtf8 | MalformedKind::NotJson | MalformedKind::InvalidJson(_) => {
            PARSE_ERROR
        }
        _ => INVALID_REQUEST,
    };
    tracing::warn!(%malformed, "the client sent a frame that is not JSON-RPC");
    let id = malformed
        .request_id()
        .filter(|id| !lock(&shared.in_flight).entries.contains_key(id))
        .cloned();
    let error = ErrorObject::new(code, format!("not a JSON-RPC request: {malformed}"));
    reply_now(shared, replies, id, error);
}

/// Writes an error answer in a task of its own (the reading loop never waits on output).
fn reply_now(
    shared: &Arc<Shared>,
    replies: &mut JoinSet<()>,
    id: Option<RequestId>,
    error: ErrorObject,
) {
    let shared = shared.clone();
    replies.spawn(async move {
        let sent = match &id {
            Some(id) => shared.connection.respond(id, Err(&error)).await,
            None => {
                let mut line = Vec::with_capacity(128);
                Outgoing::Error {
                    id: None,
                    error: &error,
                }
                .encode_line(&mut line);
                shared.connection.send_raw(&line).await
            }
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "the client is gone; an answer was not delivered");
        }
    });
}

struct Identity {
    name: String,
    version: String,
}

/// Answers a request in a task of its own. A task's output is the list it showed the
/// client and that list's fingerprint, if it answered a listing. A tool call stops itself
/// when its ticket is cancelled (telling its server); other requests are simply dropped.
fn dispatch(
    shared: &Arc<Shared>,
    request: Request,
    ticket: Ticket,
    work: &mut JoinSet<Option<(Catalog, u64)>>,
) {
    let shared = shared.clone();
    if request.method == methods::TOOLS_CALL {
        work.spawn(async move {
            call(&shared, request, ticket).await;
            None
        });
        return;
    }
    let cancel = ticket.cancel.clone();
    work.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => None,
            listed = respond_to(&shared, request, &ticket) => listed,
        }
    });
}

/// Works out the answer to a request other than `tools/call` and sends it.
async fn respond_to(shared: &Shared, request: Request, ticket: &Ticket) -> Option<(Catalog, u64)> {
    match request.method.as_str() {
        methods::INITIALIZE => {
            shared.wait_for_start(shared.initialize_wait).await;
            let result = initialize_result(shared, request.params.as_ref());
            answer(shared, ticket, Ok(result)).await;
            None
        }
        methods::PING => {
            answer(shared, ticket, Ok(json!({}))).await;
            None
        }
        methods::TOOLS_LIST => {
            shared.wait_for_start(shared.startup_wait).await;
            let snapshot = shared.runtime.snapshot();
            let tools: Vec<Value> = snapshot.tools.iter().map(tool_definition).collect();
            answer(shared, ticket, Ok(json!({ "tools": tools }))).await;
            Some((Catalog::Tools, Catalog::Tools.fingerprint(&snapshot)))
        }
        methods::PROMPTS_LIST | methods::RESOURCES_LIST | methods::RESOURCES_TEMPLATES_LIST => {
            shared.wait_for_start(shared.startup_wait).await;
            let snapshot = shared.runtime.snapshot();
            let (catalog, result) = match request.method.as_str() {
                methods::PROMPTS_LIST => (
                    Catalog::Prompts,
                    json!({ "prompts": prompt_definitions(&snapshot) }),
                ),
                methods::RESOURCES_LIST => (
                    Catalog::Resources,
                    json!({ "resources": items(&snapshot.resources, "uri") }),
                ),
                _ => (
                    Catalog::Resources,
                    json!({ "resourceTemplates": items(&snapshot.resource_templates, "uriTemplate") }),
                ),
            };
            answer(shared, ticket, Ok(result)).await;
            Some((catalog, catalog.fingerprint(&snapshot)))
        }
        methods::PROMPTS_GET | methods::RESOURCES_READ => {
            shared.wait_for_start(shared.startup_wait).await;
            let outcome = forward(shared, &request).await;
            answer(shared, ticket, outcome).await;
            None
        }
        other => {
            let message = if other == methods::SERVER_DISCOVER {
                "this gateway speaks the initialize protocol (2025-11-25 and earlier); send `initialize`".to_owned()
            } else {
                format!("method `{other}` is not offered by this gateway (it serves tools)")
            };
            answer(
                shared,
                ticket,
                Err(ErrorObject::new(METHOD_NOT_FOUND, message)),
            )
            .await;
            None
        }
    }
}

fn on_notification(shared: &Shared, notification: &Notification) {
    if notification.method != methods::CANCELLED {
        return;
    }
    let id = notification
        .params
        .as_ref()
        .and_then(|p| p.get("requestId"))
        .and_then(RequestId::from_json);
    let cancelled = id.and_then(|id| {
        let mut in_flight = lock(&shared.in_flight);
        let honoured = in_flight
            .entries
            .get(&id)
            .is_some_and(|entry| entry.client_cancel == ClientCancel::Honoured);
        honoured.then(|| in_flight.entries.remove(&id)).flatten()
    });
    match cancelled {
        Some(entry) => {
            // Taken out: the call stops (its server is told) and is not answered.
            entry.cancel.cancel();
            lock(&shared.counts).cancelled += 1;
        }
        None => {
            tracing::debug!(params = ?notification.params, "cancellation of no call in flight")
        }
    }
}

impl Shared {
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

/// Sends a request's answer, unless the client's cancellation or the close already took
/// it (see [`InFlight`]).
async fn answer(shared: &Shared, ticket: &Ticket, outcome: Result<Value, ErrorObject>) {
    if !lock(&shared.in_flight).take(ticket) {
        return;
    }
    lock(&shared.counts).answered += 1;
    let id = &ticket.id;
    let sent = match &outcome {
        Ok(result) => shared.connection.respond(id, Ok(result)).await,
        Err(error) => shared.connection.respond(id, Err(error)).await,
    };
    if let Err(error) = sent {
        tracing::debug!(%error, "the client is gone; an answer was not delivered");
    }
}

fn initialize_result(shared: &Shared, params: Option<&Value>) -> Value {
    let identity = &shared.identity;
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = requested
        .filter(|v| LEGACY_VERSIONS.contains(v))
        .unwrap_or(LATEST_LEGACY_VERSION);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true},
        },
        "serverInfo": {"name": identity.name, "title": "Switchboard gateway", "version": identity.version},
    });
    let instructions = shared.runtime.snapshot().system_prompt.clone();
    if !instructions.is_empty() {
        result["instructions"] = Value::String(instructions);
    }
    result
}

fn tool_definition(tool: &switchboard_runtime::BridgedTool) -> Value {
    let mut definition = json!({
        "name": tool.name(),
        "description": tool.description(),
        "inputSchema": tool.input_schema(),
    });
    if tool.read_only_hint() {
        definition["annotations"] = json!({"readOnlyHint": true});
    }
    definition
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

    fn listed_by(method: &str) -> Option<Catalog> {
        match method {
            methods::TOOLS_LIST => Some(Catalog::Tools),
            methods::PROMPTS_LIST => Some(Catalog::Prompts),
            methods::RESOURCES_LIST | methods::RESOURCES_TEMPLATES_LIST => Some(Catalog::Resources),
            _ => None,
        }
    }

    fn changed_notification(self) -> &'static str {
        match self {
            Catalog::Tools => methods::TOOLS_LIST_CHANGED,
            Catalog::Prompts => methods::PROMPTS_LIST_CHANGED,
            Catalog::Resources => methods::RESOURCES_LIST_CHANGED,
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

/// `prompts/get` or `resources/read`, sent to the server the name or URI belongs to.
async fn forward(shared: &Shared, request: &Request) -> Result<Value, ErrorObject> {
    let params = request.params.clone().unwrap_or(Value::Null);
    let snapshot = shared.runtime.snapshot();
    let outcome = if request.method == methods::PROMPTS_GET {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(route) = prompt_routes(&snapshot).remove(name) else {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "unknown prompt `{name}`: this gateway has {} prompts (prompts/list shows them)",
                    snapshot.prompts.len()
                ),
            ));
        };
        let arguments = params.get("arguments").cloned();
        shared
            .runtime
            .get_prompt(&route.server, &route.tool, arguments)
            .await
    } else {
        let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
        let Some(server) = resource_owner(&snapshot, uri) else {
            return Err(ErrorObject {
                code: switchboard_protocol::error_codes::RESOURCE_NOT_FOUND_LEGACY,
                message: format!("no server behind this gateway offers the resource `{uri}`"),
                data: Some(json!({ "uri": uri })),
            });
        };
        shared.runtime.read_resource(&server, uri).await
    };
    outcome.map_err(upstream_error)
}

/// A failed request to an upstream server as the client sees it: the server's own
/// JSON-RPC error unchanged, else one of the gateway's [`codes`] naming the server.
fn upstream_error(error: ServerRequestError) -> ErrorObject {
    let mut message = error.to_string();
    if let ServerRequestError::Session(SessionError::Closed { .. }) = &error {
        message.push_str(
            "\nThe server is being restarted; the request was not retried because it may have had effects.",
        );
    }
    let (code, server, waited) = match error {
        ServerRequestError::Session(SessionError::Rpc { error, .. }) => return error,
        ServerRequestError::Session(SessionError::Timeout { server, after, .. }) => {
            (codes::UPSTREAM_TIMEOUT, server.to_string(), Some(after))
        }
        ServerRequestError::Session(
            SessionError::Closed { server, .. } | SessionError::Transport { server, .. },
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
        ServerRequestError::UnknownTool { .. } | ServerRequestError::InvalidArguments { .. } => {
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

async fn call(shared: &Shared, request: Request, ticket: Ticket) {
    let params = request.params.unwrap_or(Value::Null);
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    let progress_token = params.pointer("/_meta/progressToken").cloned();
    tokio::select! {
        () = shared.wait_for_start(shared.startup_wait) => {}
        // Cancelled (by the client or the close) before the servers came up.
        () = ticket.cancel.cancelled() => return,
    }
    let snapshot = shared.runtime.snapshot();
    if snapshot.tool(name).is_none() {
        let error = unknown_tool(name, snapshot.tools.len());
        answer(shared, &ticket, Err(error)).await;
        return;
    }
    let tools = snapshot.tools.len();
    drop(snapshot);
    let (progress_tx, mut progress_rx) = mpsc::channel::<ProgressParams>(PROGRESS_BUFFER);
    let context = ToolContext {
        cancel: ticket.cancel.clone(),
        progress: progress_token.is_some().then_some(progress_tx),
        timeout: None,
    };
    let forward = |progress: ProgressParams| {
        let forwarded = progress_token.clone().map(|token| ProgressParams {
            progress_token: token,
            ..progress
        });
        async move {
            if let Some(forwarded) = forwarded {
                let params = serde_json::to_value(&forwarded).unwrap_or(Value::Null);
                let _ = shared
                    .connection
                    .notify(methods::PROGRESS, Some(&params))
                    .await;
            }
        }
    };
    let mut running = std::pin::pin!(shared.runtime.call_tool_raw(name, arguments, context));
    let outcome = loop {
        tokio::select! {
            output = &mut running => break output,
            Some(progress) = progress_rx.recv() => forward(progress).await,
        }
    };
    if ticket.cancel.is_cancelled() {
        // The client cancelled it (no answer, as the protocol asks), or the close answered it.
        return;
    }
    // Progress that arrived with the result goes out before it.
    while let Ok(progress) = progress_rx.try_recv() {
        forward(progress).await;
    }
    let outcome = outcome.or_else(|error| match error {
        // Refused before anything was sent: a tool execution error the model can act on,
        // as MCP asks for input validation errors.
        ServerRequestError::InvalidArguments { detail, .. } => Ok(json!({
            "content": [{"type": "text", "text": detail}],
            "isError": true,
        })),
        // The snapshot changed between the lookup and the call.
        ServerRequestError::UnknownTool { .. } => Err(unknown_tool(name, tools)),
        other => Err(upstream_error(other)),
    });
    answer(shared, &ticket, outcome).await;
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
