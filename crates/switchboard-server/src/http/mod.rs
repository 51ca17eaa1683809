//! The Streamable HTTP transport: a [`Service`] served on one endpoint (`/mcp`), both eras,
//! and on `/mcp/<name>` for each name the service says it serves
//! ([`Service::serves_endpoint`], a gateway's profiles): the request's facts carry the
//! endpoint, a legacy session belongs to the endpoint that opened it, and an endpoint the
//! service does not serve is 404 — said only after the guard, so that which exist is not
//! told to a client without credentials.
//!
//! The era of each POST is read from its headers (`MCP-Protocol-Version`, §1.1 of the
//! serving notes): a 2026-07-28 request is served statelessly after its standard headers
//! are checked against its body (`Mcp-Method`, `Mcp-Name`, the version; -32020 on a
//! mismatch); anything else belongs to a legacy session that an `initialize` without
//! `Mcp-Session-Id` opens. Legacy sessions have a GET stream for what the server announces
//! (list changes, updates of the resources the session subscribed to, log messages at its
//! `logging/setLevel` level, every one before it sets one) and end with DELETE or after an
//! idle time. A request is answered with one JSON body, or with an event stream once its
//! handler sends a notification first (progress, a log message); `subscriptions/listen` is always a stream. A modern client that goes away
//! cancels its request; a legacy one cancels with `notifications/cancelled`.
//!
//! In front of everything: the `Origin` and (on loopback) `Host` checks (403), the optional
//! authentication (401: a static bearer token, or an OAuth access token checked by
//! [`oauth::OAuthResource`], whose metadata is served at
//! `/.well-known/oauth-protected-resource`), and caps on bodies (413), sessions,
//! connections, streams and requests in flight (503, [`crate::stdio::codes::BUSY`]).
//! What passes the guard names the request's [`crate::core::ClientIdentity`] (the token,
//! the OAuth subject, or the peer's address), and every client has its own limits, far
//! below the global caps, on sessions, connections and open streams (`clients.rs`;
//! [`HttpLimits`]): one client cannot take a shared resource from everyone. A client over
//! its own limit gets 429, the server over a global cap 503, both with `Retry-After` and a
//! JSON-RPC error whose `data.limit` names the limit. Optionally, each client's request
//! rate is limited too ([`HttpLimits::requests_per_second_per_client`], off by default; a
//! bucket per identity in `crate::rate`, the table bounded): over it, 429 with
//! `Retry-After` in whole seconds and `retryAfterMs`. Connections are always accepted;
//! until a request on one passes the guard it is in a small budget of its own, with a
//! short deadline, where a newcomer closes the oldest.
//!
//! `/healthz` is answered on any connection, before any cap or credential: 200 `ok` while
//! serving; with `?detail` or `Accept: application/json`, a JSON document: `status`,
//! `limits` (every [`HttpLimits`] count, durations in `_ms`), `current` (`sessions`,
//! `connections`, `unauthenticated_connections`, `streams`, `listen_streams`,
//! `requests_in_flight`, `clients`), `refused` (a count per limit), `evicted`
//! (`sessions`, `unauthenticated_connections`) and `unauthenticated_timeouts`. Once
//! draining, new connections are refused and a request on one already open gets 503.
//! Shutdown stops accepting, gives the requests in flight a grace, then answers the rest
//! with an error; listen streams get their final result.
//!
//! Files by job: `guard.rs` (Origin, Host, bearer token), `oauth.rs` (the OAuth protected
//! resource), `clients.rs` (per-client counts, the unauthenticated budget, refusals),
//! `headers.rs` (the era and the
//! 2026-07-28 header rules), `sessions.rs` (the legacy session table), `exchange.rs` (one
//! HTTP request: reading, routing, answering), `streams.rs` (event streams: a request's,
//! the GET stream, listen streams), `reply.rs` (response bodies and JSON-RPC encoding),
//! `trace_context.rs` (a request's `traceparent`/`tracestate` headers carried into its
//! `_meta`, where the service reads a trace parent on every transport).
//! `stats.rs` (the counts an operator's metrics read: [`HttpServer::stats`]), `scrape.rs`
//! (a small listener of its own for one read-only page, such as `serve --metrics`).

