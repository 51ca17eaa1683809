//! `switchboard config`: where servers are configured (`list`, `show`), and changing that
//! (`add`, `remove`, `import`, `trust`); and the discovery every command uses without
//! `--config` (`discovered_config`).
//!
//! Discovery and editing are `switchboard-config`'s; trust of project definitions is the
//! runtime's `TrustStore`, keyed as the runtime keys it. This file decides which file a verb
//! works on and renders what it did.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use switchboard_config::discover::{self, Client, Discovered, Found, Looked, Place, Places, Scope};
use switchboard_config::edit::{self, EditError};
use switchboard_config::{ConfigFile, EntryError, Layout, ProcessEnv, ServerEntry, TransportEntry};
use switchboard_runtime::sources::{self, ConfiguredServer, TrustKey, TrustStatus, TrustStore};

use crate::Failure;
use crate::terminal::{self, JsonLayout};

#[derive(Debug, Args)]
struct Common {
    /// Work on this file only, instead of the discovered ones.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// Every configured server: name, source file and line, enabled, command or URL.
    List,
    /// One server's entry, secrets redacted.
    Show {
        /// The server.
        name: String,
    },
    /// Add a server: `add NAME [--env KEY=VALUE]... -- CMD ARGS...` or
    /// `add NAME --url URL [--header 'Name: value']...`.
    Add {
        /// The server's name.
        name: String,
        /// Which file: the project's `.mcp.json` or the user's
        /// `~/.config/switchboard/mcp.json` (the default).
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
        /// A remote server's URL.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// An environment variable of a local server (repeatable); `KEY='${VAR}'` keeps the
        /// value out of the file.
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A header sent to a remote server (repeatable), e.g.
        /// `--header 'Authorization: Bearer ${TOKEN}'`.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// A local server's command and arguments, after `--`.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Remove a server (from the file its definition comes from, unless a scope or
    /// `--config` names another).
    Remove {
        /// The server.
        name: String,
        /// From the project's `.mcp.json` or the user's file.
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Copy another client's servers into our file (names we already have are skipped).
    Import {
        /// Whose servers.
        #[arg(long, value_enum)]
        from: ImportFrom,
        /// Into the project's `.mcp.json` or the user's file (the default).
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Trust a project file's definition of a server, so that it may start: that
    /// definition, in that file of this project (`--list`: every trusted definition).
    Trust {
        /// The server.
        #[arg(required_unless_present = "list", conflicts_with = "list")]
        name: Option<String>,
        /// List every trusted definition (server, file, and whether it still matches).
        #[arg(long)]
        list: bool,
    },
    /// Take back the trust of a project file's definition of a server.
    Untrust {
        /// The server.
        name: String,
    },
}

/// The scope of our own files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScopeArg {
    /// `.mcp.json` in the current directory.
    Project,
    /// `~/.config/switchboard/mcp.json`.
    User,
}

/// The clients `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ImportFrom {
    /// Claude Code (`~/.claude.json`, this project's part and the user's) and Claude Desktop.
    Claude,
    /// Cursor (`.cursor/mcp.json`, `~/.cursor/mcp.json`).
    Cursor,
    /// VS Code (`.vscode/mcp.json`, the user's `mcp.json`).
    Vscode,
    /// Codex (`.codex/config.toml`, `~/.codex/config.toml`).
    Codex,
    /// Gemini CLI (`.gemini/settings.json`, `~/.gemini/settings.json`).
    Gemini,
}

impl ImportFrom {
    fn clients(self) -> &'static [Client] {
        match self {
            ImportFrom::Claude => &[Client::ClaudeCode, Client::ClaudeDesktop],
            ImportFrom::Cursor => &[Client::Cursor],
            ImportFrom::Vscode => &[Client::VsCode],
            ImportFrom::Codex => &[Client::Codex],
            ImportFrom::Gemini => &[Client::Gemini],
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            ImportFrom::Claude => "claude",
            ImportFrom::Cursor => "cursor",
            ImportFrom::Vscode => "vscode",
            ImportFrom::Codex => "codex",
            ImportFrom::Gemini => "gemini",
        }
    }
}

/// `switchboard config VERB`, with the `--config`/`--json` every verb takes.
#[derive(Debug, Args)]
pub(crate) struct ConfigCommand {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    verb: Verb,
}

