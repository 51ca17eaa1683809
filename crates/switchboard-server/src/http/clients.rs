//! What each client holds: its connections and open streams, counted per
//! [`ClientIdentity`] against per-client limits far below the global caps, so that no one
//! client can take a shared resource from everyone; and the connections that have not
//! authenticated yet, in a small budget of their own.
//!
//! A connection is accepted at once, always (nothing queues behind a cap, so `/healthz`
//! is always answered), and starts **unauthenticated**: counted against its peer address
//! ([`HttpLimits::max_unauthenticated_per_client`]) and the global budget
//! ([`HttpLimits::max_unauthenticated_connections`]), closed unless a request on it passes
//! the guard within [`HttpLimits::unauthenticated_timeout`]. A new connection beyond
//! either budget closes the oldest unauthenticated one (of its own address when it is that
//! address's budget that is full): a slowloris holds at most its own share, for at most the
//! deadline, and a newcomer always gets in. The first request that passes the guard makes
//! the connection its identity's: [`HttpLimits::max_connections_per_client`] per identity
//! (more: 429) and [`HttpLimits::max_connections`] in all (more: 503); the refused request
//! is answered and the connection closed. Event streams a client holds open (a legacy
//! session's GET stream, `subscriptions/listen`) are counted per identity too
//! ([`HttpLimits::max_streams_per_client`], more: 429), and so are its requests in flight
//! ([`HttpLimits::max_in_flight_per_client`], more: 429), which a legacy client could
//! otherwise multiply by its sessions.
//!
//! Every refusal is counted by the limit that refused it, every eviction by what it
//! evicted: `/healthz?detail` reports them with the limits and the current counts.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use hyper::header::{CONNECTION, HeaderValue, RETRY_AFTER};
use serde_json::{Value, json};
use switchboard_wire::{ErrorObject, RequestId};
use tokio_util::sync::CancellationToken;

use super::HttpLimits;
use super::reply::{self, Reply};
use crate::core::ClientIdentity;
use crate::rate::{KeyedRate, Rate, RetryAfter};
use crate::stdio::codes::BUSY;

/// A limit that refused something (its name is the [`HttpLimits`] field, and the key of
/// `/healthz?detail`'s `refused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    Sessions,
    SessionsPerClient,
    Connections,
    ConnectionsPerClient,
    StreamsPerClient,
    ListenStreams,
    InFlight,
    InFlightPerClient,
    InFlightPerSession,
    RequestsPerSecondPerClient,
}

impl Limit {
    const ALL: [Limit; 10] = [
        Limit::Sessions,
        Limit::SessionsPerClient,
        Limit::Connections,
        Limit::ConnectionsPerClient,
        Limit::StreamsPerClient,
        Limit::ListenStreams,
        Limit::InFlight,
        Limit::InFlightPerClient,
        Limit::InFlightPerSession,
        Limit::RequestsPerSecondPerClient,
    ];

    /// The [`HttpLimits`] field.
    pub(super) fn name(self) -> &'static str {
        match self {
            Limit::Sessions => "max_sessions",
            Limit::SessionsPerClient => "max_sessions_per_client",
            Limit::Connections => "max_connections",
            Limit::ConnectionsPerClient => "max_connections_per_client",
            Limit::StreamsPerClient => "max_streams_per_client",
            Limit::ListenStreams => "max_listen_streams",
            Limit::InFlight => "max_in_flight",
            Limit::InFlightPerClient => "max_in_flight_per_client",
            Limit::InFlightPerSession => "max_in_flight_per_session",
            Limit::RequestsPerSecondPerClient => "requests_per_second_per_client",
        }
    }

    fn value(self, limits: &HttpLimits) -> usize {
        match self {
            Limit::Sessions => limits.max_sessions,
            Limit::SessionsPerClient => limits.max_sessions_per_client,
            Limit::Connections => limits.max_connections,
            Limit::ConnectionsPerClient => limits.max_connections_per_client,
            Limit::StreamsPerClient => limits.max_streams_per_client,
            Limit::ListenStreams => limits.max_listen_streams,
            Limit::InFlight => limits.max_in_flight,
            Limit::InFlightPerClient => limits.max_in_flight_per_client,
            Limit::InFlightPerSession => limits.max_in_flight_per_session,
            Limit::RequestsPerSecondPerClient => limits
                .requests_per_second_per_client
                .map_or(0, |rate| usize::try_from(rate.get()).unwrap_or(usize::MAX)),
        }
    }

    /// Whether one client is over its own share (429), not the server full (503).
    fn per_client(self) -> bool {
        matches!(
            self,
            Limit::SessionsPerClient
                | Limit::ConnectionsPerClient
                | Limit::StreamsPerClient
                | Limit::InFlightPerClient
                | Limit::InFlightPerSession
                | Limit::RequestsPerSecondPerClient
        )
    }
}

