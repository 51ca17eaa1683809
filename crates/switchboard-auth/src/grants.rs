//! Grants: the authorization-code flow with PKCE, the RFC 8707 `resource` parameter and
//! the RFC 9207 `iss` check; cross-app access (token exchange, then JWT bearer);
//! workload identity federation (JWT bearer, RFC 7523); client credentials; refresh; and
//! the token request they all end in, with a DPoP proof when the authorization server
//! binds tokens (retried once with its nonce when it asks, RFC 9449 §8).

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::client::OAuthConfig;
use crate::discovery::Discovery;
use crate::dpop::{Dpop, NonceFrom, ProofFor, USE_DPOP_NONCE};
use crate::driver::AuthorizationDriver;
use crate::error::{AuthError, MetadataProblem, ResponseProblem};
use crate::fetch::{Fetcher, b64url, error_code, form_body, json_body, random_token, string_list};
use crate::identity::{IdentityAssertion, RegisteredClient, SubjectToken, WorkloadIdentity};
use crate::policy::UrlRole;
use crate::store::SavedAuthorization;

/// The JWT-bearer grant type (RFC 7523 §2.1).
pub(crate) const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The token-exchange grant type (RFC 8693 §2.1).
pub(crate) const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// The token type of an OAuth access token (RFC 8693 §3).
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// An authorization server's token endpoint and what grants there are for.
#[derive(Clone)]
pub(crate) struct TokenEndpoint {
    /// The issuer (the audience of client assertions).
    pub(crate) issuer: String,
    /// The endpoint.
    pub(crate) url: String,
    /// The RFC 8707 resource indicator.
    pub(crate) resource: String,
    /// Whether requests to it carry a DPoP proof (the server binds tokens to the key).
    pub(crate) dpop: bool,
}

/// Tokens from one authorization.
#[derive(Clone)]
pub(crate) struct Tokens {
    pub(crate) access: String,
    pub(crate) refresh: Option<String>,
    pub(crate) issuer: String,
    /// Bound to this client's DPoP key (`token_type: DPoP`): presented with the DPoP
    /// scheme and a proof.
    pub(crate) dpop: bool,
    /// Where they were issued and are refreshed; `None` for tokens saved before the
    /// endpoint was kept with them (they cannot be refreshed without discovery).
    pub(crate) endpoint: Option<TokenEndpoint>,
    /// When the access token expires, if the server said.
    pub(crate) expires_at: Option<SystemTime>,
    /// When to refresh it: a little before it expires.
    pub(crate) refresh_at: Option<SystemTime>,
}

/// How long before expiry a token is refreshed: a minute, or half the token's lifetime
/// when that is shorter.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

impl Tokens {
    /// The refresh time for a token that lives `lifetime` from `issued`.
    /// `None` when the lifetime is too large to represent (a server's number; never a panic):
    /// such a token is treated as one that does not expire.
    pub(crate) fn refresh_time(issued: SystemTime, lifetime: Duration) -> Option<SystemTime> {
        issued
            .checked_add(lifetime)?
            .checked_sub(REFRESH_MARGIN.min(lifetime / 2))
    }

    /// Tokens as a login saved them for `server_url`.
    pub(crate) fn from_saved(saved: &SavedAuthorization) -> Tokens {
        let expires_at = saved
            .expires_at
            .and_then(|seconds| UNIX_EPOCH.checked_add(Duration::from_secs(seconds)));
        Tokens {
            access: saved.access_token.clone(),
            refresh: saved.refresh_token.clone(),
            issuer: saved.issuer.clone(),
            dpop: saved.dpop_key.is_some(),
            endpoint: saved.token_endpoint.clone().map(|url| TokenEndpoint {
                issuer: saved.issuer.clone(),
                url,
                resource: saved
                    .resource
                    .clone()
                    .unwrap_or_else(|| saved.server_url.trim_end_matches('/').to_owned()),
                dpop: saved.dpop_key.is_some(),
            }),
            expires_at,
            // The lifetime is not saved: refresh a margin before expiry.
            refresh_at: expires_at.and_then(|at| at.checked_sub(REFRESH_MARGIN)),
        }
    }
}

/// What grants work with: the server's fetcher, the client's settings and its DPoP key.
#[derive(Clone, Copy)]
pub(crate) struct Grants<'a> {
    pub(crate) fetcher: &'a Fetcher,
    pub(crate) config: &'a OAuthConfig,
    /// The client's DPoP key, for endpoints that bind tokens.
    pub(crate) dpop: Option<&'a Dpop>,
}

