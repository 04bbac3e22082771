//! The permit of a config with no stage before the send but the retry itself: no cost cap,
//! bulkhead, concurrency limit, breaker or failover, and one fixed cost per attempt (the
//! storms' presets). Which path a config takes is told once, when its client is built, so
//! that such a config pays one test per attempt instead of one per stage it does not have.

use super::{deadline, GiveUpReason, Now, Permit, RequestState, RetryClient};
use crate::policy::cost::AttemptCost;

impl RetryClient {
    /// The fixed cost of an attempt when [`Self::before_plain_attempt`] answers for this
    /// client (it has none of the stages that path leaves out), else `None`.
    pub(super) fn plain_attempt_cost(&self) -> Option<f64> {
        let config = &self.shared.config;
        let AttemptCost::Fixed(cost) = config.attempt_cost else {
            return None;
        };
        let stages = config.cost.is_some()
            || config.hedge_on_per_try_timeout
            || self.bulkhead.is_some()
            || self.concurrency.is_some()
            || self.breaker.is_some()
            || self.router.is_some();
        (!stages).then_some(cost)
    }

    /// [`Self::before_attempt`] for a client without the stages it leaves out (see
    /// [`Self::plain_attempt_cost`]), `cost` being its attempts' fixed cost: what the long
    /// way does when each of those stages is absent, in the same order (the checks a config
    /// without the stage passes are left out: its bulkhead never rejected the request, no
    /// place is taken, the attempt goes to no provider).
    #[inline(always)]
    pub(super) fn before_plain_attempt(
        &mut self,
        now: Now,
        req: &mut RequestState,
        cost: f64,
    ) -> Permit {
        if let Some(reason) = req.ended {
            return Permit::Refuse(reason);
        }
        let remaining = req.remaining_deadline(now);
        if remaining.is_some_and(|r| r.is_zero()) {
            return self.refuse(now, req, GiveUpReason::Deadline);
        }
        let config = &self.shared.config;
        if req.attempts >= config.max_attempts {
            return self.refuse(now, req, GiveUpReason::MaxAttempts);
        }
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
