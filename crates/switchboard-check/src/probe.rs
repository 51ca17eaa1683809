//! One started server: its process, session and recorder. Every process the checker
//! starts goes through here and is stopped through here, descendants included.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_session::{Session, SessionConfig, SessionError, Transport};
use switchboard_wire::stdio::{
    ChildProcess, ProcessSpec, ShutdownGrace, ShutdownReport, StdioOptions,
};
use switchboard_wire::{Connection, proc};

use crate::options::Options;
use crate::recorder::Recorder;
use crate::spec::ServerSpec;

/// A started, initialized server.
pub(crate) struct Probe {
    pub(crate) session: Session,
    pub(crate) process: ChildProcess,
    pub(crate) connection: Connection,
    pub(crate) recorder: Arc<Recorder>,
    /// How long spawning and initializing took.
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
    config
}

impl Probe {
    /// Starts the server and initializes a session with it.
    pub(crate) async fn start(
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
        let transport = Transport {
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
                process,
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

    /// Stops the server as the specification says (stdin closed, then signals), and kills
    /// whatever is left of its process tree.
    pub(crate) async fn close(&self, grace: Duration) -> ShutdownReport {
        let grace = ShutdownGrace {
            after_stdin_close: grace,
            after_sigterm: grace,
        };
        self.process.shutdown(&self.connection, grace).await
    }
}

/// Kills a server's process group now, then every descendant that left the group.
pub(crate) async fn kill_tree(process: &ChildProcess) {
    let tree = proc::descendants(process.pid());
    process.kill();
    let _ = process.wait_exit(Duration::from_secs(1)).await;
    proc::kill_survivors(&tree);
}
