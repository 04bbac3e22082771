//! Which provider each attempt goes to once every provider has a breaker of its own.
//!
//! The failover rule ([`FailoverConfig::slot`]) says where an attempt *should* go. A provider
//! in an outage should not be asked at all, though: with a breaker per provider, an attempt
//! whose provider's breaker refuses it moves on to the next provider of the list whose
//! breaker lets it through, and the request stays there (a request never goes back to a
//! provider it moved away from, as the rule itself never does). One provider's breaker
//! opening shuts that provider alone, not the config's whole client: that is why, with
//! failover, the config's `breaker` settings build one breaker per provider instead of one
//! for the client. When every provider from the request's place on is refused, the attempt
//! is refused ([`super::GiveUpReason::BreakerOpen`]).

use std::time::Duration;

use super::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
use super::failover::FailoverConfig;

/// The failover rule and, when the config has breaker settings, a breaker per provider.
#[derive(Debug, Clone)]
pub struct ProviderRouter {
    failover: FailoverConfig,
    /// One per provider of [`FailoverConfig::providers`], in its order (empty: no breakers).
    breakers: Vec<CircuitBreaker>,
}

/// Where an attempt goes: the provider's index in the failover list, and whether it takes
/// that provider's half-open probe slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub slot: usize,
    pub probe: bool,
}

impl ProviderRouter {
    /// The router of `failover`, with a breaker per provider from `failover.breaker`, else
    /// from `fallback` (the config's own breaker settings), else none.
    pub fn new(failover: &FailoverConfig, fallback: Option<&BreakerConfig>) -> ProviderRouter {
        let breakers = failover
            .breaker
            .as_ref()
            .or(fallback)
            .map(|b| failover.providers.iter().map(|_| CircuitBreaker::new(b)))
            .into_iter()
            .flatten()
            .collect();
        ProviderRouter {
            failover: failover.clone(),
            breakers,
        }
    }

    /// Where 1-based attempt `attempt` goes, for a request whose earlier attempts went no
    /// further down the list than `floor`: the first provider from the rule's slot (or
    /// `floor`, if later) on whose breaker allows it; `None` when every one refuses.
    pub fn route(&mut self, now: Duration, attempt: u32, floor: usize) -> Option<Route> {
        let from = self.failover.slot(attempt).max(floor);
        if self.breakers.is_empty() {
            return Some(Route {
                slot: from,
                probe: false,
            });
        }
        (from..self.breakers.len()).find_map(|slot| {
            let (allowed, probe) = self.breakers[slot].allow(now);
            allowed.then_some(Route { slot, probe })
        })
    }

    /// Where [`Self::route`] would send attempt `attempt` now, without taking a probe's
    /// place or moving a breaker (`None`: every provider would refuse it).
    pub fn peek(&self, now: Duration, attempt: u32, floor: usize) -> Option<usize> {
        let from = self.failover.slot(attempt).max(floor);
        if self.breakers.is_empty() {
            return Some(from);
        }
        (from..self.breakers.len()).find(|&slot| self.breakers[slot].would_allow(now))
    }

    /// Records the outcome of an attempt sent to provider `slot`.
    pub fn record(&mut self, now: Duration, slot: usize, failure: bool) {
        if let Some(b) = self.breakers.get_mut(slot) {
            b.record(now, failure);
        }
    }

    /// A probe sent to provider `slot` was abandoned without an outcome.
    pub fn cancel_probe(&mut self, slot: usize) {
        if let Some(b) = self.breakers.get_mut(slot) {
            b.cancel_probe();
        }
    }

    /// Provider `slot`'s breaker state (`None` without breakers).
    pub fn state(&self, slot: usize) -> Option<BreakerState> {
        self.breakers.get(slot).map(CircuitBreaker::state)
    }

