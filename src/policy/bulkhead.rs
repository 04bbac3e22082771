//! A bulkhead: at most `max_concurrent` attempts of one client in flight at once, with an
//! optional bounded queue of attempts waiting for a place (resilience4j's `Bulkhead`:
//! `maxConcurrentCalls`, `maxWaitDuration`; Polly's concurrency limiter: `permitLimit`,
//! `queueLimit`). An attempt that finds no place and no room in the queue, or waits
//! `max_wait` without getting one, is rejected: the call ends `bulkhead-full` without being
//! sent, its own outcome and figure (`bulkhead_rejections`).
//!
//! By default it stands inside the retry, nearest the send: each attempt takes a place and
//! gives it back with its outcome. Written outside the retry in a pipeline it holds one
//! place per call, from its first attempt to its end ([`super::pipeline`]). A config that
//! fails over across providers may have one per provider instead (`failover.bulkhead`,
//! [`Bulkheads::PerProvider`]): one dependency's hang then fills its own places only, and
//! the attempts to the others still go. An attempt then waits in, and takes a place of,
//! the bulkhead of the provider routing will pick for it
//! ([`super::provider_breakers::ProviderRouter::peek`]); a full one rejects the call as
//! the client's own would, it does not move the attempt to another provider.
//!
//! A waiting attempt asks again every [`POLL`] (the engines have no wake-up for it), so
//! among several waiters the one that asks first after a place frees gets it, not
//! necessarily the one that came first; an attempt that finds waiters queues behind them
//! rather than taking a freed place.

use super::duration;
use super::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How often a queued attempt asks again for a place.
pub const POLL: Duration = Duration::from_millis(1);

/// The largest `max_concurrent` and `max_queue` accepted.
const MAX_PLACES: u32 = 1_000_000;

/// `bulkhead = { max_concurrent = 10, max_queue = 0, max_wait = "0s" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkheadConfig {
    /// Attempts in flight at once, at most.
    pub max_concurrent: u32,
    /// Attempts waiting for a place, at most (0: no queue, a full bulkhead rejects).
    #[serde(default)]
    pub max_queue: u32,
    /// How long a queued attempt waits for a place before it is rejected.
    #[serde(default, with = "duration::serde")]
    pub max_wait: Duration,
}

impl BulkheadConfig {
    /// Refuse values no bulkhead can have; `at` is the table's place in the config
    /// (`bulkhead`, `failover.bulkhead`), named in the refusal.
    pub fn validate(&self, at: &str) -> Result<(), PolicyError> {
        check(
            (1..=MAX_PLACES).contains(&self.max_concurrent),
            &format!("{at}.max_concurrent"),
            self.max_concurrent,
            "1..=1000000",
        )?;
        check(
            self.max_queue <= MAX_PLACES,
            &format!("{at}.max_queue"),
            self.max_queue,
            "0..=1000000",
        )?;
        check(
            self.max_wait <= Duration::from_secs(3600),
            &format!("{at}.max_wait"),
            duration::format_duration(self.max_wait),
            "at most 1h",
        )?;
        check(
            (self.max_queue == 0) == self.max_wait.is_zero(),
            &format!("{at}.max_wait"),
            duration::format_duration(self.max_wait),
            "above 0 exactly when max_queue is above 0: a queue's waiters need a time to \
             give up, and a wait needs a queue",
        )
    }
}

/// The bulkhead's places and queue.
#[derive(Clone, Debug)]
pub struct Bulkhead {
    cfg: BulkheadConfig,
    in_flight: u32,
    queued: u32,
}

/// What an attempt asking for a place is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// A place is free (and no one waits before it): take it with [`Bulkhead::enter`].
    Free,
    /// Wait this long in the queue, then ask again.
    Wait(Duration),
    /// Rejected: no place, and no room in the queue or no time left to wait.
    Rejected,
}

impl Bulkhead {
    /// An empty bulkhead.
    pub fn new(cfg: &BulkheadConfig) -> Bulkhead {
        Bulkhead {
            cfg: cfg.clone(),
            in_flight: 0,
            queued: 0,
        }
    }

    /// May the attempt go? `queued_since`: when it joined the queue (None: it has not);
    /// the answer updates it (joining, or leaving the queue).
    #[inline]
    pub fn admit(&mut self, now: Duration, queued_since: &mut Option<Duration>) -> Admission {
        let full = self.in_flight >= self.cfg.max_concurrent;
        match *queued_since {
            Some(since) => {
                let waited = now.saturating_sub(since);
                if !full {
                    self.leave_queue(queued_since);
                    Admission::Free
                } else if waited >= self.cfg.max_wait {
                    self.leave_queue(queued_since);
                    Admission::Rejected
                } else {
                    Admission::Wait(POLL.min(self.cfg.max_wait - waited))
                }
            }
            None if !full && self.queued == 0 => Admission::Free,
            None if self.queued < self.cfg.max_queue => {
                self.queued += 1;
                *queued_since = Some(now);
                Admission::Wait(POLL.min(self.cfg.max_wait))
            }
            None if !full => Admission::Free,
            None => Admission::Rejected,
        }
    }

