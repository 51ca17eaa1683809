//! Who may see and use what through the gateway: a [`Policy`] of named [`Rule`]s, judged
//! for each request by the client's [`ClientIdentity`].
//!
//! A rule says whom it is for ([`Who`]: a named client, a group, an OAuth subject, client
//! id or scope, the stdio client, or anyone), what it grants ([`Grant`]: servers, and tools,
//! prompts and resources by `*`/`?` patterns of the names the gateway exports — resource
//! patterns match URIs, and a resource template by its template text), what it denies, and
//! what arguments a tool may be called with ([`ArgumentRule`]). For one identity, the rules
//! for it decide:
//! - anything a rule for it denies is denied, by that rule;
//! - else anything a rule for it grants is allowed;
//! - else it is denied by [`DEFAULT_RULE`]: a gateway with a policy shows nothing no rule
//!   grants (an empty policy shows nothing at all; no policy at all, [`GatewayOptions`]'s
//!   `None`, shows everything, as before policies existed).
//!
//! A client never sees what it may not use: listings are filtered, and a call of a tool no
//! rule grants is denied whether the tool exists or not (the names a client may probe are
//! only those its rules grant by pattern). A denial is a JSON-RPC error,
//! [`crate::codes::POLICY_DENIED`], naming the rule and what it denied; `data` holds `rule`.
//!
//! Argument rules bind every call of a matching tool by a client the rule is for (all of
//! them, from every rule for the client: rules only narrow). An argument a rule constrains
//! must be present and a string (or, for `oneOf`, equal to one of the values): a missing
//! one is denied, because the server's default might be anything. `under` judges a path
//! lexically: absolute like the folder, no `..` segment, no backslash or NUL, and then the
//! folder itself or below it — `/data/../etc/passwd` is not under `/data`.
//!
//! Judging costs a few string comparisons per rule; the rules for an identity are picked
//! once per request ([`Policy::for_identity`]). Named clients' groups come from the
//! operator's `clients` list ([`Policy::with_client_groups`]); an OAuth subject's from its
//! token's `groups` and `roles` claims.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use switchboard_runtime::Snapshot;
use switchboard_server::core::{ClientIdentity, ServiceEvent, ServiceRequest};
use switchboard_text::wildcard::Wildcard;
use switchboard_wire::ErrorObject;
use tokio::sync::{broadcast, watch};

/// The name a denial gives when no rule for the client grants the thing asked for.
pub const DEFAULT_RULE: &str = "default-deny";

/// The rules, and the groups of each named client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    rules: Vec<Rule>,
    client_groups: HashMap<Arc<str>, Vec<String>>,
}

/// One named rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Its name, given in every denial it makes.
    pub name: String,
    /// Whom it is for (any of them).
    pub who: Vec<Who>,
    /// What it grants.
    pub allow: Grant,
    /// What it denies (over any grant).
    pub deny: Grant,
    /// What the tools it names may be called with.
    pub arguments: Vec<ArgumentRule>,
}

/// Whom a rule is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// Every client (`*`).
    Anyone,
    /// The stdio client (`local`).
    Local,
    /// The holders of the `--bearer-token-env` token (`bearer`).
    Bearer,
    /// A named client from the operator's list (`client:NAME`).
    Client(String),
    /// A named client in this group, or an OAuth subject whose token has it among its
    /// `groups` or `roles` (`group:NAME`).
    Group(String),
    /// An OAuth subject, by its `sub` (`subject:SUB`).
    Subject(String),
    /// An OAuth token issued to this client (`clientId:ID`, its `client_id` or `azp`).
    ClientId(String),
    /// An OAuth token with this scope (`scope:NAME`).
    Scope(String),
}

impl Who {
    /// Reads `*`, `local`, `bearer`, `client:NAME`, `group:NAME`, `subject:SUB`,
    /// `clientId:ID` or `scope:NAME`; the error says what is accepted.
    pub fn parse(text: &str) -> Result<Who, String> {
        let named = |value: &str, make: fn(String) -> Who| {
            if value.is_empty() {
                Err(format!(
                    "`{text}` names nobody: write a name after the colon"
                ))
            } else {
                Ok(make(value.to_owned()))
            }
        };
        match text.split_once(':') {
            None if text == "*" => Ok(Who::Anyone),
            None if text == "local" => Ok(Who::Local),
            None if text == "bearer" => Ok(Who::Bearer),
            Some(("client", name)) => named(name, Who::Client),
            Some(("group", name)) => named(name, Who::Group),
            Some(("subject", name)) => named(name, Who::Subject),
            Some(("clientId", name)) => named(name, Who::ClientId),
            Some(("scope", name)) => named(name, Who::Scope),
            _ => Err(format!(
                "`{text}` is not a client: write `*`, `local`, `bearer`, `client:NAME`, `group:NAME`, `subject:SUB`, `clientId:ID` or `scope:NAME`"
            )),
        }
    }
}

