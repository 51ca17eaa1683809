//! The server as an OAuth 2.1 protected resource (MCP authorization, RFC 9728): it
//! publishes its protected-resource metadata, naming the one authorization server it
//! trusts, and accepts only access tokens that server signed for it.
//!
//! A token is a JWT (RFC 9068 style) checked here, not by asking the authorization server:
//! the signature against the server's published keys (its metadata's `jwks_uri`; `RS256`
//! and `ES256` only — `none`, HMAC and every other algorithm are refused), `iss` = the
//! issuer, `aud` naming this resource (RFC 8707: a token issued for another server is
//! refused, so a token a client got for us cannot be replayed elsewhere by us, and one
//! meant elsewhere does not open us), `exp` in the future and `nbf` not (60 s of clock
//! leeway). `exp`, `nbf` and `iat` are NumericDates (RFC 7519): JSON numbers, integer or
//! fractional; one of another type (a string, …) refuses the token, saying which claim. Keys are fetched once at start and again when a token names a key id not
//! known yet (at most once a minute, so a stream of made-up ids costs no fetch storm).
//! Every fetch has a deadline and a body cap and follows no redirect: the owner's
//! [`DocumentFetcher`] makes them (this crate is no HTTP client; `switchboard-gateway`'s
//! `HttpDocumentFetcher` is one). Tokens are never logged, and the refusals say what was
//! wrong with a token without showing it.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::{Value, json};

use crate::core::{ClientIdentity, GrantClaims, Grants, PresentedToken};

/// The longest an access token may be (header + payload + signature).
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The most read of the authorization server's metadata or key set.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Keys kept at most.
const MAX_KEYS: usize = 64;
/// Clock leeway for `exp` and `nbf`.
const LEEWAY_SECS: u64 = 60;
/// The least time between two fetches of the key set for unknown key ids.
const REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// What a [`DocumentFetcher`] gives: the JSON document, or what went wrong, naming the URL.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// How the resource server reads the authorization server's documents (its metadata and
/// key set). Each fetch is a GET of `url` asking for `application/json`, answered with a
/// 2xx status and a JSON body of at most `max_bytes` (a longer one is an error before
/// more is read), within a deadline, following no redirect.
pub trait DocumentFetcher: Send + Sync {
    /// The JSON document at `url`.
    fn fetch_json<'a>(&'a self, url: &'a str, max_bytes: usize) -> FetchFuture<'a>;
}

/// What the resource server needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthResourceOptions {
    /// The authorization server's issuer URL (its metadata is at
    /// `{issuer}/.well-known/oauth-authorization-server`, or OpenID's
    /// `/.well-known/openid-configuration`).
    pub issuer: String,
    /// This server's MCP endpoint as clients address it (`https://mcp.example.com/mcp`):
    /// the `resource` of the metadata, and the audience tokens must name.
    pub resource: String,
}

/// Why the resource server could not start.
#[derive(Debug, thiserror::Error)]
pub enum OAuthResourceError {
    /// The issuer or resource is not an http(s) URL.
    #[error("`{url}` is not an http(s) URL ({what})")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Which one it is.
        what: &'static str,
    },
    /// The authorization server's metadata or key set could not be had or read.
    #[error("the authorization server `{issuer}`: {detail}")]
    Discovery {
        /// Its issuer.
        issuer: String,
        /// What went wrong.
        detail: String,
    },
}

/// Why a presented token is refused (told to the client in `error_description`; the token
/// itself is never shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenProblem {
    /// Not a JWT of three base64url parts, or over the size cap.
    #[error("the access token is not a JWT this server can read")]
    Malformed,
    /// An algorithm other than RS256/ES256, or one that does not fit the key.
    #[error("the access token is signed with an algorithm this server does not accept")]
    Algorithm,
    /// No key of the authorization server has the token's key id.
    #[error("the access token's signing key is not one of the authorization server's")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the access token's signature does not verify")]
    Signature,
    /// `iss` is not the trusted issuer.
    #[error("the access token was issued by another authorization server")]
    Issuer,
    /// `aud` does not name this resource.
    #[error("the access token was issued for another resource, not this server")]
    Audience,
    /// `exp` passed (or is missing).
    #[error("the access token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("the access token is not valid yet")]
    NotYetValid,
    /// `exp`, `nbf` or `iat` is not a NumericDate (a JSON number of seconds).
    #[error(
        "the access token's `{claim}` is not a NumericDate (a JSON number of seconds since 1970)"
    )]
    NotADate {
        /// The claim.
        claim: &'static str,
    },
}

