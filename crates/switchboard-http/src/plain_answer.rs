//! The HTTP transport's fast path for the common answer: a JSON body that is one result
//! response to the POST it answers. It is recognised from the body's text (the envelope's
//! members skipped, not built into a tree) and handed to the connection as it came, on one
//! line, so a large result (a 14 MB `tools/list` page) costs its bytes, not a `Value` tree
//! of them. Every other body (errors, batches, messages for other ids, `initialize`
//! results, whose version the transport reads) takes the tree path as before.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use switchboard_wire::{RequestId, needs_exact_path};

/// The members of a body that decide whether it is a plain answer. A repeated member fails
/// the read, which sends the body to the tree path (where the last one wins).
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The result members the transport reads from an `initialize` answer.
#[derive(Deserialize)]
struct HandshakeMembers<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
}

/// The body as one line for the connection, when it is a plain result response to `id`;
/// otherwise the body back, for the tree path.
pub(crate) fn plain_answer(mut body: Vec<u8>, id: &RequestId) -> Result<Vec<u8>, Vec<u8>> {
    if !is_plain_answer(&body, id) {
        return Err(body);
    }
    // In valid JSON a raw line break can only be whitespace between tokens (strings hold
    // them escaped), so a pretty-printed body becomes one line without changing its meaning.
    for byte in &mut body {
        if *byte == b'\n' || *byte == b'\r' {
            *byte = b' ';
        }
    }
    Ok(body)
}

fn is_plain_answer(body: &[u8], id: &RequestId) -> bool {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') || needs_exact_path(body) {
        return false;
    }
    let Ok(members) = serde_json::from_slice::<Members<'_>>(body) else {
        return false;
    };
    let (Some(_), Some(answered), None, Some(result), None) = (
        members.jsonrpc,
        members.id,
        members.method,
        members.result,
        members.error,
    ) else {
        return false;
    };
    let answered = serde_json::from_str::<Value>(answered.get())
        .ok()
        .and_then(|value| RequestId::from_json(&value));
    if answered.as_ref() != Some(id) {
        return false;
    }
    let handshake = result.get().starts_with('{')
        && serde_json::from_str::<HandshakeMembers<'_>>(result.get())
            .map_or(true, |members| members.protocol_version.is_some());
    !handshake
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(body: &str, id: i64) -> Option<String> {
        plain_answer(body.as_bytes().to_vec(), &RequestId::Number(id))
            .ok()
            .map(|line| String::from_utf8(line).expect("utf-8"))
    }

    #[test]
    fn plain_answers_pass_as_text() {
        assert_eq!(
            line(
                "{\"jsonrpc\":\"2.0\",\n \"id\":3,\r\n \"result\":{\"tools\":[]}}",
                3
            )
            .as_deref(),
            Some("{\"jsonrpc\":\"2.0\",  \"id\":3,   \"result\":{\"tools\":[]}}")
        );
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(line(&deep, 1).is_some(), "a deep result stays text");
    }

    #[test]
    fn other_bodies_take_the_tree_path() {
        for body in [
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"3","result":{}}"#,
            r#"{"id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"x","result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":3,"result":{}}]"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":"2025-11-25"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"\\ud800\"}}",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
            r#"{"jsonrpc":"2.0","id":3,"result":{}"#,
        ] {
            assert_eq!(line(body, 3), None, "{body}");
        }
    }
}
