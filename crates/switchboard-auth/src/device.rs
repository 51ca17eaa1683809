//! The device authorization grant (RFC 8628), for logins on a machine without a browser:
//! the client asks the authorization server's `device_authorization_endpoint` for a code
//! (with the RFC 8707 `resource` and the scopes the code flow would ask for; PKCE does
//! not apply, and an authorization server offering only this grant needs neither an
//! authorization endpoint nor PKCE in its metadata), the [`DeviceDriver`] shows the user the code and the verification URL, and
//! the client polls the token endpoint with the device code until the user approves.
//!
//! Everything the server says is bounded: the user code is at most 64 characters without
//! control characters, the device code at most 4096, the verification URLs at most 2048
//! characters, https (http only on loopback) and free of control characters; the polling
//! interval is the server's (5 s when absent) kept within 1–60 s, grows by 5 s on each
//! `slow_down` for all later polls (§3.5), and polling ends at the server's `expires_in`,
//! at most 30 minutes (10 when absent): a poll that would come after it is not made. `authorization_pending` polls again, `access_denied` and
//! `expired_token` end the login with [`DeviceProblem`]; any other answer is the token
//! endpoint's refusal. The device code, like the tokens, is never shown or logged.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use url::Url;

use crate::discovery::Discovery;
use crate::driver::{DeviceDriver, DevicePrompt};
use crate::error::{AuthError, DeviceProblem};
use crate::fetch::{error_code, json_body};
use crate::grants::{Grants, Tokens, with_form};
use crate::identity::RegisteredClient;
use crate::policy::UrlRole;

/// The device-code grant type (RFC 8628 §3.4).
pub(crate) const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The polling interval when the server names none (§3.2).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// The shortest interval polled at, whatever the server says.
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest interval the server may start polling at (`slow_down` may add to it).
const MAX_INTERVAL: Duration = Duration::from_secs(60);
/// What `slow_down` adds to the interval (§3.5).
const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);
/// How long a code is waited on when the server does not say.
const DEFAULT_EXPIRY: Duration = Duration::from_secs(10 * 60);
/// The longest a device login waits for the user's approval, whatever the server says
/// (a host waiting on the login, e.g. its handshake, allows this long).
pub const MAX_DEVICE_WAIT: Duration = Duration::from_secs(30 * 60);
/// The longest user code shown.
const MAX_USER_CODE_CHARS: usize = 64;
/// The longest device code sent back.
const MAX_DEVICE_CODE_CHARS: usize = 4096;
/// The longest verification URL shown.
const MAX_VERIFICATION_URL_CHARS: usize = 2048;

/// A device authorization response, checked.
struct DeviceAuthorization {
    device_code: String,
    prompt: DevicePrompt,
    interval: Duration,
}

impl Grants<'_> {
    /// The device authorization grant: a code for the user, shown by `driver`, then the
    /// token endpoint polled until the user approves, denies, or the code expires.
    pub(crate) async fn device(
        &self,
        driver: &dyn DeviceDriver,
        discovery: &Discovery,
        client: &RegisteredClient,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let authorization = self.device_authorization(discovery, client, scopes).await?;
        driver.show(&authorization.prompt)?;
        let expires_in = authorization.prompt.expires_in;
        let deadline = tokio::time::Instant::now() + expires_in;
        let mut interval = authorization.interval;
        let endpoint = discovery.token_endpoint();
        let form = vec![
            ("grant_type", DEVICE_CODE_GRANT.to_owned()),
            ("device_code", authorization.device_code),
            ("resource", discovery.resource.clone()),
        ];
        let expired = || AuthError::Device(DeviceProblem::Expired { waited: expires_in });
        loop {
            let next_poll = tokio::time::Instant::now() + interval;
            if next_poll > deadline {
                return Err(expired());
            }
            tokio::time::sleep_until(next_poll).await;
            let answer = tokio::time::timeout_at(
                deadline,
                self.token_request(&endpoint, client, form.clone()),
            )
            .await
            .map_err(|_| expired())?;
            match answer {
                Ok(tokens) => return Ok(tokens),
                Err(refused) => match refused.oauth_error() {
                    Some("authorization_pending") => {}
                    Some("slow_down") => {
                        interval = interval.saturating_add(SLOW_DOWN_STEP);
                        tracing::debug!(?interval, "the authorization server asked to slow down");
                    }
                    Some("access_denied") => return Err(AuthError::Device(DeviceProblem::Denied)),
                    Some("expired_token") => return Err(expired()),
                    _ => return Err(refused),
                },
            }
        }
    }

    /// The device authorization request (§3.1) and its response, checked (§3.2).
    async fn device_authorization(
        &self,
        discovery: &Discovery,
        client: &RegisteredClient,
        scopes: &BTreeSet<String>,
    ) -> Result<DeviceAuthorization, AuthError> {
        let fetcher = self.fetcher;
        let role = UrlRole::DeviceAuthorizationEndpoint;
        let Some(endpoint) = &discovery.device_authorization_endpoint else {
            return Err(AuthError::InvalidMetadata(
                crate::error::MetadataProblem::MissingEndpoint {
                    name: "device_authorization_endpoint",
                },
            ));
        };
        let url = fetcher.check(role, endpoint)?;
        let mut form = vec![("resource", discovery.resource.clone())];
        let scopes = self.user_scopes(discovery, scopes);
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let request = client.authenticate(&discovery.issuer, fetcher.http.post(url), &mut form)?;
        let response = with_form(request, &form)
            .send()
            .await
            .map_err(|e| fetcher.unsent(role, endpoint, &e))?;
        let status = response.status();
        let body = json_body(response).await;
        if !status.is_success() {
            return Err(AuthError::Refused {
                role,
                status: status.as_u16(),
                error: error_code(&body),
            });
        }
        let text = |field: &'static str| {
            body.get(field)
                .and_then(Value::as_str)
                .ok_or(AuthError::MissingField { role, field })
        };
        let device_code = text("device_code")?;
        if device_code.is_empty() || device_code.len() > MAX_DEVICE_CODE_CHARS {
            return Err(AuthError::Device(DeviceProblem::UnusableDeviceCode));
        }
        let user_code = text("user_code")?;
        if user_code.is_empty()
            || user_code.chars().count() > MAX_USER_CODE_CHARS
            || user_code.chars().any(char::is_control)
        {
            return Err(AuthError::Device(DeviceProblem::UnusableUserCode));
        }
        let verification_uri = verification_url("verification_uri", text("verification_uri")?)?;
        let verification_uri_complete = match body.get("verification_uri_complete") {
            None | Some(Value::Null) => None,
            Some(value) => Some(verification_url(
                "verification_uri_complete",
                value.as_str().unwrap_or_default(),
            )?),
        };
        let expires_in = seconds(&body, "expires_in")
            .unwrap_or(DEFAULT_EXPIRY)
            .min(MAX_DEVICE_WAIT);
        let interval = seconds(&body, "interval")
            .unwrap_or(DEFAULT_INTERVAL)
            .clamp(MIN_INTERVAL, MAX_INTERVAL);
        Ok(DeviceAuthorization {
            device_code: device_code.to_owned(),
            prompt: DevicePrompt {
                user_code: user_code.to_owned(),
                verification_uri,
                verification_uri_complete,
                expires_in,
            },
            interval,
        })
    }
}

