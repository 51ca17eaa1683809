//! Server-sent events, parsed incrementally with a cap on event size.
//!
//! Handles events split across chunks, multi-line `data:`, comments, `id:`, `retry:` and
//! CR, LF or CRLF line ends. An event is capped while it accumulates, not when it ends: the
//! moment its field lines pass the cap it is reported as [`SseItem::Oversized`], what was kept
//! of it is freed, and the rest of it (up to the blank line that ends it, if one ever comes)
//! is skipped without being kept. Comment lines cost nothing and do not count.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field (empty means "message").
    pub event: String,
    /// The `data:` lines joined by newlines.
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `retry:` field in milliseconds, if any.
    pub retry_ms: Option<u64>,
}

/// What the parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A complete event.
    Event(SseEvent),
    /// An event that passed the size cap: reported as soon as it did, then skipped.
    Oversized {
        /// The cap it passed, in bytes.
        limit: usize,
    },
}

/// Incremental parser.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    current: SseEvent,
    /// Bytes of the current event's field lines completed so far, one line end each: the
    /// event is over the cap when this passes it.
    current_len: usize,
    has_data: bool,
    /// Bytes of the current line seen, kept or not (a blank line has none).
    line_seen: usize,
    /// The current event passed the cap: it was reported; skip until its blank line.
    skipping: bool,
    max_event_bytes: usize,
    last_was_cr: bool,
}

impl SseParser {
    /// A parser reporting and skipping events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            current: SseEvent::default(),
            current_len: 0,
            has_data: false,
            line_seen: 0,
            skipping: false,
            max_event_bytes,
            last_was_cr: false,
        }
    }

    /// Feeds bytes; returns every item completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut items = Vec::new();
        for &byte in bytes {
            match byte {
                b'\n' if self.last_was_cr => self.last_was_cr = false,
                b'\r' | b'\n' => {
                    self.last_was_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    let blank = std::mem::take(&mut self.line_seen) == 0;
                    if let Some(item) = self.line_done(&line, blank) {
                        items.push(item);
                    }
                    // Reuse the line's allocation unless a long line made it large.
                    if line.capacity() <= 4096 {
                        self.line = line;
                        self.line.clear();
                    }
                }
                _ => {
                    self.last_was_cr = false;
                    self.line_seen += 1;
                    if self.skipping {
                        continue;
                    }
                    let is_comment = self.line.first() == Some(&b':');
                    if is_comment {
                        // Only the first byte of a comment matters; nothing else is kept.
                        continue;
                    }
                    if self.current_len + self.line.len() + 1 > self.max_event_bytes {
                        items.push(self.start_skipping());
                        continue;
                    }
                    self.line.push(byte);
                }
            }
        }
        items
    }

    /// The current event passed the cap: free it and skip the rest of it.
    fn start_skipping(&mut self) -> SseItem {
        self.skipping = true;
        self.line = Vec::new();
        self.current = SseEvent::default();
        self.current_len = 0;
        self.has_data = false;
        SseItem::Oversized {
            limit: self.max_event_bytes,
        }
    }

    fn line_done(&mut self, line: &[u8], blank: bool) -> Option<SseItem> {
        if blank {
            let event = std::mem::take(&mut self.current);
            self.current_len = 0;
            self.has_data = false;
            if std::mem::take(&mut self.skipping) || event == SseEvent::default() {
                return None;
            }
            return Some(SseItem::Event(event));
        }
        if self.skipping || line.starts_with(b":") {
            return None;
        }
        self.current_len += line.len() + 1;
        if self.current_len > self.max_event_bytes {
            return Some(self.start_skipping());
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = value.to_owned(),
            "id" => self.current.id = Some(value.to_owned()),
            "retry" => self.current.retry_ms = value.trim().parse().ok(),
            _ => {}
        }
        None
    }
}

/// A comment that keeps a quiet stream open through proxies (a writer sends it now and
/// then; readers skip it).
pub const KEEP_ALIVE: &str = ": keep-alive\n\n";

