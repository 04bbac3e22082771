//! The fault timeline and the service-time model as pure, deterministic decisions.
//!
//! Both the live target and the virtual-time simulator must make the *same* fault and
//! service-time decisions for the same `(seed, request id, attempt)`, whatever the timing and
//! whatever order requests happen to arrive in. A sequential RNG cannot give that: the n-th
//! draw would depend on how many requests arrived before, which differs between a real
//! socket run and a simulated one (and between two real runs). So every random choice here is
//! a *hash* of its inputs ([`crate::draws::draw`]): a stateless function of `(seed, request,
//! attempt, salt)`. The salt separates independent choices for the same attempt (does fault 0
//! fire? does fault 1 fire? what is the service time?); `crate::draws` lists them all.
//!
//! No tokio, no clock reads: time comes in as an argument (time since the run's epoch).
//!
//! Requests that carry no request id (external traffic through the fault proxy) get one
//! from a per-server counter (see `crate::server`), so they are still decided
//! deterministically given their arrival order, though that order itself is not reproducible.

use std::time::Duration;

use super::model::{Delivery, Dist, Fault, FaultKind, ServiceModel};
use super::schedule::secs_to_nanos;
use crate::draws::{
    draw_key_seeded, draw_salted, seed_key, SALT_LATENCY_BASE, SALT_SERVICE_1, SALT_SERVICE_2,
};

/// `Duration` from seconds, clamped to `[0, Duration::MAX]` (NaN gives zero).
#[inline]
fn secs(x: f64) -> Duration {
    if x.is_nan() || x <= 0.0 {
        return Duration::ZERO;
    }
    // The standard library's own rounding, below 2⁶⁴ ns (every service time).
    match positive_secs_to_nanos(x) {
        Some(n) => Duration::from_nanos(n),
        None => Duration::try_from_secs_f64(x).unwrap_or(Duration::MAX),
    }
}

/// Seconds above 0 as whole nanoseconds, exactly [`secs_to_nanos`], mostly by one product.
///
/// `y = fl(x · 10⁹)` is within half an ulp of the exact product `P`, under `y · 2⁻⁵²`.
/// Below 2⁴⁰ ns, `t = ⌊y⌋` and `y − t` are exact, and wherever `y`'s fraction is farther
/// than that bound from ½, `P` rounds to the same side as `y`: `t`, or `t + 1` above ½.
/// Elsewhere (a near tie, or beyond 2⁴⁰ ns) the exact integer rounding decides.
#[inline(always)]
fn positive_secs_to_nanos(x: f64) -> Option<u64> {
    let y = x * 1e9;
    if y < (1u64 << 40) as f64 {
        let t = y as u64;
        let frac = y - t as f64;
        if (frac - 0.5).abs() > y * f64::EPSILON {
            return Some(t + u64::from(frac > 0.5));
        }
    }
    secs_to_nanos(x)
}

/// [`secs`] in whole nanoseconds, `u64::MAX` beyond: for a clock kept in nanoseconds,
/// without a `Duration` in between.
#[inline]
fn secs_nanos(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    positive_secs_to_nanos(x).unwrap_or(u64::MAX)
}

/// Φ⁻¹(0.99): the 99th percentile of the standard normal lies 2.3263 σ above the median.
const Z99: f64 = 2.326_347_874;

/// Samples a duration distribution from two uniform draws in `[0, 1)`.
///
/// - constant: the value; uniform: `min + (max − min)·u`;
/// - exponential: `−ln(1 − u)·mean` (inverse CDF; `1 − u` is never 0);
/// - log-normal from its median and p99: `σ = ln(p99/median)/2.3263`, a standard normal
///   `z = √(−2 ln(1 − u))·cos(2π u2)` (Box–Muller), result `median·e^(σz)`.
///
/// `u2` is only used by the log-normal.
pub fn sample(dist: &Dist, u: f64, u2: f64) -> Duration {
    Sampler::new(dist).sample(u, u2)
}

/// A distribution with what [`sample`] derives from its parameters worked out once (the
/// log-normal's σ costs a logarithm), for callers that sample it per request. Samples are
/// bit-for-bit those of [`sample`]: the same expressions, evaluated in the same order.
#[derive(Debug, Clone, Copy)]
pub enum Sampler {
    Constant(Duration),
    /// Bounds in seconds.
    Uniform {
        lo: f64,
        hi: f64,
    },
    /// Mean in seconds.
    Exponential {
        mean: f64,
    },
    /// Median in seconds (above 0) and σ.
    LogNormal {
        median: f64,
        sigma: f64,
    },
}

