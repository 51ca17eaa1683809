//! `serve --otlp URL`: the gateway's spans (`switchboard_gateway::traces`) exported over
//! OTLP/HTTP (protobuf) to a collector. Without the flag, the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` added) names the collector; with none of them nothing is exported and no
//! span is made.
//!
//! A call never waits for the collector: a finished span goes to the SDK's batch processor
//! without blocking, into a queue of at most [`QUEUE_CAP`] spans that one background thread
//! exports in batches (each export bounded by [`EXPORT_TIMEOUT`]). A span that finds the
//! queue full is dropped and counted; a batch the collector did not take (down, slow,
//! refusing) is dropped and counted too. The first loss is said on stderr once; the counts
//! are said when `serve` ends, after a flush bounded by [`SHUTDOWN_WAIT`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
    SpanProcessor,
};
use switchboard_gateway::traces::Traces;

use crate::Failure;
use crate::terminal::say;

/// Spans finished and not yet exported, at most; past it new ones are dropped.
pub(crate) const QUEUE_CAP: usize = 2048;
/// Spans sent in one export request, at most.
const BATCH_CAP: usize = 512;
/// How long a batch waits for more spans before it is sent.
const BATCH_DELAY: Duration = Duration::from_secs(1);
/// Longest wait for the collector's answer to one export.
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest wait at shutdown for the queued spans to be exported.
pub(crate) const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The environment variables the OpenTelemetry specification names for the collector.
const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The exporter while `serve` runs; [`OtlpExport::finish`] flushes and ends it.
#[derive(Debug)]
pub(crate) struct OtlpExport {
    provider: SdkTracerProvider,
    counts: Arc<Counts>,
}

/// What happened to the spans.
#[derive(Debug)]
struct Counts {
    /// Spans handed to the batch processor and not yet through an export.
    queued: AtomicUsize,
    exported: AtomicUsize,
    /// Dropped because the queue was full.
    dropped_full: AtomicUsize,
    /// Dropped because the collector did not take their batch.
    dropped_failed: AtomicUsize,
    /// The first loss has been said.
    warned: AtomicBool,
    /// The collector as shown to the operator (no credentials, no query).
    shown: String,
}

impl Counts {
    /// Says the first loss on stderr, once.
    fn warn_once(&self, why: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            say(format_args!(
                "switchboard serve: traces: {why}; spans are dropped while this lasts (counted at exit; calls are not slowed)"
            ));
        }
    }
}

/// Starts exporting to the collector `--otlp` names, or the environment's, if any: the
/// export and the gateway's tracer. A URL that is not http(s) is a usage error.
pub(crate) fn start(flag: Option<&str>) -> Result<Option<(OtlpExport, Traces)>, Failure> {
    let from_environment = [TRACES_ENDPOINT_VAR, ENDPOINT_VAR]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|value| !value.is_empty()));
    let (endpoint, named) = match (flag, from_environment) {
        (Some(flag), _) => (Some(flag.to_owned()), flag.to_owned()),
        (None, Some(value)) => (None, value),
        (None, None) => return Ok(None),
    };
    let shown = shown_endpoint(&named)?;
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    let exporter = builder.build().map_err(|error| {
        Failure::Usage(format!("--otlp: cannot export traces to {shown}: {error}"))
    })?;
    let counts = Arc::new(Counts {
        queued: AtomicUsize::new(0),
        exported: AtomicUsize::new(0),
        dropped_full: AtomicUsize::new(0),
        dropped_failed: AtomicUsize::new(0),
        warned: AtomicBool::new(false),
        shown,
    });
    let batches = BatchSpanProcessor::builder(CountedExporter {
        inner: exporter,
        counts: counts.clone(),
    })
    .with_batch_config(
        BatchConfigBuilder::default()
            // Room beyond our own cap: the SDK's queue never drops, ours counts.
            .with_max_queue_size(QUEUE_CAP * 2)
            .with_max_export_batch_size(BATCH_CAP)
            .with_scheduled_delay(BATCH_DELAY)
            .build(),
    )
    .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BoundedQueue {
            inner: batches,
            counts: counts.clone(),
        })
        .with_resource(
            Resource::builder_empty()
                .with_service_name("switchboard")
                .with_attribute(opentelemetry::KeyValue::new(
                    "service.version",
                    env!("CARGO_PKG_VERSION"),
                ))
                .build(),
        )
        .build();
    say(format_args!(
        "switchboard serve: traces go to {} (OTLP/HTTP)",
        counts.shown
    ));
    let tracer = BoxedTracer::new(Box::new(provider.tracer("switchboard")));
    Ok(Some((OtlpExport { provider, counts }, Traces::new(tracer))))
}

