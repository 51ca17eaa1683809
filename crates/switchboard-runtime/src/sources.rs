//! Where server definitions come from, in which order, and which need the user's trust.
//!
//! Scopes, highest precedence first: an explicit file (when given, it is the only source);
//! otherwise the project's `.switchboard/mcp.json` and `.mcp.json`, then the user's
//! `$XDG_CONFIG_HOME/switchboard/mcp.json` (or `~/.config/switchboard/mcp.json`). The first
//! definition of a name wins whole: fields are never merged across files. Servers defined in
//! a project file only start once the user has trusted that exact definition (keyed by a
//! hash of the entry as written, so a changed command needs trust again).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_config::{DefaultSandbox, ServerEntry, Variables};

use crate::state_file::{StateFileError, StateFileKind, read_state_file, write_state_file};

/// Which kind of file a definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Given by the host (a `--config` file or entries passed in code).
    Explicit,
    /// A file in the project folder: needs the user's trust.
    Project,
    /// The user's own file.
    User,
}

/// One server definition with its scope and trust key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredServer {
    /// The definition, variables expanded.
    pub entry: ServerEntry,
    /// Where it came from.
    pub scope: Scope,
    /// Hash of the entry as written (before expansion).
    pub trust_key: String,
}

/// The files to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSource {
    /// Definitions given directly by the host (trusted: the host chose them).
    Entries(Vec<ServerEntry>),
    /// Configuration files by scope.
    Files(ConfigScopes),
}

/// Configuration file locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigScopes {
    /// An explicit file; when set, no other file is read.
    pub explicit: Option<PathBuf>,
    /// The project folder (`.switchboard/mcp.json`, `.mcp.json`).
    pub project_dir: Option<PathBuf>,
    /// The user's config folder (holding `mcp.json`).
    pub user_dir: Option<PathBuf>,
}

impl ConfigScopes {
    /// The standard locations for a project folder: the user folder from
    /// `XDG_CONFIG_HOME` or `HOME`.
    pub fn standard(project_dir: &Path, vars: &dyn Variables) -> ConfigScopes {
        let user_dir = vars
            .get("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| {
                vars.get("HOME")
                    .map(|home| Path::new(&home).join(".config"))
            })
            .map(|base| base.join("switchboard"));
        ConfigScopes {
            explicit: None,
            project_dir: Some(project_dir.to_owned()),
            user_dir,
        }
    }

    fn files(&self) -> Vec<(PathBuf, Scope)> {
        if let Some(explicit) = &self.explicit {
            return vec![(explicit.clone(), Scope::Explicit)];
        }
        let mut files = Vec::new();
        if let Some(project) = &self.project_dir {
            files.push((
                project.join(".switchboard").join("mcp.json"),
                Scope::Project,
            ));
            files.push((project.join(".mcp.json"), Scope::Project));
        }
        if let Some(user) = &self.user_dir {
            files.push((user.join("mcp.json"), Scope::User));
        }
        files
    }
}

/// What loading found: usable definitions and problems (each naming file and server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedServers {
    /// Usable definitions, in precedence then file order.
    pub servers: Vec<ConfiguredServer>,
    /// Entries that could not be used, and files that could not be read, by server name
    /// (`None` for a whole file).
    pub problems: Vec<(Option<String>, String)>,
}

