//! Switchboard's MCP server compatibility checker.
//!
//! [`run`] checks one server over the transport its [`ServerSpec`] declares: the seven
//! steps of the seed (`initialize`, `tools-list`, `tools-call`, `invalid-input`,
//! `cancellation`, `reconnect`, `shutdown`) and the specification checks around them
//! (version negotiation, capabilities declared versus used, stdout purity, pagination, tool
//! names, schemas, result size, error quality, unknown tools, response ids, notifications
//! standing in for responses, credentials in descriptions), and for Streamable HTTP servers
//! Origin validation, session handling and `DELETE` (raw requests the session never
//! sends). Over HTTP no process is started, and the stdio-only checks (`stdout-purity`,
//! `shutdown`) are skipped with the reason. Checks are data
//! ([`catalog::CHECKS`]); each outcome carries evidence. A capability the server does not
//! declare is a skip with the reason, never a failure.
//!
//! The checker never calls a tool that may write: it calls tools annotated read-only, with
//! arguments derived from their own schemas, and the tools the caller names in
//! [`Options::calls`] / [`Options::long_call`].
//!
//! From a server author's own test (see `docs/check.md` for the CI recipe):
//!
//! ```no_run
//! # async fn check() {
//! let spec = switchboard_check::ServerSpec::stdio("mine", switchboard_check::ProcessSpec {
//!     // In an integration test: env!("CARGO_BIN_EXE_my-server").
//!     program: "target/debug/my-server".into(),
//!     args: vec![], env: vec![], cwd: None, sandbox: None,
//! });
//! let report = switchboard_check::run(&spec, &switchboard_check::Options::default()).await;
//! assert!(report.passed(), "{}", report.render_text());
//! # }
//! ```
//!
//! The library never prints: progress goes to an [`Observer`], results into a [`Report`]
//! ([`Report::render_text`], [`ReportSet::to_json`], [`ReportSet::to_junit`]).
//!
//! # Map
//!
//! The compatibility checker: the check list as data (`catalog.rs`: id, severity, spec
//! section), a probe that drives real servers over stdio or Streamable HTTP (connected
//! through the runtime's `connect_endpoint` to the spec's `Endpoint`, each session's
//! frames also to the caller's `ServerSpec::tap`; one session for the read-only checks,
//! fresh connections for reconnect and shutdown; `raw.rs` sends the HTTP requests a session never would, for the Origin,
//! session-id and answer checks, the `DELETE` that is `shutdown` over HTTP, and the
//! 2026-07-28 header rules, and writes header names in capitals on a plain TCP connection
//! of its own), the checks themselves (`checks/`; `modern.rs` the 2026-07-28 server rules —
//! `server/discover`, required `_meta`, unsupported versions, header validation, removed
//! methods, cache hints, unknown resources, error codes — probed over stdio on the main
//! connection and over HTTP as raw requests through its `Prober`, which `params.rs`
//! (`x-mcp-header` annotations, `Mcp-Param-*` validation), `input.rs` (`input_required`
//! rounds: shape, declared capabilities only, retries, tampered state) and `listen.rs`
//! (`subscriptions/listen`: acknowledgment first, tags, nothing unrequested) share;
//! `utilities.rs` `ping`, `logging/setLevel` and the 2026-07-28 log opt-in; `features.rs`
//! the server's own first prompt, resource and completion; `observed.rs` what the recorders
//! saw, `progress` among it; `wire_schema.rs` every message the server sent, kept whole by
//! the recorder under caps, against the negotiated revision's JSON schema vendored in
//! `schemas/`), and the `Report` (pass/fail/warn/skip with evidence), its text, JSON
//! (`switchboard-check-report/1`) and JUnit renderings and expected-failures baselines.
//! Produces data; never prints. This crate is an API boundary: its public items are what
//! other crates and hosts use.

pub mod baseline;
pub mod catalog;
mod checks;
mod error;
mod options;
mod probe;
mod raw;
mod recorder;
mod redact;
mod render;
mod report;
mod run;
mod schema;
mod spec;

pub use baseline::{Baseline, BaselineEntry, BaselineOutcome};

pub use catalog::{CHECKS, CheckDef, Severity};
pub use error::CheckError;
pub use options::{Observer, Options, ToolCall};
pub use report::{
    CheckResult, Counts, Evidence, Exchange, REPORT_FORMAT, Report, ReportSet, ServerFacts, Status,
};
pub use run::{run, run_blocking};
pub use spec::ServerSpec;
pub use switchboard_runtime::connect::Endpoint;
pub use switchboard_session::EraChoice;
pub use switchboard_wire::stdio::ProcessSpec;

/// `docs/check.md`, whose Rust snippets are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/check.md")]
pub struct CheckGuide;
