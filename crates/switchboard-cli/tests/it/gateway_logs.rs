//! A server's log message that cannot be tied to one call reaches only the clients of the
//! one identity it can only be about. The server logs each call with its arguments
//! (`--log-arguments`); client A has a long call in flight when client B's call is logged,
//! so the upstream session cannot tell whose it is. With `serve --http` and no credentials,
//! clients are known by their address: from 127.0.0.2, .3 and .4 they are three identities,
//! and bystander C (and A) must not hear B's query, which goes to the operator's log
//! instead; from one address they are one identity (one user), and every session that set a
//! log level hears it, as before. C's event stream is read up to a `tools/list_changed`
//! that comes after B's call, so an absence is observed, not waited for.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::serve_http::HttpGateway;
use crate::{config, fixture_entry};

const PROTOCOL: &str = "2025-11-25";
const B_QUERY: &str = "the private query of B";

/// A legacy session of the gateway, from one source address.
struct Client {
    http: reqwest::Client,
    url: String,
    session: String,
}

impl Client {
    /// `initialize`, `notifications/initialized` and `logging/setLevel debug`, from `source`.
    async fn open(url: &str, source: Ipv4Addr) -> Client {
        let http = reqwest::Client::builder()
            .local_address(IpAddr::V4(source))
            .build()
            .expect("a client");
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": format!("client-{source}"), "version": "1"},
            },
        });
        let answer = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string())
            .send()
            .await
            .expect("initialize is answered");
        assert_eq!(answer.status(), 200, "initialize from {source}");
        let session = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let client = Client {
            http,
            url: url.to_owned(),
            session,
        };
        client
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        let level = client
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}))
            .await;
        assert_eq!(level.status(), 200);
        client
    }

    async fn post(&self, message: &Value) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .body(message.to_string())
            .send()
            .await
            .expect("the gateway answers")
    }

    async fn call(&self, id: u64, tool: &str, arguments: Value) -> reqwest::Response {
        self.post(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }))
        .await
    }

    /// The session's GET stream.
    async fn events(&self) -> reqwest::Response {
        let stream = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .send()
            .await
            .expect("the GET stream opens");
        assert_eq!(stream.status(), 200);
        stream
    }
}

/// What a response stream carried until `marker` (bounded by the test deadline).
async fn read_until(response: &mut reqwest::Response, marker: &str) -> String {
    let mut seen = String::new();
    within(&format!("`{marker}` on a stream"), TEST_DEADLINE, async {
        while !seen.contains(marker) {
            match response.chunk().await {
                Ok(Some(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                _ => break,
            }
        }
    })
    .await;
    seen
}

/// What A, B and C (from these addresses) hear of B's query, and the operator's log.
async fn who_hears_b(addresses: [Ipv4Addr; 3]) -> (Vec<String>, String) {
    let path = config(json!({ "fx": fixture_entry(&["--log-arguments"]) }));
    let gateway = HttpGateway::start(&path, &[], &[("SWITCHBOARD_LOG", "info")]);
    let url = gateway.url().to_owned();
    let [a, b, c] = addresses;
    let (a, b, c) = (
        Client::open(&url, a).await,
        Client::open(&url, b).await,
        Client::open(&url, c).await,
    );
    let a_events = a.events().await;
    let c_events = c.events().await;
    // A's long call: its own log message comes on its stream (the only call in flight),
    // which shows the server is working on it.
    let mut a_call = a
        .call(2, "fx__slow", json!({"duration_ms": 600_000, "steps": 1}))
        .await;
    let working = r#"processing \"slow\""#;
    let a_heard = read_until(&mut a_call, working).await;
    assert!(a_heard.contains(working), "A's call: {a_heard}");
    let mut b_call = b.call(2, "fx__echo", json!({"text": B_QUERY})).await;
    let b_answer = read_until(&mut b_call, "\"result\"").await;
    assert!(b_answer.contains(B_QUERY), "B's own answer: {b_answer}");
    // After B's call: a list change every session hears.
    let mut changed = c.call(3, "fx__change_tools", json!({})).await;
    read_until(&mut changed, "\"result\"").await;
    let mut heard = Vec::new();
    for (who, mut events) in [("A's events", a_events), ("C's events", c_events)] {
        let seen = read_until(&mut events, "notifications/tools/list_changed").await;
        assert!(seen.contains("list_changed"), "{who}: {seen}");
        heard.push(format!("{who}: {}", seen.contains(B_QUERY)));
    }
    drop(a_call);
    let log = tokio::task::spawn_blocking(move || gateway.stderr().join("\n"))
        .await
        .expect("the log");
    (heard, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_identitys_query_in_a_servers_log_reaches_only_the_operator() {
    let (heard, log) = who_hears_b([
        Ipv4Addr::new(127, 0, 0, 2),
        Ipv4Addr::new(127, 0, 0, 3),
        Ipv4Addr::new(127, 0, 0, 4),
    ])
    .await;
    expect_test::expect![[r#"
        A's events: false
        C's events: false"#]]
    .assert_eq(&heard.join("\n"));
    assert!(
        log.contains("kept from the clients") && log.contains(B_QUERY),
        "the operator's log has B's query:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_identitys_sessions_all_hear_its_servers_log() {
    let one = Ipv4Addr::new(127, 0, 0, 5);
    let (heard, _) = who_hears_b([one, one, one]).await;
    expect_test::expect![[r#"
        A's events: true
        C's events: true"#]]
    .assert_eq(&heard.join("\n"));
}
