//! Drain thresholds: the failure rate above which a config's retry budget drains on average.
//!
//! Model (the one botocore's `RetryQuotaChecker` and smithy-rs's `StandardRetryStrategy`
//! follow per request): every attempt fails independently with probability `p`, all
//! failures of one kind (transient, throttling or timeout); `N` = max attempts. For each kind
//! the report gives
//! * `closed_form`: the root in (0, 1) of the expected budget drift per request `E(p)`, found
//!   by bisection;
//! * `monte_carlo`: where the mean drift measured by driving the **real** [`RetryClient`] with
//!   seeded random outcomes crosses zero (coarse sweep to bracket the crossing, then a
//!   least-squares line through a fine grid around it);
//! * `cost`: what one retry of that kind costs the budget.
//!
//! Drift per request, by budget kind:
//! * AWS quota (first-try success +inc, last acquisition refunded, final attempt free):
//!   `E(p) = inc·(1 − p) − c·(p² + p³ + … + p^N)`. c = 14, N = 3 → 0.2149; c = 5 → 0.3207;
//!   c = 10 → 0.2460.
//! * gRPC retryThrottling (−1 per failed attempt, +r per successful RPC, while retries are
//!   enabled): `E(p) = r·(1 − p^N) − (p + p² + … + p^N)`, whose root is `r/(1 + r)` for every
//!   N ≥ 2 (reference T11): 0.0909 for r = 0.1.
//! * ratio budget (ignoring the `min_per_sec` reserve, i.e. for traffic ≫ min_per_sec):
//!   supply `ratio × deposits` against demand `p + p² + … + p^(N−1)` retries per request;
//!   deposits per request are 1 (deposit on request) or `1 − p^N` (deposit on success):
//!   `E(p) = ratio·d(p) − (p + … + p^(N−1))`. Its Monte Carlo measures the same demand
//!   (retries granted + refused) through the real client at 100 000 requests/s of virtual time.
//! * Envoy: not applicable — a limit on concurrent retries has no balance to drain.
//! * no budget: not applicable.
//!
//! The Monte Carlo removes the config's deadline, per-try timeout, breaker, cost caps and
//! Retry-After handling (they are not part of the budget's balance), starts the bucket
//! mid-range, resets it to mid-range when it nears a bound, and widens AWS/gRPC buckets so a
//! single request can never hit a bound (the root does not depend on capacity).

use super::budget::{AwsQuotaConfig, GrpcThrottlingConfig, RatioConfig};
use super::budget::{BudgetConfig, DepositOn};
use super::client::{Decision, GiveUpReason, Now, Permit, RetryClient};
use super::config::RetryConfig;
use super::grpc_status::GrpcStatus;
use super::outcome::{AttemptOutcome, OutcomeClass, Response, TransportError};
use super::retry_after::RetryAfterConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::time::Duration;

/// The threshold of one failure kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindThreshold {
    /// Root of the closed-form drift, None when not applicable.
    pub closed_form: Option<f64>,
    /// Zero crossing of the Monte-Carlo drift, None when not applicable or not found.
    pub monte_carlo: Option<f64>,
    /// Budget cost of one retry of this kind (tokens, or withdrawals for ratio budgets).
    pub cost: Option<f64>,
    /// The drift formula used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formula: Option<String>,
    /// Why a value is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl KindThreshold {
    fn none(reason: impl Into<String>) -> Self {
        KindThreshold {
            closed_form: None,
            monte_carlo: None,
            cost: None,
            formula: None,
            reason: Some(reason.into()),
        }
    }
}

