//! `cancellation` over legacy Streamable HTTP. In that era a client that closes a response
//! stream has not cancelled anything ("disconnection SHOULD NOT be interpreted as the
//! client cancelling its request"): it cancels with `notifications/cancelled`. So the check
//! opens a session of its own, starts the long call with a progress token, sends the
//! cancellation on a POST of its own while it keeps reading the call's event stream for
//! the grace period (a result or more progress there means the work went on), asks the
//! session for `tools/list`, and ends the session.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::cancel::{
    CANCEL_AFTER_AT_MOST, NO_PROGRESS_BEFORE, ProgressAfterCancel, pick, settle_window, verdict,
};
use super::http::end_session;
use super::{ToolSet, ms};
use crate::catalog::ids;
use crate::options::Options;
use crate::raw::{
    RawAnswer, RawHttp, RawRequest, exchange, initialize_body, notification_body, request_body,
};
use crate::report::{CheckResult, Evidence, Exchange, capped};

/// The long call's request id on the check's own session.
const CALL_ID: u64 = 2;
/// Its progress token.
const TOKEN: &str = "switchboard-check-cancellation";
/// Most messages buffered from the call's stream.
const STREAM_MESSAGES: usize = 256;

/// What the call's reader saw.
enum Streamed {
    /// The answer's head (and, for a JSON body, the body's message).
    Head(RawAnswer),
    /// A message on the event stream, when it arrived.
    Message(Instant, Value),
}

/// Aborts the reader (closing the call's stream) when dropped.
struct Reader(tokio::task::JoinHandle<()>);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn read_call(
    raw: RawHttp,
    request: RawRequest,
    deadline: Duration,
    to: mpsc::Sender<Streamed>,
) {
    let (head, response) = match raw.open(&request, deadline).await {
        Ok(opened) => opened,
        Err(answer) => {
            let _ = to.send(Streamed::Head(answer)).await;
            return;
        }
    };
    if !head.content_type.starts_with("text/event-stream") {
        let answer = crate::raw::finish(head, response).await;
        let message = answer.message.clone();
        let _ = to.send(Streamed::Head(answer)).await;
        if let Some(message) = message {
            let _ = to.send(Streamed::Message(Instant::now(), message)).await;
        }
        return;
    }
    if to.send(Streamed::Head(head)).await.is_err() {
        return;
    }
    let mut events = crate::raw::EventStream::new(response);
    while let Some(message) = events.next().await {
        if to
            .send(Streamed::Message(Instant::now(), message))
            .await
            .is_err()
        {
            return;
        }
    }
}

fn is_call_response(message: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(&json!(CALL_ID))
}

fn is_call_progress(message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("notifications/progress")
        && message.pointer("/params/progressToken") == Some(&json!(TOKEN))
}

/// The legacy-HTTP cancellation check.
pub(crate) struct RawCancel<'a> {
    pub(crate) raw: &'a RawHttp,
    pub(crate) tools: &'a ToolSet,
    pub(crate) options: &'a Options,
    /// A pinned legacy protocol version, if any.
    pub(crate) protocol_version: Option<&'a str>,
}

/// Runs it.
pub(crate) async fn run(target: RawCancel<'_>) -> CheckResult {
    let RawCancel {
        raw,
        tools,
        options,
        protocol_version,
    } = target;
    let long = match pick(tools, options) {
        Ok(long) => long,
        Err(reason) => return CheckResult::skip(ids::CANCELLATION, reason),
    };
    let initialize = RawRequest {
        body: Some(initialize_body(1, protocol_version)),
        ..RawRequest::default()
    };
    let answer = raw.send(&initialize).await;
    if !(answer.success() && answer.result().is_some()) {
        return CheckResult::skip(
            ids::CANCELLATION,
            format!(
                "a legacy session of the check's own could not be opened: `initialize` got {}",
                answer.describe()
            ),
        );
    }
    let session = answer.session_id.clone();
    let version = answer.negotiated_version();
    let on_session = |body: Value| RawRequest {
        body: Some(body),
        session: session.clone(),
        protocol_version: Some(version.clone()),
        ..RawRequest::default()
    };
    let mut evidence = Evidence::default();
    let initialized = on_session(notification_body("notifications/initialized", None));
    let answer = raw.send(&initialized).await;
    if !answer.success() {
        evidence.exchanges.push(exchange(
            "`notifications/initialized`",
            &initialized,
            &answer,
        ));
    }
    let mut result = cancel_call(CallRun {
        raw,
        options,
        call: on_session(json!({
            "jsonrpc": "2.0",
            "id": CALL_ID,
            "method": "tools/call",
            "params": {"name": long.tool, "arguments": long.arguments, "_meta": {"progressToken": TOKEN}},
        })),
        cancel: on_session(notification_body(
            "notifications/cancelled",
            Some(json!({"requestId": CALL_ID, "reason": "switchboard check: cancellation test"})),
        )),
        alive: on_session(request_body(CALL_ID + 1, "tools/list")),
        tool: &long.tool,
        evidence,
    })
    .await;
    if let Some(session) = &session {
        end_session(raw, session, Some(version), &mut result.evidence).await;
    }
    result
}

