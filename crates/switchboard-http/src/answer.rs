//! A POST's answer: a JSON body or an event stream, handed to the connection message by
//! message; what holds no answer to the request fails it with a typed [`TransportError`].

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use switchboard_wire::{RequestId, TransportError};

use crate::client::Response;
use crate::driver::{Driver, OutgoingRequest, Sending, http_status};
use switchboard_protocol::sse::{SseItem, SseParser};

/// The first response (a message with `result` or `error`) in a body that is JSON or SSE.
pub(crate) fn answer_json(body: &[u8]) -> Option<Value> {
    let is_answer = |v: &Value| v.get("result").is_some() || v.get("error").is_some();
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return is_answer(&value).then_some(value);
    }
    let mut parser = SseParser::new(body.len() + 1);
    let mut items = parser.push(body);
    items.extend(parser.push(b"\n\n"));
    items.into_iter().find_map(|item| match item {
        SseItem::Event(event) => serde_json::from_str::<Value>(&event.data)
            .ok()
            .filter(is_answer),
        SseItem::Oversized { .. } => None,
    })
}

/// The parts of an HTTP answer's head that matter once its body has been read.
pub(crate) struct AnswerHeaders {
    pub(crate) status: reqwest::StatusCode,
    content_type: String,
}

impl AnswerHeaders {
    pub(crate) fn of(response: &Response) -> AnswerHeaders {
        AnswerHeaders {
            status: response.status(),
            content_type: content_type_of(response),
        }
    }
}

/// An answer's `Content-Type`, lowercased (empty when absent or not text).
pub(crate) fn content_type_of(response: &Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Reads a POST's answer (JSON or SSE) and delivers every message in it; fails the
/// request `id` when the answer holds no response to it. A response stream lost before
/// the response fails the request as [`TransportError::StreamLost`] (the session may send
/// the request again, when that is safe).
pub(crate) async fn read_answer(driver: &Driver, request: &OutgoingRequest, response: Response) {
    let id = &request.id;
    let headers = AnswerHeaders::of(&response);
    let status = headers.status;
    if status.is_success() && headers.content_type.starts_with("text/event-stream") {
        // Boxed: the request's task (moved whole when spawned) stays the size of a JSON answer.
        return Box::pin(read_stream_answer(driver, request, status, response)).await;
    }
    let body = crate::driver::read_capped(response, driver.max_body_bytes).await;
    answer_from_body(driver, id, &headers, body).await;
}

/// Reads a POST's answer that is an event stream (resuming it when it ends early).
async fn read_stream_answer(
    driver: &Driver,
    request: &OutgoingRequest,
    status: reqwest::StatusCode,
    response: Response,
) {
    let id = &request.id;
    {
        let mut cursor = StreamCursor::default();
        let mut end = read_event_stream(driver, Some(id), response, &mut cursor).await;
        // A legacy server may close a response stream early after giving it an event id
        // (2025-11-25 polling): wait `retry`, then resume with GET and Last-Event-ID.
        let mut resumes = 0;
        while matches!(end, StreamEnd::Ended { .. })
            && cursor.last_event_id.is_some()
            && resumes < STREAM_RESUMES
        {
            resumes += 1;
            tokio::time::sleep(cursor.retry).await;
            let Some(resumed) = resume_stream(driver, &cursor).await else {
                break;
            };
            end = read_event_stream(driver, Some(id), resumed, &mut cursor).await;
        }
        stream_ended(driver, request, status, end);
    }
}

/// What a response stream's end means for its request: a stream that ended before the
/// response is lost (a 2026-07-28 one cannot be resumed; a legacy one could not be): the
/// request may or may not have run, and the session sends it again only when that is safe.
/// A 2026-07-28 stream that broke is lost too; a legacy one that broke closes the
/// connection.
fn stream_ended(
    driver: &Driver,
    request: &OutgoingRequest,
    status: reqwest::StatusCode,
    end: StreamEnd,
) {
    let modern = matches!(request.sending, Sending::Modern(_));
    let status = http_status(status);
    match end {
        StreamEnd::Answered => {}
        StreamEnd::Ended { malformed_events } => {
            let carried = match malformed_events {
                0 => String::new(),
                1 => "; it carried one event that is not JSON".to_owned(),
                n => format!("; it carried {n} events that are not JSON"),
            };
            let detail = format!(
                "the server's event stream ended before it answered (HTTP {status}){carried}"
            );
            // The server may have had the request: lost, in both eras (a legacy stream
            // was resumed first, when it could be).
            driver.fail_request(&request.id, TransportError::StreamLost { status, detail });
        }
        StreamEnd::Broken(reason) => {
            let detail = format!(
                "the connection to {} broke during a response: {reason}",
                driver.shown_url
            );
            if modern {
                driver.fail_request(&request.id, TransportError::StreamLost { status, detail });
            } else {
                driver.fail(detail);
            }
        }
    }
}

/// Delivers the answer in a body that was read (or failed to read).
pub(crate) async fn answer_from_body(
    driver: &Driver,
    id: &RequestId,
    headers: &AnswerHeaders,
    body: Result<Vec<u8>, TransportError>,
) {
    let status = headers.status;
    let body = match body {
        Ok(body) => body,
        Err(error) => return driver.fail_request(id, error),
    };
    if crate::plain_answer::is_plain_answer(&body, id) {
        driver.sink.message(&body).await;
        // Known by its layout, a body may still turn out not to answer this request (a
        // repeated member the connection reads otherwise): it fails rather than waits.
        if driver.sink.is_waiting(id) {
            driver.fail_request(
                id,
                TransportError::NoResponse {
                    status: http_status(status),
                    detail: "the server answered this request's POST with a message that does \
                             not answer it"
                        .to_owned(),
                },
            );
        }
        return;
    }
    let mut parsed: Option<Value> = serde_json::from_slice(&body).ok();
    // An HTTP answer belongs to the POST it answers: an error without an id (servers use
    // `id: null` when they reject a request before reading it) is this request's answer.
    if let Some(Value::Object(object)) = &mut parsed
        && object.contains_key("error")
        && object.get("id").is_none_or(Value::is_null)
    {
        object.insert("id".into(), id.to_json());
    }
    match parsed {
        // A JSON-RPC answer, whatever the status (modern errors come with 400/404).
        Some(value) if value.get("jsonrpc").is_some() || value.is_array() => {
            deliver_value(driver, &value).await;
            let is_response = value.get("method").is_none()
                && (value.get("result").is_some() || value.get("error").is_some());
            let answered_id = value.get("id").and_then(RequestId::from_json);
            if !is_response || answered_id.as_ref() != Some(id) {
                let other = answered_id.map_or_else(
                    || "no request".to_owned(),
                    |other| format!("request {other}"),
                );
                driver.fail_request(
                    id,
                    TransportError::NoResponse {
                        status: http_status(status),
                        detail: format!(
                            "the server answered this request's POST with a message for {other}"
                        ),
                    },
                );
            }
        }
        _ if status == reqwest::StatusCode::ACCEPTED
            || (status.is_success() && body.is_empty()) =>
        {
            driver.fail_request(
                id,
                TransportError::NoResponse {
                    status: http_status(status),
                    detail: format!(
                        "the server answered HTTP {status} with no response to the request"
                    ),
                },
            );
        }
        _ => {
            let hint = if status == reqwest::StatusCode::UNAUTHORIZED {
                ": the server requires authorization (configure an Authorization header)"
            } else {
                ""
            };
            let excerpt = switchboard_wire::excerpt(&body, 300);
            driver.fail_request(
                id,
                TransportError::Status {
                    status: http_status(status),
                    endpoint: driver.shown_url.clone(),
                    hint: hint.to_owned(),
                    excerpt,
                },
            );
        }
    }
}

/// Hands a message the transport had to read as a tree to the connection.
pub(crate) async fn deliver_value(driver: &Driver, value: &Value) {
    driver.sink.message(value.to_string().as_bytes()).await;
}

/// What delivering one event of a stream did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EventDelivered {
    /// It carried the response to the request the stream answers, or stood in for it.
    Answer,
    /// Data that is not a JSON message (or an event over the cap off a response stream),
    /// handed over to be reported as a malformed frame.
    Malformed,
    /// Anything else: a message for the connection, an empty event.
    Other,
}

