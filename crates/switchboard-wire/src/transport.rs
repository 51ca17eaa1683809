//! The seam between a [`Connection`](crate::Connection) and what carries its messages.
//!
//! A connection works on messages: it encodes each outgoing message once and hands it to
//! its [`Transport`] with what the transport may need to know about it ([`OutgoingKind`]:
//! request id and method, the request a cancellation names; [`MessageContext`]: the
//! protocol version the message is sent under, and headers its owner made for it). A byte-stream transport (stdio, in-memory
//! pipes) writes the text as a line; a message transport (Streamable HTTP, in its own
//! crate) turns it into a request of its own. What comes back enters the connection through
//! its [`InboundSink`]: message texts, and [`TransportError`]s for requests the transport
//! could not get an answer to.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::message::{ErrorObject, RequestId};
use switchboard_text::peer_text::PeerText;

/// A boxed future, as the transport trait returns them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a message is, as its sender knows it (no transport has to read it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutgoingKind<'a> {
    /// A request: its answer is awaited under `id`.
    Request {
        /// The request's id.
        id: &'a RequestId,
        /// Its method.
        method: &'a str,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: &'a str,
    },
    /// The notification that cancels the request `of` (built by the connection from the
    /// [`CancelNotice`] its owner set).
    Cancellation {
        /// The cancelled request's id.
        of: &'a RequestId,
    },
    /// An answer to a request from the peer.
    Response {
        /// The id it answers.
        id: &'a RequestId,
    },
    /// Bytes sent as they are (the checker sends broken traffic on purpose).
    Raw,
}

/// What the owner of a connection tells the transport about a message: the protocol
/// version it is sent under, when one applies, and headers to send with it (a transport
/// whose headers depend on the message reads them here instead of from the message; a
/// transport without headers ignores them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageContext {
    /// The protocol version, e.g. `2025-06-18`; `None` before one is chosen.
    pub protocol_version: Option<Arc<str>>,
    /// Headers sent with the message as given, `(name, value)`; a name or value that is not
    /// valid header text fails the message.
    pub headers: Vec<(String, String)>,
}

impl MessageContext {
    /// A context naming this protocol version.
    pub fn version(version: &Arc<str>) -> MessageContext {
        MessageContext {
            protocol_version: Some(version.clone()),
            headers: Vec::new(),
        }
    }

    /// This context with these headers to send as well.
    #[must_use]
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> MessageContext {
        self.headers.extend(headers);
        self
    }
}

/// One outgoing message.
#[derive(Debug, Clone, Copy)]
pub struct OutgoingMessage<'a> {
    /// What it is.
    pub kind: OutgoingKind<'a>,
    /// Its JSON text, ending in a newline (except [`OutgoingKind::Raw`] bytes, sent as given).
    pub text: &'a [u8],
    /// What the sender said about it.
    pub context: &'a MessageContext,
}

impl OutgoingMessage<'_> {
    /// The JSON text without its line terminator.
    pub fn json(&self) -> &[u8] {
        self.text.strip_suffix(b"\n").unwrap_or(self.text)
    }
}

/// Builds the notification that cancels a request: its method and params, from the
/// request's id and the reason. The wire layer knows no protocol's cancellation; the
/// connection's owner supplies it ([`Connection::set_cancel_notice`](crate::Connection::set_cancel_notice)).
pub type CancelNotice = fn(&RequestId, &str) -> (&'static str, serde_json::Value);

/// Carries a connection's messages to the peer. Implementations deliver what the peer sends
/// through the [`InboundSink`] they were given.
pub trait Transport: Send + Sync + 'static {
    /// Sends one message. Returning means the transport took it; the answer to a request
    /// arrives through the sink, as its response or as a [`TransportError`] for its id.
    fn send<'a>(
        &'a self,
        message: OutgoingMessage<'a>,
    ) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Ends our sending side (a child's stdin; an HTTP session's DELETE). Requests in
    /// flight stay pending until answered or the transport closes.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// Why a transport could not carry a message or get its answer. Each variant says what a
