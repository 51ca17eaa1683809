//! Reading one page of a listing (`tools/list`, `prompts/list`, …) straight from its JSON
//! text: the page's entries stay slices of the text, each read into its type on its own, so
//! no `Value` tree of the whole page is built and one entry that cannot be read (too deep,
//! the wrong shape) is that entry's problem, not the page's. Counting the entries stops
//! keeping them once a cap is reached, so an oversized page costs its text and a count.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::ResultType;
use crate::call_result::ResultTypeField;

/// One listing page, its entries still JSON text borrowed from the page.
#[derive(Debug)]
pub struct ListPage<'a> {
    /// The page's `resultType` (absent means complete).
    pub result_type: ResultType,
    /// The entries, when the page's list field is an array of at most the cap's length.
    pub entries: PageEntries<'a>,
    /// What `nextCursor` says.
    pub next_cursor: NextCursor<'a>,
}

/// The page's list field (`tools`, `prompts`, …).
#[derive(Debug)]
pub enum PageEntries<'a> {
    /// Each entry's JSON text.
    Within(Vec<&'a RawValue>),
    /// More entries than the cap: only counted, none kept.
    Over {
        /// How many entries the page holds.
        count: usize,
    },
    /// The field is absent or not an array.
    Missing,
}

/// A page's `nextCursor`.
#[derive(Debug)]
pub enum NextCursor<'a> {
    /// Absent or `null`: this was the last page.
    End,
    /// The cursor for the next page.
    Next(String),
    /// Something other than a string or `null`, as received.
    NotAString(&'a RawValue),
}

impl<'a> ListPage<'a> {
    /// Reads a page's result text: `field` is the list's name, `max_entries` how many
    /// entries may be kept (more are counted, not kept). A repeated key keeps its last
    /// value, as when building a tree. Fails only when the text is not a JSON object.
    pub fn from_json_text(
        text: &'a str,
        field: &str,
        max_entries: usize,
    ) -> Result<ListPage<'a>, String> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let page = PageSeed { field, max_entries }
            .deserialize(&mut deserializer)
            .and_then(|page| deserializer.end().map(|()| page));
        page.map_err(|e| format!("the result is not a JSON object: {e}"))
    }
}

struct PageSeed<'f> {
    field: &'f str,
    max_entries: usize,
}

enum Key {
    Entries,
    NextCursor,
    ResultType,
    Other,
}

struct KeySeed<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "nextCursor" => Key::NextCursor,
            "resultType" => Key::ResultType,
            _ if key == self.0 => Key::Entries,
            _ => Key::Other,
        })
    }
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = ListPage<'de>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = ListPage<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a listing result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut page = ListPage {
            result_type: ResultType::Complete,
            entries: PageEntries::Missing,
            next_cursor: NextCursor::End,
        };
        while let Some(key) = map.next_key_seed(KeySeed(self.field))? {
            match key {
                Key::Entries => {
                    let raw: &'de RawValue = map.next_value()?;
                    page.entries = if raw.get().starts_with('[') {
                        let mut entries = serde_json::Deserializer::from_str(raw.get());
                        EntriesSeed {
                            max: self.max_entries,
                        }
                        .deserialize(&mut entries)
                        .map_err(de::Error::custom)?
                    } else {
                        PageEntries::Missing
                    };
                }
                Key::NextCursor => {
                    let raw: &'de RawValue = map.next_value()?;
                    page.next_cursor = match raw.get() {
                        "null" => NextCursor::End,
                        text if text.starts_with('"') => match serde_json::from_str(text) {
                            Ok(cursor) => NextCursor::Next(cursor),
                            Err(_) => NextCursor::NotAString(raw),
                        },
                        _ => NextCursor::NotAString(raw),
                    };
                }
                Key::ResultType => page.result_type = map.next_value::<ResultTypeField>()?.0,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

/// Reads the list field's array: its entries as text, up to `max`, then only counted.
struct EntriesSeed {
    max: usize,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed {
    type Value = PageEntries<'de>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed {
    type Value = PageEntries<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max));
        while entries.len() < self.max {
            match seq.next_element::<&'de RawValue>()? {
                Some(entry) => entries.push(entry),
                None => return Ok(PageEntries::Within(entries)),
            }
        }
        if seq.next_element::<IgnoredAny>()?.is_none() {
            return Ok(PageEntries::Within(entries));
        }
        let mut count = entries.len() + 1;
        drop(entries);
        while seq.next_element::<IgnoredAny>()?.is_some() {
            count += 1;
        }
        Ok(PageEntries::Over { count })
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;
    use crate::Tool;

    fn check(text: &str, max: usize, expect: Expect) {
        let shown = match ListPage::from_json_text(text, "tools", max) {
            Ok(page) => {
                let entries = match &page.entries {
                    PageEntries::Within(entries) => {
                        let texts: Vec<&str> = entries.iter().map(|e| e.get()).collect();
                        format!("within {texts:?}")
                    }
                    other => format!("{other:?}"),
                };
                format!("{:?} {entries} {:?}", page.result_type, page.next_cursor)
            }
            Err(error) => format!("error: {error}"),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn pages_are_read_without_a_tree() {
        check(
            r#"{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c2"}"#,
            10,
            expect![[r#"Complete within ["{\"name\":\"a\"}", "{\"name\":\"b\"}"] Next("c2")"#]],
        );
        check(
            r#"{"tools":[],"nextCursor":null,"resultType":"complete","_meta":{"x":[1]}}"#,
            10,
            expect![[r#"Complete within [] End"#]],
        );
        check(
            r#"{"tools":[1],"tools":[2],"nextCursor":"\u0061"}"#,
            10,
            expect![[r#"Complete within ["2"] Next("a")"#]],
        );
        check(
            r#"{"tools":{"name":"a"},"nextCursor":7}"#,
            10,
            expect![[r#"Complete Missing NotAString(RawValue(7))"#]],
        );
        check(
            r#"{"resultType":"input_required"}"#,
            10,
            expect![[r#"InputRequired Missing End"#]],
        );
        check(
            r#"[1]"#,
            10,
            expect![
                "error: the result is not a JSON object: invalid type: sequence, expected a listing result object at line 1 column 0"
            ],
        );
    }

    #[test]
    fn entries_past_the_cap_are_counted_not_kept() {
        check(
            r#"{"tools":[1,2,3]}"#,
            3,
            expect![[r#"Complete within ["1", "2", "3"] End"#]],
        );
        check(
            r#"{"tools":[1,[2],{"3":3},4,5]}"#,
            3,
            expect![[r#"Complete Over { count: 5 } End"#]],
        );
        check(
            r#"{"tools":[1]}"#,
            0,
            expect![[r#"Complete Over { count: 1 } End"#]],
        );
    }

    #[test]
    fn a_deep_entry_fails_alone() {
        let deep = format!(r#"{}"x"{}"#, "[".repeat(200), "]".repeat(200));
        let text =
            format!(r#"{{"tools":[{{"name":"ok"}},{{"name":"deep","inputSchema":{deep}}}]}}"#);
        let page = ListPage::from_json_text(&text, "tools", 10).expect("page");
        let PageEntries::Within(entries) = page.entries else {
            panic!("entries expected");
        };
        let read: Vec<Result<String, String>> = entries
            .iter()
            .map(|entry| {
                Tool::from_json_text(entry.get())
                    .map(|tool| tool.name)
                    .map_err(|e| e.to_string())
            })
            .collect();
        expect![[r#"[Ok("ok"), Err("tool `deep` cannot be read: recursion limit exceeded at line 1 column 156")]"#]]
            .assert_eq(&format!("{read:?}"));
    }
}
