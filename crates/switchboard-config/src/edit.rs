//! Adding and removing servers in a file without disturbing the rest of it.
//!
//! JSON (with or without comments) is edited as text: the server map's span is found by a
//! small scanner and one member is inserted after the last (`,\n    "name": {…}`, indented
//! like its neighbours) or cut out, so every other byte — comments, key order, spacing —
//! stays as it was, and adding then removing a server gives back the file byte for byte.
//! TOML goes through `toml_edit`, which keeps comments and order. [`write_atomically`]
//! replaces a file through a temporary file in its folder (synced, then renamed).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Layout, Syntax, codex_form, strip_jsonc};

/// Why a file could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The name is taken.
    #[error("{path}: a server named `{name}` already exists")]
    AlreadyExists {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
    /// No server of that name.
    #[error("{path}: no server named `{name}`")]
    NotFound {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
    /// The file is not one we can edit (not valid, or its server map is not a map).
    #[error("{path}: {detail}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `text` (the file at `path`, empty when it does not exist yet) with server `name` added
/// to the layout's server map; `entry` is in the common spelling.
pub fn add_server(
    text: &str,
    path: &Path,
    layout: &Layout,
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    let map = layout.map_for_writing();
    match layout.syntax {
        Syntax::Toml => toml_add(text, path, map, name, &codex_form(entry)),
        Syntax::Json | Syntax::Jsonc => json_add(text, path, map, name, entry),
    }
}

/// `text` with server `name` removed from the first of the layout's server maps that has it.
pub fn remove_server(
    text: &str,
    path: &Path,
    layout: &Layout,
    name: &str,
) -> Result<String, EditError> {
    let not_found = || EditError::NotFound {
        path: path.to_owned(),
        name: name.to_owned(),
    };
    for map in &layout.maps {
        let removed = match layout.syntax {
            Syntax::Toml => toml_remove(text, path, map, name)?,
            Syntax::Json | Syntax::Jsonc => json_remove(text, path, map, name)?,
        };
        if let Some(text) = removed {
            return Ok(text);
        }
    }
    Err(not_found())
}

/// Replaces the file at `path` with `text`: written to a new file in the same folder, synced,
/// given the old file's permissions, renamed over it, and the folder synced. A symbolic
/// link is followed (its target is replaced, the link kept).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), EditError> {
    let io = |source| EditError::Io {
        path: path.to_owned(),
        source,
    };
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = dir.join(format!(".{file_name}.{}.{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = std::fs::metadata(&target) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, &target)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io)
}

/// One `"key": value` of an object: where its key starts and its value ends.
struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

/// An object's braces and members.
struct ObjectSpan {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// Scans valid JSON (comments already blanked) for spans.
struct Scanner<'a> {
    text: &'a str,
}

impl Scanner<'_> {
    fn skip_space(&self, mut at: usize) -> usize {
        let bytes = self.text.as_bytes();
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    }

    fn string_end(&self, start: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut at = start + 1;
        while at < bytes.len() && bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        (at + 1).min(bytes.len())
    }

    fn value_end(&self, start: usize) -> usize {
        let bytes = self.text.as_bytes();
        match bytes.get(start) {
            Some(b'"') => self.string_end(start),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                let mut at = start;
                while at < bytes.len() {
                    match bytes[at] {
                        b'"' => {
                            at = self.string_end(at);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return at + 1;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
                bytes.len()
            }
            _ => {
                let mut at = start;
                while at < bytes.len()
                    && !matches!(bytes[at], b',' | b'}' | b']')
                    && !bytes[at].is_ascii_whitespace()
                {
                    at += 1;
                }
                at
            }
        }
    }

    /// The object whose `{` is at `open`.
    fn object(&self, open: usize) -> ObjectSpan {
        let bytes = self.text.as_bytes();
        let mut members = Vec::new();
        let mut at = self.skip_space(open + 1);
        while at < bytes.len() && bytes[at] == b'"' {
            let key_end = self.string_end(at);
            let key = serde_json::from_str(&self.text[at..key_end]).unwrap_or_default();
            let colon = self.skip_space(key_end);
            let value_start = self.skip_space(colon + 1);
            let value_end = self.value_end(value_start);
            members.push(Member {
                key,
                key_start: at,
                value_start,
                value_end,
            });
            at = self.skip_space(value_end);
            if bytes.get(at) == Some(&b',') {
                at = self.skip_space(at + 1);
            }
        }
        ObjectSpan {
            open,
            close: at,
            members,
        }
    }
}

/// The indentation one level adds in this file (its first indented line's), two spaces
/// when nothing is indented.
fn indent_unit(text: &str) -> String {
    text.lines()
        .filter_map(|line| {
            let indent: String = line
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            (!indent.is_empty() && indent.len() < line.len()).then_some(indent)
        })
        .next()
        .unwrap_or_else(|| "  ".into())
}

/// The leading white space of the line holding `offset`.
fn line_indent(text: &str, offset: usize) -> &str {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    let end = line
        .find(|c: char| c != ' ' && c != '\t')
        .unwrap_or(line.len());
    &line[..end]
}

/// The leading white space of the line holding `offset`, when nothing else precedes it.
fn own_line_indent(text: &str, offset: usize) -> Option<&str> {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[start..offset];
    before
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(before)
}

/// `value` as pretty JSON indented by `unit` per level, continuation lines after `indent`.
fn pretty(value: &Value, unit: &str, indent: &str) -> String {
    let two_spaces = serde_json::to_string_pretty(value).unwrap_or_default();
    // A JSON string holds no raw line break: each line's leading spaces are its depth.
    let lines: Vec<String> = two_spaces
        .lines()
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            format!("{}{}", unit.repeat(spaces / 2), &line[spaces..])
        })
        .collect();
    lines.join(&format!("\n{indent}"))
}

/// The object at key path `keys`, and how far the path got: `Ok((object, n))` where the
/// first `n` keys were found (the object is at `keys[..n]`).
fn find_object(
    scanner: &Scanner<'_>,
    path: &Path,
    keys: &[String],
) -> Result<(ObjectSpan, usize), EditError> {
    let unreadable = |detail: String| EditError::Unreadable {
        path: path.to_owned(),
        detail,
    };
    let root = scanner.skip_space(0);
    if scanner.text.as_bytes().get(root) != Some(&b'{') {
        return Err(unreadable("the file must hold a JSON object".into()));
    }
    let mut object = scanner.object(root);
    for (depth, key) in keys.iter().enumerate() {
        let Some(member) = object.members.iter().find(|m| &m.key == key) else {
            return Ok((object, depth));
        };
        if scanner.text.as_bytes().get(member.value_start) != Some(&b'{') {
            return Err(unreadable(format!(
                "`{}` is not an object",
                keys[..=depth].join(".")
            )));
        }
        object = scanner.object(member.value_start);
    }
    Ok((object, keys.len()))
}

fn check_json(text: &str, path: &Path) -> Result<String, EditError> {
    let plain = strip_jsonc(text);
    serde_json::from_str::<Value>(&plain).map_err(|e| EditError::Unreadable {
        path: path.to_owned(),
        detail: format!("invalid JSON: {e}"),
    })?;
    Ok(plain)
}

fn json_add(
    text: &str,
    path: &Path,
    map: &[String],
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    if text.trim().is_empty() {
        let mut value = serde_json::json!({ name: entry });
        for key in map.iter().rev() {
            value = serde_json::json!({ key: value });
        }
        return Ok(pretty(&value, "  ", "") + "\n");
    }
    let plain = check_json(text, path)?;
    let scanner = Scanner { text: &plain };
    let (object, found) = find_object(&scanner, path, map)?;
    // What goes into `object`: the server, or the rest of the path around it.
    let (key, value) = if found == map.len() {
        if object.members.iter().any(|m| m.key == name) {
            return Err(EditError::AlreadyExists {
                path: path.to_owned(),
                name: name.to_owned(),
            });
        }
        (name.to_owned(), entry.clone())
    } else {
        let mut value = serde_json::json!({ name: entry });
        for key in map[found + 1..].iter().rev() {
            value = serde_json::json!({ key: value });
        }
        (map[found].clone(), value)
    };
    let unit = indent_unit(text);
    let closing = line_indent(text, object.open).to_owned();
    // Indented like the first member when it starts its own line, else one level in.
    let member_indent = object
        .members
        .first()
        .and_then(|first| own_line_indent(text, first.key_start))
        .map_or_else(|| format!("{closing}{unit}"), str::to_owned);
    let member = format!(
        "{}: {}",
        serde_json::to_string(&key).unwrap_or_default(),
        pretty(&value, &unit, &member_indent)
    );
    let mut out = String::with_capacity(text.len() + member.len() + 8);
    match object.members.last() {
        Some(last) => {
            out.push_str(&text[..last.value_end]);
            out.push_str(&format!(",\n{member_indent}{member}"));
            out.push_str(&text[last.value_end..]);
        }
        None if text[object.open + 1..object.close].trim().is_empty() => {
            out.push_str(&text[..=object.open]);
            out.push_str(&format!("\n{member_indent}{member}\n{closing}"));
            out.push_str(&text[object.close..]);
        }
        None => {
            out.push_str(&text[..=object.open]);
            out.push_str(&format!("\n{member_indent}{member}\n{closing}"));
            out.push_str(&text[object.open + 1..]);
        }
    }
    Ok(out)
}

fn json_remove(
    text: &str,
    path: &Path,
    map: &[String],
    name: &str,
) -> Result<Option<String>, EditError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let plain = check_json(text, path)?;
    let scanner = Scanner { text: &plain };
    let (object, found) = find_object(&scanner, path, map)?;
    if found < map.len() {
        return Ok(None);
    }
    let Some(index) = object.members.iter().position(|m| m.key == name) else {
        return Ok(None);
    };
    let members = &object.members;
    let (from, to) = match (index.checked_sub(1), members.get(index + 1)) {
        (_, Some(next)) => (members[index].key_start, next.key_start),
        (Some(previous), None) => (members[previous].value_end, members[index].value_end),
        (None, None) => (object.open + 1, object.close),
    };
    Ok(Some(format!("{}{}", &text[..from], &text[to..])))
}

fn toml_document(text: &str, path: &Path) -> Result<toml_edit::DocumentMut, EditError> {
    text.parse()
        .map_err(|e: toml_edit::TomlError| EditError::Unreadable {
            path: path.to_owned(),
            detail: format!("invalid TOML: {}", e.message()),
        })
}

fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let array: toml_edit::Array = items.iter().filter_map(toml_value).collect();
            array.into()
        }
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, value) in map {
                if let Some(value) = toml_value(value) {
                    table.insert(key, value);
                }
            }
            table.into()
        }
    })
}

