//! The tool lock: each approved tool definition pinned per server, what changed since, and
//! which tools the lock holds (leaves out of a strict runtime's snapshot) until approved.
//!
//! A pin covers everything of a definition the model sees or that changes behaviour
//! ([`PINNED_FIELDS`]: name, title, description, input and output schema, annotations,
//! icons, `execution`, `_meta`), as canonical JSON (keys sorted): its SHA-256 (first 16 hex
//! digits) and, so that a change can be shown and a rename recognised, the pinned
//! definition itself, up to [`MAX_PINNED_DEFINITION_BYTES`] of canonical JSON. A definition
//! past the cap is pinned by its hash alone: a change is still caught, but shown without a
//! diff, and a rename of it is seen as one tool removed and one new.
//!
//! Comparing a server's tools with the lock ([`ToolLock::review`]) gives each tool's
//! [`Change`]: new, changed (with a [`PinDiff`]), or renamed (a tool whose definition but for
//! its name is that of a pinned tool no longer offered); and the pinned tools that are gone.
//! Changed and renamed tools are always held; new ones as the lock's [`NewTools`] policy
//! says (`"new_tools": "hold"` by default, or `"allow"`), written in the lock file.
//!
//! Format `switchboard-tool-lock/2`:
//! `{"format", "new_tools": "hold"|"allow", "servers": {SERVER: {TOOL: {"hash",
//! "definition"}}}}` (`"definition": null` with `"definitionBytes"` past the cap). A lock of
//! format `switchboard-tool-lock/1` (hashes of name, title, description, schemas and
//! annotations only) is still read, neither failing open nor holding everything: its pins are
//! compared as that format hashed them, so a tool changed in those fields is held as before,
//! new tools are held, and every report says the lock is outdated (`OutdatedLock`: icons,
//! `execution` and `_meta` are not pinned) until `scan --update` rewrites it in format 2.
//! Pins a format-1 lock carried over for servers not re-pinned are kept as `"legacyHash"`.
//!
//! The lock's usual place is beside the config file it pins ([`ToolLock::beside`]). It fails
//! closed: a lock that is there but cannot be used (unreadable, empty, cut short, a BOM,
//! another format, an entry that does not fit the format) is a [`StateFileError`] from
//! [`ToolLock::read`], never an empty lock, and a runtime with a strict [`LockPolicy`] whose
//! lock cannot be read holds every tool until the lock is usable again. It is written
//! atomically, `0600` (see `state_file.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use switchboard_protocol::Tool;

use crate::pin_diff::PinDiff;
use crate::sources::canonical;
use crate::state_file::{
    StateFileError, StateFileKind, StateFileProblem, read_versioned_state_file, write_state_file,
};

/// The lock format this runtime writes.
pub const LOCK_FORMAT: &str = "switchboard-tool-lock/2";
/// The first format: a hash of six fields per tool, no definitions. Still read.
const LOCK_FORMAT_1: &str = "switchboard-tool-lock/1";
/// The fields of a definition a pin covers, in the order reports show them.
pub const PINNED_FIELDS: [&str; 9] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "execution",
    "_meta",
];
/// The fields format 1 hashed.
const FORMAT_1_FIELDS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];
/// Largest pinned definition (canonical JSON) the lock keeps; past it only the hash is kept.
pub const MAX_PINNED_DEFINITION_BYTES: usize = 64 * 1024;

/// What the lock does with tools it does not pin (a new tool of a pinned server, or a
/// server never pinned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NewTools {
    /// Held until approved (the default).
    #[default]
    Hold,
    /// Served, and reported as new.
    Allow,
}

impl NewTools {
    /// The lock file's spelling: `hold` or `allow`.
    pub fn id(self) -> &'static str {
        match self {
            NewTools::Hold => "hold",
            NewTools::Allow => "allow",
        }
    }

    /// Reads the lock file's spelling.
    pub fn from_id(id: &str) -> Option<NewTools> {
        match id {
            "hold" => Some(NewTools::Hold),
            "allow" => Some(NewTools::Allow),
            _ => None,
        }
    }
}

