//! `reconnect` and `shutdown`: each on connections (and, for stdio, processes) of its own.
//! Reconnect drops the transport with a request outstanding (stdio: SIGKILL the server;
//! HTTP: close the client's connection, which ends a legacy session with `DELETE`) and
//! connects afresh; shutdown (stdio; over HTTP see `http_shutdown.rs`) closes stdin and watches the process and
//! everything it started: its tree, every process carrying its marker (daemons included),
//! and, while the checker adopts orphans, processes re-parented to the checker without a
//! marker. When it cannot see everything it says so instead of passing.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_protocol::Era;
use switchboard_session::CallOptions;
use switchboard_wire::orphans;
use switchboard_wire::proc::{self, ProcessId};
use switchboard_wire::stdio::{ShutdownGrace, ShutdownStep};

use super::listing::walk;
use super::{Outcome, ms, outcome_of};
use crate::catalog::ids;
use crate::options::{Options, ToolCall};
use crate::probe::{Probe, StartFailure, kill_tree};
use crate::recorder::Recorder;
use crate::report::{CheckResult, Evidence, Exchange, Finding};
use crate::spec::ServerSpec;

/// What the lifecycle checks leave for `stdout-purity`.
pub(crate) struct LifecycleOutput {
    pub(crate) results: Vec<CheckResult>,
    pub(crate) recorders: Vec<std::sync::Arc<Recorder>>,
}

/// How long the client may take to reject the outstanding request once the server is gone.
const REJECT_DEADLINE: Duration = Duration::from_secs(3);

async fn names_of(probe: &Probe, options: &Options) -> Option<Vec<String>> {
    probe.session.negotiated().capabilities.tools.as_ref()?;
    let walk = walk(&probe.session, options.request_timeout).await;
    let mut names = walk.names();
    names.sort();
    names.dedup();
    Some(names)
}

/// A probe of the check's own, its recorder (or the failed start's) kept in `recorders`.
async fn start_recorded(
    spec: &ServerSpec,
    options: &Options,
    recorders: &mut Vec<std::sync::Arc<Recorder>>,
) -> Result<Probe, StartFailure> {
    match Probe::start(spec, options).await {
        Ok(probe) => {
            recorders.push(probe.recorder.clone());
            Ok(probe)
        }
        Err(mut failure) => {
            recorders.extend(failure.recorder.take());
            Err(failure)
        }
    }
}

/// How the reconnect check speaks of the transport it drops.
struct DropWords {
    /// "instance" or "connection".
    instance: &'static str,
    /// What happened, as a clause: "the server was killed".
    dropped: &'static str,
    /// What the check does, as an order: "SIGKILL the server".
    action: &'static str,
}

impl DropWords {
    fn for_transport(kind: crate::catalog::Transport) -> DropWords {
        match kind {
            crate::catalog::Transport::Stdio => DropWords {
                instance: "instance",
                dropped: "the server was killed",
                action: "SIGKILL the server",
            },
            crate::catalog::Transport::Http => DropWords {
                instance: "connection",
                dropped: "the connection was dropped",
                action: "drop the connection",
            },
        }
    }
}

/// The request left outstanding when the transport is dropped: the long call when there is
/// one, else a listing, else the era's cheapest request.
struct Outstanding {
    method: &'static str,
    params: Value,
    /// How long after sending it the transport is dropped.
    delay: Duration,
}

impl Outstanding {
    fn pick(long: Option<&ToolCall>, lists_tools: bool, era: Era) -> Outstanding {
        let (method, params, delay) = match (long, lists_tools) {
            (Some(call), _) => (
                "tools/call",
                json!({"name": call.tool, "arguments": call.arguments}),
                Duration::from_millis(200),
            ),
            (None, true) => ("tools/list", json!({}), Duration::ZERO),
            (None, false) => match era {
                Era::Legacy => ("ping", json!({}), Duration::ZERO),
                Era::Modern => ("server/discover", json!({}), Duration::ZERO),
            },
        };
        Outstanding {
            method,
            params,
            delay,
        }
    }
}

