//! Cost budget: every attempt has a cost (`attempt_cost`, 1 by default); retries stop once a
//! per-request cap or a client-wide (global) cap would be exceeded.
//!
//! Rule: a retry (attempt ≥ 2) of cost `c` is allowed iff `spent_request + c ≤ per_request_cap`
//! and `spent_global + c ≤ global_cap`. First attempts are never refused by cost (the caps
//! bound the *extra* work retries do) but their cost is counted.

use serde::{Deserialize, Serialize};

/// `cost = { per_request_cap = 10, global_cap = 1000 }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostConfig {
    /// Cap on the summed cost of one logical request's attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request_cap: Option<f64>,
    /// Cap on the summed cost of every attempt of the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_cap: Option<f64>,
}

/// Which cap stopped a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostScope {
    /// The per-request cap.
    Request,
    /// The client-wide cap.
    Global,
}

/// Client-wide cost ledger.
#[derive(Clone, Debug, Default)]
pub struct CostLedger {
    /// Total spent by the client.
    pub spent: f64,
}

impl CostConfig {
    /// Would one more retry of `cost` fit? `None` = yes, else the cap that stops it.
    pub fn check(&self, request_spent: f64, global_spent: f64, cost: f64) -> Option<CostScope> {
        if self
            .per_request_cap
            .is_some_and(|cap| request_spent + cost > cap + 1e-9)
        {
            return Some(CostScope::Request);
        }
        if self
            .global_cap
            .is_some_and(|cap| global_spent + cost > cap + 1e-9)
        {
            return Some(CostScope::Global);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps() {
        let c = CostConfig {
            per_request_cap: Some(3.0),
            global_cap: Some(10.0),
        };
        assert_eq!(c.check(2.0, 2.0, 1.0), None);
        assert_eq!(c.check(3.0, 3.0, 1.0), Some(CostScope::Request));
        assert_eq!(c.check(1.0, 9.5, 1.0), Some(CostScope::Global));
        assert_eq!(CostConfig::default().check(1e9, 1e9, 1.0), None);
    }
}
