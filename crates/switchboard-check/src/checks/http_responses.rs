//! `http-responses`: the raw answers of a handshake, one more request and a notification,
//! judged against the Streamable HTTP transport section ("Sending Messages to the Server"
//! and "Session Management"):
//!
//! - "If the input is a JSON-RPC request, the server MUST either return
//!   `Content-Type: text/event-stream`, to initiate an SSE stream, or
//!   `Content-Type: application/json`, to return one JSON object." The client's `Accept`
//!   lists exactly those two, so any other media type is one the client did not accept.
//! - "If the input is a JSON-RPC response or notification: if the server accepts the input,
//!   the server MUST return HTTP status code 202 Accepted with no body."
//! - "A server using the Streamable HTTP transport MAY assign a session ID at
//!   initialization time, by including it in an `MCP-Session-Id` header on the HTTP
//!   response containing the `InitializeResult`." "The session ID MUST only contain visible
//!   ASCII characters (ranging from 0x21 to 0x7E)."
//!
//! Two units on raw requests live here as well, each shaped probe → evidence → judgement:
//! `http-notifications` (a 2026-07-28 notification gets the same 202 with no body the
//! legacy `notifications/initialized` above gets; "If the body is a JSON-RPC notification:
//! if the server accepts it, the server MUST return HTTP status code 202 Accepted with no
//! body") and `sse-priming` (2025-11-25: "If the server initiates an SSE stream: the server
//! SHOULD immediately send an SSE event consisting of an event ID and an empty `data` field
//! in order to prime the client to reconnect").
//!
//! In the legacy era the check opens a session of its own (`initialize`,
//! `notifications/initialized`, `ping`, then three `ping`s at once) and ends it; in the
//! 2026-07-28 era it judges the answers to `server/discover`, once and three times at once
//! (that protocol defines no client-to-server notification over HTTP). A dual-era server
//! is judged in both.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_protocol::Era;
use switchboard_protocol::sse::{SseEvent, SseItem, SseParser};
use switchboard_session::EraChoice;

use super::http::{HttpTarget, end_session};
use crate::catalog::{UnitFuture, ids};
use crate::raw::{
    RawAnswer, RawRequest, discover_body, exchange, initialize_body, modern_meta,
    notification_body, request_body,
};
use crate::report::{CheckResult, Evidence, Finding};

/// The media types a request's answer may have (the checker's `Accept` lists both).
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// The media type of a `Content-Type` value: lowercase, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// What is wrong with the answer to the request with this id, if anything.
fn judge_request(what: &str, id: u64, answer: &RawAnswer) -> Option<String> {
    let Some(status) = answer.status else {
        return Some(format!("{what} got {}", answer.describe()));
    };
    if status == 202 {
        return Some(format!(
            "{what} was answered with HTTP 202, which is for accepted notifications; a request's answer is 200 with `{JSON}` or `{EVENT_STREAM}`"
        ));
    }
    if status != 200 {
        return Some(format!(
            "{what} got {}, not 200 with its response",
            answer.describe()
        ));
    }
    let media = media_type(&answer.content_type);
    let message = answer.message.as_ref();
    let answers_it = |m: &Value| {
        m.get("jsonrpc") == Some(&json!("2.0"))
            && m.get("id") == Some(&json!(id))
            && (m.get("result").is_some() || m.get("error").is_some())
    };
    match media.as_str() {
        JSON => match message {
            Some(m) if answers_it(m) => None,
            Some(Value::Array(_)) => Some(format!(
                "{what} was answered with a JSON array; an `{JSON}` answer is one JSON-RPC response"
            )),
            Some(_) => Some(format!(
                "the `{JSON}` answer to {what} is not a JSON-RPC response with id {id}: {}",
                answer.describe()
            )),
            None => Some(format!(
                "the `{JSON}` answer to {what} is not JSON: {}",
                if answer.excerpt.is_empty() {
                    "an empty body".to_owned()
                } else {
                    format!("`{}`", answer.excerpt)
                }
            )),
        },
        EVENT_STREAM => match message {
            Some(m) if answers_it(m) => None,
            _ => Some(format!(
                "the event stream answering {what} carried no JSON-RPC response with id {id}"
            )),
        },
        "" => Some(format!(
            "{what} was answered without a `Content-Type`; a request's answer is `{JSON}` or `{EVENT_STREAM}`"
        )),
        other => {
            let body = if message.is_some() {
                " (its body is JSON)"
            } else {
                ""
            };
            Some(format!(
                "{what} was answered with `Content-Type: {other}`{body}; a request's answer is `{JSON}` or `{EVENT_STREAM}`, the only types the request's `Accept` allows"
            ))
        }
    }
}

