//! The checks' implementations, grouped by what they exercise, and the helpers they share:
//! sending a request with evidence captured, and the facts one check hands the next.

pub(crate) mod calls;
pub(crate) mod cancel;
pub(crate) mod features;
pub(crate) mod handshake;
pub(crate) mod http;
pub(crate) mod http_cancel;
pub(crate) mod http_responses;
pub(crate) mod http_shutdown;
pub(crate) mod input;
pub(crate) mod lifecycle;
pub(crate) mod listen;
pub(crate) mod listing;
pub(crate) mod modern;
pub(crate) mod observed;
pub(crate) mod params;
pub(crate) mod utilities;
pub(crate) mod wire_schema;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_protocol::Tool;
use switchboard_session::{CallOptions, Session, SessionError};
use switchboard_wire::{ErrorObject, RequestId};

use crate::options::Options;
use crate::report::{Exchange, capped};
use crate::schema::Compiled;

/// Largest JSON value kept in evidence, in serialized bytes.
pub(crate) const EVIDENCE_VALUE_BYTES: usize = 4096;

/// What came back for a request.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// A result.
    Result(Value),
    /// A JSON-RPC error.
    Error(ErrorObject),
    /// No answer within the deadline.
    Timeout(Duration),
    /// The transport closed (the server exited).
    Closed(String),
    /// The transport got no answer (an HTTP status without a message, a body over the
    /// limit); what it saw.
    NoAnswer(String),
    /// Anything else the session refused (a malformed result, a forbidden `resultType`).
    Other(String),
}

/// A request sent, with what came back and how long it took.
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) outcome: Outcome,
    pub(crate) elapsed: Duration,
}

impl Captured {
    pub(crate) fn exchange(&self, label: impl Into<String>) -> Exchange {
        let received = match &self.outcome {
            Outcome::Result(result) => json!({"result": capped(result, EVIDENCE_VALUE_BYTES)}),
            Outcome::Error(error) => json!({"error": capped(&json!(error), EVIDENCE_VALUE_BYTES)}),
            Outcome::Timeout(after) => {
                json!({"no_response": format!("no response within {} ms", after.as_millis())})
            }
            Outcome::Closed(reason) => json!({"transport_closed": reason}),
            Outcome::NoAnswer(detail) => json!({"transport_failed": detail}),
            Outcome::Other(detail) => json!({"refused": detail}),
        };
        Exchange {
            label: label.into(),
            sent: Some(json!({
                "method": self.method,
                "params": capped(&self.params, EVIDENCE_VALUE_BYTES),
            })),
            received: Some(received),
            elapsed: Some(self.elapsed),
        }
    }

    /// True when the server did not answer at all (silence or exit).
    pub(crate) fn unanswered(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Timeout(_) | Outcome::Closed(_) | Outcome::NoAnswer(_)
        )
    }

    /// A short description of a non-answer.
    pub(crate) fn describe_failure(&self) -> String {
        match &self.outcome {
            Outcome::Timeout(after) => format!("no response within {} ms", after.as_millis()),
            Outcome::Closed(reason) => {
                format!(
                    "the server exited ({})",
                    reason.lines().next().unwrap_or("")
                )
            }
            Outcome::NoAnswer(detail) => format!("no answer: {detail}"),
            Outcome::Other(detail) => detail.clone(),
            Outcome::Result(_) => "a result".into(),
            Outcome::Error(error) => format!("JSON-RPC error {}: {}", error.code, error.message),
        }
    }
}

