//! Schemas derived from Rust types (`schemars`, JSON Schema 2020-12, MCP's default
//! dialect); arguments are checked against them (`switchboard_protocol::ArgumentCheck`)
//! before a handler runs.
//!
//! A derived schema keeps `$schema` (it names the dialect for clients of revisions before
//! 2025-11-25, which had no default) and the `$defs` of nested types, referred to by local
//! `#/$defs/…` pointers only, so a client that wants one flat schema can inline them
//! (`switchboard_runtime::schema::normalize` does). The root `title` schemars puts there
//! (the Rust type's name) is dropped: it says nothing to a model.

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
