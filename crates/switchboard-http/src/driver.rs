//! The connection's HTTP side: settings, setup, the per-connection state, and the
//! [`Transport`] that turns each outgoing message into the HTTP request its era needs
//! (POSTs in `post.rs`, answers in `answer.rs`, event streams in `streams.rs`).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rustc_hash::FxHashMap;
use switchboard_protocol::Era;
use switchboard_wire::transport::BoxFuture;
use switchboard_wire::{
    CloseReason, Connection, ConnectionOptions, HttpStatus, Inbound, InboundSink, MessageContext,
    OutgoingKind, OutgoingMessage, RequestId, Transport, TransportError,
};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use crate::authorize::Authorizer;
use crate::client::{HttpClient, RequestBuilder, Response};
use hyper::body::Bytes;
use switchboard_text::peer_text::PeerText;

pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const DELETE_DEADLINE: Duration = Duration::from_secs(2);
/// How long requests wait for the GET stream to be open (its response head), so that server
/// messages sent outside a response stream right after initialization are not lost.
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);

/// Settings for an HTTP connection.
#[derive(Clone)]
pub struct HttpOptions {
    /// Connection settings (peer name, frame limit, tap).
    pub connection: ConnectionOptions,
    /// The MCP endpoint.
    pub url: String,
    /// The endpoint as messages and logs show it: credentials and query values hidden
    /// ([`switchboard_text::redact::url_for_display`] of `url` by default; a caller that knows more,
    /// such as which parts came from `${VAR}` expansions, sets a better one).
    pub display_url: String,
    /// Extra headers sent on every request (values are secrets).
    pub headers: Vec<(String, String)>,
    /// Maximum size of one response body or SSE event.
    pub max_body_bytes: usize,
    /// Deadline for establishing a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Supplies `Authorization` and answers authorization challenges (OAuth).
    pub authorizer: Option<Arc<dyn Authorizer>>,
}

impl HttpOptions {
    /// Defaults for a server with this name and URL.
    pub fn new(server_name: &str, url: &str) -> HttpOptions {
        HttpOptions {
            connection: ConnectionOptions::new(server_name),
            url: url.to_owned(),
            display_url: switchboard_text::redact::url_for_display(url),
            headers: Vec::new(),
            max_body_bytes: 16 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            authorizer: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    /// Header values are secrets: only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpOptions")
            .field("url", &self.display_url)
            .field("headers", &names)
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

/// The HTTP connection could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("could not set up HTTP for server `{server}`: {detail}")]
pub struct HttpSetupError {
    /// The server's name.
    pub server: Arc<str>,
    /// What is wrong and what to do.
    pub detail: String,
}

/// A connection to an HTTP server.
#[derive(Debug)]
pub struct HttpConnection {
    /// The JSON-RPC connection.
    pub connection: Connection,
    /// What the server sends outside of responses.
    pub inbound: mpsc::Receiver<Inbound>,
}

/// Connects (lazily: nothing is sent until the first message).
pub fn connect(options: HttpOptions) -> Result<HttpConnection, HttpSetupError> {
    let server = options.connection.peer_name.clone();
    let setup = |detail: String| HttpSetupError {
        server: server.clone(),
        detail,
    };
    let shown_url = options.display_url.clone();
    let url = reqwest::Url::parse(&options.url)
        .map_err(|e| setup(format!("`{shown_url}` is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(setup(format!(
            "`{shown_url}` must be an http:// or https:// URL"
        )));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &options.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| setup(format!("header name `{name}` is not valid")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            setup(format!(
                "the value of header `{name}` is not valid header text"
            ))
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let client = HttpClient::new(&url, options.connect_timeout).map_err(setup)?;
    tracing::debug!(peer = %server, route = ?client.route(), "HTTP client");
    let (connection, inbound) = Connection::start_with_transport(options.connection, |sink| {
        Arc::new(HttpTransport {
            driver: Arc::new(Driver {
                client,
                url,
                shown_url,
                headers,
                peer: server.clone(),
                max_body_bytes: options.max_body_bytes,
                sink,
                state: Mutex::new(DriverState::default()),
                tasks: Mutex::new(JoinSet::new()),
                authorizer: options.authorizer.clone(),
                get_stream_opening: tokio::sync::watch::Sender::new(false),
                after_answer: tokio::sync::Semaphore::new(crate::answer::AFTER_ANSWER_STREAMS),
            }),
        })
    });
    Ok(HttpConnection {
        connection,
        inbound,
    })
}

/// The [`Transport`] the connection owns; dropping it (with the connection's last handle)
/// stops every task of the driver.
struct HttpTransport {
    driver: Arc<Driver>,
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.driver.stop_tasks();
    }
}

impl Transport for HttpTransport {
    fn send<'a>(
        &'a self,
        message: OutgoingMessage<'a>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let sent = self.driver.send(message);
        Box::pin(std::future::ready(sent))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.driver.close())
    }
}

pub(crate) struct Driver {
    pub(crate) client: HttpClient,
    pub(crate) url: reqwest::Url,
    /// `url` as messages show it (`HttpOptions::display_url`).
    pub(crate) shown_url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) peer: Arc<str>,
    pub(crate) max_body_bytes: usize,
    /// Where answers and server messages go.
    pub(crate) sink: InboundSink,
    pub(crate) state: Mutex<DriverState>,
    /// The driver's other tasks (unanswered POSTs, streams); stopped with the requests'
    /// when the transport is dropped or fails.
    tasks: Mutex<JoinSet<()>>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// True while the legacy GET stream is being opened: many servers drop a message for the
    /// GET stream when none is open yet, so requests (which may trigger one) wait for it.
    pub(crate) get_stream_opening: tokio::sync::watch::Sender<bool>,
    /// The response streams that may wait a moment for their end after their answer (so
    /// that their kept connection comes back); past these, one is read only as far as it
    /// has arrived.
    pub(crate) after_answer: tokio::sync::Semaphore,
}

