//! Tool schemas: whether they are valid JSON Schemas with an object root (checked with the
//! `jsonschema` crate, which is built without network or file `$ref` resolution), and
//! arguments derived from them: a valid set, a violating set, and a "long" set for tools
//! whose schema suggests a duration.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_protocol::Tool;

/// Deepest schema nesting the checker will compile (deeper ones are reported, not compiled).
const MAX_SCHEMA_DEPTH: usize = 64;
/// Deepest nesting the argument deriver follows.
const MAX_DERIVE_DEPTH: usize = 8;

/// A compiled schema, for validating instances.
pub(crate) struct Compiled(jsonschema::Validator);

impl Compiled {
    /// The first validation error, if `instance` does not conform.
    pub(crate) fn error(&self, instance: &Value) -> Option<String> {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.0.validate(instance).err().map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{e} (at {path})")
                }
            })
        }));
        outcome.unwrap_or_else(|_| Some("the validator panicked on this instance".into()))
    }

    pub(crate) fn accepts(&self, instance: &Value) -> bool {
        self.error(instance).is_none()
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Compiles a schema (validating it against its meta-schema). External `$ref`s are never
/// fetched, so they make the schema fail.
pub(crate) fn compile(schema: &Value) -> Result<Compiled, String> {
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "it is nested more than {MAX_SCHEMA_DEPTH} levels deep"
        ));
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| jsonschema::validator_for(schema)));
    match outcome {
        Ok(Ok(validator)) => Ok(Compiled(validator)),
        Ok(Err(error)) => {
            let path = error.schema_path().to_string();
            Err(if path.is_empty() || path == "/" {
                error.to_string()
            } else {
                format!("{error} (at {path})")
            })
        }
        Err(_) => Err("the schema validator panicked on it".into()),
    }
}

/// What is wrong with a tool's input or output schema, if anything.
pub(crate) fn schema_problems(schema: Option<&Value>, what: &str) -> Vec<String> {
    let Some(schema) = schema else {
        return vec![format!("{what} is missing")];
    };
    let Value::Object(object) = schema else {
        return vec![format!(
            "{what} is not a JSON object but {}",
            switchboard_protocol::json_kind(schema)
        )];
    };
    let mut problems = Vec::new();
    match object.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => problems.push(format!(
            "{what} has root `type` {other}; it must be \"object\""
        )),
        None => problems.push(format!("{what} has no root `type: \"object\"`")),
    }
    if let Err(error) = compile(schema) {
        problems.push(format!("{what} is not a valid JSON Schema: {error}"));
    }
    problems
}

/// Builds values that satisfy a schema, following local `$ref`s.
struct Deriver<'a> {
    root: &'a Value,
}

const PLACEHOLDER: &str = "switchboard-check";

impl Deriver<'_> {
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        let mut current = schema;
        for _ in 0..MAX_DERIVE_DEPTH {
            let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(pointer) = reference.strip_prefix('#') else {
                break;
            };
            match self.root.pointer(pointer) {
                Some(target) => current = target,
                None => break,
            }
        }
        current
    }

    fn value(&self, schema: &Value, level: usize) -> Option<Value> {
        if level > MAX_DERIVE_DEPTH {
            return None;
        }
        let schema = self.resolve(schema);
        let Value::Object(object) = schema else {
            return match schema {
                Value::Bool(true) => Some(json!(PLACEHOLDER)),
                _ => None,
            };
        };
        if let Some(constant) = object.get("const") {
            return Some(constant.clone());
        }
        if let Some(first) = object
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return Some(first.clone());
        }
        if let Some(default) = object.get("default") {
            return Some(default.clone());
        }
        if let Some(example) = object
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return Some(example.clone());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let mut ordered: Vec<&Value> = branches
                    .iter()
                    .filter(|b| b.get("type") != Some(&json!("null")))
                    .collect();
                ordered.extend(
                    branches
                        .iter()
                        .filter(|b| b.get("type") == Some(&json!("null"))),
                );
                return ordered.into_iter().find_map(|b| self.value(b, level + 1));
            }
        }
        if let Some(all) = object.get("allOf").and_then(Value::as_array) {
            return match all.as_slice() {
                [only] => self.value(only, level + 1),
                _ => None,
            };
        }
        let type_name = match object.get("type") {
            Some(Value::String(t)) => Some(t.as_str()),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .or(Some("null")),
            _ => None,
        };
        let type_name = type_name.or_else(|| object.contains_key("properties").then_some("object"));
        match type_name {
            Some("string") => string_value(object),
            Some("integer") => number_value(object, true),
            Some("number") => number_value(object, false),
            Some("boolean") => Some(Value::Bool(false)),
            Some("null") => Some(Value::Null),
            Some("array") => {
                let min = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                if min == 0 {
                    return Some(json!([]));
                }
                let items = object.get("items").unwrap_or(&Value::Bool(true));
                let item = self.value(items, level + 1)?;
                Some(Value::Array(vec![item; usize::try_from(min.min(16)).ok()?]))
            }
            Some("object") => self.object(object, level).map(Value::Object),
            None => Some(json!(PLACEHOLDER)),
            Some(_) => None,
        }
    }

    /// An object with every required property (and none of the optional ones).
    fn object(&self, object: &Map<String, Value>, level: usize) -> Option<Map<String, Value>> {
        let properties = object.get("properties").and_then(Value::as_object);
        let mut out = Map::new();
        for name in object
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let property = properties
                .and_then(|p| p.get(name))
                .unwrap_or(&Value::Bool(true));
            out.insert(name.to_owned(), self.value(property, level + 1)?);
        }
        Some(out)
    }
}

