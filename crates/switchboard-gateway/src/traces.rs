//! The gateway's spans (OpenTelemetry), when its owner hands it a tracer
//! ([`GatewayOptions::traces`](crate::GatewayOptions::traces); `serve --otlp`). The gateway
//! only makes spans through the `opentelemetry` API; the CLI's `otlp` module owns the SDK,
//! its bounded batch queue and the exporter, so no call ever waits for a collector.
//!
//! Per client request, named as the OpenTelemetry MCP semantic conventions name them
//! (`{mcp.method.name} {target}`, the target being the tool's or prompt's name):
//! - the request's span (kind server), e.g. `tools/call fx__add`: `mcp.method.name`,
//!   `gen_ai.tool.name` (the exported name) or `gen_ai.prompt.name`, `switchboard.server`,
//!   `mcp.protocol.version`, `switchboard.era` (`legacy` or `modern`), `network.transport`,
//!   and when it is answered `switchboard.outcome` (`ok`, `tool-error`, `withheld`, `error`)
//!   with `rpc.jsonrpc.error_code` and `error.type` for an error;
//! - its child `gateway.policy` (internal): the policy decision
//!   (`switchboard.policy.decision`, `allow` or `deny`, and for a denial
//!   `switchboard.policy.rule`, the rule's name);
//! - for `tools/call`, its child for the upstream call (kind client), e.g. `tools/call add`:
//!   `mcp.method.name`, `gen_ai.tool.name` (the tool's own name), `switchboard.server`, and
//!   the outcome as above. Its W3C trace context goes to the server with the call
//!   (`_meta.traceparent`, and the `traceparent` header over HTTP), so the server's own
//!   spans join the trace.
//!
//! The request's parent is the client's: `params._meta.traceparent` (and `tracestate`),
//! which the HTTP transport fills from the request's headers when `_meta` has none. A
//! malformed one is ignored (the request's span starts a new trace), never an error.
//!
//! What a span never holds: argument values, resource URIs, error messages, tokens or the
//! client's identity; names from configuration (servers, tools) pass the runtime's
//! [`Secrets`] rule as everything a client is sent does.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    FutureExt, Span, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer,
};
use opentelemetry::{Context, KeyValue};
use serde_json::{Map, Value};
use switchboard_protocol::Era;
use switchboard_runtime::Runtime;
use switchboard_server::core::{Answer, ClientIdentity, RequestContext, ServiceRequest};
use switchboard_session::{TRACEPARENT, TRACESTATE, TraceContext};
use switchboard_text::redact::Secrets;

use crate::audit::AuditOutcome;

/// Where the gateway's spans go: a tracer of the owner's SDK (cheap to clone).
#[derive(Clone)]
pub struct Traces {
    tracer: Arc<BoxedTracer>,
}

impl Traces {
    /// Spans made with `tracer`.
    pub fn new(tracer: BoxedTracer) -> Traces {
        Traces {
            tracer: Arc::new(tracer),
        }
    }

    /// Starts the span of a client request (and ends its policy child at once, with the
    /// rule that denied it, if one did): the context to answer it in ([`answer_in`]).
    pub(crate) fn request(
        &self,
        request: &ServiceRequest,
        context: &RequestContext,
        runtime: &Runtime,
        denied_by: Option<&str>,
    ) -> Context {
        let secrets = runtime.secrets();
        let server = crate::request_server(&runtime.snapshot(), request);
        let method = request.method();
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", method),
            KeyValue::new(
                "mcp.protocol.version",
                context.client.protocol_version.to_string(),
            ),
            KeyValue::new("switchboard.era", era_name(context.client.era)),
            KeyValue::new("network.transport", transport(&context.client.identity)),
        ];
        let target = match request {
            ServiceRequest::CallTool(call) => {
                let name = secrets.redact(&call.name).into_owned();
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                attributes.push(KeyValue::new("gen_ai.tool.name", name.clone()));
                Some(name)
            }
            ServiceRequest::GetPrompt(get) => {
                let name = secrets.redact(&get.name).into_owned();
                attributes.push(KeyValue::new("gen_ai.prompt.name", name.clone()));
                Some(name)
            }
            _ => None,
        };
        if let Some(server) = server {
            attributes.push(KeyValue::new(
                "switchboard.server",
                secrets.redact(&server).into_owned(),
            ));
        }
        let parent = match remote_parent(context.meta.as_ref()) {
            Some(parent) => Context::new().with_remote_span_context(parent),
            None => Context::new(),
        };
        let span = self
            .tracer
            .span_builder(span_name(method, target.as_deref()))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&*self.tracer, &parent);
        let request = parent.with_span(span);
        let mut policy = self
            .tracer
            .span_builder("gateway.policy")
            .with_kind(SpanKind::Internal)
            .with_attributes(match denied_by {
                None => vec![KeyValue::new("switchboard.policy.decision", "allow")],
                Some(rule) => vec![
                    KeyValue::new("switchboard.policy.decision", "deny"),
                    KeyValue::new("switchboard.policy.rule", rule.to_owned()),
                ],
            })
            .start_with_context(&*self.tracer, &request);
        policy.end();
        request
    }

    /// Starts the span of the upstream call of a `tools/call` in the current context (the
    /// request's, see [`Traces::request`]).
    pub(crate) fn upstream(&self, server: &str, tool: &str, secrets: &Secrets) -> UpstreamSpan {
        let tool = secrets.redact(tool).into_owned();
        let method = switchboard_protocol::methods::TOOLS_CALL;
        let parent = Context::current();
        let span = self
            .tracer
            .span_builder(span_name(method, Some(&tool)))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("mcp.method.name", method),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", tool),
                KeyValue::new("switchboard.server", secrets.redact(server).into_owned()),
            ])
            .start_with_context(&*self.tracer, &parent);
        UpstreamSpan {
            context: parent.with_span(span),
        }
    }
}

