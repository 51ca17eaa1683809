//! DPoP (RFC 9449) against a loopback authorization server that binds tokens: the token
//! request carries a proof and is sent once more with the server's nonce when it asks
//! (§8); the token is then presented with the DPoP scheme and a fresh proof per request
//! binding method, URL and token hash; the MCP server's nonce is honoured (§9). Every
//! proof's signature is verified with the public key it carries.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_auth::{Acquire, OAuthClient, StoreBinding, TokenStore};
use switchboard_http::{AuthChallenge, Authorizer, ChallengeOutcome, RequestTarget};
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::discovery::{CodeDriver, challenge, config, server_metadata, token_file};

/// A request header's value (names compared case-insensitively).
fn header(request: &CannedRequest, name: &str) -> Option<String> {
    request.head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

fn decode(part: &str) -> Value {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

/// The proof's claims, after checking its header and that its signature verifies with
/// the key the header carries.
fn verified_claims(proof: &str) -> Value {
    let parts: Vec<&str> = proof.split('.').collect();
    assert_eq!(parts.len(), 3, "a compact JWS");
    let header = decode(parts[0]);
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    assert!(
        header["jwk"].get("d").is_none(),
        "no private key in a proof"
    );
    let coordinate = |name: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header["jwk"][name].as_str().expect("coordinate"))
            .expect("base64url")
    };
    let mut point = vec![0x04];
    point.extend(coordinate("x"));
    point.extend(coordinate("y"));
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[2])
        .expect("signature");
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .expect("the proof's signature verifies");
    decode(parts[1])
}

const AS_NONCE: &str = "as-nonce-1";

/// An authorization server for one MCP server at `/mcp`: resource metadata, its own
/// metadata with `extra` fields, registration, and `token` answering token requests.
pub(crate) async fn oauth_server(
    extra: Value,
    token: impl Fn(&CannedRequest) -> String + Send + Sync + 'static,
) -> CountingServer {
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let body = match request.path() {
            path if path.starts_with("/.well-known/oauth-protected-resource") => json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [origin],
            }),
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = server_metadata(origin);
                if let (Some(metadata), Some(extra)) = (metadata.as_object_mut(), extra.as_object())
                {
                    metadata.extend(extra.clone());
                }
                metadata
            }
            "/register" => json!({"client_id": "registered"}),
            "/token" => return token(request),
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

