//! The session against our fixture servers: each good behaviour and each broken one.

use std::sync::Arc;
use std::time::Duration;

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use switchboard_protocol::ContentBlock;
use switchboard_session::{
    CallOptions, CancellationToken, ClientHandler, EraChoice, HandlerFuture, Session, SessionError,
    SessionEvent,
};
use switchboard_testkit::wait::{self, within};
use switchboard_wire::stdio::{ShutdownStep, StdioOptions};
use switchboard_wire::{MalformedKind, UnexpectedReason};

use crate::support::*;

/// Renders what a connection attempt produced, for snapshots.
fn outcome(result: &Result<Session, SessionError>) -> String {
    match result {
        Ok(session) => {
            let n = session.negotiated();
            format!("ok: {} {}", n.era, n.protocol_version)
        }
        Err(e) => format!("error: {e}"),
    }
}

async fn check_connect(args: &[&str], era: EraChoice, expect: Expect) {
    let mut config = quick_config("fixture");
    config.era = era;
    let result = connect(&fixture(args), config).await;
    expect.assert_eq(&outcome(&result));
    if let Ok(session) = result {
        shutdown_clean(session).await;
    }
}

#[tokio::test]
async fn eras_are_detected_and_negotiated() {
    check_connect(&[], EraChoice::Auto, expect!["ok: legacy 2025-11-25"]).await;
    check_connect(
        &["--era", "modern"],
        EraChoice::Auto,
        expect!["ok: modern 2026-07-28"],
    )
    .await;
    check_connect(
        &["--era", "both"],
        EraChoice::Auto,
        expect!["ok: modern 2026-07-28"],
    )
    .await;
    check_connect(
        &["--era", "both"],
        EraChoice::Legacy,
        expect!["ok: legacy 2025-11-25"],
    )
    .await;
    check_connect(
        &["--era", "modern"],
        EraChoice::Modern,
        expect!["ok: modern 2026-07-28"],
    )
    .await;
    check_connect(
        &[],
        EraChoice::Modern,
        expect!["error: server `fixture` broke the protocol in `server/discover`: the server does not speak the 2026-07-28 protocol (it answered `server/discover` with: Method not found (code -32601)); set `era` to `auto` or `legacy`"],
    )
    .await;
}

/// Records the method of every request and notification the client sends.
#[derive(Default)]
struct SentMethods(std::sync::Mutex<Vec<String>>);

