//! One HTTP request: the path and method, the guard, the body (capped in size and time),
//! the era, the session, then the core's routing and the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_LENGTH, HeaderValue};
use hyper::{HeaderMap, Method, Request, StatusCode};
use serde_json::{Value, json};
use switchboard_protocol::{Era, methods};
use switchboard_wire::codes::{INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR};
use switchboard_wire::{ErrorObject, MalformedKind, Message, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::clients::{self, Limit, Ticket};
use super::headers::{self, PostEra, SESSION_ID};
use super::reply::{self, Reply};
use super::resume;
use super::sessions::{OpenError, RegisterError, Session};
use super::{HEALTH_PATH, MCP_PATH, Shared, streams};
use crate::core::route::{self, Routed};
use crate::core::{
    Answer, ClientFacts, ClientIdentity, QUESTION_BUFFER, REQUEST_NOTIFICATION_BUFFER,
    RequestContext, ServerNotification, ServiceRequest, empty_result, finish,
};
use crate::stdio::codes::BUSY;

/// The longest `initialize` and `server/discover` wait for the service's instructions.
const INSTRUCTIONS_WAIT: Duration = Duration::from_secs(10);

/// The header a resuming GET names its last event in.
const LAST_EVENT_ID: &str = "last-event-id";

/// Where the protected-resource metadata lives (RFC 9728; also with the endpoint's path).
const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// The protected-resource metadata, when the server is an OAuth resource (else 404).
fn protected_resource(shared: &Shared, request: &Request<Incoming>) -> Reply {
    if let Err(refused) = shared.guard.admit_origin(request.headers()) {
        return refused;
    }
    let suffix = &request.uri().path()[PROTECTED_RESOURCE_PATH.len()..];
    match shared.guard.oauth() {
        Some(oauth) if suffix.is_empty() || suffix == MCP_PATH => {
            reply::json_document(StatusCode::OK, &oauth.metadata())
        }
        _ => reply::text(
            StatusCode::NOT_FOUND,
            "not found; the MCP endpoint is /mcp\n",
        ),
    }
}

/// Answers one HTTP request that came on the connection of `ticket`.
pub(super) async fn respond(
    shared: Arc<Shared>,
    ticket: &Ticket,
    request: Request<Incoming>,
) -> Reply {
    match (request.uri().path(), request.method()) {
        (HEALTH_PATH, &Method::GET | &Method::HEAD) => health(&shared, &request),
        (MCP_PATH, _) => mcp(shared, ticket, request, None).await,
        (path, _) if path.starts_with(PROFILE_PREFIX) => {
            let name = &path[PROFILE_PREFIX.len()..];
            if is_endpoint_name(name) {
                let endpoint = Some(Arc::from(name));
                mcp(shared, ticket, request, endpoint).await
            } else {
                no_such_endpoint()
            }
        }
        (path, &Method::GET) if path.starts_with(PROTECTED_RESOURCE_PATH) => {
            protected_resource(&shared, &request)
        }
        _ => reply::text(
            StatusCode::NOT_FOUND,
            "not found; the MCP endpoint is /mcp\n",
        ),
    }
}

/// `/healthz`: `ok` (503 `draining` once the drain began) for plain checkers; with
/// `?detail` or `Accept: application/json`, a JSON document with the limits, the current
/// counts, and the refusals and evictions so far.
fn health(shared: &Shared, request: &Request<Incoming>) -> Reply {
    let draining = shared.drain.is_cancelled();
    let status = if draining {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let detailed = request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "detail" || pair.starts_with("detail="))
    }) || request
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    if !detailed {
        return match draining {
            true => reply::text(status, "draining\n"),
            false => reply::text(status, "ok\n"),
        };
    }
    let mut current = shared.clients.counts();
    current["sessions"] = json!(shared.sessions.count());
    current["requests_in_flight"] = json!(shared.in_flight.load(Ordering::Relaxed));
    current["listen_streams"] = json!(shared.listens.load(Ordering::Relaxed));
    let mut document = json!({
        "status": if draining { "draining" } else { "ok" },
        "limits": limits_json(&shared.limits),
        "current": current,
    });
    if let (Some(document), Value::Object(tally)) =
        (document.as_object_mut(), shared.clients.tally())
    {
        document.extend(tally);
    }
    reply::json_document(status, &document)
}

