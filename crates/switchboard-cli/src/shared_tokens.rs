//! The upstream tokens instances of `serve --state redis://…` share
//! (`switchboard_auth::SharedTokens` over the gateway's `RedisStore`): each authorization's
//! newest tokens under `switchboard:tok:<digest>`, and its renewal lock under
//! `switchboard:tok-lock:<digest>`, the digest (SHA-256 of the server URL and the identity)
//! naming no server, client or token. Whichever instance needs new tokens first refreshes,
//! under the lock, and publishes them; the others adopt them. So a rotating refresh token
//! is used once however many instances call as one client.
//!
//! Redis then holds access and refresh tokens: protect it as the token file (a password,
//! a private network). A lock's holder that dies lets it lapse after [`LOCK_HOLD`]; a
//! renewal waits for one at most [`LOCK_WAIT`], then renews alone (said in the log).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use switchboard_auth::{
    BoxFuture, SavedAuthorization, SharedFailure, SharedLock, SharedTokens, StoreKey,
};
use switchboard_gateway::shared_state::{LockTiming, RedisStore};

/// The longest a renewal waits for another instance's.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How long a lock lasts if its holder never gives it back.
pub(crate) const LOCK_HOLD: Duration = Duration::from_secs(20);
/// How long Redis keeps tokens nobody renewed (a refresh token unused this long is most
/// likely expired anyway; the token files still have theirs).
const KEEP: Duration = Duration::from_secs(30 * 86_400);

/// The shared tokens in a `--state` store.
pub(crate) struct RedisTokens {
    store: Arc<RedisStore>,
}

impl RedisTokens {
    pub(crate) fn shared(store: Arc<RedisStore>) -> Arc<dyn SharedTokens> {
        Arc::new(RedisTokens { store })
    }
}

/// A value no other holder has: this process and a count.
fn holder() -> String {
    static TAKEN: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        TAKEN.fetch_add(1, Ordering::Relaxed)
    )
}

fn failure(error: impl std::fmt::Display) -> SharedFailure {
    SharedFailure(error.to_string())
}

impl SharedTokens for RedisTokens {
    fn lock<'a>(&'a self, key: &'a StoreKey) -> BoxFuture<'a, Result<SharedLock, SharedFailure>> {
        Box::pin(async move {
            let lock = SharedLock {
                name: format!("switchboard:tok-lock:{}", key.digest()),
                holder: holder(),
                guard: None,
            };
            let timing = LockTiming {
                wait: LOCK_WAIT,
                hold: LOCK_HOLD,
            };
            self.store
                .lock(&lock.name, &lock.holder, timing)
                .await
                .map_err(failure)?;
            Ok(lock)
        })
    }

    fn unlock(&self, lock: SharedLock) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(problem) = self.store.unlock(&lock.name, &lock.holder).await {
                tracing::warn!(%problem, "the shared token lock could not be given back; it lapses");
            }
        })
    }

    fn load<'a>(
        &'a self,
        key: &'a StoreKey,
    ) -> BoxFuture<'a, Result<Option<SavedAuthorization>, SharedFailure>> {
        Box::pin(async move {
            let text = self
                .store
                .get(&format!("switchboard:tok:{}", key.digest()))
                .await
                .map_err(failure)?;
            Ok(text
                .and_then(|text| serde_json::from_str(&text).ok())
                .and_then(|value| SavedAuthorization::from_json(&value))
                // A digest collision, or another writer's value: never someone else's.
                .filter(|saved| {
                    saved.server_url == key.server_url && saved.on_behalf_of == key.on_behalf_of
                }))
        })
    }

    fn save<'a>(
        &'a self,
        saved: &'a SavedAuthorization,
    ) -> BoxFuture<'a, Result<(), SharedFailure>> {
        Box::pin(async move {
            let key = StoreKey {
                server_url: saved.server_url.clone(),
                on_behalf_of: saved.on_behalf_of.clone(),
            };
            self.store
                .set(
                    &format!("switchboard:tok:{}", key.digest()),
                    &saved.to_json().to_string(),
                    KEEP,
                )
                .await
                .map_err(failure)
        })
    }
}
