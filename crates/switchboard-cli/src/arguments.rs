//! Tool arguments from the command line: a JSON object inline, `-` (JSON from stdin),
//! `@FILE` (JSON from a file), or `key=value` pairs typed by the tool's input schema.
//!
//! A pair's value is read as the schema's type for its key: `count=3` is a number,
//! `dry_run=true` a boolean, `name=3` stays the string "3" when `name` is a string. Dotted
//! keys reach nested objects (`point.x=1`); a key given twice adds to an array
//! (`tag=a tag=b`); a value that starts with `[` or `{` is a JSON literal. A key the schema
//! does not declare, or a value that does not fit, is refused naming the key and what the
//! schema expects, before anything is sent. A key counts as declared when it is one of the
//! schema's `properties`, or when the schema says other keys are welcome
//! (`additionalProperties: true` or a schema, or no `properties` at all): most SDKs leave
//! `additionalProperties` out of the schemas they derive, and a key=value word for a key the
//! tool does not name is a typo far more often than a key the tool quietly takes. With
//! `--no-check` ([`Checked::AsGiven`]) nothing is refused: such a key is sent, and a value
//! that does not fit its key's type goes as a JSON literal when it reads as one, else as
//! the text (`a=two` for an integer `a` sends `"two"`), for seeing what the server itself
//! does with it.

use std::io::Read;

use serde_json::{Map, Value};

/// The most bytes of JSON arguments read from stdin or a file.
const MAX_ARGUMENT_BYTES: u64 = 16 * 1024 * 1024;

/// Where a call's arguments come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgumentSource {
    /// None given.
    Nothing,
    /// A JSON object (inline, from stdin or from a file).
    Json(Value),
    /// `key=value` pairs, typed once the tool's schema is known.
    Pairs(Vec<String>),
}

impl ArgumentSource {
    /// Reads the command line's argument words.
    pub(crate) fn from_words(words: &[String]) -> Result<ArgumentSource, String> {
        match words {
            [] => Ok(ArgumentSource::Nothing),
            [only] if only == "-" => {
                let mut text = String::new();
                std::io::stdin()
                    .take(MAX_ARGUMENT_BYTES + 1)
                    .read_to_string(&mut text)
                    .map_err(|e| format!("could not read the arguments from stdin: {e}"))?;
                json_object(&text, "stdin").map(ArgumentSource::Json)
            }
            [only] if only.starts_with('@') => {
                let path = &only[1..];
                let file = std::fs::File::open(path)
                    .map_err(|e| format!("could not read the arguments from {path}: {e}"))?;
                let mut text = String::new();
                file.take(MAX_ARGUMENT_BYTES + 1)
                    .read_to_string(&mut text)
                    .map_err(|e| format!("could not read the arguments from {path}: {e}"))?;
                json_object(&text, path).map(ArgumentSource::Json)
            }
            [only] if only.trim_start().starts_with('{') => {
                json_object(only, "the command line").map(ArgumentSource::Json)
            }
            words => {
                if let Some(word) = words.iter().find(|w| !w.contains('=')) {
                    return Err(format!(
                        "`{word}` is not an argument: give key=value pairs (e.g. text=hi count=3), \
                         one JSON object ('{{\"text\":\"hi\"}}'), - to read JSON from stdin, or @FILE"
                    ));
                }
                Ok(ArgumentSource::Pairs(words.to_vec()))
            }
        }
    }
}

fn json_object(text: &str, source: &str) -> Result<Value, String> {
    if text.len() as u64 > MAX_ARGUMENT_BYTES {
        return Err(format!(
            "the arguments from {source} are over {MAX_ARGUMENT_BYTES} bytes"
        ));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!(
            "the arguments from {source} must be a JSON object, e.g. '{{\"text\":\"hi\"}}'"
        )),
        Err(e) => Err(format!(
            "the arguments from {source} are not valid JSON ({e}); write a JSON object, e.g. '{{\"text\":\"hi\"}}'"
        )),
    }
}

