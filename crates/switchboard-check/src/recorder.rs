//! A frame tap that records what crossed the wire, with timestamps, in bounded memory:
//! the requests we sent, the responses, notifications and requests the server sent, and
//! every line that was not a JSON-RPC message. Checks read their evidence from it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_protocol::{meta, methods};
use switchboard_wire::{Direction, FrameTap, Message, RequestId, decode, excerpt};

use crate::report::capped;

/// Most entries kept per list; later ones are only counted.
const MAX_ENTRIES: usize = 8192;
/// Malformed lines kept with an excerpt.
const MAX_MALFORMED: usize = 16;
/// Bytes of each excerpt.
const EXCERPT_BYTES: usize = 300;
/// Frames kept for the transcript.
const TRANSCRIPT_FRAMES: usize = 64;
/// Bytes kept of a method name the server chose (a frame may be megabytes long).
const METHOD_BYTES: usize = 256;
/// Bytes kept of an acknowledgment's `notifications`.
const HONOURED_BYTES: usize = 1024;
/// Inbound messages kept whole, for `wire-schema`: at most this many, each at most
/// [`MAX_KEPT_BYTES`], at most [`MAX_KEPT_TOTAL`] in all; later ones are only counted.
const MAX_KEPT: usize = 1024;
const MAX_KEPT_BYTES: usize = 256 * 1024;
const MAX_KEPT_TOTAL: usize = 16 * 1024 * 1024;

/// An inbound frame kept whole (a JSON-RPC message, as text).
#[derive(Debug, Clone)]
pub(crate) struct KeptMessage {
    pub(crate) text: String,
    /// For a response: the method of the request with its id.
    pub(crate) request_method: Option<String>,
}

/// A request we sent.
#[derive(Debug, Clone)]
pub(crate) struct SentRequest {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    /// For `tools/call`: the tool's name.
    pub(crate) tool: Option<String>,
    /// The progress token it asked for (`_meta.progressToken`).
    pub(crate) progress_token: Option<RequestId>,
    pub(crate) at: Instant,
}

/// A response the server sent.
#[derive(Debug, Clone)]
pub(crate) struct SeenResponse {
    pub(crate) id: Option<RequestId>,
    pub(crate) at: Instant,
    pub(crate) excerpt: String,
}

/// A notification or request the server sent.
#[derive(Debug, Clone)]
pub(crate) struct SeenMessage {
    pub(crate) method: String,
    pub(crate) at: Instant,
    /// For `notifications/progress`: the token, and the `progress` it reports.
    pub(crate) progress_token: Option<RequestId>,
    pub(crate) progress: Option<f64>,
    /// The 2026-07-28 subscription it names (`_meta["io.modelcontextprotocol/subscriptionId"]`).
    pub(crate) subscription: Option<RequestId>,
    /// For a subscription acknowledgment: the notifications it honours (capped).
    pub(crate) honoured: Option<Value>,
    pub(crate) excerpt: String,
}

/// A line on stdout that was not a JSON-RPC message.
#[derive(Debug, Clone)]
pub(crate) struct SeenMalformed {
    pub(crate) what: String,
    pub(crate) excerpt: String,
}

#[derive(Debug, Default)]
struct State {
    sent: Vec<SentRequest>,
    /// The method of each request in `sent`, by id (a response's request, at once).
    sent_methods: HashMap<RequestId, String>,
    cancels: Vec<(RequestId, Instant)>,
    responses: Vec<SeenResponse>,
    notifications: Vec<SeenMessage>,
    server_requests: Vec<SeenMessage>,
    malformed: Vec<SeenMalformed>,
    malformed_total: u64,
    dropped: u64,
    transcript: VecDeque<String>,
    kept: Vec<KeptMessage>,
    kept_bytes: usize,
    /// Inbound messages not kept (over a cap).
    not_kept: u64,
}

/// The recording tap. One per server process.
#[derive(Debug)]
pub(crate) struct Recorder {
    origin: Instant,
    state: Mutex<State>,
}