#[derive(Default)]
pub(crate) struct DriverState {
    /// The legacy session's id, as the header every request carries (a copy of the one
    /// the server sent, checked to be text once, when it came).
    pub(crate) session_id: Option<HeaderValue>,
    /// The legacy version the session last said it speaks (after `initialize`), and the
    /// header that says it (made once per version, not per request).
    pub(crate) legacy_version: Option<(Arc<str>, HeaderValue)>,
    /// The 2026-07-28 version last sent, and its header.
    pub(crate) modern_version: Option<(Arc<str>, HeaderValue)>,
    /// The last `initialize` as it was sent, to re-initialize once when the session expires.
    pub(crate) initialize_body: Option<Vec<u8>>,
    /// Each request's task, its owner: aborted from here (cancellation, the connection's
    /// end); a task that ends removes its own entry. Keyed by the client's own ids: a fast
    /// hash is safe.
    pub(crate) in_flight: FxHashMap<RequestId, AbortHandle>,
    pub(crate) failure: Option<String>,
    /// Where messages go for a 2024-11-05 HTTP+SSE server (its `endpoint` event).
    pub(crate) sse_endpoint: Option<reqwest::Url>,
    /// The task reading that server's event stream.
    pub(crate) sse_stream: Option<AbortHandle>,
}