/// What is wrong with the answer to an accepted notification, if anything.
fn judge_notification(what: &str, answer: &RawAnswer) -> Option<String> {
    match answer.status {
        Some(202) if answer.excerpt.is_empty() => None,
        Some(202) => Some(format!(
            "{what} got HTTP 202 with a body (`{}`); an accepted notification gets 202 with no body",
            answer.excerpt
        )),
        Some(_) => Some(format!(
            "{what} got {}; an accepted notification gets 202 with no body",
            answer.describe()
        )),
        None => Some(format!("{what} got {}", answer.describe())),
    }
}

/// The characters of a session id outside visible ASCII, described (never the id itself).
fn invisible_characters(id: &str) -> Option<String> {
    let bad: Vec<String> = id
        .chars()
        .enumerate()
        .filter(|(_, c)| !('\u{21}'..='\u{7e}').contains(c))
        .map(|(at, c)| format!("U+{:04X} at position {}", u32::from(c), at + 1))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let shown: Vec<&str> = bad.iter().take(3).map(String::as_str).collect();
    let more = bad.len().saturating_sub(shown.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!("{}{more}", shown.join(", ")))
}

/// A legacy `initialize` of the check's own, and its answer.
async fn legacy_initialize(target: &HttpTarget<'_>) -> (RawRequest, RawAnswer) {
    let initialize = RawRequest {
        body: Some(initialize_body(1, target.legacy_version())),
        ..RawRequest::default()
    };
    let answer = target.raw.send(&initialize).await;
    (initialize, answer)
}

/// The legacy exchanges, on a session of the check's own; false if `initialize` failed.
async fn legacy(
    target: &HttpTarget<'_>,
    problems: &mut Vec<String>,
    evidence: &mut Evidence,
) -> bool {
    let raw = target.raw;
    let (initialize, answer) = legacy_initialize(target).await;
    if !(answer.success() && answer.result().is_some()) {
        if target.era == Era::Legacy {
            evidence
                .exchanges
                .push(exchange("legacy `initialize`", &initialize, &answer));
            problems.extend(judge_request("`initialize`", 1, &answer));
        }
        return false;
    }
    evidence
        .exchanges
        .push(exchange("legacy `initialize`", &initialize, &answer));
    problems.extend(judge_request("`initialize`", 1, &answer));
    let issued = answer.session_id.clone();
    if let Some(id) = &issued
        && let Some(bad) = invisible_characters(id)
    {
        problems.push(format!(
            "the `Mcp-Session-Id` issued at initialization holds characters outside visible ASCII (0x21–0x7E): {bad}"
        ));
    }
    let version = answer.negotiated_version();
    let on_session = |body: Value| RawRequest {
        body: Some(body),
        session: issued.clone(),
        protocol_version: Some(version.clone()),
        ..RawRequest::default()
    };
    let initialized = on_session(notification_body("notifications/initialized", None));
    let notified = raw.send(&initialized).await;
    evidence.exchanges.push(exchange(
        "`notifications/initialized`",
        &initialized,
        &notified,
    ));
    problems.extend(judge_notification("`notifications/initialized`", &notified));
    let ping = on_session(request_body(2, "ping"));
    let pinged = raw.send(&ping).await;
    evidence
        .exchanges
        .push(exchange("`ping` on the session", &ping, &pinged));
    problems.extend(judge_request("`ping`", 2, &pinged));
    for (what, later) in [
        ("`notifications/initialized`", &notified),
        ("`ping`", &pinged),
    ] {
        match (&issued, &later.session_id) {
            (_, None) => {}
            (Some(issued), Some(id)) if issued == id => {}
            (Some(_), Some(_)) => problems.push(format!(
                "the answer to {what} carried a different `Mcp-Session-Id` than the one issued at initialization; a session id is issued on the `initialize` answer only"
            )),
            (None, Some(_)) => problems.push(format!(
                "the answer to {what} issued an `Mcp-Session-Id` although the `initialize` answer carried none; a session id is issued on the `initialize` answer only"
            )),
        }
    }
    at_once(
        target,
        |id| on_session(request_body(id, "ping")),
        "`ping`",
        problems,
        evidence,
    )
    .await;
    if let Some(session) = &issued {
        end_session(raw, session, Some(version), evidence).await;
    }
    true
}

