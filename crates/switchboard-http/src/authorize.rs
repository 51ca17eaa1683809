//! The seam between the transport and whoever supplies credentials (the OAuth client in
//! `switchboard-auth`): the `Authorizer` trait, what it is told about each request (its
//! method and URL, which DPoP proofs bind), the challenge it is handed and what it answers,
//! and the two places the driver consults it (credentials on a request, a challenge in an
//! answer).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use reqwest::header::HeaderValue;

use crate::client::{RequestBuilder, Response};

/// A boxed future of the seam.
pub type AuthorizeFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The request credentials are for: DPoP proofs bind its method (`htm`) and URL (`htu`).
#[derive(Debug, Clone, Copy)]
pub struct RequestTarget<'a> {
    /// The HTTP method.
    pub method: &'a reqwest::Method,
    /// The URL the request goes to.
    pub url: &'a reqwest::Url,
}

/// The credentials for one request: the `Authorization` value and, for a DPoP-bound token,
/// the proof for the `DPoP` header. Never shown (Debug redacts both).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The `Authorization` header value (`Bearer …` or `DPoP …`).
    pub authorization: String,
    /// The `DPoP` header value: a proof for this request.
    pub dpop: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.authorization.split(' ').next().unwrap_or("");
        f.debug_struct("Credentials")
            .field("scheme", &scheme)
            .field("dpop", &self.dpop.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// An authorization challenge from the server: a 401, or a 403 for insufficient scope.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The HTTP status.
    pub status: u16,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
    /// The `DPoP-Nonce` header (RFC 9449 §9), if any.
    pub dpop_nonce: Option<String>,
    /// The MCP endpoint that answered.
    pub resource: String,
    /// The `Authorization` value the failed request carried.
    pub presented: Option<String>,
}

impl fmt::Debug for AuthChallenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthChallenge")
            .field("status", &self.status)
            .field("www_authenticate", &self.www_authenticate)
            .field("dpop_nonce", &self.dpop_nonce)
            .field("resource", &self.resource)
            .field("presented", &self.presented.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// What an authorizer made of a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeOutcome {
    /// New credentials (or a server nonce) are in place: send the request again.
    Retry,
    /// Nothing more can be done: the server refused the credentials.
    Refused,
}

/// Why an authorizer could not answer a challenge: its own typed error, kept whole so a
/// caller can [`downcast_ref`](AuthorizeError::downcast_ref) it (e.g. to
/// `switchboard_auth::AuthError`) and decide.
#[derive(Debug)]
pub struct AuthorizeError(Box<dyn std::error::Error + Send + Sync>);

impl AuthorizeError {
    /// Wraps an authorizer's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> AuthorizeError {
        AuthorizeError(Box::new(error))
    }

    /// The authorizer's error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Display for AuthorizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for AuthorizeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Gives requests their credentials and obtains new ones when the server asks. Implemented
