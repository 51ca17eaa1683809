//! The 2026-07-28 `Mcp-*` HTTP header rules, shared by the client transport, the server
//! and the checker: a header value's text ([`header_text`], the Base64 sentinel for what is
//! not plain visible ASCII, and its reverse [`header_text_decode`]), and `x-mcp-header`
//! (SEP-2243): tool parameters mirrored into `Mcp-Param-{Name}` HTTP headers.
//!
//! An annotation is valid only as a non-empty RFC 9110 token, unique case-insensitively
//! within the schema, on a `string`, `integer` or `boolean` property reached from the root
//! through `properties` alone. A tool with any invalid annotation is left out of the listing
//! (the client session reports it as a listing problem), and the other tools are kept.

use std::collections::HashMap;

use base64::Engine;
use serde_json::Value;

use crate::ShapeError;

/// `(header name, property name)` pairs of one tool.
pub type ParamHeaders = Vec<(String, String)>;

const ANNOTATION: &str = "x-mcp-header";
/// Integers beyond this cannot be carried exactly (JavaScript's safe range).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The header parameters of a tool's input schema, or why the schema's annotations are invalid.
pub fn header_params(schema: &Value) -> Result<ParamHeaders, ShapeError> {
    let mut params = ParamHeaders::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (property, definition) in properties {
            let Some(annotation) = definition.get(ANNOTATION) else {
                if contains_annotation(definition) {
                    return Err(format!(
                        "`{ANNOTATION}` inside `{property}` is not on a top-level property"
                    )
                    .into());
                }
                continue;
            };
            let Value::String(name) = annotation else {
                return Err(format!("`{ANNOTATION}` of `{property}` is not a string").into());
            };
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(format!(
                    "`{ANNOTATION}` {name:?} of `{property}` is not a valid header name"
                )
                .into());
            }
            match definition.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                other => {
                    return Err(format!(
                        "`{ANNOTATION}` on `{property}` of type {} (only string, integer and boolean may be headers)",
                        other.unwrap_or("unknown")
                    ).into());
                }
            }
            if params
                .iter()
                .any(|(existing, _)| existing.eq_ignore_ascii_case(name))
            {
                return Err(format!("`{ANNOTATION}` {name:?} is used twice").into());
            }
            params.push((name.clone(), property.clone()));
        }
    }
    for (key, value) in schema.as_object().into_iter().flatten() {
        if key != "properties" && contains_annotation(value) {
            return Err(format!(
                "`{ANNOTATION}` under `{key}` is not reachable through `properties` alone"
            )
            .into());
        }
    }
    Ok(params)
}

fn contains_annotation(value: &Value) -> bool {
    match value {
        Value::Object(object) => {
            object.contains_key(ANNOTATION) || object.values().any(contains_annotation)
        }
        Value::Array(items) => items.iter().any(contains_annotation),
        _ => false,
    }
}

/// RFC 9110 `tchar`: a byte a header name (and so an `x-mcp-header` value) may hold.
pub fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The header text for an argument value; `None` when the header is omitted (absent or null).
pub fn header_value(value: Option<&Value>) -> Option<Result<String, ShapeError>> {
    match value? {
        Value::Null => None,
        Value::String(text) => Some(Ok(header_text(text))),
        Value::Bool(flag) => Some(Ok(flag.to_string())),
        Value::Number(number) => Some(match number.as_i64() {
            Some(n) if n.abs() <= MAX_SAFE_INTEGER => Ok(n.to_string()),
            _ => Err(format!(
                "{number} cannot be sent as a header (not an integer within ±(2^53−1))"
            )
            .into()),
        }),
        other => Some(Err(format!("{other} cannot be sent as a header").into())),
    }
}

/// Whether a received `Mcp-Param-*` header carries an argument's value (the server side
/// of [`header_value`]): the header decoded (whitespace trimmed, the Base64 sentinel
/// undone), then a string compared as it is, a boolean as `true`/`false`, a number
/// numerically (`42.0` carries `42`). A header that does not decode carries nothing.
pub fn header_carries(header: &str, value: &Value) -> bool {
    let Some(decoded) = header_text_decode(header) else {
        return false;
    };
    match value {
        Value::String(text) => decoded == *text,
        Value::Bool(flag) => decoded == flag.to_string(),
        Value::Number(number) => match (decoded.parse::<f64>(), number.as_f64()) {
            (Ok(sent), Some(value)) => sent == value,
            _ => false,
        },
        _ => false,
    }
}

