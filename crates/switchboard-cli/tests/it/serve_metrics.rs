//! `switchboard serve --metrics ADDR`: calls through the gateway (a result, a tool error, an
//! unknown tool) show in `GET /metrics` as Prometheus text (snapshot, varying values
//! masked), `promtool check metrics` accepts the page, and a real Prometheus server
//! scraping it answers `sum(switchboard_calls_total)` with the number of calls made. The
//! stdio gateway has metrics too (a killed server's restart among them), and the listener
//! answers nothing but its page. Prometheus
//! and promtool are Debian's, installed by `scripts/peers.sh` into `target/peers/prometheus/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, EraChoice, Session, SessionConfig};
use switchboard_testkit::locate::peer_path;
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::descendants::{running_named, unique_name};
use crate::serve::{GRACE, gateway_with_flags};
use crate::serve_balanced::{Owned, free_port};
use crate::serve_http::HttpGateway;
use crate::{config, fixture_entry, scratch_dir};

/// Longest wait for a killed server to be up again (a hang detector).
const RESTART_BOUND: Duration = Duration::from_secs(30);
/// Longest wait for Prometheus to start, scrape and answer (a hang detector).
const PROMETHEUS_BOUND: Duration = Duration::from_secs(90);

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(TEST_DEADLINE)
        .build()
        .expect("an HTTP client")
}

/// `GET url`: status, content type and body.
async fn get(url: &str) -> (u16, String, String) {
    let response = within("a GET", TEST_DEADLINE, http_client().get(url).send())
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = within("the body", TEST_DEADLINE, response.text())
        .await
        .expect("a body");
    (status, content_type, body)
}

/// The `switchboard_` lines of a scrape: the HELP and TYPE lines in order, then the
/// samples sorted (a family's series come in no set order), with the values that vary
/// from run to run (latency sums, bytes, open connections) masked and the latency buckets
/// but `+Inf` (whose count is the calls') left out.
fn masked(text: &str) -> String {
    let mut described = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines().filter(|line| line.contains("switchboard_")) {
        if line.starts_with('#') {
            described.push(line.to_owned());
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or((line, ""));
        if series.starts_with("switchboard_call_duration_seconds_bucket")
            && !series.contains("le=\"+Inf\"")
        {
            continue;
        }
        let varies = series.starts_with("switchboard_call_duration_seconds_sum")
            || series.starts_with("switchboard_http_request_bytes_total")
            || series.starts_with("switchboard_http_response_bytes_total")
            || series.starts_with("switchboard_http_connections");
        if varies {
            if series.contains("bytes") {
                assert!(value.parse::<u64>().is_ok_and(|bytes| bytes > 0), "{line}");
            }
            samples.push(format!("{series} …"));
        } else {
            samples.push(line.to_owned());
        }
    }
    samples.sort();
    described.extend(samples);
    described.join("\n")
}

/// `promtool check metrics` on `text`: its exit code and what it said.
fn promtool_check(promtool: &Path, text: &str) -> (Option<i32>, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let status = wait::exited("promtool to check the metrics", TEST_DEADLINE, &mut child);
    let mut said = String::new();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut stream = stream;
        let _ = stream.read_to_string(&mut said);
    }
    (status.code(), said)
}