impl switchboard_wire::FrameTap for SentMethods {
    fn frame(&self, direction: switchboard_wire::Direction, bytes: &[u8]) {
        if direction != switchboard_wire::Direction::Outbound {
            return;
        }
        let method = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|frame| {
                frame
                    .get("method")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        if let Some(method) = method {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(method);
        }
    }
}

/// The outcome of connecting to a fixture in `args`' mode under `era`, and the methods
/// sent before it, in order.
async fn handshake_methods(args: &[&str], era: EraChoice) -> String {
    let mut config = quick_config("fixture");
    config.era = era;
    let tap = Arc::new(SentMethods::default());
    let mut options = StdioOptions::new("fixture");
    options.connection.tap = Some(tap.clone());
    let result = within(
        "connect",
        TEST_DEADLINE,
        Session::spawn_stdio(&fixture(args), options, config),
    )
    .await;
    let rendered = outcome(&result);
    if let Ok(session) = result {
        shutdown_clean(session).await;
    }
    let sent = tap.0.lock().unwrap_or_else(|p| p.into_inner()).join(", ");
    format!("{rendered}; sent {sent}")
}

#[tokio::test]
async fn the_probe_order_follows_the_era_choice() {
    // `legacy` never probes; `auto` probes first; `auto, legacy first` sends `initialize`
    // first and probes only when `initialize` is refused.
    expect!["ok: legacy 2025-11-25; sent initialize, notifications/initialized"]
        .assert_eq(&handshake_methods(&[], EraChoice::Legacy).await);
    expect!["ok: legacy 2025-11-25; sent server/discover, initialize, notifications/initialized"]
        .assert_eq(&handshake_methods(&[], EraChoice::Auto).await);
    expect!["ok: legacy 2025-11-25; sent initialize, notifications/initialized"]
        .assert_eq(&handshake_methods(&[], EraChoice::AutoLegacyFirst).await);
    expect!["ok: modern 2026-07-28; sent initialize, server/discover"]
        .assert_eq(&handshake_methods(&["--era", "modern"], EraChoice::AutoLegacyFirst).await);
}

#[tokio::test]
async fn pinned_versions() {
    let mut config = quick_config("fixture");
    config.protocol_version = Some("2025-06-18".into());
    let session = connect(&fixture(&[]), config).await;
    expect!["ok: legacy 2025-06-18"].assert_eq(&outcome(&session));
    let mut config = quick_config("fixture");
    config.protocol_version = Some("2030-01-01".into());
    let session = connect(&fixture(&[]), config).await;
    expect!["error: server `fixture` speaks protocol version(s) (not asked: the configuration pins unknown version 2030-01-01), but Switchboard speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05; update the server or pin a common version in its configuration"].assert_eq(&outcome(&session));
}

#[tokio::test]
async fn wrong_protocol_version_fails_with_both_lists() {
    check_connect(
        &["--mode", "wrong-version"],
        EraChoice::Auto,
        expect!["error: server `fixture` speaks protocol version(s) 1999-01-01, but Switchboard speaks 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05; update the server or pin a common version in its configuration"],
    )
    .await;
}

async fn check_calls(era: &str) {
    let session = connect_fixture(&["--era", era]).await;
    let tools = session.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.items.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.starts_with(&["echo", "add", "slow", "fail", "image", "change_tools"]),
        "{names:?}"
    );
    assert!(tools.problems.is_empty());

