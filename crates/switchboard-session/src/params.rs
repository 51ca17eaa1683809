//! Request parameters serialised from borrowed parts: the caller's parameters, an input
//! round's `inputResponses`/`requestState`, and the era's `_meta` (its constant part
//! rendered once per session), so that no `Value` is cloned or assembled per request.
//!
//! The bytes are those of the tree the session used to build: the caller's keys in order
//! (ours replacing theirs in place), then the input round's keys, then `_meta` with the
//! caller's own `_meta` entries kept. A call's trace context (`CallOptions::trace`) is two
//! more entries of ours (`traceparent`, `tracestate`), in every era.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_protocol::{Implementation, meta};
use switchboard_wire::{RequestId, WriteParams};

use crate::config::ForClient;

/// The constant `_meta` entries of every modern request, rendered once per session, and
/// the whole `_meta` object they make on their own (what a request without a `_meta` of
/// its caller's and without a progress token sends: written as it is, keys and all). A
/// prefix made for one request (a trace context, a gateway's client) has no whole.
#[derive(Debug, Default)]
pub(crate) struct MetaPrefix {
    entries: Vec<(&'static str, Box<RawValue>)>,
    whole: Option<Box<RawValue>>,
}

impl MetaPrefix {
    /// The modern era's protocol version, client capabilities and client info.
    pub(crate) fn modern(
        version: &str,
        client_capabilities: &Value,
        client_info: &Implementation,
    ) -> MetaPrefix {
        let raw = |value: Result<Box<RawValue>, serde_json::Error>| {
            // Strings, `Value`s and derived structs always serialise.
            value.unwrap_or_else(|_| RawValue::NULL.to_owned())
        };
        MetaPrefix::rendered_whole(vec![
            (
                meta::PROTOCOL_VERSION,
                raw(serde_json::value::to_raw_value(version)),
            ),
            (
                meta::CLIENT_CAPABILITIES,
                raw(serde_json::value::to_raw_value(client_capabilities)),
            ),
            (
                meta::CLIENT_INFO,
                raw(serde_json::value::to_raw_value(client_info)),
            ),
        ])
    }

