//! HTTP header text: values sent in `Mcp-Param-*` headers ([`header_text`],
//! [`header_value`]), the header parameters of a `tools/list` answer ([`filter_listing`]) and
//! `WWW-Authenticate: Bearer` challenges ([`BearerChallenge::parse`]).
//!
//! Input: one byte choosing the parser, then the text. Invariants: every header value made
//! is a valid HTTP header value, and the plain or base64 form gives the original text back
//! (also as the server reads it: [`header_text_decode`], [`header_carries`]); any text read
//! as a received header decodes or is refused without panicking;
//! every header name kept is a valid `Mcp-Param-` header name, unique case-insensitively
//! within its tool; a challenge's parameter names are lower-case; nothing panics.

use base64::Engine;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use switchboard_auth::BearerChallenge;
use switchboard_protocol::headers::{filter_listing, header_carries, header_value};
use switchboard_protocol::headers::{header_text, header_text_decode};

use crate::input::Input;

/// Words of header values and tool schemas, for the mutator.
pub const WORDS: &[&[u8]] = &[
    b"=?base64?",
    b"?=",
    b" ",
    b"\t",
    b"\xc3\xa9",
    b"\x7f",
    b"\"x-mcp-header\":",
    b"\"x-mcp-header\":\"Region\"",
    b"\"type\":\"string\"",
    b"\"type\":\"integer\"",
    b"\"type\":\"boolean\"",
    b"\"properties\":{",
    b"\"inputSchema\":{",
    b"\"tools\":[",
    b"9007199254740993",
    b"-9007199254740991",
    b"Bearer ",
    b"realm=\"",
    b"scope=\"a b\"",
    b"resource_metadata=\"https://h/.well-known/oauth-protected-resource\"",
    b"error=\"insufficient_scope\"",
    b", Basic realm=x",
    b"\\\"",
    b"=",
    b",",
];

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let which = input.byte() % 3;
    let rest = input.rest();
    match which {
        0 => check_header_text(&String::from_utf8_lossy(rest)),
        1 => check_listing(rest),
        _ => check_challenge(&String::from_utf8_lossy(rest)),
    }
}

fn check_header_text(text: &str) {
    let sent = header_text(text);
    assert!(
        HeaderValue::from_str(&sent).is_ok(),
        "{sent:?} (for {text:?}) is not a valid header value"
    );
    assert!(
        sent.bytes().all(|b| (0x20..0x7f).contains(&b))
            && !sent.starts_with(' ')
            && !sent.ends_with(' '),
        "{sent:?} is not visible ASCII without surrounding spaces"
    );
    let back = match sent
        .strip_prefix("=?base64?")
        .and_then(|s| s.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap_or_else(|e| panic!("{sent:?} is not valid base64: {e}"));
            String::from_utf8(bytes).unwrap_or_else(|e| panic!("{sent:?} is not UTF-8: {e}"))
        }
        None => sent.clone(),
    };
    assert_eq!(back, text, "{sent:?} does not give the text back");
    assert_eq!(
        header_text_decode(&sent).as_deref(),
        Some(text),
        "the server does not read {sent:?} back as {text:?}"
    );
    assert!(header_carries(&sent, &Value::String(text.to_owned())));
    // The text as a header someone else sent: decoded or refused, never a panic.
    let _ = header_text_decode(text);
}

fn check_listing(bytes: &[u8]) {
    let Ok(mut listing) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    every_value(&listing, &mut |value| {
        if let Some(Ok(text)) = header_value(Some(value)) {
            assert!(
                HeaderValue::from_str(&text).is_ok(),
                "{text:?} (for {value}) is not a valid header value"
            );
            assert!(
                header_carries(&text, value),
                "the server does not read {text:?} as {value}"
            );
        }
    });
    let (kept, _warnings) = filter_listing(&mut listing);
    for (tool, params) in &kept {
        for (i, (name, _property)) in params.iter().enumerate() {
            assert!(
                HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()).is_ok(),
                "tool {tool:?} kept header {name:?}, not a valid header name"
            );
            assert!(
                !params[..i]
                    .iter()
                    .any(|(other, _)| other.eq_ignore_ascii_case(name)),
                "tool {tool:?} kept header {name:?} twice"
            );
        }
    }
}

fn every_value(value: &Value, visit: &mut dyn FnMut(&Value)) {
    visit(value);
    match value {
        Value::Array(items) => items.iter().for_each(|item| every_value(item, visit)),
        Value::Object(map) => map.values().for_each(|item| every_value(item, visit)),
        _ => {}
    }
}

fn check_challenge(header: &str) {
    let Some(challenge) = BearerChallenge::parse(header) else {
        return;
    };
    for name in challenge.params.keys() {
        assert_eq!(
            name,
            &name.to_ascii_lowercase(),
            "challenge parameter {name:?} is not lower-case"
        );
    }
    let _ = challenge.scopes();
}
