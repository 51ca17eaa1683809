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
//! Each instance of the gateway keeps its own buckets.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::json;
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

    fn check(&self, identity: &ClientIdentity) -> Result<(), RetryAfter> {
        let checked = match &self.buckets {
            Buckets::PerClient(buckets) => buckets.check(identity),
            Buckets::Shared(bucket) => bucket.check(&()),
        };
        if checked.is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        checked
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
}

impl CallLimits {
    /// These limits, in this order.
    pub fn new(limits: Vec<Arc<CallLimit>>) -> CallLimits {
        CallLimits {
            active: RwLock::new(limits.into()),
        }
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
    /// order: `Err` with the first that has no room (the call is not made).
    pub fn admit(&self, identity: &ClientIdentity, tool: &str) -> Result<(), RateLimited> {
        for limit in self.current().iter().filter(|limit| limit.counts(tool)) {
            limit.check(identity).map_err(|retry_after| RateLimited {
                limit: limit.name.clone(),
                rate: limit.rate,
                retry_after,
            })?;
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
        assert_eq!(limits.admit(&token(1), "fs__read"), Ok(()));
        assert_eq!(limits.admit(&token(1), "fs__read"), Ok(()));
        let refused = limits.admit(&token(1), "fs__read").expect_err("over");
        expect_test::expect!["rate limit `per-user` (2 calls per 1h): retry in 1800 s"]
            .assert_eq(&refused.to_string());
        expect_test::expect![[r#"{"limit":"per-user","retryAfterMs":1800000}"#]]
            .assert_eq(&refused.error().data.expect("data").to_string());
        // Another client, and another tool, are still served...
        assert_eq!(limits.admit(&token(2), "fs__read"), Ok(()));
        assert_eq!(limits.admit(&token(1), "git__log"), Ok(()));
        // ...until the gateway's one bucket is empty (the refused call did not count).
        assert_eq!(limits.admit(&token(3), "git__log"), Ok(()));
        let refused = limits.admit(&token(4), "git__log").expect_err("over");
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
        assert_eq!(limits.admit(&token(1), "t"), Ok(()));
        limits.replace(vec![kept, limit("new", LimitScope::Client, 1, None)]);
        assert_eq!(
            limits
                .admit(&token(1), "t")
                .map_err(|refused| refused.limit),
            Err("kept".to_owned())
        );
        limits.replace(vec![limit("kept", LimitScope::Client, 1, None)]);
        assert_eq!(limits.admit(&token(1), "t"), Ok(()));
    }
}
