//! Server configuration: reads `mcp.json` files into [`ServerEntry`] values.
//!
//! A file is read whole, but each server entry is validated on its own: one bad entry
//! becomes an [`EntryError`] (with file, line and what to do) and never stops the others.
//! `${VAR}` and `${VAR:-default}` are expanded in every string (also written VS Code's way,
//! `${env:VAR}`); an unset variable without a default fails that entry by name. VS Code's
//! `${input:ID}`, a value VS Code prompts for, is read from `SWITCHBOARD_INPUT_ID`
//! ([`input_variable`]); unset, it fails the entry naming the input and its description
//! from the file's `inputs`. Environment values, headers, URL credentials and query
//! values, and every value a `${VAR}` expansion put anywhere are secrets: the `Debug`
//! output, [`ServerEntry::redacted`] and [`ServerEntry::display_url`] never show them
//! (fields with an expansion are shown as written), and [`ServerEntry::secrets`] lists
//! them for hiding wherever else they might turn up (errors, stderr tails, reports).
//!
//! Accepted shapes: `{"mcpServers": {...}}` (Claude, Cursor, Gemini and most clients),
//! `{"servers": {...}}` (VS Code) and, for a `.toml` file, Codex's `[mcp_servers.NAME]`.
//! An entry's tool filter ([`ToolFilter`], in `filter`) is `enabledTools`/`disabledTools`
//! everywhere, also Gemini's `includeTools`/`excludeTools` in JSON and Codex's
//! `enabled_tools`/`disabled_tools` in TOML.
//!
//! # Map
//!
//! `mcp.json` reading: dialects, `${VAR}` expansion, per-entry validation with file and
//! line, redacted display; each client's file layout (`layout.rs`: syntax — JSON, JSON with
//! comments, TOML —, the server map's key path, the dialect mapped to the common spelling);
//! discovery (`discover.rs`: `$SWITCHBOARD_CONFIG`, the project's files, the user's files
//! of each client, first definition wins, every place reported; home and project directory
//! come from `Places`); format-keeping edits (`edit/`: in JSON only the bytes of the member
//! added or cut change, with its comma and its line — comments, indentation, CRLF kept —
//! `json.rs`; `toml_edit` for TOML, `toml.rs`; the entry written in the file's dialect);
//! `atomic.rs`, the one writer of every file Switchboard keeps (temp file in the same
//! folder, fsync, rename, folder fsync; new files 0600 in 0700 folders); VS Code's
//! `${env:VAR}` and `${input:ID}` (read from `SWITCHBOARD_INPUT_ID`, else an entry error
//! naming the input from `inputs`); the entry's per-tool filter (`filter.rs`: `ToolFilter`,
//! allow and deny lists of `*`/`?` patterns, deny wins), which the runtime applies where a
//! server's tools enter the snapshot and the CLI where it lists and calls. Its own crate
//! because the CLI, the runtime and the checker all read configuration and none should
//! depend on another for it.

pub mod atomic;
pub mod discover;
pub mod edit;
mod filter;
mod layout;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use switchboard_text::redact::{Secrets, url_for_display, url_secret_values};

pub use filter::{ToolFilter, ToolFilterError, ToolPattern};
pub use layout::{
    EntryDialect, Layout, MissingMap, Syntax, codex_form, common_form, dialect_form, strip_jsonc,
};
pub use switchboard_sandbox::{DefaultSandbox, SandboxChoice, SandboxPolicy};

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
    /// Era: `"auto"` (default), `"legacy"` or `"modern"`.
    pub era: Option<String>,
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
    /// Where it was defined.
    pub origin: Origin,
    /// What `${VAR}` expansions put in it, and its fields as written.
    pub provenance: Provenance,
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

/// The whole file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It could not be read.
    #[error("could not read config file `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not valid JSON.
    #[error("{path}:{line}:{column}: {detail}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        detail: String,
    },
    /// It has no server map.
    #[error("{path}: {detail}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

/// A loaded file: every entry, usable or not, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// Entries in order; errors stand where their entry was.
    pub servers: Vec<Result<ServerEntry, EntryError>>,
}

impl ConfigFile {
    /// The usable entries.
    pub fn entries(&self) -> impl Iterator<Item = &ServerEntry> {
        self.servers.iter().filter_map(|s| s.as_ref().ok())
    }

    /// The entry errors.
    pub fn errors(&self) -> impl Iterator<Item = &EntryError> {
        self.servers.iter().filter_map(|s| s.as_ref().err())
    }

    /// Looks a server up by name, usable or not.
    pub fn find(&self, name: &str) -> Option<&Result<ServerEntry, EntryError>> {
        self.servers.iter().find(|s| match s {
            Ok(entry) => entry.name == name,
            Err(error) => error.name == name,
        })
    }
}

/// Where variables come from (the process environment in production, a map in tests).
pub trait Variables {
    /// The variable's value, if set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Variables for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Variables for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        BTreeMap::get(self, name).cloned()
    }
}

/// Reads and validates a config file.
pub fn load(path: &Path, vars: &dyn Variables) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path, vars)
}

/// Validates config text as if read from `path` (relative `cwd`s resolve against its folder).
/// A `.toml` file is read in the Codex dialect (`[mcp_servers.NAME]`).
pub fn parse(text: &str, path: &Path, vars: &dyn Variables) -> Result<ConfigFile, ConfigError> {
    parse_as(text, path, &Layout::for_path(path), vars).map(|read| read.file)
}

/// A file read in a given [`Layout`]: its entries, and each entry as written (in the common
/// spelling, nothing expanded) for copying, editing and trust keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFile {
    /// The validated entries.
    pub file: ConfigFile,
    /// Each entry's name and value as written, in the common spelling, in file order.
    pub written: Vec<(String, Value)>,
}

