//! A [`Service`] served to one client on a reader/writer pair (stdio: stdin and stdout),
//! one JSON-RPC message per line, both eras.
//!
//! The era is per request ([`route`]): a request with modern `_meta` is served statelessly;
//! `initialize` makes the process a legacy session (its version, capabilities and log level
//! apply to the legacy requests that follow). After `initialize` the client hears about the
//! service's events (list changes, updates of resources it subscribed to, log messages at
//! or above its level); a modern client hears about them on its `subscriptions/listen`
//! streams only.
//!
//! # Load and the end of the connection
//!
//! At most [`MAX_IN_FLIGHT`] requests are worked on at once; a request beyond them is
//! refused at once with [`codes::BUSY`], so the client's input is always read (a
//! `notifications/cancelled` or the end of input is seen however many calls hang), and
//! nothing queues without a bound. Immediate answers (refusals, errors for broken frames)
//! wait to be written at most [`MAX_PENDING_REPLIES`] at a time: only a client that does
//! not read its output fills them, and then it is paused by its own pipe.
//!
//! `notifications/cancelled` from the client stops the request it names (its handler's
//! [`RequestContext::cancel`]) and that request gets no answer, as the protocol asks
//! (`initialize` is never cancelled). When the client closes its side (EOF), reading stops,
//! the requests in flight get [`StdioOptions::close_grace`] to finish, then every one still
//! unfinished is cancelled and answered with [`codes::UNFINISHED_AT_CLOSE`] (listen
//! streams end at once with their final result), the answers get [`CLOSE_FLUSH`] to be written, and
//! [`serve`] returns.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::{CancelledParams, Era, methods};
use switchboard_wire::codes::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR};
use switchboard_wire::{
    Connection, ConnectionOptions, ErrorObject, Inbound, Malformed, MalformedKind, Notification,
    Outgoing, Request, RequestId,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::core::finish::{self, discover_result, initialize_result, negotiate};
use crate::core::listen::{ListenFilter, MAX_RESOURCE_SUBSCRIPTIONS, listen_with_subscriptions};
use crate::core::route::{Routed, route};
use crate::core::{
    ClientFacts, ClientIdentity, ClientQuestion, QUESTION_BUFFER, REQUEST_NOTIFICATION_BUFFER,
    RequestContext, ServerNotification, Service, ServiceEvent, ServiceRequest, SessionKey,
    empty_result, resource_updated,
};

/// Requests worked on at once at most; a request beyond them is refused at once with
/// [`codes::BUSY`], so a flooding client grows neither our task set nor a queue.
pub const MAX_IN_FLIGHT: usize = 256;
/// Immediate answers (refusals, errors for broken frames) waiting to be written at most;
/// beyond them reading stops until one is written. Only a client that does not read its
/// output gets there.
pub const MAX_PENDING_REPLIES: usize = 256;
/// After the close grace: how long the failures of unfinished requests get to be written,
/// and their handlers to wind down (a gateway's calls send their cancellations upstream),
/// before everything is stopped.
pub const CLOSE_FLUSH: Duration = Duration::from_secs(2);

/// The JSON-RPC error codes of the server's own failures (in the range JSON-RPC leaves to
/// implementations). A gateway passes an upstream server's own error with its own code,
/// never with one of these.
pub mod codes {
    /// The client closed the connection (stdin EOF) and the request was not finished
    /// within the close grace; it was cancelled. (-32000 is "connection closed" in the
    /// TypeScript SDK's vocabulary too.)
    pub const UNFINISHED_AT_CLOSE: i64 = -32000;
    /// Refused without being worked on: [`MAX_IN_FLIGHT`](super::MAX_IN_FLIGHT) requests
    /// were being worked on. Sending it again after an answer arrives is safe.
    pub const BUSY: i64 = -32003;
}

/// Settings of one stdio serving.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The client connection's settings (its name appears in logs).
    pub connection: ConnectionOptions,
    /// How long the requests in flight when the client closes its side get to finish;
    /// after it, each unfinished one is answered with [`codes::UNFINISHED_AT_CLOSE`].
    pub close_grace: Duration,
    /// The endpoint the client is served, as the HTTP transport's `/mcp/<name>` names one
    /// ([`ClientFacts::endpoint`]); `None`: the default one. The service must serve it.
    pub endpoint: Option<Arc<str>>,
}

impl Default for StdioOptions {
    fn default() -> StdioOptions {
        StdioOptions {
            connection: ConnectionOptions::new("client"),
            close_grace: Duration::from_secs(5),
            endpoint: None,
        }
    }
}

/// What one serving did, for its owner's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeEnd {
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