/// The limits, as `/healthz?detail` shows them (durations in milliseconds).
fn limits_json(limits: &super::HttpLimits) -> Value {
    let millis = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    json!({
        "max_body_bytes": limits.max_body_bytes,
        "max_sessions": limits.max_sessions,
        "max_sessions_per_client": limits.max_sessions_per_client,
        "max_in_flight": limits.max_in_flight,
        "max_in_flight_per_client": limits.max_in_flight_per_client,
        "max_in_flight_per_session": limits.max_in_flight_per_session,
        "max_listen_streams": limits.max_listen_streams,
        "max_connections": limits.max_connections,
        "max_connections_per_client": limits.max_connections_per_client,
        "max_streams_per_client": limits.max_streams_per_client,
        "max_unauthenticated_connections": limits.max_unauthenticated_connections,
        "max_unauthenticated_per_client": limits.max_unauthenticated_per_client,
        "unauthenticated_timeout_ms": millis(limits.unauthenticated_timeout),
        "session_idle_ms": millis(limits.session_idle),
        "header_read_timeout_ms": millis(limits.header_read_timeout),
        "body_read_timeout_ms": millis(limits.body_read_timeout),
        "requests_per_second_per_client": limits.requests_per_second_per_client,
        "request_burst_per_client": limits.request_burst_per_client,
    })
}

/// 404 for an endpoint path the server does not serve.
fn no_such_endpoint() -> Reply {
    reply::text(
        StatusCode::NOT_FOUND,
        "no such endpoint: this server serves /mcp and the profiles its operator configured at /mcp/<profile>\n",
    )
}

/// Where profiles are served: `/mcp/<profile>`.
const PROFILE_PREFIX: &str = "/mcp/";

/// A profile's name as a path may carry it: 1 to 64 ASCII letters, digits, `-` and `_`.
fn is_endpoint_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// Who asks, and at which endpoint (`None`: `/mcp`; a profile's name for `/mcp/<profile>`).
#[derive(Debug, Clone)]
struct Caller {
    identity: ClientIdentity,
    endpoint: Option<Arc<str>>,
}

async fn mcp(
    shared: Arc<Shared>,
    ticket: &Ticket,
    request: Request<Incoming>,
    endpoint: Option<Arc<str>>,
) -> Reply {
    let identity = match shared.guard.admit(request.headers(), ticket.peer()).await {
        Ok(identity) => identity,
        Err(refused) => return refused,
    };
    if let Err(refused) = ticket.authenticated(&identity) {
        return refused;
    }
    // Which profiles exist is said only to a client that passed the guard.
    if let Some(name) = endpoint.as_deref()
        && !shared.service.serves_endpoint(name)
    {
        return no_such_endpoint();
    }
    if shared.drain.is_cancelled() {
        return busy(
            None,
            "the server is shutting down; try again elsewhere or later",
        );
    }
    if let Some(Err(retry)) = shared
        .request_rate
        .as_ref()
        .map(|rate| rate.check(&identity))
    {
        return clients::over_rate(&shared.limits, &shared.clients.tally, retry);
    }
    match *request.method() {
        Method::POST => post(shared, Caller { identity, endpoint }, request).await,
        Method::GET => get(&shared, &Caller { identity, endpoint }, request.headers()),
        Method::DELETE => delete(&shared, &Caller { identity, endpoint }, request.headers()),
        _ => not_allowed(Era::Legacy),
    }
}

/// 405: a method the endpoint does not take (in the era the request speaks).
fn not_allowed(era: Era) -> Reply {
    let (allow, message) = match era {
        Era::Modern => (
            "POST",
            "2026-07-28 has no sessions: the MCP endpoint takes POST only (GET and DELETE are for sessions of earlier versions)",
        ),
        Era::Legacy => (
            "GET, POST, DELETE",
            "the MCP endpoint takes POST, and GET and DELETE for sessions",
        ),
    };
    let mut reply = reply::refusal(StatusCode::METHOD_NOT_ALLOWED, message);
    reply
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    reply
}

fn busy(id: Option<&RequestId>, message: &str) -> Reply {
    reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        &ErrorObject::new(BUSY, message),
    )
}

/// Why a body could not be read.
enum BodyError {
    TooLarge,
    Slow,
    Broken,
}

