//! `serve`'s team sections (`switchboard_config::team`): `clients`, the operator's named
//! bearer tokens and their groups, and `policies`, who may see and use what
//! (`switchboard_gateway::policy`). Read at start (a section that does not read stops
//! `serve`, exit 2) and at each `--watch` reload (a section that does not read keeps what
//! was in force, said on stderr, and nothing of that reload is applied).
//!
//! ```json
//! "clients": {
//!   "alice": { "token": "${ALICE_TOKEN}", "groups": ["data"] }
//! },
//! "policies": [
//!   { "name": "data-readers", "who": ["group:data"],
//!     "allow": { "servers": ["docs"], "tools": ["fs__read_*"] },
//!     "deny": { "tools": ["fs__read_secret*"] },
//!     "arguments": { "fs__read_*": { "path": { "under": "/data" } } } }
//! ]
//! ```
//!
//! Every key is checked: a key that is not known (a typo such as `alow`) is an error, never
//! ignored, because an ignored rule is a rule silently not applied. A token must come from a
//! variable or be at least [`MIN_TOKEN_CHARS`] long, and no two clients may share one. A
//! profile's `servers` must name servers that are served (in `mcpServers`, and chosen by
//! `--server` when it is given): [`Team::check_profile_servers`], at start and on reload.

use std::collections::HashSet;

use serde_json::{Map, Value};
use switchboard_config::team::TeamSections;
use switchboard_config::{ConfigFile, Variables};
use switchboard_gateway::policy::{Access, ArgumentRule, Constraint, Grant, Policy, Rule, Who};
use switchboard_gateway::profiles::{DescriptionChange, Profile, ToolOverride};
use switchboard_server::http::BearerToken;
use switchboard_text::wildcard::Wildcard;

use crate::watch::Selection;

/// Shortest token accepted: shorter ones can be guessed.
pub(crate) const MIN_TOKEN_CHARS: usize = 16;
/// Most named clients, rules, patterns in one list, and argument rules.
const MAX_ITEMS: usize = 1024;
/// Longest name or pattern.
const MAX_TEXT: usize = 512;

/// What the team sections ask of `serve`.
#[derive(Debug, Default)]
pub(crate) struct Team {
    /// One bearer token per named client.
    pub(crate) tokens: Vec<BearerToken>,
    /// The policy (`None` when the file has no `policies`).
    pub(crate) policy: Option<Policy>,
    /// The clients' names, for the startup report.
    pub(crate) client_names: Vec<String>,
    /// The profiles served at `/mcp/<name>`.
    pub(crate) profiles: Vec<Profile>,
}

impl Team {
    /// What `serve` says of the team sections at start (nothing when there are none).
    pub(crate) fn summary(&self, over_http: bool) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.client_names.is_empty() {
            let note = if over_http {
                ""
            } else {
                " (their tokens are asked for over --http only)"
            };
            lines.push(format!("clients: {}{note}", self.client_names.join(", ")));
        }
        if !self.profiles.is_empty() {
            let names: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
            lines.push(if over_http {
                format!("profiles: {} (each at /mcp/<profile>)", names.join(", "))
            } else {
                format!(
                    "profiles: {} (each at /mcp/<profile> over --http; one over stdio with --profile NAME)",
                    names.join(", ")
                )
            });
        }
        if let Some(policy) = &self.policy {
            let rules: Vec<&str> = policy.rule_names().collect();
            lines.push(match rules.as_slice() {
                [] => "policy: no rules, so every client sees nothing".to_owned(),
                rules => format!(
                    "policy: {} rule(s) ({}); what no rule grants a client is hidden from it",
                    rules.len(),
                    rules.join(", ")
                ),
            });
        }
        lines
    }
}

