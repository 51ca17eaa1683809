//! The connection's decoding of inbound frames: the envelope's fields (`jsonrpc`, `id`,
//! `method`, `params`, `result`, `error`) are read straight from the text, and a response's
//! `result` stays JSON text until its caller parses it, so no `Value` tree is built (or
//! dropped) for the common case of a response to a waiting request. A response laid out
//! as servers commonly write one (`{"jsonrpc":"2.0","id":N,"result":…}`, or the result
//! first) is read from its ends, its result checked to be one JSON value, with no member
//! parsing at all.
//!
//! The outcome is the same as [`decode`]'s for every frame but one kind: rare frames where
//! skipping a value would be laxer than building it (surrogate `\u` escapes, which may be
//! unpaired), batches, and every frame the fast reader rejects are handed to [`decode`]
//! itself, so malformed frames keep their exact kinds and messages. The exception is
//! nesting deeper than a tree's limit (128) inside a response's `result` (or a member that
//! is skipped): skipping has no such limit, the frame is valid JSON, and the result is
//! handed over as text, so its reader decides what to do with the deep part (a listing
//! reports one entry, not the whole answer). Deep `params` or `error` still fail as trees.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{
    ErrorObject, Malformed, MalformedId, MalformedKind, Message, Notification, Request, RequestId,
    Response, decode, error_object,
};

/// A response's `result`: still JSON text (fast path) or already a tree (exact path).
#[derive(Debug)]
pub(crate) enum ResultJson<'a> {
    /// The result's text, borrowed from the frame.
    Text(&'a RawValue),
    /// The result, parsed.
    Tree(Value),
}

impl ResultJson<'_> {
    /// The result as owned JSON text (what a waiting caller receives).
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        match self {
            ResultJson::Text(raw) => raw.to_owned(),
            // A `Value` always serialises; `null` is unreachable but keeps this panic-free.
            ResultJson::Tree(value) => serde_json::value::to_raw_value(&value)
                .unwrap_or_else(|_| RawValue::NULL.to_owned()),
        }
    }

    /// The result as a tree.
    #[cfg(test)]
    fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            ResultJson::Text(raw) => serde_json::from_str(raw.get()),
            ResultJson::Tree(value) => Ok(value),
        }
    }
}

/// One decoded frame, with a response's result possibly still as text.
#[derive(Debug)]
pub(crate) enum Decoded<'a> {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response {
        /// As in [`Response::id`].
        id: Option<RequestId>,
        /// The result or the error.
        outcome: Result<ResultJson<'a>, ErrorObject>,
    },
}

impl From<Message> for Decoded<'_> {
    fn from(message: Message) -> Self {
        match message {
            Message::Request(request) => Decoded::Request(request),
            Message::Notification(notification) => Decoded::Notification(notification),
            Message::Response(Response { id, outcome }) => Decoded::Response {
                id,
                outcome: outcome.map(ResultJson::Tree),
            },
        }
    }
}

/// Decodes one frame (without its line terminator) like [`decode`], leaving a response's
/// result as text where that cannot change the outcome.
pub(crate) fn decode_borrowed(frame: &[u8]) -> Result<Decoded<'_>, Malformed> {
    // `decode` strips the byte-order mark itself: it gets the frame as it came, so a frame
    // is never stripped twice (two marks are not JSON either way).
    let whole = frame;
    let frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
    let first = frame.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let exact = || decode(whole).map(Decoded::from);
    if first != Some(b'{') || needs_exact_path(frame) {
        return exact();
    }
    let Ok(text) = std::str::from_utf8(frame) else {
        return exact();
    };
    if let Some((id, result)) = compact_response(text) {
        return Ok(Decoded::Response {
            id: Some(RequestId::Number(id)),
            outcome: Ok(ResultJson::Text(result)),
        });
    }
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => envelope
            .classify()
            .map_err(|(kind, id)| Malformed::new(kind, frame).with_id(id)),
        // The exact path produces the same error kind and message as before.
        Err(_) => exact(),
    }
}

