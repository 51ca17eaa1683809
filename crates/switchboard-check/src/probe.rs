//! One connected server: its session, recorder and, for stdio, its process. Every process
//! the checker starts goes through here and is stopped through here, descendants included;
//! over HTTP the checker runs no process and a probe is one client connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_http::HttpOptions;
use switchboard_session::{ConnectionParts, Session, SessionConfig, SessionError};
use switchboard_wire::Connection;
use switchboard_wire::stdio::{
    ChildProcess, ProcessSpec, ShutdownGrace, ShutdownReport, StdioOptions,
};

use crate::catalog;
use crate::options::Options;
use crate::recorder::Recorder;
use crate::spec::{ServerSpec, TransportSpec};

/// A connected, initialized server.
pub(crate) struct Probe {
    pub(crate) session: Session,
    /// The server process, for stdio; `None` over HTTP (the checker does not run it).
    pub(crate) process: Option<ChildProcess>,
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

/// The session settings the checker uses.
pub(crate) fn session_config(spec: &ServerSpec, options: &Options) -> SessionConfig {
    let mut config = SessionConfig::new(&spec.name);
    config.era = spec.era;
    config.protocol_version = spec.protocol_version.clone();
    config.connect_timeout = options.connect_timeout;
    // Generous: a slow-starting modern server (Python on a busy machine) that answers the
    // `server/discover` probe after `initialize` was sent too may refuse `initialize`, and
    // the session then reports that refusal instead of the probe's answer.
    config.probe_timeout = options.connect_timeout.min(Duration::from_secs(3));
    config.request_timeout = options.request_timeout;
    config.max_call_duration = options.request_timeout * 4 + options.long_call_duration;
    spec.list_limits.apply_to([
        &mut config.max_list_pages,
        &mut config.max_list_items,
        &mut config.max_list_bytes,
    ]);
    config
}

impl Probe {
    /// Starts (stdio) or connects to (HTTP) the server and initializes a session with it.
    pub(crate) async fn start(spec: &ServerSpec, options: &Options) -> Result<Probe, StartFailure> {
        match &spec.transport {
            TransportSpec::Stdio(process) => Probe::spawn(spec, process, options).await,
            TransportSpec::Http { url, headers } => {
                let mut http = HttpOptions::new(&spec.name, url);
                http.headers = headers.clone();
                http.connect_timeout = options.connect_timeout;
                http.authorizer = spec.authorizer.clone();
                Probe::connect_http(spec, http, options).await
            }
        }
    }

    async fn connect_http(
        spec: &ServerSpec,
        mut http: HttpOptions,
        options: &Options,
    ) -> Result<Probe, StartFailure> {
        let started = Instant::now();
        let recorder = Arc::new(Recorder::new());
        http.connection.tap = Some(recorder.clone());
        // The session has its own connect deadline; this one only guards against a bug.
        let guard = options.connect_timeout + Duration::from_secs(5);
        let connected = tokio::time::timeout(
            guard,
            Session::connect_http(http, session_config(spec, options)),
        )
        .await;
        match connected {
            Ok(Ok(session)) => Ok(Probe {
                connection: session.connection().clone(),
                session,
                process: None,
                recorder,
                connect_elapsed: started.elapsed(),
            }),
            Ok(Err(error)) => Err(StartFailure {
                error: StartError::Session(error),
                stderr_tail: None,
                exit_status: None,
                recorder: Some(recorder),
                elapsed: started.elapsed(),
            }),
            Err(_) => Err(StartFailure {
                error: StartError::Spawn(format!(
                    "the connection attempt did not end within {guard:?}"
                )),
                stderr_tail: None,
                exit_status: None,
                recorder: Some(recorder),
                elapsed: started.elapsed(),
            }),
        }
    }

    async fn spawn(
        spec: &ServerSpec,
        process_spec: &ProcessSpec,
        options: &Options,
    ) -> Result<Probe, StartFailure> {
        let started = Instant::now();
        let recorder = Arc::new(Recorder::new());
        let mut stdio_options = StdioOptions::new(&spec.name);
        stdio_options.connection.tap = Some(recorder.clone());
        let stdio = switchboard_wire::stdio::spawn(process_spec, stdio_options).map_err(|e| {
            StartFailure {
                error: StartError::Spawn(e.to_string()),
                stderr_tail: None,
                exit_status: None,
                recorder: None,
                elapsed: started.elapsed(),
            }
        })?;
        let connection = stdio.connection.clone();
        let transport = ConnectionParts {
            connection: stdio.connection,
            inbound: stdio.inbound,
            process: None,
        };
        let process = stdio.process;
        // The session has its own connect deadline; this one only guards against a bug.
        let guard = options.connect_timeout + Duration::from_secs(5);
        let connected = tokio::time::timeout(
            guard,
            Session::connect(transport, session_config(spec, options)),
        )
        .await;
        match connected {
            Ok(Ok(session)) => Ok(Probe {
                session,
                process: Some(process),
                connection,
                recorder,
                connect_elapsed: started.elapsed(),
            }),
            other => {
                let error = match other {
                    Ok(Err(error)) => StartError::Session(error),
                    _ => StartError::Spawn(format!(
                        "the connection attempt did not end within {guard:?}"
                    )),
                };
                // Give a dying process a moment to report its exit status.
                let exit_status = process.wait_exit(Duration::from_millis(200)).await;
                let stderr_tail = Some(process.stderr_tail());
                kill_tree(&process).await;
                Err(StartFailure {
                    error,
                    stderr_tail,
                    exit_status,
                    recorder: Some(recorder),
                    elapsed: started.elapsed(),
                })
            }
        }
    }

    /// The transport kind.
    pub(crate) fn transport(&self) -> catalog::Transport {
        match self.process {
            Some(_) => catalog::Transport::Stdio,
            None => catalog::Transport::Http,
        }
    }

    /// The server's recent stderr (stdio only).
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let tail = self.process.as_ref()?.stderr_tail();
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
        match &self.process {
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
