//! A minimal blocking Rust MCP server over stdio: `initialize`, `ping`, `tools/list` and
//! `tools/call` of one tool, `echo`, which returns its `text` (or `message`) argument.
//! Every other request gets -32601; notifications are ignored. It parses each line with
//! `serde_json` and writes each answer with one `write` — the least an MCP server can do,
//! to separate client cost from server cost.

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

/// Protocol versions it accepts as they are; anything else is answered with the newest.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Serves stdin/stdout until EOF.
pub fn serve() -> io::Result<()> {
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
        let reply = match answer_to(method, params) {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err((code, text)) => {
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": text } })
            }
        };
        answer.clear();
        serde_json::to_writer(&mut answer, &reply)?;
        answer.push(b'\n');
        output.write_all(&answer)?;
        output.flush()?;
    }
}

fn answer_to(method: &str, params: &Value) -> Result<Value, (i64, String)> {
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
