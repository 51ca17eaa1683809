//! OAuth 2.1 for MCP servers reached over HTTP.
//!
//! [`OAuthClient`] implements the transport's [`Authorizer`]. What it may do on a 401 is
//! its [`Acquire`]:
//!
//! - [`Acquire::SavedLogin`] (every command but a login): use the tokens a login saved,
//!   refresh them at the token endpoint saved with them, and otherwise fail with
//!   [`AuthError::NeedsLogin`]. It never fetches metadata, never registers a client and
//!   never follows anything a 401 names.
//! - [`Acquire::Authorize`] (a login, or a host that may authorize): discover the server's
//!   Protected Resource Metadata (RFC 9728: the `resource_metadata` the challenge names,
//!   else the path-based then root well-known URL), check that it describes this server,
//!   find the authorization server's metadata (RFC 8414 then OpenID discovery, the issuer
//!   must match exactly), refuse servers without PKCE S256, obtain a client identity
//!   (pre-registered, a Client ID Metadata Document, or dynamic registration with
//!   `application_type: native`), and run the authorization-code flow with PKCE, the RFC
//!   8707 `resource` parameter and the RFC 9207 `iss` check. Servers of the 2025-03-26
//!   revision without resource metadata are served from their origin's metadata or
//!   default endpoints. Every URL a server hands over is judged first by the server's own
//!   address class (see the `policy` module): https only (http only on loopback, for a
//!   loopback server), never link-local, private or loopback only for a server that is;
//!   a refusal is [`AuthError::RefusedUrl`], naming the URL and why, before anything is
//!   sent to it. Host names are pinned: the HTTP client's resolver connects only to
//!   addresses the same rules allow.
//!
//! A 403 `insufficient_scope` re-authorizes with the union of scopes, a bounded number of
//! times; a token is refreshed shortly before it expires (`expires_in`), and an expired
//! one once more on a 401 before a new authorization. Refreshing never discovers: tokens
//! carry the token endpoint they were issued at, and the store keeps it with them.
//!
//! The browser step is an [`AuthorizationDriver`]: the host decides how the user approves
//! (a browser and a loopback callback, a pasted redirect, or, in tests, following the
//! redirect directly). Tokens and secrets never appear in logs or errors.

mod challenge;
mod error;
mod policy;
mod store;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_http::{AuthChallenge, Authorizer, error_chain, read_body};
use url::Url;

pub use challenge::BearerChallenge;
pub use error::{AuthError, LoginNeeded};
pub use policy::{AddressClass, UrlRefusal, UrlRole};
pub use store::{LOCK_WAIT, SavedAuthorization, StoreError, StoredPath, TokenStore};

use policy::{PinnedResolver, UrlPolicy, refusal_in};

/// A boxed future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How the user approves an authorization request: given the authorization URL, returns
/// the URL the authorization server redirected to (with `code`, `state`, maybe `iss`).
pub trait AuthorizationDriver: Send + Sync {
    /// Runs the user-facing step.
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, String>>;
}

/// A driver for tests and automation: requests the authorization URL without following
/// redirects and takes the redirect target from `Location`.
#[derive(Debug, Clone)]
pub struct FollowRedirectDriver {
    http: reqwest::Client,
}

impl FollowRedirectDriver {
    /// A driver with its own HTTP client.
    pub fn new() -> Result<FollowRedirectDriver, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(FollowRedirectDriver { http })
    }
}

impl AuthorizationDriver for FollowRedirectDriver {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, String>> {
        Box::pin(async move {
            let response = self.http.get(authorization_url).send().await.map_err(|e| {
                format!(
                    "the authorization endpoint did not answer: {}",
                    error_chain(&e)
                )
            })?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "the authorization endpoint answered {} without a redirect",
                        response.status()
                    )
                })?;
            Url::parse(location).map_err(|e| format!("the redirect location is not a URL: {e}"))
        })
    }
}

/// A client identity the user registered beforehand.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    pub client_secret: Option<String>,
    /// A PEM private key for `private_key_jwt` client authentication (PKCS#8).
    pub private_key_pem: Option<String>,
    /// Its JWS algorithm: `ES256` (default) or `RS256`.
    pub signing_algorithm: Option<String>,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "private_key_pem",
                &self.private_key_pem.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// An enterprise identity for cross-app access (SEP-990): an ID token from the user's
/// identity provider, exchanged there for an identity assertion grant (ID-JAG) that the
/// authorization server accepts with the JWT-bearer grant.
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityAssertion {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// The user's ID token from the identity provider.
    pub id_token: String,
    /// This client's id at the identity provider.
    pub idp_client_id: Option<String>,
}

impl fmt::Debug for IdentityAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityAssertion")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("id_token", &"<redacted>")
            .finish()
    }
}

const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// How the client obtains credentials it does not hold.
#[derive(Clone)]
pub enum Acquire {
    /// Discover the authorization server, obtain a client identity and authorize, with
    /// this driver for the user's step: a login, or a host allowed to authorize.
    Authorize(Arc<dyn AuthorizationDriver>),
    /// Only what a login saved: the stored tokens, refreshed at the token endpoint saved
    /// with them. Never fetches metadata, never registers, never follows a URL a 401
    /// names; anything more fails with [`AuthError::NeedsLogin`] for this server.
    SavedLogin {
        /// The server's configured name, for the message.
        server_name: String,
    },
}

