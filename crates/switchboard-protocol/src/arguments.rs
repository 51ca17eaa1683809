//! Checking arguments against a tool's or prompt's input schema before anything runs, with
//! messages a model can act on: each names the offending key (`to.city` for a nested one)
//! and what is wrong, the first few problems at once.

use std::fmt;

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// Problems one check reports at most (the first ones; enough to correct a call).
const MAX_PROBLEMS: usize = 5;

/// Argument names an "unknown argument" problem lists at most.
const MAX_NAMES: usize = 16;

/// An input schema compiled for checking arguments.
pub struct ArgumentCheck {
    validator: jsonschema::Validator,
    /// The top-level properties, for "not one of the arguments" problems.
    names: Vec<String>,
}

impl fmt::Debug for ArgumentCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentCheck")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// A schema the validator cannot use (it is not valid JSON Schema). Local `$ref`s are
/// resolved; nothing is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSchema {
    /// What the validator said.
    pub detail: String,
}

impl fmt::Display for InvalidSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid JSON Schema: {}", self.detail)
    }
}

impl std::error::Error for InvalidSchema {}

/// Why arguments do not fit a tool's input schema: one sentence per problem, each naming
/// the key and what was expected (the first few only); shown joined by `; `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentProblems {
    /// Each problem, in the validator's order.
    pub problems: Vec<String>,
}

impl fmt::Display for ArgumentProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for ArgumentProblems {}

impl ArgumentCheck {
    /// Compiles an input schema.
    pub fn new(schema: &Value) -> Result<ArgumentCheck, InvalidSchema> {
        let validator = jsonschema::validator_for(schema).map_err(|error| InvalidSchema {
            detail: error.to_string(),
        })?;
        let names = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        Ok(ArgumentCheck { validator, names })
    }

    /// Checks arguments; the error names each offending key and what was expected, so
    /// that the model can correct its call.
    pub fn check(&self, arguments: &Value) -> Result<(), ArgumentProblems> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_PROBLEMS)
            .map(|error| self.describe(&error))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ArgumentProblems { problems })
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
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let key = |name: &String| match at.as_str() {
                    "" => format!("`{name}`"),
                    _ => format!("`{at}.{name}`"),
                };
                let named: Vec<String> = unexpected.iter().map(key).collect();
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
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn each_problem_names_its_key() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "string"},
                "to": {"$ref": "#/$defs/place"},
            },
            "required": ["a", "b"],
            "additionalProperties": false,
            "$defs": {"place": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false,
            }},
        });
        let check = ArgumentCheck::new(&schema).expect("a valid schema");
        let shown: Vec<String> = [
            json!({"a": 1, "b": "x"}),
            json!({"a": "x"}),
            json!({"a": 1, "b": "x", "c": 2}),
            json!({"a": 1, "b": "x", "to": {"zip": "1"}}),
            json!([]),
        ]
        .iter()
        .map(|arguments| format!("{:?}", check.check(arguments)))
        .collect();
        expect![[r#"
            Ok(())
            Err(ArgumentProblems { problems: ["arguments: \"b\" is a required property", "`a`: \"x\" is not of type \"integer\""] })
            Err(ArgumentProblems { problems: ["`c`: not one of the arguments (a, b, to)"] })
            Err(ArgumentProblems { problems: ["`to.zip`: not a key `to` has", "`to`: \"city\" is a required property"] })
            Err(ArgumentProblems { problems: ["arguments: [] is not of type \"object\""] })"#]]
        .assert_eq(&shown.join("\n"));
        let none = ArgumentCheck::new(
            &json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
        .expect("a valid schema");
        expect![[r#"Err(ArgumentProblems { problems: ["`x`: this takes no arguments"] })"#]]
            .assert_eq(&format!("{:?}", none.check(&json!({"x": 1}))));
        expect![[r#"Err(InvalidSchema { detail: "7 is not valid under any of the schemas listed in the 'anyOf' keyword" })"#]].assert_eq(&format!(
            "{:?}",
            ArgumentCheck::new(&json!({"type": 7})).map(drop)
        ));
    }
}