impl ConfigCommand {
    /// Whether JSON was asked for.
    pub(crate) fn wants_json(&self) -> bool {
        self.common.json
    }
}

/// Runs a verb. A file that cannot be read or written is the system's refusal (exit 5);
/// every other error is a usage or configuration error (exit 2).
pub(crate) fn run(command: ConfigCommand) -> Result<u8, Failure> {
    let places = current_places()?;
    let common = &command.common;
    let output = Output {
        json: common.json,
        places: &places,
    };
    match command.verb {
        Verb::List => list(&read(&places, common.config.as_deref())?, &output),
        Verb::Show { name } => show(&read(&places, common.config.as_deref())?, &name, &output),
        Verb::Add {
            name,
            scope,
            url,
            env,
            headers,
            command,
        } => {
            let entry = NewEntry::from_flags(url, &command, &env, &headers)?;
            let target = target_file(&places, common.config.as_deref(), scope)?;
            add(&target, &name, &entry, &output)
        }
        Verb::Remove { name, scope } => {
            let target = match (common.config.as_deref(), scope) {
                (None, None) => defining_file(&places, &name)?,
                (config, scope) => target_file(&places, config, scope)?,
            };
            remove(&target, &name, &output)
        }
        Verb::Import { from, scope } => {
            let target = target_file(&places, common.config.as_deref(), scope)?;
            import(&places, from, &target, &output)
        }
        Verb::Trust {
            name: Some(name), ..
        } => trust(&places, &name, &output),
        Verb::Trust { name: None, .. } => trusted_list(&places, &output),
        Verb::Untrust { name } => untrust(&places, &name, &output),
    }
}

fn current_places() -> Result<Places, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    Ok(Places::from_vars(&cwd, &ProcessEnv))
}

/// How a verb prints.
struct Output<'a> {
    json: bool,
    places: &'a Places,
}

impl Output<'_> {
    /// A path as people read it: `./…` under the project directory, `~/…` under home.
    fn path(&self, path: &Path) -> String {
        if let Ok(rest) = path.strip_prefix(&self.places.project_dir) {
            return format!("./{}", rest.display());
        }
        if let Some(home) = &self.places.home
            && let Ok(rest) = path.strip_prefix(home)
        {
            return format!("~/{}", rest.display());
        }
        path.display().to_string()
    }

    fn origin(&self, file: &str, line: Option<usize>) -> String {
        let path = self.path(Path::new(file));
        match line {
            Some(line) => format!("{path}:{line}"),
            None => path,
        }
    }

    fn done(&self, value: Value, text: &str) -> Result<u8, Failure> {
        if self.json {
            terminal::print_json(&value, JsonLayout::Compact);
        } else {
            terminal::print(text);
        }
        Ok(0)
    }
}

/// The servers a verb looks at: the named file's, or the discovered ones.
fn read(places: &Places, config: Option<&Path>) -> Result<Discovered, Failure> {
    match config {
        Some(path) => {
            let place = Place {
                path: path.to_owned(),
                layout: Layout::for_path(path),
                scope: Scope::Explicit,
                client: Client::Switchboard,
                part: None,
            };
            let discovered = discover::discover_in(vec![place], &ProcessEnv);
            match discovered.looked.first() {
                Some((_, Looked::Failed(error))) => Err(Failure::of_config(error)),
                _ => Ok(discovered),
            }
        }
        None => Ok(discover::discover(places, &ProcessEnv)),
    }
}

/// Whether a project definition may start: trusted in the user's trust store.
fn trust_status(found: &Found, store: Option<&TrustStore>) -> TrustStatus {
    if found.scope != Scope::Project {
        return TrustStatus::NotNeeded;
    }
    match (&found.server, store) {
        (Ok(entry), Some(store)) => store.status(&configured(entry, found)),
        _ => TrustStatus::Untrusted,
    }
}

fn trusted(found: &Found, store: Option<&TrustStore>) -> bool {
    matches!(
        trust_status(found, store),
        TrustStatus::NotNeeded | TrustStatus::Trusted
    )
}

