//! Running the suite against one server: the main session for the read-only checks, the
//! lifecycle checks on processes of their own (concurrently), and the observation checks
//! at the end. Every wait is bounded by the options' deadlines; every process started is
//! stopped, descendants included, before the report is returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_wire::stdio::ProcessSpec;

use crate::catalog::{self, CHECKS, Transport, ids};
use crate::checks::{Facts, Tools, calls, cancel, handshake, lifecycle, listing, observed};
use crate::options::Options;
use crate::probe::Probe;
use crate::recorder::Recorder;
use crate::redact::Redactor;
use crate::report::{CheckResult, Report, ServerFacts};
use crate::spec::{ServerSpec, TransportSpec};

/// The reason every check of an HTTP server is skipped in this build.
pub const HTTP_NOT_SUPPORTED: &str = "HTTP transport not supported by this build yet";

/// Most times the main server is restarted after it died during a check.
const MAX_RESTARTS: usize = 3;

/// Collects results in catalog order and tells the observer.
struct Collector<'a> {
    server: &'a str,
    options: &'a Options,
    results: Vec<CheckResult>,
}

impl Collector<'_> {
    fn start(&self, id: &'static str) -> Instant {
        if let Some(observer) = &self.options.observer {
            observer.started(self.server, id);
        }
        Instant::now()
    }

    fn push(&mut self, mut result: CheckResult, started: Instant) {
        result.duration = started.elapsed();
        if let Some(observer) = &self.options.observer {
            observer.finished(self.server, &result);
        }
        self.results.push(result);
    }

    fn push_all(&mut self, results: Vec<CheckResult>, started: Instant) {
        for result in results {
            self.push(result, started);
        }
    }

    fn has(&self, id: &str) -> bool {
        self.results.iter().any(|r| r.id == id)
    }

    /// Skips every applicable check not decided yet.
    fn skip_rest(&mut self, transport: Transport, reason: &str) {
        for def in CHECKS {
            if def.applies_to(transport) && !self.has(def.id) {
                let started = self.start(def.id);
                self.push(CheckResult::skip(def.id, reason), started);
            }
        }
    }

    fn finish(mut self, transport: Transport) -> Vec<CheckResult> {
        for def in CHECKS {
            if !def.applies_to(transport) && !self.has(def.id) {
                let reason = match def.applies {
                    catalog::Applies::Http => "applies to Streamable HTTP servers only",
                    catalog::Applies::Stdio => "applies to stdio servers only",
                    catalog::Applies::Any => "not applicable",
                };
                self.results.push(CheckResult::skip(def.id, reason));
            }
        }
        let order = |id: &str| CHECKS.iter().position(|d| d.id == id).unwrap_or(usize::MAX);
        self.results.sort_by_key(|r| order(r.id));
        self.results
    }
}

/// Runs every check against one server and returns its report. Never fails: a server that
/// cannot be started, never answers or answers garbage yields a report saying so.
pub async fn run(spec: &ServerSpec, options: &Options) -> Report {
    let started = Instant::now();
    let transport = spec.transport_kind();
    let mut collector = Collector {
        server: &spec.name,
        options,
        results: Vec::new(),
    };
    let mut report = Report {
        server: spec.name.clone(),
        transport: transport.as_str(),
        facts: ServerFacts::default(),
        results: Vec::new(),
        duration: Duration::ZERO,
        notes: Vec::new(),
        stderr_tail: None,
    };
    match &spec.transport {
        TransportSpec::Stdio(process) => {
            run_stdio(spec, process, options, &mut collector, &mut report).await;
        }
        // The HTTP checks slot in here once the engine speaks HTTP; until then every
        // check, stdio-only ones included, says why it did not run.
        TransportSpec::Http { .. } => {
            for def in CHECKS {
                let started = collector.start(def.id);
                collector.push(CheckResult::skip(def.id, HTTP_NOT_SUPPORTED), started);
            }
        }
    }
    report.results = collector.finish(transport);
    report.duration = started.elapsed();
    report.redact(&Redactor::new(spec.secret_values()));
    report
}

