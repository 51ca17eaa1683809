//! The driver: one task per connection that turns outgoing messages into HTTP requests and
//! HTTP answers into inbound messages.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{Notify, mpsc};
use tokio::task::{AbortHandle, JoinSet};

use switchboard_wire::{
    CloseProbe, Connection, ConnectionOptions, ErrorObject, Frame, Inbound, LineBuffer, Message,
    Request, RequestId, decode,
};

use crate::authorize::Authorizer;
use crate::param_headers::ParamHeaders;
use crate::sse::{SseItem, SseParser};

/// Error code for failures the HTTP layer reports for a request (implementation-defined range).
pub const HTTP_ERROR_CODE: i64 = -32000;
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const SESSION_HEADER: &str = "mcp-session-id";
const PIPE_BYTES: usize = 1024 * 1024;
const DELETE_DEADLINE: Duration = Duration::from_secs(2);
const GET_STREAM_RECONNECTS: u32 = 5;
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
    /// ([`switchboard_wire::redact::url_for_display`] of `url` by default; a caller that knows more,
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
            display_url: switchboard_wire::redact::url_for_display(url),
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
pub struct HttpTransport {
    /// The JSON-RPC connection.
    pub connection: Connection,
    /// What the server sends outside of responses.
    pub inbound: mpsc::Receiver<Inbound>,
}

/// Connects (lazily: nothing is sent until the first message).
pub fn connect(options: HttpOptions) -> Result<HttpTransport, HttpSetupError> {
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
    let client = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        // Server-supplied redirects could send our headers (and credentials) elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| setup(format!("HTTP client: {e}")))?;
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let (connection_read, connection_write) = tokio::io::split(ours);
    let (driver_read, driver_write) = tokio::io::split(theirs);
    let driver = Arc::new(Driver {
        client,
        url,
        shown_url,
        headers,
        peer: server.clone(),
        max_body_bytes: options.max_body_bytes,
        max_frame_bytes: options.connection.max_frame_bytes,
        out: tokio::sync::Mutex::new(Some(driver_write)),
        state: Mutex::new(DriverState::default()),
        failed: Notify::new(),
        authorizer: options.authorizer.clone(),
        get_stream_opening: tokio::sync::watch::Sender::new(false),
    });
    let probe_driver = driver.clone();
    let probe: CloseProbe = Box::new(move |mut reason| {
        Box::pin(async move {
            if let Some(failure) = lock(&probe_driver.state).failure.clone() {
                reason.summary = failure;
            } else {
                reason.summary = "the HTTP connection was closed".into();
            }
            reason
        })
    });
    let (connection, inbound) = Connection::start(
        connection_read,
        connection_write,
        options.connection,
        Some(probe),
    );
    let task = tokio::spawn(run(driver, driver_read));
    connection.own_task(task);
    Ok(HttpTransport {
        connection,
        inbound,
    })
}