/// The legacy session of this process: what `initialize` settled, and what the client
/// subscribed to.
#[derive(Debug, Default)]
struct Session {
    facts: Option<ClientFacts>,
    /// Resources the client subscribed to with `resources/subscribe`.
    subscriptions: HashSet<String>,
}

/// State shared by the request tasks.
struct Shared {
    service: Arc<dyn Service>,
    connection: Connection,
    session: Mutex<Session>,
    /// The process is one legacy session: its requests' questions name it.
    session_key: SessionKey,
    /// The endpoint every request is served at ([`StdioOptions::endpoint`]).
    endpoint: Option<Arc<str>>,
    /// The requests being worked on; whoever takes a request's entry out answers it.
    in_flight: Mutex<InFlight>,
    counts: Mutex<ServeEnd>,
}

/// The requests being worked on, by the client's id. Taking an entry out is the right to
/// answer (or, for a request the client cancelled, to stay silent): the request's own
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
    /// the close grace ended): the work stops.
    cancel: CancellationToken,
    kind: EntryKind,
}

/// How a request ends other than by its own answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    /// `initialize`: never cancelled; failed at close like any request.
    Handshake,
    /// A request the client may cancel (it then gets no answer); failed at close.
    Cancellable,
    /// A listen stream: the client cancels it; at close it is stopped and answers with its
    /// final result itself.
    Stream,
}

