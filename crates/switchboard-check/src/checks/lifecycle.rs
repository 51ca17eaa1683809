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
use crate::probe::{Probe, kill_tree};
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

/// The reconnect check.
pub(crate) async fn reconnect(
    spec: &ServerSpec,
    options: &Options,
    long: Option<ToolCall>,
    recorders: &mut Vec<std::sync::Arc<Recorder>>,
) -> CheckResult {
    let mut evidence = Evidence::default();
    let (instance, dropped, killed) = match spec.transport_kind() {
        crate::catalog::Transport::Stdio => {
            ("instance", "the server was killed", "SIGKILL the server")
        }
        crate::catalog::Transport::Http => (
            "connection",
            "the connection was dropped",
            "drop the connection",
        ),
    };
    let first = match Probe::start(spec, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            if let Some(r) = failure.recorder {
                recorders.push(r);
            }
            return CheckResult::finding(
                ids::RECONNECT,
                format!(
                    "a second {instance} to the server did not initialize: {}",
                    failure.error
                ),
                Evidence {
                    stderr_tail: failure.stderr_tail,
                    ..Evidence::default()
                },
            );
        }
    };
    recorders.push(first.recorder.clone());
    let names_before = names_of(&first, options).await;
    // One request outstanding: the long call when there is one, else a listing.
    let (method, params, delay) = match (&long, &names_before) {
        (Some(call), _) => (
            "tools/call",
            json!({"name": call.tool, "arguments": call.arguments}),
            Duration::from_millis(200),
        ),
        (None, Some(_)) => ("tools/list", json!({}), Duration::ZERO),
        (None, None) => match first.session.negotiated().era {
            Era::Legacy => ("ping", json!({}), Duration::ZERO),
            Era::Modern => ("server/discover", json!({}), Duration::ZERO),
        },
    };
    let call_options = CallOptions {
        timeout: Some(options.request_timeout.max(options.long_call_duration * 2)),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let request = first
        .session
        .request(method, Some(params.clone()), &call_options);
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
    let (outcome, killed_at) = tokio::join!(
        tokio::time::timeout(REJECT_DEADLINE + delay + options.request_timeout, request),
        killer
    );
    let rejected_after = started.elapsed().saturating_sub(killed_at - started);
    let mut findings = Vec::new();
    let received = match outcome {
        Ok(Ok(_)) => {
            evidence.notes.push(
                "the server answered before the transport was dropped; the rejection could not be observed"
                    .into(),
            );
            json!({"result": "answered before the transport was dropped"})
        }
        Ok(Err(error)) => match outcome_of(error) {
            Outcome::Closed(reason) => {
                if rejected_after > REJECT_DEADLINE {
                    findings.push(Finding::error(format!(
                        "the outstanding request was rejected only {} ms after {dropped}",
                        ms(rejected_after)
                    )));
                }
                json!({"rejected": reason.lines().next().unwrap_or("")})
            }
            other => {
                findings.push(Finding::error(format!(
                    "the outstanding request ended with {other:?} instead of a transport error"
                )));
                json!({"ended": format!("{other:?}")})
            }
        },
        Err(_) => {
            findings.push(Finding::error(format!(
                "the outstanding request was not rejected after {dropped}"
            )));
            json!({"no_response": "not rejected"})
        }
    };
    evidence.exchanges.push(Exchange {
        label: format!("send `{method}`, {killed} {} ms later", ms(delay)),
        sent: Some(json!({"method": method, "params": params})),
        received: Some(received),
        elapsed: Some(rejected_after),
    });
    match tokio::time::timeout(REJECT_DEADLINE, first.connection.closed()).await {
        Ok(reason) => evidence.notes.push(format!(
            "transport closed: {}",
            reason.to_string().lines().next().unwrap_or("")
        )),
        Err(_) => findings.push(Finding::error(format!(
            "the transport did not close after {dropped}"
        ))),
    }
    if let Some(process) = first.process() {
        let _ = process.wait_exit(Duration::from_secs(1)).await;
        kill_tree(process).await;
    }

    let second = match Probe::start(spec, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            if let Some(r) = failure.recorder {
                recorders.push(r);
            }
            findings.push(Finding::error(format!(
                "a fresh connection did not initialize: {}",
                failure.error.to_string().lines().next().unwrap_or("")
            )));
            evidence.stderr_tail = failure.stderr_tail;
            return CheckResult::from_findings(ids::RECONNECT, &findings, "", evidence);
        }
    };
    recorders.push(second.recorder.clone());
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
        let gone: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
        let new: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
        if gone.is_empty() && new.is_empty() {
            evidence.notes.push(format!(
                "both {instance}s list the same {} tools",
                before.len()
            ));
        } else {
            findings.push(Finding::error(format!(
                "the fresh {instance} lists different tools: gone {gone:?}, new {new:?}"
            )));
        }
    }
    second.close(options.shutdown_grace).await;
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