    /// These entries, and the object they make rendered once (for a session's own
    /// entries, which every request sends).
    fn rendered_whole(entries: Vec<(&'static str, Box<RawValue>)>) -> MetaPrefix {
        let whole = (!entries.is_empty())
            .then(|| {
                let object: Vec<(&str, &RawValue)> =
                    entries.iter().map(|(k, v)| (*k, v.as_ref())).collect();
                serde_json::value::to_raw_value(&Entries(&object)).ok()
            })
            .flatten();
        MetaPrefix { entries, whole }
    }

    /// These entries for one request: written entry by entry, as rendering the whole
    /// object first would only copy it once more.
    fn for_one_request(entries: Vec<(&'static str, Box<RawValue>)>) -> MetaPrefix {
        MetaPrefix {
            entries,
            whole: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// These entries and the call's trace context after them (in every era: a legacy
    /// request's `_meta` then holds only the trace context).
    pub(crate) fn with_trace(&self, trace: &crate::config::TraceContext) -> MetaPrefix {
        let mut entries = self.entries.clone();
        for (key, value) in trace.entries() {
            if let Ok(value) = serde_json::value::to_raw_value(value) {
                entries.push((key, value));
            }
        }
        MetaPrefix::for_one_request(entries)
    }

    /// The entries for a request made for a gateway's client: its capabilities in place
    /// of the session's, and the log level it wants; none in the legacy era (where there
    /// are no entries) or when the client brings neither.
    pub(crate) fn for_client(&self, client: &ForClient) -> Option<MetaPrefix> {
        if self.is_empty() || (client.capabilities.is_none() && client.log_level.is_none()) {
            return None;
        }
        let replacement = match &client.capabilities {
            Some(capabilities) => Some(serde_json::value::to_raw_value(capabilities).ok()?),
            None => None,
        };
        let mut entries: Vec<(&'static str, Box<RawValue>)> = self
            .entries
            .iter()
            .map(|(key, value)| match &replacement {
                Some(replacement) if *key == meta::CLIENT_CAPABILITIES => {
                    (*key, replacement.clone())
                }
                _ => (*key, value.clone()),
            })
            .collect();
        if let Some(level) = &client.log_level {
            entries.push((
                meta::LOG_LEVEL,
                serde_json::value::to_raw_value(level).ok()?,
            ));
        }
        Some(MetaPrefix::for_one_request(entries))
    }
}

/// Entries serialised as one object, in their order.
struct Entries<'a>(&'a [(&'a str, &'a RawValue)]);

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// What the caller asked for, before the session's additions.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BaseParams<'a> {
    /// Any parameters; only an object gets the session's additions.
    Tree(&'a Value),
    /// `tools/call`: `{"name": …, "arguments": …}`.
    ToolCall {
        /// The tool's name.
        name: &'a str,
        /// Its arguments, if any.
        arguments: Option<&'a Value>,
    },
}

/// One input round's additions (multi round-trip requests).
#[derive(Debug)]
pub(crate) struct InputRound {
    /// `inputResponses`.
    pub(crate) responses: Value,
    /// `requestState`, if the server sent one.
    pub(crate) state: Option<Value>,
}

/// The parameters of one request, serialised as one object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestParams<'a> {
    /// The caller's parameters.
    pub(crate) base: BaseParams<'a>,
    /// The input round's additions, if this is a retry.
    pub(crate) input: Option<&'a InputRound>,
    /// The era's constant `_meta` entries (empty in the legacy era).
    pub(crate) meta: &'a MetaPrefix,
    /// The progress token, if progress is wanted.
    pub(crate) progress_token: Option<&'a RequestId>,
}

const INPUT_RESPONSES: &str = "inputResponses";
const REQUEST_STATE: &str = "requestState";
const META: &str = "_meta";

impl RequestParams<'_> {
    fn adds_meta(&self) -> bool {
        !self.meta.is_empty() || self.progress_token.is_some()
    }

    fn state(&self) -> Option<&Value> {
        self.input.and_then(|input| input.state.as_ref())
    }

    fn write_additions<M: SerializeMap>(
        &self,
        map: &mut M,
        caller_meta: Option<&Value>,
    ) -> Result<(), M::Error> {
        if let Some(input) = self.input {
            map.serialize_entry(INPUT_RESPONSES, &input.responses)?;
            if let Some(state) = self.state() {
                map.serialize_entry(REQUEST_STATE, state)?;
            }
        }
        if self.adds_meta() && caller_meta.is_none() {
            self.write_own_meta(map)?;
        }
        Ok(())
    }

    /// `_meta` when the caller sent none: ours alone (rendered once, without a token).
    fn write_own_meta<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        match (&self.meta.whole, self.progress_token) {
            (Some(whole), None) => map.serialize_entry(META, whole),
            _ => map.serialize_entry(
                META,
                &MetaObject {
                    params: self,
                    caller: None,
                },
            ),
        }
    }
}

impl Serialize for RequestParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.base {
            BaseParams::ToolCall { name, arguments } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("name", name)?;
                if let Some(arguments) = arguments {
                    map.serialize_entry("arguments", arguments)?;
                }
                self.write_additions(&mut map, None)?;
                map.end()
            }
            BaseParams::Tree(Value::Object(object)) => {
                let mut map = serializer.serialize_map(None)?;
                let mut input = self.input;
                let mut state = self.state();
                for (key, value) in object {
                    match key.as_str() {
                        INPUT_RESPONSES if input.is_some() => {
                            if let Some(round) = input.take() {
                                map.serialize_entry(key, &round.responses)?;
                            }
                        }
                        REQUEST_STATE if state.is_some() => {
                            if let Some(ours) = state.take() {
                                map.serialize_entry(key, ours)?;
                            }
                        }
                        META if self.adds_meta() => map.serialize_entry(
                            key,
                            &MetaObject {
                                params: self,
                                caller: Some(value),
                            },
                        )?,
                        _ => map.serialize_entry(key, value)?,
                    }
                }
                if let Some(round) = input {
                    map.serialize_entry(INPUT_RESPONSES, &round.responses)?;
                }
                if let Some(ours) = state {
                    map.serialize_entry(REQUEST_STATE, ours)?;
                }
                if self.adds_meta() && !object.contains_key(META) {
                    self.write_own_meta(&mut map)?;
                }
                map.end()
            }
            // The session adds nothing to parameters that are not an object.
            BaseParams::Tree(other) => other.serialize(serializer),
        }
    }
}

