//! Outcomes and reports: what each check found, with evidence (what was sent, what came
//! back, timings, the server's stderr), per server and for a whole run, and the versioned
//! JSON form documented in `docs/check-report.md`.

use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_protocol::Era;

use crate::catalog::{self, CheckDef, SPEC_BASE, Severity};
use crate::redact::Redactor;

/// The `format` field of the JSON report.
pub const REPORT_FORMAT: &str = "switchboard-check-report/1";

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Nothing wrong was found.
    Pass,
    /// An error-severity finding.
    Fail,
    /// A warning-severity finding.
    Warn,
    /// Not run, with the reason in the summary.
    Skip,
}

impl Status {
    /// `pass`, `fail`, `warn` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Skip => "skip",
        }
    }
}

/// One step of evidence: what the checker sent and what came back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Exchange {
    /// What the checker was doing.
    pub label: String,
    /// The message sent (`{"method": …, "params": …}`), if any.
    pub sent: Option<Value>,
    /// What came back: `{"result": …}`, `{"error": …}`, or a description of silence.
    pub received: Option<Value>,
    /// How long it took.
    pub elapsed: Option<Duration>,
}

/// Why a check came out as it did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    /// Exchanges in order.
    pub exchanges: Vec<Exchange>,
    /// Observations (timings, counts, excerpts of what the server sent on its own).
    pub notes: Vec<String>,
    /// The server's recent stderr (attached to failures and warnings).
    pub stderr_tail: Option<String>,
}

impl Evidence {
    /// Evidence with one note.
    pub fn note(text: impl Into<String>) -> Evidence {
        Evidence {
            notes: vec![text.into()],
            ..Evidence::default()
        }
    }
}

/// A finding inside a check, with its own level (a check may mix MUST and SHOULD findings).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    pub(crate) level: Severity,
    pub(crate) text: String,
}

impl Finding {
    pub(crate) fn error(text: impl Into<String>) -> Finding {
        Finding {
            level: Severity::Error,
            text: text.into(),
        }
    }

    pub(crate) fn warning(text: impl Into<String>) -> Finding {
        Finding {
            level: Severity::Warning,
            text: text.into(),
        }
    }
}

/// The outcome of one check on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// The check's id (see [`catalog::CHECKS`]).
    pub id: &'static str,
    /// Pass, fail, warn or skip.
    pub status: Status,
    /// One line: what was found, or why it was skipped.
    pub summary: String,
    /// What to do about a failure or warning.
    pub fix: Option<String>,
    /// What was sent and what came back.
    pub evidence: Evidence,
    /// How long the check took.
    pub duration: Duration,
    /// True when a failure is listed in the baseline (it does not fail the run).
    pub baselined: bool,
}

impl CheckResult {
    fn new(id: &'static str, status: Status, summary: String, evidence: Evidence) -> CheckResult {
        let fix = match status {
            Status::Fail | Status::Warn => catalog::find(id).map(|d| d.fix.to_owned()),
            Status::Pass | Status::Skip => None,
        };
        CheckResult {
            id,
            status,
            summary,
            fix,
            evidence,
            duration: Duration::ZERO,
            baselined: false,
        }
    }

    /// A pass.
    pub(crate) fn pass(id: &'static str, summary: impl Into<String>, evidence: Evidence) -> Self {
        CheckResult::new(id, Status::Pass, summary.into(), evidence)
    }

    /// A skip with its reason.
    pub(crate) fn skip(id: &'static str, reason: impl Into<String>) -> Self {
        CheckResult::new(id, Status::Skip, reason.into(), Evidence::default())
    }

    /// A finding at the check's own severity: fail for error checks, warn for warning ones.
    pub(crate) fn finding(
        id: &'static str,
        summary: impl Into<String>,
        evidence: Evidence,
    ) -> Self {
        let status = match catalog::find(id).map(|d| d.severity) {
            Some(Severity::Warning) => Status::Warn,
            _ => Status::Fail,
        };
        CheckResult::new(id, status, summary.into(), evidence)
    }

