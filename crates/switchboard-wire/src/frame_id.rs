//! Recovering the id of an answer that cannot be decoded: a frame over the size cap (read
//! as it streams past, never buffered) or one that is not valid JSON (invalid UTF-8, a lone
//! surrogate, nesting too deep, text after the object, cut short).
//!
//! [`IdScanner`] is a small state machine fed the frame's bytes in any chunks. It follows
//! JSON strings and nesting depth (a counter, no stack) and reads only the members of the
//! top-level object: which of `method`, `result` and `error` it has, and the value of `id`
//! when that value is short. Bytes are never kept beyond the start of one key (a few bytes)
//! and one id value ([`MAX_ID_BYTES`]), so memory stays bounded however long the frame is.
//!
//! It answers only when the answer is sure: the frame must start as a JSON object; the id
//! is its own top-level `id` member (never one nested in `result`), complete (followed by
//! `,` or `}`), and a string or an integer, read with the kind it has (`7` is not `"7"`); the
//! frame must carry `result` or `error` and no `method`, so that it meant to answer. A key
//! written with escapes makes the whole frame unsure (it could spell `id`). Whatever follows
//! the top-level object (a second message, garbage) is ignored.

use crate::message::{MalformedId, RequestId};

/// The longest `id` value (as JSON text) read from an undecodable frame.
pub(crate) const MAX_ID_BYTES: usize = 128;
/// The longest top-level key kept (the keys that matter are shorter).
const MAX_KEY_BYTES: usize = 8;
/// A UTF-8 byte-order mark, skipped at the start.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where the scanner is in the frame's top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Before the first non-blank byte; the count is how much of a BOM was seen.
    Start(usize),
    /// Expecting a key or the end of the object.
    BeforeKey,
    /// Inside a key string.
    Key,
    /// After a key, expecting `:`.
    AfterKey,
    /// After `:`, expecting the value.
    BeforeValue,
    /// Inside a member's value (nested containers are counted by `depth`).
    Value,
    /// The top-level object ended; the rest is ignored.
    Ended,
    /// Not a JSON object, or not one whose members can be followed: no answer.
    Lost,
}

/// Which top-level member's value is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Other,
}

/// What the `id` member holds so far.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IdSlot {
    /// No `id` member seen.
    Absent,
    /// An `id` member that is not a readable string or integer (or not finished).
    Unreadable,
    /// A complete, readable id.
    Read(RequestId),
}

/// Follows one frame's bytes and recovers the id of the answer it meant to be.
#[derive(Debug)]
pub(crate) struct IdScanner {
    place: Place,
    /// Nesting depth inside the current member's value (0: the value itself).
    depth: usize,
    in_string: bool,
    escaped: bool,
    key: Vec<u8>,
    key_escaped: bool,
    member: Member,
    /// The `id` value's text while it is read; `None` once it is over [`MAX_ID_BYTES`] or
    /// turned out to be a container.
    id_text: Option<Vec<u8>>,
    id: IdSlot,
    has_method: bool,
    answers: bool,
    unsure: bool,
}

impl Default for IdScanner {
    fn default() -> Self {
        IdScanner::new()
    }
}

impl IdScanner {
    /// A scanner at the start of a frame.
    pub(crate) fn new() -> IdScanner {
        IdScanner {
            place: Place::Start(0),
            depth: 0,
            in_string: false,
            escaped: false,
            key: Vec::with_capacity(MAX_KEY_BYTES),
            key_escaped: false,
            member: Member::Other,
            id_text: None,
            id: IdSlot::Absent,
            has_method: false,
            answers: false,
            unsure: false,
        }
    }

