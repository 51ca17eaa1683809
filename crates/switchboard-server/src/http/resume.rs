//! Resumable event streams of legacy requests (2025-11-25 polling, SEP-1699).
//!
//! A legacy request's event stream opens with a priming event (an id, the `retry:` delay,
//! empty data); every event after it carries an id `<stream>-<seq>`. The events are kept
//! (bounded) while the request runs, so when the stream is lost — the client's connection
//! dropped, a proxy cut it, or the server closed it on purpose after
//! [`HttpLimits::poll_after`](super::HttpLimits) — the request goes on, and the client
//! resumes it with a GET carrying `Last-Event-ID`: the events after that id are sent again,
//! then the rest as they come, the answer last. A request answered while nobody was
//! attached keeps its events for [`REPLAY_KEEP`] for the client to come back.

use std::collections::VecDeque;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::Value;
use switchboard_wire::{Outgoing, RequestId};
use tokio::sync::mpsc;

use super::reply::SseWriter;
use crate::core::{Answer, ServerNotification};

/// Events of one stream kept for a resumption, in bytes at most (the newest event is
/// always kept, however large).
pub(super) const MAX_KEPT_BYTES: usize = 1024 * 1024;
/// Streams of one session that can be resumed at most; a stream beyond them is not
/// resumable (no ids, no priming event).
pub(super) const MAX_RESUMABLE_STREAMS: usize = 64;
/// How long an answered request's events wait for the client that lost its stream.
pub(super) const REPLAY_KEEP: Duration = Duration::from_secs(60);
/// The `retry:` delay of a priming event when the server does not poll.
pub(super) const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// A client's GET that resumes a stream: where it was, and the new stream.
#[derive(Debug)]
pub(super) struct Resume {
    /// The sequence number of the last event the client has (`0`: the priming event).
    pub(super) after: u64,
    pub(super) writer: SseWriter,
}

/// The next client that resumes a stream; never for a stream that cannot be resumed.
pub(super) async fn next_resume(resumes: &mut Option<mpsc::Receiver<Resume>>) -> Option<Resume> {
    match resumes {
        Some(resumes) => resumes.recv().await,
        None => std::future::pending().await,
    }
}

/// `<stream>-<seq>` read back from a `Last-Event-ID` header.
pub(super) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    let (stream, seq) = text.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// The writer of one request's event stream: plain (the stream ends with the connection),
/// or resumable (events kept and numbered; a lost connection detaches it).
pub(super) struct StreamOut {
    writer: Option<SseWriter>,
    /// The stream's number in its session, when it can be resumed.
    stream: Option<u64>,
    next_seq: u64,
    kept: VecDeque<(u64, Bytes)>,
    kept_bytes: usize,
}

impl StreamOut {
    /// A stream on `writer`; resumable as number `stream` of its session, whose priming
    /// event (with `retry`) goes out first.
    pub(super) async fn open(writer: SseWriter, stream: Option<u64>, retry: Duration) -> StreamOut {
        let mut out = StreamOut {
            writer: Some(writer),
            stream,
            next_seq: 1,
            kept: VecDeque::new(),
            kept_bytes: 0,
        };
        if let Some(stream) = out.stream {
            let priming = format!("id: {stream}-0\nretry: {}\ndata: \n\n", retry.as_millis());
            out.write(Bytes::from(priming)).await;
        }
        out
    }

    /// Whether a client is attached.
    pub(super) fn attached(&self) -> bool {
        self.writer.is_some()
    }

    /// Whether the stream can be resumed.
    pub(super) fn resumable(&self) -> bool {
        self.stream.is_some()
    }

    /// Lets the client go (the server polls, or the client left); a resumable stream keeps
    /// its events.
    pub(super) fn detach(&mut self) {
        self.writer = None;
    }

    /// Resolves when the attached client has gone; never while none is attached.
    pub(super) async fn closed(&self) {
        match &self.writer {
            Some(writer) => writer.closed().await,
            None => std::future::pending().await,
        }
    }

    /// Attaches a resuming client and sends it the events after the one it has; `false`
    /// when it has events no longer kept (it is then let go).
    pub(super) async fn attach(&mut self, resume: Resume) -> bool {
        let oldest = self.kept.front().map_or(self.next_seq, |(seq, _)| *seq);
        if resume.after + 1 < oldest || resume.after >= self.next_seq {
            return false;
        }
        self.writer = Some(resume.writer);
        let replay: Vec<Bytes> = self
            .kept
            .iter()
            .filter(|(seq, _)| *seq > resume.after)
            .map(|(_, bytes)| bytes.clone())
            .collect();
        for bytes in replay {
            if !self.write(bytes).await {
                break;
            }
        }
        true
    }

    /// Sends a notification; `false` when the stream is over (a plain one whose client
    /// left).
    pub(super) async fn notification(&mut self, notification: &ServerNotification) -> bool {
        self.message(&Outgoing::Notification {
            method: notification.method,
            params: Some(&notification.params),
        })
        .await
    }

    /// Sends a request to the client (a question).
    pub(super) async fn request(&mut self, id: &RequestId, method: &str, params: &Value) -> bool {
        self.message(&Outgoing::Request {
            id,
            method,
            params: Some(params),
        })
        .await
    }

    /// Sends the request's answer; `true` when it reached an attached client.
    pub(super) async fn answer(&mut self, id: &RequestId, answer: &Answer) -> bool {
        let message = match answer {
            Ok(result) => Outgoing::Result { id, result },
            Err(error) => Outgoing::Error {
                id: Some(id),
                error,
            },
        };
        self.message(&message).await && self.attached()
    }

    /// Sends a keep-alive comment to an attached client.
    pub(super) async fn keep_alive(&mut self) -> bool {
        match &self.writer {
            Some(writer) => {
                if writer.keep_alive().await {
                    true
                } else {
                    self.lost()
                }
            }
            None => true,
        }
    }

    async fn message(&mut self, message: &Outgoing<'_>) -> bool {
        let data = serde_json::to_string(message).unwrap_or_default();
        let Some(stream) = self.stream else {
            let event = switchboard_protocol::sse::encode_event(&data);
            return self.write(Bytes::from(event)).await;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut event = format!("id: {stream}-{seq}\n");
        event.push_str(&switchboard_protocol::sse::encode_event(&data));
        let bytes = Bytes::from(event);
        self.kept_bytes += bytes.len();
        self.kept.push_back((seq, bytes.clone()));
        while self.kept_bytes > MAX_KEPT_BYTES && self.kept.len() > 1 {
            if let Some((_, dropped)) = self.kept.pop_front() {
                self.kept_bytes -= dropped.len();
            }
        }
        self.write(bytes).await
    }

    /// Writes to the attached client, if any; a failed write detaches a resumable stream
    /// (`true`) and ends a plain one (`false`).
    async fn write(&mut self, bytes: Bytes) -> bool {
        let Some(writer) = &self.writer else {
            return true;
        };
        if writer.raw(bytes).await {
            true
        } else {
            self.lost()
        }
    }

    fn lost(&mut self) -> bool {
        self.writer = None;
        self.resumable()
    }
}
