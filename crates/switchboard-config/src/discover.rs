//! Finding servers when no file is named: `$SWITCHBOARD_CONFIG`, then the project's files in
//! the current directory, then the user's files of each MCP client, merged.
//!
//! Precedence is the order of [`places`]: the first definition of a name wins whole (fields
//! are never merged across files); later ones are [`Discovered::shadowed`]. The home and
//! current directories come from [`Places`], so tests point them anywhere.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{ConfigError, EntryError, Layout, MissingMap, ServerEntry, Variables};

/// Which kind of file a definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Named by the user for this run (`$SWITCHBOARD_CONFIG`, `--config`).
    Explicit,
    /// A file in the project directory: its servers need the user's trust to start.
    Project,
    /// A file of the user's own.
    User,
}

impl Scope {
    /// `explicit`, `project` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Explicit => "explicit",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// The MCP client whose file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Switchboard's own files (and any `mcp.json` named by the user).
    Switchboard,
    /// Claude Code (`.mcp.json`, `~/.claude.json`).
    ClaudeCode,
    /// Claude Desktop.
    ClaudeDesktop,
    /// Cursor.
    Cursor,
    /// VS Code.
    VsCode,
    /// Codex.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// Zed.
    Zed,
}

impl Client {
    /// The client's name, for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Client::Switchboard => "switchboard",
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Zed => "zed",
        }
    }
}

/// Where the search starts: the directories and the variable that names a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The project directory (the current directory).
    pub project_dir: PathBuf,
    /// The user's home directory (`$HOME`), if known.
    pub home: Option<PathBuf>,
    /// The user's config directory (`$XDG_CONFIG_HOME`, else `~/.config`), if known.
    pub config_home: Option<PathBuf>,
    /// `$SWITCHBOARD_CONFIG`, if set.
    pub named_file: Option<PathBuf>,
}

/// The variable that names a config file for every command.
pub const CONFIG_VAR: &str = "SWITCHBOARD_CONFIG";

impl Places {
    /// The places for a project directory, the rest from `HOME`, `XDG_CONFIG_HOME` and
    /// `SWITCHBOARD_CONFIG`.
    pub fn from_vars(project_dir: &Path, vars: &dyn Variables) -> Places {
        let set = |name: &str| vars.get(name).filter(|value| !value.is_empty());
        let home = set("HOME").map(PathBuf::from);
        let config_home = set("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".config")));
        Places {
            project_dir: project_dir.to_owned(),
            home,
            config_home,
            named_file: set(CONFIG_VAR).map(PathBuf::from),
        }
    }

    /// Switchboard's own user file (`~/.config/switchboard/mcp.json`).
    pub fn user_file(&self) -> Option<PathBuf> {
        self.config_home
            .as_ref()
            .map(|dir| dir.join("switchboard").join("mcp.json"))
    }

    /// Switchboard's project file (`.mcp.json` in the project directory).
    pub fn project_file(&self) -> PathBuf {
        self.project_dir.join(".mcp.json")
    }

    /// The user's record of trusted project definitions
    /// (`~/.config/switchboard/trust.json`).
    pub fn trust_file(&self) -> Option<PathBuf> {
        self.config_home
            .as_ref()
            .map(|dir| dir.join("switchboard").join("trust.json"))
    }
}

/// One file (or one part of a file) that may hold servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file.
    pub path: PathBuf,
    /// Where its servers are in it.
    pub layout: Layout,
    /// Whose it is.
    pub scope: Scope,
    /// Which client writes it.
    pub client: Client,
    /// What part of the file, when not the whole (`projects.<dir>`).
    pub part: Option<String>,
}

/// Codex's `config.toml` holds other settings too: no `[mcp_servers]` is no servers.
fn codex_settings() -> Layout {
    Layout {
        missing_map: MissingMap::IsEmpty,
        ..Layout::codex()
    }
}

/// Every place looked at, highest precedence first.
pub fn places(places: &Places) -> Vec<Place> {
    let mut list = Vec::new();
    if let Some(named) = &places.named_file {
        let layout = Layout::for_path(named);
        list.push(whole_file(
            named.clone(),
            layout,
            Scope::Explicit,
            Client::Switchboard,
        ));
    }
    list.extend(project_places(&places.project_dir));
    if let Some(user_file) = places.user_file() {
        let layout = Layout::switchboard_user();
        list.push(whole_file(
            user_file,
            layout,
            Scope::User,
            Client::Switchboard,
        ));
    }
    if let Some(home) = &places.home {
        list.extend(claude_code_user_places(home, &places.project_dir));
    }
    list.extend(other_user_places(places));
    list
}

/// A place that is a whole file.
fn whole_file(path: PathBuf, layout: Layout, scope: Scope, client: Client) -> Place {
    Place {
        path,
        layout,
        scope,
        client,
        part: None,
    }
}

