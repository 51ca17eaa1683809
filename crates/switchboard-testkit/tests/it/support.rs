//! A spawned fixture process with line-based, deadline-bounded I/O.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long a test waits to be reasonably sure that nothing more arrives.
pub(crate) const QUIET_PERIOD: Duration = Duration::from_millis(400);

/// How much of stderr is kept as text (the rest is only counted).
const STDERR_TEXT_LIMIT: usize = 64 * 1024;

#[derive(Debug, Default)]
struct StderrCapture {
    text: String,
    total_bytes: usize,
}

/// A running fixture. Killed (SIGKILL) when dropped.
#[derive(Debug)]
pub(crate) struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout_lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<StderrCapture>>,
}

impl Fixture {
    pub(crate) fn spawn(args: &[&str]) -> Fixture {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard-fixture"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the fixture");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (line_sender, stdout_lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line);
                        let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
                        if line_sender.send(text).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let capture = Arc::new(Mutex::new(StderrCapture::default()));
        let stderr_capture = Arc::clone(&capture);
        tokio::spawn(async move {
            let mut buffer = vec![0; 64 * 1024];
            while let Ok(n) = stderr.read(&mut buffer).await {
                if n == 0 {
                    return;
                }
                let mut capture = stderr_capture
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                capture.total_bytes += n;
                if capture.text.len() < STDERR_TEXT_LIMIT {
                    capture
                        .text
                        .push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
            }
        });
        Fixture {
            child,
            stdin,
            stdout_lines,
            stderr: capture,
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        let pid = self.child.id().expect("fixture still running");
        i32::try_from(pid).expect("pid fits in i32")
    }

    /// Writes one line (a newline is appended).
    pub(crate) async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        within(
            "writing to the fixture",
            TEST_DEADLINE,
            stdin.write_all(&bytes),
        )
        .await
        .expect("write to the fixture");
    }

    pub(crate) async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    pub(crate) async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    pub(crate) async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next stdout line; panics on EOF or after the test deadline.
    pub(crate) async fn next_line(&mut self) -> String {
        within(
            "a line from the fixture",
            TEST_DEADLINE,
            self.stdout_lines.recv(),
        )
        .await
        .expect("fixture closed stdout")
    }

    pub(crate) async fn next_json(&mut self) -> Value {
        let line = self.next_line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns the next line.
    pub(crate) async fn call(&mut self, id: i64, method: &str, params: Value) -> String {
        self.request(id, method, params).await;
        self.next_line().await
    }

    /// Asserts that no stdout line arrives for a while.
    pub(crate) async fn expect_silence(&mut self) {
        if let Ok(Some(line)) = tokio::time::timeout(QUIET_PERIOD, self.stdout_lines.recv()).await {
            panic!("expected no output, got: {line}");
        }
    }

    /// Asserts that stdout reaches EOF.
    pub(crate) async fn expect_stdout_closed(&mut self) {
        if let Some(line) = within("stdout EOF", TEST_DEADLINE, self.stdout_lines.recv()).await {
            panic!("expected EOF, got: {line}");
        }
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub(crate) async fn wait_exit(&mut self) -> ExitStatus {
        within("the fixture to exit", TEST_DEADLINE, self.child.wait())
            .await
            .expect("wait for the fixture")
    }

    /// True if the process has not exited.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub(crate) fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .text
            .clone()
    }

    pub(crate) fn stderr_bytes(&self) -> usize {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total_bytes
    }

    /// Waits until stderr contains `needle`; returns the stderr text.
    pub(crate) async fn wait_for_stderr(&self, needle: &str) -> String {
        wait::until_async(
            &format!("stderr to contain {needle:?}"),
            TEST_DEADLINE,
            || {
                let text = self.stderr_text();
                std::future::ready(text.contains(needle).then_some(text))
            },
        )
        .await
    }

    /// Sends `initialize` (asking for 2025-11-25) and `notifications/initialized`;
    /// returns the initialize response line.
    pub(crate) async fn legacy_handshake(&mut self) -> String {
        let response = self
            .call(1, "initialize", initialize_params("2025-11-25"))
            .await;
        self.notify("notifications/initialized", json!({})).await;
        response
    }

    pub(crate) async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = within("the fixture to die", TEST_DEADLINE, self.child.wait()).await;
    }
}

pub(crate) fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "testkit-tests", "version": "0"},
    })
}

/// `_meta` for a modern request.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `params` for a modern `tools/call`.
pub(crate) fn modern_call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": modern_meta()})
}

/// The names of the tools in a `tools/list` response line.
pub(crate) fn tool_names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {response}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}
