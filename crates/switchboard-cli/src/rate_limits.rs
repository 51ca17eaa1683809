//! `serve`'s rate limits: the config file's `rateLimits` section
//! (`switchboard_config::team::rate_limits`) made into the gateway's limits
//! (`switchboard_gateway::rate_limits`), read at the start (a bad section stops `serve`,
//! exit 2) and again at each `--watch` reload. A reload keeps the buckets (and refusal
//! counts) of every limit whose definition did not change — same name, scope, calls,
//! period, burst and tools — and starts the others full; a section that no longer reads
//! keeps the limits in force, and says so (they are never dropped for a bad edit).

use std::sync::{Arc, Mutex, PoisonError};

use switchboard_config::ConfigFile;
use switchboard_config::team::rate_limits::{self, RateLimitScope, RateLimitSpec};
use switchboard_gateway::rate_limits::{
    CallLimit, CallLimitSpec, CallLimits, LimitScope, ToolSelector,
};
use switchboard_server::rate::Rate;

use crate::terminal::say;

/// The limits in force and the definitions they were made from.
#[derive(Debug)]
pub(crate) struct RateLimitsInForce {
    limits: Arc<CallLimits>,
    made: Mutex<Vec<(RateLimitSpec, Arc<CallLimit>)>>,
}

impl RateLimitsInForce {
    /// The limits of `file`, said on stderr when there are any. Errors: the section does
    /// not read (the message names the limit and what to write).
    pub(crate) fn start(file: &ConfigFile) -> Result<RateLimitsInForce, String> {
        let specs = rate_limits::read(&file.team)
            .map_err(|error| format!("not serving: {error} (in {})", file.path.display()))?;
        let made = made_from(specs, &[]);
        if !made.is_empty() {
            say(format_args!(
                "switchboard serve: rate limits: {}",
                summary(&made)
            ));
        }
        let limits = Arc::new(CallLimits::new(
            made.iter().map(|(_, limit)| limit.clone()).collect(),
        ));
        Ok(RateLimitsInForce {
            limits,
            made: Mutex::new(made),
        })
    }

    /// The gateway's limits (the same ones, replaced in place at each reload).
    pub(crate) fn limits(&self) -> Arc<CallLimits> {
        self.limits.clone()
    }

    /// Reads `file`'s section again and puts it in force, keeping the buckets of the
    /// limits defined as before; a section that does not read leaves the limits as they
    /// are. Says what happened when anything changed.
    pub(crate) fn reload(&self, file: &ConfigFile) {
        let specs = match rate_limits::read(&file.team) {
            Ok(specs) => specs,
            Err(error) => {
                say(format_args!(
                    "switchboard serve: {error}; the rate limits in force stay"
                ));
                return;
            }
        };
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let unchanged = specs.len() == made.len()
            && specs
                .iter()
                .zip(made.iter())
                .all(|(new, (old, _))| new == old);
        if unchanged {
            return;
        }
        let next = made_from(specs, &made);
        let kept = next
            .iter()
            .filter(|(_, limit)| made.iter().any(|(_, old)| Arc::ptr_eq(old, limit)))
            .count();
        self.limits
            .replace(next.iter().map(|(_, limit)| limit.clone()).collect());
        if next.is_empty() {
            say(format_args!(
                "switchboard serve: rate limits reloaded: none in force"
            ));
        } else {
            say(format_args!(
                "switchboard serve: rate limits reloaded ({kept} unchanged kept their counts, the rest start full): {}",
                summary(&next)
            ));
        }
        *made = next;
    }
}

/// The limits of `specs`, reusing those of `before` defined the same way.
fn made_from(
    specs: Vec<RateLimitSpec>,
    before: &[(RateLimitSpec, Arc<CallLimit>)],
) -> Vec<(RateLimitSpec, Arc<CallLimit>)> {
    specs
        .into_iter()
        .map(|spec| {
            let limit = before
                .iter()
                .find(|(old, _)| *old == spec)
                .map(|(_, limit)| limit.clone())
                .unwrap_or_else(|| CallLimit::new(call_limit(&spec)));
            (spec, limit)
        })
        .collect()
}

fn call_limit(spec: &RateLimitSpec) -> CallLimitSpec {
    let tools: Option<ToolSelector> = if spec.tools.is_empty() {
        None
    } else {
        let counted = spec.clone();
        Some(Arc::new(move |tool: &str| counted.counts(tool)))
    };
    CallLimitSpec {
        name: spec.name.clone(),
        per: match spec.per {
            RateLimitScope::Client => LimitScope::Client,
            RateLimitScope::Gateway => LimitScope::Gateway,
        },
        rate: rate(spec),
        tools,
    }
}

fn rate(spec: &RateLimitSpec) -> Rate {
    Rate {
        calls: spec.calls,
        every: spec.every,
        burst: spec.burst,
    }
}

/// `per-user (60 calls per 1m per client, tools fs__*), all (1000 calls per 1s per gateway)`.
fn summary(made: &[(RateLimitSpec, Arc<CallLimit>)]) -> String {
    made.iter()
        .map(|(spec, _)| {
            let tools = if spec.tools.is_empty() {
                String::new()
            } else {
                let patterns: Vec<&str> = spec.tools.iter().map(|p| p.as_str()).collect();
                format!(", tools {}", patterns.join(" "))
            };
            format!(
                "{} ({} per {}{tools})",
                spec.name,
                rate(spec),
                spec.per.as_str()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
