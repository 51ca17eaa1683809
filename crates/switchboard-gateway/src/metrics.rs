//! The gateway's Prometheus metrics ([`GatewayMetrics`], `serve --metrics`): what passes
//! through [`GatewayService::handle`](crate::GatewayService) is counted as it passes, and
//! what other parts already count (the upstream servers' states and restarts from the
//! runtime, the HTTP transport's sessions, streams and body bytes from its
//! [`HttpStats`]) is read at each scrape, so nothing is counted twice. The gateway does no
//! I/O here: [`GatewayMetrics::render`] gives the Prometheus text (version 0.0.4,
//! [`CONTENT_TYPE`]) and the CLI serves it on a listener of its own.
//!
//! Metrics (docs/metrics.md has each with its labels and a scrape config):
//! `switchboard_calls_total{server,tool,outcome}` (outcome `ok`, `tool_error`, `error`),
//! `switchboard_call_errors_total{server,kind}` (kind: [`ErrorKind`]),
//! `switchboard_call_duration_seconds{server,tool}` (histogram),
//! `switchboard_calls_in_flight`, `switchboard_policy_denials_total{rule}`,
//! `switchboard_rate_limited_total{limit}`, `switchboard_state_errors_total` (rate-limit
//! decisions the shared store of `serve --state` could not make, so this instance's own
//! buckets made them), `switchboard_upstream_state{server,state}` (1
//! for the state it is in, 0 for the others), `switchboard_upstream_restarts_total{server}`,
//! and over HTTP `switchboard_http_sessions`, `switchboard_http_listen_streams`,
//! `switchboard_http_connections`, `switchboard_http_requests_in_flight`,
//! `switchboard_http_request_bytes_total`, `switchboard_http_response_bytes_total`.
//!
//! Labels are bounded, since server and tool names come from upstream servers and rule
//! names from configuration: at most [`MAX_TOOL_SERIES`] distinct (server, tool) pairs are
//! labelled by name, later ones share the tool label [`OTHER`]; a tool no server has is
//! [`UNKNOWN`] (its name is the client's, so it is never a label); rules and limits are
//! capped at [`MAX_NAMED_SERIES`] each. No label carries an argument, a token, an identity
//! or an address. The exposition format's escaping (quotes, backslashes, newlines) is the
//! encoder's.
//!
//! Cost per call: the (server, tool) pair's counters and histogram are made once and kept
//! (`ToolSeries`); a call looks them up by `&str` under a read lock, with no allocation,
//! then adds to atomics and the histogram.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use switchboard_runtime::{Runtime, ServerState, Snapshot};
use switchboard_server::core::ServiceRequest;
use switchboard_server::http::HttpStats;
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::INVALID_PARAMS;
use tokio::time::Instant;

use crate::codes;

/// The `Content-Type` of [`GatewayMetrics::render`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// Distinct (server, tool) label pairs at most; later tools are labelled [`OTHER`].
pub const MAX_TOOL_SERIES: usize = 1000;
/// Distinct rule (and limit) names at most; later ones are labelled [`OTHER`].
pub const MAX_NAMED_SERIES: usize = 100;
/// The tool label of calls beyond [`MAX_TOOL_SERIES`], and the rule or limit label
/// beyond [`MAX_NAMED_SERIES`].
pub const OTHER: &str = "_other";
/// The server and tool label of a call of a tool no server has.
pub const UNKNOWN: &str = "_unknown";

/// Latency buckets, in seconds: 5 ms to 2 min.
const LATENCY_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Why a call failed, as `switchboard_call_errors_total` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The upstream server did not answer in time ([`codes::UPSTREAM_TIMEOUT`]).
    Timeout,
    /// The upstream server was not there ([`codes::UPSTREAM_UNAVAILABLE`]).
    Unavailable,
    /// Its answer could not be passed on ([`codes::UPSTREAM_BAD_ANSWER`]).
    BadAnswer,
    /// The upstream server's own JSON-RPC error, passed on.
    ServerError,
    /// The client's request did not fit (unknown tool, bad params).
    InvalidParams,
    /// The tool lock holds the tool ([`codes::TOOL_HELD`]).
    Held,
    /// The result guard withheld the answer ([`codes::RESULT_WITHHELD`]).
    Withheld,
    /// A policy rule refused the call.
    Denied,
    /// A rate limit or quota refused the call.
    RateLimited,
}

