//! Running the suite against one server: the main session for the read-only checks, the
//! lifecycle checks on connections (and, for stdio, processes) of their own, the HTTP
//! checks on raw requests of their own (all concurrently), and the observation checks at
//! the end. Every wait is bounded by the options' deadlines; every process started is
//! stopped, descendants included, before the report is returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_protocol::Era;
use switchboard_runtime::connect::Endpoint;
use switchboard_session::EraChoice;

use crate::catalog::{self, CHECKS, CheckDef, Eras, Runs, Stage, Transport, ids};
use crate::checks::cancel::{self, Via};
use crate::checks::http::HttpTarget;
use crate::checks::{
    Facts, ToolSet, Tools, calls, features, handshake, http, http_cancel, http_responses,
    http_shutdown, lifecycle, listing, modern, observed, utilities, wire_schema,
};
use crate::options::Options;
use crate::probe::Probe;
use crate::raw::{RawHttp, RawTarget};
use crate::recorder::Recorder;
use crate::redact::Redactor;
use crate::report::{CheckResult, Report, ServerFacts};
use crate::spec::ServerSpec;

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
                let reason = match (def.applies, def.id) {
                    (_, ids::STDOUT_PURITY) => {
                        "applies to stdio servers only: over HTTP, stdout is not the protocol channel"
                    }
                    (catalog::Applies::Http, _) => "applies to Streamable HTTP servers only",
                    (catalog::Applies::Stdio, _) => "applies to stdio servers only",
                    (catalog::Applies::Any, _) => "not applicable",
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
///
/// While it runs, this process adopts orphans
/// ([`switchboard_wire::orphans::adopt_orphans`]): the servers' daemonised descendants are
/// re-parented to it, counted by `shutdown`, and killed when the last guard goes. Where
/// adoption is refused, `shutdown` says it cannot prove that nothing was left behind.
pub async fn run(spec: &ServerSpec, options: &Options) -> Report {
    let _adoption = match switchboard_wire::orphans::adopt_orphans() {
        Ok(guard) => Some(guard),
        Err(error) => {
            tracing::debug!(%error, "the checker does not adopt orphans");
            None
        }
    };
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
        sandbox: spec.sandbox_description(),
        facts: ServerFacts::default(),
        results: Vec::new(),
        duration: Duration::ZERO,
        notes: Vec::new(),
        stderr_tail: None,
    };
    run_connected(spec, options, &mut collector, &mut report).await;
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

/// The main connection: the current probe, plus those that died and were replaced.
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

    /// Restarts the server (stdio) or reconnects (HTTP) if the connection closed; false
    /// if that failed or happened too often.
    async fn ensure_alive(
        &mut self,
        spec: &ServerSpec,
        options: &Options,
        report: &mut Report,
        during: &str,
    ) -> bool {
        let Some(reason) = self.probe.connection.close_reason() else {
            return true;
        };
        let note = match self.probe.process() {
            Some(process) => {
                let status = process
                    .wait_exit(Duration::from_millis(500))
                    .await
                    .unwrap_or_else(|| "status unknown".into());
                format!(
                    "the server exited during {during} ({status}); it was restarted for the remaining checks"
                )
            }
            None => format!(
                "the connection closed during {during} ({}); the checker reconnected for the remaining checks",
                reason.summary
            ),
        };
        report.notes.push(note);
        if self.retired.len() >= MAX_RESTARTS {
            return false;
        }
        match Probe::start(spec, options).await {
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

/// The raw-request client and what the HTTP checks need, for an HTTP server.
struct HttpSide {
    raw: RawHttp,
    era: Era,
}

async fn run_connected(
    spec: &ServerSpec,
    options: &Options,
    collector: &mut Collector<'_>,
    report: &mut Report,
) {
    let transport = spec.transport_kind();
    let t = collector.start(ids::INITIALIZE);
    let probe = match Probe::start(spec, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            collector.push_all(handshake::judge_failed(&failure, transport), t);
            report.stderr_tail = failure.stderr_tail.clone().filter(|s| !s.trim().is_empty());
            if transport == Transport::Stdio {
                let t = collector.start(ids::STDOUT_PURITY);
                let recorders: Vec<Arc<Recorder>> = failure.recorder.iter().cloned().collect();
                collector.push(observed::stdout_purity(&recorders, 0), t);
            }
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
        era: Some(negotiated.era),
        protocol_version: Some(negotiated.protocol_version.clone()),
        server_name: negotiated.server_info.as_ref().map(|i| i.name.clone()),
        server_version: negotiated.server_info.as_ref().map(|i| i.version.clone()),
    };
    let http_side = match &spec.transport {
        Endpoint::Stdio(_) => None,
        Endpoint::Http { url, headers } => {
            let target = RawTarget {
                url,
                headers,
                authorizer: spec.authorizer.clone(),
                timeout: options.request_timeout,
            };
            match RawHttp::new(target) {
                Ok(raw) => Some(HttpSide {
                    raw,
                    era: negotiated.era,
                }),
                Err(problem) => {
                    report
                        .notes
                        .push(format!("raw HTTP requests are not possible: {problem}"));
                    None
                }
            }
        }
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
    let side_started = Instant::now();
    if let Some(observer) = &options.observer {
        observer.started(&spec.name, ids::RECONNECT);
        observer.started(&spec.name, ids::SHUTDOWN);
        if transport == Transport::Http {
            for def in http_run_checks() {
                observer.started(&spec.name, def.id);
            }
        }
    }
    let lifecycle_run = lifecycle::run(spec, options, long);
    let http_run = http_checks(spec, options, http_side.as_ref());
    let main_run = main_checks(MainRun {
        spec,
        options,
        tools: &tools,
        http: http_side.as_ref(),
        main: &mut main,
        collector,
        report,
    });
    let (lifecycle_output, http_results, mut facts) =
        tokio::join!(lifecycle_run, http_run, main_run);
    collector.push_all(lifecycle_output.results, side_started);
    collector.push_all(http_results, side_started);

    let t = collector.start(ids::DISCOVER);
    let modern = modern_checks(ModernRun {
        spec,
        options,
        era: negotiated.era,
        tools: tools.set().ok(),
        http: http_side.as_ref(),
        main: &mut main,
        report,
    })
    .await;
    collector.push_all(modern.results, t);
    facts.cancelled.extend(modern.cancelled);

    let t = collector.start(ids::UTILITIES);
    let recorders = main.recorders();
    // Not restarted for this: a server that died has said so in the checks it broke.
    let result = if main.probe.connection.close_reason().is_none() {
        utilities::run(
            &main.probe.session,
            &negotiated,
            &recorders,
            options.request_timeout,
        )
        .await
    } else {
        CheckResult::skip(
            ids::UTILITIES,
            "the connection to the server had closed (see the report's notes)",
        )
    };
    collector.push(result, t);
    let t = collector.start(ids::PROMPTS_RESOURCES);
    let result = if main.probe.connection.close_reason().is_none() {
        features::run(features::Features {
            session: &main.probe.session,
            negotiated: &negotiated,
            lists: &lists,
            timeout: options.request_timeout,
        })
        .await
    } else {
        CheckResult::skip(
            ids::PROMPTS_RESOURCES,
            "the connection to the server had closed (see the report's notes)",
        )
    };
    collector.push(result, t);

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
    let t = collector.start(ids::WIRE_SCHEMA);
    collector.push(wire_schema::run(&negotiated, &recorders), t);
    let t = collector.start(ids::PROGRESS);
    collector.push(observed::progress(&recorders, transport), t);
    if transport == Transport::Stdio {
        let t = collector.start(ids::STDOUT_PURITY);
        let mut all = recorders;
        all.extend(lifecycle_output.recorders);
        collector.push(observed::stdout_purity(&all, main.oversized()), t);
    }

    report.stderr_tail = main.probe.stderr_tail();
    main.probe.close(options.shutdown_grace).await;
    attach_stderr(collector, report.stderr_tail.as_deref());
}

/// The checks run on raw HTTP requests beside the main session: the HTTP stage's and every
/// unit on raw HTTP (`shutdown`, which runs with them over HTTP, is started with the
/// lifecycle checks).
fn http_run_checks() -> impl Iterator<Item = &'static CheckDef> {
    CHECKS.iter().filter(|def| match def.runs {
        Runs::Stage(stage) => stage == Stage::Http,
        Runs::RawHttp(_) => true,
    })
}

/// The HTTP stage (`http-origin`, `http-session`, `http-responses` and, over HTTP,
/// `shutdown`: the legacy session `http-session` checked is what `shutdown` ends) and the
/// units on raw HTTP requests (nothing for stdio).
async fn http_checks(
    spec: &ServerSpec,
    options: &Options,
    side: Option<&HttpSide>,
) -> Vec<CheckResult> {
    if spec.transport_kind() != Transport::Http {
        return Vec::new();
    }
    let Some(side) = side else {
        let reason = "raw HTTP requests are not possible (see the report's notes)";
        return http_run_checks()
            .map(|def| def.id)
            .chain([ids::SHUTDOWN])
            .map(|id| CheckResult::skip(id, reason))
            .collect();
    };
    let target = HttpTarget {
        raw: &side.raw,
        era: side.era,
        pinned: spec.era,
        protocol_version: spec.protocol_version.as_deref(),
    };
    let sessions_then_shutdown = async {
        let outcome = http::sessions(&target).await;
        let shutdown = match &outcome.session {
            Ok(session) => http_shutdown::end_session(&target, session).await,
            Err(why) => http_shutdown::close_connection(spec, options, &target, why).await,
        };
        [outcome.result, shutdown]
    };
    let (origin, sessions, responses, units) = tokio::join!(
        http::origin(&target),
        sessions_then_shutdown,
        http_responses::responses(&target),
        raw_http_units(&target)
    );
    let mut results = vec![origin, responses];
    results.extend(sessions);
    results.extend(units);
    results
}

/// Every unit on raw HTTP requests the registry names, one after the other, each skipped
/// with the reason when the server's era is not one it applies to.
async fn raw_http_units(target: &HttpTarget<'_>) -> Vec<CheckResult> {
    let mut results = Vec::new();
    for def in CHECKS {
        let Runs::RawHttp(unit) = def.runs else {
            continue;
        };
        let result = match def.eras {
            Eras::Modern if target.era != Era::Modern => {
                CheckResult::skip(def.id, modern::NOT_MODERN)
            }
            Eras::Legacy if target.pinned == EraChoice::Modern => CheckResult::skip(
                def.id,
                "applies to the legacy era, and the entry pins 2026-07-28",
            ),
            _ => unit(target).await,
        };
        results.push(result);
    }
    results
}

/// What the 2026-07-28 checks run with.
struct ModernRun<'a> {
    spec: &'a ServerSpec,
    options: &'a Options,
    era: Era,
    tools: Option<&'a ToolSet>,
    http: Option<&'a HttpSide>,
    main: &'a mut Main,
    report: &'a mut Report,
}

/// The 2026-07-28 checks: over HTTP on raw requests, over stdio on the main connection
/// (restarted first if the server died).
async fn modern_checks(run: ModernRun<'_>) -> modern::ModernOutcome {
    let ModernRun {
        spec,
        options,
        era,
        tools,
        http,
        main,
        report,
    } = run;
    let transport = spec.transport_kind();
    let skip_all = |reason: &str| modern::ModernOutcome {
        results: catalog::decided_by(Stage::Modern)
            .filter(|d| d.applies_to(transport))
            .map(|d| CheckResult::skip(d.id, reason))
            .collect(),
        cancelled: Vec::new(),
    };
    let channel = match (&spec.transport, http) {
        (Endpoint::Http { .. }, Some(side)) => modern::Channel::Http(&side.raw),
        (Endpoint::Http { .. }, None) => {
            return skip_all("raw HTTP requests are not possible (see the report's notes)");
        }
        (Endpoint::Stdio(_), _) => {
            if era == Era::Modern
                && !main
                    .ensure_alive(spec, options, report, "cancellation")
                    .await
            {
                return skip_all(
                    "the server could not be reached again after the connection closed",
                );
            }
            modern::Channel::Stdio(&main.probe.connection, &main.probe.recorder)
        }
    };
    let target = modern::ModernTarget {
        channel,
        era,
        timeout: options.request_timeout,
        tools,
        options,
    };
    modern::run(&target).await
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

/// What the main checks work with.
struct MainRun<'a, 'c> {
    spec: &'a ServerSpec,
    options: &'a Options,
    tools: &'a Tools,
    http: Option<&'a HttpSide>,
    main: &'a mut Main,
    collector: &'a mut Collector<'c>,
    report: &'a mut Report,
}

/// The checks that share the main session, in order; returns the facts they gathered.
async fn main_checks(run: MainRun<'_, '_>) -> Facts {
    let MainRun {
        spec,
        options,
        tools,
        http,
        main,
        collector,
        report,
    } = run;
    let mut facts = Facts::default();
    let set = match tools.set() {
        Ok(set) => set,
        Err(reason) => {
            let needing_tools = [Stage::Call, Stage::InvalidInput, Stage::Cancellation]
                .into_iter()
                .flat_map(catalog::decided_by);
            for def in needing_tools {
                let t = collector.start(def.id);
                collector.push(CheckResult::skip(def.id, reason.clone()), t);
            }
            return facts;
        }
    };
    let t = collector.start(ids::TOOLS_CALL);
    let results = calls::successful_call(&main.probe.session, set, options, &mut facts).await;
    collector.push_all(results, t);

    let lost = "the server could not be reached again after the connection closed";
    let t = collector.start(ids::INVALID_INPUT);
    if main.ensure_alive(spec, options, report, "tools-call").await {
        let results = calls::invalid_input(&main.probe.session, set, options, &mut facts).await;
        collector.push_all(results, t);
    } else {
        for def in catalog::decided_by(Stage::InvalidInput) {
            collector.push(CheckResult::skip(def.id, lost), t);
        }
    }

    let t = collector.start(ids::CANCELLATION);
    let result = match http {
        // Legacy HTTP: cancelled on a session of the check's own, its stream kept open.
        Some(side) if side.era == Era::Legacy => {
            http_cancel::run(http_cancel::RawCancel {
                raw: &side.raw,
                tools: set,
                options,
                protocol_version: spec.protocol_version.as_deref(),
            })
            .await
        }
        _ if main
            .ensure_alive(spec, options, report, "invalid-input")
            .await =>
        {
            let target = cancel::Target {
                session: &main.probe.session,
                recorder: &main.probe.recorder,
                tools: set,
                options,
                via: if http.is_some() {
                    Via::StreamClose
                } else {
                    Via::Notification
                },
            };
            cancel::run(target, &mut facts).await
        }
        _ => CheckResult::skip(ids::CANCELLATION, lost),
    };
    collector.push(result, t);
    facts
}