impl Sampler {
    pub fn new(dist: &Dist) -> Self {
        match dist {
            Dist::Constant { value } => Sampler::Constant(*value),
            Dist::Uniform { min, max } => Sampler::Uniform {
                lo: min.as_secs_f64(),
                hi: max.as_secs_f64(),
            },
            Dist::Exponential { mean } => Sampler::Exponential {
                mean: mean.as_secs_f64(),
            },
            Dist::LogNormal { median, p99 } => {
                let m = median.as_secs_f64();
                if m <= 0.0 {
                    return Sampler::Constant(Duration::ZERO);
                }
                Sampler::LogNormal {
                    median: m,
                    sigma: (p99.as_secs_f64() / m).ln().max(0.0) / Z99,
                }
            }
        }
    }

    /// See [`sample`].
    #[inline]
    pub fn sample(&self, u: f64, u2: f64) -> Duration {
        match self.seconds(u, u2) {
            Ok(d) => d,
            Err(x) => secs(x),
        }
    }

    /// [`Self::sample`] in whole nanoseconds, `u64::MAX` beyond (as a nanosecond clock
    /// saturates the `Duration`).
    #[inline]
    pub fn sample_nanos(&self, u: f64, u2: f64) -> u64 {
        match self.seconds(u, u2) {
            Ok(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Err(x) => secs_nanos(x),
        }
    }

    /// The sample: a constant as it is (`Ok`), any other in seconds (`Err`), not yet rounded.
    #[inline(always)]
    fn seconds(&self, u: f64, u2: f64) -> Result<Duration, f64> {
        match *self {
            Sampler::Constant(d) => Ok(d),
            Sampler::Uniform { lo, hi } => Err(lo + (hi - lo) * u),
            Sampler::Exponential { mean } => Err(-(1.0 - u).ln() * mean),
            Sampler::LogNormal { median, sigma } => {
                let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                Err(median * (sigma * z).exp())
            }
        }
    }
}

/// What happens to one arrival, apart from added latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// Normal service through the service model.
    Serve,
    /// Close the connection without any response.
    Reset,
    /// Never answer, until the client gives up.
    Hang,
    /// Answer `status` at once, without service.
    Status {
        status: u16,
        retry_after: Option<Duration>,
        error_code: Option<&'a str>,
    },
    /// Answer a gRPC call at once with `status` (trailers-only), without service.
    GrpcStatus {
        status: crate::policy::GrpcStatus,
        pushback: Option<Duration>,
    },
    /// Serve (the side effect happens), then lose the response: no answer, or `status`.
    LostResponse { status: Option<u16> },
    /// Serve, then deliver the response the way a connection-level fault says.
    Deliver(Delivery),
}

/// The decision for one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultVerdict<'a> {
    /// Sum of the delays of the active latency faults that fired, applied before anything
    /// else (before queueing for service, or before the terminal action).
    pub extra_latency: Duration,
    pub action: Action<'a>,
    /// Index (in file order) of the fault that chose `action`; `None` for plain service.
    pub fault: Option<usize>,
}

/// The fault windows of one run plus the seed of their draws.
#[derive(Debug, Clone)]
pub struct FaultTimeline {
    faults: Vec<Fault>,
    seed: u64,
    /// `seed`'s share of every draw key ([`seed_key`]), worked out once.
    seed_key: u64,
    active: ActiveIndex,
}

/// Which per-request faults (all but capacity) are active between consecutive window
/// edges, in file order. A recorded fault series expands into tens of thousands of windows;
/// each decision then looks at the few windows covering its instant, not at all of them.
#[derive(Debug, Clone, Default)]
struct ActiveIndex {
    /// Every window's start and end, sorted, each once.
    edges: Vec<Duration>,
    /// `ids[spans[k]..spans[k + 1]]`: the faults covering `[edges[k], edges[k + 1])`.
    spans: Vec<u32>,
    ids: Vec<u32>,
}

