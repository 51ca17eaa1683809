//! A JSON-RPC connection over any byte stream pair.
//!
//! Sends may run concurrently (each frame is written whole under a lock); receiving is done
//! by one reader task per connection. A response goes from the reader straight to the
//! waiting caller through a oneshot channel: one task hop per message. Everything else the
//! peer sends (requests, notifications, malformed frames, responses nobody waits for)
//! arrives on the bounded [`Inbound`] channel, in order.
//!
//! What carries the messages is a [`Transport`]: a byte stream written line by line
//! ([`Connection::start`]) or a message transport of another crate
//! ([`Connection::start_with_transport`], e.g. Streamable HTTP), which hands what the peer
//! sent to the connection's [`InboundSink`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::envelope::{Decoded, ResultJson, decode_borrowed};
use crate::framing::{Frame, LineBuffer};
use crate::message::{
    ErrorObject, Malformed, MalformedId, MalformedKind, Notification, Outgoing, Request, RequestId,
    RequestLine, Response, Serialized, WriteParams, codes,
};
use crate::transport::{
    CancelNotice, MessageContext, OutgoingKind, OutgoingMessage, StreamTransport, Transport,
    TransportError,
};
use switchboard_text::peer_text::PeerText;

/// Default maximum size of one inbound frame: 16 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// Default capacity of the inbound channel.
pub const DEFAULT_INBOUND_CAPACITY: usize = 256;
const DEFERRED_CAPACITY: usize = 256;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From us to the peer.
    Outbound,
    /// From the peer to us.
    Inbound,
}

/// Receives a copy of every frame in both directions (for transcripts and debugging).
pub trait FrameTap: Send + Sync {
    /// Called with the frame's bytes, without the newline.
    fn frame(&self, direction: Direction, bytes: &[u8]);
}

/// Settings for one connection.
#[derive(Clone)]
pub struct ConnectionOptions {
    /// The peer's name, used in logs and errors.
    pub peer_name: Arc<str>,
    /// Maximum size of one inbound frame.
    pub max_frame_bytes: usize,
    /// Capacity of the inbound channel; the reader waits when it is full.
    pub inbound_capacity: usize,
    /// Optional frame tap.
    pub tap: Option<Arc<dyn FrameTap>>,
}

impl ConnectionOptions {
    /// Defaults for a peer with this name.
    pub fn new(peer_name: &str) -> ConnectionOptions {
        ConnectionOptions {
            peer_name: Arc::from(peer_name),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            inbound_capacity: DEFAULT_INBOUND_CAPACITY,
            tap: None,
        }
    }
}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOptions")
            .field("peer_name", &self.peer_name)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("inbound_capacity", &self.inbound_capacity)
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

/// Something the peer sent that is not a response to a waiting request.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A request from the peer; it must be answered.
    Request(Request),
    /// A notification from the peer.
    Notification(Notification),
    /// A frame that is not a JSON-RPC message.
    Malformed(Malformed),
    /// A response that no caller is waiting for.
    UnexpectedResponse {
        /// The response.
        response: Response,
        /// Why nobody waits for it.
        reason: UnexpectedReason,
    },
}

/// Why a response had no waiting caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnexpectedReason {
    /// The id is one we used, but its request already finished, timed out or was cancelled.
    Late,
    /// We never sent a request with this id.
    UnknownId,
    /// The response carries `id: null` (the peer could not read a request).
    NullId,
}

/// Why and how a connection closed, with what the transport knows about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReason {
    /// What happened, e.g. "the server closed its stdout".
    pub summary: String,
    /// The process exit status, for child processes that exited.
    pub exit_status: Option<String>,
    /// The last lines the process wrote to stderr.
    pub stderr_tail: Option<String>,
    /// The address nothing answered at, when the transport never reached its peer (an
    /// HTTP server that is not running, or a wrong URL).
    pub unreachable: Option<String>,
}

impl fmt::Display for CloseReason {
    /// The summary and the stderr tail can hold peer text (an HTTP server's answer, what a
    /// process wrote): both are shown through [`PeerText`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", PeerText(&self.summary))?;
        if let Some(status) = &self.exit_status {
            write!(f, " ({status})")?;
        }
        if let Some(tail) = &self.stderr_tail
            && !tail.trim().is_empty()
        {
            write!(
                f,
                "\n--- last stderr output ---\n{}",
                PeerText(tail.trim_end())
            )?;
        }
        Ok(())
    }
}