impl ReadFile {
    /// An entry as written, by name.
    pub fn written(&self, name: &str) -> Option<&Value> {
        self.written.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Reads and validates a file in a given layout.
pub fn load_as(
    path: &Path,
    layout: &Layout,
    vars: &dyn Variables,
) -> Result<ReadFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_as(&text, path, layout, vars)
}

/// Validates config text in a given layout, as if read from `path`.
pub fn parse_as(
    text: &str,
    path: &Path,
    layout: &Layout,
    vars: &dyn Variables,
) -> Result<ReadFile, ConfigError> {
    let (root, plain) = parse_root(text, path, layout.syntax)?;
    let shape = |detail: &str| ConfigError::Shape {
        path: path.to_owned(),
        detail: detail.to_owned(),
    };
    let found = layout
        .maps
        .iter()
        .find_map(|keys| value_at(&root, keys).map(|map| (keys, map)));
    let empty = Map::new();
    let (map_path, servers) = match found {
        Some((keys, Value::Object(map))) => (keys.as_slice(), map),
        Some(_) if layout.syntax == Syntax::Toml => {
            return Err(shape("`mcp_servers` must be a table of servers"));
        }
        Some(_) => {
            return Err(shape(
                "`mcpServers` must be an object mapping names to server entries",
            ));
        }
        None if layout.missing_map == MissingMap::IsEmpty => (&[][..], &empty),
        None if layout.syntax == Syntax::Toml => {
            return Err(shape("no `[mcp_servers.NAME]` tables found"));
        }
        None if root.is_object() => {
            return Err(shape(
                "no `mcpServers` map found (expected `{\"mcpServers\": {\"name\": {\"command\": …}}}`)",
            ));
        }
        None => {
            return Err(shape(
                "the file must hold a JSON object with a `mcpServers` map",
            ));
        }
    };
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    let file = path.display().to_string();
    let inputs = Inputs::of(&root);
    let lines = match layout.syntax {
        Syntax::Toml => toml_entry_lines(text, map_path),
        Syntax::Json | Syntax::Jsonc => json_entry_lines(&plain, map_path),
    };
    let dialect = match layout.syntax {
        Syntax::Toml => Dialect::CodexToml,
        Syntax::Json | Syntax::Jsonc => Dialect::Json,
    };
    let mut written = Vec::new();
    let servers = servers
        .iter()
        .map(|(name, value)| {
            let origin = Origin {
                file: file.clone(),
                line: lines.get(name.as_str()).copied(),
            };
            if layout.dialect == EntryDialect::Zed && layout::is_zed_extension(value) {
                return Err(EntryError {
                    name: name.clone(),
                    detail: "provided by a Zed extension; Switchboard cannot start it".into(),
                    origin,
                });
            }
            let common = common_form(layout.dialect, value.clone());
            written.push((name.clone(), common.clone()));
            read_entry(
                name,
                &common,
                &EntryContext {
                    base: &base,
                    vars,
                    origin,
                    dialect,
                    inputs: &inputs,
                },
            )
        })
        .collect();
    Ok(ReadFile {
        file: ConfigFile {
            path: path.to_owned(),
            servers,
        },
        written,
    })
}

/// The document as a JSON value, and (for JSON) the text with comments blanked out.
fn parse_root(text: &str, path: &Path, syntax: Syntax) -> Result<(Value, String), ConfigError> {
    match syntax {
        Syntax::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| {
                let offset = e.span().map_or(0, |span| span.start).min(text.len());
                let before = &text[..offset];
                ConfigError::Syntax {
                    path: path.to_owned(),
                    line: before.matches('\n').count() + 1,
                    column: offset - before.rfind('\n').map_or(0, |i| i + 1) + 1,
                    detail: format!("invalid TOML: {}", e.message()),
                }
            })?;
            let root = serde_json::to_value(table).map_err(|e| ConfigError::Shape {
                path: path.to_owned(),
                detail: format!("unreadable TOML: {e}"),
            })?;
            Ok((root, String::new()))
        }
        Syntax::Json | Syntax::Jsonc => {
            let plain = match syntax {
                Syntax::Jsonc => layout::strip_jsonc(text),
                Syntax::Json | Syntax::Toml => text.to_owned(),
            };
            let root: Value = serde_json::from_str(&plain).map_err(|e| ConfigError::Syntax {
                path: path.to_owned(),
                line: e.line(),
                // serde_json says column 0 for an error right after a line break.
                column: e.column().max(1),
                detail: format!("invalid JSON: {e}"),
            })?;
            Ok((root, plain))
        }
    }
}

/// The value at a key path of objects.
fn value_at<'a>(root: &'a Value, keys: &[String]) -> Option<&'a Value> {
    keys.iter().try_fold(root, |value, key| value.get(key))
}

/// 1-based line of `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// 1-based line of each server's name in a JSON file: the keys of the object at key path
/// `map_path`, however they are written (escapes included), each at its first appearance.
/// The text is valid JSON (it was parsed before; comments blanked).
fn json_entry_lines(text: &str, map_path: &[String]) -> BTreeMap<String, usize> {
    let bytes = text.as_bytes();
    let mut lines = BTreeMap::new();
    if map_path.is_empty() {
        return lines;
    }
    // Open containers: whether each is an object, whether it lies on the map's key path,
    // and the last key read directly in it.
    struct Open {
        object: bool,
        on_path: bool,
        key: Option<String>,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => {
                let on_path = match open.last() {
                    None => true,
                    Some(parent) => {
                        parent.on_path
                            && parent.object
                            && open.len() <= map_path.len()
                            && parent.key.as_deref() == Some(map_path[open.len() - 1].as_str())
                    }
                };
                open.push(Open {
                    object: bytes[at] == b'{',
                    on_path,
                    key: None,
                });
                at += 1;
            }
            b'}' | b']' => {
                open.pop();
                at += 1;
            }
            b'"' => {
                let start = at;
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
                let token = &text[start..at.min(text.len())];
                let rest = text[at.min(text.len())..].trim_start();
                if !rest.starts_with(':') {
                    continue;
                }
                let Ok(key) = serde_json::from_str::<String>(token) else {
                    continue;
                };
                let depth = open.len();
                if let Some(container) = open.last_mut() {
                    if container.on_path && container.object && depth == map_path.len() + 1 {
                        lines
                            .entry(key.clone())
                            .or_insert_with(|| line_at(text, start));
                    }
                    container.key = Some(key);
                }
            }
            _ => at += 1,
        }
    }
    lines
}

/// 1-based line of each server's name in a Codex TOML file (`[mcp_servers.NAME]`, dotted
/// keys and inline tables alike).
fn toml_entry_lines(text: &str, map_path: &[String]) -> BTreeMap<String, usize> {
    let Ok(root) = toml::de::DeTable::parse(text) else {
        return BTreeMap::new();
    };
    let mut table = root.get_ref();
    for key in map_path {
        let found = table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key.as_str());
        let Some((_, value)) = found else {
            return BTreeMap::new();
        };
        let toml::de::DeValue::Table(inner) = value.get_ref() else {
            return BTreeMap::new();
        };
        table = inner;
    }
    table
        .iter()
        .map(|(key, _)| (key.get_ref().to_string(), line_at(text, key.span().start)))
        .collect()
}

