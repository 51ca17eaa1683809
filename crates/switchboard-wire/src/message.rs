//! JSON-RPC 2.0 message types and their conversion from and to bytes.
//!
//! Decoding never panics and never guesses: a frame that is not exactly one JSON-RPC 2.0
//! message becomes a [`Malformed`] value that says why, with a short excerpt of the bytes.

use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::frame_id::answer_id;
use switchboard_text::peer_text::{PeerLine, PeerText};

/// A request id. Integer and string ids are distinct: `7` and `"7"` never match.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl RequestId {
    /// Reads an id from JSON; `None` for null, floats, objects and other kinds the
    /// protocol does not allow.
    pub fn from_json(value: &Value) -> Option<RequestId> {
        match value {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(Arc::from(s.as_str()))),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(&**s),
        }
    }
}

impl fmt::Display for RequestId {
    /// Strings are shown quoted so that `7` and `"7"` read differently.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(Arc::from(s))
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

/// A JSON-RPC error object. `data` is kept exactly as the peer sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// The peer's one-line description.
    pub message: String,
    /// Extra information, untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", PeerText(&self.message), self.code)?;
        if let Some(data) = &self.data {
            let text = data.to_string();
            write!(f, ", data: {}", crate::excerpt(text.as_bytes(), 300))?;
        }
        Ok(())
    }
}

/// Standard JSON-RPC error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not offered.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error in the receiver.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A request: it expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A response to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers. `None` only for an error response to a
    /// request whose id could not be read (JSON-RPC allows `id: null` there).
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub outcome: Result<Value, ErrorObject>,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why a frame is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MalformedKind {
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The line does not start like JSON: log or banner text on the protocol channel.
    NotJson,
    /// The line starts like JSON but does not parse.
    InvalidJson(String),
    /// A JSON array: a batch, which the negotiated protocol does not allow.
    Batch,
    /// Valid JSON but not an object.
    NotAnObject,
    /// `jsonrpc` is missing or is not `"2.0"`.
    WrongVersion,
    /// The object is not a request, notification or response (details say which rule).
    InvalidMessage(String),
    /// The line is longer than the maximum frame size; it was skipped.
    Oversized {
        /// The size limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for MalformedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MalformedKind::InvalidUtf8 => f.write_str("invalid UTF-8"),
            MalformedKind::NotJson => f.write_str("non-JSON text on the protocol channel"),
            MalformedKind::InvalidJson(e) => write!(f, "invalid JSON: {e}"),
            MalformedKind::Batch => f.write_str("a JSON-RPC batch, which is not allowed"),
            MalformedKind::NotAnObject => f.write_str("JSON that is not an object"),
            MalformedKind::WrongVersion => f.write_str("`jsonrpc` missing or not \"2.0\""),
            MalformedKind::InvalidMessage(why) => write!(f, "not a JSON-RPC message: {why}"),
            MalformedKind::Oversized { limit } => {
                write!(f, "frame longer than the {limit}-byte limit")
            }
        }
    }
}

/// A frame that could not be read as a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// What is wrong with it.
    pub kind: MalformedKind,
    /// The first bytes of the frame, lossily decoded, with control characters escaped.
    pub excerpt: String,
    /// The frame's length in bytes.
    pub len: usize,
    /// The frame's `id`, when it is a JSON object whose `id` is a string or an integer,
    /// and whether it meant to ask or to answer: the receiver can answer a broken request
    /// with its own id (JSON-RPC's `id: null` is for frames whose id cannot be read), and
    /// fail at once the request a broken answer was meant for. For a frame that is not
    /// valid JSON (or over the size limit), only an answer's id is read, and only when its
    /// top-level `id` can be told for sure (`frame_id`).
    pub id: Option<MalformedId>,
}

/// The id a malformed frame carries, by what the frame meant to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MalformedId {
    /// A frame with a `method`, or with neither `result` nor `error`: a request gone
    /// wrong, whose sender waits for an answer with this id.
    Request(RequestId),
    /// A frame with `result` or `error` and no `method`: a response gone wrong, meant for
    /// the receiver's request with this id.
    Response(RequestId),
    /// A frame with neither `method` nor `result`/`error`: a request without its method or
    /// a response without its outcome. A receiver waiting for an answer with this id takes
    /// it as that (broken) answer; otherwise it answers it as a broken request.
    Ambiguous(RequestId),
}

