//! `input-required` (2026-07-28): multi round-trip requests. A server asks the client for
//! input by answering `tools/call` (or `prompts/get`, `resources/read`) with
//! `resultType: "input_required"`, `inputRequests` (elicitation, sampling or roots requests
//! under keys of its choosing) and an opaque `requestState`; the client retries the request
//! with a new id, the answers under the same keys in `inputResponses` and the state echoed.
//!
//! No tool names are assumed: the tools the checker may call (read-only, or named with
//! `--call`) are called with arguments from their schemas, by a client that declares every
//! capability an input request can need, until one answers `input_required`. That answer's
//! shape is judged, then the same call is made again:
//!
//! - by a client that declares no capabilities: it must not be asked for anything (MUST
//!   NOT; a refusal with -32021, or doing without, is fine);
//! - retried without the answers: it SHOULD be asked again (a new `input_required`), not
//!   refused (warning);
//! - retried with an answer to every request (elicitation declined, an empty roots list, a
//!   canned sampling message) and the state: served, or asked again (warning otherwise),
//!   and the same with one answer nobody asked for, which it SHOULD ignore (warning);
//! - retried with answers that are none (a number under every key; `inputResponses:
//!   null`): not served as if answered (warning: validation is a SHOULD);
//! - retried with the state tampered with: not served as if it were genuine (warning:
//!   integrity protection is required only when the state steers what the request does,
//!   which a client cannot see).

use serde_json::{Map, Value, json};
use switchboard_protocol::{meta, methods};

use super::modern::{Answer, Discovered, Headers, Prober};
use super::{ToolSet, allowed};
use crate::catalog::ids;
use crate::raw::modern_meta;
use crate::report::{CheckResult, Evidence, Finding};
use crate::schema::{suggests_duration, valid_arguments};

/// Most tools called while looking for one that asks for input.
const MAX_CANDIDATES: usize = 8;
/// The key of the answer nobody asked for.
const UNREQUESTED_KEY: &str = "switchboard-check-unrequested";
/// The input request kinds, with the client capability each needs.
const KINDS: &[(&str, &str)] = &[
    (methods::ELICITATION_CREATE, "elicitation"),
    (methods::SAMPLING_CREATE_MESSAGE, "sampling"),
    (methods::ROOTS_LIST, "roots"),
];

/// The `_meta` of a client that declares every capability an input request may need, or
/// none.
fn meta_with(capabilities: Value) -> Value {
    let mut fields = modern_meta();
    fields.insert(meta::CLIENT_CAPABILITIES.into(), capabilities);
    Value::Object(fields)
}

fn every_capability() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
}

/// The tools to try, with their arguments.
fn candidates(tools: &ToolSet, prober: &Prober<'_>) -> Vec<(String, Value)> {
    let options = prober.target.options;
    tools
        .tools
        .iter()
        .filter(|t| allowed(t, options) && !suggests_duration(t))
        .filter_map(|t| {
            let given = options.calls.iter().find(|c| c.tool == t.name);
            let arguments = match given {
                Some(call) => call.arguments.clone(),
                None => valid_arguments(&t.input_schema, tools.compiled.get(&t.name)?)?,
            };
            Some((t.name.clone(), arguments))
        })
        .take(MAX_CANDIDATES)
        .collect()
}

fn result_type(answer: &Answer) -> Option<&str> {
    answer.result()?.get("resultType")?.as_str()
}

fn asks(answer: &Answer) -> bool {
    result_type(answer) == Some("input_required")
}

/// A result that finishes the request without a tool error: served.
fn completes(answer: &Answer) -> bool {
    answer.result().is_some_and(|r| {
        r.get("resultType").and_then(Value::as_str) != Some("input_required")
            && r.get("isError") != Some(&Value::Bool(true))
    })
}

/// The kinds of input an `input_required` result asks for, by key.
fn asked_kinds(result: &Value) -> Vec<(String, String)> {
    result
        .get("inputRequests")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(key, request)| {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("(none)");
            (key.clone(), method.to_owned())
        })
        .collect()
}