/// One run of the long call on the check's session.
struct CallRun<'a> {
    raw: &'a RawHttp,
    options: &'a Options,
    call: RawRequest,
    cancel: RawRequest,
    alive: RawRequest,
    tool: &'a str,
    evidence: Evidence,
}

/// What the call's stream showed: its head and every message, with when it arrived.
#[derive(Default)]
struct StreamSeen {
    head: Option<RawAnswer>,
    messages: Vec<(Instant, Value)>,
}

impl StreamSeen {
    /// Reads the stream until the first progress or `until`: `Some(why)` when the call
    /// ended first.
    async fn until_first_progress(
        &mut self,
        from: &mut mpsc::Receiver<Streamed>,
        until: Instant,
    ) -> Option<String> {
        loop {
            let next = tokio::select! {
                next = from.recv() => next,
                () = tokio::time::sleep_until(until.into()) => return None,
            };
            match next {
                None => return Some("the call's stream ended without an answer".to_owned()),
                Some(Streamed::Head(answer)) => {
                    if !answer.success() {
                        return Some(format!("the call got {}", answer.describe()));
                    }
                    self.head = Some(answer);
                }
                Some(Streamed::Message(at, message)) => {
                    let response = is_call_response(&message);
                    let progress = is_call_progress(&message);
                    self.messages.push((at, message));
                    if response {
                        return Some("it answered".to_owned());
                    }
                    if progress {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads whatever the stream brings until `until`.
    async fn until(&mut self, from: &mut mpsc::Receiver<Streamed>, until: Instant) {
        loop {
            let next = tokio::select! {
                next = from.recv() => next,
                () = tokio::time::sleep_until(until.into()) => return,
            };
            match next {
                None => return,
                Some(Streamed::Head(answer)) => self.head = Some(answer),
                Some(Streamed::Message(at, message)) => self.messages.push((at, message)),
            }
        }
    }

    /// The call's response, as " with EXCERPT", if one came.
    fn response_excerpt(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|(_, m)| is_call_response(m))
            .map(|(_, m)| {
                format!(
                    " with {}",
                    switchboard_wire::excerpt(m.to_string().as_bytes(), 200)
                )
            })
            .unwrap_or_default()
    }
}

/// The judged result, or a skip when the call could not be cancelled.
async fn cancel_call(run: CallRun<'_>) -> CheckResult {
    let CallRun {
        raw,
        options,
        call,
        cancel,
        alive,
        tool,
        evidence,
    } = run;
    let wait_first = CANCEL_AFTER_AT_MOST.min(options.long_call_duration / 3);
    let call_deadline = options.request_timeout.max(options.long_call_duration * 2);
    let (to, mut from) = mpsc::channel(STREAM_MESSAGES);
    let started = Instant::now();
    let reader = Reader(tokio::spawn(read_call(
        raw.clone(),
        call.clone(),
        call_deadline,
        to,
    )));
    let mut stream = StreamSeen::default();
    if let Some(detail) = stream
        .until_first_progress(&mut from, started + wait_first)
        .await
    {
        return CheckResult::skip(
            ids::CANCELLATION,
            format!(
                "the long call to `{tool}` ended after {} ms, before it could be cancelled: {detail}{}; name a longer one with --long-call TOOL ARGS",
                ms(started.elapsed()),
                stream.response_excerpt()
            ),
        );
    }
    let cancelled_at = Instant::now();
    let cancel_answer = raw.send(&cancel).await;
    stream
        .until(&mut from, cancelled_at + options.cancel_grace)
        .await;
    // Closes the call's stream.
    drop(reader);
    let alive_answer = raw.send(&alive).await;
    judge(HttpCancelSeen {
        tool,
        requests: [&call, &cancel, &alive],
        stream: &stream,
        started,
        cancelled_at,
        cancel_answer: &cancel_answer,
        alive_answer: &alive_answer,
        grace: options.cancel_grace,
        evidence,
    })
}

/// Everything the judgement of `cancellation` over legacy HTTP reads.
struct HttpCancelSeen<'a> {
    tool: &'a str,
    /// The call, the cancellation and the `tools/list` after the grace period.
    requests: [&'a RawRequest; 3],
    stream: &'a StreamSeen,
    started: Instant,
    cancelled_at: Instant,
    cancel_answer: &'a RawAnswer,
    alive_answer: &'a RawAnswer,
    grace: Duration,
    /// The session's opening exchanges.
    evidence: Evidence,
}

fn judge(seen: HttpCancelSeen<'_>) -> CheckResult {
    let HttpCancelSeen {
        tool,
        requests: [call, cancel, alive],
        stream,
        started,
        cancelled_at,
        cancel_answer,
        alive_answer,
        grace,
        mut evidence,
    } = seen;
    let messages = &stream.messages;
    let progress_before = messages
        .iter()
        .filter(|(at, m)| *at <= cancelled_at && is_call_progress(m))
        .count();
    evidence.exchanges.push(Exchange {
        label: format!(
            "start the long call on a session of the check's own, cancel it after {} ms",
            ms(cancelled_at - started)
        ),
        sent: call.body.as_ref().map(|b| capped(b, 2048)),
        received: Some(json!({
            "status": stream.head.as_ref().and_then(|h| h.status),
            "content_type": stream.head.as_ref().map(|h| h.content_type.clone()),
            "messages_before_cancel": messages.iter().filter(|(at, _)| *at <= cancelled_at).count(),
            "messages_after_cancel": messages.iter().filter(|(at, _)| *at > cancelled_at).count(),
        })),
        elapsed: Some(cancelled_at - started),
    });
    evidence.exchanges.push(exchange(
        "`notifications/cancelled` on a POST of its own (the call's stream kept open)",
        cancel,
        cancel_answer,
    ));
    evidence.notes.push(format!(
        "request id {CALL_ID}; notifications/cancelled answered {}; {progress_before} progress notification(s) before the cancel",
        cancel_answer.describe()
    ));
    let mut problems = Vec::new();
    if let Some((at, message)) = messages
        .iter()
        .find(|(at, m)| *at > cancelled_at && is_call_response(m))
    {
        problems.push(format!(
            "a result for the cancelled request arrived {} ms after the cancel",
            ms(*at - cancelled_at)
        ));
        evidence.notes.push(format!(
            "late result: {}",
            switchboard_wire::excerpt(message.to_string().as_bytes(), 300)
        ));
    }
    ProgressAfterCancel {
        token: TOKEN.to_string(),
        after_cancel: messages
            .iter()
            .filter(|(at, m)| *at > cancelled_at && is_call_progress(m))
            .map(|(at, _)| *at - cancelled_at)
            .collect(),
        settle: settle_window(grace),
    }
    .record(&mut evidence, &mut problems);
    if progress_before == 0 {
        evidence.notes.push(NO_PROGRESS_BEFORE.into());
    }
    if !(alive_answer.success() && alive_answer.result().is_some()) {
        problems.push(format!(
            "after the cancellation the session no longer answers: `tools/list` got {}",
            alive_answer.describe()
        ));
        evidence.exchanges.push(exchange(
            "tools/list after the grace period",
            alive,
            alive_answer,
        ));
    }
    verdict(
        problems,
        format!(
            "`{tool}` cancelled after {} ms: no result and no progress within {} ms, the server still answers",
            ms(cancelled_at - started),
            ms(grace)
        ),
        evidence,
    )
}
