//! `wire-schema`: every message the server sent validates against the JSON schema of the
//! protocol revision the session negotiated (the official conformance suite's
//! `wire-schema-valid`).
//!
//! The revisions' `schema.json` files are vendored (`schemas/`, see its README) and parsed
//! once per process; each definition used is compiled once, lazily, as a small wrapper
//! schema (`{"$ref": "#/$defs/Name", "$defs": …}`) that carries the file's definitions, so
//! only local `$ref`s are resolved and nothing is fetched. What a message is validated
//! against follows the conformance suite:
//!
//! - a request or notification: the definition whose `method` const is its method (e.g.
//!   `ProgressNotification`), else the generic `JSONRPCRequest`/`JSONRPCNotification`;
//! - an error response: the definition for its code where the schema has one (e.g.
//!   2026-07-28's `UnsupportedProtocolVersionError`), else the error envelope;
//! - a result: `InputRequiredResult` when its `resultType` is `input_required` (and the
//!   revision has it), else the result definition of the method of the request it answers
//!   (`XRequest`'s method → `XResult`, read from the schema; e.g. `tools/call` →
//!   `CallToolResult`), then the result envelope (`JSONRPCResultResponse`, or
//!   `JSONRPCResponse` before 2025-11-25). A response to a request whose method is
//!   unknown, or that the schema does not define (an extension, `ping`), gets the envelope
//!   only.
//!
//! Each wrapper declares its file's dialect (draft-07 for 2025-03-26 and 2025-06-18,
//! 2020-12 after), which the `jsonschema` crate follows. Formats are asserted as the suite
//! asserts them (`uri`, `uri-template`; `byte` accepts anything).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use switchboard_session::Negotiated;
use switchboard_wire::excerpt;

use super::EVIDENCE_VALUE_BYTES;
use crate::catalog::ids;
use crate::recorder::Recorder;
use crate::report::{CheckResult, Evidence, Exchange, capped};

/// Where the vendored schemas come from (for the report's notes).
const SCHEMA_SOURCE: &str = "modelcontextprotocol/modelcontextprotocol";

/// A revision's `schema.json`, vendored.
struct VendoredSchema {
    version: &'static str,
    text: &'static str,
}

/// The vendored revisions, oldest first (see `schemas/README.md` for their origin).
const VENDORED: [VendoredSchema; 4] = [
    VendoredSchema {
        version: "2025-03-26",
        text: include_str!("../../schemas/2025-03-26/schema.json"),
    },
    VendoredSchema {
        version: "2025-06-18",
        text: include_str!("../../schemas/2025-06-18/schema.json"),
    },
    VendoredSchema {
        version: "2025-11-25",
        text: include_str!("../../schemas/2025-11-25/schema.json"),
    },
    VendoredSchema {
        version: "2026-07-28",
        text: include_str!("../../schemas/2026-07-28/schema.json"),
    },
];

/// Each vendored revision, parsed on first use.
static REVISIONS: [OnceLock<Result<Revision, SchemaError>>; VENDORED.len()] =
    [const { OnceLock::new() }; VENDORED.len()];

/// Violations described in the report; more are only counted.
const MAX_REPORTED: usize = 10;
/// Violating messages shown whole (capped) in the evidence.
const MAX_SHOWN_MESSAGES: usize = 3;
/// Errors described per message; more are only counted.
const MAX_ERRORS_PER_MESSAGE: usize = 3;
/// Errors counted per message.
const MAX_ERRORS_COUNTED: usize = 100;
/// A value longer than this (as JSON text) is named by its kind in error messages.
const MAX_VALUE_SHOWN: usize = 60;
/// Bytes of a peer-chosen method name in a finding.
const MAX_METHOD_SHOWN: usize = 80;
/// Bytes of an instance path (whose keys the server chose) in a finding.
const MAX_PATH_SHOWN: usize = 160;
/// How deep the closest alternative of an `anyOf`/`oneOf` is followed.
const MAX_ALTERNATIVE_DEPTH: usize = 3;

/// The union definitions, which name no single message.
const UNIONS: [&str; 8] = [
    "ClientRequest",
    "ClientNotification",
    "ClientResult",
    "ClientMessage",
    "ServerRequest",
    "ServerNotification",
    "ServerResult",
    "ServerMessage",
];

/// The `resultType` of the tasks extension's results, validated by the envelope only.
const EXTENSION_RESULT_TYPES: [&str; 1] = ["task"];

