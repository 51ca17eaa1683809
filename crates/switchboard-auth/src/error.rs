//! The errors of an authorization, typed where a caller decides: a login is needed, a URL
//! from the server was refused, an endpoint did not answer or refused (with the OAuth
//! `error` code), metadata or a response was unusable, the user's step failed, the token
//! file cannot be used. Server text in messages is escaped; secrets never appear.

use crate::policy::{UrlRefusal, UrlRole};

/// Why an authorization failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server wants an authorization this client may not obtain by itself (it uses
    /// only a saved login): the user must log in.
    #[error("server `{server}` {reason}: run `{login_command}`")]
    NeedsLogin {
        /// The server's configured name.
        server: String,
        /// What is missing.
        reason: LoginNeeded,
        /// The command that logs in ([`Acquire::SavedLogin`](crate::Acquire)'s).
        login_command: String,
    },
    /// A URL the server (or its metadata) handed us was refused before anything was sent
    /// to it.
    #[error("refusing the {role} {url}: {reason}")]
    RefusedUrl {
        /// What the URL was for.
        role: UrlRole,
        /// The URL (as parsed, or escaped when it did not parse).
        url: String,
        /// Why.
        reason: UrlRefusal,
    },
    /// The token file or its directory cannot be used.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A request to an authorization endpoint could not be sent or got no answer.
    #[error("{}", unreachable_text(*.role, .url, .detail))]
    Unreachable {
        /// The endpoint it was for.
        role: UrlRole,
        /// Its URL.
        url: String,
        /// The network error, described.
        detail: String,
    },
    /// An endpoint answered with an error status; `error` is the OAuth `error` code, if the
    /// body had one (RFC 6749 §5.2).
    #[error("{} ({}): {}", refusal_text(*.role), status_text(*.status), code_text(.error.as_deref()))]
    Refused {
        /// The endpoint: token, registration or identity provider's token endpoint.
        role: UrlRole,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code (server text).
        error: Option<String>,
    },
    /// A successful answer lacks a field it must have.
    #[error("{}", missing_text(*.role, .field))]
    MissingField {
        /// The endpoint that answered.
        role: UrlRole,
        /// The field.
        field: &'static str,
    },
    /// Resource or authorization-server metadata cannot be used.
    #[error("{0}")]
    InvalidMetadata(MetadataProblem),
    /// The redirect back from the authorization endpoint was rejected.
    #[error("{0}")]
    InvalidAuthorizationResponse(ResponseProblem),
    /// The user's step (the [`crate::AuthorizationDriver`]) failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// The authorization server offers no registration and no client is configured.
    #[error(
        "the authorization server offers no registration and no client is configured; register a client and configure its id"
    )]
    NoClientIdentity,
    /// A workload ([`Acquire::Unattended`](crate::Acquire)) met an authorization server
    /// that does not take its identity (no JWT-bearer grant, or no identity configured).
    #[error(
        "the authorization server {issuer} does not accept a workload identity (it offers no JWT-bearer grant); log in as a user instead (`switchboard login`), or ask its operator to accept the workload's tokens"
    )]
    WorkloadIdentityNotAccepted {
        /// The authorization server.
        issuer: String,
    },
    /// The server kept asking for more scope.
    #[error("the server kept asking for more scope; gave up after {limit} step-up authorizations")]
    TooManyStepUps {
        /// The step-ups allowed.
        limit: u32,
    },
    /// The server URL does not parse.
    #[error("the server URL is not valid: {detail}")]
    InvalidServerUrl {
        /// The parser's message.
        detail: String,
    },
    /// This client was asked to authorize another server than the one it serves.
    #[error("this OAuth client authorizes {authorizes}, not {asked}")]
    WrongServer {
        /// The server it serves.
        authorizes: String,
        /// The server asked for.
        asked: String,
    },
    /// A signing key (the client's `private_key_jwt` key or the DPoP key) cannot be used.
    #[error("{0}")]
    Key(KeyProblem),
    /// The workload identity token cannot be read.
    #[error("could not read the workload identity token from `{path}`: {detail}")]
    WorkloadToken {
        /// Where it was looked for.
        path: String,
        /// The I/O error, described.
        detail: String,
    },
    /// A server names another authorization server than the one the operator trusts
    /// with its clients' tokens ([`Acquire::OnBehalfOf`](crate::Acquire)): nothing was
    /// sent to it.
    #[error(
        "the server's authorization server is `{}`, not `{}` where this gateway exchanges its clients' tokens; no token was sent to it",
        .named.escape_debug(), .trusted
    )]
    UntrustedExchangeIssuer {
        /// The issuer the server's metadata names (server text).
        named: String,
        /// The issuer the operator configured.
        trusted: String,
    },
    /// The authorization server does not offer token exchange (RFC 8693).
    #[error(
        "the authorization server `{issuer}` does not offer token exchange (RFC 8693); each client logs in for this server instead (`switchboard login SERVER --as IDENTITY`)"
    )]
    ExchangeNotOffered {
        /// Its issuer.
        issuer: String,
    },
    /// Token exchange needs the client the operator registered at the authorization
    /// server; none is configured.
    #[error(
        "token exchange needs this gateway's own client at the authorization server (`clientId` and `clientSecret`); none is configured"
    )]
    NoExchangeClient,
    /// A device login was asked for and the authorization server does not offer the
    /// device authorization grant (no `device_authorization_endpoint` in its metadata).
    #[error(
        "the authorization server `{}` does not offer the device authorization grant (RFC 8628: its metadata has no `device_authorization_endpoint`); log in with `{fallback_command}` instead",
        .issuer.escape_debug()
    )]
    DeviceGrantNotOffered {
        /// Its issuer (server text).
        issuer: String,
        /// The login to use instead ([`Acquire::Device`](crate::Acquire)'s).
        fallback_command: String,
    },
    /// The device authorization grant (RFC 8628) failed: denied, expired, or the
    /// authorization server's answer cannot be used.
    #[error("{0}")]
    Device(DeviceProblem),
    /// This client's device login already failed, for this reason: it is not started
    /// again for the next request.
    #[error("{0}")]
    DeviceLoginFailed(String),
    /// The HTTP client or the system's randomness is not available.
    #[error("{0}")]
    Setup(String),
}