struct Driver {
    client: reqwest::Client,
    url: reqwest::Url,
    /// `url` as messages show it (`HttpOptions::display_url`).
    shown_url: String,
    headers: HeaderMap,
    peer: Arc<str>,
    max_body_bytes: usize,
    max_frame_bytes: usize,
    /// Lines for the connection's reader; `None` once closed.
    out: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    state: Mutex<DriverState>,
    failed: Notify,
    authorizer: Option<Arc<dyn Authorizer>>,
    /// True while the legacy GET stream is being opened: many servers drop a message for the
    /// GET stream when none is open yet, so requests (which may trigger one) wait for it.
    get_stream_opening: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct DriverState {
    session_id: Option<String>,
    /// Negotiated by `initialize` (legacy).
    legacy_version: Option<String>,
    /// The last `initialize` params, to re-initialize once when the session expires.
    initialize_params: Option<Value>,
    in_flight: HashMap<RequestId, AbortHandle>,
    failure: Option<String>,
    /// Modern `tools/list` requests whose answers must be checked for `x-mcp-header`.
    listings: std::collections::HashSet<RequestId>,
    /// Header parameters of the tools listed so far, by tool name.
    param_headers: HashMap<String, ParamHeaders>,
    /// Where messages go for a 2024-11-05 HTTP+SSE server (its `endpoint` event).
    sse_endpoint: Option<reqwest::Url>,
    /// The task reading that server's event stream.
    sse_stream: Option<tokio::task::JoinHandle<()>>,
    /// Re-issued modern requests: the id on the wire → the id the client used.
    reissued: HashMap<RequestId, RequestId>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

async fn run(driver: Arc<Driver>, mut from_client: ReadHalf<DuplexStream>) {
    let mut lines = LineBuffer::new(driver.max_frame_bytes);
    let mut tasks: JoinSet<()> = JoinSet::new();
    loop {
        tokio::select! {
            read = from_client.read_buf(lines.spare()) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    while let Some(frame) = lines.next_frame() {
                        if let Frame::Line(line) = frame {
                            handle_outgoing(&driver, line, &mut tasks);
                        }
                    }
                }
            },
            () = driver.failed.notified() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks.abort_all();
    if let Some(stream) = lock(&driver.state).sse_stream.take() {
        stream.abort();
    }
    let session_id = lock(&driver.state).session_id.clone();
    if let Some(session_id) = session_id {
        let delete = driver
            .client
            .delete(driver.url.clone())
            .headers(driver.headers.clone())
            .header(SESSION_HEADER, session_id);
        let delete = driver.authorized(driver.with_version(delete));
        let _ = tokio::time::timeout(DELETE_DEADLINE, delete.send()).await;
    }
    if let Some(mut out) = driver.out.lock().await.take() {
        let _ = out.shutdown().await;
    }
}

fn handle_outgoing(driver: &Arc<Driver>, line: &[u8], tasks: &mut JoinSet<()>) {
    let message = match decode(line) {
        Ok(message) => message,
        // Our own connection wrote it: raw traffic sent on purpose (the checker does that).
        Err(_) => {
            let body = line.to_vec();
            tasks.spawn(post_raw(driver.clone(), body));
            return;
        }
    };
    match message {
        Message::Request(request) => {
            if request.method == "initialize" {
                lock(&driver.state).initialize_params = request.params.clone();
            }
            let id = request.id.clone();
            let handle = tasks.spawn(post_request(driver.clone(), request));
            lock(&driver.state).in_flight.insert(id, handle);
        }
        Message::Notification(notification) => {
            let cancelled = (notification.method == "notifications/cancelled")
                .then(|| {
                    notification
                        .params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .and_then(RequestId::from_json)
                })
                .flatten();
            let legacy = lock(&driver.state).legacy_version.is_some();
            if let Some(id) = cancelled {
                // Closing the response stream cancels in the modern era; legacy servers are
                // also told explicitly.
                let mut state = lock(&driver.state);
                if let Some(handle) = state.in_flight.remove(&id) {
                    handle.abort();
                }
                // An aborted task cannot clean up after itself.
                state.reissued.retain(|_, caller| *caller != id);
                drop(state);
                if !legacy {
                    return;
                }
            }
            let starts_stream = legacy
                && notification.method == "notifications/initialized"
                && lock(&driver.state).sse_endpoint.is_none();
            if starts_stream {
                driver.get_stream_opening.send_replace(true);
                tasks.spawn(get_stream(driver.clone()));
            }
            tasks.spawn(post_raw(driver.clone(), line.to_vec()));
        }
        Message::Response(_) => {
            tasks.spawn(post_raw(driver.clone(), line.to_vec()));
        }
    }
}

impl Driver {
    /// Waits (bounded) until the GET stream being opened has its response head or failed.
    async fn wait_for_get_stream(&self) {
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

    fn post(&self, body: Vec<u8>) -> reqwest::RequestBuilder {
        let target = lock(&self.state)
            .sse_endpoint
            .clone()
            .unwrap_or_else(|| self.url.clone());
        let builder = self
            .client
            .post(target)
            .headers(self.headers.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        self.authorized(builder)
    }

    /// Adds the current credentials, if any.
    fn authorized(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        crate::authorize::with_credentials(self.authorizer.as_deref(), builder)
    }

    /// Asks the authorizer to handle a 401, or a 403 for insufficient scope. `None` when
    /// the answer is no challenge; `Some(Ok(()))` to send the request again.
    async fn handle_challenge(&self, response: &reqwest::Response) -> Option<Result<(), String>> {
        crate::authorize::answer_challenge(self.authorizer.as_deref(), response, &self.url).await
    }

    /// Legacy headers: the session and the negotiated version.
    fn with_session(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let session_id = lock(&self.state).session_id.clone();
        let builder = match session_id {
            Some(id) => builder.header(SESSION_HEADER, id),
            None => builder,
        };
        self.with_version(builder)
    }

    fn with_version(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match lock(&self.state).legacy_version.clone() {
            Some(version) => builder.header("mcp-protocol-version", version),
            None => builder,
        }
    }

    /// Writes one message line for the connection's reader.
    async fn deliver(&self, line: &[u8]) {
        let mut owned = Vec::with_capacity(line.len() + 1);
        owned.extend_from_slice(line);
        self.deliver_line(owned).await;
    }

    /// Writes one message line for the connection's reader, its terminator added in place.
    async fn deliver_line(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        if let Some(out) = self.out.lock().await.as_mut() {
            let _ = out.write_all(&line).await;
        }
    }

    async fn deliver_value(&self, value: &Value) {
        let renamed;
        let value = match self.caller_id_of(value) {
            Some(caller_id) => {
                let mut copy = value.clone();
                copy["id"] = json!(caller_id);
                renamed = copy;
                &renamed
            }
            None => value,
        };
        let listing = value
            .get("id")
            .and_then(RequestId::from_json)
            .is_some_and(|id| lock(&self.state).listings.remove(&id));
        if listing && value.get("result").is_some() {
            let mut value = value.clone();
            if let Some(result) = value.get_mut("result") {
                let (params, warnings) = crate::param_headers::filter_listing(result);
                for warning in warnings {
                    tracing::warn!(peer = %self.peer, "{warning}");
                }
                lock(&self.state).param_headers.extend(params);
            }
            return self.deliver_plain(&value).await;
        }
        self.deliver_plain(value).await;
    }

    async fn deliver_plain(&self, value: &Value) {
        if let Some(version) = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            && value.get("id").is_some()
            && value.pointer("/result/serverInfo").is_some()
        {
            lock(&self.state).legacy_version = Some(version.to_owned());
        }
        self.deliver(value.to_string().as_bytes()).await;
    }

    /// For the answer to a re-issued request, the id the client used.
    fn caller_id_of(&self, value: &Value) -> Option<RequestId> {
        let state = lock(&self.state);
        if state.reissued.is_empty() || value.get("method").is_some() {
            return None;
        }
        let wire_id = value.get("id").and_then(RequestId::from_json)?;
        state.reissued.get(&wire_id).cloned()
    }

    async fn deliver_error(&self, id: &RequestId, message: String, data: Value) {
        let id = &lock(&self.state)
            .reissued
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.clone());
        let error = ErrorObject {
            code: HTTP_ERROR_CODE,
            message,
            data: Some(data),
        };
        let value = json!({"jsonrpc": "2.0", "id": id, "error": error});
        self.deliver(value.to_string().as_bytes()).await;
    }

    /// The server cannot be reached: close the connection with this reason.
    fn fail(&self, reason: String) {
        let mut state = lock(&self.state);
        if state.failure.is_none() {
            tracing::debug!(peer = %self.peer, %reason, "http connection failed");
            state.failure = Some(reason);
        }
        drop(state);
        self.failed.notify_one();
    }
}

/// Modern requests carry their protocol version in `_meta`; they get the modern headers.
fn modern_headers(
    driver: &Driver,
    request: &Request,
    builder: reqwest::RequestBuilder,
) -> (reqwest::RequestBuilder, bool) {
    let params = request.params.as_ref();
    let Some(version) = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
        .and_then(Value::as_str)
    else {
        return (builder, false);
    };
    let mut builder = builder
        .header("mcp-protocol-version", version)
        .header("mcp-method", request.method.as_str());
    let name = match request.method.as_str() {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")).and_then(Value::as_str),
        "resources/read" => params.and_then(|p| p.get("uri")).and_then(Value::as_str),
        _ => None,
    };
    if let Some(name) = name {
        builder = builder.header("mcp-name", header_text(name));
    }
    match request.method.as_str() {
        "tools/list" => {
            lock(&driver.state).listings.insert(request.id.clone());
        }
        "tools/call" => {
            let tool = name.unwrap_or("");
            let params_for_tool = lock(&driver.state)
                .param_headers
                .get(tool)
                .cloned()
                .unwrap_or_default();
            let arguments = params.and_then(|p| p.get("arguments"));
            for (header, property) in params_for_tool {
                match crate::param_headers::header_value(arguments.and_then(|a| a.get(&property))) {
                    Some(Ok(text)) => builder = builder.header(format!("mcp-param-{header}"), text),
                    Some(Err(problem)) => {
                        tracing::warn!(peer = %driver.peer, %tool, %problem, "header parameter not sent")
                    }
                    None => {}
                }
            }
        }
        _ => {}
    }
    (builder, true)
}

/// A header value as the 2026-07-28 protocol writes it: plain visible ASCII as is,
/// anything else (or anything that looks like the sentinel) as `=?base64?…?=`.
pub fn header_text(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// How many times one request may be sent again with new credentials (step-up included).
const MAX_AUTHORIZATIONS: u32 = 3;

async fn post_request(driver: Arc<Driver>, mut request: Request) {
    driver.wait_for_get_stream().await;
    let caller_id = request.id.clone();
    let mut body = switchboard_wire::encode(&Message::Request(request.clone()));
    let mut reissued = false;
    let mut reinitialized = false;
    let mut authorizations = 0;
    let mut fell_back = false;
    let mut relisted = false;
    loop {
        if let Some(authorizer) = &driver.authorizer {
            authorizer.before_send().await;
        }
        let send = || {
            let (builder, modern) = modern_headers(&driver, &request, driver.post(body.clone()));
            let builder = if modern {
                builder
            } else {
                driver.with_session(builder)
            };
            (builder.send(), modern)
        };
        let (first, modern) = send();
        let response = match first.await {
            Ok(response) => response,
            // Failed before any response byte: typically a pooled connection the server had
            // already closed (it restarted). One retry on a fresh connection is safe; a
            // server that is really gone fails it too.
            Err(_) => match send().0.await {
                Ok(response) => response,
                Err(error) => {
                    driver.fail(format!(
                        "could not reach {}: {}",
                        driver.shown_url,
                        error_chain(&error)
                    ));
                    return;
                }
            },
        };
        if let Some(outcome) = driver.handle_challenge(&response).await {
            match outcome {
                Ok(()) if authorizations < MAX_AUTHORIZATIONS => {
                    authorizations += 1;
                    continue;
                }
                Ok(()) => {
                    let message = format!(
                        "the server still refused after {MAX_AUTHORIZATIONS} authorizations"
                    );
                    driver
                        .deliver_error(
                            &request.id,
                            message,
                            json!({"httpStatus": response.status().as_u16()}),
                        )
                        .await;
                }
                Err(problem) => {
                    let message = format!("authorization failed: {problem}");
                    driver
                        .deliver_error(
                            &request.id,
                            message,
                            json!({"httpStatus": response.status().as_u16()}),
                        )
                        .await;
                }
            }
            finish(&driver, &caller_id, &request.id);
            return;
        }
        let status = response.status();
        if modern
            && status == reqwest::StatusCode::BAD_REQUEST
            && request.method == "tools/call"
            && !relisted
        {
            // 2026-07-28: -32020 means our `Mcp-Param-*` headers disagree with the tool's
            // current schema; re-list the tools and send the call once more.
            relisted = true;
            let headers = AnswerHeaders::of(&response);
            let body = read_body(response, driver.max_body_bytes).await;
            let mismatch = body
                .as_ref()
                .ok()
                .and_then(|b| answer_json(b))
                .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64))
                == Some(HEADER_MISMATCH_CODE);
            if mismatch && relist_tools(&driver, &request).await {
                continue;
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            finish(&driver, &caller_id, &request.id);
            return;
        }
        if request.method == "initialize"
            && let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            lock(&driver.state).session_id = Some(id.to_owned());
        }
        let had_session = lock(&driver.state).session_id.is_some();
        let may_be_expired = matches!(
            status,
            reqwest::StatusCode::NOT_FOUND | reqwest::StatusCode::BAD_REQUEST
        );
        if may_be_expired
            && had_session
            && !modern
            && request.method != "initialize"
            && !reinitialized
        {
            // The specification says 404 means the session is gone; some servers answer 400
            // with an error about the session id instead. Either gets one fresh initialize.
            let headers = AnswerHeaders::of(&response);
            let body = read_body(response, driver.max_body_bytes).await;
            let expired = status == reqwest::StatusCode::NOT_FOUND
                || body.as_ref().is_ok_and(|b| {
                    String::from_utf8_lossy(b)
                        .to_ascii_lowercase()
                        .contains("session")
                });
            reinitialized = true;
            if expired && reinitialize(&driver).await {
                continue;
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            finish(&driver, &caller_id, &request.id);
            return;
        }
        let sse_mode = lock(&driver.state).sse_endpoint.is_some();
        if sse_mode {
            // 2024-11-05: the answer arrives on the event stream; the POST only accepts.
            if !status.is_success() {
                let message = format!("the server refused the message (HTTP {status})");
                driver
                    .deliver_error(&request.id, message, json!({"httpStatus": status.as_u16()}))
                    .await;
            }
            finish(&driver, &caller_id, &request.id);
            return;
        }
        let legacy_refusal = matches!(status.as_u16(), 400 | 404 | 405);
        if request.method == "initialize" && legacy_refusal && !fell_back {
            let headers = AnswerHeaders::of(&response);
            let body = read_body(response, driver.max_body_bytes).await;
            let json_rpc = body
                .as_ref()
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                .is_some_and(|v| v.get("jsonrpc").is_some());
            if !json_rpc {
                fell_back = true;
                match open_legacy_stream(&driver).await {
                    Ok(()) => continue,
                    Err(reason) => {
                        let message = format!(
                            "the server refused `initialize` (HTTP {status}), and the HTTP+SSE (2024-11-05) fallback failed too: {reason}"
                        );
                        driver
                            .deliver_error(
                                &request.id,
                                message,
                                json!({"httpStatus": status.as_u16()}),
                            )
                            .await;
                        finish(&driver, &caller_id, &request.id);
                        return;
                    }
                }
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            finish(&driver, &caller_id, &request.id);
            return;
        }
        let may_reissue = modern && !reissued;
        if read_answer(&driver, &request.id, response, may_reissue).await == Answer::Lost {
            // 2026-07-28 streams cannot be resumed: the request is sent again, once, under
            // a new id; its answer goes back to the client under the old one.
            reissued = true;
            request.id = RequestId::String(format!("{caller_id}~reissued").into());
            lock(&driver.state)
                .reissued
                .insert(request.id.clone(), caller_id.clone());
            body = switchboard_wire::encode(&Message::Request(request.clone()));
            continue;
        }
        finish(&driver, &caller_id, &request.id);
        return;
    }
}

/// A request is over: forget its task, any re-issued id and any listing mark left by an
/// answer that never came. (A re-issued `tools/list` answer is checked under the caller's
/// id, which its first send marked.)
fn finish(driver: &Driver, caller_id: &RequestId, wire_id: &RequestId) {
    let mut state = lock(&driver.state);
    state.in_flight.remove(caller_id);
    state.reissued.remove(wire_id);
    state.listings.remove(caller_id);
    state.listings.remove(wire_id);
}

/// The 2026-07-28 error for headers that disagree with the body (`HeaderMismatch`).
const HEADER_MISMATCH_CODE: i64 = -32020;

/// How many `tools/list` pages a re-listing after -32020 reads at most.
const MAX_RELIST_PAGES: usize = 32;

/// Fetches `tools/list` again (all pages, with the call's `_meta`) to refresh the header
/// parameters of every tool; true when at least one page arrived.
async fn relist_tools(driver: &Driver, call: &Request) -> bool {
    let params = call.params.as_ref();
    let meta = params.and_then(|p| p.get("_meta")).cloned();
    let tool = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = meta
        .as_ref()
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    tracing::debug!(peer = %driver.peer, %tool, "header mismatch (-32020); listing tools again");
    let mut cursor: Option<String> = None;
    for page in 0..MAX_RELIST_PAGES {
        let mut list_params = serde_json::Map::new();
        if let Some(meta) = &meta {
            list_params.insert("_meta".to_owned(), meta.clone());
        }
        if let Some(cursor) = &cursor {
            list_params.insert("cursor".to_owned(), Value::String(cursor.clone()));
        }
        let list = json!({"jsonrpc": "2.0", "id": format!("switchboard-relist-{page}"),
            "method": "tools/list", "params": list_params});
        let sent = driver
            .post(list.to_string().into_bytes())
            .header("mcp-protocol-version", version.as_str())
            .header("mcp-method", "tools/list")
            .send()
            .await;
        let Ok(response) = sent else { return page > 0 };
        if !response.status().is_success() {
            return page > 0;
        }
        let Ok(body) = read_body(response, driver.max_body_bytes).await else {
            return page > 0;
        };
        let Some(mut result) =
            answer_json(&body).and_then(|mut v| v.get_mut("result").map(Value::take))
        else {
            return page > 0;
        };
        let (params, warnings) = crate::param_headers::filter_listing(&mut result);
        for warning in warnings {
            tracing::warn!(peer = %driver.peer, "{warning}");
        }
        let mut state = lock(&driver.state);
        if page == 0 {
            // The called tool's old parameters go even if the new listing has none.
            state.param_headers.remove(tool);
        }
        state.param_headers.extend(params);
        drop(state);
        cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    true
}

/// The first response (a message with `result` or `error`) in a body that is JSON or SSE.
fn answer_json(body: &[u8]) -> Option<Value> {
    let is_answer = |v: &Value| v.get("result").is_some() || v.get("error").is_some();
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return is_answer(&value).then_some(value);
    }
    let mut parser = SseParser::new(body.len() + 1);
    let mut items = parser.push(body);
    items.extend(parser.push(b"\n\n"));
    items.into_iter().find_map(|item| match item {
        SseItem::Event(event) => serde_json::from_str::<Value>(&event.data)
            .ok()
            .filter(is_answer),
        SseItem::Oversized { .. } => None,
    })
}

/// The session expired (404): start a fresh one with the same `initialize`, once.
async fn reinitialize(driver: &Driver) -> bool {
    let params = {
        let mut state = lock(&driver.state);
        state.session_id = None;
        state.legacy_version = None;
        state.initialize_params.clone()
    };
    let Some(params) = params else { return false };
    tracing::debug!(peer = %driver.peer, "session expired (404); initializing a new one");
    let init = json!({"jsonrpc": "2.0", "id": "switchboard-reinitialize", "method": "initialize", "params": params});
    let Ok(response) = driver.post(init.to_string().into_bytes()).send().await else {
        return false;
    };
    if let Some(id) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        lock(&driver.state).session_id = Some(id.to_owned());
    }
    let Ok(body) = read_body(response, driver.max_body_bytes).await else {
        return false;
    };
    let version = answer_json(&body).and_then(|v| {
        v.pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let Some(version) = version else { return false };
    lock(&driver.state).legacy_version = Some(version);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    driver
        .with_session(driver.post(initialized.to_string().into_bytes()))
        .send()
        .await
        .is_ok()
}

/// The parts of an HTTP answer's head that matter once its body has been read.
struct AnswerHeaders {
    status: reqwest::StatusCode,
    content_type: String,
    www_authenticate: Option<String>,
}

impl AnswerHeaders {
    fn of(response: &reqwest::Response) -> AnswerHeaders {
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        AnswerHeaders {
            status: response.status(),
            content_type: header(CONTENT_TYPE)
                .unwrap_or_default()
                .to_ascii_lowercase(),
            www_authenticate: header(reqwest::header::WWW_AUTHENTICATE),
        }
    }
}

/// What became of a POST's answer.
#[derive(PartialEq, Eq)]
enum Answer {
    /// Delivered: the response, or an error response standing in for it.
    Delivered,
    /// The response stream ended or broke before the response, and the caller said the
    /// request may be sent again: nothing was delivered for it.
    Lost,
}

/// Reads a POST's answer (JSON or SSE) and delivers every message in it; turns HTTP
/// failures into an error response for `id`.
async fn read_answer(
    driver: &Driver,
    id: &RequestId,
    response: reqwest::Response,
    may_reissue: bool,
) -> Answer {
    let headers = AnswerHeaders::of(&response);
    let status = headers.status;
    if status.is_success() && headers.content_type.starts_with("text/event-stream") {
        let mut cursor = StreamCursor::default();
        let mut end = read_event_stream(driver, Some(id), response, &mut cursor).await;
        // A legacy server may close a response stream early after giving it an event id
        // (2025-11-25 polling): wait `retry`, then resume with GET and Last-Event-ID.
        let mut resumes = 0;
        while matches!(end, StreamEnd::Ended { .. })
            && cursor.last_event_id.is_some()
            && resumes < STREAM_RESUMES
        {
            resumes += 1;
            tokio::time::sleep(cursor.retry).await;
            let Some(resumed) = resume_stream(driver, &cursor).await else {
                break;
            };
            end = read_event_stream(driver, Some(id), resumed, &mut cursor).await;
        }
        match end {
            StreamEnd::Answered => {}
            StreamEnd::Ended { .. } | StreamEnd::Broken(_) if may_reissue => {
                tracing::debug!(peer = %driver.peer, %id, "response stream lost; re-issuing");
                return Answer::Lost;
            }
            StreamEnd::Ended { malformed_events } => {
                let carried = match malformed_events {
                    0 => String::new(),
                    1 => "; it carried one event that is not JSON".to_owned(),
                    n => format!("; it carried {n} events that are not JSON"),
                };
                driver
                    .deliver_error(
                        id,
                        format!(
                            "the server's event stream ended before it answered (HTTP {status}){carried}"
                        ),
                        json!({"httpStatus": status.as_u16()}),
                    )
                    .await;
            }
            StreamEnd::Broken(reason) => driver.fail(format!(
                "the connection to {} broke during a response: {reason}",
                driver.shown_url
            )),
        }
        return Answer::Delivered;
    }
    let body = read_body(response, driver.max_body_bytes).await;
    answer_from_body(driver, id, &headers, body).await;
    Answer::Delivered
}

/// Delivers the answer in a body that was read (or failed to read).
async fn answer_from_body(
    driver: &Driver,
    id: &RequestId,
    headers: &AnswerHeaders,
    body: Result<Vec<u8>, String>,
) {
    let status = headers.status;
    let body = match body {
        Ok(body) => body,
        Err(problem) => {
            driver
                .deliver_error(id, problem, json!({"httpStatus": status.as_u16()}))
                .await;
            return;
        }
    };
    let plain = {
        let state = lock(&driver.state);
        !state.reissued.contains_key(id) && !state.listings.contains(id)
    };
    let body = if plain {
        match crate::plain_answer::plain_answer(body, id) {
            Ok(line) => return driver.deliver_line(line).await,
            Err(body) => body,
        }
    } else {
        body
    };
    let mut parsed: Option<Value> = serde_json::from_slice(&body).ok();
    // An HTTP answer belongs to the POST it answers: an error without an id (servers use
    // `id: null` when they reject a request before reading it) is this request's answer.
    if let Some(Value::Object(object)) = &mut parsed
        && object.contains_key("error")
        && object.get("id").is_none_or(Value::is_null)
    {
        object.insert("id".into(), id.to_json());
    }
    match parsed {
        // A JSON-RPC answer, whatever the status (modern errors come with 400/404).
        Some(value) if value.get("jsonrpc").is_some() || value.is_array() => {
            driver.deliver_value(&value).await;
            let is_response = value.get("method").is_none()
                && (value.get("result").is_some() || value.get("error").is_some());
            let answered_id = value.get("id").and_then(RequestId::from_json);
            if !is_response || answered_id.as_ref() != Some(id) {
                let other = answered_id.map_or_else(
                    || "no request".to_owned(),
                    |other| format!("request {other}"),
                );
                driver
                    .deliver_error(
                        id,
                        format!(
                            "the server answered this request's POST with a message for {other}"
                        ),
                        json!({"httpStatus": status.as_u16()}),
                    )
                    .await;
            }
        }
        _ if status == reqwest::StatusCode::ACCEPTED
            || (status.is_success() && body.is_empty()) =>
        {
            driver
                .deliver_error(
                    id,
                    format!("the server answered HTTP {status} with no response to the request"),
                    json!({"httpStatus": status.as_u16()}),
                )
                .await;
        }
        _ => {
            let mut message = format!("HTTP {status} from {}", driver.shown_url);
            if status == reqwest::StatusCode::UNAUTHORIZED {
                message.push_str(
                    ": the server requires authorization (configure an Authorization header)",
                );
            }
            let excerpt = switchboard_wire::excerpt(&body, 300);
            if !excerpt.is_empty() {
                message.push_str(&format!(": {excerpt}"));
            }
            let data = json!({"httpStatus": status.as_u16(), "contentType": headers.content_type, "wwwAuthenticate": headers.www_authenticate});
            driver.deliver_error(id, message, data).await;
        }
    }
}

/// Reads a body up to the cap (an error past it, before reading more).
pub async fn read_body(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Err(format!(
                        "the server's response body is larger than the {cap}-byte limit"
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(error) => {
                return Err(format!(
                    "reading the server's response failed: {}",
                    error_chain(&error)
                ));
            }
        }
    }
}

/// How long a 2024-11-05 server has to announce its message endpoint.
const ENDPOINT_DEADLINE: Duration = Duration::from_secs(10);

/// Switches to the 2024-11-05 HTTP+SSE transport: GET the URL as an event stream, wait for
/// the `endpoint` event (refused on another origin: our messages, and credentials, would go
/// there), then keep reading the stream for answers in a task the driver owns.
async fn open_legacy_stream(driver: &Arc<Driver>) -> Result<(), String> {
    let get = driver
        .client
        .get(driver.url.clone())
        .headers(driver.headers.clone())
        .header(ACCEPT, "text/event-stream");
    let mut response = driver
        .authorized(get)
        .send()
        .await
        .map_err(|e| format!("GET {}: {}", driver.shown_url, error_chain(&e)))?;
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !response.status().is_success() || !content_type.starts_with("text/event-stream") {
        return Err(format!(
            "GET {} answered {} ({content_type})",
            driver.shown_url,
            response.status()
        ));
    }
    let mut parser = SseParser::new(driver.max_body_bytes);
    let mut pending: Vec<SseItem> = Vec::new();
    let endpoint = tokio::time::timeout(ENDPOINT_DEADLINE, async {
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    return Err("the event stream ended before an `endpoint` event".to_owned());
                }
                Err(e) => return Err(format!("the event stream broke: {}", error_chain(&e))),
            };
            let mut items = parser.push(&chunk).into_iter();
            while let Some(item) = items.next() {
                if let SseItem::Event(event) = &item
                    && event.event == "endpoint"
                {
                    pending.extend(items);
                    return Ok(event.data.trim().to_owned());
                }
            }
        }
    })
    .await
    .map_err(|_| format!("no `endpoint` event within {ENDPOINT_DEADLINE:?}"))??;
    let endpoint = driver
        .url
        .join(&endpoint)
        .map_err(|e| format!("the `endpoint` event is not a URL: {e}"))?;
    let shown_endpoint = switchboard_wire::redact::url_for_display(endpoint.as_str());
    if endpoint.origin() != driver.url.origin() {
        return Err(format!(
            "refusing the message endpoint {shown_endpoint}: it is on another origin than {}",
            driver.shown_url
        ));
    }
    tracing::debug!(peer = %driver.peer, endpoint = %shown_endpoint, "2024-11-05 HTTP+SSE server");
    let reader_driver = driver.clone();
    let reader = tokio::spawn(async move {
        let driver = reader_driver;
        for item in pending {
            deliver_stream_item(&driver, item).await;
        }
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    for item in parser.push(&chunk) {
                        deliver_stream_item(&driver, item).await;
                    }
                }
                Ok(None) => break driver.fail("the server closed its event stream".to_owned()),
                Err(e) => {
                    break driver.fail(format!("the event stream broke: {}", error_chain(&e)));
                }
            }
        }
    });
    let mut state = lock(&driver.state);
    state.sse_endpoint = Some(endpoint);
    if let Some(old) = state.sse_stream.replace(reader) {
        old.abort();
    }
    Ok(())
}