fn string_value(object: &Map<String, Value>) -> Option<Value> {
    if object.contains_key("pattern") {
        return None;
    }
    let text = match object.get("format").and_then(Value::as_str) {
        Some("email") => "check@example.com".to_owned(),
        Some("uri" | "url" | "iri") => "https://example.com/".to_owned(),
        Some("date") => "2025-01-01".to_owned(),
        Some("date-time") => "2025-01-01T00:00:00Z".to_owned(),
        Some("time") => "00:00:00Z".to_owned(),
        Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
        Some("ipv4") => "127.0.0.1".to_owned(),
        _ => PLACEHOLDER.to_owned(),
    };
    let min = object.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let max = object
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX);
    let mut text = text;
    while (text.chars().count() as u64) < min {
        text.push('x');
    }
    if (text.chars().count() as u64) > max {
        text = text.chars().take(usize::try_from(max).ok()?).collect();
    }
    Some(Value::String(text))
}

fn number_value(object: &Map<String, Value>, integer: bool) -> Option<Value> {
    let bound = |key: &str| object.get(key).and_then(Value::as_f64);
    let mut low = bound("minimum").unwrap_or(f64::MIN);
    if let Some(exclusive) = bound("exclusiveMinimum") {
        low = low.max(exclusive + if integer { 1.0 } else { 0.5 });
    }
    let mut high = bound("maximum").unwrap_or(f64::MAX);
    if let Some(exclusive) = bound("exclusiveMaximum") {
        high = high.min(exclusive - if integer { 1.0 } else { 0.5 });
    }
    let mut value = 1.0_f64.clamp(low.min(high), high.max(low));
    if integer {
        value = value.ceil();
    }
    if let Some(step) = bound("multipleOf").filter(|s| *s > 0.0) {
        value = (value / step).ceil() * step;
    }
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        return Some(json!(value as i64));
    }
    serde_json::Number::from_f64(value).map(Value::Number)
}

/// Arguments satisfying the tool's input schema (required properties only), if the
/// checker can build them.
pub(crate) fn valid_arguments(schema: &Value, compiled: &Compiled) -> Option<Value> {
    let deriver = Deriver { root: schema };
    let object = schema.as_object()?;
    let arguments = Value::Object(deriver.object(object, 0)?);
    compiled.accepts(&arguments).then_some(arguments)
}

/// Schema-violating arguments and the field they violate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Violation {
    pub(crate) arguments: Value,
    pub(crate) field: String,
    /// What kind of violation it is.
    pub(crate) kind: ViolationKind,
    /// The violation, described for the report.
    pub(crate) how: String,
}

/// How arguments violate a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ViolationKind {
    /// A property has a value of the wrong type.
    WrongType,
    /// A required property is left out.
    MissingRequired,
    /// A property is added where no other property is allowed.
    Unexpected,
}

