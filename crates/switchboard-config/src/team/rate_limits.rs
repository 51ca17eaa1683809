//! The `rateLimits` section: named limits on the gateway's `tools/call`, each a number of
//! calls per period, counted per client or for the whole gateway, over every tool or the
//! tools some patterns name.
//!
//! ```json
//! "rateLimits": [
//!   {"name": "per-user", "per": "client", "calls": 60, "every": "1m", "burst": 10, "tools": ["fs__*"]},
//!   {"name": "all", "per": "gateway", "calls": 1000, "every": "1s"},
//!   {"name": "daily", "per": "client", "calls": 5000, "every": "1d"}
//! ]
//! ```
//!
//! `name` (unique, at most [`MAX_NAME_LEN`] bytes) is what a refused call is told; `per` is
//! `client` (each identity its own bucket) or `gateway` (one bucket for all); `calls` (1 to
//! [`MAX_CALLS`]) refill over `every` (`500ms` to `30d`: ms, s, m, h or d); `burst` (1 to
//! [`MAX_CALLS`]) is how many may come at once (default `calls`); `tools` (optional, not
//! empty) are `*`/`?` patterns of the exported tool names the limit counts (default every
//! tool). A quota is the same shape over a long period. Nothing in the section is
//! expanded (it holds no secrets). [`read`] takes the section as written and gives the
//! limits, or the first problem, naming the limit and what to write instead.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::filter::ToolPattern;
use crate::team::TeamSections;

/// The section's key.
pub const SECTION: &str = "rateLimits";
/// Most limits in the section.
pub const MAX_LIMITS: usize = 256;
/// Longest limit name, in bytes.
pub const MAX_NAME_LEN: usize = 64;
/// Largest `calls` and `burst`.
pub const MAX_CALLS: u32 = 1_000_000;
/// Most tool patterns of one limit.
pub const MAX_PATTERNS: usize = 256;
/// Shortest `every`.
pub const MIN_EVERY: Duration = Duration::from_millis(1);
/// Longest `every`.
pub const MAX_EVERY: Duration = Duration::from_secs(30 * 86_400);

/// The keys a limit may have.
const KEYS: [&str; 6] = ["name", "per", "calls", "every", "burst", "tools"];

/// One named limit, as the section defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSpec {
    /// Its name, unique in the section.
    pub name: String,
    /// Whose calls share a bucket.
    pub per: RateLimitScope,
    /// Calls refilled per `every`.
    pub calls: NonZeroU32,
    /// The period.
    pub every: Duration,
    /// How many calls may come at once (`None`: `calls`).
    pub burst: Option<NonZeroU32>,
    /// The exported tool names it counts (empty: every tool).
    pub tools: Vec<ToolPattern>,
}

impl RateLimitSpec {
    /// Whether the limit counts calls of `tool` (its exported name).
    pub fn counts(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|pattern| pattern.matches(tool))
    }
}

/// Whose calls share a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateLimitScope {
    /// Each client identity has its own bucket.
    Client,
    /// One bucket for every client together.
    Gateway,
}

impl RateLimitScope {
    /// As written in the section.
    pub fn as_str(self) -> &'static str {
        match self {
            RateLimitScope::Client => "client",
            RateLimitScope::Gateway => "gateway",
        }
    }
}

/// Why the section cannot be used: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitsError {
    /// Which limit, by its place in the section (`None`: the section as a whole).
    pub index: Option<usize>,
    /// Its name, when it has a usable one.
    pub name: Option<String>,
    /// What is wrong and what to write instead.
    pub problem: RateLimitProblem,
}

