//! `switchboard serve --http` under a flood, as real processes: a named client sending
//! tens of thousands of requests over a few keep-alive connections past
//! `--requests-per-second-per-client` gets 429 with `Retry-After` while another named
//! client keeps being served; a flood of wrong bearer tokens (each a new one) and of
//! sessions opened and abandoned is refused or evicted. In both, the gateway's resident
//! memory (`VmRSS` in `/proc/PID/status`) after ten times the warm-up's requests stays
//! within a stated bound of what it was after the warm-up: a size assertion, not a timed
//! one. The floods are bounded in count, and each in time by a hang detector.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::wait::within;

use crate::serve_http::{HttpGateway, health, open_session};
use crate::{fixture_entry, resident_bytes, scratch_dir};

const ALICE_TOKEN: &str = "flood-alice-token-0123456789abcdef";
const BOB_TOKEN: &str = "flood-bob-token-0123456789abcdef";

/// Requests of the warm-up; the flood sends ten times as many.
const WARM_UP: usize = 2_000;

/// Keep-alive connections the flooder sends on at once.
const CONNECTIONS: usize = 4;

/// How much the gateway's resident memory may grow from the warm-up to the flood's end.
const GROWTH_BOUND: u64 = 8 * 1024 * 1024;

/// Longest a whole flood may take (a hang detector, not a speed assertion).
const FLOOD_BOUND: Duration = Duration::from_secs(300);

/// A config with the fixture server `fx` and the named clients alice and bob (their
/// tokens from the environment [`tokens`] gives).
fn two_clients_config(name: &str) -> PathBuf {
    let path = scratch_dir(name).join("mcp.json");
    let text = json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "clients": {
            "alice": { "token": "${SB_FLOOD_ALICE}" },
            "bob": { "token": "${SB_FLOOD_BOB}" }
        }
    });
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

fn tokens() -> [(&'static str, &'static str); 2] {
    [("SB_FLOOD_ALICE", ALICE_TOKEN), ("SB_FLOOD_BOB", BOB_TOKEN)]
}

/// A client for the flood: at most [`CONNECTIONS`] idle connections kept alive.
fn flood_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(CONNECTIONS)
        .build()
        .expect("a client")
}

/// What a flood got: the count of each status, and the last `Retry-After` of a 429.
#[derive(Default)]
struct Answers {
    statuses: BTreeMap<u16, usize>,
    retry_after: Option<String>,
}

impl Answers {
    fn add(&mut self, other: Answers) {
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_insert(0) += count;
        }
        self.retry_after = other.retry_after.or(self.retry_after.take());
    }

    fn count(&self, status: u16) -> usize {
        self.statuses.get(&status).copied().unwrap_or(0)
    }
}

/// The `n`th request of a flood, to be sent by this client to this URL.
type Request = Arc<dyn Fn(&reqwest::Client, &str, usize) -> reqwest::RequestBuilder + Send + Sync>;

/// Sends `count` requests made by `request`, [`CONNECTIONS`] at a time (each sender one
/// request after another on its keep-alive connection); what they got.
async fn flood(client: &reqwest::Client, url: &str, count: usize, request: &Request) -> Answers {
    let mut senders = tokio::task::JoinSet::new();
    for sender in 0..CONNECTIONS {
        let client = client.clone();
        let url = url.to_owned();
        let request = Arc::clone(request);
        senders.spawn(async move {
            let mut answers = Answers::default();
            for n in (sender..count).step_by(CONNECTIONS) {
                let answer = request(&client, &url, n).send().await.expect("an answer");
                let status = answer.status().as_u16();
                if status == 429 {
                    answers.retry_after = answer
                        .headers()
                        .get("retry-after")
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned);
                }
                // The body is read, so the connection is kept for the next request.
                let _ = answer.bytes().await;
                *answers.statuses.entry(status).or_insert(0) += 1;
            }
            answers
        });
    }
    let mut answers = Answers::default();
    while let Some(sent) = senders.join_next().await {
        answers.add(sent.expect("no sender panicked"));
    }
    answers
}

/// A legacy `tools/list` POST in `session`, with `token`, its JSON-RPC id `id` (requests in
/// flight at once in a session must not share one).
fn tools_list(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    token: &str,
    id: usize,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .bearer_auth(token)
        .body(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string())
}

