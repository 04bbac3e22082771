//! A client-side send-rate limiter: botocore's adaptive retry mode, its config, constants
//! and state together.
//!
//! botocore's adaptive mode is standard mode plus this limiter (`botocore/client.py`
//! lines 252-254 register both). It stays off until the first throttling response; from then
//! on every send, first attempts and retries alike, takes one token from a bucket whose fill
//! rate CUBIC sets: cut to 70 % of the send rate on each throttling response, grown back along
//! a cubic curve on the others, and never above twice the rate the client was measured to
//! send at. A client whose limiter has engaged therefore waits before sending to *any*
//! resource, the cost of adaptive mode the retry-patterns notes warn about.
//!
//! Every formula below is botocore 1.44.8's, operation for operation (the same `pow` calls,
//! the same order of floating-point operations), so that a test can hold it against
//! botocore's own classes to the bit: `tests/suite/aws_adaptive_conformance.rs` with
//! `tests/python/botocore_adaptive.py`. Time comes in as the run's monotonic time (the
//! client is made at its zero, as botocore's `register_retry_handler` reads its clock once
//! when the client is built); nothing here reads a clock.
//!
//! One difference of form, not of outcome: botocore's `TokenBucket.acquire` blocks its
//! thread (`bucket.py` lines 89-101: wait the computed time on a condition, refill, look
//! again). Here [`RateLimiter::acquire`] answers with that wait instead, and the engine asks
//! again when it is over, which is the same loop with the sleeping done by the engine.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which send-rate limiter a config has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RateLimiterConfig {
    /// No limiter: every permitted attempt is sent at once (`{ kind = "none" }` removes a
    /// preset's).
    #[default]
    #[serde(deserialize_with = "no_keys")]
    None,
    /// botocore's adaptive mode (`botocore/retries/adaptive.py`), with its constants: none
    /// of them is a setting in botocore, so none is one here.
    #[serde(deserialize_with = "no_keys")]
    AwsAdaptive,
}

/// A kind takes no other key: a key beside it is a typo or a knob that does not exist.
fn no_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NoKeys {}
    NoKeys::deserialize(d).map(|_| ())
}

impl RateLimiterConfig {
    /// True without a limiter (what a config that never names one has).
    pub fn is_none(&self) -> bool {
        *self == RateLimiterConfig::None
    }

    /// The limiter's state for one client instance, `None` without a limiter.
    pub fn build(&self) -> Option<RateLimiter> {
        match self {
            RateLimiterConfig::None => None,
            RateLimiterConfig::AwsAdaptive => Some(RateLimiter::new()),
        }
    }
}

/// `TokenBucket._MIN_RATE` (`botocore/retries/bucket.py` line 21): the fill rate never drops
/// below half a token per second.
pub const MIN_FILL_RATE: f64 = 0.5;
/// `CubicCalculator._BETA` (`botocore/retries/throttling.py` line 8): a throttling response
/// cuts the rate to 70 % of what was being sent.
pub const BETA: f64 = 0.7;
/// `CubicCalculator._SCALE_CONSTANT` (`throttling.py` line 7): the cubic growth's scale.
pub const SCALE_CONSTANT: f64 = 0.4;
/// `RateClocker._DEFAULT_SMOOTHING` (`botocore/retries/adaptive.py` line 95): the weight of
/// the newest sample in the measured send rate's moving average.
pub const SMOOTHING: f64 = 0.8;
/// `RateClocker._TIME_BUCKET_RANGE` (`adaptive.py` line 97): the measured rate is sampled
/// every half second.
pub const TIME_BUCKET_S: f64 = 0.5;
/// `ClientRateLimiter._MAX_RATE_ADJUST_SCALE` (`adaptive.py` line 39): the fill rate is never
/// set above twice the measured send rate.
pub const MAX_RATE_ADJUST_SCALE: f64 = 2.0;

/// One client instance's limiter: botocore's `ClientRateLimiter` with the `TokenBucket`,
/// `CubicCalculator` and `RateClocker` it owns (`adaptive.py` lines 10-26), as they stand
/// after the client was built at time zero.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimiter {
    /// `ClientRateLimiter._enabled`: set by the first throttling response, never cleared.
    enabled: bool,
    bucket: TokenBucket,
    cubic: Cubic,
    clocker: RateClocker,
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new()
    }
}

