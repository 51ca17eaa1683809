//! `param-headers` (2026-07-28): tool parameters mirrored into `Mcp-Param-{Name}` headers.
//!
//! Over every transport the raw `tools/list` (read here, not through the session: the HTTP
//! client leaves tools with invalid annotations out of what it hands on) is read for
//! `x-mcp-header` annotations, each of which must be a non-empty RFC 9110 token, unique
//! case-insensitively within its schema, on a `string`, `integer` or `boolean` property
//! reached from the root through `properties` alone; a tool with an invalid one is dropped
//! by HTTP clients, which the specification requires of them. Over HTTP the server's side
//! is probed too: a `tools/call` of a tool the checker may call, with a value for an
//! annotated parameter, sent without its header and with a wrong value, must get 400 with
//! -32020 before the tool runs, and so must one whose header is a Base64 sentinel that is
//! not Base64; the value in the sentinel form, and a value that only looks like the start
//! of one (taken literally), must be served; and a `tools/call` of a tool no server has,
//! its `Mcp-Name` in the Base64 sentinel form, must be decoded (answered as an unknown
//! tool), not refused as a mismatch.

use serde_json::{Map, Value, json};
use switchboard_protocol::headers::{MAX_SAFE_INTEGER, is_token_byte};
use switchboard_protocol::{MODERN_VERSION, error_codes, methods};

use super::modern::{
    Discovered, Headers, MAX_PAGES, NO_SUCH_TOOL, Prober, accepted_param_headers, refusal_findings,
    standard_headers,
};
use super::{allowed, ms};
use crate::catalog::{Transport, ids};
use crate::raw::modern_meta;
use crate::report::{CheckResult, Evidence, Finding};
use crate::schema::{suggests_duration, valid_arguments};

const ANNOTATION: &str = "x-mcp-header";

/// One annotation that is not valid, and why.
#[derive(Debug, PartialEq)]
pub(crate) struct BadAnnotation {
    /// Where: a JSON pointer into the input schema.
    pub(crate) at: String,
    pub(crate) why: String,
}

/// Every invalid `x-mcp-header` in an input schema.
pub(crate) fn bad_annotations(schema: &Value) -> Vec<BadAnnotation> {
    let mut bad = Vec::new();
    let mut names: Vec<String> = Vec::new();
    walk(schema, "", true, &mut names, &mut bad);
    bad
}

/// Visits `value` at `pointer`; `reachable` while only `properties` chains led here.
fn walk(
    value: &Value,
    pointer: &str,
    reachable: bool,
    names: &mut Vec<String>,
    bad: &mut Vec<BadAnnotation>,
) {
    match value {
        Value::Object(object) => {
            if let Some(annotation) = object.get(ANNOTATION) {
                judge(object, annotation, pointer, reachable, names, bad);
            }
            for (key, child) in object {
                if key == ANNOTATION {
                    continue;
                }
                if key == "properties"
                    && reachable
                    && let Value::Object(properties) = child
                {
                    for (name, definition) in properties {
                        let at = format!("{pointer}/properties/{}", escape(name));
                        walk(definition, &at, true, names, bad);
                    }
                    continue;
                }
                walk(
                    child,
                    &format!("{pointer}/{}", escape(key)),
                    false,
                    names,
                    bad,
                );
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, &format!("{pointer}/{index}"), false, names, bad);
            }
        }
        _ => {}
    }
}