/// Reads every source; a missing file in a default location is not a problem.
pub fn load(source: &ServerSource, vars: &dyn Variables) -> LoadedServers {
    let mut loaded = LoadedServers::default();
    match source {
        ServerSource::Entries(entries) => {
            for entry in entries {
                let trust_key = hash(&json!(format!("{entry:?}")));
                loaded.servers.push(ConfiguredServer {
                    entry: entry.clone(),
                    scope: Scope::Explicit,
                    trust_key,
                });
            }
        }
        ServerSource::Files(scopes) => {
            let mut seen = BTreeSet::new();
            for (path, scope) in scopes.files() {
                if scope != Scope::Explicit && !path.exists() {
                    continue;
                }
                let file = match switchboard_config::load(&path, vars) {
                    Ok(file) => file,
                    Err(error) => {
                        loaded.problems.push((None, error.to_string()));
                        continue;
                    }
                };
                let raw = raw_entries(&path);
                for server in &file.servers {
                    let name = match server {
                        Ok(entry) => entry.name.clone(),
                        Err(error) => error.name.clone(),
                    };
                    if !seen.insert(name.clone()) {
                        loaded.problems.push((Some(name.clone()), format!("{}: server `{name}` is also defined in a file that takes precedence; this definition is ignored", path.display())));
                        continue;
                    }
                    match server {
                        Ok(entry) => {
                            let trust_key = hash(raw.get(&name).unwrap_or(&Value::Null));
                            loaded.servers.push(ConfiguredServer {
                                entry: entry.clone(),
                                scope,
                                trust_key,
                            });
                        }
                        Err(error) => loaded.problems.push((Some(name), error.to_string())),
                    }
                }
            }
        }
    }
    loaded
}

/// Gives each server whose entry says nothing about a sandbox its default: sandboxed when
/// it is defined in a project file (code from a repository the user did not write) or when
/// the host turns sandboxing on for all (`host_default`); an entry's `sandbox: false`
/// always wins.
pub fn apply_sandbox_defaults(servers: &mut [ConfiguredServer], host_default: DefaultSandbox) {
    for server in servers {
        let default = match server.scope {
            Scope::Project => DefaultSandbox::On,
            Scope::Explicit | Scope::User => host_default,
        };
        server.entry.sandbox = server.entry.sandbox.or_default(default);
    }
}

fn raw_entries(path: &Path) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let servers = value.get("mcpServers").or_else(|| value.get("servers"));
    servers
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// The trust key of a definition as written (before expansion): equal definitions have
/// equal keys however their keys are ordered. A host that reads project files itself keys
/// its [`ConfiguredServer`]s with it.
pub fn trust_key(written: &Value) -> String {
    hash(written)
}

fn hash(value: &Value) -> String {
    let digest = Sha256::digest(canonical(value).to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Sorted keys at every level, so equal definitions hash equally however they were written.
pub(crate) fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&object[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The user's record of trusted project definitions.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    trusted: BTreeSet<(String, String)>,
}

const TRUST_FORMAT: &str = "switchboard-trust/1";

impl TrustStore {
    /// Reads the store; a missing file trusts nothing, one that cannot be used is an error
    /// (see `state_file.rs`).
    pub fn load(path: &Path) -> Result<TrustStore, StateFileError> {
        let mut store = TrustStore {
            path: path.to_owned(),
            trusted: BTreeSet::new(),
        };
        let Some(value) = read_state_file(StateFileKind::TrustStore, path, TRUST_FORMAT)? else {
            return Ok(store);
        };
        for item in value
            .get("trusted")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(server), Some(key)) = (
                item.get("server").and_then(Value::as_str),
                item.get("key").and_then(Value::as_str),
            ) {
                store.trusted.insert((server.to_owned(), key.to_owned()));
            }
        }
        Ok(store)
    }

    /// Whether this exact definition is trusted.
    pub fn is_trusted(&self, server: &ConfiguredServer) -> bool {
        server.scope != Scope::Project
            || self
                .trusted
                .contains(&(server.entry.name.clone(), server.trust_key.clone()))
    }

    /// Trusts this exact definition and saves the store: atomically, readable only by the
    /// user (`0600`).
    pub fn trust(&mut self, server: &ConfiguredServer) -> Result<(), StateFileError> {
        self.trusted
            .insert((server.entry.name.clone(), server.trust_key.clone()));
        let trusted: Vec<Value> = self
            .trusted
            .iter()
            .map(|(server, key)| json!({"server": server, "key": key}))
            .collect();
        let value = json!({"format": TRUST_FORMAT, "trusted": trusted});
        write_state_file(StateFileKind::TrustStore, &self.path, &value)
    }
}
