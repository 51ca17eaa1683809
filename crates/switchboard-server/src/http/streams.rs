//! Event streams: a request's (once its handler sends a notification before its answer),
//! a legacy session's GET stream, and `subscriptions/listen`.
//!
//! Each stream is pumped by a task the server owns; the pump ends when the stream is done,
//! when the client goes away (the response body is dropped, or an event waits too long to
//! be taken), or at shutdown. A modern request whose client goes away is cancelled (the
//! guard on its token is dropped with the pump or with the response future); a legacy one
//! is not (its answer then has nowhere to go and is dropped).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use switchboard_protocol::{Era, methods};
use switchboard_wire::{ErrorObject, RequestId};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::Shared;
use super::clients::{self, HeldSlot, Limit};
use super::exchange::{Notifications, Outcome};
use super::reply::{self, Reply, SseWriter};
use super::resume::{DEFAULT_RETRY, REPLAY_KEEP, Resume, StreamOut, next_resume};
use super::sessions::Session;
use crate::core::listen::{self, ListenFilter};
use crate::core::{
    Answer, ClientFacts, ClientQuestion, REQUEST_NOTIFICATION_BUFFER, ServerNotification,
    ServiceEvent, finish, no_params, resource_updated,
};
use crate::stdio::codes::BUSY;

/// A request whose answer is awaited.
pub(super) struct Pending {
    pub(super) id: RequestId,
    pub(super) era: Era,
    /// The request's cancellation (fires for the client's cancel and at shutdown).
    pub(super) cancel: CancellationToken,
    pub(super) notifications: Notifications,
    /// A legacy request's questions to its client, and its session (where the client
    /// POSTs the answers).
    pub(super) questions: Option<Questions>,
    pub(super) outcome: oneshot::Receiver<Outcome>,
}

/// A legacy request's questions: they go on its event stream, and the client answers them
/// in its session.
pub(super) struct Questions {
    pub(super) asked: mpsc::Receiver<ClientQuestion>,
    pub(super) session: Arc<Session>,
}

async fn next_question(questions: &mut Option<Questions>) -> Option<ClientQuestion> {
    match questions {
        Some(questions) => questions.asked.recv().await,
        None => std::future::pending().await,
    }
}

/// The questions a request's stream sent that still wait for an answer; forgotten in the
/// session when the stream ends (their askers then hear that the request ended).
struct OpenQuestions {
    session: Option<Arc<Session>>,
    ids: Vec<RequestId>,
}

impl Drop for OpenQuestions {
    fn drop(&mut self) {
        if let Some(session) = &self.session {
            session.close_questions(&self.ids);
        }
    }
}

/// What came first for a request.
enum First {
    Outcome(Option<Outcome>),
    Event(StreamStart),
    Cancelled,
}

/// What turns a request's answer into an event stream.
enum StreamStart {
    Notification(ServerNotification),
    Question(ClientQuestion),
    /// Polling: the stream opens and its client is let go at once.
    Poll,
}

