//! Backoff (the nominal delay before retry n) and jitter (how it is randomized).
//!
//! `n` is the 1-based number of the retry since the sequence last restarted (a gRPC pushback
//! restarts it), so retry 1 = attempt 2. Caps apply to the nominal delay **before** jitter, as
//! botocore and the AWS SDK for Rust do (full jitter then lies in `[0, min(cap, base·2^(n−1)))`,
//! reference T7); decorrelated jitter carries its own cap, as in Brooker's formula.

use super::duration::{self, secs_f64};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn default_multiplier() -> f64 {
    2.0
}

/// The nominal (un-jittered) delay schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    deny_unknown_fields,
    from = "BackoffDe"
)]
pub enum Backoff {
    /// Retry immediately: `d(n) = 0` (Finagle requeues, the naive anti-pattern).
    None,
    /// `d(n) = delay` (Polly's default 2 s, resilience4j's 500 ms).
    Constant {
        /// The delay.
        #[serde(with = "duration::serde")]
        delay: Duration,
    },
    /// `d(n) = min(cap, base·n)` (Polly `Linear`: `(a+1)·D` for 0-based a).
    Linear {
        /// Step per retry.
        #[serde(with = "duration::serde")]
        base: Duration,
        /// Optional cap.
        #[serde(
            default,
            with = "duration::option",
            skip_serializing_if = "Option::is_none"
        )]
        cap: Option<Duration>,
    },
    /// `d(n) = min(cap, b·multiplier^(n−1))` where `b = throttling_base` for throttling
    /// failures when set, else `base` (AWS 2026: 50 ms transient, 1 s throttling).
    Exponential {
        /// First delay.
        #[serde(with = "duration::serde")]
        base: Duration,
        /// Growth factor per retry (default 2).
        #[serde(default = "default_multiplier")]
        multiplier: f64,
        /// Optional cap (applied before jitter).
        #[serde(
            default,
            with = "duration::option",
            skip_serializing_if = "Option::is_none"
        )]
        cap: Option<Duration>,
        /// Base used for throttling failures instead of `base`.
        #[serde(
            default,
            with = "duration::option",
            skip_serializing_if = "Option::is_none"
        )]
        throttling_base: Option<Duration>,
    },
}

/// Deserialization shadow of [`Backoff`]: serde does not refuse unknown keys next to the tag
/// of a *unit* variant, so `none` is an empty struct variant here.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum BackoffDe {
    None {},
    Constant {
        #[serde(with = "duration::serde")]
        delay: Duration,
    },
    Linear {
        #[serde(with = "duration::serde")]
        base: Duration,
        #[serde(default, with = "duration::option")]
        cap: Option<Duration>,
    },
    Exponential {
        #[serde(with = "duration::serde")]
        base: Duration,
        #[serde(default = "default_multiplier")]
        multiplier: f64,
        #[serde(default, with = "duration::option")]
        cap: Option<Duration>,
        #[serde(default, with = "duration::option")]
        throttling_base: Option<Duration>,
    },
}

impl From<BackoffDe> for Backoff {
    fn from(b: BackoffDe) -> Self {
        match b {
            BackoffDe::None {} => Backoff::None,
            BackoffDe::Constant { delay } => Backoff::Constant { delay },
            BackoffDe::Linear { base, cap } => Backoff::Linear { base, cap },
            BackoffDe::Exponential {
                base,
                multiplier,
                cap,
                throttling_base,
            } => Backoff::Exponential {
                base,
                multiplier,
                cap,
                throttling_base,
            },
        }
    }
}

impl Backoff {
    /// The base delay for this kind of failure (used by decorrelated jitter as its floor).
    pub fn base(&self, throttling: bool) -> Duration {
        match self {
            Backoff::None => Duration::ZERO,
            Backoff::Constant { delay } => *delay,
            Backoff::Linear { base, .. } => *base,
            Backoff::Exponential {
                base,
                throttling_base,
                ..
            } => match (throttling, throttling_base) {
                (true, Some(t)) => *t,
                _ => *base,
            },
        }
    }

    /// The cap, if any.
    pub fn cap(&self) -> Option<Duration> {
        match self {
            Backoff::None => Some(Duration::ZERO),
            Backoff::Constant { delay } => Some(*delay),
            Backoff::Linear { cap, .. } | Backoff::Exponential { cap, .. } => *cap,
        }
    }

