//! A fleet of client instances of one retry config: real callers are many service instances,
//! each with its own SDK client, so each with its own budget, breaker and cost ledger. A
//! fleet's budgets drain separately: N quotas allow N times the retries of one before all
//! are empty.
//!
//! Which instance sends a logical request is fixed by the request's id alone: request `id`
//! belongs to instance `id mod N`. Ids are the arrival's index in the run's seeded schedule
//! (for a closed loop, `n × users + user`), the same in both engines, so the assignment is
//! the same in the simulator and on real sockets, every instance gets its exact share of the
//! load, and a closed loop whose user count is a multiple of N keeps each user on one
//! instance.

use std::num::NonZeroU32;

use super::client::RetryClient;
use super::config::RetryConfig;

/// N independent [`RetryClient`]s built from one config.
#[derive(Debug)]
pub struct Fleet {
    clients: Vec<RetryClient>,
}

impl Fleet {
    /// `size` fresh clients of `config`.
    pub fn new(config: &RetryConfig, size: NonZeroU32) -> Fleet {
        let first = RetryClient::new(config);
        let mut clients = Vec::with_capacity(size.get() as usize);
        clients.extend((1..size.get()).map(|_| first.sibling()));
        clients.push(first);
        // The first-built client serves instance 0, as before: the order is the ids'.
        clients.rotate_right(1);
        Fleet { clients }
    }

    /// The instance that sends logical request `id`.
    #[inline]
    pub fn instance_of(&self, id: u64) -> u32 {
        // The fleet has at most u32::MAX instances, so the remainder fits. A fleet of one
        // (most configs) skips the division, the costliest instruction of a request start.
        match self.clients.len() as u64 {
            1 => 0,
            n => (id % n) as u32,
        }
    }

    /// Instance `i`'s client (`i` as [`Fleet::instance_of`] gave it).
    #[inline]
    pub fn client_mut(&mut self, i: u32) -> &mut RetryClient {
        &mut self.clients[i as usize]
    }

    /// Instance `i`'s client.
    #[inline]
    pub fn client(&self, i: u32) -> &RetryClient {
        &self.clients[i as usize]
    }

    /// The instances, instance `i` at index `i`: for a caller that keeps the clients of
    /// several fleets in one list, so that a request finds its own with one look-up.
    pub fn into_clients(self) -> Vec<RetryClient> {
        self.clients
    }

    /// Number of instances.
    pub fn size(&self) -> u32 {
        self.clients.len() as u32
    }

    /// The config every instance was built from.
    pub fn config(&self) -> &RetryConfig {
        self.clients[0].config()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{preset, AttemptOutcome, Decision, GiveUpReason, Now, Response};
    use rand::SeedableRng;
    use std::time::Duration;

    /// Retries one always-failing request per instance until every instance's budget refuses.
    #[test]
    fn each_instance_drains_its_own_quota() {
        let config = preset("aws-standard").unwrap();
        let mut fleet = Fleet::new(&config, NonZeroU32::new(10).unwrap());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let now = Now::virtual_at(Duration::ZERO);
        let fail = AttemptOutcome::Response(Response::status(503));
        let mut retries = 0u64;
        for id in 0..10_000u64 {
            let i = fleet.instance_of(id);
            let c = fleet.client_mut(i);
            let mut req = c.start(now, "GET", None);
            loop {
                let _ = c.before_attempt(now, &mut req);
                match c.on_outcome(now, &mut req, &fail, &mut rng) {
                    Decision::Retry { .. } => retries += 1,
                    Decision::GiveUp { reason, .. } => {
                        assert!(matches!(
                            reason,
                            GiveUpReason::MaxAttempts | GiveUpReason::BudgetRefused
                        ));
                        break;
                    }
                    Decision::Success => unreachable!("every attempt fails"),
                }
            }
            c.finish(now, req);
        }
        // 500 tokens at 14 per retry: 35 retries per instance, nothing refills them.
        assert_eq!(retries, 10 * (500 / 14));
        assert_eq!(fleet.instance_of(23), 3);
    }
}