impl fmt::Debug for Acquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acquire::Authorize(_) => f.write_str("Authorize(..)"),
            Acquire::SavedLogin { server_name } => f
                .debug_struct("SavedLogin")
                .field("server_name", server_name)
                .finish(),
        }
    }
}

/// OAuth settings for one server.
#[derive(Clone)]
pub struct OAuthConfig {
    /// `client_name` for registration.
    pub client_name: String,
    /// Where the authorization server sends the user back.
    pub redirect_uri: String,
    /// A pre-registered client, used first when present.
    pub pre_registered: Option<ClientCredentials>,
    /// The https URL of this client's metadata document, for servers that accept Client ID
    /// Metadata Documents.
    pub client_metadata_url: Option<String>,
    /// Ask for `offline_access` (refresh tokens) when the server offers it.
    pub want_refresh_tokens: bool,
    /// Step-up authorizations allowed for one session before giving up.
    pub max_step_ups: u32,
    /// What the client may do to obtain credentials.
    pub acquire: Acquire,
    /// An enterprise identity for cross-app access, used when the server offers the
    /// JWT-bearer grant.
    pub identity_assertion: Option<IdentityAssertion>,
    /// Where tokens and registrations are kept between runs, and the server they are for.
    pub store: Option<StoreBinding>,
}

/// A token store and the MCP server URL whose authorization it keeps.
#[derive(Debug, Clone)]
pub struct StoreBinding {
    /// The store.
    pub store: TokenStore,
    /// The MCP server URL (the key in the store).
    pub server_url: String,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("pre_registered", &self.pre_registered)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("acquire", &self.acquire)
            .finish_non_exhaustive()
    }
}

/// The client identity in use, bound to the issuer it was obtained from.
#[derive(Clone)]
struct RegisteredClient {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    auth_method: String,
    /// `(PEM, algorithm)` for `private_key_jwt`.
    signing_key: Option<(String, String)>,
}

/// An authorization server's token endpoint and what grants there are for.
#[derive(Clone)]
struct TokenEndpoint {
    /// The issuer (the audience of client assertions).
    issuer: String,
    /// The endpoint.
    url: String,
    /// The RFC 8707 resource indicator.
    resource: String,
}

/// Tokens from one authorization.
#[derive(Clone)]
struct Tokens {
    access: String,
    refresh: Option<String>,
    issuer: String,
    /// Where they were issued and are refreshed; `None` for tokens saved before the
    /// endpoint was kept with them (they cannot be refreshed without discovery).
    endpoint: Option<TokenEndpoint>,
    /// When the access token expires, if the server said.
    expires_at: Option<SystemTime>,
    /// When to refresh it: a little before it expires.
    refresh_at: Option<SystemTime>,
}

/// How long before expiry a token is refreshed: a minute, or half the token's lifetime
/// when that is shorter.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

impl Tokens {
    /// The refresh time for a token that lives `lifetime` from `issued`.
    /// `None` when the lifetime is too large to represent (a server's number; never a panic):
    /// such a token is treated as one that does not expire.
    fn refresh_time(issued: SystemTime, lifetime: Duration) -> Option<SystemTime> {
        issued
            .checked_add(lifetime)?
            .checked_sub(REFRESH_MARGIN.min(lifetime / 2))
    }

    /// Tokens as a login saved them for `server_url`.
    fn from_saved(saved: &SavedAuthorization) -> Tokens {
        let expires_at = saved
            .expires_at
            .and_then(|seconds| UNIX_EPOCH.checked_add(Duration::from_secs(seconds)));
        Tokens {
            access: saved.access_token.clone(),
            refresh: saved.refresh_token.clone(),
            issuer: saved.issuer.clone(),
            endpoint: saved.token_endpoint.clone().map(|url| TokenEndpoint {
                issuer: saved.issuer.clone(),
                url,
                resource: saved
                    .resource
                    .clone()
                    .unwrap_or_else(|| saved.server_url.trim_end_matches('/').to_owned()),
            }),
            expires_at,
            // The lifetime is not saved: refresh a margin before expiry.
            refresh_at: expires_at.and_then(|at| at.checked_sub(REFRESH_MARGIN)),
        }
    }
}

#[derive(Default)]
struct AuthState {
    client: Option<RegisteredClient>,
    tokens: Option<Tokens>,
    scopes: BTreeSet<String>,
    step_ups: u32,
}

/// The HTTP client for one MCP server's authorization: that server's URL policy, and a
/// resolver that enforces it on host names.
struct Fetcher {
    /// The MCP server URL (normalised).
    server_url: String,
    policy: UrlPolicy,
    http: reqwest::Client,
}

impl Fetcher {
    async fn for_server(server_url: &Url) -> Result<Fetcher, AuthError> {
        let policy = UrlPolicy::for_server(server_url).await;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .dns_resolver(Arc::new(PinnedResolver::new(Arc::new(policy.clone()))))
            .build()
            .map_err(|e| format!("could not set up the HTTP client: {}", error_chain(&e)))?;
        Ok(Fetcher {
            server_url: server_url.to_string(),
            policy,
            http,
        })
    }

    /// The URL, parsed, if this server's authorization may use it for `role`.
    fn check(&self, role: UrlRole, url: &str) -> Result<Url, AuthError> {
        self.policy
            .check(url)
            .map_err(|reason| AuthError::refused(role, url, reason))
    }

