//! Legacy sessions: what an `initialize` without `Mcp-Session-Id` opens.
//!
//! A session keeps the client's facts (negotiated version, capabilities, `logging/setLevel`
//! level, and the identity of the client that opened it: a request of another identity
//! that names the session gets 404, as for an unknown one), its resource subscriptions, its requests in flight (so `notifications/cancelled`
//! and DELETE can cancel them) and whether its GET stream is open. A resource is
//! subscribed to (at the service: a gateway follows it upstream) once per session, however
//! often the session asks, and when the session ends each one it still follows is
//! unsubscribed from (a task of the server's, bounded). Ids are 32 random bytes
//! from the operating system, hex-encoded (visible ASCII). A session unused for
//! [`HttpLimits::session_idle`](super::HttpLimits) with nothing in flight and no GET stream
//! ends; an ended id is unknown (404) from then on. At most
//! [`HttpLimits::max_sessions`](super::HttpLimits) are open, at most
//! [`HttpLimits::max_sessions_per_client`](super::HttpLimits) of one client; at either
//! limit a new session takes the place of the least recently used idle one (of the
//! client's own, at its limit), counted as an eviction, and is refused only when all of
//! them are busy (429 for the client's limit, 503 for the server's): one client opening
//! sessions in a loop recycles its own, and a newcomer can always open one unless every
//! session is busy.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use switchboard_wire::{ErrorObject, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::HttpLimits;
use super::clients::{Limit, Tally};
use super::resume::{MAX_RESUMABLE_STREAMS, Resume};
use crate::core::listen::{ListenFilter, MAX_RESOURCE_SUBSCRIPTIONS};
use crate::core::{
    ClientFacts, ClientIdentity, LogLevel, RequestContext, Service, ServiceRequest, SessionKey,
};

/// Questions of one session waiting for the client's answer at most; a question beyond
/// them is not sent (its asker hears that the request ended).
pub(super) const MAX_OPEN_QUESTIONS: usize = 64;

/// The longest an ended session's unsubscriptions take, all of them.
const RELEASE_WAIT: Duration = std::time::Duration::from_secs(10);

/// Unsubscribes the resources of sessions that ended.
#[derive(Clone)]
pub(super) struct Release {
    pub(super) service: Arc<dyn Service>,
    pub(super) tasks: TaskTracker,
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Release")
    }
}

impl Release {
    fn unsubscribe(&self, facts: &ClientFacts, uris: Vec<String>) {
        if uris.is_empty() {
            return;
        }
        let service = self.service.clone();
        let facts = facts.clone();
        self.tasks.spawn(async move {
            let all = async {
                for uri in uris {
                    // A fresh token: the session's requests were cancelled with it.
                    let context =
                        RequestContext::new(facts.clone(), CancellationToken::new(), None, None);
                    if let Err(error) = service
                        .handle(ServiceRequest::Unsubscribe { uri }, context)
                        .await
                    {
                        tracing::debug!(%error, "an ended session's unsubscription failed");
                    }
                }
            };
            if tokio::time::timeout(RELEASE_WAIT, all).await.is_err() {
                tracing::debug!("an ended session's unsubscriptions did not finish in time");
            }
        });
    }
}

/// Why a session could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpenError {
    /// As many sessions as allowed are open, every one of them busy.
    Full,
    /// The client has as many sessions open as one client may, every one of them busy.
    ClientFull,
    /// The operating system gave no random bytes.
    NoRandomness,
}

/// Why a request could not be registered in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RegisterError {
    /// As many requests as allowed are in flight in the session.
    Busy,
    /// A request with this id is in flight in the session.
    Duplicate,
}

/// The table of open sessions.
#[derive(Debug)]
pub(super) struct Sessions {
    open: Mutex<Table>,
    max_sessions: usize,
    max_per_client: usize,
    max_in_flight: usize,
    tally: Arc<Tally>,
    idle: Duration,
    release: Release,
}

/// The open sessions by id, and how many each client has (so that opening one is not a
/// walk over all of them: at 10,000 sessions, that walk made filling the table quadratic).
#[derive(Debug, Default)]
struct Table {
    by_id: HashMap<Arc<str>, Arc<Session>>,
    per_client: HashMap<ClientIdentity, usize>,
}

impl Table {
    fn len(&self) -> usize {
        self.by_id.len()
    }

    fn of_client(&self, identity: &ClientIdentity) -> usize {
        self.per_client.get(identity).copied().unwrap_or(0)
    }

