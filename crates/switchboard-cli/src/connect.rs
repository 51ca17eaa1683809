//! From a config entry to a live session (declaring what `serve` declares, so every verb sees
//! the tools `serve` serves; questions a server asks are answered by
//! [`crate::asking::CommandLineClient`]), and the bundled example configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard_config::{ConfigFile, Origin, ProcessEnv, ServerEntry, TransportEntry};
use switchboard_http::Authorizer;
use switchboard_protocol::Era;
use switchboard_runtime::connect::ConnectOverrides;
use switchboard_runtime::{ConnectOutcome, ConnectionHooks};
use switchboard_session::{Session, SessionError};
use switchboard_wire::FrameTap;

use crate::Failure;
use switchboard_wire::stdio::{ShutdownGrace, ShutdownStep};

/// A configuration and where it came from.
pub(crate) struct LoadedConfig {
    pub(crate) file: ConfigFile,
}

/// Reads `--config FILE`, or the discovered configuration (`config_cmd`), or, when nothing is
/// found, builds the bundled example (and says on stderr where it looked). A file that is
/// there but cannot be read is the system's refusal (exit 5), any other problem a
/// configuration error (exit 2).
pub(crate) fn load_config(path: Option<&Path>) -> Result<LoadedConfig, Failure> {
    let file = match path {
        Some(path) => {
            let mut file = switchboard_config::load(path, &ProcessEnv)
                .map_err(|error| Failure::of_config(&error))?;
            crate::sandbox::apply_host_default(&mut file);
            file
        }
        None => match crate::config_cmd::discovered_config()? {
            Ok(file) => file,
            Err(looked) => {
                crate::terminal::say(format_args!(
                    "switchboard: no --config given and no servers found; using the bundled example server `example`"
                ));
                crate::terminal::say(format_args!("  looked in:"));
                for line in looked {
                    crate::terminal::say(format_args!("    {line}"));
                }
                return Ok(LoadedConfig {
                    file: bundled_example()?,
                });
            }
        },
    };
    // From here on, nothing written to stderr shows the entries' secrets.
    crate::terminal::hide_secrets(
        file.entries()
            .flat_map(ServerEntry::secret_values)
            .collect(),
    );
    Ok(LoadedConfig { file })
}

/// One server, `example`, served by this very binary (`switchboard example-server`).
fn bundled_example() -> Result<ConfigFile, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot locate the switchboard executable: {e}"))?;
    let transport = TransportEntry::Stdio {
        command: exe.display().to_string(),
        args: vec![
            "example-server".into(),
            "--name".into(),
            "switchboard-example".into(),
        ],
        env: Vec::new(),
        cwd: None,
    };
    Ok(one_server_config("example", transport, "<bundled example>"))
}

/// A configuration of one server built in code (`source` stands where a file's path
/// would), with every setting at its default.
pub(crate) fn one_server_config(name: &str, transport: TransportEntry, source: &str) -> ConfigFile {
    let entry = ServerEntry::new(name, transport).with_origin(Origin::described(source));
    let mut file = ConfigFile {
        path: PathBuf::from(source),
        servers: vec![Ok(entry)],
        team: Default::default(),
    };
    crate::sandbox::apply_host_default(&mut file);
    file
}

/// A connected server for one command.
pub(crate) struct ConnectedServer {
    pub(crate) session: Session,
}

/// Shutdown grace for one-shot commands.
const GRACE: ShutdownGrace = ShutdownGrace {
    after_stdin_close: Duration::from_secs(2),
    after_sigterm: Duration::from_secs(1),
};

/// Shutdown grace for a server still busy with a request that timed out.
const BUSY_GRACE: ShutdownGrace = ShutdownGrace {
    after_stdin_close: Duration::from_millis(100),
    after_sigterm: Duration::from_millis(200),
};

impl ConnectedServer {
    /// Connects to `entry`; `request_timeout` overrides the entry's `timeout`. HTTP servers
    /// get the saved OAuth tokens, and a message to run `switchboard login` when they need one.
    pub(crate) async fn connect(
        entry: &ServerEntry,
        request_timeout: Option<Duration>,
    ) -> Result<ConnectedServer, SessionError> {
        ConnectedServer::connect_with(entry, request_timeout, None).await
    }