/// Why a project definition may not start, and the command that lets it.
fn untrusted_detail(name: &str, status: TrustStatus) -> String {
    match status {
        TrustStatus::Changed => format!(
            "defined in a project file and changed since it was trusted; look at it \
             (`switchboard config show {name}`), then run `switchboard config trust {name}` to \
             let it start"
        ),
        _ => format!(
            "defined in a project file and not trusted yet; run `switchboard config trust \
             {name}` to let it start"
        ),
    }
}

fn configured(entry: &ServerEntry, found: &Found) -> ConfiguredServer {
    ConfiguredServer {
        entry: entry.clone(),
        scope: match found.scope {
            Scope::Explicit => sources::Scope::Explicit,
            Scope::Project => sources::Scope::Project,
            Scope::User => sources::Scope::User,
        },
        trust_key: TrustKey::of(&found.path, &entry.name, &found.written),
    }
}

fn trust_store(places: &Places) -> Option<TrustStore> {
    let path = places.trust_file()?;
    match TrustStore::load(&path) {
        Ok(store) => {
            if store.is_older_format() {
                terminal::say(format_args!(
                    "switchboard: the trust store {} was written by an older Switchboard, \
                     whose trust held in every folder; trust is now bound to the project \
                     file, so no project server is trusted until you trust it again \
                     (`switchboard config trust NAME` in its project)",
                    path.display()
                ));
            }
            Some(store)
        }
        Err(error) => {
            terminal::say(format_args!(
                "switchboard: {error}; no project server is trusted"
            ));
            None
        }
    }
}

/// What every command reads without `--config`: the discovered servers, project ones not yet
/// trusted standing as entry errors that say how to trust them; `Err` with the places
/// looked at when nothing was found.
pub(crate) fn discovered_config() -> Result<Result<ConfigFile, Vec<String>>, String> {
    let places = current_places()?;
    let found = discover::discover(&places, &ProcessEnv);
    let output = Output {
        json: false,
        places: &places,
    };
    for (_, looked) in &found.looked {
        if let Looked::Failed(error) = looked {
            terminal::say(format_args!("switchboard: skipping {error}"));
        }
    }
    if found.servers.is_empty() {
        return Ok(Err(looked_at(&found, &output)));
    }
    let store = trust_store(&places);
    let servers = found
        .servers
        .iter()
        .map(|server| match &server.server {
            Ok(entry) if !trusted(server, store.as_ref()) => Err(EntryError {
                name: entry.name.clone(),
                detail: untrusted_detail(&entry.name, trust_status(server, store.as_ref())),
                origin: entry.origin.clone(),
            }),
            // A project's servers are code from a repository: sandboxed unless the entry
            // opts out.
            Ok(entry) => {
                let default = match server.scope {
                    Scope::Project => switchboard_config::DefaultSandbox::On,
                    _ => crate::sandbox::host_default(),
                };
                let mut entry = entry.clone();
                entry.sandbox = entry.sandbox.or_default(default);
                Ok(entry)
            }
            other => other.clone(),
        })
        .collect();
    let mut files: Vec<String> = Vec::new();
    for server in &found.servers {
        let file = output.path(&server.path);
        if !files.contains(&file) {
            files.push(file);
        }
    }
    Ok(Ok(ConfigFile {
        path: PathBuf::from(files.join(", ")),
        servers,
        // Team sections (clients, policies, profiles, limits) are read only from the file
        // `serve --config` names, never gathered from discovered files.
        team: Default::default(),
    }))
}

/// Each place looked at, as a line.
fn looked_at(found: &Discovered, output: &Output<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    if output.places.named_file.is_none() {
        lines.push(format!("${} (not set)", discover::CONFIG_VAR));
    }
    for (place, looked) in &found.looked {
        let part = place
            .part
            .as_deref()
            .map(|part| format!(" ({part})"))
            .unwrap_or_default();
        let what = match looked {
            Looked::Missing => "not found".to_owned(),
            Looked::Read(0) => "no servers".to_owned(),
            Looked::Read(n) => format!("{n} server(s)"),
            Looked::Failed(_) => "unreadable".to_owned(),
        };
        lines.push(format!("{}{part}: {what}", output.path(&place.path)));
    }
    if output.places.home.is_none() {
        lines.push("$HOME is not set: no user file was read".into());
    }
    lines
}

