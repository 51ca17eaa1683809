//! The OAuth client for one MCP server, as the transport's authorizer: its settings,
//! what it may do to obtain credentials ([`Acquire`]), the credentials it presents (Bearer,
//! or DPoP with a proof per request), and its answer to a server's challenge: renew,
//! step up, honour a DPoP nonce, or discover, identify and run a grant.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_http::{
    AuthChallenge, AuthorizeError, AuthorizeFuture, Authorizer, ChallengeOutcome, Credentials,
    RequestTarget,
};

use crate::challenge::BearerChallenge;
use crate::discovery::{Discovery, Needs, discover, normalised};
use crate::dpop::{Dpop, NonceFrom, ProofFor, USE_DPOP_NONCE};
use crate::driver::{AuthorizationDriver, DeviceDriver};
use crate::error::{AuthError, LoginNeeded};
use crate::fetch::Fetcher;
use crate::grants::{Grants, JWT_BEARER_GRANT, TOKEN_EXCHANGE_GRANT, Tokens};
use crate::identity::{
    ClientCredentials, IdentityAssertion, RegisteredClient, SubjectToken, WorkloadIdentity,
    register,
};
use crate::shared::{SharedTokens, is_newer};
use crate::store::{SavedAuthorization, StoreError, StoreKey, TokenStore};

/// How the client obtains credentials it does not hold.
#[derive(Clone)]
pub enum Acquire {
    /// Discover the authorization server, obtain a client identity and authorize, with
    /// this driver for the user's step: a login, or a host allowed to authorize.
    Authorize(Arc<dyn AuthorizationDriver>),
    /// Discover and obtain a client identity as [`Acquire::Authorize`] does, then run the
    /// device authorization grant (RFC 8628) with this driver showing the user the code: a
    /// login on a machine without a browser. An authorization server that does not offer
    /// it ends the login with [`AuthError::DeviceGrantNotOffered`], naming
    /// `fallback_command`.
    Device {
        /// Shows the user the code and where to enter it.
        driver: Arc<dyn DeviceDriver>,
        /// The login to suggest instead (e.g. `switchboard login NAME --no-browser`).
        fallback_command: String,
    },
    /// Exchange a caller's access token for one of this server's own (RFC 8693), as the
    /// pre-registered client ([`OAuthConfig::pre_registered`]), at the authorization server
    /// the server's metadata names — only when that is `issuer`, the one the operator
    /// trusts with its callers' tokens (else [`AuthError::UntrustedExchangeIssuer`] before
    /// anything is sent), and only when it offers the grant (else
    /// [`AuthError::ExchangeNotOffered`]). A gateway calling for one of its clients: never
    /// a user's step, never a registration, never the caller's token sent to a server.
    OnBehalfOf {
        /// The caller's access token.
        subject: SubjectToken,
        /// The issuer exchanges happen at (exactly as its metadata says).
        issuer: String,
        /// The scopes asked for; none: what the server's challenge names, else what the
        /// authorization server supports.
        scopes: Vec<String>,
    },
    /// Only what a login saved: the stored tokens, refreshed at the token endpoint saved
    /// with them. Never fetches metadata, never registers, never follows a URL a 401
    /// names; anything more fails with [`AuthError::NeedsLogin`] for this server.
    SavedLogin {
        /// The server's configured name, for the message.
        server_name: String,
        /// The command that logs in to it, for the message (e.g. `switchboard login NAME`).
        login_command: String,
    },
    /// What a workload does on its own: the saved tokens, and when they are refused,
    /// discovery and the workload identity ([`OAuthConfig::workload_identity`]) presented
    /// with the JWT-bearer grant, registering first where that is how the client gets an
    /// id. Never a user's step: an authorization server that does not take the identity
    /// fails with [`AuthError::WorkloadIdentityNotAccepted`].
    Unattended,
}

