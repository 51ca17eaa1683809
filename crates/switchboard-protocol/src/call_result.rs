//! Reading a `tools/call` result straight from its JSON text, without building a `Value`
//! tree of the whole result: the hot path of every tool call. The outcome is the same as
//! [`ResultType::of`] followed by [`CallToolResult::from_value`] on the parsed tree.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::{CallToolResult, ContentBlock, ResultType, ShapeError};

impl CallToolResult {
    /// Reads a `tools/call` result from its JSON text, with its `resultType`. The result is
    /// only meaningful when the type is [`ResultType::Complete`]; for the others, parse the
    /// text as a tree and handle them as [`ResultType::of`] says.
    pub fn from_json_text(text: &str) -> (ResultType, Result<CallToolResult, ShapeError>) {
        if let Some(result) = one_text_block(text) {
            return (ResultType::Complete, Ok(result));
        }
        let is_object = text.trim_start().starts_with('{');
        if !is_object {
            return (
                ResultType::Complete,
                Err("the tool result is not an object".into()),
            );
        }
        let fields = match serde_json::from_str::<Fields>(text) {
            Ok(fields) => fields,
            Err(e) => {
                return (
                    ResultType::Complete,
                    Err(format!("the tool result is not valid JSON: {e}").into()),
                );
            }
        };
        (fields.result_type.clone(), fields.into_result())
    }
}

/// The result most tools send, compact: one text block and nothing else but `isError`
/// (as the Python SDK and rmcp write it) and a `resultType` of `"complete"` (2026-07-28;
/// first, as rmcp writes it, or after the array), each at most once:
/// `{"content":[{"type":"text","text":S}]}`. The ends are compared as bytes and `S` must
/// be exactly one JSON string, so the text has exactly those members and reads as the
/// member reader would read it; every other text returns `None` and takes that reader.
fn one_text_block(text: &str) -> Option<CallToolResult> {
    const HEAD: &str = r#"{"content":[{"type":"text","text":"#;
    const COMPLETE_FIRST: &str = r#"{"resultType":"complete","content":[{"type":"text","text":"#;
    const IS_ERROR: &str = r#","isError":true"#;
    const NOT_ERROR: &str = r#","isError":false"#;
    const COMPLETE: &str = r#","resultType":"complete""#;
    let (rest, mut complete) = match text.strip_prefix(COMPLETE_FIRST) {
        Some(rest) => (rest, true),
        None => (text.strip_prefix(HEAD)?, false),
    };
    let mut rest = rest.strip_suffix('}')?;
    let mut is_error = None;
    loop {
        if let (None, Some(before)) = (is_error, rest.strip_suffix(IS_ERROR)) {
            (is_error, rest) = (Some(true), before);
        } else if let (None, Some(before)) = (is_error, rest.strip_suffix(NOT_ERROR)) {
            (is_error, rest) = (Some(false), before);
        } else if let (false, Some(before)) = (complete, rest.strip_suffix(COMPLETE)) {
            (complete, rest) = (true, before);
        } else {
            break;
        }
    }
    let text = serde_json::from_str::<String>(rest.strip_suffix("}]")?).ok()?;
    Some(CallToolResult {
        content: vec![ContentBlock::Text { text }],
        structured_content: None,
        is_error: is_error.unwrap_or(false),
        content_missing: false,
    })
}

/// The fields a tool result is read from; others are skipped. A repeated key keeps its
/// last value, as when building a tree.
#[derive(Default)]
struct Fields {
    content: Option<ContentField>,
    is_error: Option<Value>,
    structured_content: Option<Value>,
    result_type: ResultType,
}

impl Fields {
    /// The same checks, in the same order, as [`CallToolResult::from_value`].
    fn into_result(self) -> Result<CallToolResult, ShapeError> {
        let (content, content_missing) = match self.content {
            Some(ContentField::Blocks(blocks)) => (blocks, false),
            Some(ContentField::NotArray) => {
                return Err("the tool result's `content` is not an array".into());
            }
            None => (Vec::new(), true),
        };
        let is_error = match self.is_error {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err("the tool result's `isError` is not a boolean".into()),
        };
        Ok(CallToolResult {
            content,
            structured_content: self.structured_content,
            is_error,
            content_missing,
        })
    }
}

