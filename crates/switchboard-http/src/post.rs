//! One request's POST, and the retries it may take. Each retry is a chance the request
//! has at most once (or a few times, for authorization), held in [`Retries`]:
//! - new credentials after a 401/403 challenge (at most [`MAX_AUTHORIZATIONS`]);
//! - 2026-07-28: a 400 with -32020 (`HeaderMismatch`) re-lists the tools (their
//!   `Mcp-Param-*` headers may have changed) and sends the call again, once;
//! - legacy: a 404 to a request in a known session means the session expired (so does a
//!   400 carrying a JSON-RPC error for no request): one fresh `initialize` (with the first
//!   one's params), then the request again;
//! - legacy: `initialize` refused with 400/404/405 and no JSON-RPC body: the server may be a
//!   2024-11-05 HTTP+SSE server; open its event stream and send again, once;
//! - 2026-07-28: a response stream lost before its answer: the request is sent again under
//!   a new id (streams cannot be resumed in that era), once; its answer goes back to the
//!   client under the old id.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use switchboard_protocol::{error_codes, methods};
use switchboard_wire::{RequestId, TransportError};

use crate::answer::{Answer, AnswerHeaders, answer_from_body, answer_json, read_answer};
use crate::driver::{
    Driver, OutgoingRequest, SESSION_HEADER, Sending, VERSION_HEADER, http_status, lock,
    read_capped,
};
use switchboard_protocol::headers::header_text;

/// How many times one request may be sent again with new credentials (step-up included).
pub(crate) const MAX_AUTHORIZATIONS: u32 = 3;

/// How many `tools/list` pages a re-listing after -32020 reads at most.
const MAX_RELIST_PAGES: usize = 32;

/// The retries one request has left.
#[derive(Debug, Default)]
pub(crate) struct Retries {
    authorizations: u32,
    relisted: bool,
    reinitialized: bool,
    fell_back: bool,
    reissued: bool,
}

impl Retries {
    /// Takes one authorization retry; false when they are used up.
    fn authorize_again(&mut self) -> bool {
        let left = self.authorizations < MAX_AUTHORIZATIONS;
        self.authorizations += u32::from(left);
        left
    }

    /// Takes the one chance of `flag`; false if it was taken before.
    fn once(flag: &mut bool) -> bool {
        !std::mem::replace(flag, true)
    }
}

/// The request's `params` as text (for a re-`initialize`).
pub(crate) fn params_of(body: &[u8]) -> Option<Box<RawValue>> {
    #[derive(Deserialize)]
    struct Body {
        params: Option<Box<RawValue>>,
    }
    serde_json::from_slice::<Body>(body).ok()?.params
}

/// What the modern headers need from a request's params: the name it names and the
/// arguments of a tool call.
#[derive(Deserialize, Default)]
struct NamedParams {
    name: Option<String>,
    uri: Option<String>,
    arguments: Option<Value>,
}

fn named_params(body: &[u8]) -> NamedParams {
    #[derive(Deserialize)]
    struct Body {
        params: Option<NamedParams>,
    }
    serde_json::from_slice::<Body>(body)
        .ok()
        .and_then(|b| b.params)
        .unwrap_or_default()
}

/// The 2026-07-28 headers: the version, the method, the name a request names
/// (`Mcp-Name`), and a tool's header parameters (`Mcp-Param-*`).
fn modern_headers(
    driver: &Driver,
    request: &OutgoingRequest,
    version: &str,
    builder: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    let mut builder = builder
        .header(VERSION_HEADER, version)
        .header("mcp-method", request.method.as_str());
    let named = matches!(
        request.method.as_str(),
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    );
    if !named {
        if request.method == methods::TOOLS_LIST {
            lock(&driver.state).listings.insert(request.id.clone());
        }
        return builder;
    }
    let params = named_params(&request.body);
    let name = match request.method.as_str() {
        methods::RESOURCES_READ => params.uri.as_deref(),
        _ => params.name.as_deref(),
    };
    if let Some(name) = name {
        builder = builder.header("mcp-name", header_text(name));
    }
    if request.method == methods::TOOLS_CALL {
        let tool = name.unwrap_or("");
        let params_for_tool = lock(&driver.state)
            .param_headers
            .get(tool)
            .cloned()
            .unwrap_or_default();
        let arguments = params.arguments.as_ref();
        for (header, property) in params_for_tool {
            match switchboard_protocol::headers::header_value(
                arguments.and_then(|a| a.get(&property)),
            ) {
                Some(Ok(text)) => builder = builder.header(format!("mcp-param-{header}"), text),
                Some(Err(problem)) => {
                    tracing::warn!(peer = %driver.peer, %tool, %problem, "header parameter not sent")
                }
                None => {}
            }
        }
    }
    builder
}

