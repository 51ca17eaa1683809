//! The session's error type. Its `Display` shows peer text (error messages, details,
//! version lists, stderr tails) through `switchboard_text::peer_text`, so a host that
//! prints an error prints no control sequence a server chose.

use std::sync::Arc;
use std::time::Duration;

use switchboard_http::HttpSetupError;
use switchboard_text::peer_text::{PeerLine, PeerText};
use switchboard_wire::stdio::SpawnError;
use switchboard_wire::{
    CloseReason, ErrorObject, Malformed, MalformedKind, TransportError, WireError,
};

/// Why a session operation failed. `isError` tool results are not errors: they are `Ok`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The server process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The HTTP connection could not be set up from its settings (a bad URL or header).
    #[error(transparent)]
    HttpSetup(#[from] HttpSetupError),
    /// The request's parameters could not be encoded as JSON; nothing was sent.
    #[error(
        "the parameters of `{method}` cannot be encoded as JSON ({detail}); nothing was sent to server `{server}`"
    )]
    Unencodable {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// The encoder's message.
        detail: String,
    },
    /// The transport could not get an answer to this request (an HTTP status, a body over
    /// its limit, a stream that ended first); the session stays usable.
    #[error("server `{server}` gave no answer to `{method}`: {error}")]
    Transport {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// What the transport saw.
        error: TransportError,
    },
    /// The transport closed (process exited, stream ended); carries exit status and stderr tail.
    #[error("server `{server}`: {reason}")]
    Closed {
        /// Server name.
        server: Arc<str>,
        /// What the transport knows.
        reason: CloseReason,
    },
    /// The server restarted while the request was in flight (its process exited, its
    /// connection or response stream broke after the request was sent), and the request
    /// was not sent again because it may have had effects: a `tools/call` of a tool not
    /// annotated read-only or idempotent ([`crate::Repeatable`]). The session (or, in a
    /// runtime, the server's next session) serves the next request.
    #[error(
        "server `{server}` restarted, or its connection broke, while `{method}` was in \
         flight; it was not retried because it may have had effects: {cause}"
    )]
    Restarted {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// What broke, as the transport said it (a close's reason with its exit status and
        /// stderr tail, a lost stream's detail), peer text already neutralised.
        cause: String,
    },
    /// No answer within the deadline. A cancellation was sent (except for `initialize`).
    #[error(
        "server `{server}` did not answer `{method}` within {after:?}; {}{}",
        timeout_advice(method),
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
    /// The server's answer was longer than the frame limit: it was skipped unread, and the
    /// request failed as soon as its end was seen (its id was read as it streamed past).
    #[error(
        "server `{server}` answered `{method}` with a {len}-byte message, over the \
         {limit}-byte frame limit; it was skipped unread: ask for less (a narrower request, \
         fewer items per page) or have the server send smaller answers"
    )]
    AnswerTooLarge {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// The answer's length in bytes.
        len: usize,
        /// The frame limit in bytes.
        limit: usize,
    },
    /// The server's answer to the request was not a readable JSON-RPC response (both
    /// `result` and `error`, invalid JSON, …); the request failed at once.
    #[error(
        "server `{server}` answered `{method}` with a malformed message: {}; the server is \
         broken: report it to its authors",
        what_and_excerpt(malformed)
    )]
    MalformedAnswer {
        /// Server name.
        server: Arc<str>,
        /// The request's method.
        method: String,
        /// What was wrong with it, with an excerpt.
        malformed: Malformed,
    },
    /// The server refused every protocol version offered (-32022 to each `server/discover`),
    /// although it lists one of them as supported: its version negotiation loops. The
    /// attempts are capped.
    #[error(
        "server `{server}` refused every protocol version Switchboard offered ({}; \
         `server/discover` sent {attempts} times), though it lists {} as supported; its version \
         negotiation is broken: report it to its authors",
        offered.join(", "),
        PeerText(listed)
    )]
    VersionRefused {
        /// Server name.
        server: Arc<str>,
        /// The versions offered, each once, in order.
        offered: Vec<String>,
        /// How many times `server/discover` was sent.
        attempts: usize,
        /// What the server listed as supported.
        listed: String,
    },
    /// A listing passed one of its caps (pages, entries or bytes across its pages); nothing
    /// of it is used. The caps are [`crate::SessionConfig`]'s `max_list_*` fields.
    #[error(
        "server `{server}` sent a `{method}` listing over its {cap} cap: {}; nothing of it is \
         used (if the listing is genuine, raise the cap: `{}` in the server's config entry, or \
         `{}` in a host's session configuration)",
        cap.passed(*limit, *seen),
        cap.config_key(),
        cap.setting()
    )]
    ListingTooLarge {
        /// Server name.
        server: Arc<str>,
        /// The listing's method.
        method: String,
        /// Which cap.
        cap: ListingCap,
        /// The cap's value.
        limit: usize,
        /// How much was seen when the listing stopped (more than `limit`).
        seen: usize,
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

/// What is wrong with a frame and its excerpt (which says how much was cut, if anything).
fn what_and_excerpt(malformed: &Malformed) -> String {
    let what = malformed.kind.to_string();
    format!("{}: {}", PeerLine(&what), malformed.excerpt)
}

/// The caps on one listing (see [`SessionError::ListingTooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListingCap {
    /// Pages followed (`SessionConfig::max_list_pages`).
    Pages,
    /// Entries across all pages, valid or not (`SessionConfig::max_list_items`).
    Items,
    /// Result bytes across all pages (`SessionConfig::max_list_bytes`).
    Bytes,
}