    /// A request that could not be sent: refused by the resolver, or unreachable.
    fn unsent(&self, role: UrlRole, url: &str, error: &reqwest::Error, what: &str) -> AuthError {
        match refusal_in(error) {
            Some(reason) => AuthError::refused(role, url, reason),
            None => AuthError::Failed(format!("{what}: {}", error_chain(error))),
        }
    }
}

/// An OAuth 2.1 client for one MCP server; give it to the HTTP transport as its authorizer.
pub struct OAuthClient {
    config: OAuthConfig,
    /// Set up for the server on first use.
    fetcher: tokio::sync::OnceCell<Fetcher>,
    state: tokio::sync::Mutex<AuthState>,
    bearer: Mutex<Option<String>>,
    /// When the current token should be refreshed (read before every request).
    refresh_at: Mutex<Option<SystemTime>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.config)
            .field("authorized", &self.bearer_value().is_some())
            .finish()
    }
}

/// Everything discovery found for one authorization.
struct Discovery {
    resource: String,
    issuer: String,
    metadata: Value,
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
    scopes_supported: Vec<String>,
}

impl Discovery {
    fn token_endpoint(&self) -> TokenEndpoint {
        TokenEndpoint {
            issuer: self.issuer.clone(),
            url: self.token_endpoint.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// The URL as one string, so that the transport's URL and the configured one compare equal.
fn normalised(url: &str) -> Result<Url, AuthError> {
    Url::parse(url).map_err(|e| AuthError::Failed(format!("the server URL is not valid: {e}")))
}

impl OAuthClient {
    /// A client with the saved login for its server loaded, if a store is bound. A token
    /// file that cannot be used is reported when the server asks for authorization (a
    /// server that never does is not held up by it).
    pub fn new(config: OAuthConfig) -> Result<OAuthClient, AuthError> {
        let mut client = OAuthClient {
            config,
            fetcher: tokio::sync::OnceCell::new(),
            state: tokio::sync::Mutex::new(AuthState::default()),
            bearer: Mutex::new(None),
            refresh_at: Mutex::new(None),
        };
        if let Some(binding) = &client.config.store {
            match binding.store.load(&binding.server_url) {
                Ok(Some(saved)) => {
                    let mut state = AuthState::default();
                    client.install_saved(&mut state, &saved);
                    *client.state.get_mut() = state;
                }
                Ok(None) => {}
                Err(problem) => tracing::debug!(%problem, "the saved login cannot be used"),
            }
        }
        Ok(client)
    }

    fn bearer_value(&self) -> Option<String> {
        self.bearer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes a saved login current (it is already in the store).
    fn install_saved(&self, state: &mut AuthState, saved: &SavedAuthorization) {
        let tokens = Tokens::from_saved(saved);
        self.set_bearer(Some(format!("Bearer {}", tokens.access)));
        self.set_refresh_at(tokens.refresh_at);
        state.client = Some(RegisteredClient {
            issuer: saved.issuer.clone(),
            client_id: saved.client_id.clone(),
            client_secret: saved.client_secret.clone(),
            auth_method: saved.auth_method.clone(),
            signing_key: None,
        });
        state.tokens = Some(tokens);
    }

    /// Makes `tokens` current and saves them with the client identity, if a store is
    /// bound. They are current even when saving fails.
    fn adopt(&self, state: &mut AuthState, tokens: Tokens) -> Result<(), StoreError> {
        self.set_bearer(Some(format!("Bearer {}", tokens.access)));
        self.set_refresh_at(tokens.refresh_at);
        let saved = match (&self.config.store, &state.client) {
            (Some(binding), Some(client)) => binding.store.save(&SavedAuthorization {
                server_url: binding.server_url.clone(),
                issuer: tokens.issuer.clone(),
                client_id: client.client_id.clone(),
                client_secret: client.client_secret.clone(),
                auth_method: client.auth_method.clone(),
                access_token: tokens.access.clone(),
                refresh_token: tokens.refresh.clone(),
                expires_at: tokens
                    .expires_at
                    .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                    .map(|since| since.as_secs()),
                token_endpoint: tokens.endpoint.as_ref().map(|e| e.url.clone()),
                resource: tokens.endpoint.as_ref().map(|e| e.resource.clone()),
            }),
            _ => Ok(()),
        };
        state.tokens = Some(tokens);
        saved
    }

    fn set_bearer(&self, value: Option<String>) {
        *self.bearer.lock().unwrap_or_else(|p| p.into_inner()) = value;
    }

    fn set_refresh_at(&self, value: Option<SystemTime>) {
        *self.refresh_at.lock().unwrap_or_else(|p| p.into_inner()) = value;
    }

    fn refresh_due(&self) -> bool {
        self.refresh_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| SystemTime::now() >= at)
    }

    /// The HTTP client and URL policy for `server_url`, set up on first use; one client
    /// serves one server.
    async fn fetcher(&self, server_url: &str) -> Result<&Fetcher, AuthError> {
        let server = normalised(server_url)?;
        let fetcher = self
            .fetcher
            .get_or_try_init(|| Fetcher::for_server(&server))
            .await?;
        if fetcher.server_url != server.as_str() {
            return Err(AuthError::Failed(format!(
                "this OAuth client authorizes {}, not {server}",
                fetcher.server_url
            )));
        }
        Ok(fetcher)
    }

    /// The server this client's tokens are for, when known.
    fn known_server(&self) -> Option<String> {
        self.fetcher
            .get()
            .map(|f| f.server_url.clone())
            .or_else(|| self.config.store.as_ref().map(|b| b.server_url.clone()))
    }

    /// Refreshes a token that is about to expire, before it is sent. A failed refresh is
    /// not retried per request: the server's 401 then starts the usual recovery.
    async fn renew_if_due(&self) {
        if !self.refresh_due() {
            return;
        }
        let mut state = self.state.lock().await;
        // Another request may have renewed it while this one waited for the lock.
        if !self.refresh_due() {
            return;
        }
        let renewed = match self.known_server() {
            Some(server) => self.renew(&mut state, &server).await,
            None => false,
        };
        if renewed {
            tracing::debug!("access token renewed before expiry");
        } else {
            tracing::debug!("the access token could not be renewed before expiry");
            self.set_refresh_at(None);
        }
    }

    /// New tokens without discovery: a login another process saved since ours was loaded
    /// (its refresh may have spent our refresh token), else a refresh at the token
    /// endpoint the current tokens came from. Returns whether new tokens are in place.
    async fn renew(&self, state: &mut AuthState, server_url: &str) -> bool {
        if self.adopt_newer_saved(state) {
            return true;
        }
        let Some(fresh) = self.refresh_current(state, server_url).await else {
            return false;
        };
        if let Err(problem) = self.adopt(state, fresh) {
            tracing::warn!(%problem, "the refreshed tokens could not be saved");
        }
        true
    }

    /// Installs the saved login when it is not the one in use.
    fn adopt_newer_saved(&self, state: &mut AuthState) -> bool {
        let Some(binding) = &self.config.store else {
            return false;
        };
        let Ok(Some(saved)) = binding.store.load(&binding.server_url) else {
            return false;
        };
        if state
            .tokens
            .as_ref()
            .is_some_and(|tokens| tokens.access == saved.access_token)
        {
            return false;
        }
        self.install_saved(state, &saved);
        true
    }

    /// Refreshes the current tokens at the endpoint that issued them; `None` when there is
    /// nothing to refresh with or the refresh fails.
    async fn refresh_current(&self, state: &AuthState, server_url: &str) -> Option<Tokens> {
        let tokens = state.tokens.as_ref()?;
        let refresh_token = tokens.refresh.as_ref()?;
        let client = state.client.as_ref()?;
        let endpoint = tokens.endpoint.as_ref()?;
        let fetcher = self.fetcher(server_url).await.ok()?;
        match self.refresh(fetcher, endpoint, client, refresh_token).await {
            Ok(fresh) => Some(fresh),
            Err(problem) => {
                tracing::debug!(%problem, "the refresh failed");
                None
            }
        }
    }

    /// Answers a challenge from the server: `Ok(true)` when new credentials are ready and
    /// the request should be sent again. What it may do depends on [`OAuthConfig::acquire`].
    pub async fn answer_challenge(&self, challenge: AuthChallenge) -> Result<bool, AuthError> {
        let mut state = self.state.lock().await;
        // Another request already obtained newer credentials: just send again.
        if challenge.presented != self.bearer_value() {
            return Ok(self.bearer_value().is_some());
        }
        let bearer = challenge
            .www_authenticate
            .as_deref()
            .and_then(BearerChallenge::parse)
            .unwrap_or_default();
        let step_up = challenge.status == 403 && bearer.get("error") == Some("insufficient_scope");
        if step_up {
            state.step_ups += 1;
            if state.step_ups > self.config.max_step_ups {
                return Err(AuthError::Failed(format!(
                    "the server kept asking for more scope; gave up after {} step-up authorizations",
                    self.config.max_step_ups
                )));
            }
        } else if self.renew(&mut state, &challenge.resource).await {
            return Ok(true);
        }
        let driver = match &self.config.acquire {
            Acquire::Authorize(driver) => driver.clone(),
            Acquire::SavedLogin { server_name } => {
                // A token file that cannot be used says so: a login would not help.
                if let Some(binding) = &self.config.store {
                    binding.store.load(&binding.server_url)?;
                }
                let reason = if step_up {
                    LoginNeeded::MoreScope {
                        scopes: bearer.scopes(),
                    }
                } else if state.tokens.is_some() {
                    LoginNeeded::Rejected
                } else {
                    LoginNeeded::NotLoggedIn
                };
                return Err(AuthError::NeedsLogin {
                    server: server_name.clone(),
                    reason,
                });
            }
        };
        let fetcher = self.fetcher(&challenge.resource).await?;
        let discovery = self.discover(fetcher, &challenge.resource, &bearer).await?;
        let challenged: Vec<String> = bearer.scopes();
        if !challenged.is_empty() {
            state.scopes.extend(challenged);
        } else if !step_up && state.scopes.is_empty() {
            state
                .scopes
                .extend(discovery.scopes_supported.iter().cloned());
        }
        let client = match &state.client {
            // Credentials are bound to the issuer that issued them (never reused elsewhere).
            Some(client) if client.issuer == discovery.issuer => client.clone(),
            _ => self.register(fetcher, &discovery).await?,
        };
        state.client = Some(client.clone());
        let grants = string_list(discovery.metadata.get("grant_types_supported"));
        let machine_only = grants.iter().any(|g| g == "client_credentials")
            && !grants.iter().any(|g| g == "authorization_code");
        let confidential = client.client_secret.is_some() || client.signing_key.is_some();
        let jwt_bearer = grants.iter().any(|g| g == JWT_BEARER_GRANT);
        let tokens = if let (true, Some(identity)) = (jwt_bearer, &self.config.identity_assertion) {
            self.cross_app_access(fetcher, &discovery, &client, identity)
                .await?
        } else if machine_only && confidential {
            self.client_credentials(fetcher, &discovery, &client, &state.scopes)
                .await?
        } else {
            let authorization = Authorization {
                fetcher,
                driver: driver.as_ref(),
                discovery: &discovery,
                client: &client,
            };
            self.authorize(&authorization, &state.scopes).await?
        };
        // A login whose tokens cannot be kept has failed.
        self.adopt(&mut state, tokens)?;
        Ok(true)
    }

    /// Finds the resource and authorization-server metadata. Every URL is judged by the
    /// server's policy before it is fetched; a refused one ends the discovery.
    async fn discover(
        &self,
        fetcher: &Fetcher,
        resource_url: &str,
        bearer: &BearerChallenge,
    ) -> Result<Discovery, AuthError> {
        let resource_url = normalised(resource_url)?;
        let mut resource = canonical_resource(&resource_url);
        let mut candidates = Vec::new();
        if let Some(named) = bearer.get("resource_metadata") {
            candidates.push(named.to_owned());
        }
        let origin = origin_of(&resource_url);
        let path = resource_url.path().trim_end_matches('/');
        if !path.is_empty() {
            candidates.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        let mut protected = None;
        for candidate in &candidates {
            if let Some(document) = self
                .get_json(fetcher, UrlRole::ResourceMetadata, candidate)
                .await?
            {
                protected = Some(document);
                break;
            }
        }
        let (issuer, scopes_supported) = match &protected {
            Some(document) => {
                let advertised = document
                    .get("resource")
                    .and_then(Value::as_str)
                    .ok_or("the protected resource metadata has no `resource`")?;
                if !covers(advertised, &resource_url) {
                    return Err(AuthError::Failed(format!(
                        "the protected resource metadata describes {}, not {resource}; refusing to authorize",
                        advertised.escape_debug()
                    )));
                }
                // The protected resource's own identifier is the RFC 8707 indicator.
                resource = advertised.trim_end_matches('/').to_owned();
                let issuer = document
                    .get("authorization_servers")
                    .and_then(Value::as_array)
                    .and_then(|servers| servers.first())
                    .and_then(Value::as_str)
                    .ok_or("the protected resource metadata lists no authorization server")?
                    .to_owned();
                let scopes = string_list(document.get("scopes_supported"));
                (issuer, scopes)
            }
            // 2025-03-26 servers: the MCP server's origin is the authorization server.
            None => (origin.clone(), Vec::new()),
        };
        fetcher.check(UrlRole::AuthorizationServer, &issuer)?;
        // Named by resource metadata, the issuer must match its metadata exactly. Without
        // resource metadata (2025-03-26) the origin is only where metadata is looked for,
        // and the metadata's own issuer is adopted.
        let require_match = protected.is_some();
        let metadata = self
            .authorization_server_metadata(fetcher, &issuer, require_match)
            .await?;
        let issuer = match (&metadata, require_match) {
            (Some(document), false) => document
                .get("issuer")
                .and_then(Value::as_str)
                .unwrap_or(&issuer)
                .to_owned(),
            _ => issuer,
        };
        let legacy_fallback = protected.is_none() && metadata.is_none();
        let metadata = metadata.unwrap_or(Value::Null);
        let endpoint = |name: &str, fallback: &str| -> Result<String, AuthError> {
            match metadata.get(name).and_then(Value::as_str) {
                Some(url) => Ok(url.to_owned()),
                None if legacy_fallback => Ok(format!("{issuer}{fallback}")),
                None => Err(AuthError::Failed(format!(
                    "the authorization server metadata has no `{name}`"
                ))),
            }
        };
        if !legacy_fallback {
            let methods = string_list(metadata.get("code_challenge_methods_supported"));
            if !methods.iter().any(|m| m == "S256") {
                return Err("the authorization server does not advertise PKCE with S256; refusing to authorize without it".into());
            }
        }
        let authorization_endpoint = endpoint("authorization_endpoint", "/authorize")?;
        let token_endpoint = endpoint("token_endpoint", "/token")?;
        fetcher.check(UrlRole::AuthorizationEndpoint, &authorization_endpoint)?;
        fetcher.check(UrlRole::TokenEndpoint, &token_endpoint)?;
        let registration_endpoint = match metadata
            .get("registration_endpoint")
            .and_then(Value::as_str)
        {
            Some(url) => Some(url.to_owned()),
            None if legacy_fallback => Some(format!("{issuer}/register")),
            None => None,
        };
        let mut scopes_supported = scopes_supported;
        if scopes_supported.is_empty() && protected.is_none() {
            scopes_supported = string_list(metadata.get("scopes_supported"));
        }
        Ok(Discovery {
            resource,
            issuer,
            metadata,
            authorization_endpoint,
            token_endpoint,
            registration_endpoint,
            scopes_supported,
        })
    }

    /// RFC 8414 then OpenID discovery; with `require_match`, the document's issuer must equal
    /// `issuer` exactly.
    async fn authorization_server_metadata(
        &self,
        fetcher: &Fetcher,
        issuer: &str,
        require_match: bool,
    ) -> Result<Option<Value>, AuthError> {
        let url = Url::parse(issuer).map_err(|e| {
            AuthError::Failed(format!(
                "the authorization server `{}` is not a URL: {e}",
                issuer.escape_debug()
            ))
        })?;
        let origin = origin_of(&url);
        let path = url.path().trim_end_matches('/');
        let candidates = if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        };
        for candidate in candidates {
            if let Some(document) = self
                .get_json(fetcher, UrlRole::AuthorizationServerMetadata, &candidate)
                .await?
            {
                let advertised = document.get("issuer").and_then(Value::as_str).unwrap_or("");
                if require_match && advertised != issuer {
                    return Err(AuthError::Failed(format!(
                        "the authorization server metadata at {candidate} names issuer {advertised:?}, not {issuer:?}; refusing to use it"
                    )));
                }
                return Ok(Some(document));
            }
        }
        Ok(None)
    }

    /// A JSON document, `None` on 4xx (try the next location). The URL is judged first.
    async fn get_json(
        &self,
        fetcher: &Fetcher,
        role: UrlRole,
        url: &str,
    ) -> Result<Option<Value>, AuthError> {
        let parsed = fetcher.check(role, url)?;
        let response = fetcher
            .http
            .get(parsed.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| fetcher.unsent(role, url, &e, &format!("could not fetch {parsed}")))?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let body = read_body(response, MAX_OAUTH_BODY_BYTES)
            .await
            .map_err(|e| AuthError::Failed(format!("could not read {parsed}: {e}")))?;
        Ok(serde_json::from_slice(&body).ok())
    }

    /// Obtains a client identity for this authorization server.
    async fn register(
        &self,
        fetcher: &Fetcher,
        discovery: &Discovery,
    ) -> Result<RegisteredClient, AuthError> {
        let methods = string_list(
            discovery
                .metadata
                .get("token_endpoint_auth_methods_supported"),
        );
        if let Some(pre) = &self.config.pre_registered {
            let signing_key = pre.private_key_pem.clone().map(|pem| {
                let algorithm = pre
                    .signing_algorithm
                    .clone()
                    .unwrap_or_else(|| "ES256".into());
                (pem, algorithm)
            });
            let auth_method = match signing_key {
                Some(_) => "private_key_jwt".to_owned(),
                None => choose_auth_method(&methods, pre.client_secret.is_some(), None),
            };
            return Ok(RegisteredClient {
                issuer: discovery.issuer.clone(),
                client_id: pre.client_id.clone(),
                client_secret: pre.client_secret.clone(),
                auth_method,
                signing_key,
            });
        }
        let cimd = discovery
            .metadata
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            == Some(true);
        if let (true, Some(url)) = (cimd, &self.config.client_metadata_url) {
            return Ok(RegisteredClient {
                issuer: discovery.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                auth_method: "none".into(),
                signing_key: None,
            });
        }
        let Some(endpoint) = &discovery.registration_endpoint else {
            return Err("the authorization server offers no registration and no client is configured; register a client and configure its id".into());
        };
        let parsed = fetcher.check(UrlRole::RegistrationEndpoint, endpoint)?;
        let request = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "application_type": "native",
            "token_endpoint_auth_method": if methods.is_empty() || methods.iter().any(|m| m == "none") { "none" } else { methods[0].as_str() },
        });
        let response = fetcher
            .http
            .post(parsed)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.to_string())
            .send()
            .await
            .map_err(|e| {
                fetcher.unsent(
                    UrlRole::RegistrationEndpoint,
                    endpoint,
                    &e,
                    "client registration failed",
                )
            })?;
        let status = response.status();
        let body = json_body(response).await;
        if !status.is_success() {
            return Err(AuthError::Failed(format!(
                "client registration was refused ({status}): {}",
                error_code(&body)
            )));
        }
        let client_id = body
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or("the registration response has no client_id")?
            .to_owned();
        let client_secret = body
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let auth_method = choose_auth_method(
            &methods,
            client_secret.is_some(),
            body.get("token_endpoint_auth_method")
                .and_then(Value::as_str),
        );
        Ok(RegisteredClient {
            issuer: discovery.issuer.clone(),
            client_id,
            client_secret,
            auth_method,
            signing_key: None,
        })
    }

