//! What happened second by second: the per-second row of one config (a line of
//! `timeseries.csv`), the fault windows drawn over those seconds, and the sum of two
//! per-second series. A leaf every other file of `metrics` may read, so that the counts kept
//! per second never depend on the summary built from them.

use serde::{Deserialize, Serialize};

/// A fault window drawn as a band on time charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultBand {
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
    /// Chance that one arrival in the window is affected.
    #[serde(default = "one")]
    pub probability: f64,
}

fn one() -> f64 {
    1.0
}

impl FaultBand {
    /// The label with the probability when it is not 1: "503 · 30 %".
    pub fn described(&self) -> String {
        if self.probability < 1.0 {
            format!(
                "{} · {} %",
                self.label,
                super::numbers::fmt_pct(self.probability)
            )
        } else {
            self.label.clone()
        }
    }
}

/// One second of one config (a row of `timeseries.csv`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondRow {
    pub config: String,
    pub second: u64,
    /// Live runs: the second's start, RFC 3339 in UTC (absent from simulator output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    pub upstream_started: u64,
    pub upstream_finished: u64,
    pub successes: u64,
    pub failures: u64,
    pub attempts: u64,
    pub retries: u64,
    pub retries_transient: u64,
    pub retries_throttling: u64,
    pub budget_refusals: u64,
    pub breaker_refusals: u64,
    pub dropped: u64,
    pub downstream_arrivals: u64,
    pub target_in_flight_peak: u64,
    pub target_served_ok: u64,
    pub client_in_flight_peak: u64,
    /// downstream_arrivals / upstream_started in this second (0 when nothing started).
    pub amplification: f64,
    /// First attempts whose outcome arrived in this second, and the failed ones by class.
    #[serde(default)]
    pub first_attempts: u64,
    #[serde(default)]
    pub first_failed_transient: u64,
    #[serde(default)]
    pub first_failed_throttling: u64,
    #[serde(default)]
    pub first_failed_timeout: u64,
    /// Failed first attempts the config does not retry.
    #[serde(default)]
    pub first_failed_other: u64,
    /// Retries of requests that finished in this second, succeeded / still failed.
    #[serde(default)]
    pub useful_retries: u64,
    #[serde(default)]
    pub wasted_retries: u64,
    pub budget_level: Option<f64>,
    /// Lowest budget level sampled in this second.
    #[serde(default)]
    pub budget_low: Option<f64>,
    /// The last level in % of the budget's capacity (see `budget.capacity`).
    #[serde(default)]
    pub budget_level_pct: Option<f64>,
    /// 0 closed, 1 half-open, 2 open.
    pub breaker_state: Option<u8>,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// successes / finished in this second (1 when nothing finished).
    pub success_rate: f64,
}

/// Adds `b` into `a` element-wise, growing `a` as needed.
pub fn add_series(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}