/// How the outstanding request ended once the transport was dropped.
enum DropOutcome {
    /// The server answered first; the rejection could not be observed.
    Answered,
    /// The session ended it with another outcome than a transport error.
    Ended(Outcome),
    /// Not ended within the deadline.
    NotRejected,
    /// Rejected as closed, with the reason's first line.
    Rejected(String),
}

/// What dropping the transport under an outstanding request showed.
struct DropSeen {
    outstanding: Outstanding,
    outcome: DropOutcome,
    /// From the drop to the rejection.
    rejected_after: Duration,
    /// The first line of the transport's close reason, if it closed within the deadline.
    closed: Option<String>,
}

/// The probe: sends the outstanding request, drops the transport `delay` later, waits
/// (bounded) for the request to end and the transport to close, and cleans the server up.
async fn drop_under_request(
    first: &Probe,
    outstanding: Outstanding,
    options: &Options,
) -> DropSeen {
    let call_options = CallOptions {
        timeout: Some(options.request_timeout.max(options.long_call_duration * 2)),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let delay = outstanding.delay;
    let request = first.session.request(
        outstanding.method,
        Some(outstanding.params.clone()),
        &call_options,
    );
    let killer = async {
        tokio::task::yield_now().await;
        tokio::time::sleep(delay).await;
        let killed_at = Instant::now();
        match first.process() {
            Some(process) => process.kill(),
            // Closing the client's side: the HTTP transport stops its requests (closing
            // their streams) and ends a legacy session with DELETE.
            None => first.connection.close_write().await,
        }
        killed_at
    };
    let (ended, killed_at) = tokio::join!(
        tokio::time::timeout(REJECT_DEADLINE + delay + options.request_timeout, request),
        killer
    );
    let rejected_after = started.elapsed().saturating_sub(killed_at - started);
    let outcome = match ended {
        Ok(Ok(_)) => DropOutcome::Answered,
        Ok(Err(error)) => match outcome_of(error) {
            Outcome::Closed(reason) => {
                DropOutcome::Rejected(reason.lines().next().unwrap_or("").to_owned())
            }
            other => DropOutcome::Ended(other),
        },
        Err(_) => DropOutcome::NotRejected,
    };
    let closed = tokio::time::timeout(REJECT_DEADLINE, first.connection.closed())
        .await
        .ok()
        .map(|reason| reason.to_string().lines().next().unwrap_or("").to_owned());
    if let Some(process) = first.process() {
        let _ = process.wait_exit(Duration::from_secs(1)).await;
        kill_tree(process).await;
    }
    DropSeen {
        outstanding,
        outcome,
        rejected_after,
        closed,
    }
}

/// The judgement of the drop: its exchange and notes in `evidence`, its findings.
fn judge_drop(seen: &DropSeen, words: &DropWords, evidence: &mut Evidence) -> Vec<Finding> {
    let dropped = words.dropped;
    let mut findings = Vec::new();
    let received = match &seen.outcome {
        DropOutcome::Answered => {
            evidence.notes.push(
                "the server answered before the transport was dropped; the rejection could not be observed"
                    .into(),
            );
            json!({"result": "answered before the transport was dropped"})
        }
        DropOutcome::Rejected(reason) => {
            if seen.rejected_after > REJECT_DEADLINE {
                findings.push(Finding::error(format!(
                    "the outstanding request was rejected only {} ms after {dropped}",
                    ms(seen.rejected_after)
                )));
            }
            json!({"rejected": reason})
        }
        DropOutcome::Ended(other) => {
            findings.push(Finding::error(format!(
                "the outstanding request ended with {other:?} instead of a transport error"
            )));
            json!({"ended": format!("{other:?}")})
        }
        DropOutcome::NotRejected => {
            findings.push(Finding::error(format!(
                "the outstanding request was not rejected after {dropped}"
            )));
            json!({"no_response": "not rejected"})
        }
    };
    let Outstanding {
        method,
        params,
        delay,
    } = &seen.outstanding;
    evidence.exchanges.push(Exchange {
        label: format!("send `{method}`, {} {} ms later", words.action, ms(*delay)),
        sent: Some(json!({"method": method, "params": params})),
        received: Some(received),
        elapsed: Some(seen.rejected_after),
    });
    match &seen.closed {
        Some(reason) => evidence.notes.push(format!("transport closed: {reason}")),
        None => findings.push(Finding::error(format!(
            "the transport did not close after {dropped}"
        ))),
    }
    findings
}

/// The judgement of the fresh connection's listing against the first one's.
fn judge_listings(
    before: &[String],
    after: &[String],
    instance: &str,
    evidence: &mut Evidence,
) -> Option<Finding> {
    let gone: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    let new: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    if gone.is_empty() && new.is_empty() {
        evidence.notes.push(format!(
            "both {instance}s list the same {} tools",
            before.len()
        ));
        return None;
    }
    Some(Finding::error(format!(
        "the fresh {instance} lists different tools: gone {gone:?}, new {new:?}"
    )))
}

/// The reconnect check: a first connection dropped under an outstanding request, then a
/// fresh one that must initialize and list the same tools.
pub(crate) async fn reconnect(
    spec: &ServerSpec,
    options: &Options,
    long: Option<ToolCall>,
    recorders: &mut Vec<std::sync::Arc<Recorder>>,
) -> CheckResult {
    let words = DropWords::for_transport(spec.transport_kind());
    let instance = words.instance;
    let what = format!("a second {instance} to the server did not initialize");
    let first = match start_recorded(spec, options, recorders).await {
        Ok(probe) => probe,
        Err(failure) => return failure.into_finding(ids::RECONNECT, &what),
    };
    let names_before = names_of(&first, options).await;
    let outstanding = Outstanding::pick(
        long.as_ref(),
        names_before.is_some(),
        first.session.negotiated().era,
    );
    let method = outstanding.method;
    let dropped = drop_under_request(&first, outstanding, options).await;
    let mut evidence = Evidence::default();
    let mut findings = judge_drop(&dropped, &words, &mut evidence);

    let second = match start_recorded(spec, options, recorders).await {
        Ok(probe) => probe,
        Err(failure) => {
            findings.push(Finding::error(format!(
                "a fresh connection did not initialize: {}",
                failure.error.to_string().lines().next().unwrap_or("")
            )));
            evidence.stderr_tail = failure.stderr_tail;
            return CheckResult::from_findings(ids::RECONNECT, &findings, "", evidence);
        }
    };
    evidence.notes.push(format!(
        "a fresh {} initialized in {} ms",
        if second.process().is_some() {
            "process"
        } else {
            "connection"
        },
        ms(second.connect_elapsed)
    ));
    let names_after = names_of(&second, options).await;
    if let (Some(before), Some(after)) = (&names_before, &names_after) {
        findings.extend(judge_listings(before, after, instance, &mut evidence));
    }
    second.close(options.shutdown_grace).await;
    let dropped = words.dropped;
    let summary = match &names_before {
        Some(names) => format!(
            "outstanding `{method}` rejected when {dropped}; a fresh {instance} initialized and listed the same {} tools",
            names.len()
        ),
        None => format!(
            "outstanding `{method}` rejected when {dropped}; a fresh {instance} initialized"
        ),
    };
    CheckResult::from_findings(ids::RECONNECT, &findings, summary, evidence)
}

/// The shutdown check: close the server's stdin, see how it exits and what it leaves.
pub(crate) async fn shutdown(
    spec: &ServerSpec,
    options: &Options,
    recorders: &mut Vec<std::sync::Arc<Recorder>>,
) -> CheckResult {
    let grace = options.shutdown_grace;
    // Orphans re-parented to us without a marker are told apart from earlier ones by this.
    let unmarked_before: Vec<ProcessId> = orphans::unmarked_children();
    let probe = match start_recorded(spec, options, recorders).await {
        Ok(probe) => probe,
        Err(failure) => {
            return failure.into_finding(
                ids::SHUTDOWN,
                "another instance of the server did not start",
            );
        }
    };
    let Some(process) = probe.process() else {
        probe.close(grace).await;
        return CheckResult::skip(
            ids::SHUTDOWN,
            "the server runs in no process of the checker's",
        );
    };
    // Let it settle: a listing makes sure it is fully up (and has started any helpers).
    if probe.session.negotiated().capabilities.tools.is_some() {
        let _ = super::request(
            &probe.session,
            "tools/list",
            json!({}),
            options.request_timeout,
        )
        .await;
    }
    let tree: Vec<ProcessId> = process.descendants();
    let exit = close_stdin_and_wait(&probe, process, grace).await;
    let survivors = survivors_after_exit(process, &tree, grace).await;
    let unseen = unseen_leftovers(&unmarked_before);
    // Whatever is left goes now.
    let descendants_killed = probe
        .close(grace)
        .await
        .map_or(0, |report| report.descendants_killed);
    proc::kill_survivors(&tree);
    let mut evidence = Evidence::default();
    evidence.notes.push(format!(
        "the server (pid {}) had {} descendant process(es) before shutdown",
        process.pid(),
        tree.len()
    ));
    let findings = judge_shutdown(
        ShutdownSeen {
            exit: &exit,
            survivors: &survivors,
            unseen,
            descendants_killed,
            grace,
        },
        &mut evidence,
    );
    if !findings.is_empty() {
        let tail = process.stderr_tail();
        evidence.stderr_tail = (!tail.trim().is_empty()).then_some(tail);
    }
    CheckResult::from_findings(
        ids::SHUTDOWN,
        &findings,
        format!(
            "exited {} ms after stdin closed ({}), no process left behind",
            ms(exit.elapsed),
            exit.status
        ),
        evidence,
    )
}

/// How the server exited once its stdin closed.
struct ExitSeen {
    /// What it took: stdin closing alone, SIGTERM or SIGKILL.
    step: ShutdownStep,
    /// From closing stdin to the exit.
    elapsed: Duration,
    status: String,
}

/// The probe: closes the server's stdin and waits `grace` for it to exit, then goes on with
/// SIGTERM and SIGKILL as needed.
async fn close_stdin_and_wait(
    probe: &Probe,
    process: &switchboard_wire::stdio::ChildProcess,
    grace: Duration,
) -> ExitSeen {
    let started = Instant::now();
    probe.connection.close_write().await;
    let step = if process.wait_exit(grace).await.is_some() {
        ShutdownStep::StdinClosed
    } else {
        let escalation = ShutdownGrace {
            after_stdin_close: Duration::ZERO,
            after_sigterm: grace,
        };
        process.shutdown(&probe.connection, escalation).await.step
    };
    ExitSeen {
        step,
        elapsed: started.elapsed(),
        status: process.exit_status().unwrap_or_else(|| "unknown".into()),
    }
}

/// Processes the server started that still run after it exited, given a short moment to
/// follow their parent: of its tree before shutdown, plus ones started during shutdown and
/// daemons that left the tree (found by their marker).
async fn survivors_after_exit(
    process: &switchboard_wire::stdio::ChildProcess,
    tree: &[ProcessId],
    grace: Duration,
) -> Vec<ProcessId> {
    let deadline = Instant::now() + grace.min(Duration::from_millis(500));
    let survivors_now = || {
        let mut survivors: Vec<ProcessId> = tree
            .iter()
            .copied()
            .filter(|p| proc::is_alive(*p))
            .collect();
        for process in process.descendants() {
            if !survivors.contains(&process) {
                survivors.push(process);
            }
        }
        survivors
    };
    let mut survivors = survivors_now();
    while !survivors.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        survivors = survivors_now();
    }
    survivors
}

