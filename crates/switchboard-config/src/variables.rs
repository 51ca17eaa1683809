//! Variables: where they come from ([`Variables`]: the process environment, or a map in
//! tests), `${VAR}`, `${VAR:-default}` and `${env:VAR}` expansion, and VS Code's
//! `${input:ID}`, read from `SWITCHBOARD_INPUT_ID` ([`input_variable`]) and described by the
//! file's `inputs`.

use std::collections::BTreeMap;

use serde_json::Value;

/// Where variables come from (the process environment in production, a map in tests).
pub trait Variables {
    /// The variable's value, if set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Variables for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Variables for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        BTreeMap::get(self, name).cloned()
    }
}

/// The prompts a VS Code file declares in its top-level `inputs` (`{"id", "description",
/// …}`), by id: what VS Code asks the user for when an entry says `${input:ID}`.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    pub(crate) descriptions: BTreeMap<String, String>,
}

impl Inputs {
    pub(crate) fn of(root: &Value) -> Inputs {
        let descriptions = root
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|input| {
                let id = input.get("id")?.as_str()?;
                let description = input.get("description").and_then(Value::as_str);
                Some((id.to_owned(), description.unwrap_or_default().to_owned()))
            })
            .collect();
        Inputs { descriptions }
    }
}

/// The variable a `${input:ID}` is read from: `SWITCHBOARD_INPUT_` and the id in capitals,
/// every character other than a letter or digit as `_` (`perplexity-key` →
/// `SWITCHBOARD_INPUT_PERPLEXITY_KEY`).
pub fn input_variable(id: &str) -> String {
    let mut name = String::from("SWITCHBOARD_INPUT_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Expands `${VAR}` and `${VAR:-default}`, VS Code's `${env:VAR}` (the same) and
/// `${input:ID}` (from [`input_variable`]); returns the reference (`VAR`, `env:VAR`,
/// `input:ID`) of an unset variable without a default. `$$` is a literal `$`.
pub fn expand_vars(text: &str, vars: &dyn Variables) -> Result<String, UnsetVariable> {
    expand_tracked(text, vars, &mut Vec::new())
}

/// A reference to a variable that is not set (and has no default); shown as the reference
/// (`VAR`, `env:VAR`, `input:ID`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsetVariable {
    /// `${VAR}` or `${env:VAR}`: the reference as written (`VAR`, `env:VAR`).
    #[error("{0}")]
    Variable(String),
    /// `${input:ID}`, read from `variable`.
    #[error("input:{id}")]
    Input {
        /// The input's id.
        id: String,
        /// The variable it is read from.
        variable: String,
    },
}

/// [`expand_vars`], noting each value taken from a variable in `substituted`.
pub(crate) fn expand_tracked(
    text: &str,
    vars: &dyn Variables,
    substituted: &mut Vec<String>,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                out.push_str(&rest[at..]);
                return Ok(out);
            };
            let expr = &body[..end];
            let (reference, default) = match expr.split_once(":-") {
                Some((reference, default)) => (reference, Some(default)),
                None => (expr, None),
            };
            let (variable, unset) = if let Some(id) = reference.strip_prefix("input:") {
                let variable = input_variable(id);
                let unset = UnsetVariable::Input {
                    id: id.to_owned(),
                    variable: variable.clone(),
                };
                (variable, unset)
            } else {
                let variable = reference.strip_prefix("env:").unwrap_or(reference);
                (
                    variable.to_owned(),
                    UnsetVariable::Variable(reference.to_owned()),
                )
            };
            match (vars.get(&variable), default) {
                (Some(value), _) => {
                    out.push_str(&value);
                    substituted.push(value);
                }
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(unset),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}