mod clients;
mod exchange;
mod guard;
mod headers;
pub mod oauth;
mod reply;
mod resume;
pub mod scrape;
mod sessions;
mod stats;
mod streams;
mod trace_context;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::core::{ClientIdentity, ServerInfo, Service};

pub use guard::{BearerToken, BearerTokens};
pub use stats::{HttpCounts, HttpStats};

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint's path (200 `ok` while serving, 503 while draining; `?detail`: the
/// limits and counts as JSON).
pub const HEALTH_PATH: &str = "/healthz";

/// How an [`HttpServer`] serves.
#[derive(Debug, Clone, Default)]
pub struct HttpServeOptions {
    /// Origins allowed besides the loopback ones (`http://localhost:*`,
    /// `http://127.0.0.1:*`, `http://[::1]:*`), as browsers send them
    /// (`https://app.example`, `http://10.0.0.5:3000`).
    pub allowed_origins: Vec<String>,
    /// The bearer tokens one of which every request must carry (`Authorization: Bearer
    /// …`): the server's one token ([`BearerToken::new`]) or the operator's named ones
    /// ([`BearerToken::named`], each naming its holders' identity). None: no token asked.
    pub bearer_tokens: BearerTokens,
    /// The server as an OAuth protected resource: requests carry an access token its
    /// authorization server signed for it ([`oauth::OAuthResource`]); exclusive with
    /// [`HttpServeOptions::bearer_tokens`].
    pub oauth: Option<std::sync::Arc<oauth::OAuthResource>>,
    /// Caps and timeouts.
    pub limits: HttpLimits,
}

/// Caps and timeouts of an [`HttpServer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest POST body (larger: 413).
    pub max_body_bytes: usize,
    /// Legacy sessions open at once; beyond it the least recently used idle session (no
    /// request in flight, no GET stream) is ended for a new one, and only when every
    /// session is busy is `initialize` refused (503).
    pub max_sessions: usize,
    /// Legacy sessions one client ([`crate::core::ClientIdentity`]) may have open; beyond
    /// it the client's own least recently used idle session is ended for its new one, and
    /// when all of them are busy `initialize` gets 429.
    pub max_sessions_per_client: usize,
    /// Requests in flight in all (more: 503 with `BUSY`).
    pub max_in_flight: usize,
    /// Requests in flight of one client, across its sessions and its 2026-07-28 requests
    /// (more: 429 with `BUSY`).
    pub max_in_flight_per_client: usize,
    /// Requests in flight in one legacy session (more: 503 with `BUSY`).
    pub max_in_flight_per_session: usize,
    /// `subscriptions/listen` streams open at once (more: 503 with `BUSY`).
    pub max_listen_streams: usize,
    /// Authenticated connections (on which a request passed the guard) at once; a request
    /// that would make one more gets 503 and its connection is closed.
    pub max_connections: usize,
    /// Authenticated connections of one client at once (more: 429, the connection closed).
    pub max_connections_per_client: usize,
    /// Event streams one client holds open at once: legacy GET streams and
    /// `subscriptions/listen` (more: 429).
    pub max_streams_per_client: usize,
    /// Connections on which no request passed the guard yet, in all; a new one beyond it
    /// closes the oldest of them.
    pub max_unauthenticated_connections: usize,
    /// Such connections from one peer address (IPv6: one /64); a new one beyond it closes
    /// that address's oldest.
    pub max_unauthenticated_per_client: usize,
    /// A connection on which no request passed the guard within this is closed.
    pub unauthenticated_timeout: Duration,
    /// A legacy session unused this long ends (its id then gets 404).
    pub session_idle: Duration,
    /// A request's head must arrive within this (else the connection is closed; also
    /// the longest an idle keep-alive connection is kept).
    pub header_read_timeout: Duration,
    /// A POST body must arrive within this (else 408).
    pub body_read_timeout: Duration,
    /// A quiet event stream gets a comment this often.
    pub keep_alive: Duration,
    /// An event a client does not take within this ends its stream.
    pub stream_write_timeout: Duration,
    /// At shutdown, requests in flight get this long to finish before they are cancelled.
    pub shutdown_grace: Duration,
    /// Polling (2025-11-25, SEP-1699): a legacy request still unanswered this long after
    /// its event stream opened (or was resumed) has the stream closed, and its client
    /// resumes it with a GET and `Last-Event-ID` after the priming event's `retry:` (this
    /// long too). Keeps long calls alive behind proxies that cut long responses. `None`:
    /// streams stay open until answered (they can still be resumed when lost).
    pub poll_after: Option<Duration>,
    /// Requests one client may make per second, on average (`None`: no such limit, the
    /// default). Counted when a request has passed the guard, before its body is read;
    /// over it: 429 with `Retry-After` and a JSON-RPC error whose `data.limit` is
    /// `requests_per_second_per_client`. The per-client table is bounded
    /// ([`MAX_RATE_CLIENTS`]; see `switchboard_server::rate`).
    pub requests_per_second_per_client: Option<NonZeroU32>,
    /// How many requests one client may make at once, back to back (the bucket's size;
    /// default: one second's worth).
    pub request_burst_per_client: Option<NonZeroU32>,
}