/// Ids of the requests sent at once.
const AT_ONCE: [u64; 3] = [11, 12, 13];

/// Three requests POSTed at the same time (on one session, in the legacy era): each gets
/// its own answer ("The client MAY remain connected to multiple SSE streams
/// simultaneously"; a server that serialises or drops concurrent POSTs breaks clients that
/// pipeline).
async fn at_once(
    target: &HttpTarget<'_>,
    request: impl Fn(u64) -> RawRequest,
    what: &str,
    problems: &mut Vec<String>,
    evidence: &mut Evidence,
) {
    let requests = AT_ONCE.map(&request);
    let raw = target.raw;
    let (first, second, third) = tokio::join!(
        raw.send(&requests[0]),
        raw.send(&requests[1]),
        raw.send(&requests[2])
    );
    let mut all_answered = true;
    for ((id, sent), answer) in AT_ONCE.iter().zip(&requests).zip([first, second, third]) {
        let label = format!("{what} (id {id}), one of three sent at once");
        if let Some(problem) = judge_request(&label, *id, &answer) {
            all_answered = false;
            problems.push(problem);
            evidence.exchanges.push(exchange(label, sent, &answer));
        }
    }
    if all_answered {
        evidence.notes.push(format!(
            "three {what} requests POSTed at once were each answered with their own response"
        ));
    }
}

/// `http-responses`.
pub(crate) async fn responses(target: &HttpTarget<'_>) -> CheckResult {
    let mut problems = Vec::new();
    let mut evidence = Evidence::default();
    let judged_legacy =
        target.pinned != EraChoice::Modern && legacy(target, &mut problems, &mut evidence).await;
    let judged_modern = target.era == Era::Modern;
    if judged_modern {
        let discover = RawRequest {
            body: Some(discover_body(1)),
            modern: true,
            ..RawRequest::default()
        };
        let answer = target.raw.send(&discover).await;
        evidence
            .exchanges
            .push(exchange("`server/discover`", &discover, &answer));
        problems.extend(judge_request("`server/discover`", 1, &answer));
        at_once(
            target,
            |id| RawRequest {
                body: Some(discover_body(id)),
                modern: true,
                ..RawRequest::default()
            },
            "`server/discover`",
            &mut problems,
            &mut evidence,
        )
        .await;
        evidence.notes.push(
            "the 2026-07-28 protocol defines no client-to-server notification over HTTP, so none was sent in that era".into(),
        );
    }
    if !judged_legacy && !judged_modern && problems.is_empty() {
        return CheckResult::skip(
            ids::HTTP_RESPONSES,
            "a legacy `initialize` of the check's own was not answered with a result, so there was no exchange to judge",
        );
    }
    let summary = match (judged_legacy, judged_modern) {
        (true, true) => {
            "legacy `initialize` and `ping` and `server/discover` are answered with 200 and a JSON-RPC response in `application/json` or `text/event-stream`; the notification gets 202 with no body; the session id is visible ASCII, issued at initialization"
        }
        (true, false) => {
            "`initialize` and `ping` are answered with 200 and a JSON-RPC response in `application/json` or `text/event-stream`; the notification gets 202 with no body; the session id (if any) is visible ASCII, issued at initialization"
        }
        _ => {
            "`server/discover` is answered with 200 and a JSON-RPC response in `application/json` or `text/event-stream`"
        }
    };
    let findings: Vec<Finding> = problems.into_iter().map(Finding::error).collect();
    CheckResult::from_findings(ids::HTTP_RESPONSES, &findings, summary, evidence)
}

