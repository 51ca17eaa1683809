//! Tokens are refreshed shortly before they expire, before the request that would have
//! carried the stale token, at the token endpoint saved with them (no discovery), and the
//! refreshed token is saved.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use switchboard_auth::{
    Acquire, OAuthClient, OAuthConfig, SavedAuthorization, StoreBinding, TokenStore,
};
use switchboard_http::Authorizer;
use switchboard_testkit::canned;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// Every wait in these tests ends within this.
const DEADLINE: Duration = Duration::from_secs(10);

/// Every token request's form, and every request's method and path.
#[derive(Default)]
struct Seen {
    forms: Vec<String>,
    requests: Vec<String>,
}

/// A loopback server that is both the MCP resource's metadata host and its authorization
/// server; it records what it receives. Bounded: 20 connections.
async fn authorization_server() -> (String, Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!(
        "http://127.0.0.1:{}",
        listener.local_addr().expect("addr").port()
    );
    let forms = Arc::new(Mutex::new(Seen::default()));
    let (seen, issuer) = (forms.clone(), origin.clone());
    let task = tokio::spawn(async move {
        for _ in 0..20 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let (seen, issuer) = (seen.clone(), issuer.clone());
            tokio::spawn(async move {
                let Some(request) = canned::read_request(&mut socket).await else {
                    return;
                };
                let body = request.text();
                let path = request.path();
                seen.lock()
                    .expect("seen")
                    .requests
                    .push(format!("{} {path}", request.method()));
                let answer: Option<Value> = match path {
                    "/.well-known/oauth-protected-resource/mcp" => Some(json!({
                        "resource": format!("{issuer}/mcp"), "authorization_servers": [issuer]})),
                    "/.well-known/oauth-authorization-server" => Some(json!({
                        "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
                        "token_endpoint": format!("{issuer}/token"),
                        "code_challenge_methods_supported": ["S256"],
                        "grant_types_supported": ["authorization_code", "refresh_token"]})),
                    "/token" => {
                        let count = {
                            let mut seen = seen.lock().expect("forms");
                            seen.forms.push(body);
                            seen.forms.len()
                        };
                        Some(
                            json!({"access_token": format!("fresh-{count}"), "token_type": "Bearer",
                            "refresh_token": format!("refresh-{count}"), "expires_in": 3600}),
                        )
                    }
                    _ => None,
                };
                let response = match answer {
                    Some(value) => canned::answer("200 OK", "application/json", &value.to_string()),
                    None => canned::empty_answer("404 Not Found"),
                };
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (origin, forms, task)
}

/// A client whose saved token expires `expires_in_seconds` from now.
fn client_with_saved_token(
    origin: &str,
    token_file: &std::path::Path,
    expires_in_seconds: u64,
) -> OAuthClient {
    let store = TokenStore::new(token_file);
    let server_url = format!("{origin}/mcp");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    store
        .save(&SavedAuthorization {
            server_url: server_url.clone(),
            issuer: origin.to_owned(),
            client_id: "switchboard-test".into(),
            auth_method: "none".into(),
            access_token: "stale".into(),
            refresh_token: Some("refresh-0".into()),
            expires_at: Some(now + expires_in_seconds),
            token_endpoint: Some(format!("{origin}/token")),
            resource: Some(server_url.clone()),
            ..Default::default()
        })
        .expect("seed the token file");
    OAuthClient::new(OAuthConfig {
        client_name: "switchboard tests".into(),
        redirect_uri: "http://127.0.0.1:1/callback".into(),
        pre_registered: None,
        client_metadata_url: None,
        want_refresh_tokens: true,
        max_step_ups: 2,
        acquire: Acquire::SavedLogin {
            server_name: "protected".into(),
            login_command: "switchboard login protected".into(),
        },
        identity_assertion: None,
        workload_identity: None,
        store: Some(StoreBinding {
            store,
            server_url,
            on_behalf_of: None,
            shared: None,
        }),
    })
    .expect("client")
}

/// The `Authorization` value the client would send to the MCP server now.
fn authorization(client: &OAuthClient) -> Option<String> {
    let url = url::Url::parse("http://127.0.0.1:1/mcp").expect("url");
    client
        .credentials(&switchboard_http::RequestTarget {
            method: &reqwest::Method::POST,
            url: &url,
        })
        .map(|c| c.authorization)
}

/// A token file in a fresh directory private to this user.
fn token_file(name: &str) -> std::path::PathBuf {
    let dir = switchboard_testkit::locate::workspace_root()
        .join("target/auth-tests")
        .join(format!("refresh-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
    dir.join("tokens.json")
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let (origin, forms, server) = authorization_server().await;
    let file = token_file("due");
    let client = client_with_saved_token(&origin, &file, 30);
    assert_eq!(authorization(&client).as_deref(), Some("Bearer stale"));

    tokio::time::timeout(DEADLINE, client.before_send())
        .await
        .expect("refresh in time");
    assert_eq!(authorization(&client).as_deref(), Some("Bearer fresh-1"));
    tokio::time::timeout(DEADLINE, client.before_send())
        .await
        .expect("no second refresh");

    let requests = forms.lock().expect("seen").requests.clone();
    assert_eq!(requests, ["POST /token"], "a refresh discovers nothing");
    let forms = forms.lock().expect("forms").forms.clone();
    assert_eq!(forms.len(), 1, "{forms:?}");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(forms[0].as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(field("grant_type"), Some("refresh_token"));
    assert_eq!(field("refresh_token"), Some("refresh-0"));
    assert_eq!(field("resource"), Some(format!("{origin}/mcp").as_str()));

    let saved = TokenStore::new(&file)
        .load(&format!("{origin}/mcp"))
        .expect("a private token file")
        .expect("saved");
    assert_eq!(saved.access_token, "fresh-1");
    assert_eq!(saved.refresh_token.as_deref(), Some("refresh-1"));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    assert!(
        saved.expires_at.is_some_and(|at| at > now + 3000),
        "{:?}",
        saved.expires_at
    );
    server.abort();
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn a_token_with_time_left_is_sent_as_it_is() {
    let (origin, forms, server) = authorization_server().await;
    let file = token_file("fresh");
    let client = client_with_saved_token(&origin, &file, 3600);
    tokio::time::timeout(DEADLINE, client.before_send())
        .await
        .expect("no refresh");
    assert_eq!(authorization(&client).as_deref(), Some("Bearer stale"));
    assert!(forms.lock().expect("forms").requests.is_empty());
    server.abort();
    let _ = std::fs::remove_file(file);
}