    /// Leave the queue without a place (the request ended while waiting).
    pub fn leave_queue(&mut self, queued_since: &mut Option<Duration>) {
        if queued_since.take().is_some() {
            self.queued = self.queued.saturating_sub(1);
        }
    }

    /// Whether a place is free now.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.in_flight < self.cfg.max_concurrent
    }

    /// Whether a place is free and no one waits for one: what [`Self::admit`] answers
    /// [`Admission::Free`] to, without moving anything, for an attempt not in the queue.
    #[inline]
    pub fn free_now(&self) -> bool {
        self.in_flight < self.cfg.max_concurrent && self.queued == 0
    }

    /// Take a place (after [`Admission::Free`]).
    #[inline]
    pub fn enter(&mut self) {
        self.in_flight += 1;
    }

    /// Give a place back.
    #[inline]
    pub fn leave(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Attempts in flight now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Attempts waiting in the queue now.
    pub fn queued(&self) -> u32 {
        self.queued
    }
}

/// A client's bulkheads: one every attempt passes, or one per provider of its failover
/// list.
#[derive(Clone, Debug)]
pub enum Bulkheads {
    /// The client's one bulkhead (`bulkhead`).
    Client(Bulkhead),
    /// One per provider, indexed like the failover list (`failover.bulkhead`).
    PerProvider(Vec<Bulkhead>),
}

impl Bulkheads {
    /// The bulkheads a config asks for: its own, else one per provider of its failover
    /// list, else none (a config has at most one of the two tables).
    pub fn build(
        client: Option<&BulkheadConfig>,
        per_provider: Option<(&BulkheadConfig, usize)>,
    ) -> Option<Bulkheads> {
        match (client, per_provider) {
            (Some(b), _) => Some(Bulkheads::Client(Bulkhead::new(b))),
            (None, Some((b, providers))) => Some(Bulkheads::PerProvider(
                (0..providers).map(|_| Bulkhead::new(b)).collect(),
            )),
            (None, None) => None,
        }
    }

    /// The client's one bulkhead (None with one per provider).
    #[inline]
    pub fn client(&self) -> Option<&Bulkhead> {
        match self {
            Bulkheads::Client(b) => Some(b),
            Bulkheads::PerProvider(_) => None,
        }
    }

    /// Whether an attempt's place depends on its provider.
    #[inline]
    pub fn per_provider(&self) -> bool {
        matches!(self, Bulkheads::PerProvider(_))
    }

    /// The bulkhead an attempt to provider `slot` passes (the client's one for any slot).
    #[inline]
    pub fn at(&mut self, slot: usize) -> &mut Bulkhead {
        match self {
            Bulkheads::Client(b) => b,
            Bulkheads::PerProvider(v) => &mut v[slot],
        }
    }

    /// Attempts in flight now, over every provider's bulkhead.
    pub fn in_flight(&self) -> u32 {
        match self {
            Bulkheads::Client(b) => b.in_flight(),
            Bulkheads::PerProvider(v) => v.iter().map(Bulkhead::in_flight).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn a_full_bulkhead_without_a_queue_rejects() {
        let mut b = Bulkhead::new(&BulkheadConfig {
            max_concurrent: 2,
            max_queue: 0,
            max_wait: Duration::ZERO,
        });
        let mut q = None;
        for _ in 0..2 {
            assert_eq!(b.admit(ms(0), &mut q), Admission::Free);
            b.enter();
        }
        assert_eq!(b.admit(ms(0), &mut q), Admission::Rejected);
        b.leave();
        assert_eq!(b.admit(ms(1), &mut q), Admission::Free);
    }

    #[test]
    fn a_queued_attempt_waits_up_to_max_wait() {
        let mut b = Bulkhead::new(&BulkheadConfig {
            max_concurrent: 1,
            max_queue: 1,
            max_wait: Duration::from_micros(2500),
        });
        let (mut a, mut w, mut x) = (None, None, None);
        assert_eq!(b.admit(ms(0), &mut a), Admission::Free);
        b.enter();
        assert_eq!(b.admit(ms(0), &mut w), Admission::Wait(ms(1)));
        // The queue holds one: the next is rejected at once.
        assert_eq!(b.admit(ms(0), &mut x), Admission::Rejected);
        assert_eq!(
            b.admit(ms(2), &mut w),
            Admission::Wait(Duration::from_micros(500))
        );
        assert_eq!(
            b.admit(Duration::from_micros(2500), &mut w),
            Admission::Rejected
        );
        assert_eq!(w, None);
        // A place freed while waiting goes to the waiter.
        assert_eq!(b.admit(ms(3), &mut w), Admission::Wait(ms(1)));
        b.leave();
        assert_eq!(b.admit(ms(4), &mut w), Admission::Free);
        assert_eq!(w, None);
    }
}
