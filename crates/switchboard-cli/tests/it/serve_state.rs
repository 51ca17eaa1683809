//! `serve --state redis://…`: two instances behind HAProxy sharing their rate limits through
//! a real `redis-server` (Debian's, installed by `scripts/peers.sh` into
//! `target/peers/redis/`, started here on a loopback port with no persistence). A client's
//! quota of 3 calls per hour is one quota whichever instance answers; another client is
//! still served; Redis holds one expiring key per client and limit, named by a digest;
//! without `--state` each instance keeps its own (more calls pass). With Redis frozen
//! (SIGSTOP: every operation runs into its deadline) and then killed, the calls are still
//! answered, by each instance's own buckets, and each instance says each outage once,
//! then says when Redis is back. A `--state` that does not read, or
//! a Redis that does not answer, stops `serve` (exit 2) without showing the password.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::PoisonError;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::json;
use switchboard_session::{EraChoice, Session};
use switchboard_testkit::locate::{peer_path, workspace_root};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::serve_balanced::{Balanced, Owned, free_port};
use crate::serve_policy::{connect, outcome};
use crate::{fixture_entry, switchboard};

const ALICE_TOKEN: &str = "alice-token-0123456789abcdef";
const BOB_TOKEN: &str = "bob-token-0123456789abcdef";
const CAROL_TOKEN: &str = "carol-token-0123456789abcdef";
const DAVE_TOKEN: &str = "dave-token-0123456789abcdef";
/// What each instance says at the first call of an outage.
const OUTAGE: &str = "rate limits are this instance's own until it is back";
/// What each instance says when Redis answers again.
const BACK: &str = "is back; rate limits are shared again";

/// A `redis-server` on a loopback port, in a folder of its own, nothing saved; killed
/// (and its folder removed) when dropped.
pub(crate) struct Redis {
    process: Option<Owned>,
    folder: PathBuf,
    port: u16,
}

impl Redis {
    pub(crate) fn start(name: &str) -> Redis {
        let folder = workspace_root()
            .join("target/cli-tests")
            .join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("mkdir");
        let mut redis = Redis {
            process: None,
            folder,
            port: free_port(),
        };
        redis.restart();
        redis
    }

    /// Starts it (again) on its port, and waits until it takes connections.
    fn restart(&mut self) {
        let binary = peer_path("target/peers/redis/redis-server");
        let port = self.port.to_string();
        let child = Command::new(binary)
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port,
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "no", "--dir"])
            .arg(&self.folder)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.process = Some(Owned(child));
        wait::until("redis-server to listen", Duration::from_secs(30), || {
            TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        });
    }

    /// Sends `signal` to the server (SIGSTOP freezes it: connections are taken and nothing
    /// is answered).
    fn signal(&self, signal: Signal) {
        let process = self.process.as_ref().expect("redis-server runs");
        let pid = Pid::from_raw(i32::try_from(process.0.id()).expect("a pid"));
        nix::sys::signal::kill(pid, signal).expect("signal redis-server");
    }

    fn kill(&mut self) {
        self.process = None;
    }

    /// `redis-cli -p PORT ARGS`'s output lines (bounded).
    pub(crate) fn cli(&self, args: &[&str]) -> Vec<String> {
        let mut command = Command::new(peer_path("target/peers/redis/redis-cli"));
        command.args(["-p", &self.port.to_string()]).args(args);
        let run = crate::run_bounded(command, "redis-cli");
        assert_eq!(run.code, 0, "redis-cli {args:?}: {}", run.stderr);
        run.stdout.lines().map(str::to_owned).collect()
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.process = None;
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The fixture server `fx`, three named clients, and a quota of 3 calls per hour each.
fn quota_config(name: &str) -> PathBuf {
    let dir = workspace_root().join("target/cli-tests");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(format!("{name}-{}.json", std::process::id()));
    let text = json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "clients": {
            "alice": { "token": ALICE_TOKEN },
            "bob": { "token": BOB_TOKEN },
            "carol": { "token": CAROL_TOKEN },
            "dave": { "token": DAVE_TOKEN }
        },
        "rateLimits": [{"name": "hourly", "per": "client", "calls": 3, "every": "1h"}]
    });
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