struct EntryContext<'a> {
    base: &'a Path,
    vars: &'a dyn Variables,
    origin: Origin,
    dialect: Dialect,
    inputs: &'a Inputs,
}

/// The prompts a VS Code file declares in its top-level `inputs` (`{"id", "description",
/// …}`), by id: what VS Code asks the user for when an entry says `${input:ID}`.
#[derive(Debug, Default)]
struct Inputs {
    descriptions: BTreeMap<String, String>,
}

impl Inputs {
    fn of(root: &Value) -> Inputs {
        let descriptions = root
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|input| {
                let id = input.get("id")?.as_str()?;
                let description = input.get("description").and_then(Value::as_str);
                Some((id.to_owned(), description.unwrap_or_default().to_owned()))
            })
            .collect();
        Inputs { descriptions }
    }
}

/// The variable a `${input:ID}` is read from: `SWITCHBOARD_INPUT_` and the id in capitals,
/// every character other than a letter or digit as `_` (`perplexity-key` →
/// `SWITCHBOARD_INPUT_PERPLEXITY_KEY`).
pub fn input_variable(id: &str) -> String {
    let mut name = String::from("SWITCHBOARD_INPUT_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Which client's files an entry is read from: it decides the spellings of the keys that
/// clients spell differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `mcp.json` and its relatives (Claude, Cursor, VS Code, Gemini).
    Json,
    /// Codex's `config.toml`.
    CodexToml,
}

impl Dialect {
    /// The keys read as the allow list and as the deny list, the common spelling first;
    /// then the other dialects' spellings, which are refused here (a filter silently
    /// ignored would let through tools meant to be left out).
    fn tool_list_keys(self) -> ToolListKeys {
        match self {
            Dialect::Json => ToolListKeys {
                enabled: &["enabledTools", "includeTools"],
                disabled: &["disabledTools", "excludeTools"],
                foreign: &[
                    (
                        "enabled_tools",
                        "Codex's spelling (its config.toml); here write `enabledTools`",
                    ),
                    (
                        "disabled_tools",
                        "Codex's spelling (its config.toml); here write `disabledTools`",
                    ),
                ],
            },
            Dialect::CodexToml => ToolListKeys {
                enabled: &["enabledTools", "enabled_tools"],
                disabled: &["disabledTools", "disabled_tools"],
                foreign: &[
                    (
                        "includeTools",
                        "Gemini's spelling (its JSON settings); here write `enabled_tools`",
                    ),
                    (
                        "excludeTools",
                        "Gemini's spelling (its JSON settings); here write `disabled_tools`",
                    ),
                ],
            },
        }
    }
}

/// The spellings of the tool lists in one dialect.
struct ToolListKeys {
    enabled: &'static [&'static str],
    disabled: &'static [&'static str],
    /// Another dialect's keys, each with what to say about it.
    foreign: &'static [(&'static str, &'static str)],
}

/// The keys an entry may have (besides the dialect's tool-list keys).
const ENTRY_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "disabled",
    "timeout",
    "startupTimeout",
    "era",
    "protocolVersion",
    "maxListPages",
    "maxListItems",
    "maxListBytes",
    "sandbox",
];

/// An entry key that is not one of ours but nearly is (`comand`, `Args`, `startuptimeout`):
/// "unknown key `comand` (did you mean `command`?)". A key far from every one of ours is
/// another client's setting (`alwaysAllow`, `envFile`, …) and is left alone: these files are
/// shared with other clients.
fn misspelt_key(object: &serde_json::Map<String, Value>, dialect: Dialect) -> Option<String> {
    let lists = dialect.tool_list_keys();
    let known: Vec<&str> = ENTRY_KEYS
        .iter()
        .chain(lists.enabled)
        .chain(lists.disabled)
        .chain(lists.foreign.iter().map(|(key, _)| key))
        .copied()
        .collect();
    object.keys().find_map(|key| {
        if known.contains(&key.as_str()) {
            return None;
        }
        let lower = key.to_ascii_lowercase();
        let allowed = if key.chars().count() <= 4 { 1 } else { 2 };
        known
            .iter()
            .map(|candidate| {
                (
                    strsim::osa_distance(&lower, &candidate.to_ascii_lowercase()),
                    *candidate,
                )
            })
            .filter(|(distance, _)| *distance <= allowed)
            .min()
            .map(|(_, candidate)| {
                format!(
                    "unknown key `{}` (did you mean `{candidate}`?)",
                    switchboard_text::peer_text::PeerLine(key)
                )
            })
    })
}