impl OtlpExport {
    /// Exports what is queued (waiting at most [`SHUTDOWN_WAIT`]), ends the exporter, and
    /// says what was lost, if anything.
    pub(crate) async fn finish(self) {
        let provider = self.provider;
        let flushing =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_WAIT));
        let finished = matches!(
            tokio::time::timeout(SHUTDOWN_WAIT + Duration::from_secs(1), flushing).await,
            Ok(Ok(Ok(())))
        );
        let counts = &self.counts;
        let full = counts.dropped_full.load(Ordering::Relaxed);
        let failed = counts.dropped_failed.load(Ordering::Relaxed);
        let unsent = counts.queued.load(Ordering::Relaxed);
        if full + failed + unsent > 0 || !finished {
            say(format_args!(
                "switchboard serve: traces: {} span(s) exported to {}, {full} dropped (queue full), {failed} dropped (the collector did not take them), {unsent} unsent at exit",
                counts.exported.load(Ordering::Relaxed),
                counts.shown
            ));
        }
    }
}

/// The batch processor behind our own cap on spans waiting for export.
#[derive(Debug)]
struct BoundedQueue {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for BoundedQueue {
    fn on_start(&self, span: &mut Span, context: &Context) {
        self.inner.on_start(span, context);
    }

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let counts = &self.counts;
        if counts.queued.fetch_add(1, Ordering::Relaxed) >= QUEUE_CAP {
            counts.queued.fetch_sub(1, Ordering::Relaxed);
            counts.dropped_full.fetch_add(1, Ordering::Relaxed);
            counts.warn_once(&format!(
                "{QUEUE_CAP} spans are waiting for the collector at {}",
                counts.shown
            ));
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, counting what it sent and what the collector did not take.
#[derive(Debug)]
struct CountedExporter {
    inner: opentelemetry_otlp::SpanExporter,
    counts: Arc<Counts>,
}

impl SpanExporter for CountedExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        let counts = &self.counts;
        counts.queued.fetch_sub(spans, Ordering::Relaxed);
        match &result {
            Ok(()) => {
                counts.exported.fetch_add(spans, Ordering::Relaxed);
            }
            Err(error) => {
                counts.dropped_failed.fetch_add(spans, Ordering::Relaxed);
                counts.warn_once(&format!(
                    "the collector at {} did not take spans ({})",
                    counts.shown,
                    failure_kind(&error.to_string())
                ));
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// What went wrong with an export, in a few words: the exporter's errors are the HTTP
/// client's debug text.
fn failure_kind(error: &str) -> String {
    if error.contains("ConnectionRefused") || error.contains("tcp connect error") {
        "nothing answers there".to_owned()
    } else if error.contains("timed out") || error.contains("TimedOut") {
        format!("no answer within {} s", EXPORT_TIMEOUT.as_secs())
    } else {
        let cut: String = error.chars().take(200).collect();
        if cut.len() < error.len() {
            format!("{cut}…")
        } else {
            cut
        }
    }
}

/// The collector's address as said on stderr: scheme, host, port and path, without
/// credentials or query (a password in it is also hidden from everything said after).
fn shown_endpoint(endpoint: &str) -> Result<String, Failure> {
    let url = url::Url::parse(endpoint).map_err(|error| {
        Failure::Usage(format!(
            "--otlp: the collector's address is not a URL ({error}); give its OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Failure::Usage(format!(
            "--otlp: the collector's address must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:4318/v1/traces (got scheme `{}`)",
            url.scheme()
        )));
    }
    if let Some(password) = url.password() {
        crate::terminal::hide_secrets(vec![password.to_owned()]);
    }
    let port = url
        .port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    Ok(format!(
        "{}://{}{port}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.path()
    ))
}
