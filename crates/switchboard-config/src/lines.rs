//! Line tracking: the 1-based line of each server's name in a file, for entry errors and
//! origins. JSON is scanned token by token (names written with escapes included); TOML is
//! read with spans (`[mcp_servers.NAME]`, dotted keys and inline tables alike).

use std::collections::BTreeMap;

/// 1-based line of `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// 1-based line of each server's name in a JSON file: the keys of the object at key path
/// `map_path`, however they are written (escapes included), each at its first appearance.
/// The text is valid JSON (it was parsed before; comments blanked).
pub(crate) fn json_entry_lines(text: &str, map_path: &[String]) -> BTreeMap<String, usize> {
    let mut scan = JsonScan {
        text,
        map_path,
        open: Vec::new(),
        lines: BTreeMap::new(),
    };
    if map_path.is_empty() {
        return scan.lines;
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => scan.open_container(bytes[at] == b'{'),
            b'}' | b']' => {
                scan.open.pop();
            }
            b'"' => {
                at = scan.string_at(at);
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    scan.lines
}

/// An open container: whether it is an object, whether it lies on the map's key path, and
/// the last key read directly in it.
struct Open {
    object: bool,
    on_path: bool,
    key: Option<String>,
}

/// A scan of JSON text for the lines of the keys of the object at `map_path`.
struct JsonScan<'a> {
    text: &'a str,
    map_path: &'a [String],
    open: Vec<Open>,
    lines: BTreeMap<String, usize>,
}

impl JsonScan<'_> {
    /// A `{` or `[` opens a container, on the key path when its parent is and it is the
    /// value of the path's next key.
    fn open_container(&mut self, object: bool) {
        let depth = self.open.len();
        let on_path = self.open.last().is_none_or(|parent| {
            parent.on_path
                && parent.object
                && depth <= self.map_path.len()
                && parent.key.as_deref() == Some(self.map_path[depth - 1].as_str())
        });
        self.open.push(Open {
            object,
            on_path,
            key: None,
        });
    }

    /// Reads the string starting at `start`; when it is a key, notes it (and its line, when
    /// it names a server). Returns the offset after the string.
    fn string_at(&mut self, start: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut at = start + 1;
        while at < bytes.len() && bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        at += 1;
        let end = at.min(self.text.len());
        let is_key = self.text[end..].trim_start().starts_with(':');
        if let (true, Ok(key)) = (
            is_key,
            serde_json::from_str::<String>(&self.text[start..end]),
        ) {
            self.note_key(key, start);
        }
        at
    }

    /// A key read at `start` in the innermost container.
    fn note_key(&mut self, key: String, start: usize) {
        let depth = self.open.len();
        let Some(container) = self.open.last_mut() else {
            return;
        };
        if container.on_path && container.object && depth == self.map_path.len() + 1 {
            let line = line_at(self.text, start);
            self.lines.entry(key.clone()).or_insert(line);
        }
        container.key = Some(key);
    }
}

/// 1-based line of each server's name in a Codex TOML file (`[mcp_servers.NAME]`, dotted
/// keys and inline tables alike).
pub(crate) fn toml_entry_lines(text: &str, map_path: &[String]) -> BTreeMap<String, usize> {
    let Ok(root) = toml::de::DeTable::parse(text) else {
        return BTreeMap::new();
    };
    let mut table = root.get_ref();
    for key in map_path {
        let found = table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key.as_str());
        let Some((_, value)) = found else {
            return BTreeMap::new();
        };
        let toml::de::DeValue::Table(inner) = value.get_ref() else {
            return BTreeMap::new();
        };
        table = inner;
    }
    table
        .iter()
        .map(|(key, _)| (key.get_ref().to_string(), line_at(text, key.span().start)))
        .collect()
}
