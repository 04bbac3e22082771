//! The simulator's side of providers: each attempt of a config goes to the path of the
//! provider the policy picked for it (the load's path without failover), and the provider
//! that path names charges, throttles and counts it by the very rules the live target uses
//! ([`crate::scenario::provider`]). Attempts are addressed by their request class and that
//! pick, the provider's index in the failover list of the class's policy (0 without one).

use std::time::Duration;

use crate::metrics::provider::{ProviderBook, ProviderStats};
use crate::policy::failover::path_at;
use crate::policy::{FailoverConfig, RetryConfig};
use crate::scenario::classes::RequestClass;
use crate::scenario::provider::{retry_after_secs, route, Provider, Tokens};

/// Where an attempt goes: its request class, its failover slot, and the model rung of the
/// ladder it was sent to ([`NO_FALLBACK`] for the policy's own attempts).
pub(crate) type Route = (u8, u8, u8);

/// The fallback of an attempt the policy sent.
pub(crate) const NO_FALLBACK: u8 = u8::MAX;

/// A path an attempt goes to and the provider (index) it names, if any.
type Target = (String, Option<usize>);

/// One provider of the scenario with its limits and counts.
struct Limited {
    provider: Provider,
    book: ProviderBook,
}

/// The providers one config's attempts reach, with their limits and counts.
pub(crate) struct SimProvider {
    /// Every provider of the scenario, in its order (those never reached count zero).
    each: Vec<Limited>,
    /// Per request class, the path of each failover slot of the policy it runs under and
    /// the provider it names (one slot without failover).
    routes: Vec<Vec<Target>>,
    /// Per request class, per rung of its policy's ladder: a model rung's path and the
    /// provider it names (`None` for a rung the client answers itself).
    fallbacks: Vec<Vec<Option<Target>>>,
    /// Per request class, what one of its requests costs at each provider; `None` for a
    /// class that draws its token counts per request.
    tokens: Vec<Option<Vec<Tokens>>>,
    classes: Vec<RequestClass>,
    seed: u64,
}

impl SimProvider {
    /// The providers the config's attempts reach from each class's path (under the failover
    /// rule of the policy the class runs under), with each request's tokens taken as the
    /// live target reads them off the request the class sends; `None` when no attempt's
    /// path names a provider.
    pub(crate) fn for_run(
        providers: &[Provider],
        classes: &[RequestClass],
        policies: &[&RetryConfig],
        seed: u64,
    ) -> Option<SimProvider> {
        let failover: Vec<Option<&FailoverConfig>> =
            policies.iter().map(|p| p.failover.as_ref()).collect();
        let routes: Vec<Vec<Target>> = classes
            .iter()
            .zip(&failover)
            .map(|(c, f)| {
                let paths: Vec<String> = match f {
                    Some(f) => (0..f.providers.len())
                        .map(|slot| f.path_to(&c.path, slot).into_owned())
                        .collect(),
                    None => vec![c.path.clone()],
                };
                paths
                    .into_iter()
                    .map(|p| {
                        let r = route(providers, &p);
                        (p, r)
                    })
                    .collect()
            })
            .collect();
        let fallbacks: Vec<Vec<Option<Target>>> = classes
            .iter()
            .zip(policies)
            .map(|(c, p)| {
                p.ladder
                    .iter()
                    .map(|r| {
                        let path = path_at(&c.path, r.model()?).into_owned();
                        let i = route(providers, &path);
                        Some((path, i))
                    })
                    .collect()
            })
            .collect();
        if routes.iter().flatten().all(|(_, r)| r.is_none()) {
            return None;
        }
        Some(SimProvider {
            each: providers
                .iter()
                .map(|p| Limited {
                    book: ProviderBook::new(p),
                    provider: p.clone(),
                })
                .collect(),
            tokens: classes
                .iter()
                .map(|c| {
                    (!c.draws_tokens()).then(|| {
                        providers
                            .iter()
                            .map(|p| p.class_tokens(c, seed, 0))
                            .collect()
                    })
                })
                .collect(),
            routes,
            fallbacks,
            classes: classes.to_vec(),
            seed,
        })
    }

    /// Where an attempt of class `class` goes: failover slot `slot`, or the model rung
    /// `fallback` of its ladder ([`NO_FALLBACK`]: none).
    #[inline]
    fn to(&self, (class, slot, fallback): Route) -> &Target {
        if fallback != NO_FALLBACK {
            if let Some(Some(r)) = self.fallbacks[usize::from(class)].get(usize::from(fallback)) {
                return r;
            }
        }
        &self.routes[usize::from(class)][usize::from(slot)]
    }

    /// The path an attempt goes to.
    pub(crate) fn path(&self, route: Route) -> &str {
        &self.to(route).0
    }

    /// The provider an attempt reaches, if its path names one.
    fn index(&self, route: Route) -> Option<usize> {
        self.to(route).1
    }

    /// What request `request` of class `class` costs at provider `i`.
    #[inline]
    fn tokens(&self, class: u8, i: usize, request: u64) -> Tokens {
        match &self.tokens[usize::from(class)] {
            Some(fixed) => fixed[i],
            None => self.each[i].provider.class_tokens(
                &self.classes[usize::from(class)],
                self.seed,
                request,
            ),
        }
    }

    /// Attempt `attempt` of request `request` arrives at `t` at the provider `route` reaches;
    /// the tokens it charged, if the path names a provider.
    pub(crate) fn arrive(
        &mut self,
        route: Route,
        (request, attempt): (u64, u32),
        t: Duration,
    ) -> Option<u64> {
        let class = route.0;
        let i = self.index(route)?;
        let tokens = self.tokens(class, i, request);
        self.each[i].book.arrive((request, attempt), tokens, t);
        Some(tokens.total())
    }

    /// Serve (`Ok`) or throttle with the `Retry-After` delay-seconds (`Err`).
    pub(crate) fn admit(&mut self, route: Route, request: u64, t: Duration) -> Result<(), u64> {
        let class = route.0;
        let Some(i) = self.index(route) else {
            return Ok(());
        };
        let tokens = self.tokens(class, i, request);
        match self.each[i].book.admit(request, tokens, t).retry_after {
            None => Ok(()),
            Some(wait) => Err(retry_after_secs(wait)),
        }
    }

    /// How long the provider an attempt reaches takes to serve (`None`: not a provider's).
    pub(crate) fn latency(&self, route: Route, request: u64) -> Option<Duration> {
        let i = self.index(route)?;
        Some(
            self.each[i]
                .provider
                .latency(self.tokens(route.0, i, request)),
        )
    }

    pub(crate) fn served(&mut self, route: Route, request: u64) -> Option<u64> {
        let i = self.index(route)?;
        let tokens = self.tokens(route.0, i, request);
        self.each[i].book.serve(tokens);
        Some(tokens.total())
    }

    pub(crate) fn into_stats(self) -> Vec<ProviderStats> {
        self.each.into_iter().map(|e| e.book.stats).collect()
    }
}
