//! A server restarted while a call was in flight, in each transport: the fixture over stdio
//! (its process killed; the supervisor starts it again) and the fixture's HTTP front end in
//! both eras (killed, and started again on its port). The call is `slow`: read-only as the
//! fixture lists it, so it is sent again once, to the server's next life; with
//! `--slow-has-effects` it is not, and fails saying the server restarted. Each server life
//! logs every call it runs (`--log-arguments`): over stdio the host hears it as notices,
//! over HTTP the front end writes it on its stderr (it has no stream to send it on). Later
//! calls go on without the host doing anything.

use std::sync::{Arc, Mutex};

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use switchboard_runtime::{
    NoticeKind, Runtime, RuntimeOptions, ServerRequestError, ServerState, ToolContext,
};
use switchboard_session::SessionError;
use switchboard_testkit::serve::HttpServer;

use crate::support::*;

/// Where the server runs.
#[derive(Clone, Copy)]
enum Transport {
    Stdio,
    Http { era: &'static str },
}

/// What became of the call in flight, and what each server life saw.
struct Story {
    /// The call's result text, or its error.
    outcome: Result<String, ServerRequestError>,
    /// How many `slow` calls each server life ran: the first, then the second.
    slow_calls: [usize; 2],
    /// The text of an `echo` call made after the restart.
    later: String,
}

/// Options for a server that restarts: the breaker never opens, and a call waits for the
/// restarted server for as long as a test waits.
fn restart_options(entries: Vec<switchboard_config::ServerEntry>) -> RuntimeOptions {
    let mut options = options(entries);
    options.policy.restart.breaker_failures = u32::MAX;
    options.ready_wait = TEST_DEADLINE;
    options
}

/// What a stdio server's lives said, in order: its log messages, and `restart` where one
/// life ended (the server went to backoff).
fn collect_lives(runtime: &Runtime) -> Arc<Mutex<Vec<String>>> {
    let said = Arc::new(Mutex::new(Vec::new()));
    let mut notices = runtime.notices();
    let kept = said.clone();
    tokio::spawn(async move {
        while let Ok(notice) = notices.recv().await {
            let line = match notice.kind {
                NoticeKind::Log { data, .. } => data.as_str().unwrap_or_default().to_owned(),
                NoticeKind::State(ServerState::Backoff { .. }) => "restart".to_owned(),
                _ => continue,
            };
            kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    said
}

/// How many calls of `tool` each stdio server life ran, by what it said.
fn stdio_calls(said: &Mutex<Vec<String>>, tool: &str) -> Vec<usize> {
    let said = said.lock().unwrap_or_else(|p| p.into_inner());
    let logged = format!("processing \"{tool}\"");
    said.split(|line| line == "restart")
        .map(|life| life.iter().filter(|line| line.starts_with(&logged)).count())
        .collect()
}

/// How many calls of `tool` an HTTP server ran, by what its front end wrote.
fn http_calls(server: &HttpServer, tool: &str) -> usize {
    server
        .output_tail()
        .matches(&format!("processing \\\"{tool}\\\""))
        .count()
}

/// The HTTP fixture's flags for `era` (on `port`, when given).
fn http_flags(mark: &str, era: &str, port: Option<u16>, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--name", mark, "--era", era, "--log-arguments"];
    args.extend_from_slice(extra);
    let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
    if let Some(port) = port {
        args.extend(["--port".to_owned(), port.to_string()]);
    }
    args
}

fn start_http(args: &[String]) -> HttpServer {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::fixture(&args)
}

/// A `slow` call in flight when the server restarts, then an `echo`.
async fn restart_during_slow_call(transport: Transport, extra: &[&str]) -> Story {
    let mark = marker("restart");
    let mut first_http = None;
    let entry = match transport {
        Transport::Stdio => {
            let mut flags = vec!["--log-arguments"];
            flags.extend_from_slice(extra);
            fixture_entry("alpha", &mark, &flags)
        }
        Transport::Http { era } => {
            let server = start_http(&http_flags(&mark, era, None, extra));
            let entry = http_entry("alpha", server.url());
            first_http = Some(server);
            entry
        }
    };
    let runtime = Runtime::new(restart_options(vec![entry]));
    let said = collect_lives(&runtime);
    enabled(&runtime).await;

    let (context, first_progress) = context_with_progress();
    let in_flight = tokio::spawn({
        let runtime = runtime.clone();
        let arguments = json!({"duration_ms": 1500, "steps": 15});
        async move {
            runtime
                .call_tool_raw("alpha__slow", arguments, context)
                .await
        }
    });
    first_progress.await;
    let mut first_life = 0;
    let second_http = match (transport, first_http) {
        (Transport::Http { era }, Some(server)) => {
            wait::until_async(
                "the first life's log of the call",
                TEST_DEADLINE,
                || async { http_calls(&server, "slow") > 0 },
            )
            .await;
            first_life = http_calls(&server, "slow");
            let port = server.port();
            drop(server); // SIGKILL, and reaped
            Some(start_http(&http_flags(&mark, era, Some(port), extra)))
        }
        _ => {
            kill(runtime.servers()[0].pid.expect("the server's pid"));
            None
        }
    };
    let outcome = within("the call in flight to end", TEST_DEADLINE, in_flight)
        .await
        .expect("join")
        .map(|result| text_of(&result));

    let later = within(
        "an echo after the restart",
        TEST_DEADLINE,
        runtime.call_tool_raw(
            "alpha__echo",
            json!({"text": "later"}),
            ToolContext::default(),
        ),
    )
    .await
    .map_or_else(|error| error.to_string(), |result| text_of(&result));
    let slow_calls = match &second_http {
        Some(server) => {
            wait::until_async("the echo's log", TEST_DEADLINE, || async {
                http_calls(server, "echo") == 1
            })
            .await;
            [first_life, http_calls(server, "slow")]
        }
        None => {
            wait::until_async("the echo's log", TEST_DEADLINE, || async {
                stdio_calls(&said, "echo").last() == Some(&1)
            })
            .await;
            match stdio_calls(&said, "slow")[..] {
                [first, second] => [first, second],
                ref lives => panic!("not two lives: {lives:?}"),
            }
        }
    };
    runtime.dispose().await;
    drop(second_http);
    no_processes_with(&mark).await;
    Story {
        outcome,
        slow_calls,
        later,
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("(no text)")
        .to_owned()
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// A read-only call is answered by the server's next life: each life ran it once.
fn assert_sent_again(story: &Story) {
    let Ok(text) = &story.outcome else {
        panic!("the call failed: {:?}", story.outcome);
    };
    assert_eq!(text, "done");
    assert_eq!(story.slow_calls, [1, 1], "once per server life");
    assert_eq!(story.later, "later");
}

/// A call with effects fails, typed, saying the server restarted; the next life never saw it.
fn assert_not_sent_again(story: &Story, message: Expect) {
    let error = match &story.outcome {
        Err(ServerRequestError::Session(error @ SessionError::Restarted { .. })) => error,
        other => panic!("not a restart: {other:?}"),
    };
    let text = error.to_string();
    let headline = text.split(": ").next().unwrap_or_default();
    // The cause after the headline is the transport's own words, which vary with timing.
    message.assert_eq(headline);
    assert_eq!(story.slow_calls, [1, 0], "only the first life ran it");
    assert_eq!(story.later, "later");
}

#[tokio::test]
async fn a_read_only_call_in_flight_when_a_stdio_server_dies_is_answered_by_its_next_life() {
    assert_sent_again(&restart_during_slow_call(Transport::Stdio, &[]).await);
}

#[tokio::test]
async fn a_call_with_effects_in_flight_when_a_stdio_server_dies_fails_saying_it_restarted() {
    let story = restart_during_slow_call(Transport::Stdio, &["--slow-has-effects"]).await;
    assert_not_sent_again(
        &story,
        expect![
            "server `alpha` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects"
        ],
    );
    let Err(error) = &story.outcome else {
        unreachable!()
    };
    assert!(error.to_string().contains("SIGKILL"), "{error}");
}

#[tokio::test]
async fn a_read_only_call_in_flight_when_a_legacy_http_server_restarts_is_sent_again() {
    let story = restart_during_slow_call(Transport::Http { era: "legacy" }, &[]).await;
    assert_sent_again(&story);
}

#[tokio::test]
async fn a_call_with_effects_in_flight_when_a_legacy_http_server_restarts_is_not_sent_again() {
    let transport = Transport::Http { era: "legacy" };
    let story = restart_during_slow_call(transport, &["--slow-has-effects"]).await;
    assert_not_sent_again(
        &story,
        expect![
            "server `alpha` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects"
        ],
    );
}

#[tokio::test]
async fn a_read_only_call_in_flight_when_a_modern_http_server_restarts_is_sent_again() {
    let story = restart_during_slow_call(Transport::Http { era: "modern" }, &[]).await;
    assert_sent_again(&story);
}

#[tokio::test]
async fn a_call_with_effects_in_flight_when_a_modern_http_server_restarts_is_not_sent_again() {
    let transport = Transport::Http { era: "modern" };
    let story = restart_during_slow_call(transport, &["--slow-has-effects"]).await;
    assert_not_sent_again(
        &story,
        expect![
            "server `alpha` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects"
        ],
    );
}
