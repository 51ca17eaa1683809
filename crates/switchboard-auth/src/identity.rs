//! Client identity: a pre-registered client, a Client ID Metadata Document, or dynamic
//! registration (`application_type: native`; a device login's client registers for the
//! device-code grant, without redirect URIs); token-endpoint client authentication,
//! including `private_key_jwt` assertions (RFC 7523); and the identities a client may
//! present instead of a user: an enterprise identity for cross-app access and a workload
//! identity token. Secrets are redacted from Debug output.

use std::fmt;
use std::path::PathBuf;

use base64::Engine;
use serde_json::{Value, json};

use crate::client::{Acquire, OAuthConfig};
use crate::device::DEVICE_CODE_GRANT;
use crate::discovery::Discovery;
use crate::error::{AuthError, KeyProblem};
use crate::fetch::{Fetcher, b64url, error_code, json_body, random_token, string_list, unix_now};
use crate::policy::UrlRole;

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

/// A caller's access token that a gateway exchanges (RFC 8693) for a token of an upstream
/// server's own: the `subject_token` of the exchange, sent only to the token endpoint of the
/// authorization server the operator named, never to a server. Never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(pub String);

impl fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubjectToken(<redacted>)")
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

/// A workload's identity for workload identity federation (SEP-1933): a JWT its platform
/// issued (a Kubernetes service account token, a cloud instance identity, a CI job token),
/// presented with the JWT-bearer grant (RFC 7523 §2.1) when the authorization server
/// offers it.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkloadIdentity {
    /// Where the token comes from.
    pub token: WorkloadToken,
}

/// Where a workload identity token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum WorkloadToken {
    /// The token itself.
    Value(String),
    /// A file holding it, read at each token request (platforms rotate these files).
    File(PathBuf),
}

impl WorkloadIdentity {
    /// The token now.
    pub(crate) fn assertion(&self) -> Result<String, AuthError> {
        match &self.token {
            WorkloadToken::Value(token) => Ok(token.trim().to_owned()),
            WorkloadToken::File(path) => std::fs::read_to_string(path)
                .map(|text| text.trim().to_owned())
                .map_err(|e| AuthError::WorkloadToken {
                    path: path.display().to_string(),
                    detail: e.to_string(),
                }),
        }
    }
}

impl fmt::Debug for WorkloadToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadToken::Value(_) => f.write_str("Value(<redacted>)"),
            WorkloadToken::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

impl fmt::Debug for WorkloadIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkloadIdentity")
            .field("token", &self.token)
            .finish()
    }
}

/// The client identity in use, bound to the issuer it was obtained from.
#[derive(Clone)]
pub(crate) struct RegisteredClient {
    pub(crate) issuer: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) auth_method: String,
    /// `(PEM, algorithm)` for `private_key_jwt`.
    pub(crate) signing_key: Option<(String, String)>,
}

impl RegisteredClient {
    /// Whether it can authenticate itself (a secret or a key).
    pub(crate) fn is_confidential(&self) -> bool {
        self.client_secret.is_some() || self.signing_key.is_some()
    }

    /// Adds this client's authentication to a token request: a `private_key_jwt`
    /// assertion for `audience`, HTTP Basic, a posted secret, or just the client id.
    pub(crate) fn authenticate(
        &self,
        audience: &str,
        request: reqwest::RequestBuilder,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<reqwest::RequestBuilder, AuthError> {
        if let Some((pem, algorithm)) = &self.signing_key {
            let assertion = client_assertion(&self.client_id, audience, pem, algorithm)?;
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
            ));
            form.push(("client_assertion", assertion));
            form.push(("client_id", self.client_id.clone()));
            return Ok(request);
        }
        match (self.auth_method.as_str(), &self.client_secret) {
            ("client_secret_basic", Some(secret)) => {
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    encode(&self.client_id),
                    encode(secret)
                ));
                return Ok(request.header(
                    reqwest::header::AUTHORIZATION,
                    format!("Basic {credentials}"),
                ));
            }
            ("client_secret_post", Some(secret)) => {
                form.push(("client_id", self.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            _ => form.push(("client_id", self.client_id.clone())),
        }
        Ok(request)
    }
}

