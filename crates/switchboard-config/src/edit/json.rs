//! JSON and JSON with comments, edited as text.
//!
//! The structure is read from the text with its comments and trailing commas blanked
//! ([`strip_jsonc`]: same length, same offsets), the edit is made on the text itself, and
//! only these bytes change:
//!
//! - adding: the new member, its separating comma (after the last member, or after the new
//!   one when the last member had a trailing comma: the file's style is kept), and the line
//!   break and indentation before it. The new member goes on a line of its own after the last
//!   member's line (after a comment that ends that line), indented like the first member, its
//!   value indented by the file's own unit (tabs, two, three or four spaces) with the line
//!   breaks of the file (CRLF stays CRLF); in an object written on one line it stays on
//!   that line (`, "name": {"command": "x"}`).
//! - removing: the member, its separating comma, and the line it stood on when nothing
//!   else is on it. Comments are never removed: a comment on the member's own line stays,
//!   on the member's indentation, since what it is about cannot be known and a comment left
//!   behind is easier to delete than a lost one is to recover.
//!
//! So adding a server and removing it again gives back the file byte for byte, with one
//! exception: an empty object written with white space inside (`{ }`, `{\n  }`) comes back
//! as `{}`.
//!
//! Removing the last server leaves the map, empty (`"mcpServers": {}`): that is what the
//! clients' own commands do (`claude mcp remove`, `gemini mcp remove`, VS Code's editor), the
//! file keeps the shape the client expects, and a file whose map is its whole point (an
//! `.mcp.json`) stays readable.

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use super::EditError;
use crate::strip_jsonc;

/// `text` with `name` added to the first of `maps` that the file has (else the first, made).
pub(super) fn add(
    text: &str,
    path: &Path,
    maps: &[Vec<String>],
    name: &str,
    entry: &Value,
) -> Result<String, EditError> {
    let first = maps.first().map_or(&[][..], Vec::as_slice);
    if only_json_space(text) {
        let value = nested(first, name, entry);
        return Ok(pretty(&value, "  ", "", "\n") + "\n");
    }
    let doc = Doc::new(text, path)?;
    let mut chosen = None;
    for map in maps {
        let (object, found) = doc.find_object(map)?;
        if found == map.len() {
            chosen = Some((object, map.as_slice(), found));
            break;
        }
    }
    let (object, map, found) = match chosen {
        Some(chosen) => chosen,
        None => {
            let (object, found) = doc.find_object(first)?;
            (object, first, found)
        }
    };
    // What goes into `object`: the server, or the rest of the path around it.
    let (key, value) = if found == map.len() {
        if object.members.iter().any(|m| m.key == name) {
            return Err(EditError::AlreadyExists {
                path: path.to_owned(),
                name: name.to_owned(),
            });
        }
        (name.to_owned(), entry.clone())
    } else {
        (map[found].clone(), nested(&map[found + 1..], name, entry))
    };
    Ok(doc.insert(&object, &key, &value))
}

/// `text` with `name` removed from the map at `map`; `None` when that map has no such member.
pub(super) fn remove(
    text: &str,
    path: &Path,
    map: &[String],
    name: &str,
) -> Result<Option<String>, EditError> {
    if only_json_space(text) {
        return Ok(None);
    }
    let mut edited: Option<String> = None;
    // A name written twice is removed twice: no definition of it is left.
    loop {
        let current = edited.as_deref().unwrap_or(text);
        let doc = Doc::new(current, path)?;
        let (object, found) = doc.find_object(map)?;
        if found < map.len() {
            return Ok(edited);
        }
        let Some(index) = object.members.iter().position(|m| m.key == name) else {
            return Ok(edited);
        };
        edited = Some(doc.cut(&object, index));
    }
}

/// `{keys[0]: {keys[1]: … {name: entry}}}`.
fn nested(keys: &[String], name: &str, entry: &Value) -> Value {
    let mut value = serde_json::json!({ name: entry });
    for key in keys.iter().rev() {
        value = serde_json::json!({ key: value });
    }
    value
}

/// One `"key": value` of an object: where its key starts and its value ends.
struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

/// An object's braces and members.
struct ObjectSpan {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// A comment's kind: a line comment ends at its line's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CommentKind {
    /// `// …`
    Line,
    /// `/* … */`
    Block,
}

