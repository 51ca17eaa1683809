//! `switchboard serve` when its client closes stdin, as `printf … | switchboard serve` does:
//! a script of frames is written at once and stdin closed. Observed from outside: every
//! request id gets exactly one answer (a result or an error, never silence), the process
//! exits, and no server process it started is left in the process table.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_testkit::locate::fixture_bin;
use switchboard_testkit::wait;

use crate::config;

/// Longest the gateway may take to exit after stdin closes before the test calls it hung.
/// A hang detector, not a speed requirement: the servers' request deadline is set far
/// beyond it, so a gateway that waits for them is caught.
const HANG_DEADLINE: Duration = Duration::from_secs(90);

/// The request deadline the servers get: longer than any test may run.
const UPSTREAM_TIMEOUT_SECS: u64 = 600;

/// What the gateway wrote and how it ended.
struct Served {
    /// Every stdout line, parsed.
    answers: Vec<Value>,
    code: Option<i32>,
    stderr: String,
}

/// Runs `switchboard serve --config CONFIG`, writes `frames` (one per line), closes stdin,
/// and waits for the process to exit (killing it and panicking if it hangs).
fn serve_script(config: &Path, frames: &[String]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--config"])
        .arg(config)
        .env(crate::NO_ERA_MEMO.0, crate::NO_ERA_MEMO.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let script: String = frames.iter().map(|f| format!("{f}\n")).collect();
    let writer = std::thread::spawn(move || {
        // The gateway may exit before reading everything only if it is broken; the
        // answers then show it.
        let _ = stdin.write_all(script.as_bytes());
        // Dropping `stdin` closes it: the gateway sees EOF.
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let mut stderr = child.stderr.take().expect("stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let Ok(status) = wait::try_exited(HANG_DEADLINE, &mut child) else {
        let stderr = stderr_reader.join().unwrap_or_default();
        panic!(
            "switchboard serve did not exit within {HANG_DEADLINE:?} of stdin closing\n{stderr}"
        );
    };
    let _ = writer.join();
    let stdout = reader.join().expect("stdout reader");
    let stderr = stderr_reader.join().expect("stderr reader");
    let answers = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}\n{stderr}"))
        })
        .collect();
    Served {
        answers,
        code: status.code(),
        stderr,
    }
}

static MARKERS: AtomicUsize = AtomicUsize::new(0);

/// A name unique to this test, given to its fixture servers (`--name`) so that the
/// process table shows whether any of them outlived the gateway.
fn marker() -> String {
    let n = MARKERS.fetch_add(1, Ordering::Relaxed);
    format!("serve-eof-{}-{n}", std::process::id())
}

/// A fixture server entry carrying `marker`, with a request deadline no test outlives.
fn fixture(marker: &str, mode: &str) -> Value {
    json!({
        "command": fixture_bin(),
        "args": ["--mode", mode, "--name", marker],
        "timeout": UPSTREAM_TIMEOUT_SECS,
    })
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize() -> String {
    request(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "printf", "version": "1"}}),
    )
}

fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

/// The answers grouped by their `id` (as JSON text; `null` for id-less errors).
fn by_id(answers: &[Value]) -> BTreeMap<String, Vec<&Value>> {
    let mut grouped: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for answer in answers {
        grouped
            .entry(answer.get("id").unwrap_or(&Value::Null).to_string())
            .or_default()
            .push(answer);
    }
    grouped
}

/// One line per answer: its id, then `result` or the error's code and message.
fn summary(answer: &Value) -> String {
    let id = answer.get("id").unwrap_or(&Value::Null);
    match (answer.get("result"), answer.get("error")) {
        (Some(_), None) => format!("{id}: result"),
        (None, Some(error)) => format!("{id}: error {} {}", error["code"], error["message"]),
        _ => format!("{id}: neither result nor error: {answer}"),
    }
}

