//! Workload identity federation: against an authorization server that takes only the
//! JWT-bearer grant, the workload's token is the assertion (RFC 7523 §2.1), read from its
//! file at the token request; a refusal is a typed error with the OAuth `error` code, and
//! is final (no retry, no other grant). A workload on its own (`Acquire::Unattended`)
//! never falls back to a user's step: a server without the grant is a typed error.

use std::sync::Arc;

use serde_json::json;
use switchboard_auth::{Acquire, OAuthClient, WorkloadIdentity, WorkloadToken};
use switchboard_testkit::canned::{self, CountingServer};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::discovery::{CodeDriver, challenge, config};
use crate::dpop::oauth_server;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Metadata offering only the JWT-bearer grant; the token endpoint accepts `good-jwt`.
async fn workload_server() -> CountingServer {
    oauth_server(json!({"grant_types_supported": [JWT_BEARER]}), |request| {
        if request.text().contains("assertion=good-jwt") {
            let body = json!({"access_token": "workload-token", "token_type": "Bearer"});
            canned::answer("200 OK", "application/json", &body.to_string())
        } else {
            let body = json!({"error": "invalid_grant"}).to_string();
            canned::answer("400 Bad Request", "application/json", &body)
        }
    })
    .await
}

fn workload_client(token: WorkloadToken) -> OAuthClient {
    let mut config = config(Acquire::Authorize(Arc::new(CodeDriver)), None);
    config.workload_identity = Some(WorkloadIdentity { token });
    OAuthClient::new(config).expect("client")
}

fn token_forms(server: &CountingServer) -> Vec<Vec<(String, String)>> {
    server
        .requests()
        .iter()
        .filter(|r| r.path() == "/token")
        .map(|r| url::form_urlencoded::parse(&r.body).into_owned().collect())
        .collect()
}

#[tokio::test]
async fn the_workload_token_is_the_assertion_and_a_refusal_is_final() {
    let server = workload_server().await;
    let origin = server.origin().to_owned();
    let mcp = format!("{origin}/mcp");
    let named =
        format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"");

    let dir = switchboard_testkit::locate::workspace_root()
        .join("target/auth-tests")
        .join(format!("workload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("token");
    std::fs::write(&file, "good-jwt\n").expect("write the token file");
    let client = workload_client(WorkloadToken::File(file));
    let answered = within(
        "the grant",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &mcp, None)),
    )
    .await;
    assert!(answered.is_ok(), "{answered:?}");
    let forms = token_forms(&server);
    assert_eq!(forms.len(), 1);
    let field = |name: &str| {
        forms[0]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field("grant_type").as_deref(), Some(JWT_BEARER));
    assert_eq!(field("assertion").as_deref(), Some("good-jwt"));
    assert_eq!(field("resource"), Some(mcp.clone()));

    let refused_server = workload_server().await;
    let origin = refused_server.origin().to_owned();
    let named =
        format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"");
    let client = workload_client(WorkloadToken::Value("expired-jwt".into()));
    let refused = within(
        "the refused grant",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &format!("{origin}/mcp"), None)),
    )
    .await
    .expect_err("refused");
    assert!(refused.is_refused(), "{refused:?}");
    assert_eq!(refused.oauth_error(), Some("invalid_grant"));
    assert_eq!(
        refused.to_string(),
        "the token request was refused (400 Bad Request): invalid_grant"
    );
    assert_eq!(
        token_forms(&refused_server).len(),
        1,
        "no retry, no other grant"
    );
    assert!(!format!("{refused:?} {client:?}").contains("expired-jwt"));
}

#[tokio::test]
async fn an_unattended_workload_never_asks_a_user_and_says_when_the_grant_is_not_offered() {
    // An authorization server offering only the authorization code flow.
    let server = oauth_server(
        json!({"grant_types_supported": ["authorization_code"]}),
        |_| canned::empty_answer("500 Internal Server Error"),
    )
    .await;
    let origin = server.origin().to_owned();
    let named =
        format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"");
    let mut config = config(Acquire::Unattended, None);
    config.workload_identity = Some(WorkloadIdentity {
        token: WorkloadToken::Value("good-jwt".into()),
    });
    let client = OAuthClient::new(config).expect("client");
    let refused = within(
        "the unattended grant",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, &named, &format!("{origin}/mcp"), None)),
    )
    .await
    .expect_err("not accepted");
    assert!(
        matches!(
            refused,
            switchboard_auth::AuthError::WorkloadIdentityNotAccepted { .. }
        ),
        "{refused:?}"
    );
    assert!(token_forms(&server).is_empty(), "no token request");
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.path().contains("authorize")),
        "no authorization request"
    );
}
