//! `switchboard check`: runs the compatibility suite (`switchboard-check`) against
//! configured servers and renders the report (text, `--json`, `--junit`), applying a
//! `--baseline` of known failures. Exit codes: 0 no failures, 1 failures (or a stale
//! baseline), 2 usage or configuration error.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use switchboard_check::{
    Baseline, CheckError, CheckResult, Observer, Options, ReportSet, ServerSpec, Status, ToolCall,
};
use switchboard_config::{ServerEntry, TransportEntry};
use switchboard_protocol::Era;
use switchboard_runtime::ConnectOutcome;

use crate::arguments::{self, ArgumentSource, Checked};
use crate::terminal::{self, JsonLayout};
use crate::{Failure, connect};

impl CheckArgs {
    /// Whether the JSON report was asked for.
    pub(crate) fn wants_json(&self) -> bool {
        self.json
    }
}

/// Flags of `switchboard check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The config file (mcp.json). Without it, the servers discovery finds (this project's
    /// and the user's files, `config list` shows them) are checked, and when it finds none,
    /// the bundled example server.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Only these servers (default: every enabled server in the config).
    #[arg(
        value_name = "SERVER",
        add = clap_complete::ArgValueCandidates::new(crate::completions::server_names)
    )]
    servers: Vec<String>,
    /// Print the JSON report (format `switchboard-check-report/1`) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Known failures in the conformance suite's expected-failures YAML form; listed
    /// failures do not fail the run, listed checks that pass do.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write this run's failures and warnings to FILE as a baseline (for --baseline): adopt
    /// a server as it is, then fix it check by check.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Allow calling TOOL with ARGS for `tools-call` and the other checks; repeatable.
    /// ARGS is one word in any form `call` takes: a JSON object, @FILE, or key=value pairs
    /// (quoted together: 'a=2 b=3'), typed by the tool's schema. Without it only tools
    /// annotated read-only are called.
    #[arg(long, num_args = 2, value_names = ["TOOL", "ARGS"], action = clap::ArgAction::Append)]
    call: Vec<String>,
    /// The long call `cancellation` starts and cancels, e.g. --long-call slow 'seconds=5'
    /// (ARGS as for --call).
    #[arg(long, num_args = 2, value_names = ["TOOL", "ARGS"])]
    long_call: Option<Vec<String>>,
    /// Deadline for each request, e.g. 5s (default 5s).
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Deadline for starting and initializing a server (default 10s).
    #[arg(long, value_name = "DURATION")]
    connect_timeout: Option<String>,
    /// Grace period after a cancellation and for exiting after stdin closes (default 1s).
    #[arg(long, value_name = "DURATION")]
    grace: Option<String>,
}

const EXIT_FAILURES: u8 = 1;

fn duration(flag: &str, text: Option<&str>) -> Result<Option<std::time::Duration>, String> {
    text.map(|t| switchboard_config::parse_duration(t).map_err(|e| format!("{flag}: {e}")))
        .transpose()
}

/// A `--call` or `--long-call` as given: its arguments are JSON already, or `key=value`
/// pairs that the tool's schema types once a server lists the tool.
#[derive(Debug, Clone)]
enum GivenCall {
    Ready(ToolCall),
    Pairs { tool: String, pairs: Vec<String> },
}

impl GivenCall {
    /// Reads `TOOL ARGS`: a JSON object (its errors as before), or ARGS split into words as
    /// the shell splits a line and read as `call` reads its argument words.
    fn read(flag: &str, tool: &str, arguments: &str) -> Result<GivenCall, String> {
        if arguments.trim_start().starts_with('{') {
            return ToolCall::parse(tool, arguments)
                .map(GivenCall::Ready)
                .map_err(|e| format!("{flag}: {e}"));
        }
        let words =
            crate::shell::split_words(arguments).map_err(|e| format!("{flag} {tool}: {e}"))?;
        let ready = |arguments: serde_json::Value| {
            GivenCall::Ready(ToolCall {
                tool: tool.to_owned(),
                arguments,
            })
        };
        match ArgumentSource::from_words(&words).map_err(|e| format!("{flag} {tool}: {e}"))? {
            ArgumentSource::Nothing => Ok(ready(serde_json::json!({}))),
            ArgumentSource::Json(value) => Ok(ready(value)),
            ArgumentSource::Pairs(pairs) => Ok(GivenCall::Pairs {
                tool: tool.to_owned(),
                pairs,
            }),
        }
    }
}

