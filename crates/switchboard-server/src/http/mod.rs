//! The Streamable HTTP transport: a [`Service`] served on one endpoint (`/mcp`), both eras.
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
//! `/healthz` answers 200 while serving; once draining, new connections are refused and a
//! request on one already open gets 503. Shutdown stops accepting, gives the requests in
//! flight a grace, then answers the rest with an error; listen streams get their final
//! result.
//!
//! Files by job: `guard.rs` (Origin, Host, bearer token), `oauth.rs` (the OAuth protected
//! resource), `headers.rs` (the era and the
//! 2026-07-28 header rules), `sessions.rs` (the legacy session table), `exchange.rs` (one
//! HTTP request: reading, routing, answering), `streams.rs` (event streams: a request's,
//! the GET stream, listen streams), `reply.rs` (response bodies and JSON-RPC encoding).

mod exchange;
mod guard;
mod headers;
pub mod oauth;
mod reply;
mod resume;
mod sessions;
mod streams;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::core::{ServerInfo, Service};

pub use guard::BearerToken;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint's path (200 `ok` while serving, 503 while draining).
pub const HEALTH_PATH: &str = "/healthz";

/// How an [`HttpServer`] serves.
#[derive(Debug, Clone, Default)]
pub struct HttpServeOptions {
    /// Origins allowed besides the loopback ones (`http://localhost:*`,
    /// `http://127.0.0.1:*`, `http://[::1]:*`), as browsers send them
    /// (`https://app.example`, `http://10.0.0.5:3000`).
    pub allowed_origins: Vec<String>,
    /// The bearer token every request must carry (`Authorization: Bearer …`), if any.
    pub bearer_token: Option<BearerToken>,
    /// The server as an OAuth protected resource: requests carry an access token its
    /// authorization server signed for it ([`oauth::OAuthResource`]); exclusive with
    /// [`HttpServeOptions::bearer_token`].
    pub oauth: Option<std::sync::Arc<oauth::OAuthResource>>,
    /// Caps and timeouts.
    pub limits: HttpLimits,
}

/// Caps and timeouts of an [`HttpServer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest POST body (larger: 413).
    pub max_body_bytes: usize,
    /// Legacy sessions open at once (more: 503).
    pub max_sessions: usize,
    /// Requests in flight in all (more: 503 with `BUSY`).
    pub max_in_flight: usize,
    /// Requests in flight in one legacy session (more: 503 with `BUSY`).
    pub max_in_flight_per_session: usize,
    /// `subscriptions/listen` streams open at once (more: 503 with `BUSY`).
    pub max_listen_streams: usize,
    /// Connections served at once (more wait to be accepted).
    pub max_connections: usize,
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
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 1024,
            max_in_flight: 1024,
            max_in_flight_per_session: crate::stdio::MAX_IN_FLIGHT,
            max_listen_streams: 256,
            max_connections: 1024,
            session_idle: Duration::from_secs(30 * 60),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            keep_alive: Duration::from_secs(15),
            stream_write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            poll_after: None,
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
/// Expired sessions are swept this often (at most; and whenever one is opened).
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
    /// Requests in flight (all eras).
    in_flight: Arc<AtomicUsize>,
    /// Listen streams open.
    listens: Arc<AtomicUsize>,
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
            .field("server", &self.shared.info().name)
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
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpServeError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| HttpServeError::Bind { addr, source })?;
        let guard = guard::Guard::new(local_addr, &options)?;
        let limits = options.limits;
        let tasks = TaskTracker::new();
        let release = sessions::Release {
            service: service.clone(),
            tasks: tasks.clone(),
        };
        Ok(HttpServer {
            listener,
            local_addr,
            shared: Arc::new(Shared {
                service,
                limits,
                guard,
                sessions: sessions::Sessions::new(limits, release),
                in_flight: Arc::new(AtomicUsize::new(0)),
                listens: Arc::new(AtomicUsize::new(0)),
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
        let permits = Arc::new(Semaphore::new(shared.limits.max_connections.max(1)));
        let mut end = HttpEnd::default();
        let mut sweep = tokio::time::interval(
            SWEEP_EVERY.min(shared.limits.session_idle.max(Duration::from_secs(1))),
        );
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            while connections.try_join_next().is_some() {}
            let permit = tokio::select! {
                () = shutdown.cancelled() => break,
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
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
                    connections.spawn(connection(shared.clone(), stream, peer, permit));
                }
                Err(error) => {
                    tracing::debug!(%error, "accepting a connection failed");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
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
        let flushed = tokio::time::timeout(CLOSE_FLUSH, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if flushed.is_err() {
            connections.abort_all();
            while connections.join_next().await.is_some() {}
        }
        // Whatever a dropped handler left is bounded by the hard stop; wait for it.
        let _ = tokio::time::timeout(WIND_DOWN, shared.tasks.wait()).await;
        end
    }
}

/// Serves one connection until it closes, or until the drain has let it finish what it
/// was doing.
async fn connection(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    _permit: OwnedSemaphorePermit,
) {
    let drain = shared.drain.clone();
    let header_read_timeout = shared.limits.header_read_timeout;
    let service = service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(exchange::respond(shared, peer.ip(), request).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        ended = connection.as_mut() => {
            if let Err(error) = ended {
                tracing::debug!(%error, "a connection ended with an error");
            }
            return;
        }
        () = drain.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    if let Err(error) = connection.await {
        tracing::debug!(%error, "a connection ended with an error while draining");
    }
}