/// The ends of a result response as servers commonly write one, compact: the envelope
/// first (`{"jsonrpc":"2.0","id":N,"result":R}`) or last (`{"result":R,"jsonrpc":"2.0","id":N}`).
/// One set for every reader that recognises the layout by its ends (this crate's
/// `compact_response`, the HTTP client's plain answers), so that they cannot drift apart.
pub mod compact_layout {
    /// Envelope first: up to the id.
    pub const ID_FIRST: &str = "{\"jsonrpc\":\"2.0\",\"id\":";
    /// Envelope first: between the id and the result.
    pub const RESULT_AFTER_ID: &str = ",\"result\":";
    /// Envelope last: up to the result.
    pub const RESULT_FIRST: &str = "{\"result\":";
    /// Envelope last: between the result and the id.
    pub const ID_LAST: &str = ",\"jsonrpc\":\"2.0\",\"id\":";
}

/// A result response laid out as servers commonly write one, compact, its envelope at one
/// end: `{"jsonrpc":"2.0","id":N,"result":R}` (serde's and pydantic's member order) or
/// `{"result":R,"jsonrpc":"2.0","id":N}` (`JSON.stringify`'s in the TypeScript SDK), with
/// `N` a non-negative integer. Its ends are compared as bytes and `R` is checked to be one
/// JSON value, so the frame has exactly those three members and decodes as the envelope
/// reader would decode it; any other layout returns `None` and takes that reader.
fn compact_response(frame: &str) -> Option<(i64, &RawValue)> {
    use compact_layout::{ID_FIRST, ID_LAST, RESULT_AFTER_ID, RESULT_FIRST};
    // JSON's whitespace only (`trim_ascii_end` would take a form feed too).
    let frame = frame.trim_end_matches([' ', '\t', '\n', '\r']);
    let (id, result) = if let Some(rest) = frame.strip_prefix(ID_FIRST) {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (id, rest) = rest.split_at(digits);
        let result = rest.strip_prefix(RESULT_AFTER_ID)?.strip_suffix('}')?;
        (id, result)
    } else {
        let rest = frame.strip_prefix(RESULT_FIRST)?.strip_suffix('}')?;
        let digits = rest.len() - rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (rest, id) = rest.split_at(rest.len() - digits);
        (id, rest.strip_suffix(ID_LAST)?)
    };
    // JSON has no leading zeros; 18 digits always fit an `i64`.
    if id.is_empty() || id.len() > 18 || (id.len() > 1 && id.starts_with('0')) {
        return None;
    }
    let id = id.parse().ok()?;
    let result = serde_json::from_str::<&RawValue>(result).ok()?;
    Some((id, result))
}

/// Whether skipping parts of this frame could accept what building a tree rejects: a
/// surrogate escape (`\uD800`–`\uDFFF`), which may be unpaired. Other escapes are always
/// valid, so frames with escaped non-ASCII text (`\u00e9`) keep the fast path. Looking for
/// the bytes errs on the safe side (an escaped backslash before `u` also matches).
pub fn needs_exact_path(frame: &[u8]) -> bool {
    frame.contains(&b'\\')
        && frame.windows(4).any(|w| {
            w[0] == b'\\'
                && w[1] == b'u'
                && matches!(w[2], b'd' | b'D')
                && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
        })
}

/// The top-level fields of a message; others are skipped. A repeated key keeps its last
/// value, as when building a tree.
#[derive(Default)]
struct Envelope<'a> {
    version_is_2_0: Option<bool>,
    id: Option<IdField>,
    method: Option<MethodField>,
    params: Option<Value>,
    result: Option<&'a RawValue>,
    error: Option<Value>,
}

/// Why an envelope is not a message, with the id to answer it by (see [`MalformedId`]).
type Rejection = (MalformedKind, Option<MalformedId>);