/// One pinned tool.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pin {
    /// The hash, of this format's fields or (legacy) of format 1's.
    hash: String,
    /// The pinned definition, canonical; `None` past the cap or for a legacy pin.
    definition: Option<Value>,
    /// The size of a definition kept out for the cap.
    omitted_bytes: Option<usize>,
    /// Pinned by a format-1 lock: the hash covers format 1's fields only.
    legacy: bool,
}

impl Pin {
    fn of(tool: &Tool) -> Pin {
        let definition = pinned_definition(tool);
        let text = definition.to_string();
        let hash = hash_text(&text);
        if text.len() > MAX_PINNED_DEFINITION_BYTES {
            return Pin {
                hash,
                definition: None,
                omitted_bytes: Some(text.len()),
                legacy: false,
            };
        }
        Pin {
            hash,
            definition: Some(definition),
            omitted_bytes: None,
            legacy: false,
        }
    }

    fn to_json(&self) -> Value {
        if self.legacy {
            return json!({ "legacyHash": self.hash });
        }
        let mut entry = json!({ "hash": self.hash, "definition": self.definition });
        if let Some(bytes) = self.omitted_bytes {
            entry["definitionBytes"] = json!(bytes);
        }
        entry
    }

    /// Reads one entry of a format-2 lock.
    fn from_json(entry: &Value) -> Option<Pin> {
        if let Some(hash) = entry.get("legacyHash").and_then(Value::as_str) {
            return Some(Pin {
                hash: hash.to_owned(),
                definition: None,
                omitted_bytes: None,
                legacy: true,
            });
        }
        let hash = entry.get("hash")?.as_str()?.to_owned();
        let definition = match entry.get("definition") {
            None | Some(Value::Null) => None,
            Some(definition @ Value::Object(_)) => Some(canonical(definition)),
            Some(_) => return None,
        };
        let omitted_bytes = entry
            .get("definitionBytes")
            .and_then(Value::as_u64)
            .and_then(|b| usize::try_from(b).ok());
        Some(Pin {
            hash,
            definition,
            omitted_bytes,
            legacy: false,
        })
    }

    /// The pinned definition but its name, for recognising a rename.
    fn body(&self) -> Option<Value> {
        let mut body = self.definition.clone()?;
        body.as_object_mut()?.remove("name");
        Some(body)
    }
}

/// How a tool differs from what the lock pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The lock does not pin it.
    New,
    /// Its definition differs from the pinned one.
    Changed {
        /// The pinned hash.
        approved: String,
        /// The hash of the definition offered now.
        current: String,
        /// What changed; `None` when the lock keeps no definition to compare with (past the
        /// cap, or pinned by a format-1 lock).
        diff: Option<PinDiff>,
    },
    /// Offered under a new name, with the definition of a pinned tool that is gone.
    Renamed {
        /// The pinned name.
        from: String,
    },
}

impl Change {
    /// The finding kind of this change.
    pub fn kind(&self) -> crate::FindingKind {
        match self {
            Change::New => crate::FindingKind::NewTool,
            Change::Changed { .. } => crate::FindingKind::ChangedTool,
            Change::Renamed { .. } => crate::FindingKind::RenamedTool,
        }
    }

    /// The change in words, on one line: `its description changed since it was pinned
    /// (description: -"…" +"…")`.
    pub fn describe(&self) -> String {
        match self {
            Change::New => "a tool that was never pinned".to_owned(),
            Change::Changed {
                diff: Some(diff), ..
            } => {
                format!(
                    "its {} changed since it was pinned ({diff})",
                    diff.field_names()
                )
            }
            Change::Changed {
                approved,
                current,
                diff: None,
            } => format!(
                "its definition changed since it was pinned (hash {approved} → {current}; the \
                 lock keeps no definition to show what changed: pinned by an older format, or \
                 larger than {} KiB)",
                MAX_PINNED_DEFINITION_BYTES / 1024
            ),
            Change::Renamed { from } => format!(
                "renamed from `{from}` since it was pinned (the same definition under a new name)"
            ),
        }
    }
}

/// One server's tools against the lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// Each offered tool that is not pinned as it is, with its change, in the order offered.
    pub changes: Vec<(String, Change)>,
    /// Pinned tools no longer offered (and not renamed), in name order.
    pub removed: Vec<String>,
    /// Whether the lock pins the server at all.
    pub server_pinned: bool,
    /// Whether the server's pins were made by a format-1 lock.
    pub legacy: bool,
}

