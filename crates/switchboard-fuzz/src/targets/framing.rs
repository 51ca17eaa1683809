//! Newline framing ([`LineBuffer`]) fed the same stream in two chunkings, and JSON-RPC decoding
//! of every frame.
//!
//! Input: two bytes for the frame cap (1..=1024), four bytes of chunk sizes, the stream.
//! Invariants: read at once and in chunks, the buffer gives the stream's lines as a plain
//! split on `\n` sees them: each line at most `cap` bytes as it is (a `\r` before its `\n`
//! not counted), each longer one as an oversized report with that length, a blank rest at
//! the end no frame; after the frames are drained, at most `cap` bytes (and one `\r`) are
//! held; a frame that decodes encodes back to a frame that decodes to the same message.

use switchboard_wire::{Frame, LineBuffer, decode, encode};

use crate::input::{Input, chunks};

/// A frame, owned, as the invariants compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Framed {
    Line(Vec<u8>),
    Oversized(usize),
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let cap = input.size(1024);
    let pattern = input.pattern(4);
    let stream = input.rest();
    let reference = reference(stream);
    for (how, chunks) in [
        ("whole", vec![stream]),
        ("in chunks", chunks(stream, pattern)),
    ] {
        let got = frames(cap, &chunks);
        assert_eq!(
            got.len(),
            reference.len(),
            "read {how}: {} frames where the stream has {} (cap {cap})",
            got.len(),
            reference.len()
        );
        for (frame, line) in got.iter().zip(&reference) {
            line.check(frame, cap);
        }
    }
    for line in &reference {
        if line.stripped.len() <= cap {
            round_trip(&line.stripped);
        }
    }
}

/// A line of the stream as a plain split on `\n` sees it.
pub(crate) struct Line {
    /// Without one trailing `\r` (the end-of-stream rest keeps it).
    pub(crate) stripped: Vec<u8>,
}

/// The stream's frames by a plain split: each `\n`-terminated line, then the rest unless it
/// is only whitespace (however long).
pub(crate) fn reference(stream: &[u8]) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut parts: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    let rest = parts.pop().unwrap_or_default();
    for raw in parts {
        lines.push(Line {
            stripped: raw.strip_suffix(b"\r").unwrap_or(raw).to_vec(),
        });
    }
    if !rest.iter().all(u8::is_ascii_whitespace) {
        lines.push(Line {
            stripped: rest.to_vec(),
        });
    }
    lines
}

impl Line {
    /// The frame a buffer gave for this line must be the line (at most `cap` bytes, not
    /// counting a `\r` before its `\n`) or an oversized report with that length, however
    /// the stream was split.
    fn check(&self, frame: &Framed, cap: usize) {
        match frame {
            Framed::Line(line) => {
                assert!(
                    self.stripped.len() <= cap,
                    "a {}-byte line passed the {cap}-byte cap",
                    self.stripped.len()
                );
                assert_eq!(line, &self.stripped, "a line frame differs from the line");
            }
            Framed::Oversized(len) => {
                assert!(
                    self.stripped.len() > cap,
                    "a {}-byte line reported oversized with a {cap}-byte cap",
                    self.stripped.len()
                );
                assert!(
                    *len == self.stripped.len(),
                    "an oversized {}-byte line reported as {len} bytes",
                    self.stripped.len()
                );
            }
        }
    }
}

/// Every frame of the chunks, then the end-of-stream frame; checks the memory bound after
/// each chunk.
pub(crate) fn frames(cap: usize, chunks: &[&[u8]]) -> Vec<Framed> {
    let mut buffer = LineBuffer::new(cap);
    let mut out = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        if i.is_multiple_of(2) {
            buffer.push(chunk);
        } else {
            buffer.spare().extend_from_slice(chunk);
        }
        while let Some(frame) = buffer.next_frame() {
            out.push(owned(frame));
        }
        // The cap, and a `\r` that may be the start of the line's `\r\n`.
        let held = buffer.spare().len();
        assert!(
            held <= cap + 1,
            "{held} bytes held after draining, over the {cap}-byte cap and a `\\r`"
        );
    }
    if let Some(frame) = buffer.finish() {
        out.push(owned(frame));
    }
    out
}

fn owned(frame: Frame<'_>) -> Framed {
    match frame {
        Frame::Line(line) => Framed::Line(line.to_vec()),
        Frame::Oversized { len, .. } => Framed::Oversized(len),
    }
}

/// A frame that decodes encodes back to one that decodes to the same message.
fn round_trip(line: &[u8]) {
    let Ok(message) = decode(line) else { return };
    let encoded = encode(&message);
    let text = encoded.strip_suffix(b"\n").unwrap_or(&encoded);
    match decode(text) {
        Ok(again) => assert_eq!(
            encode(&again),
            encoded,
            "a decoded message does not survive encoding"
        ),
        Err(malformed) => panic!("an encoded message does not decode: {malformed}"),
    }
}