/// Thresholds of one config: what `stormrig thresholds` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdReport {
    /// Config name.
    pub config: String,
    /// Budget kind (`none`, `ratio`, `aws-quota`, `grpc-throttling`, `envoy`).
    pub budget: String,
    /// Max attempts used (the override or the config's).
    pub max_attempts: u32,
    /// Seed of the Monte Carlo.
    pub seed: u64,
    /// Requests simulated per fine-grid point.
    pub requests_per_point: usize,
    /// Transient (non-timeout) failures.
    pub transient: KindThreshold,
    /// Throttling failures.
    pub throttling: KindThreshold,
    /// Connect/read/per-try timeouts.
    pub timeout: KindThreshold,
    /// How to read the numbers.
    pub model: String,
}

/// Monte-Carlo effort.
#[derive(Clone, Copy, Debug)]
pub struct McOptions {
    /// Requests per point of the coarse bracketing sweep.
    pub coarse_requests: usize,
    /// Requests per point of the fine grid.
    pub requests_per_point: usize,
}

impl Default for McOptions {
    fn default() -> Self {
        McOptions {
            coarse_requests: 2_000,
            requests_per_point: 20_000,
        }
    }
}

/// Compute the thresholds with the default Monte-Carlo effort.
pub fn compute(config: &RetryConfig, max_attempts: Option<u32>, seed: u64) -> ThresholdReport {
    compute_with(config, max_attempts, seed, McOptions::default())
}

/// Root of a decreasing-through-zero function on (lo, hi) by bisection (60 halvings), None when
/// `f(lo)` and `f(hi)` have the same sign.
pub fn bisect(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> Option<f64> {
    let (mut a, mut b) = (lo, hi);
    let (fa, fb) = (f(a), f(b));
    if fa.is_nan() || fb.is_nan() || fa.signum() == fb.signum() {
        return None;
    }
    for _ in 0..60 {
        let m = 0.5 * (a + b);
        if f(m).signum() == fa.signum() {
            a = m;
        } else {
            b = m;
        }
    }
    Some(0.5 * (a + b))
}

/// `p^from + … + p^to` (0 when `to < from`).
fn psum(p: f64, from: u32, to: u32) -> f64 {
    (from..=to).map(|k| p.powi(k as i32)).sum()
}

/// AWS quota drift: `inc·(1 − p) − c·(p² + … + p^N)`.
pub fn aws_drift(p: f64, cost: f64, inc: f64, n: u32) -> f64 {
    inc * (1.0 - p) - cost * psum(p, 2, n)
}

/// gRPC throttle drift: `r·(1 − p^N) − (p + … + p^N)`.
pub fn grpc_drift(p: f64, ratio: f64, n: u32) -> f64 {
    ratio * (1.0 - p.powi(n as i32)) - psum(p, 1, n)
}

/// Ratio budget drift: `ratio·d(p) − (p + … + p^(N−1))`, `d = 1` or `1 − p^N`.
pub fn ratio_drift(p: f64, ratio: f64, n: u32, deposit: DepositOn) -> f64 {
    let d = match deposit {
        DepositOn::Request => 1.0,
        DepositOn::Success => 1.0 - p.powi(n as i32),
    };
    ratio * d - psum(p, 1, n.saturating_sub(1))
}

/// A failure outcome the config classifies as `kind`, if it has one.
fn failure_for(config: &RetryConfig, kind: Kind) -> Option<AttemptOutcome<'_>> {
    let r = |status: u16, code: Option<&'static str>| {
        AttemptOutcome::Response(Response {
            status,
            error_code: code,
            ..Response::default()
        })
    };
    let grpc = |g: GrpcStatus| {
        AttemptOutcome::Response(Response {
            status: 200,
            grpc_status: Some(g),
            ..Response::default()
        })
    };
    let mut cands: Vec<AttemptOutcome<'_>> = Vec::new();
    match kind {
        Kind::Transient => {
            for s in [503, 500, 502, 504, 509, 408] {
                cands.push(r(s, None));
            }
            for c in &config.retry_on.transient_codes {
                cands.push(AttemptOutcome::Response(Response {
                    status: 400,
                    error_code: Some(c.as_str()),
                    ..Response::default()
                }));
            }
            // Failures of requests that reached the server. A refused connection never did:
            // a config that requeues only those (finagle) has no transient threshold.
            for t in [TransportError::Reset, TransportError::Protocol] {
                cands.push(AttemptOutcome::Transport(t));
            }
            // A gRPC call fails with HTTP 200 and its status in the trailers: a config
            // retrying only gRPC statuses (`retryableStatusCodes`) drains on those.
            for g in &config.retry_on.grpc_statuses {
                cands.push(grpc(*g));
            }
        }
        Kind::Throttling => {
            cands.push(r(429, None));
            for c in &config.retry_on.throttling_codes {
                cands.push(AttemptOutcome::Response(Response {
                    status: 400,
                    error_code: Some(c.as_str()),
                    ..Response::default()
                }));
            }
            for g in &config.retry_on.grpc_throttling_statuses {
                cands.push(grpc(*g));
            }
        }
        Kind::Timeout => {
            for t in [
                TransportError::ReadTimeout,
                TransportError::PerTryTimeout,
                TransportError::ConnectTimeout,
            ] {
                cands.push(AttemptOutcome::Transport(t));
            }
        }
    }
    let want = match kind {
        Kind::Throttling => OutcomeClass::Throttling,
        _ => OutcomeClass::Transient,
    };
    cands.into_iter().find(|o| {
        let c = config.retry_on.classify(o);
        c.class == want && c.timeout == (kind == Kind::Timeout)
    })
}

