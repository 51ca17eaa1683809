//! What a challenge may make the client fetch. A saved-login client follows nothing a 401
//! names; a login refuses URLs outside the MCP server's own address class with a typed
//! error naming the URL, before sending anything to them. Hostile addresses that would
//! answer are counted loopback servers, so "nothing reached it" is observed, not assumed.

use std::sync::{Arc, OnceLock};

use expect_test::expect;
use serde_json::json;
use switchboard_auth::{
    Acquire, AddressClass, AuthError, FollowRedirectDriver, LoginNeeded, OAuthClient, OAuthConfig,
    SavedAuthorization, StoreBinding, TokenStore, UrlRole,
};
use switchboard_http::AuthChallenge;
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

pub(crate) fn config(acquire: Acquire, store: Option<StoreBinding>) -> OAuthConfig {
    OAuthConfig {
        client_name: "switchboard tests".into(),
        redirect_uri: "http://127.0.0.1:1/callback".into(),
        pre_registered: None,
        client_metadata_url: None,
        want_refresh_tokens: true,
        max_step_ups: 2,
        acquire,
        identity_assertion: None,
        workload_identity: None,
        store,
    }
}

fn saved_login() -> Acquire {
    Acquire::SavedLogin {
        server_name: "remote".into(),
        login_command: "switchboard login remote".into(),
    }
}

fn login() -> Acquire {
    Acquire::Authorize(Arc::new(FollowRedirectDriver::new().expect("driver")))
}

/// A token file in a fresh directory private to this user.
pub(crate) fn token_file(name: &str) -> std::path::PathBuf {
    let dir = switchboard_testkit::locate::workspace_root()
        .join("target/auth-tests")
        .join(format!("discovery-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
    dir.join("tokens.json")
}

pub(crate) fn challenge(
    status: u16,
    www_authenticate: &str,
    resource: &str,
    presented: Option<&str>,
) -> AuthChallenge {
    AuthChallenge {
        status,
        www_authenticate: Some(www_authenticate.to_owned()),
        dpop_nonce: None,
        resource: resource.to_owned(),
        presented: presented.map(str::to_owned),
    }
}

/// Authorization-server metadata at `origin`: its endpoints there, PKCE with S256.
pub(crate) fn server_metadata(origin: &str) -> serde_json::Value {
    json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "code_challenge_methods_supported": ["S256"],
    })
}

/// A complete authorization server: resource metadata for `mcp/mcp` (filled in once known),
/// its own metadata with `endpoints` overriding the defaults, registration and tokens.
async fn authorization_server(
    mcp: Arc<OnceLock<String>>,
    endpoints: serde_json::Value,
) -> CountingServer {
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let mcp = mcp.get().cloned().unwrap_or_default();
        let body = match request.path() {
            path if path.starts_with("/.well-known/oauth-protected-resource") => json!({
                "resource": format!("{mcp}/mcp"),
                "authorization_servers": [endpoints.get("issuer").and_then(|v| v.as_str()).unwrap_or(origin)],
            }),
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = server_metadata(origin);
                if let (Some(metadata), Some(endpoints)) =
                    (metadata.as_object_mut(), endpoints.as_object())
                {
                    for (name, value) in endpoints {
                        if name != "issuer" {
                            metadata.insert(name.clone(), value.clone());
                        }
                    }
                }
                metadata
            }
            "/register" => json!({"client_id": "registered"}),
            "/token" => json!({"access_token": "issued", "token_type": "Bearer"}),
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

fn paths(server: &CountingServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method(), r.path()))
        .collect()
}