/// A failure of the connection itself (not an error answer from the peer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The connection is closed; outstanding and new requests fail with this.
    #[error("connection to `{peer}` closed: {reason}")]
    Closed {
        /// The peer's name.
        peer: Arc<str>,
        /// Why it closed.
        reason: CloseReason,
    },
    /// The peer's answer to this request could not be read: the frame carrying it was
    /// malformed or over the size limit, and its id named this request. The request failed
    /// at once (the frame is also an [`Inbound::Malformed`] event and counted).
    #[error("`{peer}` answered request {id} with a frame that cannot be read: {malformed}")]
    BadAnswer {
        /// The peer's name.
        peer: Arc<str>,
        /// The request's id.
        id: RequestId,
        /// What was wrong with the frame (for one over the limit: its length and the limit).
        malformed: Malformed,
    },
    /// The request's parameters could not be encoded as JSON (a map with non-string keys);
    /// nothing was sent.
    #[error("the parameters of `{method}` for `{peer}` cannot be encoded as JSON: {detail}")]
    Unencodable {
        /// The peer's name.
        peer: Arc<str>,
        /// The request's method.
        method: String,
        /// The encoder's message.
        detail: String,
    },
    /// The transport could not get an answer to this request (an HTTP failure); the
    /// connection itself stays open.
    #[error("the transport to `{peer}` failed request {id}: {error}")]
    Transport {
        /// The peer's name.
        peer: Arc<str>,
        /// The request's id.
        id: RequestId,
        /// What failed.
        error: TransportError,
    },
}

impl WireError {
    /// Why the connection closed, when that is the failure.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            WireError::Closed { reason, .. } => Some(reason),
            WireError::BadAnswer { .. }
            | WireError::Transport { .. }
            | WireError::Unencodable { .. } => None,
        }
    }

    /// True when the connection is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, WireError::Closed { .. })
    }

    /// The unreadable frame, when the peer's answer was one.
    pub fn bad_answer(&self) -> Option<&Malformed> {
        match self {
            WireError::BadAnswer { malformed, .. } => Some(malformed),
            WireError::Closed { .. }
            | WireError::Transport { .. }
            | WireError::Unencodable { .. } => None,
        }
    }

    /// The transport's failure, when that is what failed the request.
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            WireError::Transport { error, .. } => Some(error),
            WireError::Closed { .. }
            | WireError::BadAnswer { .. }
            | WireError::Unencodable { .. } => None,
        }
    }
}

/// Counters of what went wrong on a connection; all start at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireStats {
    /// Frames that were not JSON-RPC messages.
    pub malformed_frames: u64,
    /// Responses for requests that had already finished.
    pub late_responses: u64,
    /// Responses with ids we never used (or null).
    pub unknown_responses: u64,
    /// Cancellation notices dropped because the deferred queue was full.
    pub dropped_cancellations: u64,
}

/// Computes the close reason once the reader has seen the end of the stream (used by the
/// stdio transport to attach the exit status and stderr tail).
pub type CloseProbe =
    Box<dyn FnOnce(CloseReason) -> Pin<Box<dyn Future<Output = CloseReason> + Send>> + Send>;

/// What a waiting caller receives: the result still as JSON text, or the error object.
type RawOutcome = Result<Box<RawValue>, ErrorObject>;
type Waiter = oneshot::Sender<Result<RawOutcome, WireError>>;

/// What sends a connection's messages: a byte stream (called directly, the hot path) or a
/// message transport.
#[derive(Clone)]
enum Sender {
    Stream(Arc<StreamTransport>),
    Messages(Arc<dyn Transport>),
}

impl Sender {
    async fn send(&self, message: OutgoingMessage<'_>) -> Result<(), TransportError> {
        match self {
            Sender::Stream(stream) => stream.write(message.text).await,
            Sender::Messages(transport) => transport.send(message).await,
        }
    }

    async fn close(&self) {
        match self {
            Sender::Stream(stream) => stream.shutdown().await,
            Sender::Messages(transport) => transport.close().await,
        }
    }
}

/// A cancellation notice that could not be written at once (its handle was dropped).
struct DeferredCancel {
    line: Vec<u8>,
    of: RequestId,
    context: MessageContext,
}

struct Shared {
    peer_name: Arc<str>,
    /// Keyed by our own ids (a peer's ids only look up), so a fast hash is safe here.
    pending: Mutex<HashMap<RequestId, Waiter, rustc_hash::FxBuildHasher>>,
    next_id: AtomicI64,
    closed: watch::Sender<Option<CloseReason>>,
    tap: Option<Arc<dyn FrameTap>>,
    malformed_frames: AtomicU64,
    late_responses: AtomicU64,
    unknown_responses: AtomicU64,
    dropped_cancellations: AtomicU64,
    /// Events handed to the inbound channel so far (see [`Connection::inbound_delivered`]).
    inbound_delivered: AtomicU64,
    /// Responses read from the peer so far (see [`Connection::responses_received`]).
    responses_received: AtomicU64,
    /// The inbound channel, until the connection closes (then `None`, so that its
    /// receiver sees the end).
    inbound: Mutex<Option<mpsc::Sender<Inbound>>>,
    deferred: mpsc::Sender<DeferredCancel>,
    cancel_notice: std::sync::OnceLock<CancelNotice>,
    max_frame_bytes: usize,
    /// The capacity the next request's line starts with: the last one's length, rounded
    /// up (a session's requests are much alike, so the line is written without growing).
    request_line_capacity: AtomicUsize,
}