/// Seconds a refused client is told to wait (`Retry-After`) when the limit does not know
/// better (a count: something the client holds must end first).
const RETRY_AFTER_SECS: u64 = 1;

/// The refusal of a request over `limit`: 429 (the client's own limit) or 503 (the
/// server's), `Retry-After`, and a JSON-RPC error ([`BUSY`]) whose message says what to do
/// and whose `data` names the limit and its value.
pub(super) fn over_limit(
    limits: &HttpLimits,
    limit: Limit,
    id: Option<&RequestId>,
    what_to_do: &str,
) -> Reply {
    refusal(limits, limit, id, what_to_do, None)
}

/// Each client's request rate, when [`HttpLimits::requests_per_second_per_client`] sets
/// one.
pub(super) fn request_rate(limits: &HttpLimits) -> Option<KeyedRate<ClientIdentity>> {
    let calls = limits.requests_per_second_per_client?;
    let rate = Rate {
        calls,
        every: std::time::Duration::from_secs(1),
        burst: limits.request_burst_per_client,
    };
    Some(KeyedRate::new(rate, super::MAX_RATE_CLIENTS))
}

/// The refusal of a request over the client's request rate (counted): 429, `Retry-After`
/// in whole seconds (rounded up), and the JSON-RPC error naming the limit, its value and
/// `retryAfterMs`.
pub(super) fn over_rate(limits: &HttpLimits, tally: &Tally, retry: RetryAfter) -> Reply {
    let limit = Limit::RequestsPerSecondPerClient;
    tally.refused(limit);
    let what_to_do = format!(
        "this client sends requests faster than one client may; retry in {} s",
        retry.whole_seconds()
    );
    refusal(limits, limit, None, &what_to_do, Some(retry))
}