/// The config the Monte Carlo drives: only the budget's bookkeeping left, buckets widened.
fn mc_config(config: &RetryConfig, n: u32) -> RetryConfig {
    let mut c = config.clone();
    c.max_attempts = n;
    c.deadline = None;
    c.per_try_timeout = None;
    c.breaker = None;
    c.cost = None;
    c.retry_after = RetryAfterConfig::default();
    match &mut c.budget {
        BudgetConfig::AwsQuota(AwsQuotaConfig {
            capacity,
            transient_cost,
            throttling_cost,
            timeout_cost,
            ..
        }) => {
            let maxc = transient_cost.max(*throttling_cost).max(*timeout_cost);
            *capacity = capacity.max(200.0 * n as f64 * maxc);
        }
        BudgetConfig::GrpcThrottling(GrpcThrottlingConfig { max_tokens, .. }) => {
            *max_tokens = 1000.0
        }
        _ => {}
    }
    c
}

/// Mean drift per request at failure probability `p` through the real client.
fn mc_drift(
    cfg: &RetryConfig,
    failure: &AttemptOutcome<'_>,
    p: f64,
    requests: usize,
    seed: u64,
) -> f64 {
    let mut client = RetryClient::new(cfg);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ok = AttemptOutcome::Response(Response::status(200));
    let (lo_b, hi_b) = client.budget_bounds().unwrap_or((0.0, 0.0));
    let ratio_mode = match cfg.budget {
        BudgetConfig::Ratio(RatioConfig { ratio, deposit, .. }) => Some((ratio, deposit)),
        _ => None,
    };
    // Mid-range of the region where retries are allowed: gRPC only retries above max/2.
    let (mid, band_lo, band_hi) = match cfg.budget {
        BudgetConfig::GrpcThrottling(_) => (0.75 * hi_b, 0.6 * hi_b, 0.9 * hi_b),
        _ => (
            0.5 * (lo_b + hi_b),
            lo_b + 0.2 * (hi_b - lo_b),
            lo_b + 0.8 * (hi_b - lo_b),
        ),
    };
    if ratio_mode.is_none() {
        client.set_budget_level(mid);
    }
    let step = Duration::from_micros(10); // 100 000 requests/s of virtual time
    let mut t = Duration::ZERO;
    let mut drift = 0.0;
    for _ in 0..requests {
        t += step;
        let before = client.budget_level().unwrap_or(0.0);
        let mut now = Now::virtual_at(t);
        let mut req = client.start(now, "GET", None);
        let mut wanted = 0u32;
        let mut succeeded = false;
        while let Permit::Send { .. } = client.before_attempt(now, &mut req) {
            let outcome = if rng.gen::<f64>() < p { failure } else { &ok };
            match client.on_outcome(now, &mut req, outcome, &mut rng) {
                Decision::Retry { after, .. } => {
                    wanted += 1;
                    now = Now::virtual_at(now.mono + after);
                }
                Decision::GiveUp {
                    reason: GiveUpReason::BudgetRefused,
                    ..
                } => {
                    wanted += 1;
                    break;
                }
                Decision::Success => {
                    succeeded = true;
                    break;
                }
                Decision::GiveUp { .. } => break,
            }
        }
        client.finish(now, req);
        drift += match ratio_mode {
            Some((ratio, deposit)) => {
                let d = match deposit {
                    DepositOn::Request => 1.0,
                    DepositOn::Success => succeeded as u32 as f64,
                };
                ratio * d - wanted as f64
            }
            None => {
                let after = client.budget_level().unwrap_or(0.0);
                if after < band_lo || after > band_hi {
                    client.set_budget_level(mid);
                }
                after - before
            }
        };
    }
    drift / requests as f64
}

