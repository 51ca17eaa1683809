//! Where in a file its servers are, and how that client spells them.
//!
//! A [`Layout`] names a file's syntax (JSON, JSON with comments, TOML), the key path of its
//! server map (`mcpServers`, VS Code's `servers`, Zed's `context_servers`, Claude Code's
//! `projects.<dir>.mcpServers`, Codex's `mcp_servers`) and the client's dialect, which
//! [`common_form`] maps to the common spelling that entries are validated in.

use serde_json::{Map, Value};

/// A file's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Plain JSON.
    Json,
    /// JSON with `//` and `/* */` comments and trailing commas (VS Code, Zed, Gemini).
    Jsonc,
    /// TOML (Codex).
    Toml,
}

/// Whose spelling a file's entries use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryDialect {
    /// `command`/`args`/`env`/`url`/`headers` (Claude, Cursor, VS Code, Switchboard).
    Common,
    /// Gemini CLI: `httpUrl` for Streamable HTTP, `url` for SSE, `timeout` in milliseconds.
    Gemini,
    /// Zed: `command` may be `{"path", "args", "env"}`; extension servers have no command.
    Zed,
    /// Codex: `http_headers`, `startup_timeout_sec`, `tool_timeout_sec`.
    Codex,
}

/// What a file without the server map means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingMap {
    /// The file exists to hold servers: it is a shape error.
    IsAnError,
    /// The servers are one setting among many: no servers.
    IsEmpty,
}

/// Where a file's servers are and how they are spelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The file's syntax.
    pub syntax: Syntax,
    /// Candidate key paths of the server map; the first one present is used.
    pub maps: Vec<Vec<String>>,
    /// The entries' dialect.
    pub dialect: EntryDialect,
    /// What a file without the map means.
    pub missing_map: MissingMap,
}

fn key_path(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|key| (*key).to_owned()).collect()
}

impl Layout {
    /// An `mcp.json`-style file: `mcpServers`, or VS Code's `servers`, plain JSON.
    pub fn mcp_json() -> Layout {
        Layout {
            syntax: Syntax::Json,
            maps: vec![key_path(&["mcpServers"]), key_path(&["servers"])],
            dialect: EntryDialect::Common,
            missing_map: MissingMap::IsAnError,
        }
    }

    /// Switchboard's own user file: `mcpServers`, comments allowed.
    pub fn switchboard_user() -> Layout {
        Layout {
            syntax: Syntax::Jsonc,
            ..Layout::mcp_json()
        }
    }

    /// VS Code's `mcp.json`: `servers`, with comments.
    pub fn vscode() -> Layout {
        Layout {
            syntax: Syntax::Jsonc,
            maps: vec![key_path(&["servers"]), key_path(&["mcpServers"])],
            ..Layout::mcp_json()
        }
    }

    /// Gemini CLI's `settings.json`: `mcpServers` among other settings, with comments.
    pub fn gemini() -> Layout {
        Layout {
            syntax: Syntax::Jsonc,
            maps: vec![key_path(&["mcpServers"])],
            dialect: EntryDialect::Gemini,
            missing_map: MissingMap::IsEmpty,
        }
    }

    /// Zed's `settings.json`: `context_servers`, with comments.
    pub fn zed() -> Layout {
        Layout {
            syntax: Syntax::Jsonc,
            maps: vec![key_path(&["context_servers"])],
            dialect: EntryDialect::Zed,
            missing_map: MissingMap::IsEmpty,
        }
    }

    /// Claude Code's `~/.claude.json`, user scope: the top-level `mcpServers`.
    pub fn claude_code_user() -> Layout {
        Layout {
            syntax: Syntax::Json,
            maps: vec![key_path(&["mcpServers"])],
            dialect: EntryDialect::Common,
            missing_map: MissingMap::IsEmpty,
        }
    }

    /// Claude Code's `~/.claude.json`, one project's servers: `projects.<dir>.mcpServers`.
    pub fn claude_code_project(dir: &str) -> Layout {
        Layout {
            maps: vec![key_path(&["projects", dir, "mcpServers"])],
            ..Layout::claude_code_user()
        }
    }

    /// Codex's `config.toml`: `[mcp_servers.NAME]`.
    pub fn codex() -> Layout {
        Layout {
            syntax: Syntax::Toml,
            maps: vec![key_path(&["mcp_servers"])],
            dialect: EntryDialect::Codex,
            missing_map: MissingMap::IsAnError,
        }
    }

    /// The layout a file's name suggests: Codex for `.toml`, else `mcp.json`.
    pub fn for_path(path: &std::path::Path) -> Layout {
        if path.extension().is_some_and(|e| e == "toml") {
            Layout::codex()
        } else {
            Layout::mcp_json()
        }
    }

