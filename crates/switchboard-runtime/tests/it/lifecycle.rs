//! Opt-in, publication, the controller's serialisation, disable order, reload, failure and
//! restart, children, teardown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use expect_test::expect;
use serde_json::json;
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{
    ChildAccess, NoticeKind, Runtime, RuntimeError, ServerState, Tool, ToolContext,
};

use crate::support::*;

#[tokio::test]
async fn nothing_starts_before_enable_and_one_process_per_server_however_many_children() {
    let mark = marker("optin");
    let runtime = Runtime::new(options(vec![
        fixture_entry("alpha", &mark, &[]),
        fixture_entry("beta", &mark, &["--era", "modern"]),
    ]));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        processes_with(&mark).is_empty(),
        "configuration alone started a server"
    );
    assert!(runtime.snapshot().tools.is_empty());
    assert!(
        runtime.child(ChildAccess::ParentServers).tools().is_empty(),
        "a child of a disabled parent discovers nothing"
    );

    let report = enabled(&runtime).await;
    expect![[r#"
        alpha: ready (6 tools; sandbox off)
        beta: ready (7 tools; sandbox off)
    "#]]
    .assert_eq(&report.to_string());
    let pids = processes_with(&mark);
    assert_eq!(pids.len(), 2);

    let children: Vec<_> = (0..3)
        .map(|_| runtime.child(ChildAccess::ParentServers))
        .collect();
    for child in &children {
        let echo = child.tool("alpha__echo").expect("proxy");
        let output = echo
            .call(json!({"text": "from a child"}), ToolContext::default())
            .await;
        assert_eq!(output.text_content(), "from a child");
    }
    let mut after = processes_with(&mark);
    after.sort();
    let mut before = pids.clone();
    before.sort();
    assert_eq!(after, before, "children started no process of their own");
    assert_eq!(runtime.live_processes(), 2);

    assert!(
        runtime.child(ChildAccess::Nothing).tools().is_empty(),
        "explicitly disabled child"
    );
    assert!(
        runtime.child(ChildAccess::default()).tools().is_empty(),
        "omitted policy"
    );

    runtime.dispose().await;
    no_processes_with(&mark).await;
    assert_eq!(runtime.live_processes(), 0);
    assert_eq!(runtime.enable().await, Err(RuntimeError::Disposed));
    runtime.dispose().await; // idempotent
}

#[tokio::test]
async fn publication_is_atomic_and_waits_for_listing() {
    let mark = marker("atomic");
    let runtime = Runtime::new(options(vec![
        fixture_entry("one", &mark, &[]),
        fixture_entry("two", &mark, &[]),
        fixture_entry("silent", &mark, &["--mode", "no-init-reply"]),
    ]));
    let mut options_short = options(vec![]);
    options_short.policy.connect_timeout = Duration::from_millis(600);
    let _ = options_short;
    // A reader checks every snapshot it can see: all of a server's tools or none.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let runtime = runtime.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let snapshot = runtime.snapshot();
                for server in ["one", "two"] {
                    let count = snapshot
                        .tools
                        .iter()
                        .filter(|t| t.server() == server)
                        .count();
                    assert!(
                        count == 0 || count == 6,
                        "partial tools of {server} in version {}",
                        snapshot.version
                    );
                }
                let ones = snapshot.tools.iter().any(|t| t.server() == "one");
                let twos = snapshot.tools.iter().any(|t| t.server() == "two");
                if snapshot.version == 0 {
                    assert!(!ones && !twos, "tools visible before enable finished");
                }
                seen += 1;
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    let report = within("enable", Duration::from_secs(30), runtime.enable())
        .await
        .expect("enable");
    let silent = report
        .servers
        .iter()
        .find(|s| s.name == "silent")
        .expect("silent");
    assert!(
        matches!(
            silent.state,
            ServerState::Backoff { .. } | ServerState::Connecting { .. }
        ),
        "{:?}",
        silent.state
    );
    let snapshot = runtime.snapshot();
    assert_eq!(
        snapshot
            .tools
            .iter()
            .filter(|t| t.server() == "silent")
            .count(),
        0,
        "nothing of an unlisted server is published"
    );
    runtime.disable().await.expect("disable");
    stop.store(true, Ordering::Relaxed);
    assert!(reader.await.expect("reader") > 0);
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn duplicate_and_conflicting_requests_are_serialised_latest_wins() {
    let mark = marker("serial");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    let mut notices = runtime.notices();
    let (a, b) = tokio::join!(runtime.enable(), runtime.enable());
    assert_eq!(
        a.expect("enable").version,
        b.expect("enable").version,
        "two enables, one start"
    );
    assert_eq!(processes_with(&mark).len(), 1);
    // What a host hears: the server was started once.
    let mut starts = 0;
    while let Ok(notice) = notices.try_recv() {
        if matches!(
            notice.kind,
            NoticeKind::State(ServerState::Connecting { .. })
        ) {
            starts += 1;
        }
    }
    assert_eq!(starts, 1);

    let (enable, disable) = tokio::join!(runtime.enable(), runtime.disable());
    enable.expect("enable");
    disable.expect("disable");
    assert!(!runtime.is_enabled(), "the latest request (disable) wins");
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn disable_unpublishes_while_the_servers_still_run_and_returns_once_they_are_gone() {
    let mark = marker("order");
    // Each server lingers at stdin EOF until the gate opens: it is still running when the
    // empty snapshot comes out, for as long as this test looks.
    let mut gate = ExitGate::new(&mark);
    let [flag, path] = gate.flags();
    let mut options = options(vec![
        fixture_entry("alpha", &mark, &[&flag, &path]),
        fixture_entry("beta", &mark, &[&flag, &path]),
    ]);
    // Longer than this test's every step: the servers end by themselves, never killed.
    options.policy.shutdown.after_stdin_close = Duration::from_secs(60);
    let runtime = Runtime::new(options);
    enabled(&runtime).await;
    assert!(runtime.snapshot().system_prompt.contains("### alpha"));
    let mut servers = processes_with(&mark);
    servers.sort_unstable();
    assert_eq!(servers.len(), 2, "{servers:?}");
    let child = runtime.child(ChildAccess::ParentServers);
    assert!(child.tool("beta__echo").is_some());

    let mut snapshots = runtime.subscribe();
    snapshots.borrow_and_update();
    let disabling = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.disable().await }
    });
    let empty = within(
        "the empty snapshot, published while the servers still run",
        TEST_DEADLINE,
        snapshots.wait_for(|snapshot| snapshot.tools.is_empty()),
    )
    .await
    .expect("the runtime publishes")
    .clone();
    // The moment the empty snapshot is out: nothing is offered, to the host or a child, and
    // both servers still run.
    assert!(
        !empty.enabled && empty.system_prompt.is_empty(),
        "{empty:?}"
    );
    assert!(child.tools().is_empty(), "a child still sees tools");
    assert!(
        servers.iter().all(|pid| is_running(*pid)),
        "a server stopped before its tools were unpublished: {servers:?} of {:?}",
        processes_with(&mark)
    );
    assert!(
        !disabling.is_finished(),
        "disable returned with the servers running"
    );

    gate.open();
    within("disable", TEST_DEADLINE, disabling)
        .await
        .expect("join")
        .expect("disable");
    assert_no_processes_with(&mark, "once disable returned");
    assert!(runtime.snapshot().tools.is_empty() && child.tools().is_empty());
}