/// Reads a body up to the cap. A body over it is read on (and dropped) up to twice the cap,
/// so that a client still sending it reads the 413 rather than a broken connection; a body
/// declared larger than that is refused at once.
async fn read_body(
    shared: &Shared,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Vec<u8>, BodyError> {
    let cap = shared.limits.max_body_bytes;
    let drain_cap = cap.saturating_mul(2);
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > drain_cap as u64) {
        return Err(BodyError::TooLarge);
    }
    let traffic = shared.traffic.clone();
    let read = async move {
        let mut body = body;
        let mut kept = Vec::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return Err(BodyError::Broken);
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            traffic.read(data.len());
            if seen > drain_cap {
                return Err(BodyError::TooLarge);
            }
            if seen <= cap {
                kept.extend_from_slice(&data);
            }
        }
        if seen > cap {
            return Err(BodyError::TooLarge);
        }
        Ok(kept)
    };
    tokio::time::timeout(shared.limits.body_read_timeout, read)
        .await
        .unwrap_or(Err(BodyError::Slow))
}

async fn post(shared: Arc<Shared>, caller: Caller, request: Request<Incoming>) -> Reply {
    let (parts, body) = request.into_parts();
    let bytes = match read_body(&shared, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => {
            return reply::refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the request body is larger than this server's {}-byte limit",
                    shared.limits.max_body_bytes
                ),
            );
        }
        Err(BodyError::Slow) => {
            return reply::refusal(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time",
            );
        }
        Err(BodyError::Broken) => {
            return reply::refusal(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    let mut message = match switchboard_wire::decode(&bytes) {
        Ok(message) => message,
        Err(malformed) => {
            let (code, text) = match &malformed.kind {
                MalformedKind::Batch => (
                    INVALID_REQUEST,
                    "batches are not accepted: POST one JSON-RPC message per request".to_owned(),
                ),
                MalformedKind::InvalidUtf8
                | MalformedKind::NotJson
                | MalformedKind::InvalidJson(_) => {
                    (PARSE_ERROR, format!("the body is not JSON: {malformed}"))
                }
                _ => (
                    INVALID_REQUEST,
                    format!("the body is not a JSON-RPC message: {malformed}"),
                ),
            };
            return reply::error(
                StatusCode::BAD_REQUEST,
                malformed.request_id(),
                &ErrorObject::new(code, text),
            );
        }
    };
    super::trace_context::carry_into_meta(&parts.headers, &mut message);
    let era = match headers::era(&parts.headers, &message) {
        Ok(era) => era,
        Err(refusal) => {
            let id = match &message {
                Message::Request(request) => Some(&request.id),
                _ => None,
            };
            return reply::refused(id, &refusal);
        }
    };
    match era {
        PostEra::Modern => modern(shared, caller, &parts.headers, message).await,
        PostEra::Legacy(version) => {
            let request = LegacyPost {
                caller,
                version,
                message,
            };
            legacy(shared, &parts.headers, request).await
        }
    }
}

async fn modern(
    shared: Arc<Shared>,
    caller: Caller,
    headers: &HeaderMap,
    message: Message,
) -> Reply {
    let request = match message {
        // The 2026-07-28 protocol has no client notifications over HTTP; one is accepted
        // and has no effect.
        Message::Notification(_) => return reply::empty(StatusCode::ACCEPTED),
        Message::Response(_) => {
            return reply::refusal(
                StatusCode::BAD_REQUEST,
                "this server sends no requests, so it takes no responses",
            );
        }
        Message::Request(request) => request,
    };
    let endpoint = caller.endpoint.clone();
    let header_params = |tool: &str| shared.service.header_params(tool, endpoint.as_deref());
    if let Err(refusal) = headers::check_modern(headers, &request, &header_params) {
        return reply::refused(Some(&request.id), &refusal);
    }
    route_and_answer(shared, request, Asker::Modern(caller)).await
}

/// The session a legacy request names: `Err` with the answer when it names none (400) or
/// one that is not live (404) or not the identity's (404: another client's session is
/// none of its business), or names it under another version (400).
fn session_of(
    shared: &Shared,
    caller: &Caller,
    headers: &HeaderMap,
    version: Option<&str>,
) -> Result<Arc<Session>, Reply> {
    let Some(id) = headers.get(SESSION_ID) else {
        return Err(reply::refusal(
            StatusCode::BAD_REQUEST,
            "missing the `Mcp-Session-Id` header: open a session with `initialize` first (sent without one)",
        ));
    };
    let session = id
        .to_str()
        .ok()
        .and_then(|id| shared.sessions.get(id.trim()))
        .filter(|session| {
            session.identity() == &caller.identity && session.facts().endpoint == caller.endpoint
        });
    let Some(session) = session else {
        return Err(reply::refusal(
            StatusCode::NOT_FOUND,
            "no such session (it ended, expired, or was never opened here): start a new one with `initialize`",
        ));
    };
    // An unsupported version is refused (400, as the transport asks); another version we
    // speak than the one negotiated is served under the negotiated one (the 2025 clients
    // of the official suite send one), said in the log.
    if let Some(version) = version
        && version != session.version()
    {
        if !switchboard_protocol::LEGACY_VERSIONS.contains(&version) {
            return Err(reply::refusal(
                StatusCode::BAD_REQUEST,
                &format!(
                    "the `MCP-Protocol-Version` header ({}) is not a version this server speaks; this session negotiated {}",
                    switchboard_text::peer_text::PeerText(version),
                    session.version()
                ),
            ));
        }
        tracing::debug!(
            header = version,
            negotiated = session.version(),
            "a session request names another supported version; served under the negotiated one"
        );
    }
    Ok(session)
}

/// A legacy POST, read.
struct LegacyPost {
    caller: Caller,
    /// The `MCP-Protocol-Version` header's version, if sent.
    version: Option<String>,
    message: Message,
}

async fn legacy(shared: Arc<Shared>, headers: &HeaderMap, post: LegacyPost) -> Reply {
    let LegacyPost {
        caller,
        version,
        message,
    } = post;
    if let Message::Request(request) = &message
        && request.method == methods::INITIALIZE
        && !headers.contains_key(SESSION_ID)
    {
        let Message::Request(request) = message else {
            return reply::refusal(StatusCode::BAD_REQUEST, "not a request");
        };
        return initialize(&shared, caller, request).await;
    }
    let session = match session_of(&shared, &caller, headers, version.as_deref()) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    match message {
        Message::Notification(notification) => {
            if notification.method == methods::CANCELLED
                && let Some(id) = notification
                    .params
                    .as_ref()
                    .and_then(|params| params.get("requestId"))
                    .and_then(RequestId::from_json)
            {
                session.cancel(&id);
            }
            reply::empty(StatusCode::ACCEPTED)
        }
        Message::Response(response) => {
            let answered = response
                .id
                .as_ref()
                .is_some_and(|id| session.answer_question(id, response.outcome));
            if !answered {
                tracing::debug!(id = ?response.id, "a client answer to no open question (answered already, withdrawn, or never asked)");
            }
            reply::empty(StatusCode::ACCEPTED)
        }
        Message::Request(request) => {
            if request.method == methods::INITIALIZE {
                return reply::error(
                    StatusCode::BAD_REQUEST,
                    Some(&request.id),
                    &ErrorObject::new(
                        INVALID_REQUEST,
                        "this session is initialized already; to start a new one, send `initialize` without `Mcp-Session-Id`",
                    ),
                );
            }
            route_and_answer(shared, request, Asker::Session(session, caller)).await
        }
    }
}

/// Who asks: a modern client, or a legacy session with the identity of this request's
/// credential (the session's own, as `session_of` checked, but with what the credential
/// grants now: a token refreshed with fewer scopes is judged by them).
enum Asker {
    Modern(Caller),
    Session(Arc<Session>, Caller),
}

/// Routes a request (in its session, if it is legacy) and answers it.
async fn route_and_answer(
    shared: Arc<Shared>,
    request: switchboard_wire::Request,
    asker: Asker,
) -> Reply {
    let (session, caller) = match asker {
        Asker::Modern(caller) => (None, caller),
        Asker::Session(session, caller) => (Some(session), caller),
    };
    let facts = session.as_ref().map(|session| session.facts());
    let mut routed = route::route(
        &request.method,
        request.params,
        facts.as_ref(),
        shared.info().capabilities,
    );
    routed.set_caller(caller.identity, caller.endpoint);
    let call = Call {
        id: request.id,
        method: request.method,
        session,
    };
    dispatch(shared, call, routed).await
}

async fn instructions(shared: &Shared) -> Option<String> {
    tokio::time::timeout(INSTRUCTIONS_WAIT, shared.service.instructions())
        .await
        .ok()
        .flatten()
}

async fn initialize(shared: &Shared, caller: Caller, request: switchboard_wire::Request) -> Reply {
    let routed = route::route(
        &request.method,
        request.params,
        None,
        shared.info().capabilities,
    );
    let init = match routed {
        Routed::Initialize(init) => init,
        Routed::Refused(refusal) => {
            return reply::refused(Some(&request.id), &refusal);
        }
        _ => {
            return reply::error(
                StatusCode::BAD_REQUEST,
                Some(&request.id),
                &ErrorObject::new(INVALID_REQUEST, "`initialize` could not be read"),
            );
        }
    };
    let negotiated = finish::negotiate(init.requested.as_deref());
    // The instructions first: the identity is read after their wait (a gateway fronting one
    // server takes on its identity once it is up).
    let instructions = instructions(shared).await;
    let result = finish::initialize_result(shared.info(), negotiated, instructions);
    let facts = ClientFacts {
        identity: caller.identity,
        endpoint: caller.endpoint,
        ..init.facts(negotiated)
    };
    let session = match shared.sessions.open(facts) {
        Ok(session) => session,
        Err(OpenError::Full) => {
            return clients::over_limit(
                &shared.limits,
                Limit::Sessions,
                Some(&request.id),
                "every session of this server is busy; try again shortly",
            );
        }
        Err(OpenError::ClientFull) => {
            return clients::over_limit(
                &shared.limits,
                Limit::SessionsPerClient,
                Some(&request.id),
                "every session this client may have is busy; end one (DELETE) or wait for one to finish",
            );
        }
        Err(OpenError::NoRandomness) => {
            return reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&request.id),
                &ErrorObject::new(
                    INTERNAL_ERROR,
                    "no session id could be made (the system's random source failed)",
                ),
            );
        }
    };
    let mut answer = reply::result(&request.id, &result);
    reply::set_header(&mut answer, SESSION_ID, session.id());
    answer
}

