//! Two `switchboard serve --http` instances behind HAProxy (Debian's, installed by
//! `scripts/peers.sh`), configured as `docs/deploy.md` shows: round robin, and for legacy
//! sessions stickiness learned from the `Mcp-Session-Id` response header. 1000 tool calls in
//! each era go through the balancer as raw HTTP requests (a client library that starts a
//! new session on 404 would hide a routing mistake): every call is answered, and HAProxy's
//! own counters show that both instances served each era.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::locate::{peer_path, workspace_root};
use switchboard_testkit::wait::{self, within};

use crate::{config, fixture_entry};

/// Calls per era.
const CALLS: usize = 1000;
/// Legacy sessions the calls are spread over (each pinned to one instance).
const SESSIONS: usize = 10;
/// Modern calls in flight at once.
const CONCURRENCY: usize = 8;
/// The whole test, start to end.
const DEADLINE: Duration = Duration::from_secs(120);

/// A process killed (and reaped) when dropped.
pub(crate) struct Owned(pub(crate) Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines a process wrote to stderr so far (a thread keeps reading them).
pub(crate) type StderrLines = Arc<Mutex<Vec<String>>>;

/// `switchboard serve --http 127.0.0.1:0` with `extra` flags; returns the process, its port
/// (from the `listening on` line of its stderr) and every stderr line, which a thread keeps
/// draining.
fn gateway(config: &Path, extra: &[&str]) -> (Owned, u16, StderrLines) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(config)
        .args(extra)
        .env(crate::NO_ERA_MEMO.0, crate::NO_ERA_MEMO.1)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start serve --http");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = StderrLines::default();
    let kept = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port.parse::<u16>().ok());
            }
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
        }
    });
    let owned = Owned(child);
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .ok()
        .flatten()
        .expect("serve --http said where it listens");
    (owned, port, lines)
}

/// A port free a moment ago (for HAProxy's frontend, which cannot report one it picked).
pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn haproxy_config(folder: &Path, frontend: u16, a: u16, b: u16) -> PathBuf {
    let socket = folder.join("haproxy.sock");
    let text = format!(
        "global\n    stats socket {socket} level user\n\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 5m\n    \
         timeout server 5m\n    timeout http-request 10s\n\n\
         frontend mcp\n    bind 127.0.0.1:{frontend}\n    default_backend gateways\n\n\
         backend gateways\n    balance roundrobin\n    \
         stick-table type string len 128 size 100k expire 35m\n    \
         stick store-response res.hdr(Mcp-Session-Id)\n    \
         stick match req.hdr(Mcp-Session-Id)\n    \
         option httpchk GET /healthz\n    http-check expect status 200\n    \
         server a 127.0.0.1:{a} check inter 1s fall 2 rise 1\n    \
         server b 127.0.0.1:{b} check inter 1s fall 2 rise 1\n",
        socket = socket.display()
    );
    let path = folder.join("haproxy.cfg");
    std::fs::write(&path, text).expect("write haproxy.cfg");
    path
}

/// HAProxy's per-server counters (`show stat`): for servers `a` and `b`, the status and the
/// number of 2xx answers.
fn server_stats(socket: &Path) -> BTreeMap<String, (String, u64)> {
    let mut stream = UnixStream::connect(socket).expect("the stats socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    stream.write_all(b"show stat\n").expect("ask");
    let mut csv = String::new();
    stream.read_to_string(&mut csv).expect("read stats");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let (server, status, ok) = (column("svname"), column("status"), column("hrsp_2xx"));
    let mut stats = BTreeMap::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.first() == Some(&"gateways")
            && let Some(name @ ("a" | "b")) = fields.get(server).copied()
        {
            let answered = fields.get(ok).and_then(|n| n.parse().ok()).unwrap_or(0);
            let state = fields.get(status).copied().unwrap_or("").to_owned();
            stats.insert(name.to_owned(), (state, answered));
        }
    }
    stats
}

