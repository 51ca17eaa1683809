//! The sandbox an entry asks for, as written in its `sandbox` object, read and checked
//! (unknown keys, bad values) without touching the system.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What an entry says about its sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SandboxChoice {
    /// The entry says nothing: the host's default decides (on for project-scoped servers,
    /// with `--sandbox` or `SWITCHBOARD_SANDBOX=on`; otherwise off).
    #[default]
    Unset,
    /// `sandbox: false` or `"off"`: never sandboxed, whatever the defaults say.
    Off,
    /// `sandbox: true`, `"on"` or an object: this policy.
    On(SandboxPolicy),
}

/// A `sandbox` value that cannot be used: what is wrong, naming the key (`` `sandbox.limits.memory`
/// must be … ``). Reading a configuration makes it an error of the entry, with its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(String);

impl SandboxChoice {
    /// Reads an entry's `sandbox` value; the error says what is wrong, naming the key.
    pub fn from_config(value: &Value) -> Result<SandboxChoice, PolicyError> {
        SandboxChoice::read(value).map_err(PolicyError)
    }

    fn read(value: &Value) -> Result<SandboxChoice, String> {
        match value {
            Value::Null => Ok(SandboxChoice::Unset),
            Value::Bool(false) => Ok(SandboxChoice::Off),
            Value::Bool(true) => Ok(SandboxChoice::On(SandboxPolicy::default())),
            Value::String(text) => match text.as_str() {
                "off" => Ok(SandboxChoice::Off),
                "on" => Ok(SandboxChoice::On(SandboxPolicy::default())),
                other => Err(format!(
                    "`sandbox` must be true, false, \"on\", \"off\" or an object, not {other:?}"
                )),
            },
            Value::Object(object) => SandboxPolicy::from_object(object).map(SandboxChoice::On),
            _ => Err("`sandbox` must be true, false, \"on\", \"off\" or an object".into()),
        }
    }

    /// The choice with the host's default applied: `Unset` becomes `default`'s policy.
    pub fn or_default(&self, default: DefaultSandbox) -> SandboxChoice {
        match (self, default) {
            (SandboxChoice::Unset, DefaultSandbox::On) => {
                SandboxChoice::On(SandboxPolicy::default())
            }
            (other, _) => other.clone(),
        }
    }

    /// The policy to apply, if any.
    pub fn policy(&self) -> Option<&SandboxPolicy> {
        match self {
            SandboxChoice::On(policy) => Some(policy),
            SandboxChoice::Unset | SandboxChoice::Off => None,
        }
    }

    /// How a status line shows it: `off`, `on`, or `partial (what is relaxed)`.
    pub fn describe(&self) -> String {
        match self {
            SandboxChoice::Unset | SandboxChoice::Off => "off".into(),
            SandboxChoice::On(policy) => policy.describe(),
        }
    }
}

/// Whether servers whose entry says nothing are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultSandbox {
    /// Sandboxed with [`SandboxPolicy::default`].
    On,
    /// Started as they are.
    Off,
}

/// Everything a sandboxed server is held to. `Default` is the default policy: system
/// folders, the program's prefix and the working folder read-only, a private temp folder
/// read-write, no network, bounded processes and open files, signals and abstract unix
/// sockets scoped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// Extra paths (templates: `${cwd}`, `${tmp}`, `${home}`, `${prefix}`) beyond the defaults.
    pub filesystem: FilesystemPolicy,
    /// What connections it may open.
    pub network: NetworkPolicy,
    /// Resource limits.
    pub limits: Limits,
    /// Landlock scopes: signals and abstract unix sockets reach only the server's own
    /// processes.
    pub scopes: Scoping,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            filesystem: FilesystemPolicy::default(),
            network: NetworkPolicy::None,
            limits: Limits::default(),
            scopes: Scoping::On,
        }
    }
}