/// A whole number of seconds the server gave (a number that is not one, or is negative,
/// counts as absent; an enormous one is capped by the caller).
fn seconds(body: &Value, field: &str) -> Option<Duration> {
    let value = body.get(field)?;
    let seconds = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })?;
    Some(Duration::from_secs(seconds))
}

/// A verification URL the user can be shown: at most 2048 characters, no control
/// characters, https or http on loopback.
fn verification_url(field: &'static str, raw: &str) -> Result<Url, AuthError> {
    let unusable = |reason: &'static str| {
        let shown: String = raw.escape_debug().take(120).collect();
        AuthError::Device(DeviceProblem::UnusableVerificationUrl {
            field,
            url: format!("\"{shown}\""),
            reason,
        })
    };
    if raw.chars().count() > MAX_VERIFICATION_URL_CHARS {
        return Err(unusable("is longer than 2048 characters"));
    }
    if raw.chars().any(char::is_control) {
        return Err(unusable("has control characters"));
    }
    let url = Url::parse(raw).map_err(|_| unusable("is not a URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => {}
        "http" if loopback => {}
        "http" => return Err(unusable("is plain http off loopback")),
        _ => return Err(unusable("is not an https URL")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(unusable("carries credentials"));
    }
    Ok(url)
}

/// A duration as a person reads it: whole minutes, else seconds.
pub(crate) fn duration_text(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        60 => "1 minute".to_owned(),
        s if s >= 60 && s % 60 == 0 => format!("{} minutes", s / 60),
        1 => "1 second".to_owned(),
        s => format!("{s} seconds"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_urls_are_https_or_loopback_http_and_printable() {
        let judged = |raw: &str| match verification_url("verification_uri", raw) {
            Ok(url) => format!("ok {url}"),
            Err(error) => error.to_string(),
        };
        let results = [
            "https://example.test/device",
            "http://127.0.0.1:8080/device",
            "http://localhost/device",
            "http://example.test/device",
            "javascript:alert(1)",
            "https://example.test/\u{1b}[2Jdevice",
            "https://user:pw@example.test/device",
            "device",
        ]
        .map(judged)
        .join("\n");
        expect_test::expect![[r#"
            ok https://example.test/device
            ok http://127.0.0.1:8080/device
            ok http://localhost/device
            the device authorization response's `verification_uri` "http://example.test/device" is plain http off loopback; refusing to show it
            the device authorization response's `verification_uri` "javascript:alert(1)" is not an https URL; refusing to show it
            the device authorization response's `verification_uri` "https://example.test/\u{1b}[2Jdevice" has control characters; refusing to show it
            the device authorization response's `verification_uri` "https://user:pw@example.test/device" carries credentials; refusing to show it
            the device authorization response's `verification_uri` "device" is not a URL; refusing to show it"#]]
        .assert_eq(&results);
        let long = format!("https://example.test/{}", "a".repeat(3000));
        assert!(judged(&long).contains("longer than 2048 characters"));
    }

    #[test]
    fn intervals_and_expiries_are_bounded() {
        let body = serde_json::json!({
            "interval": 0, "expires_in": 1e300, "negative": -5, "text": "9"
        });
        assert_eq!(seconds(&body, "interval"), Some(Duration::ZERO));
        assert_eq!(seconds(&body, "negative"), None);
        assert_eq!(seconds(&body, "text"), None);
        assert_eq!(seconds(&body, "absent"), None);
        let expiry = seconds(&body, "expires_in").map(|d| d.min(MAX_DEVICE_WAIT));
        assert_eq!(expiry, Some(MAX_DEVICE_WAIT));
        assert_eq!(duration_text(Duration::from_secs(600)), "10 minutes");
        assert_eq!(duration_text(Duration::from_secs(3)), "3 seconds");
    }
}