/// Things a rule grants or denies: whole servers, and tools, prompts and resources by
/// pattern (of the names the gateway exports; resources by URI, templates by their text).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grant {
    /// Every tool, prompt and resource of these servers.
    pub servers: Vec<Wildcard>,
    /// Tools, by exported name.
    pub tools: Vec<Wildcard>,
    /// Prompts, by exported name.
    pub prompts: Vec<Wildcard>,
    /// Resources by URI, and resource templates by their template text.
    pub resources: Vec<Wildcard>,
}

/// A constraint on one argument of the tools a pattern names.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentRule {
    /// The tools (exported names).
    pub tool: Wildcard,
    /// The argument (a top-level name of the call's `arguments`).
    pub argument: String,
    /// What its value must be.
    pub constraint: Constraint,
}

/// What an argument's value must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// A path in this folder or below it, judged lexically (`under`).
    Under(String),
    /// A string that starts with this (`prefix`).
    Prefix(String),
    /// A string matching this `*`/`?` pattern (`matches`).
    Matches(Wildcard),
    /// One of these values (`oneOf`).
    OneOf(Vec<Value>),
}

/// What is asked for, by the name the gateway exports and the server behind it (unknown
/// for a name no server has).
#[derive(Debug, Clone, Copy)]
pub enum Asked<'a> {
    /// A tool.
    Tool {
        /// Exported name.
        name: &'a str,
        /// Its server.
        server: Option<&'a str>,
    },
    /// A prompt.
    Prompt {
        /// Exported name.
        name: &'a str,
        /// Its server.
        server: Option<&'a str>,
    },
    /// A resource.
    Resource {
        /// Its URI.
        uri: &'a str,
        /// Its server.
        server: Option<&'a str>,
    },
    /// A resource template.
    Template {
        /// Its template text.
        template: &'a str,
        /// Its server.
        server: &'a str,
    },
}

impl Asked<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Asked::Tool { .. } => "tool",
            Asked::Prompt { .. } => "prompt",
            Asked::Resource { .. } => "resource",
            Asked::Template { .. } => "resource template",
        }
    }

    fn name(&self) -> &str {
        match self {
            Asked::Tool { name, .. } | Asked::Prompt { name, .. } => name,
            Asked::Resource { uri, .. } => uri,
            Asked::Template { template, .. } => template,
        }
    }
}

/// A request the policy refuses: the rule, and what it refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The rule's name ([`DEFAULT_RULE`] when none granted it).
    pub rule: String,
    /// What was refused, in words (names what the client asked for, nothing else).
    pub what: String,
}

/// The rule a refusal names, when it is the policy's denial.
pub(crate) fn denied_rule(refused: &ErrorObject) -> Option<&str> {
    if refused.code != crate::codes::POLICY_DENIED {
        return None;
    }
    refused.data.as_ref()?.get("rule")?.as_str()
}

impl Denial {
    /// The JSON-RPC error the client gets.
    pub fn error(&self) -> ErrorObject {
        let message = if self.rule == DEFAULT_RULE {
            format!(
                "denied by policy: no rule for this client grants {} (rule `{DEFAULT_RULE}`)",
                self.what
            )
        } else {
            format!("denied by policy rule `{}`: {}", self.rule, self.what)
        };
        let mut error = ErrorObject::new(crate::codes::POLICY_DENIED, message);
        error.data = Some(json!({ "rule": self.rule }));
        error
    }
}

impl Policy {
    /// A policy of these rules (in order; order does not change a decision, only which
    /// rule a denial names first).
    pub fn new(rules: Vec<Rule>) -> Policy {
        Policy {
            rules,
            client_groups: HashMap::new(),
        }
    }

    /// The groups of each named client (from the operator's `clients` list).
    pub fn with_client_groups(
        mut self,
        groups: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Policy {
        self.client_groups = groups
            .into_iter()
            .map(|(name, groups)| (Arc::from(name), groups))
            .collect();
        self
    }

    /// The rules' names, in order.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| rule.name.as_str())
    }