fn judge(
    definition: &Map<String, Value>,
    annotation: &Value,
    pointer: &str,
    reachable: bool,
    names: &mut Vec<String>,
    bad: &mut Vec<BadAnnotation>,
) {
    let mut say = |why: String| {
        bad.push(BadAnnotation {
            at: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.to_owned()
            },
            why,
        })
    };
    if pointer.is_empty() {
        say("the schema's root is not a parameter".to_owned());
        return;
    }
    if !reachable {
        say("not reached from the root through `properties` alone (items, composition, conditionals and `$ref` are not allowed)".to_owned());
    }
    let Value::String(name) = annotation else {
        say(format!("the value {annotation} is not a string"));
        return;
    };
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        say(format!(
            "{name:?} is not a header token (RFC 9110 `tchar`s only)"
        ));
    } else if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        say(format!(
            "{name:?} is used twice (names are case-insensitive)"
        ));
    } else {
        names.push(name.clone());
    }
    match definition.get("type").and_then(Value::as_str) {
        Some("string" | "boolean") => {}
        Some("integer") => {
            let beyond = |key: &str, outside: fn(i64) -> bool| {
                definition
                    .get(key)
                    .and_then(Value::as_i64)
                    .is_some_and(outside)
            };
            if beyond("maximum", |m| m > MAX_SAFE_INTEGER)
                || beyond("minimum", |m| m < -MAX_SAFE_INTEGER)
            {
                say("an integer whose bounds pass ±(2^53−1)".to_owned());
            }
        }
        Some(other) => say(format!(
            "on a property of type `{other}` (only string, integer and boolean may be headers)"
        )),
        None => say(
            "on a property without one `type` (only string, integer and boolean may be headers)"
                .to_owned(),
        ),
    }
}

/// A JSON pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The raw `tools/list`, page by page (the entries as sent).
async fn raw_tools(prober: &mut Prober<'_>, evidence: &mut Evidence) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let what = format!("`tools/list` page {page}, as sent");
        let answer = prober.standard(&what, methods::TOOLS_LIST, params).await;
        if page == 1 {
            evidence.exchanges.push(answer.exchange.clone());
        }
        let Some(result) = answer.result() else {
            return Err(format!("{what} got {}", answer.describe()));
        };
        tools.extend(
            result
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            _ => return Ok(tools),
        }
    }
    Ok(tools)
}

