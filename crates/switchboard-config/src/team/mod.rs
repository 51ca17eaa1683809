//! The gateway's team sections of a config file: top-level keys beside the server map that
//! only `switchboard serve` reads — `clients` (named bearer tokens and their groups),
//! `policies` (who may see and call what), `profiles` (endpoints with their own servers,
//! renames and fixed arguments), `rateLimits` (named limits per identity, per tool and in
//! total) and `upstreamCredentials` (the HTTP servers called with each client's own
//! credentials).
//!
//! [`TeamSections`] keeps them as written (nothing expanded), so that a file that only
//! other clients read is not judged by rules it never asked for; each section has its own
//! reader here, which `serve` calls, and a section that does not read fails `serve` (and a
//! reload under `--watch` keeps what was in force): these are security settings, so a bad
//! one is never taken as empty.

pub mod rate_limits;

use serde_json::{Map, Value};

/// The top-level keys holding team sections.
pub const SECTION_KEYS: [&str; 5] = [
    "clients",
    "policies",
    "profiles",
    "rateLimits",
    "upstreamCredentials",
];

/// The team sections of one file, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamSections {
    sections: Map<String, Value>,
}

impl TeamSections {
    /// The team sections found at the top of `root` (a JSON object; anything else has none).
    pub fn of(root: &Value) -> TeamSections {
        let sections = match root {
            Value::Object(map) => SECTION_KEYS
                .iter()
                .filter_map(|key| {
                    map.get(*key)
                        .map(|value| ((*key).to_owned(), value.clone()))
                })
                .collect(),
            _ => Map::new(),
        };
        TeamSections { sections }
    }

    /// The section under `key` (one of [`SECTION_KEYS`]), as written.
    pub fn section(&self, key: &str) -> Option<&Value> {
        self.sections.get(key)
    }

    /// Whether the file has no team section.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }
}
