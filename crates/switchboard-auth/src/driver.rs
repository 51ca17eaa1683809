//! The user's step of an authorization, as a seam: the host decides how the user approves
//! (a browser and a loopback callback, a pasted redirect, or, in tests and automation,
//! following the redirect directly).

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