impl<'a> Envelope<'a> {
    /// The same rules, in the same order, as `message::classify`.
    fn classify(self) -> Result<Decoded<'a>, Rejection> {
        let answers = self.result.is_some() || self.error.is_some();
        let malformed_id = |id: Option<IdField>, has_method: bool| match id {
            Some(IdField::Valid(id)) => MalformedId::of_frame(Some(id), has_method, answers),
            _ => None,
        };
        if self.version_is_2_0 != Some(true) {
            let has_method = self.method.is_some();
            return Err((
                MalformedKind::WrongVersion,
                malformed_id(self.id, has_method),
            ));
        }
        let invalid = |why: &str| MalformedKind::InvalidMessage(why.to_owned());
        if let Some(method) = self.method {
            let reject =
                |why: &str, id: Option<IdField>| Err((invalid(why), malformed_id(id, true)));
            let MethodField::Text(method) = method else {
                return reject("`method` is not a string", self.id);
            };
            if answers {
                return reject("has both `method` and `result`/`error`", self.id);
            }
            let params = self.params;
            if let Some(p) = &params
                && !(p.is_object() || p.is_array())
            {
                return reject("`params` is neither an object nor an array", self.id);
            }
            return match self.id {
                None => Ok(Decoded::Notification(Notification { method, params })),
                Some(IdField::Valid(id)) => Ok(Decoded::Request(Request { id, method, params })),
                Some(_) => Err((invalid("request `id` is not a string or an integer"), None)),
            };
        }
        let id = match self.id {
            None => return Err((invalid("no `method` and no `id`"), None)),
            Some(IdField::Null) => None,
            Some(IdField::Valid(id)) => Some(id),
            Some(IdField::Invalid) => {
                return Err((invalid("response `id` is not a string or an integer"), None));
            }
        };
        let reject = |why: &str, id: Option<RequestId>| {
            Err((invalid(why), MalformedId::of_frame(id, false, answers)))
        };
        let outcome = match (self.result, self.error) {
            (Some(_), Some(_)) => return reject("response has both `result` and `error`", id),
            (None, None) => return reject("response has neither `result` nor `error`", id),
            (Some(result), None) => {
                if id.is_none() {
                    return reject("result response with a null `id`", id);
                }
                Ok(ResultJson::Text(result))
            }
            (None, Some(error)) => match error_object(error) {
                Ok(error) => Err(error),
                Err(kind) => return Err((kind, MalformedId::of_frame(id, false, answers))),
            },
        };
        Ok(Decoded::Response { id, outcome })
    }
}