impl Grants<'_> {
    /// The authorization-code flow with PKCE.
    pub(crate) async fn authorize(
        &self,
        driver: &dyn AuthorizationDriver,
        discovery: &Discovery,
        client: &RegisteredClient,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let fetcher = self.fetcher;
        let verifier = random_token(48)?;
        let challenge = b64url(Sha256::digest(verifier.as_bytes()));
        let state = random_token(24)?;
        let scopes = self.user_scopes(discovery, scopes);
        let endpoint =
            discovery
                .authorization_endpoint
                .as_deref()
                .ok_or(AuthError::InvalidMetadata(
                    MetadataProblem::MissingEndpoint {
                        name: "authorization_endpoint",
                    },
                ))?;
        let mut url = fetcher.check(UrlRole::AuthorizationEndpoint, endpoint)?;
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
                return Err(AuthError::InvalidAuthorizationResponse(
                    ResponseProblem::WrongIssuer {
                        got: iss,
                        expected: discovery.issuer.clone(),
                    },
                ));
            }
            None if discovery
                .metadata
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                == Some(true) =>
            {
                return Err(AuthError::InvalidAuthorizationResponse(
                    ResponseProblem::MissingIssuer,
                ));
            }
            _ => {}
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return Err(AuthError::InvalidAuthorizationResponse(
                ResponseProblem::StateMismatch,
            ));
        }
        if let Some(error) = param("error") {
            return Err(AuthError::InvalidAuthorizationResponse(
                ResponseProblem::Denied(error),
            ));
        }
        let code = param("code").ok_or(AuthError::InvalidAuthorizationResponse(
            ResponseProblem::NoCode,
        ))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", discovery.resource.clone()),
        ];
        self.token_request(&discovery.token_endpoint(), client, form)
            .await
    }

    /// The scopes a user's authorization asks for: `scopes`, and `offline_access` when
    /// refresh tokens are wanted and the server offers it.
    pub(crate) fn user_scopes(
        &self,
        discovery: &Discovery,
        scopes: &BTreeSet<String>,
    ) -> Vec<String> {
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
        scopes
    }

    /// Cross-app access: exchange the ID token at the identity provider for an ID-JAG
    /// (RFC 8693), then present it with the JWT-bearer grant (RFC 7523).
    pub(crate) async fn cross_app_access(
        &self,
        discovery: &Discovery,
        client: &RegisteredClient,
        identity: &IdentityAssertion,
    ) -> Result<Tokens, AuthError> {
        let fetcher = self.fetcher;
        let role = UrlRole::IdentityProviderTokenEndpoint;
        let idp_token_endpoint = fetcher.check(role, &identity.idp_token_endpoint)?;
        let mut exchange = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
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
        let response = with_form(fetcher.http.post(idp_token_endpoint), &exchange)
            .send()
            .await
            .map_err(|e| fetcher.unsent(role, &identity.idp_token_endpoint, &e))?;
        let status = response.status();
        let answer = json_body(response).await;
        if !status.is_success() {
            return Err(AuthError::Refused {
                role,
                status: status.as_u16(),
                error: error_code(&answer),
            });
        }
        let grant = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or(AuthError::MissingField {
                role,
                field: "access_token",
            })?
            .to_owned();
        let form = vec![
            ("grant_type", JWT_BEARER_GRANT.to_owned()),
            ("assertion", grant),
            ("resource", discovery.resource.clone()),
        ];
        self.token_request(&discovery.token_endpoint(), client, form)
            .await
    }

    /// Workload identity federation: the workload's own token as a JWT-bearer assertion
    /// (RFC 7523 §2.1). A refusal is final: no retry, no other grant.
    pub(crate) async fn workload_identity(
        &self,
        discovery: &Discovery,
        client: &RegisteredClient,
        identity: &WorkloadIdentity,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let mut form = vec![
            ("grant_type", JWT_BEARER_GRANT.to_owned()),
            ("assertion", identity.assertion()?),
            ("resource", discovery.resource.clone()),
        ];
        push_scopes(&mut form, scopes);
        self.token_request(&discovery.token_endpoint(), client, form)
            .await
    }

    /// Token exchange (RFC 8693) for a gateway's caller: the caller's access token as the
    /// subject, an access token for this server (its `resource`) asked for, the gateway
    /// authenticated as its own client. The answer's token speaks for the caller.
    pub(crate) async fn exchange(
        &self,
        discovery: &Discovery,
        client: &RegisteredClient,
        subject: &SubjectToken,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
            ("subject_token", subject.0.clone()),
            ("subject_token_type", ACCESS_TOKEN_TYPE.to_owned()),
            ("requested_token_type", ACCESS_TOKEN_TYPE.to_owned()),
            ("resource", discovery.resource.clone()),
        ];
        push_scopes(&mut form, scopes);
        self.token_request(&discovery.token_endpoint(), client, form)
            .await
    }

    /// The client credentials grant, for servers that only serve machine clients.
    pub(crate) async fn client_credentials(
        &self,
        discovery: &Discovery,
        client: &RegisteredClient,
        scopes: &BTreeSet<String>,
    ) -> Result<Tokens, AuthError> {
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", discovery.resource.clone()),
        ];
        push_scopes(&mut form, scopes);
        self.token_request(&discovery.token_endpoint(), client, form)
            .await
    }

    /// New tokens for a refresh token, at the endpoint that issued it.
    pub(crate) async fn refresh(
        &self,
        endpoint: &TokenEndpoint,
        client: &RegisteredClient,
        refresh_token: &str,
    ) -> Result<Tokens, AuthError> {
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
            ("resource", endpoint.resource.clone()),
        ];
        self.token_request(endpoint, client, form).await
    }

    /// A token request: the client authenticated, a DPoP proof when the endpoint binds
    /// tokens, and one more attempt with the server's nonce when it asks for one.
    pub(crate) async fn token_request(
        &self,
        endpoint: &TokenEndpoint,
        client: &RegisteredClient,
        form: Vec<(&'static str, String)>,
    ) -> Result<Tokens, AuthError> {
        let fetcher = self.fetcher;
        let role = UrlRole::TokenEndpoint;
        let url = fetcher.check(role, &endpoint.url)?;
        let dpop = self.dpop.filter(|_| endpoint.dpop);
        let mut nonce_retried = false;
        loop {
            let mut form = form.clone();
            let mut request =
                client.authenticate(&endpoint.issuer, fetcher.http.post(url.clone()), &mut form)?;
            if let Some(dpop) = dpop {
                let proof = dpop.proof(ProofFor {
                    method: "POST",
                    url: &url,
                    access_token: None,
                    nonce_from: NonceFrom::AuthorizationServer,
                })?;
                request = request.header("DPoP", proof);
            }
            let response = with_form(request, &form)
                .send()
                .await
                .map_err(|e| fetcher.unsent(role, &endpoint.url, &e))?;
            let status = response.status();
            let nonce = response
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = json_body(response).await;
            if let (Some(dpop), Some(nonce)) = (dpop, &nonce) {
                dpop.set_nonce(NonceFrom::AuthorizationServer, nonce);
            }
            if !status.is_success() {
                let error = error_code(&body);
                // RFC 9449 §8: the server wants its nonce in the proof; once.
                let asks_nonce = error.as_deref() == Some(USE_DPOP_NONCE) && nonce.is_some();
                if dpop.is_some() && asks_nonce && !nonce_retried {
                    nonce_retried = true;
                    continue;
                }
                return Err(AuthError::Refused {
                    role,
                    status: status.as_u16(),
                    error,
                });
            }
            return tokens_from(&body, endpoint, dpop.is_some());
        }
    }
}

/// A form POST that wants JSON back.
pub(crate) fn with_form(
    request: reqwest::RequestBuilder,
    form: &[(&str, String)],
) -> reqwest::RequestBuilder {
    request
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(form_body(form))
}

/// Adds `scope` when there are scopes to ask for.
fn push_scopes(form: &mut Vec<(&'static str, String)>, scopes: &BTreeSet<String>) {
    if !scopes.is_empty() {
        form.push((
            "scope",
            scopes.iter().cloned().collect::<Vec<_>>().join(" "),
        ));
    }
}

/// The tokens of a successful token response.
fn tokens_from(body: &Value, endpoint: &TokenEndpoint, proved: bool) -> Result<Tokens, AuthError> {
    let access = body
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or(AuthError::MissingField {
            role: UrlRole::TokenEndpoint,
            field: "access_token",
        })?
        .to_owned();
    let bound = proved
        && body
            .get("token_type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
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
        dpop: bound,
        endpoint: Some(endpoint.clone()),
        expires_at: lifetime.and_then(|lifetime| issued.checked_add(lifetime)),
        refresh_at: lifetime.and_then(|lifetime| Tokens::refresh_time(issued, lifetime)),
    })
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
}