/// Find the zero crossing of the Monte-Carlo drift.
fn mc_root(
    cfg: &RetryConfig,
    failure: &AttemptOutcome<'_>,
    seed: u64,
    opts: McOptions,
) -> Option<f64> {
    let coarse: Vec<(f64, f64)> = (0..25)
        .map(|i| {
            let p = 0.02 + 0.04 * i as f64;
            (
                p,
                mc_drift(cfg, failure, p, opts.coarse_requests, seed ^ (i as u64 + 1)),
            )
        })
        .collect();
    let w = coarse.windows(2).find(|w| w[0].1 > 0.0 && w[1].1 <= 0.0)?;
    let ((p0, d0), (p1, d1)) = (w[0], w[1]);
    let guess = p0 + (p1 - p0) * d0 / (d0 - d1);
    // Fine grid around the guess; common random numbers (same seed) across its points.
    let pts: Vec<(f64, f64)> = (-4..=4)
        .map(|k| (guess + 0.01 * k as f64).clamp(0.001, 0.999))
        .map(|p| {
            (
                p,
                mc_drift(
                    cfg,
                    failure,
                    p,
                    opts.requests_per_point,
                    seed.wrapping_add(0x9e37),
                ),
            )
        })
        .collect();
    let n = pts.len() as f64;
    let mx = pts.iter().map(|x| x.0).sum::<f64>() / n;
    let my = pts.iter().map(|x| x.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|x| (x.0 - mx) * (x.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|x| (x.0 - mx).powi(2)).sum();
    if sxx == 0.0 || sxy >= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((mx - my / slope).clamp(0.0, 1.0))
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// A failure class a drain threshold is about.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Transient,
    Throttling,
    Timeout,
}

impl Kind {
    /// Every class, in report order.
    pub const ALL: [Kind; 3] = [Kind::Transient, Kind::Throttling, Kind::Timeout];

    /// The name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Transient => "transient",
            Kind::Throttling => "throttling",
            Kind::Timeout => "timeout",
        }
    }
}

