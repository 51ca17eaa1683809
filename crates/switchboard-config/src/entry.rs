//! A server entry as read, or built in code ([`ServerEntry::new`]): its transport, settings
//! and origin ([`ServerEntry`]), what `${VAR}` expansions put in it ([`Provenance`]), and
//! its displays that never show a secret (`Debug`, [`ServerEntry::redacted`],
//! [`ServerEntry::display_url`]); an entry that could not be used is an [`EntryError`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_text::redact::{Secrets, url_for_display, url_secret_values};

use crate::{SandboxChoice, ToolFilter, ToolPattern};

/// How to reach a server. `Debug` shows names of environment entries and headers, never values.
#[derive(Clone, PartialEq, Eq)]
pub enum TransportEntry {
    /// A local child process speaking over stdin/stdout.
    Stdio {
        /// Program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment entries (secret values).
        env: Vec<(String, String)>,
        /// Working directory, resolved against the config file's folder.
        cwd: Option<PathBuf>,
    },
    /// A remote server over Streamable HTTP (or legacy HTTP+SSE).
    Http {
        /// Endpoint URL.
        url: String,
        /// Extra headers (secret values).
        headers: Vec<(String, String)>,
    },
}

/// One configured server.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// The name the configuration gives it.
    pub name: String,
    /// How to reach it.
    pub transport: TransportEntry,
    /// Whether it is enabled (`enabled: false` or `disabled: true` turn it off).
    pub enabled: bool,
    /// Per-request deadline, if configured (`timeout` in seconds, or `"30s"`-style text).
    pub timeout: Option<Duration>,
    /// Deadline for connecting, if configured (`startupTimeout`).
    pub startup_timeout: Option<Duration>,
    /// The protocol era it asks for (`era`).
    pub era: EraSetting,
    /// A pinned protocol version.
    pub protocol_version: Option<String>,
    /// Caps on one listing of its tools, prompts or resources, where the entry raises or
    /// lowers them.
    pub list_limits: ListLimits,
    /// Which of its tools are used (`enabledTools`, `disabledTools`); the default, every one.
    pub tool_filter: ToolFilter,
    /// Its sandbox (`sandbox`: an object, `true`/`"on"`, `false`/`"off"`; a local server
    /// only, Linux only); `Unset` leaves it to the host's default.
    pub sandbox: SandboxChoice,
    /// How Switchboard identifies itself to a remote server's authorization server
    /// (`clientMetadataUrl`, `workloadIdentity`); unset for a local server.
    pub oauth: OAuthSettings,
    /// Where it was defined.
    pub origin: Origin,
    /// What `${VAR}` expansions put in it, and its fields as written.
    pub provenance: Provenance,
}

/// How Switchboard identifies itself to a remote server's authorization server, where an
/// entry says so; by default it registers itself (dynamic client registration) at login.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    /// `clientMetadataUrl`: the https URL of a Client ID Metadata Document describing
    /// Switchboard as the user's client. An authorization server that accepts such
    /// documents takes the URL as the client id; no registration happens.
    pub client_metadata_url: Option<String>,
    /// `workloadIdentity`: the token a platform gives this workload (a Kubernetes service
    /// account token, a cloud's identity token), presented with the JWT-bearer grant where
    /// the authorization server offers it: every command obtains tokens itself, no login.
    pub workload_identity: Option<WorkloadIdentitySource>,
}

/// Where a workload identity token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum WorkloadIdentitySource {
    /// `{"tokenFile": PATH}`: a file read at each token request (platforms rotate it);
    /// relative to the config file's folder.
    File(PathBuf),
    /// `{"token": "${VAR}"}`: the token itself (a secret: never shown).
    Value(String),
}

impl fmt::Debug for WorkloadIdentitySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadIdentitySource::File(path) => f.debug_tuple("File").field(path).finish(),
            WorkloadIdentitySource::Value(_) => f.write_str("Value(<redacted>)"),
        }
    }
}

/// The protocol era an entry asks for (`era`: `"auto"`, the default, `"legacy"` or
/// `"modern"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum EraSetting {
    /// The client finds out which era the server speaks.
    #[default]
    Auto,
    /// Only the `initialize` handshake (versions up to 2025-11-25).
    Legacy,
    /// Only the stateless 2026-07-28 protocol.
    Modern,
}

/// Caps on one listing (`tools/list` and the others, across all its pages) that an entry
/// sets: `maxListPages`, `maxListItems`, `maxListBytes`, each a positive whole number.
/// `None` keeps the client's default (see `switchboard_session::SessionConfig`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListLimits {
    /// Pages followed (`maxListPages`).
    pub pages: Option<usize>,
    /// Entries across the pages (`maxListItems`).
    pub items: Option<usize>,
    /// Result bytes across the pages (`maxListBytes`).
    pub bytes: Option<usize>,
}

