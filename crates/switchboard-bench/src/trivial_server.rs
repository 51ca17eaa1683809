//! A minimal blocking Rust MCP server over stdio: `initialize`, `ping`, `tools/list` and
//! `tools/call` of one tool, `echo`, which returns its `text` (or `message`) argument.
//! Every other request gets -32601; notifications are ignored. It parses each line with
//! `serde_json` and writes each answer with one `write` — the least an MCP server can do,
//! to separate client cost from server cost.
//!
//! With `--tools N` it serves a catalog of `N` echo tools (`tool_0000`…, shaped like the
//! fixture's `many-tools` mode) in pages of `--page-size`, pre-serialised at start so that
//! listing a large catalog measures the client, not the server (scenario 6).

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

/// Protocol versions it accepts as they are; anything else is answered with the newest.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Serves stdin/stdout until EOF. `tools` > 0 replaces the one-tool listing by a catalog of
/// that many numbered echo tools, `page_size` per `tools/list` page.
pub fn serve(tools: usize, page_size: usize) -> io::Result<()> {
    let pages = catalog_pages(tools, page_size.max(1));
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut output = stdout.lock();
    let mut line = Vec::with_capacity(4096);
    let mut answer = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue; // a notification
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").unwrap_or(&Value::Null);
        answer.clear();
        if method == "tools/list" && !pages.is_empty() {
            let page = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("page-"))
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0);
            if let Some(result) = pages.get(page) {
                answer.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                serde_json::to_writer(&mut answer, &id)?;
                answer.extend_from_slice(b",\"result\":");
                answer.extend_from_slice(result.as_bytes());
                answer.extend_from_slice(b"}\n");
                output.write_all(&answer)?;
                output.flush()?;
                continue;
            }
        }
        let reply = match answer_to(method, params) {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err((code, text)) => {
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": text } })
            }
        };
        serde_json::to_writer(&mut answer, &reply)?;
        answer.push(b'\n');
        output.write_all(&answer)?;
        output.flush()?;
    }
}

/// The `tools/list` results of a `tools`-tool catalog, serialised (empty when `tools` is 0).
fn catalog_pages(tools: usize, page_size: usize) -> Vec<String> {
    let mut pages = Vec::new();
    let mut start = 0;
    while start < tools {
        let end = (start + page_size).min(tools);
        let mut page = String::with_capacity((end - start) * 260 + 64);
        page.push_str("{\"tools\":[");
        for index in start..end {
            if index > start {
                page.push(',');
            }
            page.push_str(&format!(
                "{{\"name\":\"tool_{index:04}\",\"description\":\"Echo tool number {index}.\",\
                 \"inputSchema\":{{\"type\":\"object\",\"properties\":{{\"text\":{{\"type\":\"string\"}}}},\
                 \"required\":[\"text\"],\"additionalProperties\":false}},\
                 \"annotations\":{{\"readOnlyHint\":true}}}}"
            ));
        }
        page.push(']');
        if end < tools {
            page.push_str(&format!(",\"nextCursor\":\"page-{}\"", pages.len() + 1));
        }
        page.push('}');
        pages.push(page);
        start = end;
    }
    pages
}

pub(crate) fn answer_to(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if name != "echo" {
                return Err((-32602, format!("unknown tool `{name}`")));
            }
            let arguments = params.get("arguments");
            let text = arguments
                .and_then(|a| a.get("text").or_else(|| a.get("message")))
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(json!({ "content": [{ "type": "text", "text": text }] }))
        }
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = VERSIONS
                .iter()
                .find(|v| **v == asked)
                .copied()
                .unwrap_or(VERSIONS[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "switchboard-bench-trivial", "version": env!("CARGO_PKG_VERSION") },
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({
            "tools": [{
                "name": "echo",
                "description": "Returns its text.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
            }],
        })),
        other => Err((-32601, format!("method not found: {other}"))),
    }
}