/// A stdio entry's command line or an HTTP entry's URL, as it may be shown.
fn transport_text(entry: &ServerEntry) -> String {
    let redacted = entry.redacted();
    match &entry.transport {
        TransportEntry::Stdio { .. } => {
            let mut words = vec![redacted["command"].as_str().unwrap_or_default().to_owned()];
            words.extend(
                redacted["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|arg| arg.as_str().map(str::to_owned)),
            );
            words.join(" ")
        }
        TransportEntry::Http { .. } => entry.display_url().unwrap_or_default(),
    }
}

fn server_json(found: &Found, store: Option<&TrustStore>, output: &Output<'_>) -> Value {
    let mut value = json!({
        "name": found.name(),
        "scope": found.scope.as_str(),
        "client": found.client.as_str(),
        "trusted": trusted(found, store),
    });
    match &found.server {
        Ok(entry) => {
            value["source"] = json!({"file": output.path(&found.path), "line": entry.origin.line});
            value["enabled"] = entry.enabled.into();
            value["transport"] = match &entry.transport {
                TransportEntry::Stdio { .. } => {
                    json!({"type": "stdio", "command": transport_text(entry)})
                }
                TransportEntry::Http { .. } => {
                    json!({"type": "http", "url": transport_text(entry)})
                }
            };
        }
        Err(error) => {
            value["source"] = json!({"file": output.path(&found.path), "line": error.origin.line});
            value["error"] = error.detail.clone().into();
        }
    }
    value
}

fn list(found: &Discovered, output: &Output<'_>) -> Result<u8, Failure> {
    let store = trust_store(output.places);
    if output.json {
        let servers: Vec<Value> = found
            .servers
            .iter()
            .map(|s| server_json(s, store.as_ref(), output))
            .collect();
        let shadowed: Vec<Value> = found
            .shadowed
            .iter()
            .map(|s| server_json(s, store.as_ref(), output))
            .collect();
        let value =
            json!({"servers": servers, "shadowed": shadowed, "looked": looked_at(found, output)});
        return output.done(value, "");
    }
    if found.servers.is_empty() {
        let mut text = String::from("no servers configured; looked in:\n");
        for line in looked_at(found, output) {
            text.push_str(&format!("  {line}\n"));
        }
        return output.done(Value::Null, &text);
    }
    let header = ["NAME", "SOURCE", "STATE", "TRANSPORT"].map(str::to_owned);
    let rows: Vec<[String; 4]> = std::iter::once(header)
        .chain(found.servers.iter().map(|server| {
            let (source, state, transport) = describe(server, store.as_ref(), output);
            [server.name().to_owned(), source, state, transport]
        }))
        .collect();
    let width = |column: usize| {
        rows.iter()
            .map(|r| r[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name_width, source_width, state_width) = (width(0), width(1), width(2));
    let mut text = String::new();
    for [name, source, state, transport] in &rows {
        text.push_str(&format!(
            "{name:name_width$}  {source:source_width$}  {state:state_width$}  {transport}\n"
        ));
    }
    for server in &found.shadowed {
        let (file, line) = match &server.server {
            Ok(entry) => (&entry.origin.file, entry.origin.line),
            Err(error) => (&error.origin.file, error.origin.line),
        };
        text.push_str(&format!(
            "(`{}` at {} is ignored: an earlier file defines it)\n",
            server.name(),
            output.origin(file, line)
        ));
    }
    output.done(Value::Null, &text)
}

/// A server's source, state and transport (or error), for the list.
fn describe(
    server: &Found,
    store: Option<&TrustStore>,
    output: &Output<'_>,
) -> (String, String, String) {
    match &server.server {
        Ok(entry) => {
            let state = match (entry.enabled, trust_status(server, store)) {
                (false, _) => "disabled",
                (true, TrustStatus::Changed) => "changed since trusted",
                (true, TrustStatus::Untrusted) => "untrusted",
                (true, TrustStatus::NotNeeded | TrustStatus::Trusted) => "enabled",
            };
            let source = output.origin(&entry.origin.file, entry.origin.line);
            (source, state.to_owned(), transport_text(entry))
        }
        Err(error) => (
            output.origin(&error.origin.file, error.origin.line),
            "error".to_owned(),
            error.detail.clone(),
        ),
    }
}

fn show(found: &Discovered, name: &str, output: &Output<'_>) -> Result<u8, Failure> {
    let server = winning(found, name)?;
    let store = trust_store(output.places);
    let mut value = server_json(server, store.as_ref(), output);
    let entry = match &server.server {
        Ok(entry) => entry,
        Err(error) => return Err(Failure::Usage(error.to_string())),
    };
    value["entry"] = entry.redacted();
    let mut text = format!(
        "{name}: {} ({} {}, {})\n",
        output.origin(&entry.origin.file, entry.origin.line),
        server.client.as_str(),
        server.scope.as_str(),
        match trust_status(server, store.as_ref()) {
            TrustStatus::NotNeeded | TrustStatus::Trusted => "trusted".to_owned(),
            TrustStatus::Changed => format!(
                "changed since it was trusted: look at it, then run `switchboard config trust {name}`"
            ),
            TrustStatus::Untrusted => {
                format!("not trusted: run `switchboard config trust {name}`")
            }
        }
    );
    text.push_str(&terminal::json_text(&entry.redacted(), JsonLayout::Pretty));
    text.push('\n');
    output.done(value, &text)
}

/// The definition of `name` that wins.
fn winning<'a>(found: &'a Discovered, name: &str) -> Result<&'a Found, String> {
    found
        .servers
        .iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| no_such_server(found, name))
}

