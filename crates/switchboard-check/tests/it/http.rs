//! The suite over Streamable HTTP against the fixture's HTTP front end: the well-behaved
//! server passes every applicable check in each era, each broken variant fails exactly
//! the check it is built to fail, and a server that cannot be reached yields a complete
//! report quickly without leaking configured secrets.

use std::collections::BTreeSet;
use std::time::Duration;

use switchboard_check::catalog::{CHECKS, Eras};
use switchboard_check::{Options, Report, ServerSpec, Status};
use switchboard_protocol::Era;

use crate::support::*;

/// Every check has exactly one result, in catalog order.
fn assert_complete(report: &Report) {
    let ids: Vec<&str> = report.results.iter().map(|r| r.id).collect();
    let all: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
    assert_eq!(
        ids, all,
        "every check has exactly one result, in catalog order"
    );
}

/// Runs the suite on the HTTP fixture with these arguments; asserts that exactly `fails`
/// fail or warn and exactly `skips` are skipped.
pub(crate) async fn assert_http(args: &[&str], fails: &[&str], skips: &[&str]) -> Report {
    let (_server, spec) = http_fixture("http-fixture", args);
    let report = check(&spec, &quick()).await;
    assert_complete(&report);
    assert_eq!(report.transport, "http");
    let failing: BTreeSet<&str> = not_passing(&report).into_iter().collect();
    let expected: BTreeSet<&str> = fails.iter().copied().collect();
    assert_eq!(failing, expected, "{args:?}:\n{}", report.render_text());
    let skipped: BTreeSet<&str> = report.ids_with(Status::Skip).into_iter().collect();
    let expected: BTreeSet<&str> = skips.iter().copied().collect();
    assert_eq!(skipped, expected, "{args:?}:\n{}", report.render_text());
    report
}

/// Each `--http-fault` and exactly the checks it fails (or warns on).
pub(crate) const BROKEN_HTTP: &[(&str, &[&str])] = &[
    ("no-origin-check", &["http-origin"]),
    ("rejects-every-origin", &["http-origin"]),
    ("ignores-session", &["http-session"]),
    ("delete-ignored", &["shutdown"]),
    ("delete-refused", &["shutdown"]),
    ("text-plain-json", &["http-responses"]),
    ("notification-200", &["http-responses"]),
    ("session-id-space", &["http-responses"]),
    ("no-priming", &["sse-priming"]),
];

fn broken(fault: &str) -> &'static [&'static str] {
    BROKEN_HTTP
        .iter()
        .find(|(f, _)| *f == fault)
        .map(|(_, ids)| *ids)
        .unwrap_or_default()
}

/// Checks that never run over HTTP.
pub(crate) const STDIO_ONLY: &[&str] = &["stdout-purity"];

/// Checks skipped for a legacy server over HTTP: the stdio ones, the 2026-07-28 ones, and
/// `progress` (the legacy long call runs on raw requests of `cancellation`'s own, so the
/// session sees no progress).
fn legacy_skips() -> Vec<&'static str> {
    let mut skips = STDIO_ONLY.to_vec();
    skips.extend(switchboard_check::catalog::only_in(Eras::Modern));
    skips.push("progress");
    skips
}

/// Checks skipped for a 2026-07-28-only server over HTTP: the stdio ones and the legacy
/// ones (it has no sessions, and refuses a legacy `initialize`).
fn modern_skips() -> Vec<&'static str> {
    let mut skips = STDIO_ONLY.to_vec();
    skips.extend(["http-session", "sse-priming"]);
    skips
}

#[tokio::test]
async fn good_legacy_http_fixture_passes_every_applicable_check() {
    let report = assert_http(&[], &[], &legacy_skips()).await;
    assert_eq!(report.facts.era, Some(Era::Legacy));
    let session = report.result("http-session").expect("http-session");
    assert_eq!(
        session.summary,
        "the issued session id is accepted; a made-up one gets 404, none at all 400"
    );
    let statuses: Vec<u64> = session
        .evidence
        .exchanges
        .iter()
        .filter_map(|e| e.received.as_ref()?.get("status")?.as_u64())
        .collect();
    assert_eq!(
        statuses,
        [200, 200, 404, 400],
        "initialize, ping, made-up, missing"
    );
    let shutdown = report.result("shutdown").expect("shutdown");
    assert_eq!(
        shutdown.summary,
        "DELETE ended the session (HTTP 200); afterwards its id gets 404"
    );
    let responses = report.result("http-responses").expect("http-responses");
    let answers: Vec<(u64, &str)> = responses
        .evidence
        .exchanges
        .iter()
        .filter_map(|e| {
            let received = e.received.as_ref()?;
            Some((
                received.get("status")?.as_u64()?,
                received
                    .get("content_type")
                    .and_then(|c| c.as_str())
                    .unwrap_or(""),
            ))
        })
        .collect();
    assert_eq!(
        answers,
        [
            (200, "application/json"),
            (202, ""),
            (200, "application/json")
        ],
        "initialize, notifications/initialized, ping"
    );
    let cancellation = report.result("cancellation").expect("cancellation");
    assert!(
        cancellation.evidence.exchanges.iter().any(|e| e
            .label
            .contains("`notifications/cancelled` on a POST of its own")),
        "{:?}",
        cancellation.evidence
    );
    let reconnect = report.result("reconnect").expect("reconnect");
    assert!(
        reconnect.summary.starts_with(
            "outstanding `tools/call` rejected when the connection was dropped; a fresh connection initialized"
        ),
        "{}",
        reconnect.summary
    );
}

