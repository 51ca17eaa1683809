//! The device authorization grant (RFC 8628) against hostile authorization servers: every
//! answer it does not like ends in a typed error, every wait in the code's (capped) expiry,
//! and nothing is sent where the server's policy forbids.

use std::sync::{Arc, Mutex};

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_auth::{
    Acquire, AuthError, DeviceDriver, DevicePrompt, DriverError, OAuthClient, UrlRole,
};
use switchboard_http::ChallengeOutcome;
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::discovery::{challenge, config, server_metadata};

/// Keeps what it was asked to show.
#[derive(Default)]
struct Shown(Mutex<Vec<DevicePrompt>>);

impl DeviceDriver for Shown {
    fn show(&self, prompt: &DevicePrompt) -> Result<(), DriverError> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(prompt.clone());
        Ok(())
    }
}

/// Resource metadata for `ORIGIN/mcp`, authorization-server metadata with `endpoints`
/// added (a null removes one), registration, `device` as the device authorization
/// response, and a token endpoint that answers every poll with `poll_error` (none: tokens).
async fn device_server(
    device: Value,
    endpoints: Value,
    poll_error: &'static str,
) -> CountingServer {
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let body = match request.path() {
            path if path.starts_with("/.well-known/oauth-protected-resource") => json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [origin],
            }),
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = server_metadata(origin);
                metadata["device_authorization_endpoint"] = json!(format!("{origin}/device"));
                if let (Some(metadata), Some(endpoints)) =
                    (metadata.as_object_mut(), endpoints.as_object())
                {
                    for (name, value) in endpoints {
                        match value {
                            Value::Null => metadata.remove(name),
                            value => metadata.insert(name.clone(), value.clone()),
                        };
                    }
                }
                metadata
            }
            "/register" => json!({"client_id": "registered"}),
            "/device" => {
                let text = device.to_string().replace("ORIGIN", origin);
                return canned::answer("200 OK", "application/json", &text);
            }
            "/token" if poll_error.is_empty() => {
                json!({ "access_token": "issued", "token_type": "Bearer" })
            }
            "/token" => {
                let error = json!({ "error": poll_error }).to_string();
                return canned::answer("400 Bad Request", "application/json", &error);
            }
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

/// A device-login client whose prompts `shown` keeps.
fn device_client(shown: Arc<Shown>) -> OAuthClient {
    let acquire = Acquire::Device {
        driver: shown,
        fallback_command: "switchboard login remote --no-browser".into(),
    };
    OAuthClient::new(config(acquire, None)).expect("client")
}

/// `client`'s answer to a 401 from `server`'s `/mcp`.
async fn answer(
    client: &OAuthClient,
    server: &CountingServer,
) -> Result<ChallengeOutcome, AuthError> {
    let resource = format!("{}/mcp", server.origin());
    within(
        "the device login",
        TEST_DEADLINE,
        client.answer_challenge(challenge(401, "Bearer", &resource, None)),
    )
    .await
}

/// A device login at `server`: its error's text, and what was shown.
async fn device_login(server: &CountingServer) -> (String, Vec<DevicePrompt>) {
    let shown = Arc::new(Shown::default());
    let failure = answer(&device_client(shown.clone()), server)
        .await
        .expect_err("no approval");
    let text = failure.to_string().replace(server.origin(), "ORIGIN");
    let prompts = shown.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (text, prompts)
}

fn polls(server: &CountingServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|request| request.path() == "/token")
        .count()
}