    let echo = session
        .call_tool(
            "echo",
            Some(&json!({"text": "hi"})),
            &CallOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!((echo.text().as_str(), echo.is_error), ("hi", false));
    let add = session
        .call_tool(
            "add",
            Some(&json!({"a": 2, "b": 40})),
            &CallOptions::default(),
        )
        .await
        .expect("add");
    assert_eq!(add.structured_content, Some(json!({"sum": 42})));
    let invalid = session
        .call_tool("add", Some(&json!({"a": "x"})), &CallOptions::default())
        .await
        .expect("add");
    assert!(invalid.is_error, "{invalid:?}");
    let image = session
        .call_tool("image", None, &CallOptions::default())
        .await
        .expect("image");
    assert!(
        matches!(image.content.first(), Some(ContentBlock::Image { mime_type, .. }) if mime_type == "image/png")
    );
    let unknown = session
        .call_tool("nope", None, &CallOptions::default())
        .await
        .expect_err("unknown tool");
    assert_eq!(unknown.rpc_error().map(|e| e.code), Some(-32602));

    let prompts = session.list_prompts().await.expect("prompts");
    assert_eq!(
        prompts
            .items
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["greet"]
    );
    let prompt = session
        .get_prompt("greet", Some(json!({"name": "Ada"})))
        .await
        .expect("prompt");
    assert!(prompt.to_string().contains("Hello, Ada!"), "{prompt}");
    let resources = session.list_resources().await.expect("resources");
    assert_eq!(resources.items[0].uri, "fixture://readme");
    let templates = session.list_resource_templates().await.expect("templates");
    assert_eq!(templates.items[0].uri_template, "fixture://item/{id}");
    let read = session
        .read_resource("fixture://readme")
        .await
        .expect("read");
    assert!(read["contents"][0]["text"].is_string(), "{read}");
    let completions = session
        .complete(json!({"type": "ref/prompt", "name": "greet"}), "name", "b")
        .await
        .expect("complete");
    assert_eq!(completions, ["bob"]);
    assert_eq!(session.stats().wire, Default::default());
    shutdown_clean(session).await;
}

#[tokio::test]
async fn legacy_requests_of_every_kind() {
    check_calls("legacy").await;
}

#[tokio::test]
async fn modern_requests_of_every_kind() {
    check_calls("modern").await;
}

/// A host that answers elicitations with `{"ok": true}`.
struct Approver;

impl ClientHandler for Approver {
    fn supports_elicitation(&self) -> bool {
        true
    }
    fn elicit(&self, _server: &str, _params: Value) -> HandlerFuture {
        Box::pin(async { Ok(json!({"action": "accept", "content": {"ok": true}})) })
    }
}

#[tokio::test]
async fn multi_round_trip_input_is_fulfilled_and_state_echoed() {
    let mut config = quick_config("fixture");
    config.handler = Arc::new(Approver);
    let session = connect(&fixture(&["--era", "modern"]), config)
        .await
        .expect("connect");
    let result = session
        .call_tool(
            "confirm",
            Some(&json!({"question": "ok?"})),
            &CallOptions::default(),
        )
        .await
        .expect("confirm");
    expect![[r#"answer: {"action":"accept","content":{"ok":true}}"#]].assert_eq(&result.text());
    shutdown_clean(session).await;

    // Without the capability the client refuses instead of answering (the fixture asks a
    // client that did not declare it, as a careless server would).
    let session = connect_fixture(&["--era", "modern", "--undeclared-input", "ask"]).await;
    let error = session
        .call_tool(
            "confirm",
            Some(&json!({"question": "ok?"})),
            &CallOptions::default(),
        )
        .await
        .expect_err("refused");
    expect!["server `fixture` broke the protocol in `tools/call`: the server asked for `elicitation/create` input, which this client could not give: it did not declare the capability"].assert_eq(&error.to_string());
    shutdown_clean(session).await;
}

#[tokio::test]
async fn modern_subscription_delivers_tagged_list_changes() {
    let session = connect_fixture(&["--era", "modern"]).await;
    let filter = switchboard_protocol::SubscriptionFilter {
        tools_list_changed: true,
        ..Default::default()
    };
    let (listen, honoured) = within("listen", TEST_DEADLINE, session.listen(&filter))
        .await
        .expect("listen");
    assert!(honoured.tools_list_changed);
    let mut events = session.events();
    session
        .call_tool("change_tools", None, &CallOptions::default())
        .await
        .expect("change_tools");
    let tagged = next_event(&mut events, "tools list_changed", |event| match event {
        SessionEvent::Notification(n) if n.method == "notifications/tools/list_changed" => {
            n.params.clone()
        }
        _ => None,
    })
    .await;
    assert_eq!(
        tagged["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen.id().to_json()
    );
    let tools = session.list_tools().await.expect("tools");
    assert!(tools.items.iter().any(|t| t.name.starts_with("extra_")));
    drop(listen);
    shutdown_clean(session).await;
}

/// 250 tools in pages of 50.
const PAGED_TOOLS: &[&str] = &[
    "--mode",
    "many-tools",
    "--tools",
    "250",
    "--page-size",
    "50",
];

#[tokio::test]
async fn pagination_is_followed_and_loops_are_caught() {
    let session = connect_fixture(PAGED_TOOLS).await;
    let tools = session.list_tools().await.expect("tools");
    assert_eq!(
        (tools.items.len(), tools.pages, tools.problems.len()),
        (250, 5, 0)
    );
    shutdown_clean(session).await;

    let session = connect_fixture(&["--mode", "pagination-loop"]).await;
    let error = session.list_tools().await.expect_err("loop");
    expect![[r#"server `fixture` broke the protocol in `tools/list`: pagination loop: cursor "again" was returned twice"#]].assert_eq(&error.to_string());
    shutdown_clean(session).await;
}

/// Lists `many-tools` with the given caps, showing the outcome.
async fn list_capped(
    args: &[&str],
    caps: impl FnOnce(&mut switchboard_session::SessionConfig),
) -> String {
    let mut config = quick_config("fixture");
    caps(&mut config);
    let session = connect(&fixture(args), config).await.expect("connect");
    let shown = match session.list_tools().await {
        Ok(listing) => format!(
            "ok: {} tools in {} pages",
            listing.items.len(),
            listing.pages
        ),
        Err(error) => format!(
            "error ({:?}, too large: {}): {error}",
            error.listing_cap(),
            error.is_listing_too_large()
        ),
    };
    shutdown_clean(session).await;
    shown
}

#[tokio::test]
async fn listings_are_capped_in_entries_and_bytes_across_pages() {
    let pages = PAGED_TOOLS;
    expect!["ok: 250 tools in 5 pages"]
        .assert_eq(&list_capped(pages, |c| c.max_list_items = 250).await);
    expect!["error (Some(Items), too large: true): server `fixture` sent a `tools/list` listing over its entry cap: 250 entries, more than 249; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)"]
        .assert_eq(&list_capped(pages, |c| c.max_list_items = 249).await);
    expect!["error (Some(Items), too large: true): server `fixture` sent a `tools/list` listing over its entry cap: 50 entries, more than 10; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)"]
        .assert_eq(&list_capped(pages, |c| c.max_list_items = 10).await);
    expect!["error (Some(Bytes), too large: true): server `fixture` sent a `tools/list` listing over its size cap: 10779 bytes, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListBytes` in the server's config entry, or `max_list_bytes` in a host's session configuration)"]
        .assert_eq(&list_capped(pages, |c| c.max_list_bytes = 10_000).await);
    expect!["error (Some(Pages), too large: true): server `fixture` sent a `tools/list` listing over its page cap: more than 4 pages; stopped following `nextCursor`; nothing of it is used (if the listing is genuine, raise the cap: `maxListPages` in the server's config entry, or `max_list_pages` in a host's session configuration)"]
        .assert_eq(&list_capped(pages, |c| c.max_list_pages = 4).await);
}

#[tokio::test]
async fn an_entry_too_deep_to_read_is_a_problem_beside_the_others() {
    let session = connect_fixture(&["--mode", "deep-schema"]).await;
    let listing = session.list_tools().await.expect("the listing survives");
    let names: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
    expect![[r#"["echo", "add", "slow", "fail", "image", "change_tools"]"#]]
        .assert_eq(&format!("{names:?}"));
    let [problem] = listing.problems.as_slice() else {
        panic!("one problem expected: {:?}", listing.problems);
    };
    expect!["page 1: tool `deep` cannot be read: recursion limit exceeded at line 1 column 2300"]
        .assert_eq(&format!("page {}: {}", problem.page, problem.detail));
    assert!(
        problem.raw.get().starts_with(r#"{"name":"deep""#),
        "the entry is kept as received: {}",
        &problem.raw.get()[..40]
    );
    shutdown_clean(session).await;
}

#[tokio::test]
async fn progress_extends_the_deadline_up_to_the_ceiling() {
    let session = connect_fixture(&[]).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = CallOptions {
        timeout: Some(Duration::from_millis(400)),
        progress: Some(tx),
        ..Default::default()
    };
    let slow = json!({"duration_ms": 1200, "steps": 12});
    let result = session
        .call_tool("slow", Some(&slow), &options)
        .await
        .expect("progress keeps it alive");
    assert_eq!(result.text(), "done");
    let mut seen = 0;
    while rx.try_recv().is_ok() {
        seen += 1;
    }
    // Every step arrives, the last one (sent just before the result) included.
    assert_eq!(seen, 12, "progress forwarded");

    let ceiling = CallOptions {
        timeout: Some(Duration::from_millis(400)),
        max_duration: Some(Duration::from_millis(600)),
        ..Default::default()
    };
    let error = session
        .call_tool("slow", Some(&slow), &ceiling)
        .await
        .expect_err("ceiling");
    assert!(error.is_timeout(), "{error}");
    stderr_contains(&session, "reason=timed out after").await;
    shutdown_clean(session).await;
}

#[tokio::test]
async fn cancellation_by_token_drop_and_timeout_reaches_the_server() {
    let session = connect_fixture(&[]).await;
    let slow = json!({"duration_ms": 5000, "steps": 50});

    let token = CancellationToken::new();
    let (progress, mut reported) = tokio::sync::mpsc::channel(64);
    let options = CallOptions {
        cancel: Some(token.clone()),
        progress: Some(progress),
        ..Default::default()
    };
    let canceller = tokio::spawn(async move {
        // The call is in flight at the server once it reports progress.
        let _ = reported.recv().await;
        token.cancel();
    });
    let error = session
        .call_tool("slow", Some(&slow), &options)
        .await
        .expect_err("cancelled");
    assert!(matches!(error, SessionError::Cancelled { .. }), "{error}");
    stderr_contains(&session, "reason=cancelled by the client").await;
    canceller.await.expect("canceller");

    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        session.call_tool("slow", Some(&slow), &CallOptions::default()),
    )
    .await;
    assert!(dropped.is_err());
    stderr_contains(&session, "reason=request abandoned by the caller").await;

    // The session is still usable, and nothing late arrived.
    let echo = session
        .call_tool(
            "echo",
            Some(&json!({"text": "after"})),
            &CallOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!(echo.text(), "after");
    assert_eq!(session.stats().wire.late_responses, 0);
    shutdown_clean(session).await;
}

#[tokio::test]
async fn a_server_that_ignores_cancellation_has_its_late_answer_counted() {
    let session = connect_fixture(&["--mode", "ignores-cancel"]).await;
    let mut events = session.events();
    let options = CallOptions {
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let error = session
        .call_tool(
            "slow",
            Some(&json!({"duration_ms": 600, "steps": 2})),
            &options,
        )
        .await
        .expect_err("timeout");
    assert!(error.is_timeout());
    let reason = next_event(&mut events, "the late response", |event| match event {
        SessionEvent::UnexpectedResponse { reason, .. } => Some(*reason),
        _ => None,
    })
    .await;
    assert_eq!(reason, UnexpectedReason::Late);
    assert_eq!(session.stats().wire.late_responses, 1);
    shutdown_clean(session).await;
}

#[tokio::test]
async fn no_initialize_reply_times_out_with_the_stderr_tail() {
    let mut config = quick_config("silent");
    config.connect_timeout = Duration::from_millis(800);
    config.probe_timeout = Duration::from_millis(200);
    let error = connect(&fixture(&["--mode", "no-init-reply"]), config)
        .await
        .expect_err("timeout");
    assert!(error.is_timeout(), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("server `silent` did not answer `initialize` within 800ms"),
        "{error}"
    );
}

#[tokio::test]
async fn banner_and_garbage_on_stdout_are_counted_and_survived() {
    let session = connect_fixture(&["--mode", "garbage-stdout"]).await;
    let echo = session
        .call_tool("echo", Some(&json!({"text": "x"})), &CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(echo.text(), "x");
    assert!(
        session.stats().wire.malformed_frames >= 3,
        "{:?}",
        session.stats()
    );
    shutdown_clean(session).await;
}

#[tokio::test]
async fn responses_without_jsonrpc_are_malformed_not_answers() {
    let mut config = quick_config("fixture");
    config.connect_timeout = Duration::from_secs(300);
    config.probe_timeout = Duration::from_secs(300);
    let spec = fixture(&["--mode", "no-jsonrpc-field"]);
    let stdio = switchboard_wire::stdio::spawn(&spec, StdioOptions::new("fixture")).expect("spawn");
    let connection = stdio.connection.clone();
    // The broken answers carry readable ids: the probe's falls back to `initialize`, whose
    // broken answer fails the handshake at once (long before either deadline).
    let error = within(
        "connect",
        TEST_DEADLINE,
        Session::connect(stdio.into(), config),
    )
    .await
    .expect_err("no valid answer");
    assert!(error.is_bad_answer(), "{error}");
    assert!(
        error
            .to_string()
            .contains("answered `initialize` with a malformed message"),
        "{error}"
    );
    assert_eq!(connection.stats().malformed_frames, 2);
}

#[tokio::test]
async fn crash_mid_call_fails_fast_with_exit_status_and_stderr() {
    let session = connect_fixture(&["--mode", "crash-mid-call"]).await;
    let error = session
        .call_tool("echo", Some(&json!({"text": "x"})), &CallOptions::default())
        .await
        .expect_err("crash");
    expect![[r#"
        server `fixture`: the server process exited (exit status: 3)
        --- last stderr output ---
        fixture: crashing on purpose"#]]
    .assert_eq(&error.to_string());
    // Later calls fail at once with the same reason.
    let again = session
        .call_tool("echo", None, &CallOptions::default())
        .await
        .expect_err("closed");
    assert!(again.is_closed());
}

#[tokio::test]
async fn killed_server_fails_outstanding_request_and_a_fresh_session_connects() {
    let spec = fixture(&[]);
    let session = connect(&spec, quick_config("fixture"))
        .await
        .expect("connect");
    let (progress, mut reported) = tokio::sync::mpsc::channel(64);
    let pending = {
        let session = session.clone();
        tokio::spawn(async move {
            let options = CallOptions {
                progress: Some(progress),
                ..CallOptions::default()
            };
            session
                .call_tool("slow", Some(&json!({"duration_ms": 5000})), &options)
                .await
        })
    };
    // The call is in flight at the server once it reports progress.
    within("the call's first progress", TEST_DEADLINE, reported.recv()).await;
    session.process().expect("process").kill();
    let error = within("the outstanding call to fail", TEST_DEADLINE, pending)
        .await
        .expect("join")
        .expect_err("closed");
    assert!(error.is_closed());
    assert!(error.to_string().contains("signal: 9 (SIGKILL)"), "{error}");
    let fresh = connect(&spec, quick_config("fixture"))
        .await
        .expect("reconnect");
    assert_ne!(fresh.pid(), session.pid());
    shutdown_clean(fresh).await;
}

#[tokio::test]
async fn wrong_ids_are_counted_and_the_call_times_out() {
    let session = connect_fixture(&["--mode", "wrong-id"]).await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let error = session
        .call_tool("echo", Some(&json!({"text": "x"})), &options)
        .await
        .expect_err("timeout");
    assert!(error.is_timeout());
    assert_eq!(session.stats().wire.unknown_responses, 1);
    shutdown_clean(session).await;
}

#[tokio::test]
async fn notifications_never_satisfy_a_request() {
    let session = connect_fixture(&["--mode", "notification-instead-of-response"]).await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let error = session
        .call_tool("echo", Some(&json!({"text": "x"})), &options)
        .await
        .expect_err("timeout");
    assert!(error.is_timeout());
    assert!(session.stats().notifications >= 1);
    shutdown_clean(session).await;
}

#[tokio::test]
async fn over_long_lines_are_skipped_in_bounded_memory() {
    let mut options = StdioOptions::new("fixture");
    options.connection.max_frame_bytes = 1024 * 1024;
    let spec = fixture(&["--mode", "long-line", "--long-line-bytes", "3000000"]);
    let session = within(
        "connect",
        TEST_DEADLINE,
        Session::spawn_stdio(&spec, options, quick_config("fixture")),
    )
    .await
    .expect("connect");
    let mut events = session.events();
    let tools = session
        .list_tools()
        .await
        .expect("tools after a skipped line");
    assert!(!tools.items.is_empty());
    let len = next_event(&mut events, "oversized frame", |event| match event {
        SessionEvent::Malformed(m) if matches!(m.kind, MalformedKind::Oversized { .. }) => {
            Some(m.len)
        }
        _ => None,
    })
    .await;
    assert!(len >= 3_000_000, "{len}");
    shutdown_clean(session).await;
}

#[tokio::test]
async fn stderr_flood_does_not_block_and_the_tail_stays_bounded() {
    let session = connect_fixture(&["--mode", "stderr-flood"]).await;
    for i in 0..20 {
        let text = format!("call {i}");
        let echo = session
            .call_tool(
                "echo",
                Some(&json!({ "text": text })),
                &CallOptions::default(),
            )
            .await
            .expect("echo");
        assert_eq!(echo.text(), text);
    }
    assert!(session.process().expect("process").stderr_tail().len() <= 8 * 1024);
    shutdown_clean(session).await;
}

#[tokio::test]
async fn spawn_and_early_exit_failures_are_reported_at_once() {
    let spec = switchboard_wire::stdio::ProcessSpec {
        program: "/nonexistent/server".into(),
        args: vec![],
        env: vec![],
        cwd: None,
        sandbox: None,
    };
    let error = connect(&spec, quick_config("ghost"))
        .await
        .expect_err("spawn");
    expect!["could not start server `ghost`: program `/nonexistent/server` was not found; check `command` in the server's configuration (a bare name is looked up in PATH)"].assert_eq(&error.to_string());

    let error = connect(
        &fixture(&["--mode", "exit-immediately"]),
        quick_config("quitter"),
    )
    .await
    .expect_err("exit");
    expect![[r#"
        server `quitter`: the server process exited (exit status: 2)
        --- last stderr output ---
        fixture: bad configuration, exiting"#]]
    .assert_eq(&error.to_string());
}

#[tokio::test]
async fn shutdown_escalates_and_leaves_no_process() {
    let session = connect_fixture(&[]).await;
    assert_eq!(
        shutdown_clean(session).await.step,
        ShutdownStep::StdinClosed
    );

    let session = connect_fixture(&["--mode", "stubborn"]).await;
    let report = shutdown_clean(session).await;
    assert_eq!(report.step, ShutdownStep::Sigkill);

    let session = connect_fixture(&["--mode", "forks-grandchild"]).await;
    let tail = stderr_contains(&session, "fixture: grandchild").await;
    wait::until_async("both grandchildren", TEST_DEADLINE, || async {
        session
            .process()
            .expect("process")
            .stderr_tail()
            .matches("fixture: grandchild")
            .count()
            >= 2
    })
    .await;
    let _ = tail;
    let pid = session.pid().expect("pid");
    let tree = switchboard_wire::proc::descendants(pid);
    assert!(tree.len() >= 3, "server and two grandchildren: {tree:?}");
    let report = shutdown_clean(session).await;
    assert!(report.descendants_killed >= 1, "{report:?}");
}

/// A host that exposes one root.
struct WithRoots;

impl ClientHandler for WithRoots {
    fn roots(&self) -> Option<Vec<switchboard_protocol::Root>> {
        Some(vec![switchboard_protocol::Root {
            uri: "file:///work".into(),
            name: Some("work".into()),
        }])
    }
}

#[tokio::test]
async fn server_requests_are_answered_or_refused() {
    let mut config = quick_config("fixture");
    config.handler = Arc::new(WithRoots);
    let session = connect(&fixture(&["--mode", "server-requests"]), config)
        .await
        .expect("connect");
    let tail = stderr_contains(&session, "client answered \"s-sampling\"").await;
    let answers: Vec<&str> = tail
        .lines()
        .filter(|l| l.starts_with("fixture: client answered"))
        .collect();
    expect![[r#"
        fixture: client answered "s-ping" {"result":{}}
        fixture: client answered "s-roots" {"result":{"roots":[{"uri":"file:///work","name":"work"}]}}
        fixture: client answered "s-sampling" {"error":{"code":-32601,"message":"this client does not offer `sampling/createMessage`"}}"#]]
    .assert_eq(&answers.join("\n"));
    assert_eq!(session.stats().refused_server_requests, 1);
    shutdown_clean(session).await;

    // Without a roots provider, roots/list is refused too.
    let session = connect_fixture(&["--mode", "server-requests"]).await;
    let tail = stderr_contains(&session, "client answered \"s-sampling\"").await;
    assert!(tail.contains(r#"client answered "s-roots" {"error":{"code":-32601,"message":"this client did not declare the roots capability"}}"#), "{tail}");
    shutdown_clean(session).await;
}

#[tokio::test]
async fn a_modern_server_sending_a_request_is_refused() {
    let session = connect_fixture(&["--mode", "server-requests", "--era", "modern"]).await;
    session
        .list_tools()
        .await
        .expect("tools/list, which makes the fixture send a ping");
    let tail = stderr_contains(&session, "client answered \"s-ping\"").await;
    assert!(tail.contains(r#"{"error":{"code":-32601,"message":"servers must not send requests in protocol 2026-07-28"}}"#), "{tail}");
    shutdown_clean(session).await;
}

#[tokio::test]
async fn unsupported_version_errors_are_retried_once() {
    check_connect(
        &["--mode", "version-retry", "--era", "modern"],
        EraChoice::Auto,
        expect!["ok: modern 2026-07-28"],
    )
    .await;
    check_connect(
        &["--mode", "version-retry", "--era", "modern"],
        EraChoice::Modern,
        expect!["ok: modern 2026-07-28"],
    )
    .await;
    check_connect(
        &["--mode", "version-loop", "--era", "modern"],
        EraChoice::Modern,
        expect!["error: server `fixture` refused every protocol version Switchboard offered (2026-07-28; `server/discover` sent 2 times), though it lists 2026-07-28 as supported; its version negotiation is broken: report it to its authors"],
    )
    .await;
    // In auto mode a looping modern-only server falls back to initialize, which it refuses.
    check_connect(
        &["--mode", "version-loop", "--era", "modern"],
        EraChoice::Auto,
        expect!["error: server `fixture` refused every protocol version Switchboard offered (2026-07-28; `server/discover` sent 3 times), though it lists 2026-07-28 as supported; its version negotiation is broken: report it to its authors"],
    )
    .await;
}

#[tokio::test]
async fn endless_input_rounds_are_capped() {
    let mut config = quick_config("fixture");
    config.max_input_rounds = 3;
    let session = connect(
        &fixture(&["--mode", "endless-input", "--era", "modern"]),
        config,
    )
    .await
    .expect("connect");
    let error = session
        .call_tool(
            "confirm",
            Some(&json!({"question": "?"})),
            &CallOptions::default(),
        )
        .await
        .expect_err("capped");
    expect!["server `fixture` broke the protocol in `tools/call`: the server still wanted input after 3 rounds"].assert_eq(&error.to_string());
    shutdown_clean(session).await;
}

#[tokio::test]
async fn broken_answers_fail_their_request_at_once_with_a_typed_error() {
    let mut config = quick_config("fixture");
    config.request_timeout = Duration::from_secs(300);
    let session = connect(&fixture(&["--mode", "hostile-answers"]), config)
        .await
        .expect("connect");
    let patient = CallOptions::default();
    let mut shown = Vec::new();
    for tool in ["oversized_answer", "result_and_error", "truncated_json"] {
        let error = within(
            "the broken answer to fail the call",
            TEST_DEADLINE,
            session.call_tool(tool, Some(&json!({})), &patient),
        )
        .await
        .expect_err("a broken answer");
        assert!(error.is_bad_answer(), "{error}");
        shown.push(format!("{tool}: too large {}", error.is_answer_too_large()));
    }
    expect![[r#"
        oversized_answer: too large true
        result_and_error: too large false
        truncated_json: too large false"#]]
    .assert_eq(&shown.join("\n"));
    assert_eq!(session.stats().wire.malformed_frames, 3);
    // The connection is still good.
    let echo = session
        .call_tool("echo", Some(&json!({"text": "still here"})), &patient)
        .await
        .expect("echo");
    assert_eq!(echo.text(), "still here");
    shutdown_clean(session).await;
}