    /// Pass when there are no findings; otherwise fail (any error finding) or warn, with
    /// the findings as the summary.
    pub(crate) fn from_findings(
        id: &'static str,
        findings: &[Finding],
        pass_summary: impl Into<String>,
        mut evidence: Evidence,
    ) -> Self {
        if findings.is_empty() {
            return CheckResult::pass(id, pass_summary, evidence);
        }
        let fails = findings.iter().any(|f| f.level == Severity::Error)
            && catalog::find(id).is_some_and(|d| d.severity == Severity::Error);
        let status = if fails { Status::Fail } else { Status::Warn };
        let first = findings
            .iter()
            .find(|f| f.level == Severity::Error)
            .unwrap_or(&findings[0]);
        let mut summary = first.text.clone();
        if findings.len() > 1 {
            summary.push_str(&format!(" (and {} more)", findings.len() - 1));
        }
        for finding in findings {
            let level = match finding.level {
                Severity::Error => "MUST",
                Severity::Warning => "SHOULD",
            };
            evidence.notes.push(format!("[{level}] {}", finding.text));
        }
        CheckResult::new(id, status, summary, evidence)
    }

    /// The check's definition.
    pub fn def(&self) -> &'static CheckDef {
        catalog::find(self.id).unwrap_or(&catalog::CHECKS[0])
    }

    /// True for a failure the baseline does not excuse.
    pub fn is_failure(&self) -> bool {
        self.status == Status::Fail && !self.baselined
    }

    fn to_json(&self) -> Value {
        let def = self.def();
        json!({
            "id": self.id,
            "title": def.title,
            "severity": def.severity.as_str(),
            "spec": {"section": def.spec, "url": def.spec_url()},
            "seed_step": def.seed_step,
            "status": self.status.as_str(),
            "summary": self.summary,
            "fix": self.fix,
            "baselined": self.baselined,
            "duration_ms": millis(self.duration),
            "evidence": {
                "exchanges": self.evidence.exchanges.iter().map(|e| json!({
                    "label": e.label,
                    "sent": e.sent,
                    "received": e.received,
                    "elapsed_ms": e.elapsed.map(millis),
                })).collect::<Vec<_>>(),
                "notes": self.evidence.notes,
                "stderr_tail": self.evidence.stderr_tail,
            },
        })
    }
}

/// Counts per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Passed checks.
    pub pass: usize,
    /// Failed checks (baselined ones included).
    pub fail: usize,
    /// Warnings.
    pub warn: usize,
    /// Skipped checks.
    pub skip: usize,
    /// Failures excused by the baseline.
    pub baselined: usize,
}

impl Counts {
    fn add(&mut self, result: &CheckResult) {
        match result.status {
            Status::Pass => self.pass += 1,
            Status::Fail => self.fail += 1,
            Status::Warn => self.warn += 1,
            Status::Skip => self.skip += 1,
        }
        if result.baselined {
            self.baselined += 1;
        }
    }

    fn merge(&mut self, other: Counts) {
        self.pass += other.pass;
        self.fail += other.fail;
        self.warn += other.warn;
        self.skip += other.skip;
        self.baselined += other.baselined;
    }

    fn to_json(self) -> Value {
        json!({
            "pass": self.pass, "fail": self.fail, "warn": self.warn,
            "skip": self.skip, "baselined": self.baselined,
        })
    }
}

/// What the handshake established, for the report header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerFacts {
    /// The era the session negotiated.
    pub era: Option<Era>,
    /// The negotiated protocol version.
    pub protocol_version: Option<String>,
    /// The server's self-description (`name`, `version`).
    pub server_name: Option<String>,
    /// Its version string.
    pub server_version: Option<String>,
}

/// The report for one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The server's name.
    pub server: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The sandbox a stdio server ran in (`on`, or `partial (…)` naming what its policy
    /// relaxes); `None`: none.
    pub sandbox: Option<String>,
    /// What the handshake established.
    pub facts: ServerFacts,
    /// One result per check, in catalog order.
    pub results: Vec<CheckResult>,
    /// How long the whole run took.
    pub duration: Duration,
    /// Things worth knowing about the run itself (e.g. the server had to be restarted).
    pub notes: Vec<String>,
    /// The last stderr output of the server's main process.
    pub stderr_tail: Option<String>,
}

impl Report {
    /// The result of one check.
    pub fn result(&self, id: &str) -> Option<&CheckResult> {
        self.results.iter().find(|r| r.id == id)
    }

    /// Failures the baseline does not excuse.
    pub fn failures(&self) -> Vec<&CheckResult> {
        self.results.iter().filter(|r| r.is_failure()).collect()
    }