/// A Prometheus server scraping `target` (host:port) every second, its data in `folder`;
/// returns it and its API's base URL.
fn prometheus(folder: &Path, target: &str) -> (Owned, String) {
    let binary = peer_path("target/peers/prometheus/prometheus");
    let config = folder.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: switchboard\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .expect("write prometheus.yml");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let data: PathBuf = folder.join("data");
    let child = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg(format!("--web.listen-address={listen}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    (Owned(child), format!("http://{listen}"))
}

/// `sum(switchboard_calls_total)` as Prometheus answers it (`None`: not yet).
async fn calls_in_prometheus(api: &str) -> Option<String> {
    let url = format!("{api}/api/v1/query?query=sum(switchboard_calls_total)");
    let response = http_client().get(&url).send().await.ok()?;
    let body = response.text().await.ok()?;
    let answer: Value = serde_json::from_str(&body).ok()?;
    answer
        .pointer("/data/result/0/value/1")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_calls_and_promtool_and_prometheus_take_them() {
    let promtool = peer_path("target/peers/prometheus/promtool");
    let path = config(json!({ "fx": fixture_entry(&[]) }));
    let path = path.to_str().expect("a UTF-8 path");
    let gateway = HttpGateway::launch(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--config",
            path,
        ],
        &[],
        "switchboard serve: metrics at ",
    );
    let metrics_url = gateway.url().to_owned();
    let mut said = Vec::new();
    let mcp_url = wait::until("the gateway to say where it listens", TEST_DEADLINE, || {
        said.extend(gateway.stderr());
        said.iter()
            .find_map(|line| line.strip_prefix("switchboard serve: listening on "))
            .map(str::to_owned)
    });
    let mut session_config = SessionConfig::new("gw");
    session_config.era = EraChoice::Modern;
    let session = within(
        "the handshake",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("gw", &mcp_url), session_config),
    )
    .await
    .expect("connected");
    let calls = [
        ("fx__add", json!({"a": 2, "b": 3})),
        ("fx__echo", json!({"text": "the-argument-value-5d1e"})),
        ("fx__fail", json!({})),
        ("fx__no_such_tool", json!({})),
    ];
    for (tool, arguments) in &calls {
        let _ = within(
            "tools/call",
            TEST_DEADLINE,
            session.call_tool_raw(tool, Some(arguments), &CallOptions::default()),
        )
        .await;
    }

    let (status, content_type, text) = get(&metrics_url).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(
        !text.contains("the-argument-value-5d1e") && !text.contains("no_such_tool"),
        "no argument value and no name only the client gave: {text}"
    );
    expect_test::expect![[r##"
        # HELP switchboard_calls_total tools/call requests answered, by server, tool and outcome (ok, tool_error, error).
        # TYPE switchboard_calls_total counter
        # HELP switchboard_call_errors_total tools/call requests answered with an error, by server and kind.
        # TYPE switchboard_call_errors_total counter
        # HELP switchboard_call_duration_seconds How long the gateway took to answer tools/call, by server and tool.
        # TYPE switchboard_call_duration_seconds histogram
        # HELP switchboard_calls_in_flight tools/call requests being answered now.
        # TYPE switchboard_calls_in_flight gauge
        # HELP switchboard_state_errors_total Rate-limit decisions the shared store (serve --state) could not make, made by this instance's own buckets.
        # TYPE switchboard_state_errors_total counter
        # HELP switchboard_upstream_state Each upstream server's state: 1 for the state it is in, 0 for the others.
        # TYPE switchboard_upstream_state gauge
        # HELP switchboard_upstream_restarts_total Times each upstream server was connected again after its first start.
        # TYPE switchboard_upstream_restarts_total counter
        # HELP switchboard_http_sessions Legacy HTTP sessions open.
        # TYPE switchboard_http_sessions gauge
        # HELP switchboard_http_listen_streams subscriptions/listen streams open.
        # TYPE switchboard_http_listen_streams gauge
        # HELP switchboard_http_connections Authenticated HTTP connections open.
        # TYPE switchboard_http_connections gauge
        # HELP switchboard_http_requests_in_flight HTTP requests being answered now (every method).
        # TYPE switchboard_http_requests_in_flight gauge
        # HELP switchboard_http_request_bytes_total Bytes of HTTP request bodies read.
        # TYPE switchboard_http_request_bytes_total counter
        # HELP switchboard_http_response_bytes_total Bytes of HTTP response bodies sent (event streams included).
        # TYPE switchboard_http_response_bytes_total counter
        switchboard_call_duration_seconds_bucket{server="_unknown",tool="_unknown",le="+Inf"} 1
        switchboard_call_duration_seconds_bucket{server="fx",tool="add",le="+Inf"} 1
        switchboard_call_duration_seconds_bucket{server="fx",tool="echo",le="+Inf"} 1
        switchboard_call_duration_seconds_bucket{server="fx",tool="fail",le="+Inf"} 1
        switchboard_call_duration_seconds_count{server="_unknown",tool="_unknown"} 1
        switchboard_call_duration_seconds_count{server="fx",tool="add"} 1
        switchboard_call_duration_seconds_count{server="fx",tool="echo"} 1
        switchboard_call_duration_seconds_count{server="fx",tool="fail"} 1
        switchboard_call_duration_seconds_sum{server="_unknown",tool="_unknown"} …
        switchboard_call_duration_seconds_sum{server="fx",tool="add"} …
        switchboard_call_duration_seconds_sum{server="fx",tool="echo"} …
        switchboard_call_duration_seconds_sum{server="fx",tool="fail"} …
        switchboard_call_errors_total{server="_unknown",kind="invalid_params"} 1
        switchboard_calls_in_flight 0
        switchboard_calls_total{server="_unknown",tool="_unknown",outcome="error"} 1
        switchboard_calls_total{server="_unknown",tool="_unknown",outcome="ok"} 0
        switchboard_calls_total{server="_unknown",tool="_unknown",outcome="tool_error"} 0
        switchboard_calls_total{server="fx",tool="add",outcome="error"} 0
        switchboard_calls_total{server="fx",tool="add",outcome="ok"} 1
        switchboard_calls_total{server="fx",tool="add",outcome="tool_error"} 0
        switchboard_calls_total{server="fx",tool="echo",outcome="error"} 0
        switchboard_calls_total{server="fx",tool="echo",outcome="ok"} 1
        switchboard_calls_total{server="fx",tool="echo",outcome="tool_error"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="error"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="ok"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="tool_error"} 1
        switchboard_http_connections …
        switchboard_http_listen_streams 0
        switchboard_http_request_bytes_total …
        switchboard_http_requests_in_flight 0
        switchboard_http_response_bytes_total …
        switchboard_http_sessions 0
        switchboard_state_errors_total 0
        switchboard_upstream_restarts_total{server="fx"} 0
        switchboard_upstream_state{server="fx",state="backoff"} 0
        switchboard_upstream_state{server="fx",state="broken"} 0
        switchboard_upstream_state{server="fx",state="configured"} 0
        switchboard_upstream_state{server="fx",state="connecting"} 0
        switchboard_upstream_state{server="fx",state="disabled"} 0
        switchboard_upstream_state{server="fx",state="ready"} 1
        switchboard_upstream_state{server="fx",state="stopped"} 0"##]]
    .assert_eq(&masked(&text));

    let (code, said_by_promtool) = promtool_check(&promtool, &text);
    assert_eq!(
        code,
        Some(0),
        "promtool check metrics: {said_by_promtool}\n{text}"
    );
    assert_eq!(said_by_promtool.trim(), "", "promtool found nothing to say");

    let folder = scratch_dir("serve-metrics-prometheus");
    let target = metrics_url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    let (_prometheus, api) = prometheus(&folder, target);
    let made = calls.len().to_string();
    let total = wait::until_async(
        "Prometheus to scrape the gateway and count every call",
        PROMETHEUS_BOUND,
        || {
            let api = api.clone();
            let made = made.clone();
            async move {
                calls_in_prometheus(&api)
                    .await
                    .filter(|total| *total == made)
            }
        },
    )
    .await;
    assert_eq!(total, made);
    drop(session);
}

#[tokio::test]
async fn the_stdio_gateway_serves_metrics_counts_a_restart_and_nothing_else_on_that_port() {
    let port = free_port();
    let flag = format!("--metrics=127.0.0.1:{port}");
    let name = unique_name("metrics-restart");
    let session =
        gateway_with_flags(json!({ "fx": fixture_entry(&["--name", &name]) }), &[&flag]).await;
    for tool in ["fx__add", "fx__add", "fx__fail"] {
        let _ = within(
            "tools/call",
            TEST_DEADLINE,
            session.call_tool_raw(
                tool,
                Some(&json!({"a": 1, "b": 1})),
                &CallOptions::default(),
            ),
        )
        .await;
    }
    let base = format!("http://127.0.0.1:{port}");
    let (status, _, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(status, 200, "{text}");
    let calls: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("switchboard_calls_total"))
        .collect();
    let mut calls = calls;
    calls.sort_unstable();
    expect_test::expect![[r#"
        switchboard_calls_total{server="fx",tool="add",outcome="error"} 0
        switchboard_calls_total{server="fx",tool="add",outcome="ok"} 2
        switchboard_calls_total{server="fx",tool="add",outcome="tool_error"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="error"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="ok"} 0
        switchboard_calls_total{server="fx",tool="fail",outcome="tool_error"} 1"#]]
    .assert_eq(&calls.join("\n"));
    assert!(
        !text.contains("switchboard_http_"),
        "no HTTP transport, no HTTP counts: {text}"
    );
    // The server is killed: the supervisor starts it again, and the scrape says so.
    let servers = running_named(&name);
    assert!(!servers.is_empty(), "the fixture server runs");
    for (pid, _) in servers {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let metrics_url = format!("{base}/metrics");
    wait::until_async("the restart to show in the metrics", RESTART_BOUND, || {
        let url = metrics_url.clone();
        async move {
            let (_, _, text) = get(&url).await;
            (text.contains("switchboard_upstream_restarts_total{server=\"fx\"} 1\n")
                && text.contains("switchboard_upstream_state{server=\"fx\",state=\"ready\"} 1\n"))
            .then_some(())
        }
    })
    .await;
    let others = [
        get(&format!("{base}/")).await.0,
        get(&format!("{base}/mcp")).await.0,
        get(&format!("{base}/metrics/x")).await.0,
    ];
    assert_eq!(others, [404, 404, 404]);
    let posted = within(
        "a POST",
        TEST_DEADLINE,
        http_client().post(format!("{base}/metrics")).send(),
    )
    .await
    .expect("an answer");
    assert_eq!(posted.status().as_u16(), 405);
    session.shutdown(GRACE).await;
}
