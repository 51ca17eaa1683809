//! Rendering results for the terminal and as JSON. The text is rendered as the server sent
//! it; `terminal`, which writes it, shows control characters (ANSI sequences included)
//! instead of letting the terminal run them.

use serde_json::{Value, json};
use switchboard_protocol::{CallToolResult, ContentBlock, Tool};
use switchboard_session::{Listing, ListingProblem, Negotiated};

/// A server's tools, with what was negotiated.
pub(crate) struct ListedTools {
    pub(crate) negotiated: Negotiated,
    /// The tools the entry's filter lets through.
    pub(crate) listing: Listing<Tool>,
    /// How many listed tools the entry's filter left out.
    pub(crate) left_out: usize,
    /// The tools the tool lock beside the config holds (`serve` leaves them out).
    pub(crate) held: Vec<crate::held::HeldHere>,
}

/// The most characters of a description a listing shows on its line.
pub(crate) const SUMMARY_CHARS: usize = 80;

/// A description's first line for a listing, cut at `max_chars` (with `…`). A first line
/// that stops mid-sentence, as hard-wrapped doc comments and docstrings do, goes on with
/// the lines that finish the sentence (up to a blank line, or one that starts a list,
/// heading, quote or table).
pub(crate) fn summary(text: &str, max_chars: usize) -> String {
    let mut lines = text
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty());
    let mut summary = lines.next().unwrap_or("").to_owned();
    for line in lines {
        let sentence_ended = summary.ends_with(['.', '!', '?', ':', ';']);
        let starts_a_block = line.is_empty()
            || line.starts_with(['-', '*', '+', '#', '>', '|', '`'])
            || line.split_once(['.', ')']).is_some_and(|(number, _)| {
                !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
            });
        if sentence_ended || starts_a_block || summary.chars().count() > max_chars {
            break;
        }
        summary.push(' ');
        summary.push_str(line);
    }
    if summary.chars().count() <= max_chars {
        return summary;
    }
    let mut out: String = summary.chars().take(max_chars).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// `name: type` for each property of an object schema, required ones first (nested and
/// `$ref` types named, not `any`).
fn parameters(schema: &Value) -> String {
    let schema = readable_schema(schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required = required_names(&schema);
    let mut parts: Vec<(bool, String)> = properties
        .iter()
        .map(|(name, prop)| {
            let is_required = required.contains(&name.as_str());
            let optional = if is_required { "" } else { "?" };
            (
                is_required,
                format!("{name}{optional}: {}", type_name(prop)),
            )
        })
        .collect();
    parts.sort_by_key(|(is_required, _)| !is_required);
    parts
        .into_iter()
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema with its local `$ref`s inlined (as the runtime reads it), or as it came when
/// it cannot be (a reference outside it, a recursion).
fn readable_schema(schema: &Value) -> Value {
    switchboard_runtime::schema::normalize(schema).unwrap_or_else(|_| schema.clone())
}

fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema's type in a few words: `string`, `integer|null`, `array of string`,
/// `one of "a", "b"`, `object`, a `$ref` left as it is by its name.
fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(value) = schema.get("const") {
        return format!("= {value}");
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => Some(kind.clone()),
        Some(Value::Array(kinds)) => Some(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("|"),
        ),
        _ => None,
    };
    match kind.as_deref() {
        Some("array") => match schema.get("items") {
            Some(items) => format!("array of {}", type_name(items)),
            None => "array".to_owned(),
        },
        Some(kind) => kind.to_owned(),
        None => {
            for key in ["anyOf", "oneOf"] {
                if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
                    let names: Vec<String> = alternatives.iter().map(type_name).collect();
                    return names.join(" | ");
                }
            }
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                return reference.rsplit('/').next().unwrap_or(reference).to_owned();
            }
            if schema.get("properties").is_some() {
                return "object".to_owned();
            }
            "any".to_owned()
        }
    }
}

