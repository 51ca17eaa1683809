//! Where server definitions come from, in which order, and which need the user's trust.
//!
//! Scopes, highest precedence first: an explicit file (when given, it is the only source);
//! otherwise the project's `.switchboard/mcp.json` and `.mcp.json`, then the user's
//! `$XDG_CONFIG_HOME/switchboard/mcp.json` (or `~/.config/switchboard/mcp.json`). The first
//! definition of a name wins whole: fields are never merged across files. Servers defined in
//! a project file only start once the user has trusted that exact definition in that exact
//! place: the trust key hashes the file's canonical path (links resolved, so the project
//! folder it lies in), the server's name and the entry as written. The same entry in
//! another project is another key, and a changed definition needs trust again (the store
//! keeps which file and name each trust was for, so a changed one is told apart from one
//! never trusted).

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
    /// What trust binds to ([`TrustKey::of`]).
    pub trust_key: TrustKey,
}

/// What trust in a project definition binds to: the file it is written in (canonical) and a
/// hash of that file, the server's name and the entry as written (before expansion).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TrustKey {
    /// The file, links resolved (as written when it cannot be resolved).
    pub file: PathBuf,
    /// The hash.
    pub key: String,
}

impl TrustKey {
    /// The key of server `name`, written as `written` in `file`. Equal definitions in the
    /// same file have equal keys however their members are ordered; the same definition in
    /// another file (another project) has another.
    pub fn of(file: &Path, name: &str, written: &Value) -> TrustKey {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
        let key = hash(&json!({
            "file": file.to_string_lossy(),
            "server": name,
            "definition": written,
        }));
        TrustKey { file, key }
    }
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
                let trust_key = TrustKey {
                    file: PathBuf::new(),
                    key: hash(&json!(format!("{entry:?}"))),
                };
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
                            let written = raw.get(&name).unwrap_or(&Value::Null);
                            let trust_key = TrustKey::of(&path, &name, written);
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

/// The user's record of trusted project definitions: for each, the server's name, the file
/// it is defined in and its [`TrustKey`].
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    trusted: BTreeSet<TrustedDefinition>,
    /// The file was written by a version that bound trust to the definition alone.
    older_format: bool,
}

/// One trusted definition, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TrustedDefinition {
    /// The server's name.
    pub server: String,
    /// The file and the key.
    pub trust_key: TrustKey,
}

/// Whether a definition may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// It is not a project definition: it needs no trust.
    NotNeeded,
    /// This exact definition, in this file, is trusted.
    Trusted,
    /// The server in this file was trusted with another definition: what changed must be
    /// looked at again.
    Changed,
    /// Never trusted here.
    Untrusted,
}

const TRUST_FORMAT: &str = "switchboard-trust/2";
/// The format that bound trust to the definition alone; read as trusting nothing.
const OLDER_TRUST_FORMAT: &str = "switchboard-trust/1";

impl TrustStore {
    /// Reads the store; a missing file trusts nothing, one that cannot be used is an error
    /// (see `state_file.rs`). A store of the older format (trust bound to the definition
    /// alone, so valid in every folder) trusts nothing now: [`TrustStore::is_older_format`]
    /// says so, and the next [`TrustStore::trust`] rewrites it in the current format.
    pub fn load(path: &Path) -> Result<TrustStore, StateFileError> {
        let mut store = TrustStore {
            path: path.to_owned(),
            trusted: BTreeSet::new(),
            older_format: false,
        };
        let value = match read_state_file(StateFileKind::TrustStore, path, TRUST_FORMAT) {
            Ok(Some(value)) => value,
            Ok(None) => return Ok(store),
            Err(error) if error.problem.is_format(OLDER_TRUST_FORMAT) => {
                store.older_format = true;
                return Ok(store);
            }
            Err(error) => return Err(error),
        };
        for item in value
            .get("trusted")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(server), Some(file), Some(key)) = (
                item.get("server").and_then(Value::as_str),
                item.get("file").and_then(Value::as_str),
                item.get("key").and_then(Value::as_str),
            ) {
                store.trusted.insert(TrustedDefinition {
                    server: server.to_owned(),
                    trust_key: TrustKey {
                        file: PathBuf::from(file),
                        key: key.to_owned(),
                    },
                });
            }
        }
        Ok(store)
    }

    /// Whether the store was written by a version that bound trust to the definition
    /// alone (it trusts nothing now).
    pub fn is_older_format(&self) -> bool {
        self.older_format
    }

    /// Whether this exact definition, in its file, is trusted.
    pub fn is_trusted(&self, server: &ConfiguredServer) -> bool {
        matches!(
            self.status(server),
            TrustStatus::NotNeeded | TrustStatus::Trusted
        )
    }

    /// Whether `server` may start, and if not, whether it was trusted with another
    /// definition.
    pub fn status(&self, server: &ConfiguredServer) -> TrustStatus {
        if server.scope != Scope::Project {
            return TrustStatus::NotNeeded;
        }
        let mut same_place = self.trusted.iter().filter(|trusted| {
            trusted.server == server.entry.name && trusted.trust_key.file == server.trust_key.file
        });
        let mut changed = false;
        for trusted in &mut same_place {
            if trusted.trust_key.key == server.trust_key.key {
                return TrustStatus::Trusted;
            }
            changed = true;
        }
        if changed {
            TrustStatus::Changed
        } else {
            TrustStatus::Untrusted
        }
    }

    /// Every trusted definition, by file and name.
    pub fn trusted(&self) -> impl Iterator<Item = &TrustedDefinition> {
        self.trusted.iter()
    }

    /// Trusts this exact definition in its file (in place of what that server in that file
    /// was trusted as before) and saves the store: atomically, readable only by the user
    /// (`0600`).
    pub fn trust(&mut self, server: &ConfiguredServer) -> Result<(), StateFileError> {
        self.forget(&server.entry.name, &server.trust_key.file);
        self.trusted.insert(TrustedDefinition {
            server: server.entry.name.clone(),
            trust_key: server.trust_key.clone(),
        });
        self.save()
    }

    /// Takes back the trust of server `name` in `file` (any definition of it) and saves the
    /// store; `false` (nothing saved) when it was not trusted there.
    pub fn untrust(&mut self, name: &str, file: &Path) -> Result<bool, StateFileError> {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
        if !self.forget(name, &file) {
            return Ok(false);
        }
        self.save().map(|()| true)
    }

    fn forget(&mut self, name: &str, file: &Path) -> bool {
        let before = self.trusted.len();
        self.trusted
            .retain(|trusted| !(trusted.server == name && trusted.trust_key.file == file));
        self.trusted.len() != before
    }

    fn save(&mut self) -> Result<(), StateFileError> {
        let trusted: Vec<Value> = self
            .trusted
            .iter()
            .map(|trusted| {
                json!({
                    "server": trusted.server,
                    "file": trusted.trust_key.file.to_string_lossy(),
                    "key": trusted.trust_key.key,
                })
            })
            .collect();
        let value = json!({"format": TRUST_FORMAT, "trusted": trusted});
        write_state_file(StateFileKind::TrustStore, &self.path, &value)?;
        self.older_format = false;
        Ok(())
    }
}
