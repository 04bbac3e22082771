//! Retry budgets: one trait, four kinds.
//!
//! A budget answers one question — "may this failed attempt be retried?" — from state shared
//! by every request of one client. The kinds differ in what they remember:
//!
//! * [`ratio`]: Finagle `RetryBudget` / tower `TpsBudget`: retries ≤ ratio × deposits in the
//!   last `ttl` + `min_per_sec` × ttl reserve.
//! * [`aws`]: the AWS SDK retry quota (token bucket with per-kind costs and refunds).
//! * [`grpc`]: gRPC `retryThrottling` (tokens −1 per retryable failure, +ratio per success).
//! * [`envoy`]: Envoy's retry budget / retry circuit breaker: a limit on *concurrent* retries.
//!
//! The client calls the hooks in a fixed order: `on_request_start` once, `try_retry` for every
//! retryable failure (with `final_attempt = true` when something else already stops the retry,
//! so that gRPC can still decrement), `on_retry_end` when a granted retry's attempt ends,
//! `on_success` once when the request succeeds, `on_request_end` once at the end.

pub mod aws;
pub mod envoy;
pub mod grpc;
pub mod ratio;

pub use aws::AwsQuotaConfig;
pub use envoy::EnvoyConfig;
pub use grpc::GrpcThrottlingConfig;
pub use ratio::RatioConfig;

use super::error::PolicyError;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::time::Duration;

/// Which cost a retryable failure is charged at (AWS quota costs differ per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostKind {
    /// A transient failure that is not a timeout.
    Transient,
    /// A throttling failure.
    Throttling,
    /// A connect/read/per-try timeout.
    Timeout,
}

/// The common interface of every budget kind. `now` is monotonic time since the run's epoch.
pub trait RetryBudget: Send + Debug {
    /// A logical request started.
    fn on_request_start(&mut self, _now: Duration) {}
    /// A retryable failure happened. Returns `Some(charge)` when a retry is allowed (the
    /// amount withdrawn, which the request remembers for refunds), `None` when refused. With
    /// `final_attempt = true` no retry will be made whatever the answer (max attempts,
    /// deadline, ...) and the budget only does its accounting.
    fn try_retry(&mut self, now: Duration, kind: CostKind, final_attempt: bool) -> Option<f64>;
    /// The attempt of a retry granted by `try_retry` ended (or was abandoned).
    fn on_retry_end(&mut self) {}
    /// The logical request succeeded. `last_charge` is the charge of the request's last granted
    /// retry, `None` when it succeeded on its first attempt.
    fn on_success(&mut self, now: Duration, last_charge: Option<f64>);
    /// A logical request ended (any way).
    fn on_request_end(&mut self, _now: Duration) {}
    /// The current level in the budget's own unit (tokens, retries available, free slots).
    fn level(&self) -> f64;
    /// The inclusive bounds of [`RetryBudget::level`].
    fn bounds(&self) -> (f64, f64);
    /// Overwrite the level (threshold sweeps start the bucket mid-range). Ignored by kinds
    /// without a settable level.
    fn set_level(&mut self, _level: f64) {}
    /// May a hedged copy after a call's first be scheduled now? Only gRPC's throttle speaks
    /// to hedges (gRFC A6: "subsequent hedged RPCs will only be sent if token_count is
    /// greater than the threshold"); a config refuses hedging beside any other budget.
    fn hedge_allowed(&self) -> bool {
        true
    }
}

/// `budget = { kind = "...", ... }`: which kind, and that kind's own knobs (each kind's
/// config, its defaults, its checks and its state machine live together in its file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum BudgetConfig {
    /// No budget (`budget = { kind = "none" }` removes a preset's budget). Any other key
    /// beside it is refused rather than ignored.
    #[default]
    #[serde(deserialize_with = "no_keys")]
    None,
    /// Finagle/tower ratio budget.
    Ratio(RatioConfig),
    /// AWS SDK retry quota.
    AwsQuota(AwsQuotaConfig),
    /// gRPC `retryThrottling`.
    GrpcThrottling(GrpcThrottlingConfig),
    /// Envoy retry budget (with `budget_percent`) or the plain retry circuit breaker
    /// (`max_retries` concurrent retries) when `budget_percent` is absent.
    Envoy(EnvoyConfig),
}

/// `kind = "none"` takes no other key: a key there is a typo or a misplaced knob.
fn no_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NoKeys {}
    NoKeys::deserialize(d).map(|_| ())
}

/// When a ratio budget earns a deposit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DepositOn {
    /// Every logical request deposits when it starts.
    #[default]
    Request,
    /// Only successful requests deposit.
    Success,
}

impl BudgetConfig {
    /// Short name of the kind, for reports.
    pub fn kind_name(&self) -> &'static str {
        match self {
            BudgetConfig::None => "none",
            BudgetConfig::Ratio(_) => "ratio",
            BudgetConfig::AwsQuota(_) => "aws-quota",
            BudgetConfig::GrpcThrottling(_) => "grpc-throttling",
            BudgetConfig::Envoy(_) => "envoy",
        }
    }

    /// Build the state machine (None for `kind = "none"`).
    pub fn build(&self) -> Option<Box<dyn RetryBudget>> {
        match self {
            BudgetConfig::None => None,
            BudgetConfig::Ratio(c) => Some(Box::new(c.build())),
            BudgetConfig::AwsQuota(c) => Some(Box::new(c.build())),
            BudgetConfig::GrpcThrottling(c) => Some(Box::new(c.build())),
            BudgetConfig::Envoy(c) => Some(Box::new(c.build())),
        }
    }

    /// Each kind within the ranges its real client allows (fields named `budget.*`).
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self {
            BudgetConfig::None => Ok(()),
            BudgetConfig::Ratio(c) => c.validate(),
            BudgetConfig::AwsQuota(c) => c.validate(),
            BudgetConfig::GrpcThrottling(c) => c.validate(),
            BudgetConfig::Envoy(c) => c.validate(),
        }
    }
}