#[tokio::test]
async fn good_modern_http_fixture_passes_and_has_no_sessions_to_check() {
    let report = assert_http(&["--era", "modern"], &[], &modern_skips()).await;
    let priming = report.result("sse-priming").expect("sse-priming");
    assert_eq!(
        priming.summary,
        "a legacy `initialize` of the check's own was not answered with a result, so there was no stream to judge"
    );
    assert_eq!(report.facts.era, Some(Era::Modern));
    let session = report.result("http-session").expect("http-session");
    assert!(
        session
            .summary
            .starts_with("the server speaks the 2026-07-28 protocol, which has no sessions"),
        "{}",
        session.summary
    );
    let cancellation = report.result("cancellation").expect("cancellation");
    assert!(
        cancellation
            .summary
            .contains("by closing its response stream"),
        "{}",
        cancellation.summary
    );
    let shutdown = report.result("shutdown").expect("shutdown");
    assert!(
        shutdown.summary.starts_with("no session to end (")
            && shutdown.summary.ends_with(
                "the client's connection closed cleanly and the server then answered a fresh `server/discover`"
            ),
        "{}",
        shutdown.summary
    );
}

#[tokio::test]
async fn dual_era_http_fixture_passes_with_its_legacy_sessions_checked() {
    let report = assert_http(&["--era", "both"], &[], STDIO_ONLY).await;
    assert_eq!(report.facts.era, Some(Era::Modern));
}

#[tokio::test]
async fn http_fixture_that_refuses_its_own_origin_fails_http_origin() {
    let report = assert_http(
        &["--http-fault", "rejects-every-origin"],
        broken("rejects-every-origin"),
        &legacy_skips(),
    )
    .await;
    let origin = report.result("http-origin").expect("http-origin");
    assert!(
        origin
            .summary
            .starts_with("a POST `initialize` with the server's own `Origin: http://127.0.0.1:"),
        "{}",
        origin.summary
    );
}

#[tokio::test]
async fn http_fixture_without_origin_validation_fails_http_origin_with_evidence() {
    let report = assert_http(
        &["--http-fault", "no-origin-check"],
        broken("no-origin-check"),
        &legacy_skips(),
    )
    .await;
    let origin = report.result("http-origin").expect("http-origin");
    assert_eq!(origin.status, Status::Fail);
    assert!(
        origin.summary.starts_with(
            "the server accepted a request from a foreign origin: POST `initialize` with `Origin: http://evil.example` got HTTP 200 with a result"
        ),
        "{}",
        origin.summary
    );
    let sent = origin.evidence.exchanges[0].sent.as_ref().expect("sent");
    assert_eq!(sent["headers"]["Origin"], "http://evil.example");
    assert!(
        origin
            .evidence
            .notes
            .iter()
            .any(|n| n.starts_with("the checker ended the session it opened")),
        "{:?}",
        origin.evidence.notes
    );
}

#[tokio::test]
async fn http_fixture_ignoring_session_ids_fails_http_session() {
    let report = assert_http(
        &["--http-fault", "ignores-session"],
        broken("ignores-session"),
        &legacy_skips(),
    )
    .await;
    let session = report.result("http-session").expect("http-session");
    assert_eq!(session.status, Status::Fail);
    assert!(
        session.summary.starts_with(
            "a request with a session id the server never issued was served (HTTP 200 with a result): the server does not check session ids"
        ),
        "{}",
        session.summary
    );
}

#[tokio::test]
async fn http_fixture_whose_delete_keeps_the_session_fails_shutdown() {
    let report = assert_http(
        &["--http-fault", "delete-ignored"],
        broken("delete-ignored"),
        &legacy_skips(),
    )
    .await;
    let shutdown = report.result("shutdown").expect("shutdown");
    assert_eq!(shutdown.status, Status::Fail);
    assert_eq!(
        shutdown.summary,
        "DELETE answered 200, but the session still answers requests (HTTP 200 with a result)"
    );
}

#[tokio::test]
async fn http_fixture_refusing_delete_warns_on_shutdown() {
    let report = assert_http(
        &["--http-fault", "delete-refused"],
        broken("delete-refused"),
        &legacy_skips(),
    )
    .await;
    let shutdown = report.result("shutdown").expect("shutdown");
    assert_eq!(shutdown.status, Status::Warn);
    assert!(
        shutdown
            .summary
            .starts_with("DELETE with the session id was refused with 405"),
        "{}",
        shutdown.summary
    );
}

