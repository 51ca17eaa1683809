//! The W3C trace context of an HTTP request (`traceparent`, `tracestate` headers), carried
//! into the JSON-RPC request's `params._meta` when its `_meta` has none, so the service
//! reads one place for it whatever the transport (the gateway's spans take it as their
//! parent). Only values that fit their header's size are carried; whether a `traceparent`
//! is well-formed is the reader's to judge (a malformed one starts a new trace there).

use hyper::header::HeaderMap;
use serde_json::{Map, Value};
use switchboard_wire::Message;

/// The parent entry: a header, and the `_meta` key MCP's trace propagation uses.
const TRACEPARENT: &str = "traceparent";
/// The vendor entry.
const TRACESTATE: &str = "tracestate";
/// Longest `traceparent` carried (version 00 is 55 characters; later versions may add).
const MAX_TRACEPARENT: usize = 128;
/// Longest `tracestate` carried (W3C: 32 entries; 512 characters is what must be kept).
const MAX_TRACESTATE: usize = 512;

/// Puts the request's trace headers into `params._meta` of `message` (a request whose
/// params are an object or absent), unless its `_meta` has a `traceparent` of its own.
pub(super) fn carry_into_meta(headers: &HeaderMap, message: &mut Message) {
    let Message::Request(request) = message else {
        return;
    };
    let Some(traceparent) = header_text(headers, TRACEPARENT, MAX_TRACEPARENT) else {
        return;
    };
    let params = request
        .params
        .get_or_insert_with(|| Value::Object(Map::new()));
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let Some(meta) = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    else {
        return;
    };
    if meta.contains_key(TRACEPARENT) {
        return;
    }
    meta.insert(TRACEPARENT.into(), traceparent.into());
    if let Some(state) = header_text(headers, TRACESTATE, MAX_TRACESTATE) {
        meta.insert(TRACESTATE.into(), state.into());
    }
}

/// The header's one value as text, when it is printable ASCII within `cap` bytes.
fn header_text(headers: &HeaderMap, name: &str, cap: usize) -> Option<String> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() || value.len() > cap {
        return None;
    }
    let text = value.to_str().ok()?;
    text.bytes()
        .all(|byte| (0x20..0x7f).contains(&byte))
        .then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;
    use serde_json::json;
    use switchboard_wire::{Request, RequestId};

    use super::*;

    fn request(params: Option<Value>) -> Message {
        Message::Request(Request {
            id: RequestId::Number(1),
            method: "tools/call".into(),
            params,
        })
    }

    fn params(message: &Message) -> Option<&Value> {
        match message {
            Message::Request(request) => request.params.as_ref(),
            _ => None,
        }
    }

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn the_headers_go_into_meta_unless_meta_has_its_own() {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(PARENT));
        headers.insert(TRACESTATE, HeaderValue::from_static("vendor=1"));
        let mut bare = request(Some(json!({"name": "t"})));
        carry_into_meta(&headers, &mut bare);
        assert_eq!(
            params(&bare),
            Some(&json!({"name": "t", "_meta": {"traceparent": PARENT, "tracestate": "vendor=1"}}))
        );
        let mut none = request(None);
        carry_into_meta(&headers, &mut none);
        assert_eq!(
            params(&none),
            Some(&json!({"_meta": {"traceparent": PARENT, "tracestate": "vendor=1"}}))
        );
        let own = json!({"_meta": {"traceparent": "00-own"}});
        let mut owned = request(Some(own.clone()));
        carry_into_meta(&headers, &mut owned);
        assert_eq!(params(&owned), Some(&own));
    }

    #[test]
    fn oversized_or_repeated_headers_are_not_carried() {
        let mut headers = HeaderMap::new();
        let long = "0".repeat(MAX_TRACEPARENT + 1);
        headers.insert(TRACEPARENT, HeaderValue::from_str(&long).expect("ascii"));
        let mut message = request(None);
        carry_into_meta(&headers, &mut message);
        assert_eq!(params(&message), None);
        let mut headers = HeaderMap::new();
        headers.append(TRACEPARENT, HeaderValue::from_static(PARENT));
        headers.append(TRACEPARENT, HeaderValue::from_static(PARENT));
        carry_into_meta(&headers, &mut message);
        assert_eq!(params(&message), None);
    }
}
