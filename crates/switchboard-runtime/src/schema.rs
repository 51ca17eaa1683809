//! Input schemas as model providers accept them (arguments are checked against them with
//! `switchboard_protocol::ArgumentCheck` before sending).
//!
//! Normalisation inlines local `$ref`s (`#/$defs/…`, `#/definitions/…`) with a depth cap,
//! drops `$schema`/`$defs`, and gives object schemas a `properties` map. A network `$ref` is
//! never fetched: such a schema is rejected (the tool is left out with a finding), because
//! silently accepting anything would hide the server's intent.

use serde_json::{Map, Value, json};

const MAX_REF_DEPTH: usize = 16;

/// Why a schema could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem(pub String);

/// Normalises a tool's input schema. A missing schema becomes an empty object schema.
pub fn normalize(schema: &Value) -> Result<Value, SchemaProblem> {
    let root = match schema {
        Value::Null => return Ok(json!({"type": "object", "properties": {}})),
        Value::Object(root) => root,
        other => {
            return Err(SchemaProblem(format!(
                "`inputSchema` is not an object: {other}"
            )));
        }
    };
    match root.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None if root.contains_key("properties") => {}
        Some(other) => {
            return Err(SchemaProblem(format!(
                "the root of `inputSchema` must have type \"object\", not {other}"
            )));
        }
        None => {
            return Err(SchemaProblem(
                "the root of `inputSchema` has no `type: \"object\"`".into(),
            ));
        }
    }
    let mut out = inline(schema, schema, 0)?;
    if let Value::Object(object) = &mut out {
        object.shift_remove("$schema");
        object.shift_remove("$defs");
        object.shift_remove("definitions");
        object.shift_remove("$id");
        object.entry("type").or_insert_with(|| json!("object"));
    }
    add_properties(&mut out);
    Ok(out)
}

fn inline(node: &Value, root: &Value, depth: usize) -> Result<Value, SchemaProblem> {
    match node {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref") {
                let Some(pointer) = reference.strip_prefix('#') else {
                    return Err(SchemaProblem(format!(
                        "`$ref` to {reference:?} points outside the schema; it is not fetched"
                    )));
                };
                if depth >= MAX_REF_DEPTH {
                    return Err(SchemaProblem(format!(
                        "`$ref` {reference:?} nests deeper than {MAX_REF_DEPTH} levels (recursive schema)"
                    )));
                }
                let target = root.pointer(pointer).ok_or_else(|| {
                    SchemaProblem(format!("`$ref` {reference:?} does not resolve"))
                })?;
                let mut resolved = inline(target, root, depth + 1)?;
                // Sibling keywords next to `$ref` (e.g. a description) are kept.
                if let Value::Object(resolved_object) = &mut resolved {
                    for (key, value) in object.iter().filter(|(k, _)| *k != "$ref") {
                        resolved_object.insert(key.clone(), inline(value, root, depth)?);
                    }
                }
                return Ok(resolved);
            }
            let mut out = Map::with_capacity(object.len());
            for (key, value) in object {
                if key == "$defs" || key == "definitions" {
                    continue;
                }
                out.insert(key.clone(), inline(value, root, depth)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .map(|item| inline(item, root, depth))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

fn add_properties(node: &mut Value) {
    if let Value::Object(object) = node {
        if object.get("type").and_then(Value::as_str) == Some("object") {
            object.entry("properties").or_insert_with(|| json!({}));
        }
        for value in object.values_mut() {
            add_properties(value);
        }
    } else if let Value::Array(items) = node {
        for item in items {
            add_properties(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(schema: Value, expect: Expect) {
        let actual = match normalize(&schema) {
            Ok(value) => value.to_string(),
            Err(SchemaProblem(problem)) => format!("problem: {problem}"),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn local_refs_are_inlined_and_noise_removed() {
        check(
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                   "properties": {"point": {"$ref": "#/$defs/point", "description": "where"}},
                   "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}}}}),
            expect![[
                r#"{"type":"object","properties":{"point":{"type":"object","properties":{"x":{"type":"integer"}},"description":"where"}}}"#
            ]],
        );
        check(
            Value::Null,
            expect![[r#"{"type":"object","properties":{}}"#]],
        );
        check(
            json!({"type": "object"}),
            expect![[r#"{"type":"object","properties":{}}"#]],
        );
    }

    #[test]
    fn network_and_recursive_refs_and_bad_roots_are_rejected() {
        check(
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.test/s.json"}}}),
            expect![[
                r#"problem: `$ref` to "https://example.test/s.json" points outside the schema; it is not fetched"#
            ]],
        );
        check(
            json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}}),
            expect![[
                r##"problem: `$ref` "#/$defs/n" nests deeper than 16 levels (recursive schema)"##
            ]],
        );
        check(
            json!({"type": "string"}),
            expect![[
                r#"problem: the root of `inputSchema` must have type "object", not "string""#
            ]],
        );
        check(
            json!([1]),
            expect!["problem: `inputSchema` is not an object: [1]"],
        );
    }
}