impl ErrorKind {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::BadAnswer => "bad_answer",
            ErrorKind::ServerError => "server_error",
            ErrorKind::InvalidParams => "invalid_params",
            ErrorKind::Held => "held",
            ErrorKind::Withheld => "withheld",
            ErrorKind::Denied => "denied",
            ErrorKind::RateLimited => "rate_limited",
        }
    }

    /// The kind of a JSON-RPC error the gateway answered with. (Policy and rate limits
    /// add their codes here when they land.)
    pub fn of(error: &ErrorObject) -> ErrorKind {
        match error.code {
            codes::UPSTREAM_TIMEOUT => ErrorKind::Timeout,
            codes::UPSTREAM_UNAVAILABLE => ErrorKind::Unavailable,
            codes::UPSTREAM_BAD_ANSWER => ErrorKind::BadAnswer,
            codes::TOOL_HELD => ErrorKind::Held,
            codes::RESULT_WITHHELD => ErrorKind::Withheld,
            codes::POLICY_DENIED => ErrorKind::Denied,
            codes::RATE_LIMITED => ErrorKind::RateLimited,
            INVALID_PARAMS => ErrorKind::InvalidParams,
            _ => ErrorKind::ServerError,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ErrorLabels {
    server: String,
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RuleLabels {
    rule: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LimitLabels {
    limit: String,
}

/// One (server, tool) pair's series, made once and kept.
#[derive(Debug)]
struct ToolSeries {
    server: String,
    ok: Counter,
    tool_error: Counter,
    error: Counter,
    latency: Histogram,
}

/// Every metric the gateway counts itself.
#[derive(Debug)]
struct Counted {
    calls: Family<CallLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    latency: Family<ToolLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    denials: NamedCounter<RuleLabels>,
    rate_limited: NamedCounter<LimitLabels>,
    state_errors: Counter,
}

/// What is read at each scrape.
#[derive(Debug, Default)]
struct Sources {
    runtime: Mutex<Option<Runtime>>,
    http: Mutex<Option<HttpStats>>,
}

#[derive(Debug)]
struct Inner {
    registry: Mutex<Registry>,
    counted: Counted,
    /// server → tool → its series (at most [`MAX_TOOL_SERIES`] pairs, plus each server's
    /// [`OTHER`]).
    series: RwLock<HashMap<String, HashMap<String, Arc<ToolSeries>>>>,
    sources: Arc<Sources>,
}

/// The gateway's metrics: cheap to clone (every clone counts into the same registry).
/// Give one to [`GatewayOptions::metrics`](crate::GatewayOptions::metrics).
#[derive(Debug, Clone)]
pub struct GatewayMetrics {
    inner: Arc<Inner>,
}

impl Default for GatewayMetrics {
    fn default() -> GatewayMetrics {
        GatewayMetrics::new()
    }
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl GatewayMetrics {
    /// Every metric at zero, nothing read yet.
    pub fn new() -> GatewayMetrics {
        let counted = Counted {
            calls: Family::default(),
            errors: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            in_flight: Gauge::default(),
            denials: NamedCounter::new(|rule| RuleLabels { rule }),
            rate_limited: NamedCounter::new(|limit| LimitLabels { limit }),
            state_errors: Counter::default(),
        };
        let sources = Arc::new(Sources::default());
        let mut registry = Registry::default();
        registry.register(
            "switchboard_calls",
            "tools/call requests answered, by server, tool and outcome (ok, tool_error, error)",
            counted.calls.clone(),
        );
        registry.register(
            "switchboard_call_errors",
            "tools/call requests answered with an error, by server and kind",
            counted.errors.clone(),
        );
        registry.register(
            "switchboard_call_duration_seconds",
            "How long the gateway took to answer tools/call, by server and tool",
            counted.latency.clone(),
        );
        registry.register(
            "switchboard_calls_in_flight",
            "tools/call requests being answered now",
            counted.in_flight.clone(),
        );
        registry.register(
            "switchboard_policy_denials",
            "Calls a policy rule refused, by rule",
            counted.denials.family.clone(),
        );
        registry.register(
            "switchboard_rate_limited",
            "Calls a rate limit or quota refused, by limit",
            counted.rate_limited.family.clone(),
        );
        registry.register(
            "switchboard_state_errors",
            "Rate-limit decisions the shared store (serve --state) could not make, made by this instance's own buckets",
            counted.state_errors.clone(),
        );
        registry.register_collector(Box::new(sources.clone()));
        GatewayMetrics {
            inner: Arc::new(Inner {
                registry: Mutex::new(registry),
                counted,
                series: RwLock::default(),
                sources,
            }),
        }
    }

    /// Reads the runtime's servers (states, restarts) at each scrape.
    pub fn watch_runtime(&self, runtime: Runtime) {
        *lock(&self.inner.sources.runtime) = Some(runtime);
    }

    /// Reads an HTTP server's counts (sessions, streams, bytes) at each scrape.
    pub fn watch_http(&self, stats: HttpStats) {
        *lock(&self.inner.sources.http) = Some(stats);
    }

    /// Counts a call a policy rule refused (`rule`: the rule's configured name).
    pub fn denied(&self, rule: &str) {
        self.inner.counted.denials.inc(rule);
    }

    /// Counts a request the policy or a rate limit refused, by the rule or limit its
    /// error names (`data.rule`, `data.limit`: configured names, never the client's words).
    pub fn count_refusal(&self, refused: &ErrorObject) {
        let named = |key: &str| {
            refused
                .data
                .as_ref()
                .and_then(|data| data.get(key))
                .and_then(serde_json::Value::as_str)
        };
        match refused.code {
            codes::POLICY_DENIED => self.denied(named("rule").unwrap_or("")),
            codes::RATE_LIMITED => self.rate_limited(named("limit").unwrap_or("")),
            _ => {}
        }
    }

    /// Counts a rate-limit decision the shared store could not make.
    pub fn state_error(&self) {
        self.inner.counted.state_errors.inc();
    }

    /// Counts a call a rate limit or quota refused (`limit`: the limit's configured name).
    pub fn rate_limited(&self, limit: &str) {
        self.inner.counted.rate_limited.inc(limit);
    }

    /// Starts metering `request` if it is a `tools/call` (`None` for the rest); the meter
    /// counts it in flight until it is finished or dropped.
    pub fn call_started(&self, snapshot: &Snapshot, request: &ServiceRequest) -> Option<CallMeter> {
        let ServiceRequest::CallTool(call) = request else {
            return None;
        };
        let series = match snapshot.tool(&call.name) {
            Some(tool) => self.series(tool.server(), tool.wire_name()),
            None => match snapshot.held_tool(&call.name) {
                Some(held) => self.series(&held.server, &held.tool),
                None => self.series(UNKNOWN, UNKNOWN),
            },
        };
        Some(self.meter(series))
    }

    /// A call of `series`, counted in flight from now.
    fn meter(&self, series: Arc<ToolSeries>) -> CallMeter {
        self.inner.counted.in_flight.inc();
        CallMeter {
            series,
            in_flight: self.inner.counted.in_flight.clone(),
            errors: self.inner.counted.errors.clone(),
            began: Instant::now(),
        }
    }

    /// The metrics now, as Prometheus text (version 0.0.4).
    pub fn render(&self) -> String {
        let mut text = String::new();
        let registry = lock(&self.inner.registry);
        if let Err(error) =
            prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        {
            tracing::warn!(%error, "the metrics could not be encoded");
        }
        text
    }

    /// The kept series of (server, tool), made when first seen; beyond
    /// [`MAX_TOOL_SERIES`] pairs, the server's [`OTHER`] series.
    fn series(&self, server: &str, tool: &str) -> Arc<ToolSeries> {
        if let Some(series) = read(&self.inner.series)
            .get(server)
            .and_then(|tools| tools.get(tool))
        {
            return series.clone();
        }
        let mut all = write(&self.inner.series);
        let pairs: usize = all.values().map(HashMap::len).sum();
        let tool = if pairs >= MAX_TOOL_SERIES {
            match all.get(server).and_then(|tools| tools.get(OTHER)) {
                Some(series) => return series.clone(),
                None => OTHER,
            }
        } else {
            tool
        };
        let counted = &self.inner.counted;
        all.entry(server.to_owned())
            .or_default()
            .entry(tool.to_owned())
            .or_insert_with(|| {
                let labels = |outcome| CallLabels {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    outcome,
                };
                Arc::new(ToolSeries {
                    server: server.to_owned(),
                    ok: counted.calls.get_or_create_owned(&labels("ok")),
                    tool_error: counted.calls.get_or_create_owned(&labels("tool_error")),
                    error: counted.calls.get_or_create_owned(&labels("error")),
                    latency: counted.latency.get_or_create_owned(&ToolLabels {
                        server: server.to_owned(),
                        tool: tool.to_owned(),
                    }),
                })
            })
            .clone()
    }
}

/// A counter family labelled by configured names (rules, limits), at most
/// [`MAX_NAMED_SERIES`] of them; later names count as [`OTHER`].
#[derive(Debug)]
struct NamedCounter<S> {
    family: Family<S, Counter>,
    names: Mutex<std::collections::HashSet<String>>,
    labels: fn(String) -> S,
}

impl<S: Clone + std::hash::Hash + Eq> NamedCounter<S> {
    fn new(labels: fn(String) -> S) -> NamedCounter<S> {
        NamedCounter {
            family: Family::default(),
            names: Mutex::default(),
            labels,
        }
    }

    fn inc(&self, name: &str) {
        let label = {
            let mut names = lock(&self.names);
            if names.contains(name) || names.len() < MAX_NAMED_SERIES {
                names.insert(name.to_owned());
                name.to_owned()
            } else {
                OTHER.to_owned()
            }
        };
        self.family.get_or_create(&(self.labels)(label)).inc();
    }
}

/// One `tools/call` being answered: in flight until finished or dropped.
#[derive(Debug)]
pub struct CallMeter {
    series: Arc<ToolSeries>,
    in_flight: Gauge,
    errors: Family<ErrorLabels, Counter>,
    began: Instant,
}

impl CallMeter {
    /// Counts the call with how it ended and how long it took.
    pub fn finish(self, answer: &Result<serde_json::Value, ErrorObject>) {
        let series = &self.series;
        series.latency.observe(seconds(self.began.elapsed()));
        match answer {
            Ok(result) if result.get("isError") == Some(&serde_json::Value::Bool(true)) => {
                series.tool_error.inc();
            }
            Ok(_) => {
                series.ok.inc();
            }
            Err(error) => {
                series.error.inc();
                self.errors
                    .get_or_create(&ErrorLabels {
                        server: series.server.clone(),
                        kind: ErrorKind::of(error).label(),
                    })
                    .inc();
            }
        }
    }
}

impl Drop for CallMeter {
    fn drop(&mut self) {
        self.in_flight.dec();
    }
}

fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

/// The states `switchboard_upstream_state` has a series for, in order.
const STATES: [&str; 7] = [
    "configured",
    "connecting",
    "ready",
    "backoff",
    "broken",
    "disabled",
    "stopped",
];

fn state_label(state: &ServerState) -> &'static str {
    match state {
        ServerState::Configured => "configured",
        ServerState::Connecting { .. } => "connecting",
        ServerState::Ready => "ready",
        ServerState::Backoff { .. } => "backoff",
        ServerState::Broken { .. } => "broken",
        ServerState::Disabled { .. } => "disabled",
        ServerState::Stopped => "stopped",
    }
}

impl prometheus_client::collector::Collector for Sources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let runtime = lock(&self.runtime).clone();
        if let Some(runtime) = runtime {
            let servers = runtime.servers();
            {
                let mut states = encoder.encode_descriptor(
                    "switchboard_upstream_state",
                    "Each upstream server's state: 1 for the state it is in, 0 for the others.",
                    None,
                    MetricType::Gauge,
                )?;
                for server in &servers {
                    let current = state_label(&server.state);
                    for state in STATES {
                        let labels = [("server", server.name.as_str()), ("state", state)];
                        states
                            .encode_family(&labels)?
                            .encode_gauge(&i64::from(state == current))?;
                    }
                }
            }
            let mut restarts = encoder.encode_descriptor(
                "switchboard_upstream_restarts",
                "Times each upstream server was connected again after its first start.",
                None,
                MetricType::Counter,
            )?;
            for server in &servers {
                let connections = runtime.server(&server.name).connections();
                let labels = [("server", server.name.as_str())];
                restarts
                    .encode_family(&labels)?
                    .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                        &u64::from(connections.saturating_sub(1)),
                        None,
                    )?;
            }
        }
        let counts = lock(&self.http).as_ref().and_then(HttpStats::counts);
        if let Some(counts) = counts {
            let gauges = [
                (
                    "switchboard_http_sessions",
                    "Legacy HTTP sessions open.",
                    counts.sessions,
                ),
                (
                    "switchboard_http_listen_streams",
                    "subscriptions/listen streams open.",
                    counts.listen_streams,
                ),
                (
                    "switchboard_http_connections",
                    "Authenticated HTTP connections open.",
                    counts.connections,
                ),
                (
                    "switchboard_http_requests_in_flight",
                    "HTTP requests being answered now (every method).",
                    counts.requests_in_flight,
                ),
            ];
            for (name, help, value) in gauges {
                encoder
                    .encode_descriptor(name, help, None, MetricType::Gauge)?
                    .encode_gauge(&i64::try_from(value).unwrap_or(i64::MAX))?;
            }
            let counters = [
                (
                    "switchboard_http_request_bytes",
                    "Bytes of HTTP request bodies read.",
                    counts.request_body_bytes,
                ),
                (
                    "switchboard_http_response_bytes",
                    "Bytes of HTTP response bodies sent (event streams included).",
                    counts.response_body_bytes,
                ),
            ];
            for (name, help, value) in counters {
                encoder
                    .encode_descriptor(name, help, None, MetricType::Counter)?
                    .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                        &value, None,
                    )?;
            }
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The sample lines of `text` (no HELP or TYPE, no durations), sorted: a family's
    /// series come in no set order.
    fn samples(text: &str) -> String {
        let mut lines: Vec<&str> = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter(|line| !line.contains("duration_seconds"))
            .collect();
        lines.sort_unstable();
        lines.join("\n")
    }

    #[test]
    fn hostile_tool_names_are_escaped_in_labels() {
        let metrics = GatewayMetrics::new();
        let meter = metrics.meter(metrics.series("fx", "say \"hi\"\nnow \\ ✓"));
        meter.finish(&Ok(json!({"content": []})));
        let meter = metrics.meter(metrics.series("fx", "say \"hi\"\nnow \\ ✓"));
        meter.finish(&Err(ErrorObject::new(codes::UPSTREAM_TIMEOUT, "late")));
        metrics.denied("no \"writes\"");
        metrics.rate_limited("per-user");
        expect_test::expect![[r#"
            switchboard_call_errors_total{server="fx",kind="timeout"} 1
            switchboard_calls_in_flight 0
            switchboard_calls_total{server="fx",tool="say \"hi\"\nnow \\ ✓",outcome="error"} 1
            switchboard_calls_total{server="fx",tool="say \"hi\"\nnow \\ ✓",outcome="ok"} 1
            switchboard_calls_total{server="fx",tool="say \"hi\"\nnow \\ ✓",outcome="tool_error"} 0
            switchboard_policy_denials_total{rule="no \"writes\""} 1
            switchboard_rate_limited_total{limit="per-user"} 1
            switchboard_state_errors_total 0"#]]
        .assert_eq(&samples(&metrics.render()));
    }

    #[test]
    fn tool_labels_stop_at_the_cap_and_later_tools_share_other() {
        let metrics = GatewayMetrics::new();
        for index in 0..MAX_TOOL_SERIES + 50 {
            let meter = metrics.meter(metrics.series("fx", &format!("tool{index}")));
            meter.finish(&Ok(json!({})));
        }
        let text = metrics.render();
        let ok_lines: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("switchboard_calls_total") && line.contains("\"ok\""))
            .collect();
        assert_eq!(
            ok_lines.len(),
            MAX_TOOL_SERIES + 1,
            "{MAX_TOOL_SERIES} named and _other"
        );
        assert!(
            ok_lines.contains(
                &"switchboard_calls_total{server=\"fx\",tool=\"_other\",outcome=\"ok\"} 50"
            ),
            "the calls past the cap count as _other"
        );
        for index in 0..MAX_NAMED_SERIES + 5 {
            metrics.denied(&format!("rule{index}"));
        }
        let denial_lines = metrics
            .render()
            .lines()
            .filter(|line| line.starts_with("switchboard_policy_denials_total"))
            .count();
        assert_eq!(denial_lines, MAX_NAMED_SERIES + 1);
    }

    #[test]
    fn a_dropped_meter_leaves_the_in_flight_count() {
        let metrics = GatewayMetrics::new();
        let meter = metrics.meter(metrics.series("fx", "slow"));
        assert!(metrics.render().contains("switchboard_calls_in_flight 1\n"));
        drop(meter);
        assert!(metrics.render().contains("switchboard_calls_in_flight 0\n"));
    }
}
