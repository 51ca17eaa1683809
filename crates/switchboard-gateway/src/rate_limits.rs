//! Rate limits and quotas on `tools/call` (`serve`'s `rateLimits`): named limits, each a
//! [`Rate`] counted per client identity or for the whole gateway, over every tool or the
//! tools its owner's predicate selects (the CLI gives `*`/`?` patterns of exported names).
//!
//! A call is checked against every limit that counts its tool, in the configured order,
//! before anything is sent upstream; the first limit without room refuses it at once with
//! [`codes::RATE_LIMITED`](crate::codes::RATE_LIMITED): the message names the limit, its
//! rate and when to retry ("rate limit `per-user` (60 calls per 1m): retry in 4 s"), `data`
//! holds `limit` and `retryAfterMs`. Nothing queues. A limit checked before the one that
//! refused has counted the call (GCRA takes the unit as it checks). Only `tools/call` is
//! counted: prompts and resources are not.
//!
//! `per: client` buckets are kept apart per [`ClientIdentity`] (one client cannot use up
//! another's), at most [`MAX_LIMIT_CLIENTS`] of them per limit (`switchboard_server::rate`
//! says what happens beyond); a `per: gateway` limit is one bucket that one busy client
//! can take all of, so it is best paired with a per-client limit.
//!
//! [`CallLimits::replace`] swaps the set in force (a `--watch` reload): the owner passes
//! the [`CallLimit`]s of unchanged definitions again to keep their buckets and counts.
//!
//! Each instance of the gateway keeps its own buckets, unless its owner gives the limits a
//! [`LimitStore`] ([`CallLimits::share_with`], `serve --state`): then every bucket is
//! decided in the store, which every instance asks, with the same GCRA semantics, keyed by
//! the limit's name and, for `per: client`, a digest of the client's identity
//! ([`holder_digest`]: no name, subject, token or address is given to the store). A call
//! the store cannot decide (unreachable, slow past its deadline) is decided by this
//! instance's own buckets, and the owner's [`StoreWatcher`] hears of it
//! ([`StoreEvent::Failed`], `outage_began` on the first failure after a success) and of
//! the store's return ([`StoreEvent::Back`]). This module knows no store:
//! `shared_state.rs` has the Redis one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde_json::json;
use sha2::{Digest, Sha256};
use switchboard_server::core::ClientIdentity;
use switchboard_server::rate::{KeyedRate, Rate, RetryAfter};
use switchboard_wire::ErrorObject;

use crate::codes::RATE_LIMITED;

/// Most client identities one `per: client` limit keeps a bucket for apart.
pub const MAX_LIMIT_CLIENTS: usize = 16_384;

/// Whose calls share a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitScope {
    /// Each client identity has its own bucket.
    Client,
    /// One bucket for every client together.
    Gateway,
}

/// Which exported tool names a limit counts.
pub type ToolSelector = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What a limit is made of.
pub struct CallLimitSpec {
    /// Its name (what a refused call is told).
    pub name: String,
    /// Whose calls share a bucket.
    pub per: LimitScope,
    /// How many calls, how often.
    pub rate: Rate,
    /// The tools it counts (`None`: every tool).
    pub tools: Option<ToolSelector>,
}

impl fmt::Debug for CallLimitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallLimitSpec")
            .field("name", &self.name)
            .field("per", &self.per)
            .field("rate", &self.rate)
            .field("every_tool", &self.tools.is_none())
            .finish()
    }
}

/// One limit with its buckets and its count of refusals.
pub struct CallLimit {
    name: String,
    rate: Rate,
    tools: Option<ToolSelector>,
    buckets: Buckets,
    refused: AtomicU64,
}

enum Buckets {
    PerClient(KeyedRate<ClientIdentity>),
    Shared(KeyedRate<()>),
}

impl fmt::Debug for CallLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallLimit")
            .field("name", &self.name)
            .field("rate", &self.rate)
            .field("per", &self.per())
            .field("every_tool", &self.tools.is_none())
            .finish_non_exhaustive()
    }
}

