//! The load-shedding rules the built-in target applies, one copy for both engines: the live
//! target (`server::slots`) and the modeled one (`sim::target`) feed them nanoseconds since
//! their own start, so the same arrivals and grants shed the same requests in both. Pure: no
//! clock, no lock, no runtime; time comes in as an argument.

pub mod adaptive;

use crate::scenario::shedding::{Discipline, RateLimit};

/// folly's server-queue CoDel (`folly::Codel::overloaded_explicit_now`,
/// folly/executors/Codel.cpp lines 49-96 at facebook/folly ff98381e), step for step:
///
/// - every request that gets a slot reports how long it waited (`delay`);
/// - the smallest delay seen in an interval is kept; when an interval has ended (the first
///   report after `interval_end`), the target is *overloaded* for the next interval if that
///   minimum exceeded `target` (lines 60-73), and the minimum restarts from the next
///   report, which is never shed (lines 76-81: "more than one request must come in during
///   an interval before codel starts dropping");
/// - while overloaded, a request that waited more than the slough timeout, 2 × `target`
///   (`getSloughTimeout`, lines 138-140), is shed instead of served (lines 86-93).
///
/// Where this differs from folly: one target holds one `Codel` behind its slot lock, so
/// folly's atomics and their races are not reproduced; a request that gets a free slot at
/// once reports a delay of zero (folly's executor queues every task, so its delay is the
/// near-zero time through an empty queue); and the order stays FIFO (Facebook's servers pair
/// CoDel with adaptive LIFO; `discipline = "lifo"` is the LIFO half, not combined here).
/// Nichols & Van Jacobson's CoDel for packet queues ("Controlling Queue Delay", ACM Queue
/// 2012) shortens the drop interval as drops go on; folly's variant, followed here, sloughs
/// everything above the timeout instead.
#[derive(Debug, Clone)]
pub struct Codel {
    target: u64,
    interval: u64,
    min_delay: u64,
    interval_end: u64,
    reset_delay: bool,
    overloaded: bool,
}

impl Codel {
    /// A CoDel whose first interval ends at `start` (folly's constructor, lines 39-47).
    pub fn new(target: u64, interval: u64, start: u64) -> Codel {
        Codel {
            target,
            interval,
            min_delay: 0,
            interval_end: start,
            reset_delay: true,
            overloaded: false,
        }
    }

    /// A request got its slot at `now` after waiting `delay`: true when it is to be shed.
    pub fn shed(&mut self, now: u64, delay: u64) -> bool {
        let min_delay = self.min_delay;
        if now > self.interval_end && !self.reset_delay {
            self.reset_delay = true;
            self.interval_end = now.saturating_add(self.interval);
            self.overloaded = min_delay > self.target;
        }
        if self.reset_delay {
            self.reset_delay = false;
            self.min_delay = delay;
            return false;
        }
        self.min_delay = self.min_delay.min(delay);
        self.overloaded && delay > self.target.saturating_mul(2)
    }
}

/// A token bucket of `burst` tokens refilled one per `interval_ns`, kept as the generic cell
/// rate algorithm does (ITU-T I.371): the instant the bucket would be full again
/// (`full_at`), not a token count, so that refill needs no division and both engines count
/// whole nanoseconds alike. The bucket starts full.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    interval: u64,
    /// `burst × interval`: how far ahead of now `full_at` may run.
    depth: u64,
    full_at: u64,
}

impl TokenBucket {
    pub fn new(limit: &RateLimit) -> TokenBucket {
        TokenBucket {
            interval: limit.interval_ns,
            depth: limit.interval_ns.saturating_mul(u64::from(limit.burst)),
            full_at: 0,
        }
    }

    /// Takes a token at `now`: false when the bucket is empty (the request is refused and
    /// takes nothing).
    pub fn take(&mut self, now: u64) -> bool {
        let next = self.full_at.max(now).saturating_add(self.interval);
        if next - now > self.depth {
            return false;
        }
        self.full_at = next;
        true
    }
}

/// Why the target answered a request without serving it. The order is the order of the
/// checks: the rate limit, the cap on work in progress, the adaptive limit, then the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// The token bucket was empty: 429, with `Retry-After` when the limit sets one.
    RateLimited,
    /// `max_in_flight` requests were queued or served already: 503 at once.
    MaxInFlight,
    /// The adaptive concurrency limit was reached: 503 at once.
    AdaptiveConcurrency,
    /// The queue was full: 503 at once.
    QueueFull,
    /// It waited `queue_timeout` without a slot: 503.
    QueueTimeout,
    /// CoDel sloughed it when its slot came: 503.
    Codel,
}

impl Shed {
    pub fn status(self) -> u16 {
        match self {
            Shed::RateLimited => 429,
            _ => 503,
        }
    }

    /// The reason as the target's counts name it.
    pub fn reason(self) -> crate::metrics::ShedReason {
        use crate::metrics::ShedReason as R;
        match self {
            Shed::RateLimited => R::RateLimited,
            Shed::MaxInFlight => R::MaxInFlight,
            Shed::AdaptiveConcurrency => R::AdaptiveConcurrency,
            Shed::QueueFull => R::QueueFull,
            Shed::QueueTimeout => R::QueueTimeout,
            Shed::Codel => R::Codel,
        }
    }
}