/// A file being edited: its text, the same text with comments blanked (for the structure),
/// and where its comments are.
struct Doc<'a> {
    text: &'a str,
    path: &'a Path,
    plain: String,
    comments: Vec<(Range<usize>, CommentKind)>,
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

impl<'a> Doc<'a> {
    fn new(text: &'a str, path: &'a Path) -> Result<Doc<'a>, EditError> {
        let plain = strip_jsonc(text);
        serde_json::from_str::<Value>(&plain).map_err(|e| EditError::Unreadable {
            path: path.to_owned(),
            detail: format!("invalid JSON: {e}"),
        })?;
        Ok(Doc {
            text,
            path,
            comments: comments(text),
            plain,
        })
    }

    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    // The structure, read from the blanked text.

    fn skip_space(&self, mut at: usize) -> usize {
        let bytes = self.plain.as_bytes();
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    }

    fn string_end(&self, start: usize) -> usize {
        let bytes = self.plain.as_bytes();
        let mut at = start + 1;
        while at < bytes.len() && bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        (at + 1).min(bytes.len())
    }

    fn value_end(&self, start: usize) -> usize {
        let bytes = self.plain.as_bytes();
        match bytes.get(start) {
            Some(b'"') => self.string_end(start),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                let mut at = start;
                while at < bytes.len() {
                    match bytes[at] {
                        b'"' => {
                            at = self.string_end(at);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                return at + 1;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
                bytes.len()
            }
            _ => {
                let mut at = start;
                while at < bytes.len()
                    && !matches!(bytes[at], b',' | b'}' | b']')
                    && !bytes[at].is_ascii_whitespace()
                {
                    at += 1;
                }
                at
            }
        }
    }

    /// The object whose `{` is at `open`.
    fn object(&self, open: usize) -> ObjectSpan {
        let bytes = self.plain.as_bytes();
        let mut members = Vec::new();
        let mut at = self.skip_space(open + 1);
        while at < bytes.len() && bytes[at] == b'"' {
            let key_end = self.string_end(at);
            let key = serde_json::from_str(&self.plain[at..key_end]).unwrap_or_default();
            let colon = self.skip_space(key_end);
            let value_start = self.skip_space(colon + 1);
            let value_end = self.value_end(value_start);
            members.push(Member {
                key,
                key_start: at,
                value_start,
                value_end,
            });
            at = self.skip_space(value_end);
            if bytes.get(at) == Some(&b',') {
                at = self.skip_space(at + 1);
            }
        }
        ObjectSpan {
            open,
            close: at,
            members,
        }
    }

    /// The object at key path `keys`, and how far the path got: `Ok((object, n))` where the
    /// first `n` keys were found (the object is at `keys[..n]`).
    fn find_object(&self, keys: &[String]) -> Result<(ObjectSpan, usize), EditError> {
        let root = self.skip_space(0);
        if self.plain.as_bytes().get(root) != Some(&b'{') {
            return Err(self.unreadable("the file must hold a JSON object".into()));
        }
        let mut object = self.object(root);
        for (depth, key) in keys.iter().enumerate() {
            // A key written twice means its last value, as for every JSON reader.
            let Some(member) = object.members.iter().rev().find(|m| &m.key == key) else {
                return Ok((object, depth));
            };
            if self.plain.as_bytes().get(member.value_start) != Some(&b'{') {
                return Err(
                    self.unreadable(format!("`{}` is not an object", keys[..=depth].join(".")))
                );
            }
            object = self.object(member.value_start);
        }
        Ok((object, keys.len()))
    }

    fn unreadable(&self, detail: String) -> EditError {
        EditError::Unreadable {
            path: self.path.to_owned(),
            detail,
        }
    }

    // The text around a place.

    /// Past white space and comments from `at` (between tokens).
    fn skip_trivia(&self, mut at: usize) -> usize {
        loop {
            if self.bytes().get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            } else if let Some((span, _)) = self.comments.iter().find(|(s, _)| s.start == at) {
                at = span.end;
            } else {
                return at;
            }
        }
    }

    /// The comma after the value that ends at `value_end`, if one follows (comments between
    /// are allowed; a trailing comma counts).
    fn comma_after(&self, value_end: usize) -> Option<usize> {
        let at = self.skip_trivia(value_end);
        (self.bytes().get(at) == Some(&b',')).then_some(at)
    }

    /// Past spaces and tabs from `at`.
    fn blanks_after(&self, mut at: usize) -> usize {
        while self.bytes().get(at).copied().is_some_and(is_blank) {
            at += 1;
        }
        at
    }

    /// Back over spaces and tabs before `at`.
    fn blanks_before(&self, mut at: usize) -> usize {
        while at > 0 && is_blank(self.bytes()[at - 1]) {
            at -= 1;
        }
        at
    }

    /// Where the line holding `at` starts.
    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |i| i + 1)
    }

    /// The line break at `at` (`\r\n` or `\n`), if one is there.
    fn line_break_at(&self, at: usize) -> Option<&'a str> {
        let rest = &self.text[at.min(self.text.len())..];
        if rest.starts_with("\r\n") {
            Some("\r\n")
        } else if rest.starts_with('\n') {
            Some("\n")
        } else {
            None
        }
    }

    /// The file's line break: its first one's kind, `\n` when it has none.
    fn file_line_break(&self) -> &'static str {
        match self.text.find('\n') {
            Some(at) if at > 0 && self.bytes()[at - 1] == b'\r' => "\r\n",
            _ => "\n",
        }
    }

    /// Whether only spaces and tabs stand before `at` on its line.
    fn starts_line(&self, at: usize) -> bool {
        self.bytes()[self.line_start(at)..at]
            .iter()
            .copied()
            .all(is_blank)
    }

    /// Where the line break before the line holding `at` starts (`at`'s line is not the
    /// first).
    fn previous_line_break(&self, at: usize) -> usize {
        let newline = self.line_start(at).saturating_sub(1);
        if newline > 0 && self.bytes()[newline - 1] == b'\r' {
            newline - 1
        } else {
            newline
        }
    }

    /// Whether the line before the one holding `at` ends inside a `//` comment (so that
    /// joining the next line onto it would comment that out).
    fn previous_line_ends_in_comment(&self, at: usize) -> bool {
        if self.line_start(at) == 0 {
            return false;
        }
        let end = self.previous_line_break(at);
        self.comments
            .iter()
            .any(|(span, kind)| *kind == CommentKind::Line && span.end == end)
    }

    /// The end of the line `at` is on, past the comments after `at` that start on it, when
    /// nothing else follows there: where a member after it starts its own line.
    fn line_end_past_comments(&self, mut at: usize) -> Option<usize> {
        loop {
            at = self.blanks_after(at);
            if self.line_break_at(at).is_some() || at == self.text.len() {
                return Some(at);
            }
            let (span, _) = self.comments.iter().find(|(s, _)| s.start == at)?;
            at = span.end;
        }
    }

    // Edits.

    /// The text with `key: value` added as `object`'s last member.
    fn insert(&self, object: &ObjectSpan, key: &str, value: &Value) -> String {
        let interior = &self.text[object.open + 1..object.close];
        let one_line =
            !interior.contains('\n') && (!object.members.is_empty() || !self.text.contains('\n'));
        let key = serde_json::to_string(key).unwrap_or_default();
        if one_line {
            self.insert_on_one_line(object, &format!("{key}: {}", one_line_json(value)))
        } else {
            self.insert_on_its_own_line(object, &key, value)
        }
    }

    /// The text with `member` added last in `object`, which is written on one line.
    fn insert_on_one_line(&self, object: &ObjectSpan, member: &str) -> String {
        let interior = &self.text[object.open + 1..object.close];
        match object.members.last() {
            Some(last) => match self.comma_after(last.value_end) {
                Some(comma) => splice(self.text, &[(comma + 1, format!(" {member},"))]),
                None => splice(self.text, &[(last.value_end, format!(", {member}"))]),
            },
            None if only_json_space(interior) => {
                let mut out = self.text[..=object.open].to_owned();
                out.push_str(member);
                out.push_str(&self.text[object.close..]);
                out
            }
            None => {
                let at = self.last_comment_end(object);
                splice(self.text, &[(at, format!(" {member}"))])
            }
        }
    }

    /// The text with `key: value` (`key` quoted) added last in `object`, on a line of its
    /// own, indented like the first member when it starts its own line, else one level in.
    fn insert_on_its_own_line(&self, object: &ObjectSpan, key: &str, value: &Value) -> String {
        let interior = &self.text[object.open + 1..object.close];
        let closing = self.line_indent(object.open);
        let unit = self.indent_unit(object, closing);
        let member_indent = object
            .members
            .first()
            .filter(|first| self.starts_line(first.key_start))
            .map_or_else(
                || format!("{closing}{unit}"),
                |first| self.line_indent(first.key_start).to_owned(),
            );
        let member = |nl: &str| format!("{key}: {}", pretty(value, &unit, &member_indent, nl));
        match object.members.last() {
            Some(last) => self.insert_after(last, &member_indent, &member),
            None if only_json_space(interior) => {
                let nl = self.file_line_break();
                let mut out = self.text[..=object.open].to_owned();
                out.push_str(&format!("{nl}{member_indent}{}{nl}{closing}", member(nl)));
                out.push_str(&self.text[object.close..]);
                out
            }
            None => {
                // Only comments inside: the member goes after the last of them.
                let at = self.last_comment_end(object);
                let nl = self.line_break_or_the_files(self.blanks_after(at));
                splice(
                    self.text,
                    &[(at, format!("{nl}{member_indent}{}", member(nl)))],
                )
            }
        }
    }

    /// The text with a member (`member` given the line break) on a new line after `last`,
    /// past the comments that end its line, the comma moved or added.
    fn insert_after(
        &self,
        last: &Member,
        member_indent: &str,
        member: &dyn Fn(&str) -> String,
    ) -> String {
        let trailing = self.comma_after(last.value_end);
        let after_last = trailing.map_or(last.value_end, |comma| comma + 1);
        let Some(end) = self.line_end_past_comments(after_last) else {
            let nl = self.file_line_break();
            let text = format!("{nl}{member_indent}{}", member(nl));
            return match trailing {
                Some(comma) => splice(self.text, &[(comma + 1, format!("{text},"))]),
                None => splice(self.text, &[(last.value_end, format!(",{text}"))]),
            };
        };
        let nl = self.line_break_or_the_files(end);
        let mut text = format!("{nl}{member_indent}{}", member(nl));
        let mut edits = Vec::new();
        if trailing.is_some() {
            text.push(',');
        } else {
            edits.push((last.value_end, ",".to_owned()));
        }
        edits.push((end, text));
        splice(self.text, &edits)
    }

    /// The line break at `at`, else the file's.
    fn line_break_or_the_files(&self, at: usize) -> &'a str {
        self.line_break_at(at)
            .unwrap_or_else(|| self.file_line_break())
    }

    /// The text without `object`'s member at `index`.
    fn cut(&self, object: &ObjectSpan, index: usize) -> String {
        let members = &object.members;
        let member = &members[index];
        let own_comma = self.comma_after(member.value_end);
        let end = own_comma.map_or(member.value_end, |comma| comma + 1);
        let after = self.blanks_after(end);
        let next_is_member = own_comma.is_some() && index + 1 < members.len();
        let at_line_end = self.line_break_at(after).is_some() || after == self.text.len();
        let mut cuts: Vec<Range<usize>> = Vec::new();
        // The last member's separator is the comma before it.
        if own_comma.is_none()
            && let Some(previous) = index.checked_sub(1)
            && let Some(comma) = self.comma_after(members[previous].value_end)
        {
            cuts.push(comma..comma + 1);
        }
        let starts_line = self.starts_line(member.key_start);
        let comment_before_comma = own_comma.is_some_and(|comma| {
            self.comments
                .iter()
                .any(|(span, _)| span.start >= member.value_end && span.end <= comma)
        });
        let span = if let Some(comma) = own_comma.filter(|_| comment_before_comma) {
            // `"a": 1 /* note */,`: the member and the comma go, the note stays.
            cuts.push(comma..comma + 1);
            member.key_start..self.blanks_after(member.value_end)
        } else if starts_line && at_line_end {
            // Alone on its lines: the lines go.
            let past = after + self.line_break_at(after).map_or(0, str::len);
            self.line_start(member.key_start)..past
        } else if starts_line
            && !next_is_member
            && self.line_end_past_comments(end).is_none()
            && !self.previous_line_ends_in_comment(member.key_start)
        {
            // The object ends on its line: the line break before it goes, and what follows
            // joins the line before.
            self.previous_line_break(member.key_start)..end
        } else if starts_line || next_is_member {
            // What follows on the line takes its place.
            member.key_start..after
        } else {
            self.blanks_before(member.key_start)..end
        };
        cuts.push(span);
        let mut out = cut_spans(self.text, &cuts);
        // An object left with nothing but white space inside is written `{}`.
        let removed: usize = cuts.iter().map(|span| span.len()).sum();
        let close = object.close - removed;
        if only_json_space(&out[object.open + 1..close]) {
            out.replace_range(object.open + 1..close, "");
        }
        out
    }

    /// Where the last comment inside `object` ends (the object has comments and no members).
    fn last_comment_end(&self, object: &ObjectSpan) -> usize {
        self.comments
            .iter()
            .map(|(span, _)| span.end)
            .filter(|end| (object.open + 1..=object.close).contains(end))
            .max()
            .unwrap_or(object.open + 1)
    }

    /// The leading white space of the line holding `offset`.
    fn line_indent(&self, offset: usize) -> &'a str {
        let line = &self.text[self.line_start(offset)..];
        let end = line
            .find(|c: char| c != ' ' && c != '\t')
            .unwrap_or(line.len());
        &line[..end]
    }

    /// The indentation one level adds: what the object's first member adds to the object's
    /// own line, else the file's first indented line's, else two spaces.
    fn indent_unit(&self, object: &ObjectSpan, closing: &str) -> String {
        if let Some(first) = object.members.first()
            && self.starts_line(first.key_start)
            && let Some(unit) = self.line_indent(first.key_start).strip_prefix(closing)
            && !unit.is_empty()
        {
            return unit.to_owned();
        }
        self.text
            .lines()
            .filter_map(|line| {
                let indent = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
                (!indent.is_empty() && indent.len() < line.trim_end().len()).then_some(indent)
            })
            .next()
            .unwrap_or("  ")
            .to_owned()
    }
}