/// The shutdown check.
pub(crate) async fn shutdown(
    spec: &ServerSpec,
    options: &Options,
    recorders: &mut Vec<std::sync::Arc<Recorder>>,
) -> CheckResult {
    let grace = options.shutdown_grace;
    // Orphans re-parented to us without a marker are told apart from earlier ones by this.
    let unmarked_before: Vec<ProcessId> = orphans::unmarked_children();
    let probe = match Probe::start(spec, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            if let Some(r) = failure.recorder {
                recorders.push(r);
            }
            return CheckResult::finding(
                ids::SHUTDOWN,
                format!(
                    "another instance of the server did not start: {}",
                    failure.error
                ),
                Evidence {
                    stderr_tail: failure.stderr_tail,
                    ..Evidence::default()
                },
            );
        }
    };
    recorders.push(probe.recorder.clone());
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
    let root = process.pid();
    let tree: Vec<ProcessId> = process.descendants();
    let mut evidence = Evidence::default();
    evidence.notes.push(format!(
        "the server (pid {root}) had {} descendant process(es) before shutdown",
        tree.len()
    ));
    let started = Instant::now();
    probe.connection.close_write().await;
    let exited = process.wait_exit(grace).await;
    let mut findings = Vec::new();
    let step = if exited.is_some() {
        ShutdownStep::StdinClosed
    } else {
        let report = process
            .shutdown(
                &probe.connection,
                ShutdownGrace {
                    after_stdin_close: Duration::ZERO,
                    after_sigterm: grace,
                },
            )
            .await;
        report.step
    };
    let exit_elapsed = started.elapsed();
    let status = process.exit_status().unwrap_or_else(|| "unknown".into());
    match step {
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
    // Descendants get a short moment to follow their parent. Those found now include ones
    // started during shutdown and daemons that left the tree (found by their marker).
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
    if !survivors.is_empty() {
        findings.push(Finding::error(format!(
            "{} process(es) the server started were still running after it exited (pids {}); the checker killed them",
            survivors.len(),
            pid_list(&survivors)
        )));
    }
    findings.extend(unseen_leftovers(&unmarked_before));
    // Whatever is left goes now.
    let descendants_killed = probe
        .close(grace)
        .await
        .map_or(0, |report| report.descendants_killed);
    proc::kill_survivors(&tree);
    evidence.exchanges.push(Exchange {
        label: "close the server's stdin and wait".into(),
        sent: Some(Value::String("EOF on stdin".into())),
        received: Some(json!({
            "exit_status": status,
            "needed": match step {
                ShutdownStep::StdinClosed | ShutdownStep::AlreadyExited => "nothing more",
                ShutdownStep::Sigterm => "SIGTERM",
                ShutdownStep::Sigkill => "SIGKILL",
            },
        })),
        elapsed: Some(exit_elapsed),
    });
    if descendants_killed > 0 {
        evidence.notes.push(format!(
            "{descendants_killed} leftover process(es) killed during cleanup"
        ));
    }
    if !findings.is_empty() {
        let tail = process.stderr_tail();
        evidence.stderr_tail = (!tail.trim().is_empty()).then_some(tail);
    }
    CheckResult::from_findings(
        ids::SHUTDOWN,
        &findings,
        format!(
            "exited {} ms after stdin closed ({status}), no process left behind",
            ms(exit_elapsed)
        ),
        evidence,
    )
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