/// The HTTP answer to a request: one JSON body when its answer comes before any
/// notification, else an event stream that the answer ends.
pub(super) async fn answer_request(shared: Arc<Shared>, pending: Pending) -> Reply {
    let Pending {
        id,
        era,
        cancel,
        mut notifications,
        mut questions,
        mut outcome,
    } = pending;
    // Modern: dropping this future (the client went away before any answer) cancels.
    let guard = (era == Era::Modern).then(|| cancel.clone().drop_guard());
    let session = questions
        .as_ref()
        .map(|questions| questions.session.clone());
    // Polling: a legacy request unanswered this long gets a stream it is let go from.
    let poll_after = shared.limits.poll_after.filter(|_| session.is_some());
    let polling = async {
        match poll_after {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(polling);
    let first = loop {
        let client_cancelled = era == Era::Legacy && !shared.stop.is_cancelled();
        break tokio::select! {
            biased;
            Some(notification) = notifications.recv() => First::Event(StreamStart::Notification(notification)),
            Some(question) = next_question(&mut questions) => First::Event(StreamStart::Question(question)),
            settled = &mut outcome => First::Outcome(settled.ok()),
            () = &mut polling => First::Event(StreamStart::Poll),
            () = cancel.cancelled(), if client_cancelled => {
                if shared.stop.is_cancelled() {
                    continue;
                }
                First::Cancelled
            }
        };
    };
    match first {
        First::Outcome(Some(Outcome::Answer(answer))) => {
            if let Some(guard) = guard {
                guard.disarm();
            }
            reply::answer(&id, &answer, era)
        }
        First::Outcome(None) => {
            if let Some(guard) = guard {
                guard.disarm();
            }
            reply::answer(&id, &Err(vanished()), era)
        }
        First::Outcome(Some(Outcome::Cancelled)) | First::Cancelled => {
            if let Some(guard) = guard {
                guard.disarm();
            }
            // Nothing is sent for a cancelled request: a stream that ends without it.
            let (_writer, stream) = reply::event_stream(shared.limits.stream_write_timeout);
            stream
        }
        First::Event(event) => {
            let (writer, stream) = reply::event_stream(shared.limits.stream_write_timeout);
            // A legacy request's stream can be resumed (while the session has room).
            let numbered = session.as_ref().and_then(|session| {
                session
                    .open_stream()
                    .map(|(number, resumes)| (session.clone(), number, resumes))
            });
            let (number, resumes, registration) = match numbered {
                Some((session, number, resumes)) => (
                    Some(number),
                    Some(resumes),
                    Some(StreamRegistration {
                        session,
                        stream: number,
                    }),
                ),
                None => (None, None, None),
            };
            let retry = shared.limits.poll_after.unwrap_or(DEFAULT_RETRY);
            let out = StreamOut::open(writer, number, retry).await;
            let open = OpenQuestions {
                session,
                ids: Vec::new(),
            };
            let pump = RequestStream {
                shared: shared.clone(),
                id,
                era,
                cancel,
                notifications,
                questions,
                open,
                outcome,
                out,
                resumes,
                _registration: registration,
                _guard: guard,
            };
            shared.tasks.spawn(pump.run(event));
            stream
        }
    }
}

/// The answer to a request whose handler ended without one (it panicked).
fn vanished() -> ErrorObject {
    ErrorObject::new(
        switchboard_wire::codes::INTERNAL_ERROR,
        "the server failed while answering this request",
    )
}

/// The pump of one request's event stream.
struct RequestStream {
    shared: Arc<Shared>,
    id: RequestId,
    era: Era,
    cancel: CancellationToken,
    notifications: Notifications,
    questions: Option<Questions>,
    open: OpenQuestions,
    outcome: oneshot::Receiver<Outcome>,
    out: StreamOut,
    /// Clients resuming the stream (a resumable one).
    resumes: Option<mpsc::Receiver<Resume>>,
    _registration: Option<StreamRegistration>,
    /// Modern: dropped (cancelling the request) when the pump ends before the answer.
    _guard: Option<DropGuard>,
}

impl RequestStream {
    /// Sends a question on the stream, recorded in the session for the client's answer;
    /// `false` when the stream is over.
    async fn ask(&mut self, question: ClientQuestion) -> bool {
        let ClientQuestion {
            method,
            params,
            reply,
        } = question;
        let Some(session) = self.open.session.clone() else {
            return true; // `reply` dropped: the asker hears the request ended
        };
        // What the handler said before asking goes out first.
        while let Ok(notification) = self.notifications.try_recv() {
            if !self.out.notification(&notification).await {
                return false;
            }
        }
        let Some(id) = session.open_question(reply) else {
            tracing::debug!(%method, "the session has as many questions open as it may; one was not sent");
            return true;
        };
        self.open.ids.push(id.clone());
        self.out.request(&id, method.method(), &params).await
    }

    /// When an attached client is let go to poll (a resumable stream, with polling on).
    fn poll_deadline(&self) -> Option<tokio::time::Instant> {
        let poll_after = self.shared.limits.poll_after?;
        (self.out.attached() && self.out.resumable())
            .then(|| tokio::time::Instant::now() + poll_after)
    }

    async fn run(mut self, first: StreamStart) {
        let sent = match first {
            StreamStart::Notification(notification) => self.out.notification(&notification).await,
            StreamStart::Question(question) => self.ask(question).await,
            StreamStart::Poll => {
                self.out.detach();
                true
            }
        };
        if !sent {
            return;
        }
        let mut ticks = reply::keep_alive(self.shared.limits.keep_alive);
        let mut poll_at = self.poll_deadline();
        loop {
            let client_cancelled = self.era == Era::Legacy && !self.shared.stop.is_cancelled();
            let polling = async {
                match poll_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(notification) = self.notifications.recv() => {
                    if !self.out.notification(&notification).await {
                        return;
                    }
                }
                Some(question) = next_question(&mut self.questions) => {
                    if !self.ask(question).await {
                        return;
                    }
                }
                settled = &mut self.outcome => {
                    let answer = match settled {
                        Ok(Outcome::Answer(answer)) => Some(answer),
                        Ok(Outcome::Cancelled) => None,
                        Err(_) => Some(Err(vanished())),
                    };
                    if let Some(answer) = answer {
                        self.finish(answer).await;
                    }
                    return;
                }
                () = self.cancel.cancelled(), if client_cancelled => {
                    if !self.shared.stop.is_cancelled() {
                        return;
                    }
                }
                () = self.out.closed() => {
                    if !self.out.resumable() {
                        return;
                    }
                    // A legacy request goes on: its client can resume the stream.
                    self.out.detach();
                    poll_at = None;
                }
                _ = ticks.tick() => {
                    if !self.out.keep_alive().await {
                        return;
                    }
                }
                () = polling => {
                    self.out.detach();
                    poll_at = None;
                }
                Some(resume) = next_resume(&mut self.resumes) => {
                    if self.out.attach(resume).await {
                        poll_at = self.poll_deadline();
                    }
                }
            }
        }
    }

    /// Sends the answer after what the handler said before it; a resumable stream whose
    /// client is not attached waits (at most [`REPLAY_KEEP`], and not past the session's
    /// end or the server's drain) for it to come back.
    async fn finish(&mut self, answer: Answer) {
        while let Ok(notification) = self.notifications.try_recv() {
            if !self.out.notification(&notification).await {
                return;
            }
        }
        if self.out.answer(&self.id, &answer).await {
            if let Some(guard) = self._guard.take() {
                guard.disarm();
            }
            return;
        }
        if !self.out.resumable() {
            return;
        }
        let ended = self
            .open
            .session
            .as_ref()
            .map(|session| session.ended().clone())
            .unwrap_or_default();
        let waiting = async {
            while let Some(resume) = next_resume(&mut self.resumes).await {
                if self.out.attach(resume).await && self.out.attached() {
                    return;
                }
            }
        };
        tokio::select! {
            () = waiting => {}
            () = tokio::time::sleep(REPLAY_KEEP) => {}
            () = ended.cancelled() => {}
            // Draining: no GET is served any more, so nobody can come back for it.
            () = self.shared.drain.cancelled() => {}
        }
    }
}

/// Forgets a resumable stream in its session when its pump ends.
struct StreamRegistration {
    session: Arc<Session>,
    stream: u64,
}

impl Drop for StreamRegistration {
    fn drop(&mut self) {
        self.session.close_stream(self.stream);
    }
}

/// A legacy session's GET stream (claimed by the caller): what the service announces,
/// for this session.
/// `slot` counts the stream for its client while it is open.
pub(super) fn session_stream(shared: Arc<Shared>, session: Arc<Session>, slot: HeldSlot) -> Reply {
    let (writer, stream) = reply::event_stream(shared.limits.stream_write_timeout);
    let events = shared.service.events();
    let tasks = shared.tasks.clone();
    tasks.spawn(async move {
        let _slot = slot;
        pump_session(shared, session, events, writer).await;
    });
    stream
}

/// The notification a service event is for a session, if it wants it.
fn session_notification(
    shared: &Shared,
    session: &Session,
    event: &ServiceEvent,
) -> Option<ServerNotification> {
    if !event.is_for(session.identity()) {
        return None;
    }
    let capabilities = shared.info().capabilities;
    let (method, params) = match event {
        ServiceEvent::ToolsChanged if capabilities.tools => {
            (methods::TOOLS_LIST_CHANGED, no_params())
        }
        ServiceEvent::PromptsChanged if capabilities.prompts => {
            (methods::PROMPTS_LIST_CHANGED, no_params())
        }
        ServiceEvent::ResourcesChanged if capabilities.resources => {
            (methods::RESOURCES_LIST_CHANGED, no_params())
        }
        ServiceEvent::ResourceUpdated { uri } if session.follows(uri) => {
            (methods::RESOURCES_UPDATED, resource_updated(uri))
        }
        ServiceEvent::Log { message, .. }
            if capabilities.logging && session.wants_log(message.level) =>
        {
            (methods::LOG_MESSAGE, message.to_params())
        }
        _ => return None,
    };
    Some(ServerNotification { method, params })
}

async fn pump_session(
    shared: Arc<Shared>,
    session: Arc<Session>,
    mut events: broadcast::Receiver<ServiceEvent>,
    writer: SseWriter,
) {
    let mut ticks = reply::keep_alive(shared.limits.keep_alive);
    loop {
        let pending: Vec<ServiceEvent> = tokio::select! {
            () = shared.drain.cancelled() => break,
            () = session.ended().cancelled() => break,
            () = writer.closed() => break,
            _ = ticks.tick() => {
                if writer.keep_alive().await {
                    continue;
                }
                break;
            }
            received = events.recv() => match received {
                Ok(event) => vec![event],
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "a session's GET stream lagged; announcing every list as changed");
                    let mut all = vec![
                        ServiceEvent::ToolsChanged,
                        ServiceEvent::PromptsChanged,
                        ServiceEvent::ResourcesChanged,
                    ];
                    all.extend(session.subscriptions().into_iter().map(|uri| ServiceEvent::ResourceUpdated { uri }));
                    all
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
        };
        for event in &pending {
            if let Some(notification) = session_notification(&shared, &session, event)
                && !writer.notification(&notification).await
            {
                session.release_stream();
                return;
            }
        }
    }
    session.release_stream();
}

/// A listen slot, released when dropped.
struct ListenSlot(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for ListenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `subscriptions/listen`: always a stream; the client ends it by going away, the server
/// by answering it (at shutdown).
pub(super) fn listen_stream(
    shared: Arc<Shared>,
    id: RequestId,
    filter: ListenFilter,
    facts: ClientFacts,
) -> Reply {
    if shared.listens.fetch_add(1, Ordering::Relaxed) >= shared.limits.max_listen_streams {
        shared.listens.fetch_sub(1, Ordering::Relaxed);
        shared.clients.tally.refused(Limit::ListenStreams);
        return reply::error(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            Some(&id),
            &ErrorObject::new(
                BUSY,
                "this server has as many listen streams open as it allows; try again later",
            ),
        );
    }
    let slot = ListenSlot(shared.listens.clone());
    let client_slot = match shared.clients.hold(&facts.identity, clients::Held::Stream) {
        Ok(slot) => slot,
        Err(limit) => {
            return clients::over_limit(
                &shared.limits,
                limit,
                Some(&id),
                "this client has as many event streams open as one client may; close one",
            );
        }
    };
    let (writer, stream) = reply::event_stream(shared.limits.stream_write_timeout);
    let filter = filter.honoured(shared.info().capabilities);
    shared.tasks.spawn(pump_listen(
        shared.clone(),
        Listening {
            id,
            filter,
            facts,
            writer,
            _slot: slot,
            _client_slot: client_slot,
        },
    ));
    stream
}

struct Listening {
    id: RequestId,
    filter: ListenFilter,
    facts: ClientFacts,
    writer: SseWriter,
    _slot: ListenSlot,
    _client_slot: HeldSlot,
}

async fn pump_listen(shared: Arc<Shared>, listening: Listening) {
    let Listening {
        id,
        filter,
        facts,
        writer,
        _slot,
        _client_slot,
    } = listening;
    let (out, mut notifications) = mpsc::channel(REQUEST_NOTIFICATION_BUFFER);
    let stop = shared.drain.child_token();
    let listening = listen::listen_with_subscriptions(
        shared.service.as_ref(),
        &id,
        &filter,
        &facts,
        out,
        stop.clone(),
    );
    let mut listening = std::pin::pin!(listening);
    let mut ticks = reply::keep_alive(shared.limits.keep_alive);
    loop {
        tokio::select! {
            biased;
            Some(notification) = notifications.recv() => {
                if !writer.notification(&notification).await {
                    stop.cancel();
                    break;
                }
            }
            result = &mut listening => {
                if shared.drain.is_cancelled() {
                    while let Ok(notification) = notifications.try_recv() {
                        if !writer.notification(&notification).await {
                            return;
                        }
                    }
                    let answer = finish::finish(Ok(result), methods::SUBSCRIPTIONS_LISTEN, &facts, shared.info());
                    writer.answer(&id, &answer).await;
                }
                return;
            }
            () = writer.closed() => {
                stop.cancel();
                break;
            }
            _ = ticks.tick() => {
                if !writer.keep_alive().await {
                    stop.cancel();
                    break;
                }
            }
        }
    }
    // The client went away: let the listen loop see its stop and end.
    let _ = tokio::time::timeout(shared.limits.stream_write_timeout, listening).await;
}
