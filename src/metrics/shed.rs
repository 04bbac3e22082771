//! The target's sheds by reason: what the built-in target (live or modeled) answered without
//! service, and why, counted apart so the reasons add up to its `shed`.

use serde::{Deserialize, Serialize};

/// Why the service shed a request (see `crate::shed::Shed`, whose order of checks this
/// keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShedReason {
    RateLimited,
    MaxInFlight,
    AdaptiveConcurrency,
    QueueFull,
    QueueTimeout,
    Codel,
}

/// The target's sheds by reason; they add up to `TargetStats::shed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShedCounts {
    /// Answered 429 by the token-bucket rate limit.
    pub rate_limited: u64,
    /// Answered 503 at once: `max_in_flight` requests were queued or served already.
    pub max_in_flight: u64,
    /// Answered 503 at once: the adaptive concurrency limit was reached.
    #[serde(default)]
    pub adaptive_concurrency: u64,
    /// Answered 503 at once: the queue was full.
    pub queue_full: u64,
    /// Answered 503 after waiting `queue_timeout` for a slot.
    pub queue_timeout: u64,
    /// Answered 503 when its slot came: CoDel sloughed it.
    pub codel: u64,
}

impl ShedCounts {
    pub fn count(&mut self, reason: ShedReason) {
        *match reason {
            ShedReason::RateLimited => &mut self.rate_limited,
            ShedReason::MaxInFlight => &mut self.max_in_flight,
            ShedReason::AdaptiveConcurrency => &mut self.adaptive_concurrency,
            ShedReason::QueueFull => &mut self.queue_full,
            ShedReason::QueueTimeout => &mut self.queue_timeout,
            ShedReason::Codel => &mut self.codel,
        } += 1;
    }

    pub fn total(&self) -> u64 {
        self.rate_limited
            + self.max_in_flight
            + self.adaptive_concurrency
            + self.queue_full
            + self.queue_timeout
            + self.codel
    }

    pub(super) fn merge(&mut self, o: &ShedCounts) {
        self.rate_limited += o.rate_limited;
        self.max_in_flight += o.max_in_flight;
        self.adaptive_concurrency += o.adaptive_concurrency;
        self.queue_full += o.queue_full;
        self.queue_timeout += o.queue_timeout;
        self.codel += o.codel;
    }
}