/// The session a GET or DELETE names. 2026-07-28 has no sessions: a request in it gets
/// 405.
fn session_of_bodyless(
    shared: &Shared,
    caller: &Caller,
    headers: &HeaderMap,
) -> Result<Arc<Session>, Reply> {
    headers::single_standard_headers(headers).map_err(|refusal| reply::refused(None, &refusal))?;
    let version = headers
        .get(headers::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    if version.is_some_and(|v| switchboard_protocol::MODERN_VERSIONS.contains(&v)) {
        return Err(not_allowed(Era::Modern));
    }
    session_of(shared, caller, headers, version)
}

fn get(shared: &Arc<Shared>, caller: &Caller, headers: &HeaderMap) -> Reply {
    let session = match session_of_bodyless(shared, caller, headers) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    if let Some(last) = headers.get(LAST_EVENT_ID) {
        return resume_stream(shared, &session, last);
    }
    let slot = match shared.clients.hold(&caller.identity, clients::Held::Stream) {
        Ok(slot) => slot,
        Err(limit) => {
            return clients::over_limit(
                &shared.limits,
                limit,
                None,
                "this client has as many event streams open as one client may; close one",
            );
        }
    };
    if !session.claim_stream() {
        return reply::refusal(
            StatusCode::CONFLICT,
            "this session's GET stream is open already (one per session)",
        );
    }
    streams::session_stream(shared.clone(), session, slot)
}

/// A GET with `Last-Event-ID`: resumes the request stream that event belongs to, from the
/// event after it.
fn resume_stream(shared: &Shared, session: &Session, last: &HeaderValue) -> Reply {
    let Some((stream, after)) = last.to_str().ok().and_then(resume::parse_event_id) else {
        return reply::refusal(
            StatusCode::BAD_REQUEST,
            "`Last-Event-ID` is not an event id of this server (`<stream>-<number>`)",
        );
    };
    let (writer, reply) = reply::event_stream(shared.limits.stream_write_timeout);
    match session.resume(stream, resume::Resume { after, writer }) {
        Ok(()) => reply,
        Err(_) => reply::refusal(
            StatusCode::NOT_FOUND,
            "no stream of this session to resume from that event (its request was answered \
             and the answer taken, or it was never opened here)",
        ),
    }
}

fn delete(shared: &Shared, caller: &Caller, headers: &HeaderMap) -> Reply {
    match session_of_bodyless(shared, caller, headers) {
        Ok(session) => {
            shared.sessions.end(session.id());
            reply::empty(StatusCode::NO_CONTENT)
        }
        Err(refused) => refused,
    }
}

/// A request on its way to an answer.
pub(super) struct Call {
    pub(super) id: RequestId,
    pub(super) method: String,
    /// The legacy session it belongs to.
    pub(super) session: Option<Arc<Session>>,
}

async fn dispatch(shared: Arc<Shared>, call: Call, routed: Routed) -> Reply {
    let era = if call.session.is_some() {
        Era::Legacy
    } else {
        Era::Modern
    };
    match routed {
        Routed::Refused(refusal) => reply::refused(Some(&call.id), &refusal),
        Routed::Initialize(_) => reply::error(
            StatusCode::BAD_REQUEST,
            Some(&call.id),
            &ErrorObject::new(
                INVALID_REQUEST,
                "`initialize` opens a session; send it without `Mcp-Session-Id`",
            ),
        ),
        Routed::Ping => reply::result(&call.id, &empty_result()),
        Routed::SetLogLevel(level) => {
            if let Some(session) = &call.session {
                session.set_log_level(level);
            }
            reply::result(&call.id, &empty_result())
        }
        Routed::Discover(facts) => {
            let instructions = instructions(&shared).await;
            let result = finish::discover_result(shared.info(), instructions);
            let answer =
                finish::finish(Ok(result), methods::SERVER_DISCOVER, &facts, shared.info());
            reply::answer(&call.id, &answer, era)
        }
        Routed::Listen { filter, facts } => streams::listen_stream(shared, call.id, filter, facts),
        Routed::Serve {
            request,
            facts,
            meta,
        } => {
            serve(
                shared,
                call,
                Served {
                    request,
                    facts,
                    meta,
                },
            )
            .await
        }
    }
}

/// What the service is asked.
struct Served {
    request: ServiceRequest,
    facts: ClientFacts,
    meta: Option<serde_json::Map<String, Value>>,
}

/// A request counted in flight until dropped (and, in a session, registered there).
pub(super) struct InFlight {
    total: Arc<AtomicUsize>,
    /// The client's count of its requests in flight.
    _client: clients::HeldSlot,
    session: Option<(Arc<Session>, RequestId)>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.total.fetch_sub(1, Ordering::Relaxed);
        if let Some((session, id)) = &self.session {
            session.unregister(id);
        }
    }
}

