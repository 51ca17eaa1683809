//! `tools-list`, `pagination`, `tool-names`, `input-schemas` and `no-credentials`: one
//! walk through `tools/list`, page by page, judged five ways.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::Tool;
use switchboard_session::Negotiated;
use switchboard_session::Session;
use switchboard_wire::codes;

use super::{Captured, Outcome, ToolSet, Tools, request};
use crate::catalog::ids;
use crate::report::{CheckResult, Evidence, Finding};
use crate::schema::{compile, schema_problems};
use switchboard_text::credentials::find_credentials;

/// Most pages the walk follows.
const MAX_PAGES: usize = 100;
/// Longest valid tool name.
const MAX_NAME_LEN: usize = 128;
/// A cursor no server hands out.
const INVALID_CURSOR: &str = "switchboard-check/not-a-cursor";

/// One walk through `tools/list`.
pub(crate) struct Walk {
    /// Every request of the walk.
    pub(crate) requests: Vec<Captured>,
    /// Entries in order, with the page they were on (repeated pages left out).
    pub(crate) entries: Vec<(usize, Value)>,
    /// Pagination findings.
    pub(crate) paging: Vec<Finding>,
    /// Why the walk stopped early, when a request failed.
    pub(crate) failure: Option<String>,
}

impl Walk {
    pub(crate) fn pages(&self) -> usize {
        self.requests.len()
    }

    /// The names of the entries that parse, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter_map(|(_, raw)| raw.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect()
    }
}

/// Follows `nextCursor` to the end, with loop and page caps.
pub(crate) async fn walk(session: &Session, timeout: Duration) -> Walk {
    let mut walk = Walk {
        requests: Vec::new(),
        entries: Vec::new(),
        paging: Vec::new(),
        failure: None,
    };
    let mut cursor: Option<String> = None;
    let mut requested: Vec<Option<String>> = Vec::new();
    let mut seen_pages: HashMap<String, usize> = HashMap::new();
    loop {
        if walk.pages() >= MAX_PAGES {
            walk.paging.push(Finding::error(format!(
                "the listing did not end within {MAX_PAGES} pages"
            )));
            return walk;
        }
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        requested.push(cursor.clone());
        let captured = request(session, "tools/list", params, timeout).await;
        let page = walk.pages() + 1;
        let result = match &captured.outcome {
            Outcome::Result(result) => result.clone(),
            _ => {
                walk.failure = Some(format!("page {page}: {}", captured.describe_failure()));
                walk.requests.push(captured);
                return walk;
            }
        };
        walk.requests.push(captured);
        let Some(Value::Array(entries)) = result.get("tools") else {
            walk.failure = Some(format!("page {page}: the result has no `tools` array"));
            return walk;
        };
        let fingerprint = Value::Array(entries.clone()).to_string();
        match seen_pages.get(&fingerprint) {
            Some(earlier) if !entries.is_empty() => walk.paging.push(Finding::error(format!(
                "page {page} repeats page {earlier} entry for entry"
            ))),
            _ => {
                seen_pages.insert(fingerprint, page);
                walk.entries
                    .extend(entries.iter().map(|e| (page, e.clone())));
            }
        }
        match result.get("nextCursor") {
            None | Some(Value::Null) => return walk,
            Some(Value::String(next)) => {
                if requested.contains(&Some(next.clone())) {
                    walk.paging.push(Finding::error(format!(
                        "page {page} hands out cursor {next:?} again, which leads back to a page already fetched (a pagination loop)"
                    )));
                    return walk;
                }
                cursor = Some(next.clone());
            }
            Some(other) => {
                walk.paging.push(Finding::error(format!(
                    "page {page}'s `nextCursor` is {other}, not a string"
                )));
                return walk;
            }
        }
    }
}