/// Whether a call's arguments are checked against the tool's input schema before sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// Checked (the default): a wrong key or type is said before anything is sent.
    AgainstSchema,
    /// Sent as given (`--no-check`), for seeing what the server itself does with them: an
    /// undeclared key is sent, a value that does not fit its type goes as a JSON literal
    /// when it reads as one, else as the text.
    AsGiven,
}

/// Builds the arguments object from `key=value` pairs, typed by `schema` (a normalised
/// input schema: local `$ref`s inlined).
pub(crate) fn from_pairs(
    pairs: &[String],
    schema: &Value,
    checked: Checked,
) -> Result<Value, String> {
    let mut arguments = Map::new();
    for pair in pairs {
        let Some((key, text)) = pair.split_once('=') else {
            return Err(format!("`{pair}` is not key=value"));
        };
        let path: Vec<&str> = key.split('.').collect();
        if path.iter().any(|part| part.is_empty()) {
            return Err(format!("`{key}` is not a key: empty part between dots"));
        }
        let pair = Pair { key, text, checked };
        insert(&mut arguments, &path, schema, &pair)?;
    }
    Ok(Value::Object(arguments))
}

/// One `key=value` word, and whether it is checked.
struct Pair<'a> {
    key: &'a str,
    text: &'a str,
    checked: Checked,
}

/// Puts the pair's value, typed by the schema, at `path` under `object` (whose schema is
/// `schema`).
fn insert(
    object: &mut Map<String, Value>,
    path: &[&str],
    schema: &Value,
    pair: &Pair<'_>,
) -> Result<(), String> {
    let Some((name, rest)) = path.split_first() else {
        return Ok(());
    };
    let Pair { key, text, .. } = *pair;
    let property = property_schema(schema, name, pair)?;
    if rest.is_empty() {
        let value = match (typed(text, &property, key), pair.checked) {
            (Ok(value), _) => value,
            (Err(problem), Checked::AgainstSchema) => return Err(problem),
            (Err(_), Checked::AsGiven) => serde_json::from_str::<Value>(text)
                .unwrap_or_else(|_| Value::String(text.to_owned())),
        };
        match object.get_mut(*name) {
            // A key given again adds to its array.
            Some(Value::Array(items)) if kind_of(&property) == Some("array") => match value {
                Value::Array(more) => items.extend(more),
                one => items.push(one),
            },
            Some(_) => return Err(format!("`{key}` is given twice")),
            None => {
                object.insert((*name).to_owned(), value);
            }
        }
        return Ok(());
    }
    if let Some(kind) = kind_of(&property)
        && kind != "object"
    {
        return Err(format!(
            "`{key}`: `{name}` is {}, not an object with keys",
            article(kind)
        ));
    }
    let child = object
        .entry((*name).to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(child) = child else {
        return Err(format!(
            "`{key}`: `{name}` was given a value already, so it has no keys"
        ));
    };
    insert(child, rest, &property, pair)
}

/// The schema of property `name` of an object schema; an error when the schema does not
/// declare it (see the module's doc) and the pair's undeclared key is refused.
fn property_schema(schema: &Value, name: &str, pair: &Pair<'_>) -> Result<Value, String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(property) = properties.and_then(|p| p.get(name)) {
        return Ok(property.clone());
    }
    let others_welcome = match schema.get("additionalProperties") {
        Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other @ Value::Object(_)) => return Ok(other.clone()),
        // Left out: open by the letter of JSON Schema, but only a schema that names no
        // properties (a free-form object) means it.
        _ => properties.is_none_or(Map::is_empty) || schema.get("patternProperties").is_some(),
    };
    if others_welcome || pair.checked == Checked::AsGiven {
        return Ok(Value::Bool(true));
    }
    let known: Vec<&str> = properties
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    Err(format!(
        "`{}` is not a parameter here; the parameters are: {}",
        pair.key,
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}

/// The one JSON type a schema asks for, if it names one (`["string", "null"]` asks for a
/// string).
fn kind_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let named: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null")
                .collect();
            match named.as_slice() {
                [one] => Some(one),
                _ => None,
            }
        }
        _ => None,
    }
}

