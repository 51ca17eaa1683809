//! The store several instances of the gateway share (`serve --state redis://HOST:PORT[/DB]`):
//! Redis deciding the buckets of the rate limits ([`RedisStore`], a
//! [`LimitStore`]), so that a client's quota is one quota whichever instance serves it;
//! and holding values its owner names with a lock to take turns on them
//! ([`RedisStore::get`], [`RedisStore::set`], [`RedisStore::lock`]): the CLI keeps the
//! upstream tokens there that instances share, so that one of them refreshes each.
//!
//! Each bucket is one Redis key, `switchboard:rl:<limit name>:<holder>` (the holder is
//! [`holder_digest`](crate::rate_limits::holder_digest) of the client, or `gateway`), holding
//! the GCRA theoretical arrival time in microseconds of Redis's own clock (`TIME`: the
//! instances' clocks need not agree), set by one Lua script that reads, decides and writes
//! atomically ([`GCRA_SCRIPT`], run by `EVALSHA`, loaded again after a Redis restart). The
//! key expires when its bucket would be full again, so Redis holds only the buckets in
//! use. The decision is governor's (`switchboard_server::rate`): one call refills every
//! `every / calls`, `burst` at once, and a refused call is told how long until it passes.
//!
//! Bounds: one multiplexed connection (every call shares it; none is opened per call);
//! every operation, a reconnection included, has [`OPERATION_DEADLINE`]; after a failure
//! the store is not asked again for [`REST_AFTER_FAILURE`] (the calls in between fail at
//! once, and the limits decide them locally), so an outage costs a call at most one
//! deadline. The URL's password is a secret: [`StateUrl`]'s `Display` and `Debug` never
//! show it, and no failure text holds it. `rediss://` (TLS) is not supported.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, Script};
use switchboard_server::rate::{Rate, RetryAfter};
use tokio::time::Instant;

use crate::rate_limits::{BucketKey, LimitStore, StoreFailure, TakeFuture};

/// Longest one Redis operation (a connection included) may take before the call is
/// decided locally.
pub const OPERATION_DEADLINE: Duration = Duration::from_millis(100);
/// Longest the first connection, at the start, may take.
pub const START_DEADLINE: Duration = Duration::from_secs(2);
/// How long the store is left alone after a failure.
pub const REST_AFTER_FAILURE: Duration = Duration::from_secs(1);
/// The prefix of every key the gateway's rate limits use.
pub const KEY_PREFIX: &str = "switchboard:rl:";

/// GCRA over one key: `KEYS[1]` the bucket, `ARGV[1]` the microseconds between calls (T),
/// `ARGV[2]` the tolerance T × (burst − 1). Answers 0 (taken) or the microseconds until
/// the call would pass.
pub const GCRA_SCRIPT: &str = r"
local now = redis.call('TIME')
local t0 = tonumber(now[1]) * 1000000 + tonumber(now[2])
local t = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or t0
local earliest = tat - tau
if t0 < earliest then
  return math.max(1, math.ceil(earliest - t0))
end
local next = math.max(tat, t0) + t
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.max(1, math.ceil((next - t0) / 1000)))
return 0
";

/// A `--state` URL that reads: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`.
#[derive(Clone)]
pub struct StateUrl {
    client: Client,
    /// `redis://HOST:PORT/DB`, with `***@` when the URL has credentials.
    shown: String,
    /// The password, to take out of failure texts.
    password: Option<String>,
}

impl fmt::Display for StateUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for StateUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateUrl({})", self.shown)
    }
}

/// Why a `--state` URL cannot be used (never holding the URL's credentials).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateUrlError {
    /// Another scheme than `redis://` (`rediss://` included).
    #[error(
        "the shared store must be a redis://HOST:PORT[/DB] URL (rediss:// with TLS is not supported)"
    )]
    Scheme,
    /// `redis://` that does not parse.
    #[error("not a usable redis://HOST:PORT[/DB] URL (host, port and database number)")]
    Malformed,
}

impl StateUrl {
    /// Reads `text` (it may hold a password: no error repeats it).
    pub fn parse(text: &str) -> Result<StateUrl, StateUrlError> {
        if !text.starts_with("redis://") {
            return Err(StateUrlError::Scheme);
        }
        let info = text
            .into_connection_info()
            .map_err(|_| StateUrlError::Malformed)?;
        let ConnectionAddr::Tcp(host, port) = info.addr() else {
            return Err(StateUrlError::Malformed);
        };
        let settings = info.redis_settings();
        let credentials = settings.username().is_some() || settings.password().is_some();
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let shown = format!(
            "redis://{}{host}:{port}/{}",
            if credentials { "***@" } else { "" },
            settings.db()
        );
        let password = settings.password().map(str::to_owned);
        let client = Client::open(info).map_err(|_| StateUrlError::Malformed)?;
        Ok(StateUrl {
            client,
            shown,
            password,
        })
    }