fn no_such_server(found: &Discovered, name: &str) -> String {
    let names: Vec<&str> = found.servers.iter().map(Found::name).collect();
    format!(
        "no server named `{name}`; configured: {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )
}

/// A file to edit and its layout.
struct Target {
    path: PathBuf,
    layout: Layout,
    scope: Scope,
}

fn target_file(
    places: &Places,
    config: Option<&Path>,
    scope: Option<ScopeArg>,
) -> Result<Target, String> {
    match (config, scope) {
        (Some(_), Some(_)) => Err("give `--config FILE` or `--scope`, not both".into()),
        (Some(path), None) => Ok(Target {
            path: path.to_owned(),
            layout: Layout::for_path(path),
            scope: Scope::Explicit,
        }),
        (None, Some(ScopeArg::Project)) => Ok(Target {
            path: places.project_file(),
            layout: Layout::mcp_json(),
            scope: Scope::Project,
        }),
        (None, Some(ScopeArg::User) | None) => Ok(Target {
            path: places
                .user_file()
                .ok_or("neither $XDG_CONFIG_HOME nor $HOME is set: no user file; use --scope project or --config FILE")?,
            layout: Layout::switchboard_user(),
            scope: Scope::User,
        }),
    }
}

/// The file whose definition of `name` wins.
fn defining_file(places: &Places, name: &str) -> Result<Target, String> {
    let found = discover::discover(places, &ProcessEnv);
    let server = winning(&found, name)?;
    Ok(Target {
        path: server.path.clone(),
        layout: server.layout.clone(),
        scope: server.scope,
    })
}

/// The file's text, empty when it does not exist yet.
fn read_text(path: &Path) -> Result<String, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Failure::System(format!(
            "could not read `{}`: {e}",
            path.display()
        ))),
    }
}

/// An edit that failed: reading or writing the file is the system's refusal, anything else
/// (a name taken or missing, a file that cannot be edited) a usage or configuration error.
fn edit_failure(error: EditError) -> Failure {
    match error {
        EditError::Io { .. } => Failure::System(error.to_string()),
        _ => Failure::Usage(error.to_string()),
    }
}

/// The entry `config add` writes, and the names of its secret-valued fields.
struct NewEntry {
    /// In the common spelling.
    value: Value,
    /// `env` or `headers`, when given.
    secrets: Option<SecretFields>,
}

/// The names (never the values) of an entry's environment variables or headers.
struct SecretFields {
    /// `env` or `headers`.
    field: &'static str,
    names: Vec<String>,
}

/// What `--env` and `--header` are, for their messages.
#[derive(Clone, Copy)]
pub(crate) enum PairFlag {
    Env,
    Header,
}

