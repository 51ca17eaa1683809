//! Per-caller upstream credentials (`upstreamCredentials`): a gateway in front of an
//! OAuth-protected upstream (itself `switchboard serve --http --oauth-issuer`, fronting the
//! fixture and keeping an audit log of who called), with a loopback authorization server
//! that signs every token and offers token exchange (RFC 8693). What the upstream's audit
//! log says is who the upstream saw: each caller as itself, never the operator, never
//! another caller.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use expect_test::expect;
use serde_json::{Value, json};
use switchboard_auth::{SavedAuthorization, TokenStore};
use switchboard_session::EraChoice;
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::jwt::Signer;

use crate::serve_balanced::free_port;
use crate::serve_http::HttpGateway;
use crate::serve_policy::{connect, outcome};
use crate::{fixture_entry, scratch_dir};

/// The gateway's resource (the audience of the tokens its clients present).
const GATEWAY_RESOURCE: &str = "https://gateway.test/mcp";
const EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The client id a `clientMetadataUrl` entry presents (the document's own URL).
const CLIENT_METADATA_URL: &str = "https://switchboard.example/client.json";
/// The token a platform gave the workload (its `workloadIdentity.tokenFile`).
const WORKLOAD_TOKEN: &str = "workload-token-0123456789abcdef";
/// `gw:gw-secret`, as HTTP Basic.
const GATEWAY_CLIENT: &str = "Basic Z3c6Z3ctc2VjcmV0";
const CAROL_TOKEN: &str = "carol-token-0123456789abcdef";
const DAVE_TOKEN: &str = "dave-token-0123456789abcdef";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// A token of `issuer` for `subject` at `audience`.
pub(crate) fn token(signer: &Signer, issuer: &str, subject: &str, audience: &str) -> String {
    signer.token(
        &json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }),
        &json!({ "iss": issuer, "sub": subject, "aud": audience, "iat": now(), "exp": now() + 3600 }),
    )
}

/// A claim of a JWT, read without checking it (the authorization server's own tokens).
fn claim(jwt: &str, name: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims[name].as_str().map(str::to_owned)
}

pub(crate) fn form(request: &CannedRequest) -> Vec<(String, String)> {
    url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect()
}

pub(crate) fn field(request: &CannedRequest, name: &str) -> Option<String> {
    form(request)
        .into_iter()
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// The refresh tokens an authorization server issued: whose each is, and whether it was
/// used. It rotates them (each refresh gives a new one) and treats a reuse as theft: the
/// refresh is refused, the reuse counted, and the whole family (every refresh token of
/// that subject) revoked.
#[derive(Default)]
struct RefreshBook {
    subjects: std::collections::HashMap<String, String>,
    used: std::collections::HashSet<String>,
    revoked: std::collections::HashSet<String>,
    refreshes: usize,
    reuses: usize,
    /// How long a refresh takes to answer (a slow authorization server widens the window
    /// in which two processes would both refresh).
    delay: std::time::Duration,
}

impl RefreshBook {
    fn issue(&mut self, subject: &str) -> String {
        let token = format!("refresh-{}-{subject}", self.subjects.len());
        self.subjects.insert(token.clone(), subject.to_owned());
        token
    }

    /// The subject of an unused refresh token, now used; `None` for a reuse or a stranger.
    fn spend(&mut self, token: &str) -> Option<String> {
        let subject = self.subjects.get(token).cloned();
        if !self.used.insert(token.to_owned()) {
            self.reuses += 1;
            self.revoked.extend(subject);
            return None;
        }
        let subject = subject.filter(|subject| !self.revoked.contains(subject))?;
        self.refreshes += 1;
        Some(subject)
    }
}

fn locked(book: &Mutex<RefreshBook>) -> std::sync::MutexGuard<'_, RefreshBook> {
    book.lock().unwrap_or_else(|p| p.into_inner())
}

