//! The HTTP transport as an OAuth protected resource, against an authorization server of
//! the test's own (its metadata and key set over real TCP; tokens signed with ES256):
//! the protected-resource metadata, the 401 challenge naming it, and every way a token
//! can be wrong — each refused with what was wrong, none shown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use expect_test::expect;
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{Value, json};
use switchboard_server::http::oauth::{
    DocumentFetcher, FetchFuture, OAuthResource, OAuthResourceOptions,
};
use switchboard_server::http::{HttpServeOptions, HttpServer};
use switchboard_testkit::jwt::Signer;
use tokio_util::sync::CancellationToken;

use crate::probe_service::ProbeService;

const RESOURCE: &str = "https://mcp.test/mcp";
const WAIT: Duration = Duration::from_secs(10);

/// The authorization server: metadata and a key set, counting key-set fetches.
async fn authorization_server(keys: Value) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let issuer = format!("http://{}", listener.local_addr().expect("addr"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (served_issuer, counter) = (issuer.clone(), fetches.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (issuer, counter, keys) = (served_issuer.clone(), counter.clone(), keys.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                    let body = match request.uri().path() {
                        "/.well-known/oauth-authorization-server" => {
                            json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")})
                        }
                        _ => {
                            counter.fetch_add(1, Ordering::SeqCst);
                            json!({ "keys": keys })
                        }
                    };
                    async move {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from(body.to_string()),
                        )))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    (issuer, fetches)
}

/// The authorization server's documents as the test reads them: a plain GET (the caps and
/// the redirect rule are the owner's fetcher's, not under test here).
struct TestFetcher(reqwest::Client);

impl DocumentFetcher for TestFetcher {
    fn fetch_json<'a>(&'a self, url: &'a str, _max_bytes: usize) -> FetchFuture<'a> {
        Box::pin(async move {
            let response = self.0.get(url).send().await.map_err(|e| e.to_string())?;
            if !response.status().is_success() {
                return Err(format!("HTTP {}", response.status()));
            }
            let body = response.bytes().await.map_err(|e| e.to_string())?;
            serde_json::from_slice(&body).map_err(|e| e.to_string())
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_tokens_the_authorization_server_signed_for_this_resource_pass() {
    let signer = Signer::new("k1");
    let stranger = Signer::new("k1");
    let (issuer, fetches) = authorization_server(json!([signer.jwk()])).await;
    let resource = OAuthResource::discover(
        OAuthResourceOptions {
            issuer: issuer.clone(),
            resource: RESOURCE.into(),
        },
        Arc::new(TestFetcher(reqwest::Client::new())),
    )
    .await
    .expect("the authorization server's metadata and keys");
    let server = HttpServer::bind(
        "127.0.0.1:0".parse().expect("an address"),
        ProbeService::new(),
        HttpServeOptions {
            oauth: Some(Arc::new(resource)),
            ..HttpServeOptions::default()
        },
    )
    .await
    .expect("bound");
    let base = format!("http://{}", server.local_addr());
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(server.serve(shutdown.clone()));
    let client = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .expect("a client");

    let metadata = client
        .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .expect("metadata")
        .text()
        .await
        .expect("a body");
    let metadata: Value = serde_json::from_str(&metadata).expect("JSON");
    assert_eq!(metadata["resource"], RESOURCE);
    assert_eq!(metadata["authorization_servers"], json!([issuer]));

    let header = |kid: &str| json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    let claims = |aud: Value, exp: u64| json!({"iss": issuer, "aud": aud, "exp": exp, "sub": "u1"});
    let later = now() + 600;
    let year_on = now() + 365 * 24 * 3600;
    // The claims of a valid token with these dates.
    let dated = |dates: Value| {
        let mut claims = json!({"iss": issuer, "aud": RESOURCE, "sub": "u1"});
        if let (Some(claims), Some(dates)) = (claims.as_object_mut(), dates.as_object()) {
            claims.extend(dates.clone());
        }
        claims
    };
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        (
            "valid",
            Some(signer.token(&header("k1"), &claims(json!(RESOURCE), later))),
        ),
        (
            "valid, audience in a list",
            Some(signer.token(&header("k1"), &claims(json!(["other", RESOURCE]), later))),
        ),
        (
            "for another resource",
            Some(signer.token(
                &header("k1"),
                &claims(json!("https://other.test/mcp"), later),
            )),
        ),
        (
            "expired",
            Some(signer.token(&header("k1"), &claims(json!(RESOURCE), now() - 3600))),
        ),
        (
            "another issuer",
            Some(signer.token(
                &header("k1"),
                &json!({"iss": "https://evil.test", "aud": RESOURCE, "exp": later}),
            )),
        ),
        (
            "signed by another key with the same id",
            Some(stranger.token(&header("k1"), &claims(json!(RESOURCE), later))),
        ),
        (
            "an unknown key id",
            Some(signer.token(&header("k9"), &claims(json!(RESOURCE), later))),
        ),
        (
            "alg none",
            Some(format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
                URL_SAFE_NO_PAD.encode(claims(json!(RESOURCE), later).to_string())
            )),
        ),
        ("not a JWT", Some("opaque-token".into())),
        // NumericDate (RFC 7519) is a JSON number, fractional or not; anything else is
        // refused, never ignored.
        (
            "valid, fractional exp",
            Some(signer.token(&header("k1"), &dated(json!({"exp": later as f64 + 0.25})))),
        ),
        (
            "expired, fractional exp",
            Some(signer.token(
                &header("k1"),
                &dated(json!({"exp": (now() - 3600) as f64 + 0.5})),
            )),
        ),
        (
            "exp as a string",
            Some(signer.token(&header("k1"), &dated(json!({"exp": later.to_string()})))),
        ),
        (
            "valid in a year, fractional nbf",
            Some(signer.token(
                &header("k1"),
                &dated(json!({"exp": year_on + 600, "nbf": year_on as f64 + 0.5})),
            )),
        ),
        (
            "valid in a year, nbf as a string",
            Some(signer.token(
                &header("k1"),
                &dated(json!({"exp": year_on + 600, "nbf": year_on.to_string()})),
            )),
        ),
        (
            "valid, nbf fractional and past, iat fractional",
            Some(signer.token(
                &header("k1"),
                &dated(
                    json!({"exp": later, "nbf": now() as f64 - 10.5, "iat": now() as f64 - 10.5}),
                ),
            )),
        ),
        (
            "iat as an object",
            Some(signer.token(
                &header("k1"),
                &dated(json!({"exp": later, "iat": {"at": now()}})),
            )),
        ),
    ];
    let mut lines = Vec::new();
    for (name, token) in &cases {
        let mut request = client
            .post(format!("{base}/mcp"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}})
                .to_string(),
            );
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("answered");
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .replace(&base, "<base>");
        let body = response.text().await.unwrap_or_default();
        if let Some(token) = token {
            assert!(!body.contains(token.as_str()) && !challenge.contains(token.as_str()));
        }
        lines.push(format!("{name}: {status} {challenge}"));
    }
    expect![[r#"
        no token: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"
        valid: 200 -
        valid, audience in a list: 200 -
        for another resource: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token was issued for another resource, not this server"
        expired: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token has expired"
        another issuer: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token was issued by another authorization server"
        signed by another key with the same id: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's signature does not verify"
        an unknown key id: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's signing key is not one of the authorization server's"
        alg none: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token is signed with an algorithm this server does not accept"
        not a JWT: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token is not a JWT this server can read"
        valid, fractional exp: 200 -
        expired, fractional exp: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token has expired"
        exp as a string: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's `exp` is not a NumericDate (a JSON number of seconds since 1970)"
        valid in a year, fractional nbf: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token is not valid yet"
        valid in a year, nbf as a string: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's `nbf` is not a NumericDate (a JSON number of seconds since 1970)"
        valid, nbf fractional and past, iat fractional: 200 -
        iat as an object: 401 Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token's `iat` is not a NumericDate (a JSON number of seconds since 1970)""#]]
    .assert_eq(&lines.join("\n"));
    // The key set was read at start; the unknown key id did not make it refetch within
    // the minute (so made-up ids cost the authorization server nothing).
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    shutdown.cancel();
    let _ = tokio::time::timeout(WAIT, served).await;
}
