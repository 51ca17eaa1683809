//! Every text of a tool definition a model reads, with where it stands and how it is read
//! ([`TextRole`]): the name, title and description; in the input and output schemas every
//! property's name, `title`, `description`, `$comment`, `default`, `enum`, `examples`,
//! `const` and `pattern`; the annotations' strings; and every string under `_meta`.

use serde_json::Value;

use super::TextRole;

/// Keywords of a schema whose strings are protocol words, not text for a model.
const SCHEMA_WORDS: &[&str] = &[
    "type",
    "format",
    "$schema",
    "$ref",
    "$id",
    "$anchor",
    "$defs",
    "required",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords of a schema whose strings a model may copy into a call.
const VALUE_WORDS: &[&str] = &["default", "enum", "examples", "const", "pattern", "example"];

/// At most this many texts per definition.
const MAX_TEXTS: usize = 2_000;

/// Nesting deeper than this is not walked.
const MAX_DEPTH: usize = 32;

/// One text of a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedText<'a> {
    /// Where it stands: `inputSchema.properties.path.description`.
    pub place: String,
    /// The text.
    pub text: &'a str,
    /// How it is read.
    pub role: TextRole,
}

/// Every text of a tool definition (its raw JSON) a model reads.
pub fn tool_texts(tool: &Value) -> Vec<PlacedText<'_>> {
    let mut texts = Texts(Vec::new());
    let Value::Object(fields) = tool else {
        return texts.0;
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("name", Value::String(name)) => texts.push("name".into(), name, TextRole::Identifier),
            ("title" | "description", Value::String(text)) => {
                texts.push(key.clone(), text, TextRole::Prose);
            }
            ("inputSchema", schema) => texts.schema(schema, key, SchemaSide::Input, 0),
            ("outputSchema", schema) => texts.schema(schema, key, SchemaSide::Output, 0),
            ("annotations" | "_meta", value) => texts.leaves(value, key, TextRole::Prose, 0),
            _ => {}
        }
    }
    texts.0
}

/// Whose schema: an input schema's descriptions speak of what the model fills in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SchemaSide {
    Input,
    Output,
}

struct Texts<'a>(Vec<PlacedText<'a>>);

impl<'a> Texts<'a> {
    fn push(&mut self, place: String, text: &'a str, role: TextRole) {
        if self.0.len() < MAX_TEXTS && !text.is_empty() {
            self.0.push(PlacedText { place, text, role });
        }
    }

    /// Every string under `value`, read as `role` (prose for annotations and `_meta`, values
    /// for an `enum`'s items or an `examples` array).
    fn leaves(&mut self, value: &'a Value, place: &str, role: TextRole, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(text) => self.push(place.to_owned(), text, role),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.leaves(item, &format!("{place}[{index}]"), role, depth + 1);
                }
            }
            Value::Object(fields) => {
                for (key, item) in fields {
                    self.leaves(item, &format!("{place}.{key}"), role, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn schema(&mut self, schema: &'a Value, place: &str, side: SchemaSide, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match schema {
            Value::Object(fields) => {
                for (key, value) in fields {
                    let here = format!("{place}.{key}");
                    match (key.as_str(), value) {
                        (word, _) if SCHEMA_WORDS.contains(&word) => {}
                        (word, value) if VALUE_WORDS.contains(&word) => {
                            self.leaves(value, &here, TextRole::Value, depth + 1);
                        }
                        ("description", Value::String(text)) => {
                            let role = match side {
                                SchemaSide::Input => TextRole::Parameter,
                                SchemaSide::Output => TextRole::Prose,
                            };
                            self.push(here, text, role);
                        }
                        (_, Value::String(text)) => self.push(here, text, TextRole::Prose),
                        ("properties", Value::Object(properties)) => {
                            for (name, property) in properties {
                                let at = format!("{here}.{name}");
                                self.push(at.clone(), name, TextRole::Identifier);
                                self.schema(property, &at, side, depth + 1);
                            }
                        }
                        (_, value) => self.schema(value, &here, side, depth + 1),
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.schema(item, &format!("{place}[{index}]"), side, depth + 1);
                }
            }
            _ => {}
        }
    }
}