/// Delivers one event of a 2024-11-05 stream (its `message` events carry JSON-RPC).
async fn deliver_stream_item(driver: &Driver, item: SseItem) {
    match item {
        SseItem::Event(event) if event.event == "endpoint" => {}
        item => {
            deliver_event(driver, item, None).await;
        }
    }
}

/// What delivering one event of a stream did.
#[derive(Debug, PartialEq, Eq)]
enum EventDelivered {
    /// It carried the response to the request the stream answers, or stood in for it.
    Answer,
    /// Data that is not a JSON message (or an event over the cap off a response stream),
    /// handed over to be reported as a malformed frame.
    Malformed,
    /// Anything else: a message for the connection, an empty event.
    Other,
}

/// Delivers the JSON-RPC message of one event. `answering` is the request whose response
/// stream this is: an event over the cap there fails that request at once (its answer may be
/// the event, and it can never be read), elsewhere it is reported as a malformed frame.
async fn deliver_event(
    driver: &Driver,
    item: SseItem,
    answering: Option<&RequestId>,
) -> EventDelivered {
    let event = match item {
        SseItem::Event(event) => event,
        SseItem::Oversized { limit } => {
            let problem = format!(
                "the server sent an event over the {limit}-byte size limit on {}",
                if answering.is_some() {
                    "this request's response stream"
                } else {
                    "its event stream"
                }
            );
            if let Some(id) = answering {
                driver
                    .deliver_error(id, problem, json!({"limitBytes": limit}))
                    .await;
                return EventDelivered::Answer;
            }
            driver
                .deliver(format!("<{problem}: dropped>").as_bytes())
                .await;
            return EventDelivered::Malformed;
        }
    };
    if event.data.is_empty() {
        return EventDelivered::Other;
    }
    match serde_json::from_str::<Value>(&event.data) {
        Ok(value) => {
            let is_answer = answering.is_some_and(|id| {
                value.get("method").is_none()
                    && value.get("id").and_then(RequestId::from_json).as_ref() == Some(id)
            });
            driver.deliver_value(&value).await;
            if is_answer {
                EventDelivered::Answer
            } else {
                EventDelivered::Other
            }
        }
        // Not JSON: hand it over to be reported as a malformed frame.
        Err(_) => {
            driver
                .deliver_line(as_one_malformed_line(&event.data))
                .await;
            EventDelivered::Malformed
        }
    }
}