    /// `error`'s text without the password.
    fn failure(&self, error: &redis::RedisError) -> StoreFailure {
        let mut text = error.to_string();
        if let Some(password) = self.password.as_deref().filter(|p| !p.is_empty()) {
            text = text.replace(password, "<redacted>");
        }
        StoreFailure(text)
    }
}

/// How long a value operation ([`RedisStore::get`], [`RedisStore::set`], one try of
/// [`RedisStore::lock`]) may take: longer than a bucket's, since a renewal waits anyway.
pub const VALUE_DEADLINE: Duration = Duration::from_secs(1);
/// How often a waiting [`RedisStore::lock`] tries again.
const LOCK_RETRY: Duration = Duration::from_millis(25);

/// Deletes `KEYS[1]` only when it holds `ARGV[1]` (a lock given back by its holder only).
const UNLOCK_SCRIPT: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Redis as the instances' shared store: one connection, every operation bounded.
pub struct RedisStore {
    url: StateUrl,
    script: Script,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    /// Until when the store is left alone after a failure.
    resting_until: Mutex<Option<Instant>>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` and checks that Redis answers (`PING`) and runs the script,
    /// within [`START_DEADLINE`]. Errors: what went wrong, without the URL's secrets.
    pub async fn connect(url: StateUrl) -> Result<RedisStore, StoreFailure> {
        let store = RedisStore {
            url,
            script: Script::new(GCRA_SCRIPT),
            connection: tokio::sync::Mutex::new(None),
            resting_until: Mutex::new(None),
        };
        let checked = async {
            let mut connection = store.connection(START_DEADLINE).await?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await
                .map_err(|error| store.url.failure(&error))?;
            store
                .script
                .load_async(&mut connection)
                .await
                .map_err(|error| store.url.failure(&error))?;
            Ok(())
        };
        tokio::time::timeout(START_DEADLINE, checked)
            .await
            .map_err(|_| StoreFailure(format!("no answer within {START_DEADLINE:?}")))??;
        Ok(store)
    }

    /// The URL, as it may be shown.
    pub fn url(&self) -> &StateUrl {
        &self.url
    }

    /// The connection, made when there is none.
    async fn connection(&self, deadline: Duration) -> Result<MultiplexedConnection, StoreFailure> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(deadline))
            .set_response_timeout(Some(deadline));
        let connection = self
            .url
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|error| self.url.failure(&error))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    async fn take_in_redis(
        &self,
        key: &BucketKey,
        rate: Rate,
    ) -> Result<Result<(), RetryAfter>, StoreFailure> {
        let mut connection = self.connection(OPERATION_DEADLINE).await?;
        let (period, tolerance) = gcra_micros(rate);
        let waited: Result<u64, _> = self
            .script
            .key(format!("{KEY_PREFIX}{}:{}", key.limit, key.holder))
            .arg(period)
            .arg(tolerance)
            .invoke_async(&mut connection)
            .await;
        match waited {
            Ok(0) => Ok(Ok(())),
            Ok(micros) => Ok(Err(RetryAfter(Duration::from_micros(micros)))),
            Err(error) => {
                // The next operation connects anew (a dead connection is not kept).
                *self.connection.lock().await = None;
                Err(self.url.failure(&error))
            }
        }
    }

    /// One value operation, bounded by [`VALUE_DEADLINE`]; a failure drops the connection
    /// (the next operation connects anew).
    async fn value_op<T>(&self, command: redis::Cmd) -> Result<T, StoreFailure>
    where
        T: redis::FromRedisValue,
    {
        let run = async {
            let mut connection = self.connection(VALUE_DEADLINE).await?;
            command
                .query_async::<T>(&mut connection)
                .await
                .map_err(|error| self.url.failure(&error))
        };
        let done = tokio::time::timeout(VALUE_DEADLINE, run)
            .await
            .unwrap_or_else(|_| Err(StoreFailure(format!("no answer within {VALUE_DEADLINE:?}"))));
        if done.is_err()
            && let Ok(mut slot) = self.connection.try_lock()
        {
            *slot = None;
        }
        done
    }

    /// The value under `key`, if any.
    pub async fn get(&self, key: &str) -> Result<Option<String>, StoreFailure> {
        self.value_op(redis::cmd("GET").arg(key).clone()).await
    }

    /// Sets `key` to `value` for `keep` (then Redis forgets it).
    pub async fn set(&self, key: &str, value: &str, keep: Duration) -> Result<(), StoreFailure> {
        let millis = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX).max(1);
        self.value_op(
            redis::cmd("SET")
                .arg(key)
                .arg(value)
                .arg("PX")
                .arg(millis)
                .clone(),
        )
        .await
    }

    /// Takes the lock `key` as `holder`, waiting at most `timing.wait` while another holds
    /// it; it lapses after `timing.hold` if never given back ([`RedisStore::unlock`]).
    pub async fn lock(
        &self,
        key: &str,
        holder: &str,
        timing: LockTiming,
    ) -> Result<(), StoreFailure> {
        let started = Instant::now();
        let millis = u64::try_from(timing.hold.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        loop {
            let taken: Option<String> = self
                .value_op(
                    redis::cmd("SET")
                        .arg(key)
                        .arg(holder)
                        .arg("NX")
                        .arg("PX")
                        .arg(millis)
                        .clone(),
                )
                .await?;
            if taken.is_some() {
                return Ok(());
            }
            if started.elapsed() >= timing.wait {
                return Err(StoreFailure(format!(
                    "another instance held the lock for {:?}",
                    timing.wait
                )));
            }
            tokio::time::sleep(LOCK_RETRY).await;
        }
    }

    /// Gives the lock `key` back, when `holder` still holds it.
    pub async fn unlock(&self, key: &str, holder: &str) -> Result<(), StoreFailure> {
        let script = Script::new(UNLOCK_SCRIPT);
        let run = async {
            let mut connection = self.connection(VALUE_DEADLINE).await?;
            script
                .key(key)
                .arg(holder)
                .invoke_async::<i64>(&mut connection)
                .await
                .map_err(|error| self.url.failure(&error))
        };
        tokio::time::timeout(VALUE_DEADLINE, run)
            .await
            .unwrap_or_else(|_| Err(StoreFailure(format!("no answer within {VALUE_DEADLINE:?}"))))
            .map(|_| ())
    }

    fn resting(&self) -> bool {
        let until = self
            .resting_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        until.is_some_and(|until| Instant::now() < until)
    }

    fn rest(&self) {
        *self
            .resting_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + REST_AFTER_FAILURE);
    }
}

impl LimitStore for RedisStore {
    fn take<'a>(&'a self, key: &'a BucketKey, rate: Rate) -> TakeFuture<'a> {
        Box::pin(async move {
            if self.resting() {
                return Err(StoreFailure(
                    "failed less than a second ago; not asked".to_owned(),
                ));
            }
            let decided =
                match tokio::time::timeout(OPERATION_DEADLINE, self.take_in_redis(key, rate)).await
                {
                    Ok(decided) => decided,
                    Err(_) => {
                        // A connection that stopped answering is not kept either (unless
                        // another call is busy with the slot: it is connecting anew).
                        if let Ok(mut slot) = self.connection.try_lock() {
                            *slot = None;
                        }
                        Err(StoreFailure(format!(
                            "no answer within {OPERATION_DEADLINE:?}"
                        )))
                    }
                };
            if decided.is_err() {
                self.rest();
            }
            decided
        })
    }
}

/// How long [`RedisStore::lock`] waits for the lock, and how long a taken lock lasts if
/// its holder never gives it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockTiming {
    /// The longest wait.
    pub wait: Duration,
    /// The lock's life.
    pub hold: Duration,
}

/// GCRA's T (microseconds between calls, at least 1) and tolerance T × (burst − 1).
fn gcra_micros(rate: Rate) -> (u64, u64) {
    let period = (rate.every / rate.calls.get()).as_micros().max(1);
    let period = u64::try_from(period).unwrap_or(u64::MAX);
    let tolerance = period.saturating_mul(u64::from(rate.burst().get() - 1));
    (period, tolerance)
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    #[test]
    fn a_url_is_shown_without_its_credentials_and_other_schemes_are_refused() {
        let url = StateUrl::parse("redis://:hunter2@cache.internal:6380/3").expect("parses");
        assert_eq!(url.to_string(), "redis://***@cache.internal:6380/3");
        assert!(!format!("{url:?}").contains("hunter2"));
        let plain = StateUrl::parse("redis://127.0.0.1").expect("parses");
        assert_eq!(plain.to_string(), "redis://127.0.0.1:6379/0");
        for (text, error) in [
            ("rediss://:pw@host:6379", StateUrlError::Scheme),
            ("http://host", StateUrlError::Scheme),
            ("redis://:pw@host:notaport", StateUrlError::Malformed),
            ("redis://host:6379/notadb", StateUrlError::Malformed),
        ] {
            assert_eq!(StateUrl::parse(text).map(|_| ()), Err(error), "{text}");
        }
    }

    #[test]
    fn gcra_takes_governors_period_and_tolerance() {
        let rate = |calls, every, burst| Rate {
            calls: NonZeroU32::new(calls).expect("not zero"),
            every: Duration::from_secs(every),
            burst: NonZeroU32::new(burst),
        };
        assert_eq!(
            gcra_micros(rate(3, 3600, 0)),
            (1_200_000_000, 2_400_000_000)
        );
        assert_eq!(gcra_micros(rate(60, 60, 10)), (1_000_000, 9_000_000));
    }
}