/// Like [`run`], on a runtime of its own (for callers without one).
pub fn run_blocking(spec: &ServerSpec, options: &Options) -> std::io::Result<Report> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(run(spec, options)))
}

/// The main server: the current probe, plus those that died and were replaced.
struct Main {
    probe: Probe,
    retired: Vec<Probe>,
}

impl Main {
    fn recorders(&self) -> Vec<Arc<Recorder>> {
        self.retired
            .iter()
            .chain(std::iter::once(&self.probe))
            .map(|p| p.recorder.clone())
            .collect()
    }

    /// Lines too long to be read (the wire layer skipped them), which the recorders did
    /// not see.
    fn oversized(&self) -> u64 {
        self.retired
            .iter()
            .chain(std::iter::once(&self.probe))
            .map(|p| {
                let (_, seen) = p.recorder.malformed();
                p.connection.stats().malformed_frames.saturating_sub(seen)
            })
            .sum()
    }

    /// Restarts the server if it died; false if that failed or happened too often.
    async fn ensure_alive(
        &mut self,
        spec: &ServerSpec,
        process: &ProcessSpec,
        options: &Options,
        report: &mut Report,
        during: &str,
    ) -> bool {
        if self.probe.connection.close_reason().is_none() {
            return true;
        }
        let status = self
            .probe
            .process
            .wait_exit(Duration::from_millis(500))
            .await
            .unwrap_or_else(|| "status unknown".into());
        report.notes.push(format!(
            "the server exited during {during} ({status}); it was restarted for the remaining checks"
        ));
        if self.retired.len() >= MAX_RESTARTS {
            return false;
        }
        match Probe::start(spec, process, options).await {
            Ok(fresh) => {
                let old = std::mem::replace(&mut self.probe, fresh);
                old.close(Duration::ZERO).await;
                self.retired.push(old);
                true
            }
            Err(failure) => {
                report
                    .notes
                    .push(format!("the restart failed: {}", failure.error));
                false
            }
        }
    }
}

async fn run_stdio(
    spec: &ServerSpec,
    process: &ProcessSpec,
    options: &Options,
    collector: &mut Collector<'_>,
    report: &mut Report,
) {
    let transport = Transport::Stdio;
    let t = collector.start(ids::INITIALIZE);
    let probe = match Probe::start(spec, process, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            collector.push_all(handshake::judge_failed(&failure), t);
            report.stderr_tail = failure.stderr_tail.clone().filter(|s| !s.trim().is_empty());
            let t = collector.start(ids::STDOUT_PURITY);
            let recorders: Vec<Arc<Recorder>> = failure.recorder.iter().cloned().collect();
            collector.push(observed::stdout_purity(&recorders, 0), t);
            collector.skip_rest(
                transport,
                "the server did not complete initialization (see `initialize`)",
            );
            return;
        }
    };
    collector.push_all(handshake::judge_ready(&probe), t);
    let negotiated = probe.session.negotiated().clone();
    report.facts = ServerFacts {
        era: Some(negotiated.era.to_string()),
        protocol_version: Some(negotiated.protocol_version.clone()),
        server_name: negotiated.server_info.as_ref().map(|i| i.name.clone()),
        server_version: negotiated.server_info.as_ref().map(|i| i.version.clone()),
    };
    let mut main = Main {
        probe,
        retired: Vec::new(),
    };
    let t = collector.start(ids::CAPABILITIES);
    let lists =
        observed::declared_lists(&main.probe.session, &negotiated, options.request_timeout).await;
    let capabilities_time = t.elapsed();

    let t = collector.start(ids::TOOLS_LIST);
    let (listing_results, tools) =
        listing::run(&main.probe.session, &negotiated, options.request_timeout).await;
    collector.push_all(listing_results, t);

    // The lifecycle checks need only the server's spec (and which long call to use).
    let long = match &tools {
        Tools::Listed(set) => cancel::pick(set, options).ok(),
        _ => None,
    };
    let lifecycle_started = Instant::now();
    if let Some(observer) = &options.observer {
        observer.started(&spec.name, ids::RECONNECT);
        observer.started(&spec.name, ids::SHUTDOWN);
    }
    let lifecycle_run = lifecycle::run(spec, process, options, long);
    let main_run = main_checks(spec, process, options, &tools, &mut main, collector, report);
    let (lifecycle_output, facts) = tokio::join!(lifecycle_run, main_run);
    collector.push_all(lifecycle_output.results, lifecycle_started);

    let t = Instant::now();
    let recorders = main.recorders();
    let mut capabilities = observed::capabilities(&negotiated, &lists, &recorders);
    capabilities.duration = capabilities_time;
    collector.push(capabilities, t);
    let t = collector.start(ids::RESPONSE_IDS);
    collector.push(observed::response_ids(&recorders), t);
    let t = collector.start(ids::NOTIFICATIONS_NOT_RESPONSES);
    collector.push(
        observed::notifications_not_responses(&recorders, &facts, options.request_timeout),
        t,
    );
    let t = collector.start(ids::STDOUT_PURITY);
    let mut all = recorders;
    all.extend(lifecycle_output.recorders);
    collector.push(observed::stdout_purity(&all, main.oversized()), t);

    let tail = main.probe.process.stderr_tail();
    report.stderr_tail = (!tail.trim().is_empty()).then_some(tail);
    main.probe.close(options.shutdown_grace).await;
    attach_stderr(collector, report.stderr_tail.as_deref());
}