fn read_entry(name: &str, value: &Value, cx: &EntryContext<'_>) -> Result<ServerEntry, EntryError> {
    let fail = |detail: String| EntryError {
        name: name.to_owned(),
        detail,
        origin: cx.origin.clone(),
    };
    let object = value
        .as_object()
        .ok_or_else(|| fail("the entry must be an object".into()))?;
    let provenance = RefCell::new(Provenance::default());
    // Expands `text`, recorded under `field.recorded` and named in errors as `field.written`.
    let expand_field = |field: FieldNames<'_>, text: &str| {
        let mut substituted = Vec::new();
        let value = expand_tracked(text, cx.vars, &mut substituted).map_err(|unset| {
            fail(match unset {
                Unset::Variable(var) => format!(
                    "`{}` uses ${{{var}}}, which is not set; set it, or write ${{{var}:-default}}",
                    field.written
                ),
                Unset::Input { id, variable } => {
                    let prompt = match cx.inputs.descriptions.get(&id) {
                        Some(description) if !description.is_empty() => {
                            format!(" ({description:?} in the file's `inputs`)")
                        }
                        Some(_) => String::new(),
                        None => " (no such id in the file's `inputs`)".into(),
                    };
                    format!(
                        "`{}` uses ${{input:{id}}}{prompt}, a value VS Code asks for; \
                         Switchboard reads it from ${variable}, which is not set: set it, \
                         or write the value in the entry as ${{env:VAR}}",
                        field.written
                    )
                }
            })
        })?;
        if value != text {
            let mut provenance = provenance.borrow_mut();
            provenance.expanded.extend(substituted);
            let recorded = field.recorded.to_owned();
            provenance.written.push((recorded, text.to_owned()));
        }
        Ok(value)
    };
    let expand = |field: &str, text: &str| {
        let names = FieldNames {
            recorded: field,
            written: field,
        };
        expand_field(names, text)
    };
    let string = |field: &str| -> Result<Option<String>, EntryError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(field, s).map(Some),
            Some(_) => Err(fail(format!("`{field}` must be a string"))),
        }
    };
    let pairs = |field: &str| -> Result<Vec<(String, String)>, EntryError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), expand(&format!("{field}.{k}"), s)?)),
                    Value::Number(n) => Ok((k.clone(), n.to_string())),
                    Value::Bool(b) => Ok((k.clone(), b.to_string())),
                    _ => Err(fail(format!("`{field}.{k}` must be a string"))),
                })
                .collect(),
            Some(_) => Err(fail(format!("`{field}` must be an object of strings"))),
        }
    };
    // A field's text for an error message: as written when it had an expansion, so that no
    // variable's value is shown.
    let as_written = |field: &str, value: &str| {
        provenance
            .borrow()
            .as_written(field)
            .unwrap_or(value)
            .to_owned()
    };
    if let Some(misspelt) = misspelt_key(object, cx.dialect) {
        return Err(fail(misspelt));
    }
    let kind = string("type")?;
    let command = string("command")?;
    let url = string("url")?;
    let transport = match (kind.as_deref(), command, url) {
        (None | Some("stdio"), Some(command), None) => {
            if command.trim().is_empty() {
                return Err(fail("`command` is empty".into()));
            }
            let args = match object.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item {
                        Value::String(s) => expand(&format!("args[{i}]"), s),
                        Value::Number(n) => Ok(n.to_string()),
                        _ => Err(fail(format!("`args[{i}]` must be a string"))),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(fail("`args` must be an array of strings".into())),
            };
            let cwd = string("cwd")?.map(|cwd| cx.base.join(cwd));
            TransportEntry::Stdio {
                command,
                args,
                env: pairs("env")?,
                cwd,
            }
        }
        (None | Some("http" | "streamable-http" | "streamableHttp" | "sse"), None, Some(url)) => {
            let scheme = url
                .split_once("://")
                .map(|(scheme, _)| scheme.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("http" | "https")) {
                return Err(fail(format!(
                    "`url` {:?} is not an http:// or https:// URL; write it with its scheme, \
                     e.g. \"http://localhost:8080/mcp\"",
                    as_written("url", &url)
                )));
            }
            TransportEntry::Http {
                url,
                headers: pairs("headers")?,
            }
        }
        (_, Some(_), Some(_)) => return Err(fail("has both `command` and `url`; keep one".into())),
        (Some(other), _, _)
            if !matches!(
                other,
                "stdio" | "http" | "streamable-http" | "streamableHttp" | "sse"
            ) =>
        {
            return Err(fail(format!(
                "unknown `type` \"{}\"; use \"stdio\" or \"http\"",
                as_written("type", other)
            )));
        }
        _ => {
            return Err(fail(
                "needs `command` (a local server) or `url` (a remote server)".into(),
            ));
        }
    };
    let enabled = match (object.get("enabled"), object.get("disabled")) {
        (Some(Value::Bool(false)), _) | (_, Some(Value::Bool(true))) => false,
        (Some(Value::Bool(true)) | None, Some(Value::Bool(false)) | None) => true,
        _ => return Err(fail("`enabled`/`disabled` must be true or false".into())),
    };
    let duration = |field: &str| -> Result<Option<Duration>, EntryError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(secs) if secs > 0.0 && secs.is_finite() && secs < 86_400.0 => {
                    Ok(Some(Duration::from_secs_f64(secs)))
                }
                _ => Err(fail(format!(
                    "`{field}` must be a positive number of seconds"
                ))),
            },
            Some(Value::String(s)) => parse_duration(s)
                .map(Some)
                .map_err(|e| fail(format!("`{field}`: {e}"))),
            Some(_) => Err(fail(format!(
                "`{field}` must be seconds or text like \"30s\""
            ))),
        }
    };
    let count = |field: &str| -> Result<Option<usize>, EntryError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(fail(format!("`{field}` must be a positive whole number"))),
            },
            Some(_) => Err(fail(format!("`{field}` must be a positive whole number"))),
        }
    };
    let list_limits = ListLimits {
        pages: count("maxListPages")?,
        items: count("maxListItems")?,
        bytes: count("maxListBytes")?,
    };
    let tool_filter = read_tool_filter(object, cx.dialect, &expand_field).map_err(fail)?;
    let sandbox = read_sandbox(object.get("sandbox"), &transport).map_err(fail)?;
    let era = string("era")?;
    if let Some(era) = &era
        && !matches!(era.as_str(), "auto" | "legacy" | "modern")
    {
        return Err(fail(format!(
            "`era` must be \"auto\", \"legacy\" or \"modern\", not \"{}\"",
            as_written("era", era)
        )));
    }
    Ok(ServerEntry {
        name: name.to_owned(),
        transport,
        enabled,
        timeout: duration("timeout")?,
        startup_timeout: duration("startupTimeout")?,
        era,
        protocol_version: string("protocolVersion")?,
        list_limits,
        tool_filter,
        sandbox,
        origin: cx.origin.clone(),
        provenance: provenance.into_inner(),
    })
}

/// Reads an entry's `sandbox`: only for a local server, and only where a sandbox can be
/// applied (Linux). The error is the entry error's detail.
fn read_sandbox(
    value: Option<&Value>,
    transport: &TransportEntry,
) -> Result<SandboxChoice, String> {
    let Some(value) = value else {
        return Ok(SandboxChoice::Unset);
    };
    let choice = SandboxChoice::from_config(value)?;
    if let (SandboxChoice::On(_), TransportEntry::Http { .. }) = (&choice, transport) {
        return Err(
            "`sandbox` applies to a local server (`command`); remove it from this `url` entry"
                .into(),
        );
    }
    if let (SandboxChoice::On(_), false) = (&choice, switchboard_sandbox::SUPPORTED) {
        return Err("`sandbox` is supported on Linux only; remove it, or set it to false".into());
    }
    Ok(choice)
}

