//! Codex's `config.toml`, edited through `toml_edit`, which keeps comments, order and
//! spacing; a file written with CRLF line breaks keeps them.

use std::path::Path;

use serde_json::Value;

use super::EditError;

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

/// `text` with server `name` (in Codex's spelling) added to the first of `maps` the file
/// has, else to the first.
pub(super) fn add(
    text: &str,
    path: &Path,
    maps: &[Vec<String>],
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    let mut document = toml_document(text, path)?;
    let present = |keys: &&Vec<String>| {
        let mut item = document.as_item();
        keys.iter().all(|key| match item.get(key) {
            Some(inner) if inner.is_table_like() => {
                item = inner;
                true
            }
            _ => false,
        })
    };
    let map = match maps.iter().find(present).or(maps.first()) {
        Some(map) => map.clone(),
        None => Vec::new(),
    };
    let unreadable = |detail: String| EditError::Unreadable {
        path: path.to_owned(),
        detail,
    };
    let mut table: &mut toml_edit::Table = document.as_table_mut();
    for key in &map {
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
    Ok(with_line_breaks_of(text, document.to_string()))
}

/// `edited` with the line breaks of `original`: `toml_edit` writes every line break as `\n`,
/// so a file written with CRLF gets them back. (A file that mixes both comes back with `\n`.)
fn with_line_breaks_of(original: &str, edited: String) -> String {
    let crlf = original.matches("\r\n").count();
    if crlf == 0 || crlf != original.matches('\n').count() {
        return edited;
    }
    edited.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// `text` with server `name` removed from the table at `map`; `None` when it has none.
pub(super) fn remove(
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
    Ok(table
        .remove(name)
        .map(|_| with_line_breaks_of(text, document.to_string())))
}
