//! Cost caps: every attempt has a cost (`attempt_cost`, 1 by default); no attempt is sent
//! that would take one request's spend past `per_request_cap` or the client's past
//! `global_cap`.
//!
//! `attempt_cost` is a fixed number, or derived from what an attempt asks of an LLM
//! provider: `"tokens"` (the request's own prompt + completion tokens) or `"money"` (those
//! tokens at the price of the provider the attempt goes to). The policy knows no provider:
//! the plan, which does, resolves a derived cost into one figure per failover slot
//! ([`AttemptCost::resolved`]), and the caps then count in that unit.
//!
//! Rule: an attempt of cost `c`, the first included, is sent iff `spent_request + c ≤
//! per_request_cap` and `spent_global + c ≤ global_cap`. A cap is a ceiling, as the word
//! promises (a spending cap the first attempts could pass would bound nothing once a storm
//! is over): once the client's spend reaches `global_cap`, new requests fail `cost-cap`
//! without an attempt.

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

/// `attempt_cost = 2.5`, `attempt_cost = "tokens"` or `attempt_cost = "money"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AttemptCost {
    /// The same cost for every attempt.
    Fixed(f64),
    /// Derived from each attempt's provider, as written.
    Derived(CostUnit),
    /// A derived cost resolved by the plan: the cost of an attempt sent to each failover
    /// slot (one figure without failover). Never written in a scenario.
    #[serde(skip_deserializing)]
    Resolved { unit: CostUnit, per_slot: Vec<f64> },
}

/// What a derived attempt cost counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CostUnit {
    /// The request's prompt + completion tokens.
    Tokens,
    /// Those tokens at the provider's price, in money units.
    Money,
}

impl Default for AttemptCost {
    fn default() -> Self {
        AttemptCost::Fixed(1.0)
    }
}

impl AttemptCost {
    /// The cost of an attempt sent to failover slot `slot` (slot 0 without failover). A
    /// derived cost not yet resolved costs nothing: the plan refuses such a config.
    pub fn at(&self, slot: usize) -> f64 {
        match self {
            AttemptCost::Fixed(c) => *c,
            AttemptCost::Derived(_) => 0.0,
            AttemptCost::Resolved { per_slot, .. } => per_slot
                .get(slot)
                .or(per_slot.last())
                .copied()
                .unwrap_or(0.0),
        }
    }

    /// A derived cost with each slot's figure, as the plan computed it from the providers.
    pub fn resolved(unit: CostUnit, per_slot: Vec<f64>) -> AttemptCost {
        AttemptCost::Resolved { unit, per_slot }
    }
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
    /// Would one more attempt of `cost` fit? `None` = yes, else the cap that stops it.
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

    #[test]
    fn attempt_cost_is_a_number_or_a_unit_and_resolves_per_slot() {
        #[derive(Deserialize)]
        struct T {
            attempt_cost: AttemptCost,
        }
        let parse = |s: &str| toml::from_str::<T>(s).map(|t| t.attempt_cost);
        assert_eq!(parse("attempt_cost = 2").unwrap(), AttemptCost::Fixed(2.0));
        assert_eq!(
            parse("attempt_cost = \"tokens\"").unwrap(),
            AttemptCost::Derived(CostUnit::Tokens)
        );
        assert!(parse("attempt_cost = \"tokenz\"").is_err());
        let r = AttemptCost::resolved(CostUnit::Money, vec![0.5, 0.25]);
        assert_eq!((r.at(0), r.at(1), r.at(7)), (0.5, 0.25, 0.25));
        assert_eq!(AttemptCost::Fixed(3.0).at(4), 3.0);
    }
}
