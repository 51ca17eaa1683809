//! The config editor ([`switchboard_config::edit`]): a server added to and removed from a
//! file.
//!
//! Input: one byte choosing the file (a VS Code `mcp.json` with comments, a plain
//! `mcp.json`, or a Codex `config.toml`), then the text (invalid UTF-8 replaced).
//! Invariants: nothing panics; an edit of a file that reads is either refused or reads
//! again, with the server added where the file's map is and every other value as it was;
//! removing it gives back the same bytes (JSON: unless the map was missing or held only
//! white space; TOML: the same values).

use std::path::Path;

use serde_json::Value;
use switchboard_config::edit::{EditError, add_server, remove_server};
use switchboard_config::{Layout, Syntax, strip_jsonc};

use crate::input::Input;

/// The server every input adds; no seed or dictionary word holds it.
const NAME: &str = "zz-fuzz-added";

/// Words of the files the editor meets, for the mutator.
pub const WORDS: &[&[u8]] = &[
    b"{\"servers\":{",
    b"{\"mcpServers\":{",
    b"\"inputs\":[]",
    b"\"command\":\"x\"",
    b"{}",
    b"[]",
    b",",
    b", ",
    b",\n",
    b",\r\n",
    b"// c\n",
    b"// c\r\n",
    b"/* c */",
    b"/*",
    b"*/",
    b"\t",
    b"    ",
    b"\n",
    b"\r\n",
    b"\"\\\"\"",
    b"[mcp_servers.",
    b"[mcp_servers]\n",
    b"mcp_servers.x.command = \"y\"\n",
    b"command = \"",
    b"# c\n",
];

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let (path, layout) = match input.byte() % 3 {
        0 => (".vscode/mcp.json", Layout::vscode()),
        1 => ("mcp.json", Layout::mcp_json()),
        _ => ("config.toml", Layout::codex()),
    };
    let text = String::from_utf8_lossy(input.rest());
    let path = Path::new(path);
    let entry = serde_json::json!({"command": "node", "args": ["s.js"], "env": {"K": "${T}"}});
    let before = read(&text, layout.syntax);
    let added = match add_server(&text, path, &layout, NAME, &entry) {
        Ok(added) => added,
        Err(EditError::Unreadable { .. } | EditError::AlreadyExists { .. }) => return,
        Err(error) => panic!("adding failed unexpectedly: {error}"),
    };
    let Some(before) = before.or_else(|| {
        text.trim()
            .is_empty()
            .then(|| Value::Object(Default::default()))
    }) else {
        panic!("a file that does not read was edited:\n{added}");
    };
    let after = read(&added, layout.syntax)
        .unwrap_or_else(|| panic!("the edited file does not read:\n{added}"));
    let map = written_map(&before, &layout);
    let mut expected = before.clone();
    insert_at(&mut expected, map, entry_as_written(&entry, layout.syntax));
    assert_eq!(
        after, expected,
        "adding changed more than the server:\n{added}"
    );
    let removed = match remove_server(&added, path, &layout, NAME) {
        Ok(removed) => removed,
        Err(error) => panic!("the added server cannot be removed: {error}\n{added}"),
    };
    let after_removal = read(&removed, layout.syntax)
        .unwrap_or_else(|| panic!("the file does not read after removal:\n{removed}"));
    if removed == *text {
        return;
    }
    match layout.syntax {
        Syntax::Toml => assert_eq!(
            after_removal, before,
            "add then remove changed the values:\n{removed}"
        ),
        Syntax::Json | Syntax::Jsonc => {
            let map_was = map
                .iter()
                .try_fold(&before, |value, key| value.get(key))
                .and_then(Value::as_object);
            assert!(
                map_was.is_none_or(serde_json::Map::is_empty),
                "add then remove changed the bytes of a file with servers:\n{text:?}\n{removed:?}"
            );
            assert!(
                !removed.contains(NAME),
                "the server is still there:\n{removed}"
            );
        }
    }
}

/// The file's values, when it reads in its syntax.
fn read(text: &str, syntax: Syntax) -> Option<Value> {
    match syntax {
        Syntax::Toml => {
            let table: toml::Table = text.parse().ok()?;
            serde_json::to_value(table).ok()
        }
        Syntax::Json | Syntax::Jsonc => {
            let value: Value = serde_json::from_str(&strip_jsonc(text)).ok()?;
            value.is_object().then_some(value)
        }
    }
}

/// The key path the editor writes to: the first candidate map the file has, else the first.
fn written_map<'a>(root: &Value, layout: &'a Layout) -> &'a [String] {
    let present = |keys: &&Vec<String>| {
        keys.iter()
            .try_fold(root, |value, key| value.get(key))
            .is_some_and(Value::is_object)
    };
    layout
        .maps
        .iter()
        .find(present)
        .or(layout.maps.first())
        .map_or(&[], Vec::as_slice)
}

/// `root` with the server at key path `map`, made where missing.
fn insert_at(root: &mut Value, map: &[String], entry: Value) {
    let mut value = root;
    for key in map {
        let Some(object) = value.as_object_mut() else {
            return;
        };
        value = object
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    if let Some(object) = value.as_object_mut() {
        object.insert(NAME.to_owned(), entry);
    }
}

/// The entry as the file holds it.
fn entry_as_written(entry: &Value, syntax: Syntax) -> Value {
    match syntax {
        Syntax::Toml => switchboard_config::codex_form(entry),
        Syntax::Json | Syntax::Jsonc => entry.clone(),
    }
}
