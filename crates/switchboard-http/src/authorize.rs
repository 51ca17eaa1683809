//! The seam between the transport and whoever supplies credentials (the OAuth client in
//! `switchboard-auth`): the `Authorizer` trait and the challenge it is handed.

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

