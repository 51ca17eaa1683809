//! Raw HTTP requests for what a well-behaved client never sends, so the session cannot:
//! a foreign `Origin`, a made-up or missing `Mcp-Session-Id`, `DELETE`, and a legacy
//! cancellation with the response stream kept open. Every request has a deadline, every
//! body a cap; answers (JSON or SSE) are read up to the first JSON-RPC response. Evidence
//! never shows configured header values, and shows session ids the server issued only
//! shortened (they are credentials for the session).

use std::time::{Duration, Instant};

use std::sync::Arc;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use switchboard_http::{Authorizer, error_chain};
use switchboard_protocol::sse::{SseItem, SseParser};
use switchboard_protocol::{LATEST_LEGACY_VERSION, MODERN_VERSION, meta};

use crate::checks::EVIDENCE_VALUE_BYTES;
use crate::report::{Exchange, capped};

/// Largest answer body read.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most bytes read from one event stream.
const STREAM_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of a body kept as an excerpt in evidence.
const EXCERPT_BYTES: usize = 400;
/// The `Origin` a DNS-rebinding page would send.
pub(crate) const FOREIGN_ORIGIN: &str = "http://evil.example";
/// A session id no server issued.
pub(crate) const MADE_UP_SESSION: &str = "switchboard-check-made-up-session-id";

/// A client for raw requests to one endpoint.
#[derive(Clone)]
pub(crate) struct RawHttp {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The configured headers (values are secrets).
    headers: HeaderMap,
    /// Supplies `Authorization` (OAuth), if any; challenges are not answered here.
    authorizer: Option<Arc<dyn Authorizer>>,
    timeout: Duration,
}

/// Where raw requests go and with which credentials.
pub(crate) struct RawTarget<'a> {
    pub(crate) url: &'a str,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// Deadline of each request (and of connecting).
    pub(crate) timeout: Duration,
}

/// One raw request.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawRequest {
    /// `DELETE` instead of `POST`.
    pub(crate) delete: bool,
    /// The JSON-RPC message to POST.
    pub(crate) body: Option<Value>,
    /// `Mcp-Session-Id`.
    pub(crate) session: Option<String>,
    /// `Origin`.
    pub(crate) origin: Option<String>,
    /// `MCP-Protocol-Version`.
    pub(crate) protocol_version: Option<String>,
    /// Send the 2026-07-28 headers (`Mcp-Method`) derived from the body.
    pub(crate) modern: bool,
    /// Headers set exactly as given (name as written, value), after all others: the
    /// 2026-07-28 checks send missing, wrong and differently cased standard headers.
    pub(crate) exact_headers: Vec<(String, String)>,
}

/// What came back.
#[derive(Debug, Clone)]
pub(crate) struct RawAnswer {
    /// The HTTP status; `None` when no answer came (the reason is in `failure`).
    pub(crate) status: Option<u16>,
    pub(crate) failure: Option<String>,
    pub(crate) content_type: String,
    /// `Mcp-Session-Id` of the answer.
    pub(crate) session_id: Option<String>,
    /// The JSON-RPC message in the body (a JSON body, or the first response on an SSE
    /// stream).
    pub(crate) message: Option<Value>,
    pub(crate) excerpt: String,
    pub(crate) elapsed: Duration,
}

impl RawAnswer {
    fn failed(failure: String, elapsed: Duration) -> RawAnswer {
        RawAnswer {
            status: None,
            failure: Some(failure),
            content_type: String::new(),
            session_id: None,
            message: None,
            excerpt: String::new(),
            elapsed,
        }
    }

    /// True for a 2xx status.
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// The JSON-RPC result, if the answer carries one.
    pub(crate) fn result(&self) -> Option<&Value> {
        self.message.as_ref()?.get("result")
    }