impl fmt::Display for RateLimitsError {
    /// `` `rateLimits[2]` (`per-user`): `calls` is 0: write … ``
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "`{SECTION}[{index}]`")?,
            None => write!(f, "`{SECTION}`")?,
        }
        if let Some(name) = &self.name {
            write!(f, " (`{name}`)")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for RateLimitsError {}

/// What is wrong with the section or one of its limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitProblem {
    /// The section is not an array.
    #[error(
        "must be an array of limits, e.g. [{{\"name\": \"per-user\", \"per\": \"client\", \"calls\": 60, \"every\": \"1m\"}}]"
    )]
    NotAnArray,
    /// More limits than [`MAX_LIMITS`].
    #[error("{count} limits; at most {MAX_LIMITS} are allowed")]
    TooMany {
        /// How many there are.
        count: usize,
    },
    /// A limit that is not an object.
    #[error(
        "must be an object like {{\"name\": \"per-user\", \"per\": \"client\", \"calls\": 60, \"every\": \"1m\"}}"
    )]
    NotAnObject,
    /// A key a limit does not have (it has `name`, `per`, `calls`, `every`, `burst`, `tools`).
    #[error("unknown key `{key}`; a limit has name, per, calls, every, burst and tools")]
    UnknownKey {
        /// The key (peer text is not involved: it comes from the operator's file).
        key: String,
    },
    /// A required key is missing.
    #[error("`{key}` is missing: {hint}")]
    Missing {
        /// The key.
        key: &'static str,
        /// What to write.
        hint: &'static str,
    },
    /// A key with a value of the wrong kind or out of range.
    #[error("`{key}` {problem}: {hint}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong with the value.
        problem: String,
        /// What to write.
        hint: &'static str,
    },
    /// A name used by an earlier limit.
    #[error("the name `{name}` is used by an earlier limit; give each limit its own name")]
    DuplicateName {
        /// The name.
        name: String,
    },
}

const NAME_HINT: &str = "write a short name such as \"per-user\"; a refused call is told it";
const PER_HINT: &str =
    "write \"client\" (each identity its own bucket) or \"gateway\" (one bucket for all)";
const CALLS_HINT: &str = "write a whole number of calls from 1 to 1000000, e.g. 60";
const EVERY_HINT: &str = "write a period from 1ms to 30d, e.g. \"1s\", \"1m\", \"1h\" or \"1d\"";
const BURST_HINT: &str =
    "write how many calls may come at once, from 1 to 1000000, or leave it out (then: calls)";
const TOOLS_HINT: &str = "write an array of exported tool names or patterns, e.g. [\"fs__*\"], or leave it out to count every tool";

/// The limits of `sections` (none when there is no `rateLimits`), in the section's order.
pub fn read(sections: &TeamSections) -> Result<Vec<RateLimitSpec>, RateLimitsError> {
    let Some(section) = sections.section(SECTION) else {
        return Ok(Vec::new());
    };
    let whole = |problem| RateLimitsError {
        index: None,
        name: None,
        problem,
    };
    let Value::Array(items) = section else {
        return Err(whole(RateLimitProblem::NotAnArray));
    };
    if items.len() > MAX_LIMITS {
        return Err(whole(RateLimitProblem::TooMany { count: items.len() }));
    }
    let mut limits: Vec<RateLimitSpec> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty() && name.len() <= MAX_NAME_LEN)
            .map(str::to_owned);
        let at = |problem| RateLimitsError {
            index: Some(index),
            name: name.clone(),
            problem,
        };
        let limit = read_limit(item).map_err(at)?;
        if limits.iter().any(|earlier| earlier.name == limit.name) {
            return Err(at(RateLimitProblem::DuplicateName { name: limit.name }));
        }
        limits.push(limit);
    }
    Ok(limits)
}

fn read_limit(item: &Value) -> Result<RateLimitSpec, RateLimitProblem> {
    let Value::Object(fields) = item else {
        return Err(RateLimitProblem::NotAnObject);
    };
    if let Some(key) = fields.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(RateLimitProblem::UnknownKey { key: key.clone() });
    }
    let name = match required(fields, "name", NAME_HINT)? {
        Value::String(name) if !name.is_empty() && name.len() <= MAX_NAME_LEN => name.clone(),
        _ => return Err(invalid("name", "is not a name of 1 to 64 bytes", NAME_HINT)),
    };
    let per = match required(fields, "per", PER_HINT)?.as_str() {
        Some("client") => RateLimitScope::Client,
        Some("gateway") => RateLimitScope::Gateway,
        Some(other) => {
            return Err(invalid("per", &format!("is \"{other}\""), PER_HINT));
        }
        None => return Err(invalid("per", "is not a string", PER_HINT)),
    };
    let calls = count(required(fields, "calls", CALLS_HINT)?, "calls", CALLS_HINT)?;
    let every = match required(fields, "every", EVERY_HINT)? {
        Value::String(text) => period(text)?,
        _ => return Err(invalid("every", "is not a string", EVERY_HINT)),
    };
    let burst = match fields.get("burst") {
        None => None,
        Some(value) => Some(count(value, "burst", BURST_HINT)?),
    };
    let tools = match fields.get("tools") {
        None => Vec::new(),
        Some(value) => patterns(value)?,
    };
    Ok(RateLimitSpec {
        name,
        per,
        calls,
        every,
        burst,
        tools,
    })
}

