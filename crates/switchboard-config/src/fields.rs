//! One entry's fields: each read, expanded and checked on its own, in the spellings of the
//! file's dialect (a misspelt key is named with its nearest spelling; another client's
//! keys are left alone); the first wrong field is the entry's error.

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::entry::{
    EntryError, EraSetting, ListLimits, OAuthSettings, Origin, Provenance, ServerEntry,
    TransportEntry, WorkloadIdentitySource,
};
use crate::variables::{FileFolders, Inputs, UnsetVariable, Variables, expand_tracked};
use crate::{SandboxChoice, ToolFilter, ToolFilterError, ToolPattern};

pub(crate) struct EntryContext<'a> {
    pub(crate) base: &'a Path,
    pub(crate) vars: &'a dyn Variables,
    pub(crate) origin: Origin,
    pub(crate) dialect: Dialect,
    pub(crate) inputs: &'a Inputs,
    pub(crate) folders: &'a FileFolders,
}

/// clients spell differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `mcp.json` and its relatives (Claude, Cursor, VS Code, Gemini).
    Json,
    /// Codex's `config.toml`.
    CodexToml,
}

impl Dialect {
    /// The keys read as the allow list and as the deny list, the common spelling first;
    /// then the other dialects' spellings, which are refused here (a filter silently
    /// ignored would let through tools meant to be left out).
    fn tool_list_keys(self) -> ToolListKeys {
        match self {
            Dialect::Json => ToolListKeys {
                enabled: &["enabledTools", "includeTools"],
                disabled: &["disabledTools", "excludeTools"],
                foreign: &[
                    (
                        "enabled_tools",
                        "Codex's spelling (its config.toml); here write `enabledTools`",
                    ),
                    (
                        "disabled_tools",
                        "Codex's spelling (its config.toml); here write `disabledTools`",
                    ),
                ],
            },
            Dialect::CodexToml => ToolListKeys {
                enabled: &["enabledTools", "enabled_tools"],
                disabled: &["disabledTools", "disabled_tools"],
                foreign: &[
                    (
                        "includeTools",
                        "Gemini's spelling (its JSON settings); here write `enabled_tools`",
                    ),
                    (
                        "excludeTools",
                        "Gemini's spelling (its JSON settings); here write `disabled_tools`",
                    ),
                ],
            },
        }
    }
}

/// The spellings of the tool lists in one dialect.
struct ToolListKeys {
    enabled: &'static [&'static str],
    disabled: &'static [&'static str],
    /// Another dialect's keys, each with what to say about it.
    foreign: &'static [(&'static str, &'static str)],
}

/// The keys an entry may have (besides the dialect's tool-list keys).
const ENTRY_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "disabled",
    "timeout",
    "startupTimeout",
    "era",
    "protocolVersion",
    "maxListPages",
    "maxListItems",
    "maxListBytes",
    "sandbox",
    "clientMetadataUrl",
    "workloadIdentity",
];

/// An entry key that is not one of ours but nearly is (`comand`, `Args`, `startuptimeout`):
/// "unknown key `comand` (did you mean `command`?)". A key far from every one of ours is
/// another client's setting (`alwaysAllow`, `envFile`, …) and is left alone: these files are
/// shared with other clients.
fn misspelt_key(object: &serde_json::Map<String, Value>, dialect: Dialect) -> Option<String> {
    let lists = dialect.tool_list_keys();
    let known: Vec<&str> = ENTRY_KEYS
        .iter()
        .chain(lists.enabled)
        .chain(lists.disabled)
        .chain(lists.foreign.iter().map(|(key, _)| key))
        .copied()
        .collect();
    object.keys().find_map(|key| {
        if known.contains(&key.as_str()) {
            return None;
        }
        let lower = key.to_ascii_lowercase();
        let allowed = if key.chars().count() <= 4 { 1 } else { 2 };
        known
            .iter()
            .map(|candidate| {
                (
                    strsim::osa_distance(&lower, &candidate.to_ascii_lowercase()),
                    *candidate,
                )
            })
            .filter(|(distance, _)| *distance <= allowed)
            .min()
            .map(|(_, candidate)| {
                format!(
                    "unknown key `{}` (did you mean `{candidate}`?)",
                    switchboard_text::peer_text::PeerLine(key)
                )
            })
    })
}