/// Reads the team sections; the error names the section, the item and what to write.
pub(crate) fn read(sections: &TeamSections, vars: &dyn Variables) -> Result<Team, String> {
    let clients = match sections.section("clients") {
        Some(value) => read_clients(value, vars)?,
        None => Vec::new(),
    };
    let names: HashSet<&str> = clients.iter().map(|c| c.name.as_str()).collect();
    let policy = match sections.section("policies") {
        Some(value) => Some(
            Policy::new(read_rules(value, &names)?).with_client_groups(
                clients
                    .iter()
                    .map(|client| (client.name.clone(), client.groups.clone())),
            ),
        ),
        None => None,
    };
    let groups = || {
        clients
            .iter()
            .map(|client| (client.name.clone(), client.groups.clone()))
            .collect::<Vec<_>>()
    };
    let profiles = match sections.section("profiles") {
        Some(value) => read_profiles(value, &names)?
            .into_iter()
            .map(|mut profile| {
                profile.policy = profile
                    .policy
                    .map(|policy| policy.with_client_groups(groups()));
                profile
            })
            .collect(),
        None => Vec::new(),
    };
    Ok(Team {
        tokens: clients.iter().filter_map(|c| c.token.clone()).collect(),
        client_names: clients.iter().map(|c| c.name.clone()).collect(),
        policy,
        profiles,
    })
}

impl Team {
    /// Checks that each profile's `servers` are served: configured in `file`'s
    /// `mcpServers` and chosen by `selection` (`--server`). A profile naming another server
    /// would be silently empty of it, so the error names the profile, the server and the
    /// names there are.
    pub(crate) fn check_profile_servers(
        &self,
        file: &ConfigFile,
        selection: &Selection,
    ) -> Result<(), String> {
        let named = self.profiles.iter().flat_map(|profile| {
            profile
                .servers
                .iter()
                .flatten()
                .map(move |server| (profile, server))
        });
        for (profile, server) in named {
            if file.find(server).is_none() {
                let configured: Vec<&str> = file
                    .servers
                    .iter()
                    .map(|entry| match entry {
                        Ok(entry) => entry.name.as_str(),
                        Err(error) => error.name.as_str(),
                    })
                    .collect();
                return Err(format!(
                    "profile `{}`: `servers` names `{server}`, which is not in `mcpServers`; configured: {}",
                    profile.name,
                    names_or_none(&configured)
                ));
            }
            if !selection.includes(server) {
                return Err(format!(
                    "profile `{}`: `servers` names `{server}`, which --server leaves out; served: {}",
                    profile.name,
                    names_or_none(
                        &selection
                            .names
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                    )
                ));
            }
        }
        Ok(())
    }

    /// The policy and profiles, for the gateway.
    pub(crate) fn access(&self) -> Access {
        Access {
            policy: self.policy.clone(),
            profiles: self.profiles.clone(),
        }
    }
}

/// `a, b, c`, or `none`.
fn names_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn read_profiles(value: &Value, clients: &HashSet<&str>) -> Result<Vec<Profile>, String> {
    let Value::Object(map) = value else {
        return Err("`profiles` must be an object: `{\"NAME\": {\"servers\": [...], \"tools\": {...}, \"overrides\": {...}}}`".into());
    };
    if map.len() > MAX_ITEMS {
        return Err(format!("`profiles` has more than {MAX_ITEMS} profiles"));
    }
    let mut profiles = Vec::new();
    for (name, entry) in map {
        let at = format!("profile `{name}`");
        let path_safe = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
        if !path_safe {
            return Err(format!(
                "{at}: a profile's name is the last segment of its endpoint (/mcp/<profile>): 1 to 64 letters, digits, `-` or `_`"
            ));
        }
        let entry = object(entry, &at, &["servers", "tools", "policies", "overrides"])?;
        let servers = match entry.get("servers") {
            None => None,
            Some(value) => Some(strings(Some(value), &format!("{at}: `servers`"))?),
        };
        let (allow_tools, deny_tools) = match entry.get("tools") {
            None => (None, Vec::new()),
            Some(tools) => {
                let tools = object(tools, &format!("{at}: `tools`"), &["allow", "deny"])?;
                let patterns = |key: &str| -> Result<Vec<Wildcard>, String> {
                    Ok(strings(tools.get(key), &format!("{at}: `tools.{key}`"))?
                        .iter()
                        .map(|text| Wildcard::new(text))
                        .collect())
                };
                let allow = match tools.get("allow") {
                    Some(_) => Some(patterns("allow")?),
                    None => None,
                };
                (allow, patterns("deny")?)
            }
        };
        let policy = match entry.get("policies") {
            Some(rules) => Some(Policy::new(
                read_rules(rules, clients).map_err(|why| format!("{at}: {why}"))?,
            )),
            None => None,
        };
        let overrides = match entry.get("overrides") {
            Some(value) => read_overrides(value, &at)?,
            None => Vec::new(),
        };
        profiles.push(Profile {
            name: name.clone(),
            servers,
            allow_tools,
            deny_tools,
            policy,
            overrides,
        });
    }
    Ok(profiles)
}

