//! The arrival process of a load, once validated: a leaf, so that the ceilings (`limits`)
//! and the arrival schedule (`schedule`) read it without reading the whole scenario model.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use super::units::duration;

/// Arrival process of logical (upstream) requests.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadShape {
    /// Evenly spaced arrivals at `rate` per second.
    Constant { rate: f64 },
    /// Exponential inter-arrival times with mean 1/`rate`.
    Poisson { rate: f64 },
    /// Rate changes linearly from `from` to `to` over the whole duration.
    Ramp { from: f64, to: f64 },
    /// Piecewise constant rate; each step holds from its `at` until the next step.
    Steps { steps: Vec<RateStep> },
    /// Closed loop: `users` each send, wait for the outcome, think, and send again.
    Closed { users: u32, think_time: Duration },
    /// A fleet failing together: `requests` arrivals (one per client of `load.clients`) at
    /// t = 0, then each client follows its own policy; the classic jitter lab.
    Burst { requests: u32 },
    /// A recorded rate series (`load.file`), piecewise constant: each step's rate holds
    /// until the next step, offered as `arrivals` (Poisson or evenly spaced).
    Series {
        file: PathBuf,
        arrivals: SeriesArrivals,
        /// Shown as their number (`check --json`): a 6 h series has thousands.
        #[serde(serialize_with = "count")]
        steps: Vec<RateStep>,
        /// Bad lines skipped under `load.skip_bad_lines`.
        skipped_lines: u64,
    },
    /// A recorded access log (`load.file`): each request at its own instant.
    Trace {
        file: PathBuf,
        /// Replay instants in nanoseconds since t = 0, non-decreasing; shown as their number.
        #[serde(rename = "requests", serialize_with = "count_times")]
        times: Arc<[u64]>,
        /// The request class of each (by its path), when the load has classes.
        #[serde(skip)]
        classes: Option<Arc<[u16]>>,
        /// Bad lines skipped under `load.skip_bad_lines`.
        skipped_lines: u64,
    },
}

/// How a recorded rate series is turned into arrivals.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesArrivals {
    /// A Poisson process whose rate follows the series (seeded as a `poisson` load).
    Poisson,
    /// Evenly spaced within each step, as a `steps` load.
    Constant,
}

fn count<S: Serializer>(v: &[RateStep], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(v.len() as u64)
}

fn count_times<S: Serializer>(v: &Arc<[u64]>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(v.len() as u64)
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    #[serde(with = "duration")]
    pub at: Duration,
    pub rate: f64,
}