#[test]
fn on_stdin_eof_every_request_in_flight_is_answered_then_the_gateway_exits() {
    let marker = marker();
    let path = config(json!({ "alpha": fixture(&marker, "good") }));
    let frames = vec![
        initialize(),
        initialized(),
        request(json!(2), "tools/list", json!({})),
        request(
            json!(3),
            "tools/call",
            json!({"name": "alpha__echo", "arguments": {"text": "before EOF"}}),
        ),
        request(json!("four"), "ping", json!({})),
        // Invalid requests whose id can be read are answered with it.
        json!({"jsonrpc": "2.0", "id": 5}).to_string(),
        json!({"jsonrpc": "2.0", "id": 6, "method": 7}).to_string(),
        json!({"jsonrpc": "2.0", "id": "seven", "method": "ping", "params": 3}).to_string(),
        // Only a frame without a readable id is answered with `id: null`.
        "this is not JSON".to_owned(),
        request(json!(8), "no/such/method", json!({})),
        request(
            json!(9),
            "tools/call",
            json!({"name": "alpha__slow", "arguments": {"duration_ms": 300, "steps": 1}}),
        ),
    ];
    let served = serve_script(&path, &frames);
    assert_eq!(served.code, Some(0), "{}", served.stderr);
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "a server outlived the gateway"
    );
    let grouped = by_id(&served.answers);
    for (id, answers) in &grouped {
        assert!(
            id == "null" || answers.len() == 1,
            "id {id} answered {} times",
            answers.len()
        );
    }
    let tools = served
        .answers
        .iter()
        .find(|a| a["id"] == 2)
        .and_then(|a| a["result"]["tools"].as_array())
        .map_or(0, Vec::len);
    assert_eq!(tools, 6, "tools/list answered with the server's tools");
    let mut lines: Vec<String> = served.answers.iter().map(summary).collect();
    lines.sort();
    expect![[r#"
        "four": result
        "seven": error -32600 "not a JSON-RPC request: not a JSON-RPC message: `params` is neither an object nor an array (57 bytes): {\"jsonrpc\":\"2.0\",\"id\":\"seven\",\"method\":\"ping\",\"params\":3}"
        1: result
        2: result
        3: result
        5: error -32600 "not a JSON-RPC request: not a JSON-RPC message: response has neither `result` nor `error` (24 bytes): {\"jsonrpc\":\"2.0\",\"id\":5}"
        6: error -32600 "not a JSON-RPC request: not a JSON-RPC message: `method` is not a string (35 bytes): {\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}"
        8: error -32601 "method `no/such/method` is not offered by this server"
        9: result
        null: error -32700 "not a JSON-RPC request: non-JSON text on the protocol channel (16 bytes): this is not JSON""#]].assert_eq(&lines.join("\n"));
}

#[test]
fn stdin_eof_is_seen_with_more_calls_in_flight_than_the_gateway_serves_at_once() {
    let marker = marker();
    // `slow` for an hour on a server that ignores cancellation: the calls hang.
    let path = config(json!({ "hung": fixture(&marker, "ignores-cancel") }));
    let calls = 300;
    let mut frames = vec![initialize(), initialized()];
    for id in 100..100 + calls {
        frames.push(request(
            json!(id),
            "tools/call",
            json!({"name": "hung__slow", "arguments": {"duration_ms": 3_600_000, "steps": 1}}),
        ));
    }
    // A request reusing the id of a call in flight, and a broken one doing the same: an
    // answer with that id would read as the call's, so they are answered with `null`.
    frames.push(request(json!(100), "ping", json!({})));
    frames.push(json!({"jsonrpc": "2.0", "id": 101, "method": 7}).to_string());
    // Input is read at the cap, so a cancellation reaches its call: cancelled, it gets no
    // answer (as the protocol asks).
    let cancelled = 102;
    frames.push(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancelled}})
            .to_string(),
    );
    let served = serve_script(&path, &frames);
    assert_eq!(served.code, Some(0), "{}", served.stderr);
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "a server outlived the gateway"
    );
    let grouped = by_id(&served.answers);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for id in 100..100 + calls {
        let answers = grouped.get(&id.to_string()).map_or(&[][..], Vec::as_slice);
        if id == cancelled {
            assert_eq!(answers.len(), 0, "cancelled call {id}: {answers:?}");
            continue;
        }
        assert_eq!(answers.len(), 1, "call {id}: {answers:?}");
        let error = &answers[0]["error"];
        let code = error["code"].as_i64().unwrap_or(0);
        *outcomes.entry(format!("error {code}")).or_default() += 1;
    }
    let nulls = grouped.get("null").map_or(0, Vec::len);
    assert_eq!(nulls, 2, "{:?}", grouped.get("null"));
    assert_eq!(
        grouped.get("1").map(Vec::len),
        Some(1),
        "initialize answered"
    );
    // Up to the in-flight cap the calls ran until the grace after EOF ended; the rest were
    // refused at once. Which side the call that met `initialize` in flight lands on
    // depends on timing, so the split is shown, not asserted exactly.
    let first_of = |code: i64| {
        served
            .answers
            .iter()
            .find(|a| a["error"]["code"] == code)
            .map(|a| format!("{} {}", a["error"]["code"], a["error"]["message"]))
            .unwrap_or_default()
    };
    expect![[r#"
        -32000 "cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"
        -32003 "the server is busy: it is already working on 256 requests, the most it takes at once; this one was not started (send it again once an answer arrives)""#]].assert_eq(&format!("{}\n{}", first_of(-32000), first_of(-32003)));
    let refused = outcomes.get("error -32003").copied().unwrap_or(0);
    let unfinished = outcomes.get("error -32000").copied().unwrap_or(0);
    assert_eq!(refused + unfinished, calls as usize - 1, "{outcomes:?}");
    assert!(
        (254..=255).contains(&unfinished),
        "the calls in flight were failed at the end of the grace: {outcomes:?}"
    );
}
