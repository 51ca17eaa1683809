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
//! - [`Acquire::Device`] (a login on a machine without a browser): discover and obtain a
//!   client identity as above (dynamic registration asks for the device-code grant), then
//!   the device authorization grant (RFC 8628, the `device` module): the user is shown a
//!   code and a verification URL by a [`DeviceDriver`] while the token endpoint is polled
//!   within the server's interval and expiry (both bounded). An authorization server
//!   without a `device_authorization_endpoint` ends it with
//!   [`AuthError::DeviceGrantNotOffered`] before any registration.
//!
//! - [`Acquire::OnBehalfOf`] (a gateway calling for one of its clients): discover as
//!   above, then exchange the caller's access token for one of the server's own (RFC 8693
//!   token exchange) as the operator's registered client, only at the one authorization
//!   server the operator trusts with its callers' tokens and only when it offers the grant.
//!
//! The browser step is an [`AuthorizationDriver`]: the host decides how the user approves
//! (a browser and a loopback callback, a pasted redirect, or, in tests, following the
//! redirect directly). Tokens and secrets never appear in logs or errors.
//!
//! # Map
//!
//! OAuth 2.1 for HTTP servers: `OAuthClient` implements the transport's `Authorizer`
//! (`client`), with one module per job: `discovery` (RFC 9728 and RFC 8414/OpenID
//! metadata), `identity` (pre-registered, metadata-document or dynamically registered
//! clients, client authentication, the enterprise and workload identities), `grants`
//! (authorization code with PKCE, cross-app access, workload identity federation with the
//! JWT-bearer grant, client credentials, refresh; the token request), `device` (the
//! device authorization grant, RFC 8628), `dpop` (RFC 9449: one
//! ES256 key per client, a fresh proof per request, server nonces honoured at the token
//! endpoint and the MCP server), `fetch` (the HTTP client bound to the server's URL
//! `policy`), `driver` (the `AuthorizationDriver` seam for the user-facing step), `store`
//! (the `TokenStore`, a 0600 file; DPoP-bound tokens are kept with their key) and `error`
//! (`AuthError`, typed where a caller decides: needs login, refused URL, unreachable,
//! refused with the OAuth `error` code, invalid metadata or authorization response, …).

//!
//! With the 2026-07-28 authorization extensions: when the authorization server advertises
//! DPoP (`dpop_signing_alg_values_supported` with ES256), tokens are requested with a DPoP
//! proof and presented with the DPoP scheme and a fresh proof per request (RFC 9449), a
//! server's nonce is honoured once asked for (§8, §9); when it takes the JWT-bearer grant
//! and a [`WorkloadIdentity`] is configured, the workload's token is the assertion
//! (RFC 7523, workload identity federation).
//!
//! Modules: `discovery` (metadata), `identity` (client identity and registration, client
//! authentication, the identities presented instead of a user), `grants` (grants and the
//! token request), `device` (the device grant), `dpop` (the key and its proofs), `client` (the authorizer), `driver`
//! (the user's step), `fetch` (the policy-bound HTTP client), `policy`, `store`,
//! `challenge`, `error`, `shared` (the [`SharedTokens`] seam: processes that use one
//! authorization at once take turns renewing it and adopt each other's tokens).

mod challenge;
mod client;
mod device;
mod discovery;
mod dpop;
mod driver;
mod error;
mod fetch;
mod grants;
mod identity;
mod policy;
mod shared;
mod store;

use std::future::Future;
use std::pin::Pin;

pub use challenge::BearerChallenge;
pub use client::{Acquire, OAuthClient, OAuthConfig, StoreBinding};
pub use device::MAX_DEVICE_WAIT;
pub use driver::{AuthorizationDriver, DeviceDriver, DevicePrompt, FollowRedirectDriver};
pub use error::{
    AuthError, DeviceProblem, DriverError, DriverErrorKind, KeyProblem, LoginNeeded,
    MetadataProblem, ResponseProblem,
};
pub use identity::{
    ClientCredentials, IdentityAssertion, SubjectToken, WorkloadIdentity, WorkloadToken,
};
pub use policy::{AddressClass, UrlRefusal, UrlRole};
pub use shared::{FileTokens, SharedFailure, SharedLock, SharedTokens};
pub use store::{
    LOCK_WAIT, RenewalLock, SavedAuthorization, StoreError, StoreKey, StoredPath, TokenStore,
};

/// A boxed future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