impl CallLimit {
    /// A limit with full buckets.
    pub fn new(spec: CallLimitSpec) -> Arc<CallLimit> {
        let buckets = match spec.per {
            LimitScope::Client => Buckets::PerClient(KeyedRate::new(spec.rate, MAX_LIMIT_CLIENTS)),
            LimitScope::Gateway => Buckets::Shared(KeyedRate::new(spec.rate, 1)),
        };
        Arc::new(CallLimit {
            name: spec.name,
            rate: spec.rate,
            tools: spec.tools,
            buckets,
            refused: AtomicU64::new(0),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whose calls share a bucket.
    pub fn per(&self) -> LimitScope {
        match self.buckets {
            Buckets::PerClient(_) => LimitScope::Client,
            Buckets::Shared(_) => LimitScope::Gateway,
        }
    }

    /// Calls it refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn counts(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|selects| selects(tool))
    }

    /// Takes one call from this instance's own bucket for `identity`.
    fn check_here(&self, identity: &ClientIdentity) -> Result<(), RetryAfter> {
        match &self.buckets {
            Buckets::PerClient(buckets) => buckets.check(identity),
            Buckets::Shared(bucket) => bucket.check(&()),
        }
    }

    /// The store's name of the bucket `identity` takes from.
    fn bucket_key(&self, identity: &ClientIdentity) -> BucketKey {
        BucketKey {
            limit: self.name.clone(),
            holder: match self.per() {
                LimitScope::Client => holder_digest(identity),
                LimitScope::Gateway => GATEWAY_HOLDER.to_owned(),
            },
        }
    }
}

/// The holder of a `per: gateway` limit's one bucket, in a [`BucketKey`].
pub const GATEWAY_HOLDER: &str = "gateway";

/// Which bucket a [`LimitStore`] is asked about: the limit's name and whose bucket it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketKey {
    /// The limit's configured name.
    pub limit: String,
    /// [`holder_digest`] of the client (`per: client`), or [`GATEWAY_HOLDER`].
    pub holder: String,
}

/// A client identity as a store may see it: 32 hex digits of SHA-256 over its kind and
/// name, the same in every instance. The holder of the static bearer token is one client
/// whatever the token (its fingerprint differs from process to process); a JWT subject is
/// its issuer and `sub`, not what the token grants.
pub fn holder_digest(identity: &ClientIdentity) -> String {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    match identity {
        ClientIdentity::Local => part(b"local"),
        ClientIdentity::Token(_) => part(b"token"),
        ClientIdentity::Client(name) => {
            part(b"client");
            part(name.as_bytes());
        }
        ClientIdentity::Subject {
            issuer, subject, ..
        } => {
            part(b"subject");
            part(issuer.as_bytes());
            part(subject.as_bytes());
        }
        ClientIdentity::Peer(address) => {
            part(b"peer");
            part(address.to_string().as_bytes());
        }
    }
    hash.finalize()[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Why a store could not decide a call (its text holds no secret: the store's owner
/// made sure of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFailure(pub String);

impl fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreFailure {}

/// What a store's [`LimitStore::take`] gives: the decision, or why there is none.
pub type TakeFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Result<(), RetryAfter>, StoreFailure>> + Send + 'a>>;

/// Buckets kept outside this instance, shared by every instance that asks the same store.
pub trait LimitStore: Send + Sync + fmt::Debug {
    /// Takes one call from the bucket `key` of `rate` (a bucket never seen is full), with
    /// GCRA as [`switchboard_server::rate`] has it: `Ok(Err(_))` when it has no room, with
    /// when it would; `Err` when the store could not say, within its own deadline.
    fn take<'a>(&'a self, key: &'a BucketKey, rate: Rate) -> TakeFuture<'a>;
}

/// What the owner of shared limits hears about their store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// A call was decided by this instance's own buckets because the store failed.
    Failed {
        /// Why.
        failure: StoreFailure,
        /// Whether it is the first failure since the store last answered (or ever).
        outage_began: bool,
    },
    /// The store answered again after [`StoreEvent::Failed`].
    Back,
}

/// Hears every [`StoreEvent`] (called on the request's task: it must not block).
pub type StoreWatcher = Arc<dyn Fn(&StoreEvent) + Send + Sync>;

/// A store, its watcher, and whether it is failing now.
struct SharedBuckets {
    store: Arc<dyn LimitStore>,
    watcher: StoreWatcher,
    failing: AtomicBool,
}

impl fmt::Debug for SharedBuckets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuckets")
            .field("store", &self.store)
            .field("failing", &self.failing)
            .finish_non_exhaustive()
    }
}

impl SharedBuckets {
    /// Takes one call of `limit` by `identity` from the store's bucket, or from this
    /// instance's own when the store cannot say.
    async fn take(&self, limit: &CallLimit, identity: &ClientIdentity) -> Result<(), RetryAfter> {
        let key = limit.bucket_key(identity);
        match self.store.take(&key, limit.rate).await {
            Ok(decided) => {
                if self.failing.swap(false, Ordering::SeqCst) {
                    (self.watcher)(&StoreEvent::Back);
                }
                decided
            }
            Err(failure) => {
                let outage_began = !self.failing.swap(true, Ordering::SeqCst);
                (self.watcher)(&StoreEvent::Failed {
                    failure,
                    outage_began,
                });
                limit.check_here(identity)
            }
        }
    }
}

/// A call refused by a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimited {
    /// The limit's name.
    pub limit: String,
    /// Its rate.
    pub rate: Rate,
    /// When the call would pass.
    pub retry_after: RetryAfter,
}