    /// The authorization-code flow with PKCE.
    async fn authorize(
        &self,
        authorization: &Authorization<'_>,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let Authorization {
            fetcher,
            driver,
            discovery,
            client,
        } = *authorization;
        let verifier = random_token(48)?;
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token(24)?;
        let mut scopes: Vec<String> = scopes.iter().cloned().collect();
        let offers_offline = string_list(discovery.metadata.get("scopes_supported"))
            .iter()
            .any(|s| s == "offline_access");
        if self.config.want_refresh_tokens
            && offers_offline
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".into());
        }
        let mut url = fetcher.check(
            UrlRole::AuthorizationEndpoint,
            &discovery.authorization_endpoint,
        )?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.config.redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &discovery.resource);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
        }
        let redirect = driver.authorize(url).await?;
        let param = |name: &str| {
            redirect
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        // RFC 9207: an `iss` is compared exactly, before anything else in the answer is used.
        match param("iss") {
            Some(iss) if iss != discovery.issuer => {
                return Err(AuthError::Failed(format!(
                    "the authorization response came from issuer {iss:?}, not {:?}; rejected",
                    discovery.issuer
                )));
            }
            None if discovery
                .metadata
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                == Some(true) =>
            {
                return Err("the authorization server promised an `iss` parameter but the response had none; rejected".into());
            }
            _ => {}
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return Err(
                "the authorization response's state does not match the request; rejected".into(),
            );
        }
        if let Some(error) = param("error") {
            return Err(AuthError::Failed(format!(
                "the authorization was refused: {}",
                error.escape_debug()
            )));
        }
        let code = param("code").ok_or("the authorization response has no code")?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", discovery.resource.clone()),
        ];
        self.token_request(fetcher, &discovery.token_endpoint(), client, form)
            .await
    }

    /// Cross-app access: exchange the ID token at the identity provider for an ID-JAG
    /// (RFC 8693), then present it with the JWT-bearer grant (RFC 7523).
    async fn cross_app_access(
        &self,
        fetcher: &Fetcher,
        discovery: &Discovery,
        client: &RegisteredClient,
        identity: &IdentityAssertion,
    ) -> Result<Tokens, AuthError> {
        let idp_token_endpoint = fetcher.check(
            UrlRole::IdentityProviderTokenEndpoint,
            &identity.idp_token_endpoint,
        )?;
        let mut exchange = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("subject_token", identity.id_token.clone()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", discovery.issuer.clone()),
            ("resource", discovery.resource.clone()),
        ];
        if let Some(idp_client_id) = &identity.idp_client_id {
            exchange.push(("client_id", idp_client_id.clone()));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(exchange.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = fetcher
            .http
            .post(idp_token_endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                fetcher.unsent(
                    UrlRole::IdentityProviderTokenEndpoint,
                    &identity.idp_token_endpoint,
                    &e,
                    "the identity provider did not answer the token exchange",
                )
            })?;
        let status = response.status();
        let answer = json_body(response).await;
        if !status.is_success() {
            return Err(AuthError::Failed(format!(
                "the identity provider refused the token exchange ({status}): {}",
                error_code(&answer)
            )));
        }
        let grant = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or("the token exchange returned no identity assertion")?
            .to_owned();
        let form = vec![
            ("grant_type", JWT_BEARER_GRANT.to_owned()),
            ("assertion", grant),
            ("resource", discovery.resource.clone()),
        ];
        self.token_request(fetcher, &discovery.token_endpoint(), client, form)
            .await
    }

    /// The client credentials grant, for servers that only serve machine clients.
    async fn client_credentials(
        &self,
        fetcher: &Fetcher,
        discovery: &Discovery,
        client: &RegisteredClient,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", discovery.resource.clone()),
        ];
        if !scopes.is_empty() {
            form.push((
                "scope",
                scopes.iter().cloned().collect::<Vec<_>>().join(" "),
            ));
        }
        self.token_request(fetcher, &discovery.token_endpoint(), client, form)
            .await
    }

    async fn refresh(
        &self,
        fetcher: &Fetcher,
        endpoint: &TokenEndpoint,
        client: &RegisteredClient,
        refresh_token: &str,
    ) -> Result<Tokens, AuthError> {
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
            ("resource", endpoint.resource.clone()),
        ];
        self.token_request(fetcher, endpoint, client, form).await
    }

    async fn token_request(
        &self,
        fetcher: &Fetcher,
        endpoint: &TokenEndpoint,
        client: &RegisteredClient,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<Tokens, AuthError> {
        let url = fetcher.check(UrlRole::TokenEndpoint, &endpoint.url)?;
        let mut request = fetcher.http.post(url);
        if let Some((pem, algorithm)) = &client.signing_key {
            let assertion = client_assertion(&client.client_id, &endpoint.issuer, pem, algorithm)?;
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
            ));
            form.push(("client_assertion", assertion));
            form.push(("client_id", client.client_id.clone()));
        } else {
            match (client.auth_method.as_str(), &client.client_secret) {
                ("client_secret_basic", Some(secret)) => {
                    let encode = |s: &str| {
                        url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                    };
                    let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                        "{}:{}",
                        encode(&client.client_id),
                        encode(secret)
                    ));
                    request = request.header(
                        reqwest::header::AUTHORIZATION,
                        format!("Basic {credentials}"),
                    );
                }
                ("client_secret_post", Some(secret)) => {
                    form.push(("client_id", client.client_id.clone()));
                    form.push(("client_secret", secret.clone()));
                }
                _ => form.push(("client_id", client.client_id.clone())),
            }
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                fetcher.unsent(
                    UrlRole::TokenEndpoint,
                    &endpoint.url,
                    &e,
                    "the token endpoint did not answer",
                )
            })?;
        let status = response.status();
        let body = json_body(response).await;
        if !status.is_success() {
            return Err(AuthError::Failed(format!(
                "the token request was refused ({status}): {}",
                error_code(&body)
            )));
        }
        let access = body
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or("the token response has no access_token")?
            .to_owned();
        let issued = SystemTime::now();
        let lifetime = body
            .get("expires_in")
            .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
            .map(Duration::from_secs);
        Ok(Tokens {
            access,
            refresh: body
                .get("refresh_token")
                .and_then(Value::as_str)
                .map(str::to_owned),
            issuer: endpoint.issuer.clone(),
            endpoint: Some(endpoint.clone()),
            expires_at: lifetime.and_then(|lifetime| issued.checked_add(lifetime)),
            refresh_at: lifetime.and_then(|lifetime| Tokens::refresh_time(issued, lifetime)),
        })
    }
}