impl ActiveIndex {
    fn new(faults: &[Fault]) -> ActiveIndex {
        let per_request = || {
            faults
                .iter()
                .enumerate()
                .filter(|(_, f)| !matches!(f.kind, FaultKind::Capacity { .. }))
        };
        let mut edges: Vec<Duration> = per_request()
            .flat_map(|(_, f)| [f.at, f.at + f.length])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let intervals = edges.len().saturating_sub(1);
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); intervals];
        // In file order, so each interval's list is too.
        for (i, f) in per_request() {
            let from = edges.partition_point(|&e| e < f.at);
            let to = edges.partition_point(|&e| e < f.at + f.length);
            for list in &mut lists[from..to] {
                list.push(i as u32);
            }
        }
        let mut spans = Vec::with_capacity(intervals + 1);
        let mut ids = Vec::new();
        spans.push(0);
        for list in lists {
            ids.extend(list);
            spans.push(ids.len() as u32);
        }
        ActiveIndex { edges, spans, ids }
    }

    /// The faults whose window covers `t`, in file order.
    fn at(&self, t: Duration) -> &[u32] {
        let k = self.edges.partition_point(|&e| e <= t);
        if k == 0 || k >= self.edges.len() {
            return &[];
        }
        &self.ids[self.spans[k - 1] as usize..self.spans[k] as usize]
    }
}