impl PairFlag {
    fn field(self) -> &'static str {
        match self {
            PairFlag::Env => "env",
            PairFlag::Header => "headers",
        }
    }

    /// `(name, value)` of one flag's text. No message shows the text: it holds a secret.
    pub(crate) fn split(self, text: &str) -> Result<(String, String), String> {
        match self {
            PairFlag::Env => match text.split_once('=') {
                Some((key, value)) if !key.is_empty() && !key.contains('\0') => {
                    Ok((key.to_owned(), value.to_owned()))
                }
                Some(_) => Err("`--env` takes KEY=VALUE; one has an empty or unusable KEY".into()),
                None => Err("`--env` takes KEY=VALUE; one has no `=` (its text is not shown: it may be a secret)".into()),
            },
            PairFlag::Header => match text.split_once(':') {
                Some((name, value)) if is_header_name(name.trim()) => {
                    Ok((name.trim().to_owned(), value.trim().to_owned()))
                }
                Some(_) => Err("`--header` takes 'Name: value'; one has no usable header name (letters, digits and `-`; its text is not shown: it may be a secret)".into()),
                None => Err("`--header` takes 'Name: value'; one has no `:` (its text is not shown: it may be a secret)".into()),
            },
        }
    }

    /// The flags' pairs as a JSON object, each name once (header names in any case).
    fn object(self, texts: &[String]) -> Result<(Value, Vec<String>), String> {
        let mut object = serde_json::Map::new();
        let mut names: Vec<String> = Vec::new();
        for text in texts {
            let (name, value) = self.split(text)?;
            let taken = names.iter().any(|n| match self {
                PairFlag::Env => *n == name,
                PairFlag::Header => n.eq_ignore_ascii_case(&name),
            });
            if taken {
                let flag = match self {
                    PairFlag::Env => "--env",
                    PairFlag::Header => "--header",
                };
                return Err(format!("`{flag} {name}` is given twice; keep one"));
            }
            names.push(name.clone());
            object.insert(name, value.into());
        }
        Ok((Value::Object(object), names))
    }
}

/// An HTTP header name: a token (RFC 9110), e.g. `Authorization`, `X-Api-Key`.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl NewEntry {
    /// A local server's command with its `--env`s, or a remote server's URL with its
    /// `--header`s; the other combinations are usage errors.
    fn from_flags(
        url: Option<String>,
        command: &[String],
        env: &[String],
        headers: &[String],
    ) -> Result<NewEntry, String> {
        let (mut value, pairs, flag) = match (url, command) {
            (Some(_), _) if !env.is_empty() => {
                return Err("`--env` sets a local server's environment; a remote server (`--url`) takes `--header 'Name: value'`".into());
            }
            (None, [_, ..]) if !headers.is_empty() => {
                return Err("`--header` is sent to a remote server (`--url URL`); a local server takes `--env KEY=VALUE`".into());
            }
            (Some(url), []) => (
                json!({"type": "http", "url": url}),
                headers,
                PairFlag::Header,
            ),
            (None, [program, args @ ..]) => (
                json!({"command": program, "args": args}),
                env,
                PairFlag::Env,
            ),
            _ => {
                return Err(
                    "say how to reach it: `config add NAME -- CMD ARGS...` or `config add NAME --url URL`".into(),
                );
            }
        };
        let secrets = if pairs.is_empty() {
            None
        } else {
            let (object, names) = flag.object(pairs)?;
            value[flag.field()] = object;
            Some(SecretFields {
                field: flag.field(),
                names,
            })
        };
        Ok(NewEntry { value, secrets })
    }
}

fn add(target: &Target, name: &str, entry: &NewEntry, output: &Output<'_>) -> Result<u8, Failure> {
    let text = read_text(&target.path)?;
    let edited = edit::add_server(&text, &target.path, &target.layout, name, &entry.value)
        .map_err(edit_failure)?;
    edit::write_atomically(&target.path, &edited).map_err(edit_failure)?;
    let file = output.path(&target.path);
    let mut value = json!({"added": name, "file": file, "scope": target.scope.as_str()});
    let mut text = format!("added `{name}` to {file}");
    // Names only: the values are secrets, in the file and nowhere else.
    if let Some(secrets) = &entry.secrets {
        value[secrets.field] = json!(secrets.names);
        let hidden = if secrets.names.len() == 1 {
            "value hidden"
        } else {
            "values hidden"
        };
        text.push_str(&format!(
            "; {}: {} ({hidden})",
            secrets.field,
            secrets.names.join(", ")
        ));
    }
    // A definition the user just wrote is one they trust.
    if target.scope == Scope::Project {
        trust_written(output.places, target, name)?;
        text.push_str("; trusted, as you added it");
    }
    text.push('\n');
    output.done(value, &text)
}