    /// The rules for `identity`, to judge its request by.
    pub fn for_identity(&self, identity: &ClientIdentity) -> Applicable<'_> {
        let rules = self
            .rules
            .iter()
            .filter(|rule| rule.who.iter().any(|who| self.is_for(who, identity)))
            .collect();
        Applicable { rules }
    }

    fn is_for(&self, who: &Who, identity: &ClientIdentity) -> bool {
        match (who, identity) {
            (Who::Anyone, _) => true,
            (Who::Local, ClientIdentity::Local) => true,
            (Who::Bearer, ClientIdentity::Token(_)) => true,
            (Who::Client(wanted), ClientIdentity::Client(name)) => wanted.as_str() == &**name,
            (Who::Group(group), ClientIdentity::Client(name)) => self
                .client_groups
                .get(name)
                .is_some_and(|groups| groups.contains(group)),
            (Who::Group(group), ClientIdentity::Subject { grants, .. }) => {
                grants.claims().groups.contains(group)
            }
            (Who::Subject(wanted), ClientIdentity::Subject { subject, .. }) => {
                wanted.as_str() == &**subject
            }
            (Who::ClientId(wanted), ClientIdentity::Subject { grants, .. }) => {
                grants.claims().client_id.as_deref() == Some(wanted.as_str())
            }
            (Who::Scope(scope), ClientIdentity::Subject { grants, .. }) => {
                grants.claims().scopes.contains(scope)
            }
            _ => false,
        }
    }
}

/// The rules of a [`Policy`] for one identity.
#[derive(Debug)]
pub struct Applicable<'p> {
    rules: Vec<&'p Rule>,
}

impl Applicable<'_> {
    /// Whether the client may see and use `asked`; else the rule that refuses it.
    pub fn judge(&self, asked: Asked<'_>) -> Result<(), Denial> {
        let denied_by = |grant: &Grant| grant.covers(asked);
        if let Some(rule) = self.rules.iter().find(|rule| denied_by(&rule.deny)) {
            return Err(Denial {
                rule: rule.name.clone(),
                what: format!("{} `{}`", asked.kind(), asked.name()),
            });
        }
        if self.rules.iter().any(|rule| rule.allow.covers(asked)) {
            return Ok(());
        }
        Err(Denial {
            rule: DEFAULT_RULE.to_owned(),
            what: format!("{} `{}`", asked.kind(), asked.name()),
        })
    }

    /// Whether the client may see `asked` (a listing's filter).
    pub fn shows(&self, asked: Asked<'_>) -> bool {
        self.judge(asked).is_ok()
    }

    /// Whether the call's arguments keep to every argument rule for the tool.
    pub fn check_arguments(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<(), Denial> {
        for rule in &self.rules {
            for bound in rule
                .arguments
                .iter()
                .filter(|bound| bound.tool.matches(tool))
            {
                if let Err(why) = bound.constraint.admits(arguments.get(&bound.argument)) {
                    return Err(Denial {
                        rule: rule.name.clone(),
                        what: format!("argument `{}` of tool `{tool}` {why}", bound.argument),
                    });
                }
            }
        }
        Ok(())
    }
}

impl Grant {
    fn covers(&self, asked: Asked<'_>) -> bool {
        let any = |patterns: &[Wildcard], name: &str| patterns.iter().any(|p| p.matches(name));
        let server_granted = |server: Option<&str>| server.is_some_and(|s| any(&self.servers, s));
        match asked {
            Asked::Tool { name, server } => server_granted(server) || any(&self.tools, name),
            Asked::Prompt { name, server } => server_granted(server) || any(&self.prompts, name),
            Asked::Resource { uri, server } => server_granted(server) || any(&self.resources, uri),
            Asked::Template { template, server } => {
                server_granted(Some(server)) || any(&self.resources, template)
            }
        }
    }
}