/// One event as a writer sends it: `event: message`, then one `data:` line per line of
/// `data` (any of CR, LF or CRLF ends a line, as [`SseParser`] reads them), then the
/// blank line that ends it.
pub fn encode_event(data: &str) -> String {
    let mut event = String::with_capacity(data.len() + 32);
    event.push_str("event: message\n");
    for line in data.split("\r\n").flat_map(|l| l.split(['\r', '\n'])) {
        event.push_str("data: ");
        event.push_str(line);
        event.push('\n');
    }
    event.push('\n');
    event
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(chunks: &[&str], expect: Expect) {
        let mut parser = SseParser::new(64);
        let mut out = Vec::new();
        for chunk in chunks {
            for item in parser.push(chunk.as_bytes()) {
                out.push(format!("{item:?}"));
            }
        }
        expect.assert_eq(&out.join("\n"));
    }

    #[test]
    fn events_split_across_chunks_with_multiline_data_and_comments() {
        check(
            &[
                ": keep-alive\n\nevent: mess",
                "age\ndata: {\"a\":\ndata: 1}\nid: 7\nretry: 1500\n\n",
                "data: x\r\n\r\n",
            ],
            expect![[r#"
                Event(SseEvent { event: "message", data: "{\"a\":\n1}", id: Some("7"), retry_ms: Some(1500) })
                Event(SseEvent { event: "", data: "x", id: None, retry_ms: None })"#]],
        );
    }

    #[test]
    fn oversized_events_are_reported_once_and_skipped() {
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(100));
        check(
            &[&big],
            expect![[r#"
                Oversized { limit: 64 }
                Event(SseEvent { event: "", data: "ok", id: None, retry_ms: None })"#]],
        );
    }

    #[test]
    fn an_event_of_many_short_lines_is_cut_off_at_the_cap_not_at_its_end() {
        // Ten-byte `data:` lines that never end the event: reported once, when the event
        // passes the cap, however long the stream goes on.
        let mut parser = SseParser::new(64);
        let lines = "data: xxxx\n".repeat(1000);
        let mut items = Vec::new();
        for chunk in lines.as_bytes().chunks(7) {
            items.extend(parser.push(chunk));
            assert!(parser.line.len() + parser.current.data.len() <= 64);
        }
        expect![[r#"
            [
                Oversized {
                    limit: 64,
                },
            ]
        "#]]
        .assert_debug_eq(&items);
        check(
            &[&lines, "\r\ndata: next\r\n\r\n"],
            expect![[r#"
                Oversized { limit: 64 }
                Event(SseEvent { event: "", data: "next", id: None, retry_ms: None })"#]],
        );
    }

    #[test]
    fn comments_cost_nothing_and_do_not_count_toward_the_cap() {
        let comments = ": keep-alive, and a long one at that\n".repeat(100);
        check(
            &[&format!("data: a\n{comments}data: b\n\n")],
            expect![[r#"Event(SseEvent { event: "", data: "a\nb", id: None, retry_ms: None })"#]],
        );
    }

    #[test]
    fn an_event_just_under_the_cap_is_kept() {
        // `data: ` + 56 bytes + newline = 63 bytes: under the 64-byte cap.
        let line = format!("data: {}\n\n", "y".repeat(56));
        let items = {
            let mut parser = SseParser::new(64);
            parser.push(line.as_bytes())
        };
        assert!(matches!(&items[..], [SseItem::Event(event)] if event.data.len() == 56));
        check(
            &[&format!("data: {}\n\n", "y".repeat(58))],
            expect!["Oversized { limit: 64 }"],
        );
    }

    #[test]
    fn written_events_read_back_as_written() {
        for data in ["{\"a\":1}", "two\nlines", "cr\r\nlf", ""] {
            let mut parser = SseParser::new(1024);
            let mut text = String::from(KEEP_ALIVE);
            text.push_str(&encode_event(data));
            let items = parser.push(text.as_bytes());
            let expected = data.replace("\r\n", "\n");
            assert_eq!(
                items,
                vec![SseItem::Event(SseEvent {
                    event: "message".into(),
                    data: expected,
                    ..SseEvent::default()
                })]
            );
        }
    }
}