/// Reads one entry: its transport, then its settings, each field checked on its own; the
/// first wrong field is the error.
pub(crate) fn read_entry(
    name: &str,
    value: &Value,
    cx: &EntryContext<'_>,
) -> Result<ServerEntry, EntryError> {
    let fail = |detail: String| EntryError {
        name: name.to_owned(),
        detail,
        origin: cx.origin.clone(),
    };
    let object = value
        .as_object()
        .ok_or_else(|| fail("the entry must be an object".into()))?;
    let reader = EntryReader {
        name,
        object,
        cx,
        provenance: RefCell::new(Provenance::default()),
    };
    if let Some(misspelt) = misspelt_key(object, cx.dialect) {
        return Err(reader.fail(misspelt));
    }
    let transport = reader.transport()?;
    let enabled = reader.enabled()?;
    let list_limits = ListLimits {
        pages: reader.count("maxListPages")?,
        items: reader.count("maxListItems")?,
        bytes: reader.count("maxListBytes")?,
    };
    let expand_field = |names: FieldNames<'_>, text: &str| reader.expand_field(names, text);
    let tool_filter =
        read_tool_filter(object, cx.dialect, &expand_field).map_err(|e| reader.fail(e))?;
    let sandbox = read_sandbox(object.get("sandbox"), &transport).map_err(|e| reader.fail(e))?;
    let era = reader.era()?;
    let oauth = reader.oauth(&transport)?;
    Ok(ServerEntry {
        name: name.to_owned(),
        transport,
        enabled,
        timeout: reader.duration("timeout")?,
        startup_timeout: reader.duration("startupTimeout")?,
        era,
        protocol_version: reader.string("protocolVersion")?,
        list_limits,
        tool_filter,
        sandbox,
        oauth,
        origin: cx.origin.clone(),
        provenance: reader.provenance.into_inner(),
    })
}

/// The `type` values that name a remote server.
const HTTP_TYPES: &[&str] = &["http", "streamable-http", "streamableHttp", "sse"];

/// One entry being read: its fields, and what expansions put in them so far.
struct EntryReader<'a> {
    name: &'a str,
    object: &'a Map<String, Value>,
    cx: &'a EntryContext<'a>,
    provenance: RefCell<Provenance>,
}