/// Everything the judgement of `shutdown` reads.
struct ShutdownSeen<'a> {
    exit: &'a ExitSeen,
    survivors: &'a [ProcessId],
    /// What the marker cannot show (see [`unseen_leftovers`]).
    unseen: Option<Finding>,
    /// Leftovers the cleanup killed.
    descendants_killed: usize,
    grace: Duration,
}

/// The judgement of `shutdown`: its exchange and notes in `evidence`, its findings.
fn judge_shutdown(seen: ShutdownSeen<'_>, evidence: &mut Evidence) -> Vec<Finding> {
    let ShutdownSeen {
        exit,
        survivors,
        unseen,
        descendants_killed,
        grace,
    } = seen;
    let mut findings = Vec::new();
    match exit.step {
        ShutdownStep::StdinClosed | ShutdownStep::AlreadyExited => {}
        ShutdownStep::Sigterm => findings.push(Finding::error(format!(
            "the server did not exit within {} ms of stdin closing; it needed SIGTERM",
            ms(grace)
        ))),
        ShutdownStep::Sigkill => findings.push(Finding::error(format!(
            "the server ignored stdin closing and SIGTERM ({} ms each); it needed SIGKILL",
            ms(grace)
        ))),
    }
    if !survivors.is_empty() {
        findings.push(Finding::error(format!(
            "{} process(es) the server started were still running after it exited (pids {}); the checker killed them",
            survivors.len(),
            pid_list(survivors)
        )));
    }
    findings.extend(unseen);
    evidence.exchanges.push(Exchange {
        label: "close the server's stdin and wait".into(),
        sent: Some(Value::String("EOF on stdin".into())),
        received: Some(json!({
            "exit_status": exit.status,
            "needed": match exit.step {
                ShutdownStep::StdinClosed | ShutdownStep::AlreadyExited => "nothing more",
                ShutdownStep::Sigterm => "SIGTERM",
                ShutdownStep::Sigkill => "SIGKILL",
            },
        })),
        elapsed: Some(exit.elapsed),
    });
    if descendants_killed > 0 {
        evidence.notes.push(format!(
            "{descendants_killed} leftover process(es) killed during cleanup"
        ));
    }
    findings
}

