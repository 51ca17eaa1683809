//! A tiny smoke of the benchmark harness, so `cargo test --workspace` keeps it working: our
//! client (in process) and the rmcp client against the fixture, sequential and pipelined,
//! our client against the trivial server, and the raw pipe floor through the driver's
//! process runner; our client over Streamable HTTP (when the node peers are installed) and
//! through `switchboard serve` on stdio and with `--http` in both eras, plain and with the
//! team features (policy, rate limits, metrics) on (when the CLI is built); scenario 8's servers started by the driver, with our client in both eras, rmcp's
//! Streamable HTTP client and the raw HTTP floor against them; and each start-up scenario
//! (cold start, scale, RSS, one-shot CLI, its baseline and the Inspector CLI) at a tiny
//! size; and the sandbox scenario (starts without and in the sandbox, calls through a
//! sandboxed server, the report's section spliced into a report) when the CLI, the sandbox
//! launcher, is built. Counts only — no timing assertions.

use std::time::Duration;

use switchboard_bench::cli::{ClientArgs, EraArg, RuntimeKind, StartupArgs};
use switchboard_bench::driver::{
    Case, ClientKind, HttpServer, Paths, Regime, Scenario, ServerKind, run_bounded, run_client,
    start_http_server,
};
use switchboard_bench::{ours, rmcp_client, startup};

/// Hard bound on each step (they take milliseconds).
const STEP: Duration = Duration::from_secs(30);

const BENCH: &str = env!("CARGO_BIN_EXE_switchboard-bench");

fn args(server: Vec<String>, calls: u64, inflight: usize) -> ClientArgs {
    ClientArgs {
        calls,
        warmup: 3,
        inflight,
        tool: "echo".into(),
        arg: "text".into(),
        text: "hello".into(),
        runtime: RuntimeKind::Current,
        url: None,
        era: EraArg::Auto,
        sandbox_launcher: None,
        server,
    }
}

fn fixture() -> Vec<String> {
    vec![
        switchboard_testkit::locate::fixture_bin()
            .to_string_lossy()
            .into_owned(),
    ]
}

#[tokio::test]
async fn our_client_against_the_fixture_sequential_and_pipelined() {
    let sequential = tokio::time::timeout(STEP, ours::run_async(&args(fixture(), 20, 1)))
        .await
        .expect("bounded")
        .expect("sequential run");
    assert_eq!(
        (
            sequential.client.as_str(),
            sequential.calls,
            sequential.inflight
        ),
        ("ours", 20, 1)
    );
    assert_eq!(sequential.protocol.as_deref(), Some("2025-11-25"));

    let pipelined = tokio::time::timeout(STEP, ours::run_async(&args(fixture(), 40, 8)))
        .await
        .expect("bounded")
        .expect("pipelined run");
    assert_eq!((pipelined.calls, pipelined.inflight), (40, 8));
}

#[tokio::test]
async fn our_client_against_the_trivial_server() {
    let server = vec![BENCH.to_owned(), "trivial-server".to_owned()];
    let result = tokio::time::timeout(STEP, ours::run_async(&args(server, 10, 1)))
        .await
        .expect("bounded")
        .expect("run");
    assert_eq!(result.calls, 10);
}

#[tokio::test]
async fn rmcp_client_against_the_fixture() {
    let result = tokio::time::timeout(STEP, rmcp_client::run_async(&args(fixture(), 10, 4)))
        .await
        .expect("bounded")
        .expect("run");
    assert_eq!((result.client.as_str(), result.calls), ("rmcp", 10));
}

