//! The runtime with Streamable HTTP servers: the fixture's HTTP front end, started by the
//! test as a real process and configured as a `url` entry. What the tests observe is what a
//! host sees (snapshots, calls, server states) and the process table: the front end runs
//! each legacy session's server as a backend process of its own and stops it when the
//! session's `DELETE` arrives, so a session that ended is a backend that is gone.
//!
//! Servers that die, stall or have their streams cut between calls are observed through the
//! host's notices (the state changes a host is told), with generous deadlines: what is
//! asserted is what the runtime concludes, never how fast.

use std::time::Duration;

use expect_test::expect;
use serde_json::json;
use switchboard_config::EraSetting;
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{
    NoticeKind, Runtime, RuntimeOptions, ServerNotice, ServerRequestError, ServerState, ToolContext,
};
use switchboard_session::SessionError;
use switchboard_testkit::serve::{HttpServer, PeerCommand};

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
    // The next request finds it unreachable (or, had the runtime's ping found that first,
    // the server already backing off) and fails, naming it; the server goes to backoff.
    let error = echo(&runtime, "anyone?").await.expect_err("unreachable");
    assert_eq!(named_server(&error), Some("alpha"), "{error:?}");
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

/// How long a test waits for the runtime to notice a server that is gone: generous (the
/// runtime pings a silent server every few seconds; the test asserts on what happens, not
/// on how fast).
const NOTICE_DEADLINE: Duration = Duration::from_secs(30);

/// The next state the host's notices announce that `pick` accepts, skipping the others.
async fn next_state(
    notices: &mut tokio::sync::broadcast::Receiver<ServerNotice>,
    what: &str,
    pick: impl Fn(&ServerState) -> bool,
) -> ServerState {
    within(what, NOTICE_DEADLINE, async {
        loop {
            match notices.recv().await {
                Ok(ServerNotice {
                    kind: NoticeKind::State(state),
                    ..
                }) if pick(&state) => return state,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    panic!("the notices ended while waiting for {what}")
                }
            }
        }
    })
    .await
}

/// The reason of a backoff state (panics on any other).
fn backoff_reason(state: &ServerState) -> &str {
    match state {
        ServerState::Backoff { reason, .. } => reason,
        other => panic!("not a backoff: {other:?}"),
    }
}

/// Waits for the first state after ready the host is told of, and asserts it is a backoff
/// whose reason starts `could not reach {url}`, then the rest of `because` (`case` names
/// the case in a failure).
async fn assert_left_ready_unreachable(
    notices: &mut tokio::sync::broadcast::Receiver<ServerNotice>,
    url: &str,
    because: &str,
    case: &str,
) {
    let left = next_state(notices, "alpha to leave ready", |state| {
        *state != ServerState::Ready
    })
    .await;
    let reason = backoff_reason(&left);
    assert!(
        reason.contains(&format!("could not reach {url}{because}")),
        "{case}: {reason}"
    );
}

/// Waits until the host is told alpha is ready again, then calls `echo` through it.
async fn assert_ready_again_and_answering(
    runtime: &Runtime,
    notices: &mut tokio::sync::broadcast::Receiver<ServerNotice>,
    case: &str,
) {
    next_state(notices, "alpha to be ready again", |state| {
        *state == ServerState::Ready
    })
    .await;
    let result = echo(runtime, "back")
        .await
        .expect("a call after the restart");
    assert_eq!(result["content"][0]["text"], "back", "{case}: {result}");
}

#[tokio::test]
async fn an_idle_http_server_that_dies_goes_to_backoff_without_calls_and_comes_back() {
    for era in ["legacy", "modern"] {
        let mark = marker(&format!("http-idle-{era}"));
        let server = HttpServer::fixture(&["--name", mark.as_str(), "--era", era]);
        let url = server.url().to_owned();
        let port = server.port().to_string();
        let runtime = Runtime::new(http_options(vec![http_entry("alpha", &url)]));
        enabled(&runtime).await;
        let mut notices = runtime.notices();

        // Killed with no call in flight, and none made after: the runtime notices by itself,
        // and the first state it tells the host after ready is a backoff naming the URL.
        drop(server);
        assert_left_ready_unreachable(&mut notices, &url, "", era).await;
        // Its tools stay published while it is retried.
        assert!(runtime.snapshot().tool("alpha__echo").is_some(), "{era}");

        // Back on the same port: ready again, and a call is answered.
        let server = HttpServer::fixture(&[
            "--port",
            port.as_str(),
            "--name",
            mark.as_str(),
            "--era",
            era,
        ]);
        assert_ready_again_and_answering(&runtime, &mut notices, era).await;
        runtime.dispose().await;
        drop(server);
        no_processes_with(&mark).await;
    }
}

#[tokio::test]
async fn a_stalled_http_server_is_declared_gone_and_a_silent_live_one_stays_ready() {
    let mark = marker("http-stalled");
    let server = HttpServer::fixture(&["--name", mark.as_str(), "--era", "modern"]);
    let url = server.url().to_owned();
    let runtime = Runtime::new(http_options(vec![http_entry("alpha", &url)]));
    enabled(&runtime).await;
    let mut notices = runtime.notices();
    let front = nix::unistd::Pid::from_raw(i32::try_from(server.pid()).expect("pid"));

    // Silent but alive (a 2026-07-28 server answers `ping` with "method not found"): the
    // runtime's pings keep finding it, and it stays ready through several of them.
    let stayed = tokio::time::timeout(Duration::from_secs(8), async {
        next_state(&mut notices, "any state change", |_| true).await
    })
    .await;
    assert!(stayed.is_err(), "a live server changed state: {stayed:?}");
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);

    // Frozen (SIGSTOP): connections are still taken by the kernel, nothing answers. The
    // pings run into their deadline and the server is declared gone.
    nix::sys::signal::kill(front, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP");
    assert_left_ready_unreachable(&mut notices, &url, ": no answer to `ping`", "stalled").await;

    // Thawed: it is reconnected and answers.
    nix::sys::signal::kill(front, nix::sys::signal::Signal::SIGCONT).expect("SIGCONT");
    assert_ready_again_and_answering(&runtime, &mut notices, "thawed").await;
    runtime.dispose().await;
    drop(server);
    no_processes_with(&mark).await;
}

