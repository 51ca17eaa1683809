//! The runtime with Streamable HTTP servers: the fixture's HTTP front end, started by the
//! test as a real process and configured as a `url` entry. What the tests observe is what a
//! host sees (snapshots, calls, server states) and the process table: the front end runs
//! each legacy session's server as a backend process of its own and stops it when the
//! session's `DELETE` arrives, so a session that ended is a backend that is gone.

use std::time::Duration;

use expect_test::expect;
use serde_json::json;
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{Runtime, RuntimeOptions, ServerRequestError, ServerState, ToolContext};
use switchboard_session::SessionError;
use switchboard_testkit::serve::HttpServer;

use crate::support::*;

/// Options for HTTP servers: the breaker never opens (a server that is down for a while
/// keeps being retried), and a call waits at most a second for a server that is not ready.
fn http_options(entries: Vec<switchboard_config::ServerEntry>) -> RuntimeOptions {
    let mut options = options(entries);
    options.policy.restart.breaker_failures = u32::MAX;
    options.ready_wait = Duration::from_secs(1);
    options
}

/// The backend processes of `server`'s legacy sessions: the front end's children.
fn sessions_of(server: &HttpServer) -> Vec<u32> {
    switchboard_wire::proc::descendants(server.pid())
        .into_iter()
        .map(|process| process.pid)
        .filter(|pid| *pid != server.pid())
        .collect()
}

/// Waits until `server` runs no session's backend: every session it had was ended.
async fn sessions_ended(server: &HttpServer) {
    wait::until_async(
        "the HTTP server's sessions to end",
        TEST_DEADLINE,
        || async { sessions_of(server).is_empty() },
    )
    .await;
}

/// The server a failed request names, for the errors a host gets when a server is gone.
fn named_server(error: &ServerRequestError) -> Option<&str> {
    match error {
        ServerRequestError::Session(
            SessionError::Closed { server, .. }
            | SessionError::Transport { server, .. }
            | SessionError::Restarted { server, .. },
        ) => Some(server),
        ServerRequestError::Unavailable { server, .. } => Some(server),
        _ => None,
    }
}

/// Asserts that `error` is a failed session (closed, or no answer) of server `alpha`.
fn assert_session_failure_of_alpha(error: &ServerRequestError) {
    assert!(
        matches!(error, ServerRequestError::Session(_)) && named_server(error) == Some("alpha"),
        "{error:?}"
    );
}

/// Calls `alpha__echo` the way a gateway does; the server's raw result or its typed error.
async fn echo(runtime: &Runtime, text: &str) -> Result<serde_json::Value, ServerRequestError> {
    within(
        "an echo call",
        TEST_DEADLINE,
        runtime.call_tool_raw("alpha__echo", json!({"text": text}), ToolContext::default()),
    )
    .await
}

