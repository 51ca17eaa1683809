//! The stdio transport with real processes (system programs, no MCP needed here).

use std::time::{Duration, Instant};

use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions, spawn};
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
            switchboard_wire::stdio::INHERITED_ENV_VARS.contains(name) || *name == "API_KEY",
            "{name} leaked into the child environment"
        );
    }
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
    let started = Instant::now();
    let grace = ShutdownGrace {
        after_stdin_close: Duration::from_millis(200),
        after_sigterm: Duration::from_secs(1),
    };
    let report = transport
        .process
        .shutdown(&transport.connection, grace)
        .await;
    assert!(started.elapsed() < Duration::from_secs(3));
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
    let started = Instant::now();
    while !switchboard_wire::proc::group_members(pid).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "group {pid} survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
