//! Why a logical request stopped without success: one word the policy core, both engines
//! and every report share. A leaf, so that the ladder (which falls back on some reasons) and
//! the client (which decides them) do not read each other.

use serde::Serialize;

/// Why a logical request stopped without success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GiveUpReason {
    /// The outcome is not retryable.
    NonRetryable,
    /// Max attempts reached.
    MaxAttempts,
    /// No time left before the deadline (or the retry delay would pass it).
    Deadline,
    /// The retry budget refused the retry.
    BudgetRefused,
    /// The circuit breaker is open.
    BreakerOpen,
    /// A cost cap is spent.
    CostCap,
    /// The method is not idempotent and the request may have reached the server.
    NotIdempotent,
    /// The server said not to retry: a negative/malformed `grpc-retry-pushback-ms`, a
    /// `retry-after` above the config's `refuse_above`, or `x-should-retry: false`.
    ServerPushback,
    /// The load generator's machine ran out of a local resource (see
    /// `OutcomeClass::LocalResource`).
    LocalResource,
    /// The bulkhead had no place for the attempt (and no room or time to wait for one).
    BulkheadFull,
    /// The adaptive concurrency limiter's limit of attempts in flight was reached.
    LimitExceeded,
}

impl GiveUpReason {
    /// Every reason, in the order of their slots.
    pub const ALL: [GiveUpReason; 11] = [
        GiveUpReason::NonRetryable,
        GiveUpReason::MaxAttempts,
        GiveUpReason::Deadline,
        GiveUpReason::BudgetRefused,
        GiveUpReason::BreakerOpen,
        GiveUpReason::CostCap,
        GiveUpReason::NotIdempotent,
        GiveUpReason::ServerPushback,
        GiveUpReason::LocalResource,
        GiveUpReason::BulkheadFull,
        GiveUpReason::LimitExceeded,
    ];
}
