//! Liveness of a ready HTTP server between calls.
//!
//! A stdio server that dies ends its process, and the supervisor hears of it at once. An
//! HTTP server that dies is silent: nothing is connected between requests. So while a
//! session to an HTTP server is ready, its supervisor also runs [`watch`], which returns
//! once the server is gone, with the reason:
//!
//! - every [`PING_INTERVAL`] without an answer from the server (answers to calls, and
//!   messages the server sends by itself, are proof of life: a busy server is not pinged),
//!   it sends `ping` with a deadline of [`PING_DEADLINE`], one at a time; any answer, an
//!   error such as "method not found" included, means the server is alive;
//! - a ping that finds nothing listening closes the session at once ("could not reach
//!   http://…"); a ping that gets no answer in time, or whose answer stream is lost, is
//!   sent once more, and a second failure closes the session ("could not reach http://…:
//!   no answer to `ping` within 2s"), so a server that accepts connections but never
//!   answers is found too (unless calls are in flight: a server busy with one may be slow
//!   to answer a ping, and the calls' own deadlines decide);
//! - a 2026-07-28 `subscriptions/listen` stream that ends is a reason to look at once, not
//!   a verdict (servers and proxies close idle streams): the server is pinged then, and
//!   when it answers the stream is opened again, at most once per [`PING_INTERVAL`]. (The
//!   legacy GET stream is the HTTP transport's: a server gone from under it makes its
//!   re-opening find nothing listening, which closes the session.)
//!
//! A dead server is thus noticed within a ping interval (plus two deadlines for one that
//! stalls). The watch is a future of the supervisor's task and ends with the session;
//! nothing is pinged for a stdio server. Pings are logged at debug level only.

use std::time::Duration;

use switchboard_protocol::methods;
use switchboard_session::{CallOptions, Session, SessionError};
use switchboard_wire::{PendingCall, TransportError};
use tokio::time::Instant;

/// How long a ready HTTP server may stay silent before it is pinged.
pub(crate) const PING_INTERVAL: Duration = Duration::from_secs(3);
/// How long a ping waits for its answer.
pub(crate) const PING_DEADLINE: Duration = Duration::from_secs(2);
/// Pings sent before a server that does not answer is declared gone.
const PING_ATTEMPTS: u32 = 2;

/// Watches a ready session until its server is gone, and returns why; never returns for a
/// session without a URL (stdio: its process's end is the signal). Holds the session's
/// listen stream, if any, for as long as it runs.
pub(crate) async fn watch(
    session: &Session,
    url: Option<String>,
    mut subscription: Option<PendingCall>,
) -> String {
    let Some(url) = url else {
        let _held = subscription;
        return std::future::pending().await;
    };
    let mut seen = answers_so_far(session);
    let mut next_ping = Instant::now() + PING_INTERVAL;
    let mut listen_opened = Instant::now();
    loop {
        let stream_ended = tokio::select! {
            () = tokio::time::sleep_until(next_ping) => false,
            () = stream_end(&mut subscription) => true,
        };
        if stream_ended {
            subscription = None;
            tracing::debug!(server = %session.server_name(), "the listen stream ended; pinging the server");
        } else if answers_so_far(session) != seen {
            seen = answers_so_far(session);
            next_ping = Instant::now() + PING_INTERVAL;
            continue;
        }
        let standing = usize::from(subscription.is_some());
        if let Err(reason) = ping(session, &url, standing).await {
            return reason;
        }
        if stream_ended {
            // A server that ends every stream at once is not asked for one in a loop.
            tokio::time::sleep_until(listen_opened + PING_INTERVAL).await;
            subscription = crate::server::open_subscription(session).await;
            listen_opened = Instant::now();
        }
        seen = answers_so_far(session);
        next_ping = Instant::now() + PING_INTERVAL;
    }
}

/// Everything the server sent so far that shows it alive: responses and messages.
fn answers_so_far(session: &Session) -> u64 {
    let connection = session.connection();
    connection.responses_received() + connection.inbound_delivered()
}

/// Resolves when the listen stream ends (its call got an answer or failed); never without one.
async fn stream_end(subscription: &mut Option<PendingCall>) {
    match subscription {
        Some(call) => {
            let _ = call.response_raw().await;
        }
        None => std::future::pending().await,
    }
}

/// Pings the server, once more after a ping that went unanswered; `Err` with the reason
/// when it is gone. `standing` requests (a listen stream) wait for no answer; any other
/// request in flight when a ping goes unanswered makes the silence no verdict: a server
/// busy with a call may be slow to answer a ping, and that call's own deadline decides.
async fn ping(session: &Session, url: &str, standing: usize) -> Result<(), String> {
    let options = CallOptions {
        timeout: Some(PING_DEADLINE),
        max_duration: Some(PING_DEADLINE),
        ..CallOptions::default()
    };
    let mut failure = String::new();
    for attempt in 1..=PING_ATTEMPTS {
        match session.request(methods::PING, None, &options).await {
            Ok(_) => return Ok(()),
            Err(SessionError::Closed { reason, .. }) => return Err(reason.to_string()),
            Err(SessionError::Timeout { .. })
                if session.connection().pending_requests() > standing =>
            {
                tracing::debug!(server = %session.server_name(), "no answer to ping while calls are in flight");
                return Ok(());
            }
            Err(SessionError::Timeout { .. }) => {
                failure =
                    format!("could not reach {url}: no answer to `ping` within {PING_DEADLINE:?}");
            }
            Err(SessionError::Transport { error, .. }) if is_lost(&error) => {
                failure = format!("could not reach {url}: {error}");
            }
            // Any other answer (an error object, a status) came from a live server.
            Err(error) => {
                tracing::debug!(server = %session.server_name(), %error, "ping answered with an error");
                return Ok(());
            }
        }
        tracing::debug!(server = %session.server_name(), attempt, reason = %failure, "ping failed");
    }
    // Whatever is still waiting on the session fails now, not at its own deadline.
    session.connection().close_write().await;
    Err(failure)
}

/// A transport failure that says nothing answered: the answer broke off or never came, or
/// a proxy in front says the server behind it is down.
fn is_lost(error: &TransportError) -> bool {
    match error {
        TransportError::StreamLost { .. }
        | TransportError::Broken { .. }
        | TransportError::NoResponse { .. } => true,
        TransportError::Status { status, .. } => matches!(status.code, 502..=504),
        _ => false,
    }
}
