//! The tool bridge: names, schemas, validation, the result bound, cancellation, progress;
//! and the host's prompts and resources by server.

use std::time::Duration;

use serde_json::json;
use switchboard_runtime::{
    ChildAccess, OutputLimit, Runtime, ServerRequestError, Tool, ToolContext,
};
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn names_are_provider_safe_and_route_to_the_right_server() {
    let mark = marker("names");
    // Two servers with the same tool names and names with digits.
    let runtime = Runtime::new(options(vec![
        fixture_entry("srv1", &mark, &[]),
        fixture_entry("srv2", &mark, &[]),
    ]));
    enabled(&runtime).await;
    let snapshot = runtime.snapshot();
    assert!(snapshot.tool("srv1__echo").is_some() && snapshot.tool("srv2__echo").is_some());
    assert!(
        snapshot
            .tool_names()
            .iter()
            .all(|n| switchboard_runtime::naming::is_provider_safe(n))
    );
    assert_adds(&snapshot, "srv2__add").await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn arguments_are_validated_before_sending_with_an_actionable_error() {
    let mark = marker("validate");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let add = runtime.snapshot().tool("alpha__add").expect("tool").clone();
    let output = add
        .call(json!({"a": "forty"}), ToolContext::default())
        .await;
    assert!(output.is_error);
    expect_test::expect![[r#"invalid arguments for `alpha__add`: arguments: "b" is a required property; `a`: "forty" is not of type "integer""#]].assert_eq(&output.text_content());
    let output = add.call(json!([1, 2]), ToolContext::default()).await;
    assert!(output.is_error && output.text_content().contains("must be a JSON object"));
    runtime.dispose().await;
}

#[tokio::test]
async fn a_raw_call_returns_the_servers_result_or_a_typed_error() {
    let mark = marker("raw");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let add = runtime
        .call_tool_raw(
            "alpha__add",
            json!({"a": 40, "b": 2}),
            ToolContext::default(),
        )
        .await
        .expect("a result");
    // Every member as the server sent it, `_meta` included; no `isError` added.
    expect_test::expect![[r#"{"content":[{"type":"text","text":"42"}],"structuredContent":{"sum":42},"_meta":{"fixture.switchboard.test/tool":"add"}}"#]]
    .assert_eq(&add.to_string());
    let refused = runtime
        .call_tool_raw("alpha__add", json!({"a": "forty"}), ToolContext::default())
        .await
        .expect_err("refused before sending");
    assert!(
        matches!(
            &refused,
            ServerRequestError::InvalidArguments { tool, .. } if tool == "alpha__add"
        ),
        "{refused:?}"
    );
    let unknown = runtime
        .call_tool_raw("alpha__nothing", json!({}), ToolContext::default())
        .await
        .expect_err("no such tool");
    assert!(
        matches!(&unknown, ServerRequestError::UnknownTool { name } if name == "alpha__nothing"),
        "{unknown:?}"
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn results_are_bounded_and_every_content_kind_kept() {
    let mark = marker("bound");
    let mut runtime_options = options(vec![fixture_entry("alpha", &mark, &[])]);
    runtime_options.output_limit = OutputLimit {
        max_bytes: 200,
        spill_dir: None,
    };
    let runtime = Runtime::new(runtime_options);
    enabled(&runtime).await;
    let snapshot = runtime.snapshot();
    let long = "x".repeat(5000);
    let output = snapshot
        .tool("alpha__echo")
        .expect("tool")
        .call(json!({ "text": long }), ToolContext::default())
        .await;
    let truncation = output.truncation.clone().expect("truncated");
    assert_eq!(truncation.original_bytes, 5000);
    assert!(output.text_content().contains("bytes cut"));
    assert!(output.size() < 400, "{}", output.size());
    let image = snapshot
        .tool("alpha__image")
        .expect("tool")
        .call(json!({}), ToolContext::default())
        .await;
    assert!(
        matches!(
            image.content.first(),
            Some(switchboard_protocol::ContentBlock::Image { .. })
        ),
        "{image:?}"
    );
    runtime.dispose().await;
}

#[tokio::test]
async fn cancellation_and_progress_reach_through_the_bridge() {
    let mark = marker("cancel");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let slow = runtime
        .snapshot()
        .tool("alpha__slow")
        .expect("tool")
        .clone();
    let token = CancellationToken::new();
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let context = ToolContext {
        cancel: token.clone(),
        progress: Some(progress_tx),
        timeout: None,
        log_messages: None,
        trace: None,
        session: None,
    };
    let call = tokio::spawn(async move {
        slow.call(json!({"duration_ms": 5000, "steps": 50}), context)
            .await
    });
    within("first progress", TEST_DEADLINE, progress_rx.recv())
        .await
        .expect("progress");
    token.cancel();
    let output = within("the cancelled call", TEST_DEADLINE, call)
        .await
        .expect("join");
    assert!(output.is_error && output.text_content().contains("cancelled"));
    // The fixture logs the cancellation it received; the server keeps working.
    wait::until_async(
        "the server to see the cancellation",
        TEST_DEADLINE,
        || async {
            runtime
                .server("alpha")
                .stderr_tail()
                .unwrap_or_default()
                .contains("fixture: cancelled request")
        },
    )
    .await;
    let echo = runtime
        .snapshot()
        .tool("alpha__echo")
        .expect("tool")
        .clone();
    assert_eq!(
        echo.call(
            json!({"text": "ok"}),
            ToolContext {
                timeout: Some(Duration::from_secs(2)),
                ..Default::default()
            }
        )
        .await
        .text_content(),
        "ok"
    );
    runtime.dispose().await;
}

#[tokio::test]
async fn list_changes_are_republished() {
    let mark = marker("relist");
    let runtime = Runtime::new(options(vec![
        fixture_entry("legacy", &mark, &[]),
        fixture_entry("modern", &mark, &["--era", "modern"]),
    ]));
    enabled(&runtime).await;
    for server in ["legacy", "modern"] {
        let change = runtime
            .snapshot()
            .tool(&format!("{server}__change_tools"))
            .expect("tool")
            .clone();
        let before = runtime.snapshot().version;
        change.call(json!({}), ToolContext::default()).await;
        wait::until_async(
            &format!("{server}'s new tool to be published"),
            TEST_DEADLINE,
            || async {
                let snapshot = runtime.snapshot();
                snapshot.version > before && snapshot.tool(&format!("{server}__extra_1")).is_some()
            },
        )
        .await;
    }
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn unresolved_variables_fail_only_their_server_in_the_report() {
    let dir = std::env::temp_dir().join(marker("vars"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mark = marker("vars");
    let good = fixture_entry("good", &mark, &[]);
    let switchboard_config::TransportEntry::Stdio { command, args, .. } = &good.transport else {
        unreachable!()
    };
    let text = json!({"mcpServers": {
        "good": {"command": command, "args": args},
        "needs-token": {"command": command, "env": {"TOKEN": "${SWITCHBOARD_SURELY_UNSET_VAR}"}},
    }});
    let path = dir.join("mcp.json");
    std::fs::write(&path, text.to_string()).expect("write");
    let mut runtime_options = options(vec![]);
    runtime_options.source = switchboard_runtime::sources::ServerSource::Files(
        switchboard_runtime::sources::ConfigScopes {
            explicit: Some(path),
            project_dir: None,
            user_dir: None,
        },
    );
    let runtime = Runtime::new(runtime_options);
    let report = enabled(&runtime).await;
    assert_eq!(report.ready().count(), 1);
    let (name, problem) = &report.config_problems[0];
    assert_eq!(name.as_deref(), Some("needs-token"));
    assert!(
        problem.contains("${SWITCHBOARD_SURELY_UNSET_VAR}, which is not set"),
        "{problem}"
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn strict_mode_quarantines_new_and_changed_tools_until_approved() {
    let mark = marker("lock");
    let dir = std::env::temp_dir().join(&mark);
    let mut runtime_options = options(vec![fixture_entry("alpha", &mark, &[])]);
    runtime_options.lock = Some(switchboard_runtime::LockPolicy {
        path: dir.join("tools.lock.json"),
        strict: true,
        accept_command: Some("approve".into()),
    });
    let runtime = Runtime::new(runtime_options);
    enabled(&runtime).await;
    let snapshot = runtime.snapshot();
    assert!(
        snapshot.tools.is_empty(),
        "nothing approved yet: {:?}",
        snapshot.tool_names()
    );
    assert_eq!(
        snapshot
            .findings
            .iter()
            .filter(|f| f.kind == switchboard_runtime::FindingKind::Quarantined)
            .count(),
        6,
        "{:#?} {:?}",
        snapshot.findings,
        runtime.servers()
    );

    runtime.server("alpha").approve_tools().expect("approve");
    let snapshot = runtime.snapshot();
    assert_eq!(snapshot.tools.len(), 6);
    assert!(
        snapshot
            .findings
            .iter()
            .all(|f| f.kind != switchboard_runtime::FindingKind::Quarantined)
    );

    // A tool that appears later is quarantined; the approved ones stay.
    let change = snapshot.tool("alpha__change_tools").expect("tool").clone();
    change.call(json!({}), ToolContext::default()).await;
    let snapshot = wait::until_async("the new tool to be reported", TEST_DEADLINE, || async {
        let snapshot = runtime.snapshot();
        let reported = snapshot.findings.iter().any(|f| {
            f.tool.as_deref() == Some("extra_1")
                && f.kind == switchboard_runtime::FindingKind::Quarantined
        });
        reported.then_some(snapshot)
    })
    .await;
    assert!(snapshot.tool("alpha__extra_1").is_none());
    assert_eq!(snapshot.tools.len(), 6);
    // The held tool keeps its name and why it is held, for whoever asks for it.
    let held = snapshot.held_tool("alpha__extra_1").expect("held, by name");
    assert_eq!(
        held.message(),
        "`alpha__extra_1` is held by tools.lock.json: it is new since the tools were pinned \
         (the lock's `new_tools` is `hold`); run `approve alpha` to accept it"
    );
    runtime.dispose().await;
    no_processes_with(&mark).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_strict_lock_that_cannot_be_read_any_more_serves_none_of_the_tools() {
    let mark = marker("lock-damaged");
    let dir = std::env::temp_dir().join(&mark);
    let lock = dir.join("tools.lock.json");
    let mut runtime_options = options(vec![fixture_entry("alpha", &mark, &[])]);
    runtime_options.lock = Some(switchboard_runtime::LockPolicy {
        path: lock.clone(),
        strict: true,
        accept_command: None,
    });
    let runtime = Runtime::new(runtime_options);
    enabled(&runtime).await;
    runtime.server("alpha").approve_tools().expect("approve");
    assert_eq!(runtime.snapshot().tools.len(), 6);
    let pinned = std::fs::read(&lock).expect("the lock is written");
    // Damaged under a running host (a kill while it was written, another program's BOM):
    // the next reload leaves every tool out rather than going on with the lock it read
    // before, or with none.
    for damaged in [
        "",
        "\u{feff}{\"format\":\"switchboard-tool-lock/1\",\"servers\":{}}",
    ] {
        std::fs::write(&lock, damaged).expect("damage the lock");
        runtime.reload().await.expect("reload");
        let snapshot = runtime.snapshot();
        assert!(
            snapshot.tools.is_empty(),
            "{damaged:?}: {:?}",
            snapshot.tool_names()
        );
        let said: Vec<&str> = snapshot
            .findings
            .iter()
            .filter(|f| f.kind == switchboard_runtime::FindingKind::Quarantined)
            .map(|f| f.detail.as_str())
            .collect();
        assert_eq!(said.len(), 6, "{:#?}", snapshot.findings);
        assert!(
            said.iter().all(|d| d.contains("cannot be used")),
            "{said:#?}"
        );
    }
    // Usable again, the next reload serves the pinned tools again.
    std::fs::write(&lock, pinned).expect("mend the lock");
    runtime.reload().await.expect("reload");
    assert_eq!(runtime.snapshot().tools.len(), 6);
    runtime.dispose().await;
    no_processes_with(&mark).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn hosts_get_prompts_and_read_resources_by_server() {
    let mark = marker("prompts");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let prompt = runtime
        .server("alpha")
        .get_prompt("greet", Some(json!({"name": "Ada"})))
        .await
        .expect("prompt");
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
    let resource = runtime
        .server("alpha")
        .read_resource("fixture://item/3")
        .await
        .expect("resource");
    assert_eq!(resource["contents"][0]["text"], "Item 3");
    let outcomes = [
        runtime
            .server("alpha")
            .get_prompt("nope", None)
            .await
            .map_err(|e| e.to_string()),
        runtime
            .server("omega")
            .read_resource("fixture://readme")
            .await
            .map_err(|e| e.to_string()),
    ];
    expect_test::expect![[r#"
        [
            Err(
                "server `alpha` answered `prompts/get` with an error: unknown prompt: nope (code -32602)",
            ),
            Err(
                "MCP server `omega` is not configured",
            ),
        ]
    "#]]
    .assert_debug_eq(&outcomes);
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn an_error_output_is_bounded_like_a_result() {
    let mark = marker("bound-error");
    let mut runtime_options = options(vec![fixture_entry(
        "alpha",
        &mark,
        &["--mode", "huge-result"],
    )]);
    runtime_options.output_limit = OutputLimit {
        max_bytes: 10 * 1024,
        spill_dir: None,
    };
    let runtime = Runtime::new(runtime_options);
    enabled(&runtime).await;
    // The server's JSON-RPC error carries a 256 KiB message.
    let output = runtime
        .snapshot()
        .tool("alpha__fail")
        .expect("tool")
        .call(json!({}), ToolContext::default())
        .await;
    assert!(output.is_error);
    assert!(output.size() <= 11 * 1024, "{} bytes", output.size());
    let truncation = output.truncation.clone().expect("cut, and said so");
    assert!(truncation.original_bytes > 256 * 1024, "{truncation:?}");
    assert!(output.text_content().starts_with("MCP error: "));
    runtime.dispose().await;
}

/// Disables `runtime` while `call` is in flight, and returns the text of the error `call`
/// ends with.
async fn cut_by_disable(
    runtime: &Runtime,
    call: tokio::task::JoinHandle<switchboard_runtime::ToolOutput>,
) -> String {
    within("disable", TEST_DEADLINE, runtime.disable())
        .await
        .expect("disabled");
    let output = within("the call cut by disable", TEST_DEADLINE, call)
        .await
        .expect("join");
    assert!(output.is_error, "{output:?}");
    output.text_content()
}

#[tokio::test]
async fn a_call_in_flight_at_disable_says_mcp_was_disabled() {
    let mark = marker("disable-msg");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let call = started_slow_call(&runtime, "alpha__slow").await;
    let text = cut_by_disable(&runtime, call).await;
    assert!(
        text.contains("MCP was disabled while the call was in flight")
            && !text.contains("restarted"),
        "{text}"
    );
    assert_no_processes_with(&mark, "once disable returned");
    runtime.dispose().await;
}

#[tokio::test]
async fn a_child_call_in_flight_at_disable_says_mcp_was_disabled() {
    let mark = marker("disable-child");
    let runtime = Runtime::new(options(vec![fixture_entry("alpha", &mark, &[])]));
    enabled(&runtime).await;
    let child = runtime.child(ChildAccess::ParentServers);
    let call = started_slow_call_on(child.tool("alpha__slow").expect("the child's proxy")).await;
    expect_test::expect![
        "MCP was disabled while the call was in flight: the parent task turned MCP off, so the call was cancelled"
    ]
    .assert_eq(&cut_by_disable(&runtime, call).await);
    assert_no_processes_with(&mark, "once disable returned");
    assert!(child.tools().is_empty());
}