/// Sends a request through the session (which adds the era's `_meta`) and captures the
/// outcome. Never fails: every outcome is a value.
pub(crate) async fn request(
    session: &Session,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Captured {
    let options = deadline(timeout);
    let sent = session.request(method, Some(params.clone()), &options);
    capture(method, params, timeout, sent).await
}

/// Like [`request`], but an `input_required` answer is a result, not answered (see
/// [`asks_for_input`]): `input-required` judges those.
pub(crate) async fn request_unanswered(
    session: &Session,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Captured {
    let options = deadline(timeout);
    let sent = session.request_unanswered(method, Some(params.clone()), &options);
    capture(method, params, timeout, sent).await
}

fn deadline(timeout: Duration) -> CallOptions {
    CallOptions {
        timeout: Some(timeout),
        ..CallOptions::default()
    }
}

/// What came back for a request sent, and how long it took.
async fn capture(
    method: &str,
    params: Value,
    timeout: Duration,
    sent: impl std::future::Future<Output = Result<Value, SessionError>>,
) -> Captured {
    let started = Instant::now();
    // The session's deadline applies; this outer one only guards against a bug.
    let outcome = match tokio::time::timeout(timeout + Duration::from_secs(2), sent).await {
        Ok(Ok(result)) => Outcome::Result(result),
        Ok(Err(error)) => outcome_of(error),
        Err(_) => Outcome::Timeout(timeout),
    };
    Captured {
        method: method.to_owned(),
        params,
        outcome,
        elapsed: started.elapsed(),
    }
}

pub(crate) fn outcome_of(error: SessionError) -> Outcome {
    match error {
        SessionError::Rpc { error, .. } => Outcome::Error(error),
        SessionError::Timeout { after, .. } => Outcome::Timeout(after),
        SessionError::Closed { reason, .. } => Outcome::Closed(reason.to_string()),
        SessionError::Transport { error, .. } => Outcome::NoAnswer(error.to_string()),
        other => Outcome::Other(other.to_string()),
    }
}

/// Calls a tool and captures the outcome; an `input_required` answer is a result (see
/// [`asks_for_input`]), not answered here: `input-required` judges those.
pub(crate) async fn call(
    session: &Session,
    tool: &str,
    arguments: &Value,
    timeout: Duration,
) -> Captured {
    let params = json!({"name": tool, "arguments": arguments});
    request_unanswered(session, "tools/call", params, timeout).await
}

/// True for a 2026-07-28 `input_required` result: the server asks the client for input
/// before it answers.
pub(crate) fn asks_for_input(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The tools a server listed, with compiled schemas for those that compile.
#[derive(Default)]
pub(crate) struct ToolSet {
    pub(crate) tools: Vec<Tool>,
    pub(crate) compiled: HashMap<String, Compiled>,
}

impl ToolSet {
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// What the listing established about tools.
pub(crate) enum Tools {
    /// The server does not declare the `tools` capability.
    NotDeclared,
    /// Listing failed; the reason.
    Failed(String),
    /// The tools.
    Listed(ToolSet),
}

impl Tools {
    /// The tool set, or the reason tool checks are skipped.
    pub(crate) fn set(&self) -> Result<&ToolSet, String> {
        match self {
            Tools::Listed(set) => Ok(set),
            Tools::NotDeclared => Err("the server does not declare the `tools` capability".into()),
            Tools::Failed(why) => Err(format!("the tool listing failed (see `tools-list`): {why}")),
        }
    }
}

/// Facts one check hands to later ones.
#[derive(Default)]
pub(crate) struct Facts {
    /// Raw results of successful normal calls, by tool.
    pub(crate) successful_results: Vec<(String, Value)>,
    /// The invalid-arguments probe: the violated field and what came back.
    pub(crate) invalid_probe: Option<(String, Captured)>,
    /// The unknown-tool probe.
    pub(crate) unknown_probe: Option<(String, Captured)>,
    /// Requests the checker cancelled on purpose (excluded from "unanswered").
    pub(crate) cancelled: Vec<RequestId>,
}

/// May the checker call this tool? Only read-only tools and tools the user named.
pub(crate) fn allowed(tool: &Tool, options: &Options) -> bool {
    tool.is_read_only()
        || options.calls.iter().any(|c| c.tool == tool.name)
        || options
            .long_call
            .as_ref()
            .is_some_and(|c| c.tool == tool.name)
}

/// The text of a tool result (its text blocks), or of an error (message and data).
pub(crate) fn error_text(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Result(result) if result.get("isError") == Some(&Value::Bool(true)) => {
            let texts: Vec<&str> = result
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            Some(texts.join("\n"))
        }
        Outcome::Error(error) => Some(match &error.data {
            Some(data) => format!("{} {data}", error.message),
            None => error.message.clone(),
        }),
        _ => None,
    }
}

/// True when `text` names `field`: as a whole token (not inside a longer identifier), and
/// for names of one or two characters only in a delimited form (`"a"`, `'a'`, `` `a` ``,
/// `[a]`, `(a)`, `.a`, `a:` or alone on a line), since prose is full of short words.
pub(crate) fn mentions(text: &str, field: &str) -> bool {
    if field.is_empty() {
        return false;
    }
    if field.chars().count() <= 2 {
        let quoted = [
            format!("\"{field}\""),
            format!("'{field}'"),
            format!("`{field}`"),
            format!("[{field}]"),
            format!("({field})"),
        ];
        if quoted.iter().any(|q| text.contains(q.as_str())) {
            return true;
        }
        return text.lines().any(|line| {
            let line = line.trim();
            line == field
                || line.starts_with(&format!("{field}:"))
                || line.contains(&format!(".{field} "))
                || line.ends_with(&format!(".{field}"))
        });
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(field).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + field.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Milliseconds, for notes.
pub(crate) fn ms(duration: Duration) -> u128 {
    duration.as_millis()
}