/// Whether `text` is nothing but JSON's white space (space, tab, line breaks).
fn only_json_space(text: &str) -> bool {
    text.bytes()
        .all(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Every comment in a JSON-with-comments text, with its kind (strings skipped).
fn comments(text: &str) -> Vec<(Range<usize>, CommentKind)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                let mut end = text[at..].find('\n').map_or(bytes.len(), |n| at + n);
                if end > at && bytes[end - 1] == b'\r' {
                    end -= 1;
                }
                found.push((at..end, CommentKind::Line));
                at = end;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                let end = text[at + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| at + 2 + n + 2);
                found.push((at..end, CommentKind::Block));
                at = end;
            }
            _ => at += 1,
        }
    }
    found
}

/// `text` with each `(offset, insertion)` made (offsets into `text`).
fn splice(text: &str, insertions: &[(usize, String)]) -> String {
    let mut sorted: Vec<&(usize, String)> = insertions.iter().collect();
    sorted.sort_by_key(|(at, _)| *at);
    let mut out =
        String::with_capacity(text.len() + insertions.iter().map(|i| i.1.len()).sum::<usize>());
    let mut from = 0;
    for (at, insertion) in sorted {
        out.push_str(&text[from..*at]);
        out.push_str(insertion);
        from = *at;
    }
    out.push_str(&text[from..]);
    out
}

