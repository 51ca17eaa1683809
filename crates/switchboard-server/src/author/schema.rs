//! Schemas derived from Rust types (`schemars`, JSON Schema 2020-12, MCP's default
//! dialect) and arguments checked against them before a handler runs.
//!
//! A derived schema keeps `$schema` (it names the dialect for clients of revisions before
//! 2025-11-25, which had no default) and the `$defs` of nested types, referred to by local
//! `#/$defs/…` pointers only, so a client that wants one flat schema can inline them
//! (`switchboard_runtime::schema::normalize` does). The root `title` schemars puts there
//! (the Rust type's name) is dropped: it says nothing to a model.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The schema of what `T` deserializes from (a tool's or prompt's arguments).
pub(crate) fn input_schema<T: JsonSchema + ?Sized>() -> Value {
    clean(
        SchemaSettings::draft2020_12()
            .for_deserialize()
            .into_generator()
            .into_root_schema_for::<T>(),
    )
}

/// The schema of what `T` serializes to (a tool's structured result).
pub(crate) fn output_schema<T: JsonSchema + ?Sized>() -> Value {
    clean(
        SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T>(),
    )
}

fn clean(schema: Schema) -> Value {
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.remove("title");
        if root.get("type").and_then(Value::as_str) == Some("object") {
            root.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    value
}

/// Checks that a schema has `type: "object"` at its root, as MCP requires of
/// `inputSchema` and `outputSchema` (a Rust enum, a string or a number does not).
pub(crate) fn require_object_root(schema: &Value) -> Result<(), String> {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => Ok(()),
        Some(other) => Err(format!(
            "has a schema with type {other:?} at its root; MCP needs an object (use a struct \
             with named fields)"
        )),
        None => Err(
            "has a schema without `type: \"object\"` at its root (an enum or an untagged \
             type?); MCP needs an object (use a struct with named fields)"
                .into(),
        ),
    }
}

/// Problems one check reports at most (the first ones; enough to correct a call).
const MAX_PROBLEMS: usize = 5;

/// Argument names an "unknown argument" problem lists at most.
const MAX_NAMES: usize = 16;

/// A compiled argument check.
pub(crate) struct Arguments {
    validator: jsonschema::Validator,
    /// The schema, to say what a missing key should have been.
    schema: Value,
    /// The top-level properties, for "not one of the arguments" problems.
    names: Vec<String>,
}

impl std::fmt::Debug for Arguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arguments")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl Arguments {
    /// Compiles a derived schema (no `$ref` leaves it: they are local).
    pub(crate) fn new(schema: &Value) -> Result<Arguments, String> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|error| format!("has a schema that is not valid JSON Schema: {error}"))?;
        let names = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        Ok(Arguments {
            validator,
            schema: schema.clone(),
            names,
        })
    }

    /// Checks arguments; the error names each offending key and what was expected, so
    /// that the model can correct its call.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_PROBLEMS)
            .map(|error| self.describe(&error))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    fn describe(&self, error: &ValidationError<'_>) -> String {
        // `/to/city` → `to.city` (the instance path is a JSON pointer).
        let at: Vec<String> = error
            .instance_path()
            .to_string()
            .split('/')
            .skip(1)
            .map(|part| part.replace("~1", "/").replace("~0", "~"))
            .collect();
        let at = at.join(".");
        let key = |name: &str| match at.as_str() {
            "" => format!("`{name}`"),
            _ => format!("`{at}.{name}`"),
        };
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                match self.expected(&error.schema_path().to_string(), &name) {
                    Some(expected) => format!("{} is required ({expected})", key(&name)),
                    None => format!("{} is required", key(&name)),
                }
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let named: Vec<String> = unexpected.iter().map(|name| key(name)).collect();
                let named = named.join(", ");
                if !at.is_empty() {
                    format!("{named}: not a key `{at}` has")
                } else if self.names.is_empty() {
                    format!("{named}: this takes no arguments")
                } else {
                    let mut names: Vec<&str> = self
                        .names
                        .iter()
                        .take(MAX_NAMES)
                        .map(String::as_str)
                        .collect();
                    if self.names.len() > MAX_NAMES {
                        names.push("…");
                    }
                    format!("{named}: not one of the arguments ({})", names.join(", "))
                }
            }
            _ if at.is_empty() => format!("arguments: {error}"),
            _ => format!("`{at}`: {error}"),
        }
    }

    /// What the schema says property `name` of the object whose `required` keyword is at
    /// `required_at` (a pointer into the schema) is: "a string", "one of …".
    fn expected(&self, required_at: &str, name: &str) -> Option<String> {
        let object = self
            .schema
            .pointer(required_at.strip_suffix("/required")?)?;
        let mut property = object.get("properties")?.get(name)?;
        if let Some(reference) = property.get("$ref").and_then(Value::as_str) {
            property = self.schema.pointer(reference.strip_prefix('#')?)?;
        }
        if let Some(choices) = property.get("enum").and_then(Value::as_array) {
            let choices: Vec<String> = choices.iter().map(Value::to_string).collect();
            return Some(format!("one of {}", choices.join(", ")));
        }
        let kinds: Vec<&str> = match property.get("type")? {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        let kinds: Vec<&str> = kinds
            .into_iter()
            .map(|kind| match kind {
                "string" => "a string",
                "integer" => "an integer",
                "number" => "a number",
                "boolean" => "a boolean",
                "object" => "an object",
                "array" => "an array",
                _ => "null",
            })
            .collect();
        Some(kinds.join(" or "))
    }
}