/// The JSON-RPC response in an answer body (JSON, or the last `data:` of an SSE stream).
fn response_of(content_type: &str, body: &str) -> Value {
    if content_type.starts_with("text/event-stream") {
        let data = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|data| data.contains("\"id\""))
            .unwrap_or("null");
        serde_json::from_str(data).unwrap_or(Value::Null)
    } else {
        serde_json::from_str(body).unwrap_or(Value::Null)
    }
}

/// POSTs one message; the status, the session id it carried back, and the response.
async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Option<String>, Value) {
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the balancer answers");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = response.text().await.unwrap_or_default();
    (status, session, response_of(&content_type, &text))
}

fn echo_call(id: usize, text: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "alpha__echo", "arguments": {"text": text}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The text of a tool result, or what came instead.
fn echoed(status: u16, response: &Value) -> String {
    match response
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
    {
        Some(text) if status == 200 => text.to_owned(),
        _ => format!("HTTP {status}: {response}"),
    }
}

async fn modern_calls(client: Arc<reqwest::Client>, url: Arc<str>) -> Vec<String> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..CONCURRENCY {
        let (client, url, meta) = (client.clone(), url.clone(), meta.clone());
        workers.spawn(async move {
            let mut wrong = Vec::new();
            for n in (worker..CALLS).step_by(CONCURRENCY) {
                let text = format!("modern {n}");
                let headers = [
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "alpha__echo"),
                ];
                let body = echo_call(n, &text, Some(meta.clone()));
                let (status, _, response) = post(&client, &url, &headers, &body).await;
                let got = echoed(status, &response);
                if got != text {
                    wrong.push(format!("call {n}: {got}"));
                }
            }
            wrong
        });
    }
    let mut wrong = Vec::new();
    while let Some(done) = workers.join_next().await {
        wrong.extend(done.expect("a worker"));
    }
    wrong
}

async fn legacy_session(
    client: Arc<reqwest::Client>,
    url: Arc<str>,
    session: usize,
) -> Vec<String> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "balanced-test", "version": "1"}}});
    let (status, id, _) = post(&client, &url, &[], &initialize).await;
    let Some(id) = id.filter(|_| status == 200) else {
        return vec![format!(
            "session {session}: initialize got HTTP {status} and no session id"
        )];
    };
    let headers = [
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&client, &url, &headers, &initialized).await;
    let mut wrong = Vec::new();
    if status != 202 {
        wrong.push(format!(
            "session {session}: notifications/initialized got HTTP {status}"
        ));
    }
    for n in (session..CALLS).step_by(SESSIONS) {
        let text = format!("legacy {n}");
        let (status, _, response) =
            post(&client, &url, &headers, &echo_call(n + 1, &text, None)).await;
        let got = echoed(status, &response);
        if got != text {
            wrong.push(format!("session {session} call {n}: {got}"));
        }
    }
    let ended = client
        .delete(&*url)
        .header("Mcp-Session-Id", id.as_str())
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .map(|r| r.status().as_u16());
    if !matches!(ended, Ok(200 | 202 | 204)) {
        wrong.push(format!("session {session}: DELETE got {ended:?}"));
    }
    wrong
}

async fn legacy_calls(client: Arc<reqwest::Client>, url: Arc<str>) -> Vec<String> {
    let mut sessions = tokio::task::JoinSet::new();
    for session in 0..SESSIONS {
        sessions.spawn(legacy_session(client.clone(), url.clone(), session));
    }
    let mut wrong = Vec::new();
    while let Some(done) = sessions.join_next().await {
        wrong.extend(done.expect("a session"));
    }
    wrong
}

/// 2xx answers per instance since `before`.
fn served_since(
    before: &BTreeMap<String, (String, u64)>,
    now: &BTreeMap<String, (String, u64)>,
) -> BTreeMap<String, u64> {
    now.iter()
        .map(|(name, (_, count))| {
            let earlier = before.get(name).map_or(0, |(_, c)| *c);
            (name.clone(), count.saturating_sub(earlier))
        })
        .collect()
}