/// The closed form of one class: its cost, drift formula and root, or why there is none.
/// `stormrig thresholds` and every run's summary take their thresholds from here.
pub fn closed_form(config: &RetryConfig, n: u32, kind: Kind) -> Result<ClosedForm, String> {
    if failure_for(config, kind).is_none() {
        return Err(format!(
            "the config never retries a {} failure{}",
            kind.as_str(),
            match kind {
                Kind::Transient => " that reached the server (5xx, reset)",
                Kind::Throttling => " (429, throttling codes)",
                Kind::Timeout => " (read, per-try or connect timeout)",
            }
        ));
    }
    match &config.budget {
        BudgetConfig::None => Err("the config has no retry budget: nothing drains".into()),
        BudgetConfig::Envoy(_) => Err(
            "Envoy's retry budget limits concurrent retries; it has no balance that drains".into(),
        ),
        _ if n < 2 => Err("with 1 attempt no retry is ever asked for".into()),
        BudgetConfig::AwsQuota(AwsQuotaConfig {
            transient_cost,
            throttling_cost,
            timeout_cost,
            success_increment,
            ..
        }) => {
            let c = match kind {
                Kind::Transient => *transient_cost,
                Kind::Throttling => *throttling_cost,
                Kind::Timeout => *timeout_cost,
            };
            let inc = *success_increment;
            Ok(ClosedForm {
                cost: c,
                formula: format!("E(p) = {inc}*(1-p) - {c}*(p^2 + ... + p^{n})"),
                root: bisect(|p| aws_drift(p, c, inc, n), 0.0, 1.0),
            })
        }
        BudgetConfig::GrpcThrottling(GrpcThrottlingConfig { token_ratio, .. }) => {
            let r = *token_ratio;
            Ok(ClosedForm {
                cost: 1.0,
                formula: format!("E(p) = {r}*(1-p^{n}) - (p + ... + p^{n}); root = r/(1+r)"),
                root: bisect(|p| grpc_drift(p, r, n), 0.0, 1.0),
            })
        }
        BudgetConfig::Ratio(RatioConfig { ratio, deposit, .. }) => {
            let (r, d) = (*ratio, *deposit);
            let dep = match d {
                DepositOn::Request => "1".to_string(),
                DepositOn::Success => format!("(1-p^{n})"),
            };
            Ok(ClosedForm {
                cost: 1.0,
                formula: format!(
                    "E(p) = {r}*{dep} - (p + ... + p^{}) retries per request (min_per_sec reserve ignored)",
                    n - 1
                ),
                root: bisect(|p| ratio_drift(p, r, n, d), 0.0, 1.0),
            })
        }
    }
}

/// One class's closed form.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedForm {
    /// Budget cost of one retry of this class.
    pub cost: f64,
    /// The drift formula used.
    pub formula: String,
    /// Root of the drift in (0, 1), rounded to 4 decimals; None when it does not cross zero.
    pub root: Option<f64>,
}

/// The threshold of one class as a run reports it: the closed form (a run has no time for
/// the Monte Carlo), or the reason there is none.
pub fn run_threshold(config: &RetryConfig, kind: Kind) -> Result<f64, String> {
    let f = closed_form(config, config.max_attempts.max(1), kind)?;
    f.root
        .map(round4)
        .ok_or_else(|| "the drift does not cross zero in (0, 1)".to_string())
}