impl fmt::Display for RateLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limit `{}` ({}): retry in {} s",
            self.limit,
            self.rate,
            self.retry_after.whole_seconds()
        )
    }
}

impl RateLimited {
    /// The JSON-RPC error the client gets.
    pub fn error(&self) -> ErrorObject {
        let mut error = ErrorObject::new(RATE_LIMITED, self.to_string());
        error.data = Some(json!({
            "limit": self.limit,
            "retryAfterMs": self.retry_after.millis(),
        }));
        error
    }
}

/// The limits in force (cheap to share; [`CallLimits::replace`] swaps them).
#[derive(Debug, Default)]
pub struct CallLimits {
    active: RwLock<Arc<[Arc<CallLimit>]>>,
    /// The store deciding every bucket, once given ([`CallLimits::share_with`]).
    shared: OnceLock<SharedBuckets>,
}

impl CallLimits {
    /// These limits, in this order.
    pub fn new(limits: Vec<Arc<CallLimit>>) -> CallLimits {
        CallLimits {
            active: RwLock::new(limits.into()),
            shared: OnceLock::new(),
        }
    }

    /// From now on every bucket (of these limits and those a reload puts in force) is
    /// decided in `store`; `watcher` hears when it fails and when it is back. Only the
    /// first store given is used (`false` when one was given before).
    pub fn share_with(&self, store: Arc<dyn LimitStore>, watcher: StoreWatcher) -> bool {
        self.shared
            .set(SharedBuckets {
                store,
                watcher,
                failing: AtomicBool::new(false),
            })
            .is_ok()
    }

    /// Puts `limits` in force (a limit passed again keeps its buckets and count).
    pub fn replace(&self, limits: Vec<Arc<CallLimit>>) {
        *self.active.write().unwrap_or_else(PoisonError::into_inner) = limits.into();
    }

