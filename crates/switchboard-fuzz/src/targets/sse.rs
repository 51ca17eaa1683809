//! The SSE parser ([`SseParser`]) fed the same stream in two chunkings.
//!
//! Input: two bytes for the event cap (1..=1024), four bytes of chunk sizes, the stream.
//! Invariants: both chunkings give the same events and the same number of oversized reports
//! (their measured lengths may differ: a parser may report an event as soon as it passes the
//! cap); no event holds more characters than the cap; nothing panics.

use switchboard_protocol::sse::{SseItem, SseParser};

use crate::input::{Input, chunks};

/// Words of SSE streams, for the mutator.
pub const WORDS: &[&[u8]] = &[
    b"data: ",
    b"data:",
    b"event: message\n",
    b"id: 7\n",
    b"retry: 1500\n",
    b": keep-alive\n",
    b"\n\n",
    b"\r\n\r\n",
    b"\r\r",
    b"\r",
    b"\n",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
    b"\xEF\xBB\xBF",
    b"\xff",
];

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let cap = input.size(1024);
    let pattern = input.pattern(4);
    let stream = input.rest();
    let whole = items(cap, &[stream]);
    let split = items(cap, &chunks(stream, pattern));
    assert_eq!(
        whole, split,
        "the same stream split differently gave other items (cap {cap})"
    );
    for item in &whole {
        if let Item::Event { chars, .. } = item {
            assert!(
                *chars <= cap,
                "an event of {chars} characters passed the {cap}-byte cap"
            );
        }
    }
}

/// An item as the invariants compare it.
#[derive(Debug, PartialEq, Eq)]
enum Item {
    Event {
        event: String,
        data: String,
        id: Option<String>,
        retry_ms: Option<u64>,
        chars: usize,
    },
    Oversized,
}

fn items(cap: usize, chunks: &[&[u8]]) -> Vec<Item> {
    let mut parser = SseParser::new(cap);
    let mut out = Vec::new();
    for chunk in chunks {
        for item in parser.push(chunk) {
            out.push(match item {
                SseItem::Event(event) => Item::Event {
                    chars: event.event.chars().count()
                        + event.data.chars().count()
                        + event.id.as_deref().map_or(0, |id| id.chars().count()),
                    event: event.event,
                    data: event.data,
                    id: event.id,
                    retry_ms: event.retry_ms,
                },
                SseItem::Oversized { .. } => Item::Oversized,
            });
        }
    }
    out
}
