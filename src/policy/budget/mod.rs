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

use super::duration;
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
}

/// `budget = { kind = "...", ... }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    deny_unknown_fields,
    from = "BudgetDe"
)]
pub enum BudgetConfig {
    /// No budget (`budget = { kind = "none" }` removes a preset's budget).
    #[default]
    None,
    /// Finagle/tower ratio budget.
    Ratio {
        /// Retries allowed per deposit, [0, 1000] (0.2 = 20 %).
        ratio: f64,
        /// Window over which deposits and withdrawals count, 1 s ..= 60 s.
        #[serde(with = "duration::serde")]
        ttl: Duration,
        /// Reserve of retries per second, independent of traffic.
        min_per_sec: u32,
        /// Deposit on every request (tower, Finagle `RetryFilter`) or only on success
        /// (Finagle `RequeueFilter` since 2020).
        #[serde(default)]
        deposit: DepositOn,
    },
    /// AWS SDK retry quota.
    AwsQuota {
        /// Bucket size and initial level (500).
        capacity: f64,
        /// Cost of a transient retry.
        transient_cost: f64,
        /// Cost of a throttling retry.
        throttling_cost: f64,
        /// Cost of a connect/read timeout retry.
        timeout_cost: f64,
        /// Tokens returned by a request that succeeded on its first attempt.
        success_increment: f64,
    },
    /// gRPC `retryThrottling`.
    GrpcThrottling {
        /// Bucket size and initial level, (0, 1000].
        max_tokens: f64,
        /// Tokens added per successful RPC, > 0.
        token_ratio: f64,
    },
    /// Envoy retry budget (with `budget_percent`) or the plain retry circuit breaker
    /// (`max_retries` concurrent retries) when `budget_percent` is absent.
    Envoy {
        /// Concurrent retries ≤ budget_percent/100 × active requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_percent: Option<f64>,
        /// Floor of the budget (default 3).
        #[serde(default = "envoy::default_min_retry_concurrency")]
        min_retry_concurrency: u32,
        /// Concurrent retries allowed without a budget (Envoy default 3).
        #[serde(default = "envoy::default_max_retries")]
        max_retries: u32,
    },
}

/// Deserialization shadow of [`BudgetConfig`]: `none` is an empty struct variant so that
/// unknown keys next to it are refused; the other variants are read as the real type.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum BudgetDe {
    None {},
    Ratio {
        ratio: f64,
        #[serde(with = "duration::serde")]
        ttl: Duration,
        min_per_sec: u32,
        #[serde(default)]
        deposit: DepositOn,
    },
    AwsQuota {
        capacity: f64,
        transient_cost: f64,
        throttling_cost: f64,
        timeout_cost: f64,
        success_increment: f64,
    },
    GrpcThrottling {
        max_tokens: f64,
        token_ratio: f64,
    },
    Envoy {
        #[serde(default)]
        budget_percent: Option<f64>,
        #[serde(default = "envoy::default_min_retry_concurrency")]
        min_retry_concurrency: u32,
        #[serde(default = "envoy::default_max_retries")]
        max_retries: u32,
    },
}

impl From<BudgetDe> for BudgetConfig {
    fn from(b: BudgetDe) -> Self {
        match b {
            BudgetDe::None {} => BudgetConfig::None,
            BudgetDe::Ratio {
                ratio,
                ttl,
                min_per_sec,
                deposit,
            } => BudgetConfig::Ratio {
                ratio,
                ttl,
                min_per_sec,
                deposit,
            },
            BudgetDe::AwsQuota {
                capacity,
                transient_cost,
                throttling_cost,
                timeout_cost,
                success_increment,
            } => BudgetConfig::AwsQuota {
                capacity,
                transient_cost,
                throttling_cost,
                timeout_cost,
                success_increment,
            },
            BudgetDe::GrpcThrottling {
                max_tokens,
                token_ratio,
            } => BudgetConfig::GrpcThrottling {
                max_tokens,
                token_ratio,
            },
            BudgetDe::Envoy {
                budget_percent,
                min_retry_concurrency,
                max_retries,
            } => BudgetConfig::Envoy {
                budget_percent,
                min_retry_concurrency,
                max_retries,
            },
        }
    }
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
            BudgetConfig::Ratio { .. } => "ratio",
            BudgetConfig::AwsQuota { .. } => "aws-quota",
            BudgetConfig::GrpcThrottling { .. } => "grpc-throttling",
            BudgetConfig::Envoy { .. } => "envoy",
        }
    }

    /// Build the state machine (None for `kind = "none"`).
    pub fn build(&self) -> Option<Box<dyn RetryBudget>> {
        match *self {
            BudgetConfig::None => None,
            BudgetConfig::Ratio {
                ratio,
                ttl,
                min_per_sec,
                deposit,
            } => Some(Box::new(ratio::RatioBudget::new(
                ratio,
                ttl,
                min_per_sec,
                deposit,
            ))),
            BudgetConfig::AwsQuota {
                capacity,
                transient_cost,
                throttling_cost,
                timeout_cost,
                success_increment,
            } => Some(Box::new(aws::AwsQuota::new(
                capacity,
                transient_cost,
                throttling_cost,
                timeout_cost,
                success_increment,
            ))),
            BudgetConfig::GrpcThrottling {
                max_tokens,
                token_ratio,
            } => Some(Box::new(grpc::GrpcThrottle::new(max_tokens, token_ratio))),
            BudgetConfig::Envoy {
                budget_percent,
                min_retry_concurrency,
                max_retries,
            } => Some(Box::new(envoy::EnvoyBudget::new(
                budget_percent,
                min_retry_concurrency,
                max_retries,
            ))),
        }
    }
}