impl Review {
    /// The change of the tool named `tool`, if it is not pinned as it is.
    pub fn change(&self, tool: &str) -> Option<&Change> {
        self.changes
            .iter()
            .find(|(name, _)| name == tool)
            .map(|(_, change)| change)
    }
}

/// Why the lock holds (leaves out) a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// The tool is new, changed or renamed since it was pinned.
    Change(Change),
    /// The lock file cannot be used: every tool is held.
    UnusableLock(StateFileError),
}

impl Hold {
    /// The reason, starting with "it" or "its": `its description changed since it was
    /// pinned (…)`.
    pub fn reason(&self) -> String {
        match self {
            Hold::Change(Change::New) => {
                "it is new since the tools were pinned (the lock's `new_tools` is `hold`)".into()
            }
            Hold::Change(change) => change.describe(),
            Hold::UnusableLock(error) => format!("the lock cannot be used: {}", error.problem),
        }
    }
}

/// Approved tool definitions, by server and tool name, and the policy for new tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolLock {
    servers: BTreeMap<String, BTreeMap<String, Pin>>,
    new_tools: NewTools,
    /// Read from a format-1 file.
    read_legacy: bool,
}

impl ToolLock {
    /// The lock file's usual place: beside `config`, named after it (`mcp.json` →
    /// `mcp.tool-lock.json`, `.mcp.json` → `.mcp.tool-lock.json`, `config.toml` →
    /// `config.tool-lock.json`).
    pub fn beside(config: &Path) -> PathBuf {
        file_beside(config, "tool-lock.json")
    }

    /// Whether the lock pins any tool of `server`.
    pub fn has_server(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }

    /// What the lock does with tools it does not pin.
    pub fn new_tools(&self) -> NewTools {
        self.new_tools
    }

    /// Sets what the lock does with tools it does not pin.
    pub fn set_new_tools(&mut self, policy: NewTools) {
        self.new_tools = policy;
    }

    /// Whether the file was of format 1 (read, and rewritten as format 2 when saved).
    pub fn is_legacy(&self) -> bool {
        self.read_legacy
    }

    /// Reads a lock file: `None` when there is none. A file that is there and cannot be used
    /// (unreadable, empty, cut short, not JSON, a BOM, another format, an entry that does not
    /// fit it) is an error, never an empty lock: a caller that applies the lock must not go
    /// on without it. Format 1 is read as described in the module's documentation.
    pub fn read(path: &Path) -> Result<Option<ToolLock>, StateFileError> {
        let Some((format, value)) = read_versioned_state_file(
            StateFileKind::ToolLock,
            path,
            &[LOCK_FORMAT, LOCK_FORMAT_1],
        )?
        else {
            return Ok(None);
        };
        let malformed = |detail: String| {
            StateFileError::new(
                StateFileKind::ToolLock,
                path,
                StateFileProblem::Malformed(detail),
            )
        };
        let legacy = format == LOCK_FORMAT_1;
        let mut lock = ToolLock {
            read_legacy: legacy,
            ..ToolLock::default()
        };
        match value.get("new_tools") {
            None => {}
            Some(Value::String(id)) if NewTools::from_id(id).is_some() => {
                lock.new_tools = NewTools::from_id(id).unwrap_or_default();
            }
            Some(other) => {
                return Err(malformed(format!(
                    "`new_tools` is {}, not \"hold\" or \"allow\"",
                    cut(&other.to_string())
                )));
            }
        }
        let servers = match value.get("servers") {
            None => return Ok(Some(lock)),
            Some(Value::Object(servers)) => servers,
            Some(_) => return Err(malformed("`servers` is not an object".into())),
        };
        for (server, tools) in servers {
            let Some(tools) = tools.as_object() else {
                return Err(malformed(format!(
                    "server `{}` is not an object",
                    cut(server)
                )));
            };
            let mut pins = BTreeMap::new();
            for (tool, entry) in tools {
                let pin = if legacy {
                    entry.as_str().map(|hash| Pin {
                        hash: hash.to_owned(),
                        definition: None,
                        omitted_bytes: None,
                        legacy: true,
                    })
                } else {
                    Pin::from_json(entry)
                };
                let Some(pin) = pin else {
                    return Err(malformed(format!(
                        "the pin of `{}/{}` does not fit {format}",
                        cut(server),
                        cut(tool)
                    )));
                };
                pins.insert(tool.clone(), pin);
            }
            lock.servers.insert(server.clone(), pins);
        }
        Ok(Some(lock))
    }