/// caller can act on; texts from the peer (body excerpts) are shown through [`PeerText`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer answered with an HTTP status and no message for the request (a 5xx, a 4xx
    /// without JSON-RPC, a 2xx whose body is not JSON-RPC).
    #[error("HTTP {status} from {endpoint}{hint}{}", excerpt_suffix(.excerpt))]
    Status {
        /// The status, with its reason phrase (`500 Internal Server Error`).
        status: HttpStatus,
        /// The endpoint as messages show it (no credentials or query values).
        endpoint: String,
        /// What to do about it, when we know (starts with `: `), or empty.
        hint: String,
        /// The start of the body (at most 300 bytes of it, escaped).
        excerpt: String,
    },
    /// The peer answered, but the answer held no response to this request: an empty body,
    /// a 202, an event stream that ended first, a body for another request.
    #[error("{detail}")]
    NoResponse {
        /// The status of the answer.
        status: HttpStatus,
        /// What the answer held instead.
        detail: String,
    },
    /// The answer was a stream that ended or broke before it carried the response, and the
    /// transport cannot resume it: the request may or may not have run, and its owner may
    /// send it again under a new id.
    #[error("{detail}")]
    StreamLost {
        /// The status of the answer.
        status: HttpStatus,
        /// How the stream was lost.
        detail: String,
    },
    /// The connection broke after the request was sent and before any answer (reset, or
    /// closed: the peer restarted or died while it had the request): like
    /// [`TransportError::StreamLost`], the request may or may not have run.
    #[error("{detail}")]
    Interrupted {
        /// How the connection broke.
        detail: String,
    },
    /// The answer (a body, an event) was over its size limit and was not read past it.
    #[error("{what} is larger than the {limit}-byte limit")]
    TooLarge {
        /// What was too large.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The answer broke off while it was being read.
    #[error("reading the server's response failed: {detail}")]
    Broken {
        /// What broke.
        detail: String,
    },
    /// Authorization failed: the credentials were refused and could not be renewed.
    #[error("authorization failed: {detail}")]
    Unauthorized {
        /// The status that refused it (401 or 403).
        status: HttpStatus,
        /// Why it could not be renewed.
        detail: String,
    },
    /// The peer refused the message, or the transport cannot be used with it (e.g. a
    /// fallback that failed).
    #[error("{detail}")]
    Refused {
        /// The status, when an HTTP answer refused it.
        status: Option<HttpStatus>,
        /// What happened.
        detail: String,
    },
    /// The peer refused the request because its headers do not match its body (over HTTP,
    /// headers that mirror the message's parameters): the owner may fix what it derives
    /// the headers from and send the request again.
    #[error("the server refused the request's headers (HTTP {status}): {error}")]
    HeaderMismatch {
        /// The status that refused it.
        status: HttpStatus,
        /// The JSON-RPC error the server answered with.
        error: ErrorObject,
    },
    /// Our side of the transport is closed or could not be written.
    #[error("{detail}")]
    Closed {
        /// What happened.
        detail: String,
    },
}

impl TransportError {
    /// The HTTP status that came with the failure, if any.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TransportError::Status { status, .. }
            | TransportError::NoResponse { status, .. }
            | TransportError::Unauthorized { status, .. }
            | TransportError::HeaderMismatch { status, .. }
            | TransportError::StreamLost { status, .. } => Some(status.code),
            TransportError::Refused { status, .. } => status.map(|s| s.code),
            TransportError::TooLarge { .. }
            | TransportError::Interrupted { .. }
            | TransportError::Broken { .. }
            | TransportError::Closed { .. } => None,
        }
    }

    /// True when the server refused our credentials.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, TransportError::Unauthorized { .. })
    }

    /// True when the answer's stream was lost before the response ([`TransportError::StreamLost`]).
    pub fn is_stream_lost(&self) -> bool {
        matches!(self, TransportError::StreamLost { .. })
    }

    /// True when the request was sent and its answer lost so that it may or may not have
    /// run: its response stream was lost ([`TransportError::StreamLost`]) or the
    /// connection broke before any answer ([`TransportError::Interrupted`]).
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            TransportError::StreamLost { .. } | TransportError::Interrupted { .. }
        )
    }

    /// True when the server refused the request's headers ([`TransportError::HeaderMismatch`]).
    pub fn is_header_mismatch(&self) -> bool {
        matches!(self, TransportError::HeaderMismatch { .. })
    }
}

fn excerpt_suffix(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!(": {}", PeerText(excerpt))
    }
}

/// An HTTP status code with its canonical reason phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpStatus {
    /// The code, e.g. 500.
    pub code: u16,
    /// The canonical reason phrase for it (`Internal Server Error`), or empty.
    pub reason: &'static str,
}

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{} {}", self.code, self.reason)
        }
    }
}

type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// The transport of a byte stream: each message is written as one line.
pub(crate) struct StreamTransport {
    writer: tokio::sync::Mutex<Option<BoxWriter>>,
}

impl StreamTransport {
    pub(crate) fn new(writer: BoxWriter) -> StreamTransport {
        StreamTransport {
            writer: tokio::sync::Mutex::new(Some(writer)),
        }
    }

    /// Writes the bytes whole under the lock (the fast path calls this directly, without a
    /// boxed future).
    pub(crate) async fn write(&self, bytes: &[u8]) -> Result<(), TransportError> {
        let mut writer = self.writer.lock().await;
        let Some(w) = writer.as_mut() else {
            return Err(TransportError::Closed {
                detail: "our side of the connection is closed".into(),
            });
        };
        let written = async {
            w.write_all(bytes).await?;
            w.flush().await
        }
        .await;
        written.map_err(|e| TransportError::Closed {
            detail: format!("could not write to the server: {e}"),
        })
    }

    pub(crate) async fn shutdown(&self) {
        let mut writer = self.writer.lock().await;
        if let Some(mut w) = writer.take() {
            let _ = w.shutdown().await;
        }
    }
}

impl Transport for StreamTransport {
    fn send<'a>(
        &'a self,
        message: OutgoingMessage<'a>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.write(message.text))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shutdown())
    }
}
