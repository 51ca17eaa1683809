//! The user's step of an authorization, as a seam: the host decides how the user approves
//! (a browser and a loopback callback, a pasted redirect, or, in tests and automation,
//! following the redirect directly). A device login (RFC 8628) has a step of its own,
//! [`DeviceDriver`]: the host shows the user a code and where to enter it, and the client
//! polls for the approval.

use std::time::Duration;

use switchboard_http::error_chain;
use url::Url;

use crate::BoxFuture;
use crate::error::{DriverError, DriverErrorKind};

/// How the user approves an authorization request: given the authorization URL, returns
/// the URL the authorization server redirected to (with `code`, `state`, maybe `iss`).
pub trait AuthorizationDriver: Send + Sync {
    /// Runs the user-facing step.
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, DriverError>>;
}

/// What the user of a device login is shown: where to go and the code to enter there.
/// Checked before it is handed over: the URLs are https (http only on loopback) and at most
/// 2048 characters, the code is at most 64 characters without control characters (it is
/// server text all the same: show it neutralised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePrompt {
    /// The code the user enters at the verification page.
    pub user_code: String,
    /// The verification page.
    pub verification_uri: Url,
    /// The verification page with the code filled in, when the server gives one.
    pub verification_uri_complete: Option<Url>,
    /// How long the code is waited on (the server's `expires_in`, capped).
    pub expires_in: Duration,
}

/// How a device login's user is told where to approve. Polling for the approval starts
/// when [`DeviceDriver::show`] returns; the host stops a login by dropping its future
/// (e.g. on Ctrl-C).
pub trait DeviceDriver: Send + Sync {
    /// Shows the prompt to the user.
    fn show(&self, prompt: &DevicePrompt) -> Result<(), DriverError>;
}

/// A driver for tests and automation: requests the authorization URL without following
/// redirects and takes the redirect target from `Location`.
#[derive(Debug, Clone)]
pub struct FollowRedirectDriver {
    http: reqwest::Client,
}

impl FollowRedirectDriver {
    /// A driver with its own HTTP client.
    pub fn new() -> Result<FollowRedirectDriver, DriverError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| DriverError::new(DriverErrorKind::Local, error_chain(&e)))?;
        Ok(FollowRedirectDriver { http })
    }
}

impl AuthorizationDriver for FollowRedirectDriver {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, DriverError>> {
        Box::pin(async move {
            let response = self.http.get(authorization_url).send().await.map_err(|e| {
                DriverError::new(
                    DriverErrorKind::Unreachable,
                    format!(
                        "the authorization endpoint did not answer: {}",
                        error_chain(&e)
                    ),
                )
            })?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    DriverError::new(
                        DriverErrorKind::BadRedirect,
                        format!(
                            "the authorization endpoint answered {} without a redirect",
                            response.status()
                        ),
                    )
                })?;
            Url::parse(location).map_err(|e| {
                DriverError::new(
                    DriverErrorKind::BadRedirect,
                    format!("the redirect location is not a URL: {e}"),
                )
            })
        })
    }
}
