//! Newline framing with a maximum frame size.
//!
//! [`LineBuffer`] is runtime-agnostic: bytes go in, frames come out. A line longer than the
//! limit is skipped as it streams past (memory stays bounded by the limit) and reported as
//! [`Frame::Oversized`] once its end is seen, with the id of the answer it meant to be when
//! that can be told for sure: the skipped bytes pass through a bounded scanner
//! (`frame_id`) on their way out, so the request it answers can fail at once.

use crate::frame_id::{IdScanner, answer_id};
use crate::message::MalformedId;

/// One frame taken from the byte stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line without its `\n` (and without a trailing `\r`).
    Line(&'a [u8]),
    /// A line longer than the limit; its bytes were discarded.
    Oversized {
        /// How many bytes the line had.
        len: usize,
        /// The id of the response it meant to be, when its top-level `id` could be read
        /// for sure as it streamed past (see [`MalformedId::Response`]).
        id: Option<MalformedId>,
    },
}

/// The line being skipped: its length so far, the scanner following its bytes, whether its
/// last byte so far is a `\r` (not counted when a `\n` follows) and whether it is blank.
#[derive(Debug)]
struct Discarding {
    skipped: usize,
    scanner: IdScanner,
    ends_with_cr: bool,
    blank: bool,
}

impl Discarding {
    /// Starts skipping a line whose first bytes are `head`.
    fn start(head: &[u8]) -> Discarding {
        let mut discarding = Discarding {
            skipped: 0,
            scanner: IdScanner::new(),
            ends_with_cr: false,
            blank: true,
        };
        discarding.skip(head);
        discarding
    }

    fn skip(&mut self, bytes: &[u8]) {
        self.skipped += bytes.len();
        self.scanner.feed(bytes);
        if let Some(last) = bytes.last() {
            self.ends_with_cr = *last == b'\r';
        }
        self.blank = self.blank && bytes.iter().all(u8::is_ascii_whitespace);
    }

    /// The skipped line, ended by a `\n`: its length without a `\r` before that, as for a
    /// line that was kept.
    fn into_line_frame<'a>(self) -> Frame<'a> {
        Frame::Oversized {
            len: self.skipped - usize::from(self.ends_with_cr),
            id: self.scanner.finish(),
        }
    }

    /// The skipped rest at the end of the stream: nothing when it was only whitespace, as
    /// for a rest that was kept.
    fn into_tail_frame<'a>(self) -> Option<Frame<'a>> {
        (!self.blank).then(|| Frame::Oversized {
            len: self.skipped,
            id: self.scanner.finish(),
        })
    }
}

/// Accumulates bytes and splits them into lines.
#[derive(Debug)]
pub struct LineBuffer {
    buf: Vec<u8>,
    start: usize,
    scanned: usize,
    max_frame_bytes: usize,
    discarding: Option<Discarding>,
}

impl LineBuffer {
    /// A buffer that accepts lines of at most `max_frame_bytes` bytes.
    pub fn new(max_frame_bytes: usize) -> LineBuffer {
        LineBuffer {
            buf: Vec::with_capacity(8 * 1024),
            start: 0,
            scanned: 0,
            max_frame_bytes,
            discarding: None,
        }
    }