impl FaultTimeline {
    pub fn new(faults: Vec<Fault>, seed: u64) -> Self {
        let active = ActiveIndex::new(&faults);
        FaultTimeline {
            faults,
            seed,
            seed_key: seed_key(seed),
            active,
        }
    }

    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Decides what happens to `(request, attempt)` arriving at run time `t` on `path`.
    ///
    /// A fault applies when its window `[at, at + for)` covers `t`, its `path` (if any) is a
    /// prefix of `path`, and it *fires*: `draw(seed, request, attempt, index) < probability`
    /// (salt = the fault's index in file order, so each fault fires independently).
    ///
    /// Latency faults that fire all add up. Among the terminal faults (status, reset, hang,
    /// lost-response, and the connection-level bandwidth, slow-close and slicer, which decide
    /// how the response travels) that fire, **the first in file order wins**; later ones are
    /// ignored.
    /// Capacity faults never fire per request: they act on the slots (see [`capacity_at`]).
    ///
    /// [`capacity_at`]: FaultTimeline::capacity_at
    pub fn decide(&self, t: Duration, path: &str, request: u64, attempt: u32) -> FaultVerdict<'_> {
        let mut verdict = FaultVerdict {
            extra_latency: Duration::ZERO,
            action: Action::Serve,
            fault: None,
        };
        let mut key = None;
        for &i in self.active.at(t) {
            let (i, f) = (i as usize, &self.faults[i as usize]);
            debug_assert!(f.active_at(t) && !matches!(f.kind, FaultKind::Capacity { .. }));
            if let Some(prefix) = &f.path {
                if !path.starts_with(prefix.as_str()) {
                    continue;
                }
            }
            let terminal = !matches!(f.kind, FaultKind::Latency { .. });
            if terminal && verdict.fault.is_some() {
                continue; // an earlier terminal fault already won; skip the draw
            }
            // A draw is below 1 always: a certain fault needs none (nor the key).
            let mut key = || *key.get_or_insert_with(|| self.draw_key(request, attempt));
            if f.probability < 1.0 && draw_salted(key(), i as u64) >= f.probability {
                continue;
            }
            let action = match &f.kind {
                FaultKind::Latency { add } => {
                    let salt = SALT_LATENCY_BASE + 2 * i as u64;
                    let key = key();
                    let u = draw_salted(key, salt);
                    let u2 = draw_salted(key, salt + 1);
                    verdict.extra_latency =
                        verdict.extra_latency.saturating_add(sample(add, u, u2));
                    continue;
                }
                FaultKind::Status {
                    status,
                    retry_after,
                    error_code,
                    ..
                } => Action::Status {
                    status: *status,
                    retry_after: *retry_after,
                    error_code: error_code.as_deref(),
                },
                FaultKind::GrpcStatus { status, pushback } => Action::GrpcStatus {
                    status: *status,
                    pushback: *pushback,
                },
                FaultKind::Reset => Action::Reset,
                FaultKind::Hang => Action::Hang,
                FaultKind::LostResponse { status } => Action::LostResponse { status: *status },
                FaultKind::Bandwidth { .. }
                | FaultKind::SlowClose { .. }
                | FaultKind::Slicer { .. } => match f.kind.delivery() {
                    Some(d) => Action::Deliver(d),
                    None => unreachable!("connection-level kinds have a delivery"),
                },
                FaultKind::Capacity { .. } => unreachable!("skipped above"),
            };
            verdict.action = action;
            verdict.fault = Some(i);
        }
        verdict
    }

    /// The concurrency slots in force at run time `t`: the active capacity fault that started
    /// last wins (on equal start, the later one in file order); `base` when none is active.
    /// Capacity faults ignore `probability` and `path`: slots are shared by all requests.
    pub fn capacity_at(&self, t: Duration, base: u32) -> u32 {
        let mut best: Option<(Duration, u32)> = None;
        for f in &self.faults {
            if let FaultKind::Capacity { concurrency } = f.kind {
                if f.active_at(t) && best.is_none_or(|(at, _)| f.at >= at) {
                    best = Some((f.at, concurrency));
                }
            }
        }
        best.map_or(base, |(_, c)| c)
    }

    /// Run times at which the capacity in force may change (starts and ends of capacity
    /// windows), sorted and deduplicated.
    pub fn capacity_changes(&self) -> Vec<Duration> {
        let mut v: Vec<Duration> = self
            .faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Capacity { .. }))
            .flat_map(|f| [f.at, f.at.saturating_add(f.length)])
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The service time of `(request, attempt)` under `model`, from two draws with fixed
    /// salts ([`SALT_SERVICE_1`], [`SALT_SERVICE_2`]).
    pub fn service_time(&self, model: &ServiceModel, request: u64, attempt: u32) -> Duration {
        self.service_time_with(&Sampler::new(&model.service_time), request, attempt)
    }

    /// [`service_time`](FaultTimeline::service_time) with the model's distribution
    /// prepared once.
    #[inline]
    pub fn service_time_with(&self, sampler: &Sampler, request: u64, attempt: u32) -> Duration {
        let key = self.draw_key(request, attempt);
        sampler.sample(
            draw_salted(key, SALT_SERVICE_1),
            draw_salted(key, SALT_SERVICE_2),
        )
    }

    /// [`service_time_with`](FaultTimeline::service_time_with) in whole nanoseconds,
    /// `u64::MAX` beyond: the same value for a clock kept in nanoseconds, without a
    /// `Duration` in between.
    #[inline]
    pub fn service_nanos_with(&self, sampler: &Sampler, request: u64, attempt: u32) -> u64 {
        let key = self.draw_key(request, attempt);
        sampler.sample_nanos(
            draw_salted(key, SALT_SERVICE_1),
            draw_salted(key, SALT_SERVICE_2),
        )
    }

    /// `draw_key(seed, request, attempt)` from the seed's share worked out once.
    #[inline(always)]
    fn draw_key(&self, request: u64, attempt: u32) -> u64 {
        draw_key_seeded(self.seed_key, request, attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draws::draw;
    use proptest::prelude::*;

    /// What [`secs`] was: the standard library's conversion, clamped.
    fn std_secs(x: f64) -> Duration {
        if x.is_nan() || x <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(x).unwrap_or(Duration::MAX)
    }

    #[test]
    fn seconds_round_as_the_standard_library() {
        let cases = crate::scenario::schedule::awkward_seconds();
        for &x in &cases {
            let want = std_secs(x);
            assert_eq!(secs(x), want, "x = {x:e}");
            let nanos = u64::try_from(want.as_nanos()).unwrap_or(u64::MAX);
            assert_eq!(secs_nanos(x), nanos, "x = {x:e}");
        }
    }

    proptest! {
        #[test]
        fn seconds_round_as_the_standard_library_anywhere(bits in any::<u64>(),
                                                          ms in 0.0f64..100_000.0) {
            for x in [f64::from_bits(bits), f64::from_bits(bits >> 2), ms / 1000.0] {
                let want = std_secs(x);
                prop_assert_eq!(secs(x), want);
                prop_assert_eq!(secs_nanos(x), u64::try_from(want.as_nanos()).unwrap_or(u64::MAX));
            }
        }

        #[test]
        fn samples_in_nanoseconds_are_the_samples(u in 0.0f64..1.0, u2 in 0.0f64..1.0, k in 0usize..4) {
            let ms = Duration::from_millis;
            let dist = [
                Dist::Constant { value: ms(3) },
                Dist::Uniform { min: ms(1), max: ms(9) },
                Dist::Exponential { mean: ms(2) },
                Dist::LogNormal { median: ms(2), p99: ms(10) },
            ][k].clone();
            let s = Sampler::new(&dist);
            prop_assert_eq!(s.sample_nanos(u, u2), s.sample(u, u2).as_nanos() as u64);
            prop_assert_eq!(s.sample(u, u2), sample(&dist, u, u2));
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn fault(at: u64, len: u64, p: f64, kind: FaultKind) -> Fault {
        Fault {
            at: ms(at),
            length: ms(len),
            path: None,
            probability: p,
            kind,
        }
    }

    fn status(s: u16) -> FaultKind {
        FaultKind::Status {
            status: s,
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
            error_code: None,
        }
    }

    /// The index finds exactly the windows a scan of all of them finds, in file order, for
    /// overlapping, touching and nested windows and instants on and between their edges.
    #[test]
    fn the_active_index_agrees_with_a_scan_of_every_window() {
        let mut x: u64 = 7;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let faults: Vec<Fault> = (0..300)
            .map(|k| {
                let kind = if k % 7 == 0 {
                    FaultKind::Capacity { concurrency: 2 }
                } else {
                    status(503)
                };
                fault(next(5_000), next(800), 0.5, kind)
            })
            .collect();
        let tl = FaultTimeline::new(faults.clone(), 1);
        for t in (0..6_000).chain(faults.iter().flat_map(|f| {
            let (a, b) = (
                f.at.as_millis() as u64,
                (f.at + f.length).as_millis() as u64,
            );
            [a, b, a.saturating_sub(1), b + 1]
        })) {
            let t = ms(t);
            let scan: Vec<u32> = faults
                .iter()
                .enumerate()
                .filter(|(_, f)| !matches!(f.kind, FaultKind::Capacity { .. }) && f.active_at(t))
                .map(|(i, _)| i as u32)
                .collect();
            assert_eq!(tl.active.at(t), scan.as_slice(), "t = {t:?}");
        }
    }

    #[test]
    fn same_inputs_same_verdict() {
        let tl = FaultTimeline::new(
            vec![
                fault(0, 10_000, 0.5, status(503)),
                fault(0, 10_000, 0.5, FaultKind::Reset),
                fault(
                    0,
                    10_000,
                    0.5,
                    FaultKind::Latency {
                        add: Dist::Exponential { mean: ms(50) },
                    },
                ),
            ],
            7,
        );
        let other = tl.clone();
        let mut kinds = std::collections::HashSet::new();
        for r in 0..1000 {
            for a in 1..4 {
                let v = tl.decide(ms(5_000), "/x", r, a);
                assert_eq!(v, other.decide(ms(5_000), "/x", r, a));
                // Time inside the same window does not change the draw.
                assert_eq!(v, tl.decide(ms(9_999), "/x", r, a));
                kinds.insert(format!("{:?}", v.action));
            }
        }
        assert_eq!(kinds.len(), 3, "serve, 503 and reset all occur: {kinds:?}");
    }

    #[test]
    fn probability_is_honoured() {
        let tl = FaultTimeline::new(vec![fault(0, 1_000, 0.3, status(503))], 99);
        let n = 100_000;
        let hits = (0..n)
            .filter(|&r| tl.decide(ms(1), "/", r, 1).action != Action::Serve)
            .count();
        let frac = hits as f64 / n as f64;
        assert!((frac - 0.3).abs() < 0.01, "fired {frac}");
        // Attempts of the same request are drawn independently.
        let hits2 = (0..n)
            .filter(|&r| tl.decide(ms(1), "/", 0, r as u32 + 1).action != Action::Serve)
            .count();
        assert!((hits2 as f64 / n as f64 - 0.3).abs() < 0.01);
    }

    #[test]
    fn windows_are_half_open_and_path_scoped() {
        let mut f = fault(100, 200, 1.0, status(503));
        f.path = Some("/api".into());
        let tl = FaultTimeline::new(vec![f], 1);
        let hit = |t: u64, p: &str| tl.decide(ms(t), p, 1, 1).action != Action::Serve;
        assert!(!hit(99, "/api"));
        assert!(hit(100, "/api"));
        assert!(hit(299, "/api"));
        assert!(!hit(300, "/api"));
        assert!(!hit(150, "/other"));
        assert!(hit(150, "/api/v1"));
    }

    #[test]
    fn first_terminal_fault_in_file_order_wins_and_latencies_add() {
        let lat = |v| FaultKind::Latency {
            add: Dist::Constant { value: ms(v) },
        };
        let tl = FaultTimeline::new(
            vec![
                fault(0, 1_000, 1.0, lat(10)),
                fault(0, 1_000, 1.0, FaultKind::Hang),
                fault(0, 1_000, 1.0, status(500)),
                fault(0, 1_000, 1.0, lat(5)),
            ],
            3,
        );
        let v = tl.decide(ms(10), "/", 1, 1);
        assert_eq!(v.action, Action::Hang);
        assert_eq!(v.fault, Some(1));
        assert_eq!(v.extra_latency, ms(15));
        // After the windows: plain service.
        let v = tl.decide(ms(1_000), "/", 1, 1);
        assert_eq!(v.action, Action::Serve);
        assert_eq!(v.extra_latency, Duration::ZERO);
        assert_eq!(v.fault, None);
    }

    #[test]
    fn status_carries_retry_after_and_error_code() {
        let tl = FaultTimeline::new(
            vec![fault(
                0,
                1_000,
                1.0,
                FaultKind::Status {
                    status: 429,
                    retry_after: Some(Duration::from_secs(2)),
                    retry_after_ms: None,
                    should_retry: None,
                    error_code: Some("ThrottlingException".into()),
                },
            )],
            3,
        );
        assert_eq!(
            tl.decide(ms(0), "/", 1, 1).action,
            Action::Status {
                status: 429,
                retry_after: Some(Duration::from_secs(2)),
                error_code: Some("ThrottlingException"),
            }
        );
    }

    #[test]
    fn capacity_changes_over_time() {
        let cap = |c| FaultKind::Capacity { concurrency: c };
        let tl = FaultTimeline::new(
            vec![
                fault(100, 400, 1.0, cap(10)), // [100, 500)
                fault(200, 100, 1.0, cap(2)),  // [200, 300), started later: wins
            ],
            1,
        );
        assert_eq!(tl.capacity_at(ms(0), 50), 50);
        assert_eq!(tl.capacity_at(ms(100), 50), 10);
        assert_eq!(tl.capacity_at(ms(200), 50), 2);
        assert_eq!(tl.capacity_at(ms(299), 50), 2);
        assert_eq!(tl.capacity_at(ms(300), 50), 10);
        assert_eq!(tl.capacity_at(ms(500), 50), 50);
        assert_eq!(
            tl.capacity_changes(),
            vec![ms(100), ms(200), ms(300), ms(500)]
        );
        // Capacity faults never change the per-request verdict.
        assert_eq!(tl.decide(ms(250), "/", 1, 1).action, Action::Serve);
    }

    fn mean_of(dist: &Dist, n: u64) -> (f64, Vec<f64>) {
        let mut v: Vec<f64> = (0..n)
            .map(|r| sample(dist, draw(5, r, 1, 1), draw(5, r, 1, 2)).as_secs_f64())
            .collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (mean, v)
    }

    #[test]
    fn exponential_mean_within_2_percent() {
        let (mean, _) = mean_of(&Dist::Exponential { mean: ms(100) }, 100_000);
        assert!((mean / 0.1 - 1.0).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn lognormal_median_and_p99_within_2_percent() {
        let (_, sorted) = mean_of(
            &Dist::LogNormal {
                median: ms(20),
                p99: ms(200),
            },
            100_000,
        );
        let median = sorted[sorted.len() / 2];
        assert!((median / 0.020 - 1.0).abs() < 0.02, "median {median}");
        let p99 = sorted[sorted.len() * 99 / 100];
        assert!((p99 / 0.200 - 1.0).abs() < 0.05, "p99 {p99}");
    }

    #[test]
    fn constant_and_uniform() {
        assert_eq!(sample(&Dist::Constant { value: ms(7) }, 0.9, 0.1), ms(7));
        let u = Dist::Uniform {
            min: ms(10),
            max: ms(20),
        };
        assert_eq!(sample(&u, 0.0, 0.0), ms(10));
        assert_eq!(sample(&u, 0.5, 0.0), ms(15));
        let (mean, sorted) = mean_of(&u, 10_000);
        assert!((mean - 0.015).abs() < 0.0003);
        assert!(sorted[0] >= 0.010 && *sorted.last().unwrap() < 0.020);
    }

    #[test]
    fn service_time_is_deterministic_per_attempt() {
        let tl = FaultTimeline::new(vec![], 11);
        let model = ServiceModel {
            service_time: Dist::Exponential { mean: ms(10) },
            ..ServiceModel::default()
        };
        assert_eq!(tl.service_time(&model, 3, 1), tl.service_time(&model, 3, 1));
        assert_ne!(tl.service_time(&model, 3, 1), tl.service_time(&model, 3, 2));
    }
}
