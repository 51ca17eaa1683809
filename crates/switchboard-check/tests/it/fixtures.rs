//! The suite against the fixture servers: the well-behaved ones pass every applicable
//! check, each broken one fails exactly the checks it is built to fail (and still yields a
//! complete report within the deadlines), and every check is paired with a fixture that
//! passes it and one that fails it.

use std::collections::BTreeSet;

use switchboard_check::catalog::{Applies, CHECKS, Eras, ids};
use switchboard_check::{Report, Status};
use switchboard_protocol::Era;

use crate::support::*;

/// Every check applicable to stdio has a result, and no check result is missing.
fn assert_complete(report: &Report) {
    let ids: Vec<&str> = report.results.iter().map(|r| r.id).collect();
    let all: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
    assert_eq!(
        ids, all,
        "every check has exactly one result, in catalog order"
    );
}

async fn assert_all_pass(name: &str, args: &[&str], also_skipped: &[&str]) -> Report {
    let report = check(&fixture(name, args), &quick()).await;
    assert_complete(&report);
    assert!(
        not_passing(&report).is_empty(),
        "fixture {args:?} should pass every applicable check:\n{}",
        report.render_text()
    );
    let skipped: Vec<&str> = report.ids_with(Status::Skip);
    // The 2026-07-28 checks are skipped for a server that speaks only the legacy era.
    let legacy = !args.windows(2).any(|w| w[0] == "--era" && w[1] != "legacy");
    let expected: Vec<&str> = CHECKS
        .iter()
        .filter(|c| {
            c.applies == Applies::Http
                || also_skipped.contains(&c.id)
                || (legacy && c.eras == Eras::Modern)
        })
        .map(|c| c.id)
        .collect();
    assert_eq!(
        skipped,
        expected,
        "skipped checks:\n{}",
        report.render_text()
    );
    report
}

#[tokio::test]
async fn good_legacy_fixture_passes_every_applicable_check() {
    assert_all_pass("good", &[], &[]).await;
}

#[tokio::test]
async fn good_modern_and_dual_era_fixtures_pass_every_applicable_check() {
    let modern = assert_all_pass("good-modern", &["--era", "modern"], &[]).await;
    assert_eq!(modern.facts.era, Some(Era::Modern));
    assert_all_pass("good-both", &["--era", "both"], &[]).await;
}

#[tokio::test]
async fn paginated_fixture_passes_every_applicable_check() {
    // Its echo tools have no duration to cancel.
    let report = assert_all_pass(
        "many-tools",
        &[
            "--mode",
            "many-tools",
            "--tools",
            "120",
            "--page-size",
            "25",
        ],
        &["progress", "cancellation"],
    )
    .await;
    let pagination = report.result("pagination").expect("pagination result");
    assert!(
        pagination.summary.starts_with("5 pages"),
        "{}",
        pagination.summary
    );
}

/// Each broken mode and exactly the checks it fails (or warns on).
const BROKEN: &[(&str, &[&str])] = &[
    ("no-init-reply", &["initialize"]),
    ("exit-immediately", &["initialize"]),
    ("wrong-version", &["protocol-version"]),
    ("server-requests", &["capabilities"]),
    ("garbage-stdout", &["stdout-purity"]),
    ("no-jsonrpc-field", &["initialize", "stdout-purity"]),
    ("bad-tool-entry", &["tools-list", "wire-schema"]),
    ("pagination-loop", &["pagination"]),
    ("bad-tool-names", &["tool-names"]),
    ("bad-schemas", &["input-schemas", "wire-schema"]),
    ("leaky-description", &["no-credentials"]),
    ("bad-call-result", &["tools-call", "wire-schema"]),
    ("huge-result", &["results-bounded"]),
    ("accepts-invalid", &["invalid-input"]),
    ("vague-errors", &["errors-actionable"]),
    ("unknown-tool-success", &["unknown-tool"]),
    ("wrong-id", &["tools-call", "invalid-input", "response-ids"]),
    (
        "notification-instead-of-response",
        &[
            "capabilities",
            "tools-call",
            "invalid-input",
            "notifications-not-responses",
        ],
    ),
    ("ignores-cancel", &["cancellation"]),
    (
        "crash-mid-call",
        &["tools-call", "invalid-input", "cancellation"],
    ),
    ("unstable-tools", &["reconnect"]),
    ("stubborn", &["shutdown"]),
    ("forks-grandchild", &["shutdown"]),
    ("daemon-stays", &["shutdown"]),
    ("ping-error", &["utilities"]),
    ("nameless-entries", &["capabilities", "wire-schema"]),
    (
        "broken-prompts-resources",
        &["wire-schema", "prompts-resources"],
    ),
    ("bad-progress", &["progress"]),
];