    fn insert(&mut self, session: Arc<Session>) {
        *self
            .per_client
            .entry(session.identity().clone())
            .or_insert(0) += 1;
        self.by_id.insert(session.id.clone(), session);
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let session = self.by_id.remove(id)?;
        if let Some(count) = self.per_client.get_mut(session.identity()) {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(session.identity());
            }
        }
        Some(session)
    }

    fn drain(&mut self) -> Vec<Arc<Session>> {
        self.per_client.clear();
        self.by_id.drain().map(|(_, session)| session).collect()
    }
}

/// One legacy session.
#[derive(Debug)]
pub(super) struct Session {
    id: Arc<str>,
    facts: ClientFacts,
    state: Mutex<State>,
    /// Cancelled when the session ends (DELETE, expiry, shutdown).
    ended: CancellationToken,
    max_in_flight: usize,
    release: Release,
    /// What its requests' questions name.
    key: SessionKey,
}

/// Where the client's answer to a question goes.
type AnswerSlot = oneshot::Sender<Result<serde_json::Value, ErrorObject>>;

#[derive(Debug)]
struct State {
    log_level: Option<LogLevel>,
    last_used: Instant,
    subscriptions: HashSet<String>,
    in_flight: HashMap<RequestId, CancellationToken>,
    /// Questions sent to the client, by the id they went with, waiting for its answer.
    questions: HashMap<RequestId, AnswerSlot>,
    next_question: u64,
    /// Request streams that can be resumed, by number: where a resuming GET goes.
    resumable: HashMap<u64, mpsc::Sender<Resume>>,
    next_stream: u64,
    stream_open: bool,
    /// The session ended: nothing more is recorded in it.
    over: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    pub(super) fn new(limits: HttpLimits, release: Release, tally: Arc<Tally>) -> Sessions {
        Sessions {
            open: Mutex::new(Table::default()),
            max_sessions: limits.max_sessions.max(1),
            max_per_client: limits.max_sessions_per_client.max(1),
            tally,
            max_in_flight: limits.max_in_flight_per_session,
            idle: limits.session_idle,
            release,
        }
    }

    /// How many sessions are open.
    pub(super) fn count(&self) -> usize {
        lock(&self.open).len()
    }

    /// Opens a session for the facts an `initialize` left (their identity is its client's).
    /// A client at [`HttpLimits::max_sessions_per_client`] loses its least recently used
    /// idle session for it, and the server at [`HttpLimits::max_sessions`] its least
    /// recently used idle one; only when those are all busy is the session refused. Expired
    /// sessions are swept first when a limit is reached (else the periodic sweep and `get`
    /// end them): a full table is never cleared of live sessions while dead ones hold room.
    pub(super) fn open(&self, facts: ClientFacts) -> Result<Arc<Session>, OpenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| OpenError::NoRandomness)?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let session = Arc::new(Session {
            id: Arc::from(id),
            facts,
            state: Mutex::new(State {
                log_level: None,
                last_used: Instant::now(),
                subscriptions: HashSet::new(),
                in_flight: HashMap::new(),
                questions: HashMap::new(),
                next_question: 0,
                resumable: HashMap::new(),
                next_stream: 0,
                stream_open: false,
                over: false,
            }),
            ended: CancellationToken::new(),
            max_in_flight: self.max_in_flight,
            release: self.release.clone(),
            key: SessionKey::fresh(),
        });
        let identity = session.identity();
        let at_a_limit = |open: &Table| {
            open.of_client(identity) >= self.max_per_client || open.len() >= self.max_sessions
        };
        if at_a_limit(&lock(&self.open)) {
            self.sweep();
        }
        let evicted = {
            let mut open = lock(&self.open);
            let mut evicted = Vec::new();
            if open.of_client(identity) >= self.max_per_client {
                let theirs = open
                    .by_id
                    .values()
                    .filter(|other| other.identity() == identity);
                let Some(id) = least_recently_used_idle(theirs) else {
                    self.tally.refused(Limit::SessionsPerClient);
                    return Err(OpenError::ClientFull);
                };
                evicted.extend(open.remove(&id));
            }
            if open.len() >= self.max_sessions {
                let Some(id) = least_recently_used_idle(open.by_id.values()) else {
                    self.tally.refused(Limit::Sessions);
                    return Err(OpenError::Full);
                };
                evicted.extend(open.remove(&id));
            }
            open.insert(session.clone());
            evicted
        };
        for ended in evicted {
            self.tally.evicted_sessions.fetch_add(1, Ordering::Relaxed);
            ended.end();
        }
        Ok(session)
    }

    /// The live session with this id (and marks it used); `None` for an unknown, ended or
    /// expired one.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut open = lock(&self.open);
        let session = open.by_id.get(id)?.clone();
        if session.expired(self.idle) {
            open.remove(id);
            drop(open);
            session.end();
            return None;
        }
        lock(&session.state).last_used = Instant::now();
        Some(session)
    }

    /// Ends a session; `false` when there was none with this id.
    pub(super) fn end(&self, id: &str) -> bool {
        let removed = lock(&self.open).remove(id);
        match removed {
            Some(session) => {
                session.end();
                true
            }
            None => false,
        }
    }

    /// Ends the sessions that have expired.
    pub(super) fn sweep(&self) {
        let expired: Vec<Arc<Session>> = {
            let mut open = lock(&self.open);
            let ids: Vec<Arc<str>> = open
                .by_id
                .values()
                .filter(|session| session.expired(self.idle))
                .map(|session| session.id.clone())
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        for session in expired {
            session.end();
        }
    }

    /// Ends every session (shutdown).
    pub(super) fn end_all(&self) {
        let all = lock(&self.open).drain();
        for session in all {
            session.end();
        }
    }
}