    /// The protocol version an `initialize` answer negotiated, or the latest legacy one
    /// when it names none: the `MCP-Protocol-Version` the session's later requests carry.
    pub(crate) fn negotiated_version(&self) -> String {
        self.result()
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or(LATEST_LEGACY_VERSION)
            .to_owned()
    }

    /// "HTTP 404 (JSON-RPC error -32001: Session not found)", "HTTP 202", "no answer: …".
    pub(crate) fn describe(&self) -> String {
        let Some(status) = self.status else {
            return format!(
                "no answer: {}",
                self.failure.as_deref().unwrap_or("unknown")
            );
        };
        let detail = match &self.message {
            Some(message) if message.get("result").is_some() => " with a result".to_owned(),
            Some(message) => match message.get("error") {
                Some(error) => format!(
                    " (JSON-RPC error {}: {})",
                    error.get("code").unwrap_or(&Value::Null),
                    error.get("message").and_then(Value::as_str).unwrap_or("")
                ),
                None => String::new(),
            },
            None if self.excerpt.is_empty() => String::new(),
            None => format!(": {}", self.excerpt),
        };
        format!("HTTP {status}{detail}")
    }
}

/// A session id for evidence: its start and length only.
pub(crate) fn shorten_session(id: &str) -> String {
    if id == MADE_UP_SESSION {
        return id.to_owned();
    }
    let start: String = id.chars().take(4).collect();
    format!("{start}… ({} characters)", id.chars().count())
}

/// A legacy `initialize` request.
pub(crate) fn initialize_body(id: u64, protocol_version: Option<&str>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version.unwrap_or(LATEST_LEGACY_VERSION),
            "capabilities": {},
            "clientInfo": {"name": "switchboard-check", "version": env!("CARGO_PKG_VERSION")},
        },
    })
}

/// The `_meta` every 2026-07-28 request carries.
pub(crate) fn modern_meta() -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert(meta::PROTOCOL_VERSION.into(), json!(MODERN_VERSION));
    fields.insert(meta::CLIENT_CAPABILITIES.into(), json!({}));
    fields.insert(
        meta::CLIENT_INFO.into(),
        json!({"name": "switchboard-check", "version": env!("CARGO_PKG_VERSION")}),
    );
    fields
}

/// A 2026-07-28 `server/discover` request.
pub(crate) fn discover_body(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "server/discover",
        "params": {"_meta": modern_meta()},
    })
}

/// A request with no parameters (`ping`, `tools/list`).
pub(crate) fn request_body(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method})
}

