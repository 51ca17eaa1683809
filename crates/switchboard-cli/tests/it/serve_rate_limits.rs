//! `serve`'s rate limits, as real processes: a tool call over a `rateLimits` limit is
//! refused at once naming the limit and when to retry (stdio and HTTP), while tools the
//! limit does not count and other clients are still served; an HTTP client flooding the
//! endpoint past `--requests-per-second-per-client` gets 429 with `Retry-After` while
//! another is served; a bad `rateLimits` section stops `serve`. The limits are of the kind
//! "2 calls per 2h" so that no outcome depends on speed.

use std::path::PathBuf;

use serde_json::{Value, json};
use switchboard_session::{CallOptions, Session, SessionError};
use switchboard_testkit::locate::workspace_root;
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::serve::{GRACE, gateway_for};
use crate::serve_http::{HttpGateway, client_from, limit_named, open_session, victim_lists_tools};
use crate::serve_watch::{config_folder, replace};
use crate::support::stderr_with;
use crate::{fixture_entry, switchboard};

/// A config file with the fixture server `fx` and this `rateLimits` section.
fn limited_config(name: &str, rate_limits: Value) -> PathBuf {
    let dir = workspace_root().join("target").join("cli-tests");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(format!("rate-limits-{name}-{}.json", std::process::id()));
    let text = json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "rateLimits": rate_limits,
    });
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

/// Two echo calls per client per 2 hours; other tools are not counted.
fn two_echoes_per_client() -> Value {
    json!([{"name": "per-user", "per": "client", "calls": 2, "every": "2h", "tools": ["fx__echo"]}])
}

/// What a call got: `ok: TEXT`, or the JSON-RPC error with its data, the retry time masked
/// (it depends on when the call came).
fn outcome(got: Result<Value, SessionError>) -> String {
    match got {
        Ok(result) => format!(
            "ok: {}",
            result.pointer("/content/0/text").unwrap_or(&Value::Null)
        ),
        Err(SessionError::Rpc { error, .. }) => {
            let mut data = error.data.unwrap_or(Value::Null);
            let retry = data["retryAfterMs"].as_u64().unwrap_or(0);
            assert!(
                retry > 0 && retry <= 2 * 3600 * 1000,
                "retryAfterMs within the period: {data}"
            );
            data["retryAfterMs"] = json!("…");
            let message = masked_seconds(&error.message);
            format!("error {}: {message} {data}", error.code)
        }
        Err(other) => format!("failed: {other}"),
    }
}

/// `retry in 7200 s` → `retry in N s`.
fn masked_seconds(message: &str) -> String {
    match message.split_once("retry in ") {
        Some((before, after)) => {
            let rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{before}retry in N{rest}")
        }
        None => message.to_owned(),
    }
}

async fn call(session: &Session, tool: &str, arguments: Value) -> String {
    outcome(
        within(
            "tools/call",
            TEST_DEADLINE,
            session.call_tool_raw(tool, Some(&arguments), &CallOptions::default()),
        )
        .await,
    )
}