    /// Takes every provider's transitions since the last call: `(provider slot, at, from, to)`.
    pub fn take_transitions(&mut self) -> Vec<(usize, Duration, BreakerState, BreakerState)> {
        let mut out = Vec::new();
        for (slot, b) in self.breakers.iter_mut().enumerate() {
            out.extend(
                b.take_transitions()
                    .into_iter()
                    .map(|(at, from, to)| (slot, at, from, to)),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BreakerState::*;

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    fn router(breaker: bool) -> ProviderRouter {
        let failover = FailoverConfig {
            providers: vec!["a".into(), "b".into(), "c".into()],
            same_provider_retries: 1,
            breaker: breaker.then(|| BreakerConfig {
                failure_threshold: Some(3),
                failure_rate: None,
                window: 20,
                min_calls: 10,
                open_for: s(30),
                half_open_probes: 1,
            }),
            bulkhead: None,
        };
        ProviderRouter::new(&failover, None)
    }

    fn slot(r: &mut ProviderRouter, now: u64, attempt: u32, floor: usize) -> Option<usize> {
        r.route(s(now), attempt, floor).map(|r| r.slot)
    }

    #[test]
    fn without_breakers_the_rule_and_the_floor_decide() {
        let mut r = router(false);
        let got: Vec<_> = (1..=4).map(|n| slot(&mut r, 0, n, 0)).collect();
        assert_eq!(got, [Some(0), Some(0), Some(1), Some(2)]);
        assert_eq!(slot(&mut r, 0, 1, 2), Some(2), "never back up the list");
        r.record(s(0), 0, true);
        assert_eq!(r.state(0), None);
        assert!(r.take_transitions().is_empty());
    }

    #[test]
    fn an_open_provider_is_skipped_until_its_probe_succeeds() {
        let mut r = router(true);
        for _ in 0..2 {
            assert_eq!(slot(&mut r, 1, 1, 0), Some(0));
            r.record(s(1), 0, true);
        }
        assert_eq!(r.state(0), Some(Closed), "two failures of three");
        assert_eq!(slot(&mut r, 2, 1, 0), Some(0));
        r.record(s(2), 0, true);
        assert_eq!(r.state(0), Some(Open));
        // While `a` is open, first tries and same-provider retries go to `b`.
        assert_eq!(slot(&mut r, 3, 1, 0), Some(1));
        assert_eq!(slot(&mut r, 31, 2, 0), Some(1), "open for 30 s");
        // After open_for one probe reaches `a`; the next first try does not.
        assert_eq!(
            r.route(s(32), 1, 0),
            Some(Route {
                slot: 0,
                probe: true
            })
        );
        assert_eq!(slot(&mut r, 32, 1, 0), Some(1));
        r.record(s(33), 0, false);
        assert_eq!(slot(&mut r, 33, 1, 0), Some(0), "the probe closed it");
        let t = r.take_transitions();
        assert_eq!(
            t,
            [
                (0, s(2), Closed, Open),
                (0, s(32), Open, HalfOpen),
                (0, s(33), HalfOpen, Closed)
            ]
        );
    }

    #[test]
    fn every_provider_open_refuses() {
        let mut r = router(true);
        for p in 0..3 {
            for _ in 0..3 {
                r.record(s(0), p, true);
            }
        }
        assert_eq!(slot(&mut r, 1, 1, 0), None);
        // `c` alone recovers: an attempt past `a` and `b` reaches it.
        assert_eq!(slot(&mut r, 31, 1, 2), Some(2));
    }

    /// A bulkhead per provider trusts the peek to name the provider routing then picks:
    /// over a long seeded walk of routes, outcomes and abandoned probes through every
    /// breaker state, the two never differ, and peeking moves nothing.
    #[test]
    fn peek_names_the_provider_route_picks() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut r = router(true);
        let mut states = std::collections::HashSet::new();
        let mut t = Duration::ZERO;
        for _ in 0..20_000 {
            t += Duration::from_millis(rng.gen_range(0..3_000));
            let (attempt, floor) = (rng.gen_range(1..=4), rng.gen_range(0..3));
            let peeked = r.peek(t, attempt, floor);
            assert_eq!(r.peek(t, attempt, floor), peeked, "peeking moves nothing");
            let routed = r.route(t, attempt, floor);
            assert_eq!(routed.map(|x| x.slot), peeked, "at {t:?}");
            states.extend((0..3).filter_map(|p| r.state(p)));
            if let Some(route) = routed {
                if route.probe && rng.gen_bool(0.2) {
                    r.cancel_probe(route.slot);
                } else {
                    r.record(t, route.slot, rng.gen_bool(0.6));
                }
            }
        }
        assert_eq!(states.len(), 3, "the walk saw every breaker state");
    }
}
