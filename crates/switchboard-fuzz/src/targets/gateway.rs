//! The gateway ([`Gateway::serve`]) reading random frames from a client, over an in-memory
//! pipe, with a runtime that has no servers.
//!
//! Input: the client's stream, written whole, then the client closes its side. Invariants:
//! every request is answered with its id (a request the client cancelled may stay
//! silent, as the protocol asks), every frame that is not JSON-RPC gets one error answer,
//! nothing else is answered, every answer is a JSON-RPC response, the gateway returns
//! within the case deadline, nothing panics.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use switchboard_gateway::{Gateway, GatewayOptions};
use switchboard_runtime::RuntimeOptions;
use switchboard_runtime::sources::ServerSource;
use switchboard_wire::{
    DEFAULT_MAX_FRAME_BYTES, LineBuffer, MalformedKind, Message, RequestId, decode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::targets::block_on;
use crate::targets::framing::{Framed, frames};

/// Longest a case may take before it counts as a hang.
const CASE_DEADLINE: Duration = Duration::from_secs(20);

/// Runs one input.
pub fn run(data: &[u8]) {
    let sent = Sent::of(data);
    let output = block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let options = GatewayOptions {
            startup_wait: Duration::from_secs(1),
            initialize_wait: Duration::from_millis(100),
            close_grace: Duration::from_millis(100),
            ..GatewayOptions::new("0.0.0-fuzz")
        };
        let gateway = Gateway::new(
            RuntimeOptions::new(ServerSource::Entries(Vec::new())),
            options,
        );
        let runtime = gateway.runtime().clone();
        let serve = gateway.serve(server_read, server_write);
        let write = async move {
            let _ = client_write.write_all(data).await;
            let _ = client_write.shutdown().await;
        };
        let read = async move {
            let mut output = Vec::new();
            let _ = client_read.read_to_end(&mut output).await;
            output
        };
        let all = async { tokio::join!(serve, write, read) };
        let joined = tokio::time::timeout(CASE_DEADLINE, all).await;
        runtime.dispose().await;
        match joined {
            Ok((_end, (), output)) => output,
            Err(_) => panic!("the gateway did not finish within {CASE_DEADLINE:?}"),
        }
    });
    check(&sent, &output);
}

/// What the client sent, as the gateway's connection frames it.
#[derive(Debug, Default)]
struct Sent {
    /// Requests by id: how many.
    requests: BTreeMap<RequestId, usize>,
    /// Ids of requests (other than `initialize`) that a `notifications/cancelled` names.
    cancelled_calls: BTreeSet<RequestId>,
    /// Frames that are not JSON-RPC (each gets one error answer).
    malformed: usize,
    /// Frames the plain decoder rejects only for a number out of range, which the
    /// connection's envelope decoder may read as a message (a deviation the envelope
    /// target names): each gets no answer or one, with its id or `null`.
    uncertain: usize,
}

impl Sent {
    fn of(data: &[u8]) -> Sent {
        let mut sent = Sent::default();
        let mut calls = BTreeSet::new();
        let mut cancelled = BTreeSet::new();
        for frame in frames(DEFAULT_MAX_FRAME_BYTES, &[data]) {
            let line = match frame {
                Framed::Line(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Framed::Line(line) => line,
                Framed::Oversized(_) => {
                    sent.malformed += 1;
                    continue;
                }
            };
            match decode(&line) {
                Ok(Message::Request(request)) => {
                    // Every request but `initialize` may be cancelled (and then stays silent).
                    if request.method != "initialize" {
                        calls.insert(request.id.clone());
                    }
                    *sent.requests.entry(request.id).or_default() += 1;
                }
                Ok(Message::Notification(notification)) => {
                    if notification.method == "notifications/cancelled"
                        && let Some(id) = notification
                            .params
                            .as_ref()
                            .and_then(|p| p.get("requestId"))
                            .and_then(RequestId::from_json)
                    {
                        cancelled.insert(id);
                    }
                }
                Ok(Message::Response(_)) => {}
                Err(malformed) => match &malformed.kind {
                    MalformedKind::InvalidJson(why) if why.starts_with("number out of range") => {
                        sent.uncertain += 1;
                    }
                    _ => sent.malformed += 1,
                },
            }
        }
        sent.cancelled_calls = calls.intersection(&cancelled).cloned().collect();
        sent
    }
}

fn check(sent: &Sent, output: &[u8]) {
    let mut answered: BTreeMap<Option<RequestId>, usize> = BTreeMap::new();
    let mut buffer = LineBuffer::new(DEFAULT_MAX_FRAME_BYTES);
    buffer.push(output);
    let mut lines = Vec::new();
    while let Some(frame) = buffer.next_frame() {
        lines.push(owned_line(frame));
    }
    if let Some(frame) = buffer.finish() {
        lines.push(owned_line(frame));
    }
    for line in lines {
        match decode(&line) {
            Ok(Message::Response(response)) => *answered.entry(response.id).or_default() += 1,
            Ok(Message::Notification(_)) => {}
            Ok(Message::Request(request)) => {
                panic!("the gateway sent a request: {}", request.method)
            }
            Err(malformed) => panic!("the gateway sent a broken frame: {malformed}"),
        }
    }
    // A request whose id is in use by one in flight is refused with `id: null`; a broken
    // frame is answered with its own id when it has one no request in flight uses.
    let mut with_other_ids = 0;
    for (id, got) in &answered {
        let Some(id) = id else { continue };
        match sent.requests.get(id) {
            Some(count) => {
                let silent = sent.cancelled_calls.contains(id);
                assert!(
                    *got >= 1 || silent,
                    "request {id} sent {count} times, never answered with its id"
                );
                assert!(
                    *got <= count + sent.malformed + sent.uncertain,
                    "request {id} sent {count} times, answered {got} times"
                );
            }
            None => with_other_ids += got,
        }
    }
    for (id, count) in &sent.requests {
        assert!(
            answered.contains_key(&Some(id.clone())) || sent.cancelled_calls.contains(id),
            "request {id} sent {count} times, never answered with its id"
        );
    }
    assert!(
        with_other_ids <= sent.malformed + sent.uncertain,
        "{with_other_ids} answers with ids no request had, for {} broken frames",
        sent.malformed + sent.uncertain
    );
    let silent_at_most: usize = sent
        .cancelled_calls
        .iter()
        .map(|id| sent.requests.get(id).copied().unwrap_or(0))
        .sum();
    let total: usize = answered.values().sum();
    let expected: usize = sent.requests.values().sum::<usize>() + sent.malformed;
    assert!(
        total + silent_at_most >= expected && total <= expected + sent.uncertain,
        "{total} answers for {expected} requests and broken frames ({silent_at_most} may stay silent)"
    );
}

fn owned_line(frame: switchboard_wire::Frame<'_>) -> Vec<u8> {
    match frame {
        switchboard_wire::Frame::Line(line) => line.to_vec(),
        switchboard_wire::Frame::Oversized { len, .. } => {
            panic!("the gateway sent a {len}-byte frame, over the frame cap")
        }
    }
}