const FIRST_ID: i64 = 1;
/// The least a request's line starts with.
const REQUEST_LINE_MIN_CAPACITY: usize = 256;
/// The most a request's line starts with, whatever the last one's length (one large
/// request does not make every later one allocate as much).
const REQUEST_LINE_MAX_CAPACITY: usize = 16 * 1024;

/// Aborts the connection's tasks when the last handle goes away.
struct TaskOwner {
    tasks: Vec<JoinHandle<()>>,
    extra: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for TaskOwner {
    fn drop(&mut self) {
        for task in self.tasks.iter().chain(lock(&self.extra).iter()) {
            task.abort();
        }
    }
}

/// One JSON-RPC connection. Cloning gives another handle to the same connection; its
/// reader task ends when the stream ends or when the last handle is dropped.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    sender: Sender,
    _owner: Arc<TaskOwner>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("peer_name", &self.shared.peer_name)
            .field("closed", &self.close_reason().is_some())
            .finish()
    }
}

impl Connection {
    /// Starts a connection reading frames from `reader` and writing to `writer`, one
    /// message a line. Must be called inside a tokio runtime.
    pub fn start<R, W>(
        reader: R,
        writer: W,
        options: ConnectionOptions,
        close_probe: Option<CloseProbe>,
    ) -> (Connection, mpsc::Receiver<Inbound>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let buffer = LineBuffer::new(options.max_frame_bytes);
        let stream = Arc::new(StreamTransport::new(Box::new(writer)));
        let (connection, sink, inbound) = Connection::assemble(options, Sender::Stream(stream));
        let reader_task = tokio::spawn(read_loop(sink, reader, buffer, close_probe));
        connection.own_task(reader_task);
        (connection, inbound)
    }

    /// Starts a connection over a message transport. `make` receives the sink through
    /// which the transport hands over what the peer sends, and returns the transport; the
    /// connection owns it (it is dropped with the last handle). Must be called inside a
    /// tokio runtime.
    pub fn start_with_transport<T: Transport>(
        options: ConnectionOptions,
        make: impl FnOnce(InboundSink) -> Arc<T>,
    ) -> (Connection, mpsc::Receiver<Inbound>) {
        // The transport needs the sink, the connection needs the transport: build the
        // shared part first, then the transport, then the handle.
        let (shared, deferred_rx, inbound) = Connection::shared_part(&options);
        let sink = InboundSink {
            shared: shared.clone(),
        };
        let transport: Arc<dyn Transport> = make(sink);
        let connection = Connection::with_shared(shared, Sender::Messages(transport), deferred_rx);
        (connection, inbound)
    }

    fn assemble(
        options: ConnectionOptions,
        sender: Sender,
    ) -> (Connection, InboundSink, mpsc::Receiver<Inbound>) {
        let (shared, deferred_rx, inbound) = Connection::shared_part(&options);
        let sink = InboundSink {
            shared: shared.clone(),
        };
        (
            Connection::with_shared(shared, sender, deferred_rx),
            sink,
            inbound,
        )
    }