/// `http-notifications`: a 2026-07-28 `notifications/cancelled` (for a request never sent,
/// which a server ignores) POSTed with the revision's headers and `_meta`.
pub(crate) fn modern_notification<'a>(target: &'a HttpTarget<'a>) -> UnitFuture<'a> {
    Box::pin(async move {
        // Probe.
        let mut params = json!({
            "requestId": "switchboard-check-never-sent",
            "reason": "switchboard check: a notification for the server to accept",
        });
        params["_meta"] = Value::Object(modern_meta());
        let request = RawRequest {
            body: Some(notification_body("notifications/cancelled", Some(params))),
            modern: true,
            ..RawRequest::default()
        };
        let answer = target.raw.send(&request).await;
        // Evidence.
        let mut evidence = Evidence::default();
        evidence.exchanges.push(exchange(
            "`notifications/cancelled` for a request never sent",
            &request,
            &answer,
        ));
        // Judgement: the legacy era's, for `notifications/initialized`.
        match judge_notification("a POSTed `notifications/cancelled`", &answer) {
            Some(problem) => CheckResult::finding(ids::HTTP_NOTIFICATIONS, problem, evidence),
            None => CheckResult::pass(
                ids::HTTP_NOTIFICATIONS,
                "a POSTed notification (`notifications/cancelled`) got 202 Accepted with no body",
                evidence,
            ),
        }
    })
}

/// The request `sse-priming` sends on its session: a `ping` asking for progress, which
/// invites an event stream (many servers stream every request; some only when progress may
/// come).
const PRIMING_PING_ID: u64 = 2;

/// How long `sse-priming` waits for the stream's head, and then for its first event.
const PRIMING_WAIT: Duration = Duration::from_secs(5);

/// What `sse-priming` saw: the answer's head, and the stream's first event.
struct PrimingSeen {
    answer: RawAnswer,
    first_event: Result<SseEvent, String>,
}

/// Reads an event stream up to its first event, within the deadline.
async fn first_event(
    mut response: reqwest::Response,
    deadline: Duration,
) -> Result<SseEvent, String> {
    let mut parser = SseParser::new(64 * 1024);
    let started = Instant::now();
    loop {
        let left = deadline.saturating_sub(started.elapsed());
        let chunk = match tokio::time::timeout(left, response.chunk()).await {
            Err(_) => return Err(format!("no event within {} ms", deadline.as_millis())),
            Ok(Err(error)) => return Err(format!("the stream broke: {error}")),
            Ok(Ok(None)) => return Err("the stream ended without an event".into()),
            Ok(Ok(Some(chunk))) => chunk,
        };
        match parser.push(&chunk).into_iter().next() {
            Some(SseItem::Event(event)) => return Ok(event),
            Some(SseItem::Oversized { limit }) => {
                return Err(format!("the first event is larger than {limit} bytes"));
            }
            None => {}
        }
    }
}