/// A notification.
pub(crate) fn notification_body(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

impl RawHttp {
    /// A client for the target's URL sending its headers; `Err` says what is wrong.
    pub(crate) fn new(target: RawTarget<'_>) -> Result<RawHttp, String> {
        let RawTarget {
            url,
            headers,
            authorizer,
            timeout,
        } = target;
        let url = reqwest::Url::parse(url).map_err(|e| {
            let shown = switchboard_text::redact::url_for_display(url);
            format!("`{shown}` is not a valid URL: {e}")
        })?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("header name `{name}` is not valid"))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| format!("the value of header `{name}` is not valid header text"))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(RawHttp {
            client,
            url,
            headers: map,
            authorizer,
            timeout,
        })
    }

    /// The same client, sending header names in title case (`Mcp-Method`) where requests
    /// normally carry them in lower case.
    pub(crate) fn title_case_headers(&self) -> Result<RawHttp, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(self.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .http1_title_case_headers()
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(RawHttp {
            client,
            ..self.clone()
        })
    }

    /// POSTs `body` with `headers` written exactly as given (their names in the case
    /// given) on a plain TCP connection of its own, for the probes an HTTP client library
    /// would normalise (header names in capitals). Only for `http://` endpoints without an
    /// authorizer (the configured headers are added); `Err` says why not. The answer's
    /// status and media type are read, and its body when it is not chunked, within the
    /// deadline and [`VERBATIM_BYTES`].
    pub(crate) async fn send_verbatim(
        &self,
        body: &Value,
        headers: &[(String, String)],
    ) -> Result<RawAnswer, String> {
        if self.url.scheme() != "http" {
            return Err("the endpoint is not plain `http://`".to_owned());
        }
        if self.authorizer.is_some() {
            return Err("the entry authorizes with OAuth".to_owned());
        }
        let host = self.url.host_str().unwrap_or("");
        let port = self.url.port_or_known_default().unwrap_or(80);
        let authority = match self.url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let mut path = self.url.path().to_owned();
        if let Some(query) = self.url.query() {
            path.push('?');
            path.push_str(query);
        }
        let body = body.to_string();
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            body.len()
        );
        for (name, value) in self.headers.iter() {
            head.push_str(&format!(
                "{}: {}\r\n",
                name.as_str(),
                value.to_str().unwrap_or("")
            ));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let started = Instant::now();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let exchange = async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            stream
                .write_all(head.as_bytes())
                .await
                .map_err(|e| format!("cannot send: {e}"))?;
            stream
                .write_all(body.as_bytes())
                .await
                .map_err(|e| format!("cannot send: {e}"))?;
            let mut answer = Vec::new();
            let mut chunk = [0u8; 8192];
            while answer.len() < VERBATIM_BYTES {
                let read = stream
                    .read(&mut chunk)
                    .await
                    .map_err(|e| format!("cannot read the answer: {e}"))?;
                if read == 0 {
                    break;
                }
                answer.extend_from_slice(&chunk[..read]);
            }
            Ok::<Vec<u8>, String>(answer)
        };
        let bytes = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(failure)) => return Ok(RawAnswer::failed(failure, started.elapsed())),
            Err(_) => {
                return Ok(RawAnswer::failed(
                    format!("no complete answer within {} ms", self.timeout.as_millis()),
                    started.elapsed(),
                ));
            }
        };
        Ok(parse_verbatim(&bytes, started.elapsed()))
    }

    /// The endpoint's own origin (`http://127.0.0.1:8080`): what a page served by the
    /// server itself would send.
    pub(crate) fn own_origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    /// True when the endpoint's host is a loopback name or address.
    pub(crate) fn is_loopback(&self) -> bool {
        let host = self.url.host_str().unwrap_or("");
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    fn builder(&self, request: &RawRequest) -> reqwest::RequestBuilder {
        let mut builder = if request.delete {
            self.client.delete(self.url.clone())
        } else {
            self.client
                .post(self.url.clone())
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(
                    request
                        .body
                        .as_ref()
                        .map(Value::to_string)
                        .unwrap_or_default(),
                )
        };
        builder = builder.headers(self.headers.clone());
        builder = switchboard_http::with_credentials(self.authorizer.as_deref(), builder);
        if let Some(origin) = &request.origin {
            builder = builder.header("origin", origin);
        }
        if let Some(session) = &request.session {
            builder = builder.header("mcp-session-id", session);
        }
        if request.modern {
            let method = request
                .body
                .as_ref()
                .and_then(|b| b.get("method"))
                .and_then(Value::as_str)
                .unwrap_or("");
            builder = builder
                .header("mcp-protocol-version", MODERN_VERSION)
                .header("mcp-method", method);
        } else if let Some(version) = &request.protocol_version {
            builder = builder.header("mcp-protocol-version", version);
        }
        for (name, value) in &request.exact_headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
    }

    /// Sends a request and reads its answer, within the deadline.
    pub(crate) async fn send(&self, request: &RawRequest) -> RawAnswer {
        let started = Instant::now();
        let deadline = self.timeout;
        let exchange = async {
            let response = match self.builder(request).send().await {
                Ok(response) => response,
                Err(error) => return RawAnswer::failed(error_chain(&error), started.elapsed()),
            };
            let mut answer = head_of(&response, started);
            let (message, excerpt) = read_message(response, &answer.content_type).await;
            answer.message = message;
            answer.excerpt = excerpt;
            answer.elapsed = started.elapsed();
            answer
        };
        match tokio::time::timeout(deadline, exchange).await {
            Ok(answer) => answer,
            Err(_) => RawAnswer::failed(
                format!("no complete answer within {} ms", deadline.as_millis()),
                started.elapsed(),
            ),
        }
    }

    /// Sends a request and returns the answer's head (within `deadline`) and the open
    /// response, for reading an event stream as it arrives.
    pub(crate) async fn open(
        &self,
        request: &RawRequest,
        deadline: Duration,
    ) -> Result<(RawAnswer, reqwest::Response), RawAnswer> {
        let started = Instant::now();
        match tokio::time::timeout(deadline, self.builder(request).send()).await {
            Ok(Ok(response)) => Ok((head_of(&response, started), response)),
            Ok(Err(error)) => Err(RawAnswer::failed(error_chain(&error), started.elapsed())),
            Err(_) => Err(RawAnswer::failed(
                format!("no answer within {} ms", deadline.as_millis()),
                started.elapsed(),
            )),
        }
    }
}

