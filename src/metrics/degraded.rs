//! Requests the config's degradation ladder answered: a third ending beside success and
//! failure, with its own count per rung and its own latency (user-visible: from the
//! request's intended start to the fallback answer).

use serde::{Deserialize, Serialize};

use super::latency::Percentiles;
use super::recorder::Recorder;
use crate::policy::Rung;

/// How many requests one rung answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungCount {
    /// `model NAME`, `cached` or `static`.
    pub rung: String,
    pub requests: u64,
}

/// A config's degraded requests (configs with a `ladder` only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradedFigures {
    /// Requests a rung answered (neither successes nor failures).
    pub requests: u64,
    /// Per rung, in the ladder's order.
    pub rungs: Vec<RungCount>,
    /// Latency of the degraded answers.
    pub latency_ms: Percentiles,
}

impl DegradedFigures {
    /// The figures of `ladder` from what `rec` counted; `None` without a ladder.
    pub fn of(ladder: &[Rung], rec: &Recorder) -> Option<DegradedFigures> {
        if ladder.is_empty() {
            return None;
        }
        let rungs: Vec<RungCount> = ladder
            .iter()
            .enumerate()
            .map(|(i, r)| RungCount {
                rung: r.label().to_string(),
                requests: rec.degraded.get(i).copied().unwrap_or(0),
            })
            .collect();
        Some(DegradedFigures {
            requests: rungs.iter().map(|r| r.requests).sum(),
            rungs,
            latency_ms: Percentiles::of(&rec.degraded_latency_us.view()),
        })
    }
}