    /// Reads a lock file; a missing file is an empty lock (every tool is new to it). A file
    /// that cannot be used is an error, as with [`ToolLock::read`].
    pub fn load(path: &Path) -> Result<ToolLock, StateFileError> {
        Ok(ToolLock::read(path)?.unwrap_or_default())
    }

    /// Writes the lock file in format 2: atomically (a new file renamed over the old one,
    /// so a kill during the write leaves the old lock, never an empty one), `0600`.
    pub fn save(&self, path: &Path) -> Result<(), StateFileError> {
        let servers: Map<String, Value> = self
            .servers
            .iter()
            .map(|(server, pins)| {
                let pins: Map<String, Value> = pins
                    .iter()
                    .map(|(tool, pin)| (tool.clone(), pin.to_json()))
                    .collect();
                (server.clone(), Value::Object(pins))
            })
            .collect();
        let value = json!({
            "format": LOCK_FORMAT,
            "new_tools": self.new_tools.id(),
            "servers": servers,
        });
        write_state_file(StateFileKind::ToolLock, path, &value)
    }

    /// Records `tools` as the approved definitions of `server` (replacing earlier ones).
    pub fn approve(&mut self, server: &str, tools: &[Tool]) {
        let pins = tools.iter().map(|t| (t.name.clone(), Pin::of(t))).collect();
        self.servers.insert(server.to_owned(), pins);
    }

    /// Records `tools` as the approved definitions of `server`, but for the tools named in
    /// `keep`, whose earlier pins (if any) stay as they were: a tool refused for approval
    /// keeps its old pin, or stays unpinned. Pins of tools in neither list are dropped.
    pub fn approve_keeping<'t>(
        &mut self,
        server: &str,
        tools: impl IntoIterator<Item = &'t Tool>,
        keep: &[String],
    ) {
        let old = self.servers.remove(server).unwrap_or_default();
        let mut pins: BTreeMap<String, Pin> = old
            .into_iter()
            .filter(|(name, _)| keep.contains(name))
            .collect();
        for tool in tools {
            pins.insert(tool.name.clone(), Pin::of(tool));
        }
        self.servers.insert(server.to_owned(), pins);
    }

    /// `server`'s offered `tools` against their pins: each tool's change (renames
    /// recognised), and the pinned tools that are gone.
    pub fn review<'t>(&self, server: &str, tools: impl IntoIterator<Item = &'t Tool>) -> Review {
        let tools: Vec<&Tool> = tools.into_iter().collect();
        let Some(pins) = self.servers.get(server) else {
            return Review {
                changes: tools
                    .iter()
                    .map(|t| (t.name.clone(), Change::New))
                    .collect(),
                ..Review::default()
            };
        };
        let offered = |name: &str| tools.iter().any(|t| t.name == name);
        let mut gone: Vec<&String> = pins.keys().filter(|name| !offered(name)).collect();
        let mut changes = Vec::new();
        for tool in tools.iter().copied() {
            let change = match pins.get(&tool.name) {
                Some(pin) => compare_pin(pin, tool),
                None => Some(renamed_from(tool, pins, &mut gone).unwrap_or(Change::New)),
            };
            if let Some(change) = change {
                changes.push((tool.name.clone(), change));
            }
        }
        Review {
            changes,
            removed: gone.into_iter().cloned().collect(),
            server_pinned: true,
            legacy: pins.values().any(|pin| pin.legacy),
        }
    }

    /// Whether a tool with `change` is held (left out until approved) by this lock.
    pub fn holds(&self, change: &Change) -> bool {
        match change {
            Change::New => self.new_tools == NewTools::Hold,
            Change::Changed { .. } | Change::Renamed { .. } => true,
        }
    }
}

/// How `tool` differs from its pin, if it does.
fn compare_pin(pin: &Pin, tool: &Tool) -> Option<Change> {
    let current = if pin.legacy {
        legacy_definition_hash(tool)
    } else {
        definition_hash(tool)
    };
    if current == pin.hash {
        return None;
    }
    let diff = pin
        .definition
        .as_ref()
        .and_then(|pinned| PinDiff::between(pinned, &pinned_definition(tool)));
    Some(Change::Changed {
        approved: pin.hash.clone(),
        current,
        diff,
    })
}

