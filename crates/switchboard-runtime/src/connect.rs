//! From a configuration entry to a connected session: the one place that turns a
//! [`ServerEntry`] into a process spec or HTTP options and session settings. The runtime's
//! supervisor, the CLI and the checker all connect through [`connect`], each adjusting what
//! it needs through [`ConnectOverrides`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchboard_config::{EraSetting, ServerEntry, TransportEntry};
use switchboard_http::{Authorizer, HttpOptions};
use switchboard_protocol::Era;
use switchboard_session::{ClientHandler, EraChoice, Session, SessionConfig, SessionError};
use switchboard_wire::FrameTap;
use switchboard_wire::sandbox::SandboxSpawn;
use switchboard_wire::stdio::{ProcessSpec, SpawnError, StdioOptions};

/// What a caller sets beyond the entry. Every field is optional; `Default` connects as the
/// entry says with the session's defaults.
#[derive(Clone, Default)]
pub struct ConnectOverrides {
    /// The request deadline, replacing the entry's `timeout` (a `--timeout` flag).
    pub request_timeout: Option<Duration>,
    /// The request deadline when neither [`ConnectOverrides::request_timeout`] nor the
    /// entry's `timeout` sets one (else the session's default).
    pub default_request_timeout: Option<Duration>,
    /// The handshake deadline when the entry sets no `startupTimeout` (else the session's
    /// default).
    pub default_connect_timeout: Option<Duration>,
    /// How long the modern era's `server/discover` probe may take (else the session's
    /// default).
    pub probe_timeout: Option<Duration>,
    /// The longest any call may run, progress or not (else the session's default).
    pub max_call_duration: Option<Duration>,
    /// The HTTP transport's TCP/TLS connect deadline (else the transport's default).
    pub http_connect_timeout: Option<Duration>,
    /// Credentials for an HTTP server; ignored for stdio.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Sees every frame in both directions (the checker's recorder, a host's trace).
    pub tap: Option<Arc<dyn FrameTap>>,
    /// Answers the server's requests to the host (else the session's default: nothing
    /// declared).
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// The era the host last negotiated with this server (its memo, keyed by
    /// [`server_identity`]). A hint only: `Legacy` makes an `auto` entry send `initialize`
    /// first ([`EraChoice::AutoLegacyFirst`]); an entry that names its era or pins a
    /// version ignores it.
    pub era_hint: Option<Era>,
    /// The launcher that applies an entry's sandbox; an entry with a sandbox does not
    /// start without one.
    pub sandbox: Option<SandboxLauncher>,
}

/// The executable that answers `__sandbox-exec` (`switchboard_sandbox::launch`), and the
/// host's own secret files that no sandboxed server may open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLauncher {
    /// The launcher (the CLI names its own executable).
    pub path: PathBuf,
    /// Further paths never to open (token and trust files outside their default places).
    pub never_open: Vec<PathBuf>,
}

impl fmt::Debug for ConnectOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOverrides")
            .field("request_timeout", &self.request_timeout)
            .field("default_request_timeout", &self.default_request_timeout)
            .field("default_connect_timeout", &self.default_connect_timeout)
            .field("probe_timeout", &self.probe_timeout)
            .field("max_call_duration", &self.max_call_duration)
            .field("http_connect_timeout", &self.http_connect_timeout)
            .field("authorizer", &self.authorizer.is_some())
            .field("tap", &self.tap.is_some())
            .field("handler", &self.handler.is_some())
            .field("era_hint", &self.era_hint)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