/// What the authorization-code flow works with.
#[derive(Clone, Copy)]
struct Authorization<'a> {
    fetcher: &'a Fetcher,
    driver: &'a dyn AuthorizationDriver,
    discovery: &'a Discovery,
    client: &'a RegisteredClient,
}

/// An OAuth error response's `error` code, escaped (server text), or a placeholder.
fn error_code(body: &Value) -> String {
    body.get("error").and_then(Value::as_str).map_or_else(
        || "no error code".to_owned(),
        |e| e.escape_debug().to_string(),
    )
}

/// The most read of an OAuth metadata, registration or token response (small JSON
/// documents; a server sending more is not waited for).
const MAX_OAUTH_BODY_BYTES: usize = 1024 * 1024;

/// A response's body as JSON, read up to [`MAX_OAUTH_BODY_BYTES`]; `Value::Null` when it is
/// not JSON, too large or unreadable (callers then report the status or a missing field).
async fn json_body(response: reqwest::Response) -> Value {
    read_body(response, MAX_OAUTH_BODY_BYTES)
        .await
        .ok()
        .and_then(|body| serde_json::from_slice(&body).ok())
        .unwrap_or(Value::Null)
}

impl Authorizer for OAuthClient {
    fn authorization(&self) -> Option<String> {
        self.bearer_value()
    }

