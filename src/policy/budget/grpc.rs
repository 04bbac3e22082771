//! gRPC `retryThrottling` (grpc/proposal `A6-client-retries.md`; grpc-go
//! `clientconn.go::retryThrottler`; grpc-java `RetriableStream.java`, `Throttle`).
//!
//! `tokens` starts at `max_tokens` and stays in `[0, max_tokens]`. On every failed attempt
//! with a retryable code (including the final one, and a "do not retry" pushback):
//! `tokens = max(tokens − 1, 0)`, and the retry is allowed only if `tokens > max_tokens/2`
//! after the decrement. On every RPC that succeeds: `tokens = min(tokens + token_ratio,
//! max_tokens)`. grpc-java keeps tokens as integers ×1000 and drops decimals of `token_ratio`
//! beyond 3; we do the same so that long runs do not drift by float error.

use super::{CostKind, RetryBudget};
use crate::policy::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `budget = { kind = "grpc-throttling", ... }`: the service config's `retryThrottling`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcThrottlingConfig {
    /// Bucket size and initial level, (0, 1000].
    pub max_tokens: f64,
    /// Tokens added per successful RPC, > 0.
    pub token_ratio: f64,
}

impl GrpcThrottlingConfig {
    /// The ranges gRPC's service-config validation accepts (grpc-go `service_config.go`).
    pub fn validate(&self) -> Result<(), PolicyError> {
        let (max_tokens, token_ratio) = (self.max_tokens, self.token_ratio);
        check(
            max_tokens.is_finite() && max_tokens > 0.0 && max_tokens <= 1000.0,
            "budget.max_tokens",
            max_tokens,
            "(0, 1000] (gRFC A6)",
        )?;
        check(
            token_ratio.is_finite() && token_ratio >= 0.001 && token_ratio <= max_tokens,
            "budget.token_ratio",
            token_ratio,
            "0.001..=budget.max_tokens (decimals beyond 3 are ignored, as in gRPC)",
        )
    }

    /// A full bucket.
    pub fn build(&self) -> GrpcThrottle {
        GrpcThrottle::new(self.max_tokens, self.token_ratio)
    }
}

/// gRPC retry throttle state (milli-tokens).
#[derive(Debug, Clone)]
pub struct GrpcThrottle {
    max_milli: i64,
    ratio_milli: i64,
    tokens_milli: i64,
}

impl GrpcThrottle {
    /// A full bucket.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Self {
        let max_milli = (max_tokens * 1000.0).round() as i64;
        GrpcThrottle {
            max_milli,
            ratio_milli: (token_ratio * 1000.0).floor() as i64,
            tokens_milli: max_milli,
        }
    }

    /// Retries are enabled iff `tokens > max_tokens / 2`.
    pub fn retries_enabled(&self) -> bool {
        self.tokens_milli * 2 > self.max_milli
    }
}

impl RetryBudget for GrpcThrottle {
    fn try_retry(&mut self, _now: Duration, _kind: CostKind, _final_attempt: bool) -> Option<f64> {
        self.tokens_milli = (self.tokens_milli - 1000).max(0);
        self.retries_enabled().then_some(1.0)
    }

    fn on_success(&mut self, _now: Duration, _last_charge: Option<f64>) {
        self.tokens_milli = (self.tokens_milli + self.ratio_milli).min(self.max_milli);
    }

    fn level(&self) -> f64 {
        self.tokens_milli as f64 / 1000.0
    }

    fn bounds(&self) -> (f64, f64) {
        (0.0, self.max_milli as f64 / 1000.0)
    }

    fn set_level(&mut self, level: f64) {
        self.tokens_milli = ((level * 1000.0).round() as i64).clamp(0, self.max_milli);
    }

    fn hedge_allowed(&self) -> bool {
        self.retries_enabled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_half_and_resumes_above() {
        let mut t = GrpcThrottle::new(10.0, 0.1);
        let z = Duration::ZERO;
        // 10 → 9, 8, 7, 6: allowed (> 5); 5: refused (≤ 5).
        for want in [9.0, 8.0, 7.0, 6.0] {
            assert!(t.try_retry(z, CostKind::Transient, false).is_some());
            assert_eq!(t.level(), want);
        }
        assert!(t.try_retry(z, CostKind::Transient, false).is_none());
        assert_eq!(t.level(), 5.0);
        // 10 successes bring it to 6.0 > 5: retries resume.
        for _ in 0..10 {
            t.on_success(z, None);
        }
        assert!(t.retries_enabled());
        assert!((t.level() - 6.0).abs() < 1e-9);
        // ...but the next failure decrements to 5.0 and refuses.
        assert!(t.try_retry(z, CostKind::Transient, false).is_none());
        for _ in 0..10 {
            t.try_retry(z, CostKind::Transient, true);
        }
        assert_eq!(t.level(), 0.0);
    }
}
