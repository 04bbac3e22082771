//! A resolved retry config and the checks that make it valid.
//!
//! [`RetryConfig`] is what the engines run: every field set, every value checked by
//! [`RetryConfig::validate`]. What a user writes (a preset plus overrides) is
//! [`super::spec::RetryConfigSpec`], which resolves into this type; presets build it
//! directly. Neither of them is imported here, so the types only point one way:
//! spec → presets → config.

use super::backoff::{Backoff, Jitter};
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use super::bulkhead::BulkheadConfig;
use super::concurrency_limit::ConcurrencyLimitConfig;
use super::cost::{AttemptCost, CostConfig};
use super::duration;
use super::error::{check, PolicyError};
use super::failover::FailoverConfig;
use super::hedging::HedgingConfig;
use super::ladder::{self, Rung};
use super::outcome::{RetryOn, StatusPattern, TransportError};
use super::pipeline::{Pipeline, Present};
use super::rate_limiter::RateLimiterConfig;
use super::retry_after::RetryAfterConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A resolved, validated retry config. `Serialize` so reports can print it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Name shown in reports.
    pub name: String,
    /// The preset it was derived from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Total attempts including the first try, ≥ 1.
    pub max_attempts: u32,
    /// Timeout of one attempt.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub per_try_timeout: Option<Duration>,
    /// Overall deadline of the logical request, backoff waits included.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline: Option<Duration>,
    /// Cost of one attempt for the cost budget: a number, or derived from the attempt's
    /// provider (tokens, money).
    pub attempt_cost: AttemptCost,
    /// What is retryable.
    pub retry_on: RetryOn,
    /// Retry non-idempotent methods (POST, PATCH) even when the request may have been sent.
    pub retry_non_idempotent: bool,
    /// Attach an `Idempotency-Key` header to non-idempotent requests, which makes retrying
    /// them safe.
    pub idempotency_key: bool,
    /// Nominal delay schedule.
    pub backoff: Backoff,
    /// Randomization of the nominal delay.
    pub jitter: Jitter,
    /// Which server hint is honoured.
    pub retry_after: RetryAfterConfig,
    /// Retry budget.
    pub budget: BudgetConfig,
    /// Circuit breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerConfig>,
    /// Cost caps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostConfig>,
    /// Which provider each attempt goes to (None: every attempt to the load's path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverConfig>,
    /// What the client answers itself when its attempts could not (empty: nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<Rung>,
    /// Hedged copies instead of retries (None: no hedging). `max_attempts` then equals its
    /// `max_attempts`: the copies are the call's attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<HedgingConfig>,
    /// Envoy's `hedge_policy.hedge_on_per_try_timeout`: a per-try timeout does not cancel
    /// its attempt; a retry is sent beside it and the first good answer wins (see
    /// `client::hedge_on_timeout`). The config's retries are what it sends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hedge_on_per_try_timeout: bool,
    /// A send-rate limiter every attempt passes before it is sent (none: sent at once).
    #[serde(default, skip_serializing_if = "RateLimiterConfig::is_none")]
    pub rate_limiter: RateLimiterConfig,
    /// The stages around a call, outermost first, as written (None: stormrig's default
    /// order, see [`super::pipeline`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    /// At most N attempts in flight, with a bounded queue (None: no bulkhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulkhead: Option<BulkheadConfig>,
    /// An adaptive limit of attempts in flight (None: no limiter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<ConcurrencyLimitConfig>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            name: "default".into(),
            preset: None,
            max_attempts: 3,
            per_try_timeout: None,
            deadline: None,
            attempt_cost: AttemptCost::default(),
            retry_on: RetryOn {
                statuses: vec![
                    StatusPattern::Exact(502),
                    StatusPattern::Exact(503),
                    StatusPattern::Exact(504),
                ],
                throttling_statuses: vec![],
                transport: vec![
                    TransportError::ConnectRefused,
                    TransportError::ConnectTimeout,
                    TransportError::Reset,
                ],
                throttling_codes: vec![],
                transient_codes: vec![],
                ..RetryOn::default()
            },
            retry_non_idempotent: false,
            idempotency_key: false,
            backoff: Backoff::Exponential {
                base: Duration::from_millis(100),
                multiplier: 2.0,
                cap: Some(Duration::from_secs(10)),
                throttling_base: None,
            },
            jitter: Jitter::Full,
            retry_after: RetryAfterConfig::default(),
            budget: BudgetConfig::None,
            breaker: None,
            cost: None,
            failover: None,
            ladder: Vec::new(),
            hedging: None,
            hedge_on_per_try_timeout: false,
            rate_limiter: RateLimiterConfig::None,
            pipeline: None,
            bulkhead: None,
            concurrency_limit: None,
        }
    }
}

