//! An adaptive client concurrency limiter: at most `limit` attempts in flight, the limit
//! learnt from each attempt's round trip, as Netflix's concurrency-limits does it. An attempt
//! that finds `limit` attempts in flight is rejected: the call ends `limit-exceeded` without
//! being sent (its own outcome and figure, `limiter_rejections`).
//!
//! What follows rests on reading concurrency-limits' source (github.com/Netflix/
//! concurrency-limits at 78a74b9, `concurrency-limits-core/src/main/java/com/netflix/
//! concurrency/limits/`), not on a run beside it:
//! * admission (`limiter/SimpleLimiter.java` lines 50-64, 66-76): a semaphore of `limit`
//!   permits, `tryAcquire` or reject; a lowered limit takes permits away, so an attempt goes
//!   only while fewer than `limit` are in flight;
//! * the sample (`limiter/AbstractLimiter.java` lines 159-185): `inflight` is the count
//!   *including* this attempt, taken when it was admitted; `rtt` is from admission to its
//!   outcome; `onSuccess` samples with `didDrop = false`, `onDropped` with `true`,
//!   `onIgnore` samples nothing;
//! * AIMD (`limit/AIMDLimit.java` lines 101-112; defaults lines 34-38): on a drop or an
//!   rtt above `timeout`, `limit = (int)(limit × backoff_ratio)`; otherwise, when
//!   `inflight × 2 ≥ limit`, `limit + 1`; then clamped to `[min_limit, max_limit]`;
//! * Gradient2 (`limit/Gradient2Limit.java` lines 277-323; defaults lines 75-83;
//!   `limit/measurement/ExpAvgMeasurement.java` lines 34-49): a long-term rtt averaged over
//!   the first 10 samples, then exponentially with factor `2 / (long_window + 1)`, cut by
//!   5 % when more than twice the sample's; no change while `inflight < estimate / 2`;
//!   else `gradient = clamp(rtt_tolerance × long / rtt, 0.5, 1)`, `new = estimate ×
//!   gradient + queue_size`, smoothed `estimate × (1 − smoothing) + new × smoothing`,
//!   clamped to `[min_limit, max_limit]`; the limit is the estimate truncated.
//!
//! Which outcomes are drops is stormrig's mapping (the library leaves it to its caller): a
//! retryable failure (transient or throttling) or a timeout of any kind is a drop, any other
//! answer a success, and an attempt that never reached the target (a local resource) or was
//! abandoned unanswered is ignored.

use super::duration;
use super::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn d20() -> u32 {
    20
}
fn d200() -> u32 {
    200
}
fn d_ratio() -> f64 {
    0.9
}
fn d_timeout() -> Duration {
    Duration::from_secs(5)
}
fn d_smoothing() -> f64 {
    0.2
}
fn d_queue() -> u32 {
    4
}
fn d_long_window() -> u32 {
    600
}
fn d_tolerance() -> f64 {
    1.5
}

/// `concurrency_limit = { kind = "aimd", ... }` or `{ kind = "gradient2", ... }`; every key
/// but `kind` defaults to concurrency-limits' builder default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ConcurrencyLimitConfig {
    /// Loss-based: additive increase, multiplicative decrease.
    Aimd {
        #[serde(default = "d20")]
        initial_limit: u32,
        #[serde(default = "d20")]
        min_limit: u32,
        #[serde(default = "d200")]
        max_limit: u32,
        #[serde(default = "d_ratio")]
        backoff_ratio: f64,
        /// A round trip longer than this counts as a drop.
        #[serde(default = "d_timeout", with = "duration::serde")]
        timeout: Duration,
    },
    /// Latency-based: the gradient of a long-term rtt over the sample's.
    Gradient2 {
        #[serde(default = "d20")]
        initial_limit: u32,
        #[serde(default = "d20")]
        min_limit: u32,
        #[serde(default = "d200")]
        max_limit: u32,
        #[serde(default = "d_smoothing")]
        smoothing: f64,
        #[serde(default = "d_queue")]
        queue_size: u32,
        #[serde(default = "d_long_window")]
        long_window: u32,
        #[serde(default = "d_tolerance")]
        rtt_tolerance: f64,
    },
}