/// Obtains a client identity for this authorization server.
pub(crate) async fn register(
    config: &OAuthConfig,
    fetcher: &Fetcher,
    discovery: &Discovery,
) -> Result<RegisteredClient, AuthError> {
    let methods = string_list(
        discovery
            .metadata
            .get("token_endpoint_auth_methods_supported"),
    );
    if let Some(pre) = &config.pre_registered {
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
    if let (true, Some(url)) = (cimd, &config.client_metadata_url) {
        return Ok(RegisteredClient {
            issuer: discovery.issuer.clone(),
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".into(),
            signing_key: None,
        });
    }
    let Some(endpoint) = &discovery.registration_endpoint else {
        return Err(AuthError::NoClientIdentity);
    };
    let parsed = fetcher.check(UrlRole::RegistrationEndpoint, endpoint)?;
    let mut request = json!({
        "client_name": config.client_name,
        "redirect_uris": [config.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": "native",
        "token_endpoint_auth_method": if methods.is_empty() || methods.iter().any(|m| m == "none") { "none" } else { methods[0].as_str() },
    });
    // A device login's client takes no redirects: it polls with the device-code grant.
    if matches!(config.acquire, Acquire::Device { .. }) {
        request["grant_types"] = json!([DEVICE_CODE_GRANT, "refresh_token"]);
        request["response_types"] = json!([]);
        if let Some(fields) = request.as_object_mut() {
            fields.remove("redirect_uris");
        }
    }
    let response = fetcher
        .http
        .post(parsed)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(request.to_string())
        .send()
        .await
        .map_err(|e| fetcher.unsent(UrlRole::RegistrationEndpoint, endpoint, &e))?;
    let status = response.status();
    let body = json_body(response).await;
    if !status.is_success() {
        return Err(AuthError::Refused {
            role: UrlRole::RegistrationEndpoint,
            status: status.as_u16(),
            error: error_code(&body),
        });
    }
    let client_id = body
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or(AuthError::MissingField {
            role: UrlRole::RegistrationEndpoint,
            field: "client_id",
        })?
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

/// A `private_key_jwt` client assertion (RFC 7523): signed with the client's PKCS#8 key,
/// issued by and about the client, for the authorization server, valid five minutes.
pub(crate) fn client_assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
    algorithm: &str,
) -> Result<String, AuthError> {
    let failed = |problem| AuthError::Key(problem);
    let der_b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("");
    let der = base64::engine::general_purpose::STANDARD
        .decode(der_b64.trim())
        .map_err(|_| failed(KeyProblem::NotPem))?;
    let now = unix_now();
    let header = json!({"alg": algorithm, "typ": "JWT"});
    let claims = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + 300, "jti": random_token(16)?});
    let b64 = |v: &Value| b64url(v.to_string());
    let signing_input = format!("{}.{}", b64(&header), b64(&claims));
    let rng = ring::rand::SystemRandom::new();
    let signature = match algorithm {
        "ES256" => {
            let key = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &rng,
            )
            .map_err(|_| {
                failed(KeyProblem::WrongKind {
                    expected: "a P-256",
                })
            })?;
            key.sign(&rng, signing_input.as_bytes())
                .map_err(|_| failed(KeyProblem::SigningFailed))?
                .as_ref()
                .to_vec()
        }
        "RS256" => {
            let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
                .map_err(|_| failed(KeyProblem::WrongKind { expected: "an RSA" }))?;
            let mut signature = vec![0; key.public().modulus_len()];
            key.sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| failed(KeyProblem::SigningFailed))?;
            signature
        }
        other => {
            return Err(failed(KeyProblem::UnsupportedAlgorithm(other.to_owned())));
        }
    };
    Ok(format!("{signing_input}.{}", b64url(signature)))
}

/// Token endpoint client authentication: what registration said, else the best the server
/// supports for the kind of client we are.
pub(crate) fn choose_auth_method(
    supported: &[String],
    has_secret: bool,
    registered: Option<&str>,
) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_methods_and_redaction() {
        assert_eq!(
            choose_auth_method(&["client_secret_post".into()], true, None),
            "client_secret_post"
        );
        assert_eq!(choose_auth_method(&[], false, None), "none");
        let identity = WorkloadIdentity {
            token: WorkloadToken::Value("eyJ.secret.jwt".into()),
        };
        assert!(!format!("{identity:?}").contains("secret"));
    }
}