/// The calls given with `--call` and `--long-call`.
#[derive(Debug, Clone, Default)]
struct GivenCalls {
    calls: Vec<GivenCall>,
    long_call: Option<GivenCall>,
}

impl GivenCalls {
    fn read(args: &CheckArgs) -> Result<GivenCalls, String> {
        let mut given = GivenCalls::default();
        for pair in args.call.chunks(2) {
            if let [tool, arguments] = pair {
                given
                    .calls
                    .push(GivenCall::read("--call", tool, arguments)?);
            }
        }
        if let Some([tool, arguments]) = args.long_call.as_deref() {
            given.long_call = Some(GivenCall::read("--long-call", tool, arguments)?);
        }
        Ok(given)
    }

    fn has_pairs(&self) -> bool {
        self.calls
            .iter()
            .chain(&self.long_call)
            .any(|call| matches!(call, GivenCall::Pairs { .. }))
    }

    /// The calls for one server, pairs typed by its tools' schemas (read with one
    /// `tools/list` before the checks start). A tool the server does not list, or a server
    /// that cannot be reached, keeps empty arguments: the checks say why.
    async fn typed_for(&self, entry: &ServerEntry, options: &mut Options) -> Result<(), Failure> {
        let listed = if self.has_pairs() {
            listed_tools(entry, options.request_timeout).await
        } else {
            Vec::new()
        };
        let typed = |call: &GivenCall| -> Result<ToolCall, Failure> {
            let (tool, pairs) = match call {
                GivenCall::Ready(call) => return Ok(call.clone()),
                GivenCall::Pairs { tool, pairs } => (tool, pairs),
            };
            let arguments = match listed.iter().find(|t| t.name == *tool) {
                None => serde_json::json!({}),
                Some(listed) => {
                    let schema = switchboard_runtime::schema::normalize(&listed.input_schema)
                        .unwrap_or(serde_json::Value::Bool(true));
                    arguments::from_pairs(pairs, &schema, Checked::AgainstSchema).map_err(
                        |problem| {
                            Failure::Usage(format!(
                                "--call {tool} on server `{}`: {problem}",
                                entry.name
                            ))
                        },
                    )?
                }
            };
            Ok(ToolCall {
                tool: tool.clone(),
                arguments,
            })
        };
        options.calls = self.calls.iter().map(typed).collect::<Result<_, _>>()?;
        options.long_call = self.long_call.as_ref().map(typed).transpose()?;
        Ok(())
    }
}

/// The tools `entry`'s server lists, or none when it cannot be reached or listed (its
/// checks then report why).
async fn listed_tools(
    entry: &ServerEntry,
    timeout: std::time::Duration,
) -> Vec<switchboard_protocol::Tool> {
    let Ok(server) = connect::ConnectedServer::connect(entry, Some(timeout)).await else {
        return Vec::new();
    };
    let listing = server.session.list_tools().await;
    server.close().await;
    listing.map(|listing| listing.items).unwrap_or_default()
}

fn options(args: &CheckArgs) -> Result<Options, String> {
    let mut options = Options::default();
    if let Some(t) = duration("--timeout", args.timeout.as_deref())? {
        options.request_timeout = t;
    }
    if let Some(t) = duration("--connect-timeout", args.connect_timeout.as_deref())? {
        options.connect_timeout = t;
    }
    if let Some(t) = duration("--grace", args.grace.as_deref())? {
        options.cancel_grace = t;
        options.shutdown_grace = t;
    }
    Ok(options)
}

