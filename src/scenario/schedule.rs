//! The seeded open-loop arrival schedule: when each logical request is *meant* to start,
//! whatever happens to earlier ones. Open loop matters for storms: a closed-loop client slows
//! down when the target does and so hides the very overload a retry storm causes.
//!
//! [`arrivals`] returns a lazy iterator of start times since t = 0, non-decreasing and strictly
//! within `[0, duration)`; nothing is allocated per arrival, so a 100k req/s × 1 h schedule
//! costs no memory. The same shape, duration and seed always give the same times.
//!
//! `LoadShape::Closed` yields no arrivals: a closed loop is driven by the engine (each user
//! sends, waits for the outcome, thinks, sends again), so its start times depend on response
//! times and cannot be scheduled in advance.

use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::load_shape::{LoadShape, RateStep, SeriesArrivals};

/// Seeded arrival times; see the module docs.
#[derive(Debug, Clone)]
pub struct Arrivals {
    end: Duration,
    /// `end` in nanoseconds, for [`Arrivals::next_nanos`]'s compare.
    end_nanos: u128,
    state: State,
}

#[derive(Debug, Clone)]
enum State {
    Done,
    /// Arrival `i` at `i / rate`, also stepped in integers ([`Exact`]).
    Constant {
        rate: f64,
        i: u64,
        exact: Exact,
    },
    /// Exponential gaps with mean `1 / rate`.
    Poisson {
        rate: f64,
        t: f64,
        rng: Box<ChaCha8Rng>,
    },
    /// Arrival `i` where the integrated rate `from·t + (to−from)·t²/(2T)` reaches `i`.
    Ramp {
        from: f64,
        slope_half: f64,
        i: u64,
    },
    /// `left` more arrivals at t = 0.
    Burst {
        left: u32,
    },
    /// Constant spacing within step `k`, from its `at` to the next step's `at` (or the end).
    Steps {
        steps: Vec<RateStep>,
        k: usize,
        i: u64,
    },
    /// A Poisson process of piecewise-constant rate (a recorded series), by time
    /// rescaling: unit exponential gaps in integrated rate Λ, each mapped back to the
    /// instant where the integral of the steps' rates reaches it.
    SeriesPoisson {
        steps: Vec<RateStep>,
        /// The step the last arrival fell in, and Λ at its start.
        k: usize,
        mass_before: f64,
        /// Λ of the next arrival.
        target: f64,
        rng: Box<ChaCha8Rng>,
    },
    /// A recorded trace's instants, in nanoseconds.
    Trace {
        times: Arc<[u64]>,
        i: usize,
    },
}

/// The arrival schedule for `shape` over `duration`, drawn from `seed` where random.
pub fn arrivals(shape: &LoadShape, duration: Duration, seed: u64) -> Arrivals {
    let state = match shape {
        LoadShape::Constant { rate } if usable(*rate) => State::Constant {
            rate: *rate,
            i: 0,
            exact: Exact::new(*rate, duration.as_nanos()),
        },
        LoadShape::Poisson { rate } if usable(*rate) => State::Poisson {
            rate: *rate,
            t: 0.0,
            rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
        },
        LoadShape::Ramp { from, to }
            if from.is_finite() && to.is_finite() && duration > Duration::ZERO =>
        {
            State::Ramp {
                from: from.max(0.0),
                slope_half: (to.max(0.0) - from.max(0.0)) / (2.0 * duration.as_secs_f64()),
                i: 0,
            }
        }
        LoadShape::Steps { steps } => State::Steps {
            steps: steps.clone(),
            k: 0,
            i: 0,
        },
        LoadShape::Burst { requests } if duration > Duration::ZERO => {
            State::Burst { left: *requests }
        }
        LoadShape::Series {
            steps,
            arrivals: SeriesArrivals::Constant,
            ..
        } => State::Steps {
            steps: steps.clone(),
            k: 0,
            i: 0,
        },
        LoadShape::Series {
            steps,
            arrivals: SeriesArrivals::Poisson,
            ..
        } => State::SeriesPoisson {
            steps: steps.clone(),
            k: 0,
            mass_before: 0.0,
            target: 0.0,
            rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
        },
        LoadShape::Trace { times, .. } => State::Trace {
            times: Arc::clone(times),
            i: 0,
        },
        _ => State::Done,
    };
    Arrivals {
        end: duration,
        end_nanos: duration.as_nanos(),
        state,
    }
}

