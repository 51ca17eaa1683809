//! One supervised server: connect, list what it offers, watch, reconnect with backoff, trip a
//! circuit breaker when it keeps failing.
//!
//! A server is ready only after initialization and listing have both completed on
//! the same transport; only then are its listings stored for publication. A closed
//! transport fails its outstanding calls (the wire layer does that at once), and the server
//! moves to `Failed` then `Backoff`; its last-known listings stay published while it
//! reconnects, and are withdrawn when the breaker opens.
//!
//! A stdio server's end is its process's end. An HTTP server has no process of ours, so
//! while it is ready and silent the supervisor pings it (`liveness.rs`: every 3 s without
//! an answer from it, 2 s deadline, one retry) and watches its listen stream: a server that
//! died or stalls goes to `Backoff` within seconds, with the reason naming its URL ("could
//! not reach http://…"), told to the host as a state notice like any other failure, and
//! is reconnected with the same backoff.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_config::{ServerEntry, ToolFilter, TransportEntry};
use switchboard_http::Authorizer;
use switchboard_protocol::{
    Era, LogLevel, Prompt, Resource, ResourceTemplate, Tool as McpTool, methods,
};
use switchboard_session::{Listing, Session, SessionError, SessionEvent};
use switchboard_wire::FrameTap;
use switchboard_wire::stdio::ShutdownGrace;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::connect::{ConnectOverrides, connect};
use crate::notice::{NOTICE_TEXT_LIMIT, NoticeKind, ServerNotice, bounded_text};

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Known from configuration; nothing started.
    Configured,
    /// Starting and listing what it offers.
    Connecting {
        /// 0 for the first attempt.
        attempt: u32,
    },
    /// Initialized and listed; its listings are published.
    Ready,
    /// The last attempt or the live connection failed; a retry is scheduled.
    Backoff {
        /// Why it failed (exit status, stderr tail, timeout, protocol error).
        reason: String,
        /// How long until the next attempt, when this state was entered.
        retry_in: Duration,
        /// Failures counted towards the breaker.
        failures: u32,
    },
    /// Failed too often in a short time; no more attempts until reload or re-enable.
    Broken {
        /// The last failure.
        reason: String,
    },
    /// Not started: disabled in configuration, or not trusted.
    Disabled {
        /// Why.
        reason: String,
    },
    /// Stopped by the runtime.
    Stopped,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Configured => f.write_str("configured"),
            ServerState::Connecting { attempt } => {
                write!(f, "connecting (attempt {})", attempt + 1)
            }
            ServerState::Ready => f.write_str("ready"),
            ServerState::Backoff {
                reason, retry_in, ..
            } => write!(f, "failed, retrying in {retry_in:?}: {reason}"),
            ServerState::Broken { reason } => {
                write!(f, "stopped after repeated failures: {reason}")
            }
            ServerState::Disabled { reason } => write!(f, "disabled: {reason}"),
            ServerState::Stopped => f.write_str("stopped"),
        }
    }
}

/// Restart policy.
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    /// First delay after a failure.
    pub initial_backoff: Duration,
    /// Longest delay.
    pub max_backoff: Duration,
    /// This many failures within `breaker_window` open the breaker.
    pub breaker_failures: u32,
    /// The window for counting failures.
    pub breaker_window: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            breaker_failures: 5,
            breaker_window: Duration::from_secs(60),
        }
    }
}

/// Deadlines and policies for servers.
#[derive(Debug, Clone)]
pub struct ServerPolicy {
    /// Connect deadline (per attempt), unless the entry sets `startupTimeout`.
    pub connect_timeout: Duration,
    /// Request deadline, unless the entry sets `timeout`.
    pub request_timeout: Duration,
    /// Restarts.
    pub restart: RestartPolicy,
    /// Debounce for list-changed notifications.
    pub list_changed_debounce: Duration,
    /// Grace periods when stopping a server.
    pub shutdown: ShutdownGrace,
    /// Gives HTTP servers their credentials (e.g. an OAuth client with the host's token
    /// store and login flow); `None` sends no authorization.
    pub authorizers: Option<Authorizers>,
    /// Answers what servers ask the host (roots, elicitation, sampling) and decides the
    /// client capabilities declared to them; `None` declares none and answers nothing.
    pub host: Option<HostHandler>,
    /// The host's part in every connection: a frame tap, the era it remembers for the
    /// server, and what each connect came to; `None` connects as the entry says.
    pub connect_hooks: Option<ConnectHooks>,
}

