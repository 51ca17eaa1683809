//! The session's error type. Its `Display` shows peer text (error messages, details,
//! version lists, stderr tails) through `switchboard_wire::peer_text`, so a host that
//! prints an error prints no control sequence a server chose.

use std::sync::Arc;
use std::time::Duration;

use switchboard_wire::peer_text::PeerText;
use switchboard_wire::stdio::SpawnError;
use switchboard_wire::{CloseReason, ErrorObject};

/// Why a session operation failed. `isError` tool results are not errors: they are `Ok`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The server process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The transport closed (process exited, stream ended); carries exit status and stderr tail.
    #[error("server `{server}`: {reason}")]
    Closed {
        /// Server name.
        server: Arc<str>,
        /// What the transport knows.
        reason: CloseReason,
    },
    /// No answer within the deadline. A cancellation was sent (except for `initialize`).
    #[error(
        "server `{server}` did not answer `{method}` within {after:?}; raise the timeout \
         (`--timeout`, or `timeout` in the server's configuration) if it is just slow{}",
        tail_suffix(stderr_tail)
    )]
    Timeout {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// How long we waited.
        after: Duration,
        /// The server's recent stderr, when known.
        stderr_tail: Option<String>,
    },
    /// The caller cancelled the request; a cancellation was sent.
    #[error("`{method}` on server `{server}` was cancelled: {}", PeerText(reason))]
    Cancelled {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// Why.
        reason: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` answered `{method}` with an error: {error}")]
    Rpc {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// The error object, with its `data` intact.
        error: ErrorObject,
    },
    /// The server broke the protocol (a result of the wrong shape, a loop, a forbidden message).
    #[error(
        "server `{server}` broke the protocol in `{method}`: {}",
        PeerText(detail)
    )]
    Protocol {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// No protocol version both sides speak.
    #[error(
        "server `{server}` speaks protocol version(s) {}, but Switchboard speaks {supported}; \
         update the server or pin a common version in its configuration",
        PeerText(offered)
    )]
    VersionMismatch {
        /// Server name.
        server: Arc<str>,
        /// What the server offered.
        offered: String,
        /// What we speak.
        supported: String,
    },
    /// The server did not declare the capability the request needs; nothing was sent.
    #[error("server `{server}` does not offer {capability}, so `{method}` was not sent")]
    NotDeclared {
        /// Server name.
        server: Arc<str>,
        /// The missing capability.
        capability: &'static str,
        /// The request that needed it.
        method: String,
    },
}

fn tail_suffix(tail: &Option<String>) -> String {
    match tail {
        Some(tail) if !tail.trim().is_empty() => {
            format!(
                "\n--- last stderr output ---\n{}",
                PeerText(tail.trim_end())
            )
        }
        _ => String::new(),
    }
}

impl SessionError {
    /// True for deadline expiry.
    pub fn is_timeout(&self) -> bool {
        matches!(self, SessionError::Timeout { .. })
    }

    /// True when the transport is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, SessionError::Closed { .. })
    }

    /// The JSON-RPC error, when the server answered with one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            SessionError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }
}