fn required<'a>(
    fields: &'a Map<String, Value>,
    key: &'static str,
    hint: &'static str,
) -> Result<&'a Value, RateLimitProblem> {
    fields
        .get(key)
        .ok_or(RateLimitProblem::Missing { key, hint })
}

fn invalid(key: &'static str, problem: &str, hint: &'static str) -> RateLimitProblem {
    RateLimitProblem::Invalid {
        key,
        problem: problem.to_owned(),
        hint,
    }
}

/// A whole number from 1 to [`MAX_CALLS`].
fn count(
    value: &Value,
    key: &'static str,
    hint: &'static str,
) -> Result<NonZeroU32, RateLimitProblem> {
    value
        .as_u64()
        .filter(|n| *n <= u64::from(MAX_CALLS))
        .and_then(|n| u32::try_from(n).ok())
        .and_then(NonZeroU32::new)
        .ok_or_else(|| invalid(key, &format!("is {value}"), hint))
}

/// `every`: what [`crate::parse_duration`] takes, or a number of days (`1d`), from
/// [`MIN_EVERY`] to [`MAX_EVERY`].
fn period(text: &str) -> Result<Duration, RateLimitProblem> {
    let trimmed = text.trim();
    let parsed = match trimmed.strip_suffix('d') {
        Some(days) => days
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|days| days.is_finite() && *days > 0.0 && *days <= 30.0)
            .map(|days| Duration::from_secs_f64(days * 86_400.0))
            .ok_or_else(|| format!("\"{trimmed}\" is not a number of days from 0 to 30")),
        None => crate::parse_duration(trimmed).map_err(|error| error.to_string()),
    };
    match parsed {
        Ok(every) if (MIN_EVERY..=MAX_EVERY).contains(&every) => Ok(every),
        Ok(_) => Err(invalid(
            "every",
            &format!("is \"{trimmed}\", out of range"),
            EVERY_HINT,
        )),
        Err(problem) => Err(invalid(
            "every",
            &format!("is not a period ({problem})"),
            EVERY_HINT,
        )),
    }
}