/// `text` without the given spans (which do not overlap).
fn cut_spans(text: &str, spans: &[Range<usize>]) -> String {
    let mut sorted: Vec<&Range<usize>> = spans.iter().collect();
    sorted.sort_by_key(|span| span.start);
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for span in sorted {
        out.push_str(&text[from..span.start.max(from)]);
        from = from.max(span.end);
    }
    out.push_str(&text[from..]);
    out
}

/// `value` as pretty JSON indented by `unit` per level, continuation lines after `indent`,
/// lines broken with `nl`.
pub(super) fn pretty(value: &Value, unit: &str, indent: &str, nl: &str) -> String {
    let two_spaces = serde_json::to_string_pretty(value).unwrap_or_default();
    // A JSON string holds no raw line break: each line's leading spaces are its depth.
    let lines: Vec<String> = two_spaces
        .lines()
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            format!("{}{}", unit.repeat(spaces / 2), &line[spaces..])
        })
        .collect();
    lines.join(&format!("{nl}{indent}"))
}

/// `value` on one line, spaced as people write it: `{"a": [1, 2], "b": "x"}`.
fn one_line_json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(one_line_json).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(key, value)| {
                    let key = serde_json::to_string(key).unwrap_or_default();
                    format!("{key}: {}", one_line_json(value))
                })
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        scalar => serde_json::to_string(scalar).unwrap_or_default(),
    }
}
