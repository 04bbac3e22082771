//! What a config's send-rate limiter cost its sends: how many had to wait for a token, and
//! how long. A wait is a delay of its own, apart from retry backoff: the limiter holds first
//! attempts too, and once it has engaged it holds them to any resource the client calls.

use super::runs::RunHistogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Sends the rate limiter held back, and their waits (microseconds). Merges exactly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateLimitWaits {
    /// Attempts that waited for a token before they were sent (each counted once, however
    /// many times it asked).
    pub sends: u64,
    /// Their waits added up, in microseconds.
    pub total_us: u64,
    /// Each wait, from the first time the attempt was held to its token (clamped to the
    /// latency range, 1 µs to one hour). Nothing is allocated for it until a send waits.
    pub wait_us: RunHistogram<3>,
}

impl Default for RateLimitWaits {
    fn default() -> Self {
        RateLimitWaits {
            sends: 0,
            total_us: 0,
            wait_us: RunHistogram::new(),
        }
    }
}

impl RateLimitWaits {
    /// An attempt got its token `wait` after it was first held back.
    pub fn waited(&mut self, wait: Duration) {
        let us = wait.as_micros() as u64;
        self.sends += 1;
        self.total_us = self.total_us.saturating_add(us);
        self.wait_us.record(us);
    }

    /// Adds another recorder's waits.
    pub fn merge(&mut self, o: &RateLimitWaits) {
        self.sends += o.sends;
        self.total_us = self.total_us.saturating_add(o.total_us);
        self.wait_us.add(&o.wait_us);
    }

    /// The waits added up, in seconds.
    pub fn total_s(&self) -> f64 {
        self.total_us as f64 / 1e6
    }
}
