//! The gateway's side of the audit log: what one call that crosses the gateway leaves in it
//! ([`AuditRecord`]: who, which server and tool, a digest of the arguments, the outcome,
//! the duration) and where the gateway hands it ([`AuditSink`]). The gateway does no file
//! I/O: the CLI's `audit_log` module owns the file, the hash chain, rotation and
//! verification, and implements [`AuditSink`] with a bounded queue, so a call never waits
//! for the disk. Arguments are only digested ([`arguments_digest`]): no argument value is
//! ever handed on, nor a resource URI (it may carry what the client asked for), nor any
//! token.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::core::ClientIdentity;

/// Where the gateway hands each call's record. It must not block: an implementation that
/// cannot keep up drops records and counts them.
pub trait AuditSink: fmt::Debug + Send + Sync {
    /// Takes one record, without waiting.
    fn record(&self, record: AuditRecord);
}

/// Who made a call and under which profile: filled by the gateway now (identity from the
/// transport, profile "default"), by policy and profiles later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditWho {
    /// `stdio`, `bearer` (never the token), `client:NAME` (a named token's name), `peer:ADDR`,
    /// or an OAuth subject.
    pub identity: String,
    /// The OAuth issuer, when the identity is its subject.
    pub issuer: Option<String>,
    /// The profile the call was served under.
    pub profile: String,
}

impl AuditWho {
    /// The audit identity of a client, under the default profile.
    pub fn of(identity: &ClientIdentity) -> AuditWho {
        let (identity, issuer) = match identity {
            ClientIdentity::Local => ("stdio".to_owned(), None),
            ClientIdentity::Token(_) => ("bearer".to_owned(), None),
            ClientIdentity::Client(name) => (format!("client:{name}"), None),
            ClientIdentity::Subject {
                issuer, subject, ..
            } => (subject.to_string(), Some(issuer.to_string())),
            ClientIdentity::Peer(address) => (format!("peer:{address}"), None),
        };
        AuditWho {
            identity,
            issuer,
            profile: "default".to_owned(),
        }
    }

    /// The same client at a profile's endpoint (`None`: the default one, `default`).
    pub fn at_profile(mut self, profile: Option<&str>) -> AuditWho {
        if let Some(profile) = profile {
            profile.clone_into(&mut self.profile);
        }
        self
    }
}

/// How a call ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditOutcome {
    /// A result.
    Ok,
    /// A tool result with `isError` from the server.
    ToolError,
    /// The result guard withheld the answer: a prompt or resource (the client got
    /// [`crate::codes::RESULT_WITHHELD`]) or a tool result (the client got a result with
    /// `isError` saying so).
    Withheld,
    /// A JSON-RPC error with this code.
    Error(i64),
}

/// One call crossing the gateway.
#[derive(Debug, Clone)]
pub struct AuditRecord {
    /// When the gateway received it.
    pub at: SystemTime,
    /// Who called.
    pub who: AuditWho,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'static str,
    /// The server it went to (`None`: no server knew it).
    pub server: Option<String>,
    /// The tool or prompt as the client named it (`None` for a resource).
    pub name: Option<String>,
    /// [`arguments_digest`] of its arguments (for a resource, of `{"uri": …}`).
    pub arguments_digest: String,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// How long the gateway took to answer.
    pub duration: Duration,
}

impl AuditRecord {
    /// The line's fields without `seq`, `prev` and `hash`.
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("time".into(), rfc3339_millis(self.at).into());
        fields.insert("identity".into(), self.who.identity.clone().into());
        if let Some(issuer) = &self.who.issuer {
            fields.insert("issuer".into(), issuer.clone().into());
        }
        fields.insert("profile".into(), self.who.profile.clone().into());
        fields.insert("method".into(), self.method.into());
        fields.insert("server".into(), json!(self.server));
        if let Some(name) = &self.name {
            fields.insert("tool".into(), name.clone().into());
        }
        fields.insert(
            "argumentsDigest".into(),
            self.arguments_digest.clone().into(),
        );
        let outcome = match self.outcome {
            AuditOutcome::Ok => "ok",
            AuditOutcome::ToolError => "tool-error",
            AuditOutcome::Withheld => "withheld",
            AuditOutcome::Error(code) => {
                fields.insert("code".into(), code.into());
                "error"
            }
        };
        fields.insert("outcome".into(), outcome.into());
        let millis = u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX);
        fields.insert("durationMs".into(), millis.into());
        fields
    }
}

/// `sha256:` and the hex SHA-256 of the canonical JSON of `arguments` (keys sorted).
pub fn arguments_digest(arguments: &Value) -> String {
    sha256_text(canonical(arguments).as_bytes())
}

/// Canonical JSON: object keys sorted at every level, no spaces.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for key in keys {
                    out.insert(key.clone(), sorted(&map[key]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn sha256_text(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in digest.iter() {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// `at` as RFC 3339 in UTC with milliseconds, e.g. `2026-01-31T12:00:00.250Z`.
pub fn rfc3339_millis(at: SystemTime) -> String {
    let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        since_epoch.subsec_millis()
    )
}

/// `at` as RFC 3339 in UTC to the second, e.g. `2026-01-31T12:00:00Z`.
pub fn rfc3339_seconds(at: SystemTime) -> String {
    let seconds = at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// The (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_date(days_since_epoch: u64) -> (u64, u64, u64) {
    let shifted = days_since_epoch + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_digest_ignores_key_order() {
        let one = arguments_digest(&json!({"b": 1, "a": {"y": 2, "x": [3, {"k": 1, "j": 2}]}}));
        let two = arguments_digest(&json!({"a": {"x": [3, {"j": 2, "k": 1}], "y": 2}, "b": 1}));
        assert_eq!(one, two);
        assert!(one.starts_with("sha256:") && one.len() == 7 + 64, "{one}");
    }
}