impl ListLimits {
    /// Overrides the client's caps (pages, entries, bytes, in that order) where the entry
    /// sets them.
    pub fn apply_to(&self, caps: [&mut usize; 3]) {
        let [pages, items, bytes] = caps;
        for (cap, set) in [
            (pages, self.pages),
            (items, self.items),
            (bytes, self.bytes),
        ] {
            if let Some(value) = set {
                *cap = value;
            }
        }
    }
}

/// Where an entry's text came from: the values `${VAR}` expansions put in it (secrets
/// wherever they land: URL, args, command, headers, environment) and the fields that had
/// an expansion as they were written (`${TOKEN}`), for display. `Debug` shows neither
/// value. The default is "nothing expanded" (entries built in code).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Values substituted from variables.
    expanded: Vec<String>,
    /// Field (`url`, `command`, `cwd`, `args[2]`, `env.KEY`) → text as written, for
    /// fields that had an expansion.
    written: Vec<(String, String)>,
}

impl fmt::Debug for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields: Vec<&str> = self.written.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Provenance")
            .field("expanded_values", &self.expanded.len())
            .field("expanded_fields", &fields)
            .finish()
    }
}

impl Provenance {
    /// Notes that `field`, `written` so in the file, had an expansion that put
    /// `substituted` in it.
    pub(crate) fn record(&mut self, field: &str, written: &str, substituted: Vec<String>) {
        self.expanded.extend(substituted);
        self.written.push((field.to_owned(), written.to_owned()));
    }

    /// The values `${VAR}` expansions substituted (not defaults written in the file).
    pub fn expanded_values(&self) -> &[String] {
        &self.expanded
    }

    /// A field as written in the file (`url`, `command`, `cwd`, `args[N]`, `env.KEY`,
    /// `headers.NAME`), when it had an expansion.
    pub fn as_written(&self, field: &str) -> Option<&str> {
        self.written
            .iter()
            .find(|(name, _)| name == field)
            .map(|(_, text)| text.as_str())
    }
}

/// Where an entry comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file (or a description like `<bundled example>`).
    pub file: String,
    /// 1-based line of the entry's name in the file, when known.
    pub line: Option<usize>,
}

impl Origin {
    /// An origin that is no file: `description` (such as `<bundled example>`) stands where
    /// a file's path would, with no line.
    pub fn described(description: &str) -> Origin {
        Origin {
            file: description.to_owned(),
            line: None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

const REDACTED: &str = "<redacted>";

impl fmt::Debug for TransportEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names =
            |pairs: &[(String, String)]| pairs.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        // Which parts of the command line or URL came from expansions is known only to
        // the entry (`ServerEntry`'s `Debug` shows them as written): here the arguments are
        // counted and of the URL only the scheme and host are shown.
        match self {
            TransportEntry::Stdio { args, env, .. } => f
                .debug_struct("Stdio")
                .field("arg_count", &args.len())
                .field("env_names", &names(env))
                .finish_non_exhaustive(),
            TransportEntry::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &scheme_and_host(url))
                .field("header_names", &names(headers))
                .finish(),
        }
    }
}

/// `https://host/…`: a URL's scheme and host (credentials hidden), the rest elided.
fn scheme_and_host(url: &str) -> String {
    let shown = url_for_display(url);
    let after_scheme = shown.find("://").map_or(0, |at| at + 3);
    match shown[after_scheme..].find(['/', '?', '#']) {
        Some(at) => format!("{}/…", &shown[..after_scheme + at]),
        None => shown,
    }
}

impl ServerEntry {
    /// An entry built in code: `name` reached through `transport`, enabled, every setting
    /// at its default (no timeouts, era `auto`, no pinned version, the client's listing
    /// caps, every tool, the host's default sandbox), nothing expanded, and its origin
    /// `<built in code>` until [`ServerEntry::with_origin`] names another.
    pub fn new(name: &str, transport: TransportEntry) -> ServerEntry {
        ServerEntry {
            name: name.to_owned(),
            transport,
            enabled: true,
            timeout: None,
            startup_timeout: None,
            era: EraSetting::Auto,
            protocol_version: None,
            list_limits: ListLimits::default(),
            tool_filter: ToolFilter::default(),
            sandbox: SandboxChoice::default(),
            oauth: OAuthSettings::default(),
            origin: Origin::described("<built in code>"),
            provenance: Provenance::default(),
        }
    }

    /// This entry with `origin` as where it was defined.
    pub fn with_origin(self, origin: Origin) -> ServerEntry {
        ServerEntry { origin, ..self }
    }