    /// Nominal delay before retry `n` (1-based), cap applied, jitter not applied.
    pub fn nominal(&self, n: u32, throttling: bool) -> Duration {
        let n = n.max(1);
        let raw = match self {
            Backoff::None => Duration::ZERO,
            Backoff::Constant { delay } => *delay,
            // d(n) = base·n
            Backoff::Linear { base, .. } => secs_f64(base.as_secs_f64() * n as f64),
            // d(n) = b·multiplier^(n−1); computed in f64 and saturated, never overflows.
            Backoff::Exponential { multiplier, .. } => {
                let b = self.base(throttling).as_secs_f64();
                secs_f64(b * multiplier.powf((n - 1) as f64))
            }
        };
        match self.cap() {
            Some(c) => raw.min(c),
            None => raw,
        }
    }
}

/// The nominal delays of the first retries, computed once per client by
/// [`Backoff::nominal`] itself, so that a retry looks its delay up instead of recomputing a
/// power and a float-to-duration conversion; later retries are computed as before. The
/// values are those `nominal` returns, bit for bit, by construction.
#[derive(Clone, Debug)]
pub struct Nominals {
    /// `[throttling as usize][n - 1]`.
    table: [[Duration; NOMINALS]; 2],
    /// [`Backoff::base`] for `[throttling as usize]`, and [`Backoff::cap`]: a retry's jitter
    /// reads them, and a look-up is cheaper than matching the backoff's kind each time.
    bases: [Duration; 2],
    cap: Option<Duration>,
}

/// Retries whose nominal delay [`Nominals`] keeps.
const NOMINALS: usize = 8;

impl Nominals {
    pub fn new(backoff: &Backoff) -> Self {
        let row = |throttling| std::array::from_fn(|i| backoff.nominal(i as u32 + 1, throttling));
        Nominals {
            table: [row(false), row(true)],
            bases: [backoff.base(false), backoff.base(true)],
            cap: backoff.cap(),
        }
    }

    /// `backoff.base(throttling)`, for the `backoff` the table was built from.
    #[inline]
    pub fn base(&self, throttling: bool) -> Duration {
        self.bases[usize::from(throttling)]
    }

    /// `backoff.cap()`, for the `backoff` the table was built from.
    #[inline]
    pub fn cap(&self) -> Option<Duration> {
        self.cap
    }

    /// `backoff.nominal(n, throttling)`, for the `backoff` the table was built from: a
    /// look-up inline, the computation of a later retry's out of line.
    #[inline(always)]
    pub fn get(&self, backoff: &Backoff, n: u32, throttling: bool) -> Duration {
        match self.table[usize::from(throttling)].get(n.max(1) as usize - 1) {
            Some(d) => *d,
            None => Self::beyond(backoff, n, throttling),
        }
    }

    /// [`Self::get`] past the table.
    #[inline(never)]
    fn beyond(backoff: &Backoff, n: u32, throttling: bool) -> Duration {
        backoff.nominal(n, throttling)
    }
}

/// How the nominal delay is randomized.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    deny_unknown_fields,
    from = "JitterDe"
)]
pub enum Jitter {
    /// `delay = d`.
    #[default]
    None,
    /// Brooker "full jitter", AWS standard mode, Envoy: `delay = U[0, d)`.
    Full,
    /// Brooker "equal jitter": `delay = d/2 + U[0, d/2)`, i.e. `U[d/2, d)`.
    Equal,
    /// Brooker "decorrelated jitter" (stateful per request, `prev` starts at `base`):
    /// `delay = min(cap, U[base, 3·prev))`; then `prev = delay`. Ignores the nominal schedule.
    Decorrelated,
    /// gRPC A6 (2024): `delay = d·U[1 − pct/100, 1 + pct/100)`; pct = 20 gives `U[0.8d, 1.2d)`.
    Proportional {
        /// Half-width of the band, in percent (0, 100].
        pct: f64,
    },
    /// The Stainless-generated LLM SDKs (openai-python, anthropic-sdk-python):
    /// `delay = d·(1 − pct/100·U[0, 1))`, so `(d·(1 − pct/100), d]`; they use pct = 25.
    Downward {
        /// Width of the band below the nominal delay, in percent (0, 100].
        pct: f64,
    },
}

/// Deserialization shadow of [`Jitter`] (see [`BackoffDe`]).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum JitterDe {
    None {},
    Full {},
    Equal {},
    Decorrelated {},
    Proportional { pct: f64 },
    Downward { pct: f64 },
}

