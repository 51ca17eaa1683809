//! `switchboard serve --http`: the gateway over Streamable HTTP, as real processes. Our own
//! client lists and calls through it in both eras, `switchboard check` passes against it
//! in both eras (its HTTP checks too), a token is required when configured, and SIGTERM
//! with a slow call in flight drains: the call is answered, the gateway exits, no server it
//! started remains.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use expect_test::expect;
use serde_json::json;
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, EraChoice, Session, SessionConfig};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::descendants::{assert_none_left, unique_name};
use crate::{config, fixture_entry, switchboard, switchboard_with_env};

/// Longest wait for the gateway to say where it listens, and to exit after SIGTERM (hang
/// detectors, not speed assertions).
const PROCESS_BOUND: Duration = Duration::from_secs(60);

/// A `switchboard serve --http 127.0.0.1:0` process, killed when dropped.
pub(crate) struct HttpGateway {
    child: Child,
    url: String,
    lines: mpsc::Receiver<String>,
}

impl HttpGateway {
    pub(crate) fn start(config: &Path, flags: &[&str], env: &[(&str, &str)]) -> HttpGateway {
        let config = config.to_str().expect("a UTF-8 config path");
        let mut args = vec!["serve", "--http", "127.0.0.1:0", "--config", config];
        args.extend_from_slice(flags);
        HttpGateway::launch(&args, env, "switchboard serve: listening on ")
    }

    /// `switchboard ARGS`, serving HTTP once it says `{announcement}URL` on stderr.
    pub(crate) fn launch(args: &[&str], env: &[(&str, &str)], announcement: &str) -> HttpGateway {
        HttpGateway::launch_program(
            Path::new(env!("CARGO_BIN_EXE_switchboard")),
            args,
            env,
            announcement,
        )
    }