/// Whom a valid access token speaks for: its issuer and `sub`, and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSubject {
    /// `iss`.
    pub issuer: String,
    /// `sub` (empty when the token has none).
    pub subject: String,
    /// `client_id`, scopes, groups and roles.
    pub grants: GrantClaims,
}

impl TokenSubject {
    /// The client identity of the token's holder.
    pub fn identity(&self) -> ClientIdentity {
        ClientIdentity::Subject {
            issuer: Arc::from(self.issuer.trim_end_matches('/')),
            subject: Arc::from(self.subject.as_str()),
            grants: Grants::new(self.grants.clone()),
        }
    }
}

/// A verification key from the key set.
#[derive(Clone)]
enum Key {
    Rsa { n: Vec<u8>, e: Vec<u8> },
    P256 { point: Vec<u8> },
}

#[derive(Default)]
struct KeySet {
    /// By key id (`""` for a key without one).
    keys: HashMap<String, Key>,
    fetched_at: Option<Instant>,
}

/// The protected resource: its metadata and the token check.
pub struct OAuthResource {
    options: OAuthResourceOptions,
    jwks_uri: String,
    fetcher: Arc<dyn DocumentFetcher>,
    keys: Mutex<KeySet>,
    /// Serialises key-set refreshes (one fetch answers every waiting token).
    refreshing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for OAuthResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthResource")
            .field("issuer", &self.options.issuer)
            .field("resource", &self.options.resource)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn http_url(url: &str, what: &'static str) -> Result<(), OAuthResourceError> {
    if url.starts_with("https://") || url.starts_with("http://") {
        Ok(())
    } else {
        Err(OAuthResourceError::InvalidUrl {
            url: url.to_owned(),
            what,
        })
    }
}

impl OAuthResource {
    /// Reads the authorization server's metadata and keys through `fetcher`, which also
    /// fetches the keys again when a token names one not known yet.
    pub async fn discover(
        options: OAuthResourceOptions,
        fetcher: Arc<dyn DocumentFetcher>,
    ) -> Result<OAuthResource, OAuthResourceError> {
        http_url(&options.issuer, "the issuer")?;
        http_url(&options.resource, "the resource")?;
        let issuer_name = options.issuer.clone();
        let discovery = move |detail: String| OAuthResourceError::Discovery {
            issuer: issuer_name.clone(),
            detail,
        };
        let base = options.issuer.trim_end_matches('/');
        let mut metadata = None;
        for well_known in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ] {
            let url = format!("{base}{well_known}");
            if let Ok(document) = fetcher.fetch_json(&url, MAX_DOCUMENT_BYTES).await {
                metadata = Some(document);
                break;
            }
        }
        let metadata = metadata.ok_or_else(|| {
            discovery(format!(
                "no metadata at {base}/.well-known/oauth-authorization-server or \
                 /.well-known/openid-configuration"
            ))
        })?;
        let issuer = metadata.get("issuer").and_then(Value::as_str).unwrap_or("");
        if issuer.trim_end_matches('/') != base {
            return Err(discovery(format!(
                "its metadata names the issuer `{issuer}`, not the one configured"
            )));
        }
        let jwks_uri = metadata
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| discovery("its metadata has no `jwks_uri`".into()))?
            .to_owned();
        http_url(&jwks_uri, "the jwks_uri").map_err(|e| discovery(e.to_string()))?;
        let resource = OAuthResource {
            options,
            jwks_uri,
            fetcher,
            keys: Mutex::new(KeySet::default()),
            refreshing: tokio::sync::Mutex::new(()),
        };
        resource.refresh_keys().await.map_err(discovery)?;
        Ok(resource)
    }

    /// The resource this server is (tokens must name it).
    pub fn resource(&self) -> &str {
        &self.options.resource
    }

    /// The protected-resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.options.resource,
            "authorization_servers": [self.options.issuer],
            "bearer_methods_supported": ["header"],
        })
    }

    /// The metadata's URL for this resource (`/.well-known/oauth-protected-resource` +
    /// the resource's path), as the 401 challenge names it.
    pub fn metadata_url(&self) -> String {
        let resource = &self.options.resource;
        let after_scheme = resource.find("://").map_or(0, |i| i + 3);
        let path_start = resource[after_scheme..]
            .find('/')
            .map_or(resource.len(), |i| after_scheme + i);
        let (origin, path) = resource.split_at(path_start);
        format!(
            "{origin}/.well-known/oauth-protected-resource{}",
            path.trim_end_matches('/')
        )
    }

    async fn refresh_keys(&self) -> Result<(), String> {
        let document = self
            .fetcher
            .fetch_json(&self.jwks_uri, MAX_DOCUMENT_BYTES)
            .await?;
        let entries = document
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("its key set has no `keys` array")?;
        let mut keys = HashMap::new();
        for entry in entries.iter().take(MAX_KEYS) {
            if let Some(key) = read_jwk(entry) {
                let id = entry.get("kid").and_then(Value::as_str).unwrap_or("");
                keys.insert(id.to_owned(), key);
            }
        }
        let mut set = lock(&self.keys);
        set.keys = keys;
        set.fetched_at = Some(Instant::now());
        Ok(())
    }

    /// The key a token names; refetches the key set once (rate-limited) for an unknown id.
    async fn key(&self, id: &str) -> Option<Key> {
        if let Some(key) = lock(&self.keys).keys.get(id).cloned() {
            return Some(key);
        }
        let _refreshing = self.refreshing.lock().await;
        let due = {
            let set = lock(&self.keys);
            if let Some(key) = set.keys.get(id) {
                return Some(key.clone());
            }
            set.fetched_at
                .is_none_or(|at| at.elapsed() >= REFETCH_INTERVAL)
        };
        if due && let Err(error) = self.refresh_keys().await {
            tracing::warn!(issuer = %self.options.issuer, %error, "could not refetch the authorization server's keys");
        }
        lock(&self.keys).keys.get(id).cloned()
    }

    /// Checks a presented access token; whom it speaks for.
    pub async fn validate(&self, token: &[u8]) -> Result<TokenSubject, TokenProblem> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenProblem::Malformed);
        }
        let text = std::str::from_utf8(token).map_err(|_| TokenProblem::Malformed)?;
        let mut parts = text.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenProblem::Malformed);
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| TokenProblem::Malformed)
        };
        let header_json: Value =
            serde_json::from_slice(&decode(header)?).map_err(|_| TokenProblem::Malformed)?;
        let claims: Value =
            serde_json::from_slice(&decode(payload)?).map_err(|_| TokenProblem::Malformed)?;
        let signature = decode(signature)?;
        let algorithm = header_json.get("alg").and_then(Value::as_str).unwrap_or("");
        let key_id = header_json.get("kid").and_then(Value::as_str).unwrap_or("");
        if !matches!(algorithm, "RS256" | "ES256") {
            return Err(TokenProblem::Algorithm);
        }
        let key = self.key(key_id).await.ok_or(TokenProblem::UnknownKey)?;
        let signed = &text.as_bytes()[..header.len() + 1 + payload.len()];
        let verified = match (&key, algorithm) {
            (Key::Rsa { n, e }, "RS256") => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, signed, &signature)
                .is_ok(),
            (Key::P256 { point }, "ES256") => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(signed, &signature)
                    .is_ok()
            }
            _ => return Err(TokenProblem::Algorithm),
        };
        if !verified {
            return Err(TokenProblem::Signature);
        }
        let mut subject = self.check_claims(&claims)?;
        subject.grants.presented = Some(PresentedToken::new(text));
        Ok(subject)
    }

    fn check_claims(&self, claims: &Value) -> Result<TokenSubject, TokenProblem> {
        let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        if issuer.trim_end_matches('/') != self.options.issuer.trim_end_matches('/') {
            return Err(TokenProblem::Issuer);
        }
        let ours = |audience: &str| {
            audience.trim_end_matches('/') == self.options.resource.trim_end_matches('/')
        };
        let audience_ok = match claims.get("aud") {
            Some(Value::String(audience)) => ours(audience),
            Some(Value::Array(audiences)) => audiences.iter().filter_map(Value::as_str).any(ours),
            _ => false,
        };
        if !audience_ok {
            return Err(TokenProblem::Audience);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |elapsed| elapsed.as_secs_f64());
        let leeway = LEEWAY_SECS as f64;
        match numeric_date(claims, "exp")? {
            Some(expires) if expires + leeway > now => {}
            _ => return Err(TokenProblem::Expired),
        }
        if let Some(not_before) = numeric_date(claims, "nbf")?
            && not_before > now + leeway
        {
            return Err(TokenProblem::NotYetValid);
        }
        // Not judged, but a token whose `iat` is no date is not one this server reads.
        numeric_date(claims, "iat")?;
        Ok(TokenSubject {
            issuer: issuer.to_owned(),
            subject: claims
                .get("sub")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            grants: grant_claims(claims),
        })
    }
}