fn walk_evidence(walk: &Walk) -> Evidence {
    let mut evidence = Evidence::default();
    for (i, captured) in walk.requests.iter().enumerate().take(3) {
        evidence
            .exchanges
            .push(captured.exchange(format!("tools/list page {}", i + 1)));
    }
    if walk.requests.len() > 3 {
        evidence
            .notes
            .push(format!("{} more pages not shown", walk.requests.len() - 3));
    }
    evidence
}

/// The five listing checks, and the tools for later checks.
pub(crate) async fn run(
    session: &Session,
    negotiated: &Negotiated,
    timeout: Duration,
) -> (Vec<CheckResult>, Tools) {
    let ids_all = [
        ids::TOOLS_LIST,
        ids::PAGINATION,
        ids::TOOL_NAMES,
        ids::INPUT_SCHEMAS,
        ids::NO_CREDENTIALS,
    ];
    if negotiated.capabilities.tools.is_none() {
        let reason = "the server does not declare the `tools` capability";
        let mut results: Vec<CheckResult> = ids_all[..4]
            .iter()
            .map(|id| CheckResult::skip(id, reason))
            .collect();
        results.push(credentials(&[], negotiated));
        return (results, Tools::NotDeclared);
    }
    let walk = walk(session, timeout).await;
    let mut results = Vec::new();

    // tools-list
    let mut findings = Vec::new();
    let mut parsed: Vec<(usize, Tool)> = Vec::new();
    if let Some(failure) = &walk.failure {
        findings.push(Finding::error(format!("`tools/list` failed: {failure}")));
    }
    let mut evidence = walk_evidence(&walk);
    for (page, raw) in &walk.entries {
        match Tool::from_json(raw.clone()) {
            Ok(tool) => parsed.push((*page, tool)),
            Err(detail) => {
                findings.push(Finding::error(format!(
                    "an entry on page {page} is invalid: {detail}"
                )));
                evidence.notes.push(format!(
                    "invalid entry: {}",
                    switchboard_wire::excerpt(raw.to_string().as_bytes(), 300)
                ));
            }
        }
    }
    let listed_ok = walk.failure.is_none();
    results.push(CheckResult::from_findings(
        ids::TOOLS_LIST,
        &findings,
        format!("{} tools in {} page(s)", parsed.len(), walk.pages()),
        evidence,
    ));
    if !listed_ok && parsed.is_empty() {
        let reason = "the tool listing failed (see `tools-list`)";
        for id in &ids_all[1..] {
            results.push(CheckResult::skip(id, reason));
        }
        let failure = walk.failure.clone().unwrap_or_default();
        return (results, Tools::Failed(failure));
    }

    results.push(pagination(session, &walk, timeout).await);
    results.push(names(&parsed));

    // input-schemas
    let mut unique: Vec<Tool> = Vec::new();
    for (_, tool) in &parsed {
        if unique.iter().all(|t| t.name != tool.name) {
            unique.push(tool.clone());
        }
    }
    let mut findings = Vec::new();
    let mut set = ToolSet::default();
    for tool in &unique {
        let raw_schema = tool.raw.get("inputSchema");
        let mut problems = schema_problems(raw_schema, "inputSchema");
        if let Some(output) = tool.raw.get("outputSchema") {
            problems.extend(schema_problems(Some(output), "outputSchema"));
        }
        for problem in &problems {
            findings.push(Finding::error(format!("tool `{}`: {problem}", tool.name)));
        }
        if problems.is_empty()
            && let Ok(compiled) = compile(&tool.input_schema)
        {
            set.compiled.insert(tool.name.clone(), compiled);
        }
    }
    results.push(CheckResult::from_findings(
        ids::INPUT_SCHEMAS,
        &findings,
        format!(
            "{} input schemas are valid JSON Schemas with an object root",
            unique.len()
        ),
        Evidence::default(),
    ));
    results.push(credentials(&unique, negotiated));
    set.tools = unique;
    (results, Tools::Listed(set))
}

