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
pub use spec::{ServerSpec, TransportSpec};
pub use switchboard_session::EraChoice;
pub use switchboard_wire::stdio::ProcessSpec;

/// `docs/check.md`, whose Rust snippets are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/check.md")]
pub struct CheckGuide;
