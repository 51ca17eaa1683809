//! `tools-call`, `results-bounded`, `invalid-input`, `unknown-tool` and
//! `errors-actionable`: calls whose arguments come from each tool's own schema, made only
//! to tools annotated read-only or named by the user.

use serde_json::{Value, json};
use switchboard_protocol::CallToolResult;
use switchboard_session::Session;
use switchboard_wire::codes;

use super::{
    Captured, Facts, Outcome, ToolSet, allowed, asks_for_input, call, error_text, mentions, request,
};
use crate::catalog::ids;
use crate::options::Options;
use crate::report::{CheckResult, Evidence, Finding};
use crate::schema::{
    Violation, ViolationKind, suggests_duration, valid_arguments, violating_arguments,
};

/// Derived candidates tried for one successful call.
const MAX_CANDIDATES: usize = 3;
/// Most content blocks a normal result should have.
const MAX_CONTENT_BLOCKS: usize = 1000;
/// The tool name the unknown-tool probe calls.
pub(crate) const UNKNOWN_TOOL: &str = "switchboard-check-no-such-tool";

/// What a successful-looking result is missing, if anything.
fn result_problems(tools: &ToolSet, tool: &str, result: &Value) -> Result<Vec<String>, String> {
    let parsed = CallToolResult::from_json(result).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    if parsed.content_missing {
        problems.push("the result has no `content` array (it is required)".to_owned());
    }
    let declared = tools.get(tool).and_then(|t| t.output_schema.as_ref());
    if let Some(schema) = declared {
        match (&parsed.structured_content, crate::schema::compile(schema)) {
            (None, _) if !parsed.is_error => problems.push(
                "the tool declares an `outputSchema` but the result has no `structuredContent`"
                    .to_owned(),
            ),
            (Some(structured), Ok(compiled)) => {
                if let Some(error) = compiled.error(structured) {
                    problems.push(format!(
                        "`structuredContent` does not match the tool's `outputSchema`: {error}"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(problems)
}

fn is_tool_error(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}

/// What one call's result shows, judged against the tool's declared output.
enum ResultVerdict {
    /// A 2026-07-28 `input_required` answer: the call did not finish.
    AskedForInput,
    /// The result breaks the rules: each problem (or the one reason it cannot be read).
    Broken(Vec<String>),
    /// A well-formed tool error (`isError: true`).
    ToolError,
    Succeeded,
}

fn judge_result(tools: &ToolSet, tool: &str, result: &Value) -> ResultVerdict {
    if asks_for_input(result) {
        return ResultVerdict::AskedForInput;
    }
    match result_problems(tools, tool, result) {
        Err(detail) => ResultVerdict::Broken(vec![detail]),
        Ok(problems) if !problems.is_empty() => ResultVerdict::Broken(problems),
        Ok(_) if is_tool_error(result) => ResultVerdict::ToolError,
        Ok(_) => ResultVerdict::Succeeded,
    }
}

/// `tools-call`'s findings and its summary when they are none.
struct CallsJudged {
    findings: Vec<Finding>,
    summary: String,
}

/// `tools-call` and `results-bounded`: the calls named with `--call`, else one call of a
/// read-only tool with arguments derived from its schema.
pub(crate) async fn successful_call(
    session: &Session,
    tools: &ToolSet,
    options: &Options,
    facts: &mut Facts,
) -> Vec<CheckResult> {
    let mut evidence = Evidence::default();
    for missing in options
        .calls
        .iter()
        .filter(|c| tools.get(&c.tool).is_none())
    {
        evidence.notes.push(format!(
            "--call {} was not made: the server does not list that tool",
            missing.tool
        ));
    }
    let given = CallsMade {
        session,
        tools,
        options,
        facts,
        evidence: &mut evidence,
    };
    let judged = if options.calls.iter().any(|c| tools.get(&c.tool).is_some()) {
        given.the_calls_named().await
    } else {
        match given.one_derived_call().await {
            Some(judged) => judged,
            None => {
                return vec![
                    CheckResult::skip(
                        ids::TOOLS_CALL,
                        "no tool is annotated read-only (with arguments the checker can derive), and none was named with --call TOOL ARGS; the checker never calls a tool that may write",
                    ),
                    CheckResult::skip(ids::RESULTS_BOUNDED, "no successful call was made"),
                ];
            }
        }
    };
    let call_result =
        CheckResult::from_findings(ids::TOOLS_CALL, &judged.findings, judged.summary, evidence);
    vec![call_result, bounded(facts, options)]
}

/// What `tools-call`'s calls need, and where they leave what they saw.
struct CallsMade<'a> {
    session: &'a Session,
    tools: &'a ToolSet,
    options: &'a Options,
    /// Successful results go to `successful_results`, for `results-bounded` and later checks.
    facts: &'a mut Facts,
    evidence: &'a mut Evidence,
}

impl CallsMade<'_> {
    /// Every call named with `--call` whose tool is listed, each judged.
    async fn the_calls_named(self) -> CallsJudged {
        let timeout = self.options.request_timeout;
        let mut findings = Vec::new();
        let mut succeeded = 0;
        for given in self
            .options
            .calls
            .iter()
            .filter(|c| self.tools.get(&c.tool).is_some())
        {
            let tool = &given.tool;
            let captured = call(self.session, tool, &given.arguments, timeout).await;
            self.evidence
                .exchanges
                .push(captured.exchange(format!("call `{tool}` with the arguments given")));
            let Outcome::Result(result) = &captured.outcome else {
                findings.push(Finding::error(format!(
                    "`{tool}`: {}",
                    captured.describe_failure()
                )));
                continue;
            };
            match judge_result(self.tools, tool, result) {
                ResultVerdict::AskedForInput => findings.push(Finding::warning(format!(
                    "`{tool}` asked for input (`input_required`), which `tools-call` does not give, so the call did not finish (`input-required` judges the question)"
                ))),
                ResultVerdict::Broken(problems) => findings.extend(
                    problems
                        .into_iter()
                        .map(|p| Finding::error(format!("`{tool}`: {p}"))),
                ),
                ResultVerdict::ToolError => findings.push(Finding::error(format!(
                    "`{tool}` returned a tool error for the arguments given with --call"
                ))),
                ResultVerdict::Succeeded => {
                    succeeded += 1;
                    self.facts
                        .successful_results
                        .push((tool.clone(), result.clone()));
                }
            }
        }
        CallsJudged {
            findings,
            summary: format!("{succeeded} call(s) named with --call succeeded"),
        }
    }

    /// Up to [`MAX_CANDIDATES`] read-only tools, each called with arguments derived from its
    /// schema, until one succeeds or one breaks the rules; `None` when no tool qualifies.
    async fn one_derived_call(self) -> Option<CallsJudged> {
        let timeout = self.options.request_timeout;
        let candidates: Vec<(&str, Value)> = self
            .tools
            .tools
            .iter()
            .filter(|t| t.is_read_only() && !suggests_duration(t))
            .filter_map(|t| {
                let compiled = self.tools.compiled.get(&t.name)?;
                Some((t.name.as_str(), valid_arguments(&t.input_schema, compiled)?))
            })
            .take(MAX_CANDIDATES)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let mut findings = Vec::new();
        let mut tool_errors = Vec::new();
        let mut asked_for_input = Vec::new();
        let mut done = None;
        for (name, arguments) in candidates {
            let captured = call(self.session, name, &arguments, timeout).await;
            self.evidence.exchanges.push(captured.exchange(format!(
                "call read-only `{name}` with arguments derived from its schema"
            )));
            let result = match &captured.outcome {
                Outcome::Result(result) => result,
                Outcome::Error(_) => {
                    tool_errors.push(name.to_owned());
                    continue;
                }
                _ => {
                    findings.push(Finding::error(format!(
                        "`{name}`: {}",
                        captured.describe_failure()
                    )));
                    break;
                }
            };
            match judge_result(self.tools, name, result) {
                ResultVerdict::AskedForInput => asked_for_input.push(name.to_owned()),
                ResultVerdict::Broken(problems) => {
                    findings.extend(
                        problems
                            .into_iter()
                            .map(|p| Finding::error(format!("`{name}`: {p}"))),
                    );
                    break;
                }
                ResultVerdict::ToolError => tool_errors.push(name.to_owned()),
                ResultVerdict::Succeeded => {
                    self.facts
                        .successful_results
                        .push((name.to_owned(), result.clone()));
                    done = Some(name.to_owned());
                    break;
                }
            }
        }
        if !asked_for_input.is_empty() {
            self.evidence.notes.push(format!(
                "{} asked for input (`input_required`), which `tools-call` does not give (`input-required` judges the question)",
                backticked(&asked_for_input)
            ));
        }
        if done.is_none() && findings.is_empty() && !tool_errors.is_empty() {
            findings.push(Finding::warning(format!(
                "no call succeeded: {} answered the checker's derived arguments with an error (they may not be meaningful for the tool; name a call with --call TOOL ARGS)",
                backticked(&tool_errors)
            )));
        } else if done.is_none() && findings.is_empty() {
            findings.push(Finding::warning(
                "no call finished: every tool the checker called asked for input first (name a call that answers at once with --call TOOL ARGS)",
            ));
        }
        let summary = match &done {
            Some(name) => {
                format!("`{name}` answered a call with arguments derived from its schema")
            }
            None => String::new(),
        };
        Some(CallsJudged { findings, summary })
    }
}

/// Tool names in backticks, joined with commas.
fn backticked(names: &[String]) -> String {
    names
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn bounded(facts: &Facts, options: &Options) -> CheckResult {
    if facts.successful_results.is_empty() {
        return CheckResult::skip(
            ids::RESULTS_BOUNDED,
            "no successful call was made (see `tools-call`)",
        );
    }
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    let mut largest = 0;
    for (tool, result) in &facts.successful_results {
        let size = result.to_string().len();
        largest = largest.max(size);
        evidence
            .notes
            .push(format!("`{tool}`: result of {size} bytes"));
        if size > options.max_result_bytes {
            findings.push(Finding::warning(format!(
                "`{tool}` returned {size} bytes for a normal call; the limit is {} bytes",
                options.max_result_bytes
            )));
        }
        let blocks = result
            .get("content")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if blocks > MAX_CONTENT_BLOCKS {
            findings.push(Finding::warning(format!(
                "`{tool}` returned {blocks} content blocks (more than {MAX_CONTENT_BLOCKS})"
            )));
        }
    }
    CheckResult::from_findings(
        ids::RESULTS_BOUNDED,
        &findings,
        format!(
            "largest result {largest} bytes (limit {})",
            options.max_result_bytes
        ),
        evidence,
    )
}

/// The tool and violation the invalid-input probe uses: tools the checker may call,
/// quick ones first, type violations of required, long-named fields first.
fn pick_violation(tools: &ToolSet, options: &Options) -> Option<(String, Violation)> {
    let mut candidates = Vec::new();
    for tool in &tools.tools {
        if !allowed(tool, options) {
            continue;
        }
        let Some(compiled) = tools.compiled.get(&tool.name) else {
            continue;
        };
        let base = options
            .calls
            .iter()
            .find(|c| c.tool == tool.name)
            .map(|c| c.arguments.clone())
            .or_else(|| valid_arguments(&tool.input_schema, compiled));
        let Some(base) = base else { continue };
        if let Some(violation) = violating_arguments(&tool.input_schema, compiled, &base) {
            let long = suggests_duration(tool);
            let typed = violation.kind == ViolationKind::WrongType;
            candidates.push((long, !typed, tool.name.clone(), violation));
        }
    }
    candidates.sort_by_key(|c| (c.0, c.1));
    candidates
        .into_iter()
        .next()
        .map(|(_, _, name, v)| (name, v))
}

/// What the invalid-input probe saw: the schema-violating call (if a tool allowed one), the
/// unknown-tool call, and whether the server still answered afterwards.
struct InvalidInputSeen {
    /// The tool, the violation and what its call got.
    violating: Option<(String, Violation, Captured)>,
    unknown: Captured,
    /// `None`: it still answers; else what the follow-up got (or that the server exited).
    afterwards: Option<AfterInvalid>,
}

/// How the server was after the invalid calls, when it no longer answered.
enum AfterInvalid {
    /// The follow-up `tools/list` got no result.
    Unanswered(Box<Captured>),
    /// The connection had closed.
    Exited,
}

/// The probe: one call with schema-violating arguments (to a tool the checker may call,
/// quick ones first), one of an unknown tool, then `tools/list` to see the server still
/// answers.
async fn probe_invalid_input(
    session: &Session,
    tools: &ToolSet,
    options: &Options,
) -> InvalidInputSeen {
    let timeout = options.request_timeout;
    let mut violating = None;
    if let Some((tool, violation)) = pick_violation(tools, options) {
        let captured = call(session, &tool, &violation.arguments, timeout).await;
        violating = Some((tool, violation, captured));
    }
    let unknown = call(session, UNKNOWN_TOOL, &json!({}), timeout).await;
    let afterwards = if session.close_reason().is_none() {
        let listed = request(session, "tools/list", json!({}), timeout).await;
        (!matches!(listed.outcome, Outcome::Result(_)))
            .then(|| AfterInvalid::Unanswered(Box::new(listed)))
    } else {
        Some(AfterInvalid::Exited)
    };
    InvalidInputSeen {
        violating,
        unknown,
        afterwards,
    }
}

/// The judgement of `invalid-input` on what the probe saw.
fn judge_invalid_input(seen: &InvalidInputSeen) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    if let Some((tool, violation, captured)) = &seen.violating {
        evidence.exchanges.push(captured.exchange(format!(
            "call `{tool}` with schema-violating arguments: {}",
            violation.how
        )));
        match &captured.outcome {
            Outcome::Result(result) if !is_tool_error(result) => {
                findings.push(Finding::error(format!(
                    "`{tool}` accepted schema-violating arguments ({}) and reported success",
                    violation.how
                )))
            }
            Outcome::Result(_) | Outcome::Error(_) => {}
            _ => findings.push(Finding::error(format!(
                "schema-violating arguments to `{tool}` got {}",
                captured.describe_failure()
            ))),
        }
    }
    let unknown = &seen.unknown;
    evidence.exchanges.push(unknown.exchange(format!(
        "call `{UNKNOWN_TOOL}`, which the server does not list"
    )));
    if unknown.unanswered() || matches!(unknown.outcome, Outcome::Other(_)) {
        findings.push(Finding::error(format!(
            "a call to an unknown tool got {}",
            unknown.describe_failure()
        )));
    }
    match &seen.afterwards {
        None => {}
        Some(AfterInvalid::Unanswered(listed)) => {
            evidence.exchanges.push(
                listed.exchange("tools/list afterwards, to see that the server still answers"),
            );
            findings.push(Finding::error(format!(
                "after the invalid calls the server no longer answers: {}",
                listed.describe_failure()
            )));
        }
        Some(AfterInvalid::Exited) => {
            findings.push(Finding::error("the server exited after the invalid calls"));
        }
    }
    match &seen.violating {
        None if findings.is_empty() => CheckResult::skip(
            ids::INVALID_INPUT,
            "no tool the checker may call has a schema that arguments can violate (name one with --call TOOL ARGS)",
        ),
        Some((tool, violation, _)) => CheckResult::from_findings(
            ids::INVALID_INPUT,
            &findings,
            format!(
                "`{tool}` rejected schema-violating arguments ({}), an unknown tool was answered, the server still answers",
                violation.how
            ),
            evidence,
        ),
        None => CheckResult::from_findings(ids::INVALID_INPUT, &findings, "", evidence),
    }
}

/// `invalid-input`, `unknown-tool` and `errors-actionable`: one probe, three judgements
/// (the latter two also from the facts, which keep the probe's calls).
pub(crate) async fn invalid_input(
    session: &Session,
    tools: &ToolSet,
    options: &Options,
    facts: &mut Facts,
) -> Vec<CheckResult> {
    let seen = probe_invalid_input(session, tools, options).await;
    let invalid = judge_invalid_input(&seen);
    let answered_unknown = !seen.unknown.unanswered();
    facts.invalid_probe = seen
        .violating
        .map(|(_, violation, captured)| (violation.field, captured));
    facts.unknown_probe = Some((UNKNOWN_TOOL.to_owned(), seen.unknown));
    vec![
        invalid,
        unknown_tool(facts, answered_unknown),
        actionable(facts),
    ]
}

fn unknown_tool(facts: &Facts, answered: bool) -> CheckResult {
    let Some((name, captured)) = &facts.unknown_probe else {
        return CheckResult::skip(ids::UNKNOWN_TOOL, "the probe did not run");
    };
    if !answered {
        return CheckResult::skip(
            ids::UNKNOWN_TOOL,
            "the call to an unknown tool was not answered (see `invalid-input`)",
        );
    }
    let mut evidence = Evidence::default();
    evidence
        .exchanges
        .push(captured.exchange(format!("call `{name}`, which the server does not list")));
    match &captured.outcome {
        Outcome::Result(result) if is_tool_error(result) => CheckResult::pass(
            ids::UNKNOWN_TOOL,
            "reported as a tool error (`isError: true`)",
            evidence,
        ),
        Outcome::Error(error) => {
            if error.code != codes::INVALID_PARAMS {
                evidence.notes.push(format!(
                    "the specification's example uses -32602 for unknown tools; this server used {}",
                    error.code
                ));
            }
            CheckResult::pass(
                ids::UNKNOWN_TOOL,
                format!("reported as JSON-RPC error {}", error.code),
                evidence,
            )
        }
        _ => CheckResult::finding(
            ids::UNKNOWN_TOOL,
            format!("a call to the unknown tool `{name}` was reported as a success"),
            evidence,
        ),
    }
}

/// `errors-actionable`: judged only when a call with schema-violating arguments was made
/// (its error is the one that must name a field); the unknown-tool error is judged with it.
fn actionable(facts: &Facts) -> CheckResult {
    let Some((field, invalid)) = &facts.invalid_probe else {
        return CheckResult::skip(
            ids::ERRORS_ACTIONABLE,
            "no call with schema-violating arguments was made, so no error could name a field (see `invalid-input`)",
        );
    };
    let mut findings = Vec::new();
    let mut evidence = Evidence::default();
    let mut judged = Vec::new();
    if let Some(text) = error_text(&invalid.outcome) {
        judged.push(format!(
            "the invalid-arguments error names the field `{field}`"
        ));
        evidence.notes.push(format!(
            "invalid-arguments error: {}",
            switchboard_wire::excerpt(text.as_bytes(), 300)
        ));
        // The server may echo the wrong value back; it does not count as naming the field.
        let wrong = invalid
            .params
            .pointer(&format!(
                "/arguments/{}",
                field.replace('~', "~0").replace('/', "~1")
            ))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let text = if wrong.is_empty() {
            text
        } else {
            text.replace(&wrong, "")
        };
        if !mentions(&text, field) {
            findings.push(Finding::warning(format!(
                "the error for invalid arguments does not name the offending field `{field}`"
            )));
        }
    } else {
        evidence.notes.push(
            "the schema-violating call got no error message (see `invalid-input`), so field naming was not judged".into(),
        );
    }
    if let Some((name, captured)) = &facts.unknown_probe
        && let Some(text) = error_text(&captured.outcome)
    {
        judged.push(format!("the unknown-tool error names `{name}`"));
        evidence.notes.push(format!(
            "unknown-tool error: {}",
            switchboard_wire::excerpt(text.as_bytes(), 300)
        ));
        if !text.contains(name.as_str()) {
            findings.push(Finding::warning(format!(
                "the error for an unknown tool does not name the tool `{name}`"
            )));
        }
    }
    if judged.is_empty() {
        return CheckResult::skip(
            ids::ERRORS_ACTIONABLE,
            "no error message to judge (see `invalid-input`)",
        );
    }
    let summary = if judged.len() == 2 {
        "errors name the offending field and the unknown tool".to_owned()
    } else {
        judged.join("; ")
    };
    CheckResult::from_findings(ids::ERRORS_ACTIONABLE, &findings, summary, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Captured;

    #[test]
    fn captured_unanswered() {
        let captured = Captured {
            method: "tools/call".into(),
            params: json!({}),
            outcome: Outcome::Timeout(std::time::Duration::from_secs(1)),
            elapsed: std::time::Duration::from_secs(1),
        };
        assert!(captured.unanswered());
    }
}
