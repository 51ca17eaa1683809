//! One connected server: its session, recorder and, for stdio, its process. Every process
//! the checker starts goes through here (the runtime's `connect_endpoint`, the way the CLI
//! and the runtime connect too) and is stopped through here, descendants included; over
//! HTTP the checker runs no process and a probe is one client connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_runtime::connect::{TransportOptions, connect_endpoint};
use switchboard_session::{Session, SessionConfig, SessionError};
use switchboard_wire::stdio::{ChildProcess, ShutdownGrace, ShutdownReport};
use switchboard_wire::{Connection, Direction, FrameTap};

use crate::catalog;
use crate::options::Options;
use crate::recorder::Recorder;
use crate::spec::ServerSpec;

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

/// The session settings for checking `spec`: its era, pinned version and listing caps,
/// the checker's deadlines.
fn session_config(spec: &ServerSpec, options: &Options) -> SessionConfig {
    let mut config = SessionConfig::new(&spec.name);
    config.request_timeout = options.request_timeout;
    config.connect_timeout = options.connect_timeout;
    // Generous: a slow-starting modern server (Python on a busy machine) that answers the
    // `server/discover` probe after `initialize` was sent too may refuse `initialize`, and
    // the session then reports that refusal instead of the probe's answer.
    config.probe_timeout = options.connect_timeout.min(Duration::from_secs(3));
    config.max_call_duration = options.request_timeout * 4 + options.long_call_duration;
    config.era = spec.era;
    config.protocol_version = spec.protocol_version.clone();
    spec.list_limits.apply_to([
        &mut config.max_list_pages,
        &mut config.max_list_items,
        &mut config.max_list_bytes,
    ]);
    config
}

/// What the checker's connections take beyond the endpoint: the recorder (and the spec's
/// own tap), the spec's credentials, the checker's connect deadline.
fn transport_options(
    spec: &ServerSpec,
    options: &Options,
    recorder: &Arc<Recorder>,
) -> TransportOptions {
    TransportOptions {
        tap: Some(match &spec.tap {
            Some(also) => Arc::new(BothTaps {
                recorder: recorder.clone(),
                also: also.clone(),
            }),
            None => recorder.clone(),
        }),
        authorizer: spec.authorizer.clone(),
        http_connect_timeout: Some(options.connect_timeout),
        display_url: None,
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
            connect_endpoint(
                &spec.transport,
                session_config(spec, options),
                transport_options(spec, options, &recorder),
            ),
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
