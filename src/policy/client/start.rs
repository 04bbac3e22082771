//! A logical request's start, its state written fresh, whole or in place, and its end.

use super::{deadline, Now, RequestState, RetryClient};
use std::time::{Duration, SystemTime};

impl RetryClient {
    /// [`Self::start`] for a call whose idempotency is said rather than read off its method
    /// (a request class that declares it).
    pub fn start_call(
        &mut self,
        now: Now,
        idempotent: bool,
        inherited_deadline: Option<Duration>,
    ) -> RequestState {
        let mut req = RequestState::default();
        self.start_call_in(now, idempotent, inherited_deadline, &mut req);
        req
    }

    /// [`Self::start_call`] into the state of a request that has ended (the session reuses
    /// its boxes), field by field: a whole new state built aside and copied over is read
    /// back in wide loads that stall on the narrow stores that built it. Every field is
    /// named (no `..`), so a field added to the state cannot be left stale here.
    #[inline(always)]
    pub(crate) fn start_call_in(
        &mut self,
        now: Now,
        idempotent: bool,
        inherited_deadline: Option<Duration>,
        req: &mut RequestState,
    ) {
        if let Some(b) = self.budget.as_mut() {
            b.on_request_start(now.mono);
        }
        let RequestState {
            started,
            deadline_at,
            idempotent: is_idempotent,
            attempts,
            retries_since_reset,
            decorrelated_prev,
            last_charge,
            holds_retry_slot,
            awaiting_outcome,
            is_probe,
            holds_bulkhead,
            bulkhead_rejected,
            queued_since,
            bulkhead_slot,
            limit_sample,
            breaker_admitted,
            provider,
            cost_spent,
            ended,
            outstanding,
            hedge_frozen,
            next_hedge_at,
            per_try,
        } = req;
        *started = now.mono;
        *deadline_at =
            deadline::deadline_at(now.mono, self.shared.config.deadline, inherited_deadline);
        *is_idempotent = idempotent;
        *attempts = 0;
        *retries_since_reset = 0;
        *decorrelated_prev = self.shared.nominals.base(false);
        *last_charge = None;
        *holds_retry_slot = false;
        *awaiting_outcome = false;
        *is_probe = false;
        *holds_bulkhead = false;
        *bulkhead_rejected = false;
        *queued_since = None;
        *bulkhead_slot = 0;
        *limit_sample = None;
        *breaker_admitted = false;
        *provider = 0;
        *cost_spent = 0.0;
        *ended = None;
        *outstanding = 0;
        *hedge_frozen = false;
        *next_hedge_at = None;
        match per_try.as_deref_mut() {
            Some(p) if self.shared.config.hedge_on_per_try_timeout => *p = Default::default(),
            _ => *per_try = self.per_try_record(),
        }
    }

    /// Must be called exactly once when the logical request ends (any way).
    pub fn finish(&mut self, now: Now, mut req: RequestState) {
        self.finish_in_place(now, &mut req);
    }

    /// [`Self::finish`] for a caller that ends the request by dropping what holds its
    /// state (the session's `Request`, taken by value there), so that the state, 160
    /// bytes, is not copied once more for the call. The state must not be used again.
    #[inline(always)]
    pub(crate) fn finish_in_place(&mut self, now: Now, req: &mut RequestState) {
        // Without a stage that holds something, a request's end gives nothing back.
        if !self.shared.paths.ends_free {
            self.finish_at(now.mono, now.epoch_wall, req)
        }
    }

    /// [`Self::finish_in_place`] with `now` in its two halves (see [`Self::before_attempt_at`]).
    fn finish_at(&mut self, mono: Duration, epoch_wall: SystemTime, req: &mut RequestState) {
        let now = Now { mono, epoch_wall };
        self.release_slot(req);
        // Without a breaker, bulkhead or concurrency limit the request holds nothing else.
        if !self.shared.paths.holds_nothing {
            // A call abandoned with the outer breaker's probe: the place goes back unrecorded.
            self.settle_outer(now, req, None);
            self.release_places(now, req, None);
            self.release_call_place(req);
            self.leave_bulkhead_queue(req);
            if req.awaiting_outcome && req.is_probe {
                if let Some(br) = self.breaker.as_mut() {
                    br.cancel_probe();
                }
                if let Some(router) = self.router.as_mut() {
                    router.cancel_probe(req.provider);
                }
            }
        }
        if let Some(b) = self.budget.as_mut() {
            b.on_request_end(now.mono);
        }
    }
}
