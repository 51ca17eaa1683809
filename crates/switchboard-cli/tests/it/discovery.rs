//! OAuth discovery happens only during `switchboard login`, and only towards addresses the
//! MCP server's own address class allows. `tools`, `call`, `check` and `serve` never fetch
//! metadata or register a client: a server that asks for authorization they do not hold
//! gets the login hint. Every hostile address here is a counted loopback server (or an
//! address refused before any connection), so "nothing reached it" is observed from outside.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::wait;

use crate::config;

/// A whole run of the CLI is bounded by this (it is killed after it).
const RUN_DEADLINE: Duration = Duration::from_secs(60);

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A private directory for one test's token file (0700, as the token store requires).
fn token_file(test: &str) -> PathBuf {
    let dir = crate::scratch_dir(&format!("discovery-{test}"));
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir.join("tokens.json")
}

/// Runs `switchboard ARGS` with this token file, stdin from `input` then closed; bounded.
fn switchboard(args: &[String], tokens: &std::path::Path, input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("SWITCHBOARD_TOKEN_FILE", tokens)
        .env("SWITCHBOARD_ERA_MEMO", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    wait::exited(
        &format!("switchboard {args:?} to finish"),
        RUN_DEADLINE,
        &mut child,
    );
    let output = child.wait_with_output().expect("output");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A complete authorization server on loopback, reached only through discovery: resource
/// metadata for the MCP server's `/mcp` (its origin is filled in once known), its own
/// metadata, a registration endpoint (its own, unless `registration_endpoint` names
/// another) that issues a client id and a token endpoint. Everything it receives is counted.
async fn bait_authorization_server(
    mcp_origin: Arc<OnceLock<String>>,
    registration_endpoint: Option<&'static str>,
) -> CountingServer {
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let mcp = mcp_origin.get().cloned().unwrap_or_default();
        let registration =
            registration_endpoint.map_or_else(|| format!("{origin}/register"), str::to_owned);
        let body = match request.path() {
            path if path.starts_with("/.well-known/oauth-protected-resource") => {
                json!({"resource": format!("{mcp}/mcp"), "authorization_servers": [origin]})
            }
            "/.well-known/oauth-authorization-server" => json!({
                "issuer": origin,
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "registration_endpoint": registration,
                "code_challenge_methods_supported": ["S256"],
            }),
            "/register" => json!({"client_id": "registered-by-bait"}),
            "/token" => json!({"access_token": "from-bait", "token_type": "Bearer"}),
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

/// An MCP endpoint that answers every request with a 401 naming `resource_metadata`.
async fn challenging_server(resource_metadata: &str) -> CountingServer {
    let challenge = format!(
        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"{resource_metadata}\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    CountingServer::start(challenge).await
}

/// The MCP endpoint (every request a 401 whose `resource_metadata` is on another loopback
/// port) and the bait it points at, whose metadata is complete: a client that follows it
/// goes on to register there (or at `registration_endpoint`).
async fn mcp_and_bait(
    registration_endpoint: Option<&'static str>,
) -> (CountingServer, CountingServer) {
    let mcp_origin = Arc::new(OnceLock::new());
    let bait = bait_authorization_server(mcp_origin.clone(), registration_endpoint).await;
    let mcp = challenging_server(&format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        bait.origin()
    ))
    .await;
    let _ = mcp_origin.set(mcp.origin().to_owned());
    (mcp, bait)
}

fn remote_config(mcp: &CountingServer) -> String {
    config(json!({"remote": {"type": "http", "url": format!("{}/mcp", mcp.origin())}}))
        .display()
        .to_string()
}

const LOGIN_HINT: &str = "run `switchboard login remote`";

/// `tools`, `call` and `check` against a server whose 401 points at another loopback port:
/// no connection reaches that port, and each says to log in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_commands_never_discover_or_register() {
    let (mcp, bait) = mcp_and_bait(None).await;
    let config = remote_config(&mcp);
    let tokens = token_file("plain");
    let args = |words: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        args.extend(["--config".to_owned(), config.clone()]);
        args
    };
    let commands = [
        ("tools", args(&["tools", "remote"]), 3),
        (
            "call",
            args(&["call", "remote", "echo", r#"{"text":"hi"}"#]),
            3,
        ),
        ("check", args(&["check", "remote"]), 1),
    ];
    for (name, args, code) in commands {
        let tokens = tokens.clone();
        let run = tokio::task::spawn_blocking(move || switchboard(&args, &tokens, ""))
            .await
            .expect("run");
        let output = format!("{}{}", run.stdout, run.stderr);
        assert_eq!(run.code, code, "`{name}`: {output}");
        assert!(output.contains(LOGIN_HINT), "`{name}`: {output}");
        assert_eq!(
            bait.connections(),
            0,
            "`{name}` reached the address a 401 named: {:?}",
            bait.requests()
                .iter()
                .map(|r| r.head.lines().next().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        );
    }
    assert!(!mcp.requests().is_empty(), "the MCP server was asked");
    assert!(!tokens.exists(), "nothing was saved");
}

/// `serve` against the same server: the server is reported as needing a login, and the
/// address its 401 named is never reached (not at startup, not by restarts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_never_discovers_or_registers() {
    let (mcp, bait) = mcp_and_bait(None).await;
    let config = remote_config(&mcp);
    let tokens = token_file("serve");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "discovery-test", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let run = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["serve", "--config", &config])
            .env("SWITCHBOARD_TOKEN_FILE", &tokens)
            .env("SWITCHBOARD_ERA_MEMO", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn switchboard serve");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        writeln!(stdin, "{initialize}\n{initialized}\n{list}").expect("write");
        let mut lines = Vec::new();
        let started = Instant::now();
        while !lines.iter().any(|l: &String| l.contains("\"id\":2")) {
            let left = RUN_DEADLINE.saturating_sub(started.elapsed());
            match rx.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => break,
            }
        }
        drop(stdin);
        wait::exited(
            "switchboard serve to exit after stdin closed",
            RUN_DEADLINE,
            &mut child,
        );
        let output = child.wait_with_output().expect("output");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: lines.join("\n"),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    })
    .await
    .expect("run");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"tools\":[]"), "{}", run.stdout);
    assert!(run.stderr.contains(LOGIN_HINT), "{}", run.stderr);
    assert_eq!(
        bait.connections(),
        0,
        "the gateway reached the address a 401 named"
    );
}