/// The host's side of server-to-client requests, for every server's session.
#[derive(Clone)]
pub struct HostHandler(pub Arc<dyn switchboard_session::ClientHandler>);

impl fmt::Debug for HostHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostHandler(..)")
    }
}

/// What a host adds to each connection the runtime makes to one of its servers, and what
/// it hears back: asked once per connect (the first and every reconnect). Every method has
/// a default that adds nothing.
pub trait ConnectionHooks: Send + Sync {
    /// Sees every frame of this connection both ways (e.g. the host's trace).
    fn tap(&self, entry: &ServerEntry) -> Option<Arc<dyn FrameTap>> {
        let _ = entry;
        None
    }

    /// The era the host remembers for this server ([`ConnectOverrides::era_hint`]).
    fn era_hint(&self, entry: &ServerEntry) -> Option<Era> {
        let _ = entry;
        None
    }

    /// How the connect ended (before listing): the era negotiated, or the failure, with
    /// the hint it was given, so that a host can remember the era or forget a wrong hint.
    fn connected(&self, entry: &ServerEntry, hint: Option<Era>, outcome: ConnectOutcome<'_>) {
        let _ = (entry, hint, outcome);
    }

    /// The launcher that applies sandboxes ([`ConnectOverrides::sandbox`]); without one,
    /// a server whose entry asks for a sandbox does not start.
    fn sandbox_launcher(&self) -> Option<crate::connect::SandboxLauncher> {
        None
    }

    /// Whether servers whose entry says nothing about a sandbox are sandboxed (a host's
    /// `--sandbox`); project-scoped servers are, whatever this says.
    fn default_sandbox(&self) -> switchboard_config::DefaultSandbox {
        switchboard_config::DefaultSandbox::Off
    }
}

/// How one connect ended, for [`ConnectionHooks::connected`].
#[derive(Debug, Clone, Copy)]
pub enum ConnectOutcome<'a> {
    /// Initialized in this era.
    Negotiated(Era),
    /// Not initialized.
    Failed(&'a SessionError),
}

/// The host's [`ConnectionHooks`], for every server's connections.
#[derive(Clone)]
pub struct ConnectHooks(pub Arc<dyn ConnectionHooks>);

impl fmt::Debug for ConnectHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnectHooks(..)")
    }
}

/// Picks the authorizer for one HTTP server entry, or none.
pub type AuthorizerFor = dyn Fn(&ServerEntry) -> Option<Arc<dyn Authorizer>> + Send + Sync;

/// The host's source of authorizers for HTTP servers, asked once per connection.
#[derive(Clone)]
pub struct Authorizers(pub Arc<AuthorizerFor>);

impl fmt::Debug for Authorizers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorizers(..)")
    }
}

impl Default for ServerPolicy {
    fn default() -> Self {
        ServerPolicy {
            connect_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            restart: RestartPolicy::default(),
            list_changed_debounce: Duration::from_millis(150),
            shutdown: ShutdownGrace::default(),
            authorizers: None,
            host: None,
            connect_hooks: None,
        }
    }
}

/// What a ready server offers, listed on one transport.
#[derive(Debug, Clone, Default)]
pub struct Listings {
    /// Tools.
    pub tools: Vec<McpTool>,
    /// Prompts.
    pub prompts: Vec<Prompt>,
    /// Resources.
    pub resources: Vec<Resource>,
    /// Resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// Server instructions.
    pub instructions: Option<String>,
    /// Problems met while listing (invalid entries, failed optional listings).
    pub problems: Vec<String>,
}

/// Where a supervisor reports (the runtime's republish signals and its notice feed) and
/// what the host chose for every server (log levels, kept across reconnects).
#[derive(Debug, Clone)]
pub(crate) struct Links {
    pub(crate) signals: mpsc::UnboundedSender<ServerSignal>,
    pub(crate) notices: broadcast::Sender<ServerNotice>,
    pub(crate) log_levels: Arc<Mutex<HashMap<String, LogLevel>>>,
}