#[tokio::test]
async fn reload_is_refused_while_disabled_and_reconciles_while_enabled() {
    let mark = marker("reload");
    let keep = fixture_entry("keep", &mark, &[]);
    let change = fixture_entry("change", &mark, &[]);
    let remove = fixture_entry("remove", &mark, &[]);
    let runtime = Runtime::new(options(vec![keep.clone(), change.clone(), remove]));
    assert_eq!(
        runtime.reload().await,
        Err(RuntimeError::ReloadWhileDisabled)
    );
    expect!["reload is only available while MCP is enabled; enable it first"]
        .assert_eq(&RuntimeError::ReloadWhileDisabled.to_string());

    enabled(&runtime).await;
    let pid_of = |name: &str| {
        runtime
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.pid)
    };
    let kept_pid = pid_of("keep");
    let changed_pid = pid_of("change");
    let removed_pid = pid_of("remove").expect("pid");

    // `keep`'s tools must be visible in every snapshot published during the reload.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let mut updates = runtime.subscribe();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut versions = 0;
            while !stop.load(Ordering::Relaxed) {
                if tokio::time::timeout(Duration::from_millis(50), updates.changed())
                    .await
                    .is_ok()
                {
                    let snapshot = updates.borrow_and_update().clone();
                    assert!(
                        snapshot.tool("keep__echo").is_some(),
                        "keep's tools vanished in version {}",
                        snapshot.version
                    );
                    versions += 1;
                }
            }
            versions
        })
    };
    let mut changed = change.clone();
    if let switchboard_config::TransportEntry::Stdio { args, .. } = &mut changed.transport {
        args.push("--era".into());
        args.push("modern".into());
    }
    runtime.set_source(ServerSource::Entries(vec![
        keep,
        changed,
        fixture_entry("add", &mark, &[]),
    ]));
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    stop.store(true, Ordering::Relaxed);
    assert!(watcher.await.expect("watcher") >= 1);
    assert_eq!(
        (report.kept, report.restarted, report.added, report.removed),
        (
            vec!["keep".to_owned()],
            vec!["change".to_owned()],
            vec!["add".to_owned()],
            vec!["remove".to_owned()]
        )
    );
    assert_eq!(
        pid_of("keep"),
        kept_pid,
        "unchanged server kept its process"
    );
    assert_ne!(pid_of("change"), changed_pid, "changed server restarted");
    assert!(
        runtime.snapshot().tool("change__confirm").is_some(),
        "the changed server's new tools are published"
    );
    assert!(runtime.snapshot().tool("remove__echo").is_none());
    wait::until_async("the removed server to exit", TEST_DEADLINE, || async {
        switchboard_wire::proc::group_members(removed_pid).is_empty()
    })
    .await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn a_killed_server_fails_its_call_fast_backs_off_and_works_again() {
    let mark = marker("kill");
    // `slow` has effects here: its call is not sent again (`restarts.rs` has the rest).
    let entry = fixture_entry("alpha", &mark, &["--slow-has-effects"]);
    let runtime = Runtime::new(options(vec![entry]));
    enabled(&runtime).await;
    let call = started_slow_call(&runtime, "alpha__slow").await;
    let old_pid = runtime.servers()[0].pid.expect("pid");
    nix_kill(old_pid);
    let output = within("the outstanding call to fail", TEST_DEADLINE, call)
        .await
        .expect("join");
    assert!(output.is_error);
    let text = output.text_content();
    assert!(
        text.contains("SIGKILL") && text.contains("it was not retried"),
        "{text}"
    );
    wait_state(&runtime, "alpha", "ready again", |s| {
        *s == ServerState::Ready
    })
    .await;
    let new_pid = runtime.servers()[0].pid.expect("pid");
    assert_ne!(new_pid, old_pid);
    let echo = runtime
        .snapshot()
        .tool("alpha__echo")
        .expect("tool")
        .clone();
    let output = echo
        .call(json!({"text": "back"}), ToolContext::default())
        .await;
    assert_eq!(output.text_content(), "back");
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

fn nix_kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(status.success());
}

