//! The HTTP side of one server's authorization: a client whose resolver enforces that
//! server's URL policy, capped JSON bodies, and the small helpers every request uses.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use switchboard_http::{error_chain, read_body};
use url::Url;

use crate::error::{AuthError, MetadataProblem};
use crate::policy::{PinnedResolver, UrlPolicy, UrlRole, refusal_in};

/// The HTTP client for one MCP server's authorization: that server's URL policy, and a
/// resolver that enforces it on host names.
pub(crate) struct Fetcher {
    /// The MCP server URL (normalised).
    pub(crate) server_url: String,
    policy: UrlPolicy,
    pub(crate) http: reqwest::Client,
}

impl Fetcher {
    pub(crate) async fn for_server(server_url: &Url) -> Result<Fetcher, AuthError> {
        let policy = UrlPolicy::for_server(server_url).await;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .dns_resolver(Arc::new(PinnedResolver::new(Arc::new(policy.clone()))))
            .build()
            .map_err(|e| {
                AuthError::Setup(format!(
                    "could not set up the HTTP client: {}",
                    error_chain(&e)
                ))
            })?;
        Ok(Fetcher {
            server_url: server_url.to_string(),
            policy,
            http,
        })
    }

    /// The URL, parsed, if this server's authorization may use it for `role`.
    pub(crate) fn check(&self, role: UrlRole, url: &str) -> Result<Url, AuthError> {
        self.policy
            .check(url)
            .map_err(|reason| AuthError::refused(role, url, reason))
    }

    /// A request that could not be sent: refused by the resolver, or unreachable.
    pub(crate) fn unsent(&self, role: UrlRole, url: &str, error: &reqwest::Error) -> AuthError {
        match refusal_in(error) {
            Some(reason) => AuthError::refused(role, url, reason),
            None => AuthError::Unreachable {
                role,
                url: url.to_owned(),
                detail: error_chain(error),
            },
        }
    }

    /// A JSON document, `None` on 4xx (try the next location). The URL is judged first.
    pub(crate) async fn get_json(
        &self,
        role: UrlRole,
        url: &str,
    ) -> Result<Option<Value>, AuthError> {
        let parsed = self.check(role, url)?;
        let response = self
            .http
            .get(parsed.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.unsent(role, parsed.as_str(), &e))?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let body = read_body(response, MAX_OAUTH_BODY_BYTES)
            .await
            .map_err(|e| {
                AuthError::InvalidMetadata(MetadataProblem::Unreadable {
                    url: parsed.to_string(),
                    detail: e.to_string(),
                })
            })?;
        Ok(serde_json::from_slice(&body).ok())
    }
}

/// An OAuth error response's `error` code (server text), if it has one.
pub(crate) fn error_code(body: &Value) -> Option<String> {
    body.get("error").and_then(Value::as_str).map(str::to_owned)
}

/// The most read of an OAuth metadata, registration or token response (small JSON
/// documents; a server sending more is not waited for).
const MAX_OAUTH_BODY_BYTES: usize = 1024 * 1024;

/// A response's body as JSON, read up to [`MAX_OAUTH_BODY_BYTES`]; `Value::Null` when it is
/// not JSON, too large or unreadable (callers then report the status or a missing field).
pub(crate) async fn json_body(response: reqwest::Response) -> Value {
    read_body(response, MAX_OAUTH_BODY_BYTES)
        .await
        .ok()
        .and_then(|body| serde_json::from_slice(&body).ok())
        .unwrap_or(Value::Null)
}

/// The strings of a JSON array field (others skipped), or none.
pub(crate) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// URL-safe random text with `bytes` bytes of entropy.
pub(crate) fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)
        .map_err(|e| AuthError::Setup(format!("no randomness available: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer))
}

/// A form body, `application/x-www-form-urlencoded`.
pub(crate) fn form_body(form: &[(&str, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish()
}

/// Base64url without padding of `bytes` (JOSE's encoding).
pub(crate) fn b64url(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Seconds since the Unix epoch, now.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