impl MalformedId {
    /// Reads the id of a frame with these members: `id`'s value, whether it has a
    /// `method`, whether it has a `result` or an `error`.
    pub(crate) fn of_frame(
        id: Option<RequestId>,
        has_method: bool,
        answers: bool,
    ) -> Option<MalformedId> {
        let id = id?;
        Some(match (has_method, answers) {
            (true, _) => MalformedId::Request(id),
            (false, true) => MalformedId::Response(id),
            (false, false) => MalformedId::Ambiguous(id),
        })
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The kind can quote the peer (a JSON parser's message names what it found).
        let kind = self.kind.to_string();
        write!(
            f,
            "{} ({} bytes): {}",
            PeerLine(&kind),
            self.len,
            self.excerpt
        )
    }
}

const EXCERPT_BYTES: usize = 160;

impl Malformed {
    pub(crate) fn new(kind: MalformedKind, frame: &[u8]) -> Malformed {
        Malformed {
            kind,
            excerpt: crate::excerpt(frame, EXCERPT_BYTES),
            len: frame.len(),
            id: None,
        }
    }

    pub(crate) fn with_id(mut self, id: Option<MalformedId>) -> Malformed {
        self.id = id;
        self
    }

    /// The id to answer this frame with: set when the frame is a request gone wrong whose
    /// `id` could be read.
    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.id {
            Some(MalformedId::Request(id) | MalformedId::Ambiguous(id)) => Some(id),
            _ => None,
        }
    }

    /// The id of the request this frame meant to answer: set when the frame is a response
    /// gone wrong (or only an id) whose `id` could be read. A connection fails that request
    /// at once, if it is waiting.
    pub fn response_id(&self) -> Option<&RequestId> {
        match &self.id {
            Some(MalformedId::Response(id) | MalformedId::Ambiguous(id)) => Some(id),
            _ => None,
        }
    }
}

/// The [`MalformedId`] of a JSON object that is not a valid message.
fn object_id(object: &Map<String, Value>) -> Option<MalformedId> {
    MalformedId::of_frame(
        object.get("id").and_then(RequestId::from_json),
        object.contains_key("method"),
        object.contains_key("result") || object.contains_key("error"),
    )
}

/// Decodes one frame (without its line terminator) into a message.
pub fn decode(frame: &[u8]) -> Result<Message, Malformed> {
    let frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
    let first = frame.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if std::str::from_utf8(frame).is_err() {
        return Err(Malformed::new(MalformedKind::InvalidUtf8, frame).with_id(answer_id(frame)));
    }
    match first {
        Some(b'{') | Some(b'[') => {}
        _ => return Err(Malformed::new(MalformedKind::NotJson, frame)),
    }
    let value: Value = match serde_json::from_slice(frame) {
        Ok(value) => value,
        Err(e) => {
            return Err(
                Malformed::new(MalformedKind::InvalidJson(e.to_string()), frame)
                    .with_id(answer_id(frame)),
            );
        }
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(Malformed::new(MalformedKind::Batch, frame)),
        _ => return Err(Malformed::new(MalformedKind::NotAnObject, frame)),
    };
    let id = object_id(&object);
    classify(object).map_err(|kind| Malformed::new(kind, frame).with_id(id))
}

fn classify(mut object: Map<String, Value>) -> Result<Message, MalformedKind> {
    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(MalformedKind::WrongVersion),
    }
    let invalid = |why: &str| MalformedKind::InvalidMessage(why.to_owned());
    let id = object.remove("id");
    if let Some(method) = object.remove("method") {
        let Value::String(method) = method else {
            return Err(invalid("`method` is not a string"));
        };
        if object.contains_key("result") || object.contains_key("error") {
            return Err(invalid("has both `method` and `result`/`error`"));
        }
        let params = object.remove("params");
        if let Some(p) = &params
            && !(p.is_object() || p.is_array())
        {
            return Err(invalid("`params` is neither an object nor an array"));
        }
        return match id {
            None => Ok(Message::Notification(Notification { method, params })),
            Some(raw) => match RequestId::from_json(&raw) {
                Some(id) => Ok(Message::Request(Request { id, method, params })),
                None => Err(invalid("request `id` is not a string or an integer")),
            },
        };
    }
    let result = object.remove("result");
    let error = object.remove("error");
    let id = match id {
        None => return Err(invalid("no `method` and no `id`")),
        Some(Value::Null) => None,
        Some(raw) => match RequestId::from_json(&raw) {
            Some(id) => Some(id),
            None => return Err(invalid("response `id` is not a string or an integer")),
        },
    };
    let outcome = match (result, error) {
        (Some(_), Some(_)) => return Err(invalid("response has both `result` and `error`")),
        (None, None) => return Err(invalid("response has neither `result` nor `error`")),
        (Some(result), None) => {
            if id.is_none() {
                return Err(invalid("result response with a null `id`"));
            }
            Ok(result)
        }
        (None, Some(error)) => Err(error_object(error)?),
    };
    Ok(Message::Response(Response { id, outcome }))
}