/// The most attempts of a config that hedges on its per-try timeout (a bit each in the
/// call's record of which copies were hedges).
pub const MAX_PER_TRY_HEDGED_ATTEMPTS: u32 = 64;

fn dur(d: Duration) -> String {
    format!("\"{}\"", duration::format_duration(d))
}

impl RetryConfig {
    /// Refuse impossible values, naming the field, the value and the allowed range. Each step
    /// checks one table of the config, in the order a reader meets them in a scenario file,
    /// so the first error reported is the first one written.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.validate_attempts()?;
        self.validate_retry_on()?;
        self.validate_backoff()?;
        self.validate_jitter()?;
        self.budget.validate()?;
        self.validate_breaker()?;
        self.validate_cost()?;
        if let Some(f) = &self.failover {
            f.validate()?;
            if let Some(b) = &f.breaker {
                validate_breaker(b, "failover.breaker")?;
            }
            if let Some(b) = &f.bulkhead {
                b.validate("failover.bulkhead")?;
                check(
                    self.bulkhead.is_none(),
                    "failover.bulkhead",
                    "a table",
                    "unset beside a bulkhead of the config's own: a config has one bulkhead \
                     for its client or one per provider, not both",
                )?;
            }
        }
        ladder::validate(&self.ladder)?;
        if let Some(b) = &self.bulkhead {
            b.validate("bulkhead")?;
        }
        if let Some(l) = &self.concurrency_limit {
            l.validate()?;
        }
        self.validate_hedging()?;
        match &self.pipeline {
            Some(p) => p.validate(self.stages()),
            None => Ok(()),
        }
    }

    /// Which stages the config has, that a written pipeline must list.
    pub fn stages(&self) -> Present {
        Present {
            deadline: self.deadline.is_some(),
            per_try_timeout: self.per_try_timeout.is_some(),
            breaker: self.breaker.is_some(),
            failover: self.failover.is_some(),
            rate_limiter: !self.rate_limiter.is_none(),
            hedging: self.hedges(),
            bulkhead: self.bulkhead.is_some()
                || self.failover.as_ref().is_some_and(|f| f.bulkhead.is_some()),
            bulkhead_per_provider: self.failover.as_ref().is_some_and(|f| f.bulkhead.is_some()),
            concurrency_limit: self.concurrency_limit.is_some(),
        }
    }

    /// The config sends copies of a call beside one in flight: a hedging table (gRFC A6)
    /// or Envoy's hedging on per-try timeout. Engines take the hedged path for it.
    pub fn hedges(&self) -> bool {
        self.hedging.is_some() || self.hedge_on_per_try_timeout
    }

    /// The order the config runs: as written, or stormrig's default.
    pub fn effective_pipeline(&self) -> Pipeline {
        self.pipeline
            .clone()
            .unwrap_or_else(|| Pipeline::default_for(self.stages()))
    }

    /// Hedging's own values, and the stages it is not defined with. gRFC A6 defines hedges
    /// only beside its retry throttle, Envoy only beside its retry circuit breaker; a
    /// breaker, cost caps, failover or a ladder would each need a rule for copies in flight
    /// that no client this project reads has: refused rather than guessed.
    fn validate_hedging(&self) -> Result<(), PolicyError> {
        match (&self.hedging, self.hedge_on_per_try_timeout) {
            (None, false) => return Ok(()),
            (Some(_), true) => {
                return Err(PolicyError::invalid(
                    "hedge_on_per_try_timeout",
                    "true",
                    "unset beside a hedging table: copies go on a delay (gRFC A6) or on the \
                     per-try timeout (Envoy), not both",
                ))
            }
            (Some(h), false) => {
                h.validate()?;
                check(
                    self.max_attempts == h.max_attempts,
                    "max_attempts",
                    self.max_attempts,
                    "unset beside hedging: a config has a retry policy or a hedging policy, \
                     never both (gRFC A6); the hedged copies are its attempts",
                )?;
                check(
                    matches!(
                        self.budget,
                        BudgetConfig::None | BudgetConfig::GrpcThrottling(_)
                    ),
                    "budget",
                    self.budget.kind_name(),
                    "\"none\" or \"grpc-throttling\" beside hedging (hedges share gRPC's retry \
                     throttle, gRFC A6)",
                )?;
            }
            (None, true) => {
                check(
                    self.per_try_timeout.is_some(),
                    "per_try_timeout",
                    "unset",
                    "a duration beside hedge_on_per_try_timeout: its expiry sends the hedge",
                )?;
                check(
                    self.max_attempts <= MAX_PER_TRY_HEDGED_ATTEMPTS,
                    "max_attempts",
                    self.max_attempts,
                    "1..=64 beside hedge_on_per_try_timeout (its copies are counted one bit each)",
                )?;
                check(
                    matches!(self.budget, BudgetConfig::None | BudgetConfig::Envoy(_)),
                    "budget",
                    self.budget.kind_name(),
                    "\"none\" or \"envoy\" beside hedge_on_per_try_timeout (Envoy's hedged \
                     retries pass its retry circuit breaker or budget)",
                )?;
            }
        }
        for (field, set) in [
            ("breaker", self.breaker.is_some()),
            ("cost", self.cost.is_some()),
            ("failover", self.failover.is_some()),
            ("ladder", !self.ladder.is_empty()),
            ("rate_limiter", !self.rate_limiter.is_none()),
            ("bulkhead", self.bulkhead.is_some()),
            ("concurrency_limit", self.concurrency_limit.is_some()),
        ] {
            check(!set, field, "a table", "unset beside hedging")?;
        }
        Ok(())
    }

    /// Name, attempt count, timeouts and attempt cost: the scalar fields.
    fn validate_attempts(&self) -> Result<(), PolicyError> {
        check(
            !self.name.trim().is_empty(),
            "name",
            "\"\"",
            "a non-empty name",
        )?;
        check(
            (1..=100).contains(&self.max_attempts),
            "max_attempts",
            self.max_attempts,
            "1..=100 (counts the first try)",
        )?;
        for (field, timeout) in [
            ("per_try_timeout", self.per_try_timeout),
            ("deadline", self.deadline),
        ] {
            if let Some(t) = timeout {
                check(!t.is_zero(), field, dur(t), "a duration > 0")?;
            }
        }
        match self.attempt_cost {
            AttemptCost::Fixed(c) => check(
                c.is_finite() && c >= 0.0,
                "attempt_cost",
                c,
                "a finite number >= 0, \"tokens\" or \"money\"",
            ),
            _ => Ok(()),
        }
    }

    /// Status codes and classes that exist.
    fn validate_retry_on(&self) -> Result<(), PolicyError> {
        for (f, list) in [
            ("retry_on.statuses", &self.retry_on.statuses),
            (
                "retry_on.throttling_statuses",
                &self.retry_on.throttling_statuses,
            ),
        ] {
            for p in list {
                let ok = match *p {
                    StatusPattern::Exact(s) => (100..=599).contains(&s),
                    StatusPattern::Class(c) => (1..=5).contains(&c),
                };
                check(
                    ok,
                    f,
                    format!("{p:?}"),
                    "status codes 100..=599 or classes \"1xx\"..\"5xx\"",
                )?;
            }
        }
        Ok(())
    }

    /// A multiplier that grows and a cap no lower than the base it caps.
    fn validate_backoff(&self) -> Result<(), PolicyError> {
        match &self.backoff {
            Backoff::None | Backoff::Constant { .. } => Ok(()),
            Backoff::Linear { base, cap } => match cap {
                Some(cap) => check(
                    cap >= base,
                    "backoff.cap",
                    dur(*cap),
                    &format!(">= backoff.base ({})", dur(*base)),
                ),
                None => Ok(()),
            },
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                throttling_base,
            } => {
                check(
                    multiplier.is_finite() && *multiplier >= 1.0 && *multiplier <= 100.0,
                    "backoff.multiplier",
                    multiplier,
                    "1.0..=100.0",
                )?;
                match cap {
                    Some(cap) => {
                        let b = (*base).max(throttling_base.unwrap_or(Duration::ZERO));
                        check(
                            *cap >= b,
                            "backoff.cap",
                            dur(*cap),
                            &format!(">= backoff.base and backoff.throttling_base ({})", dur(b)),
                        )
                    }
                    None => Ok(()),
                }
            }
        }
    }

    /// A proportional jitter's share, and a base for decorrelated jitter to grow from.
    fn validate_jitter(&self) -> Result<(), PolicyError> {
        match &self.jitter {
            Jitter::Proportional { pct } | Jitter::Downward { pct } => check(
                pct.is_finite() && *pct > 0.0 && *pct <= 100.0,
                "jitter.pct",
                pct,
                "a percentage in (0, 100]",
            ),
            Jitter::Decorrelated => check(
                !self.backoff.base(false).is_zero(),
                "backoff.base",
                dur(self.backoff.base(false)),
                "> 0 (decorrelated jitter multiplies the previous delay by 3 starting at base)",
            ),
            _ => Ok(()),
        }
    }

    fn validate_breaker(&self) -> Result<(), PolicyError> {
        self.breaker
            .as_ref()
            .map_or(Ok(()), |b| validate_breaker(b, "breaker"))
    }
    /// Caps that are positive numbers.
    fn validate_cost(&self) -> Result<(), PolicyError> {
        if let Some(c) = &self.cost {
            for (f, v) in [
                ("cost.per_request_cap", c.per_request_cap),
                ("cost.global_cap", c.global_cap),
            ] {
                if let Some(v) = v {
                    check(v.is_finite() && v > 0.0, f, v, "a finite number > 0")?;
                }
            }
        }
        Ok(())
    }
}