/// Starts (stdio) or connects to (HTTP) the server `entry` describes and initializes a
/// session with it, within the handshake deadline. On failure a started process is killed.
pub async fn connect(
    entry: &ServerEntry,
    overrides: ConnectOverrides,
) -> Result<Session, SessionError> {
    let config = session_config(entry, &overrides);
    match &entry.transport {
        TransportEntry::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let sandbox = match (entry.sandbox.policy(), overrides.sandbox) {
                (None, _) => None,
                (Some(policy), Some(launcher)) => Some(Box::new(SandboxSpawn {
                    policy: policy.clone(),
                    launcher: launcher.path,
                    never_open: launcher.never_open,
                })),
                (Some(_), None) => {
                    return Err(SessionError::Spawn(SpawnError {
                        server: entry.name.as_str().into(),
                        detail: "the entry asks for a sandbox, but this host names no sandbox \
                                 launcher; it is not started unsandboxed"
                            .into(),
                        source: std::io::Error::from(std::io::ErrorKind::Unsupported),
                    }));
                }
            };
            let spec = ProcessSpec {
                program: command.clone(),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd.clone(),
                sandbox,
            };
            let mut options = StdioOptions::new(&entry.name);
            options.connection.tap = overrides.tap;
            Session::spawn_stdio(&spec, options, config).await
        }
        TransportEntry::Http { url, headers } => {
            let mut options = HttpOptions::new(&entry.name, url);
            options.display_url = entry.display_url().unwrap_or(options.display_url);
            options.headers = headers.clone();
            options.connection.tap = overrides.tap;
            options.authorizer = overrides.authorizer;
            if let Some(timeout) = overrides.http_connect_timeout {
                options.connect_timeout = timeout;
            }
            Session::connect_http(options, config).await
        }
    }
}

/// Who the server behind `entry` is, for a host's memo of what it negotiated: the
/// transport as written (`${VAR}` expansions unexpanded), a stdio entry's command and
/// arguments or an HTTP entry's URL with credentials, query values and fragment hidden. Never
/// the environment, the headers or the entry's name. `None` when the era is not the
/// session's to find out (the entry names it or pins a version).
pub fn server_identity(entry: &ServerEntry) -> Option<String> {
    if entry.era != EraSetting::Auto || entry.protocol_version.is_some() {
        return None;
    }
    let shown = entry.redacted();
    let identity = match &entry.transport {
        TransportEntry::Stdio { .. } => serde_json::json!({
            "command": shown.get("command"),
            "args": shown.get("args"),
        }),
        TransportEntry::Http { .. } => serde_json::json!({ "url": shown.get("url") }),
    };
    Some(identity.to_string())
}

/// The session settings for `entry`: its timeouts, era, pinned version and listing caps,
/// with `overrides` applied.
pub fn session_config(entry: &ServerEntry, overrides: &ConnectOverrides) -> SessionConfig {
    let mut config = SessionConfig::new(&entry.name);
    if let Some(timeout) = overrides
        .request_timeout
        .or(entry.timeout)
        .or(overrides.default_request_timeout)
    {
        config.request_timeout = timeout;
    }
    if let Some(timeout) = entry.startup_timeout.or(overrides.default_connect_timeout) {
        config.connect_timeout = timeout;
    }
    if let Some(timeout) = overrides.probe_timeout {
        config.probe_timeout = timeout;
    }
    if let Some(duration) = overrides.max_call_duration {
        config.max_call_duration = duration;
    }
    if let Some(handler) = &overrides.handler {
        config.handler = handler.clone();
    }
    config.era = match (entry.era, overrides.era_hint) {
        (EraSetting::Auto, Some(Era::Legacy)) => EraChoice::AutoLegacyFirst,
        (setting, _) => era_choice(setting),
    };
    config.protocol_version = entry.protocol_version.clone();
    entry.list_limits.apply_to([
        &mut config.max_list_pages,
        &mut config.max_list_items,
        &mut config.max_list_bytes,
    ]);
    config
}