fn read_overrides(value: &Value, at: &str) -> Result<Vec<ToolOverride>, String> {
    let Value::Object(tools) = value else {
        return Err(format!(
            "{at}: `overrides` must map exported tool names to changes: `{{\"fs__read_file\": {{\"name\": \"read\"}}}}`"
        ));
    };
    let mut renames = HashSet::new();
    let mut overrides = Vec::new();
    for (tool, change) in tools {
        let here = format!("{at}: `overrides.{tool}`");
        let change = object(
            change,
            &here,
            &["name", "description", "appendDescription", "fixedArguments"],
        )?;
        let text = |key: &str| -> Result<Option<String>, String> {
            match change.get(key) {
                None => Ok(None),
                Some(Value::String(text)) if !text.is_empty() => Ok(Some(text.clone())),
                Some(_) => Err(format!("{here}.{key} must be a non-empty string")),
            }
        };
        let rename = text("name")?;
        if let Some(rename) = &rename {
            let tool_name = rename.len() <= 128
                && rename
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
            if !tool_name {
                return Err(format!(
                    "{here}.name: a tool name is 1 to 128 letters, digits, `_`, `-` or `.`"
                ));
            }
            if !renames.insert(rename.clone()) {
                return Err(format!(
                    "{here}.name: another tool of this profile is renamed `{rename}` too"
                ));
            }
        }
        let description = match (text("description")?, text("appendDescription")?) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{here}: `description` replaces and `appendDescription` amends; give one"
                ));
            }
            (Some(text), None) => Some(DescriptionChange::Replace(text)),
            (None, Some(text)) => Some(DescriptionChange::Append(text)),
            (None, None) => None,
        };
        let fixed = match change.get("fixedArguments") {
            None => Map::new(),
            Some(Value::Object(fixed)) => fixed.clone(),
            Some(_) => {
                return Err(format!(
                    "{here}.fixedArguments must map argument names to the values every call gets"
                ));
            }
        };
        overrides.push(ToolOverride {
            tool: tool.clone(),
            rename,
            description,
            fixed,
        });
    }
    Ok(overrides)
}

struct NamedClient {
    name: String,
    token: Option<BearerToken>,
    groups: Vec<String>,
}

fn read_clients(value: &Value, vars: &dyn Variables) -> Result<Vec<NamedClient>, String> {
    let Value::Object(map) = value else {
        return Err(
            "`clients` must be an object: `{\"NAME\": {\"token\": \"${VAR}\", \"groups\": [...]}}`"
                .into(),
        );
    };
    if map.len() > MAX_ITEMS {
        return Err(format!("`clients` has more than {MAX_ITEMS} clients"));
    }
    let mut tokens_seen = HashSet::new();
    let mut clients = Vec::new();
    for (name, entry) in map {
        let at = format!("`clients.{name}`");
        check_name(name, &at)?;
        let entry = object(entry, &at, &["token", "groups"])?;
        let written = entry
            .get("token")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at} needs `token`: a string, best `${{VAR}}` naming an environment variable that holds it"))?;
        let token = switchboard_config::expand_vars(written, vars).map_err(|unset| {
            format!("{at}: `token` uses the variable `{unset}`, which is not set; set it to the client's token")
        })?;
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(format!(
                "{at}: the token is shorter than {MIN_TOKEN_CHARS} characters; use a long random one (e.g. `openssl rand -hex 32`)"
            ));
        }
        if !tokens_seen.insert(token.clone()) {
            return Err(format!(
                "{at}: its token is another client's too; each client needs its own"
            ));
        }
        let groups = strings(entry.get("groups"), &format!("{at}.groups"))?;
        clients.push(NamedClient {
            name: name.clone(),
            token: BearerToken::named(name, token),
            groups,
        });
    }
    Ok(clients)
}