/// Delivers the JSON-RPC message of one event. `answering` is the request whose response
/// stream this is: an event over the cap there fails that request at once (its answer may be
/// the event, and it can never be read), elsewhere it is reported as a malformed frame.
pub(crate) async fn deliver_event(
    driver: &Driver,
    item: SseItem,
    answering: Option<&RequestId>,
) -> EventDelivered {
    let event = match item {
        SseItem::Event(event) => event,
        SseItem::Oversized { limit } => {
            if let Some(id) = answering {
                driver.fail_request(
                    id,
                    TransportError::TooLarge {
                        what: "an event the server sent on this request's response stream".into(),
                        limit,
                    },
                );
                return EventDelivered::Answer;
            }
            let problem = format!(
                "<the server sent an event over the {limit}-byte size limit on its event stream: dropped>"
            );
            driver.sink.message(problem.as_bytes()).await;
            return EventDelivered::Malformed;
        }
    };
    if event.data.is_empty() {
        return EventDelivered::Other;
    }
    match serde_json::from_str::<Value>(&event.data) {
        Ok(value) => {
            let is_answer = answering.is_some_and(|id| {
                value.get("method").is_none()
                    && value.get("id").and_then(RequestId::from_json).as_ref() == Some(id)
            });
            deliver_value(driver, &value).await;
            if is_answer {
                EventDelivered::Answer
            } else {
                EventDelivered::Other
            }
        }
        // Not JSON: handed over whole as one message, to be reported as a malformed frame
        // (its line breaks stay: a message is not split into lines here).
        Err(_) => {
            driver.sink.message(event.data.as_bytes()).await;
            EventDelivered::Malformed
        }
    }
}

