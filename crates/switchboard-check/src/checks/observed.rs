//! Checks judged from what the recorders saw over the whole run: `capabilities` (with its
//! active part, the declared list requests), `response-ids`,
//! `notifications-not-responses` and `stdout-purity`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_protocol::{Era, methods};
use switchboard_session::Negotiated;
use switchboard_session::Session;
use switchboard_wire::RequestId;

use super::{Captured, Facts, Outcome, request};
use crate::catalog::{Transport, ids};
use crate::recorder::{Recorder, unanswered};
use crate::report::{CheckResult, Evidence, Finding};

/// The active half of `capabilities`: every declared list request answers.
pub(crate) async fn declared_lists(
    session: &Session,
    negotiated: &Negotiated,
    timeout: Duration,
) -> Vec<(String, Captured)> {
    let caps = &negotiated.capabilities;
    let mut out = Vec::new();
    if caps.prompts.is_some() {
        out.push((
            "prompts".to_owned(),
            request(session, "prompts/list", json!({}), timeout).await,
        ));
    }
    if caps.resources.is_some() {
        out.push((
            "resources".to_owned(),
            request(session, "resources/list", json!({}), timeout).await,
        ));
    }
    out
}

/// The entries of a `prompts/list` or `resources/list` page that lack the string fields
/// every entry has (`name`; and `uri` for a resource), described; `None` when all have them.
fn bad_entries(capability: &str, result: &Value) -> Option<String> {
    let required: &[&str] = match capability {
        "prompts" => &["name"],
        "resources" => &["uri", "name"],
        _ => return None,
    };
    let entries = result.get(capability)?.as_array()?;
    let bad: Vec<String> = entries
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| {
            let missing: Vec<&str> = required
                .iter()
                .copied()
                .filter(|field| !entry.get(*field).is_some_and(Value::is_string))
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "entry {} has no string {}",
                    index + 1,
                    missing
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            })
        })
        .collect();
    if bad.is_empty() {
        return None;
    }
    let shown: Vec<&str> = bad.iter().take(3).map(String::as_str).collect();
    let more = match bad.len() - shown.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!("{}{more}", shown.join("; ")))
}

/// `capabilities`: declared ones answer, undeclared ones are not used.
pub(crate) fn capabilities(
    negotiated: &Negotiated,
    lists: &[(String, Captured)],
    recorders: &[Arc<Recorder>],
) -> CheckResult {
    let caps = &negotiated.capabilities;
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    for (capability, captured) in lists {
        let ok = match &captured.outcome {
            Outcome::Result(result) => result
                .get(capability.as_str())
                .is_some_and(|v| v.is_array()),
            _ => false,
        };
        if let Outcome::Result(result) = &captured.outcome
            && let Some(bad) = bad_entries(capability, result)
        {
            findings.push(Finding::error(format!("`{}`: {bad}", captured.method)));
            evidence
                .exchanges
                .push(captured.exchange(format!("{} (declared capability)", captured.method)));
        }
        if !ok {
            findings.push(Finding::error(format!(
                "the server declares `{capability}` but `{}` got {}",
                captured.method,
                match &captured.outcome {
                    Outcome::Result(_) => format!("a result without a `{capability}` array"),
                    _ => captured.describe_failure(),
                }
            )));
            evidence
                .exchanges
                .push(captured.exchange(format!("{} (declared capability)", captured.method)));
        }
    }
    let needs = |method: &str| -> Option<(&'static str, bool)> {
        match method {
            "notifications/message" => Some(("logging", caps.logging.is_some())),
            "notifications/tools/list_changed" => Some((
                "tools.listChanged",
                caps.tools.as_ref().is_some_and(|t| t.list_changed),
            )),
            "notifications/prompts/list_changed" => Some((
                "prompts.listChanged",
                caps.prompts.as_ref().is_some_and(|p| p.list_changed),
            )),
            "notifications/resources/list_changed" => Some((
                "resources.listChanged",
                caps.resources.as_ref().is_some_and(|r| r.list_changed),
            )),
            "notifications/resources/updated" => Some((
                "resources.subscribe",
                caps.resources.as_ref().is_some_and(|r| r.subscribe),
            )),
            _ => None,
        }
    };
    let mut reported: HashSet<String> = HashSet::new();
    for recorder in recorders {
        for notification in recorder.notifications() {
            if let Some((capability, declared)) = needs(&notification.method)
                && !declared
                && reported.insert(notification.method.clone())
            {
                findings.push(Finding::error(format!(
                    "the server sent `{}` without declaring `{capability}`",
                    notification.method
                )));
                evidence.notes.push(format!("← {}", notification.excerpt));
            }
        }
        for server_request in recorder.server_requests() {
            let allowed = server_request.method == "ping" && negotiated.era == Era::Legacy;
            if !allowed && reported.insert(server_request.method.clone()) {
                findings.push(Finding::error(match negotiated.era {
                    Era::Modern => format!(
                        "the server sent a `{}` request; servers send no requests in the 2026-07-28 protocol",
                        server_request.method
                    ),
                    Era::Legacy => format!(
                        "the server sent a `{}` request, which needs a client capability the client did not declare",
                        server_request.method
                    ),
                }));
                evidence.notes.push(format!("← {}", server_request.excerpt));
            }
        }
    }
    let declared: Vec<&str> = [
        ("tools", caps.tools.is_some()),
        ("prompts", caps.prompts.is_some()),
        ("resources", caps.resources.is_some()),
        ("logging", caps.logging.is_some()),
        ("completions", caps.completions.is_some()),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(name, _)| name)
    .collect();
    let summary = format!(
        "declared: {}; each declared list answers, nothing undeclared was used",
        if declared.is_empty() {
            "nothing".to_owned()
        } else {
            declared.join(", ")
        }
    );
    CheckResult::from_findings(ids::CAPABILITIES, &findings, summary, evidence)
}

