//! The AWS SDK retry quota (botocore `RetryQuotaChecker` + `RetryQuota`, smithy-rs
//! `TokenBucket`: `botocore/retries/standard.py::RetryQuotaChecker`,
//! `botocore/retries/quota.py::RetryQuota`,
//! `rust-runtime/aws-smithy-runtime/src/client/retries/token_bucket.rs`).
//!
//! * starts full at `capacity` (500); the level never exceeds `capacity` nor drops below 0;
//! * a retry of kind k costs `cost(k)` and is refused when `level < cost(k)`;
//! * the final failed attempt is not charged (max attempts is checked first);
//! * a request that succeeds on its first attempt returns `success_increment` (+1);
//! * a request that succeeds after retries refunds only its **last** acquisition.

use super::{CostKind, RetryBudget};
use crate::policy::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `budget = { kind = "aws-quota", ... }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsQuotaConfig {
    /// Bucket size and initial level (500).
    pub capacity: f64,
    /// Cost of a transient retry.
    pub transient_cost: f64,
    /// Cost of a throttling retry.
    pub throttling_cost: f64,
    /// Cost of a connect/read timeout retry.
    pub timeout_cost: f64,
    /// Tokens returned by a request that succeeded on its first attempt.
    pub success_increment: f64,
}

impl AwsQuotaConfig {
    /// A bucket of some size, and costs and refunds that fit in it.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let capacity = self.capacity;
        check(
            capacity.is_finite() && capacity > 0.0,
            "budget.capacity",
            capacity,
            "a finite number > 0",
        )?;
        for (f, v) in [
            ("budget.transient_cost", self.transient_cost),
            ("budget.throttling_cost", self.throttling_cost),
            ("budget.timeout_cost", self.timeout_cost),
            ("budget.success_increment", self.success_increment),
        ] {
            check(
                v.is_finite() && v >= 0.0 && v <= capacity,
                f,
                v,
                &format!("0..=budget.capacity ({capacity})"),
            )?;
        }
        Ok(())
    }

    /// A full bucket.
    pub fn build(&self) -> AwsQuota {
        AwsQuota::new(
            self.capacity,
            self.transient_cost,
            self.throttling_cost,
            self.timeout_cost,
            self.success_increment,
        )
    }
}

/// AWS retry quota state.
#[derive(Debug, Clone)]
pub struct AwsQuota {
    capacity: f64,
    level: f64,
    transient_cost: f64,
    throttling_cost: f64,
    timeout_cost: f64,
    success_increment: f64,
}

impl AwsQuota {
    /// A full bucket.
    pub fn new(
        capacity: f64,
        transient_cost: f64,
        throttling_cost: f64,
        timeout_cost: f64,
        success_increment: f64,
    ) -> Self {
        AwsQuota {
            capacity,
            level: capacity,
            transient_cost,
            throttling_cost,
            timeout_cost,
            success_increment,
        }
    }

    /// The cost of a retry of `kind`.
    pub fn cost(&self, kind: CostKind) -> f64 {
        match kind {
            CostKind::Transient => self.transient_cost,
            CostKind::Throttling => self.throttling_cost,
            CostKind::Timeout => self.timeout_cost,
        }
    }

    /// Refund `amount` (capped at capacity).
    pub fn release(&mut self, amount: f64) {
        self.level = (self.level + amount).min(self.capacity);
    }
}

impl RetryBudget for AwsQuota {
    fn try_retry(&mut self, _now: Duration, kind: CostKind, final_attempt: bool) -> Option<f64> {
        let c = self.cost(kind);
        if final_attempt || self.level < c {
            return None;
        }
        self.level -= c;
        Some(c)
    }

    /// First-try success: `+success_increment`; success after retries: refund the request's
    /// last acquisition only.
    fn on_success(&mut self, _now: Duration, last_charge: Option<f64>) {
        self.release(last_charge.unwrap_or(self.success_increment));
    }

    fn level(&self) -> f64 {
        self.level
    }

    fn bounds(&self) -> (f64, f64) {
        (0.0, self.capacity)
    }

    fn set_level(&mut self, level: f64) {
        self.level = level.clamp(0.0, self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_refunds_and_caps() {
        let mut q = AwsQuota::new(500.0, 14.0, 5.0, 14.0, 1.0);
        q.on_success(Duration::ZERO, None);
        assert_eq!(q.level(), 500.0, "capped at capacity");
        assert_eq!(
            q.try_retry(Duration::ZERO, CostKind::Transient, false),
            Some(14.0)
        );
        let last = q.try_retry(Duration::ZERO, CostKind::Throttling, false);
        assert_eq!(q.level(), 481.0);
        q.on_success(Duration::ZERO, last); // refunds the LAST acquisition (5) only
        assert_eq!(q.level(), 486.0);
        assert!(q
            .try_retry(Duration::ZERO, CostKind::Transient, true)
            .is_none());
        assert_eq!(q.level(), 486.0, "final attempt is not charged");
        q.set_level(10.0);
        assert!(q
            .try_retry(Duration::ZERO, CostKind::Transient, false)
            .is_none());
        assert!(q
            .try_retry(Duration::ZERO, CostKind::Throttling, false)
            .is_some());
        assert_eq!(q.level(), 5.0);
    }
}