    /// `PROGRAM ARGS` (any HTTP server), serving once it says `{announcement}URL` on stderr.
    pub(crate) fn launch_program(
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        announcement: &str,
    ) -> HttpGateway {
        let mut child = Command::new(program)
            .args(args)
            .env(crate::NO_ERA_MEMO.0, crate::NO_ERA_MEMO.1)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn switchboard");
        let stderr = child.stderr.take().expect("stderr");
        let (to, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if to.send(line).is_err() {
                    break;
                }
            }
        });
        let mut gateway = HttpGateway {
            child,
            url: String::new(),
            lines,
        };
        loop {
            let line = gateway
                .lines
                .recv_timeout(PROCESS_BOUND)
                .expect("the server says where it listens");
            if let Some(url) = line.strip_prefix(announcement) {
                gateway.url = url.to_owned();
                return gateway;
            }
        }
    }

    /// The gateway's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The endpoint's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// A client config naming the gateway `gw`, in this era.
    pub(crate) fn client_config(&self, era: &str) -> String {
        config(json!({ "gw": { "url": self.url, "era": era } }))
            .display()
            .to_string()
    }

    /// SIGTERM, then the exit code (bounded).
    pub(crate) fn terminate(&mut self) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        wait::exited(
            "serve --http to exit after SIGTERM",
            PROCESS_BOUND,
            &mut self.child,
        )
        .code()
    }

    /// The stderr lines so far.
    pub(crate) fn stderr(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// SIGTERM, then the exit code and every stderr line up to the end of the stream
    /// (each line waited for within [`PROCESS_BOUND`]): the whole log, including what
    /// was written just before the exit.
    pub(crate) fn terminate_for_log(&mut self) -> (Option<i32>, Vec<String>) {
        let code = self.terminate();
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(PROCESS_BOUND) {
            lines.push(line);
        }
        (code, lines)
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture_config(name: &str) -> std::path::PathBuf {
    config(json!({ "fx": fixture_entry(&["--name", name]) }))
}

#[test]
fn our_client_lists_and_calls_through_serve_http_in_both_eras() {
    let gateway = HttpGateway::start(&fixture_config("fx-eras"), &[], &[]);
    let mut lines = Vec::new();
    for era in ["modern", "legacy"] {
        let client = gateway.client_config(era);
        let tools = switchboard(&["tools", "--config", &client]);
        assert_eq!(tools.code, 0, "{}", tools.stderr);
        lines.push(format!(
            "{era}: {}",
            tools.stdout.lines().next().unwrap_or("")
        ));
        let call = switchboard(&[
            "call",
            "--config",
            &client,
            "gw",
            "fx__echo",
            r#"{"text":"hi"}"#,
        ]);
        assert_eq!(call.code, 0, "{}", call.stderr);
        lines.push(format!("{era} call: {}", call.stdout.trim()));
    }
    expect![[r#"
        modern: gw: 6 tools (protocol 2026-07-28, modern era, server switchboard 0.1.0)
        modern call: hi
        legacy: gw: 6 tools (protocol 2025-11-25, legacy era, server switchboard 0.1.0)
        legacy call: hi"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn check_passes_against_serve_http_in_both_eras() {
    let gateway = HttpGateway::start(&fixture_config("fx-check"), &[], &[]);
    let mut lines = Vec::new();
    for era in ["modern", "legacy"] {
        let run = switchboard(&["check", "--config", &gateway.client_config(era), "--json"]);
        let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("a JSON report");
        let checks = report
            .pointer("/servers/0/checks")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        for check in checks {
            let id = check["id"].as_str().unwrap_or("?");
            lines.push(format!(
                "{era}: {id} {}",
                check["status"].as_str().unwrap_or("?")
            ));
        }
    }
    expect![[r#"
        modern: initialize pass
        modern: protocol-version pass
        modern: capabilities pass
        modern: stdout-purity skip
        modern: tools-list pass
        modern: pagination pass
        modern: tool-names pass
        modern: input-schemas pass
        modern: no-credentials pass
        modern: tools-call pass
        modern: results-bounded pass
        modern: invalid-input pass
        modern: errors-actionable pass
        modern: unknown-tool pass
        modern: response-ids pass
        modern: notifications-not-responses pass
        modern: wire-schema pass
        modern: progress pass
        modern: cancellation pass
        modern: reconnect pass
        modern: shutdown pass
        modern: utilities pass
        modern: prompts-resources pass
        modern: http-origin pass
        modern: http-session skip
        modern: http-responses pass
        modern: sse-priming skip
        modern: http-notifications pass
        modern: discover pass
        modern: request-meta pass
        modern: unsupported-version pass
        modern: http-headers pass
        modern: param-headers pass
        modern: removed-methods pass
        modern: cache-hints pass
        modern: input-required skip
        modern: subscriptions-listen pass
        modern: unknown-resource pass
        modern: error-codes pass
        legacy: initialize pass
        legacy: protocol-version pass
        legacy: capabilities pass
        legacy: stdout-purity skip
        legacy: tools-list pass
        legacy: pagination pass
        legacy: tool-names pass
        legacy: input-schemas pass
        legacy: no-credentials pass
        legacy: tools-call pass
        legacy: results-bounded pass
        legacy: invalid-input pass
        legacy: errors-actionable pass
        legacy: unknown-tool pass
        legacy: response-ids pass
        legacy: notifications-not-responses pass
        legacy: wire-schema pass
        legacy: progress skip
        legacy: cancellation pass
        legacy: reconnect pass
        legacy: shutdown pass
        legacy: utilities pass
        legacy: prompts-resources pass
        legacy: http-origin pass
        legacy: http-session pass
        legacy: http-responses pass
        legacy: sse-priming skip
        legacy: http-notifications skip
        legacy: discover skip
        legacy: request-meta skip
        legacy: unsupported-version skip
        legacy: http-headers skip
        legacy: param-headers skip
        legacy: removed-methods skip
        legacy: cache-hints skip
        legacy: input-required skip
        legacy: subscriptions-listen skip
        legacy: unknown-resource skip
        legacy: error-codes skip"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn a_bearer_token_is_required_when_configured() {
    let unset = switchboard_with_env(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--bearer-token-env",
            "SB_TEST_TOKEN_UNSET",
        ],
        &[],
    );
    let gateway = HttpGateway::start(
        &fixture_config("fx-token"),
        &["--bearer-token-env", "SB_TEST_TOKEN"],
        &[("SB_TEST_TOKEN", "tok-123")],
    );
    let with_token = config(json!({ "gw": {
        "url": gateway.url, "era": "modern", "headers": {"Authorization": "Bearer tok-123"}
    }}));
    let listed = switchboard(&["tools", "--config", &with_token.display().to_string()]);
    let without = switchboard(&["tools", "--config", &gateway.client_config("modern")]);
    let lines = [
        format!(
            "unset variable: exit {}: {}",
            unset.code,
            unset.stderr.trim()
        ),
        format!("with the token: exit {}", listed.code),
        format!("without: exit {}", without.code),
    ];
    expect![[r#"
        unset variable: exit 2: switchboard: --bearer-token-env SB_TEST_TOKEN_UNSET: the environment variable `SB_TEST_TOKEN_UNSET` is not set or is empty; set it to the token clients must send
        with the token: exit 0
        without: exit 3"#]].assert_eq(&lines.join("\n"));
    assert!(
        gateway
            .stderr()
            .iter()
            .all(|line| !line.contains("tok-123"))
    );
}

#[test]
fn a_public_address_without_a_token_is_warned_about() {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails after the warning.
    let run = switchboard(&[
        "serve",
        "--http",
        "192.0.2.1:0",
        "--config",
        &fixture_config("fx-public").display().to_string(),
    ]);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.contains("server(s) ready"))
        .collect();
    expect![[r#"
        exit 5
        switchboard serve: warning: 192.0.2.1:0 is not a loopback address and neither --bearer-token-env nor --oauth-issuer is set: anyone who can reach it can use every configured server
        switchboard: cannot listen on 192.0.2.1:0: Cannot assign requested address (os error 99)"#]].assert_eq(&format!("exit {}\n{}", run.code, lines.join("\n")));
}

#[test]
fn an_address_in_use_is_the_systems_refusal_not_a_usage_error() {
    // The test holds the port: the gateway cannot listen on it, exits 5 (not 2, a usage
    // error) and names the address.
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = held.local_addr().expect("its address").to_string();
    let run = switchboard(&[
        "serve",
        "--http",
        &addr,
        "--config",
        &fixture_config("fx-in-use").display().to_string(),
    ]);
    let refusal = run
        .stderr
        .lines()
        .find(|line| line.starts_with("switchboard: "))
        .unwrap_or_default()
        .replace(&addr, "ADDR");
    expect!["exit 5: switchboard: cannot listen on ADDR: Address already in use (os error 98)"]
        .assert_eq(&format!("exit {}: {refusal}", run.code));
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_a_slow_call_and_leaves_no_server_behind() {
    let name = unique_name("http-drain");
    let mut gateway = HttpGateway::start(&fixture_config(&name), &[], &[]);
    let mut config = SessionConfig::new("gw");
    config.era = EraChoice::Modern;
    let session = within(
        "the handshake",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("gw", &gateway.url), config),
    )
    .await
    .expect("connected");
    let (progress, mut progressed) = tokio::sync::mpsc::channel(16);
    let options = CallOptions {
        timeout: Some(PROCESS_BOUND),
        progress: Some(progress),
        ..CallOptions::default()
    };
    let call = tokio::spawn(async move {
        session
            .call_tool(
                "fx__slow",
                Some(&json!({"duration_ms": 600_000, "steps": 600})),
                &options,
            )
            .await
            .map(|result| format!("{result:?}"))
            .map_err(|error| error.to_string())
    });
    within(
        "the slow call's first progress",
        TEST_DEADLINE,
        progressed.recv(),
    )
    .await
    .expect("progress");
    let code = tokio::task::spawn_blocking(move || gateway.terminate_for_log())
        .await
        .expect("terminated");
    let answered = within("the call's end", PROCESS_BOUND, call)
        .await
        .expect("no panic");
    let outcome = match &answered {
        Ok(_) => "answered".to_owned(),
        Err(error) => format!("failed: {error}"),
    };
    let stderr: Vec<String> = code
        .1
        .iter()
        .filter(|line| line.starts_with("switchboard serve:"))
        .cloned()
        .collect();
    expect![[r#"
        exit Some(0)
        call failed: server `gw` answered `tools/call` with an error: the server is shutting down; the request was cancelled unfinished (code -32603)
        switchboard serve: 1 of 1 server(s) ready
        switchboard serve: terminated; draining, then stopping the servers"#]].assert_eq(&format!(
        "exit {:?}\ncall {outcome}\n{}",
        code.0,
        stderr.join("\n")
    ));
    assert_none_left(&name);
}

// HTTP exhaustion: an attacker takes what it can of a shared resource (bounded in count),
// then a victim — another client, from another loopback address — must still get its
// answers, and `/healthz` must answer. No timing is asserted; every request has a bound.

/// Bound of each request of the exhaustion tests (a hang detector).
const REQUEST_BOUND: Duration = Duration::from_secs(20);

/// A client whose connections come from `source` (a loopback address of its own: another
/// client of the gateway).
pub(crate) fn client_from(source: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(REQUEST_BOUND)
        .local_address(source.parse::<std::net::IpAddr>().ok())
        .build()
        .expect("a client")
}

/// The gateway's base URL (`http://127.0.0.1:PORT`).
fn base_of(gateway: &HttpGateway) -> String {
    gateway
        .url()
        .strip_suffix("/mcp")
        .expect("an /mcp URL")
        .to_owned()
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "exhaustion", "version": "1"}}})
    .to_string()
}

/// A legacy `initialize`: the status and, when one was opened, the session id; the body.
pub(crate) async fn open_session(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("an answer to initialize");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    (status, session, body)
}

/// The victim's whole exchange: a session, `tools/list` in it, the tool names it got.
pub(crate) async fn victim_lists_tools(url: &str, token: Option<&str>) -> Vec<String> {
    let victim = client_from("127.0.0.2");
    let (status, session, body) = open_session(&victim, url, token).await;
    assert_eq!(status, 200, "the victim's initialize: {body}");
    let session = session.expect("the victim's session id");
    let mut request = victim
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let listed = request.send().await.expect("an answer to tools/list");
    assert_eq!(listed.status(), 200);
    let listed: serde_json::Value =
        serde_json::from_str(&listed.text().await.expect("a body")).expect("JSON");
    listed["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `/healthz` on a fresh connection from a third address, plain and in detail.
pub(crate) async fn health(base: &str) -> (String, serde_json::Value) {
    let checker = client_from("127.0.0.3");
    let plain = checker
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("/healthz answers")
        .text()
        .await
        .expect("a body");
    let detail = checker
        .get(format!("{base}/healthz?detail"))
        .send()
        .await
        .expect("/healthz?detail answers")
        .text()
        .await
        .expect("a body");
    (
        plain,
        serde_json::from_str(&detail).expect("the detail is JSON"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_opening_sessions_in_a_loop_leaves_room_for_others() {
    let gateway = HttpGateway::start(
        &fixture_config("fx-sessions"),
        &["--max-sessions", "64", "--max-sessions-per-client", "8"],
        &[],
    );
    let url = gateway.url().to_owned();
    let base = base_of(&gateway);
    within("the attack and the victim", PROCESS_BOUND, async {
        // 300 initializes on one keep-alive connection: many more than the server holds.
        let attacker = client_from("127.0.0.1");
        let mut statuses = std::collections::BTreeMap::new();
        for _ in 0..300 {
            let (status, _, _) = open_session(&attacker, &url, None).await;
            *statuses.entry(status).or_insert(0) += 1;
        }
        // It recycles its own idle sessions: never refused, never more than its share.
        assert_eq!(statuses, [(200, 300)].into_iter().collect());
        let tools = victim_lists_tools(&url, None).await;
        assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
        let (plain, detail) = health(&base).await;
        assert_eq!(plain, "ok\n");
        assert!(
            detail["current"]["sessions"].as_u64() <= Some(9),
            "{detail}"
        );
        assert!(
            detail["evicted"]["sessions"].as_u64() >= Some(292),
            "{detail}"
        );
        assert_eq!(detail["limits"]["max_sessions_per_client"], 8, "{detail}");
    })
    .await;
}

/// A `ping` in `session` from `client`: its HTTP status.
async fn ping_status(client: &reqwest::Client, url: &str, session: &str) -> u16 {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .body(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string())
        .send()
        .await
        .expect("an answer to ping")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_session_cap_the_least_recently_used_idle_session_is_ended() {
    let gateway = HttpGateway::start(&fixture_config("fx-cap"), &["--max-sessions", "4"], &[]);
    let url = gateway.url().to_owned();
    let base = base_of(&gateway);
    within("four sessions, a fifth, and pings", PROCESS_BOUND, async {
        // Four clients (addresses of their own: no client reaches its own cap), a session each.
        let mut sessions = Vec::new();
        for (name, address) in [
            ("a", "127.0.0.1"),
            ("b", "127.0.0.2"),
            ("c", "127.0.0.3"),
            ("d", "127.0.0.4"),
        ] {
            let client = client_from(address);
            let (status, session, body) = open_session(&client, &url, None).await;
            assert_eq!(status, 200, "{name}'s initialize: {body}");
            sessions.push((name, client, session.expect("a session id")));
        }
        // `a` is used again: `b` is now the least recently used.
        let (_, a, a_session) = &sessions[0];
        assert_eq!(ping_status(a, &url, a_session).await, 200);
        let newcomer = client_from("127.0.0.5");
        let (status, session, body) = open_session(&newcomer, &url, None).await;
        assert_eq!(status, 200, "the fifth initialize: {body}");
        sessions.push(("e", newcomer, session.expect("a session id")));
        let mut lines = Vec::new();
        for (name, client, session) in &sessions {
            lines.push(format!(
                "{name}: {}",
                ping_status(client, &url, session).await
            ));
        }
        let (_, detail) = health(&base).await;
        lines.push(format!(
            "open {}, evicted {}",
            detail["current"]["sessions"], detail["evicted"]["sessions"]
        ));
        expect![[r#"
            a: 200
            b: 404
            c: 200
            d: 200
            e: 200
            open 4, evicted 1"#]]
        .assert_eq(&lines.join("\n"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holding_get_streams_leaves_room_for_others() {
    let gateway = HttpGateway::start(
        &fixture_config("fx-streams"),
        &[
            "--max-sessions",
            "64",
            "--max-connections",
            "64",
            "--max-sessions-per-client",
            "16",
            "--max-streams-per-client",
            "8",
            "--max-connections-per-client",
            "24",
        ],
        &[],
    );
    let url = gateway.url().to_owned();
    let base = base_of(&gateway);
    within("the attack and the victim", PROCESS_BOUND, async {
        // 200 sessions, each with its GET stream held open (each on a connection of its
        // own): the attacker keeps what it gets.
        let attacker = client_from("127.0.0.1");
        let mut held = Vec::new();
        let mut refusals = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let (status, session, body) = open_session(&attacker, &url, None).await;
            let Some(session) = session else {
                refusals.insert(format!("initialize {status}: {}", limit_named(&body)));
                continue;
            };
            let stream = attacker
                .get(&url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &session)
                .send()
                .await
                .expect("an answer to the GET");
            if stream.status() == 200 {
                held.push(stream);
            } else {
                let status = stream.status().as_u16();
                let retry = stream.headers().contains_key("retry-after");
                let body = stream.text().await.unwrap_or_default();
                refusals.insert(format!(
                    "GET {status} (Retry-After: {retry}): {}",
                    limit_named(&body)
                ));
            }
        }
        assert_eq!(held.len(), 8, "the attacker holds its share of streams");
        assert_eq!(
            refusals.into_iter().collect::<Vec<_>>(),
            ["GET 429 (Retry-After: true): max_streams_per_client"]
        );
        // The victim opens a session, its own GET stream, and is answered.
        let victim = client_from("127.0.0.2");
        let (status, session, _) = open_session(&victim, &url, None).await;
        assert_eq!(status, 200);
        let stream = victim
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session.expect("a session"))
            .send()
            .await
            .expect("the victim's GET stream");
        assert_eq!(stream.status(), 200);
        let tools = victim_lists_tools(&url, None).await;
        assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
        let (plain, detail) = health(&base).await;
        assert_eq!(plain, "ok\n");
        assert_eq!(
            detail["refused"]["max_streams_per_client"].as_u64(),
            Some(192),
            "{detail}"
        );
        drop(held);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_filling_requests_in_flight_leaves_room_for_others() {
    let gateway = HttpGateway::start(
        &fixture_config("fx-in-flight"),
        &["--max-in-flight", "8", "--max-in-flight-per-client", "4"],
        &[],
    );
    let url = gateway.url().to_owned();
    let base = base_of(&gateway);
    within("the attack and the victim", PROCESS_BOUND, async {
        // Eight long calls, each in a session of its own (under the per-session cap): the
        // attacker's share is four; the rest are refused, and the server keeps room.
        let attacker = client_from("127.0.0.1");
        let mut calls = Vec::new();
        for sent in 1..=8 {
            let (status, session, body) = open_session(&attacker, &url, None).await;
            assert_eq!(status, 200, "{body}");
            let call = attacker
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", session.expect("a session"))
                .body(
                    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                        "name": "fx__slow", "arguments": {"duration_ms": 600_000}}})
                    .to_string(),
                )
                .send();
            calls.push(tokio::spawn(call));
            // Each call is in flight or refused before the next is sent.
            wait::until_async(
                &format!("call {sent} to be in flight or refused"),
                TEST_DEADLINE,
                || async {
                    let (_, detail) = health(&base).await;
                    let counted = detail["current"]["requests_in_flight"]
                        .as_u64()
                        .unwrap_or(0)
                        + detail["refused"]["max_in_flight_per_client"]
                            .as_u64()
                            .unwrap_or(0);
                    counted >= sent
                },
            )
            .await;
        }
        let (_, detail) = health(&base).await;
        assert_eq!(detail["current"]["requests_in_flight"], 4, "{detail}");
        assert_eq!(detail["refused"]["max_in_flight_per_client"], 4, "{detail}");
        // The first four are in flight; the last four were refused.
        let mut refusals = std::collections::BTreeSet::new();
        for call in calls.split_off(4) {
            let answer = call.await.expect("no panic").expect("an answer");
            let status = answer.status().as_u16();
            let body = answer.text().await.unwrap_or_default();
            refusals.insert(format!("{status}: {}", limit_named(&body)));
        }
        assert_eq!(
            refusals.into_iter().collect::<Vec<_>>(),
            ["429: max_in_flight_per_client"]
        );
        // The victim is served beside them.
        let tools = victim_lists_tools(&url, None).await;
        assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
        for call in calls {
            call.abort();
        }
    })
    .await;
}

/// The limit a refusal's JSON-RPC error names (`data.limit`).
pub(crate) fn limit_named(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|error| error.pointer("/error/data/limit").cloned())
        .and_then(|limit| limit.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("no limit named in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_that_never_authenticate_do_not_starve_clients_that_do() {
    let gateway = HttpGateway::start(
        &fixture_config("fx-slowloris"),
        &[
            "--bearer-token-env",
            "EXHAUSTION_TOKEN",
            "--max-connections",
            "64",
        ],
        &[("EXHAUSTION_TOKEN", "s3cret-victim")],
    );
    let url = gateway.url().to_owned();
    let base = base_of(&gateway);
    let address = base.trim_start_matches("http://").to_owned();
    within("the attack and the victim", PROCESS_BOUND, async {
        // 300 sockets (far more than the connection cap) that send half a request head
        // and then nothing, kept open.
        let mut sockets = Vec::new();
        for _ in 0..300 {
            let mut socket = tokio::net::TcpStream::connect(&address)
                .await
                .expect("connected");
            tokio::io::AsyncWriteExt::write_all(
                &mut socket,
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",
            )
            .await
            .expect("written");
            sockets.push(socket);
        }
        // Twenty authenticated exchanges, each on a fresh connection: every one answered.
        for _ in 0..20 {
            let tools = victim_lists_tools(&url, Some("s3cret-victim")).await;
            assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
        }
        let (plain, detail) = health(&base).await;
        assert_eq!(plain, "ok\n");
        assert!(
            detail["evicted"]["unauthenticated_connections"].as_u64() >= Some(284),
            "{detail}"
        );
        assert!(
            detail["current"]["unauthenticated_connections"].as_u64() <= Some(18),
            "{detail}"
        );
        // The operator is told which limit closed them and how to raise it, once for the
        // whole flood (not a line per connection).
        let mut lines = Vec::new();
        while !lines
            .iter()
            .any(|line: &String| line.contains("--max-unauthenticated-per-client"))
        {
            lines.extend(gateway.stderr());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        lines.extend(gateway.stderr());
        let told: Vec<&String> = lines
            .iter()
            .filter(|line| line.contains("had sent no request yet"))
            .collect();
        assert_eq!(told.len(), 1, "{lines:#?}");
        assert!(
            told[0].contains("the limit max_unauthenticated_per_client"),
            "{told:?}"
        );
        drop(sockets);
    })
    .await;
}