/// A vendored schema that cannot be used (a defect of the checker, never of the server).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SchemaError {
    #[error("the vendored {version} schema is not JSON: {reason}")]
    NotJson {
        version: &'static str,
        reason: String,
    },
    #[error("the vendored {version} schema has neither `$defs` nor `definitions`")]
    NoDefinitions { version: &'static str },
    #[error("the vendored {version} schema's `{definition}` does not compile: {reason}")]
    Compile {
        version: &'static str,
        definition: String,
        reason: String,
    },
}

/// A revision's schema, with the tables read from it and the validators compiled so far.
struct Revision {
    version: &'static str,
    /// `$defs` (2020-12) or `definitions` (draft-07).
    defs_key: &'static str,
    /// The file's `$schema`.
    dialect: Value,
    definitions: Value,
    /// Each method's message definition (`notifications/progress` → `ProgressNotification`).
    message_definitions: HashMap<String, String>,
    /// Each request method's result definition (`tools/call` → `CallToolResult`).
    result_definitions: HashMap<String, String>,
    /// Error response definitions by code (`-32022` → `UnsupportedProtocolVersionError`).
    error_definitions: HashMap<i64, String>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Revision {
    fn parse(vendored: &VendoredSchema) -> Result<Revision, SchemaError> {
        let version = vendored.version;
        let mut document: Value =
            serde_json::from_str(vendored.text).map_err(|e| SchemaError::NotJson {
                version,
                reason: e.to_string(),
            })?;
        let defs_key = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let definitions = match document.get_mut(defs_key).map(Value::take) {
            Some(Value::Object(map)) => map,
            _ => return Err(SchemaError::NoDefinitions { version }),
        };
        let dialect = document.get("$schema").cloned().unwrap_or(Value::Null);
        let mut revision = Revision {
            version,
            defs_key,
            dialect,
            definitions: Value::Null,
            message_definitions: HashMap::new(),
            result_definitions: HashMap::new(),
            error_definitions: HashMap::new(),
            validators: Mutex::new(HashMap::new()),
        };
        revision.read_tables(&definitions);
        revision.definitions = Value::Object(definitions);
        Ok(revision)
    }

    /// Reads the method, result and error tables from the definitions: each definition
    /// with a `method` const names that method's message, `XRequest` pairs with `XResult`,
    /// and an `error` whose `allOf` fixes a `code` names that code's response.
    fn read_tables(&mut self, definitions: &Map<String, Value>) {
        for (name, definition) in definitions {
            if UNIONS.contains(&name.as_str()) {
                continue;
            }
            let properties = definition.get("properties");
            let method = properties
                .and_then(|p| p.pointer("/method/const"))
                .and_then(Value::as_str);
            if let Some(method) = method {
                self.message_definitions
                    .insert(method.to_owned(), name.clone());
                if let Some(base) = name.strip_suffix("Request") {
                    let result = format!("{base}Result");
                    if definitions.contains_key(&result) {
                        self.result_definitions.insert(method.to_owned(), result);
                    }
                }
            }
            let error_parts = properties
                .and_then(|p| p.pointer("/error/allOf"))
                .and_then(Value::as_array);
            for part in error_parts.into_iter().flatten() {
                if let Some(code) = part
                    .pointer("/properties/code/const")
                    .and_then(Value::as_i64)
                {
                    self.error_definitions.insert(code, name.clone());
                }
            }
        }
    }

    fn has(&self, definition: &str) -> bool {
        self.definitions.get(definition).is_some()
    }

    /// The first of these definitions the revision has (envelopes were renamed), else the
    /// last.
    fn first_of<'a>(&self, names: &[&'a str]) -> &'a str {
        names
            .iter()
            .copied()
            .find(|n| self.has(n))
            .or(names.last().copied())
            .unwrap_or_default()
    }

    /// The validator of one definition, compiled on first use.
    fn validator(&self, definition: &str) -> Result<Arc<jsonschema::Validator>, SchemaError> {
        let mut validators = self.validators.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(validator) = validators.get(definition) {
            return Ok(validator.clone());
        }
        let compile_error = |reason: String| SchemaError::Compile {
            version: self.version,
            definition: definition.to_owned(),
            reason,
        };
        if !self.has(definition) {
            return Err(compile_error("no such definition".into()));
        }
        let mut wrapper = Map::new();
        if !self.dialect.is_null() {
            wrapper.insert("$schema".into(), self.dialect.clone());
        }
        wrapper.insert(
            "$ref".into(),
            Value::String(format!("#/{}/{definition}", self.defs_key)),
        );
        wrapper.insert(self.defs_key.into(), self.definitions.clone());
        let wrapper = Value::Object(wrapper);
        let built = catch_unwind(AssertUnwindSafe(|| {
            jsonschema::options()
                .should_validate_formats(true)
                .with_format("byte", |_: &str| true)
                .build(&wrapper)
        }));
        let validator = match built {
            Ok(Ok(validator)) => Arc::new(validator),
            Ok(Err(error)) => return Err(compile_error(error.to_string())),
            Err(_) => return Err(compile_error("the validator panicked".into())),
        };
        validators.insert(definition.to_owned(), validator.clone());
        Ok(validator)
    }
}

