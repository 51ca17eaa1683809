//! The errors of an authorization, typed where a caller decides: a login is needed, a URL
//! from the server was refused, the token file cannot be used. Everything else is still a
//! message (`Failed`).

use crate::policy::{UrlRefusal, UrlRole};

/// Why an authorization failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server wants an authorization this client may not obtain by itself (it uses
    /// only a saved login): the user must log in.
    #[error("server `{server}` {reason}: run `switchboard login {server}`")]
    NeedsLogin {
        /// The server's configured name.
        server: String,
        /// What is missing.
        reason: LoginNeeded,
    },
    /// A URL the server (or its metadata) handed us was refused before anything was sent
    /// to it.
    #[error("refusing the {role} {url}: {reason}")]
    RefusedUrl {
        /// What the URL was for.
        role: UrlRole,
        /// The URL (as parsed, or escaped when it did not parse).
        url: String,
        /// Why.
        reason: UrlRefusal,
    },
    /// The token file or its directory cannot be used.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Any other failure, described.
    #[error("{0}")]
    Failed(String),
}

/// Why a login is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginNeeded {
    /// Nothing is saved for this server.
    NotLoggedIn,
    /// The saved login was refused and could not be refreshed (expired or revoked).
    Rejected,
    /// The server asks for scopes the saved login does not have.
    MoreScope {
        /// The scopes it asked for.
        scopes: Vec<String>,
    },
}

impl std::fmt::Display for LoginNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginNeeded::NotLoggedIn => f.write_str("needs you to log in first"),
            LoginNeeded::Rejected => f.write_str(
                "no longer accepts its saved login (expired or revoked, and it could not be refreshed); log in again",
            ),
            LoginNeeded::MoreScope { scopes } if scopes.is_empty() => {
                f.write_str("asks for more scope than its saved login has; log in again")
            }
            LoginNeeded::MoreScope { scopes } => write!(
                f,
                "asks for more scope ({}) than its saved login has; log in again",
                scopes.join(" ").escape_debug()
            ),
        }
    }
}

impl AuthError {
    /// The user must run a login for this server.
    pub fn is_needs_login(&self) -> bool {
        matches!(self, AuthError::NeedsLogin { .. })
    }

    /// A URL from the server was refused.
    pub fn is_refused_url(&self) -> bool {
        matches!(self, AuthError::RefusedUrl { .. })
    }

    /// The token file or its directory is not private to this user.
    pub fn is_store_not_private(&self) -> bool {
        matches!(self, AuthError::Store(error) if error.is_not_private())
    }

    /// The refusal, if a URL was refused: what it was for, the URL, and why.
    pub fn refused_url(&self) -> Option<(UrlRole, &str, &UrlRefusal)> {
        match self {
            AuthError::RefusedUrl { role, url, reason } => Some((*role, url.as_str(), reason)),
            _ => None,
        }
    }

    /// A refused URL, as shown: parsed when it parses, escaped and shortened when not.
    pub(crate) fn refused(role: UrlRole, url: &str, reason: UrlRefusal) -> AuthError {
        let url = match url::Url::parse(url) {
            Ok(mut parsed) => {
                let _ = parsed.set_password(None);
                parsed.to_string()
            }
            Err(_) => {
                let escaped: String = url.escape_debug().take(200).collect();
                format!("\"{escaped}\"")
            }
        };
        AuthError::RefusedUrl { role, url, reason }
    }
}

impl From<String> for AuthError {
    fn from(message: String) -> AuthError {
        AuthError::Failed(message)
    }
}

impl From<&str> for AuthError {
    fn from(message: &str) -> AuthError {
        AuthError::Failed(message.to_owned())
    }
}