#[tokio::test]
async fn a_crash_looping_server_trips_the_breaker_and_its_tools_are_withdrawn() {
    let mark = marker("loop");
    let runtime = Runtime::new(options(vec![
        fixture_entry("good", &mark, &[]),
        fixture_entry("looper", &mark, &["--mode", "exit-immediately"]),
    ]));
    let report = enabled(&runtime).await;
    let looper = report
        .servers
        .iter()
        .find(|s| s.name == "looper")
        .expect("looper");
    match &looper.state {
        ServerState::Backoff { reason, .. } => assert!(
            reason.contains("exit status: 2") && reason.contains("bad configuration"),
            "{reason}"
        ),
        other => panic!("unexpected state {other:?}"),
    }
    wait_state(&runtime, "looper", "broken", |s| {
        matches!(s, ServerState::Broken { .. })
    })
    .await;
    assert!(
        runtime
            .snapshot()
            .tools
            .iter()
            .all(|t| t.server() == "good")
    );
    assert_eq!(
        runtime
            .servers()
            .iter()
            .find(|s| s.name == "good")
            .map(|s| s.state.clone()),
        Some(ServerState::Ready),
        "one bad server never stops the others"
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn project_servers_start_only_once_trusted() {
    let mark = marker("trust");
    let dir = std::env::temp_dir().join(&mark);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let entry = fixture_entry("proj", &mark, &[]);
    let switchboard_config::TransportEntry::Stdio { command, args, .. } = &entry.transport else {
        unreachable!()
    };
    // A project server is sandboxed unless its entry says otherwise.
    let write_config = |args: &[String], sandbox: bool| {
        let text = serde_json::to_string(&json!({"mcpServers": {"proj": {
            "command": command, "args": args, "sandbox": sandbox,
        }}}))
        .expect("json");
        std::fs::write(dir.join(".mcp.json"), text).expect("write");
    };
    write_config(args, true);
    let scopes = switchboard_runtime::sources::ConfigScopes {
        explicit: None,
        project_dir: Some(dir.clone()),
        user_dir: None,
    };
    let mut runtime_options = options(vec![]);
    runtime_options.source = ServerSource::Files(scopes);
    runtime_options.trust_store = Some(dir.join("trust.json"));
    let runtime = Runtime::new(runtime_options);
    let report = enabled(&runtime).await;
    assert!(
        matches!(&report.servers[0].state, ServerState::Disabled { reason } if reason.contains("not trusted yet")),
        "{report}"
    );
    assert!(processes_with(&mark).is_empty());

    // Trusted, it asks for a sandbox this host (no launcher) cannot give: not started.
    runtime.server("proj").trust().expect("trust");
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    let state = report.startup.servers[0].state.to_string();
    assert!(
        state.starts_with("disabled: ") && state.contains("no sandbox launcher"),
        "{state}"
    );
    assert!(processes_with(&mark).is_empty());

    // Another definition (the sandbox left out) needs trust again, then starts.
    write_config(args, false);
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    let state = report.startup.servers[0].state.to_string();
    assert!(state.contains("changed since it was trusted"), "{state}");
    runtime.server("proj").trust().expect("trust");
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    assert_eq!(report.startup.servers[0].state, ServerState::Ready);

    // A changed command needs trust again.
    let mut changed = args.clone();
    changed.push("--era".into());
    changed.push("both".into());
    write_config(&changed, false);
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    assert!(
        matches!(
            &report.startup.servers[0].state,
            ServerState::Disabled { .. }
        ),
        "{:?}",
        report.startup
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn daemonised_descendants_end_with_disable_and_dispose() {
    let mark = marker("daemons");
    let runtime = Runtime::new(options(vec![
        fixture_entry("quiet", &mark, &["--mode", "daemon-stays"]),
        fixture_entry("holder", &mark, &["--mode", "daemon-holds-stdout"]),
    ]));
    // Each server and its daemon (a `sleeper` re-parented away from it) carry the mark.
    let both_daemonised = || async {
        wait::until_async("the servers and their daemons", TEST_DEADLINE, || async {
            processes_with(&mark).len() >= 4
        })
        .await;
    };
    enabled(&runtime).await;
    both_daemonised().await;
    within("disable", TEST_DEADLINE, runtime.disable())
        .await
        .expect("disable");
    no_processes_with(&mark).await;

    enabled(&runtime).await;
    both_daemonised().await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn a_call_fails_at_once_when_its_server_exits_though_a_daemon_holds_stdout() {
    let mark = marker("holder");
    let mut options = options(vec![fixture_entry(
        "holder",
        &mark,
        &["--mode", "daemon-holds-stdout"],
    )]);
    // Longer than the bound below: only a connection that closes ends the call in time.
    options.policy.request_timeout = Duration::from_secs(120);
    let runtime = Runtime::new(options);
    enabled(&runtime).await;
    let echo = runtime
        .snapshot()
        .tool("holder__echo")
        .expect("tool")
        .clone();
    // The fixture exits (status 3) on the call; its daemon keeps stdout open.
    let outcome = within(
        "the call to fail",
        TEST_DEADLINE,
        echo.call(json!({"text": "hi"}), ToolContext::default()),
    )
    .await;
    let text = format!("{outcome:?}");
    assert!(text.contains("exit status: 3"), "{text}");
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn a_list_change_while_a_reload_retires_a_server_is_published() {
    let mark = marker("reload-change");
    let alpha = fixture_entry("alpha", &mark, &[]);
    // Ignores stdin EOF and SIGTERM: retiring it takes the whole stop grace.
    let beta = fixture_entry("beta", &mark, &["--mode", "stubborn"]);
    let runtime = Runtime::new(options(vec![alpha.clone(), beta]));
    enabled(&runtime).await;
    let before = runtime.snapshot().version;
    runtime.set_source(ServerSource::Entries(vec![alpha]));
    let reloading = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.reload().await }
    });
    // The reload publishes (beta's tools gone), then stops beta; meanwhile alpha's list
    // changes.
    wait::until_async("the reload's publication", TEST_DEADLINE, || async {
        runtime.snapshot().version != before
    })
    .await;
    let changed = runtime
        .snapshot()
        .tool("alpha__change_tools")
        .expect("tool")
        .call(json!({}), ToolContext::default())
        .await;
    assert!(!changed.is_error, "{changed:?}");
    within("reload", Duration::from_secs(30), reloading)
        .await
        .expect("join")
        .expect("reload");
    // What a host sees: alpha's new tool, published without anyone asking again.
    wait::until_async(
        "alpha's new tool to be published",
        TEST_DEADLINE,
        || async { runtime.snapshot().tool("alpha__extra_1").is_some() },
    )
    .await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn reload_revives_a_server_the_breaker_stopped() {
    let mark = marker("revive");
    let dir = std::env::temp_dir().join(&mark);
    std::fs::create_dir_all(&dir).expect("mkdir");
    // The entry's command is a link: first to a program that fails at once, later to the
    // fixture. The definition stays the same throughout.
    let link = dir.join("server");
    std::os::unix::fs::symlink("/bin/false", &link).expect("link");
    let mut entry = fixture_entry("alpha", &mark, &[]);
    if let switchboard_config::TransportEntry::Stdio { command, .. } = &mut entry.transport {
        *command = link.display().to_string();
    }
    let runtime = Runtime::new(options(vec![entry]));
    enabled(&runtime).await;
    wait_state(&runtime, "alpha", "broken", |s| {
        matches!(s, ServerState::Broken { .. })
    })
    .await;
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(switchboard_testkit::locate::fixture_bin(), &link).expect("link");
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    assert_eq!(report.restarted, vec!["alpha".to_owned()], "{report:?}");
    wait::until_async("alpha's tools", TEST_DEADLINE, || async {
        runtime.snapshot().tool("alpha__echo").is_some()
    })
    .await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn restart_starts_one_server_again_and_leaves_the_others() {
    let mark = marker("restart");
    let runtime = Runtime::new(options(vec![
        fixture_entry("alpha", &mark, &[]),
        fixture_entry("beta", &mark, &[]),
    ]));
    enabled(&runtime).await;
    let pid_of = |name: &str| {
        runtime
            .servers()
            .into_iter()
            .find(|server| server.name == name)
            .and_then(|server| server.pid)
    };
    let (alpha_before, beta_before) = (
        pid_of("alpha").expect("alpha"),
        pid_of("beta").expect("beta"),
    );
    let generations = || {
        (
            runtime.server("alpha").generation(),
            runtime.server("beta").generation(),
        )
    };
    let generations_before = generations();
    let outcome = within(
        "restart",
        Duration::from_secs(30),
        runtime.server("alpha").restart(),
    )
    .await
    .expect("restarted");
    assert_eq!(outcome.state, ServerState::Ready, "{outcome:?}");
    let alpha_after = pid_of("alpha").expect("alpha runs again");
    assert_ne!(alpha_after, alpha_before, "a new process");
    assert_eq!(pid_of("beta"), Some(beta_before), "beta untouched");
    // A host's own sessions of alpha know it was replaced; beta's stay.
    let generations_after = generations();
    assert_ne!(
        generations_after.0, generations_before.0,
        "alpha is a new start"
    );
    assert_eq!(
        generations_after.1, generations_before.1,
        "beta is the same start"
    );
    assert_eq!(runtime.server("gamma").generation(), None);
    // The old process is gone, as a host sees it; the tools are published again.
    wait::until_async("the old alpha to exit", TEST_DEADLINE, || async {
        switchboard_wire::proc::group_members(alpha_before).is_empty()
    })
    .await;
    assert!(runtime.snapshot().tool("alpha__echo").is_some());
    expect!["no MCP server named `gamma` is configured; reload after adding it"].assert_eq(
        &runtime
            .server("gamma")
            .restart()
            .await
            .expect_err("unknown")
            .to_string(),
    );
    runtime.disable().await.expect("disabled");
    expect!["restart is only available while MCP is enabled; enable it first"].assert_eq(
        &runtime
            .server("alpha")
            .restart()
            .await
            .expect_err("off")
            .to_string(),
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
}
