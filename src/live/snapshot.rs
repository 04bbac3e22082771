//! What one config and its target have counted so far, read while the run goes: the one
//! reading the console, `/metrics`, the pushes and the events stream all draw from, so they
//! never disagree about a figure.

use serde::Serialize;

use super::driver::ConfigRuntime;
use crate::server::TargetProbe;

/// One config's figures so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    pub config: String,
    pub upstream: u64,
    pub attempts: u64,
    pub retries: u64,
    pub failures: u64,
    pub budget_refusals: u64,
    /// Requests the config's target counted.
    pub arrivals: u64,
    /// Logical requests of the config in flight now.
    pub in_flight: u64,
    /// The budget's last level in % of its capacity; None without a budget level.
    pub budget_level_pct: Option<f64>,
    /// Logical requests that ended successful.
    pub successes: u64,
    /// Attempts by outcome (`ok`, `transient`, `throttle`, `timeout`, ...: the attempt log's
    /// labels).
    pub attempts_by_outcome: std::collections::BTreeMap<String, u64>,
    /// End-to-end latency of the finished requests so far (for `/metrics`; an event line
    /// stays one line of counts).
    #[serde(skip)]
    pub latency: LatencyBuckets,
}

/// A latency distribution as a Prometheus histogram: cumulative counts at the bucket
/// bounds, the count and the sum. Drawn from the run's own HDR histogram, so it is the
/// same latency the summary reports (each bound holds the values the HDR histogram
/// records as equivalent to it, within its 2 significant digits).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyBuckets {
    /// (upper bound in seconds, requests at or below it).
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_s: f64,
}

/// Prometheus's default bucket bounds, in seconds: 5 ms to 10 s.
const LATENCY_BOUNDS_S: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

impl LatencyBuckets {
    fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let count = h.len();
        LatencyBuckets {
            buckets: LATENCY_BOUNDS_S
                .iter()
                .map(|&le| (le, h.count_between(0, (le * 1e6) as u64)))
                .collect(),
            count,
            sum_s: h.mean() * count as f64 / 1e6,
        }
    }
}

impl Snapshot {
    /// Downstream arrivals per upstream request so far (0 before any).
    pub fn amplification(&self) -> f64 {
        if self.upstream == 0 {
            0.0
        } else {
            self.arrivals as f64 / self.upstream as f64
        }
    }
}

/// What `rt` and its target counted so far.
pub fn snapshot(rt: &ConfigRuntime, target: &TargetProbe) -> Snapshot {
    let arrivals = target.arrivals();
    let in_flight = rt.in_flight.load(std::sync::atomic::Ordering::Relaxed);
    rt.with(|g| {
        let secs = g.recorder().seconds();
        let sum = |f: fn(&crate::metrics::recorder::Second) -> u64| secs.iter().map(f).sum();
        let level = secs.iter().rev().find_map(|s| s.budget_level);
        let capacity = crate::metrics::drain::budget_capacity(
            g.config(),
            secs.iter().filter_map(|s| s.budget_level),
        );
        Snapshot {
            config: rt.name.clone(),
            upstream: sum(|s| s.started),
            attempts: sum(|s| s.attempts),
            retries: sum(|s| s.retries),
            failures: sum(|s| s.failures),
            budget_refusals: sum(|s| s.budget_refusals),
            arrivals,
            in_flight,
            budget_level_pct: level.zip(capacity).map(|(l, c)| 100.0 * l / c),
            successes: sum(|s| s.successes),
            attempts_by_outcome: g.recorder().attempts_by_outcome(),
            latency: LatencyBuckets::of(&g.recorder().latency_us()),
        }
    })
}