impl RateLimiter {
    /// The limiter of a client built at time zero: `register_retry_handler` makes the CUBIC
    /// calculator with `starting_max_rate=0` and the bucket with `max_rate=1`
    /// (`adaptive.py` lines 12-16).
    pub fn new() -> RateLimiter {
        let start = 0.0;
        let mut bucket = TokenBucket {
            fill_rate: 0.0,
            max_capacity: 0.0,
            capacity: 0.0,
            last: None,
        };
        bucket.set_max_rate(start, 1.0);
        RateLimiter {
            enabled: false,
            bucket,
            cubic: Cubic::new(0.0, start),
            clocker: RateClocker::new(start),
        }
    }

    /// Before every send (`on_sending_request`, `adaptive.py` lines 57-59, on botocore's
    /// `before-send` event): `None` when the attempt may go now (the limiter is off, or it
    /// took a token), or the time to wait before asking again (`bucket.py` lines 80-104:
    /// the tokens missing over the fill rate).
    pub fn acquire(&mut self, now: Duration) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        let t = secs_f64(now);
        self.bucket.refill(t);
        if 1.0 <= self.bucket.capacity {
            self.bucket.capacity -= 1.0;
            return None;
        }
        let wait = (1.0 - self.bucket.capacity) / self.bucket.fill_rate;
        // Rounded up to the next nanosecond, so that asking again at the end of the wait
        // finds the token refilled rather than a nanosecond short.
        Some(Duration::from_nanos((wait * 1e9).ceil() as u64).max(Duration::from_nanos(1)))
    }

    /// After every attempt's answer, before the retry decision (`on_receiving_response`,
    /// `adaptive.py` lines 62-89, on botocore's `needs-retry` event, which every response and
    /// every transport error reaches): measure the send rate, move CUBIC, set the bucket's
    /// fill rate. `throttling` is the answer's class as the config classifies it (for
    /// botocore, `ThrottlingErrorDetector`: a throttling error code, or a 429 no modeled
    /// error claims).
    ///
    /// Inlined into the client's one call: the call's own setup and register saves were a
    /// tenth of the work.
    #[inline(always)]
    pub fn on_response(&mut self, now: Duration, throttling: bool) {
        let t = secs_f64(now);
        let measured = self.clocker.record(t);
        let new_rate = if !throttling {
            self.cubic.success_received(t)
        } else {
            self.throttled(t, measured)
        };
        self.bucket
            .set_max_rate(t, py_min(new_rate, MAX_RATE_ADJUST_SCALE * measured));
    }

    /// [`Self::on_response`]'s throttling branch, out of line: it calls `pow` for the cube
    /// root anyway, and kept inline it made every other response's code longer.
    #[cold]
    #[inline(never)]
    fn throttled(&mut self, t: f64, measured: f64) -> f64 {
        let rate_to_use = if !self.enabled {
            measured
        } else {
            py_min(measured, self.bucket.fill_rate)
        };
        self.enabled = true;
        self.cubic.error_received(rate_to_use, t)
    }

    /// True once a throttling response has switched the limiter on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bucket's fill rate in tokens per second (`TokenBucket.max_rate`).
    pub fn fill_rate(&self) -> f64 {
        self.bucket.fill_rate
    }

    /// The bucket's capacity (`TokenBucket.max_capacity`).
    pub fn max_capacity(&self) -> f64 {
        self.bucket.max_capacity
    }

    /// The measured send rate in requests per second (`RateClocker.measured_rate`).
    pub fn measured_rate(&self) -> f64 {
        self.clocker.measured
    }
}

/// `botocore/retries/bucket.py` `TokenBucket` (lines 20-115), times in seconds.
#[derive(Clone, Debug, PartialEq)]
struct TokenBucket {
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last: Option<f64>,
}