fn refusal(
    limits: &HttpLimits,
    limit: Limit,
    id: Option<&RequestId>,
    what_to_do: &str,
    retry: Option<RetryAfter>,
) -> Reply {
    let status = if limit.per_client() {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let value = limit.value(limits);
    let mut error = ErrorObject::new(
        BUSY,
        format!(
            "over this server's `{}` ({value}): {what_to_do}",
            limit.name()
        ),
    );
    let mut data = json!({ "limit": limit.name(), "value": value });
    if let Some(retry) = retry {
        data["retryAfterMs"] = json!(retry.millis());
    }
    error.data = Some(data);
    let mut reply = reply::error(status, id, &error);
    let seconds = retry.map_or(RETRY_AFTER_SECS, RetryAfter::whole_seconds);
    reply
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    reply
}

/// What a client holds.
#[derive(Debug, Default, Clone, Copy)]
struct Load {
    connections: usize,
    unauthenticated: usize,
    streams: usize,
    requests: usize,
}

impl Load {
    fn is_empty(&self) -> bool {
        self.connections == 0
            && self.unauthenticated == 0
            && self.streams == 0
            && self.requests == 0
    }
}

/// An unauthenticated connection, by when it was accepted.
#[derive(Debug)]
struct Waiting {
    peer: ClientIdentity,
    close: CancellationToken,
}

#[derive(Debug, Default)]
struct Table {
    load: HashMap<ClientIdentity, Load>,
    /// Unauthenticated connections, oldest first.
    waiting: BTreeMap<u64, Waiting>,
    next: u64,
    /// Authenticated connections.
    connections: usize,
    streams: usize,
}

impl Table {
    fn load(&mut self, identity: &ClientIdentity) -> &mut Load {
        self.load.entry(identity.clone()).or_default()
    }

    fn forget_if_idle(&mut self, identity: &ClientIdentity) {
        if self.load.get(identity).is_some_and(Load::is_empty) {
            self.load.remove(identity);
        }
    }

    /// Forgets the unauthenticated connection `key` (it authenticated or closed).
    fn release_waiting(&mut self, key: u64) {
        if let Some(waiting) = self.waiting.remove(&key) {
            let load = self.load(&waiting.peer);
            load.unauthenticated = load.unauthenticated.saturating_sub(1);
            self.forget_if_idle(&waiting.peer);
        }
    }

    /// Closes the unauthenticated connection `key`.
    fn evict_waiting(&mut self, key: u64) {
        if let Some(waiting) = self.waiting.remove(&key) {
            let load = self.load(&waiting.peer);
            load.unauthenticated = load.unauthenticated.saturating_sub(1);
            self.forget_if_idle(&waiting.peer);
            waiting.close.cancel();
        }
    }
}

/// Counts that only grow, for `/healthz?detail`.
#[derive(Debug, Default)]
pub(super) struct Tally {
    refused: [AtomicU64; Limit::ALL.len()],
    /// Unauthenticated connections closed for a newer one.
    pub(super) evicted_connections: AtomicU64,
    /// Unauthenticated connections closed at their deadline.
    pub(super) unauthenticated_timeouts: AtomicU64,
    /// Idle sessions ended for a new one.
    pub(super) evicted_sessions: AtomicU64,
}

impl Tally {
    /// Counts a refusal.
    pub(super) fn refused(&self, limit: Limit) {
        if let Some(count) = self.refused.get(limit as usize) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn refusals(&self) -> Value {
        let mut refused = serde_json::Map::new();
        for limit in Limit::ALL {
            let count = self
                .refused
                .get(limit as usize)
                .map_or(0, |count| count.load(Ordering::Relaxed));
            refused.insert(limit.name().to_owned(), json!(count));
        }
        Value::Object(refused)
    }
}

/// The per-client table of a server.
#[derive(Debug)]
pub(super) struct Clients {
    limits: HttpLimits,
    table: Mutex<Table>,
    pub(super) tally: Arc<Tally>,
    /// When the operator was last told that connections are closed for newer ones.
    eviction_notice: Mutex<Option<Instant>>,
}

/// The least time between two warnings that connections are closed for newer ones (the
/// count since the last one goes with the next): a client that opens connections in a
/// loop must not flood the operator's log.
const EVICTION_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// Which budget of unauthenticated connections closed one for a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EvictedFor {
    /// The peer address's own (`max_unauthenticated_per_client`).
    Client,
    /// Everyone's (`max_unauthenticated_connections`).
    Everyone,
}

fn lock(mutex: &Mutex<Table>) -> MutexGuard<'_, Table> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a connection stands.
#[derive(Debug)]
enum Standing {
    /// No request on it passed the guard yet.
    Unauthenticated { key: u64 },
    /// Counted as this identity's.
    Authenticated(ClientIdentity),
    /// Evicted or closed: counted nowhere.
    Gone,
}

/// One accepted connection's place in the table; released when dropped.
#[derive(Debug)]
pub(super) struct Ticket {
    clients: Arc<Clients>,
    peer: IpAddr,
    standing: Mutex<Standing>,
    /// Cancelled when the connection is evicted (it is then dropped at once).
    close: CancellationToken,
}

impl Clients {
    pub(super) fn new(limits: HttpLimits) -> Arc<Clients> {
        Arc::new(Clients {
            limits,
            table: Mutex::new(Table::default()),
            tally: Arc::new(Tally::default()),
            eviction_notice: Mutex::new(None),
        })
    }

    /// A connection accepted from `peer`: unauthenticated, evicting the oldest
    /// unauthenticated connection of the same address (or of anyone, when the global
    /// budget is the one full) to make room.
    pub(super) fn accept(self: &Arc<Clients>, peer: IpAddr) -> Arc<Ticket> {
        let identity = ClientIdentity::peer(peer);
        let close = CancellationToken::new();
        let mut table = lock(&self.table);
        let own = table.load(&identity).unauthenticated;
        let mut evicted = None;
        if own >= self.limits.max_unauthenticated_per_client.max(1) {
            let oldest = table
                .waiting
                .iter()
                .find(|(_, waiting)| waiting.peer == identity)
                .map(|(key, _)| *key);
            if let Some(key) = oldest {
                table.evict_waiting(key);
                evicted = Some(EvictedFor::Client);
            }
        }
        if table.waiting.len() >= self.limits.max_unauthenticated_connections.max(1)
            && let Some(key) = table.waiting.keys().next().copied()
        {
            table.evict_waiting(key);
            evicted = Some(EvictedFor::Everyone);
        }
        table.next += 1;
        let key = table.next;
        table.waiting.insert(
            key,
            Waiting {
                peer: identity.clone(),
                close: close.clone(),
            },
        );
        table.load(&identity).unauthenticated += 1;
        drop(table);
        if let Some(budget) = evicted {
            self.note_eviction(budget, peer);
        }
        Arc::new(Ticket {
            clients: self.clone(),
            peer,
            standing: Mutex::new(Standing::Unauthenticated { key }),
            close,
        })
    }

    /// Counts a connection closed for a newer one and, at most once a minute, tells the
    /// operator which limit did it and how to raise it (a client that opens more
    /// connections at once than the limit otherwise sees only resets).
    fn note_eviction(&self, budget: EvictedFor, peer: IpAddr) {
        let total = self
            .tally
            .evicted_connections
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        let now = Instant::now();
        {
            let mut last = self
                .eviction_notice
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|last| now.duration_since(last) < EVICTION_NOTICE_EVERY) {
                return;
            }
            *last = Some(now);
        }
        match budget {
            EvictedFor::Client => tracing::warn!(
                "closed the oldest of {} connections from {peer} that had sent no request yet, \
                 for a newer one ({total} closed so far): the limit max_unauthenticated_per_client \
                 (`switchboard serve --max-unauthenticated-per-client N` raises it; clients \
                 behind one proxy or NAT share it)",
                self.limits.max_unauthenticated_per_client,
            ),
            EvictedFor::Everyone => tracing::warn!(
                "closed the oldest of {} connections that had sent no request yet, for a newer \
                 one from {peer} ({total} closed so far): the limit \
                 max_unauthenticated_connections (`switchboard serve \
                 --max-unauthenticated-connections N` raises it)",
                self.limits.max_unauthenticated_connections,
            ),
        }
    }

    /// Counts one more `held` of `identity` (an event stream it keeps open, a request in
    /// flight) until the slot is dropped: `Err` with the limit when the client has as many
    /// as it may.
    pub(super) fn hold(
        self: &Arc<Clients>,
        identity: &ClientIdentity,
        held: Held,
    ) -> Result<HeldSlot, Limit> {
        let (limit, most) = match held {
            Held::Stream => (Limit::StreamsPerClient, self.limits.max_streams_per_client),
            Held::Request => (
                Limit::InFlightPerClient,
                self.limits.max_in_flight_per_client,
            ),
        };
        let mut table = lock(&self.table);
        let count = held.count(table.load(identity));
        if *count >= most {
            table.forget_if_idle(identity);
            drop(table);
            self.tally.refused(limit);
            return Err(limit);
        }
        *count += 1;
        if held == Held::Stream {
            table.streams += 1;
        }
        Ok(HeldSlot {
            clients: self.clone(),
            identity: identity.clone(),
            held,
        })
    }

    /// The current counts, for `/healthz?detail`.
    pub(super) fn counts(&self) -> Value {
        let table = lock(&self.table);
        json!({
            "connections": table.connections,
            "unauthenticated_connections": table.waiting.len(),
            "streams": table.streams,
            "clients": table.load.len(),
        })
    }

    /// Authenticated connections open.
    pub(super) fn connections(&self) -> usize {
        lock(&self.table).connections
    }

    /// The refusals and evictions so far, for `/healthz?detail`.
    pub(super) fn tally(&self) -> Value {
        json!({
            "refused": self.tally.refusals(),
            "evicted": {
                "unauthenticated_connections": self.tally.evicted_connections.load(Ordering::Relaxed),
                "sessions": self.tally.evicted_sessions.load(Ordering::Relaxed),
            },
            "unauthenticated_timeouts": self.tally.unauthenticated_timeouts.load(Ordering::Relaxed),
        })
    }
}