/// Compute the thresholds with an explicit Monte-Carlo effort.
pub fn compute_with(
    config: &RetryConfig,
    max_attempts: Option<u32>,
    seed: u64,
    opts: McOptions,
) -> ThresholdReport {
    let n = max_attempts.unwrap_or(config.max_attempts).max(1);
    let mc_cfg = mc_config(config, n);
    let kind_report = |kind: Kind, idx: u64| -> KindThreshold {
        let f = match closed_form(config, n, kind) {
            Ok(f) => f,
            Err(reason) => return KindThreshold::none(reason),
        };
        let failure = failure_for(config, kind).expect("closed_form checked the class");
        let mc = mc_root(
            &mc_cfg,
            &failure,
            seed.wrapping_add(idx.wrapping_mul(0x5851_f42d)),
            opts,
        );
        KindThreshold {
            closed_form: f.root.map(round4),
            monte_carlo: mc.map(round4),
            cost: Some(f.cost),
            formula: Some(f.formula),
            reason: match (f.root, mc) {
                (None, _) => Some("the drift does not cross zero in (0, 1)".into()),
                (Some(_), None) => Some("the Monte-Carlo drift did not cross zero".into()),
                _ => None,
            },
        }
    };
    ThresholdReport {
        config: config.name.clone(),
        budget: config.budget.kind_name().to_string(),
        max_attempts: n,
        seed,
        requests_per_point: opts.requests_per_point,
        transient: kind_report(Kind::Transient, 1),
        throttling: kind_report(Kind::Throttling, 2),
        timeout: kind_report(Kind::Timeout, 3),
        model: "each attempt fails independently with probability p (one failure kind at a time); \
                the threshold is the p above which the budget's expected balance per request \
                falls (it drains); closed_form = root of E(p) by bisection, monte_carlo = zero \
                crossing of the mean drift measured through RetryClient"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::presets::preset;

    #[test]
    fn closed_forms_match_reference_roots() {
        let root = |c: f64, n: u32| bisect(|p| aws_drift(p, c, 1.0, n), 0.0, 1.0).unwrap();
        assert!((root(14.0, 3) - 0.214856).abs() < 1e-5);
        assert!((root(5.0, 3) - 0.320724).abs() < 1e-5);
        assert!((root(10.0, 3) - 0.245996).abs() < 1e-5);
        assert!((root(14.0, 4) - 0.212).abs() < 1e-3);
        assert!((root(5.0, 4) - 0.312).abs() < 1e-3);
        for n in 2..6 {
            let g = bisect(|p| grpc_drift(p, 0.1, n), 0.0, 1.0).unwrap();
            assert!((g - 0.1 / 1.1).abs() < 1e-9, "n={n}: {g}");
        }
        let r = bisect(|p| ratio_drift(p, 0.2, 3, DepositOn::Request), 0.0, 1.0).unwrap();
        assert!((r - (-1.0 + 1.8f64.sqrt()) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_class_the_config_never_retries_has_no_threshold() {
        // finagle requeues only failures that never reached the server: a 503 is final.
        let f = preset("finagle").unwrap();
        let why = run_threshold(&f, Kind::Transient).unwrap_err();
        assert!(why.contains("never retries a transient"), "{why}");
        let rep = compute_with(&f, None, 1, McOptions::default());
        assert_eq!(rep.transient.closed_form, None);
        let aws = preset("aws-standard").unwrap();
        assert_eq!(run_threshold(&aws, Kind::Transient), Ok(0.2149));
    }

    #[test]
    fn no_budget_reports_no_threshold() {
        for name in ["naive", "polly", "envoy", "aws-legacy"] {
            let rep = compute_with(&preset(name).unwrap(), None, 1, McOptions::default());
            for k in [&rep.transient, &rep.throttling, &rep.timeout] {
                assert_eq!((k.closed_form, k.monte_carlo), (None, None), "{name}");
                assert!(k.reason.is_some(), "{name}");
            }
        }
    }

    /// A config retrying gRPC statuses alone drains on them: the failure the thresholds
    /// model for it is a call answered HTTP 200 with that status in its trailers.
    #[test]
    fn grpc_statuses_are_the_classes_of_a_grpc_only_config() {
        use crate::policy::outcome::RetryOn;
        let mut c = preset("grpc").unwrap();
        c.retry_on = RetryOn {
            grpc_statuses: vec![GrpcStatus::Unavailable],
            grpc_throttling_statuses: vec![GrpcStatus::ResourceExhausted],
            ..RetryOn::default()
        };
        assert_eq!(run_threshold(&c, Kind::Transient), Ok(0.0909));
        assert_eq!(run_threshold(&c, Kind::Throttling), Ok(0.0909));
        assert!(run_threshold(&c, Kind::Timeout).is_err());
        c.retry_on.grpc_throttling_statuses.clear();
        let why = run_threshold(&c, Kind::Throttling).unwrap_err();
        assert!(why.contains("never retries a throttling"), "{why}");
    }
}
