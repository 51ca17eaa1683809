//! `cancellation`: start a long call, cancel it, and watch for a result or more progress
//! within the grace period; then make sure the server still answers.
//!
//! How the call is cancelled depends on the transport and era: over stdio the session
//! sends `notifications/cancelled`; over 2026-07-28 HTTP it closes the call's response
//! stream (that is the cancellation, and nothing more can arrive on it); over legacy HTTP
//! the check opens a session of its own and sends `notifications/cancelled` on a POST of
//! its own while it keeps reading the call's event stream, since in that era disconnecting
//! is not cancelling and only an open stream shows whether the work went on.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_session::{CallOptions, CancellationToken, Session, SessionError};
use switchboard_wire::RequestId;

use super::{Facts, Outcome, ToolSet, allowed, ms, request};
use crate::catalog::ids;
use crate::options::{Options, ToolCall};
use crate::recorder::Recorder;
use crate::report::{CheckResult, Evidence, Exchange, capped};
use crate::schema::long_arguments;

/// How long after the start the call is cancelled if no progress came before.
pub(crate) const CANCEL_AFTER_AT_MOST: Duration = Duration::from_millis(500);

/// The long call to make: the user's, else a callable tool whose schema suggests a
/// duration, with arguments asking for `options.long_call_duration`.
pub(crate) fn pick(tools: &ToolSet, options: &Options) -> Result<ToolCall, String> {
    if let Some(call) = &options.long_call {
        return match tools.get(&call.tool) {
            Some(_) => Ok(call.clone()),
            None => Err(format!(
                "the --long-call tool `{}` is not listed by the server",
                call.tool
            )),
        };
    }
    for tool in &tools.tools {
        if !allowed(tool, options) {
            continue;
        }
        let Some(compiled) = tools.compiled.get(&tool.name) else {
            continue;
        };
        if let Some(arguments) = long_arguments(tool, compiled, options.long_call_duration) {
            return Ok(ToolCall {
                tool: tool.name.clone(),
                arguments,
            });
        }
    }
    let unannotated: Vec<&str> = tools
        .tools
        .iter()
        .filter(|t| !allowed(t, options) && crate::schema::suggests_duration(t))
        .map(|t| t.name.as_str())
        .collect();
    Err(if unannotated.is_empty() {
        "no tool the checker may call has a schema that suggests a duration; name a long call with --long-call TOOL ARGS".into()
    } else {
        format!(
            "{} may take a duration but {} not annotated read-only; allow one with --long-call TOOL ARGS",
            unannotated
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if unannotated.len() == 1 { "is" } else { "are" }
        )
    })
}

fn progress_after(recorder: &Recorder, token: &RequestId, after: Instant) -> Vec<Instant> {
    recorder
        .notifications()
        .into_iter()
        .filter(|n| n.progress_token.as_ref() == Some(token) && n.at > after)
        .map(|n| n.at)
        .collect()
}

/// The evidence about a cancelled call's progress after the cancel, and its judgement: the
/// note and the finding count the same notifications, so the message agrees with its
/// evidence.
pub(crate) struct ProgressAfterCancel {
    /// The call's progress token, as shown.
    pub(crate) token: String,
    /// When each progress notification for the token arrived, after the cancel.
    pub(crate) after_cancel: Vec<Duration>,
    /// Progress this soon after the cancel was in flight already; later progress means the
    /// work went on.
    pub(crate) settle: Duration,
}