    /// The limits in force.
    pub fn current(&self) -> Arc<[Arc<CallLimit>]> {
        self.active
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts a call of `tool` by `identity` against every limit that counts it, in
    /// order: `Err` with the first that has no room (the call is not made). With a store,
    /// each limit waits at most for the store's deadline.
    pub async fn admit(&self, identity: &ClientIdentity, tool: &str) -> Result<(), RateLimited> {
        for limit in self.current().iter().filter(|limit| limit.counts(tool)) {
            let checked = match self.shared.get() {
                Some(shared) => shared.take(limit, identity).await,
                None => limit.check_here(identity),
            };
            if let Err(retry_after) = checked {
                limit.refused.fetch_add(1, Ordering::Relaxed);
                return Err(RateLimited {
                    limit: limit.name.clone(),
                    rate: limit.rate,
                    retry_after,
                });
            }
        }
        Ok(())
    }

    /// Calls refused so far, by limit name (for metrics), of the limits in force.
    pub fn refusals(&self) -> Vec<(String, u64)> {
        self.current()
            .iter()
            .map(|limit| (limit.name.clone(), limit.refused()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::time::Duration;

    use super::*;

    fn limit(
        name: &str,
        per: LimitScope,
        calls: u32,
        tools: Option<ToolSelector>,
    ) -> Arc<CallLimit> {
        CallLimit::new(CallLimitSpec {
            name: name.into(),
            per,
            rate: Rate {
                calls: NonZeroU32::new(calls).expect("not zero"),
                every: Duration::from_secs(3600),
                burst: None,
            },
            tools,
        })
    }

    fn token(n: u8) -> ClientIdentity {
        ClientIdentity::Peer(std::net::IpAddr::from([10, 0, 0, n]))
    }

    #[tokio::test(start_paused = true)]
    async fn clients_have_their_own_buckets_and_the_gateway_one_for_all() {
        let fs_only: ToolSelector = Arc::new(|tool: &str| tool.starts_with("fs__"));
        let limits = CallLimits::new(vec![
            limit("per-user", LimitScope::Client, 2, Some(fs_only)),
            limit("all", LimitScope::Gateway, 5, None),
        ]);
        assert_eq!(limits.admit(&token(1), "fs__read").await, Ok(()));
        assert_eq!(limits.admit(&token(1), "fs__read").await, Ok(()));
        let refused = limits.admit(&token(1), "fs__read").await.expect_err("over");
        expect_test::expect!["rate limit `per-user` (2 calls per 1h): retry in 1800 s"]
            .assert_eq(&refused.to_string());
        expect_test::expect![[r#"{"limit":"per-user","retryAfterMs":1800000}"#]]
            .assert_eq(&refused.error().data.expect("data").to_string());
        // Another client, and another tool, are still served...
        assert_eq!(limits.admit(&token(2), "fs__read").await, Ok(()));
        assert_eq!(limits.admit(&token(1), "git__log").await, Ok(()));
        // ...until the gateway's one bucket is empty (the refused call did not count).
        assert_eq!(limits.admit(&token(3), "git__log").await, Ok(()));
        let refused = limits.admit(&token(4), "git__log").await.expect_err("over");
        assert_eq!(refused.limit, "all");
        assert_eq!(
            limits.refusals(),
            [("per-user".to_owned(), 1), ("all".to_owned(), 1)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_replaced_set_keeps_the_buckets_of_the_limits_passed_again() {
        let kept = limit("kept", LimitScope::Client, 1, None);
        let limits = CallLimits::new(vec![kept.clone()]);
        assert_eq!(limits.admit(&token(1), "t").await, Ok(()));
        limits.replace(vec![kept, limit("new", LimitScope::Client, 1, None)]);
        assert_eq!(
            limits
                .admit(&token(1), "t")
                .await
                .map_err(|refused| refused.limit),
            Err("kept".to_owned())
        );
        limits.replace(vec![limit("kept", LimitScope::Client, 1, None)]);
        assert_eq!(limits.admit(&token(1), "t").await, Ok(()));
    }

    /// A store that refuses every holder but `open`, or fails while `down`.
    #[derive(Debug, Default)]
    struct FakeStore {
        down: AtomicBool,
        asked: RwLock<Vec<BucketKey>>,
    }

    impl LimitStore for FakeStore {
        fn take<'a>(&'a self, key: &'a BucketKey, _rate: Rate) -> TakeFuture<'a> {
            Box::pin(async move {
                self.asked.write().expect("lock").push(key.clone());
                if self.down.load(Ordering::SeqCst) {
                    return Err(StoreFailure("connection refused".into()));
                }
                Ok(Err(RetryAfter(Duration::from_secs(7))))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_decides_by_digest_and_a_failing_one_leaves_the_call_to_local_buckets() {
        let store = Arc::new(FakeStore::default());
        let events = Arc::new(RwLock::new(Vec::new()));
        let heard = events.clone();
        let limits = CallLimits::new(vec![limit("quota", LimitScope::Client, 1, None)]);
        assert!(limits.share_with(
            store.clone(),
            Arc::new(move |event: &StoreEvent| heard.write().expect("lock").push(event.clone())),
        ));
        let client = ClientIdentity::Client("alice".into());
        let refused = limits
            .admit(&client, "t")
            .await
            .expect_err("the store said no");
        assert_eq!(refused.retry_after, RetryAfter(Duration::from_secs(7)));
        let asked = store.asked.read().expect("lock")[0].clone();
        assert_eq!(asked.limit, "quota");
        assert_eq!(asked.holder.len(), 32);
        assert!(!asked.holder.contains("alice"));
        assert_eq!(
            asked.holder,
            holder_digest(&ClientIdentity::Client("alice".into()))
        );
        assert_ne!(
            asked.holder,
            holder_digest(&ClientIdentity::Client("bob".into()))
        );
        // Down: this instance's own bucket decides (one call, then none), one outage.
        store.down.store(true, Ordering::SeqCst);
        assert_eq!(limits.admit(&client, "t").await, Ok(()));
        assert!(limits.admit(&client, "t").await.is_err());
        store.down.store(false, Ordering::SeqCst);
        assert!(limits.admit(&client, "t").await.is_err());
        let failed = |outage_began| StoreEvent::Failed {
            failure: StoreFailure("connection refused".into()),
            outage_began,
        };
        assert_eq!(
            *events.read().expect("lock"),
            [failed(true), failed(false), StoreEvent::Back]
        );
        // A reload's limits are decided in the store too.
        limits.replace(vec![limit("daily", LimitScope::Gateway, 1, None)]);
        assert!(limits.admit(&client, "t").await.is_err());
        let last = store.asked.read().expect("lock").last().cloned();
        assert_eq!(
            last.map(|key| (key.limit, key.holder)),
            Some(("daily".to_owned(), GATEWAY_HOLDER.to_owned()))
        );
    }
}
