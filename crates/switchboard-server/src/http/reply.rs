//! Responses: the body type (one buffer, or an event stream fed through a bounded
//! channel), JSON-RPC messages encoded for either, and the event-stream writer whose every
//! write is bounded in time.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;
use switchboard_protocol::Era;
use switchboard_wire::codes::INVALID_REQUEST;
use switchboard_wire::{ErrorObject, Outgoing, RequestId};
use tokio::sync::mpsc;

use crate::core::route::Refusal;
use crate::core::{Answer, ServerNotification};

/// Events waiting for a slow client at most, per stream.
const STREAM_BUFFER: usize = 16;

/// A response body.
#[derive(Debug)]
pub(super) enum ReplyBody {
    /// All of it (or nothing).
    Full(Option<Bytes>),
    /// An event stream; it ends when the writer is dropped.
    Stream(mpsc::Receiver<Bytes>),
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ReplyBody::Stream(events) => {
                events.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ReplyBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            ReplyBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// A response.
pub(super) type Reply = Response<ReplyBody>;

fn with_body(status: StatusCode, content_type: Option<&'static str>, body: Option<Bytes>) -> Reply {
    let mut reply = Response::new(ReplyBody::Full(body));
    *reply.status_mut() = status;
    if let Some(content_type) = content_type {
        reply
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    reply
}

/// A plain-text response.
pub(super) fn text(status: StatusCode, text: &'static str) -> Reply {
    with_body(
        status,
        Some("text/plain; charset=utf-8"),
        Some(Bytes::from_static(text.as_bytes())),
    )
}

/// A response without a body (202 for a notification, 204 for DELETE).
pub(super) fn empty(status: StatusCode) -> Reply {
    with_body(status, None, None)
}

fn json(status: StatusCode, message: &Outgoing<'_>) -> Reply {
    // Serialising our own values cannot fail (string keys, no non-finite floats survive
    // `serde_json::Value`).
    let body = serde_json::to_vec(message).unwrap_or_default();
    with_body(status, Some("application/json"), Some(Bytes::from(body)))
}

/// A JSON document (not JSON-RPC).
pub(super) fn json_document(status: StatusCode, document: &Value) -> Reply {
    let body = serde_json::to_vec(document).unwrap_or_default();
    with_body(status, Some("application/json"), Some(Bytes::from(body)))
}

/// A JSON-RPC result.
pub(super) fn result(id: &RequestId, result: &Value) -> Reply {
    json(StatusCode::OK, &Outgoing::Result { id, result })
}

/// A JSON-RPC error under an HTTP status.
pub(super) fn error(status: StatusCode, id: Option<&RequestId>, error: &ErrorObject) -> Reply {
    json(status, &Outgoing::Error { id, error })
}

/// A refusal before any request was read (`id: null`, -32600).
pub(super) fn refusal(status: StatusCode, message: &str) -> Reply {
    error(status, None, &ErrorObject::new(INVALID_REQUEST, message))
}

/// The HTTP status of a request's JSON-RPC error. Modern: the codes the protocol puts
/// under 400 (header mismatch, missing capability, unsupported version); every other
/// error of a request that was served is 200 in both eras.
fn error_status(error: &ErrorObject, era: Era) -> StatusCode {
    use switchboard_protocol::error_codes as codes;
    match (era, error.code) {
        (
            Era::Modern,
            codes::HEADER_MISMATCH
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// A request's answer as one JSON body.
pub(super) fn answer(id: &RequestId, answer: &Answer, era: Era) -> Reply {
    match answer {
        Ok(value) => result(id, value),
        Err(failure) => error(error_status(failure, era), Some(id), failure),
    }
}

/// A core refusal, under the status it names.
pub(super) fn refused(id: Option<&RequestId>, refusal: &Refusal) -> Reply {
    let status = StatusCode::from_u16(refusal.http_status).unwrap_or(StatusCode::BAD_REQUEST);
    error(status, id, &refusal.error)
}

/// Sets a header whose value we made (a session id); a value that is not a header value
/// is left out.
pub(super) fn set_header(reply: &mut Reply, name: &'static str, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        reply
            .headers_mut()
            .insert(HeaderName::from_static(name), value);
    }
}

/// Writes one event stream; dropping it ends the stream.
#[derive(Debug)]
pub(super) struct SseWriter {
    events: mpsc::Sender<Bytes>,
    write_timeout: Duration,
}

/// An event stream: its writer and the response that carries it.
pub(super) fn event_stream(write_timeout: Duration) -> (SseWriter, Reply) {
    let (events, body) = mpsc::channel(STREAM_BUFFER);
    let mut reply = Response::new(ReplyBody::Stream(body));
    let headers = reply.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    (
        SseWriter {
            events,
            write_timeout,
        },
        reply,
    )
}

impl SseWriter {
    async fn write(&self, bytes: Bytes) -> bool {
        matches!(
            tokio::time::timeout(self.write_timeout, self.events.send(bytes)).await,
            Ok(Ok(()))
        )
    }

    async fn message(&self, message: &Outgoing<'_>) -> bool {
        let data = serde_json::to_string(message).unwrap_or_default();
        self.write(Bytes::from(switchboard_protocol::sse::encode_event(&data)))
            .await
    }

    /// Sends a notification; `false` when the client is gone (or took too long).
    pub(super) async fn notification(&self, notification: &ServerNotification) -> bool {
        self.message(&Outgoing::Notification {
            method: notification.method,
            params: Some(&notification.params),
        })
        .await
    }

    /// Sends a request's answer.
    pub(super) async fn answer(&self, id: &RequestId, answer: &Answer) -> bool {
        match answer {
            Ok(result) => self.message(&Outgoing::Result { id, result }).await,
            Err(error) => {
                self.message(&Outgoing::Error {
                    id: Some(id),
                    error,
                })
                .await
            }
        }
    }

    /// Sends an event already encoded; `false` when the client is gone (or took too long).
    pub(super) async fn raw(&self, bytes: Bytes) -> bool {
        self.write(bytes).await
    }

    /// Sends a keep-alive comment.
    pub(super) async fn keep_alive(&self) -> bool {
        self.write(Bytes::from_static(
            switchboard_protocol::sse::KEEP_ALIVE.as_bytes(),
        ))
        .await
    }

    /// Resolves when the client has gone (the response body was dropped).
    pub(super) async fn closed(&self) {
        self.events.closed().await;
    }
}

/// A keep-alive ticker whose first tick is one period away.
pub(super) fn keep_alive(every: Duration) -> tokio::time::Interval {
    let every = every.max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks
}
