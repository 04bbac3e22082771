//! Which ways through the client a config's stages let it take, told once per config: a
//! config without a stage then pays one test per attempt instead of one per stage it does
//! not have. The short permit is that of a config with no stage before the send but the
//! retry itself: no cost cap, bulkhead, concurrency limit, breaker or failover, and one
//! fixed cost per attempt (the storms' presets).

use super::{deadline, GiveUpReason, Now, Permit, RequestState, RetryClient};
use crate::policy::bulkhead::Bulkheads;
use crate::policy::config::RetryConfig;
use crate::policy::cost::AttemptCost;
use std::time::Duration;

/// What a config's stages say of the ways through its client. Kept with the config's
/// tables (every instance of a fleet alike), not in each instance.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Paths {
    /// The attempts' fixed cost when the permit takes the short way
    /// ([`RetryClient::before_plain_attempt`]), else `None`.
    pub plain_cost: Option<f64>,
    /// The attempts' cost when it is one figure for every provider: read here, not
    /// matched out of the config per attempt.
    pub fixed_cost: Option<f64>,
    /// A breaker, the client's or its providers', may move: without one an outcome has
    /// no breaker to record nor transitions to collect.
    pub watches_breaker: bool,
    /// No breaker, bulkhead or concurrency limit: a request that ends holds nothing but
    /// its retry slot.
    pub holds_nothing: bool,
}

impl Paths {
    /// The ways of `config`'s client; what [`RetryClient::paths_agree`] checks against
    /// the stages the client builds.
    pub(super) fn of(config: &RetryConfig) -> Paths {
        // With failover the breaker settings serve each provider, through the router.
        let watches_breaker = config.breaker.is_some() || config.failover.is_some();
        let bulkhead = Bulkheads::build(
            config.bulkhead.as_ref(),
            config
                .failover
                .as_ref()
                .and_then(|f| Some((f.bulkhead.as_ref()?, f.providers.len()))),
        )
        .is_some();
        let places = bulkhead || config.concurrency_limit.is_some();
        let fixed_cost = match config.attempt_cost {
            AttemptCost::Fixed(cost) => Some(cost),
            _ => None,
        };
        let plain = !(watches_breaker
            || places
            || config.cost.is_some()
            || config.hedge_on_per_try_timeout);
        Paths {
            plain_cost: fixed_cost.filter(|_| plain),
            fixed_cost,
            watches_breaker,
            holds_nothing: !(watches_breaker || places),
        }
    }
}

impl RetryClient {
    /// The checks every permit starts with, the long way's and the short way's alike, in
    /// this order: a request already ended, its deadline passed, its attempts used up.
    /// `Ok`: the time left before the deadline.
    #[inline(always)]
    pub(super) fn permit_prelude(
        &mut self,
        now: Now,
        req: &mut RequestState,
    ) -> Result<Option<Duration>, Permit> {
        if let Some(reason) = req.ended {
            return Err(Permit::Refuse(reason));
        }
        let remaining = req.remaining_deadline(now);
        if remaining.is_some_and(|r| r.is_zero()) {
            return Err(self.refuse(now, req, GiveUpReason::Deadline));
        }
        if req.attempts >= self.shared.config.max_attempts {
            return Err(self.refuse(now, req, GiveUpReason::MaxAttempts));
        }
        Ok(remaining)
    }

    /// The config's [`Paths`] say what the client's stages are (debug builds check).
    pub(super) fn paths_agree(&self) {
        let paths = self.shared.paths;
        let breaker = self.breaker.is_some() || self.router.is_some();
        let places = self.bulkhead.is_some() || self.concurrency.is_some();
        debug_assert_eq!(paths.watches_breaker, breaker);
        debug_assert_eq!(paths.holds_nothing, !(breaker || places));
        debug_assert!(paths.plain_cost.is_none() || !(breaker || places));
    }

    /// [`Self::before_attempt`] for a client without the stages it leaves out (see
    /// [`Paths::plain_cost`]), `cost` being its attempts' fixed cost: what the long way
    /// does when each of those stages is absent, in the same order (the checks a config
    /// without the stage passes are left out: its bulkhead never rejected the request, no
    /// place is taken, the attempt goes to no provider). Out of line and apart from the
    /// long way, so that it saves no register it does not use.
    ///
    /// Only `now`'s monotonic half comes in: the wall clock is read for an outcome's
    /// HTTP-date `Retry-After` alone, never by a permit, and the stages that could take a
    /// refusal's time further (an outer breaker) are not on this way. Without the wall's
    /// two words every argument has a register; with them the request went on the stack.
    #[inline(never)]
    pub(super) fn before_plain_attempt(
        &mut self,
        mono: Duration,
        req: &mut RequestState,
        cost: f64,
    ) -> Permit {
        let now = Now::virtual_at(mono);
        let remaining = match self.permit_prelude(now, req) {
            Ok(remaining) => remaining,
            Err(refused) => return refused,
        };
        let config = &self.shared.config;
        req.attempts += 1;
        req.outstanding += 1;
        req.awaiting_outcome = true;
        req.cost_spent += cost;
        self.ledger.spent += cost;
        Permit::Send {
            attempt: req.attempts,
            // What `attempt_timeout` says for a config that does not hedge on the per-try
            // timeout.
            timeout: deadline::min_opt(config.per_try_timeout, remaining),
            remaining_deadline: remaining,
            idempotency_key: config.idempotency_key && !req.idempotent,
            provider: None,
        }
    }
}
