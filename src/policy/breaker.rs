//! Circuit breaker: closed → open → half-open → closed/open.
//!
//! * **Closed**: every attempt passes. Each outcome is recorded; the breaker opens when
//!   `failure_threshold` consecutive failures happen, or when the last `window` calls hold at
//!   least `min_calls` calls and their failure fraction is ≥ `failure_rate`
//!   (resilience4j's count-based window).
//! * **Open**: every attempt is refused for `open_for`; then the next attempt moves it to
//!   half-open.
//! * **Half-open**: at most `half_open_probes` attempts pass. All of them succeeding closes the
//!   breaker (and clears its window); any of them failing opens it again for `open_for`.
//!
//! A "failure" is a retryable outcome (transient or throttling, timeouts included); a
//! non-retryable answer (e.g. 404) proves the server is up, so it counts as a success.
//! Every transition is recorded as `(at, from, to)` for the recorder's chart.

use super::duration;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

fn default_window() -> u32 {
    20
}
fn default_min_calls() -> u32 {
    10
}
fn default_probes() -> u32 {
    1
}

/// `breaker = { failure_threshold = 5, failure_rate = 0.5, window = 20, min_calls = 10,
/// open_for = "5s", half_open_probes = 1 }`. At least one trigger must be set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Open after this many consecutive failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<u32>,
    /// Open when the failure fraction of the window reaches this, (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<f64>,
    /// Size of the sliding window of last calls (default 20).
    #[serde(default = "default_window")]
    pub window: u32,
    /// Calls needed in the window before the rate counts (default 10).
    #[serde(default = "default_min_calls")]
    pub min_calls: u32,
    /// How long the breaker stays open.
    #[serde(with = "duration::serde")]
    pub open_for: Duration,
    /// Probes allowed in half-open (default 1).
    #[serde(default = "default_probes")]
    pub half_open_probes: u32,
}

/// The breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerState {
    /// Attempts pass.
    Closed,
    /// Attempts are refused.
    Open,
    /// A few probes pass.
    HalfOpen,
}

/// Breaker state machine.
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    cfg: BreakerConfig,
    state: BreakerState,
    opened_at: Duration,
    consecutive: u32,
    window: VecDeque<bool>,
    probes_permitted: u32,
    probes_succeeded: u32,
    transitions: Vec<(Duration, BreakerState, BreakerState)>,
}

impl CircuitBreaker {
    /// A closed breaker.
    pub fn new(cfg: &BreakerConfig) -> Self {
        CircuitBreaker {
            cfg: cfg.clone(),
            state: BreakerState::Closed,
            opened_at: Duration::ZERO,
            consecutive: 0,
            window: VecDeque::new(),
            probes_permitted: 0,
            probes_succeeded: 0,
            transitions: Vec::new(),
        }
    }

    /// The current state (as of the last call).
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Out of line and cold: a breaker moves a few times a run while `allow` and `record`
    /// run per attempt, and with the move (a push onto the transitions) inlined they
    /// carried its code and register saves on every call.
    #[cold]
    #[inline(never)]
    fn go(&mut self, now: Duration, to: BreakerState) {
        let from = self.state;
        if from == to {
            return;
        }
        self.state = to;
        self.transitions.push((now, from, to));
        match to {
            BreakerState::Open => self.opened_at = now,
            BreakerState::HalfOpen => {
                self.probes_permitted = 0;
                self.probes_succeeded = 0;
            }
            BreakerState::Closed => {
                self.consecutive = 0;
                self.window.clear();
            }
        }
    }

    /// May an attempt be sent now? Moves open → half-open once `open_for` has passed.
    /// Returns `(allowed, is_probe)`.
    pub fn allow(&mut self, now: Duration) -> (bool, bool) {
        if self.state == BreakerState::Open
            && now.saturating_sub(self.opened_at) >= self.cfg.open_for
        {
            self.go(now, BreakerState::HalfOpen);
        }
        match self.state {
            BreakerState::Closed => (true, false),
            BreakerState::Open => (false, false),
            BreakerState::HalfOpen => {
                if self.probes_permitted < self.cfg.half_open_probes {
                    self.probes_permitted += 1;
                    (true, true)
                } else {
                    (false, false)
                }
            }
        }
    }