    fn shared_part(
        options: &ConnectionOptions,
    ) -> (
        Arc<Shared>,
        mpsc::Receiver<DeferredCancel>,
        mpsc::Receiver<Inbound>,
    ) {
        let (inbound_tx, inbound_rx) = mpsc::channel(options.inbound_capacity.max(1));
        let (deferred_tx, deferred_rx) = mpsc::channel(DEFERRED_CAPACITY);
        let (closed, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            peer_name: options.peer_name.clone(),
            pending: Mutex::new(HashMap::default()),
            next_id: AtomicI64::new(FIRST_ID),
            closed,
            tap: options.tap.clone(),
            malformed_frames: AtomicU64::new(0),
            late_responses: AtomicU64::new(0),
            unknown_responses: AtomicU64::new(0),
            dropped_cancellations: AtomicU64::new(0),
            inbound_delivered: AtomicU64::new(0),
            responses_received: AtomicU64::new(0),
            deferred: deferred_tx,
            cancel_notice: std::sync::OnceLock::new(),
            max_frame_bytes: options.max_frame_bytes,
            request_line_capacity: AtomicUsize::new(REQUEST_LINE_MIN_CAPACITY),
            inbound: Mutex::new(Some(inbound_tx)),
        });
        (shared, deferred_rx, inbound_rx)
    }

    fn with_shared(
        shared: Arc<Shared>,
        sender: Sender,
        deferred_rx: mpsc::Receiver<DeferredCancel>,
    ) -> Connection {
        let deferred_task =
            tokio::spawn(deferred_loop(shared.clone(), sender.clone(), deferred_rx));
        let owner = TaskOwner {
            tasks: vec![deferred_task],
            extra: Mutex::new(Vec::new()),
        };
        Connection {
            shared,
            sender,
            _owner: Arc::new(owner),
        }
    }

    /// Sets how this connection cancels a request ([`PendingCall::cancel`], a handle
    /// dropped with [`PendingCall::cancel_on_drop`]): the protocol above the wire layer
    /// decides. Without one, cancelling only stops waiting. The first setting wins.
    pub fn set_cancel_notice(&self, notice: CancelNotice) {
        let _ = self.shared.cancel_notice.set(notice);
    }

    /// Makes the connection own `task`: it is aborted when the last handle is dropped (used
    /// by transports whose driver task must live exactly as long as the connection).
    pub fn own_task(&self, task: JoinHandle<()>) {
        lock(&self._owner.extra).push(task);
    }

    /// The peer's name.
    pub fn peer_name(&self) -> &Arc<str> {
        &self.shared.peer_name
    }

    /// Takes a fresh request id. Ids are integers counting up from 1 and never reused.
    pub fn allocate_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request with an id from [`Connection::allocate_id`] and returns the handle
    /// that receives its response. Dropping the handle forgets the request; see
    /// [`PendingCall::cancel_on_drop`].
    pub async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&Value>,
    ) -> Result<PendingCall, WireError> {
        self.send_request_with(id, method, params).await
    }

    /// [`Connection::send_request`] with parameters of any serialisable type, written
    /// straight into the frame (no `Value` is built). The type must serialise without
    /// error, as `Value` and `RawValue` do.
    pub async fn send_request_with<P: Serialize + ?Sized>(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&P>,
    ) -> Result<PendingCall, WireError> {
        let params = params.map(Serialized);
        self.send_request_in(&MessageContext::default(), id, method, params.as_ref())
            .await
    }

    /// [`Connection::send_request_with`] under a context the transport is told (the
    /// protocol version; a cancellation of the request is sent under it too).
    pub async fn send_request_in<P: WriteParams + ?Sized>(
        &self,
        context: &MessageContext,
        id: RequestId,
        method: &str,
        params: Option<&P>,
    ) -> Result<PendingCall, WireError> {
        let capacity = &self.shared.request_line_capacity;
        let mut line = Vec::with_capacity(capacity.load(Ordering::Relaxed));
        let encoded = RequestLine {
            id: &id,
            method,
            params,
        }
        .encode_line(&mut line);
        let next = line.len().next_power_of_two();
        capacity.store(
            next.clamp(REQUEST_LINE_MIN_CAPACITY, REQUEST_LINE_MAX_CAPACITY),
            Ordering::Relaxed,
        );
        if let Err(error) = encoded {
            return Err(WireError::Unencodable {
                peer: self.shared.peer_name.clone(),
                method: method.to_owned(),
                detail: error.to_string(),
            });
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.shared.pending);
            if let Some(reason) = self.close_reason() {
                return Err(self.closed_error(reason));
            }
            pending.insert(id.clone(), tx);
        }
        let call = PendingCall {
            connection: self.clone(),
            id,
            rx,
            finished: false,
            cancel_on_drop: None,
            context: context.clone(),
        };
        let kind = OutgoingKind::Request {
            id: &call.id,
            method,
        };
        self.send_message(kind, &line, context).await?;
        Ok(call)
    }

    /// Sends a request and waits for its response (no deadline: wrap it in one).
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Result<Value, ErrorObject>, WireError> {
        let id = self.allocate_id();
        let mut call = self.send_request(id, method, params).await?;
        call.response().await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<&Value>) -> Result<(), WireError> {
        self.notify_in(&MessageContext::default(), method, params)
            .await
    }

    /// [`Connection::notify`] under a context the transport is told.
    pub async fn notify_in(
        &self,
        context: &MessageContext,
        method: &str,
        params: Option<&Value>,
    ) -> Result<(), WireError> {
        let mut line = Vec::with_capacity(128);
        Outgoing::Notification { method, params }.encode_line(&mut line);
        self.send_message(OutgoingKind::Notification { method }, &line, context)
            .await
    }

    /// How many events were handed to the inbound channel so far. Frames are handled in
    /// arrival order, so once a response has reached its caller, every event the peer sent
    /// before it is counted here: a consumer that counts what it took from the channel can
    /// tell when it has seen them all (the session does so to deliver the progress that
    /// preceded a result).
    pub fn inbound_delivered(&self) -> u64 {
        self.shared.inbound_delivered.load(Ordering::Acquire)
    }

    /// How many responses the peer sent so far (waited for, late or unknown alike): any
    /// answer is a sign of life, so a watcher that sees this grow need not ask for one.
    pub fn responses_received(&self) -> u64 {
        self.shared.responses_received.load(Ordering::Relaxed)
    }

    /// Answers a request from the peer.
    pub async fn respond(
        &self,
        id: &RequestId,
        outcome: Result<&Value, &ErrorObject>,
    ) -> Result<(), WireError> {
        self.respond_in(&MessageContext::default(), id, outcome)
            .await
    }

    /// [`Connection::respond`] under a context the transport is told.
    pub async fn respond_in(
        &self,
        context: &MessageContext,
        id: &RequestId,
        outcome: Result<&Value, &ErrorObject>,
    ) -> Result<(), WireError> {
        let mut line = Vec::with_capacity(128);
        match outcome {
            Ok(result) => Outgoing::Result { id, result }.encode_line(&mut line),
            Err(error) => Outgoing::Error {
                id: Some(id),
                error,
            }
            .encode_line(&mut line),
        }
        self.send_message(OutgoingKind::Response { id }, &line, context)
            .await
    }

    /// Writes arbitrary bytes as they are (the checker uses this to send wrong traffic on
    /// purpose). A newline is not added.
    pub async fn send_raw(&self, bytes: &[u8]) -> Result<(), WireError> {
        let message = OutgoingMessage {
            kind: OutgoingKind::Raw,
            text: bytes,
            context: &MessageContext::default(),
        };
        let sent = self.sender.send(message).await;
        self.sent(sent).await
    }

    /// Closes our sending side (for a child process: its stdin; for an HTTP session: its
    /// DELETE). Pending requests stay pending until the peer answers or the stream ends.
    pub async fn close_write(&self) {
        self.sender.close().await;
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.closed.borrow().clone()
    }

    /// Waits until the connection is closed and returns why.
    pub async fn closed(&self) -> CloseReason {
        let mut rx = self.shared.closed.subscribe();
        loop {
            if let Some(reason) = rx.borrow_and_update().clone() {
                return reason;
            }
            if rx.changed().await.is_err() {
                return CloseReason {
                    summary: "connection dropped".into(),
                    exit_status: None,
                    stderr_tail: None,
                    unreachable: None,
                };
            }
        }
    }

    /// Error counters so far.
    pub fn stats(&self) -> WireStats {
        let s = &self.shared;
        WireStats {
            malformed_frames: s.malformed_frames.load(Ordering::Relaxed),
            late_responses: s.late_responses.load(Ordering::Relaxed),
            unknown_responses: s.unknown_responses.load(Ordering::Relaxed),
            dropped_cancellations: s.dropped_cancellations.load(Ordering::Relaxed),
        }
    }

    /// Whether a request with this id is waiting for its response.
    pub fn is_pending(&self, id: &RequestId) -> bool {
        lock(&self.shared.pending).contains_key(id)
    }

    /// Number of requests waiting for a response.
    pub fn pending_requests(&self) -> usize {
        lock(&self.shared.pending).len()
    }

    fn closed_error(&self, reason: CloseReason) -> WireError {
        WireError::Closed {
            peer: self.shared.peer_name.clone(),
            reason,
        }
    }

    async fn send_message(
        &self,
        kind: OutgoingKind<'_>,
        line: &[u8],
        context: &MessageContext,
    ) -> Result<(), WireError> {
        if let Some(tap) = &self.shared.tap {
            tap.frame(
                Direction::Outbound,
                line.strip_suffix(b"\n").unwrap_or(line),
            );
        }
        let message = OutgoingMessage {
            kind,
            text: line,
            context,
        };
        let sent = self.sender.send(message).await;
        self.sent(sent).await
    }

    async fn sent(&self, sent: Result<(), TransportError>) -> Result<(), WireError> {
        let summary = match sent {
            Ok(()) => return Ok(()),
            Err(TransportError::Closed { detail }) => detail,
            Err(other) => other.to_string(),
        };
        // A failed write usually means the peer is gone; the reader learns why (exit status,
        // stderr tail) within moments, and that is the error worth reporting.
        let grace = EXIT_STATUS_WAIT + Duration::from_millis(300);
        let reason = match tokio::time::timeout(grace, self.closed()).await {
            Ok(reason) => reason,
            Err(_) => CloseReason {
                summary,
                exit_status: None,
                stderr_tail: None,
                unreachable: None,
            },
        };
        Err(self.closed_error(reason))
    }
}

