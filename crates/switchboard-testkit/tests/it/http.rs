//! The fixture's HTTP front end (`--http`), spoken to with hand-written HTTP/1.1 over
//! std::net: URL on stdout, Origin validation, legacy sessions (400/404, DELETE), the
//! modern era's sessionless requests and cancellation by closing the response stream, and
//! exit when stdin closes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::wait;

const DEADLINE: Duration = Duration::from_secs(10);

/// The HTTP fixture as a child process; killed when dropped.
struct Front {
    child: Child,
    address: String,
    stderr: Arc<Mutex<String>>,
}

impl Front {
    fn start(args: &[&str]) -> Front {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard-fixture"))
            .arg("--http")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the HTTP fixture");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = sender.send(first);
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let capture = Arc::clone(&stderr);
        let mut pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    return;
                }
                let mut text = capture.lock().unwrap_or_else(PoisonError::into_inner);
                if text.len() < 64 * 1024 {
                    text.push_str(&String::from_utf8_lossy(&chunk[..n]));
                }
            }
        });
        let url = line.recv_timeout(DEADLINE).expect("the URL line");
        let address = url
            .trim()
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected URL line {url:?}"))
            .to_owned();
        Front {
            child,
            address,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.address).expect("connect");
        stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
        stream
    }

    /// Sends one request; returns the status, the headers (lowercase names) and the body.
    fn send(&self, method: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Answer {
        let mut stream = self.connect();
        write_request(&mut stream, method, headers, body);
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read the answer");
        parse_answer(&raw)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_request(
    stream: &mut TcpStream,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .expect("write the request");
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

fn parse_answer(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[test]
fn legacy_sessions_origin_validation_and_delete() {
    let front = Front::start(&[]);
    let foreign = front.send(
        "POST",
        &[("Origin", "http://evil.example")],
        Some(&initialize()),
    );
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let local = front.send(
        "POST",
        &[("Origin", "http://localhost:3000")],
        Some(&initialize()),
    );
    assert_eq!(local.status, 200, "{}", local.body);
    assert_eq!(local.json()["result"]["protocolVersion"], "2025-11-25");
    let session = local
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let with_session = [("Mcp-Session-Id", session.as_str())];

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        front.send("POST", &with_session, Some(&initialized)).status,
        202
    );
    let answer = front.send("POST", &with_session, Some(&ping(2)));
    assert_eq!(
        (answer.status, answer.json()),
        (200, json!({"jsonrpc": "2.0", "id": 2, "result": {}}))
    );
    let made_up = front.send("POST", &[("Mcp-Session-Id", "nope")], Some(&ping(3)));
    assert_eq!(made_up.status, 404, "{}", made_up.body);
    assert_eq!(front.send("POST", &[], Some(&ping(4))).status, 400);
    assert_eq!(front.send("GET", &with_session, None).status, 405);
    assert_eq!(front.send("DELETE", &with_session, None).status, 200);
    assert_eq!(
        front.send("POST", &with_session, Some(&ping(5))).status,
        404
    );
}

#[test]
fn faults_break_one_rule_each() {
    let open = Front::start(&["--http-fault", "no-origin-check"]);
    let foreign = open.send(
        "POST",
        &[("Origin", "http://evil.example")],
        Some(&initialize()),
    );
    assert_eq!(foreign.status, 200);

    let lax = Front::start(&["--http-fault", "ignores-session"]);
    let session = lax.send("POST", &[], Some(&initialize()));
    assert_eq!(session.status, 200);
    assert_eq!(
        lax.send("POST", &[("Mcp-Session-Id", "nope")], Some(&ping(2)))
            .status,
        200
    );
    assert_eq!(lax.send("POST", &[], Some(&ping(3))).status, 200);

    let sticky = Front::start(&["--http-fault", "delete-ignored"]);
    let answer = sticky.send("POST", &[], Some(&initialize()));
    let id = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert_eq!(
        sticky
            .send("DELETE", &[("Mcp-Session-Id", &id)], None)
            .status,
        200
    );
    assert_eq!(
        sticky
            .send("POST", &[("Mcp-Session-Id", &id)], Some(&ping(2)))
            .status,
        200
    );
}

#[test]
fn modern_requests_stream_progress_and_closing_the_stream_cancels() {
    let front = Front::start(&["--era", "modern"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": 7,
    });
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"duration_ms": 5000, "steps": 50}, "_meta": meta}});
    let mut stream = front.connect();
    // The standard headers a 2026-07-28 request carries (the front end checks them).
    write_request(
        &mut stream,
        "POST",
        &[
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "slow"),
        ],
        Some(&call),
    );
    let mut reader = BufReader::new(stream);
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "stream ended: {seen}"
        );
        seen.push_str(&line);
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(
        seen.contains("\"progressToken\":7"),
        "the client's own token: {seen}"
    );
    drop(reader);
    if wait::try_until(DEADLINE, || {
        front.stderr().contains("fixture: cancelled request")
    })
    .is_err()
    {
        panic!("no cancellation: {}", front.stderr());
    }
    assert_eq!(front.send("DELETE", &[], None).status, 405);
}

#[test]
fn the_front_end_exits_when_stdin_closes() {
    let mut front = Front::start(&[]);
    assert_eq!(front.send("POST", &[], Some(&initialize())).status, 200);
    drop(front.child.stdin.take());
    let status = wait::exited("the front end to exit", DEADLINE, &mut front.child);
    assert!(status.success(), "{status}");
}