#[tokio::test]
async fn a_saved_login_client_follows_nothing_a_challenge_names() {
    let bait = authorization_server(Arc::new(OnceLock::new()), json!({})).await;
    let named = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        bait.origin()
    );
    let server_url = format!("{}/mcp", bait.origin());

    // Nothing saved.
    let file = token_file("nothing-saved");
    let store = StoreBinding {
        store: TokenStore::new(&file),
        server_url: server_url.clone(),
        on_behalf_of: None,
        shared: None,
    };
    let client = OAuthClient::new(config(saved_login(), Some(store))).expect("client");
    let refused = within(
        "the answer",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &server_url, None)),
    )
    .await
    .expect_err("no login");
    assert!(
        matches!(
            &refused,
            AuthError::NeedsLogin { server, reason: LoginNeeded::NotLoggedIn, .. } if server == "remote"
        ),
        "{refused:?}"
    );
    expect!["server `remote` needs you to log in first: run `switchboard login remote`"]
        .assert_eq(&refused.to_string());

    // A saved login the server refuses, with nothing to refresh it with; then a step-up.
    let file = token_file("refused");
    TokenStore::new(&file)
        .save(&SavedAuthorization {
            server_url: server_url.clone(),
            issuer: bait.origin().to_owned(),
            client_id: "c".into(),
            auth_method: "none".into(),
            access_token: "stale".into(),
            ..Default::default()
        })
        .expect("seed");
    let store = StoreBinding {
        store: TokenStore::new(&file),
        server_url: server_url.clone(),
        on_behalf_of: None,
        shared: None,
    };
    let client = OAuthClient::new(config(saved_login(), Some(store))).expect("client");
    let refused = within(
        "the answer",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &server_url, Some("Bearer stale"))),
    )
    .await
    .expect_err("a refused login");
    assert!(refused.is_needs_login(), "{refused:?}");
    let step_up = format!("{named}, error=\"insufficient_scope\", scope=\"files:write\"");
    let refused = within(
        "the answer",
        TEST_DEADLINE,
        client.answer_challenge(challenge(403, &step_up, &server_url, Some("Bearer stale"))),
    )
    .await
    .expect_err("more scope");
    expect!["server `remote` asks for more scope (files:write) than its saved login has; log in again: run `switchboard login remote`"]
        .assert_eq(&refused.to_string());

    assert_eq!(paths(&bait), Vec::<String>::new(), "the bait was reached");
}

/// A saved login with a refresh token is refreshed at the token endpoint saved with it,
/// and only there; a refused refresh ends in the login hint.
#[tokio::test]
async fn a_saved_login_refreshes_only_at_its_saved_token_endpoint() {
    let bait = authorization_server(Arc::new(OnceLock::new()), json!({})).await;
    let token_endpoint = CountingServer::start(canned::answer(
        "400 Bad Request",
        "application/json",
        r#"{"error":"invalid_grant"}"#,
    ))
    .await;
    let server_url = format!("{}/mcp", bait.origin());
    let file = token_file("refresh");
    TokenStore::new(&file)
        .save(&SavedAuthorization {
            server_url: server_url.clone(),
            issuer: token_endpoint.origin().to_owned(),
            client_id: "c".into(),
            auth_method: "none".into(),
            access_token: "stale".into(),
            refresh_token: Some("refresh-0".into()),
            token_endpoint: Some(format!("{}/token", token_endpoint.origin())),
            resource: Some(server_url.clone()),
            ..Default::default()
        })
        .expect("seed");
    let store = StoreBinding {
        store: TokenStore::new(&file),
        server_url: server_url.clone(),
        on_behalf_of: None,
        shared: None,
    };
    let client = OAuthClient::new(config(saved_login(), Some(store))).expect("client");
    let named = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        bait.origin()
    );
    let refused = within(
        "the answer",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &server_url, Some("Bearer stale"))),
    )
    .await
    .expect_err("a refused refresh");
    assert!(
        matches!(
            refused,
            AuthError::NeedsLogin {
                reason: LoginNeeded::Rejected,
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(paths(&token_endpoint), ["POST /token"]);
    assert_eq!(paths(&bait), Vec::<String>::new(), "the bait was reached");
}

/// Runs a login's answer to a 401 naming `resource_metadata`, for a server at `server_url`.
async fn login_refusal(server_url: &str, resource_metadata: &str) -> AuthError {
    let client = OAuthClient::new(config(login(), None)).expect("client");
    let named = format!("Bearer resource_metadata=\"{resource_metadata}\"");
    within(
        "the answer",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, server_url, None)),
    )
    .await
    .expect_err("a refusal")
}