/// A breaker table (`prefix` names it in errors): at least one trigger, and a window the
/// minimum call count fits in.
fn validate_breaker(b: &BreakerConfig, prefix: &str) -> Result<(), PolicyError> {
    check(
        b.failure_threshold.is_some() || b.failure_rate.is_some(),
        prefix,
        "{}",
        "at least one of failure_threshold, failure_rate",
    )?;
    if let Some(t) = b.failure_threshold {
        check(t >= 1, &format!("{prefix}.failure_threshold"), t, ">= 1")?;
    }
    if let Some(r) = b.failure_rate {
        check(
            r > 0.0 && r <= 1.0,
            &format!("{prefix}.failure_rate"),
            r,
            "a probability in (0, 1]",
        )?;
    }
    check(
        (1..=100_000).contains(&b.window),
        &format!("{prefix}.window"),
        b.window,
        "1..=100000",
    )?;
    check(
        b.min_calls >= 1 && b.min_calls <= b.window,
        &format!("{prefix}.min_calls"),
        b.min_calls,
        &format!("1..={prefix}.window ({})", b.window),
    )?;
    check(
        !b.open_for.is_zero(),
        &format!("{prefix}.open_for"),
        dur(b.open_for),
        "a duration > 0",
    )?;
    check(
        b.half_open_probes >= 1,
        &format!("{prefix}.half_open_probes"),
        b.half_open_probes,
        ">= 1",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_status_codes_name_their_list() {
        let mut c = RetryConfig::default();
        c.retry_on.statuses.push(StatusPattern::Exact(700));
        assert_eq!(c.validate().unwrap_err().field(), Some("retry_on.statuses"));
        let mut c = RetryConfig::default();
        c.retry_on.throttling_statuses.push(StatusPattern::Class(6));
        assert_eq!(
            c.validate().unwrap_err().field(),
            Some("retry_on.throttling_statuses")
        );
    }

    #[test]
    fn every_step_runs_and_the_first_error_wins() {
        // One bad value per step: each is reported alone, and with all of them the first
        // step's field is the one named.
        type Spoil = fn(&mut RetryConfig);
        let steps: [(&str, Spoil); 5] = [
            ("deadline", |c| c.deadline = Some(Duration::ZERO)),
            ("backoff.multiplier", |c| {
                c.backoff = Backoff::Exponential {
                    base: Duration::from_millis(1),
                    multiplier: 0.5,
                    cap: None,
                    throttling_base: None,
                }
            }),
            ("jitter.pct", |c| {
                c.jitter = Jitter::Proportional { pct: 0.0 }
            }),
            ("breaker.window", |c| {
                c.breaker = Some(BreakerConfig {
                    failure_threshold: Some(1),
                    failure_rate: None,
                    window: 0,
                    min_calls: 1,
                    open_for: Duration::from_secs(1),
                    half_open_probes: 1,
                })
            }),
            ("cost.global_cap", |c| {
                c.cost = Some(CostConfig {
                    per_request_cap: None,
                    global_cap: Some(0.0),
                })
            }),
        ];
        let mut all = RetryConfig::default();
        for (field, spoil) in steps {
            let mut c = RetryConfig::default();
            spoil(&mut c);
            assert_eq!(c.validate().unwrap_err().field(), Some(field));
            spoil(&mut all);
        }
        assert_eq!(all.validate().unwrap_err().field(), Some("deadline"));
        RetryConfig::default().validate().unwrap();
    }
}
