//! Exported names for bridged tools (and the gateway's prompts).
//!
//! By default ([`Naming::Prefixed`]) a bridged tool is exported as `<server>__<tool>`,
//! sanitised to `^[a-zA-Z0-9_-]{1,64}$` (the strictest common provider rule). Characters
//! outside the set become `_`; digits are kept. When a name is too long or collides with
//! another, it is cut and given a short deterministic hash suffix of the raw identity, so
//! the same server and tool always get the same name whatever else is configured.
//!
//! [`Naming::Unprefixed`] exports each item under its own name, byte for byte (no prefix, no
//! sanitising, no length limit), for a host that fronts one server transparently. A name
//! two servers share goes to the first in the order given; the others get none.
//!
//! Either way calls are routed through the table built here, never by parsing a name back.

use std::collections::{BTreeMap, HashSet};

use sha2::{Digest, Sha256};

/// Longest exported name.
pub const MAX_NAME_LEN: usize = 64;
const SEPARATOR: &str = "__";
const HASH_LEN: usize = 8;

/// Where an exported name leads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolRoute {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the wire, untouched.
    pub tool: String,
}

/// How a runtime names what it exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Naming {
    /// `<server>__<tool>`, provider-safe ([`assign_names`]).
    #[default]
    Prefixed,
    /// Each tool's (prompt's) own name, unchanged; a name already taken by an earlier route
    /// is not given again. The names are whatever the server chose, so they may not be
    /// provider-safe: this is for hosts that serve MCP (a gateway fronting one server), not
    /// for handing tools to a model provider.
    Unprefixed,
}

impl Naming {
    /// The route table: exported name → route. With [`Naming::Unprefixed`], `routes` are
    /// taken in the order given (a route whose name is taken gets none; see [`unnamed`]).
    pub fn assign(self, routes: &[ToolRoute]) -> BTreeMap<String, ToolRoute> {
        match self {
            Naming::Prefixed => assign_names(routes),
            Naming::Unprefixed => {
                let mut names = BTreeMap::new();
                for route in routes {
                    names
                        .entry(route.tool.clone())
                        .or_insert_with(|| route.clone());
                }
                names
            }
        }
    }
}

/// The routes of `routes` that `table` gives no name (left out because their name was taken).
pub fn unnamed<'a>(
    routes: &'a [ToolRoute],
    table: &BTreeMap<String, ToolRoute>,
) -> Vec<&'a ToolRoute> {
    let named: HashSet<&ToolRoute> = table.values().collect();
    routes.iter().filter(|r| !named.contains(r)).collect()
}

/// Assigns exported names to `(server, tool)` pairs: stable, unique, provider-safe.
/// Pairs are processed in sorted order so the result does not depend on input order.
pub fn assign_names(routes: &[ToolRoute]) -> BTreeMap<String, ToolRoute> {
    let mut sorted: Vec<&ToolRoute> = routes.iter().collect();
    sorted.sort();
    sorted.dedup();
    // Count plain candidates first: a candidate used by two routes gets hashed for both, so
    // neither wins by order.
    let mut plain_counts: BTreeMap<String, usize> = BTreeMap::new();
    for route in &sorted {
        if let Some(plain) = plain_name(route) {
            *plain_counts.entry(plain).or_default() += 1;
        }
    }
    let mut taken: HashSet<String> = HashSet::new();
    let mut names = BTreeMap::new();
    for route in sorted {
        let name = match plain_name(route) {
            Some(plain) if plain_counts.get(&plain) == Some(&1) => plain,
            _ => hashed_name(route, 0),
        };
        let mut name = name;
        let mut attempt = 1;
        while taken.contains(&name) {
            name = hashed_name(route, attempt);
            attempt += 1;
        }
        taken.insert(name.clone());
        names.insert(name, route.clone());
    }
    names
}

