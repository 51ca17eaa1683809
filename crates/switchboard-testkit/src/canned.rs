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