async fn assert_fails_exactly(mode: &str) -> Report {
    let expected: BTreeSet<&str> = BROKEN
        .iter()
        .find(|(m, _)| *m == mode)
        .map(|(_, ids)| ids.iter().copied().collect())
        .unwrap_or_default();
    let report = check(&fixture(mode, &["--mode", mode]), &quick()).await;
    assert_complete(&report);
    let actual: BTreeSet<&str> = not_passing(&report).into_iter().collect();
    assert_eq!(actual, expected, "mode {mode}:\n{}", report.render_text());
    report
}

macro_rules! broken {
    ($($test:ident => $mode:literal),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                assert_fails_exactly($mode).await;
            }
        )*
    };
}

broken! {
    broken_no_init_reply => "no-init-reply",
    broken_exit_immediately => "exit-immediately",
    broken_wrong_version => "wrong-version",
    broken_server_requests => "server-requests",
    broken_garbage_stdout => "garbage-stdout",
    broken_no_jsonrpc_field => "no-jsonrpc-field",
    broken_bad_tool_entry => "bad-tool-entry",
    broken_pagination_loop => "pagination-loop",
    broken_bad_tool_names => "bad-tool-names",
    broken_bad_schemas => "bad-schemas",
    broken_leaky_description => "leaky-description",
    broken_bad_call_result => "bad-call-result",
    broken_huge_result => "huge-result",
    broken_accepts_invalid => "accepts-invalid",
    broken_vague_errors => "vague-errors",
    broken_unknown_tool_success => "unknown-tool-success",
    broken_wrong_id => "wrong-id",
    broken_notification_instead_of_response => "notification-instead-of-response",
    broken_ignores_cancel => "ignores-cancel",
    broken_crash_mid_call => "crash-mid-call",
    broken_unstable_tools => "unstable-tools",
    broken_stubborn => "stubborn",
    broken_daemon_stays => "daemon-stays",
    broken_ping_error => "ping-error",
    broken_nameless_entries => "nameless-entries",
    broken_prompts_and_resources => "broken-prompts-resources",
    broken_bad_progress => "bad-progress",
}

#[tokio::test]
async fn forks_grandchild_fails_shutdown_and_leaves_nothing_running() {
    let report = assert_fails_exactly("forks-grandchild").await;
    let shutdown = report.result("shutdown").expect("shutdown result");
    let pids: Vec<u32> = shutdown
        .summary
        .split("pids ")
        .nth(1)
        .map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(pids.len(), 2, "{}", shutdown.summary);
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        assert!(
            stat.is_empty() || state == Some("Z"),
            "grandchild {pid} is still running: {stat}"
        );
    }
}

#[tokio::test]
async fn a_flood_of_stderr_still_yields_a_complete_passing_report() {
    assert_all_pass("stderr-flood", &["--mode", "stderr-flood"], &[]).await;
}

#[tokio::test]
async fn a_server_that_crashes_is_restarted_and_the_report_says_so() {
    let report = assert_fails_exactly("crash-mid-call").await;
    assert!(
        report.notes.iter().any(|n| n.contains("it was restarted")),
        "{:?}",
        report.notes
    );
    let call = report.result("tools-call").expect("tools-call");
    assert!(
        call.evidence
            .stderr_tail
            .as_deref()
            .unwrap_or("")
            .contains("crashing on purpose")
    );
}