/// Findings about the shape of an `input_required` result.
fn shape_findings(what: &str, result: &Value, findings: &mut Vec<Finding>) {
    let requests = result.get("inputRequests");
    let state = result.get("requestState");
    if requests.is_none() && state.is_none() {
        findings.push(Finding::error(format!(
            "{what}: `input_required` with neither `inputRequests` nor `requestState` (it MUST carry at least one)"
        )));
    }
    if let Some(state) = state
        && !state.is_string()
    {
        findings.push(Finding::error(format!(
            "{what}: `requestState` is {state}, not a string"
        )));
    }
    match requests {
        None => {}
        Some(Value::Object(requests)) => {
            for (key, request) in requests {
                let method = request.get("method").and_then(Value::as_str);
                if !method.is_some_and(|m| KINDS.iter().any(|(k, _)| *k == m)) {
                    findings.push(Finding::error(format!(
                        "{what}: `inputRequests.{key}` asks for {}, not `elicitation/create`, `sampling/createMessage` or `roots/list`",
                        method.map_or("no `method`".to_owned(), |m| format!("`{m}`"))
                    )));
                }
                if let Some(params) = request.get("params")
                    && !params.is_object()
                {
                    findings.push(Finding::error(format!(
                        "{what}: `inputRequests.{key}.params` is not an object"
                    )));
                }
            }
        }
        Some(other) => findings.push(Finding::error(format!(
            "{what}: `inputRequests` is {other}, not an object of requests by key"
        ))),
    }
    for hint in ["ttlMs", "cacheScope"] {
        if result.get(hint).is_some() {
            findings.push(Finding::warning(format!(
                "{what}: an `input_required` result carries `{hint}`; only `complete` results are cacheable"
            )));
        }
    }
}

/// An answer to each input request, by key.
fn answers(result: &Value) -> Map<String, Value> {
    asked_kinds(result)
        .into_iter()
        .map(|(key, method)| {
            let answer = match method.as_str() {
                methods::ELICITATION_CREATE => json!({"action": "decline"}),
                methods::SAMPLING_CREATE_MESSAGE => json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "switchboard check"},
                    "model": "switchboard-check",
                    "stopReason": "endTurn",
                }),
                methods::ROOTS_LIST => json!({"roots": []}),
                _ => json!({}),
            };
            (key, answer)
        })
        .collect()
}

/// A state that differs from `state` in one character in the middle.
fn tampered(state: &str) -> String {
    let chars: Vec<char> = state.chars().collect();
    if chars.is_empty() {
        return "switchboard-check-tampered".to_owned();
    }
    let middle = chars.len() / 2;
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| match (i == middle, *c) {
            (false, c) => c,
            (true, 'A') => 'B',
            (true, _) => 'A',
        })
        .collect()
}

/// The call being asked about, made again with these extras.
struct Call<'a> {
    tool: &'a str,
    arguments: &'a Value,
}

impl Call<'_> {
    /// The call made again (a new id) as `what`, by a client that declares
    /// `capabilities`, with these fields beside `name` and `arguments`.
    async fn again(
        &self,
        prober: &mut Prober<'_>,
        what: &str,
        capabilities: Value,
        extra: &[(&str, Value)],
    ) -> Answer {
        let params = self.params(meta_with(capabilities), extra);
        prober
            .send(what, methods::TOOLS_CALL, Some(params), Headers::Standard)
            .await
    }

    fn params(&self, meta: Value, extra: &[(&str, Value)]) -> Value {
        let mut params = json!({"name": self.tool, "arguments": self.arguments, "_meta": meta});
        for (key, value) in extra {
            params[*key] = value.clone();
        }
        params
    }
}

