//! Reading a whole file: its syntax (JSON, JSON with comments, TOML), the server map at its
//! layout's key path, and each entry read on its own (`fields.rs`) with the line of its name
//! (`lines.rs`). A file that cannot be used at all is a [`ConfigError`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::entry::{EntryError, Origin, ServerEntry};
use crate::fields::{Dialect, EntryContext, read_entry};
use crate::layout::{self, EntryDialect, Layout, MissingMap, Syntax, common_form};
use crate::lines::{json_entry_lines, toml_entry_lines};
use crate::team::TeamSections;
use crate::variables::{FileFolders, Inputs, Variables};

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
    /// The gateway's team sections beside the server map, as written (`team`).
    pub team: TeamSections,
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
    let empty = Map::new();
    let (map_path, servers) =
        server_map(&root, layout, &empty).map_err(|detail| ConfigError::Shape {
            path: path.to_owned(),
            detail: detail.to_owned(),
        })?;
    let lines = match layout.syntax {
        Syntax::Toml => toml_entry_lines(text, map_path),
        Syntax::Json | Syntax::Jsonc => json_entry_lines(&plain, map_path),
    };
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    let inputs = Inputs::of(&root);
    let folders = FileFolders::of(path, map_path, vars);
    let cx = FileContext {
        file: path.display().to_string(),
        lines,
        layout,
        base: &base,
        vars,
        inputs: &inputs,
        folders: &folders,
    };
    let mut written = Vec::new();
    let servers = servers
        .iter()
        .map(|(name, value)| cx.read_server(name, value, &mut written))
        .collect();
    Ok(ReadFile {
        file: ConfigFile {
            path: path.to_owned(),
            servers,
            team: TeamSections::of(&root),
        },
        written,
    })
}

/// The server map at the first of the layout's key paths found, with that key path; `empty`
/// where the layout lets the map be missing. The error is the [`ConfigError::Shape`] detail.
fn server_map<'a>(
    root: &'a Value,
    layout: &'a Layout,
    empty: &'a Map<String, Value>,
) -> Result<(&'a [String], &'a Map<String, Value>), &'static str> {
    let found = layout
        .maps
        .iter()
        .find_map(|keys| value_at(root, keys).map(|map| (keys, map)));
    match found {
        Some((keys, Value::Object(map))) => Ok((keys.as_slice(), map)),
        Some(_) if layout.syntax == Syntax::Toml => Err("`mcp_servers` must be a table of servers"),
        Some(_) => Err("`mcpServers` must be an object mapping names to server entries"),
        None if layout.missing_map == MissingMap::IsEmpty => Ok((&[], empty)),
        None if layout.syntax == Syntax::Toml => Err("no `[mcp_servers.NAME]` tables found"),
        None if root.is_object() => Err(
            "no `mcpServers` map found (expected `{\"mcpServers\": {\"name\": {\"command\": …}}}`)",
        ),
        None => Err("the file must hold a JSON object with a `mcpServers` map"),
    }
}

/// What every entry of one file is read with.
struct FileContext<'a> {
    /// The file, as origins name it.
    file: String,
    /// The line of each entry's name.
    lines: BTreeMap<String, usize>,
    layout: &'a Layout,
    /// The file's folder, which relative `cwd`s resolve against.
    base: &'a Path,
    vars: &'a dyn Variables,
    inputs: &'a Inputs,
    /// The folders its entries may name (`${workspaceFolder}` and the others).
    folders: &'a FileFolders,
}

impl FileContext<'_> {
    /// Reads the entry `name`, noting it as written (in the common spelling) in `written`.
    fn read_server(
        &self,
        name: &str,
        value: &Value,
        written: &mut Vec<(String, Value)>,
    ) -> Result<ServerEntry, EntryError> {
        let origin = Origin {
            file: self.file.clone(),
            line: self.lines.get(name).copied(),
        };
        if self.layout.dialect == EntryDialect::Zed && layout::is_zed_extension(value) {
            return Err(EntryError {
                name: name.to_owned(),
                detail: "provided by a Zed extension; Switchboard cannot start it".into(),
                origin,
            });
        }
        let common = common_form(self.layout.dialect, value.clone());
        written.push((name.to_owned(), common.clone()));
        let dialect = match self.layout.syntax {
            Syntax::Toml => Dialect::CodexToml,
            Syntax::Json | Syntax::Jsonc => Dialect::Json,
        };
        let cx = EntryContext {
            base: self.base,
            vars: self.vars,
            origin,
            dialect,
            inputs: self.inputs,
            folders: self.folders,
        };
        read_entry(name, &common, &cx)
    }
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
