//! Variables: where they come from ([`Variables`]: the process environment, or a map in
//! tests), `${VAR}`, `${VAR:-default}` and `${env:VAR}` expansion, and VS Code's
//! `${input:ID}`, read from `SWITCHBOARD_INPUT_ID` ([`input_variable`]) and described by the
//! file's `inputs`; and the folders an entry may name ([`FileFolders`]: VS Code's
//! `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}` and `${pathSeparator}`,
//! Claude Code's `${CLAUDE_PROJECT_DIR}`), which are paths, not secrets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

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

/// The prompts a VS Code file declares in its top-level `inputs` (`{"id", "description",
/// …}`), by id: what VS Code asks the user for when an entry says `${input:ID}`.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    pub(crate) descriptions: BTreeMap<String, String>,
}

impl Inputs {
    pub(crate) fn of(root: &Value) -> Inputs {
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

/// Expands `${VAR}` and `${VAR:-default}`, VS Code's `${env:VAR}` (the same) and
/// `${input:ID}` (from [`input_variable`]); returns the reference (`VAR`, `env:VAR`,
/// `input:ID`) of an unset variable without a default. `$$` is a literal `$`.
pub fn expand_vars(text: &str, vars: &dyn Variables) -> Result<String, UnsetVariable> {
    expand_tracked(text, vars, None, &mut Vec::new())
}

/// A reference to a variable that is not set (and has no default); shown as the reference
/// (`VAR`, `env:VAR`, `input:ID`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsetVariable {
    /// `${VAR}` or `${env:VAR}`: the reference as written (`VAR`, `env:VAR`).
    #[error("{0}")]
    Variable(String),
    /// `${input:ID}`, read from `variable`.
    #[error("input:{id}")]
    Input {
        /// The input's id.
        id: String,
        /// The variable it is read from.
        variable: String,
    },
}

/// The folders one file's entries may name, besides its variables:
///
/// - `${workspaceFolder}`: the project folder the file belongs to, as VS Code and Cursor
///   mean it — the folder holding a project's `.vscode/` or `.cursor/` (any dot-folder of a
///   client's outside the home folder), the folder of a `.mcp.json`, the `<dir>` of
///   `~/.claude.json`'s `projects.<dir>`; for a user's own file (or a file named with
///   `--config`), the current directory, which stands for the folder an editor has open;
///   `${workspaceFolderBasename}` is its last component;
/// - `${userHome}`: the home folder (`HOME`); `${pathSeparator}`: `/`;
/// - `${CLAUDE_PROJECT_DIR}`: the environment's, as Claude Code sets it for what it starts;
///   unset there, in Claude Code's files (`.mcp.json`, `~/.claude.json`) the project folder
///   as above; elsewhere an unset variable.
///
/// They are paths, not secrets: not recorded among the expansions to hide (the field is
/// still shown as written).
#[derive(Debug, Clone)]
pub(crate) struct FileFolders {
    /// The project folder; `None`: the current directory, looked up when used.
    workspace: Option<PathBuf>,
    /// Where `${CLAUDE_PROJECT_DIR}` comes from when the environment does not set it.
    claude_project_dir: ClaudeProjectDir,
}

/// Where `${CLAUDE_PROJECT_DIR}` comes from when the environment does not set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaudeProjectDir {
    /// A Claude Code file: the project folder.
    ProjectFolder,
    /// Another client's file: nowhere (the variable is unset).
    EnvironmentOnly,
}

/// Clients' folders inside a project (`<project>/.vscode/mcp.json`); the same folder in the
/// home folder holds the user's own file (`~/.cursor/mcp.json`).
const PROJECT_DOT_FOLDERS: &[&str] =
    &[".vscode", ".cursor", ".gemini", ".codex", ".zed", ".claude"];

impl FileFolders {
    /// The folders for the file at `path`, whose servers are at `map_path` in it.
    pub(crate) fn of(path: &Path, map_path: &[String], vars: &dyn Variables) -> FileFolders {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let claude_project_dir = match name {
            ".mcp.json" | ".claude.json" => ClaudeProjectDir::ProjectFolder,
            _ => ClaudeProjectDir::EnvironmentOnly,
        };
        let folder = path.parent();
        let home = vars
            .get("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let workspace = match map_path {
            [projects, dir, ..] if projects == "projects" => Some(PathBuf::from(dir)),
            _ if name == ".mcp.json" => folder.map(Path::to_owned),
            _ => folder
                .filter(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| PROJECT_DOT_FOLDERS.contains(&n))
                })
                .and_then(Path::parent)
                .filter(|project| home.as_deref() != Some(*project))
                .map(Path::to_owned),
        };
        FileFolders {
            workspace,
            claude_project_dir,
        }
    }

    /// The project folder.
    fn workspace(&self) -> Option<PathBuf> {
        self.workspace
            .clone()
            .or_else(|| std::env::current_dir().ok())
    }

    /// The value of a folder variable: `None` when `name` is not one, `Some(None)` when it
    /// is one with no value here.
    fn get(&self, name: &str, vars: &dyn Variables) -> Option<Option<String>> {
        let text = |path: PathBuf| path.display().to_string();
        Some(match name {
            "workspaceFolder" => self.workspace().map(text),
            "workspaceFolderBasename" => self
                .workspace()
                .and_then(|w| w.file_name().map(|n| n.to_string_lossy().into_owned())),
            "userHome" => vars.get("HOME").filter(|h| !h.is_empty()),
            "pathSeparator" => Some("/".to_owned()),
            "CLAUDE_PROJECT_DIR" => vars.get(name).or_else(|| match self.claude_project_dir {
                ClaudeProjectDir::ProjectFolder => self.workspace().map(text),
                ClaudeProjectDir::EnvironmentOnly => None,
            }),
            _ => return None,
        })
    }
}

/// [`expand_vars`], noting each value taken from a variable in `substituted`; with
/// `folders`, a file's folder variables too (not noted: they are not secrets).
pub(crate) fn expand_tracked(
    text: &str,
    vars: &dyn Variables,
    folders: Option<&FileFolders>,
    substituted: &mut Vec<String>,
) -> Result<String, UnsetVariable> {
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
                let unset = UnsetVariable::Input {
                    id: id.to_owned(),
                    variable: variable.clone(),
                };
                (variable, unset)
            } else {
                let variable = reference.strip_prefix("env:").unwrap_or(reference);
                (
                    variable.to_owned(),
                    UnsetVariable::Variable(reference.to_owned()),
                )
            };
            let folder = match reference.starts_with("env:") || reference.starts_with("input:") {
                true => None,
                false => folders.and_then(|f| f.get(reference, vars)),
            };
            if let Some(value) = folder {
                match (value, default) {
                    (Some(value), _) => out.push_str(&value),
                    (None, Some(default)) => out.push_str(default),
                    (None, None) => return Err(unset),
                }
                rest = &body[end + 1..];
                continue;
            }
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