    /// The server map's key path this layout writes to (its first candidate).
    pub fn map_for_writing(&self) -> &[String] {
        self.maps.first().map_or(&[], Vec::as_slice)
    }
}

/// An entry as written in `dialect`, in the common spelling (`command`, `args`, `env`,
/// `cwd`, `url`, `headers`, `type`, `timeout` in seconds, `startupTimeout`, …). Values are
/// kept as written: no variable is expanded.
pub fn common_form(dialect: EntryDialect, value: Value) -> Value {
    let Value::Object(object) = value else {
        return value;
    };
    match dialect {
        EntryDialect::Common => Value::Object(object),
        EntryDialect::Codex => codex_to_common(object),
        EntryDialect::Gemini => gemini_to_common(object),
        EntryDialect::Zed => zed_to_common(object),
    }
}

/// Codex's field names, and back: (Codex, common).
const CODEX_NAMES: [(&str, &str); 3] = [
    ("http_headers", "headers"),
    ("startup_timeout_sec", "startupTimeout"),
    ("tool_timeout_sec", "timeout"),
];

fn codex_to_common(object: Map<String, Value>) -> Value {
    let renamed = object.into_iter().map(|(key, value)| {
        let key = CODEX_NAMES
            .iter()
            .find(|(codex, _)| *codex == key)
            .map_or(key, |(_, common)| (*common).to_owned());
        (key, value)
    });
    Value::Object(renamed.collect())
}

/// A common-form entry in Codex's spelling (for writing into a `config.toml`).
pub fn codex_form(value: &Value) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    let renamed = object
        .iter()
        .filter(|(key, _)| *key != "type")
        .map(|(key, value)| {
            let key = CODEX_NAMES
                .iter()
                .find(|(_, common)| common == key)
                .map_or(key.as_str(), |(codex, _)| codex);
            (key.to_owned(), value.clone())
        });
    Value::Object(renamed.collect())
}

/// A common-form entry in `dialect`'s spelling, for writing into that client's file: the
/// inverse of [`common_form`] (Codex's names; Gemini's `httpUrl` for Streamable HTTP, `url`
/// for SSE, no `type`, `timeout` in milliseconds).
pub fn dialect_form(dialect: EntryDialect, value: &Value) -> Value {
    match dialect {
        EntryDialect::Common | EntryDialect::Zed => value.clone(),
        EntryDialect::Codex => codex_form(value),
        EntryDialect::Gemini => gemini_form(value),
    }
}