/// One content block, read in one pass: a plain text block (`type` and `text` only, the
/// common case) directly; anything else as the tree [`ContentBlock::from_json`] reads, keys
/// in the order the server sent them.
struct Block(ContentBlock);

enum BlockKey {
    Type,
    Text,
    Other(String),
}

impl BlockKey {
    fn name(self) -> String {
        match self {
            BlockKey::Type => "type".to_owned(),
            BlockKey::Text => "text".to_owned(),
            BlockKey::Other(name) => name,
        }
    }
}

impl<'de> Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = BlockKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<BlockKey, E> {
                Ok(match key {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    other => BlockKey::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A member's value: a `type` of `"text"` is kept as a mark, not as an allocated string
/// (it becomes one only if the block turns out not to be plain text).
enum Member {
    TextKind,
    Other(Value),
}

impl Member {
    fn into_value(self) -> Value {
        match self {
            Member::TextKind => Value::String("text".to_owned()),
            Member::Other(value) => value,
        }
    }
}

/// A block's `type`: any JSON value, read as a tree unless it is the string `"text"`.
struct Kind(Member);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl<'de> Visitor<'de> for KindVisitor {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a block type")
            }
            fn visit_str<E: de::Error>(self, kind: &str) -> Result<Kind, E> {
                Ok(Kind(if kind == "text" {
                    Member::TextKind
                } else {
                    Member::Other(Value::from(kind))
                }))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Kind, E> {
                Ok(Kind(Member::Other(Value::from(n))))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Kind, E> {
                Ok(Kind(Member::Other(Value::from(n))))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Kind, E> {
                Ok(Kind(Member::Other(Value::from(n))))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Kind, E> {
                Ok(Kind(Member::Other(Value::from(b))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
                Ok(Kind(Member::Other(Value::Null)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Kind, A::Error> {
                let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(Kind(Member::Other(value)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Kind, A::Error> {
                let value = Value::deserialize(MapAccessDeserializer::new(map))?;
                Ok(Kind(Member::Other(value)))
            }
        }
        deserializer.deserialize_any(KindVisitor)
    }
}

/// A block's `type` and `text` before any other key was seen, in arrival order (two
/// slots: a third key, or a repeated one, turns the block into a tree).
#[derive(Default)]
struct PlainFields {
    seen: [Option<(BlockKey, Member)>; 2],
}

impl PlainFields {
    fn has(&self, key: &BlockKey) -> bool {
        self.seen.iter().flatten().any(|(k, _)| {
            matches!(
                (k, key),
                (BlockKey::Type, BlockKey::Type) | (BlockKey::Text, BlockKey::Text)
            )
        })
    }

    /// Keeps `type` or `text`; hands the entry back when both slots are taken.
    fn push(&mut self, key: BlockKey, value: Member) -> Option<(BlockKey, Member)> {
        match self.seen.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => {
                *slot = Some((key, value));
                None
            }
            None => Some((key, value)),
        }
    }

    fn into_tree(self) -> Map<String, Value> {
        let mut tree = Map::new();
        for (key, value) in self.seen.into_iter().flatten() {
            tree.insert(key.name(), value.into_value());
        }
        tree
    }

    fn into_block(mut self) -> ContentBlock {
        let kind_is_text = self
            .seen
            .iter()
            .flatten()
            .any(|(key, value)| matches!((key, value), (BlockKey::Type, Member::TextKind)));
        if kind_is_text {
            for slot in &mut self.seen {
                if let Some((BlockKey::Text, Member::Other(Value::String(text)))) = slot {
                    return ContentBlock::Text {
                        text: std::mem::take(text),
                    };
                }
            }
        }
        ContentBlock::from_json(Value::Object(self.into_tree()))
    }
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor;
        impl<'de> Visitor<'de> for BlockVisitor {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                let mut plain = PlainFields::default();
                let mut tree: Option<Map<String, Value>> = None;
                while let Some(key) = map.next_key::<BlockKey>()? {
                    let value = match key {
                        BlockKey::Type => map.next_value::<Kind>()?.0,
                        _ => Member::Other(map.next_value()?),
                    };
                    if let Some(tree) = &mut tree {
                        tree.insert(key.name(), value.into_value());
                        continue;
                    }
                    let overflow = if matches!(key, BlockKey::Other(_)) || plain.has(&key) {
                        Some((key, value))
                    } else {
                        plain.push(key, value)
                    };
                    if let Some((key, value)) = overflow {
                        // A repeated key replaces the first in place, as in a tree.
                        let mut built = std::mem::take(&mut plain).into_tree();
                        built.insert(key.name(), value.into_value());
                        tree = Some(built);
                    }
                }
                Ok(Block(match tree {
                    Some(tree) => ContentBlock::from_json(Value::Object(tree)),
                    None => plain.into_block(),
                }))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Block, A::Error> {
                let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(Block(ContentBlock::from_json(value)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::from(text))))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::from(n))))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::from(n))))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::from(n))))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::from(b))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Block, E> {
                Ok(Block(ContentBlock::from_json(Value::Null)))
            }
        }
        deserializer.deserialize_any(BlockVisitor)
    }
}