    /// Reads the next bytes of the frame.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if matches!(self.place, Place::Ended | Place::Lost) {
                return;
            }
            // Long runs (string contents, nested values) are skipped without a step per byte.
            if !self.keeps_bytes() {
                let rest = &bytes[i..];
                let skip = if self.in_string {
                    if self.escaped {
                        0
                    } else {
                        rest.iter()
                            .position(|&b| b == b'"' || b == b'\\')
                            .unwrap_or(rest.len())
                    }
                } else if self.place == Place::Value && self.depth > 0 {
                    rest.iter()
                        .position(|&b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))
                        .unwrap_or(rest.len())
                } else {
                    0
                };
                i += skip;
                if i == bytes.len() {
                    return;
                }
            }
            self.step(bytes[i]);
            i += 1;
        }
    }

    /// Whether the current byte must be looked at (kept or counted) one by one.
    fn keeps_bytes(&self) -> bool {
        match self.place {
            Place::Key => true,
            Place::Value => self.member == Member::Id && self.id_text.is_some(),
            _ => !self.in_string && self.depth == 0,
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        match self.place {
            Place::Start(bom) => {
                if bom < BOM.len() && byte == BOM[bom] {
                    self.place = Place::Start(bom + 1);
                } else if bom > 0 && bom < BOM.len() {
                    self.place = Place::Lost;
                } else if byte == b'{' {
                    self.place = Place::BeforeKey;
                } else if !byte.is_ascii_whitespace() {
                    self.place = Place::Lost;
                }
            }
            Place::BeforeKey => match byte {
                b'"' => {
                    self.place = Place::Key;
                    self.in_string = true;
                    self.key.clear();
                    self.key_escaped = false;
                }
                b'}' => self.place = Place::Ended,
                b if b.is_ascii_whitespace() => {}
                _ => self.place = Place::Lost,
            },
            Place::AfterKey => match byte {
                b':' => self.place = Place::BeforeValue,
                b if b.is_ascii_whitespace() => {}
                _ => self.place = Place::Lost,
            },
            Place::BeforeValue => {
                if byte.is_ascii_whitespace() {
                    return;
                }
                self.place = Place::Value;
                if self.member == Member::Id {
                    // A later `id` replaces an earlier one, as when building a tree.
                    self.id = IdSlot::Unreadable;
                    self.id_text = Some(Vec::with_capacity(16));
                }
                self.value_byte(byte);
            }
            Place::Value => self.value_byte(byte),
            Place::Key | Place::Ended | Place::Lost => {}
        }
    }

    /// A byte inside a string (key or value).
    fn string_byte(&mut self, byte: u8) {
        if self.place == Place::Key {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
                self.key_escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                self.end_key();
                return;
            }
            if self.key.len() < MAX_KEY_BYTES + 1 {
                self.key.push(byte);
            }
            return;
        }
        self.keep_id_byte(byte);
        if self.escaped {
            self.escaped = false;
        } else if byte == b'\\' {
            self.escaped = true;
        } else if byte == b'"' {
            self.in_string = false;
        }
    }

    fn end_key(&mut self) {
        self.place = Place::AfterKey;
        if self.key_escaped {
            // `"\u0069d"` is `id`: whatever the frame says, it cannot be read for sure.
            self.unsure = true;
        }
        self.member = Member::Other;
        match self.key.as_slice() {
            b"id" => self.member = Member::Id,
            b"method" => self.has_method = true,
            b"result" | b"error" => self.answers = true,
            _ => {}
        }
    }

    /// A byte of a member's value outside strings.
    fn value_byte(&mut self, byte: u8) {
        match byte {
            b'"' => {
                self.in_string = true;
                self.keep_id_byte(byte);
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.member == Member::Id {
                    // An object or array is never an id.
                    self.id_text = None;
                }
            }
            b'}' | b']' if self.depth > 0 => self.depth -= 1,
            b',' | b'}' if self.depth == 0 => {
                self.end_value();
                self.place = if byte == b',' {
                    Place::BeforeKey
                } else {
                    Place::Ended
                };
            }
            b']' => self.place = Place::Lost,
            _ => self.keep_id_byte(byte),
        }
    }

    /// Keeps a byte of the `id` value (at its own level: nested bytes never reach here).
    fn keep_id_byte(&mut self, byte: u8) {
        if self.member != Member::Id || self.depth > 0 {
            return;
        }
        if let Some(text) = &mut self.id_text {
            if text.len() < MAX_ID_BYTES {
                text.push(byte);
            } else {
                self.id_text = None;
            }
        }
    }

    fn end_value(&mut self) {
        if self.member != Member::Id {
            return;
        }
        self.id = match self.id_text.take() {
            Some(text) => match serde_json::from_slice::<serde_json::Value>(&text) {
                Ok(value) => match RequestId::from_json(&value) {
                    Some(id) => IdSlot::Read(id),
                    None => IdSlot::Unreadable,
                },
                Err(_) => IdSlot::Unreadable,
            },
            None => IdSlot::Unreadable,
        };
    }

    /// The id of the answer the frame meant to be, if it can be told for sure.
    pub(crate) fn finish(self) -> Option<MalformedId> {
        if matches!(self.place, Place::Start(_) | Place::Lost) || self.unsure {
            return None;
        }
        if !self.answers || self.has_method {
            return None;
        }
        match self.id {
            IdSlot::Read(id) => Some(MalformedId::Response(id)),
            IdSlot::Absent | IdSlot::Unreadable => None,
        }
    }
}