/// Event data that is not JSON, as one line for the connection's reader. Its line breaks
/// become U+0001, which JSON allows nowhere: replacing them with spaces (or anything JSON
/// accepts) could turn broken data into a different valid message, e.g. a break inside a
/// string `"co` / `ntent"` into the key `"co ntent"`.
fn as_one_malformed_line(data: &str) -> Vec<u8> {
    data.bytes()
        .map(|byte| if byte == b'\n' { 0x01 } else { byte })
        .collect()
}

/// How an SSE response ended.
enum StreamEnd {
    /// The response for the request came.
    Answered,
    /// The server closed the stream cleanly without answering.
    Ended {
        /// Events on it that were not JSON messages (one of them may have been the answer).
        malformed_events: usize,
    },
    /// The connection broke.
    Broken(String),
}

/// Where a stream can be resumed from.
struct StreamCursor {
    last_event_id: Option<String>,
    retry: Duration,
}

impl Default for StreamCursor {
    fn default() -> Self {
        StreamCursor {
            last_event_id: None,
            retry: Duration::from_secs(1),
        }
    }
}

/// How many times one response stream is resumed before giving up.
const STREAM_RESUMES: u32 = 5;

/// Reopens a stream with GET and Last-Event-ID; `None` if the server will not.
async fn resume_stream(driver: &Driver, cursor: &StreamCursor) -> Option<reqwest::Response> {
    let last_event_id = cursor.last_event_id.as_deref()?;
    let get = driver
        .client
        .get(driver.url.clone())
        .headers(driver.headers.clone())
        .header(ACCEPT, "text/event-stream");
    let builder = driver
        .authorized(driver.with_session(get))
        .header("last-event-id", last_event_id);
    let response = builder.send().await.ok()?;
    response.status().is_success().then_some(response)
}

