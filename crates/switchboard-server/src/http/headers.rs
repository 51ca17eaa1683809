//! The era of a POST and the 2026-07-28 header rules.
//!
//! `MCP-Protocol-Version` decides: a modern version → modern; a legacy version or none →
//! legacy, unless the body's `_meta` names a version (then the header is missing or
//! disagrees: -32020); an unknown version → -32022. A modern request's standard headers
//! must agree with its body: the version (`_meta` missing it: -32602), `Mcp-Method`, and
//! `Mcp-Name` for `tools/call`, `prompts/get` (`params.name`) and `resources/read`
//! (`params.uri`), read with optional whitespace trimmed and the Base64 sentinel decoded
//! (`switchboard_protocol::headers::header_text_decode`, the client's own rule read backwards), and the
//! `Mcp-Param-*` headers of the arguments a tool marks with `x-mcp-header`
//! ([`crate::core::Service::header_params`]; an absent or null argument expects none).
//! Every refusal is 400 with a JSON-RPC error body: a dual-era client that gets a 400
//! without one falls back to `initialize`.
//!
//! Each standard header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, every
//! `Mcp-Param-*`, and `Mcp-Session-Id`) may be sent once: a request that repeats one is
//! refused (-32020) in either era, whether or not an occurrence agrees with the body, since
//! a proxy in front may route on another occurrence than the one checked here.

use hyper::HeaderMap;
use serde_json::Value;
use switchboard_protocol::error_codes::HEADER_MISMATCH;
use switchboard_protocol::{LEGACY_VERSIONS, MODERN_VERSIONS, meta, methods};
use switchboard_wire::codes::INVALID_PARAMS;
use switchboard_wire::{ErrorObject, Message, Request};

use crate::core::route::Refusal;

/// `MCP-Protocol-Version`.
pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
const NAME: &str = "mcp-name";
/// `Mcp-Session-Id`.
pub(super) const SESSION_ID: &str = "mcp-session-id";

/// The era a POST is served in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PostEra {
    /// 2026-07-28 (the header's version).
    Modern,
    /// A legacy session's request; the header's version, if it sent one.
    Legacy(Option<String>),
}

fn mismatch(message: impl Into<String>) -> Refusal {
    Refusal {
        error: ErrorObject::new(HEADER_MISMATCH, message),
        http_status: 400,
    }
}

/// A header's text; `Err` when it is there but not visible ASCII.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, Refusal> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(|text| Some(text.trim_matches([' ', '\t'])))
            .map_err(|_| mismatch(format!("the `{name}` header is not visible ASCII"))),
    }
}

/// The prefix of the `Mcp-Param-*` headers.
const PARAM_PREFIX: &str = "mcp-param-";

/// `Err` when a standard header is sent more than once.
pub(super) fn single_standard_headers(headers: &HeaderMap) -> Result<(), Refusal> {
    for name in headers.keys() {
        let name = name.as_str();
        let standard = matches!(name, PROTOCOL_VERSION | METHOD | NAME | SESSION_ID)
            || name.starts_with(PARAM_PREFIX);
        if standard && headers.get_all(name).iter().nth(1).is_some() {
            return Err(mismatch(format!(
                "the `{name}` header is sent more than once; send each MCP header once"
            )));
        }
    }
    Ok(())
}

/// The body's `_meta` protocol version, if it has one (not a string: `Some(None)`).
fn body_version(message: &Message) -> Option<Option<&str>> {
    params_version(match message {
        Message::Request(request) => request.params.as_ref(),
        Message::Notification(notification) => notification.params.as_ref(),
        Message::Response(_) => None,
    })
}

fn params_version(params: Option<&Value>) -> Option<Option<&str>> {
    let version = params?.get("_meta")?.get(meta::PROTOCOL_VERSION)?;
    Some(version.as_str())
}