/// Something the supervisor tells the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerSignal {
    /// What should be published changed (ready, re-listed, broken, stopped).
    Republish,
}

/// State shared between a server's supervisor and the rest of the runtime.
#[derive(Debug)]
pub(crate) struct ServerShared {
    pub(crate) name: String,
    pub(crate) state: watch::Sender<ServerState>,
    /// The live session while ready.
    pub(crate) session: Mutex<Option<Session>>,
    /// What to publish: set when ready, kept during backoff, cleared when broken or stopped.
    /// Its tools are all the server listed; the filter picks those published.
    pub(crate) listings: Mutex<Option<Arc<Listings>>>,
    /// The entry's tool filter, applied when the snapshot is built (a reload that changes
    /// only the filter replaces it here without reconnecting).
    tool_filter: Mutex<Arc<ToolFilter>>,
    /// Successful connections so far (1 after the first start).
    pub(crate) connections: Mutex<u32>,
    /// Where state changes are told (none for a server that never starts).
    notices: Option<broadcast::Sender<ServerNotice>>,
    /// Its sandbox as a status shows it (`on`, `off`, `partial (…)`, `remote`).
    pub(crate) sandbox: String,
    /// Which start of a definition this is: unique in the process, new for every
    /// supervisor (a reload that changes the entry, a restart).
    pub(crate) generation: u64,
}

/// The last [`ServerShared::generation`] given.
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An entry's sandbox as a status shows it.
pub fn sandbox_status(entry: &ServerEntry) -> String {
    match entry.transport {
        TransportEntry::Stdio { .. } => entry.sandbox.describe(),
        TransportEntry::Http { .. } => "remote".into(),
    }
}

impl ServerShared {
    pub(crate) fn new(
        entry: &ServerEntry,
        state: ServerState,
        notices: Option<broadcast::Sender<ServerNotice>>,
    ) -> Arc<ServerShared> {
        Arc::new(ServerShared {
            name: entry.name.clone(),
            state: watch::channel(state).0,
            session: Mutex::new(None),
            listings: Mutex::new(None),
            tool_filter: Mutex::new(Arc::new(entry.tool_filter.clone())),
            connections: Mutex::new(0),
            notices,
            sandbox: sandbox_status(entry),
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        })
    }

    pub(crate) fn session(&self) -> Option<Session> {
        lock(&self.session).clone()
    }

    /// Successful connections so far: a new count is a new session.
    pub(crate) fn connection(&self) -> u32 {
        *lock(&self.connections)
    }

    pub(crate) fn listings(&self) -> Option<Arc<Listings>> {
        lock(&self.listings).clone()
    }

    pub(crate) fn tool_filter(&self) -> Arc<ToolFilter> {
        lock(&self.tool_filter).clone()
    }

    pub(crate) fn set_tool_filter(&self, filter: &ToolFilter) {
        *lock(&self.tool_filter) = Arc::new(filter.clone());
    }

    /// The listed tools the filter lets through.
    pub(crate) fn allowed_tools(&self) -> Vec<McpTool> {
        let filter = self.tool_filter();
        self.listings().map_or_else(Vec::new, |c| {
            c.tools
                .iter()
                .filter(|t| filter.allows(&t.name))
                .cloned()
                .collect()
        })
    }

    fn set_state(&self, state: ServerState) {
        tracing::debug!(server = %self.name, %state, "server state");
        self.state.send_replace(state.clone());
        if let Some(notices) = &self.notices {
            // No subscriber (no host that listens) is fine.
            let _ = notices.send(ServerNotice {
                server: self.name.clone(),
                kind: NoticeKind::State(state),
            });
        }
    }