async fn pagination(session: &Session, walk: &Walk, timeout: Duration) -> CheckResult {
    let mut findings = walk.paging.clone();
    let mut evidence = walk_evidence(walk);
    let probe = request(
        session,
        "tools/list",
        json!({"cursor": INVALID_CURSOR}),
        timeout,
    )
    .await;
    evidence
        .exchanges
        .push(probe.exchange("tools/list with a cursor the server never handed out"));
    let paginates = walk.pages() > 1;
    match &probe.outcome {
        Outcome::Error(error) if error.code == codes::INVALID_PARAMS => {}
        // A server that never hands out cursors has no pagination to get wrong; how it
        // treats a made-up cursor is noted, not judged.
        Outcome::Error(_) | Outcome::Result(_) if !paginates => evidence.notes.push(
            "the server lists everything on one page and does not reject a made-up cursor (-32602 is a SHOULD for servers that paginate)".into(),
        ),
        Outcome::Error(error) => findings.push(Finding::warning(format!(
            "an invalid cursor was answered with error {} instead of -32602 (Invalid params)",
            error.code
        ))),
        Outcome::Result(_) => findings.push(Finding::warning(
            "an invalid cursor was accepted as if it were valid; it should be rejected with -32602",
        )),
        _ => findings.push(Finding::error(format!(
            "a request with an invalid cursor got {}",
            probe.describe_failure()
        ))),
    }
    let summary = if walk.pages() > 1 {
        format!(
            "{} pages, each cursor new, the last page without one; an invalid cursor gets -32602",
            walk.pages()
        )
    } else {
        "one page, no `nextCursor`".to_owned()
    };
    CheckResult::from_findings(ids::PAGINATION, &findings, summary, evidence)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn names(parsed: &[(usize, Tool)]) -> CheckResult {
    let mut findings = Vec::new();
    let mut first: HashMap<&str, &Tool> = HashMap::new();
    for (_, tool) in parsed {
        match first.get(tool.name.as_str()) {
            Some(earlier) if earlier.raw == tool.raw => findings.push(Finding::warning(format!(
                "`{}` is listed twice with the same definition",
                tool.name
            ))),
            Some(_) => findings.push(Finding::error(format!(
                "two different tools are named `{}`; a client can reach only one of them",
                tool.name
            ))),
            None => {
                first.insert(&tool.name, tool);
            }
        }
        if !valid_name(&tool.name) {
            findings.push(Finding::warning(format!(
                "tool name {:?} is not 1–{MAX_NAME_LEN} characters of A–Z a–z 0–9 _ - .",
                tool.name
            )));
        }
    }
    CheckResult::from_findings(
        ids::TOOL_NAMES,
        &findings,
        format!("{} unique names, all valid", first.len()),
        Evidence::default(),
    )
}

fn strings<'v>(value: &'v Value, path: String, out: &mut Vec<(String, &'v str)>) {
    match value {
        Value::String(s) => out.push((path, s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                strings(item, format!("{path}.{key}"), out);
            }
        }
        _ => {}
    }
}

fn credentials(tools: &[Tool], negotiated: &Negotiated) -> CheckResult {
    let mut texts: Vec<(String, &str)> = Vec::new();
    if let Some(instructions) = &negotiated.instructions {
        texts.push(("server instructions".into(), instructions));
    }
    for tool in tools {
        let mut found = Vec::new();
        for key in [
            "name",
            "title",
            "description",
            "annotations",
            "inputSchema",
            "outputSchema",
        ] {
            if let Some(value) = tool.raw.get(key) {
                strings(value, key.to_owned(), &mut found);
            }
        }
        texts.extend(
            found
                .into_iter()
                .map(|(path, s)| (format!("tool `{}` {path}", tool.name), s)),
        );
    }
    let mut findings = Vec::new();
    for (place, text) in &texts {
        for m in find_credentials(text) {
            findings.push(Finding::error(format!(
                "{place} contains what looks like {}",
                m.describe()
            )));
        }
    }
    CheckResult::from_findings(
        ids::NO_CREDENTIALS,
        &findings,
        format!("{} texts scanned, nothing credential-looking", texts.len()),
        Evidence::default(),
    )
}