impl From<JitterDe> for Jitter {
    fn from(j: JitterDe) -> Self {
        match j {
            JitterDe::None {} => Jitter::None,
            JitterDe::Full {} => Jitter::Full,
            JitterDe::Equal {} => Jitter::Equal,
            JitterDe::Decorrelated {} => Jitter::Decorrelated,
            JitterDe::Proportional { pct } => Jitter::Proportional { pct },
            JitterDe::Downward { pct } => Jitter::Downward { pct },
        }
    }
}

impl Jitter {
    /// The most [`Self::apply`] can give for `nominal`, known without a draw: `nominal` for
    /// the jitters that never go above it; `None` for those that may (decorrelated, whose
    /// range follows its last draw, and proportional).
    pub fn at_most(&self, nominal: Duration) -> Option<Duration> {
        match self {
            Jitter::None | Jitter::Full | Jitter::Equal | Jitter::Downward { .. } => Some(nominal),
            Jitter::Decorrelated | Jitter::Proportional { .. } => None,
        }
    }

    /// Apply the jitter to `nominal`. `base` and `cap` feed decorrelated jitter; `prev` is the
    /// request's decorrelated state (initialize it to `base`). No jitter and full jitter
    /// (the storms' presets) inline: as a call, its setup (six arguments, four on the stack)
    /// cost as much as a full jitter's own work; the other kinds out of line.
    #[inline(always)]
    pub fn apply(
        &self,
        nominal: Duration,
        base: Duration,
        cap: Option<Duration>,
        prev: &mut Duration,
        rng: &mut dyn RngCore,
    ) -> Duration {
        match self {
            Jitter::None => nominal,
            Jitter::Full => secs_f64(nominal.as_secs_f64() * rng.gen::<f64>()).min(nominal),
            _ => self.apply_other(nominal, base, cap, prev, rng),
        }
    }