/// The rmcp peer (a legacy server with a standing GET stream) on `port`.
fn rmcp_on(port: u16) -> HttpServer {
    HttpServer::peer(PeerCommand {
        program: switchboard_testkit::locate::rmcp_peer_bin(),
        args: vec!["--http".into(), port.to_string()],
        env: vec![],
        port,
        path: "/mcp".into(),
    })
}

/// An entry for `url` that speaks only `era`.
fn http_entry_in(url: &str, era: EraSetting) -> switchboard_config::ServerEntry {
    let mut entry = http_entry("alpha", url);
    entry.era = era;
    entry
}

#[tokio::test]
async fn an_rmcp_server_that_dies_goes_to_backoff_and_comes_back_with_and_without_a_get_stream() {
    // Legacy: rmcp's session has a standing GET stream. 2026-07-28: the peer declares no
    // list changes, so there is no listen stream, only the pings.
    for era in [EraSetting::Legacy, EraSetting::Modern] {
        let server = rmcp_on(0);
        let url = server.url().to_owned();
        let port = server.port();
        let runtime = Runtime::new(http_options(vec![http_entry_in(&url, era)]));
        enabled(&runtime).await;
        let mut notices = runtime.notices();

        let case = format!("{era:?}");
        drop(server);
        assert_left_ready_unreachable(&mut notices, &url, "", &case).await;

        let server = rmcp_on(port);
        assert_ready_again_and_answering(&runtime, &mut notices, &case).await;
        runtime.dispose().await;
        drop(server);
    }
}

/// A TCP proxy in front of a server that cuts every connection that carried a standing
/// stream's request (a GET, or a `subscriptions/listen`) a second after it went up, as some
/// proxies do to idle streams. Dropping it stops
/// it and every connection it carries.
struct StreamCutter {
    port: u16,
    /// Streams cut so far.
    cut: std::sync::Arc<std::sync::atomic::AtomicU32>,
    task: tokio::task::JoinHandle<()>,
}

impl StreamCutter {
    async fn start(backend: u16) -> StreamCutter {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = cut.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let counter = counter.clone();
                connections.spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                    else {
                        return;
                    };
                    carry_until_a_stream_is_a_second_old(client, server).await;
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                });
                while connections.try_join_next().is_some() {}
            }
        });
        StreamCutter { port, cut, task }
    }
}

/// Carries a connection both ways; once a stream's request went up it, cuts it a second
/// later (returns).
/// A connection that ends by itself first never returns: its task is simply done.
async fn carry_until_a_stream_is_a_second_old(
    client: tokio::net::TcpStream,
    server: tokio::net::TcpStream,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let saw_stream = tokio::sync::Notify::new();
    let up = async {
        let mut buffer = [0u8; 8192];
        while let Ok(read) = from_client.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            let chunk = &buffer[..read];
            if chunk.windows(5).any(|w| w == b"GET /")
                || chunk.windows(20).any(|w| w == b"subscriptions/listen")
            {
                saw_stream.notify_one();
            }
            if to_server.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    };
    let down = tokio::io::copy(&mut from_server, &mut to_client);
    tokio::select! {
        _ = async { tokio::join!(up, down) } => std::future::pending().await,
        () = async {
            saw_stream.notified().await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        } => {}
    }
}

impl Drop for StreamCutter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn a_server_whose_streams_are_cut_every_second_but_answers_stays_ready() {
    let mark = marker("http-cut");
    let cases = [
        ("a legacy GET stream", rmcp_on(0), EraSetting::Legacy),
        (
            "a 2026-07-28 listen stream",
            HttpServer::fixture(&["--name", mark.as_str(), "--era", "modern"]),
            EraSetting::Modern,
        ),
    ];
    for (case, server, era) in cases {
        let cutter = StreamCutter::start(server.port()).await;
        let url = format!("http://127.0.0.1:{}/mcp", cutter.port);
        let runtime = Runtime::new(http_options(vec![http_entry_in(&url, era)]));
        enabled(&runtime).await;
        let mut notices = runtime.notices();

        // Its stream is cut again and again (so it was opened again after a cut); the
        // server still answers every ping, so it stays ready (no backoff, no reconnect)
        // through several cuts and pings.
        wait::until_async(
            &format!("{case} to be cut twice"),
            NOTICE_DEADLINE,
            || async { cutter.cut.load(std::sync::atomic::Ordering::Relaxed) >= 2 },
        )
        .await;
        let stayed = tokio::time::timeout(Duration::from_secs(8), async {
            next_state(&mut notices, "any state change", |_| true).await
        })
        .await;
        assert!(
            stayed.is_err(),
            "{case}: a live server changed state: {stayed:?}"
        );
        assert_eq!(runtime.servers()[0].state, ServerState::Ready, "{case}");
        let result = echo(&runtime, "still").await.expect("a call");
        assert_eq!(result["content"][0]["text"], "still", "{case}: {result}");
        runtime.dispose().await;
        drop((cutter, server));
    }
    no_processes_with(&mark).await;
}