impl ConcurrencyLimitConfig {
    /// Refuse values the library's builders refuse, and limits that cannot hold.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let (initial, min, max) = self.limits();
        let f = "concurrency_limit";
        check(
            (1..=1_000_000).contains(&max),
            &format!("{f}.max_limit"),
            max,
            "1..=1000000",
        )?;
        check(
            (1..=max).contains(&min),
            &format!("{f}.min_limit"),
            min,
            "1..=max_limit",
        )?;
        check(
            (min..=max).contains(&initial),
            &format!("{f}.initial_limit"),
            initial,
            "min_limit..=max_limit",
        )?;
        match self {
            ConcurrencyLimitConfig::Aimd {
                backoff_ratio,
                timeout,
                ..
            } => {
                // AIMDLimit.java line 56: "Backoff ratio must be in the range [0.5, 1.0)".
                check(
                    (0.5..1.0).contains(backoff_ratio),
                    &format!("{f}.backoff_ratio"),
                    backoff_ratio,
                    "[0.5, 1.0), as AIMDLimit's builder requires",
                )?;
                check(
                    !timeout.is_zero(),
                    &format!("{f}.timeout"),
                    duration::format_duration(*timeout),
                    "above 0",
                )
            }
            ConcurrencyLimitConfig::Gradient2 {
                smoothing,
                long_window,
                rtt_tolerance,
                queue_size,
                ..
            } => {
                check(
                    *smoothing > 0.0 && *smoothing <= 1.0,
                    &format!("{f}.smoothing"),
                    smoothing,
                    "(0, 1]",
                )?;
                check(
                    (1..=100_000).contains(long_window),
                    &format!("{f}.long_window"),
                    long_window,
                    "1..=100000",
                )?;
                check(
                    *queue_size <= 1_000_000,
                    &format!("{f}.queue_size"),
                    queue_size,
                    "0..=1000000",
                )?;
                // Gradient2Limit.java line 159: "Tolerance must be >= 1.0".
                check(
                    rtt_tolerance.is_finite() && *rtt_tolerance >= 1.0,
                    &format!("{f}.rtt_tolerance"),
                    rtt_tolerance,
                    "at least 1.0, as Gradient2Limit's builder requires",
                )
            }
        }
    }

    fn limits(&self) -> (u32, u32, u32) {
        match self {
            ConcurrencyLimitConfig::Aimd {
                initial_limit,
                min_limit,
                max_limit,
                ..
            }
            | ConcurrencyLimitConfig::Gradient2 {
                initial_limit,
                min_limit,
                max_limit,
                ..
            } => (*initial_limit, *min_limit, *max_limit),
        }
    }
}

/// concurrency-limits' `ExpAvgMeasurement(window, warmup = 10)`.
#[derive(Clone, Debug)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    /// `2 / (window + 1)`, the library's factor (`ExpAvgMeasurement.java` lines 41 and
    /// 47-49), which it computes on every sample from a window that never changes: computed
    /// once here, the same division of the same values, so the same bits.
    factor: f64,
}

impl ExpAvg {
    const WARMUP: u32 = 10;

    fn add(&mut self, sample: f64) -> f64 {
        if self.count < Self::WARMUP {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / f64::from(self.count);
        } else {
            let factor = self.factor;
            self.value = self.value * (1.0 - factor) + sample * factor;
        }
        self.value
    }
}

/// The limiter's state: the limit, the attempts in flight, Gradient2's estimate.
#[derive(Clone, Debug)]
pub struct ConcurrencyLimiter {
    cfg: ConcurrencyLimitConfig,
    limit: u32,
    in_flight: u32,
    estimate: f64,
    long_rtt: ExpAvg,
}