#[tokio::test]
async fn endless_pending_at_interval_zero_ends_at_the_codes_expiry() {
    let device = json!({
        "device_code": "dc", "user_code": "ABCD", "verification_uri": "ORIGIN/activate",
        "interval": 0, "expires_in": 2,
    });
    let server = device_server(device, json!({}), "authorization_pending").await;
    let (failure, prompts) = device_login(&server).await;
    expect![[r#"the code was not approved within 2 seconds; nothing was saved; run the login again for a new code"#]]
        .assert_eq(&failure);
    assert_eq!(prompts.len(), 1);
    // Interval 0 polls once a second at most: within 2 seconds, at most twice.
    let polled = polls(&server);
    assert!((1..=2).contains(&polled), "{polled} polls");
}

#[tokio::test]
async fn slow_down_widens_the_interval_past_a_short_expiry() {
    let device = json!({
        "device_code": "dc", "user_code": "ABCD", "verification_uri": "ORIGIN/activate",
        "interval": 1, "expires_in": 4,
    });
    let server = device_server(device, json!({}), "slow_down").await;
    let (failure, _) = device_login(&server).await;
    assert!(
        failure.starts_with("the code was not approved within 4 seconds"),
        "{failure}"
    );
    // After the first `slow_down` the next poll would be 6 s later: past the expiry.
    assert_eq!(polls(&server), 1);
}

#[tokio::test]
async fn absurd_numbers_are_capped_and_a_refusal_is_the_token_endpoints() {
    let device = json!({
        "device_code": "dc", "user_code": "ABCD", "verification_uri": "ORIGIN/activate",
        "interval": 1, "expires_in": 1e300,
    });
    let server = device_server(device, json!({}), "invalid_client").await;
    let (failure, prompts) = device_login(&server).await;
    expect![[r#"the token request was refused (400 Bad Request): invalid_client"#]]
        .assert_eq(&failure);
    assert_eq!(
        prompts[0].expires_in,
        std::time::Duration::from_secs(30 * 60),
        "the expiry is capped at 30 minutes"
    );
}

#[tokio::test]
async fn hostile_device_authorization_responses_end_in_typed_errors() {
    let cases = [
        json!({ "user_code": "ABCD", "verification_uri": "ORIGIN/activate" }),
        json!({ "device_code": "dc", "verification_uri": "ORIGIN/activate" }),
        json!({ "device_code": "dc", "user_code": "AB\u{1b}[2JCD", "verification_uri": "ORIGIN/activate" }),
        json!({ "device_code": "d".repeat(5000), "user_code": "ABCD", "verification_uri": "ORIGIN/activate" }),
        json!({ "device_code": "dc", "user_code": "ABCD", "verification_uri": "javascript:alert(1)" }),
        json!({ "device_code": "dc", "user_code": "ABCD", "verification_uri": "ORIGIN/activate",
                "verification_uri_complete": "http://evil.test/activate?user_code=ABCD" }),
        json!({ "device_code": "dc", "user_code": "ABCD", "verification_uri": 42 }),
    ];
    let mut told = Vec::new();
    for device in cases {
        let server = device_server(device, json!({}), "authorization_pending").await;
        let (failure, prompts) = device_login(&server).await;
        assert!(prompts.is_empty(), "nothing shown for {failure}");
        assert_eq!(polls(&server), 0, "no poll for {failure}");
        told.push(failure);
    }
    expect![[r#"
        the device authorization response has no device_code
        the device authorization response has no user_code
        the device authorization response's `user_code` is unusable (empty, too long, or with control characters); refusing to show it
        the device authorization response's `device_code` is unusable (too long); refusing to poll with it
        the device authorization response's `verification_uri` "javascript:alert(1)" is not an https URL; refusing to show it
        the device authorization response's `verification_uri_complete` "http://evil.test/activate?user_code=ABCD" is plain http off loopback; refusing to show it
        the device authorization response has no verification_uri"#]]
    .assert_eq(&told.join("\n"));
}

#[tokio::test]
async fn a_device_endpoint_outside_the_servers_class_is_refused_before_anything_is_sent() {
    let endpoints = json!({ "device_authorization_endpoint": "http://169.254.169.254/device" });
    let server = device_server(json!({}), endpoints, "authorization_pending").await;
    let client = device_client(Arc::new(Shown::default()));
    let failure = answer(&client, &server).await.expect_err("refused");
    let (role, url, _) = failure.refused_url().expect("a refused URL");
    assert_eq!(role, UrlRole::DeviceAuthorizationEndpoint);
    assert_eq!(url, "http://169.254.169.254/device");
}

#[tokio::test]
async fn a_server_without_the_device_grant_is_told_once_and_registers_nothing() {
    let endpoints = json!({ "device_authorization_endpoint": null });
    let server = device_server(json!({}), endpoints, "authorization_pending").await;
    let client = device_client(Arc::new(Shown::default()));
    let mut told = Vec::new();
    // The handshake's next request gets the same answer without another discovery.
    for _ in 0..2 {
        let failure = answer(&client, &server).await.expect_err("not offered");
        told.push(failure.to_string().replace(server.origin(), "ORIGIN"));
    }
    expect![[r#"
        the authorization server `ORIGIN` does not offer the device authorization grant (RFC 8628: its metadata has no `device_authorization_endpoint`); log in with `switchboard login remote --no-browser` instead
        the authorization server `ORIGIN` does not offer the device authorization grant (RFC 8628: its metadata has no `device_authorization_endpoint`); log in with `switchboard login remote --no-browser` instead"#]]
    .assert_eq(&told.join("\n"));
    let requests: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.path().to_owned())
        .collect();
    assert!(!requests.iter().any(|p| p == "/register"), "{requests:?}");
    let metadata_fetches = requests
        .iter()
        .filter(|p| p.as_str() == "/.well-known/oauth-authorization-server")
        .count();
    assert_eq!(metadata_fetches, 1, "{requests:?}");
}

#[tokio::test]
async fn an_authorization_server_offering_only_the_device_grant_needs_no_pkce_or_browser() {
    let device = json!({
        "device_code": "dc", "user_code": "ABCD", "verification_uri": "ORIGIN/activate",
        "interval": 1, "expires_in": 60,
    });
    let endpoints = json!({
        "authorization_endpoint": null,
        "code_challenge_methods_supported": null,
    });
    let server = device_server(device, endpoints, "").await;
    let shown = Arc::new(Shown::default());
    let client = device_client(shown.clone());
    let outcome = answer(&client, &server).await.expect("approved");
    assert!(matches!(outcome, ChallengeOutcome::Retry));
    let registration = server
        .requests()
        .into_iter()
        .find(|request| request.path() == "/register")
        .expect("a registration");
    expect![[r#"{"client_name":"switchboard tests","token_endpoint_auth_method":"none","grant_types":["urn:ietf:params:oauth:grant-type:device_code","refresh_token"],"response_types":[],"application_type":"native"}"#]]
        .assert_eq(&registration.json().to_string());
    assert_eq!(shown.0.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
}