impl TokenBucket {
    /// The `max_rate` setter (lines 38-57): refill at the old rate up to now, then the new
    /// rate (at least [`MIN_FILL_RATE`]) and a capacity of that rate, or 1 below one.
    fn set_max_rate(&mut self, t: f64, value: f64) {
        self.refill(t);
        self.fill_rate = py_max(value, MIN_FILL_RATE);
        self.max_capacity = if value >= 1.0 { value } else { 1.0 };
        self.capacity = py_min(self.capacity, self.max_capacity);
    }

    /// `_refill` (lines 106-115).
    fn refill(&mut self, t: f64) {
        let Some(last) = self.last else {
            self.last = Some(t);
            return;
        };
        let fill_amount = (t - last) * self.fill_rate;
        self.capacity = py_min(self.max_capacity, self.capacity + fill_amount);
        self.last = Some(t);
    }
}

/// `d.as_secs_f64()` to the bit (the same sum of the same two conversions), with the whole
/// seconds converted through `i64` when they fit: one instruction on the baseline x86-64,
/// where `u64` to `f64` takes a branchy sequence, on every response and every send.
#[inline(always)]
fn secs_f64(d: Duration) -> f64 {
    let secs = d.as_secs();
    let whole = match i64::try_from(secs) {
        Ok(s) => s as f64,
        Err(_) => secs as f64,
    };
    whole + f64::from(d.subsec_nanos()) / 1e9
}

/// Python's `min(a, b)` as botocore calls it: `b` only when `b < a`, else `a` (ties and a
/// NaN keep the first argument). Equal to `f64::min` for every value the limiter meets, and
/// one `minsd` where `f64::min`'s NaN rule costs four more instructions on every response.
#[inline(always)]
fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// Python's `max(a, b)`: `b` only when `b > a`, else `a` (see [`py_min`]).
#[inline(always)]
fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// `x.powf(3.0)` (Python's `x ** 3`, C's `pow(x, 3.0)`) to the bit, without calling `pow`
/// wherever that is provably the same: `pow` was a twelfth of a simulation with the limiter
/// on, called on every response.
///
/// Why it is the same: `x³` is computed exactly as `p + tail` (two error-free products,
/// then a sum whose error is some 2⁻¹⁰⁰ of `p`), rounded to `r`, and `res` is what
/// separates `r` from `x³`. glibc's `pow` (the ARM optimized-routines one since glibc 2.28,
/// `sysdeps/ieee754/dbl-64/e_pow.c`) has a worst-case error of 0.54 ulp, which its header
/// splits into `ulperr_exp + 1024·ln2·relerr_log·2⁵³`, with `ulperr_exp` 0.511 ulp and
/// `relerr_log` 1.5·2⁻⁶⁸ (both without FMA, the larger). The log's part grows with
/// `|y·log x|`, below 41.6 for `y = 3` and `2⁻²⁰ ≤ |x| < 2²⁰` (the curve's own range, in
/// seconds), so there `pow` returns a double within 0.511 + 41.6·1.5·2⁻¹⁵ < 0.513 ulp of
/// `x³`. When `r` is not a power of two (so `x³` lies in `r`'s binade, where every double
/// is a whole ulp from `r`) and `x³` is within 0.48 ulp of `r`, every other double is more
/// than 0.52 ulp from `x³`: `pow` can only return `r`. Elsewhere (about one value in
/// twenty-five in that range, and every magnitude outside it) `pow` itself is called. A
/// test holds the two equal over millions of values.
#[inline]
fn cube(x: f64) -> f64 {
    cube_without_pow(x).unwrap_or_else(|| x.powf(3.0))
}

/// The rounding error of `p = a·b`: `a·b = p + product_error(a, b, p)` exactly (Dekker's
/// product over Veltkamp's halves, which no rounding touches while nothing overflows or
/// underflows). What `mul_add(a, b, -p)` gives, without the software `fma` that `mul_add`
/// calls on a build for the baseline x86-64 (no FMA instruction assumed).
#[inline(always)]
fn product_error(a: f64, b: f64, p: f64) -> f64 {
    let (ah, al) = halves(a);
    let (bh, bl) = halves(b);
    ((ah * bh - p) + ah * bl + al * bh) + al * bl
}