#[tokio::test]
async fn an_http_server_is_published_and_its_session_ends_with_disable() {
    let mark = marker("http-on");
    let server = HttpServer::fixture(&["--name", &mark]);
    let runtime = Runtime::new(http_options(vec![http_entry("alpha", server.url())]));
    let report = enabled(&runtime).await;
    expect![[r#"
        alpha: ready (6 tools)
    "#]]
    .assert_eq(&report.to_string());
    expect!["alpha__add, alpha__change_tools, alpha__echo, alpha__fail, alpha__image, alpha__slow"]
        .assert_eq(&names_of(&runtime.snapshot(), "alpha").join(", "));
    assert_adds(&runtime.snapshot(), "alpha__add").await;
    assert_eq!(sessions_of(&server).len(), 1, "one session, one backend");

    within("disable", TEST_DEADLINE, runtime.disable())
        .await
        .expect("disable");
    let snapshot = runtime.snapshot();
    assert!(snapshot.tools.is_empty() && !snapshot.enabled);
    // The front end saw the session's DELETE: it stopped that session's backend. The server
    // itself is not the runtime's to stop.
    sessions_ended(&server).await;
    assert!(is_running(server.pid()), "the HTTP server was stopped");
    runtime.dispose().await;
    drop(server);
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn a_killed_http_server_fails_its_calls_backs_off_and_comes_back_on_its_port() {
    let mark = marker("http-kill");
    // `slow` has effects here: its call is not sent again (`restarts.rs` has the rest).
    let server = HttpServer::fixture(&["--name", mark.as_str(), "--slow-has-effects"]);
    let port = server.port().to_string();
    let runtime = Runtime::new(http_options(vec![http_entry("alpha", server.url())]));
    enabled(&runtime).await;

    // A call in flight when the server is killed fails, naming the server, and saying it
    // was not sent again.
    let (context, first_progress) = context_with_progress();
    let in_flight = tokio::spawn({
        let runtime = runtime.clone();
        async move {
            runtime
                .call_tool_raw("alpha__slow", slow_arguments(), context)
                .await
        }
    });
    first_progress.await;
    let front = server.pid();
    drop(server); // SIGKILL, and reaped
    assert!(!is_running(front));
    let error = within("the call in flight to fail", TEST_DEADLINE, in_flight)
        .await
        .expect("join")
        .expect_err("the server is gone");
    assert_session_failure_of_alpha(&error);
    assert!(
        matches!(&error, ServerRequestError::Session(e) if e.is_restarted()),
        "{error:?}"
    );
    // Nothing connects the runtime to an HTTP server between requests (this one opens no
    // GET stream): the next request finds it unreachable, fails, naming it, and the
    // server goes to backoff.
    let error = echo(&runtime, "anyone?").await.expect_err("unreachable");
    assert_session_failure_of_alpha(&error);
    wait_state(&runtime, "alpha", "backing off", |state| {
        matches!(state, ServerState::Backoff { .. })
    })
    .await;
    // While it is down, its tools stay published and a call fails, naming it.
    assert!(runtime.snapshot().tool("alpha__echo").is_some());
    let error = echo(&runtime, "still there?").await.expect_err("down");
    assert!(
        matches!(error, ServerRequestError::Unavailable { .. })
            && named_server(&error) == Some("alpha"),
        "{error:?}"
    );

    // The server comes back on the same port: so does the runtime's server, by itself.
    let server = HttpServer::fixture(&["--port", port.as_str(), "--name", mark.as_str()]);
    wait_state(&runtime, "alpha", "ready again", |state| {
        *state == ServerState::Ready
    })
    .await;
    let result = echo(&runtime, "back")
        .await
        .expect("a call after the restart");
    assert_eq!(result["content"][0]["text"], "back", "{result}");
    assert_eq!(sessions_of(&server).len(), 1, "a new session");
    runtime.dispose().await;
    sessions_ended(&server).await;
    drop(server);
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn reload_follows_an_http_server_to_a_new_filter_and_to_another_url() {
    let mark = marker("http-reload");
    let legacy = HttpServer::fixture(&["--name", &mark]);
    let modern = HttpServer::fixture(&["--name", &mark, "--era", "modern"]);
    let runtime = Runtime::new(http_options(vec![http_entry("alpha", legacy.url())]));
    enabled(&runtime).await;
    let session = sessions_of(&legacy);
    assert_eq!(session.len(), 1, "{session:?}");

    // The entry at `url`, publishing only `echo` and `confirm`.
    let reload_to = |url: &str| {
        let entry = filtered(http_entry("alpha", url), Some(&["echo", "confirm"]), &[]);
        runtime.set_source(ServerSource::Entries(vec![entry]));
        within("reload", Duration::from_secs(30), runtime.reload())
    };
    // Only the filter changes: the server is kept, in the same HTTP session.
    let report = reload_to(legacy.url()).await.expect("reload");
    assert_eq!(report.kept, ["alpha"], "{report:?}");
    expect!["alpha__echo"].assert_eq(&names_of(&runtime.snapshot(), "alpha").join(", "));
    assert_eq!(sessions_of(&legacy), session, "the session went on");

    // Another URL, same filter: a server that speaks the 2026-07-28 protocol and has
    // `confirm` too.
    let report = reload_to(modern.url()).await.expect("reload");
    assert_eq!(report.restarted, ["alpha"], "{report:?}");
    expect!["alpha__confirm, alpha__echo"]
        .assert_eq(&names_of(&runtime.snapshot(), "alpha").join(", "));
    assert!(runtime.snapshot().tool("alpha__add").is_none());
    let result = echo(&runtime, "moved").await.expect("echo");
    assert_eq!(result["content"][0]["text"], "moved", "{result}");
    // The old server's session was ended (its DELETE came).
    sessions_ended(&legacy).await;
    runtime.dispose().await;
    drop((legacy, modern));
    no_processes_with(&mark).await;
}