pub(crate) fn error_object(error: Value) -> Result<ErrorObject, MalformedKind> {
    let invalid = |why: &str| MalformedKind::InvalidMessage(why.to_owned());
    let Value::Object(mut error) = error else {
        return Err(invalid("`error` is not an object"));
    };
    let code = match error.get("code") {
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| invalid("error `code` is not an integer"))?,
        _ => return Err(invalid("error `code` is missing or not an integer")),
    };
    let message = match error.remove("message") {
        Some(Value::String(m)) => m,
        _ => return Err(invalid("error `message` is missing or not a string")),
    };
    Ok(ErrorObject {
        code,
        message,
        data: error.remove("data"),
    })
}

/// Borrowed view of an outgoing message, serialised straight to bytes without building a
/// `Value` first.
#[derive(Debug, Clone, Copy)]
pub enum Outgoing<'a> {
    /// A request.
    Request {
        /// Its id.
        id: &'a RequestId,
        /// The method.
        method: &'a str,
        /// The parameters.
        params: Option<&'a Value>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: &'a str,
        /// The parameters.
        params: Option<&'a Value>,
    },
    /// A response carrying a result.
    Result {
        /// The id it answers.
        id: &'a RequestId,
        /// The result.
        result: &'a Value,
    },
    /// A response carrying an error.
    Error {
        /// The id it answers.
        id: Option<&'a RequestId>,
        /// The error.
        error: &'a ErrorObject,
    },
}

impl Serialize for Outgoing<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Outgoing::Request { id, method, params } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("method", method)?;
                if let Some(params) = params {
                    map.serialize_entry("params", params)?;
                }
            }
            Outgoing::Notification { method, params } => {
                map.serialize_entry("method", method)?;
                if let Some(params) = params {
                    map.serialize_entry("params", params)?;
                }
            }
            Outgoing::Result { id, result } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", result)?;
            }
            Outgoing::Error { id, error } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}

/// A request's parameters, written as JSON text into the request's line. A `Value` is
/// serialised; the session writes its parameters and `_meta` from borrowed parts, its
/// constant keys as bytes, without assembling a `Value`.
pub trait WriteParams {
    /// Appends the parameters' JSON text to `buf`. On error `buf` may hold part of it (the
    /// request line is then dropped).
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

impl WriteParams for Value {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(buf, self)
    }
}

/// Any serialisable parameters, written by serde.
pub(crate) struct Serialized<'a, P: ?Sized>(pub(crate) &'a P);

impl<P: Serialize + ?Sized> WriteParams for Serialized<'_, P> {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(buf, self.0)
    }
}

/// A request whose parameters write themselves ([`WriteParams`]).
pub(crate) struct RequestLine<'a, P: ?Sized> {
    pub(crate) id: &'a RequestId,
    pub(crate) method: &'a str,
    pub(crate) params: Option<&'a P>,
}

impl<P: WriteParams + ?Sized> RequestLine<'_, P> {
    /// Appends the request and a newline to `buf`, exactly as serialising the struct would
    /// (the envelope's constant parts are written as they are, not escaped each time).
    /// Parameters that cannot be serialised (a map with non-string keys) leave `buf` as it
    /// was and return the encoder's error.
    pub(crate) fn encode_line(&self, buf: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let start = buf.len();
        let written = (|| {
            buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            serde_json::to_writer(&mut *buf, self.id)?;
            buf.extend_from_slice(b",\"method\":");
            serde_json::to_writer(&mut *buf, self.method)?;
            if let Some(params) = self.params {
                buf.extend_from_slice(b",\"params\":");
                params.write_params(buf)?;
            }
            buf.extend_from_slice(b"}\n");
            Ok(())
        })();
        if written.is_err() {
            buf.truncate(start);
        }
        written
    }
}