/// The id of the idle session (nothing in flight, no GET stream) used least recently.
fn least_recently_used_idle<'s>(
    sessions: impl Iterator<Item = &'s Arc<Session>>,
) -> Option<Arc<str>> {
    sessions
        .filter_map(|session| session.idle_since().map(|since| (since, session)))
        .min_by_key(|(since, _)| *since)
        .map(|(_, session)| session.id.clone())
}

impl Session {
    /// When the session was last used, if it is idle now (no request in flight, no GET
    /// stream open).
    fn idle_since(&self) -> Option<Instant> {
        let state = lock(&self.state);
        (state.in_flight.is_empty() && !state.stream_open).then_some(state.last_used)
    }

    /// The session's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Who opened the session (only the same identity may use it).
    pub(super) fn identity(&self) -> &ClientIdentity {
        &self.facts.identity
    }

    /// The version `initialize` negotiated.
    pub(super) fn version(&self) -> &str {
        &self.facts.protocol_version
    }

    /// The facts a request of this session is served under.
    pub(super) fn facts(&self) -> ClientFacts {
        ClientFacts {
            log_level: lock(&self.state).log_level,
            ..self.facts.clone()
        }
    }

    /// `logging/setLevel`.
    pub(super) fn set_log_level(&self, level: LogLevel) {
        lock(&self.state).log_level = Some(level);
    }

    /// Whether a log message of this level goes to the session's GET stream: at or above
    /// its `logging/setLevel` level, or any before it set one (the legacy era's default).
    pub(super) fn wants_log(&self, level: LogLevel) -> bool {
        lock(&self.state)
            .log_level
            .is_none_or(|wanted| level >= wanted)
    }

    /// Cancelled when the session ends.
    pub(super) fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    fn end(&self) {
        let (in_flight, followed): (Vec<CancellationToken>, Vec<String>) = {
            let mut state = lock(&self.state);
            state.over = true;
            state.questions.clear();
            state.resumable.clear();
            (
                state.in_flight.drain().map(|(_, token)| token).collect(),
                state.subscriptions.drain().collect(),
            )
        };
        for token in in_flight {
            token.cancel();
        }
        self.ended.cancel();
        self.release.unsubscribe(&self.facts, followed);
    }

    fn expired(&self, idle: Duration) -> bool {
        let state = lock(&self.state);
        state.in_flight.is_empty() && !state.stream_open && state.last_used.elapsed() >= idle
    }

    /// Records a request in flight (its cancellation, for `notifications/cancelled`).
    pub(super) fn register(
        &self,
        id: RequestId,
        cancel: CancellationToken,
    ) -> Result<(), RegisterError> {
        let mut state = lock(&self.state);
        if state.in_flight.contains_key(&id) {
            return Err(RegisterError::Duplicate);
        }
        if state.in_flight.len() >= self.max_in_flight {
            return Err(RegisterError::Busy);
        }
        state.in_flight.insert(id, cancel);
        Ok(())
    }

    /// Forgets a request that ended.
    pub(super) fn unregister(&self, id: &RequestId) {
        let mut state = lock(&self.state);
        state.in_flight.remove(id);
        state.last_used = Instant::now();
    }

    /// `notifications/cancelled`: cancels the request, if it is in flight (else nothing).
    pub(super) fn cancel(&self, id: &RequestId) {
        let token = lock(&self.state).in_flight.get(id).cloned();
        if let Some(token) = token {
            token.cancel();
        }
    }

    /// What the session's requests' questions name.
    pub(super) fn key(&self) -> SessionKey {
        self.key
    }