fn toml_add(
    text: &str,
    path: &Path,
    map: &[String],
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    let mut document = toml_document(text, path)?;
    let unreadable = |detail: String| EditError::Unreadable {
        path: path.to_owned(),
        detail,
    };
    let mut table: &mut toml_edit::Table = document.as_table_mut();
    for key in map {
        let item = table.entry(key).or_insert_with(|| {
            let mut implicit = toml_edit::Table::new();
            implicit.set_implicit(true);
            toml_edit::Item::Table(implicit)
        });
        table = item.as_table_mut().ok_or_else(|| {
            unreadable(format!(
                "`{key}` is not a table of its own; write it as [{key}.NAME] tables to add servers"
            ))
        })?;
    }
    if table.contains_key(name) {
        return Err(EditError::AlreadyExists {
            path: path.to_owned(),
            name: name.to_owned(),
        });
    }
    let mut server = toml_edit::Table::new();
    if let Value::Object(fields) = entry {
        for (key, value) in fields {
            if let Some(value) = toml_value(value) {
                server.insert(key, toml_edit::Item::Value(value));
            }
        }
    }
    table.insert(name, toml_edit::Item::Table(server));
    Ok(document.to_string())
}

fn toml_remove(
    text: &str,
    path: &Path,
    map: &[String],
    name: &str,
) -> Result<Option<String>, EditError> {
    let mut document = toml_document(text, path)?;
    let mut table: &mut dyn toml_edit::TableLike = document.as_table_mut();
    for key in map {
        let Some(inner) = table
            .get_mut(key)
            .and_then(toml_edit::Item::as_table_like_mut)
        else {
            return Ok(None);
        };
        table = inner;
    }
    Ok(table.remove(name).map(|_| document.to_string()))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn stdio(command: &str) -> Value {
        serde_json::json!({"command": command, "args": ["-y", "pkg"], "env": {"KEY": "${TOKEN}"}})
    }

    /// Adds `new` then removes it: the file is back byte for byte, and the added text is
    /// what the expectation shows.
    fn round_trip(text: &str, file: &str, layout: &Layout, entry: &Value) -> String {
        let path = Path::new(file);
        let added = add_server(text, path, layout, "new", entry).expect("add");
        let read = crate::parse_as(&added, path, layout, &std::collections::BTreeMap::new());
        let names: Vec<String> = match read {
            Ok(read) => read.written.iter().map(|(n, _)| n.clone()).collect(),
            Err(error) => panic!("the edited file does not read: {error}\n{added}"),
        };
        assert_eq!(names.last().map(String::as_str), Some("new"), "{added}");
        let removed = remove_server(&added, path, layout, "new").expect("remove");
        assert_eq!(removed, text, "add then remove changed the file:\n{added}");
        added
    }

    #[test]
    fn json_edits_keep_comments_order_and_indentation() {
        let vscode = "{\n\t// my servers\n\t\"servers\": {\n\t\t\"b\": { \"command\": \"x\" }, // trailing note\n\t\t\"a\": { \"url\": \"https://h/mcp\" },\n\t},\n\t\"inputs\": []\n}\n";
        expect![[r#"
            {
            	// my servers
            	"servers": {
            		"b": { "command": "x" }, // trailing note
            		"a": { "url": "https://h/mcp" },
            		"new": {
            			"command": "npx",
            			"args": [
            				"-y",
            				"pkg"
            			],
            			"env": {
            				"KEY": "${TOKEN}"
            			}
            		},
            	},
            	"inputs": []
            }
        "#]]
        .assert_eq(&round_trip(
            vscode,
            ".vscode/mcp.json",
            &Layout::vscode(),
            &stdio("npx"),
        ));
        let remote = serde_json::json!({"type": "http", "url": "https://h.example/mcp"});
        let empty_map = "{\n  \"mcpServers\": {},\n  \"other\": 1\n}";
        expect![[r#"
            {
              "mcpServers": {
                "new": {
                  "type": "http",
                  "url": "https://h.example/mcp"
                }
              },
              "other": 1
            }"#]]
        .assert_eq(&round_trip(
            empty_map,
            ".mcp.json",
            &Layout::mcp_json(),
            &remote,
        ));
        let claude = "{\n    \"numStartups\": 3,\n    \"projects\": {\n        \"/p\": {\n            \"mcpServers\": {\n                \"old\": {\"command\": \"o\"}\n            }\n        }\n    }\n}\n";
        let added = round_trip(
            claude,
            ".claude.json",
            &Layout::claude_code_project("/p"),
            &stdio("npx"),
        );
        assert!(added.contains("\"old\": {\"command\": \"o\"},\n                \"new\": {\n                    \"command\""), "{added}");
    }

    #[test]
    fn json_edits_create_what_is_missing() {
        let path = Path::new("settings.json");
        let added = add_server(
            "{\n  \"theme\": \"dark\" // mine\n}\n",
            path,
            &Layout::gemini(),
            "g",
            &serde_json::json!({"httpUrl": "https://g/mcp"}),
        )
        .expect("add");
        expect![[r#"
            {
              "theme": "dark",
              "mcpServers": {
                "g": {
                  "httpUrl": "https://g/mcp"
                }
              } // mine
            }
        "#]]
        .assert_eq(&added);
        let created = add_server(
            "",
            Path::new(".mcp.json"),
            &Layout::mcp_json(),
            "n",
            &stdio("x"),
        )
        .expect("add");
        assert!(
            created.starts_with("{\n  \"mcpServers\": {\n    \"n\": {"),
            "{created}"
        );
        let taken = add_server(
            &created,
            Path::new(".mcp.json"),
            &Layout::mcp_json(),
            "n",
            &stdio("x"),
        );
        expect!["Err(AlreadyExists { path: \".mcp.json\", name: \"n\" })"]
            .assert_eq(&format!("{taken:?}"));
        let missing = remove_server(
            &created,
            Path::new(".mcp.json"),
            &Layout::mcp_json(),
            "other",
        );
        expect![".mcp.json: no server named `other`"]
            .assert_eq(&missing.expect_err("missing").to_string());
        let only = remove_server(&created, Path::new(".mcp.json"), &Layout::mcp_json(), "n")
            .expect("remove");
        assert_eq!(only, "{\n  \"mcpServers\": {}\n}\n");
        let first = remove_server(
            "{\"mcpServers\": {\"a\": 1, \"b\": 2}}",
            path,
            &Layout::mcp_json(),
            "a",
        )
        .expect("remove");
        assert_eq!(first, "{\"mcpServers\": {\"b\": 2}}");
    }

    #[test]
    fn toml_edits_keep_comments_and_order() {
        let codex = "# Codex settings\nmodel = \"o3\"\n\n[mcp_servers.docs] # the docs\ncommand = \"docs\"\n\n[profiles.fast]\nmodel = \"mini\"\n";
        let added = round_trip(codex, "config.toml", &Layout::codex(), &stdio("npx"));
        expect![[r##"
            # Codex settings
            model = "o3"

            [mcp_servers.docs] # the docs
            command = "docs"

            [mcp_servers.new]
            command = "npx"
            args = ["-y", "pkg"]
            env = { KEY = "${TOKEN}" }

            [profiles.fast]
            model = "mini"
        "##]]
        .assert_eq(&added);
        let headers = serde_json::json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}, "type": "http"});
        let fresh =
            add_server("", Path::new("c.toml"), &Layout::codex(), "web", &headers).expect("add");
        expect![[r#"
            [mcp_servers.web]
            url = "https://h/mcp"
            http_headers = { Authorization = "Bearer ${T}" }
        "#]]
        .assert_eq(&fresh);
    }

    #[test]
    fn files_are_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("sb-edit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("mcp.json");
        std::fs::write(&path, "old").expect("write");
        std::os::unix::fs::symlink(&path, dir.join("link.json")).expect("link");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        write_atomically(&dir.join("link.json"), "new").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            std::fs::symlink_metadata(dir.join("link.json"))
                .expect("link")
                .file_type()
                .is_symlink()
        );
        let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
        assert_eq!(left.len(), 2, "no temporary file is left");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
