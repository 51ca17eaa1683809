//! `serve --state redis://HOST:PORT[/DB]` (or `SWITCHBOARD_STATE`): the store several
//! instances share, so that the `rateLimits` limits are one set of buckets across them
//! (`switchboard_gateway::shared_state`; docs/gateway-limits.md, "Several instances"), and
//! the upstream tokens they renew in turns (`shared_tokens.rs`).
//!
//! The value may be `${VAR}` (expanded from the environment, so the URL and its password
//! need not sit in a process list); its password is never shown: the startup line, every
//! error and every warning show the URL as `redis://***@HOST:PORT/DB`. At the start Redis
//! must answer: a URL that does not read or a Redis that does not answer stops `serve`
//! (exit 2) with why — a quota the operator configured as shared and silently kept per
//! instance would be a wrong answer. At run time a call Redis cannot decide within its
//! deadline is decided by this instance's own buckets; the first such call of an outage
//! is said on stderr, and so is Redis's return; each one is counted in
//! `switchboard_state_errors_total` (`--metrics`).

use std::sync::Arc;

use switchboard_config::{ProcessEnv, expand_vars};
use switchboard_gateway::metrics::GatewayMetrics;
use switchboard_gateway::rate_limits::{CallLimits, StoreEvent, StoreWatcher};
use switchboard_gateway::shared_state::{RedisStore, StateUrl};

use crate::Failure;
use crate::terminal::say;

/// Where `--state` may come from when the flag is not given.
pub(crate) const STATE_ENV: &str = "SWITCHBOARD_STATE";

/// The store `flag` names (none without it). Errors: the URL does not read, or Redis does
/// not answer (exit 2).
pub(crate) async fn connect(flag: Option<&str>) -> Result<Option<Arc<RedisStore>>, Failure> {
    let Some(flag) = flag else {
        return Ok(None);
    };
    let text = expand_vars(flag, &ProcessEnv).map_err(|unset| {
        Failure::Usage(format!(
            "--state: the variable `{unset}` is not set (give the store's URL, redis://HOST:PORT[/DB])"
        ))
    })?;
    let url =
        StateUrl::parse(&text).map_err(|error| Failure::Usage(format!("--state: {error}")))?;
    let shown = url.to_string();
    let store = RedisStore::connect(url).await.map_err(|failure| {
        Failure::Usage(format!(
            "--state: the shared store {shown} does not answer: {failure}; not serving with limits that would not be shared"
        ))
    })?;
    Ok(Some(Arc::new(store)))
}

/// Makes `limits` decided in `store`, said on stderr.
pub(crate) fn share_limits(
    store: &Arc<RedisStore>,
    limits: &CallLimits,
    metrics: Option<GatewayMetrics>,
) {
    let shown = store.url().to_string();
    let watched = shown.clone();
    let watcher: StoreWatcher = Arc::new(move |event: &StoreEvent| match event {
        StoreEvent::Failed {
            failure,
            outage_began,
        } => {
            if let Some(metrics) = &metrics {
                metrics.state_error();
            }
            if *outage_began {
                say(format_args!(
                    "switchboard serve: warning: the shared store {watched} failed ({failure}); rate limits are this instance's own until it is back"
                ));
            }
        }
        StoreEvent::Back => say(format_args!(
            "switchboard serve: the shared store {watched} is back; rate limits are shared again"
        )),
    });
    limits.share_with(store.clone(), watcher);
    say(format_args!(
        "switchboard serve: rate limits shared through {shown}"
    ));
}