/// by the OAuth client; the transport only calls it.
pub trait Authorizer: Send + Sync {
    /// The credentials to send with `request` now, if any.
    fn credentials(&self, request: &RequestTarget<'_>) -> Option<Credentials>;

    /// Handles a challenge: [`ChallengeOutcome::Retry`] when the request should be sent
    /// again; `Err` explains why authorization failed.
    fn challenge(
        &self,
        challenge: AuthChallenge,
    ) -> AuthorizeFuture<'_, Result<ChallengeOutcome, AuthorizeError>>;

    /// Called before each request is sent: the moment to renew credentials that are about
    /// to expire. The default does nothing.
    fn before_send(&self) -> AuthorizeFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The server named the DPoP nonce to use from now on (a `DPoP-Nonce` header on an
    /// answer that was no challenge, RFC 9449 §8.2). The default ignores it.
    fn server_nonce(&self, _nonce: &str) {}
}

/// Hands a `DPoP-Nonce` header of an answer that is no challenge to the authorizer.
pub(crate) fn note_server_nonce(authorizer: Option<&dyn Authorizer>, response: &Response) {
    let Some(authorizer) = authorizer else {
        return;
    };
    if let Some(nonce) = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
    {
        authorizer.server_nonce(nonce);
    }
}

/// A header value that is never shown (reqwest's sensitive flag); `None` when it is not a
/// valid header value.
fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(value).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// `builder` with the authorizer's credentials for the request it builds, if any: the
/// `Authorization` header and, for DPoP-bound tokens, the `DPoP` proof (both marked
/// sensitive).
pub fn with_credentials(
    authorizer: Option<&dyn Authorizer>,
    builder: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    let Some(authorizer) = authorizer else {
        return builder;
    };
    // The method and URL as the request will carry them (bodies here are in memory, so the
    // copy is cheap).
    let Some(request) = builder.try_clone().and_then(|b| b.build().ok()) else {
        return builder;
    };
    let target = RequestTarget {
        method: request.method(),
        url: request.url(),
    };
    let Some((authorization, proof)) = credential_headers(authorizer, &target) else {
        return builder;
    };
    let builder = builder.header(reqwest::header::AUTHORIZATION, authorization);
    match proof {
        Some(proof) => builder.header("DPoP", proof),
        None => builder,
    }
}

/// [`with_credentials`] for the transport's own requests.
pub(crate) fn with_request_credentials(
    authorizer: Option<&dyn Authorizer>,
    builder: RequestBuilder,
) -> RequestBuilder {
    let Some(authorizer) = authorizer else {
        return builder;
    };
    let target = RequestTarget {
        method: builder.method(),
        url: builder.url(),
    };
    let Some((authorization, proof)) = credential_headers(authorizer, &target) else {
        return builder;
    };
    let builder = builder.header_value(reqwest::header::AUTHORIZATION, authorization);
    match proof {
        Some(proof) => builder.header_value("dpop", proof),
        None => builder,
    }
}

/// The `Authorization` value and the `DPoP` proof (if any) for `target`, both sensitive;
/// `None` when there are no credentials, or they are not header text.
fn credential_headers(
    authorizer: &dyn Authorizer,
    target: &RequestTarget<'_>,
) -> Option<(HeaderValue, Option<HeaderValue>)> {
    let credentials = authorizer.credentials(target)?;
    let authorization = sensitive(&credentials.authorization)?;
    Some((
        authorization,
        credentials.dpop.as_deref().and_then(sensitive),
    ))
}

/// Hands a 401, or a 403 for insufficient scope, to the authorizer. `None` when the answer
/// is no challenge (or there is no authorizer); `Some(Ok(()))` to send the request again;
/// `Some(Err(..))` describes the failure.
pub(crate) async fn answer_challenge(
    authorizer: Option<&dyn Authorizer>,
    response: &Response,
    resource: &reqwest::Url,
) -> Option<Result<(), String>> {
    let authorizer = authorizer?;
    let status = response.status();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let www_authenticate = header(reqwest::header::WWW_AUTHENTICATE.as_str());
    let insufficient_scope = status == reqwest::StatusCode::FORBIDDEN
        && www_authenticate
            .as_deref()
            .is_some_and(|w| w.contains("insufficient_scope"));
    if status != reqwest::StatusCode::UNAUTHORIZED && !insufficient_scope {
        return None;
    }
    // What the request carried: the authorizer's current credentials (a proof made here is
    // only read for its `Authorization` value, never sent).
    let presented = authorizer
        .credentials(&RequestTarget {
            method: &reqwest::Method::POST,
            url: resource,
        })
        .map(|c| c.authorization);
    let challenge = AuthChallenge {
        status: status.as_u16(),
        www_authenticate,
        dpop_nonce: header("dpop-nonce"),
        resource: resource.to_string(),
        presented,
    };
    Some(match authorizer.challenge(challenge).await {
        Ok(ChallengeOutcome::Retry) => Ok(()),
        Ok(ChallengeOutcome::Refused) => Err("the server refused the credentials".to_owned()),
        Err(problem) => Err(problem.to_string()),
    })
}
