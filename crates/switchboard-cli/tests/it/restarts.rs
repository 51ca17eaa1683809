//! An upstream HTTP server restarted while a call was in flight, as a client of `switchboard
//! serve` sees it and as `switchboard shell` shows it. Two fixture servers, one per era:
//! `ro`, whose `slow` is read-only (the call is sent again once, to the server's next life),
//! and `fx`, whose `slow` has effects (`--slow-has-effects`: the call fails saying the
//! server restarted, and the next life never sees it). Each is killed and started again on
//! its port while its call is in flight; its front end writes every call it runs on its
//! stderr (`--log-arguments`, which it has no stream for), so each life's calls are
//! counted. Later calls go on without anyone reconnecting.

use serde_json::json;
use switchboard_session::{CallOptions, Session, SessionError};
use switchboard_testkit::serve::HttpServer;
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::config;
use crate::shell::PipedShell;

/// The arguments of a `slow` call that is still running when its server is killed.
const SLOW: &str = r#"{"duration_ms": 1500, "steps": 15}"#;

/// An HTTP fixture that is killed and started again on its port, and the calls each of its
/// lives ran.
struct Upstream {
    server: Option<HttpServer>,
    args: Vec<String>,
    url: String,
    /// The `slow` calls of the lives before this one.
    earlier_slow_calls: Vec<usize>,
}

impl Upstream {
    fn start(era: &str, extra: &[&str]) -> Upstream {
        let mut args: Vec<String> = ["--era", era, "--log-arguments"]
            .into_iter()
            .chain(extra.iter().copied())
            .map(str::to_owned)
            .collect();
        let server = fixture(&args);
        args.extend(["--port".to_owned(), server.port().to_string()]);
        Upstream {
            url: server.url().to_owned(),
            server: Some(server),
            args,
            earlier_slow_calls: Vec::new(),
        }
    }

    /// How many calls of `tool` this life ran.
    fn calls(&self, tool: &str) -> usize {
        self.server.as_ref().map_or(0, |server| {
            server
                .output_tail()
                .matches(&format!("processing \\\"{tool}\\\""))
                .count()
        })
    }

    /// Waits (bounded) until this life runs a `tool` call.
    async fn running(&self, tool: &str) {
        wait::until_async(
            &format!("the server to run `{tool}`"),
            TEST_DEADLINE,
            || async { self.calls(tool) > 0 },
        )
        .await;
    }

    /// Kills the server (and reaps it), then starts it again on its port.
    fn restart(&mut self) {
        self.earlier_slow_calls.push(self.calls("slow"));
        self.server = None;
        self.server = Some(fixture(&self.args));
    }

    /// The `slow` calls each life ran, the first first.
    fn slow_calls_per_life(&self) -> Vec<usize> {
        let mut lives = self.earlier_slow_calls.clone();
        lives.push(self.calls("slow"));
        lives
    }
}

fn fixture(args: &[String]) -> HttpServer {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::fixture(&args)
}

/// `ro` (read-only `slow`) in `ro_era`, `fx` (`slow` with effects) in the other era.
fn upstreams(ro_era: &str) -> (Upstream, Upstream) {
    let fx_era = if ro_era == "legacy" {
        "modern"
    } else {
        "legacy"
    };
    (
        Upstream::start(ro_era, &[]),
        Upstream::start(fx_era, &["--slow-has-effects"]),
    )
}

fn config_of(ro: &Upstream, fx: &Upstream) -> std::path::PathBuf {
    config(json!({
        "ro": {"type": "http", "url": ro.url},
        "fx": {"type": "http", "url": fx.url},
    }))
}

