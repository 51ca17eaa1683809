//! Rate limits: a bucket per key (a client's identity, or one for everyone), refilled at a
//! steady rate (GCRA, the `governor` crate), checked without waiting: a request over its
//! limit is told at once how long until it would pass, and nothing queues.
//!
//! A [`Rate`] is `calls` per `every`, with room for `burst` at once (default `calls`): the
//! bucket holds `burst` and refills one every `every / calls`. A full bucket is the state
//! of a key never seen, so a key whose bucket has refilled carries no information and can
//! be forgotten.
//!
//! The keys are bounded ([`KeyedRate::new`]'s `max_keys`): a flood of new identities (peers
//! from many IPv6 /64s, say) cannot grow memory without bound. When the table is full, the
//! keys whose buckets have refilled are forgotten (at most once per [`SWEEP_EVERY`]); a new
//! key that still finds it full shares one overflow bucket with every other such key, so
//! newcomers during a flood are limited together while every key already in the table
//! keeps its own bucket.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::ops::Add;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed, StateStore};
use governor::{Quota, RateLimiter};

/// Longest a full key table goes between sweeps of the keys whose buckets refilled.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// `calls` per `every`, at most `burst` (default `calls`) at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    /// Calls refilled per `every`.
    pub calls: NonZeroU32,
    /// The period `calls` refill over.
    pub every: Duration,
    /// The bucket's size: how many calls may come at once (default `calls`).
    pub burst: Option<NonZeroU32>,
}

impl Rate {
    /// The bucket's size.
    pub fn burst(&self) -> NonZeroU32 {
        self.burst.unwrap_or(self.calls)
    }

    /// The quota: one call refilled every `every / calls` (at least a nanosecond), `burst`
    /// at once.
    fn quota(&self) -> Quota {
        let period = (self.every / self.calls.get()).max(Duration::from_nanos(1));
        match Quota::with_period(period) {
            Some(quota) => quota.allow_burst(self.burst()),
            None => Quota::per_second(self.burst()),
        }
    }
}

impl std::fmt::Display for Rate {
    /// `60 calls per 1m` (with `, burst 10` when set).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls = if self.calls.get() == 1 {
            "call"
        } else {
            "calls"
        };
        write!(f, "{} {calls} per {}", self.calls, period_text(self.every))?;
        if let Some(burst) = self.burst {
            write!(f, ", burst {burst}")?;
        }
        Ok(())
    }
}