/// The header that says `version`, kept in `slot` while the version stays the same;
/// `None` (and nothing kept, so no earlier version's header goes out) for a version that
/// is no header value.
pub(crate) fn cached_header(
    slot: &mut Option<(Arc<str>, HeaderValue)>,
    version: &Arc<str>,
) -> Option<HeaderValue> {
    match slot {
        Some((said, header)) if said == version => Some(header.clone()),
        _ => {
            *slot = None;
            let header = HeaderValue::from_str(version).ok()?;
            *slot = Some((version.clone(), header.clone()));
            Some(header)
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The era a message is sent in, as the session said (its protocol version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sending {
    /// 2026-07-28 and later: the version on every request, no session.
    Modern(Arc<str>),
    /// Before: a session, the negotiated version once there is one.
    Legacy,
}

impl Sending {
    fn of(context: &MessageContext) -> Sending {
        match &context.protocol_version {
            Some(version) if Era::of_version(version) != Some(Era::Legacy) => {
                Sending::Modern(version.clone())
            }
            _ => Sending::Legacy,
        }
    }
}

/// One request as the driver sends it.
#[derive(Debug, Clone)]
pub(crate) struct OutgoingRequest {
    /// The id the client waits under.
    pub(crate) id: RequestId,
    pub(crate) method: String,
    /// The JSON text (shared: a request sent again is not copied).
    pub(crate) body: Bytes,
    pub(crate) sending: Sending,
    /// The headers its sender gave (in its [`MessageContext`]).
    pub(crate) headers: HeaderMap,
}

impl Driver {
    fn send(self: &Arc<Self>, message: OutgoingMessage<'_>) -> Result<(), TransportError> {
        if let Some(failure) = lock(&self.state).failure.clone() {
            return Err(TransportError::Closed { detail: failure });
        }
        let sending = Sending::of(message.context);
        if sending == Sending::Legacy
            && let Some(version) = &message.context.protocol_version
        {
            cached_header(&mut lock(&self.state).legacy_version, version);
        }
        let body = message.json().to_vec();
        match message.kind {
            OutgoingKind::Request { id, method } => {
                let headers = match header_map(&message.context.headers) {
                    Ok(headers) => headers,
                    // Never sent: the request fails at once (the connection waits for it).
                    Err(error) => {
                        self.fail_request(id, error);
                        return Ok(());
                    }
                };
                if method == switchboard_protocol::methods::INITIALIZE {
                    lock(&self.state).initialize_body = Some(body.clone());
                }
                let request = OutgoingRequest {
                    id: id.clone(),
                    method: method.to_owned(),
                    body: Bytes::from(body),
                    sending,
                    headers,
                };
                // The state stays locked until the task is in the table: a task that ends
                // at once (on another worker) must find its entry to remove it. The table
                // is the task's owner: it is aborted from there (cancellation, the
                // connection's end), and removes its entry itself when it ends.
                let mut state = lock(&self.state);
                if let Some(failure) = state.failure.clone() {
                    // Closed since the check above: its tasks are stopped already.
                    return Err(TransportError::Closed { detail: failure });
                }
                let task = Box::pin(crate::post::post_request(self.clone(), request));
                let handle = tokio::spawn(task).abort_handle();
                state.in_flight.insert(id.clone(), handle);
            }
            OutgoingKind::Cancellation { of } => {
                // Closing the response stream cancels in the modern era; legacy servers are
                // also told explicitly.
                let mut state = lock(&self.state);
                if let Some(handle) = state.in_flight.remove(of) {
                    handle.abort();
                }
                drop(state);
                if sending == Sending::Legacy {
                    self.spawn(crate::streams::post_unanswered(self.clone(), body));
                }
            }
            OutgoingKind::Notification { method } => {
                let starts_stream = sending == Sending::Legacy
                    && method == switchboard_protocol::methods::INITIALIZED
                    && lock(&self.state).sse_endpoint.is_none();
                if starts_stream {
                    self.get_stream_opening.send_replace(true);
                    self.spawn(crate::streams::get_stream(self.clone()));
                }
                self.spawn(crate::streams::post_unanswered(self.clone(), body));
            }
            OutgoingKind::Response { .. } => {
                self.spawn(crate::streams::post_unanswered(self.clone(), body));
            }
            // Raw bytes go as they were given (a line end included, if there is one).
            OutgoingKind::Raw => {
                let body = message.text.to_vec();
                self.spawn(crate::streams::post_unanswered(self.clone(), body));
            }
        }
        Ok(())
    }

    /// Runs `task` as one of the driver's tasks (finished ones are reaped first). The task
    /// is boxed once: tokio moves a task's future whole as it spawns, starts and ends it,
    /// and a request's future is several KiB.
    pub(crate) fn spawn(
        &self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> AbortHandle {
        let task = Box::pin(task);
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task)
    }

    fn stop_tasks(&self) {
        lock(&self.tasks).abort_all();
        for (_, request) in lock(&self.state).in_flight.drain() {
            request.abort();
        }
    }

    /// Ends the connection from our side: stops the driver's tasks, ends a legacy session
    /// with DELETE (bounded), and closes the connection.
    async fn close(&self) {
        // Nothing more is sent once the connection is being closed.
        lock(&self.state)
            .failure
            .get_or_insert_with(|| "the HTTP connection was closed".to_owned());
        self.stop_tasks();
        let session_id = lock(&self.state).session_id.take();
        if let Some(session_id) = session_id {
            let delete = self
                .client
                .request(reqwest::Method::DELETE, self.url.clone())
                .headers(&self.headers)
                .header_value(SESSION_HEADER, session_id);
            let delete = self.authorized(self.with_version(delete));
            let _ = tokio::time::timeout(DELETE_DEADLINE, delete.send()).await;
        }
        self.sink.close(CloseReason {
            summary: "the HTTP connection was closed".into(),
            exit_status: None,
            stderr_tail: None,
            unreachable: None,
        });
    }

    /// Waits (bounded) until the GET stream being opened has its response head or failed.
    pub(crate) async fn wait_for_get_stream(&self) {
        // The common case, without a subscription or a timer.
        if !*self.get_stream_opening.borrow() {
            return;
        }
        let mut opening = self.get_stream_opening.subscribe();
        let open = opening.wait_for(|opening| !*opening);
        if tokio::time::timeout(GET_STREAM_OPEN_WAIT, open)
            .await
            .is_err()
        {
            // A server that holds the GET stream's head back is not waited for again.
            self.get_stream_opening.send_replace(false);
            tracing::debug!(peer = %self.peer, "the GET stream did not open in time; sending anyway");
        }
    }

    pub(crate) fn post(&self, body: impl Into<Bytes>) -> RequestBuilder {
        let target = lock(&self.state)
            .sse_endpoint
            .clone()
            .unwrap_or_else(|| self.url.clone());
        let builder = self
            .client
            .request(reqwest::Method::POST, target)
            .headers(&self.headers)
            .header_value(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .header_value(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body);
        self.authorized(builder)
    }

    /// A GET of the endpoint as an event stream.
    pub(crate) fn get_events(&self) -> RequestBuilder {
        self.client
            .request(reqwest::Method::GET, self.url.clone())
            .headers(&self.headers)
            .header_value(ACCEPT, HeaderValue::from_static("text/event-stream"))
    }

    /// Adds the current credentials, if any.
    pub(crate) fn authorized(&self, builder: RequestBuilder) -> RequestBuilder {
        crate::authorize::with_request_credentials(self.authorizer.as_deref(), builder)
    }

    /// Asks the authorizer to handle a 401, or a 403 for insufficient scope. `None` when
    /// the answer is no challenge; `Some(Ok(()))` to send the request again.
    pub(crate) async fn handle_challenge(&self, response: &Response) -> Option<Result<(), String>> {
        crate::authorize::answer_challenge(self.authorizer.as_deref(), response, &self.url).await
    }

    /// Legacy headers: the session and the negotiated version.
    pub(crate) fn with_session(&self, builder: RequestBuilder) -> RequestBuilder {
        let session_id = lock(&self.state).session_id.clone();
        let builder = match session_id {
            Some(id) => builder.header_value(SESSION_HEADER, id),
            None => builder,
        };
        self.with_version(builder)
    }

    pub(crate) fn with_version(&self, builder: RequestBuilder) -> RequestBuilder {
        let header = lock(&self.state)
            .legacy_version
            .as_ref()
            .map(|(_, header)| header.clone());
        match header {
            Some(header) => builder.header_value(VERSION_HEADER, header),
            None => builder,
        }
    }

    /// Fails the request the client waits for under `id` with `error`.
    pub(crate) fn fail_request(&self, id: &RequestId, error: TransportError) {
        tracing::debug!(peer = %self.peer, %id, %error, "request failed in the HTTP transport");
        self.sink.fail(id, error);
    }

    /// The server cannot be reached: close the connection with this reason.
    pub(crate) fn fail(&self, reason: String) {
        self.fail_with(reason, None);
    }

    /// Closes the connection because nothing answered at the server's address.
    pub(crate) fn fail_unreachable(&self, reason: String) {
        self.fail_with(reason, Some(self.shown_url.clone()));
    }

    fn fail_with(&self, reason: String, unreachable: Option<String>) {
        let mut state = lock(&self.state);
        if state.failure.is_some() {
            return;
        }
        tracing::debug!(peer = %self.peer, %reason, "http connection failed");
        state.failure = Some(reason.clone());
        drop(state);
        self.sink.close(CloseReason {
            summary: reason,
            exit_status: None,
            stderr_tail: None,
            unreachable,
        });
        self.stop_tasks();
    }
}

/// The headers a message's sender gave, as header text; a name or value that is not
/// header text fails the request (it never reaches the server).
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, TransportError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let refused = |what: &str| TransportError::Refused {
            status: None,
            detail: format!("the request was not sent: its header {what} is not valid header text"),
        };
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| refused(&format!("name `{}`", PeerText(name))))?;
        let header_value =
            HeaderValue::from_str(value).map_err(|_| refused(&format!("`{header_name}`")))?;
        map.append(header_name, header_value);
    }
    Ok(map)
}

/// An HTTP status as the transport reports it.
pub(crate) fn http_status(status: reqwest::StatusCode) -> HttpStatus {
    HttpStatus {
        code: status.as_u16(),
        reason: status.canonical_reason().unwrap_or(""),
    }
}

/// Reads a body up to the cap (an error past it, before reading more).
pub async fn read_body(response: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    read_capped(Response::from(response), cap)
        .await
        .map_err(|e| e.to_string())
}

/// [`read_body`] with the transport's typed error.
pub(crate) async fn read_capped(
    mut response: Response,
    cap: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Err(TransportError::TooLarge {
                        what: "the server's response body".into(),
                        limit: cap,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(error) => {
                return Err(TransportError::Broken {
                    detail: error.to_string(),
                });
            }
        }
    }
}

/// An error with its causes, e.g. "error sending request: connection refused".
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    // reqwest names the whole URL (query included) in its message; messages name the
    // endpoint in its display form themselves.
    if let Some(url) = error
        .downcast_ref::<reqwest::Error>()
        .and_then(reqwest::Error::url)
    {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version's header is made once and kept while the version stays; a version that is
    /// no header value sends none, not the one before it.
    #[test]
    fn a_version_header_is_made_once_and_never_outlives_its_version() {
        let mut slot = None;
        let first: Arc<str> = "2025-11-25".into();
        let header = cached_header(&mut slot, &first).expect("a header value");
        assert_eq!(header, "2025-11-25");
        assert!(slot.as_ref().is_some_and(|(said, _)| *said == first));
        assert_eq!(cached_header(&mut slot, &first), Some(header));
        let broken: Arc<str> = "2025\n11".into();
        assert_eq!(cached_header(&mut slot, &broken), None);
        assert!(slot.is_none());
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn given_headers_are_sent_as_given_and_invalid_ones_refuse_the_request() {
        let map = header_map(&pairs(&[("mcp-name", "echo"), ("Mcp-Param-Region", "eu")]))
            .expect("valid headers");
        let sent: Vec<(&str, &[u8])> = map
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .collect();
        assert_eq!(
            sent,
            [
                ("mcp-name", b"echo".as_slice()),
                ("mcp-param-region", b"eu".as_slice())
            ]
        );
        for invalid in [("bad name", "x"), ("mcp-name", "line\nbreak")] {
            let refused = header_map(&pairs(&[invalid])).expect_err("invalid");
            assert!(
                matches!(refused, TransportError::Refused { status: None, .. }),
                "{refused:?}"
            );
        }
    }
}