/// `response-ids`: every response carries the id of a request we sent, once.
pub(crate) fn response_ids(recorders: &[Arc<Recorder>]) -> CheckResult {
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    let mut total = 0;
    for recorder in recorders {
        let sent: HashSet<RequestId> = recorder.sent().into_iter().map(|s| s.id).collect();
        let mut counts: HashMap<RequestId, usize> = HashMap::new();
        for response in recorder.responses() {
            total += 1;
            match &response.id {
                None => {
                    findings.push(Finding::error(
                        "a response carries `id: null` although every request was well-formed",
                    ));
                    evidence.notes.push(format!("← {}", response.excerpt));
                }
                Some(id) if !sent.contains(id) => {
                    findings.push(Finding::error(format!(
                        "a response carries id {id}, which the client never used"
                    )));
                    evidence.notes.push(format!("← {}", response.excerpt));
                }
                Some(id) => {
                    let count = counts.entry(id.clone()).or_default();
                    *count += 1;
                    if *count == 2 {
                        findings.push(Finding::error(format!(
                            "request {id} was answered more than once"
                        )));
                        evidence.notes.push(format!("← {}", response.excerpt));
                    }
                }
            }
        }
    }
    findings.truncate(10);
    CheckResult::from_findings(
        ids::RESPONSE_IDS,
        &findings,
        format!("{total} responses, each with the id of its request"),
        evidence,
    )
}

/// `notifications-not-responses`: no request went unanswered while the server sent
/// notifications instead.
pub(crate) fn notifications_not_responses(
    recorders: &[Arc<Recorder>],
    facts: &Facts,
    timeout: Duration,
) -> CheckResult {
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    let mut unanswered_count = 0;
    for recorder in recorders {
        let notifications = recorder.notifications();
        for request in unanswered(recorder) {
            if facts.cancelled.contains(&request.id) {
                continue;
            }
            unanswered_count += 1;
            let window_end = request.at + timeout;
            let instead: Vec<_> = notifications
                .iter()
                .filter(|n| {
                    n.method != "notifications/progress" && n.at >= request.at && n.at <= window_end
                })
                .collect();
            if let Some(first) = instead.first() {
                findings.push(Finding::error(format!(
                    "`{}` (id {}) got no response; the server sent {} notification(s) instead, starting with `{}`",
                    request.method,
                    request.id,
                    instead.len(),
                    first.method
                )));
                evidence.notes.push(format!("← {}", first.excerpt));
            }
        }
    }
    findings.truncate(10);
    let summary = if unanswered_count == 0 {
        "every request got a response".to_owned()
    } else {
        format!(
            "{unanswered_count} request(s) went unanswered, but no notification stood in for a response"
        )
    };
    CheckResult::from_findings(
        ids::NOTIFICATIONS_NOT_RESPONSES,
        &findings,
        summary,
        evidence,
    )
}