/// How a handled request ended, for the HTTP side.
pub(super) enum Outcome {
    /// Its answer (or the shutdown's error).
    Answer(Answer),
    /// The client cancelled it (legacy): nothing is sent.
    Cancelled,
}

async fn serve(shared: Arc<Shared>, call: Call, served: Served) -> Reply {
    let Call {
        id,
        method,
        session,
    } = call;
    // The client's own share first: one client over it is refused before it takes any
    // of everyone's.
    let client = match shared
        .clients
        .hold(&served.facts.identity, clients::Held::Request)
    {
        Ok(slot) => slot,
        Err(limit) => {
            return clients::over_limit(
                &shared.limits,
                limit,
                Some(&id),
                "this client has as many requests in flight as one client may; wait for an answer",
            );
        }
    };
    if shared.in_flight.fetch_add(1, Ordering::Relaxed) >= shared.limits.max_in_flight {
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        shared.clients.tally.refused(Limit::InFlight);
        return busy(
            Some(&id),
            "this server has as many requests in flight as it allows; try again shortly",
        );
    }
    let mut in_flight = InFlight {
        total: shared.in_flight.clone(),
        _client: client,
        session: None,
    };
    let cancel = shared.stop.child_token();
    if let Some(session) = &session {
        // Once per session at the service: a repeated subscription, or an unsubscription
        // of what the session does not follow, is answered here.
        let settled = match &served.request {
            ServiceRequest::Subscribe { uri } => session.subscribed(uri),
            ServiceRequest::Unsubscribe { uri } => !session.subscribed(uri),
            _ => false,
        };
        if settled {
            let answer = finish::finish(Ok(empty_result()), &method, &served.facts, shared.info());
            return reply::answer(&id, &answer, Era::Legacy);
        }
        if let ServiceRequest::Subscribe { .. } = &served.request
            && !session.can_subscribe()
        {
            return reply::error(
                StatusCode::OK,
                Some(&id),
                &ErrorObject::new(
                    switchboard_wire::codes::INVALID_PARAMS,
                    format!(
                        "this session follows {} resources already, the most it may",
                        crate::core::listen::MAX_RESOURCE_SUBSCRIPTIONS
                    ),
                ),
            );
        }
        match session.register(id.clone(), cancel.clone()) {
            Ok(()) => in_flight.session = Some((session.clone(), id.clone())),
            Err(RegisterError::Busy) => {
                shared.clients.tally.refused(Limit::InFlightPerSession);
                return busy(
                    Some(&id),
                    "this session has as many requests in flight as it allows; try again shortly",
                );
            }
            Err(RegisterError::Duplicate) => {
                return reply::error(
                    StatusCode::BAD_REQUEST,
                    Some(&id),
                    &ErrorObject::new(
                        INVALID_REQUEST,
                        "a request with this id is in flight in this session already",
                    ),
                );
            }
        }
    }
    let era = served.facts.era;
    let (notify, notifications) = mpsc::channel(REQUEST_NOTIFICATION_BUFFER);
    let (answered, outcome) = oneshot::channel();
    let mut context = RequestContext::new(
        served.facts.clone(),
        cancel.clone(),
        served.meta,
        Some(notify),
    );
    let questions = match &session {
        Some(session) if era == Era::Legacy => {
            let (asks, asked) = mpsc::channel(QUESTION_BUFFER);
            context = context.with_questions(asks, session.key());
            Some(streams::Questions {
                asked,
                session: session.clone(),
            })
        }
        _ => None,
    };
    let subscription = match &served.request {
        ServiceRequest::Subscribe { uri } => Some((true, uri.clone())),
        ServiceRequest::Unsubscribe { uri } => Some((false, uri.clone())),
        _ => None,
    };
    let handler = shared.service.handle(served.request, context);
    let task = Handling {
        shared: shared.clone(),
        method: method.clone(),
        facts: served.facts,
        cancel: cancel.clone(),
        session: session.clone(),
        subscription,
        in_flight,
        answered,
    };
    shared.tasks.spawn(task.run(handler));
    streams::answer_request(
        shared,
        streams::Pending {
            id,
            era,
            cancel,
            notifications,
            questions,
            outcome,
        },
    )
    .await
}