/// The authorization server: metadata offering token exchange, its keys, and a token
/// endpoint that exchanges a token it signed for the gateway for one for the resource
/// asked, for the same subject, when the gateway's client authenticates; that
/// refreshes (rotating, 2-second access tokens) the refresh tokens in `book`; and that
/// takes [`WORKLOAD_TOKEN`] as a JWT-bearer assertion from the client
/// [`CLIENT_METADATA_URL`] names (it accepts client metadata documents).
async fn authorization_server(
    signer: Arc<Signer>,
    book: Arc<Mutex<RefreshBook>>,
) -> CountingServer {
    let keys = json!({ "keys": [signer.jwk()] });
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let body = match request.path() {
            "/.well-known/oauth-authorization-server" => json!({
                "issuer": origin,
                "jwks_uri": format!("{origin}/jwks"),
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "grant_types_supported": ["authorization_code", EXCHANGE_GRANT, JWT_BEARER_GRANT],
                "client_id_metadata_document_supported": true,
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            }),
            "/jwks" => keys.clone(),
            "/token" if field(request, "grant_type").as_deref() == Some("refresh_token") => {
                let (spent, delay) = {
                    let mut book = locked(&book);
                    let spent =
                        field(request, "refresh_token").and_then(|token| book.spend(&token));
                    (spent, book.delay)
                };
                std::thread::sleep(delay);
                let (Some(subject), Some(resource)) = (spent, field(request, "resource")) else {
                    let error = json!({ "error": "invalid_grant" }).to_string();
                    return canned::answer("400 Bad Request", "application/json", &error);
                };
                json!({
                    "access_token": token(&signer, origin, &subject, &resource),
                    "refresh_token": locked(&book).issue(&subject),
                    "token_type": "Bearer",
                    "expires_in": 2,
                })
            }
            "/token" if field(request, "grant_type").as_deref() == Some(JWT_BEARER_GRANT) => {
                let known = field(request, "assertion").as_deref() == Some(WORKLOAD_TOKEN)
                    && field(request, "client_id").as_deref() == Some(CLIENT_METADATA_URL);
                let (true, Some(resource)) = (known, field(request, "resource")) else {
                    let error = json!({ "error": "invalid_grant" }).to_string();
                    return canned::answer("400 Bad Request", "application/json", &error);
                };
                json!({
                    "access_token": token(&signer, origin, "workload", &resource),
                    "token_type": "Bearer",
                    "expires_in": 3600,
                })
            }
            "/token" => {
                let authenticated = request.head.lines().any(|line| {
                    line.eq_ignore_ascii_case(&format!("authorization: {GATEWAY_CLIENT}"))
                });
                let subject = field(request, "subject_token")
                    .filter(|token| claim(token, "aud").as_deref() == Some(GATEWAY_RESOURCE))
                    .and_then(|token| claim(&token, "sub"));
                let (Some(resource), Some(subject), true, Some(EXCHANGE_GRANT)) = (
                    field(request, "resource"),
                    subject,
                    authenticated,
                    field(request, "grant_type").as_deref(),
                ) else {
                    let error = json!({ "error": "invalid_grant" }).to_string();
                    return canned::answer("400 Bad Request", "application/json", &error);
                };
                json!({
                    "access_token": token(&signer, origin, &subject, &resource),
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
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

/// A folder only this user may use, as a token file's must be.
pub(crate) fn private(dir: &Path) -> PathBuf {
    let private = dir.join("private");
    std::fs::create_dir_all(&private).expect("mkdir");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    private
}

pub(crate) fn write_config(path: &Path, root: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(root).expect("json")).expect("write");
}

/// Who the upstream's audit log says called which tool, line by line.
fn callers_seen(audit: &Path) -> String {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|record| {
            format!(
                "{} {}",
                record["identity"].as_str().unwrap_or("?"),
                record["tool"].as_str().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The upstream: the fixture behind OAuth (`issuer`'s tokens for its own URL), recording
/// who called in its audit log.
pub(crate) struct Upstream {
    server: HttpGateway,
    pub(crate) url: String,
    audit: PathBuf,
}

impl Upstream {
    pub(crate) fn start(dir: &Path, issuer: &CountingServer) -> Upstream {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let config = dir.join("upstream.json");
        write_config(
            &config,
            &json!({ "mcpServers": { "fx": fixture_entry(&[]) } }),
        );
        let audit = dir.join("upstream-audit.jsonl");
        let server = HttpGateway::launch(
            &[
                "serve",
                "--http",
                &format!("127.0.0.1:{port}"),
                "--config",
                config.to_str().expect("UTF-8"),
                "--server",
                "fx",
                "--no-prefix",
                "--oauth-issuer",
                issuer.origin(),
                "--resource-url",
                &url,
                "--audit",
                audit.to_str().expect("UTF-8"),
            ],
            &[],
            "switchboard serve: listening on ",
        );
        Upstream { server, url, audit }
    }
}

/// `switchboard call --config CONFIG remote echo text=TEXT` with this token file, in a
/// blocking thread of its own (it is a separate process).
fn call_process(config: &Path, tokens: &Path, text: String) -> tokio::task::JoinHandle<crate::Run> {
    let config = config.to_str().expect("UTF-8").to_owned();
    let token_file = tokens.to_str().expect("UTF-8").to_owned();
    tokio::task::spawn_blocking(move || {
        crate::switchboard_with_env(
            &[
                "call",
                "--config",
                &config,
                "remote",
                "echo",
                &format!("text={text}"),
            ],
            &[("SWITCHBOARD_TOKEN_FILE", token_file.as_str())],
        )
    })
}

/// An authorization server keeping `book`, the upstream behind it, a config naming the
/// upstream `remote`, and a private folder for a token file.
struct OneRemote {
    signer: Arc<Signer>,
    book: Arc<Mutex<RefreshBook>>,
    issuer: CountingServer,
    upstream: Upstream,
    config: PathBuf,
    tokens: PathBuf,
}

impl OneRemote {
    async fn start(name: &str, book: RefreshBook) -> OneRemote {
        let signer = Arc::new(Signer::new("k1"));
        let book = Arc::new(Mutex::new(book));
        let issuer = authorization_server(signer.clone(), book.clone()).await;
        let dir = scratch_dir(name);
        let upstream = Upstream::start(&dir, &issuer);
        let config = dir.join("mcp.json");
        write_config(
            &config,
            &json!({ "mcpServers": { "remote": { "url": upstream.url } } }),
        );
        let tokens = private(&dir).join("tokens.json");
        OneRemote {
            signer,
            book,
            issuer,
            upstream,
            config,
            tokens,
        }
    }
}

/// The refresh tokens were renewed, none was used twice, and nothing was revoked.
fn renewed_without_reuse(book: &RefreshBook) {
    assert_eq!(book.reuses, 0, "no refresh token used twice");
    assert!(book.revoked.is_empty(), "no family revoked");
    assert!(
        book.refreshes >= 2,
        "the tokens were renewed: {}",
        book.refreshes
    );
}

/// A login saved in `tokens` for the upstream at `url`: the operator's own (`None`) or
/// one kept for a client.
struct Login<'a> {
    url: &'a str,
    issuer: &'a str,
    on_behalf_of: Option<&'a str>,
    access_token: String,
    refresh_token: Option<String>,
    expires_at: u64,
}

fn save_login(tokens: &Path, login: Login<'_>) {
    TokenStore::new(tokens)
        .save(&SavedAuthorization {
            server_url: login.url.to_owned(),
            issuer: login.issuer.to_owned(),
            client_id: "operator-app".into(),
            auth_method: "none".into(),
            access_token: login.access_token,
            refresh_token: login.refresh_token,
            expires_at: Some(login.expires_at),
            token_endpoint: Some(format!("{}/token", login.issuer)),
            on_behalf_of: login.on_behalf_of.map(str::to_owned),
            ..SavedAuthorization::default()
        })
        .expect("save a login");
}

/// How long the gateway, the shell and the `call` loop share one login: thirty lifetimes
/// of its 2-second access tokens.
const SHARED_LOGIN_RUN: std::time::Duration = std::time::Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_a_shell_and_call_processes_share_one_rotating_login_for_a_minute() {
    let remote = OneRemote::start(
        "serve-credentials-turns",
        RefreshBook {
            delay: std::time::Duration::from_millis(300),
            ..RefreshBook::default()
        },
    )
    .await;
    let OneRemote {
        signer,
        book,
        issuer,
        upstream,
        config,
        tokens,
    } = &remote;
    // The user's own login: an access token already expired and a refresh token.
    let first_refresh = locked(book).issue("user");
    save_login(
        tokens,
        Login {
            url: &upstream.url,
            issuer: issuer.origin(),
            on_behalf_of: None,
            access_token: token(signer, issuer.origin(), "user", &upstream.url),
            refresh_token: Some(first_refresh),
            expires_at: now().saturating_sub(10),
        },
    );
    let token_file = tokens.to_str().expect("UTF-8").to_owned();
    let environment = [("SWITCHBOARD_TOKEN_FILE", token_file.as_str())];
    let gateway = crate::serve::gateway_with_env(config, &[], &environment).await;
    let until = std::time::Instant::now() + SHARED_LOGIN_RUN;
    // A shell answering one call after another, on its own connection.
    let shell = {
        let (config, token_file) = (config.clone(), token_file.clone());
        std::thread::spawn(move || {
            let environment = [("SWITCHBOARD_TOKEN_FILE", token_file.as_str())];
            let mut shell = crate::shell::PipedShell::start_with_env(&config, &environment);
            let mut answered = 0;
            while std::time::Instant::now() < until {
                shell.send(&format!("call remote echo text=shell{answered}x\n"));
                shell.wait_for(&format!("shell{answered}x"));
                answered += 1;
                std::thread::sleep(std::time::Duration::from_millis(150));
            }
            (answered, shell.end())
        })
    };
    // A loop of `call` processes, one after another.
    let calls = {
        let (config, tokens) = (config.clone(), tokens.clone());
        tokio::spawn(async move {
            let mut failed = Vec::new();
            let mut answered = 0;
            while std::time::Instant::now() < until {
                let call = call_process(&config, &tokens, format!("c{answered}"));
                let call = call.await.expect("the call process ran");
                match call.code {
                    0 => answered += 1,
                    _ => failed.push(call.stderr),
                }
            }
            (answered, failed)
        })
    };
    // The gateway's client, one call after another.
    let mut gateway_answers = 0;
    let mut gateway_failures = Vec::new();
    while std::time::Instant::now() < until {
        let answer = outcome(
            &gateway,
            "remote__echo",
            json!({ "text": format!("g{gateway_answers}") }),
        )
        .await;
        match answer.starts_with("ok ") {
            true => gateway_answers += 1,
            false => gateway_failures.push(answer),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (call_answers, call_failures) = calls.await.expect("the call loop ran");
    let (shell_answers, shell_ended) = shell.join().expect("the shell ran");
    assert_eq!(
        gateway_failures,
        Vec::<String>::new(),
        "every gateway call answered"
    );
    assert_eq!(
        call_failures,
        Vec::<String>::new(),
        "every call process answered"
    );
    assert_eq!(shell_ended.code, Some(0), "{}", shell_ended.stderr);
    assert!(
        !shell_ended.stderr.contains("error") && !shell_ended.stderr.contains("login"),
        "every shell call answered: {}",
        shell_ended.stderr
    );
    assert!(
        gateway_answers > 0 && call_answers > 0 && shell_answers > 0,
        "all three used the server: {gateway_answers} {call_answers} {shell_answers}"
    );
    let book = locked(book);
    renewed_without_reuse(&book);
    assert!(
        book.refreshes >= 10,
        "the login was renewed all along: {} renewals",
        book.refreshes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_ends_in_one_message_naming_the_login() {
    let remote = OneRemote::start("serve-credentials-refused", RefreshBook::default()).await;
    let OneRemote {
        signer,
        issuer,
        upstream,
        config,
        tokens,
        ..
    } = &remote;
    // A login whose access token expired long ago (past the server's clock leeway) and
    // whose refresh token the authorization server no longer knows (revoked).
    let expired = signer.token(
        &json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }),
        &json!({ "iss": issuer.origin(), "sub": "user", "aud": upstream.url,
                 "iat": now() - 7200, "exp": now() - 3600 }),
    );
    save_login(
        tokens,
        Login {
            url: &upstream.url,
            issuer: issuer.origin(),
            on_behalf_of: None,
            access_token: expired,
            refresh_token: Some("revoked-refresh-token".into()),
            expires_at: now() - 3600,
        },
    );
    let call = call_process(config, tokens, "hi".to_owned())
        .await
        .expect("the call process ran");
    let attempts = issuer
        .requests()
        .iter()
        .filter(|request| field(request, "grant_type").as_deref() == Some("refresh_token"))
        .count();
    assert_eq!(call.code, 3, "{}", call.stderr);
    assert!(
        call.stderr.contains("run `switchboard login remote`"),
        "{}",
        call.stderr
    );
    assert!(
        (1..=2).contains(&attempts),
        "the refresh is tried a bounded number of times, not in a loop: {attempts}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_renew_a_clients_rotating_tokens_once_through_redis() {
    let signer = Arc::new(Signer::new("k1"));
    let book = Arc::new(Mutex::new(RefreshBook::default()));
    let issuer = authorization_server(signer.clone(), book.clone()).await;
    let dir = scratch_dir("serve-credentials-shared");
    let upstream = Upstream::start(&dir, &issuer);
    let redis = crate::serve_state::Redis::start("serve-credentials-redis");
    let config = dir.join("named.json");
    write_config(
        &config,
        &json!({
            "mcpServers": { "remote": { "url": upstream.url } },
            "clients": { "carol": { "token": CAROL_TOKEN } },
            "upstreamCredentials": { "remote": {} }
        }),
    );
    // Two hosts, each with its own token file holding the same login of carol's: an
    // access token already expired and the refresh token the authorization server gave.
    let first_refresh = locked(&book).issue("carol");
    let instances: Vec<HttpGateway> = ["a", "b"]
        .iter()
        .map(|host| {
            let tokens = private(&dir.join(host)).join("tokens.json");
            save_login(
                &tokens,
                Login {
                    url: &upstream.url,
                    issuer: issuer.origin(),
                    on_behalf_of: None,
                    access_token: token(&signer, issuer.origin(), "operator", &upstream.url),
                    refresh_token: None,
                    expires_at: now() + 3600,
                },
            );
            save_login(
                &tokens,
                Login {
                    url: &upstream.url,
                    issuer: issuer.origin(),
                    on_behalf_of: Some("client:carol"),
                    access_token: token(&signer, issuer.origin(), "carol", &upstream.url),
                    refresh_token: Some(first_refresh.clone()),
                    expires_at: now().saturating_sub(10),
                },
            );
            let token_file = tokens.to_str().expect("UTF-8").to_owned();
            HttpGateway::start(
                &config,
                &["--state", &redis.url()],
                &[("SWITCHBOARD_TOKEN_FILE", token_file.as_str())],
            )
        })
        .collect();
    let mut sessions = Vec::new();
    for instance in &instances {
        sessions.push(connect(instance.url(), CAROL_TOKEN, EraChoice::Legacy).await);
    }
    // Carol calls through both instances in turn while her 2-second access tokens expire.
    let mut answers = Vec::new();
    for turn in 0..8 {
        let session = &sessions[turn % 2];
        answers.push(
            outcome(
                session,
                "remote__echo",
                json!({ "text": format!("c{turn}") }),
            )
            .await,
        );
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    }
    let book = locked(&book);
    assert_eq!(
        answers
            .iter()
            .filter(|answer| answer.starts_with("ok "))
            .count(),
        8,
        "every call answered: {answers:?}"
    );
    renewed_without_reuse(&book);
    // Redis names the shared tokens by a digest: no client, server or token in a key.
    let keys = redis.cli(&["--scan", "--pattern", "switchboard:tok*"]);
    assert!(!keys.is_empty(), "the tokens are shared through Redis");
    for key in &keys {
        assert!(
            !key.contains("carol") && !key.contains("127.0.0.1"),
            "{key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_reaches_the_upstream_as_itself_never_as_the_operator_or_another() {
    let signer = Arc::new(Signer::new("k1"));
    let issuer = authorization_server(signer.clone(), Arc::default()).await;
    let dir = scratch_dir("serve-credentials");
    let tokens = private(&dir).join("tokens.json");
    let token_file = tokens.to_str().expect("UTF-8").to_owned();

    let Upstream {
        server: mut upstream,
        url: upstream_url,
        audit,
    } = Upstream::start(&dir, &issuer);

    // The operator's own login (the catalog) and one stored for the named client carol.
    for (on_behalf_of, subject) in [(None, "operator"), (Some("client:carol"), "carol-stored")] {
        save_login(
            &tokens,
            Login {
                url: &upstream_url,
                issuer: issuer.origin(),
                on_behalf_of,
                access_token: token(&signer, issuer.origin(), subject, &upstream_url),
                refresh_token: None,
                expires_at: now() + 3600,
            },
        );
    }
    let exchange = json!({
        "issuer": issuer.origin(), "clientId": "gw", "clientSecret": "${SB_GW_SECRET}"
    });
    let environment = [
        ("SWITCHBOARD_TOKEN_FILE", token_file.as_str()),
        ("SB_GW_SECRET", "gw-secret"),
    ];

    // OAuth clients: their tokens are exchanged.
    let oauth_config = dir.join("oauth.json");
    write_config(
        &oauth_config,
        &json!({
            "mcpServers": { "remote": { "url": upstream_url } },
            "upstreamCredentials": { "remote": { "exchange": exchange } }
        }),
    );
    let oauth_gateway = HttpGateway::start(
        &oauth_config,
        &[
            "--oauth-issuer",
            issuer.origin(),
            "--resource-url",
            GATEWAY_RESOURCE,
        ],
        &environment,
    );
    let alice_token = token(&signer, issuer.origin(), "alice", GATEWAY_RESOURCE);
    let bob_token = token(&signer, issuer.origin(), "bob", GATEWAY_RESOURCE);
    let alice = connect(oauth_gateway.url(), &alice_token, EraChoice::Legacy).await;
    let bob = connect(oauth_gateway.url(), &bob_token, EraChoice::Modern).await;
    let mut answers = Vec::new();
    for (session, text) in [(&alice, "a1"), (&bob, "b1"), (&alice, "a2"), (&bob, "b2")] {
        answers.push(outcome(session, "remote__echo", json!({ "text": text })).await);
    }

    // Named clients: stored logins only (they have no token to exchange).
    let named_config = dir.join("named.json");
    write_config(
        &named_config,
        &json!({
            "mcpServers": { "remote": { "url": upstream_url } },
            "clients": { "carol": { "token": CAROL_TOKEN }, "dave": { "token": DAVE_TOKEN } },
            "upstreamCredentials": { "remote": { "exchange": exchange } }
        }),
    );
    let named_gateway = HttpGateway::start(&named_config, &[], &environment);
    let carol = connect(named_gateway.url(), CAROL_TOKEN, EraChoice::Legacy).await;
    let dave = connect(named_gateway.url(), DAVE_TOKEN, EraChoice::Legacy).await;
    answers.push(outcome(&carol, "remote__echo", json!({ "text": "c1" })).await);
    answers.push(outcome(&dave, "remote__echo", json!({ "text": "d1" })).await);

    // An upstream whose authorization server is not the one trusted: nothing is sent.
    let untrusting_config = dir.join("untrusting.json");
    let mut elsewhere = exchange.clone();
    elsewhere["issuer"] = json!("https://idp.elsewhere.test");
    write_config(
        &untrusting_config,
        &json!({
            "mcpServers": { "remote": { "url": upstream_url } },
            "upstreamCredentials": { "remote": { "exchange": elsewhere } }
        }),
    );
    let exchanges_before = exchanges(&issuer);
    let untrusting = HttpGateway::start(
        &untrusting_config,
        &[
            "--oauth-issuer",
            issuer.origin(),
            "--resource-url",
            GATEWAY_RESOURCE,
        ],
        &environment,
    );
    let erin_token = token(&signer, issuer.origin(), "erin", GATEWAY_RESOURCE);
    let erin = connect(untrusting.url(), &erin_token, EraChoice::Legacy).await;
    answers.push(outcome(&erin, "remote__echo", json!({ "text": "e1" })).await);
    assert_eq!(
        exchanges(&issuer),
        exchanges_before,
        "no token goes to an authorization server the operator did not name"
    );

    let answers = answers.join("\n").replace(&upstream_url, "UPSTREAM");
    let answers = answers.replace(issuer.origin(), "ISSUER");
    expect![[r#"
        ok "a1"
        ok "b1"
        ok "a2"
        ok "b2"
        ok "c1"
        server `gw` answered `tools/call` with an error: `remote` has no credentials for `client:dave`: on the gateway's host, run `switchboard login remote --as client:dave` (only a client with an OAuth token can have it exchanged) (code -32011), data: {"server":"remote","identity":"client:dave"}
        server `gw` answered `tools/call` with an error: `remote` could not be reached as `subject:erin`: server `remote` gave no answer to `initialize`: authorization failed: the server's authorization server is `ISSUER`, not `https://idp.elsewhere.test` where this gateway exchanges its clients' tokens; no token was sent to it (code -32011), data: {"server":"remote","identity":"subject:erin"}"#]]
    .assert_eq(&answers);
    // One exchange per caller: a caller's session is kept and reused.
    assert_eq!(exchanges(&issuer), 2, "alice's and bob's tokens, once each");

    upstream.terminate();
    expect![[r#"
        alice echo
        bob echo
        alice echo
        bob echo
        carol-stored echo"#]]
    .assert_eq(&callers_seen(&audit));
}

/// Token-exchange requests the authorization server received.
fn exchanges(issuer: &CountingServer) -> usize {
    issuer
        .requests()
        .iter()
        .filter(|request| request.path() == "/token")
        .filter(|request| field(request, "grant_type").as_deref() == Some(EXCHANGE_GRANT))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_identity_entry_needs_no_login_and_names_its_client_by_its_metadata_url() {
    let remote = OneRemote::start("serve-credentials-workload", RefreshBook::default()).await;
    let OneRemote {
        issuer,
        upstream,
        config,
        tokens,
        ..
    } = &remote;
    let dir = config.parent().expect("folder");
    let entry = |token_file: &str| {
        json!({ "mcpServers": { "remote": {
            "url": upstream.url,
            "clientMetadataUrl": CLIENT_METADATA_URL,
            "workloadIdentity": { "tokenFile": token_file },
        } } })
    };
    std::fs::write(dir.join("workload-token"), format!("{WORKLOAD_TOKEN}\n")).expect("token");
    std::fs::write(dir.join("other-token"), "someone-else-entirely").expect("token");
    // No login saved: the entry's workload identity is presented, as the client its
    // metadata document names.
    write_config(config, &entry("workload-token"));
    let call = call_process(config, tokens, "hi".to_owned())
        .await
        .expect("the call process ran");
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert_eq!(callers_seen(&upstream.audit).lines().count(), 1);
    let assertions = issuer
        .requests()
        .iter()
        .filter(|request| field(request, "grant_type").as_deref() == Some(JWT_BEARER_GRANT))
        .count();
    assert_eq!(assertions, 1, "one token obtained");
    // A token the authorization server does not take: one clear failure, no browser, no
    // token shown.
    let _ = std::fs::remove_file(tokens);
    write_config(config, &entry("other-token"));
    let refused = call_process(config, tokens, "hi".to_owned())
        .await
        .expect("the call process ran");
    assert_ne!(refused.code, 0);
    assert!(
        !refused.stderr.contains("someone-else-entirely"),
        "{}",
        refused.stderr
    );
    let first_line = refused.stderr.lines().next().unwrap_or("").to_owned();
    expect!["switchboard: server `remote` gave no answer to `initialize`: authorization failed: the token request was refused (400 Bad Request): invalid_grant"].assert_eq(&first_line.replace(issuer.origin(), "<issuer>").replace(&upstream.url, "<url>"));
}
