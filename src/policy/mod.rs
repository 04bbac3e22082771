//! The retry policy core: pure, sans-IO state machines that both engines drive.
//!
//! Nothing here does I/O, reads a clock or uses a global RNG: time comes in as [`Now`],
//! randomness as `&mut dyn RngCore`, an attempt's outcome goes in and a [`Decision`] comes out.
//! That is what makes the live engine and the simulator behave identically, and what makes
//! every behaviour here testable to the exact number.
//!
//! Modules, one job each:
//! * [`outcome`]: classify an attempt (success / transient / throttling / non-retryable), the
//!   attempt-log label, idempotent methods; `status_classes`: a client's classes of bare
//!   statuses, looked up rather than worked out per attempt;
//! * `grpc_status`: gRPC's status codes, by which gRPC replies are classified;
//! * [`retry_after`]: `Retry-After`, `x-amz-retry-after`, `grpc-retry-pushback-ms`;
//! * [`backoff`]: constant / linear / exponential schedules and the jitter families;
//! * [`deadline`]: overall deadline, per-try timeout, propagation;
//! * [`budget`]: ratio (Finagle/tower), AWS quota, gRPC throttling, Envoy concurrency;
//! * [`bulkhead`]: at most N attempts in flight, with a bounded queue;
//!   [`concurrency_limit`]: an adaptive limit of attempts in flight (AIMD, Gradient2);
//! * [`breaker`]: circuit breaker; [`cost`]: per-request and global cost caps;
//! * [`failover`]: which provider each attempt of a request goes to;
//!   [`provider_breakers`]: a breaker per provider, skipping an open one;
//!   [`ladder`]: what the client answers itself when its providers could not (degraded);
//! * [`config`]: the resolved config and its validation; [`presets`]: real clients' configs;
//!   [`spec`]: what a user writes (a preset plus overrides), resolved into a config;
//! * [`client`]: the per-config state machine ([`RetryClient`]); [`fleet`]: N instances of
//!   it with their own budgets, and which instance sends which request;
//! * [`thresholds`]: failure rates above which a budget drains (closed form + Monte Carlo);
//! * [`hedging`]: extra copies of a call before any failure (gRFC A6), instead of retries;
//! * [`rate_limiter`]: a client-side send-rate limiter (botocore's adaptive mode), which
//!   delays sends rather than refusing retries;
//! * [`pipeline`]: the order of a config's stages, and which side of the retry its
//!   breaker stands on;
//! * [`duration`]: human duration strings in retry configs.

pub mod backoff;
pub mod bounds;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod client;
pub mod concurrency_limit;
pub mod config;
pub mod cost;
pub mod deadline;
pub mod duration;
pub mod error;
pub mod failover;
pub mod fleet;
pub mod give_up;
mod grpc_status;
pub mod hedging;
pub mod ladder;
pub mod outcome;
pub mod pipeline;
pub mod presets;
pub mod provider_breakers;
pub mod rate_limiter;
pub mod retry_after;
pub mod spec;
mod status_classes;
pub mod thresholds;
pub mod words;

pub use backoff::{Backoff, Jitter};
pub use breaker::{BreakerConfig, BreakerState};
pub use budget::{BudgetConfig, CostKind, DepositOn, RetryBudget};
pub use bulkhead::BulkheadConfig;
pub use client::{
    Decision, GiveUpReason, HedgeDecision, HedgeDue, Now, Permit, PolicyEvent, RequestState,
    RetryClient,
};
pub use concurrency_limit::ConcurrencyLimitConfig;
pub use config::RetryConfig;
pub use cost::{AttemptCost, CostConfig, CostScope, CostUnit};
pub use error::PolicyError;
pub use failover::FailoverConfig;
pub use fleet::Fleet;
pub use grpc_status::GrpcStatus;
pub use hedging::{HedgingConfig, Shortcut};
pub use ladder::Rung;
pub use outcome::{
    attempt_label, is_idempotent_method, AttemptLabel, AttemptOutcome, OutcomeClass, Response,
    RetryOn, StatusPattern, TransportError, REFUSED_LABEL,
};
pub use pipeline::{BreakerPlace, Pipeline, Stage};
pub use presets::{preset, preset_names, PresetInfo, PRESETS};
pub use rate_limiter::{RateLimiter, RateLimiterConfig};
pub use retry_after::{HintHeader, RetryAfterConfig};
pub use spec::RetryConfigSpec;
pub use thresholds::{compute, ThresholdReport};

#[cfg(test)]
mod test_draws;
#[cfg(test)]
mod tests;