/// The full view of one tool: every word of its description, its annotations, and its
/// input and output schemas as an indented outline.
pub(crate) fn tool_text(server: &str, tool: &Tool) -> String {
    let mut out = format!("{server} / {}", tool.name);
    if let Some(title) = tool.raw.get("title").and_then(Value::as_str) {
        out.push_str(&format!(" — {title}"));
    }
    out.push('\n');
    if let Some(description) = &tool.description {
        for line in description.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if let Some(annotations) = tool.raw.get("annotations").and_then(Value::as_object) {
        let shown: Vec<String> = annotations
            .iter()
            .map(|(key, value)| format!("{key}: {value}"))
            .collect();
        out.push_str(&format!("annotations: {}\n", shown.join(", ")));
    }
    out.push_str("input:\n");
    outline(&readable_schema(&tool.input_schema), 1, &mut out);
    if let Some(output) = tool.raw.get("outputSchema") {
        out.push_str("output:\n");
        outline(&readable_schema(output), 1, &mut out);
    }
    out
}

/// The properties of an object schema, one per line, nested objects and arrays of
/// objects indented below their key (at most 16 levels).
fn outline(schema: &Value, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        if depth == 1 {
            out.push_str(&format!("{indent}(no parameters)\n"));
        }
        return;
    };
    if properties.is_empty() && depth == 1 {
        out.push_str(&format!("{indent}(no parameters)\n"));
    }
    let required = required_names(schema);
    for (name, property) in properties {
        let marker = if required.contains(&name.as_str()) {
            " (required)"
        } else {
            ""
        };
        out.push_str(&format!("{indent}{name}: {}{marker}", type_name(property)));
        if let Some(default) = property.get("default") {
            out.push_str(&format!(", default {default}"));
        }
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            out.push_str(&format!(" — {}", description.trim()));
        }
        out.push('\n');
        if depth >= 16 {
            continue;
        }
        let nested = match property.get("items") {
            Some(items) if items.get("properties").is_some() => items,
            _ => property,
        };
        if nested.get("properties").is_some() {
            outline(nested, depth + 1, out);
        }
    }
}

/// The human listing of one server's tools.
pub(crate) fn tools_text(server: &str, listed: &ListedTools) -> String {
    let n = &listed.negotiated;
    let tools = &listed.listing.items;
    let mut out = format!(
        "{server}: {} tool{} (protocol {}, {} era{})\n",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        n.protocol_version,
        n.era,
        n.server_info
            .as_ref()
            .map(|i| format!(", server {}", format!("{} {}", i.name, i.version).trim()))
            .unwrap_or_default(),
    );
    let width = tools
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for tool in tools {
        let description = tool
            .description
            .as_deref()
            .map(|d| summary(d, SUMMARY_CHARS))
            .unwrap_or_default();
        out.push_str(&format!("  {:width$}  {description}\n", tool.name));
        let params = parameters(&tool.input_schema);
        if !params.is_empty() {
            out.push_str(&format!("  {:width$}    ({params})\n", ""));
        }
        if let Some(held) = listed.held.iter().find(|h| h.tool == tool.name) {
            out.push_str(&format!("  {:width$}    held: {}\n", "", held.message));
        }
    }
    if listed.left_out > 0 {
        out.push_str(&format!(
            "  ({} left out by the entry's enabledTools/disabledTools)\n",
            listed.left_out
        ));
    }
    for problem in &listed.listing.problems {
        out.push_str(&format!(
            "  warning: page {}: {}\n",
            problem.page, problem.detail
        ));
    }
    out
}

/// The JSON listing of one server's tools (definitions as received).
pub(crate) fn tools_json(listed: &ListedTools) -> Value {
    let n = &listed.negotiated;
    let mut out = json!({
        "protocolVersion": n.protocol_version,
        "era": n.era.to_string(),
        "serverInfo": n.server_info,
        "tools": listed.listing.items.iter().map(|t| t.raw.clone()).collect::<Vec<_>>(),
        "problems": listed.listing.problems.iter().map(problem_json).collect::<Vec<_>>(),
    });
    if listed.left_out > 0 {
        out["leftOut"] = listed.left_out.into();
    }
    if !listed.held.is_empty() {
        out["held"] = listed
            .held
            .iter()
            .map(|h| json!({"tool": h.tool, "reason": h.reason, "message": h.message}))
            .collect();
    }
    out
}