/// The era of a POST.
pub(super) fn era(headers: &HeaderMap, message: &Message) -> Result<PostEra, Refusal> {
    single_standard_headers(headers)?;
    let body = body_version(message);
    let Some(version) = header(headers, PROTOCOL_VERSION)? else {
        return match body {
            None => Ok(PostEra::Legacy(None)),
            Some(_) => Err(mismatch(
                "the body's `_meta` names a protocol version but the `MCP-Protocol-Version` \
                 header is missing; send it with the same version",
            )),
        };
    };
    if MODERN_VERSIONS.contains(&version) {
        return Ok(PostEra::Modern);
    }
    let known = LEGACY_VERSIONS.contains(&version);
    match body {
        Some(body) if body != Some(version) => Err(mismatch(format!(
            "the `MCP-Protocol-Version` header ({}) differs from the body's `_meta` version",
            switchboard_text::peer_text::PeerText(version)
        ))),
        _ if !known => Err(Refusal::unsupported_version(version)),
        _ => Ok(PostEra::Legacy(Some(version.to_owned()))),
    }
}

/// Checks a modern request's standard headers against its body; `header_params` gives a
/// tool's `x-mcp-header` parameters, whose `Mcp-Param-*` headers a `tools/call` must carry.
pub(super) fn check_modern(
    headers: &HeaderMap,
    request: &Request,
    header_params: &dyn Fn(&str) -> Vec<(String, String)>,
) -> Result<(), Refusal> {
    let version = header(headers, PROTOCOL_VERSION)?.unwrap_or_default();
    match params_version(request.params.as_ref()) {
        None => {
            return Err(Refusal {
                error: ErrorObject::new(
                    INVALID_PARAMS,
                    format!(
                        "missing `params._meta.{}` (required on every 2026-07-28 request)",
                        meta::PROTOCOL_VERSION
                    ),
                ),
                http_status: 400,
            });
        }
        Some(body) if body != Some(version) => {
            return Err(mismatch(format!(
                "the `MCP-Protocol-Version` header ({version}) differs from the body's `_meta` version"
            )));
        }
        Some(_) => {}
    }
    match header(headers, METHOD)? {
        None => {
            return Err(mismatch(
                "missing the `Mcp-Method` header (it must name the body's method)",
            ));
        }
        Some(method) if method != request.method => {
            return Err(mismatch(format!(
                "the `Mcp-Method` header ({}) differs from the body's method",
                switchboard_text::peer_text::PeerText(method)
            )));
        }
        Some(_) => {}
    }
    let key = match request.method.as_str() {
        methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
        methods::RESOURCES_READ => "uri",
        _ => return Ok(()),
    };
    let Some(body_name) = request
        .params
        .as_ref()
        .and_then(|params| params.get(key))
        .and_then(Value::as_str)
    else {
        // The core refuses the missing parameter (-32602).
        return Ok(());
    };
    let Some(name) = header(headers, NAME)? else {
        return Err(mismatch(format!(
            "missing the `Mcp-Name` header (it must carry `params.{key}`)"
        )));
    };
    match switchboard_protocol::headers::header_text_decode(name) {
        Some(decoded) if decoded == body_name => {}
        Some(_) => {
            return Err(mismatch(format!(
                "the `Mcp-Name` header differs from `params.{key}`"
            )));
        }
        None => {
            return Err(mismatch(
                "the `Mcp-Name` header's `=?base64?…?=` value is not Base64 of UTF-8 text",
            ));
        }
    }
    if request.method != methods::TOOLS_CALL {
        return Ok(());
    }
    let arguments = request
        .params
        .as_ref()
        .and_then(|params| params.get("arguments"));
    for (header_name, property) in header_params(body_name) {
        let value = arguments.and_then(|arguments| arguments.get(&property));
        // An absent or null argument has no header to expect.
        let Some(value) = value.filter(|value| !value.is_null()) else {
            continue;
        };
        let name = format!("{PARAM_PREFIX}{}", header_name.to_ascii_lowercase());
        let Some(sent) = header(headers, &name)? else {
            return Err(mismatch(format!(
                "missing the `Mcp-Param-{header_name}` header (the tool mirrors argument `{property}` into it)"
            )));
        };
        if !switchboard_protocol::headers::header_carries(sent, value) {
            return Err(mismatch(format!(
                "the `Mcp-Param-{header_name}` header differs from argument `{property}`"
            )));
        }
    }
    Ok(())
}