/// The tool names a `tools/list` in `session` gets (its status must be 200).
async fn listed_tools(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    token: &str,
) -> Vec<String> {
    let answer = tools_list(client, url, session, token, 2)
        .send()
        .await
        .expect("an answer to tools/list");
    assert_eq!(answer.status(), 200, "the served client's tools/list");
    let listed: Value = serde_json::from_str(&answer.text().await.expect("a body")).expect("JSON");
    listed["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// A session of the named client with `token`: its id.
async fn session_of(client: &reqwest::Client, url: &str, token: &str) -> String {
    let (status, session, body) = open_session(client, url, Some(token)).await;
    assert_eq!(status, 200, "initialize: {body}");
    session.expect("a session id")
}

/// The gateway's resident memory, in bytes (it must be readable).
fn resident(gateway: &HttpGateway) -> u64 {
    let bytes = resident_bytes(gateway.pid());
    assert!(bytes > 0, "the gateway's VmRSS is readable");
    bytes
}

fn assert_grew_at_most(warm: u64, flooded: u64) {
    assert!(
        flooded <= warm + GROWTH_BOUND,
        "resident memory grew from {} KiB after the warm-up to {} KiB after ten times as \
         many requests, more than {} KiB",
        warm / 1024,
        flooded / 1024,
        GROWTH_BOUND / 1024
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_client_gets_429_another_is_served_and_memory_stays_flat() {
    // One request a second, twenty at once: bob's dozen requests fit his bucket whatever
    // the speed; alice's flood is far past hers.
    let gateway = HttpGateway::start(
        &two_clients_config("flood-rate"),
        &[
            "--requests-per-second-per-client",
            "1",
            "--request-burst-per-client",
            "20",
        ],
        &tokens(),
    );
    let url = gateway.url().to_owned();
    within("the flood and the served client", FLOOD_BOUND, async {
        let client = flood_client();
        let alice = session_of(&client, &url, ALICE_TOKEN).await;
        let bob_client = flood_client();
        let bob = session_of(&bob_client, &url, BOB_TOKEN).await;
        let request: Request = Arc::new(move |client: &reqwest::Client, url: &str, n| {
            tools_list(client, url, &alice, ALICE_TOKEN, n + 2)
        });
        let mut answers = flood(&client, &url, WARM_UP, &request).await;
        let warm = resident(&gateway);
        // Ten rounds of the warm-up's size; bob is served after each.
        for _ in 0..10 {
            answers.add(flood(&client, &url, WARM_UP, &request).await);
            let tools = listed_tools(&bob_client, &url, &bob, BOB_TOKEN).await;
            assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
        }
        let flooded = resident(&gateway);
        assert_grew_at_most(warm, flooded);
        // Every answer is served or refused; a refusal says when to retry. Alice's bucket
        // lets through at most its twenty and one a second of the flood's bounded time.
        let sent = 11 * WARM_UP;
        assert_eq!(
            answers.count(200) + answers.count(429),
            sent,
            "{:?}",
            answers.statuses
        );
        assert!(
            answers.count(429) >= sent - 20 - 300,
            "{:?}",
            answers.statuses
        );
        let retry_after: u64 = answers
            .retry_after
            .as_deref()
            .and_then(|value| value.parse().ok())
            .expect("a Retry-After in seconds");
        assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_and_abandoned_sessions_in_floods_leave_memory_flat() {
    let gateway = HttpGateway::start(&two_clients_config("flood-identities"), &[], &tokens());
    let url = gateway.url().to_owned();
    within("the floods", FLOOD_BOUND, async {
        let client = flood_client();
        // Each request a token never seen before, each refused.
        let wrong_token: Request = Arc::new(|client: &reqwest::Client, url: &str, n: usize| {
            client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .bearer_auth(format!("wrong-token-{n:020}"))
                .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        });
        // Each request a session opened by alice and never used again.
        let abandoned: Request = Arc::new(|client: &reqwest::Client, url: &str, _| {
            client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .bearer_auth(ALICE_TOKEN)
                .body(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "abandoner", "version": "1"}}})
                    .to_string(),
                )
        });
        let mut refused = flood(&client, &url, WARM_UP, &wrong_token).await;
        let mut opened = flood(&client, &url, WARM_UP / 4, &abandoned).await;
        let warm = resident(&gateway);
        for _ in 0..10 {
            refused.add(flood(&client, &url, WARM_UP, &wrong_token).await);
            opened.add(flood(&client, &url, WARM_UP / 4, &abandoned).await);
        }
        let flooded = resident(&gateway);
        assert_grew_at_most(warm, flooded);
        let summary = format!(
            "wrong tokens: {:?}\nabandoned sessions: {:?}",
            refused.statuses, opened.statuses
        );
        expect_test::expect![[r#"
            wrong tokens: {401: 22000}
            abandoned sessions: {200: 5500}"#]]
        .assert_eq(&summary);
        // Alice's abandoned sessions were evicted at her share (64 by default).
        let (_, detail) = health(url.strip_suffix("/mcp").expect("an /mcp URL")).await;
        assert!(
            detail["current"]["sessions"].as_u64() <= Some(64),
            "{detail}"
        );
        // Bob is served after both floods.
        let bob_client = flood_client();
        let bob = session_of(&bob_client, &url, BOB_TOKEN).await;
        let tools = listed_tools(&bob_client, &url, &bob, BOB_TOKEN).await;
        assert!(tools.contains(&"fx__echo".to_owned()), "{tools:?}");
    })
    .await;
}