/// The vendored schema of a protocol version, parsed; `None` when none is vendored.
fn revision(version: &str) -> Option<Result<&'static Revision, SchemaError>> {
    let index = VENDORED.iter().position(|v| v.version == version)?;
    let parsed = REVISIONS[index].get_or_init(|| Revision::parse(&VENDORED[index]));
    Some(parsed.as_ref().map_err(Clone::clone))
}

/// The versions with a vendored schema.
fn vendored_versions() -> String {
    VENDORED
        .iter()
        .map(|v| v.version)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A message that does not validate.
#[derive(Debug, Clone, PartialEq)]
struct Violation {
    /// What the message is (`the result answering \`tools/call\``, `notification \`…\``).
    subject: String,
    /// The definition it failed.
    definition: String,
    /// The first errors, each `at <path>: <message>`.
    errors: Vec<String>,
    /// How many errors there were in all (counted up to [`MAX_ERRORS_COUNTED`]).
    error_count: usize,
}

impl Violation {
    fn text(&self) -> String {
        let mut text = format!(
            "{} ({}): {}",
            self.subject,
            self.definition,
            self.errors.join("; ")
        );
        let more = self.error_count.saturating_sub(self.errors.len());
        if more > 0 {
            text.push_str(&format!(" (and {more} more)"));
        }
        text
    }
}

/// A peer-chosen method name, quoted and cut short.
fn method_shown(method: &str) -> String {
    format!("`{}`", excerpt(method.as_bytes(), MAX_METHOD_SHOWN))
}

/// A value as error messages show it: its JSON when short, else its kind.
fn value_shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_VALUE_SHOWN {
        excerpt(text.as_bytes(), MAX_VALUE_SHOWN)
    } else {
        switchboard_protocol::json_kind(value).to_owned()
    }
}

/// One validation error as `at <path>: <message>`, the path a JSON pointer into the
/// whole message (`prefix` is where the validated part sits in it).
fn describe(error: &jsonschema::ValidationError<'_>, prefix: &str, depth: usize) -> String {
    let path = format!("{prefix}{}", error.instance_path());
    let at = if path.is_empty() {
        "top level".to_owned()
    } else {
        // Its keys are the server's: cut short and made safe to show.
        format!("at {}", excerpt(path.as_bytes(), MAX_PATH_SHOWN))
    };
    let mut text = format!("{at}: {}", error.masked_with(value_shown(error.instance())));
    // For alternatives, the one that came closest (fewest errors) says what is missing.
    let alternatives = match error.kind() {
        jsonschema::error::ValidationErrorKind::AnyOf { context }
        | jsonschema::error::ValidationErrorKind::OneOfNotValid { context } => Some(context),
        _ => None,
    };
    if depth < MAX_ALTERNATIVE_DEPTH
        && let Some(closest) = alternatives
            .into_iter()
            .flatten()
            .filter(|errors| !errors.is_empty())
            .min_by_key(|errors| errors.len())
            .and_then(|errors| errors.first())
    {
        text.push_str(&format!(
            " (closest alternative: {})",
            describe(closest, prefix, depth + 1)
        ));
    }
    text
}

/// Validates `instance` (at `prefix` in its message) against one definition; the errors
/// described, and how many there were.
fn errors_against(
    revision: &Revision,
    definition: &str,
    instance: &Value,
    prefix: &str,
) -> Result<(Vec<String>, usize), SchemaError> {
    let validator = revision.validator(definition)?;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut described = Vec::new();
        let mut count = 0;
        for error in validator.iter_errors(instance).take(MAX_ERRORS_COUNTED) {
            if described.len() < MAX_ERRORS_PER_MESSAGE {
                described.push(describe(&error, prefix, 0));
            }
            count += 1;
        }
        (described, count)
    }));
    Ok(outcome.unwrap_or_else(|_| (vec!["the validator panicked on this message".into()], 1)))
}