    /// Records a question about to be sent, with the id it goes with; `None` when the
    /// session ended or has [`MAX_OPEN_QUESTIONS`] open.
    pub(super) fn open_question(&self, reply: AnswerSlot) -> Option<RequestId> {
        let mut state = lock(&self.state);
        if state.over || state.questions.len() >= MAX_OPEN_QUESTIONS {
            return None;
        }
        state.next_question += 1;
        // Ids of their own kind: nobody mistakes them for the client's.
        let id = RequestId::from(format!("q-{}", state.next_question).as_str());
        state.questions.insert(id.clone(), reply);
        Some(id)
    }

    /// The client's answer to a question: handed to its asker; `false` when no question
    /// with this id is open (answered already, withdrawn, or never asked).
    pub(super) fn answer_question(
        &self,
        id: &RequestId,
        answer: Result<serde_json::Value, ErrorObject>,
    ) -> bool {
        let slot = lock(&self.state).questions.remove(id);
        match slot {
            Some(slot) => {
                let _ = slot.send(answer);
                true
            }
            None => false,
        }
    }

    /// Forgets questions whose request ended (their askers hear so).
    pub(super) fn close_questions(&self, ids: &[RequestId]) {
        let mut state = lock(&self.state);
        for id in ids {
            state.questions.remove(id);
        }
    }

    /// Numbers a request stream that can be resumed; `None` when the session ended or has
    /// [`MAX_RESUMABLE_STREAMS`] already.
    pub(super) fn open_stream(&self) -> Option<(u64, mpsc::Receiver<Resume>)> {
        let mut state = lock(&self.state);
        if state.over || state.resumable.len() >= MAX_RESUMABLE_STREAMS {
            return None;
        }
        state.next_stream += 1;
        let stream = state.next_stream;
        let (resumes, resumed) = mpsc::channel(1);
        state.resumable.insert(stream, resumes);
        Some((stream, resumed))
    }

    /// Forgets a stream that can no longer be resumed.
    pub(super) fn close_stream(&self, stream: u64) {
        lock(&self.state).resumable.remove(&stream);
    }

    /// Hands a resuming client to its stream; `Err` gives it back when there is no such
    /// stream (ended, or never opened).
    pub(super) fn resume(&self, stream: u64, resume: Resume) -> Result<(), Resume> {
        let sender = lock(&self.state).resumable.get(&stream).cloned();
        match sender {
            Some(sender) => sender.try_send(resume).map_err(|error| error.into_inner()),
            None => Err(resume),
        }
    }

    /// Claims the session's one GET stream; `false` when it is open already.
    pub(super) fn claim_stream(&self) -> bool {
        let mut state = lock(&self.state);
        !std::mem::replace(&mut state.stream_open, true)
    }

    /// Releases the GET stream.
    pub(super) fn release_stream(&self) {
        let mut state = lock(&self.state);
        state.stream_open = false;
        state.last_used = Instant::now();
    }

    /// Whether another resource can be subscribed to.
    pub(super) fn can_subscribe(&self) -> bool {
        lock(&self.state).subscriptions.len() < MAX_RESOURCE_SUBSCRIPTIONS
    }

    /// Whether the session follows exactly this resource.
    pub(super) fn subscribed(&self, uri: &str) -> bool {
        lock(&self.state).subscriptions.contains(uri)
    }

    /// `resources/subscribe` succeeded at the service. A session that ended meanwhile
    /// keeps nothing: the subscription is undone at once.
    pub(super) fn subscribe(&self, uri: String) {
        let undo = {
            let mut state = lock(&self.state);
            if state.over || state.subscriptions.contains(&uri) {
                Some(uri)
            } else {
                state.subscriptions.insert(uri);
                None
            }
        };
        if let Some(uri) = undo {
            self.release.unsubscribe(&self.facts, vec![uri]);
        }
    }

    /// `resources/unsubscribe` succeeded.
    pub(super) fn unsubscribe(&self, uri: &str) {
        lock(&self.state).subscriptions.remove(uri);
    }

    /// The resources subscribed to.
    pub(super) fn subscriptions(&self) -> Vec<String> {
        lock(&self.state).subscriptions.iter().cloned().collect()
    }

    /// Whether an update of `uri` concerns the session: a resource it subscribed to, or one
    /// under it (as listen streams follow them).
    pub(super) fn follows(&self, uri: &str) -> bool {
        let state = lock(&self.state);
        state.subscriptions.contains(uri)
            || ListenFilter {
                resource_uris: state.subscriptions.iter().cloned().collect(),
                ..ListenFilter::default()
            }
            .follows(uri)
    }
}