pub(crate) async fn run(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    if !discovered.is_some_and(|d| d.declares("tools")) {
        return CheckResult::skip(
            ids::PARAM_HEADERS,
            "the server declares no `tools` (or `server/discover` failed), so no tool can annotate a parameter",
        );
    }
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let tools = match raw_tools(prober, &mut evidence).await {
        Ok(tools) => tools,
        Err(failure) => {
            return CheckResult::skip(
                ids::PARAM_HEADERS,
                format!("the tools could not be listed: {failure}"),
            );
        }
    };
    let mut annotated = Vec::new();
    for tool in &tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        for bad in bad_annotations(schema) {
            findings.push(Finding::error(format!(
                "`{name}`: `{ANNOTATION}` at `{}` is invalid, so HTTP clients must leave the tool out: {}",
                bad.at, bad.why
            )));
        }
        if let Some(headers) = accepted_param_headers(tool)
            && !headers.is_empty()
        {
            annotated.push(name.to_owned());
            prober.param_headers.insert(name.to_owned(), headers);
        }
    }
    evidence.notes.push(format!(
        "{} tool(s) listed, {} with parameters mirrored into headers{}",
        tools.len(),
        annotated.len(),
        if annotated.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                annotated
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    let mut summary = if annotated.is_empty() {
        "no tool annotates a parameter with `x-mcp-header`".to_owned()
    } else {
        "every `x-mcp-header` annotation is valid".to_owned()
    };
    if prober.target.transport() == Transport::Http {
        sentinel_name(prober, &mut evidence, &mut findings).await;
        summary.push_str("; a Base64-sentinel `Mcp-Name` is decoded");
        if headers_enforced(prober, &mut evidence, &mut findings).await {
            summary.push_str("; a missing or wrong `Mcp-Param-*` header gets 400 with -32020");
        }
    }
    CheckResult::from_findings(ids::PARAM_HEADERS, &findings, summary, evidence)
}

/// A `tools/call` of a tool no server has, named by a Base64-sentinel `Mcp-Name` (valid:
/// any value may be sent encoded): the server decodes it and answers as for an unknown
/// tool. Nothing runs.
async fn sentinel_name(
    prober: &mut Prober<'_>,
    evidence: &mut Evidence,
    findings: &mut Vec<Finding>,
) {
    let params = json!({"name": NO_SUCH_TOOL, "arguments": {}, "_meta": modern_meta()});
    let encoded = format!("=?base64?{}?=", base64_of(NO_SUCH_TOOL.as_bytes()));
    let what = "`tools/call` whose `Mcp-Name` is the tool's name in the Base64 sentinel form";
    let headers = Headers::Exact(vec![
        ("MCP-Protocol-Version".to_owned(), MODERN_VERSION.to_owned()),
        ("Mcp-Method".to_owned(), methods::TOOLS_CALL.to_owned()),
        ("Mcp-Name".to_owned(), encoded),
    ]);
    let answer = prober
        .send(what, methods::TOOLS_CALL, Some(params), headers)
        .await;
    if answer.code() == Some(error_codes::HEADER_MISMATCH) {
        findings.push(Finding::error(format!(
            "{what} got {}: a header value in the form `=?base64?…?=` MUST be decoded before it is compared with the body",
            answer.describe()
        )));
    } else if !answer.answered() {
        findings.push(Finding::error(format!("{what} got {}", answer.describe())));
    }
    evidence.exchanges.push(answer.exchange);
}

/// The `tools/call` probes of the server's `Mcp-Param-*` validation (refused: no header, a
/// wrong value, a sentinel that is not Base64; served: the Base64 form, a literal that
/// only starts like the sentinel), for the first annotated tool the checker may call with
/// a value for its annotated parameter; false when there is none (said in a note).
async fn headers_enforced(
    prober: &mut Prober<'_>,
    evidence: &mut Evidence,
    findings: &mut Vec<Finding>,
) -> bool {
    let Some(Annotated {
        tool,
        arguments,
        property,
        header,
        value,
    }) = callable_annotated(prober)
    else {
        evidence.notes.push(
            "no tool the checker may call (read-only, or named with --call) has a parameter mirrored into a header, so the server's validation of `Mcp-Param-*` was not probed"
                .to_owned(),
        );
        return false;
    };
    let params = json!({"name": tool, "arguments": arguments, "_meta": modern_meta()});
    let standard = standard_headers(methods::TOOLS_CALL, Some(&params));
    let header_name = format!("Mcp-Param-{header}");
    let wrong = if value == "switchboard-check-wrong" {
        "switchboard-check-other".to_owned()
    } else {
        "switchboard-check-wrong".to_owned()
    };
    // Refused before the tool runs: no header, a wrong value, a sentinel that is not Base64.
    let refused = [
        (
            format!("`tools/call` of `{tool}` without `{header_name}`"),
            standard.clone(),
        ),
        (
            format!("`tools/call` of `{tool}` whose `{header_name}` is not the argument's value"),
            with_header(&standard, &header_name, wrong),
        ),
        (
            format!(
                "`tools/call` of `{tool}` whose `{header_name}` is a Base64 sentinel that is not Base64"
            ),
            with_header(&standard, &header_name, "=?base64?!!!?=".to_owned()),
        ),
    ];
    for (what, headers) in refused {
        let answer = prober
            .send(
                &what,
                methods::TOOLS_CALL,
                Some(params.clone()),
                Headers::Exact(headers),
            )
            .await;
        refusal_findings(&what, &answer, error_codes::HEADER_MISMATCH, 400, findings);
        evidence.exchanges.push(answer.exchange);
    }
    // Accepted: the value in the Base64 sentinel form, and (for a string) a value that only
    // looks like the start of one, which is taken literally.
    let mut served = vec![(
        format!("`tools/call` of `{tool}` whose `{header_name}` carries the value Base64-encoded"),
        params.clone(),
        with_header(
            &standard,
            &header_name,
            format!("=?base64?{}?=", base64_of(decoded_text(&value).as_bytes())),
        ),
    )];
    if arguments.get(&property).is_some_and(Value::is_string) {
        let literal = "=?base64?c3dpdGNoYm9hcmQ".to_owned();
        let mut changed = params.clone();
        changed["arguments"][&property] = json!(literal);
        served.push((
            format!("`tools/call` of `{tool}` whose `{property}` and `{header_name}` are `{literal}` (no closing `?=`: not the sentinel, taken literally)"),
            changed,
            with_header(&standard, &header_name, literal),
        ));
    }
    for (what, params, headers) in served {
        let answer = prober
            .send(
                &what,
                methods::TOOLS_CALL,
                Some(params),
                Headers::Exact(headers),
            )
            .await;
        if answer.code() == Some(error_codes::HEADER_MISMATCH) || !answer.answered() {
            findings.push(Finding::error(format!(
                "{what} got {}: the header carries the argument's value",
                answer.describe()
            )));
        }
        evidence.exchanges.push(answer.exchange);
    }
    evidence.notes.push(format!(
        "probed with `{tool}`'s `{header_name}` ({} ms per request at most)",
        ms(prober.target.timeout)
    ));
    true
}

/// An annotated tool the checker may call, with its arguments.
struct Annotated {
    tool: String,
    arguments: Value,
    /// The annotated parameter and its header name.
    property: String,
    header: String,
    /// The header text its argument gives.
    value: String,
}

/// The standard headers plus one more.
fn with_header(standard: &[(String, String)], name: &str, value: String) -> Vec<(String, String)> {
    standard
        .iter()
        .cloned()
        .chain([(name.to_owned(), value)])
        .collect()
}

/// The text a header value stands for (the Base64 sentinel undone).
fn decoded_text(header: &str) -> String {
    switchboard_protocol::headers::header_text_decode(header).unwrap_or_else(|| header.to_owned())
}

/// The first annotated tool the checker may call with a value for an annotated parameter.
fn callable_annotated(prober: &Prober<'_>) -> Option<Annotated> {
    let target = prober.target;
    let tools = target.tools?;
    for tool in &tools.tools {
        let Some(headers) = prober.param_headers.get(&tool.name) else {
            continue;
        };
        if !allowed(tool, target.options) || suggests_duration(tool) {
            continue;
        }
        let given = target
            .options
            .calls
            .iter()
            .find(|c| c.tool == tool.name)
            .map(|c| c.arguments.clone());
        let arguments = match given {
            Some(arguments) => arguments,
            None => {
                let Some(compiled) = tools.compiled.get(&tool.name) else {
                    continue;
                };
                let Some(arguments) = valid_arguments(&tool.input_schema, compiled) else {
                    continue;
                };
                arguments
            }
        };
        for (header, property) in headers {
            let value = switchboard_protocol::headers::header_value(arguments.get(property));
            if let Some(Ok(value)) = value {
                return Some(Annotated {
                    tool: tool.name.clone(),
                    arguments,
                    property: property.clone(),
                    header: header.clone(),
                    value,
                });
            }
        }
    }
    None
}

/// Standard Base64 (with padding), for the sentinel form.
fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(schema: Value) -> String {
        bad_annotations(&schema)
            .into_iter()
            .map(|b| format!("{}: {}", b.at, b.why))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn valid_annotations_pass_and_each_rule_is_named() {
        let good = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "filter": {"type": "object", "properties": {
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
            }},
        }});
        assert_eq!(shown(good), "");
        let bad = json!({"type": "object", "properties": {
            "weight": {"type": "number", "x-mcp-header": "Weight"},
            "a": {"type": "string", "x-mcp-header": "Name"},
            "b": {"type": "string", "x-mcp-header": "name"},
            "c": {"type": "string", "x-mcp-header": "Has Space"},
            "d": {"type": "string", "x-mcp-header": ""},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
            "e": {"type": "integer", "maximum": 9007199254740993_i64, "x-mcp-header": "Big"},
        }, "allOf": [{"properties": {"f": {"type": "string", "x-mcp-header": "F"}}}]});
        expect_test::expect![[r#"
            /properties/weight: on a property of type `number` (only string, integer and boolean may be headers)
            /properties/b: "name" is used twice (names are case-insensitive)
            /properties/c: "Has Space" is not a header token (RFC 9110 `tchar`s only)
            /properties/d: "" is not a header token (RFC 9110 `tchar`s only)
            /properties/list/items: not reached from the root through `properties` alone (items, composition, conditionals and `$ref` are not allowed)
            /properties/e: an integer whose bounds pass ±(2^53−1)
            /allOf/0/properties/f: not reached from the root through `properties` alone (items, composition, conditionals and `$ref` are not allowed)"#]]
        .assert_eq(&shown(bad));
    }
}
