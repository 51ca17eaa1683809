//! Adding and removing servers in a file without disturbing the rest of it.
//!
//! JSON (with or without comments) is edited as text (`json.rs`): only the bytes of the
//! member added or removed change, with its separating comma and its line, so every other
//! byte — comments, key order, trailing commas, indentation, CRLF line breaks, a missing final
//! line break — stays as it was, and adding then removing a server gives back the file byte
//! for byte. TOML goes through `toml_edit` (`toml.rs`), which keeps comments and order. The
//! server is written in the file's own dialect ([`crate::dialect_form`]). [`write_atomically`]
//! replaces a file through a temporary file in its folder (synced, then renamed:
//! [`crate::atomic`]); a file it creates is `0600` (in `0700` folders it creates), since a
//! config may hold literal secrets, and a file it rewrites keeps the mode its user gave it.
//!
//! A JSON-with-comments editing crate (`jsonc-parser`'s CST) was weighed against the text
//! edit here: it rewrites an object written on one line when a member is appended, and drops
//! the comments on a removed member's line and between a value and its comma, where the
//! promise is that nothing but the member changes.

mod json;
mod toml;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::atomic::Permissions;
use crate::{Layout, Syntax, dialect_form};

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
/// to the layout's server map: the first of its candidate maps that the file has, else the
/// first (made, with the keys above it). `entry` is in the common spelling.
pub fn add_server(
    text: &str,
    path: &Path,
    layout: &Layout,
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    let entry = dialect_form(layout.dialect, entry);
    match layout.syntax {
        Syntax::Toml => toml::add(text, path, &layout.maps, name, &entry),
        Syntax::Json | Syntax::Jsonc => json::add(text, path, &layout.maps, name, &entry),
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
            Syntax::Toml => toml::remove(text, path, map, name)?,
            Syntax::Json | Syntax::Jsonc => json::remove(text, path, map, name)?,
        };
        if let Some(text) = removed {
            return Ok(text);
        }
    }
    Err(not_found())
}

/// Replaces the config file at `path` with `text`, atomically ([`crate::atomic`]): a new
/// file is `0600` (folders made for it `0700`), an existing one keeps its mode. A symbolic
/// link is followed (its target is replaced, the link kept).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), EditError> {
    crate::atomic::replace_file(path, text.as_bytes(), Permissions::KeepExisting).map_err(
        |source| EditError::Io {
            path: path.to_owned(),
            source,
        },
    )
}

#[cfg(test)]
mod tests;