fn read_rules(value: &Value, clients: &HashSet<&str>) -> Result<Vec<Rule>, String> {
    let Value::Array(items) = value else {
        return Err(
            "`policies` must be a list of rules: `[{\"name\": …, \"who\": […], \"allow\": {…}}]`"
                .into(),
        );
    };
    if items.len() > MAX_ITEMS {
        return Err(format!("`policies` has more than {MAX_ITEMS} rules"));
    }
    let mut names = HashSet::new();
    let mut rules = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("`policies[{index}]`");
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at} needs `name`: a denial names its rule"))?;
        check_name(name, &at)?;
        let at = format!("policy `{name}`");
        let rule = object(item, &at, &["name", "who", "allow", "deny", "arguments"])?;
        if !names.insert(name.to_owned()) {
            return Err(format!(
                "{at}: another rule has this name; names must be unique"
            ));
        }
        let who = strings(rule.get("who"), &format!("{at}: `who`"))?
            .iter()
            .map(|text| Who::parse(text).map_err(|why| format!("{at}: `who`: {why}")))
            .collect::<Result<Vec<_>, _>>()?;
        if who.is_empty() {
            return Err(format!(
                "{at}: `who` is empty; name whom it is for (`*` for everyone)"
            ));
        }
        for who in &who {
            if let Who::Client(client) = who
                && !clients.contains(client.as_str())
            {
                return Err(format!(
                    "{at}: `who` names `client:{client}`, which is not in `clients`"
                ));
            }
        }
        let allow = grant(rule.get("allow"), &format!("{at}: `allow`"))?;
        let deny = grant(rule.get("deny"), &format!("{at}: `deny`"))?;
        let arguments = argument_rules(rule.get("arguments"), &format!("{at}: `arguments`"))?;
        rules.push(Rule {
            name: name.to_owned(),
            who,
            allow,
            deny,
            arguments,
        });
    }
    Ok(rules)
}

fn grant(value: Option<&Value>, at: &str) -> Result<Grant, String> {
    let Some(value) = value else {
        return Ok(Grant::default());
    };
    let map = object(value, at, &["servers", "tools", "prompts", "resources"])?;
    let patterns = |key: &str| -> Result<Vec<Wildcard>, String> {
        Ok(strings(map.get(key), &format!("{at}.{key}"))?
            .iter()
            .map(|text| Wildcard::new(text))
            .collect())
    };
    Ok(Grant {
        servers: patterns("servers")?,
        tools: patterns("tools")?,
        prompts: patterns("prompts")?,
        resources: patterns("resources")?,
    })
}

fn argument_rules(value: Option<&Value>, at: &str) -> Result<Vec<ArgumentRule>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Object(tools) = value else {
        return Err(format!(
            "{at} must be an object: `{{\"TOOL\": {{\"ARGUMENT\": {{\"under\": \"/data\"}}}}}}`"
        ));
    };
    let mut rules = Vec::new();
    for (tool, arguments) in tools {
        let Value::Object(arguments) = arguments else {
            return Err(format!(
                "{at}.{tool} must map argument names to constraints"
            ));
        };
        for (argument, constraint) in arguments {
            let here = format!("{at}.{tool}.{argument}");
            let constraint = object(constraint, &here, &["under", "prefix", "matches", "oneOf"])?;
            let [(kind, wanted)] = constraint.iter().collect::<Vec<_>>()[..] else {
                return Err(format!(
                    "{here} needs exactly one of `under`, `prefix`, `matches`, `oneOf`"
                ));
            };
            let text = || {
                wanted
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{here}.{kind} must be a string"))
            };
            let constraint = match kind.as_str() {
                "under" => Constraint::Under(text()?),
                "prefix" => Constraint::Prefix(text()?),
                "matches" => Constraint::Matches(Wildcard::new(&text()?)),
                _ => match wanted {
                    Value::Array(values) if !values.is_empty() => Constraint::OneOf(values.clone()),
                    _ => return Err(format!("{here}.oneOf must be a list of values")),
                },
            };
            rules.push(ArgumentRule {
                tool: Wildcard::new(tool),
                argument: argument.clone(),
                constraint,
            });
        }
    }
    if rules.len() > MAX_ITEMS {
        return Err(format!("{at} has more than {MAX_ITEMS} argument rules"));
    }
    Ok(rules)
}