/// Delivers every event of an SSE body, noting the last event id and retry delay.
async fn read_event_stream(
    driver: &Driver,
    id: Option<&RequestId>,
    mut response: reqwest::Response,
    cursor: &mut StreamCursor,
) -> StreamEnd {
    let mut parser = SseParser::new(driver.max_body_bytes);
    let mut answered = false;
    let mut malformed_events = 0;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return StreamEnd::Ended { malformed_events },
            Err(error) => return StreamEnd::Broken(error_chain(&error)),
        };
        for item in parser.push(&chunk) {
            if let SseItem::Event(event) = &item {
                if let Some(event_id) = &event.id {
                    cursor.last_event_id = Some(event_id.clone());
                }
                if let Some(ms) = event.retry_ms {
                    cursor.retry = Duration::from_millis(ms.min(60_000));
                }
            }
            match deliver_event(driver, item, id).await {
                EventDelivered::Answer => answered = true,
                EventDelivered::Malformed => malformed_events += 1,
                EventDelivered::Other => {}
            }
        }
        // The stream has done its work once its request is answered: a server that keeps it
        // open would otherwise cost a task and a descriptor per call. (Messages after the
        // response in the same chunk were delivered above.)
        if answered {
            return StreamEnd::Answered;
        }
    }
}

/// How long an event stream that answers a notification or response POST is read.
const UNASKED_STREAM_DEADLINE: Duration = Duration::from_secs(10);

