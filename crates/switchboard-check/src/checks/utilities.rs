//! `utilities`: the base protocol's small requests. In the legacy era `ping` is answered
//! promptly with an empty result, and a server that declares `logging` takes
//! `logging/setLevel`. The 2026-07-28 protocol removed both (`removed-methods` checks that
//! they are gone over HTTP); there a log message goes only to a request that asked for one
//! with `_meta` `logLevel`, which the checker never does, so no `notifications/message` may
//! reach it at all.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::{Era, methods};
use switchboard_session::{Negotiated, Session};

use super::{Outcome, request};
use crate::catalog::ids;
use crate::recorder::Recorder;
use crate::report::{CheckResult, Evidence, Finding};

/// The level `logging/setLevel` asks for.
const LEVEL: &str = "info";

pub(crate) async fn run(
    session: &Session,
    negotiated: &Negotiated,
    recorders: &[Arc<Recorder>],
    timeout: Duration,
) -> CheckResult {
    match negotiated.era {
        Era::Legacy => legacy(session, negotiated, timeout).await,
        Era::Modern => unasked_log_messages(recorders),
    }
}

async fn legacy(session: &Session, negotiated: &Negotiated, timeout: Duration) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let ping = request(session, methods::PING, json!({}), timeout).await;
    match &ping.outcome {
        Outcome::Result(Value::Object(fields)) if fields.is_empty() => {}
        Outcome::Result(Value::Object(fields)) => findings.push(Finding::warning(format!(
            "`ping` was answered with a result holding {}; the answer is an empty result",
            fields
                .keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => findings.push(Finding::error(format!(
            "`ping` got {}: a receiver MUST answer it promptly with an empty result",
            ping.describe_failure()
        ))),
    }
    evidence.exchanges.push(ping.exchange("`ping`"));
    let logs = negotiated.capabilities.logging.is_some();
    if logs {
        let set = request(
            session,
            methods::LOGGING_SET_LEVEL,
            json!({"level": LEVEL}),
            timeout,
        )
        .await;
        if !matches!(set.outcome, Outcome::Result(_)) {
            findings.push(Finding::error(format!(
                "`logging/setLevel` to `{LEVEL}` got {} although the server declares `logging`",
                set.describe_failure()
            )));
        }
        evidence
            .exchanges
            .push(set.exchange(format!("`logging/setLevel` to `{LEVEL}`")));
    }
    CheckResult::from_findings(
        ids::UTILITIES,
        &findings,
        if logs {
            "`ping` and `logging/setLevel` are answered with an empty result"
        } else {
            "`ping` is answered with an empty result (no `logging` declared)"
        },
        evidence,
    )
}

/// 2026-07-28: the checker asks for no log messages, so none may come.
fn unasked_log_messages(recorders: &[Arc<Recorder>]) -> CheckResult {
    let mut evidence = Evidence::default();
    let messages: Vec<_> = recorders
        .iter()
        .flat_map(|r| r.notifications_where(|n| n.method == methods::LOG_MESSAGE))
        .collect();
    let mut findings = Vec::new();
    if let Some(first) = messages.first() {
        findings.push(Finding::error(format!(
            "{} `notifications/message` came although no request asked for log messages (`_meta` `logLevel`): a 2026-07-28 server logs only to a request that opted in",
            messages.len()
        )));
        evidence.notes.push(format!("← {}", first.excerpt));
    }
    CheckResult::from_findings(
        ids::UTILITIES,
        &findings,
        "no log message came to requests that did not ask for one (2026-07-28 has no `ping` or `logging/setLevel`)",
        evidence,
    )
}
