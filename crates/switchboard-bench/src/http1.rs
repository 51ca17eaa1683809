//! The least HTTP/1.1 the benchmark's own HTTP peers need: reading one message (a request
//! or a response) off a keep-alive connection by `Content-Length` (no chunked bodies; the
//! head and the body each capped), writing an answer in one `write`, and a blocking
//! loopback listener with a thread per connection that lives until its stdin closes.
//!
//! [`crate::trivial_http`] and [`crate::raw_http`] serve with it; the raw floor client
//! reads its answers with it.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Longest head (start line and headers) read.
pub const MAX_HEAD: u64 = 16 * 1024;
/// Longest body read.
pub const MAX_BODY: usize = 1024 * 1024;
/// Most connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;
/// An idle keep-alive connection is closed after this long without a request.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Deadline for writing an answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// A server exits at the latest after this long, even if its stdin stays open.
const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// One HTTP message: its start line, its headers (names lower-cased) and its body.
#[derive(Debug, Default)]
pub struct Message {
    /// `POST /mcp HTTP/1.1` or `HTTP/1.1 200 OK`.
    pub start: String,
    /// `(lower-cased name, value)` in arrival order.
    pub headers: Vec<(String, String)>,
    /// The `Content-Length` bytes after the head.
    pub body: Vec<u8>,
}

impl Message {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The request method (the start line's first word).
    pub fn method(&self) -> &str {
        self.start.split(' ').next().unwrap_or("")
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// Reads one message; `Ok(None)` when the peer closed the connection before a new one.
pub fn read_message<R: Read>(reader: &mut BufReader<R>) -> io::Result<Option<Message>> {
    let mut message = Message::default();
    let mut line = Vec::with_capacity(128);
    let mut head = reader.by_ref().take(MAX_HEAD);
    loop {
        line.clear();
        if head.read_until(b'\n', &mut line)? == 0 {
            if message.start.is_empty() && line.is_empty() {
                return Ok(None);
            }
            return Err(invalid("the head ended early or is longer than 16 KiB"));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| invalid("the head is not UTF-8"))?
            .trim_end_matches(['\r', '\n']);
        if message.start.is_empty() {
            if text.is_empty() {
                continue; // tolerated blank line between messages
            }
            message.start = text.to_owned();
            continue;
        }
        if text.is_empty() {
            break;
        }
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| invalid("a header line without `:`"))?;
        message
            .headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = match message.header("content-length") {
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| invalid("Content-Length is not a number"))?,
        None => 0,
    };
    if length > MAX_BODY {
        return Err(invalid("the body is longer than 1 MiB"));
    }
    message.body.resize(length, 0);
    reader.read_exact(&mut message.body)?;
    Ok(Some(message))
}

/// An answer to write.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Headers besides `Content-Length` (and `Content-Type` when there is a body).
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body (none for 202 and friends).
    pub body: Vec<u8>,
}

impl Answer {
    /// 200 with a JSON body.
    pub fn json(body: Vec<u8>) -> Answer {
        Answer {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    /// A status without a body.
    pub fn empty(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The bytes on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            202 => "Accepted",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            _ => "Status",
        };
        let mut out = Vec::with_capacity(self.body.len() + 160);
        let _ = write!(out, "HTTP/1.1 {} {reason}\r\n", self.status);
        if !self.body.is_empty() {
            out.extend_from_slice(b"content-type: application/json\r\n");
        }
        for (name, value) in &self.headers {
            let _ = write!(out, "{name}: {value}\r\n");
        }
        let _ = write!(out, "content-length: {}\r\n\r\n", self.body.len());
        out.extend_from_slice(&self.body);
        out
    }
}

/// Serves 127.0.0.1:`port` (0: any free port) with `handle`, a thread per connection and
/// any number of requests per connection; prints `http://127.0.0.1:PORT/mcp` on stdout
/// once listening. Returns when stdin closes (the owner is gone) or after 30 minutes.
pub fn serve(
    port: u16,
    handle: impl Fn(&Message) -> Answer + Send + Sync + 'static,
) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let port = listener.local_addr()?.port();
    let handle = Arc::new(handle);
    let live = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("http-accept".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    live.fetch_sub(1, Ordering::SeqCst);
                    continue; // dropped: closed
                }
                let handle = Arc::clone(&handle);
                let live = Arc::clone(&live);
                let spawned =
                    std::thread::Builder::new()
                        .name("http-conn".into())
                        .spawn(move || {
                            let _ = connection(stream, handle.as_ref());
                            live.fetch_sub(1, Ordering::SeqCst);
                        });
                if spawned.is_err() {
                    eprintln!("http: cannot start a connection thread");
                }
            }
        })?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "http://127.0.0.1:{port}/mcp")?;
    stdout.flush()?;
    drop(stdout);
    wait_for_owner();
    Ok(())
}

fn connection(stream: TcpStream, handle: &dyn Fn(&Message) -> Answer) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    while let Some(request) = read_message(&mut reader)? {
        writer.write_all(&handle(&request).to_bytes())?;
    }
    Ok(())
}

/// Blocks until stdin reaches EOF (or fails), or [`MAX_LIFETIME`] passes.
fn wait_for_owner() {
    let (closed, wait) = std::sync::mpsc::channel::<()>();
    let watcher = std::thread::Builder::new()
        .name("http-stdin".into())
        .spawn(move || {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            let _ = closed.send(());
        });
    match watcher {
        Ok(_) => {
            let _ = wait.recv_timeout(MAX_LIFETIME);
        }
        Err(_) => std::thread::sleep(MAX_LIFETIME),
    }
}