/// `content`: the blocks, or anything that is not an array.
enum ContentField {
    Blocks(Vec<ContentBlock>),
    NotArray,
}

enum Key {
    Content,
    IsError,
    StructuredContent,
    ResultType,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "content" => Key::Content,
                    "isError" => Key::IsError,
                    "structuredContent" => Key::StructuredContent,
                    "resultType" => Key::ResultType,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Fields::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Content => fields.content = Some(map.next_value()?),
                        Key::IsError => fields.is_error = Some(map.next_value()?),
                        Key::StructuredContent => {
                            fields.structured_content = Some(map.next_value()?);
                        }
                        Key::ResultType => {
                            fields.result_type = map.next_value::<ResultTypeField>()?.0
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(fields)
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

impl<'de> Deserialize<'de> for ContentField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = ContentField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("content")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(Block(block)) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(ContentField::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ContentField::NotArray)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentField::NotArray)
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// `resultType` read as [`ResultType::of`] reads it: a non-string means complete.
pub(crate) struct ResultTypeField(pub(crate) ResultType);

impl<'de> Deserialize<'de> for ResultTypeField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let kind = match Value::deserialize(deserializer)? {
            Value::String(kind) => match kind.as_str() {
                "complete" => ResultType::Complete,
                "input_required" => ResultType::InputRequired,
                _ => ResultType::Other(kind),
            },
            _ => ResultType::Complete,
        };
        Ok(ResultTypeField(kind))
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// Reads with both paths, checks they agree, and shows the result.
    fn check(text: &str, expect: Expect) {
        let (kind, fast) = CallToolResult::from_json_text(text);
        let tree: Value = serde_json::from_str(text).expect("test input is JSON");
        assert_eq!(kind, ResultType::of(&tree), "result types disagree");
        if kind == ResultType::Complete {
            assert_eq!(fast, CallToolResult::from_value(tree), "paths disagree");
        }
        expect.assert_eq(&format!("{kind:?} {fast:?}"));
    }