/// Trusts the definition of `name` now in the target file.
fn trust_written(places: &Places, target: &Target, name: &str) -> Result<(), String> {
    let place = Place {
        path: target.path.clone(),
        layout: target.layout.clone(),
        scope: Scope::Project,
        client: Client::Switchboard,
        part: None,
    };
    let found = discover::discover_in(vec![place], &ProcessEnv);
    let server = found
        .servers
        .iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            format!(
                "`{name}` is not in {} after adding it",
                target.path.display()
            )
        })?;
    trust_found(places, server)
}

fn trust_found(places: &Places, server: &Found) -> Result<(), String> {
    let entry = server.server.as_ref().map_err(|e| e.to_string())?;
    let path = places
        .trust_file()
        .ok_or("neither $XDG_CONFIG_HOME nor $HOME is set: nowhere to keep the trust store")?;
    let mut store = TrustStore::load(&path).map_err(|e| e.to_string())?;
    store
        .trust(&configured(entry, server))
        .map_err(|e| e.to_string())
}

fn remove(target: &Target, name: &str, output: &Output<'_>) -> Result<u8, Failure> {
    let text = read_text(&target.path)?;
    let edited =
        edit::remove_server(&text, &target.path, &target.layout, name).map_err(edit_failure)?;
    edit::write_atomically(&target.path, &edited).map_err(edit_failure)?;
    let file = output.path(&target.path);
    output.done(
        json!({"removed": name, "file": file}),
        &format!("removed `{name}` from {file}\n"),
    )
}

fn import(
    places: &Places,
    from: ImportFrom,
    target: &Target,
    output: &Output<'_>,
) -> Result<u8, Failure> {
    let sources: Vec<Place> = discover::places(places)
        .into_iter()
        .filter(|place| from.clients().contains(&place.client) && place.path != target.path)
        // A project's definitions stay project definitions: copied into a user or named
        // file they would start without the trust they need.
        .filter(|place| place.scope == Scope::User || target.scope == Scope::Project)
        .collect();
    let found = discover::discover_in(sources, &ProcessEnv);
    let mut text = read_text(&target.path)?;
    let mut imported = Vec::new();
    let mut skipped = Vec::new();
    for server in found.servers.iter().chain(&found.shadowed) {
        let name = server.name();
        let origin = output.path(&server.path);
        if server.written.is_null() {
            skipped.push(json!({"name": name, "from": origin, "reason": "cannot be copied (no definition of its own)"}));
            continue;
        }
        if imported.iter().any(|i: &Value| i["name"] == name) {
            skipped.push(
                json!({"name": name, "from": origin, "reason": "imported from an earlier file"}),
            );
            continue;
        }
        match edit::add_server(&text, &target.path, &target.layout, name, &server.written) {
            Ok(edited) => {
                text = edited;
                imported.push(json!({"name": name, "from": origin}));
            }
            Err(EditError::AlreadyExists { .. }) => {
                skipped.push(json!({"name": name, "from": origin, "reason": "the name exists"}));
            }
            Err(error) => return Err(edit_failure(error)),
        }
    }
    if !imported.is_empty() {
        edit::write_atomically(&target.path, &text).map_err(edit_failure)?;
    }
    let file = output.path(&target.path);
    let mut shown = if imported.is_empty() {
        format!("nothing imported from {} into {file}\n", from.as_str())
    } else {
        format!("imported from {} into {file}:\n", from.as_str())
    };
    for item in &imported {
        shown.push_str(&format!(
            "  {} (from {})\n",
            item["name"].as_str().unwrap_or_default(),
            item["from"].as_str().unwrap_or_default()
        ));
    }
    if !skipped.is_empty() {
        shown.push_str("skipped:\n");
        for item in &skipped {
            shown.push_str(&format!(
                "  {} (from {}): {}\n",
                item["name"].as_str().unwrap_or_default(),
                item["from"].as_str().unwrap_or_default(),
                item["reason"].as_str().unwrap_or_default()
            ));
        }
    }
    if found
        .looked
        .iter()
        .all(|(_, looked)| matches!(looked, Looked::Missing))
    {
        shown.push_str(&format!("(no {} file was found)\n", from.as_str()));
    }
    output.done(
        json!({"from": from.as_str(), "file": file, "imported": imported, "skipped": skipped}),
        &shown,
    )
}