impl Ticket {
    /// The address the connection comes from.
    pub(super) fn peer(&self) -> IpAddr {
        self.peer
    }

    /// Cancelled when the connection is evicted.
    pub(super) fn closed(&self) -> &CancellationToken {
        &self.close
    }

    /// Whether no request on the connection has passed the guard yet.
    pub(super) fn unauthenticated(&self) -> bool {
        matches!(
            *self.standing.lock().unwrap_or_else(PoisonError::into_inner),
            Standing::Unauthenticated { .. }
        )
    }

    /// A request on the connection passed the guard as `identity`: the connection becomes
    /// that identity's (the first time), unless the identity or the server has as many
    /// as allowed; then the refusal, which closes the connection.
    pub(super) fn authenticated(&self, identity: &ClientIdentity) -> Result<(), Reply> {
        let mut standing = self.standing.lock().unwrap_or_else(PoisonError::into_inner);
        let Standing::Unauthenticated { key } = *standing else {
            return Ok(());
        };
        let clients = &self.clients;
        let limits = &clients.limits;
        let mut table = lock(&clients.table);
        let refused = if table.load(identity).connections >= limits.max_connections_per_client {
            Some((
                Limit::ConnectionsPerClient,
                "this client has as many connections open as one client may; reuse one (keep-alive) or close one",
            ))
        } else if table.connections >= limits.max_connections {
            Some((
                Limit::Connections,
                "this server has as many connections open as it allows; try again shortly",
            ))
        } else {
            None
        };
        if let Some((limit, what_to_do)) = refused {
            table.forget_if_idle(identity);
            drop(table);
            clients.tally.refused(limit);
            let mut reply = over_limit(limits, limit, None, what_to_do);
            reply
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            return Err(reply);
        }
        table.release_waiting(key);
        table.load(identity).connections += 1;
        table.connections += 1;
        *standing = Standing::Authenticated(identity.clone());
        Ok(())
    }