impl Constraint {
    /// `Ok` when `value` keeps to the constraint; else what is wrong with it (never the
    /// value itself: it may be a secret the client sent).
    fn admits(&self, value: Option<&Value>) -> Result<(), String> {
        let Some(value) = value else {
            return Err("is required by the policy and missing".to_owned());
        };
        if let Constraint::OneOf(values) = self {
            return if values.contains(value) {
                Ok(())
            } else {
                Err(format!("must be one of {}", Value::Array(values.clone())))
            };
        }
        let Some(text) = value.as_str() else {
            return Err("must be a string".to_owned());
        };
        match self {
            Constraint::Under(folder) if is_under(text, folder) => Ok(()),
            Constraint::Under(folder) => Err(format!(
                "must be a path in `{folder}` (no `..`, no backslash)"
            )),
            Constraint::Prefix(prefix) if text.starts_with(prefix.as_str()) => Ok(()),
            Constraint::Prefix(prefix) => Err(format!("must start with `{prefix}`")),
            Constraint::Matches(pattern) if pattern.matches(text) => Ok(()),
            Constraint::Matches(pattern) => Err(format!("must match `{}`", pattern.as_str())),
            Constraint::OneOf(_) => Ok(()),
        }
    }
}

/// Whether `path` is `folder` or below it, lexically: no `..` segment, no backslash or NUL,
/// absolute exactly when the folder is; `.` segments and doubled slashes do not count.
fn is_under(path: &str, folder: &str) -> bool {
    if path.contains(['\\', '\0']) || path.starts_with('/') != folder.starts_with('/') {
        return false;
    }
    let segments = |text: &str| -> Vec<String> {
        text.split('/')
            .filter(|segment| !segment.is_empty() && *segment != ".")
            .map(str::to_owned)
            .collect()
    };
    let path = segments(path);
    if path.iter().any(|segment| segment == "..") {
        return false;
    }
    let folder = segments(folder);
    path.len() >= folder.len() && path[..folder.len()] == folder[..]
}

/// What decides who sees what: the policy and the profiles, replaced together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Access {
    /// The gateway's policy (`None`: everything shown).
    pub policy: Option<Policy>,
    /// The profiles served at `/mcp/<name>` (`profiles.rs`).
    pub profiles: Vec<crate::profiles::Profile>,
}

impl Access {
    /// The profile named `name`.
    pub(crate) fn profile(&self, name: &str) -> Option<&crate::profiles::Profile> {
        self.profiles.iter().find(|profile| profile.name == name)
    }

    /// The policy at an endpoint: its profile's own, else the gateway's.
    pub(crate) fn policy_at<'a>(
        &'a self,
        profile: Option<&'a crate::profiles::Profile>,
    ) -> Option<&'a Policy> {
        profile
            .and_then(|profile| profile.policy.as_ref())
            .or(self.policy.as_ref())
    }
}

/// The access in force, which its owner may replace while the gateway serves
/// ([`crate::Gateway::policy_control`]): every request is judged by what is in force when
/// it arrives, and clients are told every list changed when it changes.
#[derive(Debug, Clone)]
pub struct PolicyControl {
    access: watch::Sender<Arc<Access>>,
}

impl PolicyControl {
    pub(crate) fn new(access: Access) -> PolicyControl {
        PolicyControl {
            access: watch::Sender::new(Arc::new(access)),
        }
    }

    /// Puts `access` in force; clients are told their lists changed only when it differs
    /// from what is in force.
    pub fn replace(&self, access: Access) {
        self.access.send_if_modified(|in_force| {
            if **in_force == access {
                return false;
            }
            *in_force = Arc::new(access);
            true
        });
    }

    pub(crate) fn in_force(&self) -> watch::Receiver<Arc<Access>> {
        self.access.subscribe()
    }
}

/// Tells every client that every list changed each time the policy in force is replaced
/// (what each may see may have changed); ends when the control is gone.
pub(crate) async fn announce_replacements(
    mut in_force: watch::Receiver<Arc<Access>>,
    events: broadcast::Sender<ServiceEvent>,
) {
    in_force.mark_unchanged();
    while in_force.changed().await.is_ok() {
        for event in [
            ServiceEvent::ToolsChanged,
            ServiceEvent::PromptsChanged,
            ServiceEvent::ResourcesChanged,
        ] {
            // No client yet: fine, a client lists when it comes.
            let _ = events.send(event);
        }
    }
}