/// Validates one message the server sent; `request_method` is the method of the request
/// a response answers, when known.
fn validate_message(
    revision: &Revision,
    message: &Value,
    request_method: Option<&str>,
) -> Result<Option<Violation>, SchemaError> {
    let violation = |subject: String, definition: &str, (errors, count): (Vec<String>, usize)| {
        (count > 0).then(|| Violation {
            subject,
            definition: definition.to_owned(),
            errors,
            error_count: count,
        })
    };
    let answering = |what: &str| match request_method {
        Some(method) => format!("{what} answering {}", method_shown(method)),
        None => format!("{what} answering an unknown request"),
    };
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let is_request = message.get("id").is_some();
        let definition = match revision.message_definitions.get(method) {
            Some(definition) => definition.as_str(),
            None if is_request => "JSONRPCRequest",
            None => "JSONRPCNotification",
        };
        let kind = if is_request {
            "request"
        } else {
            "notification"
        };
        let subject = format!("{kind} {}", method_shown(method));
        let errors = errors_against(revision, definition, message, "")?;
        return Ok(violation(subject, definition, errors));
    }
    if let Some(error) = message.get("error").filter(|e| !e.is_null()) {
        let by_code = error
            .get("code")
            .and_then(Value::as_i64)
            .and_then(|code| revision.error_definitions.get(&code));
        let definition = match by_code {
            Some(definition) => definition.as_str(),
            None => revision.first_of(&["JSONRPCErrorResponse", "JSONRPCError"]),
        };
        let errors = errors_against(revision, definition, message, "")?;
        return Ok(violation(answering("the error"), definition, errors));
    }
    if let Some(result) = message.get("result") {
        let result_type = result.get("resultType").and_then(Value::as_str);
        let specific = match result_type {
            Some("input_required") if revision.has("InputRequiredResult") => {
                Some("InputRequiredResult")
            }
            Some(kind) if EXTENSION_RESULT_TYPES.contains(&kind) => None,
            _ => request_method
                .and_then(|m| revision.result_definitions.get(m))
                .map(String::as_str),
        };
        if let Some(definition) = specific {
            let errors = errors_against(revision, definition, result, "/result")?;
            if let Some(found) = violation(answering("the result"), definition, errors) {
                return Ok(Some(found));
            }
        }
        let envelope = revision.first_of(&["JSONRPCResultResponse", "JSONRPCResponse"]);
        let errors = errors_against(revision, envelope, message, "")?;
        return Ok(violation(answering("the result"), envelope, errors));
    }
    Ok(Some(Violation {
        subject: "a message".into(),
        definition: "JSONRPCMessage".into(),
        errors: vec!["top level: not a request, notification or response".into()],
        error_count: 1,
    }))
}

/// What validating every kept message found.
#[derive(Debug, Default)]
struct Tally {
    validated: usize,
    not_kept: u64,
    violating: usize,
    /// Distinct violation texts in order, with how many messages had each.
    reported: Vec<(String, usize)>,
    /// The first message of each of the first distinct violations, for the evidence.
    shown: Vec<(String, Value)>,
}

impl Tally {
    fn add(&mut self, violation: &Violation, message: Value) {
        self.violating += 1;
        let text = violation.text();
        if let Some((_, count)) = self.reported.iter_mut().find(|(t, _)| *t == text) {
            *count += 1;
            return;
        }
        if self.reported.len() < MAX_REPORTED {
            self.reported.push((text, 1));
        }
        // The first message of each distinct violation.
        if self.shown.len() < MAX_SHOWN_MESSAGES {
            let label = format!("{} ({})", violation.subject, violation.definition);
            self.shown.push((label, message));
        }
    }
}

