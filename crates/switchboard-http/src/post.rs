//! One request's POST, and the retries it may take, as an explicit state machine: each
//! [`Step`] is one short function that says which step comes next. The retries a request
//! has taken are held in [`Retries`]:
//! - new credentials after a 401/403 challenge (at most [`MAX_AUTHORIZATIONS`]);
//! - legacy: a 404 to a request in a known session means the session expired (so does a
//!   400 carrying a JSON-RPC error for no request): one fresh `initialize` (the first one
//!   as it was sent), then the request again;
//! - legacy: `initialize` refused with 400/404/405 and no JSON-RPC body: the server may be a
//!   2024-11-05 HTTP+SSE server; open its event stream and send again, once.
//!
//! What only the sender can redo fails the request with a typed error, and the session
//! decides: a 2026-07-28 400 carrying -32020 (the server refused the request's headers) is
//! [`TransportError::HeaderMismatch`]; a 2026-07-28 response stream lost before its answer
//! (such streams cannot be resumed) is [`TransportError::StreamLost`], and a 2026-07-28
//! request whose connection broke before any answer is [`TransportError::Interrupted`]
//! (either may have run: the session sends it again only when that is safe). A legacy
//! request whose connection broke so closes the connection. A POST whose connection broke
//! before any response byte is sent once more on a fresh connection at once (a pooled
//! connection a restarted server had closed looks just like it); apart from that, and from
//! a 404 that says its session is gone (the request was not run), nothing here sends a
//! request again after it may have reached the server.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_protocol::{error_codes, methods};
use switchboard_wire::{ErrorObject, TransportError};

use crate::answer::{AnswerHeaders, answer_from_body, answer_json, read_answer};
use crate::client::{RequestBuilder, Response};
use crate::driver::{
    Driver, OutgoingRequest, SESSION_HEADER, Sending, VERSION_HEADER, cached_header, http_status,
    lock, read_capped,
};

/// The header that names a 2026-07-28 request's method.
const MCP_METHOD: reqwest::header::HeaderName =
    reqwest::header::HeaderName::from_static("mcp-method");

/// How many times one request may be sent again with new credentials (step-up included).
pub(crate) const MAX_AUTHORIZATIONS: u32 = 3;

/// A retry one request takes at most once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chance {
    /// Legacy: a fresh session after the old one expired.
    Reinitialize,
    /// Legacy: the 2024-11-05 HTTP+SSE transport after `initialize` was refused.
    FallBack,
}

/// The retries one request has taken.
#[derive(Debug, Default)]
struct Retries {
    authorizations: u32,
    taken: Vec<Chance>,
}

impl Retries {
    /// Takes one authorization retry; false when they are used up.
    fn authorize_again(&mut self) -> bool {
        let left = self.authorizations < MAX_AUTHORIZATIONS;
        self.authorizations += u32::from(left);
        left
    }

    /// Takes `chance`; false if it was taken before.
    fn take(&mut self, chance: Chance) -> bool {
        let left = !self.taken.contains(&chance);
        if left {
            self.taken.push(chance);
        }
        left
    }
}

/// Where one request's POST stands.
enum Step {
    /// POST the request (again).
    Send,
    /// A response head arrived: see whether it asks for a retry.
    Judge(Response),
    /// An ordinary answer: read it and deliver what it holds.
    Read(Response),
    /// Deliver an answer whose body was read while it was judged.
    Deliver(AnswerHeaders, Result<Vec<u8>, TransportError>),
    /// Fail the request with this error.
    Fail(TransportError),
    /// The request is over.
    Finish,
}

/// One request on its way: the driver, the request, and the retries it has taken.
struct Post {
    driver: Arc<Driver>,
    request: OutgoingRequest,
    retries: Retries,
}

/// Sends one request's POST, step by step, until its answer (or its failure) is delivered.
pub(crate) async fn post_request(driver: Arc<Driver>, request: OutgoingRequest) {
    driver.wait_for_get_stream().await;
    let mut step = Step::Send;
    let mut post = Post {
        driver,
        request,
        retries: Retries::default(),
    };
    loop {
        step = match step {
            Step::Send => post.send().await,
            Step::Judge(response) => post.judge(response).await,
            Step::Read(response) => post.read(response).await,
            Step::Deliver(headers, body) => post.deliver(&headers, body).await,
            Step::Fail(error) => post.fail(error),
            Step::Finish => return post.finish(),
        };
    }
}

impl Post {
    /// The request's POST with the headers of its era and those its sender gave.
    fn builder(&self) -> RequestBuilder {
        let request = &self.request;
        let builder = self.driver.post(request.body.clone());
        let builder = match &request.sending {
            Sending::Modern(version) => {
                let builder =
                    match cached_header(&mut lock(&self.driver.state).modern_version, version) {
                        Some(header) => builder.header_value(VERSION_HEADER, header),
                        None => builder,
                    };
                builder.header(MCP_METHOD, request.method.as_str())
            }
            Sending::Legacy => self.driver.with_session(builder),
        };
        builder.headers(&request.headers)
    }