fn usable(rate: f64) -> bool {
    rate.is_finite() && rate > 0.0
}

/// The expected number of arrivals (exact for constant, ramp and steps up to rounding; the
/// mean for Poisson; 0 for closed loop, which the engine drives).
pub fn expected_count(shape: &LoadShape, duration: Duration) -> f64 {
    let t = duration.as_secs_f64();
    match shape {
        LoadShape::Constant { rate } | LoadShape::Poisson { rate } => rate * t,
        LoadShape::Ramp { from, to } => (from + to) / 2.0 * t,
        LoadShape::Steps { steps } | LoadShape::Series { steps, .. } => steps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let start = s.at.min(duration);
                let end = steps.get(k + 1).map_or(duration, |n| n.at.min(duration));
                s.rate * end.saturating_sub(start).as_secs_f64()
            })
            .sum(),
        LoadShape::Closed { .. } => 0.0,
        LoadShape::Burst { requests } => f64::from(*requests),
        LoadShape::Trace { times, .. } => {
            let end = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
            times.partition_point(|&t| t < end) as f64
        }
    }
}

/// Seconds to a `Duration`, or `None` if not strictly before `end`.
fn before(secs: f64, end: Duration) -> Option<Duration> {
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    let d = Duration::try_from_secs_f64(secs).ok()?;
    (d < end).then_some(d)
}

/// Seconds as whole nanoseconds, exactly `Duration::try_from_secs_f64(secs)?.as_nanos()`:
/// `secs` is `m · 2^k` (m the 53-bit mantissa), and the standard library rounds
/// `m · 2^k · 10⁹` to the nearest nanosecond, ties to even; this does the same in integer
/// arithmetic, without building the `Duration`. `None` when negative (other than −0),
/// not finite, or at or beyond 2⁶⁴ ns.
#[inline]
pub(crate) fn secs_to_nanos(secs: f64) -> Option<u64> {
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    let bits = secs.to_bits() & !(1 << 63);
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        // Zero or subnormal: far below half a nanosecond.
        return Some(0);
    }
    let m = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
    let k = biased - 1075; // secs = m · 2^k
    let x = m * 1_000_000_000;
    let n = if k >= 0 {
        if k > 40 {
            return None; // m · 2^k ≥ 2^92 s: far beyond 2⁶⁴ ns
        }
        x << k
    } else {
        let s = (-k) as u32;
        if s >= 127 {
            return Some(0);
        }
        // Round to nearest, ties to even, in one shift: below half the remainder cannot
        // carry into the quotient; above it, it always does; at exactly half, only with the
        // quotient's lowest bit set (x < 2⁸³, so the sum cannot overflow).
        (x + ((1u128 << (s - 1)) - 1) + ((x >> s) & 1)) >> s
    };
    u64::try_from(n).ok()
}

/// [`before`] in whole nanoseconds, with `end` in nanoseconds.
#[inline]
fn before_nanos(secs: f64, end_nanos: u128) -> Option<u64> {
    let n = secs_to_nanos(secs)?;
    (u128::from(n) < end_nanos).then_some(n)
}

impl Arrivals {
    /// The next arrival in whole nanoseconds since t = 0: the same as `next()` in
    /// nanoseconds, without a `Duration` in between (the simulator's clock is in
    /// nanoseconds), and for a constant rate mostly without floating point (see `Exact`).
    #[inline]
    pub fn next_nanos(&mut self) -> Option<u64> {
        if let State::Constant { rate, i, exact } = &mut self.state {
            let n = *i;
            *i += 1;
            if let Some(t) = exact.next() {
                return Some(t);
            }
            let t = before_nanos(n as f64 / *rate, self.end_nanos);
            if t.is_none() {
                self.state = State::Done;
            }
            return t;
        }
        self.next_nanos_other()
    }