/// How an SSE response ended.
pub(crate) enum StreamEnd {
    /// The response for the request came.
    Answered,
    /// The server closed the stream cleanly without answering.
    Ended {
        /// Events on it that were not JSON messages (one of them may have been the answer).
        malformed_events: usize,
    },
    /// The connection broke.
    Broken(String),
}

/// Where a stream can be resumed from.
pub(crate) struct StreamCursor {
    pub(crate) last_event_id: Option<String>,
    pub(crate) retry: Duration,
}

impl Default for StreamCursor {
    fn default() -> Self {
        StreamCursor {
            last_event_id: None,
            retry: Duration::from_secs(1),
        }
    }
}

impl StreamCursor {
    /// Notes an event's id and retry delay.
    pub(crate) fn note(&mut self, item: &SseItem) {
        if let SseItem::Event(event) = item {
            if let Some(event_id) = &event.id {
                self.last_event_id = Some(event_id.clone());
            }
            if let Some(ms) = event.retry_ms {
                self.retry = Duration::from_millis(ms.min(60_000));
            }
        }
    }
}

/// How many times one response stream is resumed before giving up.
const STREAM_RESUMES: u32 = 5;

/// Reopens a stream with GET and Last-Event-ID; `None` if the server will not.
async fn resume_stream(driver: &Driver, cursor: &StreamCursor) -> Option<Response> {
    let last_event_id = cursor.last_event_id.as_deref()?;
    let builder = driver
        .authorized(driver.with_session(driver.get_events()))
        .header("last-event-id", last_event_id);
    let response = builder.send().await.ok()?;
    response.status().is_success().then_some(response)
}

/// How many more bytes a response stream is read for after it answered its request.
const AFTER_ANSWER_BYTES: usize = 16 * 1024;
/// How long, in all, a response stream that answered its request is waited on for its end
/// (a server that ends it sends the end at once, in a write of its own; the caller has its
/// answer meanwhile). One deadline from the first wait: a server that trickles bytes after
/// the answer does not restart it.
const AFTER_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
/// How many of one connection's response streams wait so at a time: a server that keeps
/// its streams open holds this many descriptors for [`AFTER_ANSWER_WAIT`] at most.
pub(crate) const AFTER_ANSWER_STREAMS: usize = 4;

/// What is ready now of a future, without waiting: `None` when it would wait.
fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// Delivers every event of an SSE body, noting the last event id and retry delay.
pub(crate) async fn read_event_stream(
    driver: &Driver,
    id: Option<&RequestId>,
    mut response: Response,
    cursor: &mut StreamCursor,
) -> StreamEnd {
    let mut parser = SseParser::new(driver.max_body_bytes);
    let mut answered = false;
    let mut malformed_events = 0;
    let mut left_after_answer = AFTER_ANSWER_BYTES;
    let mut wait_ends: Option<tokio::time::Instant> = None;
    loop {
        // The stream has done its work once its request is answered (the caller has its
        // answer and goes on), but its end is read when it comes at once: a body read to its
        // end gives its kept connection back for the next request, where one dropped
        // part-way closes it — a new connection per call against servers that answer every
        // POST with a stream and end it in a write of its own (rmcp's). The wait is short
        // and taken by a few streams at a time ([`AFTER_ANSWER_STREAMS`]); past those, what
        // has arrived is read and no more. A server that keeps its streams open so costs
        // no more than those few descriptors for that moment. Messages after the response
        // that arrive are delivered; at most [`AFTER_ANSWER_BYTES`] are read.
        let next = if answered {
            match driver.after_answer.try_acquire() {
                Ok(_waiting) => {
                    let ends = *wait_ends
                        .get_or_insert_with(|| tokio::time::Instant::now() + AFTER_ANSWER_WAIT);
                    match tokio::time::timeout_at(ends, response.chunk()).await {
                        Ok(next) => next,
                        Err(_) => return StreamEnd::Answered,
                    }
                }
                Err(_) => {
                    // Once round the scheduler first: the connection's own task moves what
                    // the socket holds into the body, and only then has it "arrived" here.
                    tokio::task::yield_now().await;
                    match ready_now(response.chunk()) {
                        Some(next) => next,
                        None => return StreamEnd::Answered,
                    }
                }
            }
        } else {
            response.chunk().await
        };
        let chunk = match next {
            Ok(Some(chunk)) => chunk,
            Ok(None) if answered => return StreamEnd::Answered,
            Ok(None) => return StreamEnd::Ended { malformed_events },
            Err(_) if answered => return StreamEnd::Answered,
            Err(error) => return StreamEnd::Broken(crate::error_chain(&error)),
        };
        if answered {
            match left_after_answer.checked_sub(chunk.len()) {
                Some(rest) => left_after_answer = rest,
                None => return StreamEnd::Answered,
            }
        }
        for item in parser.push(&chunk) {
            cursor.note(&item);
            match deliver_event(driver, item, id).await {
                EventDelivered::Answer => answered = true,
                EventDelivered::Malformed => malformed_events += 1,
                EventDelivered::Other => {}
            }
        }
    }
}
