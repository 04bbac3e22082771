//! Verdicts: what each config's retries bought, against a baseline. A config that never
//! retries must not look best for not retrying; so each config is judged by the load it
//! added (overall and during the faults) and the successes that load bought, and its
//! retries are split into useful (the request then succeeded) and wasted (it still failed).
//!
//! The baseline is the scenario's `baseline = "NAME"`, else the config named `no-retry`,
//! else none (then only the retry split is given).

use serde::{Deserialize, Serialize};

/// The config every other is judged against, unless the scenario names one.
pub const DEFAULT_BASELINE: &str = "no-retry";

/// One config against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The config judged against (`null`: no baseline in this run).
    pub baseline: Option<String>,
    /// useful_retries / retries (`null` without retries).
    pub retry_efficiency: Option<f64>,
    /// Downstream arrivals beyond the baseline's, in % of the baseline's.
    pub extra_load_pct: Option<f64>,
    /// Downstream arrivals during the fault windows beyond the baseline's, in %.
    pub fault_load_added_pct: Option<f64>,
    /// Successes beyond the baseline's (negative: fewer).
    pub extra_successes: Option<i64>,
    /// The verdict in one sentence.
    pub sentence: String,
}