/// The admission checks before the queue, in their order: the rate limit, the cap on work
/// in progress, then the adaptive concurrency limit (`in_work`: requests queued or holding
/// a slot now).
#[derive(Debug, Clone, Default)]
pub struct Gate {
    bucket: Option<TokenBucket>,
    max_in_flight: Option<u32>,
    adaptive: Option<adaptive::AdaptiveLimit>,
}

impl Gate {
    pub fn new(shedding: &crate::scenario::shedding::Shedding) -> Gate {
        Gate {
            bucket: shedding.rate_limit.as_ref().map(TokenBucket::new),
            max_in_flight: shedding.max_in_flight,
            adaptive: shedding
                .adaptive_concurrency
                .map(|a| adaptive::AdaptiveLimit::new(a, 0)),
        }
    }

    /// `Err` when the request is shed before it may queue.
    #[inline]
    pub fn admit(&mut self, now: u64, in_work: usize) -> Result<(), Shed> {
        if let Some(b) = self.bucket.as_mut() {
            if !b.take(now) {
                return Err(Shed::RateLimited);
            }
        }
        if let Some(max) = self.max_in_flight {
            if in_work >= max as usize {
                return Err(Shed::MaxInFlight);
            }
        }
        if let Some(a) = self.adaptive.as_mut() {
            if !a.admit(now, in_work) {
                return Err(Shed::AdaptiveConcurrency);
            }
        }
        Ok(())
    }

    /// Whether requests leaving the work must be reported ([`Gate::left`]): an engine keeps
    /// each admission instant only then.
    #[inline]
    pub fn learns(&self) -> bool {
        self.adaptive.is_some()
    }

    /// A request the gate admitted at `admitted` left the work at `now`: served, or shed by
    /// the queue (full, timed out, CoDel). Not for a request whose client went away first.
    #[inline]
    pub fn left(&mut self, now: u64, admitted: u64) {
        if let Some(a) = self.adaptive.as_mut() {
            a.left(now, admitted);
        }
    }
}

/// The CoDel a discipline asks for, if any, starting at `start`.
pub fn codel(discipline: Discipline, start: u64) -> Option<Codel> {
    match discipline {
        Discipline::Codel { target, interval } => Some(Codel::new(
            u64::try_from(target.as_nanos()).unwrap_or(u64::MAX),
            u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            start,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn codel_sheds_only_after_an_interval_whose_minimum_stood_above_target() {
        let mut c = Codel::new(5 * MS, 100 * MS, 0);
        // The first report starts the minimum and is never shed.
        assert!(!c.shed(0, 0));
        // The first interval ended at the start: the next report opens one (to 110 ms),
        // not overloaded (minimum 0), and restarts the minimum.
        assert!(!c.shed(10 * MS, 50 * MS));
        // Long waits are served while not overloaded.
        assert!(!c.shed(50 * MS, 50 * MS));
        assert!(!c.shed(99 * MS, 20 * MS));
        // That interval's minimum was 20 ms > 5 ms: overloaded until 211 ms; this report
        // restarts the minimum and is not shed.
        assert!(!c.shed(111 * MS, 30 * MS));
        // Above the slough timeout (2 × 5 ms): shed; at it: served.
        assert!(c.shed(120 * MS, 11 * MS));
        assert!(!c.shed(121 * MS, 10 * MS));
        // One short wait brings this interval's minimum under target, yet the interval
        // stays overloaded to its end ...
        assert!(!c.shed(150 * MS, 0));
        assert!(c.shed(160 * MS, 40 * MS));
        // ... and the next one is not.
        assert!(!c.shed(212 * MS, 40 * MS));
        assert!(!c.shed(220 * MS, 40 * MS));
    }

    #[test]
    fn token_bucket_lets_a_burst_through_then_the_rate() {
        let limit = RateLimit {
            interval_ns: 10 * MS,
            burst: 3,
            retry_after_s: None,
        };
        let mut b = TokenBucket::new(&limit);
        assert!(b.take(0) && b.take(0) && b.take(0));
        assert!(!b.take(0));
        assert!(!b.take(9 * MS));
        assert!(b.take(10 * MS));
        assert!(!b.take(10 * MS));
        // A quiet second refills the bucket to its burst, not beyond.
        let t = 1_000 * MS;
        assert!(b.take(t) && b.take(t) && b.take(t));
        assert!(!b.take(t));
    }

    #[test]
    fn the_gate_checks_the_rate_before_the_cap() {
        let shedding = crate::scenario::shedding::Shedding {
            discipline: Discipline::Fifo,
            max_in_flight: Some(2),
            rate_limit: Some(RateLimit {
                interval_ns: MS,
                burst: 1,
                retry_after_s: Some(1),
            }),
            adaptive_concurrency: None,
        };
        let mut g = Gate::new(&shedding);
        assert_eq!(g.admit(0, 2), Err(Shed::MaxInFlight));
        assert_eq!(g.admit(0, 0), Err(Shed::RateLimited));
        assert_eq!(g.admit(MS, 1), Ok(()));
        assert_eq!(g.admit(2 * MS, 0), Ok(()));
    }
}