/// A `slow` call through the gateway, in flight while `upstream` restarts.
async fn slow_call_across_a_restart(
    gateway: &Session,
    upstream: &mut Upstream,
    tool: &str,
) -> Result<String, SessionError> {
    let (progress, _progress_rx) = tokio::sync::mpsc::channel(64);
    let options = CallOptions {
        progress: Some(progress),
        ..CallOptions::default()
    };
    let arguments: serde_json::Value = serde_json::from_str(SLOW).expect("json");
    let call = gateway.call_tool(tool, Some(&arguments), &options);
    tokio::pin!(call);
    tokio::select! {
        outcome = &mut call => panic!("the call ended before the restart: {outcome:?}"),
        () = upstream.running("slow") => {}
    }
    upstream.restart();
    within("the call in flight to end", TEST_DEADLINE, call)
        .await
        .map(|result| result.text())
}

/// The part of a message before the transport's own words (which vary with timing).
fn headline(message: &str) -> &str {
    message.split(": ").next().unwrap_or_default()
}

async fn gateway_client_sees_restarts(ro_era: &str) {
    let (mut ro, mut fx) = upstreams(ro_era);
    let gateway = crate::serve::gateway_for(&config_of(&ro, &fx), &[]).await;

    let answered = slow_call_across_a_restart(&gateway, &mut ro, "ro__slow").await;
    assert_eq!(answered.expect("the read-only call").as_str(), "done");
    let refused = slow_call_across_a_restart(&gateway, &mut fx, "fx__slow").await;
    let error = match refused {
        Err(SessionError::Rpc { error, .. }) => error,
        other => panic!("not an error from the gateway: {other:?}"),
    };
    assert_eq!(error.data, Some(json!({"server": "fx"})));
    expect_test::expect!["-32005 server `fx` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects"]
        .assert_eq(&format!("{} {}", error.code, headline(&error.message)));

    for (tool, text) in [("ro__echo", "ro again"), ("fx__echo", "fx again")] {
        let result = within(
            "a call after the restarts",
            TEST_DEADLINE,
            gateway.call_tool(tool, Some(&json!({"text": text})), &CallOptions::default()),
        )
        .await
        .expect("a call after the restart");
        assert_eq!(result.text(), text);
    }
    assert_eq!(ro.slow_calls_per_life(), [1, 1], "once per life");
    assert_eq!(fx.slow_calls_per_life(), [1, 0], "only the first life");
    let _ = gateway.shutdown(crate::serve::GRACE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_client_gets_a_read_only_call_answered_across_a_legacy_restart_and_one_with_effects_refused_across_a_modern_one()
 {
    gateway_client_sees_restarts("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_client_gets_a_read_only_call_answered_across_a_modern_restart_and_one_with_effects_refused_across_a_legacy_one()
 {
    gateway_client_sees_restarts("modern").await;
}

/// What `switchboard shell` shows for calls in flight across restarts.
fn shell_across_restarts(ro_era: &str) -> String {
    let (mut ro, mut fx) = upstreams(ro_era);
    let mut shell = PipedShell::start(&config_of(&ro, &fx));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the waits");
    for (upstream, server) in [(&mut ro, "ro"), (&mut fx, "fx")] {
        shell.send(&format!("call {server} slow duration_ms=1500 steps=15\n"));
        runtime.block_on(upstream.running("slow"));
        upstream.restart();
    }
    shell.send("call ro echo text=ro-again\ncall fx echo text=fx-again\n");
    shell.wait_for("fx-again");
    let ended = shell.end();
    assert_eq!(ro.slow_calls_per_life(), [1, 1], "once per life");
    assert_eq!(fx.slow_calls_per_life(), [1, 0], "only the first life");
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    let said: Vec<&str> = ended
        .stderr
        .lines()
        .filter(|line| line.starts_with("switchboard:"))
        .map(|line| headline(line.trim_start_matches("switchboard: ")))
        .collect();
    format!("stdout:\n{}stderr:\n{}\n", ended.stdout, said.join("\n"))
}

#[test]
fn the_shell_gets_a_read_only_call_answered_across_a_legacy_restart_and_says_one_with_effects_was_not_retried()
 {
    expect_test::expect![[r#"
        stdout:
        done
        ro-again
        fx-again
        stderr:
        `ro` is ready
        `fx` is ready
        server `fx` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects
    "#]]
    .assert_eq(&shell_across_restarts("legacy"));
}