    /// Sends the POST. A send that failed before any response byte is typically a pooled
    /// connection the server had closed (it restarted between requests; the HTTP client
    /// cannot tell that from a server that died holding the request): one more try on a
    /// fresh connection, at once. A server that died holding the request and is not back
    /// that instant fails it (nothing answers), which closes the connection: a caller that
    /// waits for the server decides whether to send it again. When the second try breaks
    /// too, the request may have run: a 2026-07-28 request fails as
    /// [`TransportError::Interrupted`] (the session sends it again only when that is safe),
    /// a legacy one closes the connection as a broken response stream does.
    async fn send(&mut self) -> Step {
        if let Some(authorizer) = &self.driver.authorizer {
            authorizer.before_send().await;
        }
        let sent = match self.builder().send().await {
            Ok(response) => Ok(response),
            Err(_) => self.builder().send().await,
        };
        let driver = &self.driver;
        match sent {
            Ok(response) => Step::Judge(response),
            // Nothing accepted the connection: the server is not running there.
            Err(error) if error.is_connect() => {
                driver.fail_unreachable(format!(
                    "could not reach {} (is the server running? start it, or correct the \
                     entry's `url`): {}",
                    driver.shown_url,
                    crate::error_chain(&error)
                ));
                Step::Finish
            }
            Err(error) if matches!(self.request.sending, Sending::Modern(_)) => {
                Step::Fail(TransportError::Interrupted {
                    detail: format!(
                        "the connection to {} broke before the answer: {}",
                        driver.shown_url,
                        crate::error_chain(&error)
                    ),
                })
            }
            Err(error) => {
                driver.fail(format!(
                    "could not reach {}: {}",
                    driver.shown_url,
                    crate::error_chain(&error)
                ));
                Step::Finish
            }
        }
    }

    /// What a response head asks for: new credentials, or what its era makes of it.
    async fn judge(&mut self, response: Response) -> Step {
        if let Some(outcome) = self.driver.handle_challenge(&response).await {
            return self.after_challenge(response.status(), outcome);
        }
        crate::authorize::note_server_nonce(self.driver.authorizer.as_deref(), &response);
        match self.request.sending {
            Sending::Modern(_) => self.judge_modern(response).await,
            Sending::Legacy => self.judge_legacy(response).await,
        }
    }

    /// A 401/403 was answered: send again with the new credentials, or give up.
    fn after_challenge(
        &mut self,
        status: reqwest::StatusCode,
        outcome: Result<(), String>,
    ) -> Step {
        let detail = match outcome {
            Ok(()) if self.retries.authorize_again() => return Step::Send,
            Ok(()) => format!("the server still refused after {MAX_AUTHORIZATIONS} authorizations"),
            Err(problem) => problem,
        };
        Step::Fail(TransportError::Unauthorized {
            status: http_status(status),
            detail,
        })
    }

    /// 2026-07-28: a 400 may be a refusal of the request's headers (-32020).
    async fn judge_modern(&mut self, response: Response) -> Step {
        if response.status() != reqwest::StatusCode::BAD_REQUEST {
            return Step::Read(response);
        }
        let headers = AnswerHeaders::of(&response);
        let body = read_capped(response, self.driver.max_body_bytes).await;
        match body.as_ref().ok().and_then(|b| header_mismatch(b)) {
            Some(error) => Step::Fail(TransportError::HeaderMismatch {
                status: http_status(headers.status),
                error,
            }),
            None => Step::Deliver(headers, body),
        }
    }

    /// Legacy: the session id an `initialize` answer carries, an expired session, the
    /// 2024-11-05 transport's accepting POST, and that transport's fallback.
    async fn judge_legacy(&mut self, response: Response) -> Step {
        let driver = &self.driver;
        let initialize = self.request.method == methods::INITIALIZE;
        if initialize && let Some(id) = session_header(&response) {
            lock(&driver.state).session_id = Some(id);
        }
        let status = response.status();
        let may_be_expired = matches!(
            status,
            reqwest::StatusCode::NOT_FOUND | reqwest::StatusCode::BAD_REQUEST
        );
        let had_session = lock(&driver.state).session_id.is_some();
        if may_be_expired && had_session && !initialize && self.retries.take(Chance::Reinitialize) {
            // Rare paths are boxed: the request's task (moved whole when spawned) stays small.
            return Box::pin(self.after_expiry(response)).await;
        }
        if lock(&driver.state).sse_endpoint.is_some() {
            return accepted_by_sse_server(status);
        }
        if initialize && matches!(status.as_u16(), 400 | 404 | 405) {
            return Box::pin(self.after_refused_initialize(response)).await;
        }
        Step::Read(response)
    }

    /// A 404 (or 400) in a known session: when it says the session is gone, start a new
    /// one and send again; otherwise it is the answer.
    async fn after_expiry(&mut self, response: Response) -> Step {
        let headers = AnswerHeaders::of(&response);
        let body = read_capped(response, self.driver.max_body_bytes).await;
        if session_gone(headers.status, &body) && reinitialize(&self.driver).await {
            return Step::Send;
        }
        Step::Deliver(headers, body)
    }

