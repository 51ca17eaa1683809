//! `switchboard serve` (the gateway) driven by Switchboard's own client over stdio: real
//! fixture servers behind it, a broken one beside them.

use std::path::PathBuf;
use std::time::Duration;

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_session::{
    CallOptions, EraChoice, Session, SessionConfig, SessionError, SessionEvent,
};
use switchboard_testkit::locate::fixture_bin;
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};
use switchboard_wire::stdio::{ProcessSpec, ShutdownGrace, ShutdownStep, StdioOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::{listed_resources, tool_names};
use crate::{config, fixture_entry, switchboard};

/// How long the gateway gets to stop after stdin closes (it stops its servers first).
pub(crate) const GRACE: ShutdownGrace = ShutdownGrace {
    after_stdin_close: Duration::from_secs(5),
    after_sigterm: Duration::from_secs(1),
};

pub(crate) async fn gateway(servers: Value) -> Session {
    gateway_with_flags(servers, &[]).await
}

/// The fixture server itself, without the gateway.
async fn direct_fixture(args: &[&str]) -> Session {
    let program = fixture_bin().display().to_string();
    spawned(
        "fixture",
        program,
        args.iter().map(|a| (*a).to_owned()).collect(),
    )
    .await
}

/// [`gateway`] with more `serve` flags after `--config`.
pub(crate) async fn gateway_with_flags(servers: Value, flags: &[&str]) -> Session {
    gateway_for(&config(servers), flags).await
}

/// `switchboard serve --config PATH FLAGS…`, initialized.
pub(crate) async fn gateway_for(path: &std::path::Path, flags: &[&str]) -> Session {
    gateway_with_env(path, flags, &[]).await
}

/// [`gateway_for`] with these environment variables (after the one that keeps it off the
/// era memo, so they may set the memo).
pub(crate) async fn gateway_with_env(
    path: &std::path::Path,
    flags: &[&str],
    env: &[(&str, &str)],
) -> Session {
    let mut args = vec!["--config".to_owned(), path.display().to_string()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    spawned_spec(SessionConfig::new("gateway"), &serve_spec(args, env, None)).await
}

/// `switchboard serve FLAGS…` without `--config`, run in `cwd` (its project directory)
/// with these environment variables (`HOME` among them, for the user's files).
pub(crate) async fn gateway_discovering(
    cwd: &std::path::Path,
    flags: &[&str],
    env: &[(&str, &str)],
) -> Session {
    let args = flags.iter().map(|f| (*f).to_owned()).collect();
    let spec = serve_spec(args, env, Some(cwd.to_owned()));
    spawned_spec(SessionConfig::new("gateway"), &spec).await
}

/// `switchboard serve ARGS…` off the era memo, with `env` after that.
fn serve_spec(args: Vec<String>, env: &[(&str, &str)], cwd: Option<PathBuf>) -> ProcessSpec {
    let mut spec = ProcessSpec {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        args: std::iter::once("serve".to_owned()).chain(args).collect(),
        env: crate::no_era_memo_env(),
        cwd,
        sandbox: None,
    };
    spec.env
        .extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    spec
}

/// A session with `program ARGS` over stdio, called `name`, after its handshake.
async fn spawned(name: &str, program: String, args: Vec<String>) -> Session {
    spawned_in(EraChoice::Auto, name, program, args).await
}

/// [`spawned`], speaking the era chosen.
pub(crate) async fn spawned_in(
    era: EraChoice,
    name: &str,
    program: String,
    args: Vec<String>,
) -> Session {
    let mut config = SessionConfig::new(name);
    config.era = era;
    spawned_with(config, program, args).await
}

/// [`spawned`] with these session settings.
async fn spawned_with(config: SessionConfig, program: String, args: Vec<String>) -> Session {
    let spec = ProcessSpec {
        program,
        args,
        env: crate::no_era_memo_env(),
        cwd: None,
        sandbox: None,
    };
    spawned_spec(config, &spec).await
}

/// A session with the process `spec` over stdio, after its handshake.
async fn spawned_spec(config: SessionConfig, spec: &ProcessSpec) -> Session {
    let name = config.server_name.to_string();
    within(
        "the handshake",
        TEST_DEADLINE,
        Session::spawn_stdio(spec, StdioOptions::new(&name), config),
    )
    .await
    .unwrap_or_else(|e| panic!("{name} initializes: {e}"))
}

pub(crate) async fn call(
    session: &Session,
    tool: &str,
    arguments: Value,
) -> Result<String, String> {
    match within(
        "tools/call",
        TEST_DEADLINE,
        session.call_tool(tool, Some(&arguments), &CallOptions::default()),
    )
    .await
    {
        Ok(result) if result.is_error => Err(format!("tool error: {}", result.text())),
        Ok(result) => Ok(result.text()),
        Err(SessionError::Rpc { error, .. }) => Err(format!("JSON-RPC error: {error}")),
        Err(other) => Err(format!("{other}")),
    }
}

/// Opens a `subscriptions/listen` stream for the tool list when the session speaks the
/// modern era (a legacy session hears list changes without one); keep it while waiting.
pub(crate) async fn follow_tool_changes(
    session: &Session,
) -> Option<switchboard_wire::PendingCall> {
    if session.negotiated().era != switchboard_protocol::Era::Modern {
        return None;
    }
    let filter = switchboard_protocol::SubscriptionFilter {
        tools_list_changed: true,
        ..Default::default()
    };
    let (stream, honoured) = within(
        "subscriptions/listen",
        TEST_DEADLINE,
        session.listen(&filter),
    )
    .await
    .expect("a listen stream");
    assert!(honoured.tools_list_changed, "{honoured:?}");
    Some(stream)
}

/// Waits for the gateway's `notifications/tools/list_changed`.
pub(crate) async fn tools_list_changed(
    events: &mut tokio::sync::broadcast::Receiver<SessionEvent>,
) {
    within("notifications/tools/list_changed", TEST_DEADLINE, async {
        loop {
            match events.recv().await {
                Ok(SessionEvent::Notification(n))
                    if n.method == "notifications/tools/list_changed" =>
                {
                    break;
                }
                Ok(_) => {}
                Err(error) => panic!("events ended: {error}"),
            }
        }
    })
    .await;
}

/// Asserts that the gateway lists exactly these prompts (each a fixture's `greet`) and that
/// the last one answers through it.
async fn assert_prompts(session: &Session, expected: &[&str]) {
    let prompts = within("prompts/list", TEST_DEADLINE, session.list_prompts())
        .await
        .expect("listed");
    let names: Vec<&str> = prompts.items.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, expected);
    let last = expected.last().expect("a prompt");
    let greeting = within(
        "prompts/get",
        TEST_DEADLINE,
        session.get_prompt(last, Some(json!({"name": "Ada"}))),
    )
    .await
    .expect("got");
    assert_eq!(greeting["messages"][0]["content"]["text"], "Hello, Ada!");
}

/// The processes whose parent is `pid`.
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`; comm may hold spaces, so parse after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            children.push(child);
        }
    }
    children
}

#[tokio::test]
async fn the_gateway_serves_every_ready_server_and_reports_the_broken_one() {
    let session = gateway(json!({
        "alpha": fixture_entry(&[]),
        "beta": fixture_entry(&[]),
        "broken": {"command": "/nonexistent/mcp-server"},
    }))
    .await;
    assert_eq!(
        session
            .negotiated()
            .server_info
            .as_ref()
            .map(|i| i.name.as_str()),
        Some("switchboard"),
        "the gateway answers for itself"
    );
    // `initialize` waited for the start, so it carries the servers' instructions.
    let instructions = session
        .negotiated()
        .instructions
        .clone()
        .unwrap_or_default();
    assert!(
        instructions.contains("### alpha\n\n```text\nFixture server for Switchboard tests.")
            && instructions.contains("### beta"),
        "{instructions}"
    );
    expect![[r#"
        [
            "alpha__add",
            "alpha__change_tools",
            "alpha__echo",
            "alpha__fail",
            "alpha__image",
            "alpha__slow",
            "beta__add",
            "beta__change_tools",
            "beta__echo",
            "beta__fail",
            "beta__image",
            "beta__slow",
        ]
    "#]]
    .assert_debug_eq(&tool_names(&session).await);

    let outcomes = [
        call(
            &session,
            "alpha__echo",
            json!({"text": "through the gateway"}),
        )
        .await,
        call(&session, "beta__add", json!({"a": 2, "b": 3})).await,
        call(&session, "beta__add", json!({"a": "two"})).await,
        call(&session, "alpha__fail", json!({})).await,
        call(&session, "broken__anything", json!({})).await,
    ];
    expect![[r#"
        [
            Ok(
                "through the gateway",
            ),
            Ok(
                "5",
            ),
            Err(
                "tool error: invalid arguments for `beta__add`: arguments: \"b\" is a required property; `a`: \"two\" is not of type \"integer\"",
            ),
            Err(
                "tool error: this tool always fails",
            ),
            Err(
                "JSON-RPC error: unknown tool `broken__anything`: this gateway has 12 tools (tools/list shows them) (code -32602)",
            ),
        ]
    "#]]
    .assert_debug_eq(&outcomes);

    // The startup report went to the gateway's stderr (stdout is the protocol).
    let pid = session.pid().expect("a stdio gateway has a pid");
    let servers = children_of(pid);
    assert_eq!(servers.len(), 2, "two fixture servers run: {servers:?}");
    let stderr = crate::support::stderr_of(&session);
    assert!(stderr.contains("2 of 3 server(s) ready"), "{stderr}");
    assert!(stderr.contains("broken: failed"), "{stderr}");
    // A failed server's line ends with its reason, not a tool count; its retries fail for
    // the same reason and are not warned about again.
    assert!(!stderr.contains("(0 tools)"), "{stderr}");
    assert!(stderr.matches("server failed").count() <= 1, "{stderr}");

    // Closing stdin ends the gateway, and it ends its servers.
    let report = session.shutdown(GRACE).await;
    let report = report.expect("a stdio gateway has a process");
    assert_eq!(
        (&report.step, report.descendants_killed),
        (&ShutdownStep::StdinClosed, 0),
        "the gateway exits on stdin EOF and leaves nothing behind: {report:?}"
    );
    for server in servers {
        wait::until_async("a server's exit", TEST_DEADLINE, || async {
            !std::path::Path::new(&format!("/proc/{server}")).exists()
        })
        .await;
    }
}

#[tokio::test]
async fn a_legacy_client_hears_list_changes_after_initialize() {
    let path = config(json!({"alpha": fixture_entry(&[])}));
    let args = vec![
        "serve".to_owned(),
        "--config".into(),
        path.display().to_string(),
    ];
    let session = spawned_in(
        EraChoice::Legacy,
        "gateway",
        env!("CARGO_BIN_EXE_switchboard").into(),
        args,
    )
    .await;
    assert_eq!(session.negotiated().era, switchboard_protocol::Era::Legacy);
    let before = tool_names(&session).await;
    let mut events = session.events();
    call(&session, "alpha__change_tools", json!({}))
        .await
        .expect("changed");
    tools_list_changed(&mut events).await;
    assert_eq!(tool_names(&session).await.len(), before.len() + 1);
    session.shutdown(GRACE).await;
}

#[tokio::test]
async fn progress_cancellation_and_list_changes_cross_the_gateway() {
    let session = gateway(json!({"alpha": fixture_entry(&[])})).await;
    let before = tool_names(&session).await;

    // Progress comes back under our own token.
    let (progress_tx, mut progress_rx) = mpsc::channel(16);
    let options = CallOptions {
        progress: Some(progress_tx),
        ..CallOptions::default()
    };
    let done = within(
        "a slow call",
        TEST_DEADLINE,
        session.call_tool(
            "alpha__slow",
            Some(&json!({"duration_ms": 200, "steps": 2})),
            &options,
        ),
    )
    .await
    .expect("answered");
    assert_eq!(done.text(), "done");
    let mut steps = Vec::new();
    while let Ok(progress) = progress_rx.try_recv() {
        steps.push(progress.progress);
    }
    // Every step, the last one (sent just before the result) included, on both hops.
    assert_eq!(steps, vec![1.0, 2.0]);

    // Cancelling ends the call at once; the gateway keeps serving.
    let cancel = CancellationToken::new();
    let (progress_tx, mut progress_rx) = mpsc::channel(16);
    let options = CallOptions {
        cancel: Some(cancel.clone()),
        progress: Some(progress_tx),
        ..CallOptions::default()
    };
    let slow_arguments = json!({"duration_ms": 5000, "steps": 50});
    let slow = session.call_tool("alpha__slow", Some(&slow_arguments), &options);
    let cancelled = within("a cancelled call", TEST_DEADLINE, async {
        tokio::pin!(slow);
        tokio::select! {
            outcome = &mut slow => panic!("finished before it was cancelled: {outcome:?}"),
            _ = progress_rx.recv() => cancel.cancel(),
        }
        slow.await
    })
    .await;
    assert!(
        matches!(cancelled, Err(SessionError::Cancelled { .. })),
        "{cancelled:?}"
    );
    assert_eq!(
        call(&session, "alpha__echo", json!({"text": "still here"})).await,
        Ok("still here".into())
    );

    // A server's new tool reaches the client as a list change.
    let mut events = session.events();
    let _stream = follow_tool_changes(&session).await;
    call(&session, "alpha__change_tools", json!({}))
        .await
        .expect("changed");
    tools_list_changed(&mut events).await;
    let after = tool_names(&session).await;
    let added: Vec<&String> = after.iter().filter(|t| !before.contains(t)).collect();
    assert_eq!(added, vec!["alpha__extra_1"]);
    session.shutdown(GRACE).await;
}

#[test]
fn the_gateway_passes_the_compatibility_checks() {
    let inner = config(json!({"alpha": fixture_entry(&[])}));
    let outer = config(json!({"gateway": {
        "command": env!("CARGO_BIN_EXE_switchboard"),
        "args": ["serve", "--config", inner.display().to_string()],
    }}));
    let run = crate::switchboard(&["check", "--config", &outer.display().to_string()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = run
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("gateway:"))
        .unwrap_or_default()
        .to_owned();
    // Every check of the registry ran or was skipped; none failed or warned.
    let [passed, failed, warnings, skipped] =
        crate::check::check_totals(&summary).expect("a summary line");
    assert_eq!(
        (failed, warnings, passed + skipped),
        (0, 0, switchboard_check::CHECKS.len()),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn prompts_and_resources_cross_the_gateway() {
    let session = gateway(json!({
        "alpha": fixture_entry(&[]),
        "beta": fixture_entry(&[]),
    }))
    .await;
    assert_prompts(&session, &["alpha__greet", "beta__greet"]).await;
    let missing = within(
        "prompts/get",
        TEST_DEADLINE,
        session.get_prompt("beta__greet", Some(json!({}))),
    )
    .await
    .expect_err("the server's own error, passed through");
    assert!(
        missing
            .to_string()
            .contains("prompt greet needs the argument `name`"),
        "{missing}"
    );

    let (resources, templates) = listed_resources(&session).await;
    // Both servers list the same URI and template: the first server's entries stand
    // (reads go there), URIs unchanged.
    assert_eq!(
        (
            resources.items.len(),
            templates.items.len(),
            resources.problems.len()
        ),
        (1, 1, 0)
    );
    assert_eq!(resources.items[0].uri, "fixture://readme");
    let readme = within(
        "resources/read",
        TEST_DEADLINE,
        session.read_resource("fixture://readme"),
    )
    .await
    .expect("read");
    assert_eq!(readme["contents"][0]["uri"], "fixture://readme");
    let item = within(
        "resources/read",
        TEST_DEADLINE,
        session.read_resource("fixture://item/7"),
    )
    .await
    .expect("read through a template");
    assert_eq!(item["contents"][0]["text"], "Item 7");
    let unknown = within(
        "resources/read",
        TEST_DEADLINE,
        session.read_resource("elsewhere://nothing"),
    )
    .await
    .expect_err("no server offers it");
    expect![[r#"server `gateway` answered `resources/read` with an error: no server behind this gateway offers the resource `elsewhere://nothing` (code -32602), data: {"uri":"elsewhere://nothing"}"#]]
    .assert_eq(&unknown.to_string());
    session.shutdown(GRACE).await;
}

#[tokio::test]
async fn one_server_unprefixed_is_served_under_its_own_names() {
    let servers = json!({
        "fixture": fixture_entry(&["--mode", "bad-tool-names"]),
        "other": fixture_entry(&[]),
    });
    let session = gateway_with_flags(servers, &["--server", "fixture", "--no-prefix"]).await;
    // The fixture's own names, even one no provider would accept; its second `echo` cannot
    // be told apart from the first by name, so only the first is served.
    expect![[r#"
        [
            "add",
            "bad name!",
            "change_tools",
            "echo",
            "fail",
            "image",
            "slow",
        ]
    "#]]
    .assert_debug_eq(&tool_names(&session).await);
    // A client of the server itself sees the same names (the gateway lists them sorted).
    let direct = direct_fixture(&["--mode", "bad-tool-names"]).await;
    let mut direct_names = tool_names(&direct).await;
    direct_names.sort();
    assert_eq!(direct_names, tool_names(&session).await);
    // And the server's own identity and instructions, as it gives them.
    assert_eq!(
        session.negotiated().server_info,
        direct.negotiated().server_info,
        "the gateway fronting one server presents that server's serverInfo"
    );
    assert_eq!(
        session.negotiated().instructions,
        direct.negotiated().instructions
    );
    direct.shutdown(GRACE).await;
    let outcomes = [
        call(&session, "echo", json!({"text": "unprefixed"})).await,
        call(&session, "add", json!({"a": 2, "b": 3})).await,
        // The fixture lists `bad name!` without implementing it: its own error shows the call
        // reached it under that name.
        call(&session, "bad name!", json!({})).await,
        call(&session, "fixture__echo", json!({"text": "prefixed"})).await,
    ];
    expect![[r#"
        [
            Ok(
                "unprefixed",
            ),
            Ok(
                "5",
            ),
            Err(
                "JSON-RPC error: unknown tool: bad name! (code -32602)",
            ),
            Err(
                "JSON-RPC error: unknown tool `fixture__echo`: this gateway has 7 tools (tools/list shows them) (code -32602)",
            ),
        ]
    "#]]
    .assert_debug_eq(&outcomes);
    assert_prompts(&session, &["greet"]).await;
    session.shutdown(GRACE).await;
}

#[test]
fn no_prefix_needs_one_known_server() {
    let path = config(json!({
        "alpha": fixture_entry(&[]),
        "beta": fixture_entry(&[]),
    }));
    let path = path.display().to_string();
    let runs = [
        vec!["serve", "--config", &path, "--no-prefix"],
        vec![
            "serve",
            "--config",
            &path,
            "--server",
            "alpha",
            "--server",
            "beta",
            "--no-prefix",
        ],
        vec![
            "serve",
            "--config",
            &path,
            "--server",
            "gamma",
            "--no-prefix",
        ],
    ];
    let outcomes: Vec<String> = runs
        .iter()
        .map(|args| {
            let run = switchboard(args);
            let stderr = run.stderr.replace(&path, "CONFIG");
            format!("exit {}: {}", run.code, stderr.trim_end())
        })
        .collect();
    expect![[r#"
        [
            "exit 2: switchboard: --no-prefix needs `--server NAME`: it fronts one server under its own names",
            "exit 2: switchboard: --no-prefix needs exactly one `--server NAME` (got 2): names of several servers could collide",
            "exit 2: switchboard: --server gamma: no server of that name in CONFIG; configured: alpha, beta",
        ]
    "#]].assert_debug_eq(&outcomes);
}

/// Waits for a notification `method` and returns its params.
async fn notification(
    events: &mut tokio::sync::broadcast::Receiver<SessionEvent>,
    method: &str,
) -> Value {
    within(method, TEST_DEADLINE, async {
        loop {
            match events.recv().await {
                Ok(SessionEvent::Notification(n)) if n.method == method => {
                    break n.params.unwrap_or(Value::Null);
                }
                Ok(_) => {}
                Err(error) => panic!("events ended: {error}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn log_messages_and_resource_updates_cross_the_gateway_in_both_eras() {
    let path = config(json!({"alpha": fixture_entry(&[])}));
    let args = || {
        vec![
            "serve".to_owned(),
            "--config".into(),
            path.display().to_string(),
        ]
    };
    let program = || env!("CARGO_BIN_EXE_switchboard").to_owned();
    let uri = "fixture://readme";
    let options = CallOptions::default();

    // Legacy: resources/subscribe, then the server's log message (named after it) and
    // the update, as notifications.
    let legacy = spawned_in(EraChoice::Legacy, "gateway", program(), args()).await;
    let mut events = legacy.events();
    within(
        "resources/subscribe",
        TEST_DEADLINE,
        legacy.request("resources/subscribe", Some(json!({ "uri": uri })), &options),
    )
    .await
    .expect("subscribed");
    within("resources/read", TEST_DEADLINE, legacy.read_resource(uri))
        .await
        .expect("read");
    let log = notification(&mut events, "notifications/message").await;
    let updated = notification(&mut events, "notifications/resources/updated").await;
    expect![[r#"
        {"level":"notice","data":"read fixture://readme","logger":"alpha/fixture"}
        {"uri":"fixture://readme"}"#]]
    .assert_eq(&format!("{log}\n{updated}"));
    legacy.shutdown(GRACE).await;

    // Modern: a listen stream following the resource hears the update, tagged with it.
    let modern = spawned_in(EraChoice::Modern, "gateway", program(), args()).await;
    let filter = switchboard_protocol::SubscriptionFilter {
        resource_subscriptions: vec![uri.to_owned()],
        ..Default::default()
    };
    let mut events = modern.events();
    let (_stream, honoured) = within(
        "subscriptions/listen",
        TEST_DEADLINE,
        modern.listen(&filter),
    )
    .await
    .expect("a listen stream");
    assert_eq!(honoured.resource_subscriptions, vec![uri.to_owned()]);
    within("resources/read", TEST_DEADLINE, modern.read_resource(uri))
        .await
        .expect("read");
    let updated = notification(&mut events, "notifications/resources/updated").await;
    assert_eq!(updated["uri"], uri, "{updated}");
    modern.shutdown(GRACE).await;
}

/// A client that can answer the user's questions: it says yes.
struct SaysYes;

impl switchboard_session::ClientHandler for SaysYes {
    fn supports_elicitation(&self) -> bool {
        true
    }

    fn elicit(&self, _server: &str, _params: Value) -> switchboard_session::HandlerFuture {
        Box::pin(async { Ok(json!({"action": "accept", "content": {"ok": true}})) })
    }
}

#[tokio::test]
async fn a_modern_clients_multi_round_trip_call_crosses_the_gateway() {
    let path = config(
        json!({"alpha": fixture_entry(&["--era", "modern", "--undeclared-input", "refuse"])}),
    );
    let args = vec![
        "serve".into(),
        "--config".into(),
        path.display().to_string(),
    ];
    let mut config = SessionConfig::new("gateway");
    config.era = EraChoice::Modern;
    config.handler = std::sync::Arc::new(SaysYes);
    let session = spawned_with(config, env!("CARGO_BIN_EXE_switchboard").into(), args).await;
    // The server asks (input_required, with its request state); the gateway hands that to
    // us, our answer and the state go back through it, and the server finishes. The server
    // asks only clients that declare elicitation: the gateway passed ours on.
    let answered = call(&session, "alpha__confirm", json!({"question": "Proceed?"})).await;
    assert_eq!(
        answered,
        Ok(r#"answer: {"action":"accept","content":{"ok":true}}"#.into())
    );
    session.shutdown(GRACE).await;

    // A client that cannot answer is refused by the server, as the server decides.
    let unable = gateway(
        json!({"alpha": fixture_entry(&["--era", "modern", "--undeclared-input", "refuse"])}),
    )
    .await;
    let refused = call(&unable, "alpha__confirm", json!({"question": "Proceed?"})).await;
    expect![[r#"Err("JSON-RPC error: confirm asks the user: the client must declare `elicitation` (code -32021), data: {\"requiredCapabilities\":{\"elicitation\":{}}}")"#]].assert_eq(&format!("{refused:?}"));
    unable.shutdown(GRACE).await;
}

/// A client whose user and model answer: the user gives a name and an email, the model
/// says "Paris". It keeps what it was asked.
#[derive(Default, Clone)]
struct Answers {
    asked: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl switchboard_session::ClientHandler for Answers {
    fn supports_elicitation(&self) -> bool {
        true
    }

    fn elicit(&self, _server: &str, params: Value) -> switchboard_session::HandlerFuture {
        self.asked.lock().expect("not poisoned").push(params);
        let answer =
            json!({"action": "accept", "content": {"email": "ada@example.com", "username": "ada"}});
        Box::pin(async move { Ok(answer) })
    }

    fn supports_sampling(&self) -> bool {
        true
    }

    fn sample(&self, _server: &str, params: Value) -> switchboard_session::HandlerFuture {
        self.asked.lock().expect("not poisoned").push(params);
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        Box::pin(async move { Ok(answer) })
    }
}

#[tokio::test]
async fn a_servers_questions_during_a_call_reach_the_legacy_client_of_the_call() {
    let example = switchboard_testkit::locate::conformance_server_bin();
    // A legacy server asks during the call; a 2026-07-28 one answers `input_required`,
    // which the gateway's session turns into the same questions to the client.
    for era in ["legacy", "modern"] {
        let path = config(json!({"conf": {"command": example.display().to_string(), "era": era}}));
        let args = vec![
            "serve".into(),
            "--config".into(),
            path.display().to_string(),
            "--server".into(),
            "conf".into(),
            "--no-prefix".into(),
        ];
        let answers = Answers::default();
        let mut config = SessionConfig::new("gateway");
        config.era = EraChoice::Legacy;
        config.handler = std::sync::Arc::new(answers.clone());
        let session = spawned_with(
            config,
            env!("CARGO_BIN_EXE_switchboard").into(),
            args.clone(),
        )
        .await;
        let elicited = call(
            &session,
            "test_elicitation",
            json!({"message": "Who are you?"}),
        )
        .await;
        let sampled = call(
            &session,
            "test_sampling",
            json!({"prompt": "Capital of France?"}),
        )
        .await;
        expect![[r#"
            Ok("User response: {\"action\":\"accept\",\"content\":{\"email\":\"ada@example.com\",\"username\":\"ada\"}}")
            Ok("LLM response: Paris")"#]]
        .assert_eq(&format!("{elicited:?}\n{sampled:?}"));
        // The questions arrived as the server sent them. (The answer's members are in
        // alphabetical order, which no map of either side reorders.)
        let asked = answers.asked.lock().expect("not poisoned").clone();
        assert_eq!(asked.len(), 2, "upstream {era}: {asked:?}");
        assert_eq!(asked[0]["message"], "Who are you?", "upstream {era}");
        assert_eq!(
            asked[1]["messages"][0]["content"]["text"], "Capital of France?",
            "upstream {era}"
        );
        session.shutdown(GRACE).await;

        // A client that declared neither is not asked: the call fails, saying why (the
        // gateway says so to a legacy server's question; a 2026-07-28 server, which sees
        // the client's capabilities, refuses with -32021 itself).
        let unable = spawned_in(
            EraChoice::Legacy,
            "gateway",
            env!("CARGO_BIN_EXE_switchboard").into(),
            args.clone(),
        )
        .await;
        let refused = call(&unable, "test_sampling", json!({"prompt": "Capital?"})).await;
        let refused = format!("{refused:?}");
        let why = match era {
            "legacy" => "did not declare the `sampling` capability",
            _ => "needs its `sampling` capability (code -32021)",
        };
        assert!(refused.contains(why), "upstream {era}: {refused}");
        unable.shutdown(GRACE).await;
    }
}