/// The gone pinned tool whose definition, but for its name, is `tool`'s; taken out of `gone`.
fn renamed_from(
    tool: &Tool,
    pins: &BTreeMap<String, Pin>,
    gone: &mut Vec<&String>,
) -> Option<Change> {
    let mut body = pinned_definition(tool);
    body.as_object_mut()?.remove("name");
    let at = gone
        .iter()
        .position(|name| pins.get(*name).and_then(Pin::body).as_ref() == Some(&body))?;
    let from = gone.remove(at).clone();
    Some(Change::Renamed { from })
}

/// Where the lock file lives, how strictly it is applied, and how a person accepts what it
/// holds.
#[derive(Debug, Clone)]
pub struct LockPolicy {
    /// The lock file.
    pub path: PathBuf,
    /// Leave out (hold) new and changed tools until approved.
    pub strict: bool,
    /// The command that accepts a server's held tools, without the server's name (the
    /// CLI's `switchboard scan --config FILE --update`); the server's name is added after
    /// it. `None`: messages say the host must approve them.
    pub accept_command: Option<String>,
}

impl LockPolicy {
    /// What to do about a held tool of `server`, as a clause: `run `… --update fx` to accept it`.
    pub fn accept_hint(&self, server: &str) -> String {
        match &self.accept_command {
            Some(command) => format!("run `{command} {server}` to accept it"),
            None => "it is served once the host approves it".into(),
        }
    }
}

/// The tool lock as a runtime last read it (at enable, reload or approval).
#[derive(Debug, Clone)]
pub(crate) enum LockReading {
    /// Read: these definitions are pinned (none when there is no file).
    Pinned(ToolLock),
    /// There, and not usable: with a strict policy no tool is served.
    Unusable(StateFileError),
}

/// The parts of a definition a pin covers ([`PINNED_FIELDS`]), as canonical JSON (keys
/// sorted at every level).
pub fn pinned_definition(tool: &Tool) -> Value {
    select_fields(tool, &PINNED_FIELDS)
}

/// SHA-256 (first 16 hex digits) of [`pinned_definition`]'s compact JSON.
pub fn definition_hash(tool: &Tool) -> String {
    hash_text(&pinned_definition(tool).to_string())
}

/// The hash a format-1 lock pinned: of name, title, description, schemas and annotations.
pub fn legacy_definition_hash(tool: &Tool) -> String {
    hash_text(&select_fields(tool, &FORMAT_1_FIELDS).to_string())
}

fn select_fields(tool: &Tool, fields: &[&str]) -> Value {
    let mut parts = Map::new();
    for key in fields {
        if let Some(value) = tool.raw.get(*key) {
            parts.insert((*key).to_owned(), canonical(value));
        }
    }
    canonical(&Value::Object(parts))
}

fn hash_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A name or value from the file, cut for a message.
fn cut(text: &str) -> String {
    let cut: String = text.chars().take(64).collect();
    format!("{}", switchboard_text::peer_text::PeerLine(&cut))
}