/// What the marker cannot show: processes that cleared their environment. While the checker
/// adopts orphans, those re-parented to it since `before` are reported (a warning: nothing
/// ties them to this instance but the timing, and only instances of this server ran); when
/// it does not adopt, it says it cannot know.
fn unseen_leftovers(before: &[ProcessId]) -> Option<Finding> {
    if !orphans::is_adopting() {
        return Some(Finding::warning(
            "processes that left the server's session and cleared their environment cannot be \
             seen: the checker could not adopt orphans (Linux's child subreaper), so the absence \
             of leftovers is not proven",
        ));
    }
    let adopted: Vec<ProcessId> = orphans::unmarked_children()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    (!adopted.is_empty()).then(|| {
        Finding::warning(format!(
            "{} process(es) without the checker's marker (they cleared their environment) were \
             re-parented to the checker while this server ran and are still running (pids {}); \
             they are killed when the check ends",
            adopted.len(),
            pid_list(&adopted)
        ))
    })
}

fn pid_list(processes: &[ProcessId]) -> String {
    let pids: Vec<String> = processes.iter().map(|p| p.pid.to_string()).collect();
    pids.join(", ")
}

/// The lifecycle checks, concurrently, each on its own connections; `shutdown` here only
/// for stdio (over HTTP it ends the session `http-session` checked, `http_shutdown.rs`).
pub(crate) async fn run(
    spec: &ServerSpec,
    options: &Options,
    long: Option<ToolCall>,
) -> LifecycleOutput {
    let mut reconnect_recorders = Vec::new();
    if spec.transport_kind() == crate::catalog::Transport::Http {
        let reconnect = reconnect(spec, options, long, &mut reconnect_recorders).await;
        return LifecycleOutput {
            results: vec![reconnect],
            recorders: reconnect_recorders,
        };
    }
    let mut shutdown_recorders = Vec::new();
    let (reconnect, shutdown) = tokio::join!(
        reconnect(spec, options, long, &mut reconnect_recorders),
        shutdown(spec, options, &mut shutdown_recorders),
    );
    reconnect_recorders.extend(shutdown_recorders);
    LifecycleOutput {
        results: vec![reconnect, shutdown],
        recorders: reconnect_recorders,
    }
}