/// What is wrong with resource or authorization-server metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataProblem {
    /// The protected resource metadata has no `resource`.
    NoResource,
    /// It describes another resource than this server.
    OtherResource {
        /// What it describes (server text).
        advertised: String,
        /// This server's resource.
        resource: String,
    },
    /// It lists no authorization server.
    NoAuthorizationServer,
    /// The named authorization server is not a URL.
    IssuerNotUrl {
        /// The issuer (server text).
        issuer: String,
        /// The parser's message.
        detail: String,
    },
    /// The authorization server metadata names another issuer.
    IssuerMismatch {
        /// Where it was fetched.
        url: String,
        /// The issuer it names (server text).
        advertised: String,
        /// The issuer expected.
        issuer: String,
    },
    /// A required endpoint is missing.
    MissingEndpoint {
        /// The metadata field.
        name: &'static str,
    },
    /// PKCE with S256 is not advertised.
    NoPkceS256,
    /// A document could not be read.
    Unreadable {
        /// Its URL.
        url: String,
        /// Why.
        detail: String,
    },
}

impl std::fmt::Display for MetadataProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataProblem::NoResource => {
                f.write_str("the protected resource metadata has no `resource`")
            }
            MetadataProblem::OtherResource {
                advertised,
                resource,
            } => write!(
                f,
                "the protected resource metadata describes {}, not {resource}; refusing to authorize",
                advertised.escape_debug()
            ),
            MetadataProblem::NoAuthorizationServer => {
                f.write_str("the protected resource metadata lists no authorization server")
            }
            MetadataProblem::IssuerNotUrl { issuer, detail } => write!(
                f,
                "the authorization server `{}` is not a URL: {detail}",
                issuer.escape_debug()
            ),
            MetadataProblem::IssuerMismatch {
                url,
                advertised,
                issuer,
            } => write!(
                f,
                "the authorization server metadata at {url} names issuer {advertised:?}, not {issuer:?}; refusing to use it"
            ),
            MetadataProblem::MissingEndpoint { name } => {
                write!(f, "the authorization server metadata has no `{name}`")
            }
            MetadataProblem::NoPkceS256 => f.write_str(
                "the authorization server does not advertise PKCE with S256; refusing to authorize without it",
            ),
            MetadataProblem::Unreadable { url, detail } => {
                write!(f, "could not read {url}: {detail}")
            }
        }
    }
}

/// Why the authorization response (the redirect back) was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseProblem {
    /// It came from another issuer (RFC 9207).
    WrongIssuer {
        /// The `iss` it carried (server text).
        got: String,
        /// The issuer expected.
        expected: String,
    },
    /// The server promised an `iss` and the response had none.
    MissingIssuer,
    /// Its `state` does not match the request.
    StateMismatch,
    /// The authorization was refused (the `error` parameter, server text).
    Denied(String),
    /// It has no `code`.
    NoCode,
}