/// Judges a request before it is served: what it names must be granted to the client, and
/// a tool call's arguments must keep to the argument rules. Listings are let through (they
/// are filtered by [`filter_listing`]), and so is what names nothing.
pub(crate) fn admit(
    rules: &Applicable<'_>,
    request: &ServiceRequest,
    snapshot: &Snapshot,
) -> Result<(), Denial> {
    match request {
        ServiceRequest::CallTool(call) => {
            let server = snapshot.tool(&call.name).map(|tool| tool.server());
            rules.judge(Asked::Tool {
                name: &call.name,
                server,
            })?;
            rules.check_arguments(&call.name, &call.arguments)
        }
        ServiceRequest::GetPrompt(get) => {
            let server = crate::prompt_routes(snapshot)
                .remove(&get.name)
                .map(|r| r.server);
            rules.judge(Asked::Prompt {
                name: &get.name,
                server: server.as_deref(),
            })
        }
        ServiceRequest::ReadResource(read) => judge_uri(rules, &read.uri, snapshot),
        ServiceRequest::Subscribe { uri } => judge_uri(rules, uri, snapshot),
        ServiceRequest::Complete(params) => {
            let reference = params.get("ref");
            let text = |key: &str| {
                reference
                    .and_then(|r| r.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            match reference
                .and_then(|r| r.get("type"))
                .and_then(Value::as_str)
            {
                Some("ref/prompt") => {
                    let name = text("name");
                    let server = crate::prompt_routes(snapshot)
                        .remove(name)
                        .map(|r| r.server);
                    rules.judge(Asked::Prompt {
                        name,
                        server: server.as_deref(),
                    })
                }
                Some("ref/resource") => judge_uri(rules, text("uri"), snapshot),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

fn judge_uri(rules: &Applicable<'_>, uri: &str, snapshot: &Snapshot) -> Result<(), Denial> {
    let server = crate::resource_owner(snapshot, uri);
    rules.judge(Asked::Resource {
        uri,
        server: server.as_deref(),
    })
}

/// Which listing a request asks for, to filter its answer by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl Listing {
    pub(crate) fn of(request: &ServiceRequest) -> Option<Listing> {
        match request {
            ServiceRequest::ListTools(_) => Some(Listing::Tools),
            ServiceRequest::ListPrompts(_) => Some(Listing::Prompts),
            ServiceRequest::ListResources(_) => Some(Listing::Resources),
            ServiceRequest::ListResourceTemplates(_) => Some(Listing::Templates),
            _ => None,
        }
    }
}

/// Leaves out of a listing's answer what the client may not see.
pub(crate) fn filter_listing(
    rules: &Applicable<'_>,
    listing: Listing,
    snapshot: &Snapshot,
    answer: &mut Value,
) {
    let (key, name_key) = match listing {
        Listing::Tools => ("tools", "name"),
        Listing::Prompts => ("prompts", "name"),
        Listing::Resources => ("resources", "uri"),
        Listing::Templates => ("resourceTemplates", "uriTemplate"),
    };
    let Some(Value::Array(items)) = answer.get_mut(key) else {
        return;
    };
    let prompts = (listing == Listing::Prompts).then(|| crate::prompt_routes(snapshot));
    items.retain(|item| {
        let name = item.get(name_key).and_then(Value::as_str).unwrap_or("");
        let asked = match listing {
            Listing::Tools => Asked::Tool {
                name,
                server: snapshot.tool(name).map(|tool| tool.server()),
            },
            Listing::Prompts => Asked::Prompt {
                name,
                server: prompts
                    .as_ref()
                    .and_then(|routes| routes.get(name))
                    .map(|route| route.server.as_str()),
            },
            Listing::Resources => Asked::Resource {
                uri: name,
                server: snapshot
                    .resources
                    .iter()
                    .find(|entry| entry.item.uri == name)
                    .map(|entry| entry.server.as_str()),
            },
            Listing::Templates => {
                let Some(entry) = snapshot
                    .resource_templates
                    .iter()
                    .find(|entry| entry.item.uri_template == name)
                else {
                    return false;
                };
                Asked::Template {
                    template: name,
                    server: &entry.server,
                }
            }
        };
        rules.shows(asked)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_server::core::{GrantClaims, Grants};

    fn patterns(texts: &[&str]) -> Vec<Wildcard> {
        texts.iter().map(|text| Wildcard::new(text)).collect()
    }

    fn policy() -> Policy {
        Policy::new(vec![
            Rule {
                name: "readers".into(),
                who: vec![Who::Group("data".into())],
                allow: Grant {
                    servers: patterns(&["docs"]),
                    tools: patterns(&["fs__read_*"]),
                    ..Grant::default()
                },
                deny: Grant::default(),
                arguments: vec![ArgumentRule {
                    tool: Wildcard::new("fs__read_*"),
                    argument: "path".into(),
                    constraint: Constraint::Under("/data".into()),
                }],
            },
            Rule {
                name: "no-secrets".into(),
                who: vec![Who::Anyone],
                allow: Grant::default(),
                deny: Grant {
                    tools: patterns(&["*secret*"]),
                    ..Grant::default()
                },
                arguments: Vec::new(),
            },
        ])
        .with_client_groups([("alice".to_owned(), vec!["data".to_owned()])])
    }

    fn tool<'a>(name: &'a str, server: &'a str) -> Asked<'a> {
        Asked::Tool {
            name,
            server: Some(server),
        }
    }

    #[test]
    fn rules_for_the_client_decide_and_deny_wins() {
        let policy = policy();
        let alice = policy.for_identity(&ClientIdentity::Client(Arc::from("alice")));
        let bob = policy.for_identity(&ClientIdentity::Client(Arc::from("bob")));
        assert_eq!(alice.judge(tool("fs__read_file", "fs")), Ok(()));
        assert_eq!(alice.judge(tool("docs__search", "docs")), Ok(()));
        let denied = alice
            .judge(tool("fs__write_file", "fs"))
            .expect_err("refused");
        assert_eq!(denied.rule, DEFAULT_RULE);
        let denied = alice
            .judge(tool("fs__read_secret", "fs"))
            .expect_err("refused");
        assert_eq!(denied.rule, "no-secrets");
        assert!(!bob.shows(tool("fs__read_file", "fs")));
        // A name no server has is judged by its name alone.
        assert_eq!(
            alice
                .judge(Asked::Tool {
                    name: "docs__gone",
                    server: None
                })
                .expect_err("refused")
                .rule,
            DEFAULT_RULE
        );
    }

    #[test]
    fn oauth_subjects_match_by_claims() {
        let policy = policy();
        let subject = ClientIdentity::Subject {
            issuer: Arc::from("https://issuer"),
            subject: Arc::from("u1"),
            grants: Grants::new(GrantClaims {
                client_id: Some("app".into()),
                scopes: vec!["files".into()],
                groups: vec!["data".into()],
                presented: None,
            }),
        };
        assert!(
            policy
                .for_identity(&subject)
                .shows(tool("fs__read_file", "fs"))
        );
        for (who, expected) in [
            ("scope:files", true),
            ("scope:other", false),
            ("clientId:app", true),
            ("subject:u1", true),
            ("subject:u2", false),
            ("local", false),
        ] {
            let rule = Rule {
                name: "r".into(),
                who: vec![Who::parse(who).expect("a client")],
                allow: Grant {
                    tools: patterns(&["*"]),
                    ..Grant::default()
                },
                deny: Grant::default(),
                arguments: Vec::new(),
            };
            let shown = Policy::new(vec![rule])
                .for_identity(&subject)
                .shows(tool("x", "s"));
            assert_eq!(shown, expected, "{who}");
        }
    }

    #[test]
    fn argument_rules_judge_paths_lexically_and_never_quote_the_value() {
        let policy = policy();
        let alice = policy.for_identity(&ClientIdentity::Client(Arc::from("alice")));
        let call = |path: Value| {
            let mut arguments = Map::new();
            arguments.insert("path".into(), path);
            alice
                .check_arguments("fs__read_file", &arguments)
                .map_err(|denial| denial.what)
        };
        assert_eq!(call(json!("/data/a.txt")), Ok(()));
        assert_eq!(call(json!("/data//./b/c")), Ok(()));
        assert_eq!(call(json!("/data")), Ok(()));
        for hostile in [
            "/data/../etc/passwd",
            "/database",
            "data/x",
            "/data/x\\..\\..",
            "/etc/passwd",
        ] {
            let refused = call(json!(hostile)).expect_err("refused");
            assert!(!refused.contains(hostile), "{refused}");
            assert!(refused.contains("must be a path in `/data`"), "{refused}");
        }
        assert!(
            call(json!(7))
                .expect_err("refused")
                .contains("must be a string")
        );
        assert!(
            alice
                .check_arguments("fs__read_file", &Map::new())
                .expect_err("refused")
                .what
                .contains("missing")
        );
    }

    #[test]
    fn who_is_read_with_a_message_saying_what_is_accepted() {
        assert_eq!(Who::parse("group:ops"), Ok(Who::Group("ops".into())));
        assert!(
            Who::parse("group:")
                .expect_err("refused")
                .contains("names nobody")
        );
        assert!(
            Who::parse("team:x")
                .expect_err("refused")
                .contains("client:NAME")
        );
    }
}