fn patterns(value: &Value) -> Result<Vec<ToolPattern>, RateLimitProblem> {
    let Value::Array(items) = value else {
        return Err(invalid("tools", "is not an array", TOOLS_HINT));
    };
    if items.is_empty() {
        return Err(invalid("tools", "is empty", TOOLS_HINT));
    }
    if items.len() > MAX_PATTERNS {
        return Err(invalid(
            "tools",
            &format!("has {} patterns (at most {MAX_PATTERNS})", items.len()),
            TOOLS_HINT,
        ));
    }
    items
        .iter()
        .map(|item| {
            let text = item.as_str().ok_or_else(|| {
                invalid("tools", &format!("holds {item}, not a string"), TOOLS_HINT)
            })?;
            ToolPattern::new(text).map_err(|error| {
                invalid("tools", &format!("holds \"{text}\": {error}"), TOOLS_HINT)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(sections: &[Value]) -> String {
        sections
            .iter()
            .map(|section| {
                let sections = TeamSections::of(&json!({ SECTION: section }));
                match read(&sections) {
                    Ok(limits) => format!("ok: {} limits", limits.len()),
                    Err(error) => error.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn limits_read_with_their_defaults() {
        let sections = TeamSections::of(&json!({ SECTION: [
            {"name": "per-user", "per": "client", "calls": 60, "every": "1m", "burst": 10, "tools": ["fs__*"]},
            {"name": "all", "per": "gateway", "calls": 1000, "every": "1s"},
            {"name": "daily", "per": "client", "calls": 5000, "every": "1d"},
        ]}));
        let limits = read(&sections).expect("limits");
        let shown: Vec<String> = limits
            .iter()
            .map(|l| {
                format!(
                    "{} per {}: {} per {:?}, burst {:?}; counts fs__read: {}, git__log: {}",
                    l.name,
                    l.per.as_str(),
                    l.calls,
                    l.every,
                    l.burst,
                    l.counts("fs__read"),
                    l.counts("git__log")
                )
            })
            .collect();
        expect_test::expect![[r#"
            [
                "per-user per client: 60 per 60s, burst Some(10); counts fs__read: true, git__log: false",
                "all per gateway: 1000 per 1s, burst None; counts fs__read: true, git__log: true",
                "daily per client: 5000 per 86400s, burst None; counts fs__read: true, git__log: true",
            ]
        "#]]
        .assert_debug_eq(&shown);
        assert_eq!(read(&TeamSections::default()), Ok(Vec::new()));
    }

    #[test]
    fn each_problem_names_the_limit_and_what_to_write() {
        expect_test::expect![[r#"
            `rateLimits`: must be an array of limits, e.g. [{"name": "per-user", "per": "client", "calls": 60, "every": "1m"}]
            `rateLimits[0]`: must be an object like {"name": "per-user", "per": "client", "calls": 60, "every": "1m"}
            `rateLimits[0]`: `name` is missing: write a short name such as "per-user"; a refused call is told it
            `rateLimits[0]` (`a`): unknown key `limit`; a limit has name, per, calls, every, burst and tools
            `rateLimits[0]` (`a`): `per` is missing: write "client" (each identity its own bucket) or "gateway" (one bucket for all)
            `rateLimits[0]` (`a`): `per` is "user": write "client" (each identity its own bucket) or "gateway" (one bucket for all)
            `rateLimits[0]` (`a`): `calls` is 0: write a whole number of calls from 1 to 1000000, e.g. 60
            `rateLimits[0]` (`a`): `calls` is "60": write a whole number of calls from 1 to 1000000, e.g. 60
            `rateLimits[0]` (`a`): `every` is not a period (unknown unit `w` in `1w`; use ms, s, m or h): write a period from 1ms to 30d, e.g. "1s", "1m", "1h" or "1d"
            `rateLimits[0]` (`a`): `every` is not a period ("90d" is not a number of days from 0 to 30): write a period from 1ms to 30d, e.g. "1s", "1m", "1h" or "1d"
            `rateLimits[0]` (`a`): `burst` is -1: write how many calls may come at once, from 1 to 1000000, or leave it out (then: calls)
            `rateLimits[0]` (`a`): `tools` is empty: write an array of exported tool names or patterns, e.g. ["fs__*"], or leave it out to count every tool
            `rateLimits[0]` (`a`): `tools` holds 3, not a string: write an array of exported tool names or patterns, e.g. ["fs__*"], or leave it out to count every tool
            `rateLimits[1]` (`a`): the name `a` is used by an earlier limit; give each limit its own name"#]]
        .assert_eq(&problems(&[
            json!({"name": "a"}),
            json!(["a"]),
            json!([{"per": "client"}]),
            json!([{"name": "a", "limit": 3}]),
            json!([{"name": "a", "calls": 3}]),
            json!([{"name": "a", "per": "user"}]),
            json!([{"name": "a", "per": "client", "calls": 0}]),
            json!([{"name": "a", "per": "client", "calls": "60"}]),
            json!([{"name": "a", "per": "client", "calls": 1, "every": "1w"}]),
            json!([{"name": "a", "per": "client", "calls": 1, "every": "90d"}]),
            json!([{"name": "a", "per": "client", "calls": 1, "every": "1s", "burst": -1}]),
            json!([{"name": "a", "per": "client", "calls": 1, "every": "1s", "tools": []}]),
            json!([{"name": "a", "per": "client", "calls": 1, "every": "1s", "tools": [3]}]),
            json!([
                {"name": "a", "per": "client", "calls": 1, "every": "1s"},
                {"name": "a", "per": "gateway", "calls": 1, "every": "1s"}
            ]),
        ]));
    }
}