    /// The unauthenticated deadline passed: the connection is closed (counted).
    pub(super) fn timed_out(&self) {
        self.clients
            .tally
            .unauthenticated_timeouts
            .fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let standing = std::mem::replace(
            self.standing
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
            Standing::Gone,
        );
        let mut table = lock(&self.clients.table);
        match standing {
            Standing::Unauthenticated { key } => table.release_waiting(key),
            Standing::Authenticated(identity) => {
                let load = table.load(&identity);
                load.connections = load.connections.saturating_sub(1);
                table.connections = table.connections.saturating_sub(1);
                table.forget_if_idle(&identity);
            }
            Standing::Gone => {}
        }
    }
}

/// What a client holds that counts against a limit of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// An event stream it keeps open (a GET stream, a listen stream).
    Stream,
    /// A request in flight.
    Request,
}

impl Held {
    fn count(self, load: &mut Load) -> &mut usize {
        match self {
            Held::Stream => &mut load.streams,
            Held::Request => &mut load.requests,
        }
    }
}

/// One thing a client holds, counted until dropped.
#[derive(Debug)]
pub(super) struct HeldSlot {
    clients: Arc<Clients>,
    identity: ClientIdentity,
    held: Held,
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        let mut table = lock(&self.clients.table);
        let count = self.held.count(table.load(&self.identity));
        *count = count.saturating_sub(1);
        if self.held == Held::Stream {
            table.streams = table.streams.saturating_sub(1);
        }
        table.forget_if_idle(&self.identity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> HttpLimits {
        HttpLimits {
            max_unauthenticated_per_client: 2,
            max_unauthenticated_connections: 3,
            max_connections_per_client: 1,
            max_streams_per_client: 1,
            ..HttpLimits::default()
        }
    }

    #[test]
    fn unauthenticated_connections_make_room_oldest_first() {
        let clients = Clients::new(limits());
        let a: IpAddr = "10.0.0.1".parse().expect("an address");
        let b: IpAddr = "10.0.0.2".parse().expect("an address");
        let first = clients.accept(a);
        let second = clients.accept(a);
        // A's budget is full: its oldest goes, not anyone else's.
        let third = clients.accept(a);
        assert!(first.closed().is_cancelled());
        assert!(!second.closed().is_cancelled() && !third.closed().is_cancelled());
        let from_b = clients.accept(b);
        // The global budget (3) is full: the oldest of all goes.
        let again_b = clients.accept(b);
        assert!(second.closed().is_cancelled());
        assert!(!from_b.closed().is_cancelled() && !again_b.closed().is_cancelled());
        drop((first, second, third, from_b, again_b));
        assert_eq!(clients.counts()["unauthenticated_connections"], 0);
        assert_eq!(clients.counts()["clients"], 0);
    }

    #[test]
    fn connections_and_streams_are_counted_per_identity() {
        let clients = Clients::new(limits());
        let peer: IpAddr = "10.0.0.1".parse().expect("an address");
        let identity = ClientIdentity::peer(peer);
        let first = clients.accept(peer);
        assert!(first.authenticated(&identity).is_ok());
        assert!(!first.unauthenticated());
        let second = clients.accept(peer);
        let refused = second
            .authenticated(&identity)
            .err()
            .map(|reply| reply.status());
        assert_eq!(refused, Some(StatusCode::TOO_MANY_REQUESTS));
        let stream = clients.hold(&identity, Held::Stream);
        assert!(stream.is_ok());
        assert!(clients.hold(&identity, Held::Stream).is_err());
        drop((stream, first, second));
        assert_eq!(clients.counts()["clients"], 0);
    }
}