impl std::fmt::Display for ResponseProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseProblem::WrongIssuer { got, expected } => write!(
                f,
                "the authorization response came from issuer {got:?}, not {expected:?}; rejected"
            ),
            ResponseProblem::MissingIssuer => f.write_str(
                "the authorization server promised an `iss` parameter but the response had none; rejected",
            ),
            ResponseProblem::StateMismatch => f.write_str(
                "the authorization response's state does not match the request; rejected",
            ),
            ResponseProblem::Denied(error) => {
                write!(f, "the authorization was refused: {}", error.escape_debug())
            }
            ResponseProblem::NoCode => f.write_str("the authorization response has no code"),
        }
    }
}

/// Why a device login (RFC 8628) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceProblem {
    /// The user (or the authorization server) denied the authorization (`access_denied`).
    Denied,
    /// The code expired before it was approved (`expired_token`, or the wait ran out).
    Expired {
        /// How long the code was waited on.
        waited: std::time::Duration,
    },
    /// The `user_code` is empty, too long or has control characters.
    UnusableUserCode,
    /// The `device_code` is too long to send back.
    UnusableDeviceCode,
    /// A verification URL the user would be sent to cannot be shown.
    UnusableVerificationUrl {
        /// The field (`verification_uri` or `verification_uri_complete`).
        field: &'static str,
        /// The URL, escaped and shortened (server text).
        url: String,
        /// Why.
        reason: &'static str,
    },
}

impl std::fmt::Display for DeviceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceProblem::Denied => f.write_str(
                "the authorization was denied at the verification page; nothing was saved",
            ),
            DeviceProblem::Expired { waited } => write!(
                f,
                "the code was not approved within {}; nothing was saved; run the login again for a new code",
                crate::device::duration_text(*waited)
            ),
            DeviceProblem::UnusableUserCode => f.write_str(
                "the device authorization response's `user_code` is unusable (empty, too long, or with control characters); refusing to show it",
            ),
            DeviceProblem::UnusableDeviceCode => f.write_str(
                "the device authorization response's `device_code` is unusable (too long); refusing to poll with it",
            ),
            DeviceProblem::UnusableVerificationUrl { field, url, reason } => write!(
                f,
                "the device authorization response's `{field}` {url} {reason}; refusing to show it"
            ),
        }
    }
}

/// Why a signing key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyProblem {
    /// The configured key is not PEM (PKCS#8).
    NotPem,
    /// It is not a key of the configured algorithm.
    WrongKind {
        /// What it should be.
        expected: &'static str,
    },
    /// The algorithm is not supported.
    UnsupportedAlgorithm(String),
    /// Signing (or generating a key) failed.
    SigningFailed,
}

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyProblem::NotPem => f.write_str("the private key is not PEM (PKCS#8)"),
            KeyProblem::WrongKind { expected } => {
                write!(f, "the private key is not {expected} PKCS#8 key")
            }
            KeyProblem::UnsupportedAlgorithm(other) => write!(
                f,
                "client assertions signed with {} are not supported (ES256, RS256)",
                other.escape_debug()
            ),
            KeyProblem::SigningFailed => f.write_str("signing the client assertion failed"),
        }
    }
}

/// Why the user's step of an authorization failed (see [`crate::AuthorizationDriver`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DriverError {
    /// What kind of failure.
    pub kind: DriverErrorKind,
    /// It, described for the user.
    pub message: String,
}

/// The kind of a [`DriverError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverErrorKind {
    /// The user (or the browser's callback) did not answer in time.
    TimedOut,
    /// The authorization endpoint could not be reached.
    Unreachable,
    /// What came back is not a usable redirect.
    BadRedirect,
    /// A local resource (listener, terminal) failed.
    Local,
}

impl DriverError {
    /// A failure of this kind, described.
    pub fn new(kind: DriverErrorKind, message: impl Into<String>) -> DriverError {
        DriverError {
            kind,
            message: message.into(),
        }
    }

    /// The user did not answer in time.
    pub fn is_timed_out(&self) -> bool {
        self.kind == DriverErrorKind::TimedOut
    }
}