/// Validates the kept messages of every recorder.
fn validate_all(
    revision: &Revision,
    kept: impl IntoIterator<Item = (Vec<crate::recorder::KeptMessage>, u64)>,
) -> Result<Tally, SchemaError> {
    let mut tally = Tally::default();
    for (messages, not_kept) in kept {
        tally.not_kept += not_kept;
        for kept in messages {
            tally.validated += 1;
            let message: Value = match serde_json::from_str(&kept.text) {
                Ok(message) => message,
                Err(error) => {
                    let violation = Violation {
                        subject: "a message".into(),
                        definition: "JSONRPCMessage".into(),
                        errors: vec![format!("top level: not JSON ({error})")],
                        error_count: 1,
                    };
                    tally.add(&violation, Value::String(kept.text));
                    continue;
                }
            };
            if let Some(violation) =
                validate_message(revision, &message, kept.request_method.as_deref())?
            {
                tally.add(&violation, message);
            }
        }
    }
    Ok(tally)
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

pub(crate) fn run(negotiated: &Negotiated, recorders: &[Arc<Recorder>]) -> CheckResult {
    let version = negotiated.protocol_version.as_str();
    let revision = match revision(version) {
        None => {
            return CheckResult::skip(
                ids::WIRE_SCHEMA,
                format!(
                    "no JSON schema is vendored for protocol version {} (vendored: {})",
                    excerpt(version.as_bytes(), MAX_METHOD_SHOWN),
                    vendored_versions()
                ),
            );
        }
        Some(Err(error)) => return CheckResult::skip(ids::WIRE_SCHEMA, error.to_string()),
        Some(Ok(revision)) => revision,
    };
    let tally = match validate_all(revision, recorders.iter().map(|r| r.kept_messages())) {
        Ok(tally) => tally,
        Err(error) => return CheckResult::skip(ids::WIRE_SCHEMA, error.to_string()),
    };
    judge(revision.version, &tally)
}

fn judge(version: &str, tally: &Tally) -> CheckResult {
    let mut evidence = Evidence::default();
    evidence.notes.push(format!(
        "validated {} against the {version} schema (vendored from {SCHEMA_SOURCE})",
        plural(tally.validated, "message", "messages")
    ));
    if tally.not_kept > 0 {
        evidence.notes.push(format!(
            "{} the server sent {} not validated: over the recorder's caps on kept messages",
            plural(
                usize::try_from(tally.not_kept).unwrap_or(usize::MAX),
                "message",
                "messages"
            ),
            if tally.not_kept == 1 { "was" } else { "were" }
        ));
    }
    let Some((first, _)) = tally.reported.first() else {
        return CheckResult::pass(
            ids::WIRE_SCHEMA,
            format!(
                "{} the server sent {} the {version} schema",
                plural(tally.validated, "message", "messages"),
                if tally.validated == 1 {
                    "matches"
                } else {
                    "match"
                }
            ),
            evidence,
        );
    };
    for (text, count) in &tally.reported {
        let repeated = if *count > 1 {
            format!(" ({count} messages)")
        } else {
            String::new()
        };
        evidence.notes.push(format!("[MUST] {text}{repeated}"));
    }
    let described: usize = tally.reported.iter().map(|(_, count)| count).sum();
    if tally.violating > described {
        evidence.notes.push(format!(
            "{} not described",
            plural(
                tally.violating - described,
                "more violating message",
                "more violating messages"
            )
        ));
    }
    evidence.exchanges = tally
        .shown
        .iter()
        .map(|(label, message)| Exchange {
            label: label.clone(),
            sent: None,
            received: Some(capped(message, EVIDENCE_VALUE_BYTES)),
            elapsed: None,
        })
        .collect();
    let summary = format!(
        "{} of {} do not match the {version} schema: {first}",
        tally.violating,
        plural(tally.validated, "message", "messages"),
    );
    CheckResult::finding(ids::WIRE_SCHEMA, summary, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(version: &str) -> &'static Revision {
        match revision(version) {
            Some(Ok(revision)) => revision,
            Some(Err(error)) => panic!("{error}"),
            None => panic!("no schema for {version}"),
        }
    }

    /// The findings for these messages (each with its request's method), one per line.
    fn findings(version: &str, messages: &[(Value, Option<&str>)]) -> String {
        let revision = schema(version);
        messages
            .iter()
            .map(|(message, method)| {
                match validate_message(revision, message, *method).expect("validates") {
                    Some(violation) => violation.text(),
                    None => "ok".to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_vendored_schema_parses_and_pairs_requests_with_results() {
        let mut shown = Vec::new();
        for vendored in &VENDORED {
            let revision = schema(vendored.version);
            let mut pairs: Vec<String> = revision
                .result_definitions
                .iter()
                .map(|(method, result)| format!("{method} → {result}"))
                .collect();
            pairs.sort();
            let mut errors: Vec<String> = revision
                .error_definitions
                .iter()
                .map(|(code, definition)| format!("{code} → {definition}"))
                .collect();
            errors.sort();
            shown.push(format!(
                "{} ({}, {} methods): {}; errors: {}",
                vendored.version,
                revision.defs_key,
                revision.message_definitions.len(),
                pairs.join(", "),
                if errors.is_empty() {
                    "none".to_owned()
                } else {
                    errors.join(", ")
                }
            ));
        }
        expect_test::expect![[r#"
            2025-03-26 (definitions, 24 methods): completion/complete → CompleteResult, initialize → InitializeResult, prompts/get → GetPromptResult, prompts/list → ListPromptsResult, resources/list → ListResourcesResult, resources/read → ReadResourceResult, resources/templates/list → ListResourceTemplatesResult, roots/list → ListRootsResult, sampling/createMessage → CreateMessageResult, tools/call → CallToolResult, tools/list → ListToolsResult; errors: none
            2025-06-18 (definitions, 25 methods): completion/complete → CompleteResult, elicitation/create → ElicitResult, initialize → InitializeResult, prompts/get → GetPromptResult, prompts/list → ListPromptsResult, resources/list → ListResourcesResult, resources/read → ReadResourceResult, resources/templates/list → ListResourceTemplatesResult, roots/list → ListRootsResult, sampling/createMessage → CreateMessageResult, tools/call → CallToolResult, tools/list → ListToolsResult; errors: none
            2025-11-25 ($defs, 31 methods): completion/complete → CompleteResult, elicitation/create → ElicitResult, initialize → InitializeResult, prompts/get → GetPromptResult, prompts/list → ListPromptsResult, resources/list → ListResourcesResult, resources/read → ReadResourceResult, resources/templates/list → ListResourceTemplatesResult, roots/list → ListRootsResult, sampling/createMessage → CreateMessageResult, tasks/cancel → CancelTaskResult, tasks/get → GetTaskResult, tasks/list → ListTasksResult, tasks/result → GetTaskPayloadResult, tools/call → CallToolResult, tools/list → ListToolsResult; errors: -32042 → URLElicitationRequiredError
            2026-07-28 ($defs, 21 methods): completion/complete → CompleteResult, elicitation/create → ElicitResult, prompts/get → GetPromptResult, prompts/list → ListPromptsResult, resources/list → ListResourcesResult, resources/read → ReadResourceResult, resources/templates/list → ListResourceTemplatesResult, roots/list → ListRootsResult, sampling/createMessage → CreateMessageResult, server/discover → DiscoverResult, subscriptions/listen → SubscriptionsListenResult, tools/call → CallToolResult, tools/list → ListToolsResult; errors: -32020 → HeaderMismatchError, -32021 → MissingRequiredClientCapabilityError, -32022 → UnsupportedProtocolVersionError"#]].assert_eq(&shown.join("\n"));
    }

    #[test]
    fn every_definition_a_message_is_checked_against_compiles() {
        for vendored in &VENDORED {
            let revision = schema(vendored.version);
            let mut names: Vec<&str> = revision
                .message_definitions
                .values()
                .chain(revision.result_definitions.values())
                .chain(revision.error_definitions.values())
                .map(String::as_str)
                .collect();
            names.extend([
                "JSONRPCRequest",
                "JSONRPCNotification",
                revision.first_of(&["JSONRPCErrorResponse", "JSONRPCError"]),
                revision.first_of(&["JSONRPCResultResponse", "JSONRPCResponse"]),
            ]);
            if revision.has("InputRequiredResult") {
                names.push("InputRequiredResult");
            }
            for name in names {
                if let Err(error) = revision.validator(name) {
                    panic!("{error}");
                }
            }
        }
    }

    #[test]
    fn legacy_messages_valid_and_invalid() {
        let messages = [
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "s", "version": "1"}}}),
                Some("initialize"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {}}}),
                Some("initialize"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}},
                    {"name": "bad", "inputSchema": {"type": "string"}}]}}),
                Some("tools/list"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {
                    "content": [{"type": "text", "text": "hi"}], "isError": false}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {"structuredContent": {}}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text"}]}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
                Some("ping"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 5, "result": "yes"}),
                Some("vendor/extension"),
            ),
            (json!({"jsonrpc": "2.0", "id": 5, "result": {}}), None),
            (
                json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32602, "message": "bad"}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 6, "error": {"code": "-32602"}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "t", "progress": 1, "total": 2}}),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progress": "half"}}),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "loud", "data": "x"}}),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "method": "vendor/notice", "params": {"x": 1}}),
                None,
            ),
            (json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}), None),
            (
                json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list", "params": []}),
                None,
            ),
        ];
        expect_test::expect![[r#"
            ok
            the result answering `initialize` (InitializeResult): at /result: "serverInfo" is a required property
            the result answering `tools/list` (ListToolsResult): at /result/tools/1/inputSchema/type: "object" was expected
            ok
            the result answering `tools/call` (CallToolResult): at /result: "content" is a required property
            the result answering `tools/call` (CallToolResult): at /result/content/0: {"type":"text"} is not valid under any of the schemas listed in the 'anyOf' keyword (closest alternative: at /result/content/0: "text" is a required property)
            ok
            the result answering `vendor/extension` (JSONRPCResultResponse): at /result: "yes" is not of type "object"
            ok
            ok
            the error answering `tools/call` (JSONRPCErrorResponse): at /error: "message" is a required property; at /error/code: "-32602" is not of type "integer"
            ok
            notification `notifications/progress` (ProgressNotification): at /params: "progressToken" is a required property; at /params/progress: "half" is not of type "number"
            notification `notifications/message` (LoggingMessageNotification): at /params/level: "loud" is not one of "alert", "critical" or 6 other candidates
            ok
            ok
            request `roots/list` (ListRootsRequest): at /params: [] is not of type "object""#]].assert_eq(&findings("2025-11-25", &messages));
    }

    #[test]
    fn server_chosen_keys_and_values_are_cut_short_and_made_safe() {
        let key = format!("\u{1b}[31m{}", "k".repeat(400));
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "t", "inputSchema": {"type": "object", "properties": {key: "x".repeat(100)}}}]}});
        expect_test::expect![[r#"
            the result answering `tools/list` (ListToolsResult): at /result/tools/0/inputSchema/properties/\u{1b}[31mkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk… (284 more bytes): a string is not of type "object"
            notification `mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm… (120 more bytes)` (JSONRPCNotification): at /params: 5 is not of type "object""#]].assert_eq(&findings(
            "2025-11-25",
            &[
                (message, Some("tools/list")),
                (
                    json!({"jsonrpc": "2.0", "method": "m".repeat(200), "params": 5}),
                    None,
                ),
            ],
        ));
    }

    #[test]
    fn draft_07_revisions_validate_too() {
        let messages = [
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "content": [{"type": "text", "text": "hi"}]}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "hi"}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse"}}),
                None,
            ),
        ];
        expect_test::expect![[r#"
            ok
            the result answering `tools/call` (CallToolResult): at /result/content: "hi" is not of type "array"
            the error answering an unknown request (JSONRPCError): top level: "id" is a required property"#]].assert_eq(&findings("2025-06-18", &messages));
        expect_test::expect![[r#"
            ok
            the result answering `tools/call` (CallToolResult): at /result/content: "hi" is not of type "array"
            the error answering an unknown request (JSONRPCError): top level: "id" is a required property"#]].assert_eq(&findings("2025-03-26", &messages));
    }

    #[test]
    fn modern_messages_valid_and_invalid() {
        let messages = [
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public"}}),
                Some("server/discover"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {}}}),
                Some("server/discover"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 2, "result": {
                    "resultType": "complete", "tools": [], "ttlMs": 5, "cacheScope": "everyone"}}),
                Some("tools/list"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {
                    "content": [{"type": "text", "text": "hi"}]}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {
                    "resultType": "input_required", "requestState": "abc",
                    "inputRequests": {"q": {"method": "elicitation/create", "params": {
                        "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}}}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {
                    "resultType": "input_required", "requestState": 7}}),
                Some("tools/call"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32022, "message": "no",
                    "data": {"requested": "1900-01-01", "supported": ["2026-07-28"]}}}),
                Some("server/discover"),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32022, "message": "no"}}),
                Some("server/discover"),
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {}}}),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 1.5}}}),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
                Some("ping"),
            ),
        ];
        expect_test::expect![[r#"
            ok
            the result answering `server/discover` (DiscoverResult): at /result: "cacheScope" is a required property; at /result: "ttlMs" is a required property
            the result answering `tools/list` (ListToolsResult): at /result/cacheScope: "everyone" is not one of "private" or "public"
            the result answering `tools/call` (CallToolResult): at /result: "resultType" is a required property
            ok
            the result answering `tools/call` (InputRequiredResult): at /result/requestState: 7 is not of type "string"
            ok
            the error answering `server/discover` (UnsupportedProtocolVersionError): at /error: "data" is a required property
            ok
            notification `notifications/subscriptions/acknowledged` (SubscriptionsAcknowledgedNotification): at /params: "notifications" is a required property; at /params/_meta/io.modelcontextprotocol~1subscriptionId: 1.5 is not of types "integer", "string"
            the result answering `ping` (JSONRPCResultResponse): at /result: "resultType" is a required property"#]].assert_eq(&findings("2026-07-28", &messages));
    }

    fn kept(text: &str, request_method: Option<&str>) -> crate::recorder::KeptMessage {
        crate::recorder::KeptMessage {
            text: text.to_owned(),
            request_method: request_method.map(str::to_owned),
        }
    }

    fn shown(result: &CheckResult) -> String {
        let mut lines = vec![format!("{}: {}", result.status.as_str(), result.summary)];
        lines.extend(result.evidence.notes.iter().cloned());
        for exchange in &result.evidence.exchanges {
            lines.push(format!(
                "{}: {}",
                exchange.label,
                exchange.received.clone().unwrap_or(Value::Null)
            ));
        }
        lines.join("\n")
    }

    #[test]
    fn the_check_counts_reports_repeats_once_and_caps_what_it_shows() {
        let good = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let bad = r#"{"jsonrpc":"2.0","id":2,"result":{"isError":true}}"#;
        let mut messages = vec![kept(good, Some("tools/call"))];
        messages.extend((0..4).map(|_| kept(bad, Some("tools/call"))));
        messages.push(kept(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            None,
        ));
        let tally = validate_all(schema("2025-11-25"), [(messages, 2)]).expect("tally");
        expect_test::expect![[r#"
            fail: 5 of 6 messages do not match the 2025-11-25 schema: the result answering `tools/call` (CallToolResult): at /result: "content" is a required property
            validated 6 messages against the 2025-11-25 schema (vendored from modelcontextprotocol/modelcontextprotocol)
            2 messages the server sent were not validated: over the recorder's caps on kept messages
            [MUST] the result answering `tools/call` (CallToolResult): at /result: "content" is a required property (4 messages)
            [MUST] notification `notifications/progress` (ProgressNotification): at /params: "progress" is a required property; at /params: "progressToken" is a required property
            the result answering `tools/call` (CallToolResult): {"jsonrpc":"2.0","id":2,"result":{"isError":true}}
            notification `notifications/progress` (ProgressNotification): {"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#]].assert_eq(&shown(&judge("2025-11-25", &tally)));

        let tally = tally_of("2025-11-25", vec![kept(good, Some("tools/call"))]);
        expect_test::expect![[r#"
            pass: 1 message the server sent matches the 2025-11-25 schema
            validated 1 message against the 2025-11-25 schema (vendored from modelcontextprotocol/modelcontextprotocol)"#]].assert_eq(&shown(&judge("2025-11-25", &tally)));
    }

    fn tally_of(version: &str, messages: Vec<crate::recorder::KeptMessage>) -> Tally {
        validate_all(schema(version), [(messages, 0)]).expect("tally")
    }

    #[test]
    fn at_most_ten_distinct_violations_are_described() {
        let messages: Vec<_> = (0..14)
            .map(|n| {
                kept(
                    &format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":"p{n}"}}}}"#),
                    None,
                )
            })
            .collect();
        let tally = tally_of("2025-11-25", messages);
        assert_eq!(tally.violating, 14);
        assert_eq!(tally.reported.len(), MAX_REPORTED);
        assert_eq!(tally.shown.len(), MAX_SHOWN_MESSAGES);
        let result = judge("2025-11-25", &tally);
        assert_eq!(
            result.evidence.notes.last().map(String::as_str),
            Some("4 more violating messages not described")
        );
    }

    #[test]
    fn a_version_without_a_vendored_schema_is_skipped() {
        assert!(revision("2024-11-05").is_none());
        assert_eq!(
            vendored_versions(),
            "2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28"
        );
    }
}
