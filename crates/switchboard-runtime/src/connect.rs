//! From a server's description to a connected session. An [`Endpoint`] is the one
//! description of how to reach a server (a process spec, or a URL and headers);
//! [`connect_endpoint`] starts or reaches it and initializes a session with the settings it
//! is given. [`connect`] does it for a configuration entry: its endpoint
//! ([`Endpoint::of_entry`], in its sandbox), its session settings ([`session_config`]) and
//! its URL as written. The runtime's supervisor and the CLI connect entries, each adjusting
//! what it needs through [`ConnectOverrides`]; the checker connects the endpoint of the
//! server it checks.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchboard_config::{EraSetting, SandboxPolicy, ServerEntry, TransportEntry};
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

/// How to reach a server: the one description of a transport that [`connect_endpoint`]
/// takes. `Debug` never shows environment or header values.
#[derive(Clone)]
pub enum Endpoint {
    /// A local process speaking over stdin/stdout, started in the sandbox its spec names,
    /// if any.
    Stdio(ProcessSpec),
    /// A Streamable HTTP (or legacy HTTP+SSE) endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra headers (secret values).
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Stdio(process) => f.debug_tuple("Stdio").field(process).finish(),
            Endpoint::Http { url, headers } => {
                let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
                f.debug_struct("Http")
                    .field("url", &switchboard_text::redact::url_for_display(url))
                    .field("header_names", &names)
                    .finish()
            }
        }
    }
}

impl Endpoint {
    /// Where `entry` says its server is: its process as configured, without a sandbox
    /// ([`Endpoint::sandbox_in`] adds one), or its URL and headers.
    pub fn of_entry(entry: &ServerEntry) -> Endpoint {
        match &entry.transport {
            TransportEntry::Stdio {
                command,
                args,
                env,
                cwd,
            } => Endpoint::Stdio(ProcessSpec {
                program: command.clone(),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd.clone(),
                sandbox: None,
            }),
            TransportEntry::Http { url, headers } => Endpoint::Http {
                url: url.clone(),
                headers: headers.clone(),
            },
        }
    }

    /// Has a local process started by `launcher` in `policy`'s sandbox; a remote endpoint,
    /// where nothing runs here, is left as it is.
    pub fn sandbox_in(&mut self, policy: &SandboxPolicy, launcher: SandboxLauncher) {
        if let Endpoint::Stdio(process) = self {
            process.sandbox = Some(Box::new(SandboxSpawn {
                policy: policy.clone(),
                launcher: launcher.path,
                never_open: launcher.never_open,
            }));
        }
    }
}

/// What a connection takes beyond its endpoint and session settings. `Default` adds
/// nothing.
#[derive(Clone, Default)]
pub struct TransportOptions {
    /// Sees every frame in both directions.
    pub tap: Option<Arc<dyn FrameTap>>,
    /// Credentials for an HTTP server; ignored for stdio.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// The HTTP transport's TCP/TLS connect deadline (else the transport's default).
    pub http_connect_timeout: Option<Duration>,
    /// An HTTP endpoint's URL as messages show it (else the URL with credentials, query
    /// values and fragment hidden).
    pub display_url: Option<String>,
}

impl fmt::Debug for TransportOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportOptions")
            .field("tap", &self.tap.is_some())
            .field("authorizer", &self.authorizer.is_some())
            .field("http_connect_timeout", &self.http_connect_timeout)
            .field("display_url", &self.display_url)
            .finish()
    }
}

/// Starts (stdio) or connects to (HTTP) the server `entry` describes and initializes a
/// session with it, within the handshake deadline. On failure a started process is killed.
/// An entry with a sandbox is not started without [`ConnectOverrides::sandbox`].
pub async fn connect(
    entry: &ServerEntry,
    overrides: ConnectOverrides,
) -> Result<Session, SessionError> {
    let config = session_config(entry, &overrides);
    let mut endpoint = Endpoint::of_entry(entry);
    match (entry.sandbox.policy(), overrides.sandbox) {
        (None, _) => {}
        (Some(policy), Some(launcher)) => endpoint.sandbox_in(policy, launcher),
        (Some(_), None) => {
            return Err(SessionError::Spawn(SpawnError {
                server: entry.name.as_str().into(),
                detail: "the entry asks for a sandbox, but this host names no sandbox \
                         launcher; it is not started unsandboxed"
                    .into(),
                source: std::io::Error::from(std::io::ErrorKind::Unsupported),
            }));
        }
    }
    let transport = TransportOptions {
        tap: overrides.tap,
        authorizer: overrides.authorizer,
        http_connect_timeout: overrides.http_connect_timeout,
        display_url: entry.display_url(),
    };
    connect_endpoint(&endpoint, config, transport).await
}

/// Starts (stdio) or connects to (HTTP) the server at `endpoint` and initializes a session
/// with it under `config` (whose `server_name` names it in every error), within the
/// handshake deadline. On failure a started process is killed.
pub async fn connect_endpoint(
    endpoint: &Endpoint,
    config: SessionConfig,
    transport: TransportOptions,
) -> Result<Session, SessionError> {
    let name = config.server_name.clone();
    match endpoint {
        Endpoint::Stdio(process) => {
            let mut options = StdioOptions::new(&name);
            options.connection.tap = transport.tap;
            Session::spawn_stdio(process, options, config).await
        }
        Endpoint::Http { url, headers } => {
            let mut options = HttpOptions::new(&name, url);
            if let Some(shown) = transport.display_url {
                options.display_url = shown;
            }
            options.headers = headers.clone();
            options.connection.tap = transport.tap;
            options.authorizer = transport.authorizer;
            if let Some(timeout) = transport.http_connect_timeout {
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
    fn an_entry_s_endpoint_is_its_transport_and_only_a_local_one_takes_a_sandbox() {
        let launcher = SandboxLauncher {
            path: PathBuf::from("/usr/bin/launcher"),
            never_open: Vec::new(),
        };
        let policy = SandboxPolicy::default();
        let mut local = Endpoint::of_entry(&entry(None, None));
        let Endpoint::Stdio(process) = &local else {
            panic!("a stdio entry is a local endpoint: {local:?}");
        };
        assert_eq!(
            (process.program.as_str(), process.sandbox.is_none()),
            ("server", true)
        );
        local.sandbox_in(&policy, launcher.clone());
        let Endpoint::Stdio(process) = &local else {
            panic!("still local: {local:?}");
        };
        let sandbox = process.sandbox.as_ref().expect("sandboxed");
        assert_eq!(sandbox.launcher, launcher.path);
        let mut http = entry(None, None);
        http.transport = TransportEntry::Http {
            url: "https://example.test/mcp".into(),
            headers: vec![("X-Key".into(), "s3cret-value".into())],
        };
        let mut remote = Endpoint::of_entry(&http);
        remote.sandbox_in(&policy, launcher);
        let shown = format!("{remote:?}");
        assert!(
            matches!(&remote, Endpoint::Http { url, .. } if url == "https://example.test/mcp")
                && !shown.contains("s3cret"),
            "{shown}"
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