/// Values of each JSON type, to put where another type is expected.
fn wrong_values() -> [(Value, &'static str); 5] {
    [
        (json!(12345), "a number"),
        (json!("switchboard_check_wrong_type"), "a string"),
        (json!(true), "a boolean"),
        (json!(["switchboard-check"]), "an array"),
        (json!({"switchboard_check": 1}), "an object"),
    ]
}

/// Arguments that violate the schema: a property of the wrong type (required ones first,
/// then longer names, which error messages name unambiguously), else a missing required
/// property, else an unexpected property where none are allowed.
pub(crate) fn violating_arguments(
    schema: &Value,
    compiled: &Compiled,
    valid: &Value,
) -> Option<Violation> {
    let object = schema.as_object()?;
    let base = valid.as_object()?.clone();
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut names: Vec<&String> = object
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    names.sort_by_key(|name| {
        (
            !required.contains(&name.as_str()),
            std::cmp::Reverse(name.len()),
        )
    });
    let deriver = Deriver { root: schema };
    for name in names {
        let property = deriver.resolve(&object["properties"][name.as_str()]);
        if property.get("type").is_none() {
            continue;
        }
        for (wrong, described) in wrong_values() {
            let mut arguments = base.clone();
            arguments.insert(name.clone(), wrong.clone());
            let arguments = Value::Object(arguments);
            if !compiled.accepts(&arguments) {
                let expected = property
                    .get("type")
                    .map(Value::to_string)
                    .unwrap_or_default();
                return Some(Violation {
                    arguments,
                    field: name.clone(),
                    kind: ViolationKind::WrongType,
                    how: format!(
                        "`{name}` given {described} where the schema says type {expected}"
                    ),
                });
            }
        }
    }
    if let Some(name) = required.first() {
        let mut arguments = base.clone();
        arguments.remove(*name);
        let arguments = Value::Object(arguments);
        if !compiled.accepts(&arguments) {
            return Some(Violation {
                arguments,
                field: (*name).to_owned(),
                kind: ViolationKind::MissingRequired,
                how: format!("required `{name}` left out"),
            });
        }
    }
    if object.get("additionalProperties") == Some(&Value::Bool(false)) {
        let field = "switchboard_check_unexpected";
        let mut arguments = base;
        arguments.insert(field.to_owned(), json!(true));
        let arguments = Value::Object(arguments);
        if !compiled.accepts(&arguments) {
            return Some(Violation {
                arguments,
                field: field.to_owned(),
                kind: ViolationKind::Unexpected,
                how: format!("unexpected `{field}` added where no other property is allowed"),
            });
        }
    }
    None
}

/// The unit a duration property counts in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Millis,
    Seconds,
    Minutes,
}

fn normalized(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '-'], "")
}

fn duration_unit(name: &str, property: &Value) -> Option<Unit> {
    let lower = name.to_ascii_lowercase();
    let flat = normalized(name);
    let suggests = [
        "duration", "delay", "sleep", "seconds", "secs", "millis", "wait",
    ]
    .iter()
    .any(|w| flat.contains(w))
        || flat.ends_with("ms");
    if !suggests {
        return None;
    }
    let description = property
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if flat.ends_with("ms") || flat.contains("milli") || description.contains("millisecond") {
        return Some(Unit::Millis);
    }
    if flat.contains("minute") || description.contains("minute") {
        return Some(Unit::Minutes);
    }
    if lower.ends_with("_s")
        || flat.ends_with("secs")
        || flat.contains("second")
        || description.contains("second")
    {
        return Some(Unit::Seconds);
    }
    match property.get("default").and_then(Value::as_f64) {
        Some(default) if default >= 100.0 => Some(Unit::Millis),
        _ => Some(Unit::Seconds),
    }
}

fn numeric(property: &Value) -> Option<bool> {
    match property.get("type").and_then(Value::as_str) {
        Some("integer") => Some(true),
        Some("number") => Some(false),
        _ => None,
    }
}

fn clamp_to(property: &Value, value: f64) -> f64 {
    let max = property
        .get("maximum")
        .and_then(Value::as_f64)
        .unwrap_or(f64::MAX);
    let min = property
        .get("minimum")
        .and_then(Value::as_f64)
        .unwrap_or(f64::MIN);
    value.min(max).max(min)
}

fn number(value: f64, integer: bool) -> Value {
    if integer || value.fract() == 0.0 {
        return json!(value.round() as i64);
    }
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// True when the tool has a numeric property that reads as a duration.
pub(crate) fn suggests_duration(tool: &Tool) -> bool {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            p.iter()
                .any(|(name, prop)| numeric(prop).is_some() && duration_unit(name, prop).is_some())
        })
}

