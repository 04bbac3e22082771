//! Which ways through the client a config's stages let it take, told once per config: a
//! config without a stage then pays one test per attempt instead of one per stage it does
//! not have. The short permit is that of a config with no stage before the send but the
//! retry itself: no cost cap, bulkhead, concurrency limit, breaker or failover, and one
//! fixed cost per attempt (the storms' presets).

use super::{
    deadline, AttemptOutcome, Decision, GiveUpReason, Now, OutcomeClass, Permit, RequestState,
    RetryClient,
};
use crate::policy::backoff::{Backoff, Jitter};
use crate::policy::budget::BudgetConfig;
use crate::policy::bulkhead::Bulkheads;
use crate::policy::config::RetryConfig;
use crate::policy::cost::AttemptCost;
use crate::policy::retry_after::HintHeader;
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
    /// A breaker, a bulkhead, a concurrency limit or a rate limiter learns from an
    /// outcome: without any, an outcome goes from its class to the retry's decision with
    /// one test for all four.
    pub outcome_stages: bool,
    /// The config reads a header of a failed answer (a delay hint, or `x-should-retry`):
    /// without one every failure's hint is absent, told without looking at the answer.
    pub hints: bool,
    /// Every retry goes at once (no backoff, no jitter, no hint header): the delay is zero
    /// without a look-up, and the backoff sequence only counts on.
    pub no_wait: bool,
    /// The bare way ([`RetryClient::bare_for`]): the short permit's config with no stage
    /// after the send either (no rate limiter, budget, hint header) and no wait between
    /// tries. The naive storms' configs, most of a storm's attempts.
    pub bare: bool,
    /// No breaker, bulkhead, concurrency limit or budget: a request's end has nothing to
    /// give back.
    pub ends_free: bool,
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
        let limiter = config.rate_limiter.build().is_some();
        let hint_header = config.retry_after.header != HintHeader::None;
        let budget = !matches!(config.budget, BudgetConfig::None);
        let plain_cost = fixed_cost.filter(|_| plain);
        let outcome_stages = watches_breaker || places || limiter;
        let hints = hint_header || config.retry_on.x_should_retry;
        let no_wait = matches!(config.backoff, Backoff::None)
            && config.jitter == Jitter::None
            && !hint_header;
        Paths {
            plain_cost,
            fixed_cost,
            watches_breaker,
            holds_nothing: !(watches_breaker || places),
            outcome_stages,
            hints,
            no_wait,
            bare: plain_cost.is_some() && !outcome_stages && !hints && no_wait && !budget,
            ends_free: !(watches_breaker || places || budget),
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
        debug_assert_eq!(
            paths.outcome_stages,
            breaker || places || self.limiter.is_some()
        );
        debug_assert!(!(paths.bare || paths.ends_free) || self.budget.is_none());
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

/// What an attempt taken the bare way carries ([`RetryClient::take_bare_attempt`]): the
/// rest of a [`Permit::Send`] is fixed on that way (no deadline, no provider).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BareSend {
    /// 1-based attempt number.
    pub attempt: u32,
    /// The config's per-try timeout (no deadline cuts it).
    pub timeout: Option<Duration>,
    /// Attach an `Idempotency-Key` header.
    pub idempotency_key: bool,
}

impl RetryClient {
    /// Whether `req` takes the bare way: a config with [`Paths::bare`], and a request with
    /// no deadline (one inherited from upstream counts). On it the permit and the outcome
    /// come to a few tests inline in the session, with none of the stages' checks and no
    /// call; what they decide is what the long ways decide for such a request.
    #[inline(always)]
    pub(crate) fn bare_for(&self, req: &RequestState) -> bool {
        self.shared.paths.bare && req.deadline_at.is_none()
    }

    /// [`Self::before_attempt`] on the bare way when the attempt goes: taken and counted
    /// in `req`. `None` when it may not go (the request ended, or its attempts are used
    /// up), with `req` untouched: the long way then refuses it and says why.
    #[inline(always)]
    pub(crate) fn take_bare_attempt(&mut self, req: &mut RequestState) -> Option<BareSend> {
        let config = &self.shared.config;
        if req.ended.is_some() || req.attempts >= config.max_attempts {
            return None;
        }
        let cost = self.shared.paths.plain_cost.unwrap_or_default();
        req.attempts += 1;
        req.outstanding += 1;
        req.awaiting_outcome = true;
        req.cost_spent += cost;
        self.ledger.spent += cost;
        Some(BareSend {
            attempt: req.attempts,
            timeout: config.per_try_timeout,
            idempotency_key: config.idempotency_key && !req.idempotent,
        })
    }

    /// [`Self::on_outcome`] on the bare way: the class, then the blockers a failure can
    /// meet there (the method, the attempts), in the long way's order. No budget, breaker,
    /// hint or deadline takes part, no retry slot is held, and the wait is zero, so no
    /// time and no draw comes in.
    #[inline(always)]
    pub(crate) fn on_bare_outcome(
        &mut self,
        req: &mut RequestState,
        outcome: &AttemptOutcome<'_>,
    ) -> Decision {
        req.awaiting_outcome = false;
        let config = &self.shared.config;
        let c = self.shared.statuses.classify(&config.retry_on, outcome);
        let reason = match c.class {
            OutcomeClass::Success => {
                req.ended = Some(GiveUpReason::NonRetryable); // any later permit refuses
                return Decision::Success;
            }
            OutcomeClass::NonRetryable => GiveUpReason::NonRetryable,
            OutcomeClass::LocalResource => GiveUpReason::LocalResource,
            OutcomeClass::Transient | OutcomeClass::Throttling => {
                if !req.idempotent
                    && !c.never_sent
                    && !config.retry_non_idempotent
                    && !config.idempotency_key
                {
                    GiveUpReason::NotIdempotent
                } else if req.attempts >= config.max_attempts {
                    GiveUpReason::MaxAttempts
                } else {
                    // What `delay` does on a way with no wait.
                    req.retries_since_reset += 1;
                    return Decision::Retry {
                        after: Duration::ZERO,
                        class: c.class,
                    };
                }
            }
        };
        req.ended = Some(reason);
        Decision::GiveUp {
            reason,
            class: c.class,
        }
    }
}

#[cfg(test)]
mod tests;