/// `value` as an object whose keys are all in `known`.
pub(crate) fn object<'a>(
    value: &'a Value,
    at: &str,
    known: &[&str],
) -> Result<&'a Map<String, Value>, String> {
    let Value::Object(map) = value else {
        return Err(format!("{at} must be an object with {}", listed(known)));
    };
    if let Some(unknown) = map.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!(
            "{at}: `{unknown}` is not a setting here (known: {}); a rule with an unknown key is refused rather than half applied",
            listed(known)
        ));
    }
    Ok(map)
}

/// A list of strings (absent: empty).
fn strings(value: Option<&Value>, at: &str) -> Result<Vec<String>, String> {
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("{at} must be a list of strings")),
    };
    if items.len() > MAX_ITEMS {
        return Err(format!("{at} has more than {MAX_ITEMS} entries"));
    }
    items
        .iter()
        .map(|item| match item.as_str() {
            Some(text) if !text.is_empty() && text.len() <= MAX_TEXT => Ok(text.to_owned()),
            _ => Err(format!("{at} must hold strings of 1 to {MAX_TEXT} bytes")),
        })
        .collect()
}

fn check_name(name: &str, at: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
        return Err(format!(
            "{at}: a name must be 1 to 128 characters, without control characters"
        ));
    }
    Ok(())
}

fn listed(keys: &[&str]) -> String {
    keys.iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};
    use serde_json::json;

    struct Vars;

    impl Variables for Vars {
        fn get(&self, name: &str) -> Option<String> {
            (name == "ALICE_TOKEN").then(|| "alice-token-0123456789".to_owned())
        }
    }

    fn check(root: Value, expected: Expect) {
        let shown = match read(&TeamSections::of(&root), &Vars) {
            Ok(team) => format!(
                "clients {:?}; rules {:?}",
                team.client_names,
                team.policy
                    .as_ref()
                    .map(|policy| policy.rule_names().collect::<Vec<_>>())
            ),
            Err(error) => error,
        };
        expected.assert_eq(&shown);
    }

    #[test]
    fn sections_read_and_every_mistake_is_named() {
        let client = json!({"alice": {"token": "${ALICE_TOKEN}", "groups": ["data"]}});
        let rule = |extra: Value| {
            let mut rule = json!({"name": "r", "who": ["group:data"], "allow": {"tools": ["*"]}});
            if let (Value::Object(rule), Value::Object(extra)) = (&mut rule, extra) {
                rule.extend(extra);
            }
            json!({"clients": client, "policies": [rule]})
        };
        check(
            rule(json!({})),
            expect![[r#"clients ["alice"]; rules Some(["r"])"#]],
        );
        check(json!({}), expect![[r#"clients []; rules None"#]]);
        check(
            rule(json!({"alow": {}})),
            expect![
                "policy `r`: `alow` is not a setting here (known: `name`, `who`, `allow`, `deny`, `arguments`); a rule with an unknown key is refused rather than half applied"
            ],
        );
        check(
            rule(json!({"who": ["client:bob"]})),
            expect!["policy `r`: `who` names `client:bob`, which is not in `clients`"],
        );
        check(
            rule(json!({"who": []})),
            expect!["policy `r`: `who` is empty; name whom it is for (`*` for everyone)"],
        );
        check(
            rule(json!({"arguments": {"fs__*": {"path": {"under": "/d", "prefix": "/e"}}}})),
            expect![
                "policy `r`: `arguments`.fs__*.path needs exactly one of `under`, `prefix`, `matches`, `oneOf`"
            ],
        );
        check(
            json!({"clients": {"bob": {"token": "short"}}}),
            expect![
                "`clients.bob`: the token is shorter than 16 characters; use a long random one (e.g. `openssl rand -hex 32`)"
            ],
        );
        check(
            json!({"clients": {"bob": {"token": "${BOB_TOKEN}"}}}),
            expect![
                "`clients.bob`: `token` uses the variable `BOB_TOKEN`, which is not set; set it to the client's token"
            ],
        );
        check(
            json!({"clients": {"a": {"token": "${ALICE_TOKEN}"}, "b": {"token": "${ALICE_TOKEN}"}}}),
            expect!["`clients.b`: its token is another client's too; each client needs its own"],
        );
        check(
            json!({"policies": {"name": "r"}}),
            expect![[
                r#"`policies` must be a list of rules: `[{"name": …, "who": […], "allow": {…}}]`"#
            ]],
        );
    }
}