/// The project's files, each client's.
fn project_places(project: &Path) -> Vec<Place> {
    let project_files = [
        (".mcp.json", Layout::mcp_json(), Client::ClaudeCode),
        ("mcp.json", Layout::mcp_json(), Client::Switchboard),
        (".vscode/mcp.json", Layout::vscode(), Client::VsCode),
        (".cursor/mcp.json", Layout::mcp_json(), Client::Cursor),
        (".gemini/settings.json", Layout::gemini(), Client::Gemini),
        (".codex/config.toml", codex_settings(), Client::Codex),
    ];
    project_files
        .into_iter()
        .map(|(file, layout, client)| {
            whole_file(project.join(file), layout, Scope::Project, client)
        })
        .collect()
}

/// Claude Code's `~/.claude.json`: this project's part of it, then its user servers.
fn claude_code_user_places(home: &Path, project: &Path) -> [Place; 2] {
    let claude = home.join(".claude.json");
    let dir = project.display().to_string();
    [
        Place {
            path: claude.clone(),
            layout: Layout::claude_code_project(&dir),
            scope: Scope::User,
            client: Client::ClaudeCode,
            part: Some(format!("projects.{dir}")),
        },
        whole_file(
            claude,
            Layout::claude_code_user(),
            Scope::User,
            Client::ClaudeCode,
        ),
    ]
}

/// The other clients' user files, under home or the config folder.
fn other_user_places(places: &Places) -> Vec<Place> {
    let config_home = places.config_home.as_deref();
    let home = places.home.as_deref();
    let user_files = [
        (
            config_home,
            "Claude/claude_desktop_config.json",
            Layout::claude_code_user(),
            Client::ClaudeDesktop,
        ),
        (home, ".cursor/mcp.json", Layout::mcp_json(), Client::Cursor),
        (
            config_home,
            "Code/User/mcp.json",
            Layout::vscode(),
            Client::VsCode,
        ),
        (home, ".codex/config.toml", codex_settings(), Client::Codex),
        (
            home,
            ".gemini/settings.json",
            Layout::gemini(),
            Client::Gemini,
        ),
        (config_home, "zed/settings.json", Layout::zed(), Client::Zed),
    ];
    user_files
        .into_iter()
        .filter_map(|(dir, file, layout, client)| {
            dir.map(|dir| whole_file(dir.join(file), layout, Scope::User, client))
        })
        .collect()
}

/// One definition found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The entry, or why it cannot be used.
    pub server: Result<ServerEntry, EntryError>,
    /// Its value as written, in the common spelling (nothing expanded); `Null` when the
    /// entry was unusable before it could be read.
    pub written: Value,
    /// Whose file it is.
    pub scope: Scope,
    /// Which client's file.
    pub client: Client,
    /// The file.
    pub path: PathBuf,
    /// Where its servers are in it.
    pub layout: Layout,
}

impl Found {
    /// The server's name.
    pub fn name(&self) -> &str {
        match &self.server {
            Ok(entry) => &entry.name,
            Err(error) => &error.name,
        }
    }
}

/// What became of one place.
#[derive(Debug)]
pub enum Looked {
    /// No such file.
    Missing,
    /// Read, with this many servers.
    Read(usize),
    /// The file could not be used.
    Failed(ConfigError),
}

/// Everything discovery found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// The winning definition of each name, in precedence then file order.
    pub servers: Vec<Found>,
    /// Definitions of a name an earlier place already defined (ignored).
    pub shadowed: Vec<Found>,
    /// Every place, with what was found there.
    pub looked: Vec<(Place, Looked)>,
}

/// Reads every place in order and merges their servers (the first definition of a name wins).
pub fn discover(from: &Places, vars: &dyn Variables) -> Discovered {
    discover_in(places(from), vars)
}