/// Most clients whose request rate is followed apart; beyond it, newcomers share one
/// bucket until the idle ones are forgotten.
pub const MAX_RATE_CLIENTS: usize = 16_384;

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 1024,
            max_sessions_per_client: 64,
            max_in_flight: 1024,
            max_in_flight_per_client: 256,
            max_in_flight_per_session: crate::stdio::MAX_IN_FLIGHT,
            max_listen_streams: 256,
            max_connections: 1024,
            max_connections_per_client: 64,
            max_streams_per_client: 32,
            max_unauthenticated_connections: 256,
            max_unauthenticated_per_client: 16,
            unauthenticated_timeout: Duration::from_secs(10),
            session_idle: Duration::from_secs(30 * 60),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            keep_alive: Duration::from_secs(15),
            stream_write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            poll_after: None,
            requests_per_second_per_client: None,
            request_burst_per_client: None,
        }
    }
}

/// Why an [`HttpServer`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An allowed origin is not of the form `scheme://host[:port]`.
    #[error(
        "allowed origin `{origin}` is not of the form scheme://host[:port] (e.g. https://app.example)"
    )]
    InvalidOrigin {
        /// The origin as given.
        origin: String,
    },
    /// Both a static bearer token and an OAuth resource were given: one authenticates.
    #[error("give a static bearer token or an OAuth authorization server, not both")]
    TwoAuthentications,
}

impl HttpServeError {
    /// Whether the address could not be bound (in use, not ours, …).
    pub fn is_bind(&self) -> bool {
        matches!(self, HttpServeError::Bind { .. })
    }

    /// Whether an allowed origin was malformed.
    pub fn is_invalid_origin(&self) -> bool {
        matches!(self, HttpServeError::InvalidOrigin { .. })
    }

    /// Whether two ways of authenticating were given at once.
    pub fn is_two_authentications(&self) -> bool {
        matches!(self, HttpServeError::TwoAuthentications)
    }
}

/// How serving ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpEnd {
    /// Connections accepted over the server's life.
    pub connections: u64,
    /// Requests still in flight when the grace ran out (answered with an error).
    pub cancelled_at_shutdown: usize,
}