impl fmt::Debug for Acquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acquire::Authorize(_) => f.write_str("Authorize(..)"),
            Acquire::Unattended => f.write_str("Unattended"),
            Acquire::Device {
                fallback_command, ..
            } => f
                .debug_struct("Device")
                .field("fallback_command", fallback_command)
                .finish_non_exhaustive(),
            Acquire::OnBehalfOf { issuer, .. } => f
                .debug_struct("OnBehalfOf")
                .field("issuer", issuer)
                .finish_non_exhaustive(),
            Acquire::SavedLogin {
                server_name,
                login_command,
            } => f
                .debug_struct("SavedLogin")
                .field("server_name", server_name)
                .field("login_command", login_command)
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
    /// A workload identity, presented with the JWT-bearer grant when the server offers it
    /// (and no enterprise identity is configured).
    pub workload_identity: Option<WorkloadIdentity>,
    /// Where tokens and registrations are kept between runs, and the server they are for.
    pub store: Option<StoreBinding>,
}

/// A token store and the MCP server URL whose authorization it keeps.
#[derive(Clone)]
pub struct StoreBinding {
    /// The store.
    pub store: TokenStore,
    /// The MCP server URL (the key in the store).
    pub server_url: String,
    /// The identity whose authorization it is (`switchboard login SERVER --as IDENTITY`);
    /// `None` for the user's own.
    pub on_behalf_of: Option<String>,
    /// The store other processes using this authorization share (`shared.rs`): renewals
    /// take turns there and adopt what another process got. `None`: this process alone.
    pub shared: Option<Arc<dyn SharedTokens>>,
}

impl fmt::Debug for StoreBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreBinding")
            .field("store", &self.store)
            .field("server_url", &self.server_url)
            .field("on_behalf_of", &self.on_behalf_of)
            .field("shared", &self.shared.is_some())
            .finish()
    }
}

impl StoreBinding {
    fn key(&self) -> StoreKey {
        StoreKey {
            server_url: self.server_url.clone(),
            on_behalf_of: self.on_behalf_of.clone(),
        }
    }

    fn load(&self) -> Result<Option<SavedAuthorization>, StoreError> {
        self.store.load_for(&self.key())
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("pre_registered", &self.pre_registered)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("acquire", &self.acquire)
            .field("workload_identity", &self.workload_identity)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct AuthState {
    client: Option<RegisteredClient>,
    tokens: Option<Tokens>,
    scopes: BTreeSet<String>,
    step_ups: u32,
    /// A refresh token the authorization server refused: never sent again (the next
    /// renewal goes straight to what the client may do without it, e.g. "log in").
    refused_refresh: Option<String>,
    /// Why this client's device login failed: it runs once, and a second challenge (the
    /// handshake's next request) gets the same answer instead of another code.
    device_failure: Option<String>,
}

/// An OAuth 2.1 client for one MCP server; give it to the HTTP transport as its authorizer.
pub struct OAuthClient {
    config: OAuthConfig,
    /// Set up for the server on first use.
    fetcher: tokio::sync::OnceCell<Fetcher>,
    state: tokio::sync::Mutex<AuthState>,
    /// The access token presented now.
    presented: Mutex<Option<Presented>>,
    /// This client's DPoP key, made when a server first binds tokens to one.
    dpop: Mutex<Option<Arc<Dpop>>>,
    /// When the current token should be refreshed (read before every request).
    refresh_at: Mutex<Option<SystemTime>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.config)
            .field("authorized", &self.authorization_value().is_some())
            .finish()
    }
}

/// The access token presented now, and how.
#[derive(Clone)]
struct Presented {
    access: String,
    /// DPoP-bound: the DPoP scheme and a proof per request.
    dpop: bool,
}

impl Presented {
    fn authorization(&self) -> String {
        let scheme = if self.dpop { "DPoP" } else { "Bearer" };
        format!("{scheme} {}", self.access)
    }
}