/// `calls` echo calls by the holder of `token`, each a request of its own (the modern
/// era: HAProxy balances each one): what each got, the retry time masked.
async fn echoes(balanced: &Balanced, token: &str, calls: usize) -> Vec<String> {
    let session: Session = connect(&balanced.url, token, EraChoice::Modern).await;
    let mut seen = Vec::new();
    for _ in 0..calls {
        let got = outcome(&session, "fx__echo", json!({"text": "hi"})).await;
        seen.push(masked(&got));
    }
    seen
}

/// `retry in 3599 s` → `retry in N s`, `"retryAfterMs":3599000` → `"retryAfterMs":…` (each
/// checked to be within the hour first).
fn masked(text: &str) -> String {
    let text = match text.split_once("retry in ") {
        Some((before, after)) => {
            let rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{before}retry in N{rest}")
        }
        None => text.to_owned(),
    };
    let key = "\"retryAfterMs\":";
    match text.split_once(key) {
        Some((before, after)) => {
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            let millis: u64 = digits.parse().unwrap_or(0);
            assert!(
                millis > 0 && millis <= 3_600_000,
                "retryAfterMs within the hour: {text}"
            );
            format!("{before}{key}…{}", &after[digits.len()..])
        }
        None => text,
    }
}

/// Answers per instance between two of HAProxy's counts.
fn spread(before: &std::collections::BTreeMap<String, u64>, balanced: &Balanced) -> Vec<u64> {
    balanced
        .served()
        .iter()
        .map(|(name, now)| now - before.get(name).copied().unwrap_or(0))
        .collect()
}