    fn challenge(
        &self,
        challenge: AuthChallenge,
    ) -> Pin<Box<dyn Future<Output = Result<bool, String>> + Send + '_>> {
        Box::pin(async move {
            self.answer_challenge(challenge)
                .await
                .map_err(|error| error.to_string())
        })
    }

    fn before_send(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.renew_if_due())
    }
}

/// A `private_key_jwt` client assertion (RFC 7523): signed with the client's PKCS#8 key,
/// issued by and about the client, for the authorization server, valid five minutes.
fn client_assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
    algorithm: &str,
) -> Result<String, String> {
    let der_b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("");
    let der = base64::engine::general_purpose::STANDARD
        .decode(der_b64.trim())
        .map_err(|_| "the private key is not PEM (PKCS#8)".to_owned())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = json!({"alg": algorithm, "typ": "JWT"});
    let claims = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + 300, "jti": random_token(16)?});
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let signing_input = format!("{}.{}", b64(&header), b64(&claims));
    let rng = ring::rand::SystemRandom::new();
    let signature = match algorithm {
        "ES256" => {
            let key = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &rng,
            )
            .map_err(|_| "the private key is not a P-256 PKCS#8 key".to_owned())?;
            key.sign(&rng, signing_input.as_bytes())
                .map_err(|_| "signing the client assertion failed".to_owned())?
                .as_ref()
                .to_vec()
        }
        "RS256" => {
            let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
                .map_err(|_| "the private key is not an RSA PKCS#8 key".to_owned())?;
            let mut signature = vec![0; key.public().modulus_len()];
            key.sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "signing the client assertion failed".to_owned())?;
            signature
        }
        other => {
            return Err(format!(
                "client assertions signed with {other} are not supported (ES256, RS256)"
            ));
        }
    };
    Ok(format!(
        "{signing_input}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// Token endpoint client authentication: what registration said, else the best the server
/// supports for the kind of client we are.
fn choose_auth_method(supported: &[String], has_secret: bool, registered: Option<&str>) -> String {
    if let Some(method) = registered {
        return method.to_owned();
    }
    if !has_secret {
        return "none".into();
    }
    let offers = |m: &str| supported.is_empty() || supported.iter().any(|s| s == m);
    if offers("client_secret_basic") {
        "client_secret_basic".into()
    } else if offers("client_secret_post") {
        "client_secret_post".into()
    } else {
        "none".into()
    }
}

/// Whether protected-resource metadata for `advertised` may describe `server`: same origin,
/// and the advertised path is the server's path or a parent of it on a segment boundary.
fn covers(advertised: &str, server: &Url) -> bool {
    let Ok(advertised) = Url::parse(advertised) else {
        return false;
    };
    if advertised.origin() != server.origin() {
        return false;
    }
    let parent = advertised.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == parent || path.starts_with(&format!("{parent}/"))
}

/// The MCP server's canonical URI for RFC 8707: no fragment, no query, no trailing slash.
fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.set_query(None);
    url.as_str().trim_end_matches('/').to_owned()
}

fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn string_list(value: Option<&Value>) -> Vec<String> {
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
fn random_token(bytes: usize) -> Result<String, String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| format!("no randomness available: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_times_never_overflow() {
        let issued = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Tokens::refresh_time(issued, Duration::from_secs(3600));
        assert_eq!(hour, Some(issued + Duration::from_secs(3540)));
        let short = Tokens::refresh_time(issued, Duration::from_secs(30));
        assert_eq!(short, Some(issued + Duration::from_secs(15)));
        assert_eq!(Tokens::refresh_time(issued, Duration::MAX), None);
    }

    #[test]
    fn resources_and_url_safety() {
        let url = Url::parse("https://mcp.example.test/mcp/?x=1#frag").expect("url");
        assert_eq!(canonical_resource(&url), "https://mcp.example.test/mcp");
        assert!(covers("https://mcp.example.test", &url));
        assert!(covers("https://mcp.example.test/mcp/", &url));
        assert!(!covers("https://mcp.example.test/mc", &url));
        assert!(!covers("https://other.example.test/mcp", &url));
        assert_eq!(
            choose_auth_method(&["client_secret_post".into()], true, None),
            "client_secret_post"
        );
        assert_eq!(choose_auth_method(&[], false, None), "none");
        let verifier = random_token(48).expect("random");
        assert!(
            verifier.len() >= 43
                && verifier
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