/// Removes tools with invalid annotations from a `tools/list` result; returns each kept
/// tool's header parameters and, per removed tool, why it was left out.
pub fn filter_listing(result: &mut Value) -> (HashMap<String, ParamHeaders>, Vec<String>) {
    let mut kept = HashMap::new();
    let mut warnings = Vec::new();
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return (kept, warnings);
    };
    tools.retain(|tool| {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match header_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
            Ok(params) => {
                if !params.is_empty() {
                    kept.insert(name, params);
                }
                true
            }
            Err(problem) => {
                warnings.push(format!("tool `{name}` left out: {problem}"));
                false
            }
        }
    });
    (kept, warnings)
}

/// A header value as the 2026-07-28 protocol writes it: plain visible ASCII as is,
/// anything else (or anything that looks like the sentinel) as `=?base64?…?=`.
pub fn header_text(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// A header value as the 2026-07-28 protocol reads it (the server side of
/// [`header_text`]): optional whitespace around the value trimmed, then a
/// `=?base64?…?=` sentinel decoded. `None` for a sentinel that is not valid Base64 of
/// UTF-8 text.
pub fn header_text_decode(value: &str) -> Option<String> {
    let value = value.trim_matches([' ', '\t']);
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn valid_and_invalid_annotations() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "plain": {"type": "string"}}});
        assert_eq!(
            header_params(&ok),
            Ok(vec![
                ("Region".into(), "region".into()),
                ("Limit".into(), "limit".into())
            ])
        );
        for (schema, why) in [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
                "not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "é"}}}),
                "not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "of type number",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
                "used twice",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "not on a top-level property",
            ),
            (
                json!({"properties": {}, "anyOf": [{"properties": {"a": {"x-mcp-header": "A"}}}]}),
                "reachable through `properties` alone",
            ),
        ] {
            let problem = header_params(&schema).expect_err("invalid");
            assert!(
                problem.to_string().contains(why),
                "{problem} should mention {why}"
            );
        }
    }

    #[test]
    fn values_become_header_text() {
        assert_eq!(
            header_value(Some(&json!("eu-west"))),
            Some(Ok("eu-west".into()))
        );
        assert_eq!(header_value(Some(&json!(42))), Some(Ok("42".into())));
        assert_eq!(header_value(Some(&json!(true))), Some(Ok("true".into())));
        assert_eq!(
            header_value(Some(&json!(" x"))),
            Some(Ok("=?base64?IHg=?=".into()))
        );
        assert_eq!(header_value(Some(&Value::Null)), None);
        assert_eq!(header_value(None), None);
        assert!(matches!(
            header_value(Some(&json!(9_007_199_254_740_993_i64))),
            Some(Err(_))
        ));
    }

    #[test]
    fn received_headers_carry_the_values_they_were_made_from() {
        for value in [
            json!("eu-west"),
            json!(" padded"),
            json!("héllo"),
            json!(42),
            json!(true),
        ] {
            let Some(Ok(header)) = header_value(Some(&value)) else {
                panic!("{value} has a header");
            };
            assert!(header_carries(&header, &value), "{value}");
        }
        assert!(header_carries("42.0", &json!(42)));
        assert!(header_carries(" eu ", &json!("eu")));
        assert!(!header_carries("eu", &json!("us")));
        assert!(!header_carries("1", &json!(true)));
        assert!(!header_carries("=?base64?!!?=", &json!("x")));
    }

    #[test]
    fn header_values_use_the_base64_sentinel_when_needed() {
        assert_eq!(header_text("get_weather"), "get_weather");
        assert_eq!(header_text("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(header_text(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_text("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_text("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
    }

    #[test]
    fn header_values_decode_as_they_were_encoded() {
        for value in ["get_weather", " padded", "héllo", "=?base64?x?=", "a\nb"] {
            assert_eq!(
                header_text_decode(&header_text(value)).as_deref(),
                Some(value)
            );
        }
        assert_eq!(header_text_decode("  tool \t").as_deref(), Some("tool"));
        assert_eq!(header_text_decode("=?base64?!!?="), None);
        assert_eq!(header_text_decode("=?base64?/w==?="), None);
    }
}