/// `stdout-purity`: every line on stdout was a JSON-RPC message, in every process.
pub(crate) fn stdout_purity(recorders: &[Arc<Recorder>], oversized: u64) -> CheckResult {
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    let mut total = 0;
    for recorder in recorders {
        let (malformed, count) = recorder.malformed();
        total += count;
        for line in malformed
            .iter()
            .take(5usize.saturating_sub(evidence.notes.len()))
        {
            evidence
                .notes
                .push(format!("{}: {}", line.what, line.excerpt));
        }
    }
    total += oversized;
    if total > 0 {
        findings.push(Finding::error(format!(
            "{total} line(s) on stdout were not JSON-RPC messages"
        )));
    }
    CheckResult::from_findings(
        ids::STDOUT_PURITY,
        &findings,
        format!(
            "{} process(es) watched; every stdout line was a JSON-RPC message",
            recorders.len()
        ),
        evidence,
    )
}

/// Most findings of one kind `progress` reports; more are counted.
const MAX_PROGRESS_FINDINGS: usize = 3;

/// `progress`: every `notifications/progress` names the token of a request of the
/// checker's, reports a `progress` larger than the last one for that token, and (over
/// stdio, where one pipe keeps the order) none comes after that request was answered.
pub(crate) fn progress(recorders: &[Arc<Recorder>], transport: Transport) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut problems: Vec<(&'static str, String)> = Vec::new();
    let mut seen = 0usize;
    for recorder in recorders {
        let requests: HashMap<RequestId, RequestId> = recorder
            .sent()
            .into_iter()
            .filter_map(|s| Some((s.progress_token?, s.id)))
            .collect();
        let answered: HashMap<RequestId, Instant> = recorder
            .responses()
            .into_iter()
            .filter_map(|r| Some((r.id?, r.at)))
            .collect();
        let mut last: HashMap<RequestId, f64> = HashMap::new();
        for notification in recorder
            .notifications()
            .into_iter()
            .filter(|n| n.method == methods::PROGRESS)
        {
            seen += 1;
            let Some(token) = &notification.progress_token else {
                problems.push((
                    "token",
                    format!(
                        "a progress notification without a valid `progressToken`: {}",
                        notification.excerpt
                    ),
                ));
                continue;
            };
            let Some(request) = requests.get(token) else {
                problems.push((
                    "token",
                    format!(
                        "progress for token {}, which no request of the checker's carried: {}",
                        token.to_json(),
                        notification.excerpt
                    ),
                ));
                continue;
            };
            if transport == Transport::Stdio
                && answered
                    .get(request)
                    .is_some_and(|done| notification.at > *done)
            {
                problems.push((
                    "after",
                    format!(
                        "progress for token {} came after its request was answered",
                        token.to_json()
                    ),
                ));
            }
            match notification.progress {
                None => problems.push((
                    "value",
                    format!(
                        "progress for token {} has no numeric `progress`",
                        token.to_json()
                    ),
                )),
                Some(value) => {
                    if let Some(previous) = last.get(token)
                        && value <= *previous
                    {
                        problems.push((
                            "value",
                            format!(
                                "progress for token {} went from {previous} to {value}: it must increase with each notification",
                                token.to_json()
                            ),
                        ));
                    }
                    last.insert(token.clone(), value);
                }
            }
        }
    }
    if seen == 0 {
        return CheckResult::skip(
            ids::PROGRESS,
            "no progress notification came (the checker asks for progress only on the long call of `cancellation`)",
        );
    }
    let mut findings = Vec::new();
    for kind in ["token", "value", "after"] {
        let of_kind: Vec<&String> = problems
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, text)| text)
            .collect();
        for text in of_kind.iter().take(MAX_PROGRESS_FINDINGS) {
            findings.push(Finding::error((*text).clone()));
        }
        if of_kind.len() > MAX_PROGRESS_FINDINGS {
            evidence.notes.push(format!(
                "{} more of the same kind",
                of_kind.len() - MAX_PROGRESS_FINDINGS
            ));
        }
    }
    CheckResult::from_findings(
        ids::PROGRESS,
        &findings,
        format!(
            "{seen} progress notification(s), each for a request of the checker's, its progress increasing"
        ),
        evidence,
    )
}