    /// Connects with a specific authorizer for HTTP servers (login uses an interactive one).
    pub(crate) async fn connect_with(
        entry: &ServerEntry,
        request_timeout: Option<Duration>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Result<ConnectedServer, SessionError> {
        let authorizer = match (&entry.transport, authorizer) {
            (TransportEntry::Stdio { .. }, _) => None,
            (TransportEntry::Http { .. }, Some(authorizer)) => Some(authorizer),
            (TransportEntry::Http { url, .. }, None) => {
                Some(saved_login_authorizer(entry, url, None).map_err(|detail| {
                    // The saved login (its token file) cannot be used: the HTTP setup
                    // failed, not the server.
                    SessionError::HttpSetup(switchboard_http::HttpSetupError {
                        server: entry.name.as_str().into(),
                        detail,
                    })
                })?)
            }
        };
        let hooks = CliConnectHooks;
        let era_hint = hooks.era_hint(entry);
        let overrides = ConnectOverrides {
            request_timeout,
            authorizer,
            tap: hooks.tap(entry),
            era_hint,
            sandbox: hooks.sandbox_launcher(),
            handler: Some(Arc::new(crate::asking::CommandLineClient)),
            ..ConnectOverrides::default()
        };
        let connected = switchboard_runtime::connect::connect(entry, overrides).await;
        hooks.connected(entry, era_hint, connect_outcome(&connected));
        Ok(ConnectedServer {
            session: connected?,
        })
    }

    /// Stops the server gracefully.
    pub(crate) async fn close(self) {
        let _ = self.session.shutdown(GRACE).await;
    }

    /// Stops a server that may still be busy with a request that timed out: a short wait
    /// after closing stdin, then SIGTERM, then SIGKILL. The signal it took, if any.
    pub(crate) async fn stop_busy(self) -> Option<&'static str> {
        match self.session.shutdown(BUSY_GRACE).await?.step {
            ShutdownStep::Sigterm => Some("SIGTERM"),
            ShutdownStep::Sigkill => Some("SIGKILL"),
            ShutdownStep::StdinClosed | ShutdownStep::AlreadyExited => None,
        }
    }
}

/// What the CLI adds to every connection it makes, its own and the gateway's runtime's
/// (`serve`): the trace's tap, the era memo's hint, and what the connect taught the memo.
pub(crate) struct CliConnectHooks;

impl ConnectionHooks for CliConnectHooks {
    fn tap(&self, entry: &ServerEntry) -> Option<Arc<dyn FrameTap>> {
        crate::trace::tap_for(entry)
    }

    fn era_hint(&self, entry: &ServerEntry) -> Option<Era> {
        crate::era_memo::hint_for(entry)
    }

    fn connected(&self, entry: &ServerEntry, hint: Option<Era>, outcome: ConnectOutcome<'_>) {
        crate::era_memo::learn(entry, hint, outcome);
    }

    fn sandbox_launcher(&self) -> Option<switchboard_runtime::connect::SandboxLauncher> {
        crate::sandbox::launcher()
    }

    fn default_sandbox(&self) -> switchboard_config::DefaultSandbox {
        crate::sandbox::host_default()
    }
}

/// A connect's result as the hooks hear it.
fn connect_outcome(connected: &Result<Session, SessionError>) -> ConnectOutcome<'_> {
    match connected {
        Ok(session) => ConnectOutcome::Negotiated(session.negotiated().era),
        Err(error) => ConnectOutcome::Failed(error),
    }
}

/// The authorizer for every command but `login`: the tokens `switchboard login` saved,
/// refreshed at the token endpoint saved with them, in turns with this user's other
/// processes (or, with `shared`, with the instances sharing that store). It never
/// discovers, registers or follows a URL a 401 names; a server that wants more fails with
/// the command to run. An entry with a `workloadIdentity` obtains its tokens itself
/// instead (discovery and the JWT-bearer grant, never a user's step).
pub(crate) fn saved_login_authorizer(
    entry: &ServerEntry,
    url: &str,
    shared: Option<Arc<dyn switchboard_auth::SharedTokens>>,
) -> Result<Arc<dyn Authorizer>, String> {
    let acquire = match entry.oauth.workload_identity {
        Some(_) => switchboard_auth::Acquire::Unattended,
        None => switchboard_auth::Acquire::SavedLogin {
            server_name: entry.name.clone(),
            login_command: crate::adhoc::login_command(entry),
        },
    };
    let mut binding = crate::login::binding(switchboard_auth::StoreKey::own(url));
    if let Some(shared) = shared {
        binding.shared = Some(shared);
    }
    let client =
        crate::login::oauth_client(entry, binding, acquire, "http://127.0.0.1/callback".into())?;
    Ok(Arc::new(client))
}