impl WriteParams for RequestParams<'_> {
    /// A tool call without an input round (the hot path) is written with its constant keys
    /// as bytes and its `_meta` from the prefix rendered once; everything else is
    /// serialised. The bytes are the same either way.
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let BaseParams::ToolCall { name, arguments } = self.base else {
            return serde_json::to_writer(buf, self);
        };
        if self.input.is_some() {
            return serde_json::to_writer(buf, self);
        }
        let meta_start = match (&self.meta.whole, self.progress_token) {
            _ if !self.adds_meta() => None,
            (Some(whole), None) => Some(whole.get()),
            // The rendered object without its closing brace; the token follows.
            (Some(whole), Some(_)) if whole.get().ends_with('}') => {
                Some(&whole.get()[..whole.get().len() - 1])
            }
            (None, Some(_)) if self.meta.is_empty() => Some("{"),
            _ => return serde_json::to_writer(buf, self),
        };
        buf.extend_from_slice(b"{\"name\":");
        serde_json::to_writer(&mut *buf, name)?;
        if let Some(arguments) = arguments {
            buf.extend_from_slice(b",\"arguments\":");
            serde_json::to_writer(&mut *buf, arguments)?;
        }
        if let Some(meta_start) = meta_start {
            buf.extend_from_slice(b",\"_meta\":");
            buf.extend_from_slice(meta_start.as_bytes());
            if let Some(token) = self.progress_token {
                if meta_start.len() > 1 {
                    buf.push(b',');
                }
                buf.extend_from_slice(b"\"progressToken\":");
                serde_json::to_writer(&mut *buf, token)?;
                buf.push(b'}');
            }
        }
        buf.push(b'}');
        Ok(())
    }
}

/// `_meta`: the caller's entries (ours replacing theirs in place), then ours.
struct MetaObject<'a> {
    params: &'a RequestParams<'a>,
    caller: Option<&'a Value>,
}