impl EntryReader<'_> {
    /// The entry's error with `detail`.
    fn fail(&self, detail: String) -> EntryError {
        EntryError {
            name: self.name.to_owned(),
            detail,
            origin: self.cx.origin.clone(),
        }
    }

    /// Expands `text`, recorded under `field.recorded` and named in errors as
    /// `field.written`.
    fn expand_field(&self, field: FieldNames<'_>, text: &str) -> Result<String, EntryError> {
        let mut substituted = Vec::new();
        let value = expand_tracked(text, self.cx.vars, Some(self.cx.folders), &mut substituted)
            .map_err(|unset| self.fail(self.unset_detail(field.written, unset)))?;
        if value != text {
            let mut provenance = self.provenance.borrow_mut();
            provenance.record(field.recorded, text, substituted);
        }
        Ok(value)
    }

    /// What to say about `field`, which uses a variable that is not set.
    fn unset_detail(&self, field: &str, unset: UnsetVariable) -> String {
        match unset {
            UnsetVariable::Variable(var) if var == "CLAUDE_PROJECT_DIR" => format!(
                "`{field}` uses ${{CLAUDE_PROJECT_DIR}}, which Claude Code sets for the servers \
                 of its own files (`.mcp.json`, `~/.claude.json`); here write \
                 ${{workspaceFolder}} for the project folder, or set it"
            ),
            UnsetVariable::Variable(var) => format!(
                "`{field}` uses ${{{var}}}, which is not set; set it, or write ${{{var}:-default}}"
            ),
            UnsetVariable::Input { id, variable } => {
                let prompt = match self.cx.inputs.descriptions.get(&id) {
                    Some(description) if !description.is_empty() => {
                        format!(" ({description:?} in the file's `inputs`)")
                    }
                    Some(_) => String::new(),
                    None => " (no such id in the file's `inputs`)".into(),
                };
                format!(
                    "`{field}` uses ${{input:{id}}}{prompt}, a value VS Code asks for; \
                     Switchboard reads it from ${variable}, which is not set: set it, \
                     or write the value in the entry as ${{env:VAR}}"
                )
            }
        }
    }

    /// Expands the text of `field`, recorded and named by that one name.
    fn expand(&self, field: &str, text: &str) -> Result<String, EntryError> {
        let names = FieldNames {
            recorded: field,
            written: field,
        };
        self.expand_field(names, text)
    }

    /// A string field, expanded.
    fn string(&self, field: &str) -> Result<Option<String>, EntryError> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => self.expand(field, s).map(Some),
            Some(_) => Err(self.fail(format!("`{field}` must be a string"))),
        }
    }

    /// An object of strings (`env`, `headers`), values expanded; numbers and booleans are
    /// taken as their text.
    fn pairs(&self, field: &str) -> Result<Vec<(String, String)>, EntryError> {
        let map = match self.object.get(field) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(self.fail(format!("`{field}` must be an object of strings"))),
        };
        map.iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), self.expand(&format!("{field}.{k}"), s)?)),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(self.fail(format!("`{field}.{k}` must be a string"))),
            })
            .collect()
    }

    /// A field's text for an error message: as written when it had an expansion, so that
    /// no variable's value is shown.
    fn as_written(&self, field: &str, value: &str) -> String {
        self.provenance
            .borrow()
            .as_written(field)
            .unwrap_or(value)
            .to_owned()
    }

    /// How to reach the server: `command` (a local server) or `url` (a remote one), as
    /// `type` allows.
    fn transport(&self) -> Result<TransportEntry, EntryError> {
        let kind = self.string("type")?;
        let command = self.string("command")?;
        let url = self.string("url")?;
        match (kind.as_deref(), command, url) {
            (None | Some("stdio"), Some(command), None) => self.stdio(command),
            (None, None, Some(url)) => self.http(url),
            (Some(kind), None, Some(url)) if HTTP_TYPES.contains(&kind) => self.http(url),
            (_, Some(_), Some(_)) => {
                Err(self.fail("has both `command` and `url`; keep one".into()))
            }
            (Some(other), _, _) if other != "stdio" && !HTTP_TYPES.contains(&other) => Err(self
                .fail(format!(
                    "unknown `type` \"{}\"; use \"stdio\" or \"http\"",
                    self.as_written("type", other)
                ))),
            _ => {
                Err(self.fail("needs `command` (a local server) or `url` (a remote server)".into()))
            }
        }
    }

    /// A local server: `command`, `args`, `env`, `cwd` (against the file's folder).
    fn stdio(&self, command: String) -> Result<TransportEntry, EntryError> {
        if command.trim().is_empty() {
            return Err(self.fail("`command` is empty".into()));
        }
        let args = match self.object.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => self.expand(&format!("args[{i}]"), s),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(self.fail(format!("`args[{i}]` must be a string"))),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.fail("`args` must be an array of strings".into())),
        };
        let cwd = self.string("cwd")?.map(|cwd| self.cx.base.join(cwd));
        Ok(TransportEntry::Stdio {
            command,
            args,
            env: self.pairs("env")?,
            cwd,
        })
    }

    /// A remote server: an http:// or https:// `url`, and `headers`.
    fn http(&self, url: String) -> Result<TransportEntry, EntryError> {
        let scheme = url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("http" | "https")) {
            return Err(self.fail(format!(
                "`url` {:?} is not an http:// or https:// URL; write it with its scheme, \
                 e.g. \"http://localhost:8080/mcp\"",
                self.as_written("url", &url)
            )));
        }
        Ok(TransportEntry::Http {
            url,
            headers: self.pairs("headers")?,
        })
    }

    /// `clientMetadataUrl` and `workloadIdentity`, on a remote server only.
    fn oauth(&self, transport: &TransportEntry) -> Result<OAuthSettings, EntryError> {
        let client_metadata_url = self.string("clientMetadataUrl")?;
        let workload_identity = self.workload_identity()?;
        let local = matches!(transport, TransportEntry::Stdio { .. });
        for (field, set) in [
            ("clientMetadataUrl", client_metadata_url.is_some()),
            ("workloadIdentity", workload_identity.is_some()),
        ] {
            if local && set {
                return Err(self.fail(format!(
                    "`{field}` is for a remote server's authorization (an entry with `url`); \
                     a local server takes its credentials from `env`"
                )));
            }
        }
        if let Some(url) = &client_metadata_url {
            let path = url
                .strip_prefix("https://")
                .and_then(|rest| rest.split_once('/'))
                .filter(|(host, path)| !host.is_empty() && !path.is_empty());
            if path.is_none() {
                return Err(self.fail(format!(
                    "`clientMetadataUrl` {:?} must be an https:// URL with a path, where the \
                     client's metadata document is served (e.g. \
                     \"https://example.com/switchboard/client.json\")",
                    self.as_written("clientMetadataUrl", url)
                )));
            }
        }
        Ok(OAuthSettings {
            client_metadata_url,
            workload_identity,
        })
    }

    /// `workloadIdentity`: `{"tokenFile": PATH}` or `{"token": TEXT}`, exactly one.
    fn workload_identity(&self) -> Result<Option<WorkloadIdentitySource>, EntryError> {
        const SHAPE: &str = "`workloadIdentity` must be {\"tokenFile\": PATH} (a file the \
                             platform keeps the token in) or {\"token\": \"${VAR}\"}";
        let object = match self.object.get("workloadIdentity") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(object)) => object,
            Some(_) => return Err(self.fail(SHAPE.into())),
        };
        let text = |key: &str| match object.get(key) {
            Some(Value::String(text)) if !text.trim().is_empty() => self
                .expand(&format!("workloadIdentity.{key}"), text)
                .map(Some),
            None => Ok(None),
            Some(_) => Err(self.fail(SHAPE.into())),
        };
        let known = |key: &String| key == "tokenFile" || key == "token";
        if let Some(other) = object.keys().find(|key| !known(key)) {
            return Err(self.fail(format!(
                "unknown key `workloadIdentity.{}`; {SHAPE}",
                switchboard_text::peer_text::PeerLine(other)
            )));
        }
        match (text("tokenFile")?, text("token")?) {
            (Some(file), None) => Ok(Some(WorkloadIdentitySource::File(self.cx.base.join(file)))),
            (None, Some(token)) => Ok(Some(WorkloadIdentitySource::Value(token))),
            _ => Err(self.fail(SHAPE.into())),
        }
    }

    /// `enabled: false` or `disabled: true` turn the entry off.
    fn enabled(&self) -> Result<bool, EntryError> {
        match (self.object.get("enabled"), self.object.get("disabled")) {
            (Some(Value::Bool(false)), _) | (_, Some(Value::Bool(true))) => Ok(false),
            (Some(Value::Bool(true)) | None, Some(Value::Bool(false)) | None) => Ok(true),
            _ => Err(self.fail("`enabled`/`disabled` must be true or false".into())),
        }
    }

    /// A deadline: seconds, or text like `"30s"` ([`parse_duration`]).
    fn duration(&self, field: &str) -> Result<Option<Duration>, EntryError> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(secs) if secs > 0.0 && secs.is_finite() && secs < 86_400.0 => {
                    Ok(Some(Duration::from_secs_f64(secs)))
                }
                _ => Err(self.fail(format!("`{field}` must be a positive number of seconds"))),
            },
            Some(Value::String(s)) => parse_duration(s)
                .map(Some)
                .map_err(|e| self.fail(format!("`{field}`: {e}"))),
            Some(_) => Err(self.fail(format!("`{field}` must be seconds or text like \"30s\""))),
        }
    }

    /// A positive whole number.
    fn count(&self, field: &str) -> Result<Option<usize>, EntryError> {
        let positive = match self.object.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            Some(_) => None,
        };
        match positive {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(self.fail(format!("`{field}` must be a positive whole number"))),
        }
    }

    /// `era`: `"auto"` (or no `era`), `"legacy"` or `"modern"`.
    fn era(&self) -> Result<EraSetting, EntryError> {
        let Some(era) = self.string("era")? else {
            return Ok(EraSetting::Auto);
        };
        match era.as_str() {
            "auto" => Ok(EraSetting::Auto),
            "legacy" => Ok(EraSetting::Legacy),
            "modern" => Ok(EraSetting::Modern),
            _ => Err(self.fail(format!(
                "`era` must be \"auto\", \"legacy\" or \"modern\", not \"{}\"",
                self.as_written("era", &era)
            ))),
        }
    }
}