/// The fixture that passes each check and the broken one that fails it.
const PAIRS: &[(&str, &str, &str)] = &[
    ("initialize", "good", "no-init-reply"),
    ("protocol-version", "good", "wrong-version"),
    ("capabilities", "good", "server-requests"),
    ("stdout-purity", "good", "garbage-stdout"),
    ("tools-list", "good", "bad-tool-entry"),
    ("pagination", "many-tools", "pagination-loop"),
    ("tool-names", "good", "bad-tool-names"),
    ("input-schemas", "good", "bad-schemas"),
    ("no-credentials", "good", "leaky-description"),
    ("tools-call", "good", "bad-call-result"),
    ("results-bounded", "good", "huge-result"),
    ("invalid-input", "good", "accepts-invalid"),
    ("errors-actionable", "good", "vague-errors"),
    ("unknown-tool", "good", "unknown-tool-success"),
    ("response-ids", "good", "wrong-id"),
    (
        "notifications-not-responses",
        "good",
        "notification-instead-of-response",
    ),
    ("wire-schema", "good", "bad-call-result"),
    ("progress", "good", "bad-progress"),
    ("cancellation", "good", "ignores-cancel"),
    ("reconnect", "good", "unstable-tools"),
    ("shutdown", "good", "stubborn"),
    ("utilities", "good", "ping-error"),
    ("prompts-resources", "good", "broken-prompts-resources"),
];

#[tokio::test]
async fn every_check_has_a_passing_and_a_failing_fixture() {
    // Every check is paired: stdio fixture modes for the checks that apply to stdio, HTTP
    // fixture faults (`http.rs`'s table, each failing exactly its checks) for the HTTP
    // checks, the good HTTP fixture passing them. The 2026-07-28 checks are paired in
    // `modern.rs` (one fault each, the good fixture in that era passing them all; a fault
    // that also breaks the schema fails `wire-schema`, which is paired here).
    let paired: BTreeSet<&str> = PAIRS
        .iter()
        .map(|(id, _, _)| *id)
        .chain(broken_http_ids())
        .chain(
            crate::modern::MODERN_BROKEN
                .iter()
                .flat_map(|(_, ids)| ids.iter().copied()),
        )
        .collect();
    let all: BTreeSet<&str> = CHECKS.iter().map(|c| c.id).collect();
    assert_eq!(paired, all);
    let modes = switchboard_testkit::fixture::mode_names();
    for (id, passing, failing) in PAIRS {
        assert!(
            modes.contains(passing) && modes.contains(failing),
            "{id}: unknown mode"
        );
        // The failing fixture's exact failure set (verified by the broken_* tests) has it.
        let fails = BROKEN
            .iter()
            .find(|(m, _)| m == failing)
            .map(|(_, ids)| *ids);
        assert!(
            fails.is_some_and(|ids| ids.contains(id)),
            "{failing} is not built to fail {id}"
        );
    }
    // The passing fixtures really pass them (not skip).
    for passing in ["good", "many-tools"] {
        let report = check(&fixture(passing, &["--mode", passing]), &quick()).await;
        for (id, _, _) in PAIRS.iter().filter(|(_, p, _)| *p == passing) {
            let result = report.result(id).expect("result");
            assert_eq!(
                result.status,
                Status::Pass,
                "{passing} should pass {id}: {}",
                result.summary
            );
        }
    }
    let (_server, spec) = http_fixture("http-good", &["--http-fault", "none"]);
    let report = check(&spec, &quick()).await;
    for id in broken_http_ids() {
        let result = report.result(id).expect("result");
        assert_eq!(result.status, Status::Pass, "{id}: {}", result.summary);
    }
}

/// The HTTP checks `http.rs`'s faults fail (each fault fails exactly its checks there).
fn broken_http_ids() -> BTreeSet<&'static str> {
    let faults = switchboard_testkit::fixture::http_fault_names();
    crate::http::BROKEN_HTTP
        .iter()
        .inspect(|(fault, _)| assert!(faults.contains(fault), "{fault}: unknown HTTP fault"))
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect()
}

/// With no tool to call with schema-violating arguments, `errors-actionable` has no error
/// that could name a field: it is skipped saying so, not passed on the unknown-tool error
/// alone.
#[tokio::test]
async fn errors_actionable_is_skipped_without_a_bad_arguments_call() {
    let report = check(
        &fixture("no-tools", &["--mode", "many-tools", "--tools", "0"]),
        &quick(),
    )
    .await;
    let result = report
        .result(ids::ERRORS_ACTIONABLE)
        .expect("errors-actionable has a result");
    assert_eq!(
        (result.status, result.summary.as_str()),
        (
            Status::Skip,
            "no call with schema-violating arguments was made, so no error could name a field (see `invalid-input`)"
        ),
        "{}",
        report.render_text()
    );
}