impl Serialize for MetaObject<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let caller = match self.caller {
            None => None,
            Some(Value::Object(caller)) => Some(caller),
            // A `_meta` that is not an object is left as the caller sent it.
            Some(other) => return other.serialize(serializer),
        };
        let ours = &self.params.meta.entries;
        let token = self.params.progress_token;
        let mut map = serializer.serialize_map(None)?;
        // One flag per entry of ours (at most three era entries, the log level and the two
        // of a trace context) and one for the token.
        let mut written = [false; 8];
        let token_slot = ours.len();
        if let Some(caller) = caller {
            for (key, value) in caller {
                if let Some(slot) = ours.iter().position(|(k, _)| *k == key.as_str()) {
                    map.serialize_entry(key, &ours[slot].1)?;
                    written[slot.min(7)] = true;
                } else if let (Some(token), meta::PROGRESS_TOKEN) = (token, key.as_str()) {
                    map.serialize_entry(key, token)?;
                    written[token_slot.min(7)] = true;
                } else {
                    map.serialize_entry(key, value)?;
                }
            }
        }
        for (slot, (key, value)) in ours.iter().enumerate() {
            if !written[slot.min(7)] {
                map.serialize_entry(key, value)?;
            }
        }
        if let Some(token) = token
            && !written[token_slot.min(7)]
        {
            map.serialize_entry(meta::PROGRESS_TOKEN, token)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;

    /// Shows the parameters as serialised, after checking that the request line's writer
    /// ([`WriteParams`]) writes the same bytes.
    fn check(params: RequestParams<'_>, expect: Expect) {
        let text = serde_json::to_string(&params).expect("serialises");
        let mut written = Vec::new();
        params.write_params(&mut written).expect("writes");
        assert_eq!(
            String::from_utf8_lossy(&written),
            text,
            "the two writers differ"
        );
        expect.assert_eq(&text);
    }

    fn info() -> Implementation {
        Implementation {
            name: "switchboard".into(),
            version: "1".into(),
            title: None,
            description: None,
            website_url: None,
        }
    }

    /// A tool call without an input round.
    fn tool_call<'a>(
        name: &'a str,
        arguments: Option<&'a Value>,
        meta: &'a MetaPrefix,
        progress_token: Option<&'a RequestId>,
    ) -> RequestParams<'a> {
        RequestParams {
            base: BaseParams::ToolCall { name, arguments },
            input: None,
            meta,
            progress_token,
        }
    }

    #[test]
    fn tool_calls_in_both_eras() {
        let arguments = json!({"text": "hi"});
        let legacy = MetaPrefix::default();
        let modern = MetaPrefix::modern("2026-07-28", &json!({}), &info());
        let traced = modern.with_trace(&crate::config::TraceContext {
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
            tracestate: None,
        });
        let (three, named, six) = (
            RequestId::from(3),
            RequestId::from("t-5"),
            RequestId::from(6),
        );
        for (params, expect) in [
            (
                tool_call("echo", Some(&arguments), &legacy, Some(&three)),
                expect![[
                    r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":3}}"#
                ]],
            ),
            (
                tool_call("say \"hi\"\n", None, &legacy, None),
                expect![[r#"{"name":"say \"hi\"\n"}"#]],
            ),
            (
                tool_call("echo", Some(&arguments), &modern, Some(&named)),
                expect![[
                    r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"1"},"progressToken":"t-5"}}"#
                ]],
            ),
            (
                tool_call("echo", Some(&arguments), &traced, Some(&six)),
                expect![[
                    r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"1"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","progressToken":6}}"#
                ]],
            ),
        ] {
            check(params, expect);
        }
        let input = InputRound {
            responses: json!({"k": {"action": "accept"}}),
            state: Some(json!("s1")),
        };
        check(
            RequestParams {
                base: BaseParams::ToolCall {
                    name: "echo",
                    arguments: None,
                },
                input: Some(&input),
                meta: &modern,
                progress_token: Some(&RequestId::from(4)),
            },
            expect![[
                r#"{"name":"echo","inputResponses":{"k":{"action":"accept"}},"requestState":"s1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"1"},"progressToken":4}}"#
            ]],
        );
    }

    /// Without a token or a `_meta` of the caller's, the session's own `_meta` goes out as
    /// rendered once: the same bytes as entry by entry.
    #[test]
    fn the_sessions_own_meta_goes_out_whole() {
        let modern = MetaPrefix::modern("2026-07-28", &json!({}), &info());
        let arguments = json!({"text": "hi"});
        check(
            tool_call("echo", Some(&arguments), &modern, None),
            expect![[
                r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"1"}}}"#
            ]],
        );
        let trace = crate::config::TraceContext {
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
            tracestate: Some("v=1".into()),
        };
        let traced = MetaPrefix::default().with_trace(&trace);
        let plain = json!({"cursor": "c"});
        check(
            RequestParams {
                base: BaseParams::Tree(&plain),
                input: None,
                meta: &traced,
                progress_token: None,
            },
            expect![[
                r#"{"cursor":"c","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"v=1"}}"#
            ]],
        );
    }

    #[test]
    fn caller_params_and_meta_are_kept() {
        let modern = MetaPrefix::modern("2026-07-28", &json!({"roots": {}}), &info());
        let base = json!({"_meta": {"mine": 1, "progressToken": "theirs"}, "uri": "file:///a"});
        check(
            RequestParams {
                base: BaseParams::Tree(&base),
                input: None,
                meta: &modern,
                progress_token: Some(&RequestId::from(5)),
            },
            expect![[
                r#"{"_meta":{"mine":1,"progressToken":5,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"1"}},"uri":"file:///a"}"#
            ]],
        );
        let legacy = MetaPrefix::default();
        let plain = json!({"cursor": "c"});
        check(
            RequestParams {
                base: BaseParams::Tree(&plain),
                input: None,
                meta: &legacy,
                progress_token: None,
            },
            expect![[r#"{"cursor":"c"}"#]],
        );
        let odd = json!({"_meta": 7});
        check(
            RequestParams {
                base: BaseParams::Tree(&odd),
                input: None,
                meta: &modern,
                progress_token: None,
            },
            expect![[r#"{"_meta":7}"#]],
        );
        check(
            RequestParams {
                base: BaseParams::Tree(&Value::Null),
                input: None,
                meta: &modern,
                progress_token: None,
            },
            expect![[r#"null"#]],
        );
    }
}
