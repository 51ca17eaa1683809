//! Server-sent events, parsed incrementally with a cap on event size.
//!
//! Handles events split across chunks, multi-line `data:`, comments, `id:`, `retry:` and
//! CR, LF or CRLF line ends. An event larger than the cap is dropped and reported.

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
    /// An event over the size cap, dropped.
    Oversized {
        /// Bytes seen before it was dropped.
        len: usize,
    },
}

/// Incremental parser.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    current: SseEvent,
    current_len: usize,
    has_data: bool,
    oversized: bool,
    max_event_bytes: usize,
    last_was_cr: bool,
}

impl SseParser {
    /// A parser dropping events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            current: SseEvent::default(),
            current_len: 0,
            has_data: false,
            oversized: false,
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
                    if let Some(item) = self.line_done(&line) {
                        items.push(item);
                    }
                }
                _ => {
                    self.last_was_cr = false;
                    if self.line.len() <= self.max_event_bytes {
                        self.line.push(byte);
                    } else {
                        self.oversized = true;
                    }
                    self.current_len += 1;
                }
            }
        }
        items
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseItem> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            let len = std::mem::take(&mut self.current_len);
            self.has_data = false;
            if std::mem::take(&mut self.oversized) || len > self.max_event_bytes {
                return Some(SseItem::Oversized { len });
            }
            if event == SseEvent::default() {
                return None;
            }
            return Some(SseItem::Event(event));
        }
        if line.starts_with(b":") {
            return None;
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
    fn oversized_events_are_dropped_and_reported() {
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(100));
        check(
            &[&big],
            expect![[r#"
            Oversized { len: 106 }
            Event(SseEvent { event: "", data: "ok", id: None, retry_ms: None })"#]],
        );
    }
}
