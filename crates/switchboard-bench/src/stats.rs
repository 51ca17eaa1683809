//! Latency statistics and the one-line JSON result every benchmark client prints.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The result of one client run: what every client (Rust, TypeScript, Python) prints as
/// a single JSON line on stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Which client produced it (`ours`, `rmcp`, `ts`, `py`, `raw`).
    pub client: String,
    /// Timed calls (warm-up calls excluded).
    pub calls: u64,
    /// Calls kept in flight at once (1 = sequential).
    pub inflight: u64,
    /// Wall time of the timed calls, in seconds.
    pub elapsed_s: f64,
    /// `calls / elapsed_s`.
    pub calls_per_s: f64,
    /// Median latency of one call, in microseconds.
    pub p50_us: f64,
    /// 90th percentile latency, in microseconds.
    pub p90_us: f64,
    /// 99th percentile latency, in microseconds.
    pub p99_us: f64,
    /// Fastest call, in microseconds.
    pub min_us: f64,
    /// Slowest call, in microseconds.
    pub max_us: f64,
    /// Spawn + handshake time, in milliseconds.
    pub init_ms: f64,
    /// The protocol version negotiated, when the client can tell.
    #[serde(default)]
    pub protocol: Option<String>,
}

impl RunResult {
    /// Builds a result from per-call latencies in nanoseconds (sorted in place).
    pub fn from_latencies(
        client: &str,
        inflight: u64,
        elapsed: Duration,
        latencies_ns: &mut [u64],
        init: Duration,
        protocol: Option<String>,
    ) -> RunResult {
        latencies_ns.sort_unstable();
        let calls = latencies_ns.len() as u64;
        let elapsed_s = elapsed.as_secs_f64();
        let us = |ns: u64| ns as f64 / 1000.0;
        RunResult {
            client: client.to_owned(),
            calls,
            inflight,
            elapsed_s,
            calls_per_s: if elapsed_s > 0.0 {
                calls as f64 / elapsed_s
            } else {
                0.0
            },
            p50_us: us(percentile(latencies_ns, 50.0)),
            p90_us: us(percentile(latencies_ns, 90.0)),
            p99_us: us(percentile(latencies_ns, 99.0)),
            min_us: us(latencies_ns.first().copied().unwrap_or(0)),
            max_us: us(latencies_ns.last().copied().unwrap_or(0)),
            init_ms: init.as_secs_f64() * 1000.0,
            protocol,
        }
    }

    /// The result as one JSON line (without the newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// Nearest-rank percentile of sorted values; 0 for an empty slice.
pub fn percentile(sorted: &[u64], pct: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median of floats (mean of the two middle values for an even count); `NaN` when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// Minimum and maximum of floats; `(NaN, NaN)` when empty.
pub fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold((f64::NAN, f64::NAN), |(lo, hi), v| {
            (
                if lo.is_nan() { v } else { lo.min(v) },
                if hi.is_nan() { v } else { hi.max(v) },
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&sorted, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn median_and_range() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(min_max(&[3.0, 1.0, 2.0]), (1.0, 3.0));
    }

    #[test]
    fn result_line_round_trips() {
        let mut lat = vec![3000, 1000, 2000];
        let result = RunResult::from_latencies(
            "ours",
            1,
            Duration::from_millis(6),
            &mut lat,
            Duration::from_millis(10),
            Some("2025-11-25".into()),
        );
        assert_eq!(result.calls, 3);
        assert_eq!(result.p50_us, 2.0);
        let back: RunResult = serde_json::from_str(&result.to_line()).expect("parses");
        assert_eq!(back, result);
    }
}