/// Metadata advertising DPoP, and a token endpoint that wants a proof with its nonce
/// before it issues a bound token.
async fn dpop_server() -> CountingServer {
    oauth_server(
        json!({"dpop_signing_alg_values_supported": ["ES256"]}),
        |request| {
            let nonce = header(request, "dpop")
                .and_then(|proof| proof.split('.').nth(1).map(decode))
                .and_then(|claims| claims.get("nonce").cloned());
            if nonce != Some(json!(AS_NONCE)) {
                let body = json!({"error": "use_dpop_nonce"}).to_string();
                return format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ndpop-nonce: {AS_NONCE}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            let body = json!({"access_token": "bound-token", "token_type": "DPoP", "expires_in": 3600});
            canned::answer("200 OK", "application/json", &body.to_string())
        },
    )
    .await
}

#[tokio::test]
async fn a_dpop_server_gets_proofs_with_its_nonces() {
    let server = dpop_server().await;
    let origin = server.origin().to_owned();
    let mcp = url::Url::parse(&format!("{origin}/mcp")).expect("url");
    let client =
        OAuthClient::new(config(Acquire::Authorize(Arc::new(CodeDriver)), None)).expect("client");
    let answered = within(
        "the authorization",
        TEST_DEADLINE,
        client.answer_challenge(challenge(
            401,
            &format!(
                "DPoP resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
            ),
            mcp.as_str(),
            None,
        )),
    )
    .await;
    assert!(
        matches!(answered, Ok(ChallengeOutcome::Retry)),
        "{answered:?}"
    );

    // The token request: a proof, then (asked for a nonce) once more with the nonce.
    let token_requests: Vec<CannedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.path() == "/token")
        .collect();
    assert_eq!(token_requests.len(), 2, "one retry with the nonce");
    let proofs: Vec<Value> = token_requests
        .iter()
        .map(|r| verified_claims(&header(r, "dpop").expect("a DPoP header")))
        .collect();
    for claims in &proofs {
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], format!("{origin}/token"));
        assert!(claims.get("ath").is_none(), "no token yet");
    }
    assert!(proofs[0].get("nonce").is_none());
    assert_eq!(proofs[1]["nonce"], AS_NONCE);
    assert_ne!(proofs[0]["jti"], proofs[1]["jti"]);

    // The bound token goes out with the DPoP scheme and a fresh proof per request.
    let target = RequestTarget {
        method: &reqwest::Method::POST,
        url: &mcp,
    };
    let first = client.credentials(&target).expect("credentials");
    let second = client.credentials(&target).expect("credentials");
    assert_eq!(first.authorization, "DPoP bound-token");
    let first_claims = verified_claims(first.dpop.as_deref().expect("a proof"));
    let second_claims = verified_claims(second.dpop.as_deref().expect("a proof"));
    assert_ne!(
        first_claims["jti"], second_claims["jti"],
        "fresh per request"
    );
    assert_eq!(first_claims["htu"], mcp.as_str());
    let ath =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b"bound-token"));
    assert_eq!(first_claims["ath"], ath.as_str());
    assert!(
        first_claims.get("nonce").is_none(),
        "the MCP server gave none yet"
    );
    let delete = client
        .credentials(&RequestTarget {
            method: &reqwest::Method::DELETE,
            url: &mcp,
        })
        .expect("credentials");
    assert_eq!(
        verified_claims(&delete.dpop.expect("a proof"))["htm"],
        "DELETE"
    );

    // The MCP server asks for its nonce: the request is sent again, with it.
    let before = server.requests().len();
    let nonce_challenge = AuthChallenge {
        status: 401,
        www_authenticate: Some(r#"DPoP error="use_dpop_nonce""#.into()),
        dpop_nonce: Some("rs-nonce-1".into()),
        resource: mcp.to_string(),
        presented: Some(first.authorization.clone()),
    };
    let answered = within(
        "the nonce challenge",
        TEST_DEADLINE,
        client.answer_challenge(nonce_challenge),
    )
    .await;
    assert!(
        matches!(answered, Ok(ChallengeOutcome::Retry)),
        "{answered:?}"
    );
    assert_eq!(
        server.requests().len(),
        before,
        "a nonce needs no new token"
    );
    let retried = client.credentials(&target).expect("credentials");
    assert_eq!(
        verified_claims(retried.dpop.as_deref().expect("a proof"))["nonce"],
        "rs-nonce-1"
    );

    // A nonce the MCP server sends on an answer that is no challenge is used from then on
    // (RFC 9449 §8.2), without a failed request first.
    switchboard_http::Authorizer::server_nonce(&client, "rs-nonce-2");
    let renewed = client.credentials(&target).expect("credentials");
    assert_eq!(
        verified_claims(renewed.dpop.as_deref().expect("a proof"))["nonce"],
        "rs-nonce-2"
    );

    // Nothing secret in Debug output.
    let shown = format!("{client:?} {retried:?}");
    assert!(!shown.contains("bound-token"), "{shown}");
    assert!(
        !shown.contains(retried.dpop.as_deref().expect("proof")),
        "{shown}"
    );
}

/// The key of a proof, as its header carries it.
fn proof_key(proof: &str) -> Value {
    decode(proof.split('.').next().expect("header"))["jwk"].clone()
}

#[tokio::test]
async fn a_dpop_login_is_saved_with_its_key() {
    let server = dpop_server().await;
    let origin = server.origin().to_owned();
    let mcp = url::Url::parse(&format!("{origin}/mcp")).expect("url");
    let file = token_file("dpop-saved");
    let binding = || StoreBinding {
        store: TokenStore::new(&file),
        server_url: mcp.to_string(),
        on_behalf_of: None,
        shared: None,
    };
    let login = OAuthClient::new(config(
        Acquire::Authorize(Arc::new(CodeDriver)),
        Some(binding()),
    ))
    .expect("client");
    let answered = within(
        "the login",
        TEST_DEADLINE,
        login.answer_challenge(challenge(401, "DPoP", mcp.as_str(), None)),
    )
    .await;
    assert!(
        matches!(answered, Ok(ChallengeOutcome::Retry)),
        "{answered:?}"
    );
    let target = RequestTarget {
        method: &reqwest::Method::POST,
        url: &mcp,
    };
    let logged_in = login.credentials(&target).expect("credentials");

    // Another process: the saved login, presented with the same key.
    let later = OAuthClient::new(config(
        Acquire::SavedLogin {
            server_name: "remote".into(),
            login_command: "switchboard login remote".into(),
        },
        Some(binding()),
    ))
    .expect("client");
    let saved = later.credentials(&target).expect("the saved login");
    assert_eq!(saved.authorization, "DPoP bound-token");
    let proof = saved.dpop.expect("a proof");
    verified_claims(&proof);
    assert_eq!(
        proof_key(&proof),
        proof_key(logged_in.dpop.as_deref().expect("a proof"))
    );
    let text = std::fs::read_to_string(&file).expect("the token file");
    assert!(text.contains("dpop_key"), "the key is kept with the tokens");
}