/// How a session speaks to a server whose entry asks for `setting`.
pub fn era_choice(setting: EraSetting) -> EraChoice {
    match setting {
        EraSetting::Auto => EraChoice::Auto,
        EraSetting::Legacy => EraChoice::Legacy,
        EraSetting::Modern => EraChoice::Modern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_config::ListLimits;

    fn entry(timeout: Option<u64>, startup_timeout: Option<u64>) -> ServerEntry {
        let transport = TransportEntry::Stdio {
            command: "server".into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        };
        let mut entry = ServerEntry::new("s", transport);
        entry.timeout = timeout.map(Duration::from_secs);
        entry.startup_timeout = startup_timeout.map(Duration::from_secs);
        entry.era = EraSetting::Legacy;
        entry.protocol_version = Some("2025-06-18".into());
        entry.list_limits = ListLimits {
            pages: Some(3),
            items: None,
            bytes: Some(4096),
        };
        entry
    }

    /// (request, connect) deadlines in seconds.
    fn deadlines(entry: &ServerEntry, overrides: &ConnectOverrides) -> (u64, u64) {
        let config = session_config(entry, overrides);
        (
            config.request_timeout.as_secs(),
            config.connect_timeout.as_secs(),
        )
    }

    #[test]
    fn overrides_beat_the_entry_and_defaults_fill_in_behind_it() {
        let defaults = ConnectOverrides {
            default_request_timeout: Some(Duration::from_secs(7)),
            default_connect_timeout: Some(Duration::from_secs(8)),
            ..ConnectOverrides::default()
        };
        assert_eq!(deadlines(&entry(None, None), &defaults), (7, 8));
        assert_eq!(deadlines(&entry(Some(5), Some(6)), &defaults), (5, 6));
        let flag = ConnectOverrides {
            request_timeout: Some(Duration::from_secs(2)),
            ..defaults
        };
        assert_eq!(deadlines(&entry(Some(5), Some(6)), &flag), (2, 6));
        let session_defaults = SessionConfig::new("s");
        assert_eq!(
            deadlines(&entry(None, None), &ConnectOverrides::default()),
            (
                session_defaults.request_timeout.as_secs(),
                session_defaults.connect_timeout.as_secs()
            )
        );
    }

    #[test]
    fn a_legacy_hint_sends_initialize_first_only_for_an_auto_entry() {
        let hint = ConnectOverrides {
            era_hint: Some(Era::Legacy),
            ..ConnectOverrides::default()
        };
        let mut auto = entry(None, None);
        auto.era = EraSetting::Auto;
        auto.protocol_version = None;
        assert_eq!(session_config(&auto, &hint).era, EraChoice::AutoLegacyFirst);
        let modern_hint = ConnectOverrides {
            era_hint: Some(Era::Modern),
            ..ConnectOverrides::default()
        };
        assert_eq!(session_config(&auto, &modern_hint).era, EraChoice::Auto);
        assert_eq!(
            session_config(&entry(None, None), &hint).era,
            EraChoice::Legacy
        );
        let mut modern = auto.clone();
        modern.era = EraSetting::Modern;
        assert_eq!(session_config(&modern, &hint).era, EraChoice::Modern);
    }

    #[test]
    fn the_identity_is_the_transport_without_env_or_headers() {
        let mut stdio = entry(None, None);
        stdio.era = EraSetting::Auto;
        stdio.protocol_version = None;
        stdio.transport = TransportEntry::Stdio {
            command: "server".into(),
            args: vec!["--flag".into()],
            env: vec![("TOKEN".into(), "s3cret-value".into())],
            cwd: None,
        };
        assert_eq!(
            server_identity(&stdio).as_deref(),
            Some(r#"{"command":"server","args":["--flag"]}"#)
        );
        let mut http = stdio.clone();
        http.transport = TransportEntry::Http {
            url: "https://user:pw@example.test/mcp?key=abc".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret-value".into())],
        };
        let identity = server_identity(&http).expect("an auto entry has an identity");
        assert!(
            !identity.contains("s3cret") && !identity.contains("abc") && !identity.contains("pw"),
            "{identity}"
        );
        assert_eq!(
            server_identity(&entry(None, None)),
            None,
            "a pinned era needs no memo"
        );
    }

    #[test]
    fn the_entry_sets_era_version_and_listing_caps() {
        let config = session_config(&entry(None, None), &ConnectOverrides::default());
        let defaults = SessionConfig::new("s");
        assert_eq!(config.era, EraChoice::Legacy);
        assert_eq!(config.protocol_version.as_deref(), Some("2025-06-18"));
        assert_eq!(
            (
                config.max_list_pages,
                config.max_list_items,
                config.max_list_bytes
            ),
            (3, defaults.max_list_items, 4096)
        );
    }
}