impl fmt::Display for NewTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A state file's usual place: beside `config`, named after it with `suffix` for its
/// extension (`mcp.json` → `mcp.SUFFIX`, `.mcp.json` → `.mcp.SUFFIX`).
pub fn file_beside(config: &Path, suffix: &str) -> PathBuf {
    let name = config
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => name,
    };
    config.with_file_name(format!("{stem}.{suffix}"))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn tool(raw: Value) -> Tool {
        Tool::from_json(raw).expect("tool")
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sb-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir.join("mcp.tool-lock.json")
    }

    #[test]
    fn the_lock_file_lives_beside_its_config() {
        let at = |p: &str| ToolLock::beside(Path::new(p)).display().to_string();
        assert_eq!(at("/p/mcp.json"), "/p/mcp.tool-lock.json");
        assert_eq!(at("/p/.mcp.json"), "/p/.mcp.tool-lock.json");
        assert_eq!(
            at("/p/.codex/config.toml"),
            "/p/.codex/config.tool-lock.json"
        );
        assert_eq!(at("servers"), "servers.tool-lock.json");
    }

    #[test]
    fn every_pinned_field_counts_but_not_key_order_and_definitions_round_trip() {
        let original = tool(json!({
            "name": "echo", "description": "Echo.",
            "inputSchema": {"type": "object", "properties": {}},
            "_meta": {"ui": {"template": "ui://echo/v1"}},
            "icons": [{"src": "https://x.example/a.png"}],
            "execution": {"taskSupport": "optional"},
        }));
        let reordered = tool(json!({
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://x.example/a.png"}],
            "_meta": {"ui": {"template": "ui://echo/v1"}},
            "inputSchema": {"properties": {}, "type": "object"}, "description": "Echo.", "name": "echo",
        }));
        let mut lock = ToolLock::default();
        assert_eq!(
            lock.review("srv", std::slice::from_ref(&original))
                .change("echo"),
            Some(&Change::New)
        );
        lock.approve("srv", std::slice::from_ref(&original));
        assert_eq!(
            lock.review("srv", &[reordered]),
            Review {
                server_pinned: true,
                ..Review::default()
            }
        );
        let mut seen = Vec::new();
        for (key, value) in [
            ("_meta", json!({"ui": {"template": "ui://echo/v2"}})),
            ("icons", json!([{"src": "https://x.example/b.png"}])),
            ("execution", json!({"taskSupport": "required"})),
            ("annotations", json!({"destructiveHint": true})),
        ] {
            let mut raw = original.raw.clone();
            raw[key] = value;
            let review = lock.review("srv", &[tool(raw)]);
            let change = review.change("echo").expect("a change");
            assert!(lock.holds(change));
            seen.push(change.describe());
        }
        expect![[r#"
            its _meta changed since it was pinned (_meta: /ui/template "ui://echo/v1" → "ui://echo/v2")
            its icons changed since it was pinned (icons: /0/src "https://x.example/a.png" → "https://x.example/b.png")
            its execution changed since it was pinned (execution: /taskSupport "optional" → "required")
            its annotations changed since it was pinned (annotations added)"#]]
        .assert_eq(&seen.join("\n"));

        let path = scratch("round-trip");
        lock.save(&path).expect("save");
        assert_eq!(ToolLock::load(&path), Ok(lock));
    }

    #[test]
    fn a_renamed_tool_is_a_rename_and_a_new_tool_follows_the_policy() {
        let norm = tool(
            json!({"name": "norm", "description": "Normalises text.", "inputSchema": {"type": "object"}}),
        );
        let echo = tool(
            json!({"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}),
        );
        let mut lock = ToolLock::default();
        lock.approve("srv", &[norm.clone(), echo.clone()]);
        let renamed = tool(
            json!({"name": "normalize", "description": "Normalises text.", "inputSchema": {"type": "object"}}),
        );
        let fresh = tool(
            json!({"name": "fresh", "description": "New.", "inputSchema": {"type": "object"}}),
        );
        let review = lock.review("srv", &[renamed, fresh]);
        expect![[r#"
            Review {
                changes: [
                    (
                        "normalize",
                        Renamed {
                            from: "norm",
                        },
                    ),
                    (
                        "fresh",
                        New,
                    ),
                ],
                removed: [
                    "echo",
                ],
                server_pinned: true,
                legacy: false,
            }"#]]
        .assert_eq(&format!("{review:#?}"));
        assert!(lock.holds(&Change::New));
        lock.set_new_tools(NewTools::Allow);
        assert!(!lock.holds(&Change::New));
        assert!(lock.holds(&Change::Renamed {
            from: "norm".into()
        }));
    }

    #[test]
    fn a_definition_past_the_cap_is_pinned_by_its_hash_alone() {
        let big =
            tool(json!({"name": "big", "description": "x".repeat(MAX_PINNED_DEFINITION_BYTES)}));
        let mut lock = ToolLock::default();
        lock.approve("srv", std::slice::from_ref(&big));
        let path = scratch("cap");
        lock.save(&path).expect("save");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.len() < 1024, "the definition is not kept: {text}");
        let read = ToolLock::load(&path).expect("load");
        assert_eq!(
            read.review("srv", std::slice::from_ref(&big)).changes,
            vec![]
        );
        let changed =
            tool(json!({"name": "big", "description": "y".repeat(MAX_PINNED_DEFINITION_BYTES)}));
        let review = read.review("srv", &[changed]);
        assert!(matches!(
            review.change("big"),
            Some(Change::Changed { diff: None, .. })
        ));
    }

    #[test]
    fn a_format_1_lock_is_read_its_pins_applied_and_rewritten_as_format_2() {
        let echo = tool(
            json!({"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"},
                               "_meta": {"ui": {"template": "ui://echo/v1"}}}),
        );
        let add =
            tool(json!({"name": "add", "description": "Adds.", "inputSchema": {"type": "object"}}));
        let path = scratch("format-1");
        let old = json!({"format": "switchboard-tool-lock/1", "servers": {"srv": {
            "echo": legacy_definition_hash(&echo),
            "add": legacy_definition_hash(&add),
        }}});
        std::fs::write(&path, old.to_string()).expect("write");
        let lock = ToolLock::load(&path).expect("a format-1 lock is read");
        assert!(lock.is_legacy());
        assert_eq!(lock.new_tools(), NewTools::Hold);
        // What format 1 pinned is still enforced; what it did not pin cannot be told.
        let mut meta_changed = echo.raw.clone();
        meta_changed["_meta"] = json!({"ui": {"template": "ui://echo/v2"}});
        let add_changed = tool(
            json!({"name": "add", "description": "Adds. And sends.", "inputSchema": {"type": "object"}}),
        );
        let fresh = tool(json!({"name": "fresh", "inputSchema": {"type": "object"}}));
        let review = lock.review("srv", &[tool(meta_changed), add_changed, fresh]);
        assert!(review.legacy);
        let changes: Vec<String> = review
            .changes
            .iter()
            .map(|(name, change)| format!("{name}: {}", Hold::Change(change.clone()).reason()))
            .collect();
        expect![[r#"
            add: its definition changed since it was pinned (hash $OLD → $NEW; the lock keeps no definition to show what changed: pinned by an older format, or larger than 64 KiB)
            fresh: it is new since the tools were pinned (the lock's `new_tools` is `hold`)"#]]
        .assert_eq(&{
            let text = changes.join("\n");
            let hashes = text.split("(hash ").nth(1).and_then(|r| r.split(';').next()).unwrap_or("").to_owned();
            text.replace(&hashes, "$OLD → $NEW")
        });
        // Saved, it is format 2; the servers not re-pinned keep their format-1 hashes.
        let mut lock = lock;
        lock.approve("other", std::slice::from_ref(&add));
        lock.save(&path).expect("save");
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(saved["format"], LOCK_FORMAT);
        assert_eq!(saved["new_tools"], "hold");
        assert!(saved["servers"]["srv"]["echo"]["legacyHash"].is_string());
        let again = ToolLock::load(&path).expect("load");
        assert!(!again.is_legacy());
        assert!(again.review("srv", std::slice::from_ref(&echo)).legacy);
        assert_eq!(
            again.review("srv", std::slice::from_ref(&echo)).changes,
            vec![]
        );
    }

    #[test]
    fn entries_that_do_not_fit_the_format_are_refused() {
        let path = scratch("malformed");
        let mut seen = String::new();
        for text in [
            r#"{"format":"switchboard-tool-lock/2","new_tools":"maybe","servers":{}}"#,
            r#"{"format":"switchboard-tool-lock/2","servers":{"s":{"t":"00"}}}"#,
            r#"{"format":"switchboard-tool-lock/2","servers":{"s":[]}}"#,
            r#"{"format":"switchboard-tool-lock/1","servers":{"s":{"t":{"hash":"00"}}}}"#,
        ] {
            std::fs::write(&path, text).expect("write");
            let error = ToolLock::read(&path).expect_err("refused");
            seen.push_str(&format!("{}\n", error.problem));
        }
        expect![[r#"
            its content does not fit its format: `new_tools` is "maybe", not "hold" or "allow"
            its content does not fit its format: the pin of `s/t` does not fit switchboard-tool-lock/2
            its content does not fit its format: server `s` is not an object
            its content does not fit its format: the pin of `s/t` does not fit switchboard-tool-lock/1
        "#]]
        .assert_eq(&seen);
    }
}