/// Two gateways on one config behind HAProxy (session affinity by `Mcp-Session-Id`), both
/// seen up by its health checks: everything ends when it is dropped.
pub(crate) struct Balanced {
    _gateways: [Owned; 2],
    _balancer: Owned,
    folder: PathBuf,
    /// HAProxy's stats socket.
    pub(crate) socket: PathBuf,
    /// `http://127.0.0.1:PORT/mcp` at HAProxy's frontend.
    pub(crate) url: String,
    /// The counters when both gateways were first seen up.
    pub(crate) stats: BTreeMap<String, (String, u64)>,
    /// What each gateway (`a`, `b`) wrote to stderr so far.
    pub(crate) stderr: [StderrLines; 2],
}

impl Drop for Balanced {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

impl Balanced {
    pub(crate) fn start(path: &Path, name: &str) -> Balanced {
        Balanced::start_with(path, name, &[])
    }

    /// Like [`Balanced::start`], each gateway given the flags `extra` too.
    pub(crate) fn start_with(path: &Path, name: &str, extra: &[&str]) -> Balanced {
        let haproxy = peer_path("target/peers/debian/bin/haproxy");
        let folder = workspace_root()
            .join("target/cli-tests")
            .join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("mkdir");
        let (a, port_a, stderr_a) = gateway(path, extra);
        let (b, port_b, stderr_b) = gateway(path, extra);
        let frontend = free_port();
        let cfg = haproxy_config(&folder, frontend, port_a, port_b);
        let balancer = Owned(
            Command::new(&haproxy)
                .args(["-db", "-f"])
                .arg(&cfg)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start haproxy"),
        );
        let socket = folder.join("haproxy.sock");
        // HAProxy is up and its health checks found both instances (bounded wait).
        let stats = wait::until(
            "haproxy to see both gateways up",
            Duration::from_secs(30),
            || {
                let ready = TcpStream::connect(("127.0.0.1", frontend)).is_ok() && socket.exists();
                let stats = ready.then(|| server_stats(&socket))?;
                let up = stats.values().filter(|(status, _)| status == "UP").count();
                (up == 2).then_some(stats)
            },
        );
        Balanced {
            _gateways: [a, b],
            _balancer: balancer,
            folder,
            socket,
            url: format!("http://127.0.0.1:{frontend}/mcp"),
            stats,
            stderr: [stderr_a, stderr_b],
        }
    }

    /// 2xx answers per instance since the start.
    pub(crate) fn served(&self) -> BTreeMap<String, u64> {
        served_since(&self.stats, &server_stats(&self.socket))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_behind_haproxy_serve_both_eras() {
    let path = config(json!({"alpha": fixture_entry(&[])}));
    let balanced = Balanced::start(&path, "balanced");
    let (stats, socket, frontend_url) = (
        balanced.stats.clone(),
        balanced.socket.clone(),
        balanced.url.clone(),
    );
    let url: Arc<str> = Arc::from(frontend_url);
    let client = Arc::new(
        reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
    );
    let (modern, after_modern, legacy, after_legacy) =
        within("1000 calls per era", DEADLINE, async {
            let modern = modern_calls(client.clone(), url.clone()).await;
            let after_modern = server_stats(&socket);
            let legacy = legacy_calls(client.clone(), url.clone()).await;
            let after_legacy = server_stats(&socket);
            (modern, after_modern, legacy, after_legacy)
        })
        .await;
    assert!(
        modern.is_empty(),
        "modern calls not answered right: {modern:#?}"
    );
    assert!(
        legacy.is_empty(),
        "legacy calls not answered right: {legacy:#?}"
    );
    let modern_served = served_since(&stats, &after_modern);
    let legacy_served = served_since(&after_modern, &after_legacy);
    for (era, served) in [("modern", &modern_served), ("legacy", &legacy_served)] {
        assert!(
            served.len() == 2 && served.values().all(|count| *count > 0),
            "both instances serve {era} traffic: {served:?}"
        );
    }
}