/// The sanitised `<server>__<tool>`, if it fits the length limit.
fn plain_name(route: &ToolRoute) -> Option<String> {
    let name = format!(
        "{}{SEPARATOR}{}",
        sanitize(&route.server),
        sanitize(&route.tool)
    );
    (name.len() <= MAX_NAME_LEN).then_some(name)
}

/// A name cut to fit, ending in `_` and a hash of the raw identity (and attempt number).
fn hashed_name(route: &ToolRoute, attempt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(route.server.as_bytes());
    hasher.update([0]);
    hasher.update(route.tool.as_bytes());
    if attempt > 0 {
        hasher.update(attempt.to_le_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    let base = format!(
        "{}{SEPARATOR}{}",
        sanitize(&route.server),
        sanitize(&route.tool)
    );
    let keep = MAX_NAME_LEN - HASH_LEN - 1;
    let cut: String = base.chars().take(keep).collect();
    format!("{cut}_{hex}")
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`; an empty part becomes `_`.
fn sanitize(part: &str) -> String {
    let out: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".to_owned() } else { out }
}

/// True if `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_provider_safe(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(pairs: &[(&str, &str)], expect: Expect) {
        let routes: Vec<ToolRoute> = pairs
            .iter()
            .map(|(server, tool)| ToolRoute {
                server: (*server).into(),
                tool: (*tool).into(),
            })
            .collect();
        let names = assign_names(&routes);
        assert_eq!(names.len(), routes.len(), "every route gets one name");
        for name in names.keys() {
            assert!(is_provider_safe(name), "{name}");
        }
        // Same input in another order gives the same names.
        let mut reversed = routes.clone();
        reversed.reverse();
        assert_eq!(assign_names(&reversed), names);
        let rendered: Vec<String> = names
            .iter()
            .map(|(name, r)| format!("{name} -> {}/{}", r.server, r.tool))
            .collect();
        expect.assert_eq(&rendered.join("\n"));
    }

    #[test]
    fn digits_and_dots_survive_and_specials_are_replaced() {
        check(
            &[
                ("srv1", "get_v1"),
                ("srv2", "get_v2"),
                ("fs", "read.file"),
                ("my server", "ünï"),
            ],
            expect![[r#"
                fs__read_file -> fs/read.file
                my_server___n_ -> my server/ünï
                srv1__get_v1 -> srv1/get_v1
                srv2__get_v2 -> srv2/get_v2"#]],
        );
    }

    #[test]
    fn collisions_after_sanitising_get_hashes_for_both() {
        check(
            &[("a", "x.y"), ("a", "x_y"), ("a", "x-y")],
            expect![[r#"
                a__x-y -> a/x-y
                a__x_y_35d885f9 -> a/x_y
                a__x_y_7ace4eaa -> a/x.y"#]],
        );
    }

    #[test]
    fn unprefixed_names_are_the_servers_own_and_the_first_keeps_a_shared_one() {
        let routes: Vec<ToolRoute> = [("b", "read.file"), ("a", "read.file"), ("a", "ünï x")]
            .iter()
            .map(|(server, tool)| ToolRoute {
                server: (*server).into(),
                tool: (*tool).into(),
            })
            .collect();
        let table = Naming::Unprefixed.assign(&routes);
        let mut rendered: Vec<String> = table
            .iter()
            .map(|(name, r)| format!("{name} -> {}/{}", r.server, r.tool))
            .collect();
        for left_out in unnamed(&routes, &table) {
            rendered.push(format!("(none) -> {}/{}", left_out.server, left_out.tool));
        }
        expect![[r#"
            read.file -> b/read.file
            ünï x -> a/ünï x
            (none) -> a/read.file"#]]
        .assert_eq(&rendered.join("\n"));
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "a_very_long_tool_name_that_goes_on_and_on_beyond_any_provider_limit";
        check(
            &[("server", long)],
            expect![
                "server__a_very_long_tool_name_that_goes_on_and_on_beyon_0a3a25eb -> server/a_very_long_tool_name_that_goes_on_and_on_beyond_any_provider_limit"
            ],
        );
    }
}