fn trust(places: &Places, name: &str, output: &Output<'_>) -> Result<u8, Failure> {
    let found = discover::discover(places, &ProcessEnv);
    let server = winning(&found, name)?;
    if server.scope != Scope::Project {
        let file = output.path(&server.path);
        return output.done(
            json!({"trusted": name, "file": file, "needed": false}),
            &format!("`{name}` comes from {file}, not a project file: it needs no trust\n"),
        );
    }
    trust_found(places, server)?;
    let file = output.path(&server.path);
    output.done(
        json!({"trusted": name, "file": file, "needed": true}),
        &format!(
            "trusted `{name}` as defined in {file}, in this project only; a changed definition \
             needs trust again\n"
        ),
    )
}

/// `config untrust NAME`: the trust of the definition of `name` in the project file that
/// defines it here is taken back (whatever definition was trusted).
fn untrust(places: &Places, name: &str, output: &Output<'_>) -> Result<u8, Failure> {
    let found = discover::discover(places, &ProcessEnv);
    let server = winning(&found, name)?;
    let file = output.path(&server.path);
    if server.scope != Scope::Project {
        return output.done(
            json!({"untrusted": name, "file": file, "needed": false}),
            &format!("`{name}` comes from {file}, not a project file: it needs no trust\n"),
        );
    }
    let path = places.trust_file().ok_or_else(|| {
        "neither $XDG_CONFIG_HOME nor $HOME is set: there is no trust store".to_owned()
    })?;
    let mut store = TrustStore::load(&path).map_err(|e| e.to_string())?;
    let taken = store
        .untrust(name, &server.path)
        .map_err(|e| e.to_string())?;
    let text = if taken {
        format!("`{name}` in {file} is no longer trusted: it will not start until trusted again\n")
    } else {
        format!("`{name}` in {file} was not trusted\n")
    };
    output.done(
        json!({"untrusted": name, "file": file, "was_trusted": taken}),
        &text,
    )
}

/// `config trust --list`: every trusted definition, with whether the file still holds it.
fn trusted_list(places: &Places, output: &Output<'_>) -> Result<u8, Failure> {
    let Some(path) = places.trust_file() else {
        return output.done(json!({"trusted": []}), "nothing is trusted\n");
    };
    let store = TrustStore::load(&path).map_err(|e| e.to_string())?;
    let here = discover::discover(places, &ProcessEnv);
    let mut rows = Vec::new();
    let mut text = String::new();
    for trusted in store.trusted() {
        let now = trust_now(trusted, &here);
        let file = output.path(&trusted.trust_key.file);
        text.push_str(&format!("{}  {file}  {now}\n", trusted.server));
        rows.push(json!({"server": trusted.server, "file": file, "now": now}));
    }
    if rows.is_empty() {
        text.push_str("nothing is trusted\n");
    }
    output.done(json!({"trusted": rows}), &text)
}

/// Whether a trusted definition still stands as it was trusted, for the files discovery
/// reads here (another project's are not read).
fn trust_now(trusted: &sources::TrustedDefinition, here: &Discovered) -> &'static str {
    let in_file = here.servers.iter().find(|server| {
        server.name() == trusted.server
            && std::fs::canonicalize(&server.path).unwrap_or_else(|_| server.path.clone())
                == trusted.trust_key.file
    });
    let Some(server) = in_file else {
        return if trusted.trust_key.file.is_file() {
            "not in this project"
        } else {
            "its file is gone"
        };
    };
    match &server.server {
        Ok(entry) if configured(entry, server).trust_key == trusted.trust_key => "as trusted",
        Ok(_) => "changed since trusted",
        Err(_) => "no longer readable",
    }
}
