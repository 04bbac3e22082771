//! The simulator's side of providers: each attempt of a config goes to the path of the
//! provider the policy picked for it (the load's path without failover), and the provider
//! that path names charges, throttles and counts it by the very rules the live target uses
//! ([`crate::scenario::provider`]). Attempts are addressed by that pick, the provider's index
//! in the config's failover list (0 without one).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::metrics::provider::{ProviderBook, ProviderStats};
use crate::policy::FailoverConfig;
use crate::scenario::provider::{retry_after_secs, route, Provider, Tokens};

/// One provider of the scenario with its limits and counts.
struct Limited {
    provider: Provider,
    book: ProviderBook,
    /// What one of the load's requests costs at this provider.
    tokens: Tokens,
}

/// The providers one config's attempts reach, with their limits and counts.
pub(crate) struct SimProvider {
    /// Every provider of the scenario, in its order (those never reached count zero).
    each: Vec<Limited>,
    /// The path of each failover slot and the provider it names (one slot without failover).
    routes: Vec<(String, Option<usize>)>,
}

impl SimProvider {
    /// The providers the config's attempts reach from `path`, with the request's tokens read
    /// from the load's headers as the live target reads them from each request; `None` when
    /// no attempt's path names a provider.
    pub(crate) fn for_run(
        providers: &[Provider],
        path: &str,
        headers: &BTreeMap<String, String>,
        failover: Option<&FailoverConfig>,
    ) -> Option<SimProvider> {
        let routes: Vec<(String, Option<usize>)> = match failover {
            Some(f) => (0..f.providers.len())
                .map(|slot| f.path_to(path, slot).into_owned())
                .map(|p| {
                    let r = route(providers, &p);
                    (p, r)
                })
                .collect(),
            None => vec![(path.to_string(), route(providers, path))],
        };
        if routes.iter().all(|(_, r)| r.is_none()) {
            return None;
        }
        Some(SimProvider {
            each: providers
                .iter()
                .map(|p| Limited {
                    book: ProviderBook::new(p),
                    tokens: p.load_tokens(headers),
                    provider: p.clone(),
                })
                .collect(),
            routes,
        })
    }

    /// The path of failover slot `slot`.
    pub(crate) fn path(&self, slot: u8) -> &str {
        &self.routes[usize::from(slot)].0
    }

    /// The provider failover slot `slot` reaches, if its path names one.
    fn index(&self, slot: u8) -> Option<usize> {
        self.routes[usize::from(slot)].1
    }

    /// Attempt `attempt` of request `request` arrives at slot `slot`'s provider at `t`.
    pub(crate) fn arrive(&mut self, slot: u8, (request, attempt): (u64, u32), t: Duration) {
        if let Some(i) = self.index(slot) {
            let e = &mut self.each[i];
            e.book.arrive((request, attempt), e.tokens, t);
        }
    }

    /// Serve (`Ok`) or throttle with the `Retry-After` delay-seconds (`Err`).
    pub(crate) fn admit(&mut self, slot: u8, request: u64, t: Duration) -> Result<(), u64> {
        let Some(i) = self.index(slot) else {
            return Ok(());
        };
        let e = &mut self.each[i];
        match e.book.admit(request, e.tokens, t).retry_after {
            None => Ok(()),
            Some(wait) => Err(retry_after_secs(wait)),
        }
    }

    /// How long slot `slot`'s provider takes to serve (`None`: not a provider's).
    pub(crate) fn latency(&self, slot: u8) -> Option<Duration> {
        let e = &self.each[self.index(slot)?];
        Some(e.provider.latency(e.tokens))
    }

    pub(crate) fn served(&mut self, slot: u8) {
        if let Some(i) = self.index(slot) {
            let e = &mut self.each[i];
            e.book.serve(e.tokens);
        }
    }

    pub(crate) fn into_stats(self) -> Vec<ProviderStats> {
        self.each.into_iter().map(|e| e.book.stats).collect()
    }
}
