//! `prompts-resources`: the server's own prompts, resources and completions answer as the
//! specification shapes them. No names are assumed: the first prompt the server lists is
//! fetched (its required arguments given a placeholder value), the first resource it lists
//! is read, a legacy server that declares `resources.subscribe` takes a subscription to it
//! and its end, and one that declares `completions` completes the first argument of that
//! prompt. A 2026-07-28 prompt that asks for input (`input_required`) is noted, not judged
//! (`input-required` judges questions).

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::{Era, methods};
use switchboard_session::{Negotiated, Session};

use super::{Captured, Outcome, asks_for_input, request, request_unanswered};
use crate::catalog::ids;
use crate::report::{CheckResult, Evidence, Finding};

/// The value given to a prompt's required arguments.
const PLACEHOLDER: &str = "switchboard-check";

/// The first entry of a list `capabilities` already read (`prompts`, `resources`).
fn first_entry(lists: &[(String, Captured)], field: &str) -> Option<Value> {
    let (_, captured) = lists.iter().find(|(name, _)| name == field)?;
    match &captured.outcome {
        Outcome::Result(result) => result.get(field)?.as_array()?.first().cloned(),
        _ => None,
    }
}

/// What the check works with: the session, what it negotiated, the lists `capabilities`
/// read, and the request deadline.
pub(crate) struct Features<'a> {
    pub(crate) session: &'a Session,
    pub(crate) negotiated: &'a Negotiated,
    pub(crate) lists: &'a [(String, Captured)],
    pub(crate) timeout: Duration,
}

pub(crate) async fn run(features: Features<'_>) -> CheckResult {
    let Features {
        session,
        negotiated,
        lists,
        timeout,
    } = features;
    let caps = &negotiated.capabilities;
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let mut judged = Vec::new();
    if caps.prompts.is_some()
        && let Some(prompt) = first_entry(lists, "prompts")
        && let Some(name) = prompt.get("name").and_then(Value::as_str)
    {
        let arguments: serde_json::Map<String, Value> = prompt
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|a| a.get("required") == Some(&Value::Bool(true)))
            .filter_map(|a| a.get("name").and_then(Value::as_str))
            .map(|a| (a.to_owned(), json!(PLACEHOLDER)))
            .collect();
        let got = request_unanswered(
            session,
            methods::PROMPTS_GET,
            json!({"name": name, "arguments": arguments}),
            timeout,
        )
        .await;
        let what = format!("`prompts/get` of `{name}`");
        match &got.outcome {
            Outcome::Result(result) if asks_for_input(result) => evidence.notes.push(format!(
                "{what} asked for input first (see `input-required`)"
            )),
            Outcome::Result(result) => {
                prompt_findings(&what, result, &mut findings);
                judged.push(what.clone());
            }
            // The placeholder may be no valid value of a required argument: inconclusive.
            Outcome::Error(_) if !arguments.is_empty() => evidence.notes.push(format!(
                "{what} refused the placeholder `{PLACEHOLDER}` for its required arguments ({}); the prompt's messages were not judged",
                got.describe_failure()
            )),
            _ => findings.push(Finding::error(format!(
                "{what} got {}",
                got.describe_failure()
            ))),
        }
        evidence.exchanges.push(got.exchange(what));
        if caps.completions.is_some()
            && let Some(argument) = prompt
                .get("arguments")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
        {
            let params = json!({
                "ref": {"type": "ref/prompt", "name": name},
                "argument": {"name": argument, "value": ""},
            });
            let completed = request(session, methods::COMPLETION_COMPLETE, params, timeout).await;
            let what = format!("`completion/complete` of `{name}`'s `{argument}`");
            match &completed.outcome {
                Outcome::Result(result) => {
                    let values = result
                        .pointer("/completion/values")
                        .and_then(Value::as_array);
                    if !values.is_some_and(|v| v.iter().all(Value::is_string)) {
                        findings.push(Finding::error(format!(
                            "{what}: the result has no `completion.values` list of strings"
                        )));
                    }
                    judged.push(what.clone());
                }
                _ => findings.push(Finding::error(format!(
                    "{what} got {} although the server declares `completions`",
                    completed.describe_failure()
                ))),
            }
            evidence.exchanges.push(completed.exchange(what));
        }
    }
    if caps.resources.is_some()
        && let Some(resource) = first_entry(lists, "resources")
        && let Some(uri) = resource.get("uri").and_then(Value::as_str)
    {
        let read = request_unanswered(
            session,
            methods::RESOURCES_READ,
            json!({"uri": uri}),
            timeout,
        )
        .await;
        let what = format!("`resources/read` of `{uri}`");
        match &read.outcome {
            Outcome::Result(result) if asks_for_input(result) => evidence.notes.push(format!(
                "{what} asked for input first (see `input-required`)"
            )),
            Outcome::Result(result) => {
                contents_findings(&what, result, &mut findings);
                judged.push(what.clone());
            }
            _ => findings.push(Finding::error(format!(
                "{what}, a resource it lists, got {}",
                read.describe_failure()
            ))),
        }
        evidence.exchanges.push(read.exchange(what));
        let subscribes = caps.resources.as_ref().is_some_and(|r| r.subscribe);
        if negotiated.era == Era::Legacy && subscribes {
            for method in [methods::RESOURCES_SUBSCRIBE, methods::RESOURCES_UNSUBSCRIBE] {
                let answered = request(session, method, json!({"uri": uri}), timeout).await;
                let what = format!("`{method}` of `{uri}`");
                if !matches!(answered.outcome, Outcome::Result(_)) {
                    findings.push(Finding::error(format!(
                        "{what} got {} although the server declares `resources.subscribe`",
                        answered.describe_failure()
                    )));
                }
                judged.push(what.clone());
                evidence.exchanges.push(answered.exchange(what));
            }
        }
    }
    if judged.is_empty() && findings.is_empty() {
        let reason = match evidence.notes.first() {
            Some(note) => note.clone(),
            None => {
                "the server lists no prompt or resource to fetch (or declares neither)".to_owned()
            }
        };
        return CheckResult::skip(ids::PROMPTS_RESOURCES, reason);
    }
    CheckResult::from_findings(
        ids::PROMPTS_RESOURCES,
        &findings,
        format!("{} answered as specified", judged.join(", ")),
        evidence,
    )
}