    /// What [`Self::allow`] would answer now, without moving the breaker: a bulkhead per
    /// provider must know where an attempt will go before routing takes a probe's place.
    pub fn would_allow(&self, now: Duration) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => {
                now.saturating_sub(self.opened_at) >= self.cfg.open_for
                    && self.cfg.half_open_probes > 0
            }
            BreakerState::HalfOpen => self.probes_permitted < self.cfg.half_open_probes,
        }
    }

    /// A permitted probe was abandoned without an outcome: give its slot back.
    pub fn cancel_probe(&mut self) {
        if self.state == BreakerState::HalfOpen {
            self.probes_permitted = self.probes_permitted.saturating_sub(1);
        }
    }

    /// Record the outcome of a permitted attempt.
    pub fn record(&mut self, now: Duration, failure: bool) {
        match self.state {
            BreakerState::Open => {} // stale outcome of an attempt sent before opening
            BreakerState::HalfOpen => {
                if failure {
                    self.go(now, BreakerState::Open);
                } else {
                    self.probes_succeeded += 1;
                    if self.probes_succeeded >= self.cfg.half_open_probes {
                        self.go(now, BreakerState::Closed);
                    }
                }
            }
            BreakerState::Closed => {
                self.consecutive = if failure { self.consecutive + 1 } else { 0 };
                // The window is read by the rate trigger only: without one it is not kept.
                if self.cfg.failure_rate.is_some() {
                    self.window.push_back(failure);
                    while self.window.len() > self.cfg.window as usize {
                        self.window.pop_front();
                    }
                }
                let by_count = self
                    .cfg
                    .failure_threshold
                    .is_some_and(|t| self.consecutive >= t);
                let by_rate = self.cfg.failure_rate.is_some_and(|r| {
                    let n = self.window.len();
                    let f = self.window.iter().filter(|&&x| x).count();
                    n >= self.cfg.min_calls as usize && f as f64 >= r * n as f64
                });
                if by_count || by_rate {
                    self.go(now, BreakerState::Open);
                }
            }
        }
    }

    /// Whether transitions were recorded since the last [`Self::take_transitions`].
    #[inline]
    pub fn has_transitions(&self) -> bool {
        !self.transitions.is_empty()
    }

    /// Take the recorded transitions `(at, from, to)`.
    pub fn take_transitions(&mut self) -> Vec<(Duration, BreakerState, BreakerState)> {
        std::mem::take(&mut self.transitions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BreakerState::*;

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    fn cfg() -> BreakerConfig {
        BreakerConfig {
            failure_threshold: Some(3),
            failure_rate: None,
            window: 20,
            min_calls: 10,
            open_for: s(5),
            half_open_probes: 2,
        }
    }

    #[test]
    fn walks_every_transition() {
        let mut b = CircuitBreaker::new(&cfg());
        // closed: two failures and a success do not open
        for f in [true, true, false, true, true] {
            assert_eq!(b.allow(s(0)), (true, false));
            b.record(s(0), f);
        }
        assert_eq!(b.state(), Closed);
        b.record(s(1), true); // third consecutive failure
        assert_eq!(b.state(), Open);
        assert_eq!(b.allow(s(3)), (false, false), "open refuses");
        // half-open after open_for; two probes allowed, the third refused
        assert_eq!(b.allow(s(6)), (true, true));
        assert_eq!(b.state(), HalfOpen);
        assert_eq!(b.allow(s(6)), (true, true));
        assert_eq!(b.allow(s(6)), (false, false));
        // a failing probe re-opens
        b.record(s(7), false);
        b.record(s(7), true);
        assert_eq!(b.state(), Open);
        assert_eq!(
            b.allow(s(11)),
            (false, false),
            "open_for restarts at the re-open"
        );
        // half-open again; both probes succeed → closed
        assert_eq!(b.allow(s(12)), (true, true));
        assert_eq!(b.allow(s(12)), (true, true));
        b.record(s(12), false);
        assert_eq!(b.state(), HalfOpen);
        b.record(s(13), false);
        assert_eq!(b.state(), Closed);
        let t: Vec<_> = b
            .take_transitions()
            .into_iter()
            .map(|(at, f, to)| (at.as_secs(), f, to))
            .collect();
        assert_eq!(
            t,
            vec![
                (1, Closed, Open),
                (6, Open, HalfOpen),
                (7, HalfOpen, Open),
                (12, Open, HalfOpen),
                (13, HalfOpen, Closed)
            ]
        );
    }

    #[test]
    fn failure_rate_needs_min_calls() {
        let mut b = CircuitBreaker::new(&BreakerConfig {
            failure_threshold: None,
            failure_rate: Some(0.5),
            window: 10,
            min_calls: 6,
            ..cfg()
        });
        for f in [true, false, true, false, true] {
            b.record(s(0), f);
        }
        assert_eq!(b.state(), Closed, "5 calls < min_calls");
        b.record(s(0), false); // 3/6 = 0.5 ≥ 0.5
        assert_eq!(b.state(), Open);
    }

    #[test]
    fn cancelled_probe_frees_its_slot() {
        let mut b = CircuitBreaker::new(&BreakerConfig {
            half_open_probes: 1,
            ..cfg()
        });
        for _ in 0..3 {
            b.record(s(0), true);
        }
        assert_eq!(b.allow(s(5)), (true, true));
        assert_eq!(b.allow(s(5)), (false, false));
        b.cancel_probe();
        assert_eq!(b.allow(s(5)), (true, true));
    }
}