impl ConcurrencyLimiter {
    /// A limiter at its initial limit, nothing in flight.
    pub fn new(cfg: &ConcurrencyLimitConfig) -> ConcurrencyLimiter {
        let (initial, _, _) = cfg.limits();
        let window = match cfg {
            ConcurrencyLimitConfig::Gradient2 { long_window, .. } => *long_window,
            ConcurrencyLimitConfig::Aimd { .. } => 1,
        };
        ConcurrencyLimiter {
            cfg: cfg.clone(),
            limit: initial,
            in_flight: 0,
            estimate: f64::from(initial),
            long_rtt: ExpAvg {
                value: 0.0,
                sum: 0.0,
                count: 0,
                factor: 2.0 / (f64::from(window) + 1.0),
            },
        }
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Attempts in flight now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Whether an attempt would be admitted now.
    pub fn has_room(&self) -> bool {
        self.in_flight < self.limit
    }

    /// Admit an attempt: `Some(inflight)` (this one included, what its sample will carry),
    /// or `None` when `limit` are in flight already.
    pub fn acquire(&mut self) -> Option<u32> {
        if self.in_flight >= self.limit {
            return None;
        }
        self.in_flight += 1;
        Some(self.in_flight)
    }

    /// An admitted attempt ended without a sample (`onIgnore`).
    pub fn ignore(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// An admitted attempt's outcome: its round trip, the in-flight count it was admitted
    /// with, and whether it was a drop (`onSuccess` / `onDropped`). Inlined where it is
    /// called: the call's setup was a fifth of the work.
    #[inline]
    pub fn sample(&mut self, rtt: Duration, inflight: u32, drop: bool) {
        self.sample_rtt(|| rtt, || rtt_nanos(rtt), inflight, drop);
    }

    /// [`Self::sample`] of an attempt sent at `sent` and answered at `now` (round trip
    /// `now − sent`, saturating at zero): Gradient2 takes the round trip's nanoseconds
    /// from the two instants' difference, without building the `Duration` between them.
    #[inline]
    pub fn sample_between(&mut self, sent: Duration, now: Duration, inflight: u32, drop: bool) {
        self.sample_rtt(
            || now.saturating_sub(sent),
            || nanos_between(sent, now),
            inflight,
            drop,
        );
    }

    /// [`Self::sample`] with the round trip told two ways, each worked out only by the
    /// limiter that reads it: AIMD's `Duration` and Gradient2's nanoseconds (`short`,
    /// `rtt_nanos(rtt)`, the same value however it was worked out).
    #[inline(always)]
    fn sample_rtt(
        &mut self,
        rtt: impl FnOnce() -> Duration,
        short: impl FnOnce() -> f64,
        inflight: u32,
        drop: bool,
    ) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let (_, min, max) = self.cfg.limits();
        self.limit = match &self.cfg {
            ConcurrencyLimitConfig::Aimd {
                backoff_ratio,
                timeout,
                ..
            } => {
                let current = self.limit;
                let next = if drop || rtt() > *timeout {
                    (f64::from(current) * backoff_ratio) as u32
                } else if inflight * 2 >= current {
                    current + 1
                } else {
                    current
                };
                next.clamp(min, max)
            }
            ConcurrencyLimitConfig::Gradient2 {
                smoothing,
                queue_size,
                rtt_tolerance,
                ..
            } => {
                let short = short();
                let long = self.long_rtt.add(short);
                // The library's `long / short > 2`, without the division: see
                // `twice_without_division`.
                if long > 2.0 * short {
                    self.long_rtt.value *= 0.95;
                }
                if f64::from(inflight) < self.estimate / 2.0 {
                    return;
                }
                let gradient = (rtt_tolerance * long / short).clamp(0.5, 1.0);
                let new = self.estimate * gradient + f64::from(*queue_size);
                let new = self.estimate * (1.0 - smoothing) + new * smoothing;
                self.estimate = new.clamp(f64::from(min), f64::from(max));
                self.estimate as u32
            }
        };
    }
}

/// `rtt_nanos(now.saturating_sub(sent))` to the bit: the whole nanoseconds between the two
/// instants as an `i64` (exact below 2³² seconds apart, where it fits), each conversion
/// rounding the same whole number; a subtraction and a multiplication where the
/// `Duration` between them takes a borrow and overflow checks.
#[inline(always)]
fn nanos_between(sent: Duration, now: Duration) -> f64 {
    if now <= sent {
        return 0.0;
    }
    // `now > sent`: its whole seconds are not fewer.
    let secs = now.as_secs() - sent.as_secs();
    if secs >= 1 << 32 {
        return nanos_far_apart(sent, now);
    }
    let nanos = i64::from(now.subsec_nanos()) - i64::from(sent.subsec_nanos());
    (secs as i64 * 1_000_000_000 + nanos) as f64
}

/// [`nanos_between`] for instants 2³² seconds or more apart, out of line: no run has them.
#[cold]
#[inline(never)]
fn nanos_far_apart(sent: Duration, now: Duration) -> f64 {
    rtt_nanos(now.saturating_sub(sent))
}

/// A round trip in nanoseconds as an `f64`: the library's clock is in nanoseconds, and so
/// are its rtts. Through `i64` when it fits (any rtt under 292 years), one instruction on
/// x86-64 where `u64` and `u128` take a branchy sequence and a library call; every one of
/// these conversions rounds the same whole number to the nearest double, so the bits are
/// the same.
#[inline]
fn rtt_nanos(rtt: Duration) -> f64 {
    match rtt
        .as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(u64::from(rtt.subsec_nanos())))
        .and_then(|n| i64::try_from(n).ok())
    {
        Some(n) => n as f64,
        None => rtt.as_nanos() as f64,
    }
}

