//! Failover between providers: which provider each attempt of a request goes to.
//!
//! A config lists providers in order. A blip on a provider usually recovers within a
//! retry's backoff, so the first `same_provider_retries` retries stay on the provider of the
//! first try; an outage does not, so every later retry moves on to the next provider of the
//! list and stays on the last one once it gets there (going back would send the request to
//! a provider it has already given up on).
//!
//! Providers are addressed by path (`/providers/NAME/...` on the built-in target), so the
//! answer to "where does this attempt go" is the attempt's path: the engines send attempt
//! `n` of a request to [`FailoverConfig::path_to`] of the load's path and the slot the
//! policy picked for it ([`super::provider_breakers`]: the rule's slot, or a later one when
//! the rule's provider has its breaker open).

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use super::breaker::BreakerConfig;
use super::bulkhead::BulkheadConfig;
use super::error::PolicyError;

/// Where providers live on a target: `/providers/NAME` and below.
pub const PROVIDERS_PREFIX: &str = "/providers/";

/// The longest failover list (the simulator keeps an attempt's provider in a byte).
pub const MAX_PROVIDERS: usize = 64;

/// `failover = { providers = ["a", "b"], same_provider_retries = 1 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailoverConfig {
    /// Providers in the order they are tried; the first takes every first try.
    pub providers: Vec<String>,
    /// Retries that stay on the first provider before failing over (default 1).
    #[serde(default = "default_same")]
    pub same_provider_retries: u32,
    /// A breaker per provider (`breaker = { failure_threshold = 3, open_for = "30s" }`);
    /// without one the config's own `breaker` settings serve each provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerConfig>,
    /// A bulkhead per provider (`bulkhead = { max_concurrent = 10 }`): each provider's
    /// attempts in flight bounded on their own (see [`super::bulkhead`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulkhead: Option<BulkheadConfig>,
}

fn default_same() -> u32 {
    1
}

/// `template` (a path under `/providers/NAME/`) sent to provider `name` instead: the same
/// call at another provider. A path under no provider is left as it is.
pub fn path_at<'a>(template: &'a str, name: &str) -> Cow<'a, str> {
    let Some(rest) = template.strip_prefix(PROVIDERS_PREFIX) else {
        return Cow::Borrowed(template);
    };
    let tail = rest.find('/').map_or("", |i| &rest[i..]);
    if rest.len() - tail.len() == name.len() && rest.starts_with(name) {
        return Cow::Borrowed(template);
    }
    Cow::Owned(format!("{PROVIDERS_PREFIX}{name}{tail}"))
}

impl FailoverConfig {
    /// The index in [`Self::providers`] that 1-based attempt `attempt` goes to.
    pub fn slot(&self, attempt: u32) -> usize {
        let retry = attempt.saturating_sub(1);
        let moved = retry.saturating_sub(self.same_provider_retries);
        let last = self.providers.len().saturating_sub(1);
        usize::try_from(moved).map_or(last, |m| m.min(last))
    }

    /// The provider attempt `attempt` goes to.
    pub fn provider(&self, attempt: u32) -> &str {
        &self.providers[self.slot(attempt)]
    }

    /// The path attempt `attempt` is sent to: `template` with the provider segment after
    /// [`PROVIDERS_PREFIX`] replaced by the attempt's provider. A template outside the
    /// prefix is returned as it is (the scenario's validation refuses that pairing).
    pub fn path<'a>(&self, template: &'a str, attempt: u32) -> Cow<'a, str> {
        self.path_to(template, self.slot(attempt))
    }

    /// `template` sent to the provider at index `slot` of [`Self::providers`].
    pub fn path_to<'a>(&self, template: &'a str, slot: usize) -> Cow<'a, str> {
        path_at(template, &self.providers[slot])
    }

    /// At least one provider, none named twice, none empty or holding a `/`.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.providers.len() > MAX_PROVIDERS {
            return Err(PolicyError::invalid(
                "failover.providers",
                self.providers.len(),
                format!("at most {MAX_PROVIDERS} providers"),
            ));
        }
        if self.providers.is_empty() {
            return Err(PolicyError::invalid(
                "failover.providers",
                "[]",
                "at least one provider name",
            ));
        }
        for (i, name) in self.providers.iter().enumerate() {
            if name.is_empty() || name.contains('/') {
                return Err(PolicyError::invalid(
                    "failover.providers",
                    format!("{name:?}"),
                    "provider names without '/'",
                ));
            }
            if self.providers[..i].contains(name) {
                return Err(PolicyError::invalid(
                    "failover.providers",
                    format!("{name:?}"),
                    "each provider named once",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(providers: &[&str], same: u32) -> FailoverConfig {
        FailoverConfig {
            providers: providers.iter().map(|s| s.to_string()).collect(),
            same_provider_retries: same,
            breaker: None,
            bulkhead: None,
        }
    }

    #[test]
    fn first_retry_stays_later_ones_move_on_and_stay_on_the_last() {
        let f = cfg(&["a", "b", "c"], 1);
        let got: Vec<&str> = (1..=6).map(|n| f.provider(n)).collect();
        assert_eq!(got, ["a", "a", "b", "c", "c", "c"]);
        let f = cfg(&["a", "b"], 0);
        let got: Vec<&str> = (1..=3).map(|n| f.provider(n)).collect();
        assert_eq!(got, ["a", "b", "b"]);
        let f = cfg(&["a"], 5);
        assert!((1..=20).all(|n| f.provider(n) == "a"));
        assert_eq!(cfg(&["a", "b"], u32::MAX).provider(u32::MAX), "a");
    }

    #[test]
    fn path_swaps_only_the_provider_segment() {
        let f = cfg(&["a", "bee"], 1);
        assert_eq!(f.path("/providers/a/v1/chat", 1), "/providers/a/v1/chat");
        assert!(matches!(
            f.path("/providers/a/v1/chat", 2),
            Cow::Borrowed(_)
        ));
        assert_eq!(f.path("/providers/a/v1/chat", 3), "/providers/bee/v1/chat");
        assert_eq!(f.path("/providers/a", 3), "/providers/bee");
        assert_eq!(f.path("/providers/ab/x", 1), "/providers/a/x");
        assert_eq!(f.path("/api/x", 3), "/api/x");
    }

    #[test]
    fn validation_names_the_field() {
        for bad in [
            cfg(&[], 1),
            cfg(&["a", "a"], 1),
            cfg(&["a/b"], 1),
            cfg(&[""], 0),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("failover.providers"), "{e}");
        }
        cfg(&["a", "b"], 2).validate().unwrap();
    }
}