/// POSTs a notification or response; answers are expected to be 202 with no body.
async fn post_raw(driver: Arc<Driver>, body: Vec<u8>) {
    let builder = driver.with_session(driver.post(body));
    match builder.send().await {
        Ok(response) if response.status().is_success() => {
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            if content_type.starts_with("text/event-stream") {
                // The protocol asks for 202 here; a stream answers no request of ours, so
                // nothing would ever close it: what it carries in time is delivered.
                let mut cursor = StreamCursor::default();
                let read = read_event_stream(&driver, None, response, &mut cursor);
                if tokio::time::timeout(UNASKED_STREAM_DEADLINE, read)
                    .await
                    .is_err()
                {
                    tracing::debug!(peer = %driver.peer, "closed an event stream that answered a notification");
                }
            } else if let Ok(body) = read_body(response, driver.max_body_bytes).await
                && let Ok(value) = serde_json::from_slice::<Value>(&body)
            {
                driver.deliver_value(&value).await;
            }
        }
        Ok(response) => {
            tracing::debug!(peer = %driver.peer, status = %response.status(), "a notification was not accepted")
        }
        Err(error) => driver.fail(format!(
            "could not reach {}: {}",
            driver.shown_url,
            error_chain(&error)
        )),
    }
}

/// The legacy GET stream for server-initiated messages; 405 means the server has none.
async fn get_stream(driver: Arc<Driver>) {
    let mut last_event_id: Option<String> = None;
    let mut retry = Duration::from_secs(1);
    for _attempt in 0..GET_STREAM_RECONNECTS {
        let mut builder = driver.authorized(
            driver.with_session(
                driver
                    .client
                    .get(driver.url.clone())
                    .headers(driver.headers.clone())
                    .header(ACCEPT, "text/event-stream"),
            ),
        );
        if let Some(id) = &last_event_id {
            builder = builder.header("last-event-id", id.as_str());
        }
        let sent = builder.send().await;
        driver.get_stream_opening.send_replace(false);
        let Ok(mut response) = sent else {
            return;
        };
        if !response.status().is_success() {
            return;
        }
        let mut parser = SseParser::new(driver.max_body_bytes);
        while let Ok(Some(chunk)) = response.chunk().await {
            for item in parser.push(&chunk) {
                if let SseItem::Event(event) = &item {
                    if let Some(id) = event.id.clone() {
                        last_event_id = Some(id);
                    }
                    if let Some(ms) = event.retry_ms {
                        retry = Duration::from_millis(ms.min(60_000));
                    }
                }
                deliver_event(&driver, item, None).await;
            }
        }
        tokio::time::sleep(retry).await;
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
    use super::header_text;

    #[test]
    fn header_values_use_the_base64_sentinel_when_needed() {
        assert_eq!(header_text("get_weather"), "get_weather");
        assert_eq!(header_text("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(header_text(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_text("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_text("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
    }
}
