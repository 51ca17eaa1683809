//! Discovery: from the MCP server's URL (and the challenge's `resource_metadata`) to its
//! Protected Resource Metadata (RFC 9728), the authorization server's metadata (RFC 8414,
//! then OpenID discovery; the issuer must match exactly) and the endpoints and features an
//! authorization uses. Servers of the 2025-03-26 revision without resource metadata are
//! served from their origin's metadata or default endpoints.

use serde_json::Value;
use url::Url;

use crate::challenge::BearerChallenge;
use crate::error::{AuthError, MetadataProblem};
use crate::fetch::{Fetcher, string_list};
use crate::grants::TokenEndpoint;
use crate::policy::UrlRole;

/// Everything discovery found for one authorization.
pub(crate) struct Discovery {
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) metadata: Value,
    /// Where the user approves in a browser; only a device login goes without one.
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    /// RFC 8628's endpoint, when the server offers the device grant (judged when used).
    pub(crate) device_authorization_endpoint: Option<String>,
    pub(crate) scopes_supported: Vec<String>,
}

impl Discovery {
    /// The token endpoint, for grants at it.
    pub(crate) fn token_endpoint(&self) -> TokenEndpoint {
        TokenEndpoint {
            issuer: self.issuer.clone(),
            url: self.token_endpoint.clone(),
            resource: self.resource.clone(),
            dpop: self.offers_dpop(),
        }
    }

    /// The grant types the authorization server lists.
    pub(crate) fn grants(&self) -> Vec<String> {
        string_list(self.metadata.get("grant_types_supported"))
    }

    /// Whether the authorization server issues DPoP-bound tokens with the algorithm this
    /// client signs with (ES256).
    pub(crate) fn offers_dpop(&self) -> bool {
        string_list(self.metadata.get("dpop_signing_alg_values_supported"))
            .iter()
            .any(|alg| alg == crate::dpop::ALGORITHM)
    }
}

/// What an authorization needs of the authorization server besides a token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// An authorization endpoint with PKCE S256: every authorization but a device login
    /// (any of them may end in the code flow).
    CodeFlow,
    /// Neither: a device login (RFC 8628 uses no redirect; its own endpoint is judged
    /// when used), or a workload's own grant (`Acquire::Unattended`: never a user's step).
    NoRedirect,
}

/// The URL as one string, so that the transport's URL and the configured one compare equal.
pub(crate) fn normalised(url: &str) -> Result<Url, AuthError> {
    Url::parse(url).map_err(|e| AuthError::InvalidServerUrl {
        detail: e.to_string(),
    })
}

/// Finds the resource and authorization-server metadata, with what the authorization
/// `needs` of it. Every URL is judged by the server's policy before it is fetched; a
/// refused one ends the discovery.
pub(crate) async fn discover(
    fetcher: &Fetcher,
    resource_url: &str,
    bearer: &BearerChallenge,
    needs: Needs,
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
        if let Some(document) = fetcher
            .get_json(UrlRole::ResourceMetadata, candidate)
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
                .ok_or(AuthError::InvalidMetadata(MetadataProblem::NoResource))?;
            if !covers(advertised, &resource_url) {
                return Err(AuthError::InvalidMetadata(MetadataProblem::OtherResource {
                    advertised: advertised.to_owned(),
                    resource,
                }));
            }
            // The protected resource's own identifier is the RFC 8707 indicator.
            resource = advertised.trim_end_matches('/').to_owned();
            let issuer = document
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|servers| servers.first())
                .and_then(Value::as_str)
                .ok_or(AuthError::InvalidMetadata(
                    MetadataProblem::NoAuthorizationServer,
                ))?
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
    let metadata = authorization_server_metadata(fetcher, &issuer, require_match).await?;
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
    let endpoint = |name: &'static str, fallback: &str| -> Result<String, AuthError> {
        match metadata.get(name).and_then(Value::as_str) {
            Some(url) => Ok(url.to_owned()),
            None if legacy_fallback => Ok(format!("{issuer}{fallback}")),
            None => Err(AuthError::InvalidMetadata(
                MetadataProblem::MissingEndpoint { name },
            )),
        }
    };
    if !legacy_fallback && needs == Needs::CodeFlow {
        let methods = string_list(metadata.get("code_challenge_methods_supported"));
        if !methods.iter().any(|m| m == "S256") {
            return Err(AuthError::InvalidMetadata(MetadataProblem::NoPkceS256));
        }
    }
    let authorization_endpoint = match (endpoint("authorization_endpoint", "/authorize"), needs) {
        (Ok(url), _) => {
            fetcher.check(UrlRole::AuthorizationEndpoint, &url)?;
            Some(url)
        }
        (Err(_), Needs::NoRedirect) => None,
        (Err(missing), Needs::CodeFlow) => return Err(missing),
    };
    let token_endpoint = endpoint("token_endpoint", "/token")?;
    fetcher.check(UrlRole::TokenEndpoint, &token_endpoint)?;
    let registration_endpoint = match metadata
        .get("registration_endpoint")
        .and_then(Value::as_str)
    {
        Some(url) => Some(url.to_owned()),
        None if legacy_fallback => Some(format!("{issuer}/register")),
        None => None,
    };
    let device_authorization_endpoint = metadata
        .get("device_authorization_endpoint")
        .and_then(Value::as_str)
        .map(str::to_owned);
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
        device_authorization_endpoint,
        scopes_supported,
    })
}

/// RFC 8414 then OpenID discovery; with `require_match`, the document's issuer must equal
/// `issuer` exactly.
async fn authorization_server_metadata(
    fetcher: &Fetcher,
    issuer: &str,
    require_match: bool,
) -> Result<Option<Value>, AuthError> {
    let url = Url::parse(issuer).map_err(|e| {
        AuthError::InvalidMetadata(MetadataProblem::IssuerNotUrl {
            issuer: issuer.to_owned(),
            detail: e.to_string(),
        })
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
        if let Some(document) = fetcher
            .get_json(UrlRole::AuthorizationServerMetadata, &candidate)
            .await?
        {
            let advertised = document.get("issuer").and_then(Value::as_str).unwrap_or("");
            if require_match && advertised != issuer {
                return Err(AuthError::InvalidMetadata(
                    MetadataProblem::IssuerMismatch {
                        url: candidate,
                        advertised: advertised.to_owned(),
                        issuer: issuer.to_owned(),
                    },
                ));
            }
            return Ok(Some(document));
        }
    }
    Ok(None)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_and_url_safety() {
        let url = Url::parse("https://mcp.example.test/mcp/?x=1#frag").expect("url");
        assert_eq!(canonical_resource(&url), "https://mcp.example.test/mcp");
        assert!(covers("https://mcp.example.test", &url));
        assert!(covers("https://mcp.example.test/mcp/", &url));
        assert!(!covers("https://mcp.example.test/mc", &url));
        assert!(!covers("https://other.example.test/mcp", &url));
    }
}