#[test]
fn raw_pipe_floor_through_the_process_runner() {
    let dir = std::env::temp_dir().join(format!("switchboard-bench-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let argv: Vec<String> = [
        BENCH,
        "raw-pipe-client",
        "--calls",
        "30",
        "--warmup",
        "2",
        "--inflight",
        "4",
        "--server",
        BENCH,
        "raw-pipe-server",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let result =
        run_client(&argv, Regime::Unpinned, &dir.join("raw.stderr"), STEP).expect("raw run");
    assert_eq!(
        (result.client.as_str(), result.calls, result.inflight),
        ("raw", 30, 4)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn startup_args(servers: usize, tools: usize) -> StartupArgs {
    StartupArgs {
        servers,
        tools,
        page_size: 50,
        solo: 1,
        runtime: RuntimeKind::Current,
        fixture: Some(switchboard_testkit::locate::fixture_bin()),
    }
}

fn temp_dir(label: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-bench-smoke-{label}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test]
async fn cold_start_of_a_few_servers_through_the_runtime() {
    let metrics = tokio::time::timeout(STEP, startup::cold_start(&startup_args(3, 0)))
        .await
        .expect("bounded")
        .expect("cold start");
    assert_eq!(metrics["servers"], 3.0);
    assert!(metrics["tools"] > 0.0, "{metrics:?}");
    for key in [
        "parallel_ms",
        "solo_median_ms",
        "solo_max_ms",
        "enable_one_ms",
    ] {
        assert!(metrics.contains_key(key), "{key} missing: {metrics:?}");
    }
}

#[tokio::test]
async fn a_paged_catalog_listed_and_bridged() {
    let metrics = tokio::time::timeout(
        STEP,
        startup::scale(&startup_args(0, 120), std::path::Path::new(BENCH)),
    )
    .await
    .expect("bounded")
    .expect("scale");
    assert_eq!(metrics["tools"], 120.0);
    assert!(metrics.contains_key("enable_to_snapshot_ms"));
}

#[tokio::test]
async fn rss_with_a_few_live_servers() {
    let metrics = tokio::time::timeout(STEP, startup::rss(&startup_args(2, 0)))
        .await
        .expect("bounded")
        .expect("rss");
    assert_eq!(metrics["live_processes"], 2.0);
    assert!(metrics["rss_after_kb"] > 0.0);
}

#[test]
fn one_shot_baseline_and_cli_through_measure_child() {
    let dir = temp_dir("oneshot");
    let fixture = switchboard_testkit::locate::fixture_bin();
    let fixture = fixture.to_string_lossy().into_owned();
    let argv: Vec<String> = [
        BENCH,
        "measure-child",
        BENCH,
        "bare-start",
        "--server",
        &fixture,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_bounded(&argv, &dir.join("bare.stderr"), STEP).expect("bare start");
    let metrics = startup::from_stdout(&out).expect("metrics line");
    for key in ["wall_ms", "peak_rss_kb", "inner_start_call_ms"] {
        assert!(metrics.contains_key(key), "{key} missing: {metrics:?}");
    }

    // The CLI is built next to the fixture when the workspace's tests are built (as
    // scripts/test.sh does); when only this crate's tests were built, this half is skipped.
    let cli = std::path::Path::new(&fixture).with_file_name("switchboard");
    if !cli.is_file() {
        return;
    }
    let config = dir.join("mcp.json");
    let mcp = serde_json::json!({"mcpServers": {"fixture": {"command": fixture, "args": []}}});
    std::fs::write(&config, mcp.to_string()).expect("config");
    let argv: Vec<String> = [
        BENCH,
        "measure-child",
        &cli.to_string_lossy(),
        "call",
        "--config",
        &config.to_string_lossy(),
        "fixture",
        "echo",
        r#"{"text":"hello"}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_bounded(&argv, &dir.join("cli.stderr"), STEP).expect("cli call");
    let metrics = startup::from_stdout(&out).expect("metrics line");
    assert!(metrics["peak_rss_kb"] > 0.0, "{metrics:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn our_client_over_http_against_server_everything() {
    let root = switchboard_testkit::locate::workspace_root();
    let paths = Paths::discover(Some(&root)).expect("paths");
    if [&paths.node, &paths.everything, &paths.loopback]
        .iter()
        .any(|p| !p.is_file())
    {
        return; // scripts/peers.sh has not run here
    }
    std::fs::create_dir_all(paths.out_dir.join("logs")).expect("log dir");
    let server = HttpServer::start(&paths).expect("server-everything over HTTP");
    let mut http = args(Vec::new(), 5, 1);
    http.arg = "message".into();
    http.url = Some(server.url.clone());
    let result = tokio::time::timeout(STEP, ours::run_async(&http))
        .await
        .expect("bounded")
        .expect("run");
    assert_eq!(result.calls, 5);
    drop(server);
}

#[test]
fn the_inspector_cli_makes_the_same_call() {
    use switchboard_bench::driver::{StartupCase, StartupSettings};
    let root = switchboard_testkit::locate::workspace_root();
    let mut paths = Paths::discover(Some(&root)).expect("paths");
    if [&paths.node, &paths.inspector].iter().any(|p| !p.is_file()) {
        return; // scripts/peers.sh has not run here
    }
    paths.bench = BENCH.into();
    paths.fixture = switchboard_testkit::locate::fixture_bin();
    let dir = temp_dir("inspector");
    let sizes = StartupSettings {
        rounds: 1,
        cold_servers: 1,
        solo_starts: 1,
        tools: 1,
        page_size: 1,
        rss_servers: 1,
        sandbox_starts: 1,
        sandbox_gap_ms: 0,
    };
    // The case's command line, as the driver runs it: `measure-child --expect hello` fails
    // unless the Inspector printed the echo.
    let argv = paths.startup_argv(
        StartupCase::OneshotInspector,
        &sizes,
        &dir.join("unused.json"),
    );
    let out = run_bounded(&argv, &dir.join("inspector.stderr"), STEP).expect("inspector call");
    let metrics = startup::from_stdout(&out).expect("metrics line");
    assert!(metrics["peak_rss_kb"] > 0.0, "{metrics:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The paths for scenario 7 (the built CLI and fixture, the gateway's config written into
/// the temp dir `label`), or `None` when the CLI is not built: it is built next to the
/// fixture when the workspace's tests are built (as scripts/test.sh does), not when only
/// this crate's tests were.
fn gateway_paths(label: &str) -> Option<Paths> {
    let fixture = switchboard_testkit::locate::fixture_bin();
    let cli = fixture.with_file_name("switchboard");
    if !cli.is_file() {
        return None;
    }
    let root = switchboard_testkit::locate::workspace_root();
    let mut paths = Paths::discover(Some(&root)).expect("paths");
    paths.bench = BENCH.into();
    paths.fixture = fixture;
    paths.cli = cli;
    paths.gateway_config = temp_dir(label).join("gateway-mcp.json");
    paths.gateway_team_config = temp_dir(label).join("gateway-team-mcp.json");
    paths.write_gateway_config().expect("gateway config");
    Some(paths)
}

/// Scenario 7's stdio gateway, plain and with the team features on (the policy's rules,
/// argument rule included, let the bench's call through; the rate limits are not hit).
#[tokio::test]
async fn our_client_through_the_gateway() {
    let Some(paths) = gateway_paths("gateway") else {
        return;
    };
    for server in [ServerKind::Gateway, ServerKind::GatewayTeam] {
        let case = Case {
            scenario: Scenario::Sequential,
            server,
            client: ClientKind::Ours,
        };
        let argv = paths.client_argv(&case, 10, 2, 1, Regime::Unpinned);
        let server_at = argv.iter().position(|a| a == "--server").expect("--server");
        let mut through = args(argv[server_at + 1..].to_vec(), 10, 1);
        through.tool = case.server.echo_tool().into();
        let result = tokio::time::timeout(STEP, ours::run_async(&through))
            .await
            .expect("bounded")
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.id()));
        assert_eq!(result.calls, 10, "{}", case.id());
    }
}

/// Scenario 8 as the driver runs it, tiny ([`eight_calls_over_http`] for each case).
#[test]
fn http_scenario_servers_and_clients() {
    let root = switchboard_testkit::locate::workspace_root();
    let mut paths = Paths::discover(Some(&root)).expect("paths");
    paths.bench = BENCH.into();
    paths.rmcp_peer = switchboard_testkit::locate::rmcp_peer_bin();
    let dir = temp_dir("http");
    let case = |server, client| Case {
        scenario: Scenario::Sequential,
        server,
        client,
    };
    // (server, client, protocol negotiated; "" for the floor, which negotiates nothing)
    let legacy = "2025-11-25";
    let modern = "2026-07-28";
    let cases = [
        (ServerKind::TrivialHttp, ClientKind::Ours, legacy),
        (ServerKind::TrivialHttpModern, ClientKind::Ours, modern),
        (ServerKind::TrivialHttp, ClientKind::Rmcp, legacy),
        (ServerKind::RmcpPeerHttp, ClientKind::Ours, legacy),
        (ServerKind::RmcpPeerHttpModern, ClientKind::Ours, modern),
        (ServerKind::RmcpPeerHttp, ClientKind::Rmcp, legacy),
        (ServerKind::RawHttp, ClientKind::Raw, ""),
        (ServerKind::RawHttpModern, ClientKind::Raw, ""),
    ];
    for (server, client, protocol) in cases {
        let case = case(server, client);
        let result = eight_calls_over_http(&paths, &case, &dir);
        assert_eq!(
            (result.calls, result.protocol.as_deref().unwrap_or("")),
            (8, protocol),
            "{}",
            case.id()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One HTTP case as the driver runs it: its server started unpinned by
/// [`start_http_server`], the client's command line from [`Paths::client_argv`] with the
/// server's URL appended, 8 calls through the process runner; logs in `dir`.
fn eight_calls_over_http(
    paths: &Paths,
    case: &Case,
    dir: &std::path::Path,
) -> switchboard_bench::stats::RunResult {
    let log = dir.join(format!("{}.stderr", case.id().replace('/', "_")));
    let server = start_http_server(paths, case.server, Regime::Unpinned, &log)
        .expect("server started")
        .expect("an HTTP server the driver starts");
    let mut argv = paths.client_argv(case, 8, 2, 1, Regime::Unpinned);
    argv.extend(["--url".into(), server.url.clone()]);
    let result = run_client(&argv, Regime::Unpinned, &log, STEP)
        .unwrap_or_else(|e| panic!("{}: {e:#}", case.id()));
    drop(server);
    result
}

/// Scenario 7's HTTP gateway as the driver runs it, tiny: `switchboard serve --http` in
/// front of the fixture, our client in both eras, and with the team features on (legacy
/// era; [`eight_calls_over_http`]).
#[test]
fn our_client_through_the_http_gateway_in_both_eras() {
    let Some(paths) = gateway_paths("http-gateway") else {
        return;
    };
    let dir = temp_dir("http-gateway");
    for (server, protocol) in [
        (ServerKind::GatewayHttp, "2025-11-25"),
        (ServerKind::GatewayHttpModern, "2026-07-28"),
        (ServerKind::GatewayHttpTeam, "2025-11-25"),
    ] {
        let case = Case {
            scenario: Scenario::Sequential,
            server,
            client: ClientKind::Ours,
        };
        let result = eight_calls_over_http(&paths, &case, &dir);
        assert_eq!(
            (result.calls, result.protocol.as_deref()),
            (8, Some(protocol)),
            "{}",
            case.id()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Scenario 10 as the driver runs it, tiny (smoke sizes: 1 and 16 sessions, 50 idle ones),
/// for the direct baseline and our gateway (the peers are measured by the benchmark run):
/// every session opened, calls answered, the gateway's CPU and memory read from its tree.
#[test]
fn gateway_peers_scenario_direct_and_ours() {
    use switchboard_bench::gateway_peers::{Gateway, PeersSettings, run_scenario};
    let Some(mut paths) = gateway_paths("gateway-peers") else {
        return;
    };
    paths.out_dir = temp_dir("gateway-peers");
    let settings = PeersSettings::new(true, 1);
    let run = run_scenario(&paths, &[Gateway::Direct, Gateway::Ours], &settings, STEP)
        .expect("scenario ran");
    let loads: Vec<(Gateway, usize, usize, bool, bool)> = run
        .loads
        .iter()
        .map(|s| {
            let r = s.result.as_ref().unwrap_or_else(|| panic!("{s:?}"));
            (
                s.gateway,
                s.sessions,
                r.sessions_failed + r.calls_failed as usize,
                r.calls > 0,
                r.gateway_cpu_s.is_some(),
            )
        })
        .collect();
    assert_eq!(
        loads,
        vec![
            (Gateway::Ours, 1, 0, true, true),
            (Gateway::Ours, 16, 0, true, true),
            (Gateway::Direct, 1, 0, true, false),
            (Gateway::Direct, 16, 0, true, false),
        ]
    );
    let memory: Vec<(Gateway, usize, usize, bool)> = run
        .memory
        .iter()
        .map(|m| {
            let r = m.result.as_ref().unwrap_or_else(|| panic!("{m:?}"));
            (m.gateway, r.sessions, r.sessions_failed, r.base_rss_kib > 0)
        })
        .collect();
    assert_eq!(memory, vec![(Gateway::Ours, 50, 0, true)]);
    let _ = std::fs::remove_dir_all(&paths.out_dir);
}

/// `gateway-load --rate`: the open loop makes its calls at the set times, so a window
/// holds no more of them than the rate allows (one per session may start at the window's
/// very beginning), and every one of them is answered.
#[test]
fn an_open_loop_load_keeps_to_its_rate() {
    let dir = temp_dir("open-loop");
    let argv: Vec<String> = [
        BENCH,
        "gateway-load",
        "--sessions",
        "4",
        "--seconds",
        "0.5",
        "--warmup",
        "1",
        "--rate",
        "200",
        "--server",
        BENCH,
        "trivial-server",
    ]
    .map(String::from)
    .to_vec();
    let out = run_bounded(&argv, &dir.join("gateway-load.stderr"), STEP).expect("gateway-load");
    let result: switchboard_bench::gateway_peers::LoadResult =
        switchboard_bench::gateway_peers::parse_line(&out).expect("its result line");
    assert_eq!(
        (result.sessions_failed, result.calls_failed),
        (0, 0),
        "{result:?}"
    );
    assert!(
        result.calls > 0 && result.calls <= 200 / 2 + 4,
        "{} calls in half a second at 200/s",
        result.calls
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Scenario 9 as the driver runs it, tiny: `sandbox-start` (every variant started, through
/// the driver's command line and process runner), our client's calls to the trivial server
/// unsandboxed and sandboxed (`client_argv`), and the report's section spliced into an
/// existing report. Needs the CLI (the launcher) built next to the fixture, and a kernel
/// that gives the default sandbox (Landlock ABI 6, user namespaces): skipped otherwise.
#[test]
fn sandbox_scenario_starts_and_calls() {
    use switchboard_bench::cli::Section;
    use switchboard_bench::driver::{
        Results, Settings, StartupCase, StartupSample, StartupSettings, Summary,
    };
    use switchboard_bench::stats::RunResult;
    let fixture = switchboard_testkit::locate::fixture_bin();
    let cli = fixture.with_file_name("switchboard");
    if !cli.is_file() {
        return;
    }
    if !sandbox_available(&cli) {
        return; // this kernel or setup cannot apply the default sandbox
    }
    let root = switchboard_testkit::locate::workspace_root();
    let mut paths = Paths::discover(Some(&root)).expect("paths");
    paths.bench = BENCH.into();
    paths.cli = cli;
    let dir = temp_dir("sandbox");
    let sizes = StartupSettings {
        rounds: 1,
        cold_servers: 1,
        solo_starts: 1,
        tools: 1,
        page_size: 1,
        rss_servers: 1,
        sandbox_starts: 2,
        sandbox_gap_ms: 0,
    };
    let argv = paths.startup_argv(StartupCase::SandboxStart, &sizes, &dir.join("unused.json"));
    let out = run_bounded(&argv, &dir.join("sandbox-start.stderr"), STEP).expect("sandbox-start");
    let metrics = startup::from_stdout(&out).expect("metrics line");
    assert_eq!(metrics["starts"], 2.0);
    for variant in ["plain", "sandboxed", "no_netns", "no_cgroup", "fs_only"] {
        for figure in ["median_ms", "p90_ms"] {
            let key = format!("{variant}_{figure}");
            assert!(metrics[&key] > 0.0, "{key}: {metrics:?}");
        }
    }
    assert!(metrics.contains_key("added_median_ms"), "{metrics:?}");

    let mut runs: Vec<(ServerKind, RunResult)> = Vec::new();
    for server in [ServerKind::SandboxPlain, ServerKind::Sandboxed] {
        let case = Case {
            scenario: Scenario::Sequential,
            server,
            client: ClientKind::Ours,
        };
        let argv = paths.client_argv(&case, 8, 2, 1, Regime::Unpinned);
        assert_eq!(
            argv.iter().any(|a| a == "--sandbox-launcher"),
            server == ServerKind::Sandboxed,
            "{argv:?}"
        );
        let log = dir.join(format!("{}.stderr", case.id().replace('/', "_")));
        let result = run_client(&argv, Regime::Unpinned, &log, STEP)
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.id()));
        assert_eq!(result.calls, 8, "{}", case.id());
        runs.push((server, result));
    }

    // The section, rendered from these runs, goes into a report without it (before the
    // notes), and replaces itself the second time; its notes block comes along once.
    let summaries: Vec<Summary> = runs
        .iter()
        .map(|(server, r)| Summary {
            regime: Regime::Unpinned,
            case: Case {
                scenario: Scenario::Sequential,
                server: *server,
                client: ClientKind::Ours,
            },
            rounds: 1,
            failures: 0,
            calls_per_s: r.calls_per_s,
            calls_per_s_min: r.calls_per_s,
            calls_per_s_max: r.calls_per_s,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            init_ms: r.init_ms,
            protocol: r.protocol.clone(),
        })
        .collect();
    let results = Results {
        mode: "smoke".into(),
        started: "now".into(),
        duration_s: 1.0,
        settings: Settings {
            rounds: 1,
            warmup_round: false,
            calls: 8,
            pipelined_calls: 8,
            inflight: 1,
            warmup_calls: 2,
            regimes: vec![Regime::Unpinned],
        },
        machine: Default::default(),
        versions: Default::default(),
        samples: Vec::new(),
        summaries,
        callgrind: None,
        skipped: Vec::new(),
        load: Vec::new(),
        startup_settings: Some(sizes),
        startup: vec![StartupSample {
            round: 1,
            case: StartupCase::SandboxStart,
            metrics: Some(metrics),
            error: None,
        }],
        gateway_peers: None,
        gateway_scale: None,
    };
    let report = "# Benchmarks\n\n## Scenario 8: HTTP\n\ntable\n\n## Analysis\n\nnotes\n";
    let notes = "## Analysis\n\n<!-- switchboard-bench notes: sandbox -->\nsandbox notes\n\
                 <!-- /switchboard-bench notes: sandbox -->\n";
    let once =
        switchboard_bench::report::splice_section(report, &results, Section::Sandbox, Some(notes));
    let twice =
        switchboard_bench::report::splice_section(&once, &results, Section::Sandbox, Some(notes));
    assert_eq!(once, twice);
    for text in [
        "## Scenario 9: a sandboxed server",
        "| **default sandbox**",
        "| regime | unsandboxed calls/s",
        "sandbox notes",
    ] {
        assert_eq!(once.matches(text).count(), 1, "{text} in:\n{once}");
    }
    let section = once.find("## Scenario 9").expect("section");
    assert!(once.find("## Scenario 8").expect("scenario 8") < section);
    assert!(section < once.find("## Analysis").expect("notes"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the launcher can apply the default sandbox here: it runs `/bin/true` under it
/// (the launcher fails, naming the missing protection, when the kernel lacks one).
fn sandbox_available(cli: &std::path::Path) -> bool {
    let spec = switchboard_wire::stdio::ProcessSpec {
        program: "/bin/true".into(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        sandbox: Some(switchboard_bench::sandbox::default_spawn(cli)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let Ok(transport) = switchboard_wire::stdio::spawn(
            &spec,
            switchboard_wire::stdio::StdioOptions::new("probe"),
        ) else {
            return false;
        };
        let exit = transport.process.wait_exit(STEP).await;
        matches!(exit, Some(status) if status.contains("exit status: 0"))
    })
}