enum EnvelopeKey {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for EnvelopeKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = EnvelopeKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<EnvelopeKey, E> {
                Ok(match key {
                    "jsonrpc" => EnvelopeKey::Jsonrpc,
                    "id" => EnvelopeKey::Id,
                    "method" => EnvelopeKey::Method,
                    "params" => EnvelopeKey::Params,
                    "result" => EnvelopeKey::Result,
                    "error" => EnvelopeKey::Error,
                    _ => EnvelopeKey::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
                let mut envelope = Envelope::default();
                while let Some(key) = map.next_key::<EnvelopeKey>()? {
                    match key {
                        EnvelopeKey::Jsonrpc => {
                            envelope.version_is_2_0 = Some(map.next_value::<Version>()?.0);
                        }
                        EnvelopeKey::Id => envelope.id = Some(map.next_value()?),
                        EnvelopeKey::Method => envelope.method = Some(map.next_value()?),
                        EnvelopeKey::Params => envelope.params = Some(map.next_value()?),
                        EnvelopeKey::Result => envelope.result = Some(map.next_value()?),
                        EnvelopeKey::Error => envelope.error = Some(map.next_value()?),
                        EnvelopeKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(envelope)
            }
        }
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

/// Reads any JSON value, classifying it with `classify_*` callbacks; containers are skipped.
macro_rules! scalar_visitor {
    ($visitor:ident, $out:ty, expecting = $expecting:literal, other = $other:expr,
     str = |$s:ident| $on_str:expr, i64 = |$i:ident| $on_i64:expr, u64 = |$u:ident| $on_u64:expr,
     unit = $on_unit:expr) => {
        struct $visitor;
        impl<'de> Visitor<'de> for $visitor {
            type Value = $out;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($expecting)
            }
            fn visit_str<E: de::Error>(self, $s: &str) -> Result<$out, E> {
                Ok($on_str)
            }
            fn visit_i64<E: de::Error>(self, $i: i64) -> Result<$out, E> {
                Ok($on_i64)
            }
            fn visit_u64<E: de::Error>(self, $u: u64) -> Result<$out, E> {
                Ok($on_u64)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<$out, E> {
                Ok($other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<$out, E> {
                Ok($other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<$out, E> {
                Ok($on_unit)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$out, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok($other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$out, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok($other)
            }
        }
    };
}

/// `jsonrpc`: whether it is the string `"2.0"`.
struct Version(bool);

scalar_visitor!(
    VersionVisitor,
    Version,
    expecting = "a version",
    other = Version(false),
    str = |s| Version(s == "2.0"),
    i64 = |_n| Version(false),
    u64 = |_n| Version(false),
    unit = Version(false)
);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VersionVisitor)
    }
}

/// `id`: an integer or string id, `null`, or anything else.
enum IdField {
    Valid(RequestId),
    Null,
    Invalid,
}

scalar_visitor!(
    IdVisitor,
    IdField,
    expecting = "an id",
    other = IdField::Invalid,
    str = |s| IdField::Valid(RequestId::String(Arc::from(s))),
    i64 = |n| IdField::Valid(RequestId::Number(n)),
    u64 = |n| match i64::try_from(n) {
        Ok(n) => IdField::Valid(RequestId::Number(n)),
        Err(_) => IdField::Invalid,
    },
    unit = IdField::Null
);

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

/// `method`: a string or anything else.
enum MethodField {
    Text(String),
    NotText,
}

scalar_visitor!(
    MethodVisitor,
    MethodField,
    expecting = "a method",
    other = MethodField::NotText,
    str = |s| MethodField::Text(s.to_owned()),
    i64 = |_n| MethodField::NotText,
    u64 = |_n| MethodField::NotText,
    unit = MethodField::NotText
);

impl<'de> Deserialize<'de> for MethodField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MethodVisitor)
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// Decodes with both paths, checks they agree, and shows the fast path's view.
    fn check(input: &str, expect: Expect) {
        let fast = decode_borrowed(input.as_bytes());
        let exact = decode(input.as_bytes());
        let actual = match fast {
            Ok(Decoded::Response { id, outcome }) => {
                let shown = match &outcome {
                    Ok(ResultJson::Text(raw)) => format!("Ok(text {})", raw.get()),
                    Ok(ResultJson::Tree(value)) => format!("Ok(tree {value})"),
                    Err(error) => format!("Err({error:?})"),
                };
                let outcome = outcome.map(|r| r.into_value().expect("valid result"));
                assert_eq!(
                    exact,
                    Ok(Message::Response(Response {
                        id: id.clone(),
                        outcome
                    })),
                    "paths disagree"
                );
                format!("response id={id:?} {shown}")
            }
            Ok(Decoded::Request(request)) => {
                assert_eq!(
                    exact,
                    Ok(Message::Request(request.clone())),
                    "paths disagree"
                );
                format!("{request:?}")
            }
            Ok(Decoded::Notification(notification)) => {
                assert_eq!(
                    exact,
                    Ok(Message::Notification(notification.clone())),
                    "paths disagree"
                );
                format!("{notification:?}")
            }
            Err(malformed) => {
                assert_eq!(exact, Err(malformed.clone()), "paths disagree");
                match &malformed.id {
                    None => format!("malformed: {malformed}"),
                    Some(id) => format!("malformed ({id:?}): {malformed}"),
                }
            }
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn response_result_stays_text() {
        check(
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]},"extra":[1,{"a":null}]}"#,
            expect![[r#"response id=Some(3) Ok(text {"content":[{"type":"text","text":"hi"}]})"#]],
        );
        check(
            r#"{"result":"plain","id":"r","jsonrpc":"2.0"}"#,
            expect![[r#"response id=Some("r") Ok(text "plain")"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":1,"result":{"a":2}}"#,
            expect![[r#"response id=Some(1) Ok(text {"a":2})"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            expect![[r#"response id=Some(1) Ok(text null)"#]],
        );
    }

    #[test]
    fn compact_answers_are_read_from_their_ends() {
        for (frame, expect) in [
            (
                r#"{"jsonrpc":"2.0","id":12,"result":{"content":[]}}"#,
                expect![[r#"response id=Some(12) Ok(text {"content":[]})"#]],
            ),
            (
                "{\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\",\"id\":0}  \r",
                expect![[r#"response id=Some(0) Ok(text {"content":[]})"#]],
            ),
            // A form feed is not JSON whitespace.
            (
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\x0c",
                expect![[
                    r#"malformed (Response(4)): invalid JSON: trailing characters at line 1 column 37 (37 bytes): {"jsonrpc":"2.0","id":4,"result":{}}\u{c}"#
                ]],
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"result": [1, 2] }"#,
                expect![[r#"response id=Some(3) Ok(text [1, 2])"#]],
            ),
            // A result that swallows more members is not one value: the envelope decides.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"no"}}"#,
                expect![[
                    r#"malformed (Response(1)): not a JSON-RPC message: response has both `result` and `error` (70 bytes): {"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"no"}}"#
                ]],
            ),
            (
                r#"{"result":{},"id":2,"jsonrpc":"2.0","id":3}"#,
                expect![[r#"response id=Some(3) Ok(text {})"#]],
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
                expect![[r#"response id=Some(1) Ok(text 2)"#]],
            ),
            // Ids JSON or an `i64` rejects, and ids that are not plain integers.
            (
                r#"{"jsonrpc":"2.0","id":07,"result":{}}"#,
                expect![[
                    r#"malformed: invalid JSON: invalid number at line 1 column 24 (37 bytes): {"jsonrpc":"2.0","id":07,"result":{}}"#
                ]],
            ),
            (
                r#"{"jsonrpc":"2.0","id":-7,"result":{}}"#,
                expect![[r#"response id=Some(-7) Ok(text {})"#]],
            ),
            (
                r#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#,
                expect![[
                    r#"malformed: not a JSON-RPC message: response `id` is not a string or an integer (38 bytes): {"jsonrpc":"2.0","id":7.0,"result":{}}"#
                ]],
            ),
            (
                r#"{"result":{},"jsonrpc":"2.0","id":99999999999999999999}"#,
                expect![[
                    r#"malformed: not a JSON-RPC message: response `id` is not a string or an integer (55 bytes): {"result":{},"jsonrpc":"2.0","id":99999999999999999999}"#
                ]],
            ),
            (
                r#"{"result":{},"jsonrpc":"2.0","id":}"#,
                expect![[
                    r#"malformed: invalid JSON: expected value at line 1 column 35 (35 bytes): {"result":{},"jsonrpc":"2.0","id":}"#
                ]],
            ),
        ] {
            check(frame, expect);
        }
    }

    #[test]
    fn ids_keep_their_kind() {
        check(
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            expect![[r#"response id=Some(7) Ok(text {})"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            expect![[r#"response id=Some("7") Ok(text {})"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: response `id` is not a string or an integer (54 bytes): {"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":[7],"method":"x"}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: request `id` is not a string or an integer (39 bytes): {"jsonrpc":"2.0","id":[7],"method":"x"}"#
            ]],
        );
    }

    #[test]
    fn error_data_is_kept() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no","data":{"supported":["2025-11-25"]}}}"#,
            expect![[
                r#"response id=Some(1) Err(ErrorObject { code: -32022, message: "no", data: Some(Object {"supported": Array [String("2025-11-25")]}) })"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
            expect![[
                r#"response id=None Err(ErrorObject { code: -32700, message: "parse error", data: None })"#
            ]],
        );
    }

    #[test]
    fn requests_and_notifications() {
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
            expect![[r#"Request { id: "a", method: "ping", params: None }"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            expect![[
                r#"Notification { method: "notifications/progress", params: Some(Object {"progress": Number(1)}) }"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","method":"m","params":3}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: `params` is neither an object nor an array (41 bytes): {"jsonrpc":"2.0","method":"m","params":3}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","method":{"a":1}}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: `method` is not a string (34 bytes): {"jsonrpc":"2.0","method":{"a":1}}"#
            ]],
        );
    }

    #[test]
    fn broken_frames_keep_their_id_on_both_paths() {
        check(
            r#"{"jsonrpc":"2.0","id":5}"#,
            expect![[
                r#"malformed (Ambiguous(5)): not a JSON-RPC message: response has neither `result` nor `error` (24 bytes): {"jsonrpc":"2.0","id":5}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":5,"method":7}"#,
            expect![[
                r#"malformed (Request(5)): not a JSON-RPC message: `method` is not a string (35 bytes): {"jsonrpc":"2.0","id":5,"method":7}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":"s","method":"m","params":3}"#,
            expect![[
                r#"malformed (Request("s")): not a JSON-RPC message: `params` is neither an object nor an array (50 bytes): {"jsonrpc":"2.0","id":"s","method":"m","params":3}"#
            ]],
        );
        check(
            r#"{"id":5,"jsonrpc":"1.0","method":"m"}"#,
            expect![[
                r#"malformed (Request(5)): `jsonrpc` missing or not "2.0" (37 bytes): {"id":5,"jsonrpc":"1.0","method":"m"}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":5,"method":"m","error":{}}"#,
            expect![[
                r#"malformed (Request(5)): not a JSON-RPC message: has both `method` and `result`/`error` (48 bytes): {"jsonrpc":"2.0","id":5,"method":"m","error":{}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}}"#,
            expect![[
                r#"malformed (Response(5)): not a JSON-RPC message: response has both `result` and `error` (68 bytes): {"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":"r","error":{"code":"x","message":"x"}}"#,
            expect![[
                r#"malformed (Response("r")): not a JSON-RPC message: error `code` is missing or not an integer (61 bytes): {"jsonrpc":"2.0","id":"r","error":{"code":"x","message":"x"}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: result response with a null `id` (38 bytes): {"jsonrpc":"2.0","id":null,"result":1}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":[5],"method":7}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: `method` is not a string (37 bytes): {"jsonrpc":"2.0","id":[5],"method":7}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":5,"id":"later","method":7}"#,
            expect![[
                r#"malformed (Request("later")): not a JSON-RPC message: `method` is not a string (48 bytes): {"jsonrpc":"2.0","id":5,"id":"later","method":7}"#
            ]],
        );
    }

    #[test]
    fn malformed_frames() {
        check(
            "Server started on stdio",
            expect![[
                r#"malformed: non-JSON text on the protocol channel (23 bytes): Server started on stdio"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
            expect![[
                r#"malformed (Response(1)): invalid JSON: expected value at line 1 column 39 (40 bytes): {"jsonrpc":"2.0","id":1,"result":{"a":}}"#
            ]],
        );
        check(
            r#"{"id":1,"result":{}}"#,
            expect![[
                r#"malformed (Response(1)): `jsonrpc` missing or not "2.0" (20 bytes): {"id":1,"result":{}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":2.0,"id":1,"result":{}}"#,
            expect![[
                r#"malformed (Response(1)): `jsonrpc` missing or not "2.0" (34 bytes): {"jsonrpc":2.0,"id":1,"result":{}}"#
            ]],
        );
        check(
            r#"[{"jsonrpc":"2.0","method":"x"}]"#,
            expect![[
                r#"malformed: a JSON-RPC batch, which is not allowed (32 bytes): [{"jsonrpc":"2.0","method":"x"}]"#
            ]],
        );
        check(
            r#""just a string""#,
            expect![[
                r#"malformed: non-JSON text on the protocol channel (15 bytes): "just a string""#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            expect![[
                r#"malformed (Response(1)): not a JSON-RPC message: response has both `result` and `error` (69 bytes): {"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}"#,
            expect![[
                r#"malformed (Response(1)): invalid JSON: EOF while parsing an object at line 1 column 47 (47 bytes): {"jsonrpc":"2.0","id":1,"result":{},"result":{}"#
            ]],
        );
    }

    #[test]
    fn laxer_frames_take_the_exact_path() {
        // An unpaired surrogate inside a result: skipping it would accept it. Other escapes
        // are always valid and keep the result as text.
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\\ud800\"}}",
            expect![[
                r#"malformed (Response(1)): invalid JSON: unexpected end of hex escape at line 1 column 46 (48 bytes): {"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800"}}"#
            ]],
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\\u00e9\"}}",
            expect![[r#"response id=Some(1) Ok(text {"t":"\u00e9"})"#]],
        );
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        // A result deeper than a tree's limit is valid JSON: it stays text for its reader.
        let decoded = decode_borrowed(deep.as_bytes());
        assert!(matches!(
            decoded,
            Ok(Decoded::Response {
                outcome: Ok(ResultJson::Text(_)),
                ..
            })
        ));
        // Deep params are read as a tree and still fail as one.
        let deep_params = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(
            decode_borrowed(deep_params.as_bytes()),
            Err(Malformed {
                kind: MalformedKind::InvalidJson(_),
                ..
            })
        ));
    }
}