/// Resource metadata a login refuses, for a server on the internet (an address literal:
/// nothing is connected to) and one on loopback. The loopback address is a counted server.
#[tokio::test]
async fn a_login_refuses_resource_metadata_outside_the_servers_class() {
    let bait = authorization_server(Arc::new(OnceLock::new()), json!({})).await;
    let port = bait.port();
    let public = "https://203.0.113.9/mcp";
    let loopback = format!("{}/mcp", bait.origin());
    let cases = [
        (
            public,
            "http://203.0.113.9/.well-known/oauth-protected-resource".to_owned(),
        ),
        (
            public,
            format!("https://127.0.0.1:{port}/.well-known/oauth-protected-resource"),
        ),
        (
            public,
            format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource"),
        ),
        (public, format!("https://2130706433:{port}/")),
        (public, format!("https://0x7f.0.0.1:{port}/")),
        (public, format!("https://localhost.:{port}/")),
        (public, format!("https://[::ffff:127.0.0.1]:{port}/")),
        (
            public,
            "https://10.0.0.1/.well-known/oauth-protected-resource".to_owned(),
        ),
        (public, "https://[::ffff:10.0.0.1]/".to_owned()),
        (public, "https://[fd12::1]/".to_owned()),
        (
            public,
            "https://169.254.169.254/latest/meta-data/".to_owned(),
        ),
        (public, "https://[::ffff:169.254.169.254]/".to_owned()),
        (public, "https://0.0.0.0/".to_owned()),
        (public, "javascript:alert(1)".to_owned()),
        (public, "file:///etc/passwd".to_owned()),
        (loopback.as_str(), "https://192.168.1.1/".to_owned()),
        (loopback.as_str(), "https://[fe80::1]/".to_owned()),
        (
            loopback.as_str(),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
        ),
    ];
    let mut table = String::new();
    for (server, hostile) in &cases {
        let refused = login_refusal(server, hostile).await;
        let (role, url, reason) = refused
            .refused_url()
            .unwrap_or_else(|| panic!("{hostile}: not a refusal: {refused:?}"));
        assert_eq!(role, UrlRole::ResourceMetadata);
        assert!(!url.is_empty());
        if hostile.contains("169.254") || hostile.contains("fe80") {
            assert_eq!(reason.address_class(), Some(AddressClass::LinkLocal));
        }
        let server = if *server == public {
            "public"
        } else {
            "loopback"
        };
        table.push_str(&format!(
            "{server}: {}\n",
            refused.to_string().replace(&port.to_string(), "PORT")
        ));
    }
    expect![[r#"
        public: refusing the resource metadata URL http://203.0.113.9/.well-known/oauth-protected-resource: plain http is allowed only on loopback, for an MCP server that is itself on loopback
        public: refusing the resource metadata URL https://127.0.0.1:PORT/.well-known/oauth-protected-resource: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL http://127.0.0.1:PORT/.well-known/oauth-protected-resource: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL https://127.0.0.1:PORT/: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL https://127.0.0.1:PORT/: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL https://localhost.:PORT/: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL https://[::ffff:7f00:1]:PORT/: its host is a loopback address, and the MCP server is not on loopback
        public: refusing the resource metadata URL https://10.0.0.1/.well-known/oauth-protected-resource: its host is a private-network address, and the MCP server is not on a private network
        public: refusing the resource metadata URL https://[::ffff:a00:1]/: its host is a private-network address, and the MCP server is not on a private network
        public: refusing the resource metadata URL https://[fd12::1]/: its host is a private-network address, and the MCP server is not on a private network
        public: refusing the resource metadata URL https://169.254.169.254/latest/meta-data/: its host is a link-local address (cloud metadata services answer there), never contacted
        public: refusing the resource metadata URL https://[::ffff:a9fe:a9fe]/: its host is a link-local address (cloud metadata services answer there), never contacted
        public: refusing the resource metadata URL https://0.0.0.0/: its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
        public: refusing the resource metadata URL javascript:alert(1): only https URLs are followed, not `javascript:`
        public: refusing the resource metadata URL file:///etc/passwd: only https URLs are followed, not `file:`
        loopback: refusing the resource metadata URL https://192.168.1.1/: its host is a private-network address, and the MCP server is not on a private network
        loopback: refusing the resource metadata URL https://[fe80::1]/: its host is a link-local address (cloud metadata services answer there), never contacted
        loopback: refusing the resource metadata URL http://169.254.169.254/latest/meta-data/: its host is a link-local address (cloud metadata services answer there), never contacted
    "#]].assert_eq(&table);
    assert_eq!(bait.connections(), 0, "a refused address was reached");
}

/// Endpoints in the authorization server's metadata that a login refuses, before sending
/// anything to them (the authorization server itself is a legitimate loopback one).
#[tokio::test]
async fn a_login_refuses_endpoints_outside_the_servers_class() {
    let cases = [
        (
            json!({"issuer": "https://10.0.0.1"}),
            UrlRole::AuthorizationServer,
        ),
        (
            json!({"registration_endpoint": "https://169.254.169.254/register"}),
            UrlRole::RegistrationEndpoint,
        ),
        (
            json!({"token_endpoint": "https://[::ffff:192.168.0.1]/token"}),
            UrlRole::TokenEndpoint,
        ),
        (
            json!({"authorization_endpoint": "javascript:alert(document.cookie)"}),
            UrlRole::AuthorizationEndpoint,
        ),
        (
            json!({"registration_endpoint": "https://0.0.0.0:1/register"}),
            UrlRole::RegistrationEndpoint,
        ),
    ];
    let mut table = String::new();
    for (endpoints, role) in cases {
        let mcp = Arc::new(OnceLock::new());
        let server = authorization_server(mcp.clone(), endpoints.clone()).await;
        let _ = mcp.set(server.origin().to_owned());
        let refused = login_refusal(
            &format!("{}/mcp", server.origin()),
            &format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                server.origin()
            ),
        )
        .await;
        assert_eq!(
            refused.refused_url().map(|(role, ..)| role),
            Some(role),
            "{endpoints}: {refused:?}"
        );
        assert!(
            !server.requests().iter().any(|r| r.method() == "POST"),
            "{endpoints}: something was posted: {:?}",
            paths(&server)
        );
        table.push_str(&format!("{refused}\n"));
    }
    expect![[r#"
        refusing the authorization server https://10.0.0.1/: its host is a private-network address, and the MCP server is not on a private network
        refusing the registration endpoint https://169.254.169.254/register: its host is a link-local address (cloud metadata services answer there), never contacted
        refusing the token endpoint https://[::ffff:c0a8:1]/token: its host is a private-network address, and the MCP server is not on a private network
        refusing the authorization endpoint javascript:alert(document.cookie): only https URLs are followed, not `javascript:`
        refusing the registration endpoint https://0.0.0.0:1/register: its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
    "#]].assert_eq(&table);
}

/// The loopback flow a login may take: resource metadata on another loopback port, for a
/// server on loopback, registration there, and tokens.
#[tokio::test]
async fn a_login_on_loopback_may_use_another_loopback_port() {
    let mcp = Arc::new(OnceLock::new());
    let server = authorization_server(mcp.clone(), json!({})).await;
    let other = authorization_server(mcp.clone(), json!({})).await;
    let _ = mcp.set(server.origin().to_owned());
    let client =
        OAuthClient::new(config(Acquire::Authorize(Arc::new(CodeDriver)), None)).expect("client");
    let named = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        other.origin()
    );
    let answered = within(
        "the login",
        TEST_DEADLINE,
        client.answer_challenge(challenge(
            401,
            &named,
            &format!("{}/mcp", server.origin()),
            None,
        )),
    )
    .await;
    assert!(
        matches!(answered, Ok(switchboard_http::ChallengeOutcome::Retry)),
        "{answered:?}"
    );
    assert_eq!(
        paths(&other),
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "POST /register",
            "POST /token"
        ]
    );
}

/// Approves at once: answers with the request's state and a code.
pub(crate) struct CodeDriver;

impl switchboard_auth::AuthorizationDriver for CodeDriver {
    fn authorize(
        &self,
        authorization_url: url::Url,
    ) -> switchboard_auth::BoxFuture<'_, Result<url::Url, switchboard_auth::DriverError>> {
        let state = authorization_url
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        Box::pin(async move {
            url::Url::parse(&format!("http://127.0.0.1:1/callback?code=c&state={state}")).map_err(
                |e| {
                    switchboard_auth::DriverError::new(
                        switchboard_auth::DriverErrorKind::BadRedirect,
                        e.to_string(),
                    )
                },
            )
        })
    }
}