/// Failures and warnings without a stderr tail of their own get the main process's.
fn attach_stderr(collector: &mut Collector<'_>, tail: Option<&str>) {
    let Some(tail) = tail else { return };
    for result in &mut collector.results {
        if matches!(
            result.status,
            crate::report::Status::Fail | crate::report::Status::Warn
        ) && result.evidence.stderr_tail.is_none()
        {
            result.evidence.stderr_tail = Some(tail.to_owned());
        }
    }
}

/// The checks that share the main session, in order; returns the facts they gathered.
async fn main_checks(
    spec: &ServerSpec,
    process: &ProcessSpec,
    options: &Options,
    tools: &Tools,
    main: &mut Main,
    collector: &mut Collector<'_>,
    report: &mut Report,
) -> Facts {
    let mut facts = Facts::default();
    let set = match tools.set() {
        Ok(set) => set,
        Err(reason) => {
            for id in [
                ids::TOOLS_CALL,
                ids::RESULTS_BOUNDED,
                ids::INVALID_INPUT,
                ids::UNKNOWN_TOOL,
                ids::ERRORS_ACTIONABLE,
                ids::CANCELLATION,
            ] {
                let t = collector.start(id);
                collector.push(CheckResult::skip(id, reason.clone()), t);
            }
            return facts;
        }
    };
    let t = collector.start(ids::TOOLS_CALL);
    let results = calls::successful_call(&main.probe.session, set, options, &mut facts).await;
    collector.push_all(results, t);

    let lost = "the server could not be restarted after it exited";
    let t = collector.start(ids::INVALID_INPUT);
    if main
        .ensure_alive(spec, process, options, report, "tools-call")
        .await
    {
        let results = calls::invalid_input(&main.probe.session, set, options, &mut facts).await;
        collector.push_all(results, t);
    } else {
        for id in [
            ids::INVALID_INPUT,
            ids::UNKNOWN_TOOL,
            ids::ERRORS_ACTIONABLE,
        ] {
            collector.push(CheckResult::skip(id, lost), t);
        }
    }

    let t = collector.start(ids::CANCELLATION);
    if main
        .ensure_alive(spec, process, options, report, "invalid-input")
        .await
    {
        let result = cancel::run(
            &main.probe.session,
            &main.probe.recorder,
            set,
            options,
            &mut facts,
        )
        .await;
        collector.push(result, t);
    } else {
        collector.push(CheckResult::skip(ids::CANCELLATION, lost), t);
    }
    facts
}
