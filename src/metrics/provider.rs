//! What each provider counted itself (arrivals, throttles, tokens), and the token figures a
//! config's summary draws from them. Both engines fill the same [`ProviderStats`], so a
//! figure means the same live and simulated.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::policy::BreakerState;

/// One provider's own counts over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderStats {
    pub name: String,
    /// Requests that reached the provider, whatever happened to them next.
    pub arrivals: u64,
    /// Arrivals answered 429 by the provider's own limits (fault windows not included).
    pub throttled: u64,
    /// Arrivals answered 200 after service.
    pub served: u64,
    /// Tokens (prompt + completion) of every arrival: what the attempts cost.
    pub tokens_received: u64,
    /// Tokens of the arrivals that were first attempts: what the requests would have cost
    /// without a single retry.
    pub tokens_first_attempts: u64,
    /// Tokens of the arrivals answered 200.
    pub tokens_served: u64,
    /// Arrivals of a request this provider had answered 429, no earlier than the
    /// `Retry-After` it gave (by the provider's own clock).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_honoured: u64,
    /// Arrivals of such a request before its `Retry-After` was over.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_early: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProviderStats {
    pub fn new(name: &str) -> ProviderStats {
        ProviderStats {
            name: name.to_string(),
            ..ProviderStats::default()
        }
    }

    /// An arrival of `tokens`; `first` when it is a request's first attempt.
    pub fn arrive(&mut self, tokens: u64, first: bool) {
        self.arrivals += 1;
        self.tokens_received += tokens;
        if first {
            self.tokens_first_attempts += tokens;
        }
    }

    /// Adds another run's counts of the same provider.
    pub fn merge(&mut self, o: &ProviderStats) {
        self.arrivals += o.arrivals;
        self.throttled += o.throttled;
        self.served += o.served;
        self.tokens_received += o.tokens_received;
        self.tokens_first_attempts += o.tokens_first_attempts;
        self.tokens_served += o.tokens_served;
        self.retry_after_honoured += o.retry_after_honoured;
        self.retry_after_early += o.retry_after_early;
    }

    /// A request the provider throttled before came back: `honoured` when no earlier than
    /// its `Retry-After` ([`crate::scenario::provider::RetryAfterWatch::arrive`]).
    pub fn returned(&mut self, honoured: Option<bool>) {
        match honoured {
            Some(true) => self.retry_after_honoured += 1,
            Some(false) => self.retry_after_early += 1,
            None => {}
        }
    }
}

/// A config's token spending over every provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenFigures {
    /// Tokens of every attempt that reached a provider.
    pub spent: u64,
    /// Tokens of the attempts answered 200.
    pub served: u64,
    /// `spent - served`: tokens of attempts that failed.
    pub wasted: u64,
    /// `wasted / spent` (0 when nothing was spent).
    pub wasted_share: f64,
    /// `spent` / tokens of the first attempts: how many times the requests' own cost the
    /// retries spent (1.00 = no retry reached a provider). `null` when no first attempt did.
    pub cost_amplification: Option<f64>,
}

impl TokenFigures {
    pub fn of(providers: &[ProviderStats]) -> TokenFigures {
        let spent: u64 = providers.iter().map(|p| p.tokens_received).sum();
        let served: u64 = providers.iter().map(|p| p.tokens_served).sum();
        let first: u64 = providers.iter().map(|p| p.tokens_first_attempts).sum();
        let wasted = spent.saturating_sub(served);
        TokenFigures {
            spent,
            served,
            wasted,
            wasted_share: if spent == 0 {
                0.0
            } else {
                wasted as f64 / spent as f64
            },
            cost_amplification: (first > 0).then(|| spent as f64 / first as f64),
        }
    }
}

/// One breaker transition of a provider, as a config's client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerTransition {
    /// Seconds from the run's start.
    pub at_s: f64,
    pub from: BreakerState,
    pub to: BreakerState,
}

/// What a config's client sent one provider of its failover list: the client's side of the
/// provider's own [`ProviderStats::arrivals`], and that provider's breaker transitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderRoute {
    pub name: String,
    /// Attempts the client sent this provider.
    pub attempts: u64,
    /// The provider's breaker transitions in time order (empty without breakers); with
    /// several client instances, every instance's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaker_transitions: Vec<BreakerTransition>,
}

/// The client-side routes of a config with failover, indexed like its provider list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Routes(Vec<ProviderRoute>);

impl Routes {
    fn at(&mut self, slot: usize) -> &mut ProviderRoute {
        if self.0.len() <= slot {
            self.0.resize_with(slot + 1, ProviderRoute::default);
        }
        &mut self.0[slot]
    }

    /// An attempt sent to provider `slot`.
    pub fn attempt(&mut self, slot: usize) {
        self.at(slot).attempts += 1;
    }

    /// Provider `slot`'s breaker went `from` → `to` at `at`.
    pub fn transition(&mut self, slot: usize, at: Duration, from: BreakerState, to: BreakerState) {
        self.at(slot).breaker_transitions.push(BreakerTransition {
            at_s: at.as_secs_f64(),
            from,
            to,
        });
    }

    /// Adds another recorder's routes of the same config.
    pub fn merge(&mut self, o: &Routes) {
        for (slot, r) in o.0.iter().enumerate() {
            let mine = self.at(slot);
            mine.attempts += r.attempts;
            mine.breaker_transitions
                .extend(r.breaker_transitions.iter().cloned());
            mine.breaker_transitions
                .sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        }
    }

    /// The routes named after `providers` (the config's failover list); empty without one.
    pub fn named(&self, providers: &[String]) -> Vec<ProviderRoute> {
        providers
            .iter()
            .enumerate()
            .map(|(slot, name)| ProviderRoute {
                name: name.clone(),
                ..self.0.get(slot).cloned().unwrap_or_default()
            })
            .collect()
    }
}