/// Paths beyond the defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FilesystemPolicy {
    /// Readable (and executable) trees.
    pub read: Vec<String>,
    /// Readable and writable trees.
    pub write: Vec<String>,
}

/// What connections a server may open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetworkPolicy {
    /// Its own network namespace: an unconfigured loopback and nothing else.
    None,
    /// Unrestricted.
    Any,
    /// TCP connections to these ports only (any host: Landlock filters by port), no TCP
    /// bind; UDP is not filtered.
    Tcp(Vec<u16>),
}

/// Resource limits; `None` leaves the inherited limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Address space in bytes (RLIMIT_AS).
    pub memory_bytes: Option<u64>,
    /// Processes (a pids cgroup when one can be made, and RLIMIT_NPROC).
    pub processes: Option<u64>,
    /// Open files (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
    /// CPU seconds (RLIMIT_CPU).
    pub cpu_seconds: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: None,
            processes: Some(DEFAULT_PROCESSES),
            open_files: Some(DEFAULT_OPEN_FILES),
            cpu_seconds: None,
        }
    }
}

/// Processes (and threads) a sandboxed server may have by default.
pub const DEFAULT_PROCESSES: u64 = 256;
/// Open files a sandboxed server may have by default.
pub const DEFAULT_OPEN_FILES: u64 = 1024;

/// Whether Landlock's scopes (signals, abstract unix sockets) apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scoping {
    /// Signals and abstract unix sockets reach only the sandbox's own processes.
    On,
    /// Not scoped.
    Off,
}

const KEYS: &[&str] = &["filesystem", "network", "limits", "scopes"];
const FILESYSTEM_KEYS: &[&str] = &["read", "write"];
const LIMIT_KEYS: &[&str] = &["memory", "processes", "openFiles", "cpuSeconds"];

fn unknown_key(object: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "`{at}` has an unknown key `{key}`; the keys are {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
    }
}

impl SandboxPolicy {
    fn from_object(object: &Map<String, Value>) -> Result<SandboxPolicy, String> {
        unknown_key(object, KEYS, "sandbox")?;
        let mut policy = SandboxPolicy::default();
        if let Some(filesystem) = object.get("filesystem") {
            let Value::Object(filesystem) = filesystem else {
                return Err(
                    "`sandbox.filesystem` must be an object with `read` and `write`".into(),
                );
            };
            unknown_key(filesystem, FILESYSTEM_KEYS, "sandbox.filesystem")?;
            policy.filesystem.read = paths(filesystem.get("read"), "sandbox.filesystem.read")?;
            policy.filesystem.write = paths(filesystem.get("write"), "sandbox.filesystem.write")?;
        }
        if let Some(network) = object.get("network") {
            policy.network = network_policy(network)?;
        }
        if let Some(limits) = object.get("limits") {
            let Value::Object(limits) = limits else {
                return Err("`sandbox.limits` must be an object".into());
            };
            unknown_key(limits, LIMIT_KEYS, "sandbox.limits")?;
            let read = |key: &str, slot: &mut Option<u64>| -> Result<(), String> {
                if let Some(value) = limits.get(key) {
                    *slot = limit(value, &format!("sandbox.limits.{key}"))?;
                }
                Ok(())
            };
            read("memory", &mut policy.limits.memory_bytes)?;
            read("processes", &mut policy.limits.processes)?;
            read("openFiles", &mut policy.limits.open_files)?;
            read("cpuSeconds", &mut policy.limits.cpu_seconds)?;
        }
        match object.get("scopes") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => policy.scopes = Scoping::Off,
            Some(_) => return Err("`sandbox.scopes` must be true or false".into()),
        }
        Ok(policy)
    }

    /// `on` when every protection holds as by default, else `partial (…)` naming what is
    /// relaxed.
    pub fn describe(&self) -> String {
        let mut relaxed = Vec::new();
        match &self.network {
            NetworkPolicy::None => {}
            NetworkPolicy::Any => relaxed.push("network any".to_owned()),
            NetworkPolicy::Tcp(ports) => relaxed.push(format!(
                "network tcp {}",
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        }
        if self.limits.processes.is_none() {
            relaxed.push("processes unlimited".into());
        }
        if self.limits.open_files.is_none() {
            relaxed.push("open files unlimited".into());
        }
        if self.scopes == Scoping::Off {
            relaxed.push("signals and abstract sockets not scoped".into());
        }
        if relaxed.is_empty() {
            "on".into()
        } else {
            format!("partial ({})", relaxed.join("; "))
        }
    }
}

fn paths(value: Option<&Value>, at: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(path) if !path.trim().is_empty() => Ok(path.clone()),
                _ => Err(format!("`{at}[{i}]` must be a path")),
            })
            .collect(),
        Some(_) => Err(format!("`{at}` must be a list of paths")),
    }
}