pub(crate) async fn run(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    if !discovered.is_some_and(|d| d.declares("tools")) {
        return CheckResult::skip(
            ids::INPUT_REQUIRED,
            "the server declares no `tools` (or `server/discover` failed)",
        );
    }
    let Some(tools) = prober.target.tools else {
        return CheckResult::skip(
            ids::INPUT_REQUIRED,
            "the tool listing failed (see `tools-list`)",
        );
    };
    let (tool, arguments, first) = match find_a_tool_that_asks(prober, tools).await {
        Ok(found) => found,
        Err(reason) => return CheckResult::skip(ids::INPUT_REQUIRED, reason),
    };
    let Some(result) = first.result().cloned() else {
        // `asks` saw a result: not reached.
        return CheckResult::skip(ids::INPUT_REQUIRED, "the `input_required` answer was lost");
    };
    let mut evidence = Evidence::default();
    evidence.exchanges.push(first.exchange);
    let mut findings = Vec::new();
    shape_findings(&format!("`{tool}`"), &result, &mut findings);
    let asked = Asked {
        call: Call {
            tool: &tool,
            arguments: &arguments,
        },
        state: result
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned),
        answered: Value::Object(answers(&result)),
        asks_for_something: !asked_kinds(&result).is_empty(),
        result: &result,
    };
    let mut steps = vec![asked.as_an_undeclared_client(prober).await];
    if asked.asks_for_something {
        steps.push(asked.retried_without_the_answers(prober).await);
    }
    let (answered, served) = asked.retried_with_the_answers(prober).await;
    steps.push(answered);
    if served {
        steps.push(asked.retried_with_an_extra_answer(prober).await);
    }
    if asked.asks_for_something {
        steps.extend(asked.retried_with_non_answers(prober).await);
    }
    if let Some(state) = &asked.state {
        steps.push(asked.retried_with_a_tampered_state(prober, state).await);
    }
    for step in steps {
        findings.extend(step.finding);
        evidence.exchanges.push(step.exchange);
    }
    CheckResult::from_findings(
        ids::INPUT_REQUIRED,
        &findings,
        format!(
            "`{tool}` asks for input well formed, only for what the client declared, and serves the retry"
        ),
        evidence,
    )
}

/// The probe: the candidate tools called by a client that can give any input, until one
/// answers `input_required`; the skip reason when none does.
async fn find_a_tool_that_asks(
    prober: &mut Prober<'_>,
    tools: &ToolSet,
) -> Result<(String, Value, Answer), String> {
    let mut tried = Vec::new();
    for (tool, arguments) in candidates(tools, prober) {
        let call = Call {
            tool: &tool,
            arguments: &arguments,
        };
        let what = format!("call `{tool}` as a client that can give any input");
        let answer = call.again(prober, &what, every_capability(), &[]).await;
        tried.push(format!("`{tool}`"));
        if asks(&answer) {
            return Ok((tool, arguments, answer));
        }
    }
    Err(if tried.is_empty() {
        "no tool the checker may call (read-only with arguments it can derive, or named with --call TOOL ARGS) to see whether it asks for input".to_owned()
    } else {
        format!(
            "no tool the checker called ({}) answered `input_required`; name one that asks for input with --call TOOL ARGS",
            tried.join(", ")
        )
    })
}

/// One more request about the call that asked for input: what was exchanged, and what it
/// showed if it showed a problem.
struct Step {
    exchange: crate::report::Exchange,
    finding: Option<Finding>,
}

/// The call that answered `input_required`, and what the retries send back.
struct Asked<'a> {
    call: Call<'a>,
    /// The `input_required` result.
    result: &'a Value,
    /// Its `requestState`, echoed by the retries.
    state: Option<String>,
    /// An answer to each of its input requests, by key.
    answered: Value,
    /// Whether it has input requests at all (rather than only a state).
    asks_for_something: bool,
}

