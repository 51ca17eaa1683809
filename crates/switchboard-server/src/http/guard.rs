//! Who may talk to the endpoint: the `Origin` check (a present origin that is not allowed
//! gets 403: a web page must not reach a local server through DNS rebinding), the `Host`
//! check on loopback (a name that does not resolve to loopback is a rebinding attempt:
//! 403), and the optional bearer token (missing or wrong: 401 with
//! `WWW-Authenticate: Bearer`), compared in constant time and never shown. What passes
//! names the request's [`ClientIdentity`]: the token (by its fingerprint), the OAuth
//! token's issuer and subject, or, when the server takes no credentials, the peer's
//! address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hyper::HeaderMap;
use hyper::StatusCode;
use hyper::header::{AUTHORIZATION, HOST, HeaderValue, ORIGIN, WWW_AUTHENTICATE};

use super::oauth::OAuthResource;
use super::reply::{self, Reply};
use super::{HttpServeError, HttpServeOptions};
use crate::core::{ClientIdentity, TokenFingerprint};

/// A static bearer token clients may present: the server's one token, or one of the
/// operator's named tokens. Its value is shown nowhere (`Debug` says
/// `BearerToken(<redacted>)`).
#[derive(Clone)]
pub struct BearerToken {
    token: Arc<str>,
    identity: ClientIdentity,
}

impl BearerToken {
    /// The server's token (its holders are known by its fingerprint); `None` when it is empty.
    pub fn new(token: impl Into<String>) -> Option<BearerToken> {
        let token = token.into();
        (!token.is_empty()).then(|| BearerToken {
            identity: ClientIdentity::Token(TokenFingerprint::of(token.as_bytes())),
            token: Arc::from(token),
        })
    }

    /// A named token (its holders are the client `name`); `None` when it is empty.
    pub fn named(name: &str, token: impl Into<String>) -> Option<BearerToken> {
        let token = token.into();
        (!token.is_empty()).then(|| BearerToken {
            identity: ClientIdentity::Client(Arc::from(name)),
            token: Arc::from(token),
        })
    }

    /// The identity of the clients that present it.
    pub fn identity(&self) -> ClientIdentity {
        self.identity.clone()
    }

    /// Whether `presented` is the token, in time independent of where they differ.
    fn matches(&self, presented: &[u8]) -> bool {
        let expected = self.token.as_bytes();
        let mut difference = expected.len() ^ presented.len();
        for (index, byte) in expected.iter().enumerate() {
            let other = presented.get(index).copied().unwrap_or(!byte);
            difference |= usize::from(byte ^ other);
        }
        std::hint::black_box(difference) == 0
    }
}

/// The bearer tokens an endpoint takes, which its owner may replace while it serves (a
/// config reload): a token taken out is refused from the next request on, whatever
/// sessions its holders opened. Cheap to clone; clones share the tokens.
#[derive(Clone, Default)]
pub struct BearerTokens(Arc<std::sync::RwLock<Arc<Vec<BearerToken>>>>);

impl BearerTokens {
    /// These tokens.
    pub fn new(tokens: Vec<BearerToken>) -> BearerTokens {
        BearerTokens(Arc::new(std::sync::RwLock::new(Arc::new(tokens))))
    }

    /// Puts `tokens` in force for the requests from now on.
    pub fn replace(&self, tokens: Vec<BearerToken>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(tokens);
    }

    /// The tokens in force.
    fn current(&self) -> Arc<Vec<BearerToken>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether none is in force.
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BearerTokens({} <redacted>)", self.current().len())
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The checks in front of the endpoint.
#[derive(Debug)]
pub(super) struct Guard {
    /// Bound to loopback: `Host` must name loopback too.
    loopback: bool,
    /// Allowed origins beyond loopback, normalised (lowercase, no trailing `/`).
    origins: Vec<String>,
    /// The tokens any of which admits a request.
    tokens: BearerTokens,
    /// Whether a token is asked for: decided when the server starts (tokens given), so
    /// that a reload that leaves none refuses every request rather than opening the door.
    asks_token: bool,
    oauth: Option<Arc<OAuthResource>>,
}

impl Guard {
    pub(super) fn new(
        bound: SocketAddr,
        options: &HttpServeOptions,
    ) -> Result<Guard, HttpServeError> {
        let origins = options
            .allowed_origins
            .iter()
            .map(|origin| {
                let normalised = normalise(origin);
                match normalised.split_once("://") {
                    Some((scheme, host))
                        if !scheme.is_empty() && !host.is_empty() && !host.contains('/') =>
                    {
                        Ok(normalised)
                    }
                    _ => Err(HttpServeError::InvalidOrigin {
                        origin: origin.clone(),
                    }),
                }
            })
            .collect::<Result<_, _>>()?;
        if !options.bearer_tokens.is_empty() && options.oauth.is_some() {
            return Err(HttpServeError::TwoAuthentications);
        }
        Ok(Guard {
            loopback: bound.ip().is_loopback(),
            origins,
            tokens: options.bearer_tokens.clone(),
            asks_token: !options.bearer_tokens.is_empty(),
            oauth: options.oauth.clone(),
        })
    }

