//! The 2026-07-28 checks: the good fixture in that era passes them over stdio and HTTP, as
//! does the server crate's conformance example (a server that passes the official
//! conformance suite); a legacy-only server has them skipped with the reason; and each
//! fault breaks exactly its checks, with evidence.

use std::collections::BTreeSet;

use switchboard_check::catalog::{self, Eras, Transport, ids};
use switchboard_check::{Report, ServerSpec, Status};
use switchboard_protocol::Era;
use switchboard_testkit::locate::conformance_server_bin;
use switchboard_testkit::serve::{HttpServer, PeerCommand};

use crate::support::*;

/// A deliberate 2026-07-28 defect of the fixture.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fault {
    /// A `--mode` of the fixture (its backend), seen over stdio and over HTTP.
    Mode(&'static str),
    /// An `--http-fault` of its HTTP front end.
    Http(&'static str),
}

/// Each fault and exactly the checks it fails (or warns on), with `--era modern`.
pub(crate) const MODERN_BROKEN: &[(Fault, &[&str])] = &[
    (Fault::Http("notification-200"), &[ids::HTTP_NOTIFICATIONS]),
    // Its `server/discover` result breaks the schema too (`ttlMs`, `cacheScope` required).
    (
        Fault::Mode("discover-no-cache-hints"),
        &[ids::WIRE_SCHEMA, ids::DISCOVER],
    ),
    (Fault::Mode("undeclared-prompts"), &[ids::DISCOVER]),
    (Fault::Mode("meta-optional"), &[ids::REQUEST_META]),
    (Fault::Mode("any-version"), &[ids::UNSUPPORTED_VERSION]),
    (
        Fault::Http("no-header-check"),
        &[ids::HTTP_HEADERS, ids::PARAM_HEADERS],
    ),
    (Fault::Mode("bad-param-header"), &[ids::PARAM_HEADERS]),
    (Fault::Http("method-not-found-200"), &[ids::REMOVED_METHODS]),
    // Its list results break the schema too (`ttlMs`, `cacheScope` required).
    (
        Fault::Mode("list-no-cache-hints"),
        &[ids::WIRE_SCHEMA, ids::CACHE_HINTS],
    ),
    (Fault::Mode("careless-input"), &[ids::INPUT_REQUIRED]),
    (Fault::Mode("listen-faults"), &[ids::SUBSCRIPTIONS_LISTEN]),
    (
        Fault::Mode("legacy-error-codes"),
        &[ids::UNKNOWN_RESOURCE, ids::ERROR_CODES],
    ),
];

/// The 2026-07-28 checks that apply on this transport.
fn modern_ids(transport: Transport) -> Vec<&'static str> {
    catalog::only_in(Eras::Modern)
        .into_iter()
        .filter(|id| catalog::find(id).is_some_and(|d| d.applies_to(transport)))
        .collect()
}

/// Every applicable 2026-07-28 check passed, and every message matched the revision's
/// schema (`wire-schema`).
fn assert_modern_pass(report: &Report, transport: Transport) {
    for id in modern_ids(transport).into_iter().chain([ids::WIRE_SCHEMA]) {
        let result = report.result(id).expect("a result");
        assert_eq!(
            result.status,
            Status::Pass,
            "{} should pass {id}:\n{}",
            report.server,
            report.render_text()
        );
    }
}

#[tokio::test]
async fn the_good_fixture_in_2026_07_28_passes_every_era_check_over_stdio() {
    for era in ["modern", "both"] {
        let report = check(&fixture("good-modern", &["--era", era]), &quick()).await;
        assert_modern_pass(&report, Transport::Stdio);
        let headers = report.result(ids::HTTP_HEADERS).expect("http-headers");
        assert_eq!(headers.summary, "applies to Streamable HTTP servers only");
    }
}

#[tokio::test]
async fn the_good_fixture_in_2026_07_28_passes_every_era_check_over_http() {
    for era in ["modern", "both"] {
        let (_server, spec) = http_fixture("good-modern-http", &["--era", era]);
        let report = check(&spec, &quick()).await;
        assert_modern_pass(&report, Transport::Http);
    }
    let (_server, spec) = http_fixture("good-modern-http", &["--era", "modern"]);
    let report = check(&spec, &quick()).await;
    let discover = report.result(ids::DISCOVER).expect("discover");
    assert_eq!(
        discover.summary,
        "`server/discover` lists 2026-07-28 with capabilities, cache hints and the server's name; no undeclared list is served"
    );
    let headers = report.result(ids::HTTP_HEADERS).expect("http-headers");
    let statuses: Vec<u64> = headers
        .evidence
        .exchanges
        .iter()
        .filter_map(|e| e.received.as_ref()?.get("status")?.as_u64())
        .collect();
    // Seven refusals; then a padded `Mcp-Name` (the unknown tool is answered) and header
    // names in title case and in capitals, all served.
    assert_eq!(statuses, [400, 400, 400, 400, 400, 400, 400, 200, 200, 200]);
}

#[tokio::test]
async fn a_legacy_server_has_the_era_checks_skipped_with_the_reason() {
    let report = check(&fixture("good", &[]), &quick()).await;
    for id in modern_ids(Transport::Stdio) {
        let result = report.result(id).expect("a result");
        assert_eq!(result.status, Status::Skip, "{id}");
        assert!(
            result
                .summary
                .starts_with("the server does not speak the 2026-07-28 protocol"),
            "{id}: {}",
            result.summary
        );
    }
}