/// The grant an authorization uses.
enum Grant<'a> {
    TokenExchange {
        subject: &'a SubjectToken,
        scopes: &'a [String],
    },
    CrossAppAccess(&'a IdentityAssertion),
    WorkloadIdentity(&'a WorkloadIdentity),
    ClientCredentials,
    AuthorizationCode,
    Device(&'a dyn DeviceDriver),
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
            presented: Mutex::new(None),
            dpop: Mutex::new(None),
            refresh_at: Mutex::new(None),
        };
        if let Some(binding) = &client.config.store {
            match binding.load() {
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

    fn presented(&self) -> Option<Presented> {
        self.presented
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The `Authorization` value presented now.
    fn authorization_value(&self) -> Option<String> {
        self.presented().map(|p| p.authorization())
    }

    /// This client's DPoP key, made on first use; one per client.
    fn dpop_key(&self) -> Result<Arc<Dpop>, AuthError> {
        let mut slot = self.dpop.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dpop) = &*slot {
            return Ok(dpop.clone());
        }
        let fresh = Arc::new(Dpop::generate()?);
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// The DPoP key, if this client has one.
    fn current_dpop(&self) -> Option<Arc<Dpop>> {
        self.dpop.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What grants work with, for this client and server.
    fn grants<'a>(&'a self, fetcher: &'a Fetcher, dpop: Option<&'a Dpop>) -> Grants<'a> {
        Grants {
            fetcher,
            config: &self.config,
            dpop,
        }
    }

    /// Makes a saved login current (it is already in the store).
    fn install_saved(&self, state: &mut AuthState, saved: &SavedAuthorization) {
        if let Some(exported) = &saved.dpop_key {
            match Dpop::import(exported) {
                Ok(dpop) => {
                    *self.dpop.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(dpop))
                }
                Err(problem) => {
                    // Tokens bound to a key we cannot use are no tokens.
                    tracing::warn!(%problem, "the saved DPoP key cannot be used; ignoring the saved login");
                    return;
                }
            }
        }
        let tokens = Tokens::from_saved(saved);
        self.set_presented(&tokens);
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
        self.set_presented(&tokens);
        self.set_refresh_at(tokens.refresh_at);
        let saved = match (&self.config.store, self.saved_of(state, &tokens)) {
            (Some(binding), Some(saved)) => binding.store.save(&saved),
            _ => Ok(()),
        };
        state.tokens = Some(tokens);
        saved
    }

    /// `tokens` as the store keeps them, with the client identity (none without a store
    /// or a client).
    fn saved_of(&self, state: &AuthState, tokens: &Tokens) -> Option<SavedAuthorization> {
        let (binding, client) = (self.config.store.as_ref()?, state.client.as_ref()?);
        // Bound tokens are kept with the key they are bound to.
        let dpop_key = match tokens.dpop {
            true => self.current_dpop().map(|dpop| dpop.exported()),
            false => None,
        };
        Some(SavedAuthorization {
            server_url: binding.server_url.clone(),
            issuer: tokens.issuer.clone(),
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            auth_method: client.auth_method.clone(),
            access_token: tokens.access.clone(),
            refresh_token: tokens.refresh.clone(),
            expires_at: unix_seconds(tokens.expires_at),
            token_endpoint: tokens.endpoint.as_ref().map(|e| e.url.clone()),
            resource: tokens.endpoint.as_ref().map(|e| e.resource.clone()),
            dpop_key,
            on_behalf_of: binding.on_behalf_of.clone(),
        })
    }

    fn set_presented(&self, tokens: &Tokens) {
        *self.presented.lock().unwrap_or_else(|p| p.into_inner()) = Some(Presented {
            access: tokens.access.clone(),
            dpop: tokens.dpop,
        });
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
            return Err(AuthError::WrongServer {
                authorizes: fetcher.server_url.clone(),
                asked: server.to_string(),
            });
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
        // Turns are for spending a refresh token; without one there is nothing to race for
        // (and no lock file is made for a server never logged in to).
        let refreshable = state.tokens.as_ref().is_some_and(|t| t.refresh.is_some());
        let Some((binding, shared)) = self
            .config
            .store
            .as_ref()
            .and_then(|binding| Some((binding, binding.shared.clone()?)))
            .filter(|_| refreshable)
        else {
            return self.renew_alone(state, server_url).await;
        };
        let key = binding.key();
        let lock = match shared.lock(&key).await {
            Ok(lock) => Some(lock),
            Err(failure) => {
                tracing::warn!(%failure, "the shared token store cannot be locked; renewing alone");
                None
            }
        };
        let renewed = self
            .renew_taking_turns(state, server_url, shared.as_ref(), &key)
            .await;
        if let Some(lock) = lock {
            shared.unlock(lock).await;
        }
        renewed
    }

    /// A renewal under the shared store's lock: what another process published since, when
    /// it is newer than ours, else a renewal of our own, published.
    async fn renew_taking_turns(
        &self,
        state: &mut AuthState,
        server_url: &str,
        shared: &dyn SharedTokens,
        key: &StoreKey,
    ) -> bool {
        match shared.load(key).await {
            Ok(Some(theirs)) => {
                let (ours, expiry) = match &state.tokens {
                    Some(tokens) => (tokens.access.as_str(), unix_seconds(tokens.expires_at)),
                    None => ("", None),
                };
                if is_newer(&theirs, ours, expiry) {
                    self.install_saved(state, &theirs);
                    if let Some(binding) = &self.config.store
                        && let Err(problem) = binding.store.save(&theirs)
                    {
                        tracing::warn!(%problem, "the shared tokens could not be saved here");
                    }
                    return true;
                }
            }
            Ok(None) => {}
            Err(failure) => {
                tracing::warn!(%failure, "the shared token store cannot be read; renewing alone")
            }
        }
        if !self.renew_alone(state, server_url).await {
            return false;
        }
        let published = state
            .tokens
            .as_ref()
            .and_then(|tokens| self.saved_of(state, tokens));
        if let Some(saved) = published
            && let Err(failure) = shared.save(&saved).await
        {
            tracing::warn!(%failure, "the renewed tokens could not be shared");
        }
        true
    }

    /// A renewal by this process alone: a newer login in the token file, else a refresh.
    async fn renew_alone(&self, state: &mut AuthState, server_url: &str) -> bool {
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
        let Ok(Some(saved)) = binding.load() else {
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
    async fn refresh_current(&self, state: &mut AuthState, server_url: &str) -> Option<Tokens> {
        let tokens = state.tokens.as_ref()?;
        let refresh_token = tokens.refresh.as_ref()?;
        if state.refused_refresh.as_ref() == Some(refresh_token) {
            return None;
        }
        let client = state.client.as_ref()?;
        let endpoint = tokens.endpoint.as_ref()?;
        let fetcher = self.fetcher(server_url).await.ok()?;
        let dpop = if endpoint.dpop {
            Some(self.dpop_key().ok()?)
        } else {
            None
        };
        match self
            .grants(fetcher, dpop.as_deref())
            .refresh(endpoint, client, refresh_token)
            .await
        {
            Ok(fresh) => Some(fresh),
            Err(problem) => {
                tracing::debug!(%problem, "the refresh failed");
                if problem.is_refused() {
                    state.refused_refresh = Some(refresh_token.clone());
                }
                None
            }
        }
    }

    /// Answers a challenge from the server: [`ChallengeOutcome::Retry`] when new
    /// credentials (or the server's DPoP nonce) are in place and the request should be
    /// sent again. What it may do depends on [`OAuthConfig::acquire`].
    pub async fn answer_challenge(
        &self,
        challenge: AuthChallenge,
    ) -> Result<ChallengeOutcome, AuthError> {
        let mut state = self.state.lock().await;
        let bearer = challenge
            .www_authenticate
            .as_deref()
            .and_then(BearerChallenge::parse)
            .unwrap_or_default();
        // RFC 9449 §9: the MCP server wants its nonce in our proofs.
        if let (Some(nonce), Some(dpop)) = (&challenge.dpop_nonce, self.current_dpop()) {
            let bound = self.presented().is_some_and(|p| p.dpop);
            if bound && bearer.get("error") == Some(USE_DPOP_NONCE) {
                dpop.set_nonce(NonceFrom::ResourceServer, nonce);
                return Ok(ChallengeOutcome::Retry);
            }
        }
        // Another request already obtained newer credentials: just send again.
        if challenge.presented != self.authorization_value() {
            return Ok(match self.presented() {
                Some(_) => ChallengeOutcome::Retry,
                None => ChallengeOutcome::Refused,
            });
        }
        let step_up = challenge.status == 403 && bearer.get("error") == Some("insufficient_scope");
        if step_up {
            state.step_ups += 1;
            if state.step_ups > self.config.max_step_ups {
                return Err(AuthError::TooManyStepUps {
                    limit: self.config.max_step_ups,
                });
            }
        } else if self.renew(&mut state, &challenge.resource).await {
            return Ok(ChallengeOutcome::Retry);
        }
        let driver = match &self.config.acquire {
            Acquire::Authorize(driver) => Some(driver.clone()),
            Acquire::Device { .. } => match &state.device_failure {
                Some(failure) => return Err(AuthError::DeviceLoginFailed(failure.clone())),
                None => None,
            },
            Acquire::OnBehalfOf { .. } if self.config.pre_registered.is_none() => {
                return Err(AuthError::NoExchangeClient);
            }
            Acquire::OnBehalfOf { .. } | Acquire::Unattended => None,
            Acquire::SavedLogin {
                server_name,
                login_command,
            } => {
                // A token file that cannot be used says so: a login would not help.
                if let Some(binding) = &self.config.store {
                    binding.load()?;
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
                    login_command: login_command.clone(),
                });
            }
        };
        let fetcher = self.fetcher(&challenge.resource).await?;
        let needs = match &self.config.acquire {
            Acquire::Device { .. } | Acquire::Unattended => Needs::NoRedirect,
            _ => Needs::CodeFlow,
        };
        let discovery = discover(fetcher, &challenge.resource, &bearer, needs).await?;
        if let Acquire::OnBehalfOf { issuer, .. } = &self.config.acquire
            && discovery.issuer != *issuer
        {
            return Err(AuthError::UntrustedExchangeIssuer {
                named: discovery.issuer.clone(),
                trusted: issuer.clone(),
            });
        }
        // Before any registration: a device login needs the server's device grant.
        if let Acquire::Device {
            fallback_command, ..
        } = &self.config.acquire
            && discovery.device_authorization_endpoint.is_none()
        {
            let failure = AuthError::DeviceGrantNotOffered {
                issuer: discovery.issuer.clone(),
                fallback_command: fallback_command.clone(),
            };
            state.device_failure = Some(failure.to_string());
            return Err(failure);
        }
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
            _ => register(&self.config, fetcher, &discovery).await?,
        };
        state.client = Some(client.clone());
        let dpop = if discovery.offers_dpop() {
            Some(self.dpop_key()?)
        } else {
            None
        };
        let grants = self.grants(fetcher, dpop.as_deref());
        let tokens = match self.grant_for(&discovery, &client)? {
            Grant::TokenExchange { subject, scopes } => {
                let asked = match scopes.is_empty() {
                    true => state.scopes.clone(),
                    false => scopes.iter().cloned().collect(),
                };
                grants
                    .exchange(&discovery, &client, subject, &asked)
                    .await?
            }
            Grant::CrossAppAccess(identity) => {
                grants
                    .cross_app_access(&discovery, &client, identity)
                    .await?
            }
            Grant::WorkloadIdentity(identity) => {
                grants
                    .workload_identity(&discovery, &client, identity, &state.scopes)
                    .await?
            }
            Grant::ClientCredentials => {
                grants
                    .client_credentials(&discovery, &client, &state.scopes)
                    .await?
            }
            Grant::Device(driver) => {
                match grants
                    .device(driver, &discovery, &client, &state.scopes)
                    .await
                {
                    Ok(tokens) => tokens,
                    Err(failure) => {
                        state.device_failure = Some(failure.to_string());
                        return Err(failure);
                    }
                }
            }
            Grant::AuthorizationCode => {
                if let Acquire::Unattended = self.config.acquire {
                    return Err(AuthError::WorkloadIdentityNotAccepted {
                        issuer: discovery.issuer.clone(),
                    });
                }
                let Some(driver) = driver else {
                    return Err(AuthError::NoClientIdentity);
                };
                grants
                    .authorize(driver.as_ref(), &discovery, &client, &state.scopes)
                    .await?
            }
        };
        // A login whose tokens cannot be kept has failed.
        self.adopt(&mut state, tokens)?;
        Ok(ChallengeOutcome::Retry)
    }

    /// The grant to use with this authorization server: token exchange for a caller
    /// ([`Acquire::OnBehalfOf`], nothing else); an identity the client holds, when the
    /// server takes JWT bearer assertions; client credentials for a confidential client of
    /// a machine-only server; else the authorization code flow.
    fn grant_for<'a>(
        &'a self,
        discovery: &Discovery,
        client: &RegisteredClient,
    ) -> Result<Grant<'a>, AuthError> {
        let grants = discovery.grants();
        let offers = |grant: &str| grants.iter().any(|g| g == grant);
        if let Acquire::OnBehalfOf {
            subject, scopes, ..
        } = &self.config.acquire
        {
            return match offers(TOKEN_EXCHANGE_GRANT) {
                true => Ok(Grant::TokenExchange { subject, scopes }),
                false => Err(AuthError::ExchangeNotOffered {
                    issuer: discovery.issuer.clone(),
                }),
            };
        }
        if let Acquire::Device { driver, .. } = &self.config.acquire {
            return Ok(Grant::Device(driver.as_ref()));
        }
        if offers(JWT_BEARER_GRANT) {
            if let Some(identity) = &self.config.identity_assertion {
                return Ok(Grant::CrossAppAccess(identity));
            }
            if let Some(identity) = &self.config.workload_identity {
                return Ok(Grant::WorkloadIdentity(identity));
            }
        }
        if offers("client_credentials") && !offers("authorization_code") && client.is_confidential()
        {
            return Ok(Grant::ClientCredentials);
        }
        Ok(Grant::AuthorizationCode)
    }
}