fn unreachable_text(role: UrlRole, url: &str, detail: &str) -> String {
    match role {
        UrlRole::TokenEndpoint => format!("the token endpoint did not answer: {detail}"),
        UrlRole::RegistrationEndpoint => format!("client registration failed: {detail}"),
        UrlRole::IdentityProviderTokenEndpoint => {
            format!("the identity provider did not answer the token exchange: {detail}")
        }
        UrlRole::DeviceAuthorizationEndpoint => {
            format!("the device authorization endpoint did not answer: {detail}")
        }
        _ => format!("could not fetch {url}: {detail}"),
    }
}

fn refusal_text(role: UrlRole) -> &'static str {
    match role {
        UrlRole::RegistrationEndpoint => "client registration was refused",
        UrlRole::IdentityProviderTokenEndpoint => {
            "the identity provider refused the token exchange"
        }
        UrlRole::DeviceAuthorizationEndpoint => "the device authorization request was refused",
        _ => "the token request was refused",
    }
}

fn status_text(status: u16) -> String {
    reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

fn code_text(code: Option<&str>) -> String {
    code.map_or_else(
        || "no error code".to_owned(),
        |e| e.escape_debug().to_string(),
    )
}

fn missing_text(role: UrlRole, field: &str) -> String {
    match role {
        UrlRole::RegistrationEndpoint => format!("the registration response has no {field}"),
        UrlRole::IdentityProviderTokenEndpoint => {
            "the token exchange returned no identity assertion".to_owned()
        }
        UrlRole::DeviceAuthorizationEndpoint => {
            format!("the device authorization response has no {field}")
        }
        _ => format!("the token response has no {field}"),
    }
}

/// Why a login is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginNeeded {
    /// Nothing is saved for this server.
    NotLoggedIn,
    /// The saved login was refused and could not be refreshed (expired or revoked).
    Rejected,
    /// The server asks for scopes the saved login does not have.
    MoreScope {
        /// The scopes it asked for.
        scopes: Vec<String>,
    },
}

impl std::fmt::Display for LoginNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginNeeded::NotLoggedIn => f.write_str("needs you to log in first"),
            LoginNeeded::Rejected => f.write_str(
                "no longer accepts its saved login (expired or revoked, and it could not be refreshed); log in again",
            ),
            LoginNeeded::MoreScope { scopes } if scopes.is_empty() => {
                f.write_str("asks for more scope than its saved login has; log in again")
            }
            LoginNeeded::MoreScope { scopes } => write!(
                f,
                "asks for more scope ({}) than its saved login has; log in again",
                scopes.join(" ").escape_debug()
            ),
        }
    }
}

impl AuthError {
    /// The user must run a login for this server.
    pub fn is_needs_login(&self) -> bool {
        matches!(self, AuthError::NeedsLogin { .. })
    }

    /// A URL from the server was refused.
    pub fn is_refused_url(&self) -> bool {
        matches!(self, AuthError::RefusedUrl { .. })
    }

    /// The token file or its directory is not private to this user.
    pub fn is_store_not_private(&self) -> bool {
        matches!(self, AuthError::Store(error) if error.is_not_private())
    }

    /// An endpoint answered with an error status.
    pub fn is_refused(&self) -> bool {
        matches!(self, AuthError::Refused { .. })
    }

    /// The OAuth `error` code of a refusal, if any (e.g. `invalid_grant`).
    pub fn oauth_error(&self) -> Option<&str> {
        match self {
            AuthError::Refused { error, .. } => error.as_deref(),
            _ => None,
        }
    }

    /// An authorization endpoint could not be reached.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, AuthError::Unreachable { .. })
    }

    /// Metadata could not be used.
    pub fn is_invalid_metadata(&self) -> bool {
        matches!(self, AuthError::InvalidMetadata(_))
    }

    /// The refusal, if a URL was refused: what it was for, the URL, and why.
    pub fn refused_url(&self) -> Option<(UrlRole, &str, &UrlRefusal)> {
        match self {
            AuthError::RefusedUrl { role, url, reason } => Some((*role, url.as_str(), reason)),
            _ => None,
        }
    }

    /// A refused URL, as shown: parsed when it parses, escaped and shortened when not.
    pub(crate) fn refused(role: UrlRole, url: &str, reason: UrlRefusal) -> AuthError {
        let url = match url::Url::parse(url) {
            Ok(mut parsed) => {
                let _ = parsed.set_password(None);
                parsed.to_string()
            }
            Err(_) => {
                let escaped: String = url.escape_debug().take(200).collect();
                format!("\"{escaped}\"")
            }
        };
        AuthError::RefusedUrl { role, url, reason }
    }
}
