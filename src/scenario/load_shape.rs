//! The arrival process of a load, once validated: a leaf, so that the ceilings (`limits`)
//! and the arrival schedule (`schedule`) read it without reading the whole scenario model.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    #[serde(with = "duration")]
    pub at: Duration,
    pub rate: f64,
}
