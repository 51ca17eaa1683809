//! Servers that daemonise a grandchild (`setsid`, fork, the middle exits): after `tools`,
//! `call`, `check` and `serve`, nothing a server started is left running; a call to a server
//! that exited fails at once even while its daemon holds the server's stdout; the checker
//! reports what was left behind instead of passing; the gateway reaps what it adopted.
//! Observed from outside: each case names its fixtures uniquely (`--name`, which the
//! daemon's command line carries too) and reads `/proc`.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use switchboard_session::{CallOptions, Session, SessionConfig};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, StdioOptions};

use crate::{Run, config, fixture_entry};

static NAMES: AtomicUsize = AtomicUsize::new(0);

/// A name no other test (or test process) uses.
pub(crate) fn unique_name(case: &str) -> String {
    format!(
        "sb-daemon-{case}-{}-{}",
        std::process::id(),
        NAMES.fetch_add(1, Ordering::Relaxed)
    )
}

fn daemonising(mode: &str, name: &str) -> serde_json::Value {
    fixture_entry(&["--mode", mode, "--name", name])
}

fn stat_of(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Live (not zombie) processes with `name` as one of their arguments, and whether each is
/// a daemonised `sleeper`.
pub(crate) fn running_named(name: &str) -> Vec<(u32, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let named = args.contains(&name.as_bytes());
            let alive = stat_of(pid).is_some_and(|(state, _)| state != 'Z');
            (named && alive).then(|| (pid, args.contains(&b"sleeper".as_slice())))
        })
        .collect()
}

/// Waits (bounded) until no process named `name` runs.
pub(crate) fn assert_none_left(name: &str) {
    if wait::try_until(TEST_DEADLINE, || running_named(name).is_empty()).is_err() {
        panic!(
            "processes of `{name}` still running: {:?}",
            running_named(name)
        );
    }
}