#[tokio::test]
async fn over_stdio_a_call_over_its_limit_is_refused_naming_the_limit() {
    let config = limited_config("stdio", two_echoes_per_client());
    let session = gateway_for(&config, &[]).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(call(&session, "fx__echo", json!({"text": "hi"})).await);
    }
    // A tool the limit does not count is still served.
    seen.push(call(&session, "fx__add", json!({"a": 1, "b": 2})).await);
    session.shutdown(GRACE).await;
    expect_test::expect![[r#"
        ok: "hi"
        ok: "hi"
        error -32009: rate limit `per-user` (2 calls per 2h): retry in N s {"limit":"per-user","retryAfterMs":"…"}
        ok: "3""#]]
    .assert_eq(&seen.join("\n"));
}

/// POSTs a JSON-RPC request in a legacy session; the answer's JSON (a JSON body, or the
/// last `data:` of an event stream) and the HTTP status.
async fn post_in_session(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    body: Value,
) -> (u16, Value) {
    let answer = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .body(body.to_string())
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap_or_default();
    let json = text
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

/// Three echo calls from `source` in one session: what each got.
async fn three_echoes(url: &str, source: &str) -> Vec<String> {
    let client = client_from(source);
    let (status, session, body) = open_session(&client, url, None).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let mut seen = Vec::new();
    for id in 2..5 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "fx__echo", "arguments": {"text": source}}});
        let (status, answer) = post_in_session(&client, url, &session, call).await;
        let got = match answer.get("error") {
            Some(error) => format!(
                "error {}: {}",
                error["code"],
                error["data"]["limit"].as_str().unwrap_or("no limit named")
            ),
            None => format!(
                "ok: {}",
                answer
                    .pointer("/result/content/0/text")
                    .unwrap_or(&Value::Null)
            ),
        };
        seen.push(format!("{status} {got}"));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_one_client_over_its_limit_leaves_another_served() {
    let gateway = HttpGateway::start(&limited_config("http", two_echoes_per_client()), &[], &[]);
    let url = gateway.url().to_owned();
    within("two clients' calls", TEST_DEADLINE, async {
        let first = three_echoes(&url, "127.0.0.1").await;
        let second = three_echoes(&url, "127.0.0.2").await;
        expect_test::expect![[r#"
            [
                "200 ok: \"127.0.0.1\"",
                "200 ok: \"127.0.0.1\"",
                "200 error -32009: per-user",
                "200 ok: \"127.0.0.2\"",
                "200 ok: \"127.0.0.2\"",
                "200 error -32009: per-user",
            ]
        "#]]
        .assert_debug_eq(&[first, second].concat());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_flood_from_one_client_gets_429_while_another_is_served() {
    let gateway = HttpGateway::start(
        &limited_config("flood", json!([])),
        &[
            "--requests-per-second-per-client",
            "1",
            "--request-burst-per-client",
            "2",
        ],
        &[],
    );
    let url = gateway.url().to_owned();
    within("the flood and the victim", TEST_DEADLINE, async {
        // The flooder sends until it is refused (its bucket holds two; it refills one a
        // second, far slower than requests come back to back).
        let flooder = client_from("127.0.0.1");
        let mut refused = None;
        for _ in 0..1000 {
            let answer = flooder.get(&url).send().await.expect("an answer");
            if answer.status().as_u16() == 429 {
                refused = Some(answer);
                break;
            }
        }
        let refused = refused.expect("the flood is refused");
        let retry_after: u64 = refused
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse().ok())
            .expect("a Retry-After in seconds");
        assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");
        let body = refused.text().await.unwrap_or_default();
        assert_eq!(
            limit_named(&body),
            "requests_per_second_per_client",
            "{body}"
        );
        // Another client has a bucket of its own: its initialize and tools/list pass.
        let tools = victim_lists_tools(&url, None).await;
        assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
    })
    .await;
}

#[tokio::test]
async fn a_reload_keeps_unchanged_limits_and_a_bad_section_keeps_those_in_force() {
    let path = config_folder("rate-limits-watch");
    let written = |rate_limits: Value| {
        json!({"mcpServers": { "fx": fixture_entry(&[]) }, "rateLimits": rate_limits}).to_string()
    };
    let kept = json!({"name": "echoes", "per": "client", "calls": 1, "every": "2h", "tools": ["fx__echo"]});
    let adds = |calls: u32| json!({"name": "adds", "per": "client", "calls": calls, "every": "2h", "tools": ["fx__add"]});
    std::fs::write(&path, written(json!([kept, adds(1)]))).expect("write config");
    let session = gateway_for(&path, &["--watch"]).await;
    let echo = || call(&session, "fx__echo", json!({"text": "hi"}));
    let add = || call(&session, "fx__add", json!({"a": 1, "b": 2}));
    let mut seen = vec![echo().await, echo().await, add().await, add().await];
    // `adds` redefined: its bucket starts full; `echoes` unchanged: its bucket stays empty.
    replace(&path, &written(json!([kept, adds(2)])));
    stderr_with(&session, "rate limits reloaded", 1).await;
    seen.extend([echo().await, add().await]);
    // A section that no longer reads keeps the limits in force.
    replace(
        &path,
        &written(json!([{"name": "echoes", "per": "everyone", "calls": 1, "every": "2h"}])),
    );
    let stderr = stderr_with(&session, "the rate limits in force stay", 1).await;
    seen.push(echo().await);
    session.shutdown(GRACE).await;
    expect_test::expect![[r#"
        ok: "hi"
        error -32009: rate limit `echoes` (1 call per 2h): retry in N s {"limit":"echoes","retryAfterMs":"…"}
        ok: "3"
        error -32009: rate limit `adds` (1 call per 2h): retry in N s {"limit":"adds","retryAfterMs":"…"}
        error -32009: rate limit `echoes` (1 call per 2h): retry in N s {"limit":"echoes","retryAfterMs":"…"}
        ok: "3"
        error -32009: rate limit `echoes` (1 call per 2h): retry in N s {"limit":"echoes","retryAfterMs":"…"}"#]]
    .assert_eq(&seen.join("\n"));
    let said: String = stderr
        .lines()
        .filter(|line| line.contains("rate limit"))
        .map(|line| line.replace(&path.display().to_string(), "<config>") + "\n")
        .collect();
    expect_test::expect![[r#"
        switchboard serve: rate limits: echoes (1 call per 2h per client, tools fx__echo), adds (1 call per 2h per client, tools fx__add)
        switchboard serve: rate limits reloaded (1 unchanged kept their counts, the rest start full): echoes (1 call per 2h per client, tools fx__echo), adds (2 calls per 2h per client, tools fx__add)
        switchboard serve: `rateLimits[0]` (`echoes`): `per` is "everyone": write "client" (each identity its own bucket) or "gateway" (one bucket for all); the rate limits in force stay
    "#]]
    .assert_eq(&said);
}

#[test]
fn a_bad_rate_limits_section_stops_serve_naming_the_limit() {
    let config = limited_config(
        "bad",
        json!([{"name": "per-user", "per": "user", "calls": 60, "every": "1m"}]),
    );
    let run = switchboard(&["serve", "--config", &config.display().to_string()]);
    expect_test::expect![[r#"
        exit 2: switchboard: not serving: `rateLimits[0]` (`per-user`): `per` is "user": write "client" (each identity its own bucket) or "gateway" (one bucket for all) (in CONFIG)
    "#]]
    .assert_eq(&format!(
        "exit {}: {}",
        run.code,
        run.stderr.replace(&config.display().to_string(), "CONFIG")
    ));
}