impl ListingCap {
    /// The key of a server's config entry (`mcp.json`) that sets this cap.
    pub fn config_key(self) -> &'static str {
        match self {
            ListingCap::Pages => "maxListPages",
            ListingCap::Items => "maxListItems",
            ListingCap::Bytes => "maxListBytes",
        }
    }

    /// The `SessionConfig` field that sets this cap.
    pub fn setting(self) -> &'static str {
        match self {
            ListingCap::Pages => "max_list_pages",
            ListingCap::Items => "max_list_items",
            ListingCap::Bytes => "max_list_bytes",
        }
    }

    fn passed(self, limit: usize, seen: usize) -> String {
        match self {
            ListingCap::Pages => {
                format!("more than {limit} pages; stopped following `nextCursor`")
            }
            ListingCap::Items => format!("{seen} entries, more than {limit}"),
            ListingCap::Bytes => format!("{seen} bytes, more than {limit}"),
        }
    }
}

impl std::fmt::Display for ListingCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListingCap::Pages => "page",
            ListingCap::Items => "entry",
            ListingCap::Bytes => "size",
        })
    }
}

/// The deadline a user can raise for a request that timed out: starting up is bounded by
/// the entry's `startupTimeout`, every other request by `--timeout` or the entry's `timeout`.
fn timeout_advice(method: &str) -> &'static str {
    match method {
        switchboard_protocol::methods::INITIALIZE
        | switchboard_protocol::methods::SERVER_DISCOVER => {
            "if it is just slow to start, raise `startupTimeout` in the server's configuration"
        }
        _ => {
            "if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's \
             configuration)"
        }
    }
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
    /// The error for a request to `server` that failed in the wire layer.
    pub(crate) fn from_wire(server: &Arc<str>, method: &str, error: WireError) -> SessionError {
        match error {
            WireError::Closed { reason, .. } => SessionError::Closed {
                server: server.clone(),
                reason,
            },
            WireError::BadAnswer { malformed, .. } => match malformed.kind {
                MalformedKind::Oversized { limit } => SessionError::AnswerTooLarge {
                    server: server.clone(),
                    method: method.to_owned(),
                    len: malformed.len,
                    limit,
                },
                _ => SessionError::MalformedAnswer {
                    server: server.clone(),
                    method: method.to_owned(),
                    malformed,
                },
            },
            WireError::Unencodable { detail, .. } => SessionError::Unencodable {
                server: server.clone(),
                method: method.to_owned(),
                detail,
            },
            WireError::Transport { error, .. } => SessionError::Transport {
                server: server.clone(),
                method: method.to_owned(),
                error,
            },
        }
    }

    /// A refusal of a request's headers ([`TransportError::HeaderMismatch`]) as what it
    /// is to the caller, the server's JSON-RPC answer ([`SessionError::Rpc`]); any other
    /// error as it is.
    pub(crate) fn header_refusal_as_answer(self) -> SessionError {
        match self {
            SessionError::Transport {
                server,
                method,
                error: TransportError::HeaderMismatch { error, .. },
            } => SessionError::Rpc {
                server,
                method,
                error,
            },
            other => other,
        }
    }

    /// The transport's failure, when that is what failed the request (its HTTP status is
    /// [`TransportError::http_status`]).
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            SessionError::Transport { error, .. } => Some(error),
            _ => None,
        }
    }

    /// True when a server restart may have interrupted the request after it was sent: the
    /// transport closed ([`SessionError::Closed`]), its answer was lost
    /// ([`TransportError::is_interrupted`]), or it is [`SessionError::Restarted`].
    pub fn is_interrupted(&self) -> bool {
        match self {
            SessionError::Closed { .. } | SessionError::Restarted { .. } => true,
            SessionError::Transport { error, .. } => error.is_interrupted(),
            _ => false,
        }
    }

    /// True when the request never reached a server: the transport closed because nothing
    /// answered at the server's address (an HTTP server that is down), so sending it
    /// again, once the server is back, cannot run it twice.
    pub fn never_reached_the_server(&self) -> bool {
        matches!(self, SessionError::Closed { reason, .. } if reason.unreachable.is_some())
    }

    /// This interruption as [`SessionError::Restarted`] for `method` (a request that may
    /// not be sent again); any other error as it is.
    pub fn as_restarted(self, method: &str) -> SessionError {
        let cause = match &self {
            SessionError::Closed { reason, .. } => reason.to_string(),
            SessionError::Transport { error, .. } if error.is_interrupted() => error.to_string(),
            _ => return self,
        };
        let server = match self {
            SessionError::Closed { server, .. } | SessionError::Transport { server, .. } => server,
            other => return other,
        };
        SessionError::Restarted {
            server,
            method: method.to_owned(),
            cause,
        }
    }

    /// True when the server restarted during the request and it was not sent again
    /// ([`SessionError::Restarted`]).
    pub fn is_restarted(&self) -> bool {
        matches!(self, SessionError::Restarted { .. })
    }

    /// True for deadline expiry.
    pub fn is_timeout(&self) -> bool {
        matches!(self, SessionError::Timeout { .. })
    }

    /// True when the transport is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, SessionError::Closed { .. })
    }

    /// True when the server's answer could not be read (malformed, or over the frame
    /// limit): the request failed at once rather than at its deadline.
    pub fn is_bad_answer(&self) -> bool {
        matches!(
            self,
            SessionError::MalformedAnswer { .. } | SessionError::AnswerTooLarge { .. }
        )
    }

    /// True when the answer was over the frame limit.
    pub fn is_answer_too_large(&self) -> bool {
        matches!(self, SessionError::AnswerTooLarge { .. })
    }

    /// True when the server refused every protocol version offered.
    pub fn is_version_refused(&self) -> bool {
        matches!(self, SessionError::VersionRefused { .. })
    }

    /// True when a listing passed one of its caps ([`SessionError::ListingTooLarge`]).
    pub fn is_listing_too_large(&self) -> bool {
        matches!(self, SessionError::ListingTooLarge { .. })
    }

    /// Which listing cap was passed, for [`SessionError::ListingTooLarge`].
    pub fn listing_cap(&self) -> Option<ListingCap> {
        match self {
            SessionError::ListingTooLarge { cap, .. } => Some(*cap),
            _ => None,
        }
    }

    /// The JSON-RPC error, when the server answered with one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            SessionError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }
}