impl fmt::Debug for Traces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Traces").finish_non_exhaustive()
    }
}

/// The span of one upstream call, ended by [`UpstreamSpan::finish`].
pub(crate) struct UpstreamSpan {
    context: Context,
}

impl UpstreamSpan {
    /// The W3C trace context naming this span, for the server.
    pub(crate) fn trace_context(&self) -> Option<TraceContext> {
        let span = self.context.span();
        let ids = span.span_context();
        if !ids.is_valid() {
            return None;
        }
        let state = ids.trace_state().header();
        Some(TraceContext {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                ids.trace_id(),
                ids.span_id(),
                ids.trace_flags().to_u8()
            ),
            tracestate: (!state.is_empty()).then_some(state),
        })
    }

    /// Ends the span with how the call ended.
    pub(crate) fn finish(self, answer: &Answer) {
        finish(&self.context, answer);
    }
}

/// Answers a request in its span's context (where [`Traces::upstream`] finds it), then ends
/// the span with how it ended.
pub(crate) async fn answer_in(span: Context, answering: impl Future<Output = Answer>) -> Answer {
    let answer = FutureExt::with_context(answering, span.clone()).await;
    finish(&span, &answer);
    answer
}

/// Ends the span of `context` with how its request ended.
fn finish(context: &Context, answer: &Answer) {
    let span = context.span();
    let outcome = crate::outcome_of(answer);
    let (name, code) = match outcome {
        AuditOutcome::Ok => ("ok", None),
        AuditOutcome::ToolError => ("tool-error", None),
        AuditOutcome::Withheld => ("withheld", Some(crate::codes::RESULT_WITHHELD)),
        AuditOutcome::Error(code) => ("error", Some(code)),
    };
    span.set_attribute(KeyValue::new("switchboard.outcome", name));
    match (outcome, code) {
        (AuditOutcome::ToolError, _) => {
            span.set_attribute(KeyValue::new("error.type", "tool_error"));
            span.set_status(Status::error("tool error"));
        }
        (_, Some(code)) => {
            span.set_attribute(KeyValue::new("rpc.jsonrpc.error_code", code));
            span.set_attribute(KeyValue::new("error.type", code.to_string()));
            span.set_status(Status::error(name));
        }
        _ => {}
    }
    span.end();
}

/// `{method} {target}`, or the method alone.
fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    }
}

fn era_name(era: Era) -> &'static str {
    match era {
        Era::Legacy => "legacy",
        Era::Modern => "modern",
    }
}

/// `pipe` for the stdio client, `tcp` for an HTTP one (the conventions' values).
fn transport(identity: &ClientIdentity) -> &'static str {
    match identity {
        ClientIdentity::Local => "pipe",
        _ => "tcp",
    }
}

/// The client's span, from `_meta.traceparent` (and `tracestate`), when well-formed
/// (W3C Trace Context level 1: a version other than `ff`, non-zero ids in lower-case hex).
fn remote_parent(meta: Option<&Map<String, Value>>) -> Option<SpanContext> {
    let meta = meta?;
    let text = meta.get(TRACEPARENT)?.as_str()?;
    if text.len() > 256 {
        return None;
    }
    let mut parts = text.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    // Version 00 has exactly four parts; a later version may add more after them.
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let trace = TraceId::from_hex(trace).ok()?;
    let span = SpanId::from_hex(span).ok()?;
    if trace == TraceId::INVALID || span == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8();
    let state = meta
        .get(TRACESTATE)
        .and_then(Value::as_str)
        .filter(|state| state.len() <= 512)
        .and_then(|state| TraceState::from_str(state).ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags),
        true,
        state,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parent(meta: Value) -> Option<String> {
        let meta = meta.as_object().cloned();
        remote_parent(meta.as_ref()).map(|context| {
            format!(
                "{}-{}-{:02x} [{}]",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8(),
                context.trace_state().header()
            )
        })
    }

    #[test]
    fn a_well_formed_traceparent_is_the_parent_and_anything_else_is_none() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert_eq!(
            parent(json!({"traceparent": good, "tracestate": "congo=t61rcWkgMzE"})).as_deref(),
            Some("0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 [congo=t61rcWkgMzE]")
        );
        assert_eq!(
            parent(json!({"traceparent": good, "tracestate": "not a state"})).as_deref(),
            Some("0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 []")
        );
        // A later version may carry more fields; unknown flags are dropped.
        assert_eq!(
            parent(json!({"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff-more"})).as_deref(),
            Some("0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 []")
        );
        for bad in [
            json!({}),
            json!({"traceparent": 7}),
            json!({"traceparent": "garbage"}),
            json!({"traceparent": "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
            json!({"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"}),
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"}),
            json!({"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"}),
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x"}),
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01"}),
        ] {
            assert_eq!(parent(bad.clone()), None, "{bad}");
        }
    }
}