fn push<T>(list: &mut Vec<T>, dropped: &mut u64, item: T) {
    if list.len() < MAX_ENTRIES {
        list.push(item);
    } else {
        *dropped += 1;
    }
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            origin: Instant::now(),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Requests we sent, in order.
    pub(crate) fn sent(&self) -> Vec<SentRequest> {
        self.lock().sent.clone()
    }

    /// Cancellations we sent (request id, when).
    pub(crate) fn cancels(&self) -> Vec<(RequestId, Instant)> {
        self.lock().cancels.clone()
    }

    /// Responses the server sent.
    pub(crate) fn responses(&self) -> Vec<SeenResponse> {
        self.lock().responses.clone()
    }

    /// Notifications the server sent.
    pub(crate) fn notifications(&self) -> Vec<SeenMessage> {
        self.lock().notifications.clone()
    }

    /// The notifications the server sent that `keep` selects (cloning only those).
    pub(crate) fn notifications_where(
        &self,
        keep: impl Fn(&SeenMessage) -> bool,
    ) -> Vec<SeenMessage> {
        self.lock()
            .notifications
            .iter()
            .filter(|n| keep(n))
            .cloned()
            .collect()
    }

    /// Requests the server sent.
    pub(crate) fn server_requests(&self) -> Vec<SeenMessage> {
        self.lock().server_requests.clone()
    }

    /// Malformed lines (the first few) and how many there were in all.
    pub(crate) fn malformed(&self) -> (Vec<SeenMalformed>, u64) {
        let state = self.lock();
        (state.malformed.clone(), state.malformed_total)
    }

    /// The server's messages kept whole, and how many more were not kept (over a cap).
    pub(crate) fn kept_messages(&self) -> (Vec<KeptMessage>, u64) {
        let state = self.lock();
        (state.kept.clone(), state.not_kept)
    }

    /// The last frames in both directions, one line each.
    pub(crate) fn transcript(&self) -> Vec<String> {
        self.lock().transcript.iter().cloned().collect()
    }

    /// Time since the recorder was created, for notes.
    pub(crate) fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.origin)
    }

    fn outbound(&self, state: &mut State, bytes: &[u8], now: Instant) {
        match decode(bytes) {
            Ok(Message::Request(request)) => {
                let tool = (request.method == "tools/call")
                    .then(|| {
                        request
                            .params
                            .as_ref()
                            .and_then(|p| p.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .flatten();
                let progress_token = request
                    .params
                    .as_ref()
                    .and_then(|p| p.pointer("/_meta/progressToken"))
                    .and_then(RequestId::from_json);
                if state.sent.len() < MAX_ENTRIES {
                    state
                        .sent_methods
                        .insert(request.id.clone(), request.method.clone());
                }
                let entry = SentRequest {
                    id: request.id,
                    method: request.method,
                    tool,
                    progress_token,
                    at: now,
                };
                push(&mut state.sent, &mut state.dropped, entry);
            }
            Ok(Message::Notification(notification))
                if notification.method == "notifications/cancelled" =>
            {
                let id = notification
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_json);
                if let Some(id) = id {
                    push(&mut state.cancels, &mut state.dropped, (id, now));
                }
            }
            _ => {}
        }
    }

    /// Keeps an inbound message whole, within the caps.
    fn keep(state: &mut State, bytes: &[u8], request_method: Option<String>) {
        let fits = state.kept.len() < MAX_KEPT
            && bytes.len() <= MAX_KEPT_BYTES
            && state.kept_bytes + bytes.len() <= MAX_KEPT_TOTAL;
        match std::str::from_utf8(bytes) {
            Ok(text) if fits => {
                state.kept_bytes += bytes.len();
                state.kept.push(KeptMessage {
                    text: text.to_owned(),
                    request_method,
                });
            }
            _ => state.not_kept += 1,
        }
    }

    fn inbound(&self, state: &mut State, bytes: &[u8], now: Instant) {
        let text = excerpt(bytes, EXCERPT_BYTES);
        let decoded = decode(bytes);
        if let Ok(message) = &decoded {
            let request_method = match message {
                Message::Response(response) => response
                    .id
                    .as_ref()
                    .and_then(|id| state.sent_methods.get(id).cloned()),
                _ => None,
            };
            Self::keep(state, bytes, request_method);
        }
        match decoded {
            Ok(Message::Response(response)) => {
                let entry = SeenResponse {
                    id: response.id,
                    at: now,
                    excerpt: text,
                };
                push(&mut state.responses, &mut state.dropped, entry);
            }
            Ok(Message::Notification(notification)) => {
                let progress_token = (notification.method == "notifications/progress")
                    .then(|| {
                        notification
                            .params
                            .as_ref()
                            .and_then(|p| p.get("progressToken"))
                            .and_then(RequestId::from_json)
                    })
                    .flatten();
                let params = notification.params.as_ref();
                let subscription = params
                    .and_then(|p| p.pointer("/_meta"))
                    .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
                    .and_then(RequestId::from_json);
                let honoured = (notification.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED)
                    .then(|| params.and_then(|p| p.get("notifications")))
                    .flatten()
                    .map(|n| capped(n, HONOURED_BYTES));
                let progress = (notification.method == methods::PROGRESS)
                    .then(|| {
                        params
                            .and_then(|p| p.get("progress"))
                            .and_then(Value::as_f64)
                    })
                    .flatten();
                let entry = SeenMessage {
                    method: capped_method(notification.method),
                    at: now,
                    progress_token,
                    progress,
                    subscription,
                    honoured,
                    excerpt: text,
                };
                push(&mut state.notifications, &mut state.dropped, entry);
            }
            Ok(Message::Request(request)) => {
                let entry = SeenMessage {
                    method: capped_method(request.method),
                    at: now,
                    progress_token: None,
                    progress: None,
                    subscription: None,
                    honoured: None,
                    excerpt: text,
                };
                push(&mut state.server_requests, &mut state.dropped, entry);
            }
            Err(malformed) => {
                state.malformed_total += 1;
                if state.malformed.len() < MAX_MALFORMED {
                    state.malformed.push(SeenMalformed {
                        what: malformed.kind.to_string(),
                        excerpt: malformed.excerpt,
                    });
                }
            }
        }
    }
}

impl FrameTap for Recorder {
    fn frame(&self, direction: Direction, bytes: &[u8]) {
        let now = Instant::now();
        let mut state = self.lock();
        if state.transcript.len() == TRANSCRIPT_FRAMES {
            state.transcript.pop_front();
        }
        let arrow = match direction {
            Direction::Outbound => "→",
            Direction::Inbound => "←",
        };
        let line = format!(
            "{arrow} +{}ms {}",
            self.offset(now).as_millis(),
            excerpt(bytes, 200)
        );
        state.transcript.push_back(line);
        match direction {
            Direction::Outbound => self.outbound(&mut state, bytes, now),
            Direction::Inbound => self.inbound(&mut state, bytes, now),
        }
    }
}

/// A method name the server chose, cut to [`METHOD_BYTES`] (at a character boundary).
pub(crate) fn capped_method(mut method: String) -> String {
    if method.len() > METHOD_BYTES {
        let mut end = METHOD_BYTES;
        while !method.is_char_boundary(end) {
            end -= 1;
        }
        method.truncate(end);
        method.push('…');
    }
    method
}

/// Requests we sent that never got a response, by id.
pub(crate) fn unanswered(recorder: &Recorder) -> Vec<SentRequest> {
    let answered: HashMap<RequestId, ()> = recorder
        .responses()
        .into_iter()
        .filter_map(|r| r.id.map(|id| (id, ())))
        .collect();
    recorder
        .sent()
        .into_iter()
        .filter(|s| !answered.contains_key(&s.id))
        .collect()
}