    /// [`Self::apply`] for the kinds other than none and full, out of line.
    #[inline(never)]
    fn apply_other(
        &self,
        nominal: Duration,
        base: Duration,
        cap: Option<Duration>,
        prev: &mut Duration,
        rng: &mut dyn RngCore,
    ) -> Duration {
        let d = nominal.as_secs_f64();
        match self {
            Jitter::None | Jitter::Full => unreachable!("`apply` works out none and full"),
            Jitter::Equal => secs_f64(d / 2.0 + d / 2.0 * rng.gen::<f64>()).min(nominal),
            Jitter::Decorrelated => {
                let lo = base.as_secs_f64();
                let hi = (prev.as_secs_f64() * 3.0).max(lo);
                let mut s = secs_f64(lo + (hi - lo) * rng.gen::<f64>());
                if hi > lo && s.as_secs_f64() >= hi {
                    s = secs_f64(hi).saturating_sub(Duration::from_nanos(1));
                }
                let s = s.max(base);
                let s = match cap {
                    Some(c) => s.min(c),
                    None => s.min(duration::MAX_DURATION),
                };
                *prev = s;
                s
            }
            Jitter::Proportional { pct } => {
                let f = pct / 100.0;
                secs_f64(d * (1.0 - f + 2.0 * f * rng.gen::<f64>()))
            }
            Jitter::Downward { pct } => {
                secs_f64(d * (1.0 - pct / 100.0 * rng.gen::<f64>())).min(nominal)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const N: usize = 100_000;
    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn exp(base: u64, cap: Option<u64>) -> Backoff {
        Backoff::Exponential {
            base: ms(base),
            multiplier: 2.0,
            cap: cap.map(ms),
            throttling_base: None,
        }
    }

    #[test]
    fn the_nominal_table_is_nominal() {
        let mut backoffs: Vec<Backoff> = crate::policy::preset_names()
            .iter()
            .map(|n| crate::policy::preset(n).unwrap().backoff)
            .collect();
        backoffs.extend([
            Backoff::None,
            Backoff::Constant { delay: ms(7) },
            Backoff::Linear {
                base: ms(3),
                cap: Some(ms(20)),
            },
            Backoff::Exponential {
                base: Duration::from_nanos(333_333_333),
                multiplier: 1.7,
                cap: None,
                throttling_base: Some(ms(1_000)),
            },
        ]);
        for b in &backoffs {
            let t = Nominals::new(b);
            for n in 0..3 * NOMINALS as u32 {
                for throttling in [false, true] {
                    assert_eq!(
                        t.get(b, n, throttling),
                        b.nominal(n, throttling),
                        "{b:?} n={n}"
                    );
                }
            }
        }
    }

    #[test]
    fn exponential_grows_and_caps() {
        let b = exp(50, Some(20_000));
        let want = [
            50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 20000, 20000,
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(b.nominal(i as u32 + 1, false), ms(*w), "n={}", i + 1);
        }
        // Uncapped never overflows.
        assert_eq!(
            exp(1000, None).nominal(10_000, false),
            duration::MAX_DURATION
        );
        let t = Backoff::Exponential {
            base: ms(50),
            multiplier: 2.0,
            cap: Some(ms(20_000)),
            throttling_base: Some(ms(1000)),
        };
        assert_eq!(t.nominal(1, true), ms(1000));
        assert_eq!(t.nominal(2, true), ms(2000));
        assert_eq!(t.nominal(2, false), ms(100));
    }

    #[test]
    fn linear_and_constant() {
        let l = Backoff::Linear {
            base: ms(100),
            cap: Some(ms(250)),
        };
        assert_eq!(
            [1, 2, 3, 4].map(|n| l.nominal(n, false)),
            [ms(100), ms(200), ms(250), ms(250)]
        );
        let c = Backoff::Constant { delay: ms(2000) };
        assert!((1..10).all(|n| c.nominal(n, false) == ms(2000)));
        assert_eq!(Backoff::None.nominal(3, false), Duration::ZERO);
    }

    fn samples(
        j: &Jitter,
        d: Duration,
        base: Duration,
        cap: Option<Duration>,
        seed: u64,
    ) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut prev = base;
        (0..N)
            .map(|_| {
                prev = base;
                j.apply(d, base, cap, &mut prev, &mut rng).as_secs_f64()
            })
            .collect()
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    /// Fraction of samples in each of 10 equal bins over [lo, hi): uniform means 0.1 each.
    fn assert_uniform(v: &[f64], lo: f64, hi: f64) {
        let mut bins = [0usize; 10];
        for &x in v {
            assert!(x >= lo && x < hi, "{x} outside [{lo}, {hi})");
            bins[(((x - lo) / (hi - lo)) * 10.0).min(9.0) as usize] += 1;
        }
        for b in bins {
            let f = b as f64 / v.len() as f64;
            assert!((f - 0.1).abs() < 0.005, "bin fraction {f}");
        }
        let m = mean(v);
        let want = (lo + hi) / 2.0;
        assert!((m - want).abs() / want < 0.01, "mean {m} vs {want}");
    }

    #[test]
    fn full_jitter_uniform_below_capped_nominal() {
        // Retry 4 of base 50 ms: min(cap 300 ms, 50·2^3 = 400 ms) = 300 ms: cap before jitter.
        let b = exp(50, Some(300));
        let d = b.nominal(4, false);
        assert_eq!(d, ms(300));
        let v = samples(&Jitter::Full, d, ms(50), b.cap(), 1);
        assert_uniform(&v, 0.0, 0.3);
    }

    #[test]
    fn equal_jitter_in_upper_half() {
        let v = samples(&Jitter::Equal, ms(800), ms(50), None, 2);
        assert_uniform(&v, 0.4, 0.8);
    }

    #[test]
    fn proportional_jitter_20pct() {
        let v = samples(
            &Jitter::Proportional { pct: 20.0 },
            ms(1000),
            ms(100),
            None,
            3,
        );
        assert_uniform(&v, 0.8, 1.2);
    }

    #[test]
    fn downward_jitter_25pct_stays_below_the_nominal_delay() {
        let v = samples(&Jitter::Downward { pct: 25.0 }, ms(1000), ms(100), None, 6);
        assert!(v.iter().all(|&d| d > 0.75 && d <= 1.0), "outside (0.75, 1]");
        assert_uniform(&v, 0.75, 1.0);
    }

    #[test]
    fn decorrelated_first_step_uniform_on_base_3base() {
        // prev starts at base: first delay U[base, 3·base).
        let v = samples(&Jitter::Decorrelated, ms(0), ms(100), Some(ms(10_000)), 4);
        assert_uniform(&v, 0.1, 0.3);
    }

    #[test]
    fn decorrelated_chain_stays_in_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (base, cap) = (ms(10), ms(2000));
        let mut capped = 0usize;
        for _ in 0..1000 {
            let mut prev = base;
            for _ in 0..100 {
                let before = prev;
                let s = Jitter::Decorrelated.apply(
                    Duration::ZERO,
                    base,
                    Some(cap),
                    &mut prev,
                    &mut rng,
                );
                assert!(s >= base && s <= cap, "{s:?}");
                assert!(s < (before * 3).max(base + Duration::from_nanos(1)) || s == cap);
                capped += (s == cap) as usize;
            }
        }
        assert!(capped > 0, "long chains must reach the cap");
    }
}