/// Seconds since the Unix epoch.
fn unix_seconds(at: Option<SystemTime>) -> Option<u64> {
    at.and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map(|since| since.as_secs())
}

impl Authorizer for OAuthClient {
    fn server_nonce(&self, nonce: &str) {
        // Only proofs for a DPoP-bound token carry a resource server's nonce.
        if self.presented().is_some_and(|p| p.dpop)
            && let Some(dpop) = self.current_dpop()
        {
            dpop.set_nonce(NonceFrom::ResourceServer, nonce);
        }
    }

    fn credentials(&self, request: &RequestTarget<'_>) -> Option<Credentials> {
        let presented = self.presented()?;
        let dpop = match (presented.dpop, self.current_dpop()) {
            (true, Some(dpop)) => {
                let proof = dpop.proof(ProofFor {
                    method: request.method.as_str(),
                    url: request.url,
                    access_token: Some(&presented.access),
                    nonce_from: NonceFrom::ResourceServer,
                });
                match proof {
                    Ok(proof) => Some(proof),
                    Err(problem) => {
                        tracing::warn!(%problem, "no DPoP proof could be made");
                        None
                    }
                }
            }
            _ => None,
        };
        Some(Credentials {
            authorization: presented.authorization(),
            dpop,
        })
    }

    fn challenge(
        &self,
        challenge: AuthChallenge,
    ) -> AuthorizeFuture<'_, Result<ChallengeOutcome, AuthorizeError>> {
        Box::pin(async move {
            self.answer_challenge(challenge)
                .await
                .map_err(AuthorizeError::new)
        })
    }

    fn before_send(&self) -> AuthorizeFuture<'_, ()> {
        Box::pin(self.renew_if_due())
    }
}