/// `login` refuses metadata at addresses a loopback MCP server has no business naming: each
/// refusal names the URL and why, and exits 3 before any connection is made to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_refuses_hostile_resource_metadata() {
    let cases = [
        ("https://169.254.169.254/latest/meta-data/", "link-local"),
        (
            "https://[::ffff:10.0.0.1]/.well-known/oauth-protected-resource",
            "private",
        ),
        ("javascript:alert(1)", "javascript"),
    ];
    for (hostile, why) in cases {
        let mcp = challenging_server(hostile).await;
        let config = remote_config(&mcp);
        let tokens = token_file("login");
        let args: Vec<String> = ["login", "--config", &config, "remote", "--no-browser"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        let run = tokio::task::spawn_blocking(move || switchboard(&args, &tokens, ""))
            .await
            .expect("run");
        assert_eq!(run.code, 3, "{hostile}: {}", run.stderr);
        assert!(
            run.stderr.contains("refusing") && run.stderr.contains(why),
            "{hostile}: {}",
            run.stderr
        );
    }
}

/// `login` refuses an https registration endpoint on a link-local address, before posting
/// to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_refuses_a_link_local_registration_endpoint() {
    let (mcp, authorization_server) = mcp_and_bait(Some("https://169.254.169.254/register")).await;
    let config = remote_config(&mcp);
    let tokens = token_file("register");
    let args: Vec<String> = ["login", "--config", &config, "remote", "--no-browser"]
        .iter()
        .map(|w| (*w).to_owned())
        .collect();
    let run = tokio::task::spawn_blocking(move || switchboard(&args, &tokens, ""))
        .await
        .expect("run");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("registration endpoint")
            && run.stderr.contains("https://169.254.169.254/register")
            && run.stderr.contains("link-local"),
        "{}",
        run.stderr
    );
    assert!(
        !authorization_server
            .requests()
            .iter()
            .any(|r| r.method() == "POST"),
        "nothing was posted"
    );
}