impl Outgoing<'_> {
    /// Appends the message and a newline to `buf`. JSON text never contains a raw newline,
    /// so the frame is always exactly one line.
    pub fn encode_line(&self, buf: &mut Vec<u8>) {
        // Serialising maps of `Value`s into a Vec cannot fail.
        if serde_json::to_writer(&mut *buf, self).is_err() {
            buf.extend_from_slice(b"{}");
        }
        buf.push(b'\n');
    }
}

impl Message {
    /// A borrowed view for encoding.
    pub fn as_outgoing(&self) -> Outgoing<'_> {
        match self {
            Message::Request(r) => Outgoing::Request {
                id: &r.id,
                method: &r.method,
                params: r.params.as_ref(),
            },
            Message::Notification(n) => Outgoing::Notification {
                method: &n.method,
                params: n.params.as_ref(),
            },
            Message::Response(Response {
                id,
                outcome: Ok(result),
            }) => match id {
                Some(id) => Outgoing::Result { id, result },
                None => Outgoing::Error {
                    id: None,
                    error: &NULL_ID_RESULT,
                },
            },
            Message::Response(Response {
                id,
                outcome: Err(error),
            }) => Outgoing::Error {
                id: id.as_ref(),
                error,
            },
        }
    }
}

static NULL_ID_RESULT: ErrorObject = ErrorObject {
    code: codes::INTERNAL_ERROR,
    message: String::new(),
    data: None,
};