/// A period as a person writes it: `1d`, `2h`, `1m`, `30s`, `500ms`.
pub fn period_text(every: Duration) -> String {
    let millis = every.as_millis();
    let units: [(u128, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
        (1, "ms"),
    ];
    for (size, unit) in units {
        if millis >= size && millis.is_multiple_of(size) {
            return format!("{}{unit}", millis / size);
        }
    }
    format!("{every:?}")
}

/// A request over its limit: when it would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub Duration);

impl RetryAfter {
    /// Whole seconds, rounded up (at least 1), as `Retry-After` and messages say it.
    pub fn whole_seconds(self) -> u64 {
        let secs = self.0.as_secs() + u64::from(self.0.subsec_nanos() > 0);
        secs.max(1)
    }

    /// Milliseconds, rounded up.
    pub fn millis(self) -> u64 {
        let millis =
            self.0.as_millis() + u128::from(!self.0.subsec_nanos().is_multiple_of(1_000_000));
        u64::try_from(millis).unwrap_or(u64::MAX)
    }
}

/// A bucket per key, the keys bounded.
pub struct KeyedRate<K: Hash + Eq + Clone> {
    rate: Rate,
    /// Keys kept apart at most (the store's bound too).
    max_keys: usize,
    limiter: RateLimiter<K, CappedStore<K>, TokioClock, NoOpMiddleware<TokioInstant>>,
    /// When the table was last swept (`None`: never).
    swept: Mutex<Option<tokio::time::Instant>>,
}

impl<K: Hash + Eq + Clone> std::fmt::Debug for KeyedRate<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedRate")
            .field("rate", &self.rate)
            .field("keys", &self.limiter.len())
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone> KeyedRate<K> {
    /// Buckets of `rate`, at most `max_keys` (at least 1) of them kept apart.
    pub fn new(rate: Rate, max_keys: usize) -> KeyedRate<K> {
        let max_keys = max_keys.max(1);
        let store = CappedStore {
            states: Mutex::new(HashMap::new()),
            overflow: InMemoryState::default(),
            max_keys,
        };
        KeyedRate {
            rate,
            max_keys,
            limiter: RateLimiter::new(rate.quota(), store, TokioClock),
            swept: Mutex::new(None),
        }
    }

    /// The rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Takes one call from `key`'s bucket, or says when it would have one.
    pub fn check(&self, key: &K) -> Result<(), RetryAfter> {
        if self.limiter.len() >= self.max_keys {
            self.sweep();
        }
        self.limiter
            .check_key(key)
            .map_err(|not_until| RetryAfter(not_until.wait_time_from(TokioClock.now())))
    }

    /// Keys with a bucket of their own now.
    pub fn keys(&self) -> usize {
        self.limiter.len()
    }

    /// Forgets the keys whose buckets refilled, at most once per [`SWEEP_EVERY`] (a flood
    /// at a full table does not make every call walk it).
    fn sweep(&self) {
        let Ok(mut swept) = self.swept.try_lock() else {
            return;
        };
        let now = tokio::time::Instant::now();
        if swept.is_some_and(|at| now.duration_since(at) < SWEEP_EVERY) {
            return;
        }
        *swept = Some(now);
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Buckets by key, at most `max_keys`; keys beyond share `overflow`.
struct CappedStore<K> {
    states: Mutex<HashMap<K, InMemoryState>>,
    overflow: InMemoryState,
    max_keys: usize,
}

impl<K> CappedStore<K> {
    fn states(&self) -> MutexGuard<'_, HashMap<K, InMemoryState>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Hash + Eq + Clone> StateStore for CappedStore<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let mut states = self.states();
        if let Some(state) = states.get(key) {
            return state.measure_and_replace(&NotKeyed::NonKey, f);
        }
        if states.len() < self.max_keys {
            return states
                .entry(key.clone())
                .or_default()
                .measure_and_replace(&NotKeyed::NonKey, f);
        }
        drop(states);
        self.overflow.measure_and_replace(&NotKeyed::NonKey, f)
    }
}

/// A bucket's theoretical arrival time (0 for one never used).
fn arrival(state: &InMemoryState) -> Nanos {
    // Reading without writing: the decision function declines with what it saw.
    let seen: Result<(), Nanos> = state.measure_and_replace(&NotKeyed::NonKey, |seen| {
        Err(seen.unwrap_or_else(|| Nanos::new(0)))
    });
    seen.err().unwrap_or_else(|| Nanos::new(0))
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for CappedStore<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        self.states()
            .retain(|_, state| arrival(state).as_u64() > drop_below.as_u64());
    }

    fn shrink_to_fit(&self) {
        self.states().shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.states().len()
    }

    fn is_empty(&self) -> bool {
        self.states().is_empty()
    }
}

/// Tokio's clock, so that a test with paused time drives the buckets too.
#[derive(Debug, Clone, Copy, Default)]
struct TokioClock;

/// An instant of [`TokioClock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct TokioInstant(tokio::time::Instant);

impl Add<Nanos> for TokioInstant {
    type Output = TokioInstant;

    fn add(self, other: Nanos) -> TokioInstant {
        TokioInstant(self.0 + Duration::from(other))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        Nanos::from(self.0.saturating_duration_since(earlier.0))
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        TokioInstant(
            self.0
                .checked_sub(Duration::from(duration))
                .unwrap_or(self.0),
        )
    }
}

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(calls: u32, every: Duration) -> Rate {
        Rate {
            calls: NonZeroU32::new(calls).expect("not zero"),
            every,
            burst: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_holds_its_calls_and_refills_one_per_period() {
        let limit = KeyedRate::new(rate(2, Duration::from_secs(60)), 16);
        assert_eq!(limit.check(&"a"), Ok(()));
        assert_eq!(limit.check(&"a"), Ok(()));
        assert_eq!(limit.check(&"a"), Err(RetryAfter(Duration::from_secs(30))));
        // Another key has its own bucket.
        assert_eq!(limit.check(&"b"), Ok(()));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(limit.check(&"a"), Ok(()));
        assert!(limit.check(&"a").is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_keys_stay_bounded_and_newcomers_beyond_share_one_bucket() {
        let limit = KeyedRate::new(rate(1, Duration::from_secs(10)), 4);
        for key in 0..4 {
            assert_eq!(limit.check(&key), Ok(()));
        }
        // The table is full of buckets still refilling: newcomers share the overflow.
        assert_eq!(limit.check(&100), Ok(()));
        assert!(limit.check(&101).is_err());
        assert_eq!(limit.keys(), 4);
        // The keys in the table keep their own buckets.
        assert!(limit.check(&0).is_err());
        // Once they refilled (governor keeps a key one period more), a sweep forgets them
        // and a newcomer gets a bucket of its own.
        tokio::time::advance(Duration::from_secs(20)).await;
        assert_eq!(limit.check(&200), Ok(()));
        assert_eq!(limit.keys(), 1);
        for key in 1000..100_000 {
            let _ = limit.check(&key);
        }
        assert_eq!(limit.keys(), 4);
    }

    #[test]
    fn a_rate_reads_as_written() {
        let mut shown = rate(60, Duration::from_secs(60));
        shown.burst = NonZeroU32::new(10);
        assert_eq!(shown.to_string(), "60 calls per 1m, burst 10");
        assert_eq!(
            rate(5, Duration::from_secs(86_400)).to_string(),
            "5 calls per 1d"
        );
        assert_eq!(
            rate(5, Duration::from_millis(1500)).to_string(),
            "5 calls per 1500ms"
        );
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(RetryAfter(Duration::from_millis(1)).whole_seconds(), 1);
        assert_eq!(RetryAfter(Duration::from_millis(4001)).whole_seconds(), 5);
        assert_eq!(RetryAfter(Duration::from_secs(4)).whole_seconds(), 4);
        assert_eq!(RetryAfter(Duration::from_micros(1500)).millis(), 2);
    }
}