#[tokio::test]
async fn the_server_crates_conformance_example_passes_every_era_check_over_stdio() {
    let spec = ServerSpec::stdio(
        "conformance",
        switchboard_check::ProcessSpec {
            program: conformance_server_bin().display().to_string(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            sandbox: None,
        },
    );
    let report = check(&spec, &conformance_calls()).await;
    assert_eq!(report.facts.era, Some(Era::Modern));
    assert_modern_pass(&report, Transport::Stdio);
}

/// The conformance example's tools are not read-only: the calls the checker may make
/// (one with a parameter mirrored into a header, one that asks for input).
fn conformance_calls() -> switchboard_check::Options {
    let mut options = quick();
    options.calls = vec![
        switchboard_check::ToolCall::parse("test_param_headers", r#"{"region": "eu-west"}"#)
            .expect("a call"),
        switchboard_check::ToolCall::parse("test_input_required_result_elicitation", "{}")
            .expect("a call"),
    ];
    options
}

#[tokio::test]
async fn the_server_crates_conformance_example_passes_every_era_check_over_http() {
    let server = HttpServer::peer(PeerCommand {
        program: conformance_server_bin(),
        args: vec!["--http".into(), "127.0.0.1:0".into()],
        env: Vec::new(),
        port: 0,
        path: "/mcp".into(),
    });
    let report = check(
        &http_spec("conformance-http", server.url()),
        &conformance_calls(),
    )
    .await;
    assert_eq!(report.facts.era, Some(Era::Modern));
    assert_modern_pass(&report, Transport::Http);
}

/// Runs the fixture with `fault` in the 2026-07-28 era over `transport`; asserts that
/// exactly `expected` (those of them that apply) fail or warn, with evidence and a fix.
async fn assert_fault(fault: Fault, transport: Transport) {
    let expected = MODERN_BROKEN
        .iter()
        .find(|(f, _)| format!("{f:?}") == format!("{fault:?}"))
        .map(|(_, ids)| *ids)
        .unwrap_or_default();
    let (server, spec) = match (fault, transport) {
        (Fault::Mode(mode), Transport::Stdio) => {
            (None, fixture(mode, &["--era", "modern", "--mode", mode]))
        }
        (Fault::Mode(mode), Transport::Http) => {
            let (server, spec) = http_fixture(mode, &["--era", "modern", "--mode", mode]);
            (Some(server), spec)
        }
        (Fault::Http(fault), _) => {
            let (server, spec) = http_fixture(fault, &["--era", "modern", "--http-fault", fault]);
            (Some(server), spec)
        }
    };
    let report = check(&spec, &quick()).await;
    drop(server);
    let expected: BTreeSet<&str> = expected
        .iter()
        .copied()
        .filter(|id| catalog::find(id).is_some_and(|d| d.applies_to(transport)))
        .collect();
    let failing: BTreeSet<&str> = not_passing(&report).into_iter().collect();
    assert_eq!(failing, expected, "{fault:?}:\n{}", report.render_text());
    for id in expected {
        let result = report.result(id).expect("a result");
        assert!(
            !result.evidence.exchanges.is_empty() && result.fix.is_some(),
            "{id} has no evidence or fix: {result:?}"
        );
    }
}

macro_rules! faults {
    ($($test:ident => $fault:expr),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                if let Fault::Mode(_) = $fault {
                    assert_fault($fault, Transport::Stdio).await;
                }
                assert_fault($fault, Transport::Http).await;
            }
        )*
    };
}

faults! {
    notifications_answered_200_fail_http_notifications => Fault::Http("notification-200"),
    discover_without_cache_hints_fails_discover => Fault::Mode("discover-no-cache-hints"),
    an_undeclared_list_served_fails_discover => Fault::Mode("undeclared-prompts"),
    optional_meta_fails_request_meta => Fault::Mode("meta-optional"),
    any_version_served_fails_unsupported_version => Fault::Mode("any-version"),
    unchecked_headers_fail_http_headers => Fault::Http("no-header-check"),
    method_not_found_with_200_fails_removed_methods => Fault::Http("method-not-found-200"),
    lists_without_cache_hints_fail_cache_hints => Fault::Mode("list-no-cache-hints"),
    a_bad_header_annotation_fails_param_headers => Fault::Mode("bad-param-header"),
    careless_input_requests_fail_input_required => Fault::Mode("careless-input"),
    listen_faults_fail_subscriptions_listen => Fault::Mode("listen-faults"),
    legacy_error_codes_warn_on_unknown_resource_and_error_codes => Fault::Mode("legacy-error-codes"),
}

#[test]
fn every_fault_of_the_table_has_a_test_and_every_era_check_a_fault() {
    // `wire-schema`, which some faults fail as well, is paired in `fixtures.rs`.
    let mut faulted: Vec<&str> = MODERN_BROKEN
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .filter(|id| catalog::find(id).is_some_and(|d| d.eras == Eras::Modern))
        .collect();
    faulted.dedup();
    assert_eq!(faulted, catalog::only_in(Eras::Modern));
    let modes = switchboard_testkit::fixture::mode_names();
    let http_faults = switchboard_testkit::fixture::http_fault_names();
    for (fault, _) in MODERN_BROKEN {
        match fault {
            Fault::Mode(mode) => assert!(modes.contains(mode), "{mode}"),
            Fault::Http(name) => assert!(http_faults.contains(name), "{name}"),
        }
    }
}