/// A `prompts/get` result: `messages`, each with a `role` and a `content` block.
fn prompt_findings(what: &str, result: &Value, findings: &mut Vec<Finding>) {
    let Some(messages) = result.get("messages").and_then(Value::as_array) else {
        findings.push(Finding::error(format!(
            "{what}: the result has no `messages` list"
        )));
        return;
    };
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "assistant")) {
            findings.push(Finding::error(format!(
                "{what}: message {} has no `role` of \"user\" or \"assistant\"",
                index + 1
            )));
        }
        if !message
            .get("content")
            .and_then(|c| c.get("type"))
            .is_some_and(Value::is_string)
        {
            findings.push(Finding::error(format!(
                "{what}: message {} has no `content` block with a `type`",
                index + 1
            )));
        }
    }
}

/// A `resources/read` result: non-empty `contents`, each with a `uri` and `text` or `blob`.
fn contents_findings(what: &str, result: &Value, findings: &mut Vec<Finding>) {
    let contents = result.get("contents").and_then(Value::as_array);
    let Some(contents) = contents.filter(|c| !c.is_empty()) else {
        findings.push(Finding::error(format!(
            "{what}: the result has no `contents` (a listed resource reads as at least one)"
        )));
        return;
    };
    for (index, content) in contents.iter().enumerate() {
        let has = |key: &str| content.get(key).is_some_and(Value::is_string);
        if !has("uri") || !(has("text") || has("blob")) {
            findings.push(Finding::error(format!(
                "{what}: contents entry {} lacks a string `uri` and a `text` or `blob`",
                index + 1
            )));
        }
    }
}