/// What a token's claims grant; claims of other shapes than described count as absent.
fn grant_claims(claims: &Value) -> GrantClaims {
    let strings = |claim: &str| -> Vec<String> {
        match claims.get(claim) {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let client_id = ["client_id", "azp"]
        .iter()
        .find_map(|claim| claims.get(*claim).and_then(Value::as_str))
        .map(str::to_owned);
    let scopes = match claims.get("scope") {
        Some(Value::String(scope)) => scope.split_whitespace().map(str::to_owned).collect(),
        _ => strings("scp"),
    };
    let mut groups = strings("groups");
    groups.extend(strings("roles"));
    GrantClaims {
        client_id,
        scopes,
        groups,
        presented: None,
    }
}

/// A NumericDate claim (RFC 7519 §2: a JSON number of seconds, integer or fractional);
/// `None` when absent, an error for any other type (a string, an object, …).
fn numeric_date(claims: &Value, claim: &'static str) -> Result<Option<f64>, TokenProblem> {
    match claims.get(claim) {
        None => Ok(None),
        Some(Value::Number(number)) => number
            .as_f64()
            .map(Some)
            .ok_or(TokenProblem::NotADate { claim }),
        Some(_) => Err(TokenProblem::NotADate { claim }),
    }
}

/// A usable verification key of a JWK (RSA, or EC on P-256), else none.
fn read_jwk(entry: &Value) -> Option<Key> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    let bytes = |key: &str| text(key).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    if text("use").is_some_and(|used| used != "sig") {
        return None;
    }
    match text("kty")? {
        "RSA" => Some(Key::Rsa {
            n: bytes("n")?,
            e: bytes("e")?,
        }),
        "EC" if text("crv") == Some("P-256") => {
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut point = Vec::with_capacity(65);
            point.push(0x04);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            Some(Key::P256 { point })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fetches nothing (the test reads no document).
    struct NoDocuments;

    impl DocumentFetcher for NoDocuments {
        fn fetch_json<'a>(&'a self, url: &'a str, _max_bytes: usize) -> FetchFuture<'a> {
            Box::pin(async move { Err(format!("{url}: not fetched in this test")) })
        }
    }

    #[test]
    fn the_metadata_url_follows_the_resource_path() {
        let resource = |url: &str| OAuthResource {
            options: OAuthResourceOptions {
                issuer: "https://as.example".into(),
                resource: url.into(),
            },
            jwks_uri: String::new(),
            fetcher: Arc::new(NoDocuments),
            keys: Mutex::new(KeySet::default()),
            refreshing: tokio::sync::Mutex::new(()),
        };
        assert_eq!(
            resource("https://mcp.example/mcp").metadata_url(),
            "https://mcp.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            resource("http://127.0.0.1:8080").metadata_url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }
}