impl ProgressAfterCancel {
    /// Every progress notification after the cancel, with its arrival time.
    pub(crate) fn note(&self) -> Option<String> {
        if self.after_cancel.is_empty() {
            return None;
        }
        Some(format!(
            "{} progress notification(s) for token {} after the cancel, at {} ms",
            self.after_cancel.len(),
            self.token,
            self.after_cancel
                .iter()
                .map(|d| ms(*d).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Adds the note to the evidence and the finding, if any, to the problems.
    pub(crate) fn record(&self, evidence: &mut Evidence, problems: &mut Vec<String>) {
        evidence.notes.extend(self.note());
        problems.extend(self.problem());
    }

    /// The finding when progress came later than the settle window.
    pub(crate) fn problem(&self) -> Option<String> {
        let late: Vec<Duration> = self
            .after_cancel
            .iter()
            .copied()
            .filter(|d| *d > self.settle)
            .collect();
        let (first, last) = (late.first()?, late.last()?);
        let total = self.after_cancel.len();
        let window = ms(self.settle);
        let (first, last) = (ms(*first), ms(*last));
        Some(if late.len() == total {
            format!(
                "{total} progress notification(s) arrived {first}–{last} ms after the cancel (more than {window} ms later): the work went on"
            )
        } else {
            format!(
                "{total} progress notification(s) arrived after the cancel, {} of them {first}–{last} ms after it (more than {window} ms later): the work went on",
                late.len()
            )
        })
    }
}

/// How the session's cancellation reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// `notifications/cancelled` (stdio).
    Notification,
    /// Closing the response stream (2026-07-28 HTTP).
    StreamClose,
}

/// The long call's session and what it needs.
pub(crate) struct Target<'a> {
    pub(crate) session: &'a Session,
    pub(crate) recorder: &'a Recorder,
    pub(crate) tools: &'a ToolSet,
    pub(crate) options: &'a Options,
    pub(crate) via: Via,
}

/// The cancellation check through the session: the probe makes and cancels the call, the
/// evidence is read from the recorder and one more request, and the judgement is pure.
pub(crate) async fn run(target: Target<'_>, facts: &mut Facts) -> CheckResult {
    let long = match pick(target.tools, target.options) {
        Ok(long) => long,
        Err(reason) => return CheckResult::skip(ids::CANCELLATION, reason),
    };
    let cancelled = match start_and_cancel(&target, &long).await {
        Ok(cancelled) => cancelled,
        Err(ended) => return ended.judge(&long.tool),
    };
    let options = target.options;
    tokio::time::sleep_until((cancelled.at + options.cancel_grace).into()).await;
    let after = AfterCancel::read(target.recorder, &cancelled, options.cancel_grace);
    if let Some(id) = &after.id {
        facts.cancelled.push(id.clone());
    }
    let alive = request(
        target.session,
        "tools/list",
        json!({}),
        options.request_timeout,
    )
    .await;
    let answers = matches!(alive.outcome, Outcome::Result(_));
    judge(CancelSeen {
        cancelled: &cancelled,
        after: &after,
        alive: (!answers).then_some(&alive),
        via: target.via,
        grace: options.cancel_grace,
    })
}

/// A long call that was started and then cancelled.
struct CancelledCall {
    tool: String,
    /// The request as shown in the evidence.
    sent: serde_json::Value,
    started: Instant,
    /// When the cancellation was sent.
    at: Instant,
    /// How the call ended on the client's side, in words.
    outcome: String,
    /// Progress notifications that reached the call before the cancel.
    progress_before: usize,
}

/// A long call that ended before it could be cancelled.
enum EndedEarly {
    /// The server's connection closed.
    Exited {
        sent: serde_json::Value,
        reason: String,
        after: Duration,
    },
    /// It ended otherwise (a result, a tool error, another error), described.
    Ended { detail: String, after: Duration },
}

impl EndedEarly {
    fn judge(self, tool: &str) -> CheckResult {
        match self {
            EndedEarly::Exited {
                sent,
                reason,
                after,
            } => {
                let mut evidence = Evidence::default();
                evidence.exchanges.push(Exchange {
                    label: "start the long call".into(),
                    sent: Some(sent),
                    received: Some(json!({"transport_closed": reason})),
                    elapsed: Some(after),
                });
                CheckResult::finding(
                    ids::CANCELLATION,
                    format!(
                        "the server exited {} ms into the long call to `{tool}`, before it could be cancelled",
                        ms(after)
                    ),
                    evidence,
                )
            }
            EndedEarly::Ended { detail, after } => CheckResult::skip(
                ids::CANCELLATION,
                format!(
                    "the long call to `{tool}` ended after {} ms, before it could be cancelled, with {detail}; name a longer one with --long-call TOOL ARGS",
                    ms(after)
                ),
            ),
        }
    }
}

/// The probe: starts the long call, cancels it after its first progress or at most
/// [`CANCEL_AFTER_AT_MOST`], and waits (bounded) for the call to end on the client's side.
async fn start_and_cancel(
    target: &Target<'_>,
    long: &ToolCall,
) -> Result<CancelledCall, EndedEarly> {
    let options = target.options;
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let token = CancellationToken::new();
    let call_options = CallOptions {
        timeout: Some(options.request_timeout.max(options.long_call_duration * 2)),
        max_duration: None,
        cancel: Some(token.clone()),
        progress: Some(progress_tx),
        for_client: None,
        log_messages: None,
        trace: None,
        repeatable: switchboard_session::Repeatable::ByMethod,
    };
    let started = Instant::now();
    let call = target
        .session
        .call_tool(&long.tool, Some(&long.arguments), &call_options);
    tokio::pin!(call);
    let sent = json!({"method": "tools/call", "params": {"name": long.tool, "arguments": capped(&long.arguments, 2048)}});
    let wait_first = CANCEL_AFTER_AT_MOST.min(options.long_call_duration / 3);
    let mut progress_before = 0usize;
    let early = tokio::select! {
        outcome = &mut call => Some(outcome),
        progress = progress_rx.recv() => { if progress.is_some() { progress_before += 1; } None }
        () = tokio::time::sleep(wait_first) => None,
    };
    if let Some(outcome) = early {
        let after = started.elapsed();
        return Err(match outcome {
            Err(SessionError::Closed { reason, .. }) => EndedEarly::Exited {
                sent,
                reason: reason.to_string(),
                after,
            },
            Ok(result) if result.is_error => EndedEarly::Ended {
                detail: format!(
                    "a tool error: {}",
                    switchboard_wire::excerpt(result.text().as_bytes(), 200)
                ),
                after,
            },
            Ok(_) => EndedEarly::Ended {
                detail: "a result".to_owned(),
                after,
            },
            Err(error) => EndedEarly::Ended {
                detail: error.to_string(),
                after,
            },
        });
    }
    let at = Instant::now();
    token.cancel();
    let ended = tokio::time::timeout(options.request_timeout, &mut call).await;
    while progress_rx.try_recv().is_ok() {
        progress_before += 1;
    }
    let outcome = match ended {
        Ok(Err(SessionError::Cancelled { .. })) => "cancelled by the client".to_owned(),
        Ok(Ok(_)) => "a result arrived before the cancellation was sent".to_owned(),
        Ok(Err(error)) => error.to_string(),
        Err(_) => "the call did not end after the cancellation (a client bug)".to_owned(),
    };
    Ok(CancelledCall {
        tool: long.tool.clone(),
        sent,
        started,
        at,
        outcome,
        progress_before,
    })
}

/// What the wire showed after the cancel, read from the recorder once the grace period is
/// over.
struct AfterCancel {
    /// The call's request id (and so its progress token), if it was seen on the wire.
    id: Option<RequestId>,
    /// Whether `notifications/cancelled` went out for it.
    cancel_sent: bool,
    /// The first result for the cancelled request after the cancel: when, and an excerpt.
    late_result: Option<(Duration, String)>,
    progress: Option<ProgressAfterCancel>,
}

impl AfterCancel {
    fn read(recorder: &Recorder, call: &CancelledCall, grace: Duration) -> AfterCancel {
        let id = recorder
            .sent()
            .into_iter()
            .filter(|s| s.at >= call.started && s.tool.as_deref() == Some(call.tool.as_str()))
            .map(|s| s.id)
            .next();
        let Some(id) = id else {
            return AfterCancel {
                id: None,
                cancel_sent: false,
                late_result: None,
                progress: None,
            };
        };
        let cancel_sent = recorder.cancels().iter().any(|(c, _)| *c == id);
        let late_result = recorder
            .responses()
            .into_iter()
            .find(|r| r.id.as_ref() == Some(&id) && r.at > call.at)
            .map(|r| (r.at - call.at, r.excerpt));
        let progress = ProgressAfterCancel {
            token: id.to_string(),
            after_cancel: progress_after(recorder, &id, call.at)
                .into_iter()
                .map(|at| at - call.at)
                .collect(),
            settle: settle_window(grace),
        };
        AfterCancel {
            id: Some(id),
            cancel_sent,
            late_result,
            progress: Some(progress),
        }
    }
}

/// Everything the judgement of `cancellation` reads.
struct CancelSeen<'a> {
    cancelled: &'a CancelledCall,
    after: &'a AfterCancel,
    /// The follow-up `tools/list`, when it got no result.
    alive: Option<&'a super::Captured>,
    via: Via,
    grace: Duration,
}

/// The judgement of `cancellation`.
fn judge(seen: CancelSeen<'_>) -> CheckResult {
    let CancelSeen {
        cancelled,
        after,
        alive,
        via,
        grace,
    } = seen;
    let waited = cancelled.at - cancelled.started;
    let mut evidence = Evidence::default();
    evidence.exchanges.push(Exchange {
        label: format!("start the long call, cancel it after {} ms", ms(waited)),
        sent: Some(cancelled.sent.clone()),
        received: Some(json!({"outcome": cancelled.outcome})),
        elapsed: Some(waited),
    });
    let mut problems = Vec::new();
    if let Some(id) = &after.id {
        let how = match (via, after.cancel_sent) {
            (Via::StreamClose, _) => "the response stream closed (the 2026-07-28 cancellation)",
            (Via::Notification, true) => "notifications/cancelled sent",
            (Via::Notification, false) => "notifications/cancelled NOT sent",
        };
        evidence.notes.push(format!(
            "request id {id}; {how}; {} progress notification(s) before the cancel",
            cancelled.progress_before
        ));
        if via == Via::StreamClose {
            evidence.notes.push(
                "nothing more can arrive on a closed stream, so whether the server stopped the work is not observable over HTTP; its health afterwards is".into(),
            );
        }
        if let Some((after_cancel, excerpt)) = &after.late_result {
            problems.push(format!(
                "a result for the cancelled request arrived {} ms after the cancel",
                ms(*after_cancel)
            ));
            evidence.notes.push(format!("late result: {excerpt}"));
        }
        if let Some(progress) = &after.progress {
            progress.record(&mut evidence, &mut problems);
        }
    } else {
        evidence
            .notes
            .push("the call's request was not seen on the wire".into());
    }
    if cancelled.progress_before == 0 {
        evidence.notes.push(NO_PROGRESS_BEFORE.into());
    }
    if let Some(alive) = alive {
        problems.push(format!(
            "after the cancellation the server no longer answers: {}",
            alive.describe_failure()
        ));
        evidence
            .exchanges
            .push(alive.exchange("tools/list after the grace period"));
    }
    let summary = match via {
        Via::Notification => format!(
            "`{}` cancelled after {} ms: no result and no progress within {} ms, the server still answers",
            cancelled.tool,
            ms(waited),
            ms(grace)
        ),
        Via::StreamClose => format!(
            "`{}` cancelled after {} ms by closing its response stream: no result, the server still answers",
            cancelled.tool,
            ms(waited)
        ),
    };
    verdict(problems, summary, evidence)
}

/// The note when no progress came before the cancel.
pub(crate) const NO_PROGRESS_BEFORE: &str =
    "the server sent no progress before the cancel, so only the absence of a result was checked";

/// Progress this soon after the cancel was in flight already: a fifth of the grace period,
/// at most 200 ms.
pub(crate) fn settle_window(grace: Duration) -> Duration {
    (grace / 5).min(Duration::from_millis(200))
}

/// `cancellation`'s result: a pass with `pass_summary` when there are no problems, else a
/// finding naming them all.
pub(crate) fn verdict(
    problems: Vec<String>,
    pass_summary: String,
    mut evidence: Evidence,
) -> CheckResult {
    if problems.is_empty() {
        return CheckResult::pass(ids::CANCELLATION, pass_summary, evidence);
    }
    let summary = problems.join("; ");
    if problems.len() > 1 {
        evidence.notes.extend(problems);
    }
    CheckResult::finding(ids::CANCELLATION, summary, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finding counts the notifications the evidence lists, and says how many of them
    /// were late.
    #[test]
    fn progress_after_cancel_message_agrees_with_its_evidence() {
        let judged = ProgressAfterCancel {
            token: "11".into(),
            after_cancel: [116, 216, 316, 922].map(Duration::from_millis).to_vec(),
            settle: Duration::from_millis(200),
        };
        expect_test::expect![[r#"
            (
                Some(
                    "4 progress notification(s) for token 11 after the cancel, at 116, 216, 316, 922 ms",
                ),
                Some(
                    "4 progress notification(s) arrived after the cancel, 3 of them 216–922 ms after it (more than 200 ms later): the work went on",
                ),
            )
        "#]]
        .assert_debug_eq(&(judged.note(), judged.problem()));
        let all_late = ProgressAfterCancel {
            after_cancel: [300, 400].map(Duration::from_millis).to_vec(),
            ..judged
        };
        expect_test::expect![[r#"
            Some(
                "2 progress notification(s) arrived 300–400 ms after the cancel (more than 200 ms later): the work went on",
            )
        "#]]
        .assert_debug_eq(&all_late.problem());
    }
}