/// `switchboard ARGS`, killed with a panic if it runs past `bound` (a hang detector).
fn switchboard_within(args: &[&str], bound: Duration) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("SWITCHBOARD_ERA_MEMO", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let finished = wait::try_exited(bound, &mut child);
    let output = child.wait_with_output().expect("output");
    if finished.is_err() {
        panic!(
            "switchboard {args:?} did not finish within {bound:?}; stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_call_fails_at_once_when_its_server_exits_though_a_daemon_holds_its_stdout() {
    let name = unique_name("holds");
    let path = config(json!({ "holder": daemonising("daemon-holds-stdout", &name) }));
    // The request deadline is 60 s; this bound only detects a call that waits for it.
    let run = switchboard_within(
        &[
            "call",
            "--config",
            &path.display().to_string(),
            "holder",
            "echo",
            r#"{"text":"hi"}"#,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "the server process exited (a process it left behind still held its output) (exit status: 3)"
        ),
        "{}",
        run.stderr
    );
    assert_none_left(&name);
}

#[test]
fn tools_leaves_no_daemon_of_any_kind_behind() {
    let modes = [
        "daemon-stays",
        "daemon-exits",
        "daemon-holds-stdout",
        "daemon-clears-env",
    ];
    let names: Vec<String> = modes.iter().map(|mode| unique_name(mode)).collect();
    let servers: serde_json::Map<String, serde_json::Value> = modes
        .iter()
        .zip(&names)
        .map(|(mode, name)| ((*mode).to_owned(), daemonising(mode, name)))
        .collect();
    let path = config(serde_json::Value::Object(servers));
    let run = switchboard_within(
        &["tools", "--config", &path.display().to_string()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for name in &names {
        assert_none_left(name);
    }
}

/// The `shutdown` line of a text report.
fn shutdown_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("shutdown"))
        .unwrap_or("")
}

#[test]
fn check_reports_a_daemon_left_behind_and_kills_it() {
    let name = unique_name("check");
    let path = config(json!({ "stays": daemonising("daemon-stays", &name) }));
    let run = switchboard_within(
        &["check", "--config", &path.display().to_string()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let line = shutdown_line(&run.stdout);
    assert!(
        line.trim_start().starts_with("FAIL")
            && line.contains("1 process(es) the server started were still running after it exited"),
        "{}",
        run.stdout
    );
    // Nothing else fails: the daemon is the only fault.
    let failing: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("FAIL"))
        .collect();
    assert_eq!(failing.len(), 1, "{}", run.stdout);
    assert_none_left(&name);
}

#[test]
fn check_does_not_pass_a_daemon_that_cleared_its_environment() {
    let name = unique_name("check-clears");
    let path = config(json!({ "clears": daemonising("daemon-clears-env", &name) }));
    let run = switchboard_within(
        &["check", "--config", &path.display().to_string()],
        Duration::from_secs(60),
    );
    let line = shutdown_line(&run.stdout);
    assert!(
        line.trim_start().starts_with("warn")
            && line.contains("without the checker's marker (they cleared their environment)"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert_none_left(&name);
}

/// How long the gateway gets to stop after stdin closes (it stops its servers first).
const GRACE: ShutdownGrace = ShutdownGrace {
    after_stdin_close: Duration::from_secs(5),
    after_sigterm: Duration::from_secs(1),
};

async fn gateway(servers: serde_json::Value) -> Session {
    let path = config(servers);
    let spec = ProcessSpec {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        args: vec![
            "serve".into(),
            "--config".into(),
            path.display().to_string(),
        ],
        env: crate::no_era_memo_env(),
        cwd: None,
        sandbox: None,
    };
    within(
        "the gateway's handshake",
        TEST_DEADLINE,
        Session::spawn_stdio(
            &spec,
            StdioOptions::new("gateway"),
            SessionConfig::new("gateway"),
        ),
    )
    .await
    .expect("the gateway initializes")
}

/// The gateway's zombie children.
fn zombies_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| stat_of(*child) == Some(('Z', pid)))
        .collect()
}

/// Our own shutdown of the gateway kills whatever carries its marker after it exited; it
/// must find nothing: the gateway stopped every server's descendants itself.
async fn stop_gateway_cleanly(session: Session) {
    let report = within(
        "the gateway's shutdown",
        TEST_DEADLINE,
        session.shutdown(GRACE),
    )
    .await
    .expect("a stdio gateway has a process");
    assert_eq!(
        report.descendants_killed, 0,
        "the gateway left processes behind: {report:?}"
    );
}

#[tokio::test]
async fn the_gateway_stops_daemons_when_stdin_ends() {
    let quiet = unique_name("serve-quiet");
    let holder = unique_name("serve-holder");
    let session = gateway(json!({
        "quiet": daemonising("daemon-stays", &quiet),
        "holder": daemonising("daemon-holds-stdout", &holder),
    }))
    .await;
    let listed = crate::support::tool_names(&session).await;
    assert!(
        listed.iter().any(|name| name == "quiet__echo"),
        "{listed:?}"
    );
    for name in [&quiet, &holder] {
        assert!(
            running_named(name).iter().any(|(_, sleeper)| *sleeper),
            "{name} daemonised"
        );
    }
    stop_gateway_cleanly(session).await;
    assert_none_left(&quiet);
    assert_none_left(&holder);
}

#[tokio::test]
async fn a_gateway_whose_server_keeps_crashing_keeps_no_daemon_and_no_zombie() {
    let name = unique_name("serve-restarts");
    let session = gateway(json!({ "crasher": daemonising("daemon-exits", &name) })).await;
    let gateway_pid = session.pid().expect("pid");
    // Each start daemonises a sleeper; each call crashes the server (exit 3) and the
    // gateway restarts it. Three starts are enough to see accumulation.
    let mut daemons: BTreeSet<u32> = BTreeSet::new();
    let quick = CallOptions {
        timeout: Some(Duration::from_secs(5)),
        ..CallOptions::default()
    };
    for start in 1..=3 {
        // Wait for this start's daemon, then crash the server that made it.
        let daemon = wait::until_async(
            &format!("start {start}'s daemon"),
            TEST_DEADLINE,
            || async {
                running_named(&name)
                    .into_iter()
                    .find(|(pid, sleeper)| *sleeper && !daemons.contains(pid))
                    .map(|(pid, _)| pid)
            },
        )
        .await;
        daemons.insert(daemon);
        let crashed = session
            .call_tool("crasher__echo", Some(&json!({"text": "x"})), &quick)
            .await;
        assert!(
            format!("{crashed:?}").contains("exit status: 3"),
            "{crashed:?}"
        );
    }
    // The daemons of the instances that crashed were killed and reaped by the gateway.
    wait::until_async(
        "the crashed instances' daemons to go",
        TEST_DEADLINE,
        || async {
            let sleepers = running_named(&name)
                .into_iter()
                .filter(|(_, sleeper)| *sleeper)
                .count();
            sleepers <= 1 && zombies_of(gateway_pid).is_empty()
        },
    )
    .await;
    stop_gateway_cleanly(session).await;
    assert_none_left(&name);
}