impl EntryKind {
    fn of(method: &str) -> EntryKind {
        match method {
            methods::INITIALIZE => EntryKind::Handshake,
            methods::SUBSCRIPTIONS_LISTEN => EntryKind::Stream,
            _ => EntryKind::Cancellable,
        }
    }
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
    /// are being worked on (`working`, which counts requests winding down after the client
    /// cancelled them too).
    fn admit(&mut self, id: &RequestId, kind: EntryKind, working: usize) -> Admission {
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
                kind,
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
pub async fn serve<R, W>(
    service: Arc<dyn Service>,
    reader: R,
    writer: W,
    options: StdioOptions,
) -> ServeEnd
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (connection, mut inbound) = Connection::start(reader, writer, options.connection, None);
    // A question whose request ended before the client answered is withdrawn.
    connection.set_cancel_notice(|id, reason| {
        (
            methods::CANCELLED,
            switchboard_protocol::to_json(&CancelledParams {
                request_id: id.to_json(),
                reason: reason.to_owned(),
            }),
        )
    });
    let mut events = service.events();
    let shared = Arc::new(Shared {
        service,
        connection,
        session: Mutex::new(Session::default()),
        session_key: SessionKey::fresh(),
        endpoint: options.endpoint.clone(),
        in_flight: Mutex::new(InFlight::default()),
        counts: Mutex::new(ServeEnd::default()),
    });
    // Requests being worked on (at most MAX_IN_FLIGHT), and answers being written at once.
    let mut work: JoinSet<()> = JoinSet::new();
    let mut replies: JoinSet<()> = JoinSet::new();
    // Set when the client closed its side: the end of the close grace.
    let mut closing: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let mut events_open = true;
    loop {
        if closing.is_some() && work.is_empty() {
            break;
        }
        tokio::select! {
            message = inbound.recv(), if closing.is_none() && replies.len() < MAX_PENDING_REPLIES => match message {
                None => {
                    closing = Some(Box::pin(tokio::time::sleep(options.close_grace)));
                    // Nobody is left to listen: streams end now, not after the grace.
                    end_streams(&shared);
                }
                Some(Inbound::Request(request)) => accept(&shared, request, &mut work, &mut replies),
                Some(Inbound::Notification(notification)) => on_notification(&shared, &notification),
                Some(Inbound::Malformed(malformed)) => on_malformed(&shared, &malformed, &mut replies),
                Some(Inbound::UnexpectedResponse { response, reason }) => {
                    tracing::warn!(?reason, id = ?response.id, "the client answered a request this server never sent");
                }
            },
            event = events.recv(), if events_open && closing.is_none() => match event {
                Ok(event) => announce(&shared, &event).await,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "the client's event feed lagged; announcing every list as changed");
                    for event in [ServiceEvent::ToolsChanged, ServiceEvent::PromptsChanged, ServiceEvent::ResourcesChanged] {
                        announce(&shared, &event).await;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => events_open = false,
            },
            Some(_) = work.join_next(), if !work.is_empty() => {}
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
    lock(&shared.counts).clone()
}

/// Stops every listen stream (each answers with its final result).
fn end_streams(shared: &Shared) {
    for entry in lock(&shared.in_flight).entries.values() {
        if entry.kind == EntryKind::Stream {
            entry.cancel.cancel();
        }
    }
}

/// Tells a legacy client (after `initialize`) about an event it follows.
async fn announce(shared: &Shared, event: &ServiceEvent) {
    let capabilities = shared.service.info().capabilities;
    let notification = {
        let session = lock(&shared.session);
        let Some(facts) = &session.facts else {
            return;
        };
        if !event.is_for(&facts.identity) {
            return;
        }
        match event {
            ServiceEvent::ToolsChanged if capabilities.tools => {
                Some((methods::TOOLS_LIST_CHANGED, None))
            }
            ServiceEvent::PromptsChanged if capabilities.prompts => {
                Some((methods::PROMPTS_LIST_CHANGED, None))
            }
            ServiceEvent::ResourcesChanged if capabilities.resources => {
                Some((methods::RESOURCES_LIST_CHANGED, None))
            }
            ServiceEvent::ResourceUpdated { uri } => {
                let follows = ListenFilter {
                    resource_uris: session.subscriptions.iter().cloned().collect(),
                    ..ListenFilter::default()
                }
                .follows(uri);
                follows.then(|| (methods::RESOURCES_UPDATED, Some(resource_updated(uri))))
            }
            // A legacy client that set no level hears every message (the era's default).
            ServiceEvent::Log { message, .. }
                if facts.log_level.is_none_or(|wanted| message.level >= wanted) =>
            {
                Some((methods::LOG_MESSAGE, Some(message.to_params())))
            }
            _ => None,
        }
    };
    if let Some((method, params)) = notification
        && let Err(error) = shared.connection.notify(method, params.as_ref()).await
    {
        tracing::debug!(%error, method, "the client is gone; a notification was not delivered");
    }
}

/// The client left (or the close grace ended): answers every request still in flight with
/// [`codes::UNFINISHED_AT_CLOSE`] and cancels it, stops listen streams (they answer with
/// their final result), then gives the answers [`CLOSE_FLUSH`] to go out before stopping
/// what is left.
async fn close(shared: &Shared, mut work: JoinSet<()>, mut replies: JoinSet<()>, grace: Duration) {
    let mut unfinished: Vec<(RequestId, Entry)> = {
        let mut in_flight = lock(&shared.in_flight);
        let mut unfinished = Vec::new();
        let ids: Vec<RequestId> = in_flight.entries.keys().cloned().collect();
        for id in ids {
            let Some(entry) = in_flight.entries.get(&id) else {
                continue;
            };
            if entry.kind == EntryKind::Stream {
                // Stays in: its task answers with the final result.
                entry.cancel.cancel();
            } else if let Some(entry) = in_flight.entries.remove(&id) {
                unfinished.push((id, entry));
            }
        }
        unfinished
    };
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
        // Cancelled requests end at once (a gateway's tell their servers).
        while work.join_next().await.is_some() {}
        // What the session followed is let go (a gateway unsubscribes upstream).
        let followed: Vec<String> = lock(&shared.session).subscriptions.drain().collect();
        for uri in followed {
            let facts = lock(&shared.session)
                .facts
                .clone()
                .unwrap_or_else(ClientFacts::legacy_default);
            let context = RequestContext::new(facts, CancellationToken::new(), None, None);
            let _ = shared
                .service
                .handle(ServiceRequest::Unsubscribe { uri }, context)
                .await;
        }
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
    work: &mut JoinSet<()>,
    replies: &mut JoinSet<()>,
) {
    let kind = EntryKind::of(&request.method);
    let admission = lock(&shared.in_flight).admit(&request.id, kind, work.len());
    let (id, error) = match admission {
        Admission::Admitted(ticket) => {
            let shared = shared.clone();
            work.spawn(async move { respond_to(&shared, request, ticket).await });
            return;
        }
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
                    "the server is busy: it is already working on {MAX_IN_FLIGHT} requests, the \
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

fn on_notification(shared: &Shared, notification: &Notification) {
    match notification.method.as_str() {
        methods::CANCELLED => {}
        methods::INITIALIZED => return,
        other => {
            tracing::debug!(
                method = other,
                "a client notification this server does not act on"
            );
            return;
        }
    }
    let id = notification
        .params
        .as_ref()
        .and_then(|p| p.get("requestId"))
        .and_then(RequestId::from_json);
    let cancelled = id.and_then(|id| {
        let mut in_flight = lock(&shared.in_flight);
        let cancellable = in_flight
            .entries
            .get(&id)
            .is_some_and(|entry| entry.kind != EntryKind::Handshake);
        cancellable.then(|| in_flight.entries.remove(&id)).flatten()
    });
    match cancelled {
        Some(entry) => {
            // Taken out: the work stops and the request is not answered.
            entry.cancel.cancel();
            lock(&shared.counts).cancelled += 1;
        }
        None => {
            tracing::debug!(params = ?notification.params, "cancellation of no request in flight")
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

/// Works out the answer to a request and sends it (a cancelled request is not answered).
async fn respond_to(shared: &Shared, request: Request, ticket: Ticket) {
    let info = shared.service.info();
    let session_facts = lock(&shared.session).facts.clone();
    let mut routed = route(
        &request.method,
        request.params,
        session_facts.as_ref(),
        info.capabilities,
    );
    if shared.endpoint.is_some() {
        routed.set_caller(ClientIdentity::Local, shared.endpoint.clone());
    }
    let outcome = match routed {
        Routed::Initialize(initialize) => {
            let negotiated = negotiate(initialize.requested.as_deref());
            let instructions = shared.service.instructions().await;
            // Read again after the wait: a gateway fronting one server takes on its identity.
            let result = initialize_result(shared.service.info(), negotiated, instructions);
            let mut session = lock(&shared.session);
            let log_level = session.facts.as_ref().and_then(|facts| facts.log_level);
            session.facts = Some(ClientFacts {
                log_level,
                endpoint: shared.endpoint.clone(),
                ..initialize.facts(negotiated)
            });
            Ok(result)
        }
        Routed::Ping => Ok(empty_result()),
        Routed::SetLogLevel(level) => {
            let mut session = lock(&shared.session);
            let facts = session
                .facts
                .get_or_insert_with(ClientFacts::legacy_default);
            facts.log_level = Some(level);
            Ok(empty_result())
        }
        Routed::Discover(facts) => {
            let instructions = tokio::select! {
                instructions = shared.service.instructions() => instructions,
                () = ticket.cancel.cancelled() => return,
            };
            let info = shared.service.info();
            finish::finish(
                Ok(discover_result(info, instructions)),
                methods::SERVER_DISCOVER,
                &facts,
                info,
            )
        }
        Routed::Listen { filter, facts } => {
            let honoured = filter.honoured(info.capabilities);
            let (sender, receiver) = mpsc::channel(REQUEST_NOTIFICATION_BUFFER);
            let streaming = listen_with_subscriptions(
                shared.service.as_ref(),
                &ticket.id,
                &honoured,
                &facts,
                sender,
                ticket.cancel.clone(),
            );
            let result =
                carrying(shared, &ticket, Carried::notifications(receiver), streaming).await;
            finish::finish(Ok(result), methods::SUBSCRIPTIONS_LISTEN, &facts, info)
        }
        Routed::Serve {
            request: service_request,
            facts,
            meta,
        } => {
            let method = service_request.method();
            // A session follows a resource once: a repeated subscribe (or an unsubscribe of
            // what it does not follow) is answered here, and the set is claimed before the
            // service is asked, so two at once do not both subscribe.
            let subscription = match &service_request {
                ServiceRequest::Subscribe { uri } => {
                    let claim = {
                        let mut session = lock(&shared.session);
                        if session.subscriptions.contains(uri) {
                            Err(Ok(empty_result()))
                        } else if session.subscriptions.len() >= MAX_RESOURCE_SUBSCRIPTIONS {
                            Err(Err(ErrorObject::new(
                                INVALID_PARAMS,
                                format!(
                                    "this session already follows {MAX_RESOURCE_SUBSCRIPTIONS} \
                                     resources, the most it may; unsubscribe from one first"
                                ),
                            )))
                        } else {
                            session.subscriptions.insert(uri.clone());
                            Ok(())
                        }
                    };
                    if let Err(answered) = claim {
                        return answer(shared, &ticket, answered).await;
                    }
                    Some((uri.clone(), Following::Claimed))
                }
                ServiceRequest::Unsubscribe { uri } => {
                    if !lock(&shared.session).subscriptions.remove(uri) {
                        return answer(shared, &ticket, Ok(empty_result())).await;
                    }
                    Some((uri.clone(), Following::Released))
                }
                _ => None,
            };
            let (sender, receiver) = mpsc::channel(REQUEST_NOTIFICATION_BUFFER);
            let mut context =
                RequestContext::new(facts.clone(), ticket.cancel.clone(), meta, Some(sender));
            let mut carried = Carried::notifications(receiver);
            if facts.era == Era::Legacy {
                let (asks, questions) = mpsc::channel(QUESTION_BUFFER);
                context = context.with_questions(asks, shared.session_key);
                carried.questions = Some(questions);
            }
            // A cancelled handler is let finish (it sees the cancellation and winds down: a
            // gateway tells its upstream server); its answer is then dropped.
            let handled = shared.service.handle(service_request, context);
            let outcome = carrying(shared, &ticket, carried, handled).await;
            if let (Err(_), Some((uri, Following::Claimed))) = (&outcome, subscription) {
                lock(&shared.session).subscriptions.remove(&uri);
            }
            finish::finish(outcome, method, &facts, info)
        }
        Routed::Refused(refusal) => Err(refusal.error),
    };
    if ticket.cancel.is_cancelled() && !is_stream_end(&request.method) {
        // The client cancelled it (no answer, as the protocol asks), or the close answered it.
        return;
    }
    answer(shared, &ticket, outcome).await;
}

/// What a subscription request did to the session's set before the service was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Following {
    /// Added (taken out again if the service refuses).
    Claimed,
    /// Taken out.
    Released,
}

/// A listen stream answers after its cancellation (that is how the server ends it).
fn is_stream_end(method: &str) -> bool {
    method == methods::SUBSCRIPTIONS_LISTEN
}

/// What a request's handler sends its client while it works: notifications, and (legacy)
/// questions.
struct Carried {
    notifications: mpsc::Receiver<ServerNotification>,
    questions: Option<mpsc::Receiver<ClientQuestion>>,
}

impl Carried {
    fn notifications(notifications: mpsc::Receiver<ServerNotification>) -> Carried {
        Carried {
            notifications,
            questions: None,
        }
    }
}

async fn next_question(
    questions: &mut Option<mpsc::Receiver<ClientQuestion>>,
) -> Option<ClientQuestion> {
    match questions {
        Some(questions) => questions.recv().await,
        None => std::future::pending().await,
    }
}

/// Runs `work` while writing the notifications it sends to the client (under the request's
/// own era rules, they are the request's) and the questions it asks; those sent before it
/// finished go out before its answer. A question still unanswered when the work ends is
/// withdrawn (`notifications/cancelled`).
async fn carrying<T>(
    shared: &Shared,
    ticket: &Ticket,
    carried: Carried,
    work: impl std::future::Future<Output = T>,
) -> T {
    let Carried {
        mut notifications,
        mut questions,
    } = carried;
    let mut work = std::pin::pin!(work);
    // Questions waiting for their answers; aborted (withdrawing them) when the work ends.
    let mut asked: JoinSet<()> = JoinSet::new();
    let outcome = loop {
        tokio::select! {
            outcome = &mut work => break outcome,
            Some(notification) = notifications.recv() => {
                if !ticket.cancel.is_cancelled() {
                    send_notification(shared, notification).await;
                }
            }
            Some(question) = next_question(&mut questions) => {
                if ticket.cancel.is_cancelled() {
                    continue; // `question` dropped: the asker hears the request ended
                }
                // What the handler said before asking goes out first.
                while let Ok(notification) = notifications.try_recv() {
                    send_notification(shared, notification).await;
                }
                ask(shared, question, &mut asked).await;
            }
            Some(_) = asked.join_next(), if !asked.is_empty() => {}
        }
    };
    while let Ok(notification) = notifications.try_recv() {
        if !ticket.cancel.is_cancelled() {
            send_notification(shared, notification).await;
        }
    }
    outcome
}

/// Sends a question to the client; a task waits for its answer (or for the asker to give
/// up, which withdraws the question).
async fn ask(shared: &Shared, question: ClientQuestion, asked: &mut JoinSet<()>) {
    let ClientQuestion {
        method,
        params,
        mut reply,
    } = question;
    let id = shared.connection.allocate_id();
    let mut call = match shared
        .connection
        .send_request(id, method.method(), Some(&params))
        .await
    {
        Ok(call) => call,
        Err(error) => {
            tracing::debug!(%error, %method, "the client is gone; a question was not delivered");
            return; // `reply` dropped: the asker sees the request ended
        }
    };
    call.cancel_on_drop("the request that asked ended before the answer came");
    asked.spawn(async move {
        tokio::select! {
            answer = call.response() => {
                let answer = answer.unwrap_or_else(|error| {
                    Err(ErrorObject::new(
                        switchboard_wire::codes::INTERNAL_ERROR,
                        format!("the client's answer did not arrive: {error}"),
                    ))
                });
                let _ = reply.send(answer);
            }
            () = reply.closed() => {}
        }
    });
}

async fn send_notification(shared: &Shared, notification: ServerNotification) {
    if let Err(error) = shared
        .connection
        .notify(notification.method, Some(&notification.params))
        .await
    {
        tracing::debug!(%error, "the client is gone; a notification was not delivered");
    }
}
