//! The HTTP transport's fast path for the common answer: a JSON body that is one result
//! response to the POST it answers. It is recognised from the body's text (the envelope's
//! members skipped, not built into a tree) and handed to the connection as it came, so a
//! large result (a 14 MB `tools/list` page) costs its bytes, not a `Value` tree of them.
//! Every other body (errors, batches, messages for other ids) takes the tree path.

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

/// Whether the body is one plain result response to `id` (then it goes to the connection
/// as it came; every other body takes the tree path).
pub(crate) fn is_plain_answer(body: &[u8], id: &RequestId) -> bool {
    is_compact_answer(body, id) || has_answer_members(body, id)
}

/// Whether the body is laid out as servers commonly write an answer, compact, with its
/// envelope at one end: `{"jsonrpc":"2.0","id":ID,"result":…}` (serde's and pydantic's
/// member order) or `{"result":…,"jsonrpc":"2.0","id":ID}` (JSON.stringify's in the
/// TypeScript SDK). Only the ends are read: the connection decodes the whole body anyway,
/// and one that turns out not to answer `id` after all (a repeated member, say) leaves the
/// request waiting, which the caller checks.
fn is_compact_answer(body: &[u8], id: &RequestId) -> bool {
    use switchboard_wire::compact_layout::{ID_FIRST, ID_LAST, RESULT_AFTER_ID, RESULT_FIRST};
    let mut id_text = [0u8; 24];
    let id_text = match id {
        // The ids this client gives its own requests; a string id takes the long way.
        RequestId::Number(n) => {
            let mut cursor = std::io::Cursor::new(&mut id_text[..]);
            if std::io::Write::write_fmt(&mut cursor, format_args!("{n}")).is_err() {
                return false;
            }
            let len = cursor.position() as usize;
            &id_text[..len]
        }
        RequestId::String(_) => return false,
    };
    let body = body.trim_ascii_end();
    if let Some(rest) = body.strip_prefix(ID_FIRST.as_bytes()) {
        return rest
            .strip_prefix(id_text)
            .is_some_and(|rest| rest.starts_with(RESULT_AFTER_ID.as_bytes()));
    }
    body.starts_with(RESULT_FIRST.as_bytes())
        && body
            .strip_suffix(b"}")
            .and_then(|rest| rest.strip_suffix(id_text))
            .is_some_and(|rest| rest.ends_with(ID_LAST.as_bytes()))
}

/// Whether the body's members make it one result response to `id` (any layout).
fn has_answer_members(body: &[u8], id: &RequestId) -> bool {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') || needs_exact_path(body) {
        return false;
    }
    let Ok(members) = serde_json::from_slice::<Members<'_>>(body) else {
        return false;
    };
    let (Some(_), Some(answered), None, Some(_), None) = (
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
    answered.as_ref() == Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(body: &str, id: i64) -> bool {
        is_plain_answer(body.as_bytes(), &RequestId::Number(id))
    }

    #[test]
    fn compact_answers_are_known_by_their_ends() {
        for body in [
            r#"{"jsonrpc":"2.0","id":12,"result":{"content":[]}}"#,
            "{\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\",\"id\":12}\n",
        ] {
            assert!(
                is_compact_answer(body.as_bytes(), &RequestId::Number(12)),
                "{body}"
            );
            assert!(plain(body, 12), "{body}");
        }
        for body in [
            // Another id, an id that only begins like ours, an error, a string id.
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":123,"result":{}}"#,
            r#"{"result":{},"jsonrpc":"2.0","id":112}"#,
            r#"{"jsonrpc":"2.0","id":12,"error":{"code":1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":"12","result":{}}"#,
        ] {
            assert!(
                !is_compact_answer(body.as_bytes(), &RequestId::Number(12)),
                "{body}"
            );
        }
    }

    #[test]
    fn plain_answers_pass_as_text() {
        assert!(plain(
            "{\"jsonrpc\":\"2.0\",\n \"id\":3,\r\n \"result\":{\"tools\":[]}}",
            3
        ));
        assert!(plain(
            r#"{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":"2025-11-25"}}"#,
            3
        ));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(plain(&deep, 1), "a deep result stays text");
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
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"\\ud800\"}}",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
            r#"{"jsonrpc":"2.0","id":3,"result":{}"#,
        ] {
            // Some of these begin as an answer does and go to the connection by their
            // layout (which takes them as the tree path would, or fails the request);
            // by their members, none is a plain answer.
            assert!(
                !has_answer_members(body.as_bytes(), &RequestId::Number(3)),
                "{body}"
            );
        }
    }
}