/// A listing problem as JSON: the entry as a tree, or as its text under `entryText` when it
/// cannot be one (nested deeper than the parser's limit).
fn problem_json(problem: &ListingProblem) -> Value {
    let entry = match serde_json::from_str::<Value>(problem.raw.get()) {
        Ok(tree) => ("entry", tree),
        Err(_) => ("entryText", Value::String(problem.raw.get().to_owned())),
    };
    json!({"page": problem.page, "detail": problem.detail, entry.0: entry.1})
}

/// The human rendering of a tool result: text as is, other blocks summarised.
pub(crate) fn call_text(result: &CallToolResult) -> String {
    let mut out = String::new();
    for block in &result.content {
        let line = match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { data, mime_type } => {
                format!("[image {}, {} bytes base64]", mime_type, data.len())
            }
            ContentBlock::Audio { data, mime_type } => {
                format!("[audio {}, {} bytes base64]", mime_type, data.len())
            }
            ContentBlock::ResourceLink { uri, name, .. } => {
                format!("[resource link {} ({})]", name, uri)
            }
            ContentBlock::Resource { resource } => {
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => text.to_owned(),
                    None => format!(
                        "[embedded resource {}]",
                        resource.get("uri").and_then(Value::as_str).unwrap_or("?")
                    ),
                }
            }
            ContentBlock::Unknown { kind, .. } => {
                format!("[content of unknown type {:?}]", kind)
            }
        };
        out.push_str(&line);
        if !line.ends_with('\n') {
            out.push('\n');
        }
    }
    if let (true, Some(structured)) = (result.content.is_empty(), &result.structured_content) {
        out.push_str(&format!("{structured}\n"));
    }
    out
}

/// The JSON rendering of a tool result.
pub(crate) fn call_json(result: &CallToolResult) -> Value {
    let mut out = json!({
        "content": result.content.iter().map(ContentBlock::to_json).collect::<Vec<_>>(),
        "isError": result.is_error,
    });
    if let Some(structured) = &result.structured_content {
        out["structuredContent"] = structured.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    #[test]
    fn a_summary_finishes_a_wrapped_sentence_and_stops_at_blocks() {
        let descriptions = [
            "Returns the given text.",
            "\n  Sleep for `duration_ms` in `steps` equal steps, sending a progress\n  notification after each step when the request has a progress token;\n  stops promptly.",
            "Search the web for\nthe given query.\nMore details follow.",
            "Search the web for\n- a query\n- a site",
            "Lists the files in\n\nthe folder.",
            "Counts the items in\n1. the inbox",
            "",
        ];
        let shown: Vec<String> = descriptions
            .iter()
            .map(|d| format!("{:?}", summary(d, SUMMARY_CHARS)))
            .collect();
        expect_test::expect![[r#"
            "Returns the given text."
            "Sleep for `duration_ms` in `steps` equal steps, sending a progress notification…"
            "Search the web for the given query."
            "Search the web for"
            "Lists the files in"
            "Counts the items in"
            """#]]
        .assert_eq(&shown.join("\n"));
    }

    fn problem(text: &str) -> ListingProblem {
        ListingProblem {
            page: 2,
            detail: "why".into(),
            raw: RawValue::from_string(text.to_owned()).expect("JSON"),
        }
    }

    #[test]
    fn problem_entries_are_trees_or_their_text() {
        assert_eq!(
            problem_json(&problem(r#"{"name":7}"#)).to_string(),
            r#"{"page":2,"detail":"why","entry":{"name":7}}"#
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let shown = problem_json(&problem(&deep));
        assert_eq!(shown["entryText"].as_str(), Some(deep.as_str()));
        assert!(shown.get("entry").is_none());
    }
}