/// The servers to check: the named ones, or every enabled one.
fn select(args: &CheckArgs) -> Result<Vec<ServerEntry>, Failure> {
    let loaded = connect::load_config(args.config.as_deref())?;
    let file = loaded.file;
    let mut selected = Vec::new();
    let mut errors = Vec::new();
    if args.servers.is_empty() {
        errors.extend(file.errors().map(|e| e.to_string()));
        selected.extend(file.entries().filter(|e| e.enabled).cloned());
    } else {
        for name in &args.servers {
            match file.find(name) {
                Some(Ok(entry)) => selected.push(entry.clone()),
                Some(Err(error)) => errors.push(error.to_string()),
                None => errors.push(format!(
                    "no server named `{name}` in {}; configured: {}",
                    file.path.display(),
                    file.servers
                        .iter()
                        .map(|s| match s {
                            Ok(entry) => entry.name.clone(),
                            Err(error) => error.name.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Usage(errors.join("\n")));
    }
    if selected.is_empty() {
        return Err(Failure::Usage(format!(
            "no enabled servers in {}",
            file.path.display()
        )));
    }
    Ok(selected)
}

/// Shows which check is running, on one rewritten line of a terminal's stderr.
struct TerminalProgress;

impl Observer for TerminalProgress {
    fn started(&self, server: &str, check: &'static str) {
        terminal::status_line(&format!("checking {server}: {check} …"));
    }

    fn finished(&self, server: &str, result: &CheckResult) {
        let mark = match result.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Warn => "warn",
            Status::Skip => "skip",
        };
        terminal::status_line(&format!("checking {server}: {} {mark}", result.id));
    }
}

/// Runs the suite; `Err` is a usage or configuration error (exit 2).
pub(crate) async fn run(args: CheckArgs) -> Result<u8, Failure> {
    let mut options = options(&args)?;
    let given = GivenCalls::read(&args).map_err(Failure::Usage)?;
    let baseline = match &args.baseline {
        Some(path) => Some(Baseline::load(path).map_err(|error| match &error {
            CheckError::BaselineRead { source, .. }
                if source.kind() != std::io::ErrorKind::NotFound =>
            {
                Failure::System(error.to_string())
            }
            _ => Failure::Usage(error.to_string()),
        })?),
        None => None,
    };
    let entries = select(&args)?;
    let progress = terminal::stderr_is_terminal();
    if progress {
        options.observer = Some(Arc::new(TerminalProgress));
    }
    let mut set = ReportSet::default();
    for entry in &entries {
        let mut spec = ServerSpec::from_entry(entry);
        if let (Some(policy), switchboard_check::Endpoint::Stdio(_)) =
            (entry.sandbox.policy(), &spec.transport)
        {
            let launcher = crate::sandbox::launcher().ok_or_else(|| {
                Failure::Usage(
                    "cannot locate the switchboard executable to launch the sandbox".into(),
                )
            })?;
            spec.transport.sandbox_in(policy, launcher);
        }
        if let TransportEntry::Http { url, .. } = &entry.transport {
            spec.authorizer = Some(connect::saved_login_authorizer(entry, url, None)?);
        }
        spec.tap = crate::trace::tap_for(entry);
        given.typed_for(entry, &mut options).await?;
        let report = switchboard_check::run(&spec, &options).await;
        // The checker probes without the era memo's hint (what it checks), but what it
        // found is remembered for the other commands.
        let negotiated = report
            .facts
            .protocol_version
            .as_deref()
            .and_then(Era::of_version);
        if let Some(era) = negotiated {
            crate::era_memo::learn(entry, None, ConnectOutcome::Negotiated(era));
        }
        set.reports.push(report);
    }
    if progress {
        terminal::clear_status_line();
    }
    if let Some(path) = &args.write_baseline {
        let written = Baseline::written_for(&set.reports);
        switchboard_config::atomic::replace_file(
            path,
            written.as_bytes(),
            switchboard_config::atomic::Permissions::KeepExisting,
        )
        .map_err(|e| {
            Failure::System(format!(
                "could not write --write-baseline file `{}`: {e}",
                path.display()
            ))
        })?;
        let entries = written
            .lines()
            .filter(|line| line.starts_with("  - "))
            .count();
        terminal::say(format_args!(
            "switchboard check: wrote the baseline {} ({entries} {}); `--baseline {}` expects {}",
            path.display(),
            if entries == 1 { "entry" } else { "entries" },
            path.display(),
            if entries == 1 { "it" } else { "them" },
        ));
    }
    if let Some(baseline) = &baseline {
        set.baseline = Some(baseline.apply(&mut set.reports));
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, set.to_junit()).map_err(|e| {
            Failure::System(format!(
                "could not write --junit file `{}`: {e}",
                path.display()
            ))
        })?;
    }
    if args.json {
        terminal::print_json(&set.to_json(), JsonLayout::Pretty);
    } else {
        terminal::print(&set.render_text());
    }
    Ok(if set.passed() { 0 } else { EXIT_FAILURES })
}