/// [`discover`] over a chosen list of places (one client's, say).
pub fn discover_in(places: Vec<Place>, vars: &dyn Variables) -> Discovered {
    let mut discovered = Discovered::default();
    for place in places {
        if place.scope != Scope::Explicit && !place.path.is_file() {
            discovered.looked.push((place, Looked::Missing));
            continue;
        }
        let read = match crate::load_as(&place.path, &place.layout, vars) {
            Ok(read) => read,
            Err(error) => {
                discovered.looked.push((place, Looked::Failed(error)));
                continue;
            }
        };
        let count = read.file.servers.len();
        for server in read.file.servers.iter().cloned() {
            let name = match &server {
                Ok(entry) => entry.name.clone(),
                Err(error) => error.name.clone(),
            };
            let found = Found {
                written: read.written(&name).cloned().unwrap_or(Value::Null),
                server,
                scope: place.scope,
                client: place.client,
                path: place.path.clone(),
                layout: place.layout.clone(),
            };
            if discovered.servers.iter().any(|s| s.name() == name) {
                discovered.shadowed.push(found);
            } else {
                discovered.servers.push(found);
            }
        }
        discovered.looked.push((place, Looked::Read(count)));
    }
    discovered
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use expect_test::expect;

    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn every_client_file_is_read_and_the_first_definition_wins() {
        let root = std::env::temp_dir().join(format!("sb-discover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let project = root.join("project");
        write(
            &project.join(".mcp.json"),
            r#"{"mcpServers": {"shared": {"command": "from-project"}}}"#,
        );
        write(
            &project.join(".vscode/mcp.json"),
            "{\n  // comments are fine here\n  \"servers\": {\n    \"code\": {\"type\": \"stdio\", \"command\": \"c\"},\n  },\n}\n",
        );
        write(
            &project.join(".codex/config.toml"),
            "[mcp_servers.toml-project]\ncommand = \"t\"\n",
        );
        let claude = serde_json::json!({
            "mcpServers": {"shared": {"command": "from-user"}, "claude-user": {"type": "http", "url": "https://u:p@h.example/mcp"}},
            "projects": {project.display().to_string(): {"mcpServers": {"claude-local": {"command": "l"}}}, "/other": {"mcpServers": {"elsewhere": {"command": "e"}}}},
        });
        write(
            &home.join(".claude.json"),
            &serde_json::to_string_pretty(&claude).expect("json"),
        );
        write(
            &home.join(".gemini/settings.json"),
            r#"{"theme": "x", "mcpServers": {"gem": {"httpUrl": "https://g.example/mcp", "timeout": 5000}}}"#,
        );
        write(
            &home.join(".config/zed/settings.json"),
            "{\n  \"context_servers\": {\n    \"zed-cmd\": {\"command\": {\"path\": \"z\", \"args\": [\"1\"]}},\n    \"zed-ext\": {\"source\": \"extension\", \"settings\": {}}\n  }\n}",
        );
        write(&home.join(".cursor/mcp.json"), "{ not json");
        write(&home.join(".codex/config.toml"), "model = \"o3\"\n");
        let vars: BTreeMap<String, String> =
            [("HOME".to_owned(), home.display().to_string())].into();
        let places = Places::from_vars(&project, &vars);
        let found = discover(&places, &vars);
        let root_text = root.display().to_string();
        let show = |found: &Found| match &found.server {
            Ok(entry) => format!(
                "{} {} {} {} at {}",
                entry.name,
                found.scope.as_str(),
                found.client.as_str(),
                entry.redacted(),
                entry.origin
            ),
            Err(error) => format!("{} {} error: {error}", found.name(), found.scope.as_str()),
        };
        let mut lines: Vec<String> = found.servers.iter().map(show).collect();
        lines.push("shadowed:".into());
        lines.extend(found.shadowed.iter().map(show));
        lines.push("looked:".into());
        for (place, looked) in &found.looked {
            let what = match looked {
                Looked::Missing => "missing".to_owned(),
                Looked::Read(n) => format!("{n} servers"),
                Looked::Failed(error) => format!("failed: {error}"),
            };
            let part = place
                .part
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            lines.push(format!("{}{part} {what}", place.path.display()));
        }
        let shown = lines.join("\n").replace(&root_text, "$ROOT");
        expect![[r#"
            shared project claude-code {"type":"stdio","command":"from-project","args":[],"env":{},"enabled":true} at $ROOT/project/.mcp.json:1
            code project vscode {"type":"stdio","command":"c","args":[],"env":{},"enabled":true} at $ROOT/project/.vscode/mcp.json:4
            toml-project project codex {"type":"stdio","command":"t","args":[],"env":{},"enabled":true} at $ROOT/project/.codex/config.toml:1
            claude-local user claude-code {"type":"stdio","command":"l","args":[],"env":{},"enabled":true} at $ROOT/home/.claude.json:14
            claude-user user claude-code {"type":"http","url":"https://***@h.example/mcp","headers":{},"enabled":true} at $ROOT/home/.claude.json:6
            gem user gemini {"type":"http","url":"https://g.example/mcp","headers":{},"enabled":true} at $ROOT/home/.gemini/settings.json:1
            zed-cmd user zed {"type":"stdio","command":"z","args":["1"],"env":{},"enabled":true} at $ROOT/home/.config/zed/settings.json:3
            zed-ext user error: $ROOT/home/.config/zed/settings.json:4: server `zed-ext`: provided by a Zed extension; Switchboard cannot start it
            shadowed:
            shared user claude-code {"type":"stdio","command":"from-user","args":[],"env":{},"enabled":true} at $ROOT/home/.claude.json:3
            looked:
            $ROOT/project/.mcp.json 1 servers
            $ROOT/project/mcp.json missing
            $ROOT/project/.vscode/mcp.json 1 servers
            $ROOT/project/.cursor/mcp.json missing
            $ROOT/project/.gemini/settings.json missing
            $ROOT/project/.codex/config.toml 1 servers
            $ROOT/home/.config/switchboard/mcp.json missing
            $ROOT/home/.claude.json (projects.$ROOT/project) 1 servers
            $ROOT/home/.claude.json 2 servers
            $ROOT/home/.config/Claude/claude_desktop_config.json missing
            $ROOT/home/.cursor/mcp.json failed: $ROOT/home/.cursor/mcp.json:1:3: invalid JSON: key must be a string at line 1 column 3
            $ROOT/home/.config/Code/User/mcp.json missing
            $ROOT/home/.codex/config.toml 0 servers
            $ROOT/home/.gemini/settings.json 1 servers
            $ROOT/home/.config/zed/settings.json 2 servers"#]]
        .assert_eq(&shown);
        let _ = std::fs::remove_dir_all(&root);
    }
}