    /// The limit this buffer enforces.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Space to read into: drops consumed bytes first. Call [`LineBuffer::filled`] after.
    pub fn spare(&mut self) -> &mut Vec<u8> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.reserve(8 * 1024);
        &mut self.buf
    }

    /// Appends bytes (for callers that do not read into [`LineBuffer::spare`]).
    pub fn push(&mut self, bytes: &[u8]) {
        self.spare().extend_from_slice(bytes);
    }

    /// Takes the next complete frame, if any.
    pub fn next_frame(&mut self) -> Option<Frame<'_>> {
        let unread = &self.buf[self.scanned..];
        match memchr::memchr(b'\n', unread) {
            Some(offset) => {
                let end = self.scanned + offset;
                let begin = self.start;
                self.start = end + 1;
                self.scanned = self.start;
                if let Some(mut discarding) = self.discarding.take() {
                    discarding.skip(&self.buf[begin..end]);
                    return Some(discarding.into_line_frame());
                }
                let mut line = &self.buf[begin..end];
                if let Some(stripped) = line.strip_suffix(b"\r") {
                    line = stripped;
                }
                if line.len() > self.max_frame_bytes {
                    return Some(Frame::Oversized {
                        len: line.len(),
                        id: answer_id(line),
                    });
                }
                Some(Frame::Line(line))
            }
            None => {
                let pending = &self.buf[self.start..];
                if let Some(discarding) = &mut self.discarding {
                    discarding.skip(pending);
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                } else if pending.len() - usize::from(pending.ends_with(b"\r"))
                    > self.max_frame_bytes
                {
                    // (A `\r` last may be the start of this line's `\r\n`: not counted.)
                    self.discarding = Some(Discarding::start(pending));
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                } else {
                    self.scanned = self.buf.len();
                }
                None
            }
        }
    }

    /// At end of stream: whatever is left that is not only whitespace, as a last frame.
    pub fn finish(&mut self) -> Option<Frame<'_>> {
        if let Some(mut discarding) = self.discarding.take() {
            discarding.skip(&self.buf[self.start..]);
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
            return discarding.into_tail_frame();
        }
        let rest = &self.buf[self.start..];
        self.start = self.buf.len();
        self.scanned = self.start;
        if rest.iter().all(u8::is_ascii_whitespace) {
            None
        } else if rest.len() > self.max_frame_bytes {
            // A `\r` last was kept while its `\n` might come; none came, so it counts.
            Some(Frame::Oversized {
                len: rest.len(),
                id: answer_id(rest),
            })
        } else {
            Some(Frame::Line(rest))
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// Feeds `chunks` one by one and lists every frame, then the end-of-stream frame.
    fn check(max: usize, chunks: &[&str], expect: Expect) {
        let mut buffer = LineBuffer::new(max);
        let mut out = Vec::new();
        let mut render = |frame: Frame<'_>| match frame {
            Frame::Line(line) => out.push(format!("line {:?}", String::from_utf8_lossy(line))),
            Frame::Oversized { len, id: None } => out.push(format!("oversized {len}")),
            Frame::Oversized { len, id: Some(id) } => out.push(format!("oversized {len}, {id:?}")),
        };
        for chunk in chunks {
            buffer.push(chunk.as_bytes());
            while let Some(frame) = buffer.next_frame() {
                render(frame);
            }
            assert!(buffer.buf.len() <= max + 8 * 1024 + chunk.len());
        }
        if let Some(frame) = buffer.finish() {
            render(frame);
        }
        expect.assert_eq(&out.join("\n"));
    }

    #[test]
    fn splits_lines_across_chunks() {
        check(
            100,
            &["{\"a\":", "1}\n{\"b\":2}\r\n", "\n", "tail"],
            expect![[r#"
                line "{\"a\":1}"
                line "{\"b\":2}"
                line ""
                line "tail""#]],
        );
    }

    #[test]
    fn oversized_lines_are_skipped_with_bounded_memory() {
        let long = "x".repeat(50);
        check(
            10,
            &["short\n", &long, &long, "\nnext\n", &long],
            expect![[r#"
                line "short"
                oversized 100
                line "next"
                oversized 50"#]],
        );
        let quoted = format!("\"{long}\"");
        check(
            10,
            &[
                r#"{"id":4,"result":"#,
                &quoted,
                "}\r\n",
                r#"{"result":1,"id":5}"#,
                "\n",
            ],
            expect![[r#"
                oversized 70, Response(4)
                oversized 19, Response(5)"#]],
        );
        check(
            10,
            &["0123456789ABC\nok\n"],
            expect![[r#"
            oversized 13
            line "ok""#]],
        );
    }

    /// How a line's `\r\n` or a blank tail is split across reads changes nothing (both
    /// found by fuzzing the framing).
    #[test]
    fn line_ends_and_blank_tails_count_the_same_however_they_are_read() {
        // Exactly the cap, then `\r\n`: a line whether the `\r` comes with it or not.
        check(4, &["abcd\r\n"], expect![[r#"line "abcd""#]]);
        check(4, &["abcd\r", "\n"], expect![[r#"line "abcd""#]]);
        // One over: oversized, its length without the `\r`, however it is split.
        check(4, &["abcde\r\n"], expect!["oversized 5"]);
        check(4, &["abcde\r", "\n"], expect!["oversized 5"]);
        check(4, &["abc", "de\r", "\n"], expect!["oversized 5"]);
        // At the end of the stream a `\r` last is part of the rest, and counts.
        check(4, &["abcd\r"], expect!["oversized 5"]);
        // A blank rest at the end of the stream is no frame, however long.
        check(4, &["ok\n  "], expect![[r#"line "ok""#]]);
        check(
            4,
            &["ok\n", "          ", " \t  "],
            expect![[r#"line "ok""#]],
        );
        check(
            4,
            &["ok\n", "   xyz    "],
            expect![[r#"
            line "ok"
            oversized 10"#]],
        );
    }
}