/// The handle of a request that was sent; it receives the response.
pub struct PendingCall {
    connection: Connection,
    id: RequestId,
    rx: oneshot::Receiver<Result<RawOutcome, WireError>>,
    finished: bool,
    cancel_on_drop: Option<std::borrow::Cow<'static, str>>,
    /// The context it was sent under; its cancellation goes under it too.
    context: MessageContext,
}

impl fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.id)
            .field("finished", &self.finished)
            .finish()
    }
}

impl PendingCall {
    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// If the handle is dropped before the response arrives, send the connection's
    /// cancellation notice ([`Connection::set_cancel_notice`]) with this reason (never set
    /// it for a request the protocol forbids cancelling, such as MCP's `initialize`).
    pub fn cancel_on_drop(&mut self, reason: impl Into<std::borrow::Cow<'static, str>>) {
        self.cancel_on_drop = Some(reason.into());
    }

    /// Waits for the response: the peer's result or error object, or a connection error.
    /// Cancel-safe: if this future is dropped, the call stays pending.
    pub async fn response(&mut self) -> Result<Result<Value, ErrorObject>, WireError> {
        Ok(self
            .response_raw()
            .await?
            .and_then(|raw| result_value(&raw)))
    }

    /// Like [`PendingCall::response`], with the result as the peer's JSON text (valid JSON,
    /// not yet parsed): callers that read a known shape parse it directly.
    pub async fn response_raw(&mut self) -> Result<RawOutcome, WireError> {
        let outcome = match (&mut self.rx).await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.connection.closed_error(CloseReason {
                summary: "connection dropped".into(),
                exit_status: None,
                stderr_tail: None,
                unreachable: None,
            })),
        };
        self.finished = true;
        outcome
    }

    /// Gives up on the request now, sending the connection's cancellation notice with
    /// `reason`, and waits for it to be written (without a notice set, only stops
    /// waiting). A response that still arrives is counted as late.
    pub async fn cancel(mut self, reason: &str) -> Result<(), WireError> {
        self.finished = true;
        self.forget();
        let Some(line) = self.cancel_line(reason) else {
            return Ok(());
        };
        let kind = OutgoingKind::Cancellation { of: &self.id };
        self.connection
            .send_message(kind, &line, &self.context)
            .await
    }

    /// The cancellation notice for this request as a line, when the connection has one.
    fn cancel_line(&self, reason: &str) -> Option<Vec<u8>> {
        let notice = self.connection.shared.cancel_notice.get()?;
        let (method, params) = notice(&self.id, reason);
        let mut line = Vec::with_capacity(96);
        Outgoing::Notification {
            method,
            params: Some(&params),
        }
        .encode_line(&mut line);
        Some(line)
    }

    fn forget(&self) {
        lock(&self.connection.shared.pending).remove(&self.id);
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.forget();
        if let Some(reason) = self.cancel_on_drop.take() {
            if self.connection.close_reason().is_some() {
                return;
            }
            let Some(line) = self.cancel_line(&reason) else {
                return;
            };
            let deferred = DeferredCancel {
                line,
                of: self.id.clone(),
                context: std::mem::take(&mut self.context),
            };
            let shared = &self.connection.shared;
            if shared.deferred.try_send(deferred).is_err() {
                shared.dropped_cancellations.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A result's text as a tree. The text was checked when its frame was read; only numbers
/// beyond `f64` (which skipping does not check) fail here, and they read as a parse error.
fn result_value(raw: &RawValue) -> Result<Value, ErrorObject> {
    serde_json::from_str(raw.get())
        .map_err(|e| ErrorObject::new(codes::PARSE_ERROR, format!("unreadable result: {e}")))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it; the map is
    // still consistent (every operation on it is a single insert or remove).
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn deferred_loop(
    shared: Arc<Shared>,
    sender: Sender,
    mut rx: mpsc::Receiver<DeferredCancel>,
) {
    while let Some(cancel) = rx.recv().await {
        if let Some(tap) = &shared.tap {
            tap.frame(
                Direction::Outbound,
                cancel.line.strip_suffix(b"\n").unwrap_or(&cancel.line),
            );
        }
        let message = OutgoingMessage {
            kind: OutgoingKind::Cancellation { of: &cancel.of },
            text: &cancel.line,
            context: &cancel.context,
        };
        if sender.send(message).await.is_err() {
            break;
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    sink: InboundSink,
    mut reader: R,
    mut buffer: LineBuffer,
    close_probe: Option<CloseProbe>,
) {
    let shared = &sink.shared;
    let limit = buffer.max_frame_bytes();
    // The reader holds its own sender: no lock per frame on the hot path.
    let Some(inbound) = lock(&shared.inbound).clone() else {
        return;
    };
    let summary = loop {
        match reader.read_buf(buffer.spare()).await {
            Ok(0) => {
                if let Some(frame) = buffer.finish() {
                    let frame = Framed {
                        frame,
                        end: FrameEnd::EndOfStream,
                    };
                    dispatch(shared, frame, limit, &inbound).await;
                }
                break "the server closed its output".to_owned();
            }
            Ok(_) => {
                while let Some(frame) = buffer.next_frame() {
                    let frame = Framed {
                        frame,
                        end: FrameEnd::Newline,
                    };
                    dispatch(shared, frame, limit, &inbound).await;
                }
            }
            Err(e) => break format!("reading from the server failed: {e}"),
        }
    };
    drop(inbound);
    let mut reason = CloseReason {
        summary,
        exit_status: None,
        stderr_tail: None,
        unreachable: None,
    };
    if let Some(probe) = close_probe {
        reason = probe(reason).await;
    }
    sink.close(reason);
}

/// Where a message transport hands over what the peer sent. Cloning gives another handle
/// to the same connection; the sink does not keep the connection's tasks alive.
#[derive(Clone)]
pub struct InboundSink {
    shared: Arc<Shared>,
}

impl fmt::Debug for InboundSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundSink")
            .field("peer_name", &self.shared.peer_name)
            .finish()
    }
}

impl InboundSink {
    /// The peer's name.
    pub fn peer_name(&self) -> &Arc<str> {
        &self.shared.peer_name
    }

    /// The largest message the connection accepts; a longer one is a malformed frame
    /// (its answer id read, if it can be, to fail that request).
    pub fn max_frame_bytes(&self) -> usize {
        self.shared.max_frame_bytes
    }

    /// Hands over one message the peer sent (its JSON text; line breaks inside are
    /// whitespace). It is decoded, routed to its waiting request or delivered as an
    /// [`Inbound`] event, exactly like a line of a byte stream.
    pub async fn message(&self, text: &[u8]) {
        let shared = &self.shared;
        let Some(inbound) = lock(&shared.inbound).clone() else {
            return;
        };
        let frame = if text.len() > shared.max_frame_bytes {
            Frame::Oversized {
                len: text.len(),
                id: crate::frame_id::answer_id(text),
            }
        } else {
            Frame::Line(text)
        };
        let framed = Framed {
            frame,
            end: FrameEnd::Newline,
        };
        dispatch(shared, framed, shared.max_frame_bytes, &inbound).await;
    }

    /// Whether the request `id` still waits for its answer.
    pub fn is_waiting(&self, id: &RequestId) -> bool {
        lock(&self.shared.pending).contains_key(id)
    }

    /// Fails the request `id` with the transport's error (the connection stays open);
    /// false when it no longer waits.
    pub fn fail(&self, id: &RequestId, error: TransportError) -> bool {
        let Some(waiter) = lock(&self.shared.pending).remove(id) else {
            return false;
        };
        let error = WireError::Transport {
            peer: self.shared.peer_name.clone(),
            id: id.clone(),
            error,
        };
        // A caller that stopped waiting meanwhile has nothing to learn.
        let _ = waiter.send(Err(error));
        true
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.borrow().is_some()
    }

    /// The transport is gone: the connection closes with `reason`, every waiting request
    /// fails with it, and the inbound channel ends. Only the first close counts.
    pub fn close(&self, reason: CloseReason) {
        let shared = &self.shared;
        let waiters: Vec<Waiter> = {
            let mut pending = lock(&shared.pending);
            if shared.closed.borrow().is_some() {
                return;
            }
            // Without the stderr tail: each stderr line was logged once as it came
            // (target `switchboard::stderr`); errors still carry the tail.
            tracing::debug!(
                peer = %shared.peer_name,
                summary = %PeerText(&reason.summary),
                exit_status = reason.exit_status.as_deref().unwrap_or("-"),
                "connection closed"
            );
            shared.closed.send_replace(Some(reason.clone()));
            pending.drain().map(|(_, waiter)| waiter).collect()
        };
        lock(&shared.inbound).take();
        for waiter in waiters {
            let _ = waiter.send(Err(WireError::Closed {
                peer: shared.peer_name.clone(),
                reason: reason.clone(),
            }));
        }
    }
}

/// How a frame ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameEnd {
    /// With its newline.
    Newline,
    /// Cut by the end of the stream: a broken answer there is the peer going away, and the
    /// close that follows fails the request with what the transport knows (exit status,
    /// stderr tail), so the frame fails no request itself.
    EndOfStream,
}

/// A frame and how it ended.
struct Framed<'a> {
    frame: Frame<'a>,
    end: FrameEnd,
}

async fn dispatch(
    shared: &Shared,
    Framed { frame, end }: Framed<'_>,
    limit: usize,
    inbound: &mpsc::Sender<Inbound>,
) {
    let decoded = match frame {
        Frame::Line(line) => {
            if line.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            if let Some(tap) = &shared.tap {
                tap.frame(Direction::Inbound, line);
            }
            decode_borrowed(line)
        }
        Frame::Oversized { len, id } => Err(Malformed {
            kind: MalformedKind::Oversized { limit },
            excerpt: String::new(),
            len,
            id,
        }),
    };
    let event = match decoded {
        Ok(Decoded::Response { id, outcome }) => match route_response(shared, id, outcome) {
            None => return,
            Some(event) => event,
        },
        Ok(Decoded::Request(request)) => Inbound::Request(request),
        Ok(Decoded::Notification(notification)) => Inbound::Notification(notification),
        Err(mut malformed) => {
            shared.malformed_frames.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(peer = %shared.peer_name, %malformed, "malformed frame");
            if end == FrameEnd::Newline {
                fail_waiter(shared, &mut malformed);
            }
            Inbound::Malformed(malformed)
        }
    };
    // If the receiver is gone nobody is interested; responses are still routed.
    if inbound.send(event).await.is_ok() {
        shared.inbound_delivered.fetch_add(1, Ordering::Release);
    }
}

/// Fails the request a malformed frame meant to answer, if it is waiting: only by the id
/// the frame's own top-level `id` holds (see [`Malformed::response_id`]), so `7` never
/// fails `"7"`, and a frame with a `method` (a request or notification) never fails one.
/// The frame stays an event either way; once it answered a request it says so.
fn fail_waiter(shared: &Shared, malformed: &mut Malformed) {
    let Some(id) = malformed.response_id() else {
        return;
    };
    let Some(waiter) = lock(&shared.pending).remove(id) else {
        return;
    };
    let id = id.clone();
    let error = WireError::BadAnswer {
        peer: shared.peer_name.clone(),
        id: id.clone(),
        malformed: malformed.clone(),
    };
    // A caller that stopped waiting meanwhile has nothing to learn.
    let _ = waiter.send(Err(error));
    malformed.id = Some(MalformedId::Response(id));
}

/// Hands a response to its waiter; returns an event when nobody waits for it.
fn route_response(
    shared: &Shared,
    id: Option<RequestId>,
    outcome: Result<ResultJson<'_>, ErrorObject>,
) -> Option<Inbound> {
    shared.responses_received.fetch_add(1, Ordering::Relaxed);
    let Some(id) = id else {
        shared.unknown_responses.fetch_add(1, Ordering::Relaxed);
        return Some(unexpected(None, outcome, UnexpectedReason::NullId));
    };
    let waiter = lock(&shared.pending).remove(&id);
    match waiter {
        Some(waiter) => {
            // The caller may have stopped waiting in the meantime; then it is late.
            match waiter.send(Ok(outcome.map(ResultJson::into_raw))) {
                Ok(()) => None,
                Err(Ok(outcome)) => {
                    shared.late_responses.fetch_add(1, Ordering::Relaxed);
                    Some(Inbound::UnexpectedResponse {
                        response: Response {
                            id: Some(id),
                            outcome: outcome.and_then(|raw| result_value(&raw)),
                        },
                        reason: UnexpectedReason::Late,
                    })
                }
                Err(Err(_)) => None,
            }
        }
        None => {
            let issued = shared.next_id.load(Ordering::Relaxed);
            let ours = matches!(id, RequestId::Number(n) if (FIRST_ID..issued).contains(&n));
            let reason = if ours {
                shared.late_responses.fetch_add(1, Ordering::Relaxed);
                UnexpectedReason::Late
            } else {
                shared.unknown_responses.fetch_add(1, Ordering::Relaxed);
                UnexpectedReason::UnknownId
            };
            Some(unexpected(Some(id), outcome, reason))
        }
    }
}

/// The event for a response nobody waits for, its result as a tree.
fn unexpected(
    id: Option<RequestId>,
    outcome: Result<ResultJson<'_>, ErrorObject>,
    reason: UnexpectedReason,
) -> Inbound {
    let outcome = match outcome {
        Ok(ResultJson::Tree(value)) => Ok(value),
        Ok(ResultJson::Text(raw)) => result_value(raw),
        Err(error) => Err(error),
    };
    Inbound::UnexpectedResponse {
        response: Response { id, outcome },
        reason,
    }
}

/// How long to wait for a process to report its exit status once its output ended.
pub(crate) const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's line starts as large as the last one's length rounded up, within
    /// bounds: one large request does not make the next small one allocate as much.
    #[tokio::test]
    async fn a_request_line_starts_with_the_last_ones_length_within_bounds() {
        let (ours, _theirs) = tokio::io::duplex(1 << 20);
        let (reader, writer) = tokio::io::split(ours);
        let (connection, _inbound) =
            Connection::start(reader, writer, ConnectionOptions::new("peer"), None);
        let capacity = || {
            connection
                .shared
                .request_line_capacity
                .load(Ordering::Relaxed)
        };
        let mut seen = vec![capacity()];
        for text_bytes in [300, 40_000, 10] {
            let params = serde_json::json!({ "text": "x".repeat(text_bytes) });
            let id = RequestId::Number(i64::try_from(text_bytes).unwrap_or_default());
            let sent = connection.send_request(id, "echo", Some(&params)).await;
            assert!(sent.is_ok(), "{sent:?}");
            seen.push(capacity());
        }
        assert_eq!(seen, [256, 512, 16 * 1024, 256]);
    }
}