// Why `long > 2·short` is the library's `long / short > 2` to the bit, for the values a
// sample has (`short` a whole number of nanoseconds, at most 2¹²⁸; `long` an average of
// such, finite and not negative): `2·short` is exact. `short = 0`: `long / 0` is +∞ (above
// 2) when `long > 0` and NaN (not above) when `long = 0`, as `long > 0` says. `short ≥ 1`:
// the rounded quotient is above 2 exactly when the true one is above 2 + 2⁻⁵² (the
// midpoint to the next double, a tie going to 2, the even one). `long > 2·short` means
// `long` is at least the double after `2·short = m·2ᵉ` (1 ≤ m < 2), `(m + 2⁻⁵²)·2ᵉ`, so
// `long / short ≥ 2 + 2⁻⁵¹/m > 2 + 2⁻⁵²`; and `long ≤ 2·short` gives a quotient of at most
// 2. The test `twice_without_division` holds the two equal over many values.

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_draws::unit;

    /// `long > 2·short` answers as the library's `long / short > 2`: over random rtts in
    /// nanoseconds and averages around twice them, and the doubles right next to `2·short`
    /// (where a rounded quotient could land on 2), zero included. It also counts both
    /// answers, so a test that only ever saw one proves nothing.
    #[test]
    fn twice_without_division() {
        let mut above = 0u64;
        let mut n = 0u64;
        let mut check = |long: f64, short: f64| {
            n += 1;
            let want = long / short > 2.0;
            assert_eq!(long > 2.0 * short, want, "long {long:e}, short {short:e}");
            above += u64::from(want);
        };
        for i in 0..1_000_000u64 {
            // Whole nanoseconds from 0 to 10¹³ (about 3 hours), and 2⁶⁴ to 2¹²⁸.
            let e = unit(21, i) * 13.0;
            let short = (10f64.powf(e) * unit(22, i)).floor();
            let huge = (2f64.powf(64.0 + 64.0 * unit(25, i))).floor();
            for s in [short, huge] {
                let two = 2.0 * s;
                check(two * (0.5 + 2.0 * unit(23, i)), s);
                check((two * unit(24, i)).floor(), s);
                for d in -3i64..=3 {
                    check(f64::from_bits((two.to_bits() as i64 + d).max(0) as u64), s);
                }
            }
        }
        check(0.0, 0.0);
        check(1.0, 0.0);
        assert!(above > n / 4 && above < 3 * n / 4, "{above} of {n}");
    }

    /// The rtt in nanoseconds through `i64` is the `u128` one's value, to the bit.
    #[test]
    fn rtt_nanos_is_the_whole_number_of_nanoseconds() {
        for i in 0..200_000u64 {
            let secs = (10f64.powf(unit(31, i) * 19.0)) as u64;
            let rtt = Duration::new(secs, (unit(32, i) * 1e9) as u32);
            assert_eq!(
                rtt_nanos(rtt).to_bits(),
                (rtt.as_nanos() as f64).to_bits(),
                "{rtt:?}"
            );
        }
        for rtt in [
            Duration::ZERO,
            Duration::MAX,
            Duration::from_nanos(u64::MAX),
        ] {
            assert_eq!(rtt_nanos(rtt).to_bits(), (rtt.as_nanos() as f64).to_bits());
        }
    }

    /// The nanoseconds between two instants are those of the saturating `Duration` between.
    #[test]
    fn nanos_between_is_the_saturating_difference() {
        let at = |a: u64, b: u64, i: u64| {
            let secs = (10f64.powf(unit(a, i) * 19.0)) as u64;
            Duration::new(secs, (unit(b, i) * 1e9) as u32)
        };
        for i in 0..200_000u64 {
            let (x, y) = (at(33, 34, i), at(35, 36, i));
            let near = x + Duration::from_nanos((unit(37, i) * 3e9) as u64);
            for (sent, now) in [(x, y), (y, x), (x, near), (near, x), (x, x)] {
                assert_eq!(
                    nanos_between(sent, now).to_bits(),
                    rtt_nanos(now.saturating_sub(sent)).to_bits(),
                    "{sent:?} {now:?}"
                );
            }
        }
        for (sent, now) in [
            (Duration::ZERO, Duration::MAX),
            (Duration::MAX, Duration::ZERO),
        ] {
            assert_eq!(
                nanos_between(sent, now).to_bits(),
                rtt_nanos(now.saturating_sub(sent)).to_bits()
            );
        }
    }

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// AIMD's limit by hand: initial 10, min 2, max 12, ratio 0.5, timeout 1 s. A success
    /// with inflight ≥ limit/2 adds one (10 → 11 → 12, then held at the max); a success with
    /// fewer in flight leaves it; a drop halves it, truncated (12 → 6 → 3); a success slower
    /// than the timeout is a drop (3 → 1, clamped to 2); a drop at the floor stays there; one
    /// in flight of a limit of 2 is half of it, and grows it to 3.
    #[test]
    fn aimd_limit_follows_hand_arithmetic() {
        let mut l = ConcurrencyLimiter::new(&ConcurrencyLimitConfig::Aimd {
            initial_limit: 10,
            min_limit: 2,
            max_limit: 12,
            backoff_ratio: 0.5,
            timeout: Duration::from_secs(1),
        });
        let steps: [(u64, u32, bool, u32); 9] = [
            (10, 5, false, 11),
            (10, 6, false, 12),
            (10, 12, false, 12),
            (10, 5, false, 12),
            (10, 12, true, 6),
            (10, 6, true, 3),
            (1_001, 3, false, 2),
            (10, 2, true, 2),
            (10, 1, false, 3),
        ];
        let mut got = Vec::new();
        for (rtt, inflight, drop, _) in steps {
            l.in_flight = inflight;
            l.sample(ms(rtt), inflight, drop);
            got.push(l.limit());
        }
        let want: Vec<u32> = steps.iter().map(|s| s.3).collect();
        assert_eq!(got, want);
    }

    /// Admission: at most `limit` in flight; the sample gives the place back.
    #[test]
    fn a_full_limiter_rejects_until_an_attempt_ends() {
        let mut l = ConcurrencyLimiter::new(&ConcurrencyLimitConfig::Aimd {
            initial_limit: 2,
            min_limit: 1,
            max_limit: 4,
            backoff_ratio: 0.9,
            timeout: Duration::from_secs(5),
        });
        assert_eq!(l.acquire(), Some(1));
        assert_eq!(l.acquire(), Some(2));
        assert_eq!(l.acquire(), None);
        // inflight 2 ≥ 2/2: the limit grows to 3.
        l.sample(ms(5), 2, false);
        assert_eq!((l.limit(), l.in_flight()), (3, 1));
        assert_eq!(l.acquire(), Some(2));
        assert_eq!(l.acquire(), Some(3));
        assert_eq!(l.acquire(), None);
        l.ignore();
        assert_eq!(l.in_flight(), 2);
    }

    /// Gradient2 by hand, tolerance 1 so the gradient shows: initial 20, queue 4, smoothing
    /// 0.2. Samples of 10 ms: the long rtt is their mean, 10 ms, gradient 1: estimate
    /// 20 × 0.8 + (20 + 4) × 0.2 = 20.8 (limit 20), then 20.8 × 0.8 + 24.8 × 0.2 = 21.6.
    /// A 20 ms sample: long = (10 + 10 + 20) / 3 = 13.33 ms, gradient 0.667: new = 21.6 ×
    /// 0.667 + 4 = 18.4, smoothed 21.6 × 0.8 + 18.4 × 0.2 = 20.96 (limit 20). A sample
    /// with inflight below half the estimate changes nothing.
    #[test]
    fn gradient2_estimate_follows_hand_arithmetic() {
        let mut l = ConcurrencyLimiter::new(&ConcurrencyLimitConfig::Gradient2 {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 200,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
            rtt_tolerance: 1.0,
        });
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        l.sample(ms(10), 20, false);
        assert!(close(l.estimate, 20.8) && l.limit() == 20, "{l:?}");
        l.sample(ms(10), 20, false);
        assert!(close(l.estimate, 21.6) && l.limit() == 21, "{l:?}");
        l.sample(ms(20), 20, false);
        let long = 40.0 / 3.0;
        let new = 21.6 * (long / 20.0) + 4.0;
        assert!(close(l.estimate, 21.6 * 0.8 + new * 0.2), "{l:?}");
        assert!(close(l.estimate, 20.96) && l.limit() == 20, "{l:?}");
        l.sample(ms(5), 3, false);
        assert!(close(l.estimate, 20.96), "{l:?}");
    }
}
