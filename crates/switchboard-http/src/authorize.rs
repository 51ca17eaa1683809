//! The seam between the transport and whoever supplies credentials (the OAuth client in
//! `switchboard-auth`): the `Authorizer` trait, the challenge it is handed, and the two
//! places the driver consults it (credentials on a request, a challenge in an answer).

use reqwest::header::HeaderValue;

/// An authorization challenge from the server: a 401, or a 403 for insufficient scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The HTTP status.
    pub status: u16,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
    /// The MCP endpoint that answered.
    pub resource: String,
    /// The `Authorization` value the failed request carried.
    pub presented: Option<String>,
}

/// Gives requests their credentials and obtains new ones when the server asks. Implemented
/// by the OAuth client; the transport only calls it.
pub trait Authorizer: Send + Sync {
    /// The `Authorization` header value to send now, if any.
    fn authorization(&self) -> Option<String>;

    /// Handles a challenge; `Ok(true)` means new credentials are ready and the request
    /// should be sent again; `Err` explains why authorization failed.
    fn challenge(
        &self,
        challenge: AuthChallenge,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + '_>>;

    /// Called before each request is sent: the moment to renew credentials that are about
    /// to expire. The default does nothing.
    fn before_send(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
}

/// `builder` with the authorizer's current credentials, if any.
pub(crate) fn with_credentials(
    authorizer: Option<&dyn Authorizer>,
    builder: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    match authorizer.and_then(|a| a.authorization()) {
        Some(value) => match HeaderValue::from_str(&value) {
            Ok(mut value) => {
                value.set_sensitive(true);
                builder.header(reqwest::header::AUTHORIZATION, value)
            }
            Err(_) => builder,
        },
        None => builder,
    }
}

/// Hands a 401, or a 403 for insufficient scope, to the authorizer. `None` when the answer
/// is no challenge (or there is no authorizer); `Some(Ok(()))` to send the request again.
pub(crate) async fn answer_challenge(
    authorizer: Option<&dyn Authorizer>,
    response: &reqwest::Response,
    resource: &reqwest::Url,
) -> Option<Result<(), String>> {
    let authorizer = authorizer?;
    let status = response.status();
    let www_authenticate = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let insufficient_scope = status == reqwest::StatusCode::FORBIDDEN
        && www_authenticate
            .as_deref()
            .is_some_and(|w| w.contains("insufficient_scope"));
    if status != reqwest::StatusCode::UNAUTHORIZED && !insufficient_scope {
        return None;
    }
    let challenge = AuthChallenge {
        status: status.as_u16(),
        www_authenticate,
        resource: resource.to_string(),
        presented: authorizer.authorization(),
    };
    Some(match authorizer.challenge(challenge).await {
        Ok(true) => Ok(()),
        Ok(false) => Err("the server refused the credentials".to_owned()),
        Err(problem) => Err(problem),
    })
}