/// The probe of `sse-priming`: a legacy session of its own, the `ping`, its stream's first
/// event, the session ended. `Err`: why there is no stream to judge.
async fn priming_probe(
    target: &HttpTarget<'_>,
    evidence: &mut Evidence,
) -> Result<PrimingSeen, String> {
    let raw = target.raw;
    let (_, answer) = legacy_initialize(target).await;
    if !(answer.success() && answer.result().is_some()) {
        return Err(
            "a legacy `initialize` of the check's own was not answered with a result, so there was no stream to judge".into(),
        );
    }
    let version = answer.negotiated_version();
    let on_session = |body: Value| RawRequest {
        body: Some(body),
        session: answer.session_id.clone(),
        protocol_version: Some(version.clone()),
        ..RawRequest::default()
    };
    raw.send(&on_session(notification_body(
        "notifications/initialized",
        None,
    )))
    .await;
    let mut ping = request_body(PRIMING_PING_ID, "ping");
    ping["params"] = json!({"_meta": {"progressToken": "switchboard-check-priming"}});
    let ping = on_session(ping);
    let seen = match raw.open(&ping, PRIMING_WAIT).await {
        Err(failed) => Err(format!("`ping` got {}", failed.describe())),
        Ok((head, response)) if media_type(&head.content_type) == EVENT_STREAM => {
            let first_event = first_event(response, PRIMING_WAIT).await;
            evidence
                .exchanges
                .push(exchange("`ping` asking for progress", &ping, &head));
            Ok(PrimingSeen {
                answer: head,
                first_event,
            })
        }
        Ok((head, _)) => Err(format!(
            "`ping` was answered with {} and `Content-Type: {}`, not an event stream, so there was no stream to judge",
            head.status
                .map_or("no status".to_owned(), |s| format!("HTTP {s}")),
            head.content_type
        )),
    };
    if let Some(session) = &answer.session_id {
        end_session(raw, session, Some(version.clone()), evidence).await;
    }
    seen
}

/// The judgement of `sse-priming` on what it saw.
fn judge_priming(seen: &PrimingSeen, mut evidence: Evidence) -> CheckResult {
    let event = match &seen.first_event {
        Ok(event) => event,
        Err(why) => {
            return CheckResult::finding(
                ids::SSE_PRIMING,
                format!(
                    "the event stream answering `ping` (HTTP {}) brought no priming event: {why}",
                    seen.answer.status.unwrap_or_default()
                ),
                evidence,
            );
        }
    };
    evidence.notes.push(format!(
        "first event: id {}, data {}",
        event
            .id
            .as_deref()
            .map_or("absent".to_owned(), |id| format!("`{id}`")),
        if event.data.is_empty() {
            "empty".to_owned()
        } else {
            format!(
                "`{}`",
                switchboard_wire::excerpt(event.data.as_bytes(), 200)
            )
        }
    ));
    match (
        event.id.as_deref().filter(|id| !id.is_empty()),
        event.data.is_empty(),
    ) {
        (Some(id), true) => CheckResult::pass(
            ids::SSE_PRIMING,
            format!(
                "the event stream answering `ping` opened with a priming event (id `{id}`, empty data)"
            ),
            evidence,
        ),
        (None, _) => CheckResult::finding(
            ids::SSE_PRIMING,
            "the event stream answering `ping` did not open with a priming event: its first event has no id, so a client that loses the stream cannot resume it",
            evidence,
        ),
        (Some(_), false) => CheckResult::finding(
            ids::SSE_PRIMING,
            "the event stream answering `ping` did not open with a priming event: its first event carries data; a priming event has an id and empty data",
            evidence,
        ),
    }
}

/// `sse-priming`: probe, then judge.
pub(crate) fn sse_priming<'a>(target: &'a HttpTarget<'a>) -> UnitFuture<'a> {
    Box::pin(async move {
        let mut evidence = Evidence::default();
        match priming_probe(target, &mut evidence).await {
            Ok(seen) => judge_priming(&seen, evidence),
            Err(why) => CheckResult::skip(ids::SSE_PRIMING, why),
        }
    })
}