/// Serialises a message as one line with its newline.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    message.as_outgoing().encode_line(&mut buf);
    buf
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(input: &str, expect: Expect) {
        let actual = match decode(input.as_bytes()) {
            Ok(message) => format!("{message:?}"),
            Err(malformed) => shown_malformed(&malformed),
        };
        expect.assert_eq(&actual);
    }

    fn shown_malformed(malformed: &Malformed) -> String {
        match &malformed.id {
            None => format!("malformed: {malformed}"),
            Some(id) => format!("malformed ({id:?}): {malformed}"),
        }
    }

    #[test]
    fn a_broken_frame_keeps_an_id_it_can_be_answered_by() {
        let ids = |input: &str| match decode(input.as_bytes()) {
            Ok(message) => format!("valid: {message:?}"),
            Err(malformed) => format!(
                "{:?} → answer with {:?}",
                malformed.id,
                malformed.request_id()
            ),
        };
        let frames = [
            r#"{"jsonrpc":"2.0","id":5}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"m","params":3}"#,
            r#"{"jsonrpc":"1.0","id":5,"method":"m"}"#,
            r#"{"id":5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"m","result":1}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":"x","message":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":5,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":7}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
            r#"[{"jsonrpc":"2.0","id":5,"method":"m"}]"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"m""#,
        ];
        let shown: Vec<String> = frames
            .iter()
            .map(|f| format!("{f}\n  {}", ids(f)))
            .collect();
        expect![[r#"
            {"jsonrpc":"2.0","id":5}
              Some(Ambiguous(5)) → answer with Some(5)
            {"jsonrpc":"2.0","id":5,"method":7}
              Some(Request(5)) → answer with Some(5)
            {"jsonrpc":"2.0","id":"s","method":"m","params":3}
              Some(Request("s")) → answer with Some("s")
            {"jsonrpc":"1.0","id":5,"method":"m"}
              Some(Request(5)) → answer with Some(5)
            {"id":5,"method":"m"}
              Some(Request(5)) → answer with Some(5)
            {"jsonrpc":"2.0","id":5,"method":"m","result":1}
              Some(Request(5)) → answer with Some(5)
            {"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}}
              Some(Response(5)) → answer with None
            {"jsonrpc":"2.0","id":5,"error":{"code":"x","message":"x"}}
              Some(Response(5)) → answer with None
            {"jsonrpc":"1.0","id":5,"result":1}
              Some(Response(5)) → answer with None
            {"jsonrpc":"2.0","id":null,"method":7}
              None → answer with None
            {"jsonrpc":"2.0","id":1.5,"method":"m"}
              None → answer with None
            {"jsonrpc":"2.0","id":{"a":1},"method":7}
              None → answer with None
            {"jsonrpc":"2.0","method":7}
              None → answer with None
            [{"jsonrpc":"2.0","id":5,"method":"m"}]
              None → answer with None
            {"jsonrpc":"2.0","id":5,"method":"m"
              None → answer with None"#]]
        .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn ids_keep_their_kind() {
        check(
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            expect![[r#"Response(Response { id: Some(7), outcome: Ok(Object {}) })"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            expect![[r#"Response(Response { id: Some("7"), outcome: Ok(Object {}) })"#]],
        );
        assert_ne!(RequestId::from(7), RequestId::from("7"));
    }

    #[test]
    fn error_data_is_kept() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no","data":{"supported":["2025-11-25"]}}}"#,
            expect![[
                r#"Response(Response { id: Some(1), outcome: Err(ErrorObject { code: -32022, message: "no", data: Some(Object {"supported": Array [String("2025-11-25")]}) }) })"#
            ]],
        );
    }

    #[test]
    fn requests_and_notifications() {
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
            expect![[r#"Request(Request { id: "a", method: "ping", params: None })"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            expect![[
                r#"Notification(Notification { method: "notifications/progress", params: Some(Object {"progress": Number(1)}) })"#
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
            r#"{"jsonrpc":"2.0","id":1,"#,
            expect![[
                r#"malformed: invalid JSON: EOF while parsing a value at line 1 column 24 (24 bytes): {"jsonrpc":"2.0","id":1,"#
            ]],
        );
        check(
            r#"{"id":1,"result":{}}"#,
            expect![[
                r#"malformed (Response(1)): `jsonrpc` missing or not "2.0" (20 bytes): {"id":1,"result":{}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            expect![[
                r#"malformed (Response(1)): `jsonrpc` missing or not "2.0" (36 bytes): {"jsonrpc":"1.0","id":1,"result":{}}"#
            ]],
        );
        check(
            r#"[{"jsonrpc":"2.0","method":"x"}]"#,
            expect![[
                r#"malformed: a JSON-RPC batch, which is not allowed (32 bytes): [{"jsonrpc":"2.0","method":"x"}]"#
            ]],
        );
        check(
            "[]",
            expect![[r#"malformed: a JSON-RPC batch, which is not allowed (2 bytes): []"#]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            expect![[
                r#"malformed: not a JSON-RPC message: response `id` is not a string or an integer (38 bytes): {"jsonrpc":"2.0","id":1.5,"result":{}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            expect![[
                r#"malformed (Response(1)): not a JSON-RPC message: response has both `result` and `error` (69 bytes): {"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1}"#,
            expect![[
                r#"malformed (Ambiguous(1)): not a JSON-RPC message: response has neither `result` nor `error` (24 bytes): {"jsonrpc":"2.0","id":1}"#
            ]],
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
            expect![[
                r#"malformed (Response(1)): not a JSON-RPC message: error `code` is missing or not an integer (59 bytes): {"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#
            ]],
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\"}",
            expect![[
                r#"malformed: invalid JSON: unexpected end of hex escape at line 1 column 34 (35 bytes): {"jsonrpc":"2.0","method":"\\ud800"}"#
            ]],
        );
        let invalid_utf8 = decode(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}");
        assert!(matches!(
            invalid_utf8,
            Err(Malformed {
                kind: MalformedKind::InvalidUtf8,
                ..
            })
        ));
    }

    #[test]
    fn error_with_null_id_is_a_response() {
        check(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
            expect![[
                r#"Response(Response { id: None, outcome: Err(ErrorObject { code: -32700, message: "parse error", data: None }) })"#
            ]],
        );
    }

    #[test]
    fn bom_is_skipped_and_round_trip_is_one_line() {
        let message = decode(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}");
        assert!(message.is_ok());
        let request = Message::Request(Request {
            id: RequestId::from("line\nbreak"),
            method: "tools/call".into(),
            params: Some(serde_json::json!({"text": "a\nb"})),
        });
        let line = encode(&request);
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        assert_eq!(decode(&line[..line.len() - 1]), Ok(request));
    }
}
