//! Tokens shared by several processes that use one authorization at once (gateway
//! instances behind a load balancer, each calling an upstream as the same client): the
//! [`SharedTokens`] seam. With one bound ([`StoreBinding::shared`](crate::StoreBinding)),
//! a renewal happens under the shared store's lock for that authorization: the process
//! that waited first adopts what the store holds when it is newer than its own (another
//! process refreshed meanwhile), and only otherwise refreshes, then publishes what it got.
//! So a rotating refresh token is used once, whichever process needs the new access token
//! first; an authorization server that treats reuse as theft revokes nothing.
//!
//! The store is the owner's (the CLI's Redis, `serve --state`); it holds tokens, so it is as
//! secret as the token file. A store that fails (unreachable, too slow) leaves the process
//! to renew alone, as without one: a warning, never a failed call.

use crate::BoxFuture;
use crate::store::{SavedAuthorization, StoreKey, TokenStore};

/// Why the shared store could not do what was asked (its own words, without secrets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SharedFailure(pub String);

/// The right to renew one authorization, until [`SharedTokens::unlock`] (or the store's
/// own expiry of it, for a process that died holding it).
pub struct SharedLock {
    /// The lock's name in the store.
    pub name: String,
    /// What proves this holder took it (a random value).
    pub holder: String,
    /// What holds it for as long as it lives (a file lock), if the store needs one.
    pub guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for SharedLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLock")
            .field("name", &self.name)
            .field("guarded", &self.guard.is_some())
            .finish_non_exhaustive()
    }
}

/// Where the processes sharing an authorization keep its newest tokens, and take turns
/// renewing it. Every operation is bounded by the store's own deadlines.
pub trait SharedTokens: Send + Sync {
    /// Takes the right to renew `key`'s tokens, waiting (bounded) while another process
    /// holds it.
    fn lock<'a>(&'a self, key: &'a StoreKey) -> BoxFuture<'a, Result<SharedLock, SharedFailure>>;

    /// Gives the right back.
    fn unlock(&self, lock: SharedLock) -> BoxFuture<'_, ()>;

    /// The newest tokens of `key` a process published, if any.
    fn load<'a>(
        &'a self,
        key: &'a StoreKey,
    ) -> BoxFuture<'a, Result<Option<SavedAuthorization>, SharedFailure>>;

    /// Publishes `saved` as the newest tokens of its key.
    fn save<'a>(
        &'a self,
        saved: &'a SavedAuthorization,
    ) -> BoxFuture<'a, Result<(), SharedFailure>>;
}

/// The token file as the store this user's processes share (every `switchboard` command
/// and `serve` on one machine): a renewal takes `<file>.renew-<digest>.lock`
/// ([`TokenStore::lock_renewal`]), then adopts the tokens another process wrote to the file
/// meanwhile, or refreshes and writes them (the renewal itself writes the file, so
/// publishing adds nothing).
#[derive(Debug, Clone)]
pub struct FileTokens {
    store: TokenStore,
}

impl FileTokens {
    /// Renewals of `store`'s authorizations taking turns.
    pub fn new(store: TokenStore) -> FileTokens {
        FileTokens { store }
    }
}

impl SharedTokens for FileTokens {
    fn lock<'a>(&'a self, key: &'a StoreKey) -> BoxFuture<'a, Result<SharedLock, SharedFailure>> {
        Box::pin(async move {
            let lock = self
                .store
                .lock_renewal(key)
                .await
                .map_err(|problem| SharedFailure(problem.to_string()))?;
            Ok(SharedLock {
                name: key.digest(),
                holder: std::process::id().to_string(),
                guard: Some(Box::new(lock)),
            })
        })
    }

    fn unlock(&self, lock: SharedLock) -> BoxFuture<'_, ()> {
        drop(lock);
        Box::pin(std::future::ready(()))
    }

    fn load<'a>(
        &'a self,
        key: &'a StoreKey,
    ) -> BoxFuture<'a, Result<Option<SavedAuthorization>, SharedFailure>> {
        let loaded = self
            .store
            .load_for(key)
            .map_err(|problem| SharedFailure(problem.to_string()));
        Box::pin(std::future::ready(loaded))
    }

    fn save<'a>(
        &'a self,
        _saved: &'a SavedAuthorization,
    ) -> BoxFuture<'a, Result<(), SharedFailure>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Whether `theirs` is newer than `ours`: another access token that expires later (one
/// without an expiry counts as the oldest).
pub(crate) fn is_newer(
    theirs: &SavedAuthorization,
    ours_access: &str,
    ours_expiry: Option<u64>,
) -> bool {
    theirs.access_token != ours_access && theirs.expires_at.unwrap_or(0) >= ours_expiry.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_another_token_expiring_no_sooner_is_newer() {
        let theirs = |access: &str, expires_at: Option<u64>| SavedAuthorization {
            access_token: access.to_owned(),
            expires_at,
            ..SavedAuthorization::default()
        };
        assert!(is_newer(&theirs("b", Some(20)), "a", Some(10)));
        assert!(is_newer(&theirs("b", Some(20)), "a", None));
        assert!(
            !is_newer(&theirs("a", Some(20)), "a", Some(10)),
            "the same token"
        );
        assert!(
            !is_newer(&theirs("b", Some(5)), "a", Some(10)),
            "an older one"
        );
        assert!(
            !is_newer(&theirs("b", None), "a", Some(10)),
            "one without an expiry"
        );
    }
}