    /// [`Self::next_nanos`] of every shape but a constant rate.
    fn next_nanos_other(&mut self) -> Option<u64> {
        if let State::Trace { times, i } = &mut self.state {
            let t = times
                .get(*i)
                .copied()
                .filter(|&t| u128::from(t) < self.end_nanos);
            *i += 1;
            if t.is_none() {
                self.state = State::Done;
            }
            return t;
        }
        self.next()
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// A constant rate's arrivals in integer arithmetic, bit for bit the floating-point path's.
///
/// The floating-point path takes `q_f = fl(i / rate)` (one correctly rounded division, `i`
/// exact below 2⁵³) and rounds `q_f · 10⁹` to the nearest nanosecond, ties to even. The
/// exact instant `E = i · 10⁹ / rate` ns is rational: with `rate = m · 2^e`, it is
/// `i · num / den` for integers `num`, `den`, so `E = q + r / den` steps by a constant
/// `(dq, dr)` per arrival with a carry. `q_f · 10⁹` is within `E · 2⁻⁵³` of `E` (strictly,
/// unless equal), so wherever `E` is at least that far from a half nanosecond both round
/// to the same whole nanosecond, `q` or `q + 1`: that holds when
/// `|2r − den| · 2⁵² ≥ den · E`, which `|2r − den| ≥ thr` with `thr ≥ den · end / 2⁵²`
/// ensures for every `E < end`. Elsewhere (near a tie, near the end, rates the integers
/// cannot hold) [`Exact::next`] says `None` and the caller takes the floating-point path.
#[derive(Debug, Clone, Copy)]
struct Exact {
    /// The current arrival's `E = q + r / den` (0 ≤ r < den).
    q: u64,
    r: u64,
    /// `E`'s step per arrival: `dq + dr / den`.
    dq: u64,
    dr: u64,
    den: u64,
    /// Integer answers only where `|2r − den| ≥ thr` and `q + 1 < end`.
    thr: u64,
    end: u64,
}

impl Exact {
    /// Never answers: every arrival takes the floating-point path.
    const OFF: Exact = Exact {
        q: 0,
        r: 0,
        dq: 0,
        dr: 0,
        den: 1,
        thr: u64::MAX,
        end: 0,
    };

    /// The steps of `rate` (positive and finite) for a run of `end_nanos`; [`Exact::OFF`]
    /// where the integers would not hold them.
    fn new(rate: f64, end_nanos: u128) -> Exact {
        let bits = rate.to_bits();
        let biased = (bits >> 52) as i32;
        if !usable(rate) || biased == 0 {
            return Exact::OFF;
        }
        // rate = m · 2^e with m odd.
        let mut m = (bits & ((1 << 52) - 1)) | (1 << 52);
        let tz = m.trailing_zeros();
        m >>= tz;
        let e = biased - 1075 + tz as i32;
        // den < 2⁶¹, so that 2r < 2⁶² and `den · end` fits 128 bits.
        let (num, den): (u128, u128) = match e {
            0..=61 if u128::from(m) << e < 1 << 61 => (1_000_000_000, u128::from(m) << e),
            -90..=-1 => (1_000_000_000 << -e, u128::from(m)),
            _ => return Exact::OFF,
        };
        let Ok(end) = u64::try_from(end_nanos) else {
            return Exact::OFF;
        };
        // `q` stays below 2⁶⁴ (it passes `end` by at most a step before the run is done);
        // the arrivals before `end` have indices below 2⁵², exact as `f64`.
        let (dq, dr) = (num / den, num % den);
        if end > 1 << 62 || dq > 1 << 62 || rate * (end as f64) / 1e9 >= (1u64 << 52) as f64 {
            return Exact::OFF;
        }
        let thr = (den * u128::from(end)).div_ceil(1 << 52).max(1);
        Exact {
            q: 0,
            r: 0,
            dq: dq as u64,
            dr: dr as u64,
            den: den as u64,
            thr: u64::try_from(thr).unwrap_or(u64::MAX),
            end,
        }
    }

    /// The current arrival in whole nanoseconds where the integers give it (see the type's
    /// docs), then steps to the next arrival either way.
    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        let (q, r) = (self.q, self.r);
        self.q += self.dq;
        self.r += self.dr;
        if self.r >= self.den {
            self.r -= self.den;
            self.q += 1;
        }
        ((2 * r).abs_diff(self.den) >= self.thr && q + 1 < self.end)
            .then_some(q + u64::from(2 * r > self.den))
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let end = self.end;
        let out = match &mut self.state {
            State::Done => None,
            State::Constant { rate, i, exact } => {
                // Kept in step for `next_nanos`, whichever of the two a caller mixes.
                exact.next();
                let t = before(*i as f64 / *rate, end);
                *i += 1;
                t
            }
            State::Poisson { rate, t, rng } => {
                // Inverse transform: 1 − u is in (0, 1], so the log is finite.
                let u: f64 = rng.gen();
                *t += -(1.0 - u).ln() / *rate;
                before(*t, end)
            }
            State::Ramp {
                from,
                slope_half,
                i,
            } => {
                // Solve from·t + a·t² = i for t ≥ 0 in the cancellation-free form
                // t = 2i / (from + √(from² + 4·a·i)), valid for rising and falling ramps.
                let n = *i as f64;
                let t = if *i == 0 {
                    0.0
                } else {
                    let disc = *from * *from + 4.0 * *slope_half * n;
                    if disc < 0.0 {
                        f64::INFINITY
                    } else {
                        2.0 * n / (*from + disc.sqrt())
                    }
                };
                *i += 1;
                before(t, end)
            }
            State::Burst { left } => {
                let go = *left > 0;
                *left = left.saturating_sub(1);
                go.then_some(Duration::ZERO)
            }
            State::Steps { steps, k, i } => loop {
                let Some(step) = steps.get(*k) else {
                    break None;
                };
                let stop = steps.get(*k + 1).map_or(end, |s| s.at.min(end));
                if usable(step.rate) {
                    let t = step.at.as_secs_f64() + *i as f64 / step.rate;
                    if let Some(d) = before(t, stop) {
                        *i += 1;
                        break Some(d);
                    }
                }
                *k += 1;
                *i = 0;
            },
            State::SeriesPoisson {
                steps,
                k,
                mass_before,
                target,
                rng,
            } => {
                let u: f64 = rng.gen();
                *target += -(1.0 - u).ln();
                next_in_steps(steps, k, mass_before, *target, end)
            }
            State::Trace { times, i } => {
                let t = times.get(*i).map(|&t| Duration::from_nanos(t));
                *i += 1;
                t.filter(|t| *t < end)
            }
        };
        if out.is_none() {
            self.state = State::Done;
        }
        out
    }
}

impl std::iter::FusedIterator for Arrivals {}

/// The instant where the integrated rate of `steps` reaches `target`, advancing the
/// current step `k` (and Λ at its start) past steps it has used up; `None` past the last
/// step (which ends at `end`) or at `end`.
fn next_in_steps(
    steps: &[RateStep],
    k: &mut usize,
    mass_before: &mut f64,
    target: f64,
    end: Duration,
) -> Option<Duration> {
    loop {
        let step = steps.get(*k)?;
        let stop = steps.get(*k + 1).map_or(end, |s| s.at.min(end));
        let start = step.at.min(stop).as_secs_f64();
        let span = stop.as_secs_f64() - start;
        let mass = if usable(step.rate) {
            step.rate * span
        } else {
            0.0
        };
        if target - *mass_before < mass {
            let t = start + (target - *mass_before) / step.rate;
            return before(t, stop).or_else(|| before(t.min(stop.as_secs_f64()), end));
        }
        if stop >= end {
            return None;
        }
        *mass_before += mass;
        *k += 1;
    }
}

/// Seconds where a conversion to whole nanoseconds is easy to get wrong: signs, NaN and
/// infinities, subnormals, exact ties at a half nanosecond, values either side of a tie,
/// the edge of 2⁶⁴ ns, and runs of `k` + ½ ns at several scales. Every test of such a
/// conversion here (the schedule's, the timeline's) reads the same list.
#[cfg(test)]
pub(crate) fn awkward_seconds() -> Vec<f64> {
    let ns = 1e-9;
    let mut cases = vec![
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::MIN_POSITIVE,
        5e-324,
        0.5e-9,
        1.5e-9,
        2.5e-9,
        0.499_999_999_9e-9,
        0.002,
        0.010,
        0.999_999_999_5,
        0.999_999_999_6,
        1.0 - f64::EPSILON,
        1.0,
        1_099.511_627_776,
        1_099.511_627_775_5,
        18_446_744_073.709_55,
        18_446_744_073.709_553,
        1e12,
        1e30,
        f64::MAX,
    ];
    // Exact ties at a half nanosecond: k + 0.5 ns for powers of two (2^-31 s ≈ 0.47 ns).
    for e in 0..45 {
        cases.push(2f64.powi(-e));
        cases.push(3.0 * 2f64.powi(-e));
    }
    for k in 0..5000u32 {
        cases.push(f64::from(k) * ns + 0.5 * ns);
        cases.push(f64::from(k) * 1e-4 + 0.5 * ns);
        cases.push(f64::from(k) * 0.001 + 0.5 * ns);
        cases.push(f64::from(k) * 0.25 + 0.5 * ns);
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn std_nanos(secs: f64) -> Option<u64> {
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        let d = Duration::try_from_secs_f64(secs).ok()?;
        u64::try_from(d.as_nanos()).ok()
    }

    #[test]
    fn nanos_round_as_the_standard_library_at_the_edges() {
        let cases = awkward_seconds();
        for &s in &cases {
            assert_eq!(secs_to_nanos(s), std_nanos(s), "secs = {s:e}");
        }
    }

    proptest! {
        #[test]
        fn nanos_round_as_the_standard_library(bits in any::<u64>(), i in 0u64..10_000_000,
                                               rate in 0.001f64..1e7) {
            let s = f64::from_bits(bits);
            prop_assert_eq!(secs_to_nanos(s), std_nanos(s));
            let s = i as f64 / rate;
            prop_assert_eq!(secs_to_nanos(s), std_nanos(s));
            let s = f64::from_bits(bits >> 2); // below 2 s, denser near 0 .. 2^255
            prop_assert_eq!(secs_to_nanos(s), std_nanos(s));
        }

        #[test]
        fn next_nanos_is_next_in_nanoseconds(rate in 0.1f64..1e6, ms in 0u64..3_000) {
            let shape = LoadShape::Constant { rate };
            let d = Duration::from_millis(ms);
            let mut a = arrivals(&shape, d, 1);
            let mut b = arrivals(&shape, d, 1);
            for _ in 0..2_000 {
                let want = b.next().map(|d| d.as_nanos() as u64);
                prop_assert_eq!(a.next_nanos(), want);
                if want.is_none() {
                    break;
                }
            }
            prop_assert_eq!(a.next_nanos(), b.next().map(|d| d.as_nanos() as u64));
        }
    }

    /// The floating-point path's arrival `n` for `rate` over `end_ns`.
    fn float_path(rate: f64, n: u64, end_ns: u64) -> Option<u64> {
        before_nanos(n as f64 / rate, u128::from(end_ns))
    }

    /// Arrivals `from..` of a constant `rate` over `end_ns`, compared one by one with the
    /// floating-point path until it ends or `count` have been compared; returns how many
    /// the integers answered themselves.
    fn compare_exact(rate: f64, end_ns: u64, from: u64, count: u64) -> u64 {
        let shape = LoadShape::Constant { rate };
        let mut a = arrivals(&shape, Duration::from_nanos(end_ns), 1);
        if let State::Constant { i, exact, .. } = &mut a.state {
            // Jump to arrival `from`: E = from · (dq + dr / den).
            let r = u128::from(from) * u128::from(exact.dr);
            let den = u128::from(exact.den);
            *i = from;
            exact.q = from * exact.dq + (r / den) as u64;
            exact.r = (r % den) as u64;
        }
        let mut by_integers = 0;
        for n in from..from.saturating_add(count) {
            let want = float_path(rate, n, end_ns);
            if let State::Constant { exact, .. } = &a.state {
                by_integers += u64::from(exact.clone().next().is_some());
            }
            assert_eq!(
                a.next_nanos(),
                want,
                "rate {rate:e}, arrival {n}, end {end_ns}"
            );
            if want.is_none() {
                assert_eq!(a.next_nanos(), None);
                break;
            }
        }
        by_integers
    }

    #[test]
    fn constant_rate_in_integers_is_the_float_path() {
        let s = 1_000_000_000u64;
        let rates = [
            200.0,
            6000.0,
            3.0,
            7.0,
            1e9 / 3.0,
            1e9 / 7.0,
            4e9 / 3.0,
            2e9,
            1e9,
            1e9 + 1.0,
            0.5,
            1.0 / 3.0,
            0.1,
            0.001,
            1e-7,
            2f64.powi(-30),
            1.5,
            123_456.789,
            1e6 / 7.0,
            1e12,
            3e15,
            f64::MIN_POSITIVE,
            f64::MAX,
        ];
        let ends = [0, 1, 999, s, s + 1, 20 * s - 1, 20 * s, 3_600 * s + 7];
        let mut by_integers = 0;
        for &rate in &rates {
            for &end in &ends {
                by_integers += compare_exact(rate, end, 0, 300_000);
            }
        }
        assert!(
            by_integers > 1_000_000,
            "the integers answered {by_integers}"
        );
        // Huge counts: arrivals far into long runs, up to the last index below 2⁵².
        let long = 100_000 * 3_600 * s; // 100,000 h in ns
        for &rate in &[
            3.0,
            7.0,
            1e9 / 3.0,
            6000.0,
            1e6 / 7.0,
            1e7 + 0.5,
            12_345.678,
        ] {
            let last = (rate * long as f64 / 1e9) as u64;
            for from in [1 << 20, 1 << 32, 1 << 40, last.saturating_sub(5_000)] {
                compare_exact(rate, long, from.min(last), 10_000);
            }
        }
        // Where the indices reach 2⁵², the floating-point path alone.
        assert_eq!(compare_exact(1e9, long, (1 << 52) - 100, 200), 0);
    }

    proptest! {
        #[test]
        fn constant_rate_in_integers_is_the_float_path_anywhere(
            exp in -9.0f64..10.0, mant in 1.0f64..10.0, secs in 0u64..400_000,
            at in 0.0f64..1.0,
        ) {
            let rate = mant * 10f64.powf(exp);
            let end = secs * 1_000_000_000 + 123;
            let from = (rate * end as f64 / 1e9 * at) as u64;
            compare_exact(rate, end, from, 2_000);
        }
    }

    #[test]
    fn constant_is_evenly_spaced() {
        let v: Vec<_> = arrivals(
            &LoadShape::Constant { rate: 4.0 },
            Duration::from_secs(1),
            1,
        )
        .collect();
        assert_eq!(v, [0, 250, 500, 750].map(Duration::from_millis).to_vec());
    }

    #[test]
    fn closed_yields_nothing() {
        let shape = LoadShape::Closed {
            users: 3,
            think_time: Duration::ZERO,
        };
        assert_eq!(arrivals(&shape, Duration::from_secs(5), 1).count(), 0);
        assert_eq!(expected_count(&shape, Duration::from_secs(5)), 0.0);
    }
}
