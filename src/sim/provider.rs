//! The simulator's side of a provider: the config's requests all name one path, so at most
//! one provider receives them; it is charged, throttled and counted by the very rules the
//! live target uses ([`crate::scenario::provider`]).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::metrics::provider::ProviderStats;
use crate::scenario::provider::{
    retry_after_secs, route, Provider, RateLimiter, Tokens, H_COMPLETION_TOKENS, H_PROMPT_TOKENS,
};

/// The provider one config's requests reach, with its limits and counts.
pub(crate) struct SimProvider {
    index: usize,
    provider: Provider,
    limiter: RateLimiter,
    tokens: Tokens,
    /// Every provider's counts, in the scenario's order (the others stay zero).
    stats: Vec<ProviderStats>,
}

impl SimProvider {
    /// The provider `path` names, with the request's tokens read from the load's headers as
    /// the live target reads them from each request; `None` when the path names none.
    pub(crate) fn for_run(
        providers: &[Provider],
        path: &str,
        headers: &BTreeMap<String, String>,
    ) -> Option<SimProvider> {
        let index = route(providers, path)?;
        let provider = providers[index].clone();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        let tokens = provider.tokens(header(H_PROMPT_TOKENS), header(H_COMPLETION_TOKENS));
        Some(SimProvider {
            index,
            limiter: RateLimiter::new(&provider),
            provider,
            tokens,
            stats: providers
                .iter()
                .map(|p| ProviderStats::new(&p.name))
                .collect(),
        })
    }

    pub(crate) fn arrive(&mut self, attempt: u32) {
        self.stats[self.index].arrive(self.tokens.total(), attempt <= 1);
    }

    /// Serve (`Ok`) or throttle with the `Retry-After` delay-seconds (`Err`).
    pub(crate) fn admit(&mut self, t: Duration) -> Result<(), u64> {
        match self.limiter.admit(t, self.tokens).retry_after {
            None => Ok(()),
            Some(wait) => {
                self.stats[self.index].throttled += 1;
                Err(retry_after_secs(wait))
            }
        }
    }

    /// How long serving one request takes.
    pub(crate) fn latency(&self) -> Duration {
        self.provider.latency(self.tokens)
    }

    pub(crate) fn served(&mut self) {
        let s = &mut self.stats[self.index];
        s.served += 1;
        s.tokens_served += self.tokens.total();
    }

    pub(crate) fn into_stats(self) -> Vec<ProviderStats> {
        self.stats
    }
}