/// Arguments that make the tool run for about `target`, with frequent progress steps, if
/// its schema has a duration property.
pub(crate) fn long_arguments(tool: &Tool, compiled: &Compiled, target: Duration) -> Option<Value> {
    let schema = &tool.input_schema;
    let properties = schema.get("properties")?.as_object()?;
    let mut arguments = valid_arguments(schema, compiled)?
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut found = false;
    for (name, property) in properties {
        let Some(integer) = numeric(property) else {
            continue;
        };
        if let Some(unit) = duration_unit(name, property) {
            let wanted = match unit {
                Unit::Millis => target.as_secs_f64() * 1000.0,
                Unit::Seconds => target.as_secs_f64(),
                Unit::Minutes => target.as_secs_f64() / 60.0,
            };
            arguments.insert(name.clone(), number(clamp_to(property, wanted), integer));
            found = true;
        } else if normalized(name).contains("step") {
            // One progress step per ~100 ms.
            let steps = (target.as_secs_f64() * 10.0).max(1.0);
            arguments.insert(name.clone(), number(clamp_to(property, steps), integer));
        }
    }
    let arguments = Value::Object(arguments);
    (found && compiled.accepts(&arguments)).then_some(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(schema: Value) -> Tool {
        Tool::from_json(json!({"name": "t", "inputSchema": schema})).expect("tool")
    }

    #[test]
    fn derives_valid_violating_and_long_arguments() {
        let schema = json!({
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "count": {"type": "integer", "minimum": 3},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
            },
            "required": ["message", "count", "mode"],
            "additionalProperties": false,
        });
        let compiled = compile(&schema).expect("valid schema");
        let valid = valid_arguments(&schema, &compiled).expect("derivable");
        assert_eq!(
            valid,
            json!({"message": "switchboard-check", "count": 3, "mode": "fast"})
        );
        let violation = violating_arguments(&schema, &compiled, &valid).expect("violable");
        assert_eq!(violation.field, "message");
        assert_eq!(violation.kind, ViolationKind::WrongType);
        assert_eq!(violation.arguments["message"], json!(12345));

        // A field whose name reads like the prose ("given") is still a missing one.
        let untyped = json!({
            "type": "object",
            "properties": {"given_name": {"minLength": 1}},
            "required": ["given_name"],
        });
        let compiled = compile(&untyped).expect("valid schema");
        let valid = json!({"given_name": "Ada"});
        let violation = violating_arguments(&untyped, &compiled, &valid).expect("violable");
        assert_eq!(violation.kind, ViolationKind::MissingRequired);
        assert!(violation.how.contains("given"), "{}", violation.how);

        let slow = json!({"type": "object", "properties": {
            "duration": {"type": "number", "description": "Duration in seconds", "default": 10},
            "steps": {"type": "number", "default": 5},
        }});
        let compiled = compile(&slow).expect("valid schema");
        let long = long_arguments(&tool(slow), &compiled, Duration::from_secs(3));
        assert_eq!(long, Some(json!({"duration": 3, "steps": 30})));

        let millis = json!({"type": "object", "properties": {
            "duration_ms": {"type": "integer", "maximum": 2000},
        }});
        let compiled = compile(&millis).expect("valid schema");
        assert_eq!(
            long_arguments(&tool(millis), &compiled, Duration::from_secs(3)),
            Some(json!({"duration_ms": 2000}))
        );
    }

    #[test]
    fn schema_problems_name_the_issue() {
        assert!(schema_problems(Some(&json!({"type": "object"})), "inputSchema").is_empty());
        assert_eq!(
            schema_problems(Some(&json!({"type": "array"})), "inputSchema"),
            ["inputSchema has root `type` \"array\"; it must be \"object\""]
        );
        let bad = schema_problems(
            Some(&json!({"type": "object", "properties": {"x": {"type": 5}}})),
            "inputSchema",
        );
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].starts_with("inputSchema is not a valid JSON Schema"),
            "{bad:?}"
        );
        let remote = schema_problems(
            Some(
                &json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}),
            ),
            "inputSchema",
        );
        assert_eq!(remote.len(), 1, "{remote:?}");
        assert_eq!(
            schema_problems(None, "inputSchema"),
            ["inputSchema is missing"]
        );
    }
}