fn article(kind: &str) -> String {
    match kind {
        "integer" | "object" | "array" => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

/// `text` read as the type `schema` asks for.
fn typed(text: &str, schema: &Value, key: &str) -> Result<Value, String> {
    let literal = || serde_json::from_str::<Value>(text).ok();
    let expected = |what: &str| format!("`{key}` expects {what}, got `{text}`");
    let nullable = schema
        .get("type")
        .and_then(Value::as_array)
        .is_some_and(|kinds| kinds.iter().any(|k| k == "null"));
    if nullable && text == "null" {
        return Ok(Value::Null);
    }
    match kind_of(schema) {
        Some("string") => Ok(Value::String(text.to_owned())),
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| expected("an integer")),
        Some("number") => match text.parse::<i64>() {
            Ok(whole) => Ok(Value::from(whole)),
            Err(_) => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| expected("a number")),
        },
        Some("boolean") => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(expected("true or false")),
        },
        Some("null") => match text {
            "null" => Ok(Value::Null),
            _ => Err(expected("null")),
        },
        Some("array") => {
            if text.trim_start().starts_with('[') {
                return match literal() {
                    Some(array @ Value::Array(_)) => Ok(array),
                    _ => Err(expected("a JSON array")),
                };
            }
            let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
            Ok(Value::Array(vec![typed(text, &items, key)?]))
        }
        Some("object") => match literal() {
            Some(object @ Value::Object(_)) => Ok(object),
            _ => Err(format!(
                "`{key}` expects an object: give its keys as {key}.NAME=VALUE, or write it as \
                 JSON ({key}='{{\"name\":\"value\"}}')"
            )),
        },
        // No single type: a JSON literal when it is one (and not one of the enum's
        // strings), else the text.
        _ if enum_has_string(schema, text) => Ok(Value::String(text.to_owned())),
        _ => Ok(literal().unwrap_or_else(|| Value::String(text.to_owned()))),
    }
}