fn network_policy(value: &Value) -> Result<NetworkPolicy, String> {
    const SHAPE: &str = "`sandbox.network` must be \"none\", \"any\" or {\"tcp\": [ports]}";
    match value {
        Value::String(text) if text == "none" => Ok(NetworkPolicy::None),
        Value::String(text) if text == "any" => Ok(NetworkPolicy::Any),
        Value::Object(object) => {
            unknown_key(object, &["tcp"], "sandbox.network")?;
            let Some(Value::Array(ports)) = object.get("tcp") else {
                return Err(SHAPE.into());
            };
            ports
                .iter()
                .enumerate()
                .map(|(i, port)| {
                    port.as_u64()
                        .and_then(|p| u16::try_from(p).ok())
                        .filter(|p| *p > 0)
                        .ok_or_else(|| {
                            format!("`sandbox.network.tcp[{i}]` must be a port from 1 to 65535")
                        })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(NetworkPolicy::Tcp)
        }
        _ => Err(SHAPE.into()),
    }
}

/// A limit: a positive number, text with a unit for memory (`"512M"`, `"2G"`), or
/// `"unlimited"`.
fn limit(value: &Value, at: &str) -> Result<Option<u64>, String> {
    let wrong =
        || format!("`{at}` must be a positive number, text like \"512M\", or \"unlimited\"");
    match value {
        Value::Number(n) => n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(wrong),
        Value::String(text) if text == "unlimited" => Ok(None),
        Value::String(text) => {
            let text = text.trim();
            let (digits, factor) = match text.char_indices().last() {
                Some((at, 'K' | 'k')) => (&text[..at], 1u64 << 10),
                Some((at, 'M' | 'm')) => (&text[..at], 1 << 20),
                Some((at, 'G' | 'g')) => (&text[..at], 1 << 30),
                _ => (text, 1),
            };
            digits
                .trim()
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(factor))
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(wrong)
        }
        _ => Err(wrong()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_form_and_names_unknown_keys() {
        let read = |v: Value| match SandboxChoice::from_config(&v) {
            Ok(choice) => choice.describe(),
            Err(e) => format!("error: {e}"),
        };
        let shown = [
            read(json!(true)),
            read(json!("off")),
            read(json!({"network": {"tcp": [443]}, "limits": {"memory": "512M"}})),
            read(json!({"network": "any", "scopes": false, "limits": {"processes": "unlimited"}})),
            read(json!({"filesystem": {"reed": []}})),
            read(json!({"network": "some"})),
            read(json!({"limits": {"memory": "lots"}})),
        ]
        .join("\n");
        expect_test::expect![[r#"
            on
            off
            partial (network tcp 443)
            partial (network any; processes unlimited; signals and abstract sockets not scoped)
            error: `sandbox.filesystem` has an unknown key `reed`; the keys are `read`, `write`
            error: `sandbox.network` must be "none", "any" or {"tcp": [ports]}
            error: `sandbox.limits.memory` must be a positive number, text like "512M", or "unlimited""#]]
        .assert_eq(&shown);
    }
}