    /// The OAuth resource, if the server is one (its metadata is served).
    pub(super) fn oauth(&self) -> Option<&OAuthResource> {
        self.oauth.as_deref()
    }

    /// Who sent the request, when it may go on; else the refusal to send. `peer` is the
    /// address the connection comes from (the identity when no credential is asked for).
    pub(super) async fn admit(
        &self,
        headers: &HeaderMap,
        peer: IpAddr,
    ) -> Result<ClientIdentity, Reply> {
        self.admit_origin(headers)?;
        if let Some(oauth) = &self.oauth {
            return admit_oauth(oauth, headers).await;
        }
        if !self.asks_token {
            return Ok(ClientIdentity::peer(peer));
        }
        self.admit_token(headers)
    }

    /// The `Host` and `Origin` checks (also in front of the public metadata).
    pub(super) fn admit_origin(&self, headers: &HeaderMap) -> Result<(), Reply> {
        if self.loopback
            && let Some(host) = headers.get(HOST)
            && !host
                .to_str()
                .is_ok_and(|host| is_loopback_host(authority_host(host)))
        {
            return Err(reply::refusal(
                StatusCode::FORBIDDEN,
                "this server listens on loopback and answers only requests addressed to a loopback host (DNS rebinding protection)",
            ));
        }
        if let Some(origin) = headers.get(ORIGIN)
            && !origin.to_str().is_ok_and(|origin| self.allows(origin))
        {
            return Err(reply::refusal(
                StatusCode::FORBIDDEN,
                "the request's Origin is not allowed (a server on loopback accepts loopback origins; allow others with --allow-origin)",
            ));
        }
        Ok(())
    }

    /// The identity of the token presented, compared with every token (each in time
    /// independent of where they differ, and all of them whichever matches).
    fn admit_token(&self, headers: &HeaderMap) -> Result<ClientIdentity, Reply> {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|value| bearer(value.as_bytes()));
        let challenge = match presented {
            Some(presented) => {
                let tokens = self.tokens.current();
                let mut matched = None;
                for token in tokens.iter() {
                    if token.matches(presented) && matched.is_none() {
                        matched = Some(token);
                    }
                }
                if let Some(token) = matched {
                    return Ok(token.identity());
                }
                "Bearer error=\"invalid_token\""
            }
            None => "Bearer",
        };
        let mut refused = reply::refusal(
            StatusCode::UNAUTHORIZED,
            "this server needs `Authorization: Bearer <token>` with its token",
        );
        refused
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        Err(refused)
    }

    fn allows(&self, origin: &str) -> bool {
        let origin = normalise(origin);
        if self.origins.contains(&origin) {
            return true;
        }
        match origin.split_once("://") {
            Some(("http" | "https", authority)) => is_loopback_host(authority_host(authority)),
            _ => false,
        }
    }
}

/// A request to the OAuth protected resource: a valid access token, else 401 with the
/// challenge that names the resource's metadata (and, for a token that was refused, why).
async fn admit_oauth(oauth: &OAuthResource, headers: &HeaderMap) -> Result<ClientIdentity, Reply> {
    let presented = headers
        .get(AUTHORIZATION)
        .and_then(|value| bearer(value.as_bytes()));
    let problem = match presented {
        Some(token) => match oauth.validate(token).await {
            Ok(subject) => return Ok(subject.identity()),
            Err(problem) => Some(problem),
        },
        None => None,
    };
    let metadata = oauth.metadata_url();
    let challenge = match &problem {
        Some(problem) => format!(
            "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", error_description=\"{problem}\""
        ),
        None => format!("Bearer resource_metadata=\"{metadata}\""),
    };
    let message = match &problem {
        Some(problem) => {
            format!("{problem}; get a token from the authorization server named at {metadata}")
        }
        None => format!(
            "this server needs an OAuth access token (`Authorization: Bearer <token>`); its authorization server is named at {metadata}"
        ),
    };
    let mut refused = reply::refusal(StatusCode::UNAUTHORIZED, &message);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        refused.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    Err(refused)
}

fn normalise(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The host of `host[:port]` or `[v6][:port]`.
fn authority_host(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The token of `Bearer <token>` (scheme case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(rest[start..].trim_ascii_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves_and_never_show() {
        let Some(token) = BearerToken::new("s3cret") else {
            panic!("a non-empty token");
        };
        assert!(token.matches(b"s3cret"));
        for other in [&b"s3cre"[..], b"s3cret!", b"S3cret", b""] {
            assert!(!token.matches(other));
        }
        assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
        assert!(!format!("{:?}", token.identity()).contains("s3cret"));
        assert!(BearerToken::new("").is_none());
        assert_eq!(bearer(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
    }

    #[test]
    fn hosts_and_origins() {
        assert!(is_loopback_host(authority_host("localhost:8080")));
        assert!(is_loopback_host(authority_host("[::1]:9")));
        assert!(is_loopback_host(authority_host("127.0.0.1")));
        assert!(!is_loopback_host(authority_host("evil.example:80")));
        assert!(!is_loopback_host(authority_host("127.0.0.1.evil.example")));
    }
}