/// The request's POST with the headers of its era.
fn request_builder(driver: &Driver, request: &OutgoingRequest) -> reqwest::RequestBuilder {
    let builder = driver.post(request.body.clone());
    match &request.sending {
        Sending::Modern(version) => modern_headers(driver, request, version, builder),
        Sending::Legacy => driver.with_session(builder),
    }
}

pub(crate) async fn post_request(driver: std::sync::Arc<Driver>, mut request: OutgoingRequest) {
    driver.wait_for_get_stream().await;
    let mut retries = Retries::default();
    let modern = matches!(request.sending, Sending::Modern(_));
    loop {
        if let Some(authorizer) = &driver.authorizer {
            authorizer.before_send().await;
        }
        let response = match request_builder(&driver, &request).send().await {
            Ok(response) => response,
            // Failed before any response byte: typically a pooled connection the server had
            // already closed (it restarted). One retry on a fresh connection is safe; a
            // server that is really gone fails it too.
            Err(_) => match request_builder(&driver, &request).send().await {
                Ok(response) => response,
                // Nothing accepted the connection: the server is not running there.
                Err(error) if error.is_connect() => {
                    driver.fail_unreachable(format!(
                        "could not reach {} (is the server running? start it, or correct the \
                         entry's `url`): {}",
                        driver.shown_url,
                        crate::error_chain(&error)
                    ));
                    return;
                }
                Err(error) => {
                    driver.fail(format!(
                        "could not reach {}: {}",
                        driver.shown_url,
                        crate::error_chain(&error)
                    ));
                    return;
                }
            },
        };
        let status = response.status();
        if let Some(outcome) = driver.handle_challenge(&response).await {
            match outcome {
                Ok(()) if retries.authorize_again() => continue,
                Ok(()) => driver.fail_request(
                    &request.id,
                    TransportError::Unauthorized {
                        status: http_status(status),
                        detail: format!(
                            "the server still refused after {MAX_AUTHORIZATIONS} authorizations"
                        ),
                    },
                ),
                Err(problem) => driver.fail_request(
                    &request.id,
                    TransportError::Unauthorized {
                        status: http_status(status),
                        detail: problem,
                    },
                ),
            }
            return finish(&driver, &request);
        }
        crate::authorize::note_server_nonce(driver.authorizer.as_deref(), &response);
        if modern
            && status == reqwest::StatusCode::BAD_REQUEST
            && request.method == methods::TOOLS_CALL
            && Retries::once(&mut retries.relisted)
        {
            let headers = AnswerHeaders::of(&response);
            let body = read_capped(response, driver.max_body_bytes).await;
            let mismatch = body
                .as_ref()
                .ok()
                .and_then(|b| answer_json(b))
                .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64))
                == Some(error_codes::HEADER_MISMATCH);
            if mismatch && relist_tools(&driver, &request).await {
                continue;
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            return finish(&driver, &request);
        }
        if request.method == methods::INITIALIZE
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
            && request.method != methods::INITIALIZE
            && Retries::once(&mut retries.reinitialized)
        {
            let headers = AnswerHeaders::of(&response);
            let body = read_capped(response, driver.max_body_bytes).await;
            if session_gone(status, &body) && reinitialize(&driver).await {
                continue;
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            return finish(&driver, &request);
        }
        let sse_mode = lock(&driver.state).sse_endpoint.is_some();
        if sse_mode {
            // 2024-11-05: the answer arrives on the event stream; the POST only accepts.
            if !status.is_success() {
                driver.fail_request(
                    &request.id,
                    TransportError::Refused {
                        status: Some(http_status(status)),
                        detail: format!("the server refused the message (HTTP {status})"),
                    },
                );
            }
            return finish(&driver, &request);
        }
        let legacy_refusal = matches!(status.as_u16(), 400 | 404 | 405);
        if request.method == methods::INITIALIZE && legacy_refusal && !modern {
            let headers = AnswerHeaders::of(&response);
            let body = read_capped(response, driver.max_body_bytes).await;
            let json_rpc = body
                .as_ref()
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                .is_some_and(|v| v.get("jsonrpc").is_some());
            if !json_rpc && Retries::once(&mut retries.fell_back) {
                match crate::streams::open_legacy_stream(&driver).await {
                    Ok(()) => continue,
                    Err(reason) => {
                        driver.fail_request(
                            &request.id,
                            TransportError::Refused {
                                status: Some(http_status(status)),
                                detail: format!(
                                    "the server refused `initialize` (HTTP {status}), and the HTTP+SSE (2024-11-05) fallback failed too: {reason}"
                                ),
                            },
                        );
                        return finish(&driver, &request);
                    }
                }
            }
            answer_from_body(&driver, &request.id, &headers, body).await;
            return finish(&driver, &request);
        }
        let may_reissue = modern && !retries.reissued;
        if read_answer(&driver, &request.id, response, may_reissue).await == Answer::Lost {
            retries.reissued = true;
            reissue(&driver, &mut request);
            continue;
        }
        return finish(&driver, &request);
    }
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

/// Gives the request a new id for its second send; its answer maps back to the caller's.
fn reissue(driver: &Driver, request: &mut OutgoingRequest) {
    let new_id = RequestId::String(format!("{}~reissued", request.caller_id).into());
    if let Ok(mut body) = serde_json::from_slice::<Value>(&request.body) {
        body["id"] = new_id.to_json();
        request.body = body.to_string().into_bytes();
    }
    lock(&driver.state)
        .reissued
        .insert(new_id.clone(), request.caller_id.clone());
    request.id = new_id;
}

/// A request is over: forget its task, any re-issued id and any listing mark left by an
/// answer that never came. (A re-issued `tools/list` answer is checked under the caller's
/// id, which its first send marked.)
fn finish(driver: &Driver, request: &OutgoingRequest) {
    let mut state = lock(&driver.state);
    state.in_flight.remove(&request.caller_id);
    state.reissued.remove(&request.id);
    state.listings.remove(&request.caller_id);
    state.listings.remove(&request.id);
}

/// Fetches `tools/list` again (all pages, with the call's `_meta`) to refresh the header
/// parameters of every tool; true when at least one page arrived.
async fn relist_tools(driver: &Driver, call: &OutgoingRequest) -> bool {
    #[derive(Deserialize)]
    struct CallParams {
        name: Option<String>,
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Call {
        params: Option<CallParams>,
    }
    let params = serde_json::from_slice::<Call>(&call.body)
        .ok()
        .and_then(|c| c.params);
    let tool = params
        .as_ref()
        .and_then(|p| p.name.clone())
        .unwrap_or_default();
    let call_meta = params.and_then(|p| p.meta);
    let Sending::Modern(version) = &call.sending else {
        return false;
    };
    tracing::debug!(peer = %driver.peer, %tool, "header mismatch (-32020); listing tools again");
    let mut cursor: Option<String> = None;
    for page in 0..MAX_RELIST_PAGES {
        let mut list_params = serde_json::Map::new();
        if let Some(call_meta) = &call_meta {
            list_params.insert("_meta".to_owned(), call_meta.clone());
        }
        if let Some(cursor) = &cursor {
            list_params.insert("cursor".to_owned(), Value::String(cursor.clone()));
        }
        let list = json!({"jsonrpc": "2.0", "id": format!("switchboard-relist-{page}"),
            "method": methods::TOOLS_LIST, "params": list_params});
        let sent = driver
            .post(list.to_string().into_bytes())
            .header(VERSION_HEADER, version.as_ref())
            .header("mcp-method", methods::TOOLS_LIST)
            .send()
            .await;
        let Ok(response) = sent else { return page > 0 };
        if !response.status().is_success() {
            return page > 0;
        }
        let Ok(body) = read_capped(response, driver.max_body_bytes).await else {
            return page > 0;
        };
        let Some(mut result) =
            answer_json(&body).and_then(|mut v| v.get_mut("result").map(Value::take))
        else {
            return page > 0;
        };
        let (params, warnings) = switchboard_protocol::headers::filter_listing(&mut result);
        for warning in warnings {
            tracing::warn!(peer = %driver.peer, "{warning}");
        }
        let mut state = lock(&driver.state);
        if page == 0 {
            // The called tool's old parameters go even if the new listing has none.
            state.param_headers.remove(&tool);
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

/// The session expired (404): start a fresh one with the same `initialize`, once. The
/// version the session negotiated stays: the same params ask for the same one.
async fn reinitialize(driver: &Driver) -> bool {
    let params = {
        let mut state = lock(&driver.state);
        state.session_id = None;
        state.initialize_params.clone()
    };
    let Some(params) = params else { return false };
    tracing::debug!(peer = %driver.peer, "session expired (404); initializing a new one");
    let init = json!({"jsonrpc": "2.0", "id": "switchboard-reinitialize",
        "method": methods::INITIALIZE, "params": params});
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
    use super::Retries;

    #[test]
    fn each_retry_is_taken_at_most_its_number_of_times() {
        let mut retries = Retries::default();
        let authorizations: Vec<bool> = (0..5).map(|_| retries.authorize_again()).collect();
        assert_eq!(authorizations, [true, true, true, false, false]);
        assert!(Retries::once(&mut retries.relisted));
        assert!(!Retries::once(&mut retries.relisted));
        assert!(Retries::once(&mut retries.reinitialized));
        assert!(!Retries::once(&mut retries.reinitialized));
        assert!(Retries::once(&mut retries.fell_back));
        assert!(!Retries::once(&mut retries.fell_back));
    }
}
