//! `switchboard status` against real fixture processes (ready, crashing, silent; the
//! warnings; `--json`), and ad-hoc servers given on the command line (`-- CMD`, `--url`).

use expect_test::expect;
use switchboard_testkit::locate::fixture_bin;
use switchboard_testkit::serve::HttpServer;

use crate::{Run, config, fixture_entry, switchboard};

/// The start durations vary from run to run: each row's last column (`12 ms`, `1.3 s`)
/// becomes `<t>`.
pub(crate) fn mask_durations(table: &str) -> String {
    table
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.rsplitn(3, ' ').collect();
            match words.as_slice() {
                [unit, number, rest]
                    if matches!(*unit, "ms" | "s")
                        && number.chars().all(|c| c.is_ascii_digit() || c == '.') =>
                {
                    format!("{rest} <t>")
                }
                _ => line.to_owned(),
            }
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `--json` output with every `startMs` set to 0, pretty-printed.
fn masked_json(run: &Run) -> String {
    let mut parsed: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("status --json prints JSON");
    if let Some(servers) = parsed["servers"].as_array_mut() {
        for server in servers {
            server["startMs"] = serde_json::json!(0);
        }
    }
    serde_json::to_string_pretty(&parsed).expect("JSON text")
}

fn fixture_path() -> String {
    fixture_bin().to_str().expect("utf-8 path").to_owned()
}

/// `switchboard status --config PATH FLAGS` for a config of these servers, and the PATH.
fn status_of(servers: serde_json::Value, flags: &[&str]) -> (Run, String) {
    let path = config(servers);
    let path = path.to_str().expect("utf-8 path").to_owned();
    let mut args = vec!["status", "--config", &path];
    args.extend(flags);
    (switchboard(&args), path)
}

#[test]
fn status_shows_ready_crashing_and_silent_servers_and_exits_3() {
    let mut silent = fixture_entry(&["--mode", "no-init-reply"]);
    silent["startupTimeout"] = serde_json::json!("500ms");
    let (run, path) = status_of(
        serde_json::json!({
            "good": fixture_entry(&[]),
            "crashy": fixture_entry(&["--mode", "exit-immediately"]),
            "silent": silent,
        }),
        &[],
    );
    let path = path.as_str();
    assert_eq!(run.code, 3, "{}", run.stderr);
    expect![[r#"
        SERVER  STATE   SANDBOX  ERA     PROTOCOL    TOOLS  PROMPTS  RESOURCES  START
        good    ready   off      legacy  2025-11-25  6      1        1          <t>
        crashy  failed  off      -       -           -      -        -          <t>
          failed: the server process exited (exit status: 2); stderr: fixture: bad configuration, exiting
        silent  failed  off      -       -           -      -        -          <t>
          failed: timed out: no answer to `initialize` within 500ms
        1 of 3 server(s) ready
    "#]]
    .assert_eq(&mask_durations(&run.stdout));

    let named = switchboard(&["status", "--config", path, "good"]);
    assert_eq!(named.code, 0, "{}", named.stderr);
    let unknown = switchboard(&["status", "--config", path, "nobody"]);
    assert_eq!(unknown.code, 2);
    expect![[r#"
        switchboard: no server named `nobody` in CONFIG; configured: good, crashy, silent
    "#]]
    .assert_eq(&unknown.stderr.replace(path, "CONFIG"));
}

#[test]
fn status_warns_about_descriptions_shared_names_and_many_tools() {
    let (run, path) = status_of(
        serde_json::json!({
            "leaky": fixture_entry(&["--mode", "leaky-description"]),
            "hostile": fixture_entry(&["--mode", "hostile-text"]),
            "plain": fixture_entry(&[]),
            "many": fixture_entry(&["--mode", "many-tools", "--tools", "130"]),
        }),
        &[],
    );
    let path = path.as_str();
    assert_eq!(run.code, 0, "{}", run.stderr);
    expect![[r#"
        SERVER   STATE  SANDBOX  ERA     PROTOCOL    TOOLS  PROMPTS  RESOURCES  START
        leaky    ready  off      legacy  2025-11-25  7      1        1          <t>
          warning: tool `deploy`: description: holds what looks like an AWS access key id (20 characters), shown to every client and model; remove it and rotate it
          warning: tools also offered by `hostile`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `plain`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
        hostile  ready  off      legacy  2025-11-25  10     1        1          <t>
          warning: tool `hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed`: name: "hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r over \u{9b}31m csi \u{202e}rever…": contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
          warning: tool `hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed`: description: "\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r over \u{9b}31m csi \u{202e}reversed": contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
          warning: tool `hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed`: inputSchema.properties.\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed: "\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r over \u{9b}31m csi \u{202e}reversed": contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
          warning: tool `shout`: description: "Returns \u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r over \u{9b}31m csi \u{202e}rever…": contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
          warning: tools also offered by `leaky`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `plain`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
        plain    ready  off      legacy  2025-11-25  6      1        1          <t>
          warning: tools also offered by `leaky`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `hostile`: add, change_tools, echo, fail, image, slow (a client that does not prefix tool names sees one of each)
        many     ready  off      legacy  2025-11-25  130    1        1          <t>
          warning: 130 tools, more than 40: some clients (Cursor) use only 40 and leave the rest out; narrow it with enabledTools
        4 of 4 server(s) ready
        warning: 153 tools across all servers, more than 128: the OpenAI API and VS Code take at most 128 tools in one request
    "#]]
    .assert_eq(&mask_durations(&run.stdout));

    let json = switchboard(&["status", "--config", path, "--json", "leaky", "many"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    expect![[r#"
        {
          "servers": [
            {
              "name": "leaky",
              "state": "ready",
              "era": "legacy",
              "protocolVersion": "2025-11-25",
              "serverInfo": {
                "name": "switchboard-fixture",
                "version": "0.1.0"
              },
              "tools": 7,
              "prompts": 1,
              "resources": 1,
              "startMs": 0,
              "warnings": [
                {
                  "kind": "description",
                  "tool": "deploy",
                  "detail": "description: holds what looks like an AWS access key id (20 characters), shown to every client and model; remove it and rotate it"
                }
              ],
              "sandbox": "off"
            },
            {
              "name": "many",
              "state": "ready",
              "era": "legacy",
              "protocolVersion": "2025-11-25",
              "serverInfo": {
                "name": "switchboard-fixture",
                "version": "0.1.0"
              },
              "tools": 130,
              "prompts": 1,
              "resources": 1,
              "startMs": 0,
              "warnings": [
                {
                  "kind": "too-many-tools",
                  "tool": null,
                  "detail": "130 tools, more than 40: some clients (Cursor) use only 40 and leave the rest out; narrow it with enabledTools"
                }
              ],
              "sandbox": "off"
            }
          ],
          "warnings": [
            "137 tools across all servers, more than 128: the OpenAI API and VS Code take at most 128 tools in one request"
          ]
        }"#]]
    .assert_eq(&masked_json(&json));
}

#[test]
fn status_json_has_failures_as_objects() {
    let (run, _) = status_of(
        serde_json::json!({
            "good": fixture_entry(&[]),
            "crashy": fixture_entry(&["--mode", "exit-immediately"]),
        }),
        &["--json"],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    expect![[r#"
        {
          "servers": [
            {
              "name": "good",
              "state": "ready",
              "era": "legacy",
              "protocolVersion": "2025-11-25",
              "serverInfo": {
                "name": "switchboard-fixture",
                "version": "0.1.0"
              },
              "tools": 6,
              "prompts": 1,
              "resources": 1,
              "startMs": 0,
              "warnings": [],
              "sandbox": "off"
            },
            {
              "name": "crashy",
              "state": "failed",
              "reason": "the server process exited (exit status: 2); stderr: fixture: bad configuration, exiting",
              "error": "server `crashy`: the server process exited (exit status: 2)\n--- last stderr output ---\nfixture: bad configuration, exiting",
              "startMs": 0,
              "warnings": [],
              "sandbox": "off"
            }
          ],
          "warnings": []
        }"#]]
    .assert_eq(&masked_json(&run));
}

#[test]
fn an_adhoc_stdio_server_after_double_dash() {
    let fixture = fixture_path();
    let tools = switchboard(&["tools", "--", &fixture]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(
        tools
            .stdout
            .starts_with("adhoc: 6 tools (protocol 2025-11-25, legacy era"),
        "{}",
        tools.stdout
    );
    let one = switchboard(&["tools", "echo", "--", &fixture]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert!(one.stdout.starts_with("adhoc / echo\n"), "{}", one.stdout);

    let call = switchboard(&["call", "echo", "text=hi", "--", &fixture]);
    assert_eq!(
        (call.code, call.stdout.as_str(), call.stderr.as_str()),
        (0, "hi\n", "")
    );
    let status = switchboard(&["status", "--", &fixture, "--mode", "exit-immediately"]);
    assert_eq!(status.code, 3, "{}", status.stderr);
    expect![[r#"
        SERVER  STATE   SANDBOX  ERA  PROTOCOL  TOOLS  PROMPTS  RESOURCES  START
        adhoc   failed  off      -    -         -      -        -          <t>
          failed: the server process exited (exit status: 2); stderr: fixture: bad configuration, exiting
        0 of 1 server(s) ready
    "#]]
    .assert_eq(&mask_durations(&status.stdout));

    let prompt = switchboard(&["prompt", "greet", "name=Ada", "--", &fixture]);
    assert_eq!(prompt.code, 0, "{}", prompt.stderr);
    let read = switchboard(&["read", "fixture://readme", "--", &fixture]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let extra = switchboard(&["prompts", "adhoc", "--", &fixture]);
    assert_eq!(extra.code, 2);
    // A SERVER word given to `call` with an ad-hoc server is read as the tool.
    let named = switchboard(&["call", "fx", "add", "a=2", "b=3", "--", &fixture]);
    assert_eq!(named.code, 2);
    expect![[r#"
        switchboard: unexpected `adhoc`: with an ad-hoc server (--url, or a command after --) leave SERVER out; the server is named `adhoc`
        switchboard: `add` is not an argument: with an ad-hoc server (a command after --, or --url) SERVER is left out, so `fx` was taken as the tool; write `call add key=value… -- CMD…` (or `call --url URL add key=value…`)
    "#]]
    .assert_eq(&format!("{}{}", extra.stderr, named.stderr));
}

#[test]
fn an_adhoc_http_server_by_url() {
    let http = HttpServer::fixture(&[]);
    let tools = switchboard(&["tools", "--url", http.url()]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(
        tools.stdout.starts_with("adhoc: 6 tools"),
        "{}",
        tools.stdout
    );
    let call = switchboard(&["call", "--url", http.url(), "add", "a=2", "b=3"]);
    assert_eq!(
        (call.code, call.stdout.as_str(), call.stderr.as_str()),
        (0, "5\n", "")
    );
    let status = switchboard(&["status", "--url", http.url(), "--json"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let parsed: serde_json::Value = serde_json::from_str(&status.stdout).expect("JSON");
    assert_eq!(parsed["servers"][0]["name"], "adhoc");
    assert_eq!(parsed["servers"][0]["state"], "ready");
}

#[test]
fn an_adhoc_server_takes_its_environment_and_headers_and_never_shows_their_values() {
    // A stdio server whose name comes from its environment.
    let fixture = fixture_bin().display().to_string();
    let script = r#"exec "$FIXTURE" --name "$SERVER_NAME""#;
    let stdio = switchboard(&[
        "tools",
        "-e",
        &format!("FIXTURE={fixture}"),
        "--env",
        "SERVER_NAME=named-by-env",
        "--",
        "sh",
        "-c",
        script,
    ]);
    // An HTTP server whose error page quotes the request's headers back.
    let echoing = HttpServer::fixture(&["--http-fault", "echo-headers-on-call"]);
    let token = "adhoc-s3cret-header";
    let http = switchboard(&[
        "call",
        "--url",
        echoing.url(),
        "--header",
        &format!("Authorization: Bearer {token}"),
        "echo",
        "text=hi",
    ]);
    assert!(!http.stderr.contains(token) && !http.stdout.contains(token));
    let misplaced = switchboard(&["tools", "--header", "X-Key: v", "--", "sh"]);
    let header_line = http
        .stderr
        .split("\\n")
        .find(|line| line.starts_with("authorization"))
        .unwrap_or("(no authorization header quoted)")
        .to_owned();
    expect![[r#"
        adhoc: 6 tools (protocol 2025-11-25, legacy era, server named-by-env 0.1.0)
        3 authorization: <redacted>
        2 switchboard: `--header` is sent to an ad-hoc HTTP server (`--url URL`); a server after `--` takes `-e KEY=VALUE`, and a configured one its entry's `headers`"#]].assert_eq(&format!(
        "{}\n{} {header_line}\n{} {}",
        stdio.stdout.lines().next().unwrap_or(""),
        http.code,
        misplaced.code,
        misplaced.stderr.lines().next().unwrap_or("")
    ));
}

#[test]
fn a_url_without_http_scheme_is_a_usage_error() {
    let bad = switchboard(&["tools", "--url", "localhost:8080/mcp"]);
    let ftp = switchboard(&["call", "--url", "ftp://host/mcp", "echo"]);
    let with_config = switchboard(&["tools", "--url", "http://127.0.0.1:9/mcp", "--config", "x"]);
    let no_tool = switchboard(&["call", "--url", "http://127.0.0.1:9/mcp"]);
    assert_eq!(
        (bad.code, ftp.code, with_config.code, no_tool.code),
        (2, 2, 2, 2)
    );
    expect![[r#"
        switchboard: --url localhost:8080/mcp is not an http:// or https:// URL; write it with its scheme, e.g. --url http://localhost:8080/mcp
        switchboard: --url ftp://host/mcp is not an http:// or https:// URL; write it with its scheme, e.g. --url http://localhost:8080/mcp
        switchboard: give the TOOL: with an ad-hoc server, leave SERVER out and give the other words in their order (see --help)
    "#]]
    .assert_eq(&format!("{}{}{}", bad.stderr, ftp.stderr, no_tool.stderr));
    assert!(
        with_config.stderr.contains("cannot be used with"),
        "{}",
        with_config.stderr
    );
}
