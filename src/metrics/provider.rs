//! What each provider counted itself (arrivals, throttles, tokens), and the token figures a
//! config's summary draws from them. Both engines fill the same [`ProviderStats`], so a
//! figure means the same live and simulated.

use serde::{Deserialize, Serialize};

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
