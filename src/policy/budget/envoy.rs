//! Envoy retry admission (`api/envoy/config/cluster/v3/circuit_breaker.proto`,
//! `source/common/upstream/resource_manager_impl.h::RetryBudgetImpl`): a limit on
//! **concurrent** retries, not a rate.
//!
//! With a budget: `active_retries < max(floor(budget_percent/100 × active_requests),
//! min_retry_concurrency)`. Without one (`budget_percent` absent): the cluster circuit breaker
//! `active_retries < max_retries` (default 3). A retry counts as active from the moment it is
//! granted until its attempt ends. A refused retry returns the original failure at once.

use super::{CostKind, RetryBudget};
use crate::policy::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn default_min_retry_concurrency() -> u32 {
    3
}
fn default_max_retries() -> u32 {
    3
}

/// `budget = { kind = "envoy", ... }`: a cluster's retry budget, or without
/// `budget_percent` its retry circuit breaker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvoyConfig {
    /// Concurrent retries ≤ budget_percent/100 × active requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_percent: Option<f64>,
    /// Floor of the budget (default 3).
    #[serde(default = "default_min_retry_concurrency")]
    pub min_retry_concurrency: u32,
    /// Concurrent retries allowed without a budget (Envoy default 3).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
}

impl EnvoyConfig {
    /// A budget percentage is a percentage.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self.budget_percent {
            Some(p) => check(
                p.is_finite() && (0.0..=100.0).contains(&p),
                "budget.budget_percent",
                p,
                "0.0..=100.0",
            ),
            None => Ok(()),
        }
    }

    /// Nothing in flight.
    pub fn build(&self) -> EnvoyBudget {
        EnvoyBudget::new(
            self.budget_percent,
            self.min_retry_concurrency,
            self.max_retries,
        )
    }
}

/// Envoy retry budget / retry circuit breaker state.
#[derive(Debug, Clone)]
pub struct EnvoyBudget {
    budget_percent: Option<f64>,
    min_retry_concurrency: u32,
    max_retries: u32,
    active_requests: u64,
    active_retries: u64,
}

impl EnvoyBudget {
    /// Nothing in flight.
    pub fn new(budget_percent: Option<f64>, min_retry_concurrency: u32, max_retries: u32) -> Self {
        EnvoyBudget {
            budget_percent,
            min_retry_concurrency,
            max_retries,
            active_requests: 0,
            active_retries: 0,
        }
    }

    /// The current concurrent-retry limit.
    pub fn limit(&self) -> u64 {
        match self.budget_percent {
            Some(pct) => ((pct / 100.0 * self.active_requests as f64).floor() as u64)
                .max(self.min_retry_concurrency as u64),
            None => self.max_retries as u64,
        }
    }

    /// Retries in flight.
    pub fn active_retries(&self) -> u64 {
        self.active_retries
    }
}

impl RetryBudget for EnvoyBudget {
    fn on_request_start(&mut self, _now: Duration) {
        self.active_requests += 1;
    }

    fn try_retry(&mut self, _now: Duration, _kind: CostKind, final_attempt: bool) -> Option<f64> {
        if final_attempt || self.active_retries >= self.limit() {
            return None;
        }
        self.active_retries += 1;
        Some(1.0)
    }

    fn on_retry_end(&mut self) {
        self.active_retries = self.active_retries.saturating_sub(1);
    }

    fn on_success(&mut self, _now: Duration, _last_charge: Option<f64>) {}

    fn on_request_end(&mut self, _now: Duration) {
        self.active_requests = self.active_requests.saturating_sub(1);
    }

    /// Free retry slots right now.
    fn level(&self) -> f64 {
        self.limit().saturating_sub(self.active_retries) as f64
    }

    fn bounds(&self) -> (f64, f64) {
        (0.0, f64::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_breaker_three_concurrent_retries() {
        let mut e = EnvoyBudget::new(None, 3, 3);
        let z = Duration::ZERO;
        for _ in 0..100 {
            e.on_request_start(z);
        }
        assert!((0..3).all(|_| e.try_retry(z, CostKind::Transient, false).is_some()));
        assert!(e.try_retry(z, CostKind::Transient, false).is_none());
        e.on_retry_end();
        assert!(e.try_retry(z, CostKind::Transient, false).is_some());
    }

    #[test]
    fn budget_percent_of_active_requests() {
        let mut e = EnvoyBudget::new(Some(20.0), 3, 3);
        let z = Duration::ZERO;
        for _ in 0..100 {
            e.on_request_start(z);
        }
        assert_eq!(e.limit(), 20);
        assert_eq!(
            (0..50)
                .filter(|_| e.try_retry(z, CostKind::Transient, false).is_some())
                .count(),
            20
        );
        for _ in 0..95 {
            e.on_request_end(z);
        }
        assert_eq!(e.limit(), 3, "floor is min_retry_concurrency");
    }
}
