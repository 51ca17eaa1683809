//! One connected server: its session, recorder and, for stdio, its process. Every process
//! the checker starts goes through here (the runtime's `connect`, which the CLI and the
//! runtime use too) and is stopped through here, descendants included; over HTTP the
//! checker runs no process and a probe is one client connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_runtime::connect::{ConnectOverrides, SandboxLauncher, connect};
use switchboard_session::{Session, SessionError};
use switchboard_wire::stdio::{ChildProcess, ProcessSpec, ShutdownGrace, ShutdownReport};
use switchboard_wire::{Connection, Direction, FrameTap};

use crate::catalog;
use crate::options::Options;
use crate::recorder::Recorder;
use crate::spec::{ServerSpec, TransportSpec};

/// A connected, initialized server.
pub(crate) struct Probe {
    /// The session; for stdio it owns the server process.
    pub(crate) session: Session,
    pub(crate) connection: Connection,
    pub(crate) recorder: Arc<Recorder>,
    /// How long spawning (or connecting) and initializing took.
    pub(crate) connect_elapsed: Duration,
}
/// Why a server could not be started and initialized, with what is known about it.
#[derive(Debug)]
pub(crate) struct StartFailure {
    pub(crate) error: StartError,
    pub(crate) stderr_tail: Option<String>,
    pub(crate) exit_status: Option<String>,
    pub(crate) recorder: Option<Arc<Recorder>>,
    pub(crate) elapsed: Duration,
}

impl StartFailure {
    /// The check's finding: `what` failed, with the error and the server's stderr tail.
    pub(crate) fn into_finding(
        self,
        check: &'static str,
        what: &str,
    ) -> crate::report::CheckResult {
        crate::report::CheckResult::finding(
            check,
            format!("{what}: {}", self.error),
            crate::report::Evidence {
                stderr_tail: self.stderr_tail,
                ..crate::report::Evidence::default()
            },
        )
    }
}

#[derive(Debug)]
pub(crate) enum StartError {
    Spawn(String),
    Session(SessionError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Spawn(text) => f.write_str(text),
            StartError::Session(error) => write!(f, "{error}"),
        }
    }
}

/// The checker's recorder and the tap its caller gave ([`ServerSpec::tap`]), each given
/// every frame.
struct BothTaps {
    recorder: Arc<Recorder>,
    also: Arc<dyn FrameTap>,
}

impl FrameTap for BothTaps {
    fn frame(&self, direction: Direction, bytes: &[u8]) {
        self.recorder.frame(direction, bytes);
        self.also.frame(direction, bytes);
    }
}

/// What the checker sets beyond the server's own description.
fn overrides(spec: &ServerSpec, options: &Options, recorder: &Arc<Recorder>) -> ConnectOverrides {
    ConnectOverrides {
        request_timeout: Some(options.request_timeout),
        default_connect_timeout: Some(options.connect_timeout),
        // Generous: a slow-starting modern server (Python on a busy machine) that answers
        // the `server/discover` probe after `initialize` was sent too may refuse
        // `initialize`, and the session then reports that refusal instead of the probe's
        // answer.
        probe_timeout: Some(options.connect_timeout.min(Duration::from_secs(3))),
        max_call_duration: Some(options.request_timeout * 4 + options.long_call_duration),
        http_connect_timeout: Some(options.connect_timeout),
        authorizer: spec.authorizer.clone(),
        tap: Some(match &spec.tap {
            Some(also) => Arc::new(BothTaps {
                recorder: recorder.clone(),
                also: also.clone(),
            }),
            None => recorder.clone(),
        }),
        // A server checked in a sandbox is started by the launcher its spec names.
        sandbox: match &spec.transport {
            TransportSpec::Stdio(ProcessSpec {
                sandbox: Some(sandbox),
                ..
            }) => Some(SandboxLauncher {
                path: sandbox.launcher.clone(),
                never_open: sandbox.never_open.clone(),
            }),
            _ => None,
        },
        ..ConnectOverrides::default()
    }
}

impl Probe {
    /// Starts (stdio) or connects to (HTTP) the server and initializes a session with it.
    pub(crate) async fn start(spec: &ServerSpec, options: &Options) -> Result<Probe, StartFailure> {
        let started = Instant::now();
        let recorder = Arc::new(Recorder::new());
        // The session has its own connect deadline; this one only guards against a bug.
        let guard = options.connect_timeout + Duration::from_secs(5);
        let connected = tokio::time::timeout(
            guard,
            connect(&spec.to_entry(), overrides(spec, options, &recorder)),
        )
        .await;
        let error = match connected {
            Ok(Ok(session)) => {
                return Ok(Probe {
                    connection: session.connection().clone(),
                    session,
                    recorder,
                    connect_elapsed: started.elapsed(),
                });
            }
            // A process that could not be started sent nothing: no transcript.
            Ok(Err(SessionError::Spawn(error))) => {
                return Err(StartFailure {
                    error: StartError::Spawn(error.to_string()),
                    stderr_tail: None,
                    exit_status: None,
                    recorder: None,
                    elapsed: started.elapsed(),
                });
            }
            Ok(Err(error)) => StartError::Session(error),
            Err(_) => StartError::Spawn(format!(
                "the connection attempt did not end within {guard:?}"
            )),
        };
        // The session killed a process it started; what it knew about it is in the error.
        let (exit_status, stderr_tail) = match &error {
            StartError::Session(SessionError::Closed { reason, .. }) => {
                (reason.exit_status.clone(), reason.stderr_tail.clone())
            }
            StartError::Session(SessionError::Timeout { stderr_tail, .. }) => {
                (None, stderr_tail.clone())
            }
            _ => (None, None),
        };
        Err(StartFailure {
            error,
            stderr_tail,
            exit_status,
            recorder: Some(recorder),
            elapsed: started.elapsed(),
        })
    }

    /// The server process, for stdio; `None` over HTTP (the checker does not run it).
    pub(crate) fn process(&self) -> Option<&ChildProcess> {
        self.session.process()
    }

    /// The transport kind.
    pub(crate) fn transport(&self) -> catalog::Transport {
        match self.process() {
            Some(_) => catalog::Transport::Stdio,
            None => catalog::Transport::Http,
        }
    }

    /// The server's recent stderr (stdio only).
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let tail = self.process()?.stderr_tail();
        (!tail.trim().is_empty()).then_some(tail)
    }

    /// Stops a stdio server as the specification says (stdin closed, then signals) and
    /// kills whatever is left of its process tree; closes an HTTP connection (which ends
    /// a legacy session with `DELETE`), waiting at most `grace`.
    pub(crate) async fn close(&self, grace: Duration) -> Option<ShutdownReport> {
        let grace = ShutdownGrace {
            after_stdin_close: grace,
            after_sigterm: grace,
        };
        match self.process() {
            Some(process) => Some(process.shutdown(&self.connection, grace).await),
            None => self.session.shutdown(grace).await,
        }
    }
}

/// Kills a server's process group and every descendant now (those that left the group or
/// daemonised included), and waits (bounded) for its exit status.
pub(crate) async fn kill_tree(process: &ChildProcess) {
    process.kill();
    let _ = process.wait_exit(Duration::from_secs(1)).await;
}