    #[test]
    fn text_results() {
        check(
            r#"{"content":[{"type":"text","text":"hello"}]}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [Text { text: "hello" }], structured_content: None, is_error: false, content_missing: false })"#
            ]],
        );
        check(
            r#"{"content":[{"type":"text","text":"a","annotations":{"audience":["user"]}},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":true,"structuredContent":{"n":1},"_meta":{}}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [Text { text: "a" }, Image { data: "AA==", mime_type: "image/png" }], structured_content: Some(Object {"n": Number(1)}), is_error: true, content_missing: false })"#
            ]],
        );
        check(
            r#"{"content":[{"type":"text","text":"a","type":"odd"}],"structuredContent":null}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [Unknown { kind: "odd", raw: Object {"type": String("odd"), "text": String("a")} }], structured_content: Some(Null), is_error: false, content_missing: false })"#
            ]],
        );
    }

    #[test]
    fn one_text_block_is_read_from_its_ends() {
        for (text, expect) in [
            (
                r#"{"content":[{"type":"text","text":"a \"}]}\" \u00e9"}],"isError":false}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "a \"}]}\" é" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "no" }], structured_content: None, is_error: true, content_missing: false })"#
                ]],
            ),
            // Strings that are not one string, and more members: the member reader decides.
            (
                r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "b" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "a" }, Text { text: "b" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":7}]}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Unknown { kind: "text", raw: Object {"type": String("text"), "text": Number(7)} }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"done"}],"resultType":"complete","isError":false}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "done" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"done"}],"isError":true,"resultType":"complete"}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "done" }], structured_content: None, is_error: true, content_missing: false })"#
                ]],
            ),
            (
                r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}],"isError":false}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "hi" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}],"resultType":"x"}"#,
                expect![[
                    r#"Other("x") Ok(CallToolResult { content: [Text { text: "hi" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "hi" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"a"}],"resultType":"input_required"}"#,
                expect![[
                    r#"InputRequired Ok(CallToolResult { content: [Text { text: "a" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"a"}],"isError":false,"isError":true}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "a" }], structured_content: None, is_error: true, content_missing: false })"#
                ]],
            ),
            (
                r#"{"content":[{"type":"text","text":"\ud83d\ude00"}]}"#,
                expect![[
                    r#"Complete Ok(CallToolResult { content: [Text { text: "😀" }], structured_content: None, is_error: false, content_missing: false })"#
                ]],
            ),
        ] {
            check(text, expect);
        }
    }

    #[test]
    fn odd_shapes() {
        check(
            r#"{"content":["x",7,[1],{"type":"resource_link","uri":"u","name":"n"},{"text":"t","type":"text"},{"type":"text","text":5}]}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [Unknown { kind: "", raw: String("x") }, Unknown { kind: "", raw: Number(7) }, Unknown { kind: "", raw: Array [Number(1)] }, ResourceLink { uri: "u", name: "n", raw: Object {"type": String("resource_link"), "uri": String("u"), "name": String("n")} }, Text { text: "t" }, Unknown { kind: "text", raw: Object {"type": String("text"), "text": Number(5)} }], structured_content: None, is_error: false, content_missing: false })"#
            ]],
        );
        check(
            r#"{}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [], structured_content: None, is_error: false, content_missing: true })"#
            ]],
        );
        check(
            r#"{"content":null}"#,
            expect![[
                r#"Complete Err(ShapeError { what: "the tool result's `content` is not an array" })"#
            ]],
        );
        check(
            r#"{"content":[],"isError":"yes"}"#,
            expect![[
                r#"Complete Err(ShapeError { what: "the tool result's `isError` is not a boolean" })"#
            ]],
        );
        check(
            r#"[1]"#,
            expect![[r#"Complete Err(ShapeError { what: "the tool result is not an object" })"#]],
        );
        check(
            r#""text""#,
            expect![[r#"Complete Err(ShapeError { what: "the tool result is not an object" })"#]],
        );
    }

    #[test]
    fn block_types_of_every_json_kind_read_as_in_a_tree() {
        for kind in [
            r#""text""#,
            r#""TEXT""#,
            r#""image""#,
            "null",
            "true",
            "7",
            "-7",
            "1.5",
            r#"["text"]"#,
            r#"{"text":"text"}"#,
        ] {
            for block in [
                format!(r#"{{"type":{kind},"text":"hi"}}"#),
                format!(r#"{{"text":"hi","type":{kind}}}"#),
                format!(r#"{{"type":{kind},"text":"hi","other":1}}"#),
                format!(r#"{{"type":{kind},"type":{kind},"text":"hi"}}"#),
            ] {
                let text = format!(r#"{{"content":[{block}]}}"#);
                let (_, fast) = CallToolResult::from_json_text(&text);
                let tree: Value = serde_json::from_str(&text).expect("test input is JSON");
                assert_eq!(fast, CallToolResult::from_value(tree), "{text}");
            }
        }
    }

    #[test]
    fn result_types() {
        check(
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            expect![[
                r#"InputRequired Ok(CallToolResult { content: [], structured_content: None, is_error: false, content_missing: true })"#
            ]],
        );
        check(
            r#"{"resultType":"later","content":[]}"#,
            expect![[
                r#"Other("later") Ok(CallToolResult { content: [], structured_content: None, is_error: false, content_missing: false })"#
            ]],
        );
        check(
            r#"{"resultType":7,"content":[]}"#,
            expect![[
                r#"Complete Ok(CallToolResult { content: [], structured_content: None, is_error: false, content_missing: false })"#
            ]],
        );
    }
}