fn gemini_form(value: &Value) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    let sse = object.get("type").and_then(Value::as_str) == Some("sse");
    let mut out = Map::new();
    for (key, value) in object {
        match key.as_str() {
            "type" => {}
            "url" if !sse => {
                out.insert("httpUrl".into(), value.clone());
            }
            "timeout" => {
                let secs = match value {
                    Value::Number(secs) => secs.as_f64(),
                    Value::String(text) => crate::parse_duration(text)
                        .ok()
                        .map(|duration| duration.as_secs_f64()),
                    _ => None,
                };
                // Durations are under a week (`parse_duration`, the entry's checks): whole
                // milliseconds fit.
                let millis = secs
                    .map(|secs| (secs * 1000.0).round())
                    .filter(|ms| (0.0..1e15).contains(ms))
                    .map(|ms| Value::from(ms as u64));
                out.insert(key.clone(), millis.unwrap_or_else(|| value.clone()));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

fn gemini_to_common(mut object: Map<String, Value>) -> Value {
    if let Some(url) = object.remove("httpUrl") {
        object.insert("url".into(), url);
        object.entry("type").or_insert_with(|| "http".into());
    } else if object.contains_key("url") {
        object.entry("type").or_insert_with(|| "sse".into());
    }
    // Gemini's `timeout` is in milliseconds.
    if let Some(Value::Number(ms)) = object.get("timeout")
        && let Some(ms) = ms.as_f64()
        && let Some(secs) = serde_json::Number::from_f64(ms / 1000.0)
    {
        object.insert("timeout".into(), Value::Number(secs));
    }
    // Settings of Gemini's own (`trust`, `description`, OAuth) are not ours to read.
    for key in ["trust", "description", "oauth", "authProviderType"] {
        object.remove(key);
    }
    Value::Object(object)
}

fn zed_to_common(mut object: Map<String, Value>) -> Value {
    match object.remove("command") {
        Some(Value::Object(mut command)) => {
            // Zed's older shape: `"command": {"path": …, "args": […], "env": {…}}`.
            for (from, to) in [("path", "command"), ("args", "args"), ("env", "env")] {
                if let Some(value) = command.remove(from) {
                    object.insert(to.into(), value);
                }
            }
        }
        // Zed's shape now: `"command": "…"` beside `args` and `env`.
        Some(command) => {
            object.insert("command".into(), command);
        }
        None => {}
    }
    for key in ["source", "settings"] {
        object.remove(key);
    }
    Value::Object(object)
}

/// Whether a Zed entry is one an extension provides (no command or URL of its own).
pub(crate) fn is_zed_extension(value: &Value) -> bool {
    let from_extension = value.get("source").and_then(Value::as_str) == Some("extension");
    from_extension || (value.get("command").is_none() && value.get("url").is_none())
}

/// JSON with comments as plain JSON of the same length: every comment and trailing comma
/// becomes spaces (line breaks kept), so offsets and lines are those of the original.
pub fn strip_jsonc(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut at = 0;
    // The last comma outside strings and comments not yet followed by a value.
    let mut pending_comma: Option<usize> = None;
    // Whether the last token ends a value: only a comma after a value may trail (`{,}` and
    // `[1,,]` stay invalid).
    let mut after_value = false;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                pending_comma = None;
                after_value = true;
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                let end = bytes[at..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(bytes.len(), |n| at + n);
                blank(&mut out, at, end);
                at = end;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                let end = text[at + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| at + 2 + n + 2);
                blank(&mut out, at, end);
                at = end;
            }
            b',' => {
                pending_comma = after_value.then_some(at);
                after_value = false;
                at += 1;
            }
            b'}' | b']' => {
                if let Some(comma) = pending_comma.take() {
                    out[comma] = b' ';
                }
                after_value = true;
                at += 1;
            }
            byte if byte.is_ascii_whitespace() => at += 1,
            byte => {
                pending_comma = None;
                after_value = !matches!(byte, b'{' | b'[' | b':');
                at += 1;
            }
        }
    }
    // Only ASCII bytes were replaced by ASCII spaces, inside ASCII-delimited spans.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_become_spaces() {
        let text = "{\n  // a \"quoted\" comment\n  \"a\": \"http://x//y\", /* b\n c */ \"b\": [1, 2,],\n}\n";
        let plain = strip_jsonc(text);
        assert_eq!(plain.len(), text.len());
        assert_eq!(plain.lines().count(), text.lines().count());
        let value: Value = serde_json::from_str(&plain).expect("plain JSON");
        assert_eq!(value, serde_json::json!({"a": "http://x//y", "b": [1, 2]}));
        // Only a comma after a value trails; a comma with nothing before it stays.
        for invalid in ["{,}", "{\"a\": [,]}", "{\"a\": [1,,]}", "{\"a\":,}"] {
            let plain = strip_jsonc(invalid);
            assert!(
                serde_json::from_str::<Value>(&plain).is_err(),
                "{invalid} reads"
            );
        }
    }

    #[test]
    fn dialects_in_common_form() {
        let gemini =
            serde_json::json!({"httpUrl": "https://h/mcp", "timeout": 30000, "trust": true});
        assert_eq!(
            common_form(EntryDialect::Gemini, gemini),
            serde_json::json!({"url": "https://h/mcp", "type": "http", "timeout": 30.0})
        );
        let zed = serde_json::json!({"command": {"path": "node", "args": ["s.js"], "env": {"K": "v"}}, "settings": {}});
        assert_eq!(
            common_form(EntryDialect::Zed, zed),
            serde_json::json!({"command": "node", "args": ["s.js"], "env": {"K": "v"}})
        );
        let flat =
            serde_json::json!({"source": "custom", "command": "node", "args": ["s.js"], "env": {}});
        assert_eq!(
            common_form(EntryDialect::Zed, flat),
            serde_json::json!({"command": "node", "args": ["s.js"], "env": {}})
        );
        let remote = serde_json::json!({"type": "http", "url": "https://h/mcp", "timeout": "1.5s"});
        let written = dialect_form(EntryDialect::Gemini, &remote);
        assert_eq!(
            written,
            serde_json::json!({"httpUrl": "https://h/mcp", "timeout": 1500})
        );
        assert_eq!(
            common_form(EntryDialect::Gemini, written),
            serde_json::json!({"url": "https://h/mcp", "type": "http", "timeout": 1.5})
        );
        let sse = serde_json::json!({"type": "sse", "url": "https://h/sse"});
        assert_eq!(
            dialect_form(EntryDialect::Gemini, &sse),
            serde_json::json!({"url": "https://h/sse"})
        );
        let common = serde_json::json!({"command": "x", "headers": {"A": "b"}, "timeout": 5});
        let codex = codex_form(&common);
        assert_eq!(
            codex,
            serde_json::json!({"command": "x", "http_headers": {"A": "b"}, "tool_timeout_sec": 5})
        );
        assert_eq!(common_form(EntryDialect::Codex, codex), common);
    }
}
