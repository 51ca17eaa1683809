//! The stdio transport with real processes (system programs, no MCP needed here).

use std::time::Duration;

use switchboard_wire::proc::ProcessId;
use switchboard_wire::stdio::{
    ChildProcess, ProcessSpec, ShutdownGrace, ShutdownStep, StdioOptions, spawn,
};
use switchboard_wire::{Inbound, MalformedKind};

fn program(program: &str, args: &[&str], env: &[(&str, &str)]) -> ProcessSpec {
    ProcessSpec {
        program: program.into(),
        args: args.iter().map(|a| (*a).into()).collect(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        cwd: None,
        sandbox: None,
    }
}

/// Collects the text of every non-JSON line the process prints, until it closes.
async fn printed_lines(spec: &ProcessSpec) -> Vec<String> {
    let mut transport = spawn(spec, StdioOptions::new("env")).expect("spawn");
    let mut lines = Vec::new();
    let collect = async {
        while let Some(event) = transport.inbound.recv().await {
            if let Inbound::Malformed(m) = event {
                assert_eq!(m.kind, MalformedKind::NotJson);
                lines.push(m.excerpt);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), collect)
        .await
        .expect("process output");
    lines
}

#[tokio::test]
async fn the_child_environment_is_an_allow_list_plus_configured_entries() {
    // Cargo sets CARGO_* variables for tests; none of them may reach the child.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let lines = printed_lines(&program("env", &[], &[("API_KEY", "configured")])).await;
    let names: Vec<&str> = lines.iter().filter_map(|l| l.split('=').next()).collect();
    assert!(
        names.contains(&"API_KEY") && names.contains(&"PATH"),
        "{names:?}"
    );
    for name in &names {
        assert!(
            switchboard_wire::stdio::INHERITED_ENV_VARS.contains(name)
                || *name == "API_KEY"
                || *name == switchboard_wire::orphans::OWNER_VAR,
            "{name} leaked into the child environment"
        );
    }
    // The owner marker: a token of ours (pid, start time, serial), which the configuration
    // cannot override.
    let lines = printed_lines(&program(
        "env",
        &[],
        &[(switchboard_wire::orphans::OWNER_VAR, "forged")],
    ))
    .await;
    let marker = lines
        .iter()
        .find_map(|l| l.strip_prefix("SWITCHBOARD_OWNER="))
        .expect("the marker is set");
    let token = marker.rsplit(':').next().unwrap_or_default();
    let parts: Vec<&str> = token.split('-').collect();
    assert_eq!(parts.len(), 3, "{marker}");
    assert_eq!(parts[0], std::process::id().to_string(), "{marker}");
    assert!(!marker.contains("forged"), "{marker}");
}

#[tokio::test]
async fn the_child_runs_in_its_own_process_group() {
    let transport =
        spawn(&program("sleep", &["30"], &[]), StdioOptions::new("sleep")).expect("spawn");
    let pid = transport.process.pid();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let pgid: u32 = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(2))
        .and_then(|p| p.parse().ok())
        .expect("pgid");
    assert_eq!(pgid, pid);
    let our_pgid = std::fs::read_to_string("/proc/self/stat").expect("stat");
    assert!(!our_pgid.contains(&format!(" {pid} ")), "not our group");
    let grace = ShutdownGrace {
        after_stdin_close: Duration::from_millis(200),
        after_sigterm: Duration::from_secs(1),
    };
    let report = within(
        "the staged shutdown",
        DEADLINE,
        transport.process.shutdown(&transport.connection, grace),
    )
    .await;
    // SIGTERM, not SIGKILL: the stage after closing stdin ended it.
    assert!(
        report
            .exit_status
            .as_deref()
            .is_some_and(|s| s.contains("SIGTERM")),
        "{report:?}"
    );
    assert!(switchboard_wire::proc::group_members(pid).is_empty());
}

#[tokio::test]
async fn dropping_the_process_kills_its_group() {
    let transport =
        spawn(&program("sleep", &["30"], &[]), StdioOptions::new("sleep")).expect("spawn");
    let pid = transport.process.pid();
    drop(transport);
    within("the group to die", DEADLINE, async {
        while !switchboard_wire::proc::group_members(pid).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Waits for `future`, failing the test if it takes longer than `deadline` (a hang detector,
/// not a speed assertion).
async fn within<T>(
    what: &str,
    deadline: Duration,
    future: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout(deadline, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

const DEADLINE: Duration = Duration::from_secs(10);

/// The pid a script reported on stderr as `daemon PID`.
async fn reported_daemon(process: &ChildProcess) -> ProcessId {
    let pid = within("the script to report its daemon", DEADLINE, async {
        loop {
            let tail = process.stderr_tail();
            let reported = tail
                .lines()
                .find_map(|l| l.strip_prefix("daemon ")?.trim().parse::<u32>().ok());
            if let Some(pid) = reported {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    switchboard_wire::proc::descendants(pid)
        .into_iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("daemon {pid} is not running"))
}

async fn until_dead(process: ProcessId) {
    within("the daemon to die", DEADLINE, async {
        while switchboard_wire::proc::is_alive(process) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

// `setsid` in a background job (not a process-group leader) needs no fork, so `$!` is the
// daemon: a process in a session of its own, re-parented when the shell exits.

#[tokio::test]
async fn a_server_that_exited_fails_its_requests_though_a_daemon_holds_its_stdout() {
    let transport = spawn(
        &program(
            "sh",
            &[
                "-c",
                r#"setsid sleep 300 & echo "daemon $!" >&2; read line; exit 3"#,
            ],
            &[],
        ),
        StdioOptions::new("daemoniser"),
    )
    .expect("spawn");
    let daemon = reported_daemon(&transport.process).await;
    // The server exits on our request; the daemon keeps its stdout open.
    let outcome = within(
        "the request to fail once the server exited",
        DEADLINE,
        transport.connection.request("ping", None),
    )
    .await;
    let error = outcome.expect_err("the server exited without answering");
    let reason = error.close_reason().expect("the connection closed");
    assert_eq!(
        reason.exit_status.as_deref(),
        Some("exit status: 3"),
        "{reason}"
    );
    assert!(reason.summary.contains("still held its output"), "{reason}");
    assert!(
        switchboard_wire::proc::is_alive(daemon),
        "the daemon is still running"
    );
    let report = transport
        .process
        .shutdown(&transport.connection, ShutdownGrace::default())
        .await;
    assert_eq!(report.step, ShutdownStep::AlreadyExited);
    assert_eq!(report.descendants_killed, 1, "{report:?}");
    until_dead(daemon).await;
}

#[tokio::test]
async fn descendants_find_a_daemon_by_its_marker_and_dropping_kills_it() {
    let transport = spawn(
        &program(
            "sh",
            &[
                "-c",
                r#"(setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "daemon $!" >&2); exec sleep 300"#,
            ],
            &[],
        ),
        StdioOptions::new("daemoniser"),
    )
    .expect("spawn");
    let daemon = reported_daemon(&transport.process).await;
    // Once the subshell has exited, the daemon is no longer in the tree nor in the group.
    within("the daemon to leave the tree", DEADLINE, async {
        while switchboard_wire::proc::descendants(transport.process.pid()).contains(&daemon) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(transport.process.descendants().contains(&daemon));
    drop(transport);
    until_dead(daemon).await;
}

/// Adoption is process-wide, so every case that holds a guard runs in this one test.
#[tokio::test]
async fn adopted_orphans_are_reaped_and_killed_with_the_last_guard() {
    let guard = switchboard_wire::orphans::adopt_orphans().expect("a subreaper on Linux");
    assert!(switchboard_wire::orphans::is_adopting());
    let me = std::process::id();
    let parent_of = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
            })
    };

    // A daemon that exits by itself comes to us when its parent exits, and its zombie is
    // reaped: the pid disappears altogether.
    let transport = spawn(
        &program(
            "sh",
            &[
                "-c",
                r#"(setsid sleep 1 </dev/null >/dev/null 2>&1 & echo "daemon $!" >&2); exec sleep 300"#,
            ],
            &[],
        ),
        StdioOptions::new("short-daemon"),
    )
    .expect("spawn");
    let daemon = reported_daemon(&transport.process).await;
    within("the daemon's adoption", DEADLINE, async {
        while parent_of(daemon.pid).is_some_and(|parent| parent != me) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    within("the adopted zombie to be reaped", DEADLINE, async {
        while parent_of(daemon.pid).is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // One that cleared its environment carries no marker: only adoption finds it, and the
    // last guard kills it.
    let transport_b = spawn(
        &program(
            "sh",
            &[
                "-c",
                r#"(env -i setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "daemon $!" >&2); exec sleep 300"#,
            ],
            &[],
        ),
        StdioOptions::new("unmarked-daemon"),
    )
    .expect("spawn");
    let unmarked = reported_daemon(&transport_b.process).await;
    within("the unmarked daemon's adoption", DEADLINE, async {
        while !switchboard_wire::orphans::unmarked_children().contains(&unmarked) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    drop(transport);
    drop(transport_b);
    assert!(
        switchboard_wire::proc::is_alive(unmarked),
        "no server's shutdown finds it"
    );
    drop(guard);
    assert!(!switchboard_wire::orphans::is_adopting());
    until_dead(unmarked).await;
    assert_eq!(parent_of(unmarked.pid), None, "killed and reaped");
}

/// Live processes whose environment carries `token` in its owner chain.
fn carrying(token: &str) -> Vec<u32> {
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
                .unwrap_or(false);
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            alive
                && environ.split(|b| *b == 0).any(|entry| {
                    entry
                        .strip_prefix(b"SWITCHBOARD_OWNER=")
                        .is_some_and(|chain| {
                            chain.split(|b| *b == b':').any(|t| t == token.as_bytes())
                        })
                })
        })
        .collect()
}

#[tokio::test]
async fn a_daemon_that_keeps_forking_is_stopped_then_killed_with_all_it_made() {
    // A daemon in its own session that starts 100 more processes as fast as it can.
    let transport = spawn(
        &program(
            "sh",
            &[
                "-c",
                r#"(setsid sh -c 'i=0; while [ $i -lt 100 ]; do sleep 300 & i=$((i+1)); done; wait' </dev/null >/dev/null 2>&1 & echo "daemon $!" >&2); exec sleep 300"#,
            ],
            &[],
        ),
        StdioOptions::new("forker"),
    )
    .expect("spawn");
    let pid = transport.process.pid();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    let token = environ
        .split(|b| *b == 0)
        .find_map(|e| e.strip_prefix(b"SWITCHBOARD_OWNER="))
        .map(|chain| {
            String::from_utf8_lossy(chain)
                .rsplit(':')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .expect("marker");
    reported_daemon(&transport.process).await;
    // Shut down while it may still be forking.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let report = transport
        .process
        .shutdown(&transport.connection, ShutdownGrace::default())
        .await;
    assert!(report.descendants_killed >= 1, "{report:?}");
    within(
        "every process carrying the marker to die",
        DEADLINE,
        async {
            while !carrying(&token).is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
}