#[tokio::test]
async fn http_fixture_labelling_json_text_plain_fails_http_responses() {
    let report = assert_http(
        &["--http-fault", "text-plain-json"],
        broken("text-plain-json"),
        &legacy_skips(),
    )
    .await;
    let responses = report.result("http-responses").expect("http-responses");
    assert_eq!(responses.status, Status::Fail);
    assert_eq!(
        responses.summary,
        "`initialize` was answered with `Content-Type: text/plain` (its body is JSON); a request's answer is `application/json` or `text/event-stream`, the only types the request's `Accept` allows (and 4 more)"
    );
    assert!(
        responses
            .evidence
            .notes
            .iter()
            .any(|n| n.starts_with("[MUST] `ping` was answered with `Content-Type: text/plain`")),
        "{:?}",
        responses.evidence.notes
    );
}

#[tokio::test]
async fn modern_http_fixture_labelling_json_text_plain_fails_http_responses() {
    let report = assert_http(
        &["--era", "modern", "--http-fault", "text-plain-json"],
        broken("text-plain-json"),
        &modern_skips(),
    )
    .await;
    let responses = report.result("http-responses").expect("http-responses");
    assert!(
        responses
            .summary
            .starts_with("`server/discover` was answered with `Content-Type: text/plain`"),
        "{}",
        responses.summary
    );
}

#[tokio::test]
async fn http_fixture_answering_notifications_200_fails_http_responses() {
    let report = assert_http(
        &["--http-fault", "notification-200"],
        broken("notification-200"),
        &legacy_skips(),
    )
    .await;
    let responses = report.result("http-responses").expect("http-responses");
    assert_eq!(
        responses.summary,
        "`notifications/initialized` got HTTP 200; an accepted notification gets 202 with no body"
    );
}

/// The good fixture primes its legacy event streams; with `no-priming` the stream's first
/// event is the response itself: a warning (a SHOULD), not a failure.
#[tokio::test]
async fn http_fixture_without_priming_events_warns_on_sse_priming() {
    let (_server, spec) = http_fixture("primed", &[]);
    let primed = check(&spec, &quick()).await;
    let result = primed.result("sse-priming").expect("sse-priming");
    assert_eq!(
        (result.status, result.summary.as_str()),
        (
            Status::Pass,
            "the event stream answering `ping` opened with a priming event (id `2-0`, empty data)"
        )
    );
    let report = assert_http(
        &["--http-fault", "no-priming"],
        broken("no-priming"),
        &legacy_skips(),
    )
    .await;
    let result = report.result("sse-priming").expect("sse-priming");
    assert_eq!(
        (result.status, result.summary.as_str()),
        (
            Status::Warn,
            "the event stream answering `ping` did not open with a priming event: its first event has no id, so a client that loses the stream cannot resume it"
        )
    );
    assert!(result.fix.is_some() && !result.evidence.exchanges.is_empty());
}

#[tokio::test]
async fn http_fixture_with_spaces_in_session_ids_fails_http_responses() {
    let report = assert_http(
        &["--http-fault", "session-id-space"],
        broken("session-id-space"),
        &legacy_skips(),
    )
    .await;
    let responses = report.result("http-responses").expect("http-responses");
    // "fixture session <hex> <n>": the id itself is never shown.
    assert!(
        responses.summary.starts_with(
            "the `Mcp-Session-Id` issued at initialization holds characters outside visible ASCII (0x21–0x7E): U+0020 at position 8, U+0020 at position 16, U+0020 at position"
        ),
        "{}",
        responses.summary
    );
    assert!(!report.render_text().contains("fixture session"));
}

#[tokio::test]
async fn a_legacy_http_server_that_ignores_cancels_fails_cancellation() {
    let report = assert_http(
        &["--mode", "ignores-cancel"],
        &["cancellation"],
        &legacy_skips(),
    )
    .await;
    let cancellation = report.result("cancellation").expect("cancellation");
    assert!(
        cancellation.summary.contains("the work went on"),
        "{}",
        cancellation.summary
    );
}

#[tokio::test]
async fn an_unreachable_http_server_gets_a_complete_report_quickly_without_secrets() {
    let spec = ServerSpec::http(
        "remote",
        "http://127.0.0.1:9/mcp",
        vec![("Authorization".into(), "Bearer secret-value-123".into())],
    );
    assert!(!format!("{spec:?}").contains("secret-value-123"));
    let report = check(&spec, &Options::default()).await;
    assert_complete(&report);
    assert_eq!(report.transport, "http");
    assert_eq!(report.ids_with(Status::Fail), ["initialize"]);
    let initialize = report.result("initialize").expect("initialize");
    assert!(
        initialize.summary.contains("127.0.0.1:9"),
        "{}",
        initialize.summary
    );
    assert!(
        report.duration < Duration::from_secs(5),
        "{:?}",
        report.duration
    );
    let json = report.to_json().to_string();
    assert!(!json.contains("secret-value-123"));
    assert!(!report.render_text().contains("secret-value-123"));
}
