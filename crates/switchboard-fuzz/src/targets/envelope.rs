//! A [`Connection`] reading a stream (its envelope decoder, the hot path) against the plain
//! decoder ([`decode`]) over the same frames.
//!
//! Input: two bytes for the frame cap (1..=4096), then the stream, written into an in-memory
//! pipe whose other end a connection reads. Invariants: every frame that is not blank
//! becomes exactly one event, in order, and of the kind the plain decoder says, with the
//! same id, method and parameters (the two decoders agree); the connection ends when the
//! stream does; nothing panics.

use std::time::Duration;

use switchboard_wire::{
    Connection, ConnectionOptions, Inbound, Malformed, MalformedKind, Message, decode,
};
use tokio::io::AsyncWriteExt;

use crate::input::Input;
use crate::targets::block_on;
use crate::targets::framing::{Line, reference};

/// Longest a case may take before it counts as a hang.
const CASE_DEADLINE: Duration = Duration::from_secs(10);

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let cap = input.size(4096);
    let stream = input.rest();
    let expected: Vec<Expected> = reference(stream)
        .iter()
        .filter_map(|line| expected(line, cap))
        .collect();
    let events = block_on(async {
        let (mut ours, theirs) = tokio::io::duplex(64 * 1024);
        let options = ConnectionOptions {
            max_frame_bytes: cap,
            ..ConnectionOptions::new("fuzz")
        };
        let (connection, mut inbound) = Connection::start(theirs, tokio::io::sink(), options, None);
        let write = async move {
            let _ = ours.write_all(stream).await;
            let _ = ours.shutdown().await;
        };
        let read = async {
            let mut events = Vec::new();
            while let Some(event) = inbound.recv().await {
                events.push(event);
            }
            events
        };
        let run = async { tokio::join!(write, read).1 };
        let events = tokio::time::timeout(CASE_DEADLINE, run).await;
        drop(connection);
        events.unwrap_or_else(|_| {
            panic!("the connection did not end within {CASE_DEADLINE:?} of its stream")
        })
    });
    if let Err(why) = align(&expected, &events) {
        panic!("{why}");
    }
}

/// Whether the events are the expected ones, one for one and in order; `Err` says where
/// they first differ.
fn align(expected: &[Expected], events: &[Inbound]) -> Result<(), String> {
    for (at, want) in expected.iter().enumerate() {
        match events.get(at) {
            Some(event) => verdict(event, want)?,
            None => {
                return Err(format!(
                    "the connection ended without an event for {want:?}"
                ));
            }
        }
    }
    match events.get(expected.len()..) {
        Some([]) | None => Ok(()),
        Some(extra) => Err(format!("events for no frame: {extra:?}")),
    }
}

/// What a line must become.
#[derive(Debug)]
enum Expected {
    Message(Message),
    Malformed(Malformed),
    /// An oversized report with this length (without the `\r` of the line's `\r\n`).
    Oversized(usize),
}

fn expected(line: &Line, cap: usize) -> Option<Expected> {
    if line.stripped.len() > cap {
        return Some(Expected::Oversized(line.stripped.len()));
    }
    if line.stripped.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(decoded(&line.stripped))
}

fn decoded(line: &[u8]) -> Expected {
    match decode(line) {
        Ok(message) => Expected::Message(message),
        Err(malformed) => Expected::Malformed(malformed),
    }
}

/// `Err` says how the event differs from what the plain decoder read.
fn verdict(event: &Inbound, expected: &Expected) -> Result<(), String> {
    let same = |same: bool, what: &str| {
        if same {
            Ok(())
        } else {
            Err(format!(
                "the decoders read {what} differently: {event:?} / {expected:?}"
            ))
        }
    };
    match (event, expected) {
        (Inbound::Malformed(got), Expected::Oversized(len)) => same(
            matches!(got.kind, MalformedKind::Oversized { .. }) && got.len == *len,
            "an oversized line",
        ),
        (Inbound::Request(got), Expected::Message(Message::Request(want))) => {
            same(got == want, "a request")
        }
        (Inbound::Notification(got), Expected::Message(Message::Notification(want))) => {
            same(got == want, "a notification")
        }
        (
            Inbound::UnexpectedResponse { response, .. },
            Expected::Message(Message::Response(want)),
        ) => {
            same(response.id == want.id, "a response's id")?;
            match (&response.outcome, &want.outcome) {
                (Ok(_), Ok(_)) => Ok(()),
                (Err(got), Err(want)) => same(got == want, "an error object"),
                _ => same(false, "whether a response is a result"),
            }
        }
        // Accepted deviation: the envelope decoder skips the members it does not need
        // without reading their numbers, so a frame broken only by a number out of range
        // (`1e999`: valid JSON grammar, past what the plain decoder represents) is read for
        // what else it holds: a message (a result with such a number becomes an
        // "unreadable result" error), or another reason. Checking every skipped number
        // would cost the hot path for no safety: the number is never used.
        (_, Expected::Malformed(want)) if out_of_range(want) => Ok(()),
        (Inbound::Malformed(got), Expected::Malformed(want)) => {
            same(
                std::mem::discriminant(&got.kind) == std::mem::discriminant(&want.kind),
                "why a frame is broken",
            )?;
            same(got.id == want.id, "a broken frame's id")?;
            same(got.len == want.len, "a broken frame's length")
        }
        _ => same(false, "a frame"),
    }
}

fn out_of_range(malformed: &Malformed) -> bool {
    matches!(&malformed.kind, MalformedKind::InvalidJson(why) if why.starts_with("number out of range"))
}