    /// True when nothing failed (warnings and skips allowed).
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// The ids of the checks with this status.
    pub fn ids_with(&self, status: Status) -> Vec<&'static str> {
        self.results
            .iter()
            .filter(|r| r.status == status)
            .map(|r| r.id)
            .collect()
    }

    /// Counts per status.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for result in &self.results {
            counts.add(result);
        }
        counts
    }

    /// The readable terminal report.
    pub fn render_text(&self) -> String {
        crate::render::server_text(self)
    }

    /// This server's part of the JSON report.
    pub fn to_json(&self) -> Value {
        let server_info = match (&self.facts.server_name, &self.facts.server_version) {
            (None, None) => Value::Null,
            (name, version) => json!({"name": name, "version": version}),
        };
        let mut json = json!({
            "name": self.server,
            "transport": self.transport,
            "era": self.facts.era.map(|era| era.to_string()),
            "protocol_version": self.facts.protocol_version,
            "server_info": server_info,
            "duration_ms": millis(self.duration),
            "summary": self.counts().to_json(),
            "notes": self.notes,
            "stderr_tail": self.stderr_tail,
            "checks": self.results.iter().map(CheckResult::to_json).collect::<Vec<_>>(),
        });
        // Only for a sandboxed server, so that other reports read as before.
        if let Some(sandbox) = &self.sandbox {
            json["sandbox"] = json!(sandbox);
        }
        json
    }

    /// Replaces configured secrets and credential-looking strings in everything the report
    /// shows.
    pub(crate) fn redact(&mut self, redactor: &Redactor) {
        for result in &mut self.results {
            result.summary = redactor.text(&result.summary);
            let evidence = &mut result.evidence;
            for note in &mut evidence.notes {
                *note = redactor.text(note);
            }
            for exchange in &mut evidence.exchanges {
                for value in [&mut exchange.sent, &mut exchange.received]
                    .into_iter()
                    .flatten()
                {
                    redactor.value(value);
                }
            }
            if let Some(tail) = &mut evidence.stderr_tail {
                *tail = redactor.text(tail);
            }
        }
        for note in &mut self.notes {
            *note = redactor.text(note);
        }
        if let Some(tail) = &mut self.stderr_tail {
            *tail = redactor.text(tail);
        }
    }
}

/// The reports of a whole run, with the baseline's verdict when one was given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportSet {
    /// One report per server, in the order they were named.
    pub reports: Vec<Report>,
    /// The baseline's verdict, when a baseline was applied.
    pub baseline: Option<crate::baseline::BaselineOutcome>,
}

impl ReportSet {
    /// Counts over all servers.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for report in &self.reports {
            counts.merge(report.counts());
        }
        counts
    }

    /// True when no unexcused failure was found and the baseline (if any) is not stale.
    pub fn passed(&self) -> bool {
        self.reports.iter().all(Report::passed)
            && self.baseline.as_ref().is_none_or(|b| b.stale.is_empty())
    }

    /// The terminal report for every server, then the totals.
    pub fn render_text(&self) -> String {
        crate::render::set_text(self)
    }

    /// JUnit XML (one test suite per server, one test case per check).
    pub fn to_junit(&self) -> String {
        crate::render::junit(self)
    }

    /// The JSON report (`switchboard-check-report/1`, see `docs/check-report.md`).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("format".into(), REPORT_FORMAT.into());
        out.insert(
            "generator".into(),
            json!({"name": "switchboard-check", "version": env!("CARGO_PKG_VERSION")}),
        );
        out.insert("spec_base".into(), SPEC_BASE.into());
        out.insert("passed".into(), self.passed().into());
        let mut summary = self.counts().to_json();
        summary["servers"] = self.reports.len().into();
        out.insert("summary".into(), summary);
        out.insert(
            "servers".into(),
            self.reports.iter().map(Report::to_json).collect(),
        );
        out.insert(
            "baseline".into(),
            match &self.baseline {
                Some(b) => json!({
                    "expected": b.expected, "unexpected": b.unexpected, "stale": b.stale,
                    "unmatched": b.unmatched,
                }),
                None => Value::Null,
            },
        );
        Value::Object(out)
    }
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A JSON value cut to about `max` bytes of serialized text: larger values become a string
/// excerpt that says how much was left out.
pub(crate) fn capped(value: &Value, max: usize) -> Value {
    let text = value.to_string();
    if text.len() <= max {
        return value.clone();
    }
    Value::String(switchboard_wire::excerpt(text.as_bytes(), max))
}