/// Most bytes of an answer [`RawHttp::send_verbatim`] reads.
const VERBATIM_BYTES: usize = 64 * 1024;

/// An HTTP/1.1 answer read off the wire: its status, media type and (unless chunked) its
/// JSON body or first event's message.
fn parse_verbatim(bytes: &[u8], elapsed: Duration) -> RawAnswer {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return RawAnswer::failed(
            format!(
                "not an HTTP answer: `{}`",
                switchboard_wire::excerpt(bytes, EXCERPT_BYTES)
            ),
            elapsed,
        );
    };
    let head = String::from_utf8_lossy(&bytes[..end]);
    let body = &bytes[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok());
    let mut content_type = String::new();
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type") {
            content_type = value.to_ascii_lowercase();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let message = if chunked {
        None
    } else if content_type.starts_with("text/event-stream") {
        let mut parser = SseParser::new(MAX_BODY_BYTES);
        parser.push(body).into_iter().find_map(|item| match item {
            SseItem::Event(event) => serde_json::from_str::<Value>(&event.data).ok(),
            _ => None,
        })
    } else {
        serde_json::from_slice(body).ok()
    };
    RawAnswer {
        status,
        failure: status
            .is_none()
            .then(|| "the status line could not be read".to_owned()),
        content_type,
        session_id: None,
        message,
        excerpt: switchboard_wire::excerpt(body, EXCERPT_BYTES),
        elapsed,
    }
}

/// Reads the rest of an opened answer (see [`RawHttp::open`]) into it.
pub(crate) async fn finish(mut head: RawAnswer, response: reqwest::Response) -> RawAnswer {
    let started = Instant::now()
        .checked_sub(head.elapsed)
        .unwrap_or_else(Instant::now);
    let (message, excerpt) = read_message(response, &head.content_type).await;
    head.message = message;
    head.excerpt = excerpt;
    head.elapsed = started.elapsed();
    head
}

/// The JSON-RPC messages of an event stream, as they arrive, up to a byte cap.
pub(crate) struct EventStream {
    response: reqwest::Response,
    parser: SseParser,
    pending: std::collections::VecDeque<Value>,
    bytes: usize,
}

impl EventStream {
    pub(crate) fn new(response: reqwest::Response) -> EventStream {
        EventStream {
            response,
            parser: SseParser::new(MAX_BODY_BYTES),
            pending: std::collections::VecDeque::new(),
            bytes: 0,
        }
    }

    /// The next message; `None` when the stream ends, breaks or passes the cap. Events
    /// that are not JSON are skipped (the session's own checks report such servers).
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Some(message);
            }
            if self.bytes > STREAM_BYTES {
                return None;
            }
            let chunk = self.response.chunk().await.ok()??;
            self.bytes += chunk.len();
            for item in self.parser.push(&chunk) {
                if let SseItem::Event(event) = item
                    && let Ok(value) = serde_json::from_str::<Value>(&event.data)
                {
                    self.pending.push_back(value);
                }
            }
        }
    }
}