/// A field's name as provenance records it (the common spelling, which displays use) and
/// as the file wrote it (for errors).
#[derive(Clone, Copy)]
struct FieldNames<'a> {
    recorded: &'a str,
    written: &'a str,
}

/// Reads the entry's allow and deny lists in its dialect's spellings; the error is the
/// entry error's detail. `expand` expands a pattern.
fn read_tool_filter(
    object: &Map<String, Value>,
    dialect: Dialect,
    expand: &dyn Fn(FieldNames<'_>, &str) -> Result<String, EntryError>,
) -> Result<ToolFilter, String> {
    let keys = dialect.tool_list_keys();
    if let Some((key, why)) = keys
        .foreign
        .iter()
        .find(|(key, _)| object.contains_key(*key))
    {
        return Err(format!("`{key}` is {why}"));
    }
    let list = |spellings: &[&str]| -> Result<Option<Vec<ToolPattern>>, String> {
        let given: Vec<&str> = spellings
            .iter()
            .copied()
            .filter(|key| object.get(*key).is_some_and(|v| !v.is_null()))
            .collect();
        let key = match given.as_slice() {
            [] => return Ok(None),
            [key] => *key,
            [first, second, ..] => {
                return Err(format!(
                    "`{first}` and `{second}` are the same list; keep one"
                ));
            }
        };
        let Some(Value::Array(items)) = object.get(key) else {
            return Err(format!("`{key}` must be a list of tool names or patterns"));
        };
        if items.len() > ToolFilter::MAX_PATTERNS {
            return Err(format!(
                "`{key}` has {} patterns; at most {} are allowed",
                items.len(),
                ToolFilter::MAX_PATTERNS
            ));
        }
        let patterns = items.iter().enumerate().map(|(i, item)| {
            let Value::String(text) = item else {
                return Err(format!("`{key}[{i}]` must be a string"));
            };
            let recorded = format!("{}[{i}]", spellings[0]);
            let written = format!("{key}[{i}]");
            let names = FieldNames {
                recorded: &recorded,
                written: &written,
            };
            let text = expand(names, text).map_err(|e| e.detail)?;
            ToolPattern::new(&text).map_err(|e| match e {
                ToolFilterError::EmptyPattern => format!("`{key}[{i}]` is empty"),
                other => format!("`{key}[{i}]`: {other}"),
            })
        });
        patterns.collect::<Result<Vec<_>, _>>().map(Some)
    };
    let enabled = list(keys.enabled)?;
    let disabled = list(keys.disabled)?.unwrap_or_default();
    ToolFilter::new(enabled, disabled).map_err(|e| e.to_string())
}

/// Expands `${VAR}` and `${VAR:-default}`, VS Code's `${env:VAR}` (the same) and
/// `${input:ID}` (from [`input_variable`]); returns the reference (`VAR`, `env:VAR`,
/// `input:ID`) of an unset variable without a default. `$$` is a literal `$`.
pub fn expand_vars(text: &str, vars: &dyn Variables) -> Result<String, String> {
    expand_tracked(text, vars, &mut Vec::new()).map_err(|unset| match unset {
        Unset::Variable(reference) => reference,
        Unset::Input { id, .. } => format!("input:{id}"),
    })
}

/// A reference to a variable that is not set (and has no default).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unset {
    /// `${VAR}` or `${env:VAR}`: the reference as written (`VAR`, `env:VAR`).
    Variable(String),
    /// `${input:ID}`, read from `variable`.
    Input {
        /// The input's id.
        id: String,
        /// The variable it is read from.
        variable: String,
    },
}