    /// `initialize` refused without JSON-RPC: try the 2024-11-05 HTTP+SSE transport, once.
    async fn after_refused_initialize(&mut self, response: Response) -> Step {
        let headers = AnswerHeaders::of(&response);
        let body = read_capped(response, self.driver.max_body_bytes).await;
        let json_rpc = body
            .as_ref()
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .is_some_and(|v| v.get("jsonrpc").is_some());
        if json_rpc || !self.retries.take(Chance::FallBack) {
            return Step::Deliver(headers, body);
        }
        match crate::streams::open_legacy_stream(&self.driver).await {
            Ok(()) => Step::Send,
            Err(reason) => {
                let status = headers.status;
                Step::Fail(TransportError::Refused {
                    status: Some(http_status(status)),
                    detail: format!(
                        "the server refused `initialize` (HTTP {status}), and the HTTP+SSE (2024-11-05) fallback failed too: {reason}"
                    ),
                })
            }
        }
    }

    async fn read(&mut self, response: Response) -> Step {
        read_answer(&self.driver, &self.request, response).await;
        Step::Finish
    }

    async fn deliver(
        &mut self,
        headers: &AnswerHeaders,
        body: Result<Vec<u8>, TransportError>,
    ) -> Step {
        answer_from_body(&self.driver, &self.request.id, headers, body).await;
        Step::Finish
    }

    fn fail(&mut self, error: TransportError) -> Step {
        self.driver.fail_request(&self.request.id, error);
        Step::Finish
    }

    /// The request is over: forget its task.
    fn finish(&self) {
        lock(&self.driver.state).in_flight.remove(&self.request.id);
    }
}

/// 2024-11-05: the answer arrives on the event stream; the POST only accepts.
fn accepted_by_sse_server(status: reqwest::StatusCode) -> Step {
    if status.is_success() {
        return Step::Finish;
    }
    Step::Fail(TransportError::Refused {
        status: Some(http_status(status)),
        detail: format!("the server refused the message (HTTP {status})"),
    })
}

/// The JSON-RPC error of a body that refuses a request's headers (-32020).
fn header_mismatch(body: &[u8]) -> Option<ErrorObject> {
    let mut answer = answer_json(body)?;
    let error = answer.get_mut("error")?;
    if error.get("code").and_then(Value::as_i64) != Some(error_codes::HEADER_MISMATCH) {
        return None;
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    Some(ErrorObject {
        code: error_codes::HEADER_MISMATCH,
        message: message.to_owned(),
        data: error.get_mut("data").map(Value::take),
    })
}

/// Whether an answer to a request in a known session says the session is gone: a 404 (as
/// the specification says), or a 400 whose body is a JSON-RPC error for no request (the
/// server refused the POST before reading its message, as servers do for a session id they
/// do not know).
fn session_gone(status: reqwest::StatusCode, body: &Result<Vec<u8>, TransportError>) -> bool {
    if status == reqwest::StatusCode::NOT_FOUND {
        return true;
    }
    body.as_ref()
        .ok()
        .and_then(|b| answer_json(b))
        .is_some_and(|v| v.get("error").is_some() && v.get("id").is_none_or(Value::is_null))
}

/// The session id a response sets, as the header later requests carry: only text, and a
/// copy (a header value of a response shares the buffer it was read into).
fn session_header(response: &Response) -> Option<reqwest::header::HeaderValue> {
    let id = response.headers().get(SESSION_HEADER)?.to_str().ok()?;
    reqwest::header::HeaderValue::from_str(id).ok()
}

/// The session expired (404): start a fresh one with the same `initialize`, once (its
/// text as the session sent it: its answer is read here, so its id clashes with nothing
/// in the new session). The version the session negotiated stays: the same params ask
/// for the same one.
async fn reinitialize(driver: &Driver) -> bool {
    let initialize = {
        let mut state = lock(&driver.state);
        state.session_id = None;
        state.initialize_body.clone()
    };
    let Some(initialize) = initialize else {
        return false;
    };
    tracing::debug!(peer = %driver.peer, "session expired (404); initializing a new one");
    let Ok(response) = driver.post(initialize).send().await else {
        return false;
    };
    if let Some(id) = session_header(&response) {
        lock(&driver.state).session_id = Some(id);
    }
    let Ok(body) = read_capped(response, driver.max_body_bytes).await else {
        return false;
    };
    if answer_json(&body).is_none_or(|v| v.get("result").is_none()) {
        return false;
    }
    let initialized = json!({"jsonrpc": "2.0", "method": methods::INITIALIZED});
    driver
        .with_session(driver.post(initialized.to_string().into_bytes()))
        .send()
        .await
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::{Chance, Retries};

    #[test]
    fn each_retry_is_taken_at_most_its_number_of_times() {
        let mut retries = Retries::default();
        let authorizations: Vec<bool> = (0..5).map(|_| retries.authorize_again()).collect();
        assert_eq!(authorizations, [true, true, true, false, false]);
        for chance in [Chance::Reinitialize, Chance::FallBack] {
            assert!(retries.take(chance), "{chance:?}");
            assert!(!retries.take(chance), "{chance:?}");
        }
    }
}