/// The task that runs one handler.
struct Handling {
    shared: Arc<Shared>,
    method: String,
    facts: ClientFacts,
    cancel: CancellationToken,
    session: Option<Arc<Session>>,
    /// A (un)subscription to record in the session once the service accepted it.
    subscription: Option<(bool, String)>,
    in_flight: InFlight,
    answered: oneshot::Sender<Outcome>,
}

impl Handling {
    async fn run(self, handler: crate::core::ServiceFuture<Answer>) {
        let Handling {
            shared,
            method,
            facts,
            cancel,
            session,
            subscription,
            in_flight,
            answered,
        } = self;
        let mut handler = handler;
        // Biased: at shutdown the request's own token fires with the stop, and the
        // shutdown's error (not whatever the cancelled handler says) is the answer.
        let answer = tokio::select! {
            biased;
            () = shared.stop.cancelled() => None,
            answer = &mut handler => Some(answer),
        };
        let Some(answer) = answer else {
            let _ = answered.send(Outcome::Answer(Err(ErrorObject::new(
                INTERNAL_ERROR,
                "the server is shutting down; the request was cancelled unfinished",
            ))));
            tokio::select! {
                _ = handler => {}
                () = shared.hard_stop.cancelled() => {}
            }
            drop(in_flight);
            return;
        };
        drop(in_flight);
        if let (Ok(_), Some((subscribe, uri)), Some(session)) = (&answer, subscription, &session) {
            if subscribe {
                session.subscribe(uri);
            } else {
                session.unsubscribe(&uri);
            }
        }
        let outcome =
            if cancel.is_cancelled() && !shared.stop.is_cancelled() && facts.era == Era::Legacy {
                Outcome::Cancelled
            } else {
                Outcome::Answer(finish::finish(answer, &method, &facts, shared.info()))
            };
        let _ = answered.send(outcome);
    }
}

/// Notifications of a request, for the HTTP side.
pub(super) type Notifications = mpsc::Receiver<ServerNotification>;
