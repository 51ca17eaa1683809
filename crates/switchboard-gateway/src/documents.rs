//! The HTTP side of the server's OAuth protected resource: `switchboard-server` checks
//! tokens against the authorization server's keys but is no HTTP client, so its owner
//! fetches the metadata and key set ([`DocumentFetcher`]). [`HttpDocumentFetcher`] does it
//! with the client transport's HTTP client: a deadline on each fetch, the body capped as it
//! is read, no redirect followed (a server-supplied location could point anywhere).

use std::time::Duration;

use serde_json::Value;
use switchboard_server::http::oauth::{DocumentFetcher, FetchFuture};

/// Deadline of each fetch from the authorization server.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Fetches the authorization server's documents over HTTP(S).
#[derive(Debug, Clone)]
pub struct HttpDocumentFetcher {
    http: reqwest::Client,
}

impl HttpDocumentFetcher {
    /// A fetcher with its own HTTP client. Errors: the client cannot be made (no TLS
    /// backend).
    pub fn new() -> Result<HttpDocumentFetcher, NoHttpClient> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(NoHttpClient)?;
        Ok(HttpDocumentFetcher { http })
    }
}

/// The HTTP client a fetcher needs could not be made (no TLS backend).
#[derive(Debug)]
pub struct NoHttpClient(reqwest::Error);

impl std::fmt::Display for NoHttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no HTTP client: {}", self.0)
    }
}

impl std::error::Error for NoHttpClient {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl DocumentFetcher for HttpDocumentFetcher {
    fn fetch_json<'a>(&'a self, url: &'a str, max_bytes: usize) -> FetchFuture<'a> {
        Box::pin(async move {
            let response = self
                .http
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| format!("{url}: {}", switchboard_http::error_chain(&e)))?;
            if !response.status().is_success() {
                return Err(format!("{url}: HTTP {}", response.status()));
            }
            let body = switchboard_http::read_body(response, max_bytes)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            serde_json::from_slice::<Value>(&body).map_err(|_| format!("{url}: not JSON"))
        })
    }
}