    /// Waits until the server is ready with an open session (returns it) or `deadline`
    /// passes, or the server reaches a state it will not leave by itself.
    pub(crate) async fn ready_session(&self, deadline: Duration) -> Result<Session, ServerState> {
        let mut state = self.state.subscribe();
        let wait = async {
            loop {
                let current = state.borrow_and_update().clone();
                match current {
                    ServerState::Ready => {
                        // A session that closed is not handed out: the supervisor is
                        // about to replace it.
                        if let Some(session) = self.session()
                            && session.close_reason().is_none()
                        {
                            return Ok(session);
                        }
                    }
                    ServerState::Broken { .. }
                    | ServerState::Disabled { .. }
                    | ServerState::Stopped => return Err(current),
                    _ => {}
                }
                if state.changed().await.is_err() {
                    return Err(ServerState::Stopped);
                }
            }
        };
        match tokio::time::timeout(deadline, wait).await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.state.borrow().clone()),
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running supervisor and the handles to stop it.
#[derive(Debug)]
pub(crate) struct Supervisor {
    pub(crate) shared: Arc<ServerShared>,
    pub(crate) entry: ServerEntry,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Starts supervising `entry`.
    pub(crate) fn start(entry: ServerEntry, policy: ServerPolicy, links: Links) -> Supervisor {
        let shared =
            ServerShared::new(&entry, ServerState::Configured, Some(links.notices.clone()));
        let stop = CancellationToken::new();
        let task = tokio::spawn(supervise(SuperviseArgs {
            shared: shared.clone(),
            entry: entry.clone(),
            policy,
            links,
            stop: stop.clone(),
        }));
        Supervisor {
            shared,
            entry,
            stop,
            task: Some(task),
        }
    }

    /// A slot for a server that is not started (disabled or untrusted).
    pub(crate) fn idle(entry: ServerEntry, reason: String) -> Supervisor {
        let shared = ServerShared::new(&entry, ServerState::Disabled { reason }, None);
        Supervisor {
            shared,
            entry,
            stop: CancellationToken::new(),
            task: None,
        }
    }