/// How long a handler cancelled at shutdown may take to wind down before it is dropped.
const WIND_DOWN: Duration = Duration::from_secs(1);
/// How long connections get to write their last answers once every request has ended.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);
/// A failed `accept` (out of descriptors, …) is retried after this.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Expired sessions are swept this often (at most; and when a new session finds the table, or
/// its client's share of it, full).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

impl Shared {
    /// The service's identity and capabilities (read each time: a gateway fronting one
    /// server takes on that server's identity once it is up).
    fn info(&self) -> &ServerInfo {
        self.service.info()
    }
}

/// What every connection and request task shares.
struct Shared {
    service: Arc<dyn Service>,
    limits: HttpLimits,
    guard: guard::Guard,
    sessions: sessions::Sessions,
    /// What each client holds, and the unauthenticated connections.
    clients: Arc<clients::Clients>,
    /// Each client's request rate, when limited.
    request_rate: Option<crate::rate::KeyedRate<ClientIdentity>>,
    /// Requests in flight (all eras).
    in_flight: Arc<AtomicUsize>,
    /// Listen streams open.
    listens: Arc<AtomicUsize>,
    /// Body bytes both ways (`stats.rs`).
    traffic: Arc<stats::Traffic>,
    /// Shutdown began: `/healthz` says 503, new requests are refused, streams end.
    drain: CancellationToken,
    /// The grace ran out: requests in flight are cancelled and answered with an error.
    stop: CancellationToken,
    /// Handlers that did not wind down are dropped.
    hard_stop: CancellationToken,
    /// Every request handler and event-stream pump.
    tasks: TaskTracker,
}

/// A bound Streamable HTTP server, not yet serving.
pub struct HttpServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .field("server", &self.shared.info().implementation.name)
            .field("guard", &self.shared.guard)
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds `addr` (port 0: any free port; see [`HttpServer::local_addr`]).
    pub async fn bind(
        addr: SocketAddr,
        service: Arc<dyn Service>,
        options: HttpServeOptions,
    ) -> Result<HttpServer, HttpServeError> {
        let (listener, local_addr) = listen(addr).await?;
        let guard = guard::Guard::new(local_addr, &options)?;
        let limits = options.limits;
        let tasks = TaskTracker::new();
        let release = sessions::Release {
            service: service.clone(),
            tasks: tasks.clone(),
        };
        let clients = clients::Clients::new(limits);
        Ok(HttpServer {
            listener,
            local_addr,
            shared: Arc::new(Shared {
                service,
                limits,
                guard,
                sessions: sessions::Sessions::new(limits, release, clients.tally.clone()),
                clients,
                request_rate: clients::request_rate(&limits),
                in_flight: Arc::new(AtomicUsize::new(0)),
                listens: Arc::new(AtomicUsize::new(0)),
                traffic: Arc::default(),
                drain: CancellationToken::new(),
                stop: CancellationToken::new(),
                hard_stop: CancellationToken::new(),
                tasks,
            }),
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle on the server's counts, for an operator's metrics.
    pub fn stats(&self) -> HttpStats {
        HttpStats::new(&self.shared)
    }

    /// The endpoint's URL (`http://127.0.0.1:PORT/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local_addr)
    }

    /// Serves until `shutdown` is cancelled, then drains: `/healthz` turns 503, no new
    /// connection is accepted, requests in flight get [`HttpLimits::shutdown_grace`] and
    /// are then cancelled and answered with an error, listen streams get their final
    /// result, and every connection is closed (within bounds) before this returns.
    pub async fn serve(self, shutdown: CancellationToken) -> HttpEnd {
        let HttpServer {
            listener, shared, ..
        } = self;
        let mut connections = JoinSet::new();
        let mut end = HttpEnd::default();
        let mut sweep = tokio::time::interval(
            SWEEP_EVERY.min(shared.limits.session_idle.max(Duration::from_secs(1))),
        );
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            while connections.try_join_next().is_some() {}
            // Never waits on a cap: every connection is accepted, and counted (see
            // `clients.rs`), so a health check never queues behind the others.
            let accepted = tokio::select! {
                () = shutdown.cancelled() => break,
                _ = sweep.tick() => {
                    shared.sessions.sweep();
                    continue;
                }
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, peer)) => {
                    end.connections += 1;
                    let ticket = shared.clients.accept(peer.ip());
                    connections.spawn(connection(shared.clone(), stream, ticket));
                }
                Err(error) => {
                    if !accept_failed(&error, &shutdown).await {
                        break;
                    }
                }
            }
        }
        drop(listener);
        shared.drain.cancel();
        shared.tasks.close();
        let finished = tokio::time::timeout(shared.limits.shutdown_grace, shared.tasks.wait())
            .await
            .is_ok();
        if !finished {
            end.cancelled_at_shutdown = shared.in_flight.load(Ordering::Relaxed);
            shared.stop.cancel();
            let _ = tokio::time::timeout(WIND_DOWN, shared.tasks.wait()).await;
            shared.hard_stop.cancel();
        }
        shared.sessions.end_all();
        close_connections(&mut connections, CLOSE_FLUSH).await;
        // Whatever a dropped handler left is bounded by the hard stop; wait for it.
        let _ = tokio::time::timeout(WIND_DOWN, shared.tasks.wait()).await;
        end
    }
}