    /// A field as it may be shown: as written when it had an expansion, else its value.
    fn shown<'a>(&'a self, field: &str, value: &'a str) -> &'a str {
        self.provenance.as_written(field).unwrap_or(value)
    }

    /// The URL of an HTTP entry as it may be shown: as written (expansions as `${VAR}`),
    /// with credentials, query values and fragment hidden. `None` for a stdio entry.
    pub fn display_url(&self) -> Option<String> {
        match &self.transport {
            TransportEntry::Http { url, .. } => Some(url_for_display(self.shown("url", url))),
            TransportEntry::Stdio { .. } => None,
        }
    }

    /// Every secret value in the entry: what `${VAR}` expansions substituted, environment
    /// and header values, and the URL's credentials, query values and fragment.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values = self.provenance.expanded.clone();
        if let Some(WorkloadIdentitySource::Value(token)) = &self.oauth.workload_identity {
            values.push(token.clone());
        }
        match &self.transport {
            TransportEntry::Stdio { env, .. } => {
                values.extend(env.iter().map(|(_, v)| v.clone()));
            }
            TransportEntry::Http { url, headers } => {
                values.extend(headers.iter().map(|(_, v)| v.clone()));
                values.extend(url_secret_values(url));
            }
        }
        values
    }

    /// [`ServerEntry::secret_values`] as a set to hide in free text (values shorter than
    /// `switchboard_text::redact::MIN_SECRET_LEN` are left out).
    pub fn secrets(&self) -> Secrets {
        Secrets::new(self.secret_values())
    }

    /// A JSON view safe to show: environment and header values replaced by `<redacted>`,
    /// fields with an expansion as written, the URL as [`ServerEntry::display_url`].
    pub fn redacted(&self) -> Value {
        let mut out = Map::new();
        match &self.transport {
            TransportEntry::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                out.insert("type".into(), "stdio".into());
                out.insert("command".into(), self.shown("command", command).into());
                let args: Vec<Value> = args
                    .iter()
                    .enumerate()
                    .map(|(i, arg)| self.shown(&format!("args[{i}]"), arg).into())
                    .collect();
                out.insert("args".into(), args.into());
                let env: Map<String, Value> = env
                    .iter()
                    .map(|(k, _)| (k.clone(), REDACTED.into()))
                    .collect();
                out.insert("env".into(), env.into());
                if let Some(cwd) = cwd {
                    let cwd = cwd.display().to_string();
                    out.insert("cwd".into(), self.shown("cwd", &cwd).into());
                }
            }
            TransportEntry::Http { url, headers } => {
                out.insert("type".into(), "http".into());
                out.insert("url".into(), url_for_display(self.shown("url", url)).into());
                let headers: Map<String, Value> = headers
                    .iter()
                    .map(|(k, _)| (k.clone(), REDACTED.into()))
                    .collect();
                out.insert("headers".into(), headers.into());
            }
        }
        out.insert("enabled".into(), self.enabled.into());
        let patterns = |field: &str, list: &[ToolPattern]| -> Value {
            let shown = list
                .iter()
                .enumerate()
                .map(|(i, p)| self.shown(&format!("{field}[{i}]"), p.as_str()).into());
            Value::Array(shown.collect())
        };
        if let Some(list) = self.tool_filter.enabled() {
            out.insert("enabledTools".into(), patterns("enabledTools", list));
        }
        if !self.tool_filter.disabled().is_empty() {
            let list = self.tool_filter.disabled();
            out.insert("disabledTools".into(), patterns("disabledTools", list));
        }
        if self.sandbox != SandboxChoice::Unset {
            out.insert("sandbox".into(), self.sandbox.describe().into());
        }
        if let Some(url) = &self.oauth.client_metadata_url {
            let shown = self.shown("clientMetadataUrl", url);
            out.insert("clientMetadataUrl".into(), shown.into());
        }
        match &self.oauth.workload_identity {
            Some(WorkloadIdentitySource::File(path)) => {
                let path = path.display().to_string();
                let shown = self.shown("workloadIdentity.tokenFile", &path);
                out.insert("workloadIdentity".into(), json!({"tokenFile": shown}));
            }
            Some(WorkloadIdentitySource::Value(_)) => {
                out.insert("workloadIdentity".into(), json!({"token": REDACTED}));
            }
            None => {}
        }
        Value::Object(out)
    }
}

impl fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerEntry")
            .field("name", &self.name)
            .field("config", &self.redacted())
            .field("origin", &self.origin)
            .finish()
    }
}

/// A server entry that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: server `{name}`: {detail}")]
pub struct EntryError {
    /// The entry's name.
    pub name: String,
    /// What is wrong and what to do.
    pub detail: String,
    /// Where it was defined.
    pub origin: Origin,
}