/// How many of instance `index`'s stderr lines hold `text`.
fn said(balanced: &Balanced, index: usize, text: &str) -> usize {
    balanced.stderr[index]
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|line| line.contains(text))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_a_clients_quota_through_redis_and_survive_its_outage() {
    let mut redis = Redis::start("state-redis");
    let config = quota_config("state-shared");
    let url = redis.url();
    let balanced = Balanced::start_with(&config, "state-shared", &["--state", &url]);
    for index in 0..2 {
        assert_eq!(
            said(
                &balanced,
                index,
                "rate limits shared through redis://127.0.0.1:"
            ),
            1
        );
    }
    let before = balanced.served();
    // Alice's 4th and 5th calls are refused, whichever instance answers each.
    let alice = echoes(&balanced, ALICE_TOKEN, 5).await;
    let bob = echoes(&balanced, BOB_TOKEN, 1).await;
    expect_test::expect![[r#"
        [
            "ok \"hi\"",
            "ok \"hi\"",
            "ok \"hi\"",
            "server `gw` answered `tools/call` with an error: rate limit `hourly` (3 calls per 1h): retry in N s (code -32009), data: {\"limit\":\"hourly\",\"retryAfterMs\":…}",
            "server `gw` answered `tools/call` with an error: rate limit `hourly` (3 calls per 1h): retry in N s (code -32009), data: {\"limit\":\"hourly\",\"retryAfterMs\":…}",
            "ok \"hi\"",
        ]
    "#]]
    .assert_debug_eq(&[alice, bob].concat());
    let served = spread(&before, &balanced);
    assert!(
        served.len() == 2 && served.iter().all(|count| *count > 0),
        "both instances answered calls: {served:?}"
    );
    // Redis holds one key per client and limit, named by a digest, expiring within the
    // hour.
    let mut keys = redis.cli(&["--scan", "--pattern", "*"]);
    keys.sort();
    let shapes: Vec<String> = keys
        .iter()
        .map(|key| {
            let digest = key.strip_prefix("switchboard:rl:hourly:").unwrap_or("");
            let hex = digest.len() == 32 && digest.chars().all(|c| c.is_ascii_hexdigit());
            let expiry: i64 = redis.cli(&["PTTL", key]).concat().parse().unwrap_or(-1);
            let expires = expiry > 0 && expiry <= 3_600_000;
            format!("digest key: {hex}, expires within the hour: {expires}")
        })
        .collect();
    expect_test::expect![[r#"
        [
            "digest key: true, expires within the hour: true",
            "digest key: true, expires within the hour: true",
        ]
    "#]]
    .assert_debug_eq(&shapes);

    // Redis frozen (SIGSTOP): no answer within the deadline, so every call is answered by
    // the instances' own buckets, and each instance says so once, not once per call.
    redis.signal(Signal::SIGSTOP);
    let carol = echoes(&balanced, CAROL_TOKEN, 4).await;
    assert!(
        carol.iter().all(|got| got == "ok \"hi\""),
        "answered while Redis is frozen: {carol:?}"
    );
    let frozen = outages(&balanced);
    assert!(
        frozen.iter().all(|count| *count <= 1) && frozen.iter().sum::<usize>() >= 1,
        "each instance says the outage once: {frozen:?}"
    );
    assert!(
        (0..2).any(|index| said(&balanced, index, "no answer within 100ms") == 1),
        "the warning says why"
    );
    redis.signal(Signal::SIGCONT);
    until_back(&balanced, CAROL_TOKEN, 1).await;

    // Redis killed: the same, one more warning per instance at most.
    redis.kill();
    let dave = echoes(&balanced, DAVE_TOKEN, 4).await;
    assert!(
        dave.iter().all(|got| got == "ok \"hi\""),
        "answered while Redis is down: {dave:?}"
    );
    let killed: Vec<usize> = outages(&balanced)
        .iter()
        .zip(&frozen)
        .map(|(now, before)| now - before)
        .collect();
    assert!(
        killed.iter().all(|count| *count <= 1) && killed.iter().sum::<usize>() >= 1,
        "each instance says the second outage once: {killed:?}"
    );
    redis.restart();
    until_back(&balanced, DAVE_TOKEN, 2).await;
}

/// How many times each instance said an outage began.
fn outages(balanced: &Balanced) -> Vec<usize> {
    (0..2).map(|index| said(balanced, index, OUTAGE)).collect()
}

/// Calls (the holder of `token`, one every 200 ms: an instance leaves Redis alone for a
/// second after a failure) until the instances have said `times` times in all that Redis
/// is back.
async fn until_back(balanced: &Balanced, token: &str, times: usize) {
    let session = connect(&balanced.url, token, EraChoice::Modern).await;
    within("an instance to say Redis is back", TEST_DEADLINE, async {
        while (0..2)
            .map(|index| said(balanced, index, BACK))
            .sum::<usize>()
            < times
        {
            let _ = outcome(&session, "fx__echo", json!({"text": "hi"})).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_state_each_instance_keeps_its_own_quota() {
    let config = quota_config("state-local");
    let balanced = Balanced::start(&config, "state-local");
    let before = balanced.served();
    let alice = echoes(&balanced, ALICE_TOKEN, 8).await;
    let served = spread(&before, &balanced);
    let passed = alice.iter().filter(|got| *got == "ok \"hi\"").count();
    // Each instance that took some of the 8 calls let up to 3 of them through.
    assert!(
        served.iter().all(|count| *count > 0) && passed > 3,
        "more than one quota's calls pass when each instance keeps its own: {alice:?}, {served:?}"
    );
}

/// The lines of `stderr` with the port masked.
fn port_masked(stderr: &str, port: u16) -> String {
    stderr.replace(&port.to_string(), "PORT")
}

#[test]
fn a_state_url_that_does_not_read_or_does_not_answer_stops_serve_without_the_password() {
    let config = quota_config("state-bad");
    let config = config.to_str().expect("utf-8 path");
    let port = free_port();
    let unreachable = format!("redis://:hunter2@127.0.0.1:{port}/1");
    let mut seen = Vec::new();
    for state in [
        "rediss://:hunter2@cache.internal:6380",
        "redis://:hunter2@cache.internal:notaport",
        unreachable.as_str(),
    ] {
        let run = switchboard(&["serve", "--config", config, "--state", state]);
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
        seen.push(format!(
            "exit {}: {}",
            run.code,
            port_masked(run.stderr.trim(), port)
        ));
    }
    expect_test::expect![[r#"
        exit 2: switchboard serve: clients: alice, bob, carol, dave (their tokens are asked for over --http only)
        switchboard: --state: the shared store must be a redis://HOST:PORT[/DB] URL (rediss:// with TLS is not supported)
        exit 2: switchboard serve: clients: alice, bob, carol, dave (their tokens are asked for over --http only)
        switchboard: --state: not a usable redis://HOST:PORT[/DB] URL (host, port and database number)
        exit 2: switchboard serve: clients: alice, bob, carol, dave (their tokens are asked for over --http only)
        switchboard: --state: the shared store redis://***@127.0.0.1:PORT/1 does not answer: Connection refused (os error 111); not serving with limits that would not be shared"#]].assert_eq(&seen.join("\n"));
}