/// Binds `addr`: the listener and the address it got.
async fn listen(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), HttpServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| HttpServeError::Bind { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| HttpServeError::Bind { addr, source })?;
    Ok((listener, local_addr))
}

/// After a failed `accept` (out of descriptors, …): waits [`ACCEPT_BACKOFF`] before the
/// next; false when `shutdown` came first.
async fn accept_failed(error: &std::io::Error, shutdown: &CancellationToken) -> bool {
    tracing::debug!(%error, "accepting a connection failed");
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(ACCEPT_BACKOFF) => true,
    }
}

/// Waits for `connections` to end, at most `bound`; then aborts the rest and reaps them.
async fn close_connections(connections: &mut JoinSet<()>, bound: Duration) {
    let flushed = tokio::time::timeout(bound, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if flushed.is_err() {
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
}

/// Serves one connection until it closes, is evicted, passes its unauthenticated deadline,
/// or the drain has let it finish what it was doing.
async fn connection(shared: Arc<Shared>, stream: TcpStream, ticket: Arc<clients::Ticket>) {
    let drain = shared.drain.clone();
    let header_read_timeout = shared.limits.header_read_timeout;
    let unauthenticated_timeout = shared.limits.unauthenticated_timeout;
    let evicted = ticket.closed().clone();
    let watched = ticket.clone();
    // Each exchange's future is boxed: hyper keeps a slot the size of the service's future
    // for every connection, idle ones too, and an exchange's future is several KiB.
    let service = service_fn(move |request| {
        let shared = shared.clone();
        let ticket = ticket.clone();
        Box::pin(async move {
            let traffic = shared.traffic.clone();
            let reply = exchange::respond(shared, &ticket, request).await;
            Ok::<_, Infallible>(reply.map(|body| stats::Counted::new(body, traffic)))
        })
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let deadline = async {
        tokio::time::sleep(unauthenticated_timeout).await;
        if watched.unauthenticated() {
            watched.timed_out();
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        ended = connection.as_mut() => {
            if let Err(error) = ended {
                tracing::debug!(%error, "a connection ended with an error");
            }
            return;
        }
        () = evicted.cancelled() => {
            tracing::debug!("an unauthenticated connection was closed for a newer one");
            return;
        }
        () = deadline => {
            tracing::debug!("a connection sent no authenticated request in time; closed");
            return;
        }
        () = drain.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    if let Err(error) = connection.await {
        tracing::debug!(%error, "a connection ended with an error while draining");
    }
}