impl Asked<'_> {
    /// The retry's extra fields: these, and the state when there is one.
    fn with_state(&self, mut extra: Vec<(&'static str, Value)>) -> Vec<(&'static str, Value)> {
        if let Some(state) = &self.state {
            extra.push(("requestState", json!(state)));
        }
        extra
    }

    /// A client that declares nothing must not be asked for anything (MUST NOT).
    async fn as_an_undeclared_client(&self, prober: &mut Prober<'_>) -> Step {
        let tool = self.call.tool;
        let what = format!("call `{tool}` as a client that declares no capabilities");
        let answer = self.call.again(prober, &what, json!({}), &[]).await;
        let asked = if asks(&answer) {
            answer.result().map(asked_kinds).unwrap_or_default()
        } else {
            Vec::new()
        };
        let finding = (!asked.is_empty()).then(|| {
            let kinds: Vec<String> = asked
                .iter()
                .map(|(key, method)| format!("`{method}` (as `{key}`)"))
                .collect();
            Finding::error(format!(
                "{what} was asked for {}: a server MUST NOT ask for input the client did not declare it can give (refuse with -32021 naming the capability, or do without)",
                kinds.join(", ")
            ))
        });
        Step {
            exchange: answer.exchange,
            finding,
        }
    }

    /// A retry that lacks an answer SHOULD be asked again.
    async fn retried_without_the_answers(&self, prober: &mut Prober<'_>) -> Step {
        let what = format!(
            "retry `{}` with the state but without the answers",
            self.call.tool
        );
        let extra = self.with_state(Vec::new());
        let answer = self
            .call
            .again(prober, &what, every_capability(), &extra)
            .await;
        let finding = (!asks(&answer)).then(|| {
            Finding::warning(format!(
                "{what} got {}: a retry that lacks an answer SHOULD be asked again with a new `input_required`",
                answer.describe()
            ))
        });
        Step {
            exchange: answer.exchange,
            finding,
        }
    }

    /// The retry the protocol describes should be served (or asked again); also whether it
    /// was served.
    async fn retried_with_the_answers(&self, prober: &mut Prober<'_>) -> (Step, bool) {
        let what = format!(
            "retry `{}` with an answer to every request and the state",
            self.call.tool
        );
        let extra = self.with_state(vec![("inputResponses", self.answered.clone())]);
        let answer = self
            .call
            .again(prober, &what, every_capability(), &extra)
            .await;
        let served = answer.result().is_some();
        let finding = (!served).then(|| {
            Finding::warning(format!(
                "{what} got {}: the retry the protocol describes should be served (or asked again)",
                answer.describe()
            ))
        });
        let step = Step {
            exchange: answer.exchange,
            finding,
        };
        (step, served)
    }

    /// Unrecognised `inputResponses` entries SHOULD be ignored.
    async fn retried_with_an_extra_answer(&self, prober: &mut Prober<'_>) -> Step {
        let mut with_extra = self.answered.clone();
        with_extra[UNREQUESTED_KEY] = json!({"action": "decline"});
        let what = format!(
            "retry `{}` with an extra answer nobody asked for",
            self.call.tool
        );
        let extra = self.with_state(vec![("inputResponses", with_extra)]);
        let answer = self
            .call
            .again(prober, &what, every_capability(), &extra)
            .await;
        let finding = answer.result().is_none().then(|| {
            Finding::warning(format!(
                "{what} (`{UNREQUESTED_KEY}`) got {}: unrecognised `inputResponses` entries SHOULD be ignored",
                answer.describe()
            ))
        });
        Step {
            exchange: answer.exchange,
            finding,
        }
    }

    /// Answers that are no answers (a number under every key; `null` for them all) SHOULD
    /// not be served as if answered.
    async fn retried_with_non_answers(&self, prober: &mut Prober<'_>) -> Vec<Step> {
        let tool = self.call.tool;
        let numbers: Map<String, Value> = asked_kinds(self.result)
            .into_iter()
            .map(|(key, _)| (key, json!(42)))
            .collect();
        let mut steps = Vec::new();
        for (what, responses) in [
            (
                format!("retry `{tool}` with a number as the answer to every request"),
                Value::Object(numbers),
            ),
            (
                format!("retry `{tool}` with `inputResponses: null`"),
                Value::Null,
            ),
        ] {
            let extra = self.with_state(vec![("inputResponses", responses)]);
            let answer = self
                .call
                .again(prober, &what, every_capability(), &extra)
                .await;
            let finding = completes(&answer).then(|| {
                Finding::warning(format!(
                    "{what} was served as if it had been answered: `inputResponses` SHOULD be validated (a protocol error answered with a JSON-RPC error, or asked again)"
                ))
            });
            steps.push(Step {
                exchange: answer.exchange,
                finding,
            });
        }
        steps
    }

    /// A forged `requestState` should not be served like the genuine one.
    async fn retried_with_a_tampered_state(&self, prober: &mut Prober<'_>, state: &str) -> Step {
        let what = format!(
            "retry `{}` with its `requestState` changed in one character",
            self.call.tool
        );
        let extra = [
            ("inputResponses", self.answered.clone()),
            ("requestState", json!(tampered(state))),
        ];
        let answer = self
            .call
            .again(prober, &what, every_capability(), &extra)
            .await;
        let finding = completes(&answer).then(|| {
            Finding::warning(format!(
                "{what} was served like the genuine one: `requestState` comes back from the client and may be forged; if it steers what the request does, the server MUST integrity-protect it (an HMAC) and reject state that fails verification"
            ))
        });
        Step {
            exchange: answer.exchange,
            finding,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_state_differs_in_one_character() {
        assert_eq!(tampered("abcde"), "abAde");
        assert_eq!(tampered("xxAxx"), "xxBxx");
        assert_eq!(tampered(""), "switchboard-check-tampered");
    }
}
