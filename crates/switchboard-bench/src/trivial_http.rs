//! A minimal Streamable HTTP MCP server (`switchboard-bench trivial-http-server`): the
//! HTTP counterpart of [`crate::trivial_server`], to separate client cost from server cost
//! on the HTTP path. Blocking std sockets on 127.0.0.1, a thread per connection, keep-alive,
//! every answer a `Content-Length` JSON body written with one `write` ([`crate::http1`]).
//!
//! - `--era legacy`: `initialize` answers with an `Mcp-Session-Id`; `server/discover`
//!   gets -32601. Session ids are not checked (a benchmark peer, not a conformance one).
//! - `--era modern` (2026-07-28): `server/discover`, results carry `resultType`;
//!   `initialize` gets -32601. No sessions.
//! - `--era auto`: both, the way a dual-era server does it: `initialize` legacy,
//!   `server/discover` and requests naming a protocol version in `_meta` modern.
//!
//! `tools/call echo`, `tools/list` and `ping` as the stdio trivial server answers them;
//! notifications and responses get 202, `DELETE` 200, other methods 405, a body that is not
//! JSON 400.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use switchboard_protocol::{MODERN_VERSION, meta};

use crate::cli::EraArg;
use crate::http1::{self, Answer, Message};

/// Serves until stdin closes (see [`http1::serve`]).
pub fn serve(port: u16, era: EraArg) -> io::Result<()> {
    let sessions = AtomicU64::new(0);
    http1::serve(port, move |request| answer(request, era, &sessions))
}

fn answer(request: &Message, era: EraArg, sessions: &AtomicU64) -> Answer {
    match request.method() {
        "POST" => {}
        "DELETE" => return Answer::empty(200),
        _ => {
            let mut refused = Answer::empty(405);
            refused.headers.push(("allow", "POST, DELETE".into()));
            return refused;
        }
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return Answer {
            status: 400,
            headers: Vec::new(),
            body: br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
                .to_vec(),
        };
    };
    let (Some(id), Some(method)) = (
        message.get("id"),
        message.get("method").and_then(Value::as_str),
    ) else {
        return Answer::empty(202); // a notification or a response
    };
    let params = message.get("params").unwrap_or(&Value::Null);
    let modern = match era {
        EraArg::Legacy => false,
        EraArg::Modern => true,
        EraArg::Auto => {
            method == "server/discover"
                || params
                    .pointer("/_meta")
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.contains_key(meta::PROTOCOL_VERSION))
        }
    };
    let outcome = match (modern, method) {
        (true, "server/discover") => Ok(discover()),
        (true, "initialize") | (false, "server/discover") => {
            Err((-32601, format!("method not found: {method}")))
        }
        _ => crate::trivial_server::answer_to(method, params),
    };
    let reply = match outcome {
        Ok(mut result) => {
            if modern && let Some(object) = result.as_object_mut() {
                object.insert("resultType".into(), "complete".into());
            }
            json!({ "jsonrpc": "2.0", "id": id, "result": result })
        }
        Err((code, text)) => {
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": text } })
        }
    };
    let mut answer = Answer::json(reply.to_string().into_bytes());
    if method == "initialize" && !modern {
        let session = sessions.fetch_add(1, Ordering::Relaxed) + 1;
        answer
            .headers
            .push(("mcp-session-id", format!("bench-{session}")));
    }
    answer
}

fn discover() -> Value {
    json!({
        "supportedVersions": [MODERN_VERSION],
        "capabilities": { "tools": {} },
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": { meta::SERVER_INFO: {
            "name": "switchboard-bench-trivial-http",
            "version": env!("CARGO_PKG_VERSION"),
        }},
    })
}