/// [`IdScanner`] over a whole frame.
pub(crate) fn answer_id(frame: &[u8]) -> Option<MalformedId> {
    let mut scanner = IdScanner::new();
    scanner.feed(frame);
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    /// What the scanner recovers from `frame`, checked to be the same whether the frame
    /// arrives whole, byte by byte, or in chunks of 7.
    fn recovered(frame: &[u8]) -> String {
        let whole = answer_id(frame);
        let mut by_byte = IdScanner::new();
        for byte in frame {
            by_byte.feed(std::slice::from_ref(byte));
        }
        let mut by_chunk = IdScanner::new();
        for chunk in frame.chunks(7) {
            by_chunk.feed(chunk);
        }
        assert_eq!(by_byte.finish(), whole, "byte by byte");
        assert_eq!(by_chunk.finish(), whole, "in chunks");
        match whole {
            Some(MalformedId::Response(id)) => format!("answer to {id}"),
            Some(other) => format!("{other:?}"),
            None => "none".to_owned(),
        }
    }

    #[test]
    fn ids_are_recovered_only_when_sure() {
        let huge = "x".repeat(3 * 1024 * 1024);
        let long_id = format!("\"{}\"", "i".repeat(MAX_ID_BYTES));
        let longest_id = format!("\"{}\"", "i".repeat(MAX_ID_BYTES - 2));
        let rows: Vec<(&str, String)> = vec![
            ("number", r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.into()),
            ("negative", r#"{"jsonrpc":"2.0","id":-3,"error":{}}"#.into()),
            ("string", r#"{"jsonrpc":"2.0","id":"7","result":{}}"#.into()),
            (
                "escaped string",
                r#"{"jsonrpc":"2.0","id":"a\"b\\c\u0041","result":{}}"#.into(),
            ),
            (
                "spaces and BOM",
                "\u{feff} { \"id\" : 12 , \"result\" : 1 }".into(),
            ),
            (
                "id after a huge result",
                format!(
                    r#"{{"jsonrpc":"2.0","result":{{"t":"{huge}","n":[{{"id":1}}]}},"id":42}}"#
                ),
            ),
            (
                "id before a huge result, cut short",
                format!(r#"{{"jsonrpc":"2.0","id":43,"result":{{"t":"{huge}"#),
            ),
            (
                "id nested inside result",
                r#"{"jsonrpc":"2.0","result":{"id":5,"a":[{"id":6}]}}"#.into(),
            ),
            (
                "nested id in a string",
                r#"{"jsonrpc":"2.0","result":"\",\"id\":5,\"x\":\"","error":1}"#.into(),
            ),
            ("no id", r#"{"jsonrpc":"2.0","result":{}}"#.into()),
            (
                "id too long",
                format!(r#"{{"jsonrpc":"2.0","id":{long_id},"result":{{}}}}"#),
            ),
            (
                "id at the length cap",
                format!(r#"{{"jsonrpc":"2.0","id":{longest_id},"result":{{}}}}"#),
            ),
            (
                "null id",
                r#"{"jsonrpc":"2.0","id":null,"result":{}}"#.into(),
            ),
            (
                "float id",
                r#"{"jsonrpc":"2.0","id":2.0,"result":{}}"#.into(),
            ),
            (
                "id beyond i64",
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#.into(),
            ),
            (
                "object id",
                r#"{"jsonrpc":"2.0","id":{"n":1},"result":{}}"#.into(),
            ),
            (
                "array id",
                r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#.into(),
            ),
            (
                "lone surrogate in the id",
                r#"{"jsonrpc":"2.0","id":"\ud800","result":{}}"#.into(),
            ),
            (
                "id cut short",
                r#"{"jsonrpc":"2.0","result":{},"id":12"#.into(),
            ),
            (
                "a later id wins",
                r#"{"jsonrpc":"2.0","id":1,"result":{},"id":"two"}"#.into(),
            ),
            (
                "a later unreadable id wins",
                r#"{"jsonrpc":"2.0","id":1,"result":{},"id":1.5}"#.into(),
            ),
            (
                "escaped key",
                r#"{"jsonrpc":"2.0","id":1,"\u0069d":2,"result":{}}"#.into(),
            ),
            (
                "a request (method)",
                r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#.into(),
            ),
            (
                "a notification",
                r#"{"jsonrpc":"2.0","method":"m","params":{}}"#.into(),
            ),
            (
                "neither result nor error",
                r#"{"jsonrpc":"2.0","id":7}"#.into(),
            ),
            (
                "trailing garbage",
                r#"{"jsonrpc":"2.0","id":8,"result":{}} trailing"#.into(),
            ),
            (
                "two per line, the answer second",
                r#"{"jsonrpc":"2.0","method":"m"}{"jsonrpc":"2.0","id":9,"result":{}}"#.into(),
            ),
            (
                "a batch",
                r#"[{"jsonrpc":"2.0","id":10,"result":{}}]"#.into(),
            ),
            ("text", "Server started".into()),
            ("empty", String::new()),
            (
                "deep nesting",
                format!(
                    r#"{{"jsonrpc":"2.0","id":11,"result":{}{}}}"#,
                    "[".repeat(100_000),
                    "]".repeat(100_000)
                ),
            ),
            (
                "broken member syntax",
                r#"{"jsonrpc" "2.0","id":12,"result":{}}"#.into(),
            ),
        ];
        let shown: Vec<String> = rows
            .iter()
            .map(|(what, frame)| format!("{what}: {}", recovered(frame.as_bytes())))
            .collect();
        expect![[r#"
            number: answer to 7
            negative: answer to -3
            string: answer to "7"
            escaped string: answer to "a\"b\\cA"
            spaces and BOM: answer to 12
            id after a huge result: answer to 42
            id before a huge result, cut short: answer to 43
            id nested inside result: none
            nested id in a string: none
            no id: none
            id too long: none
            id at the length cap: answer to "iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii"
            null id: none
            float id: none
            id beyond i64: none
            object id: none
            array id: none
            lone surrogate in the id: none
            id cut short: none
            a later id wins: answer to "two"
            a later unreadable id wins: none
            escaped key: none
            a request (method): none
            a notification: none
            neither result nor error: none
            trailing garbage: answer to 8
            two per line, the answer second: none
            a batch: none
            text: none
            empty: none
            deep nesting: answer to 11
            broken member syntax: none"#]]
        .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn bytes_that_are_not_utf8_do_not_lose_the_structure() {
        let mut frame = br#"{"jsonrpc":"2.0","id":3,"result":{"text":"bad "#.to_vec();
        frame.extend_from_slice(b"\xff\xfe\xc3\x28 bytes\"}}");
        assert_eq!(recovered(&frame), "answer to 3");
    }

    #[test]
    fn memory_stays_bounded_however_long_the_frame() {
        let mut scanner = IdScanner::new();
        scanner.feed(br#"{"jsonrpc":"2.0","id":""#);
        for _ in 0..64 {
            scanner.feed(&[b'i'; 4096]);
        }
        assert!(scanner.id_text.is_none());
        scanner.feed(br#"","result":{"k":""#);
        for _ in 0..64 {
            scanner.feed(&[b'k'; 4096]);
        }
        assert!(scanner.key.capacity() <= 2 * MAX_KEY_BYTES + 8);
        scanner.feed(br#""}}"#);
        assert_eq!(scanner.finish(), None);
    }
}
