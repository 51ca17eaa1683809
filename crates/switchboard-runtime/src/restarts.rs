//! A request a server restart interrupted: sent again once, when that is safe, to the
//! server's session once it is usable again; otherwise a typed error saying so.
//!
//! *What happened* is the session's to say ([`SessionError::is_interrupted`]): the request
//! was sent and its answer lost — a stdio process that exited, an HTTP connection or
//! response stream that broke (both eras). *Whether it is safe* to send it again is decided
//! here, where the method and the tool are known ([`Repeatable`]): listings,
//! `resources/read`, `prompts/get` and `completion/complete` are; a `tools/call` is only
//! when its tool's annotations say `readOnlyHint: true` or `idempotentHint: true`
//! (annotations are the server's word: a server that lies about its tool gets that tool
//! called again). A request that is not safe fails as [`SessionError::Restarted`] ("server
//! `x` restarted while `tools/call` was in flight, and it was not retried because it may
//! have had effects: …"); the server's next session serves the next request as usual.
//!
//! A safe request is sent once more: on the same session when it is still open (an HTTP
//! session whose stream broke), else on the session the supervisor makes when it
//! reconnects, waited for under the call's own deadline (never past the runtime's
//! `ready_wait`; cancellation ends the wait). A resend that finds nothing at the server's
//! address (the server is not back yet: the request never reached it) waits for the
//! reconnected session and is sent there; such resends are bounded too. A session a host
//! gave for the call (per-caller credentials) has no supervisor: the request is sent again
//! only while that session is open. Nothing is sent again while MCP is being disabled.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use switchboard_session::{Repeatable, Session, SessionError};
use tokio_util::sync::CancellationToken;

use crate::server::ServerShared;
use crate::snapshot::CallRouter;

/// How many times one request is sent in all, counting sends that reached no server.
const MAX_SENDS: usize = 4;

/// What a request needs to go on after a restart interrupted it.
pub(crate) struct Resend<'a> {
    /// The server's supervised state (`None`: the caller's own session, not supervised).
    pub(crate) server: Option<Arc<ServerShared>>,
    /// How long to wait for the server's next session.
    pub(crate) wait: Duration,
    /// The caller's cancellation, which ends the wait.
    pub(crate) cancel: Option<&'a CancellationToken>,
    /// The request's method.
    pub(crate) method: &'static str,
    /// Whether it may be sent again.
    pub(crate) repeatable: Repeatable,
    /// The runtime's router: while MCP is being disabled, a closing server is stopping,
    /// not restarting.
    pub(crate) router: &'a CallRouter,
}

/// Sends the request with `send` on `session`, and once more after an interruption when
/// that is safe (see the module's docs); an interrupted request that is not safe fails as
/// [`SessionError::Restarted`].
pub(crate) async fn through_restarts<T, F, Fut>(
    plan: Resend<'_>,
    mut session: Session,
    send: F,
) -> Result<T, SessionError>
where
    F: Fn(Session) -> Fut,
    Fut: Future<Output = Result<T, SessionError>>,
{
    let mut sent_again = false;
    let mut sends = 0;
    loop {
        sends += 1;
        let error = match send(session.clone()).await {
            Err(error) if error.is_interrupted() && !error.is_restarted() => error,
            other => return other,
        };
        if plan.router.is_stopping() || sends >= MAX_SENDS {
            return Err(error);
        }
        if error.never_reached_the_server() {
            // Nothing ran: only a resend goes on (a first send keeps its own error).
            if !sent_again {
                return Err(error);
            }
        } else if !plan.repeatable.allows(plan.method) {
            return Err(error.as_restarted(plan.method));
        } else if sent_again {
            return Err(error);
        } else {
            sent_again = true;
        }
        tracing::debug!(server = %session.server_name(), method = plan.method, "a restart interrupted the request; sending it again");
        session = match usable_session(&plan, session).await {
            Some(next) => next,
            None => return Err(error),
        };
    }
}

/// The session to send again on: `session` while it is open, else the server's next
/// ready session, within the plan's wait.
async fn usable_session(plan: &Resend<'_>, session: Session) -> Option<Session> {
    if session.close_reason().is_none() {
        return Some(session);
    }
    let server = plan.server.as_ref()?;
    let ready = server.ready_session(plan.wait);
    match plan.cancel {
        Some(cancel) => tokio::select! {
            ready = ready => ready.ok(),
            () = cancel.cancelled() => None,
        },
        None => ready.await.ok(),
    }
}