fn head_of(response: &reqwest::Response, started: Instant) -> RawAnswer {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    RawAnswer {
        status: Some(response.status().as_u16()),
        failure: None,
        content_type: header("content-type")
            .unwrap_or_default()
            .to_ascii_lowercase(),
        session_id: header("mcp-session-id"),
        message: None,
        excerpt: String::new(),
        elapsed: started.elapsed(),
    }
}

/// Reads a body: JSON whole, SSE up to the first JSON-RPC response; both capped.
async fn read_message(
    mut response: reqwest::Response,
    content_type: &str,
) -> (Option<Value>, String) {
    let sse = content_type.starts_with("text/event-stream");
    let mut parser = SseParser::new(MAX_BODY_BYTES);
    let mut body = Vec::new();
    let mut first_message = None;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) | Err(_) => break,
        };
        if body.len() < MAX_BODY_BYTES {
            body.extend_from_slice(&chunk);
        }
        if !sse {
            if body.len() >= MAX_BODY_BYTES {
                break;
            }
            continue;
        }
        for item in parser.push(&chunk) {
            let SseItem::Event(event) = item else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                continue;
            };
            let is_response = value.get("method").is_none()
                && (value.get("result").is_some() || value.get("error").is_some());
            if is_response {
                return (Some(value), switchboard_wire::excerpt(&body, EXCERPT_BYTES));
            }
            first_message.get_or_insert(value);
        }
        if body.len() >= MAX_BODY_BYTES {
            break;
        }
    }
    let message = if sse {
        first_message
    } else {
        serde_json::from_slice(&body).ok()
    };
    (message, switchboard_wire::excerpt(&body, EXCERPT_BYTES))
}

/// Evidence for one raw exchange.
pub(crate) fn exchange(
    label: impl Into<String>,
    request: &RawRequest,
    answer: &RawAnswer,
) -> Exchange {
    let mut headers = Map::new();
    if let Some(origin) = &request.origin {
        headers.insert("Origin".into(), json!(origin));
    }
    if let Some(session) = &request.session {
        headers.insert("Mcp-Session-Id".into(), json!(shorten_session(session)));
    }
    if request.modern {
        headers.insert("MCP-Protocol-Version".into(), json!(MODERN_VERSION));
    } else if let Some(version) = &request.protocol_version {
        headers.insert("MCP-Protocol-Version".into(), json!(version));
    }
    for (name, value) in &request.exact_headers {
        headers.insert(name.clone(), json!(value));
    }
    let mut sent = Map::new();
    sent.insert(
        "http".into(),
        json!(if request.delete { "DELETE" } else { "POST" }),
    );
    if !headers.is_empty() {
        sent.insert("headers".into(), Value::Object(headers));
    }
    if let Some(body) = &request.body {
        sent.insert("body".into(), capped(body, EVIDENCE_VALUE_BYTES));
    }
    let received = match answer.status {
        None => json!({"no_answer": answer.failure}),
        Some(status) => {
            let mut received = Map::new();
            received.insert("status".into(), json!(status));
            if !answer.content_type.is_empty() {
                received.insert("content_type".into(), json!(answer.content_type));
            }
            if let Some(session) = &answer.session_id {
                received.insert("mcp_session_id".into(), json!(shorten_session(session)));
            }
            match &answer.message {
                Some(message) => {
                    received.insert("body".into(), capped(message, EVIDENCE_VALUE_BYTES));
                }
                None if !answer.excerpt.is_empty() => {
                    received.insert("body".into(), json!(answer.excerpt));
                }
                None => {}
            }
            Value::Object(received)
        }
    };
    Exchange {
        label: label.into(),
        sent: Some(Value::Object(sent)),
        received: Some(received),
        elapsed: Some(answer.elapsed),
    }
}