/// Reads an entry's `sandbox`: only for a local server, and only where a sandbox can be
/// applied (Linux). The error is the entry error's detail.
fn read_sandbox(
    value: Option<&Value>,
    transport: &TransportEntry,
) -> Result<SandboxChoice, String> {
    let Some(value) = value else {
        return Ok(SandboxChoice::Unset);
    };
    let choice = SandboxChoice::from_config(value).map_err(|e| e.to_string())?;
    if let (SandboxChoice::On(_), TransportEntry::Http { .. }) = (&choice, transport) {
        return Err(
            "`sandbox` applies to a local server (`command`); remove it from this `url` entry"
                .into(),
        );
    }
    if let (SandboxChoice::On(_), false) = (&choice, switchboard_sandbox::SUPPORTED) {
        return Err("`sandbox` is supported on Linux only; remove it, or set it to false".into());
    }
    Ok(choice)
}

/// A field's name as provenance records it (the common spelling, which displays use) and
/// as the file wrote it (for errors).
#[derive(Clone, Copy)]
struct FieldNames<'a> {
    recorded: &'a str,
    written: &'a str,
}

/// Reads the entry's allow and deny lists in its dialect's spellings; the error is the
/// entry error's detail. `expand` expands a pattern.
fn read_tool_filter(
    object: &Map<String, Value>,
    dialect: Dialect,
    expand: &dyn Fn(FieldNames<'_>, &str) -> Result<String, EntryError>,
) -> Result<ToolFilter, String> {
    let keys = dialect.tool_list_keys();
    if let Some((key, why)) = keys
        .foreign
        .iter()
        .find(|(key, _)| object.contains_key(*key))
    {
        return Err(format!("`{key}` is {why}"));
    }
    let list = |spellings: &[&str]| -> Result<Option<Vec<ToolPattern>>, String> {
        let given: Vec<&str> = spellings
            .iter()
            .copied()
            .filter(|key| object.get(*key).is_some_and(|v| !v.is_null()))
            .collect();
        let key = match given.as_slice() {
            [] => return Ok(None),
            [key] => *key,
            [first, second, ..] => {
                return Err(format!(
                    "`{first}` and `{second}` are the same list; keep one"
                ));
            }
        };
        let Some(Value::Array(items)) = object.get(key) else {
            return Err(format!("`{key}` must be a list of tool names or patterns"));
        };
        if items.len() > ToolFilter::MAX_PATTERNS {
            return Err(format!(
                "`{key}` has {} patterns; at most {} are allowed",
                items.len(),
                ToolFilter::MAX_PATTERNS
            ));
        }
        let patterns = items.iter().enumerate().map(|(i, item)| {
            let Value::String(text) = item else {
                return Err(format!("`{key}[{i}]` must be a string"));
            };
            let recorded = format!("{}[{i}]", spellings[0]);
            let written = format!("{key}[{i}]");
            let names = FieldNames {
                recorded: &recorded,
                written: &written,
            };
            let text = expand(names, text).map_err(|e| e.detail)?;
            ToolPattern::new(&text).map_err(|e| match e {
                ToolFilterError::EmptyPattern => format!("`{key}[{i}]` is empty"),
                other => format!("`{key}[{i}]`: {other}"),
            })
        });
        patterns.collect::<Result<Vec<_>, _>>().map(Some)
    };
    let enabled = list(keys.enabled)?;
    let disabled = list(keys.disabled)?.unwrap_or_default();
    ToolFilter::new(enabled, disabled).map_err(|e| e.to_string())
}

/// Parses `"500ms"`, `"30s"`, `"2m"`, `"1h"` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| DurationError::NotADuration {
        text: text.to_owned(),
    })?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                unit: other.to_owned(),
                text: text.to_owned(),
            });
        }
    };
    if !(secs > 0.0 && secs.is_finite() && secs < 86_400.0 * 7.0) {
        return Err(DurationError::OutOfRange {
            text: text.to_owned(),
        });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Text that [`parse_duration`] does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// No number where it starts.
    #[error("`{text}` is not a duration like 30s, 500ms or 2m")]
    NotADuration {
        /// The text (trimmed).
        text: String,
    },
    /// A unit other than ms, s, m or h.
    #[error("unknown unit `{unit}` in `{text}`; use ms, s, m or h")]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The text (trimmed).
        text: String,
    },
    /// Not above zero, or a week or more.
    #[error("`{text}` is out of range")]
    OutOfRange {
        /// The text (trimmed).
        text: String,
    },
}