/// Whether the schema's `enum` lists `text` as a string (then `"1"` stays a string).
fn enum_has_string(schema: &Value, text: &str) -> bool {
    schema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| values.iter().any(|v| v.as_str() == Some(text)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn pairs_are_typed_by_the_schema_and_mistakes_name_the_key() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "dry_run": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "sizes": {"type": "array", "items": {"type": "integer"}},
                "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "additionalProperties": false},
                "mode": {"enum": ["1", "2"]},
                "anything": {},
                "maybe": {"type": ["string", "null"]},
            },
            "additionalProperties": false,
        });
        let cases: &[&[&str]] = &[
            &["text=3", "count=3", "ratio=0.5", "dry_run=true"],
            &["tags=a", "tags=b", "sizes=[1,2]", "sizes=3"],
            &[
                "point.x=1",
                "point.y=2.5",
                "mode=1",
                "anything=[1]",
                "maybe=null",
            ],
            &["point={\"x\":1}"],
            &["count=three"],
            &["dry_run=yes"],
            &["colour=red"],
            &["point.z=1"],
            &["text.x=1"],
            &["point=1"],
            &["text=a", "text=b"],
            &["a..b=1"],
        ];
        let shown: Vec<String> = cases
            .iter()
            .map(
                |words| match from_pairs(&pairs(words), &schema, Checked::AgainstSchema) {
                    Ok(value) => format!("{} → {value}", words.join(" ")),
                    Err(problem) => format!("{} → error: {problem}", words.join(" ")),
                },
            )
            .collect();
        expect_test::expect![[r#"
            text=3 count=3 ratio=0.5 dry_run=true → {"text":"3","count":3,"ratio":0.5,"dry_run":true}
            tags=a tags=b sizes=[1,2] sizes=3 → {"tags":["a","b"],"sizes":[1,2,3]}
            point.x=1 point.y=2.5 mode=1 anything=[1] maybe=null → {"point":{"x":1,"y":2.5},"mode":"1","anything":[1],"maybe":null}
            point={"x":1} → {"point":{"x":1}}
            count=three → error: `count` expects an integer, got `three`
            dry_run=yes → error: `dry_run` expects true or false, got `yes`
            colour=red → error: `colour` is not a parameter here; the parameters are: text, count, ratio, dry_run, tags, sizes, point, mode, anything, maybe
            point.z=1 → error: `point.z` is not a parameter here; the parameters are: x, y
            text.x=1 → error: `text.x`: `text` is a string, not an object with keys
            point=1 → error: `point` expects an object: give its keys as point.NAME=VALUE, or write it as JSON (point='{"name":"value"}')
            text=a text=b → error: `text` is given twice
            a..b=1 → error: `a..b` is not a key: empty part between dots"#]].assert_eq(&shown.join("\n"));
    }

    #[test]
    fn an_undeclared_key_is_refused_unless_the_schema_welcomes_others_or_it_is_sent_anyway() {
        // As the SDKs derive them: properties, and `additionalProperties` left out.
        let derived = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]});
        let open = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true});
        let typed_extra = json!({"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}});
        let free_form = json!({"type": "object"});
        let closed = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false});
        let cases = [
            ("derived", &derived, Checked::AgainstSchema),
            ("derived --no-check", &derived, Checked::AsGiven),
            ("open", &open, Checked::AgainstSchema),
            ("typed extra", &typed_extra, Checked::AgainstSchema),
            ("free form", &free_form, Checked::AgainstSchema),
            ("closed --no-check", &closed, Checked::AsGiven),
        ];
        let shown: Vec<String> = cases
            .iter()
            .map(|(name, schema, undeclared)| {
                match from_pairs(&pairs(&["a=2", "c=3"]), schema, *undeclared) {
                    Ok(value) => format!("{name} → {value}"),
                    Err(problem) => format!("{name} → error: {problem}"),
                }
            })
            .collect();
        expect_test::expect![[r#"
            derived → error: `c` is not a parameter here; the parameters are: a, b
            derived --no-check → {"a":2,"c":3}
            open → {"a":2,"c":3}
            typed extra → {"a":2,"c":3}
            free form → {"a":2,"c":3}
            closed --no-check → {"a":2,"c":3}"#]]
        .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn a_value_that_does_not_fit_is_refused_unless_sent_as_given() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "integer"}, "flag": {"type": "boolean"}, "list": {"type": "array"}}});
        let words = pairs(&["a=two", "flag=yes", "list=[1,", "b=3"]);
        let shown: Vec<String> = [Checked::AgainstSchema, Checked::AsGiven]
            .into_iter()
            .map(|checked| match from_pairs(&words, &schema, checked) {
                Ok(value) => format!("{checked:?} → {value}"),
                Err(problem) => format!("{checked:?} → error: {problem}"),
            })
            .collect();
        expect_test::expect![[r#"
            AgainstSchema → error: `a` expects an integer, got `two`
            AsGiven → {"a":"two","flag":"yes","list":"[1,","b":3}"#]]
        .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn words_become_a_source() {
        let shown: Vec<String> = [
            vec![],
            vec!["{\"a\": 1}"],
            vec!["[1]"],
            vec!["a=1", "b"],
            vec!["a=1", "b=2"],
            vec!["@/nonexistent/args.json"],
        ]
        .iter()
        .map(|words| {
            let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            format!("{words:?} → {:?}", ArgumentSource::from_words(&words))
        })
        .collect();
        expect_test::expect![[r#"
            [] → Ok(Nothing)
            ["{\"a\": 1}"] → Ok(Json(Object {"a": Number(1)}))
            ["[1]"] → Err("`[1]` is not an argument: give key=value pairs (e.g. text=hi count=3), one JSON object ('{\"text\":\"hi\"}'), - to read JSON from stdin, or @FILE")
            ["a=1", "b"] → Err("`b` is not an argument: give key=value pairs (e.g. text=hi count=3), one JSON object ('{\"text\":\"hi\"}'), - to read JSON from stdin, or @FILE")
            ["a=1", "b=2"] → Ok(Pairs(["a=1", "b=2"]))
            ["@/nonexistent/args.json"] → Err("could not read the arguments from /nonexistent/args.json: No such file or directory (os error 2)")"#]].assert_eq(&shown.join("\n"));
    }
}