/// [`expand_vars`], noting each value taken from a variable in `substituted`.
fn expand_tracked(
    text: &str,
    vars: &dyn Variables,
    substituted: &mut Vec<String>,
) -> Result<String, Unset> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                out.push_str(&rest[at..]);
                return Ok(out);
            };
            let expr = &body[..end];
            let (reference, default) = match expr.split_once(":-") {
                Some((reference, default)) => (reference, Some(default)),
                None => (expr, None),
            };
            let (variable, unset) = if let Some(id) = reference.strip_prefix("input:") {
                let variable = input_variable(id);
                let unset = Unset::Input {
                    id: id.to_owned(),
                    variable: variable.clone(),
                };
                (variable, unset)
            } else {
                let variable = reference.strip_prefix("env:").unwrap_or(reference);
                (variable.to_owned(), Unset::Variable(reference.to_owned()))
            };
            match (vars.get(&variable), default) {
                (Some(value), _) => {
                    out.push_str(&value);
                    substituted.push(value);
                }
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(unset),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses `"500ms"`, `"30s"`, `"2m"`, `"1h"` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 30s, 500ms or 2m"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ms, s, m or h"
            ));
        }
    };
    if !(secs > 0.0 && secs.is_finite() && secs < 86_400.0 * 7.0) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(text: &str, expect: Expect) {
        let vars: BTreeMap<String, String> = [
            ("TOKEN".to_owned(), "s3cret".to_owned()),
            ("HOME".to_owned(), "/home/u".to_owned()),
        ]
        .into();
        let actual = match parse(text, Path::new("/p/mcp.json"), &vars) {
            Err(e) => format!("error: {e}"),
            Ok(file) => file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(entry) => {
                        format!("ok {} {} at {}", entry.name, entry.redacted(), entry.origin)
                    }
                    Err(e) => format!("err {e}"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn entries_are_validated_one_by_one() {
        check(
            r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server-fs", "${HOME}"], "env": { "API_KEY": "${TOKEN}" } },
    "broken": { "command": "x", "env": { "K": "${MISSING}" } },
    "remote": { "type": "http", "url": "https://example.test/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } },
    "neither": { "args": [] },
    "off": { "command": "y", "cwd": "sub", "disabled": true, "timeout": "1.5s" },
    "defaulted": { "command": "${CMD:-node}" }
  }
}"#,
            expect![[r#"
                ok fs {"type":"stdio","command":"npx","args":["-y","server-fs","${HOME}"],"env":{"API_KEY":"<redacted>"},"enabled":true} at /p/mcp.json:3
                err /p/mcp.json:4: server `broken`: `env.K` uses ${MISSING}, which is not set; set it, or write ${MISSING:-default}
                ok remote {"type":"http","url":"https://example.test/mcp","headers":{"Authorization":"<redacted>"},"enabled":true} at /p/mcp.json:5
                err /p/mcp.json:6: server `neither`: needs `command` (a local server) or `url` (a remote server)
                ok off {"type":"stdio","command":"y","args":[],"env":{},"cwd":"/p/sub","enabled":false} at /p/mcp.json:7
                ok defaulted {"type":"stdio","command":"${CMD:-node}","args":[],"env":{},"enabled":true} at /p/mcp.json:8"#]],
        );
    }

    #[test]
    fn listing_caps_are_positive_whole_numbers() {
        let vars = BTreeMap::new();
        let text = r#"{"mcpServers": {
            "big": { "command": "x", "maxListItems": 50000, "maxListBytes": 100000000, "maxListPages": 500 },
            "plain": { "command": "x" },
            "zero": { "command": "x", "maxListItems": 0 },
            "text": { "command": "x", "maxListPages": "9" },
            "fraction": { "command": "x", "maxListBytes": 1.5 }
        }}"#;
        let file = parse(text, Path::new("/p/mcp.json"), &vars).expect("parses");
        let shown: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!("{} {:?}", entry.name, entry.list_limits),
                Err(e) => format!("err {e}"),
            })
            .collect();
        expect![[r#"
            [
                "big ListLimits { pages: Some(500), items: Some(50000), bytes: Some(100000000) }",
                "plain ListLimits { pages: None, items: None, bytes: None }",
                "err /p/mcp.json:4: server `zero`: `maxListItems` must be a positive whole number",
                "err /p/mcp.json:5: server `text`: `maxListPages` must be a positive whole number",
                "err /p/mcp.json:6: server `fraction`: `maxListBytes` must be a positive whole number",
            ]
        "#]]
        .assert_debug_eq(&shown);
        let mut caps = (100, 10_000, 1 << 25);
        file.servers[0]
            .as_ref()
            .expect("big")
            .list_limits
            .apply_to([&mut caps.0, &mut caps.1, &mut caps.2]);
        assert_eq!(caps, (500, 50_000, 100_000_000));
    }

    #[test]
    fn file_level_errors_have_positions() {
        check(
            "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" },\n  }\n}",
            expect![[r#"error: /p/mcp.json:4:3: invalid JSON: trailing comma at line 4 column 3"#]],
        );
        check(
            r#"{"servers": {"v": {"type": "stdio", "command": "c"}}}"#,
            expect![[
                r#"ok v {"type":"stdio","command":"c","args":[],"env":{},"enabled":true} at /p/mcp.json:1"#
            ]],
        );
        check(
            r#"{"other": 1}"#,
            expect![[
                r#"error: /p/mcp.json: no `mcpServers` map found (expected `{"mcpServers": {"name": {"command": …}}}`)"#
            ]],
        );
    }

    #[test]
    fn codex_toml_dialect() {
        let vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        let text = "model = \"x\"\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs-server\"]\nenv = { API_KEY = \"${TOKEN}\" }\nstartup_timeout_sec = 20\ntool_timeout_sec = 90\n\n[mcp_servers.remote]\nurl = \"https://example.test/mcp\"\nhttp_headers = { Authorization = \"Bearer ${TOKEN}\" }\nenabled = false\n";
        let file = parse(text, Path::new("/h/.codex/config.toml"), &vars).expect("parse");
        let rendered: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!(
                    "{} {} at {} timeout={:?} startup={:?}",
                    entry.name,
                    entry.redacted(),
                    entry.origin,
                    entry.timeout,
                    entry.startup_timeout
                ),
                Err(e) => format!("err {e}"),
            })
            .collect();
        expect![[r#"
            docs {"type":"stdio","command":"npx","args":["-y","docs-server"],"env":{"API_KEY":"<redacted>"},"enabled":true} at /h/.codex/config.toml:3 timeout=Some(90s) startup=Some(20s)
            remote {"type":"http","url":"https://example.test/mcp","headers":{"Authorization":"<redacted>"},"enabled":false} at /h/.codex/config.toml:10 timeout=None startup=None"#]].assert_eq(&rendered.join("\n"));
        let broken =
            parse("[mcp_servers.x]\ncommand = ", Path::new("c.toml"), &vars).expect_err("syntax");
        expect!["c.toml:2:11: invalid TOML: string values must be quoted, expected literal string"]
            .assert_eq(&broken.to_string());
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_key_meant_and_other_clients_keys_are_left_alone() {
        check(
            r#"{"mcpServers": {
    "a": { "comand": "x" },
    "b": { "command": "x", "agrs": ["--port", "9"] },
    "c": { "command": "x", "Env": { "K": "v" } },
    "d": { "url": "https://example.test/mcp", "header": { "K": "v" } },
    "e": { "command": "x", "startuptimeout": "5s" },
    "f": { "command": "x", "alwaysAllow": ["read"], "envFile": ".env", "autoApprove": [], "trust": true }
}}"#,
            expect![[r#"
                err /p/mcp.json:2: server `a`: unknown key `comand` (did you mean `command`?)
                err /p/mcp.json:3: server `b`: unknown key `agrs` (did you mean `args`?)
                err /p/mcp.json:4: server `c`: unknown key `Env` (did you mean `env`?)
                err /p/mcp.json:5: server `d`: unknown key `header` (did you mean `headers`?)
                err /p/mcp.json:6: server `e`: unknown key `startuptimeout` (did you mean `startupTimeout`?)
                ok f {"type":"stdio","command":"x","args":[],"env":{},"enabled":true} at /p/mcp.json:7"#]],
        );
        let vars = BTreeMap::new();
        let codex = parse(
            "[mcp_servers.x]\ncomand = \"y\"\n",
            Path::new("c.toml"),
            &vars,
        )
        .expect("parse");
        let shown: Vec<String> = codex
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => entry.name.clone(),
                Err(e) => e.to_string(),
            })
            .collect();
        expect!["c.toml:1: server `x`: unknown key `comand` (did you mean `command`?)"]
            .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn entry_lines_are_found_however_names_are_written() {
        // A name written with escapes had no line (found by fuzzing), and a server named
        // like a field of an earlier entry got that field's line.
        check(
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"env\": {}},\n  \"env\": {\"url\": 1},\n  \"c\\u0041\": {}\n}}",
            expect![[r#"
                ok a {"type":"stdio","command":"x","args":[],"env":{},"enabled":true} at /p/mcp.json:2
                err /p/mcp.json:3: server `env`: `url` must be a string
                err /p/mcp.json:4: server `cA`: needs `command` (a local server) or `url` (a remote server)"#]],
        );
        let vars = BTreeMap::new();
        let text = "[mcp_servers]\ninline = { url = 3 }\ndotted.command = \"x\"\n";
        let file = parse(text, Path::new("c.toml"), &vars).expect("parse");
        let origins: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!("{} at {}", entry.name, entry.origin),
                Err(e) => e.to_string(),
            })
            .collect();
        expect![[r#"
            dotted at c.toml:3
            c.toml:2: server `inline`: `url` must be a string"#]]
        .assert_eq(&origins.join("\n"));
    }

    #[test]
    fn errors_show_fields_with_expansions_as_written() {
        // Found by fuzzing: an unknown `type` or `era` was shown with the variable's value.
        check(
            r#"{"mcpServers": {"a": {"command": "x", "era": "${TOKEN}"}, "b": {"type": "${TOKEN}", "url": "u"}}}"#,
            expect![[r#"
                err /p/mcp.json:1: server `a`: `era` must be "auto", "legacy" or "modern", not "${TOKEN}"
                err /p/mcp.json:1: server `b`: unknown `type` "${TOKEN}"; use "stdio" or "http""#]],
        );
        check(
            "{\"mcpServers\": {\"a\": 1,\n",
            expect![
                "error: /p/mcp.json:2:1: invalid JSON: EOF while parsing a value at line 2 column 0"
            ],
        );
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        let file = parse(
            r#"{"mcpServers":{"a":{"command":"c","env":{"K":"${TOKEN}"}}}}"#,
            Path::new("m.json"),
            &vars,
        );
        let shown = format!("{file:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn expansions_are_secret_wherever_they_land() {
        let vars: BTreeMap<String, String> =
            [("TOKEN".to_owned(), "s3cret-t0ken".to_owned())].into();
        let file = parse(
            r#"{"mcpServers":{
                "web":{"url":"https://user:${TOKEN}@h.example/mcp/${TOKEN}?key=${TOKEN}&plain=visible-value","headers":{"X-Key":"${TOKEN}"}},
                "local":{"command":"run-${TOKEN}","args":["--token=${TOKEN}","--plain"],"cwd":"d-${TOKEN}"}
            }}"#,
            Path::new("/p/mcp.json"),
            &vars,
        )
        .expect("parse");
        let mut shown = Vec::new();
        for entry in file.entries() {
            shown.push(format!("{entry:?}"));
            shown.push(format!("{:?}", entry.transport));
            shown.push(format!("{:?}", entry.display_url()));
            let secrets = entry.secrets();
            assert!(
                entry.secret_values().contains(&"s3cret-t0ken".to_owned()),
                "{}",
                entry.name
            );
            assert_eq!(secrets.redact("x s3cret-t0ken y"), "x <redacted> y");
        }
        let shown = shown.join("\n");
        assert!(!shown.contains("s3cret"), "{shown}");
        expect![[r#"
            ServerEntry { name: "web", config: Object {"type": String("http"), "url": String("https://***@h.example/mcp/${TOKEN}?key=***&plain=***"), "headers": Object {"X-Key": String("<redacted>")}, "enabled": Bool(true)}, origin: Origin { file: "/p/mcp.json", line: Some(2) } }
            Http { url: "https://***@h.example/…", header_names: ["X-Key"] }
            Some("https://***@h.example/mcp/${TOKEN}?key=***&plain=***")
            ServerEntry { name: "local", config: Object {"type": String("stdio"), "command": String("run-${TOKEN}"), "args": Array [String("--token=${TOKEN}"), String("--plain")], "env": Object {}, "cwd": String("d-${TOKEN}"), "enabled": Bool(true)}, origin: Origin { file: "/p/mcp.json", line: Some(3) } }
            Stdio { arg_count: 2, env_names: [], .. }
            None"#]].assert_eq(&shown);
    }

    /// Each entry's filter as `name allow=[..] deny=[..]`, or its error.
    fn filters(text: &str, path: &str) -> String {
        let vars: BTreeMap<String, String> = [("PREFIX".to_owned(), "read".to_owned())].into();
        let file = parse(text, Path::new(path), &vars).expect("parses");
        let shown: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => {
                    let list = |l: &[ToolPattern]| {
                        l.iter()
                            .map(ToolPattern::as_str)
                            .collect::<Vec<_>>()
                            .join(",")
                    };
                    let allow = entry.tool_filter.enabled().map(list);
                    let deny = list(entry.tool_filter.disabled());
                    format!("ok {} allow={allow:?} deny=[{deny}]", entry.name)
                }
                Err(e) => format!("err {e}"),
            })
            .collect();
        shown.join("\n")
    }

    #[test]
    fn tool_filters_in_each_dialect() {
        let json = r#"{"mcpServers": {
            "common": { "command": "x", "enabledTools": ["read_*", "list"], "disabledTools": ["*_secret"] },
            "gemini": { "command": "x", "includeTools": ["${PREFIX}_*"], "excludeTools": ["delete?"] },
            "none": { "command": "x", "enabledTools": [] },
            "codex": { "command": "x", "disabled_tools": ["rm"] }
        }}"#;
        expect![[r#"
            ok common allow=Some("read_*,list") deny=[*_secret]
            ok gemini allow=Some("read_*") deny=[delete?]
            ok none allow=Some("") deny=[]
            err /p/mcp.json:5: server `codex`: `disabled_tools` is Codex's spelling (its config.toml); here write `disabledTools`"#]]
        .assert_eq(&filters(json, "/p/mcp.json"));
        let toml = "[mcp_servers.codex]\ncommand = \"x\"\nenabled_tools = [\"read_*\"]\ndisabled_tools = [\"read_secret\"]\n\n[mcp_servers.common]\ncommand = \"x\"\ndisabledTools = [\"rm\"]\n\n[mcp_servers.gemini]\ncommand = \"x\"\nexcludeTools = [\"rm\"]\n";
        expect![[r#"
            ok codex allow=Some("read_*") deny=[read_secret]
            ok common allow=None deny=[rm]
            err /h/config.toml:10: server `gemini`: `excludeTools` is Gemini's spelling (its JSON settings); here write `disabled_tools`"#]]
        .assert_eq(&filters(toml, "/h/config.toml"));
        let vars: BTreeMap<String, String> = [("PREFIX".to_owned(), "read".to_owned())].into();
        let mut file = parse(json, Path::new("/p/mcp.json"), &vars).expect("parses");
        let gemini = file.servers.remove(1).expect("gemini");
        // Shown in the common spelling, the pattern from a variable as written.
        expect![[r#"{"type":"stdio","command":"x","args":[],"env":{},"enabled":true,"enabledTools":["${PREFIX}_*"],"disabledTools":["delete?"]}"#]]
            .assert_eq(&gemini.redacted().to_string());
        let common = file.servers.remove(0).expect("common");
        let passed: Vec<&str> = ["read_file", "read_secret", "list", "write"]
            .into_iter()
            .filter(|tool| common.tool_filter.allows(tool))
            .collect();
        assert_eq!(passed, ["read_file", "list"], "deny wins over allow");
        expect![[r#"{"type":"stdio","command":"x","args":[],"env":{},"enabled":true,"enabledTools":["read_*","list"],"disabledTools":["*_secret"]}"#]]
            .assert_eq(&common.redacted().to_string());
    }

    #[test]
    fn tool_filter_errors_name_the_entry_and_its_line() {
        let long = "x".repeat(ToolPattern::MAX_LEN + 1);
        let many = vec!["\"t\""; ToolFilter::MAX_PATTERNS + 1].join(",");
        let text = format!(
            r#"{{"mcpServers": {{
            "text": {{ "command": "x", "enabledTools": "read_*" }},
            "number": {{ "command": "x", "disabledTools": ["ok", 7] }},
            "empty": {{ "command": "x", "disabledTools": [""] }},
            "long": {{ "command": "x", "enabledTools": ["{long}"] }},
            "many": {{ "command": "x", "excludeTools": [{many}] }},
            "twice": {{ "command": "x", "enabledTools": ["a"], "includeTools": ["b"] }},
            "unset": {{ "command": "x", "excludeTools": ["${{NOPE}}"] }},
            "null": {{ "command": "x", "enabledTools": null }}
        }}}}"#
        );
        expect![[r#"
            err /p/mcp.json:2: server `text`: `enabledTools` must be a list of tool names or patterns
            err /p/mcp.json:3: server `number`: `disabledTools[1]` must be a string
            err /p/mcp.json:4: server `empty`: `disabledTools[0]` is empty
            err /p/mcp.json:5: server `long`: `enabledTools[0]`: a tool pattern is 257 bytes long; at most 256 are allowed
            err /p/mcp.json:6: server `many`: `excludeTools` has 1001 patterns; at most 1000 are allowed
            err /p/mcp.json:7: server `twice`: `enabledTools` and `includeTools` are the same list; keep one
            err /p/mcp.json:8: server `unset`: `excludeTools[0]` uses ${NOPE}, which is not set; set it, or write ${NOPE:-default}
            ok null allow=None deny=[]"#]]
        .assert_eq(&filters(&text, "/p/mcp.json"));
    }

    #[test]
    fn vscode_inputs_and_env_references() {
        let text = r#"{
  "inputs": [
    { "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true }
  ],
  "servers": {
    "asked": { "command": "npx", "env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}" } },
    "undeclared": { "url": "https://h.example/mcp", "headers": { "X-Key": "${input:other}" } },
    "env": { "command": "npx", "args": ["--token", "${env:TOKEN}"], "env": { "K": "${env:NOPE:-fallback}" } },
    "unset": { "command": "npx", "env": { "K": "${env:NOPE}" } }
  }
}"#;
        let path = Path::new("/p/.vscode/mcp.json");
        let show = |vars: &BTreeMap<String, String>| {
            let file = parse_as(text, path, &Layout::vscode(), vars).expect("parses");
            let lines: Vec<String> = file
                .file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(entry) => format!("ok {} {}", entry.name, entry.redacted()),
                    Err(e) => format!("err {e}"),
                })
                .collect();
            lines.join("\n")
        };
        let mut vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        expect![[r#"
            err /p/.vscode/mcp.json:6: server `asked`: `env.PERPLEXITY_API_KEY` uses ${input:perplexity-key} ("Perplexity API Key" in the file's `inputs`), a value VS Code asks for; Switchboard reads it from $SWITCHBOARD_INPUT_PERPLEXITY_KEY, which is not set: set it, or write the value in the entry as ${env:VAR}
            err /p/.vscode/mcp.json:7: server `undeclared`: `headers.X-Key` uses ${input:other} (no such id in the file's `inputs`), a value VS Code asks for; Switchboard reads it from $SWITCHBOARD_INPUT_OTHER, which is not set: set it, or write the value in the entry as ${env:VAR}
            ok env {"type":"stdio","command":"npx","args":["--token","${env:TOKEN}"],"env":{"K":"<redacted>"},"enabled":true}
            err /p/.vscode/mcp.json:9: server `unset`: `env.K` uses ${env:NOPE}, which is not set; set it, or write ${env:NOPE:-default}"#]]
        .assert_eq(&show(&vars));
        vars.insert(
            "SWITCHBOARD_INPUT_PERPLEXITY_KEY".into(),
            "pplx-s3cret".into(),
        );
        let file = parse_as(text, path, &Layout::vscode(), &vars).expect("parses");
        let asked = file.file.servers[0].as_ref().expect("asked");
        assert_eq!(
            asked.transport,
            TransportEntry::Stdio {
                command: "npx".into(),
                args: Vec::new(),
                env: vec![("PERPLEXITY_API_KEY".into(), "pplx-s3cret".into())],
                cwd: None,
            }
        );
        assert!(asked.secret_values().contains(&"pplx-s3cret".to_owned()));
        let env = file.file.servers[2].as_ref().expect("env");
        assert!(env.secret_values().contains(&"s3cret".to_owned()));
        assert!(!format!("{env:?}").contains("s3cret"));
        assert_eq!(
            expand_vars("${input:a-b}", &vars),
            Err("input:a-b".to_owned())
        );
        assert_eq!(input_variable("my.key-2"), "SWITCHBOARD_INPUT_MY_KEY_2");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(
            expand_vars("a$$b$c", &BTreeMap::new()),
            Ok("a$b$c".to_owned())
        );
    }
}
