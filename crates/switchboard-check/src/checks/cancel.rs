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

/// The cancellation check through the session.
pub(crate) async fn run(target: Target<'_>, facts: &mut Facts) -> CheckResult {
    let Target {
        session,
        recorder,
        tools,
        options,
        via,
    } = target;
    let long = match pick(tools, options) {
        Ok(long) => long,
        Err(reason) => return CheckResult::skip(ids::CANCELLATION, reason),
    };
    let grace = options.cancel_grace;
    let settle = (grace / 5).min(Duration::from_millis(200));
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let token = CancellationToken::new();
    let call_options = CallOptions {
        timeout: Some(options.request_timeout.max(options.long_call_duration * 2)),
        max_duration: None,
        cancel: Some(token.clone()),
        progress: Some(progress_tx),
        for_client: None,
        log_messages: None,
    };
    let started = Instant::now();
    let call = session.call_tool(&long.tool, Some(long.arguments.clone()), &call_options);
    tokio::pin!(call);
    let mut evidence = Evidence::default();
    let sent = json!({"method": "tools/call", "params": {"name": long.tool, "arguments": capped(&long.arguments, 2048)}});
    let wait_first = CANCEL_AFTER_AT_MOST.min(options.long_call_duration / 3);
    let mut progress_before = 0usize;
    let early = tokio::select! {
        outcome = &mut call => Some(outcome),
        progress = progress_rx.recv() => { if progress.is_some() { progress_before += 1; } None }
        () = tokio::time::sleep(wait_first) => None,
    };
    if let Some(outcome) = early {
        if let Err(SessionError::Closed { reason, .. }) = &outcome {
            evidence.exchanges.push(Exchange {
                label: "start the long call".into(),
                sent: Some(sent),
                received: Some(json!({"transport_closed": reason.to_string()})),
                elapsed: Some(started.elapsed()),
            });
            return CheckResult::finding(
                ids::CANCELLATION,
                format!(
                    "the server exited {} ms into the long call to `{}`, before it could be cancelled",
                    ms(started.elapsed()),
                    long.tool
                ),
                evidence,
            );
        }
        let detail = match outcome {
            Ok(result) if result.is_error => format!(
                "a tool error: {}",
                switchboard_wire::excerpt(result.text().as_bytes(), 200)
            ),
            Ok(_) => "a result".to_owned(),
            Err(error) => error.to_string(),
        };
        return CheckResult::skip(
            ids::CANCELLATION,
            format!(
                "the long call to `{}` ended after {} ms, before it could be cancelled, with {detail}; name a longer one with --long-call TOOL ARGS",
                long.tool,
                ms(started.elapsed())
            ),
        );
    }
    let cancelled_at = Instant::now();
    token.cancel();
    let ended = tokio::time::timeout(options.request_timeout, &mut call).await;
    while progress_rx.try_recv().is_ok() {
        progress_before += 1;
    }
    let call_outcome = match ended {
        Ok(Err(SessionError::Cancelled { .. })) => "cancelled by the client".to_owned(),
        Ok(Ok(_)) => "a result arrived before the cancellation was sent".to_owned(),
        Ok(Err(error)) => error.to_string(),
        Err(_) => "the call did not end after the cancellation (a client bug)".to_owned(),
    };
    evidence.exchanges.push(Exchange {
        label: format!(
            "start the long call, cancel it after {} ms",
            ms(cancelled_at - started)
        ),
        sent: Some(sent),
        received: Some(json!({"outcome": call_outcome})),
        elapsed: Some(cancelled_at - started),
    });
    tokio::time::sleep_until((cancelled_at + grace).into()).await;

    // Which request id (and so progress token) the call had.
    let id = recorder
        .sent()
        .into_iter()
        .filter(|s| s.at >= started && s.tool.as_deref() == Some(long.tool.as_str()))
        .map(|s| s.id)
        .next();
    let mut problems = Vec::new();
    if let Some(id) = &id {
        facts.cancelled.push(id.clone());
        let cancel_sent = recorder.cancels().iter().any(|(c, _)| c == id);
        let how = match (via, cancel_sent) {
            (Via::StreamClose, _) => "the response stream closed (the 2026-07-28 cancellation)",
            (Via::Notification, true) => "notifications/cancelled sent",
            (Via::Notification, false) => "notifications/cancelled NOT sent",
        };
        evidence.notes.push(format!(
            "request id {id}; {how}; {progress_before} progress notification(s) before the cancel"
        ));
        if via == Via::StreamClose {
            evidence.notes.push(
                "nothing more can arrive on a closed stream, so whether the server stopped the work is not observable over HTTP; its health afterwards is".into(),
            );
        }
        let late_results: Vec<_> = recorder
            .responses()
            .into_iter()
            .filter(|r| r.id.as_ref() == Some(id) && r.at > cancelled_at)
            .collect();
        if let Some(first) = late_results.first() {
            problems.push(format!(
                "a result for the cancelled request arrived {} ms after the cancel",
                ms(first.at - cancelled_at)
            ));
            evidence
                .notes
                .push(format!("late result: {}", first.excerpt));
        }
        let progress: Vec<Duration> = progress_after(recorder, id, cancelled_at)
            .into_iter()
            .map(|at| at - cancelled_at)
            .collect();
        ProgressAfterCancel {
            token: id.to_string(),
            after_cancel: progress,
            settle,
        }
        .record(&mut evidence, &mut problems);
    } else {
        evidence
            .notes
            .push("the call's request was not seen on the wire".into());
    }
    if progress_before == 0 {
        evidence.notes.push(
            "the server sent no progress before the cancel, so only the absence of a result was checked".into(),
        );
    }
    let alive = request(session, "tools/list", json!({}), options.request_timeout).await;
    if !matches!(alive.outcome, Outcome::Result(_)) {
        problems.push(format!(
            "after the cancellation the server no longer answers: {}",
            alive.describe_failure()
        ));
        evidence
            .exchanges
            .push(alive.exchange("tools/list after the grace period"));
    }
    if problems.is_empty() {
        let summary = match via {
            Via::Notification => format!(
                "`{}` cancelled after {} ms: no result and no progress within {} ms, the server still answers",
                long.tool,
                ms(cancelled_at - started),
                ms(grace)
            ),
            Via::StreamClose => format!(
                "`{}` cancelled after {} ms by closing its response stream: no result, the server still answers",
                long.tool,
                ms(cancelled_at - started)
            ),
        };
        return CheckResult::pass(ids::CANCELLATION, summary, evidence);
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
