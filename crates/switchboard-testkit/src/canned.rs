//! Canned HTTP for tests that need a loopback server with exact, hand-written answers
//! (faults the fixture does not make, an authorization server): read one HTTP/1.1 request
//! from a socket, write one answer. Bounded by the caller's deadlines; a client that goes
//! away mid-request yields `None`.

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// One HTTP/1.1 request as read from the socket.
#[derive(Debug, Clone)]
pub struct CannedRequest {
    /// Everything read: head and body.
    pub raw: Vec<u8>,
    /// The head (request line and headers), lossily decoded.
    pub head: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl CannedRequest {
    /// The request's method, e.g. `POST`.
    pub fn method(&self) -> &str {
        self.head.split_whitespace().next().unwrap_or("")
    }

    /// The request's path, e.g. `/mcp`.
    pub fn path(&self) -> &str {
        self.head.split_whitespace().nth(1).unwrap_or("")
    }

    /// The body as JSON, `null` when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one request (head, then `Content-Length` bytes of body); `None` when the client
/// went away first.
pub async fn read_request(socket: &mut TcpStream) -> Option<CannedRequest> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head_end, length) = loop {
        let n = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&chunk[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while raw.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&chunk[..n]);
    }
    Some(CannedRequest {
        head: String::from_utf8_lossy(&raw[..head_end - 4]).into_owned(),
        body: raw[head_end..head_end + length].to_vec(),
        raw,
    })
}

/// A complete answer with a body and `connection: close`, e.g.
/// `answer("200 OK", "application/json", "{}")`.
pub fn answer(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A complete answer without a body (`202 Accepted`, `404 Not Found`, …).
pub fn empty_answer(status: &str) -> String {
    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
}

/// How many connections a [`CountingServer`] accepts before it stops listening.
const MAX_COUNTED_CONNECTIONS: usize = 256;

/// Put into an answer of a [`CountingServer`], ends one write: the rest follows in a write
/// of its own, [`SEPARATE_WRITE_GAP`] later (as a server that ends a response stream after
/// its event sends the end: a moment later, in a write of its own).
pub const SEPARATE_WRITE: &str = "\u{0}separate write\u{0}";
/// The pause before a [`SEPARATE_WRITE`]'s next part.
pub const SEPARATE_WRITE_GAP: std::time::Duration = std::time::Duration::from_millis(1);

/// Put into an answer of a [`CountingServer`], ends the answer: what follows it is written
/// again and again, [`TRICKLE_GAP`] apart, until the client goes away (a response stream
/// that never ends, e.g. `2\r\n:\n\r\n`, an event-stream comment as one chunk).
/// [`CountingServer::trickles_cut`] counts the clients that went away.
pub const TRICKLE: &str = "\u{0}trickle\u{0}";
/// The pause between a [`TRICKLE`]'s writes.
pub const TRICKLE_GAP: std::time::Duration = std::time::Duration::from_millis(20);

/// A loopback HTTP server that gives every request the same canned answer and counts
/// every connection and request it receives: a stand-in for an address that must never be
/// reached (or must be, a known number of times). Accepts at most 256 connections; stops
/// when dropped. Needs a Tokio runtime.
#[derive(Debug)]
pub struct CountingServer {
    origin: String,
    seen: std::sync::Arc<std::sync::Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Seen {
    connections: usize,
    requests: Vec<CannedRequest>,
    trickles_cut: usize,
}

impl CountingServer {
    /// Listens on 127.0.0.1 (ephemeral port); `answer` is a whole HTTP response, e.g. from
    /// [`answer`] or [`empty_answer`], sent for every request.
    pub async fn start(answer: String) -> CountingServer {
        CountingServer::start_with(move |_, _| answer.clone()).await
    }

    /// Like [`CountingServer::start`], with the answer chosen per request; `origin` (e.g.
    /// `http://127.0.0.1:PORT`) is given to `answer` so it can name its own URLs.
    pub async fn start_with(
        answer: impl Fn(&str, &CannedRequest) -> String + Send + Sync + 'static,
    ) -> CountingServer {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let origin = format!("http://127.0.0.1:{port}");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
        let answer = std::sync::Arc::new(answer);
        let (counted, own) = (seen.clone(), origin.clone());
        let task = tokio::spawn(async move {
            for _ in 0..MAX_COUNTED_CONNECTIONS {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                lock(&counted).connections += 1;
                // Each write goes at once (a write of its own is one on the wire too).
                let _ = socket.set_nodelay(true);
                let (counted, answer, own) = (counted.clone(), answer.clone(), own.clone());
                tokio::spawn(async move {
                    while let Some(request) = read_request(&mut socket).await {
                        let response = answer(&own, &request);
                        lock(&counted).requests.push(request);
                        let (response, trickle) = match response.split_once(TRICKLE) {
                            Some((response, trickle)) => (response, Some(trickle)),
                            None => (response.as_str(), None),
                        };
                        for (index, part) in response.split(SEPARATE_WRITE).enumerate() {
                            if index > 0 {
                                tokio::time::sleep(SEPARATE_WRITE_GAP).await;
                            }
                            if socket.write_all(part.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        if let Some(trickle) = trickle {
                            loop {
                                tokio::time::sleep(TRICKLE_GAP).await;
                                if socket.write_all(trickle.as_bytes()).await.is_err() {
                                    lock(&counted).trickles_cut += 1;
                                    return;
                                }
                            }
                        }
                        if response.contains("connection: close") {
                            let _ = socket.shutdown().await;
                            return;
                        }
                    }
                });
            }
        });
        CountingServer { origin, seen, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.origin
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// Connections accepted so far (a connection that sent no request counts too).
    pub fn connections(&self) -> usize {
        lock(&self.seen).connections
    }

    /// Answers ending in a [`TRICKLE`] whose client went away (a write to it failed).
    pub fn trickles_cut(&self) -> usize {
        lock(&self.seen).trickles_cut
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<CannedRequest> {
        lock(&self.seen).requests.clone()
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(seen: &std::sync::Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(|p| p.into_inner())
}