    /// Stops the supervisor and shuts the server down gracefully; bounded by the grace periods.
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

struct SuperviseArgs {
    shared: Arc<ServerShared>,
    entry: ServerEntry,
    policy: ServerPolicy,
    links: Links,
    stop: CancellationToken,
}

async fn supervise(args: SuperviseArgs) {
    let SuperviseArgs {
        shared,
        entry,
        policy,
        links,
        stop,
    } = args;
    let signals = &links.signals;
    let mut failures: VecDeque<Instant> = VecDeque::new();
    let mut attempt = 0u32;
    let mut last_reason: Option<String> = None;
    loop {
        shared.set_state(ServerState::Connecting { attempt });
        let connected = tokio::select! {
            () = stop.cancelled() => break,
            connected = connect_and_list(&entry, &policy) => connected,
        };
        let reason = match connected {
            Ok((session, events, mut listings, subscription)) => {
                let level = lock(&links.log_levels).get(&entry.name).copied();
                if let Some(level) = level
                    && let Err(error) = session.set_log_level(level).await
                {
                    listings
                        .problems
                        .push(format!("logging/setLevel {level} failed: {error}"));
                }
                *lock(&shared.session) = Some(session.clone());
                *lock(&shared.listings) = Some(Arc::new(listings));
                *lock(&shared.connections) += 1;
                shared.set_state(ServerState::Ready);
                let _ = signals.send(ServerSignal::Republish);
                attempt = 0;
                let watched = Watched {
                    session: &session,
                    events,
                    subscription,
                    url: entry.display_url(),
                };
                let outcome = watch_session(&shared, watched, &policy, &links, &stop).await;
                *lock(&shared.session) = None;
                match outcome {
                    WatchOutcome::Stopped => {
                        let _ = session.shutdown(policy.shutdown).await;
                        break;
                    }
                    WatchOutcome::Closed(reason) => reason,
                }
            }
            Err(error) => error.to_string(),
        };
        // The reason can quote the entry's secrets back (a stderr tail, a server's answer).
        let reason = entry.secrets().redact(&reason).into_owned();
        // Said once per new reason, on one line (the whole reason, stderr tail and all, is
        // in the server's state and the host's notices); a crash loop repeating itself is
        // a debug line.
        let headline = reason.lines().next().unwrap_or("").to_owned();
        if last_reason.as_deref() == Some(reason.as_str()) {
            tracing::debug!(server = %entry.name, reason = %headline, "server failed again");
        } else {
            tracing::warn!(server = %entry.name, reason = %headline, "server failed");
        }
        last_reason = Some(reason.clone());
        let now = Instant::now();
        failures.push_back(now);
        while failures
            .front()
            .is_some_and(|t| now.duration_since(*t) > policy.restart.breaker_window)
        {
            failures.pop_front();
        }
        let failure_count = u32::try_from(failures.len()).unwrap_or(u32::MAX);
        if failure_count >= policy.restart.breaker_failures {
            *lock(&shared.listings) = None;
            shared.set_state(ServerState::Broken { reason });
            let _ = signals.send(ServerSignal::Republish);
            stop.cancelled().await;
            break;
        }
        let retry_in = backoff_delay(&policy.restart, attempt, &entry.name);
        shared.set_state(ServerState::Backoff {
            reason,
            retry_in,
            failures: failure_count,
        });
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(retry_in) => {}
        }
        attempt = attempt.saturating_add(1);
    }
    *lock(&shared.listings) = None;
    shared.set_state(ServerState::Stopped);
}

/// Exponential backoff with jitter in [50 %, 100 %] of the step (deterministic per server and
/// attempt, so tests are repeatable while servers still spread out).
fn backoff_delay(policy: &RestartPolicy, attempt: u32, server: &str) -> Duration {
    let step = policy
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(policy.max_backoff);
    let mut seed: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain(attempt.to_le_bytes()) {
        seed = (seed ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let fraction = 0.5 + (seed % 1000) as f64 / 2000.0;
    step.mul_f64(fraction)
}

enum WatchOutcome {
    Stopped,
    Closed(String),
}

/// A ready session as its supervisor watches it.
struct Watched<'a> {
    session: &'a Session,
    events: broadcast::Receiver<SessionEvent>,
    /// Its 2026-07-28 listen stream, held while it is watched.
    subscription: Option<switchboard_wire::PendingCall>,
    /// An HTTP server's URL as it may be shown; `None` for stdio.
    url: Option<String>,
}

/// Watches a ready session until it closes, its HTTP server is found gone (`liveness`), or
/// the runtime stops it; re-lists on list-changed notifications the server declared,
/// debounced.
async fn watch_session(
    shared: &ServerShared,
    watched: Watched<'_>,
    policy: &ServerPolicy,
    links: &Links,
    stop: &CancellationToken,
) -> WatchOutcome {
    let Watched {
        session,
        mut events,
        subscription,
        url,
    } = watched;
    let gone = crate::liveness::watch(session, url, subscription);
    tokio::pin!(gone);
    let signals = &links.signals;
    let declared = &session.negotiated().capabilities;
    let mut pending_relist = false;
    let debounce = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(debounce);
    loop {
        tokio::select! {
            () = stop.cancelled() => return WatchOutcome::Stopped,
            reason = session.closed() => return WatchOutcome::Closed(reason.to_string()),
            reason = &mut gone => return WatchOutcome::Closed(reason),
            () = &mut debounce, if pending_relist => {
                pending_relist = false;
                match list_all(session).await {
                    Ok(listings) => {
                        *lock(&shared.listings) = Some(Arc::new(listings));
                        let _ = signals.send(ServerSignal::Republish);
                    }
                    Err(error) => tracing::warn!(server = %shared.name, %error, "re-listing after a change failed"),
                }
            }
            event = events.recv() => {
                if let Some(kind) = notice_of(&event) {
                    // No subscriber (no host that passes them on) is fine.
                    let _ = links.notices.send(ServerNotice { server: shared.name.clone(), kind });
                }
                let relist = match event {
                    Ok(SessionEvent::Notification(n)) => match n.method.as_str() {
                        methods::TOOLS_LIST_CHANGED => declared.tools.is_some_and(|c| c.list_changed),
                        methods::PROMPTS_LIST_CHANGED => declared.prompts.is_some_and(|c| c.list_changed),
                        methods::RESOURCES_LIST_CHANGED => declared.resources.is_some_and(|c| c.list_changed),
                        _ => false,
                    },
                    // Missed events may have included a change: re-list to be safe.
                    Err(broadcast::error::RecvError::Lagged(_)) => true,
                    Err(broadcast::error::RecvError::Closed) => false,
                    Ok(_) => false,
                };
                if relist && !pending_relist {
                    pending_relist = true;
                    debounce.as_mut().reset(Instant::now() + policy.list_changed_debounce);
                }
            }
        }
    }
}

/// What a session event tells the host: every notification but the list changes (those
/// the supervisor acts on, and the host hears of the publication) and a listen stream's
/// acknowledgement (the session's own business), unusable frames, and the runtime's own
/// lag.
fn notice_of(event: &Result<SessionEvent, broadcast::error::RecvError>) -> Option<NoticeKind> {
    match event {
        Ok(SessionEvent::Notification(n)) => match n.method.as_str() {
            methods::TOOLS_LIST_CHANGED
            | methods::PROMPTS_LIST_CHANGED
            | methods::RESOURCES_LIST_CHANGED
            | methods::SUBSCRIPTIONS_ACKNOWLEDGED => None,
            method => Some(NoticeKind::of(method, n.params.as_ref())),
        },
        Ok(SessionEvent::Malformed(malformed)) => Some(NoticeKind::Unusable {
            detail: bounded_text(&malformed.to_string(), NOTICE_TEXT_LIMIT),
        }),
        Ok(SessionEvent::UnexpectedResponse { reason, .. }) => Some(NoticeKind::Unusable {
            detail: format!("an answer no request was waiting for ({reason:?})"),
        }),
        Ok(SessionEvent::ServerRequest { .. }) => None,
        Err(broadcast::error::RecvError::Lagged(missed)) => Some(NoticeKind::Missed {
            notifications: *missed,
        }),
        Err(broadcast::error::RecvError::Closed) => None,
    }
}

type Connected = (
    Session,
    broadcast::Receiver<SessionEvent>,
    Listings,
    Option<switchboard_wire::PendingCall>,
);

/// Starts (stdio) or reaches (HTTP) the server as its supervisor does, with these
/// credentials for an HTTP server: the policy's deadlines, the host's handler and the
/// host's connect hooks (told how the connect ended).
pub(crate) async fn connect_with(
    entry: &ServerEntry,
    policy: &ServerPolicy,
    authorizer: Option<Arc<dyn Authorizer>>,
) -> Result<Session, SessionError> {
    let hooks = policy.connect_hooks.as_ref().map(|hooks| hooks.0.as_ref());
    let era_hint = hooks.and_then(|hooks| hooks.era_hint(entry));
    let overrides = ConnectOverrides {
        default_request_timeout: Some(policy.request_timeout),
        default_connect_timeout: Some(policy.connect_timeout),
        authorizer,
        handler: policy.host.as_ref().map(|host| host.0.clone()),
        tap: hooks.and_then(|hooks| hooks.tap(entry)),
        era_hint,
        sandbox: hooks.and_then(|hooks| hooks.sandbox_launcher()),
        ..ConnectOverrides::default()
    };
    let connected = connect(entry, overrides).await;
    if let Some(hooks) = hooks {
        let outcome = match &connected {
            Ok(session) => ConnectOutcome::Negotiated(session.negotiated().era),
            Err(error) => ConnectOutcome::Failed(error),
        };
        hooks.connected(entry, era_hint, outcome);
    }
    connected
}

/// Starts the server and lists what it offers on that same transport.
async fn connect_and_list(
    entry: &ServerEntry,
    policy: &ServerPolicy,
) -> Result<Connected, SessionError> {
    let authorizer = match &entry.transport {
        TransportEntry::Http { .. } => policy
            .authorizers
            .as_ref()
            .and_then(|source| (source.0)(entry)),
        TransportEntry::Stdio { .. } => None,
    };
    let session = connect_with(entry, policy, authorizer).await?;
    let events = session.events();
    let listed = tokio::time::timeout(policy.connect_timeout, list_all(&session)).await;
    match listed {
        Ok(Ok(listings)) => {
            let subscription = if session.negotiated().era == Era::Modern {
                open_subscription(&session).await
            } else {
                None
            };
            Ok((session, events, listings, subscription))
        }
        Ok(Err(error)) => {
            if let Some(p) = session.process() {
                p.kill()
            }
            Err(error)
        }
        Err(_) => {
            if let Some(p) = session.process() {
                p.kill()
            }
            Err(SessionError::Timeout {
                server: entry.name.as_str().into(),
                method: "tools/list".into(),
                after: policy.connect_timeout,
                stderr_tail: session.process().map(|p| p.stderr_tail()),
            })
        }
    }
}

/// Modern servers deliver list changes only on a `subscriptions/listen` stream. The returned
/// handle keeps it open; the supervisor's liveness watch holds it (and opens it again when
/// it ends while the server answers) and drops it with the session.
pub(crate) async fn open_subscription(session: &Session) -> Option<switchboard_wire::PendingCall> {
    let declared = &session.negotiated().capabilities;
    let filter = switchboard_protocol::SubscriptionFilter {
        tools_list_changed: declared.tools.is_some_and(|c| c.list_changed),
        prompts_list_changed: declared.prompts.is_some_and(|c| c.list_changed),
        resources_list_changed: declared.resources.is_some_and(|c| c.list_changed),
        resource_subscriptions: Vec::new(),
    };
    if filter == switchboard_protocol::SubscriptionFilter::default() {
        return None;
    }
    match session.listen(&filter).await {
        Ok((call, _honoured)) => Some(call),
        Err(error) => {
            tracing::warn!(server = %session.server_name(), %error, "could not open the notification subscription");
            None
        }
    }
}

/// Lists tools (required when declared), prompts, resources and templates (optional:
/// failures become problems, not a failed server), all four asked for at once.
pub(crate) async fn list_all(session: &Session) -> Result<Listings, SessionError> {
    let declared = &session.negotiated().capabilities;
    // Asked for together: one round trip to the server instead of one per listing (a
    // start's time is mostly such waits). Their outcomes are read in a fixed order.
    let has_resources = declared.resources.is_some();
    let (tools, prompts, resources, templates) = tokio::join!(
        if_declared(declared.tools.is_some(), session.list_tools()),
        if_declared(declared.prompts.is_some(), session.list_prompts()),
        if_declared(has_resources, session.list_resources()),
        if_declared(has_resources, session.list_resource_templates()),
    );
    let mut listings = Listings {
        instructions: session.negotiated().instructions.clone(),
        ..Listings::default()
    };
    if let Some(listing) = tools {
        let listing = listing?;
        listings.problems.extend(
            listing
                .problems
                .iter()
                .map(|p| format!("tools/list page {}: {}", p.page, p.detail)),
        );
        listings.tools = listing.items;
    }
    let problems = &mut listings.problems;
    listings.prompts = kept_or_noted(prompts, "prompts/list", problems);
    listings.resources = kept_or_noted(resources, "resources/list", problems);
    listings.templates = kept_or_noted(templates, "resources/templates/list", problems);
    Ok(listings)
}

/// `listing`'s outcome when the server declared the capability; `None` (nothing asked)
/// when it did not.
async fn if_declared<T>(
    declared: bool,
    listing: impl Future<Output = Result<T, SessionError>>,
) -> Option<Result<T, SessionError>> {
    match declared {
        true => Some(listing.await),
        false => None,
    }
}

/// An optional listing's items; a failed one is a problem noted (its items stay empty).
fn kept_or_noted<T>(
    outcome: Option<Result<Listing<T>, SessionError>>,
    method: &str,
    problems: &mut Vec<String>,
) -> Vec<T> {
    match outcome {
        Some(Ok(listing)) => listing.items,
        Some(Err(error)) => {
            problems.push(format!("{method} failed: {error}"));
            Vec::new()
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let policy = RestartPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            ..RestartPolicy::default()
        };
        let delays: Vec<u128> = (0..6)
            .map(|a| backoff_delay(&policy, a, "srv").as_millis())
            .collect();
        for (attempt, delay) in delays.iter().enumerate() {
            let step = (100u128 << attempt).min(1000);
            assert!(
                *delay >= step / 2 && *delay <= step,
                "attempt {attempt}: {delay} ms for step {step}"
            );
        }
        assert_ne!(
            backoff_delay(&policy, 0, "a"),
            backoff_delay(&policy, 0, "b"),
            "servers spread out"
        );
    }
}