/// Veltkamp's split: `a = hi + lo` with each half 26 bits or fewer, so their products are
/// exact.
#[inline(always)]
fn halves(a: f64) -> (f64, f64) {
    const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
    let c = SPLIT * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

/// [`cube`] where it needs no `pow` (see there), else `None`.
#[inline]
fn cube_without_pow(x: f64) -> Option<f64> {
    const MANTISSA: u64 = (1 << 52) - 1;
    // 2⁻²⁰ ≤ |x| < 2²⁰: the biased exponent is within 20 of 1023.
    if ((x.to_bits() >> 52) & 0x7ff).wrapping_sub(1003) < 40 {
        let h = x * x;
        let l = product_error(x, x, h); // x² = h + l exactly
        let p = h * x;
        let e = product_error(h, x, p); // h·x = p + e exactly
        let tail = e + l * x;
        let r = p + tail;
        let res = tail - (r - p); // r − p is exact (Sterbenz): x³ − r, nearly
        let bits = r.abs().to_bits();
        if bits & MANTISSA != 0 {
            let ulp = f64::from_bits(bits + 1) - r.abs();
            if res.abs() <= 0.48 * ulp {
                return Some(r);
            }
        }
    }
    None
}

/// `botocore/retries/throttling.py` `CubicCalculator` (lines 6-41).
#[derive(Clone, Debug, PartialEq)]
struct Cubic {
    w_max: f64,
    k: f64,
    last_fail: f64,
}

impl Cubic {
    fn new(starting_max_rate: f64, start_time: f64) -> Cubic {
        let mut c = Cubic {
            w_max: starting_max_rate,
            k: 0.0,
            last_fail: start_time,
        };
        c.k = c.zero_point();
        c
    }

    /// `_calculate_zero_point` (lines 23-26): the time after a throttling response at which
    /// the curve is back at the rate sent then. `powf` as Python's `**` (C `pow`).
    fn zero_point(&self) -> f64 {
        let scaled_value = (self.w_max * (1.0 - BETA)) / SCALE_CONSTANT;
        scaled_value.powf(1.0 / 3.0)
    }

    /// `success_received` (lines 28-31).
    fn success_received(&self, t: f64) -> f64 {
        let dt = t - self.last_fail;
        SCALE_CONSTANT * cube(dt - self.k) + self.w_max
    }

    /// `error_received` (lines 33-41).
    fn error_received(&mut self, current_rate: f64, t: f64) -> f64 {
        self.w_max = current_rate;
        self.k = self.zero_point();
        self.last_fail = t;
        current_rate * BETA
    }
}

/// `botocore/retries/adaptive.py` `RateClocker` (lines 92-128): responses counted per
/// half-second bucket, smoothed.
#[derive(Clone, Debug, PartialEq)]
struct RateClocker {
    measured: f64,
    last_bucket: f64,
    /// `last_bucket + TIME_BUCKET_S`: the first time whose bucket is a later one, so that
    /// a response in the current bucket (nearly every one) needs no `floor`, a library
    /// call on the baseline x86-64 (see [`RateClocker::record`]).
    next_bucket: f64,
    count: f64,
}

impl RateClocker {
    /// Line 108: the first bucket starts at the whole second the client was built in.
    fn new(start: f64) -> RateClocker {
        let last_bucket = start.floor();
        RateClocker {
            measured: 0.0,
            last_bucket,
            next_bucket: last_bucket + TIME_BUCKET_S,
            count: 0.0,
        }
    }

    /// `record` (lines 113-128).
    ///
    /// botocore's test `floor(t·2)/2 > last_bucket` is `t ≥ last_bucket + 0.5`, so the
    /// bucket is computed only when that holds. Why the two are the same to the bit:
    /// `last_bucket` is always a multiple of ½ (a whole second, then a bucket), so
    /// `L = 2·last_bucket` is a whole number and `floor(2t) > L ⟺ 2t ≥ L + 1 ⟺
    /// t ≥ last_bucket + ½`; `t·2`, the division by 2 and `last_bucket + ½` are exact
    /// (a power of two's product, and a sum of multiples of ½ below 2⁵¹). Below it the
    /// bucket botocore computes is not above `last_bucket` and nothing but the count moves.
    #[inline]
    fn record(&mut self, t: f64) -> f64 {
        self.count += 1.0;
        if t < self.next_bucket {
            return self.measured;
        }
        let scale = 1.0 / TIME_BUCKET_S;
        let bucket = (t * scale).floor() / scale;
        if bucket > self.last_bucket {
            let current_rate = self.count / (bucket - self.last_bucket);
            self.measured = (current_rate * SMOOTHING) + (self.measured * (1.0 - SMOOTHING));
            self.count = 0.0;
            self.last_bucket = bucket;
            self.next_bucket = bucket + TIME_BUCKET_S;
        }
        self.measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_draws::unit;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn off_until_the_first_throttling_response() {
        let mut l = RateLimiter::new();
        for i in 0..50 {
            let t = s(0.01 + 0.02 * f64::from(i));
            assert_eq!(l.acquire(t), None);
            l.on_response(t, false);
        }
        assert!(!l.enabled());
        l.on_response(s(1.5), true);
        assert!(l.enabled());
    }

    #[test]
    fn a_throttling_response_cuts_to_beta_times_the_measured_rate() {
        let mut l = RateLimiter::new();
        // 10 responses in [0, 0.5), then one at 0.6: 11 per half second = 22/s sampled.
        for i in 0..10 {
            l.on_response(s(0.04 * f64::from(i)), false);
        }
        l.on_response(s(0.6), true);
        let measured = 11.0 / 0.5 * SMOOTHING;
        assert_eq!(l.measured_rate(), measured);
        assert_eq!(l.fill_rate(), measured * BETA);
        assert_eq!(l.max_capacity(), measured * BETA);
    }

    #[test]
    fn an_empty_bucket_makes_the_sender_wait_one_token_over_the_fill_rate() {
        let mut l = RateLimiter::new();
        l.on_response(s(0.6), true); // measured 1/0.5·0.8 = 1.6/s → rate 1.12, capacity 1.12
        let rate = l.fill_rate();
        assert!((rate - 1.12).abs() < 1e-12, "{rate}");
        // The bucket refilled from 0 at 1/s up to 0.6 s (0.6 tokens): 0.4 tokens missing.
        let wait = l.acquire(s(0.6)).expect("it must wait");
        assert!((wait.as_secs_f64() - 0.4 / rate).abs() < 2e-9, "{wait:?}");
        assert_eq!(
            l.acquire(s(0.6) + wait),
            None,
            "the token is there after the wait"
        );
        assert!(l.acquire(s(0.6) + wait).is_some(), "and taken");
    }

    #[test]
    fn the_rate_never_falls_below_the_minimum_and_capacity_never_below_one() {
        let mut l = RateLimiter::new();
        for i in 0..40 {
            l.on_response(s(0.6 + 0.3 * f64::from(i)), true);
        }
        assert_eq!(l.fill_rate(), MIN_FILL_RATE);
        assert_eq!(l.max_capacity(), 1.0);
    }

    /// `cube` is `powf(x, 3.0)` to the bit, over every scale the curve meets and beyond,
    /// both signs, and the values next to a whole cube (where `x³` sits on a double). It
    /// also counts how often the shortcut is taken, so a guard that always falls back to
    /// `pow` (equal, but no faster) fails here too.
    #[test]
    fn cube_is_pow_three_to_the_bit() {
        let mut n = 0u64;
        let mut shortcut = 0u64;
        let (mut curve, mut curve_shortcut) = (0u64, 0u64);
        let mut check = |x: f64| {
            n += 1;
            let want = x.powf(3.0);
            assert_eq!(cube(x).to_bits(), want.to_bits(), "x = {x:e}");
            if let Some(got) = cube_without_pow(x) {
                shortcut += 1;
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "x = {x:e} ({:#x})",
                    x.to_bits()
                );
            }
        };
        for i in 0..2_000_000u64 {
            let u = unit(11, i);
            let v = unit(12, i);
            // Magnitudes from 1e-120 to 1e120, and the curve's own range (seconds).
            let x = 10f64.powf(240.0 * u - 120.0);
            check(if v < 0.5 { x } else { -x });
            let seconds = (u - 0.5) * 60.0;
            check(seconds);
            curve += 1;
            curve_shortcut += u64::from(cube_without_pow(seconds).is_some());
        }
        for k in 1..5000i64 {
            let x = k as f64;
            for d in [-2i64, -1, 0, 1, 2] {
                let y = f64::from_bits((x.to_bits() as i64 + d) as u64);
                check(y);
                check(-y);
                check(y / 1024.0);
            }
        }
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            0.5,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::INFINITY,
        ] {
            check(x);
        }
        assert!(n > 4_000_000 && shortcut > 0, "{shortcut} of {n}");
        // In the curve's own range about 96 % of values need no `pow` (0.48 of the half
        // ulp either side of a double).
        assert!(
            curve_shortcut * 100 > curve * 94,
            "{curve_shortcut} of {curve} in the curve's range"
        );
    }

    /// botocore's `RateClocker.record` as written (`adaptive.py` lines 113-128), `floor`
    /// on every response: what [`RateClocker::record`] must equal to the bit.
    fn record_as_botocore(c: &mut (f64, f64, f64), t: f64) -> f64 {
        let (measured, last_bucket, count) = c;
        let scale = 1.0 / TIME_BUCKET_S;
        let bucket = (t * scale).floor() / scale;
        *count += 1.0;
        if bucket > *last_bucket {
            let current_rate = *count / (bucket - *last_bucket);
            *measured = (current_rate * SMOOTHING) + (*measured * (1.0 - SMOOTHING));
            *count = 0.0;
            *last_bucket = bucket;
        }
        *measured
    }

    /// The clocker that skips `floor` inside a bucket measures what botocore's does, to the
    /// bit, response by response: times rising in small and large steps, times on and next
    /// to a bucket's edge (k/2 and the doubles either side), equal times, and times going
    /// back (responses of attempts sent earlier), over many streams. It also counts the
    /// responses that crossed a bucket, so a stream that never crosses proves nothing.
    #[test]
    fn the_clocker_without_floor_is_botocores_to_the_bit() {
        let mut crossings = 0u64;
        for stream in 0..400u64 {
            let mut ours = RateClocker::new(0.0);
            let mut theirs = (0.0, 0.0f64.floor(), 0.0);
            let mut t = 0.0f64;
            for i in 0..5_000u64 {
                let u = unit(100 + stream, i);
                let v = unit(1_000 + stream, i);
                t = match (v * 8.0) as u32 {
                    0 => t,
                    1 => (t - u * 0.3).max(0.0),
                    2 => (t * 2.0 + 1.0).floor() / 2.0,
                    3 => f64::from_bits(((t * 2.0).ceil() / 2.0).to_bits().saturating_sub(1)),
                    4 => f64::from_bits(((t * 2.0).ceil() / 2.0).to_bits() + 1),
                    5 => t + u * 2.0,
                    _ => t + u * 0.002 * (stream % 7 + 1) as f64,
                };
                let before = theirs.1;
                let want = record_as_botocore(&mut theirs, t);
                let got = ours.record(t);
                crossings += u64::from(theirs.1 != before);
                assert_eq!(
                    (
                        got.to_bits(),
                        ours.last_bucket.to_bits(),
                        ours.count.to_bits()
                    ),
                    (want.to_bits(), theirs.1.to_bits(), theirs.2.to_bits()),
                    "stream {stream}, response {i}, t = {t:e}"
                );
            }
        }
        assert!(crossings > 100_000, "{crossings}");
    }

    #[test]
    fn successes_grow_the_rate_back_along_the_cubic_curve() {
        let mut l = RateLimiter::new();
        for i in 0..60 {
            l.on_response(s(0.05 * f64::from(i)), i == 30);
        }
        let after_throttle = l.fill_rate();
        for i in 0..60 {
            l.on_response(s(3.0 + 0.05 * f64::from(i)), false);
        }
        assert!(l.fill_rate() > after_throttle);
    }
}
