//! What the breaker's side of the retry (`policy::pipeline`) changes: inside, an
//! open-circuit refusal is a failure the retry answers; outside, the breaker learns one
//! outcome per call.

use super::{Decision, Now, RequestState, RetryClient};
use crate::policy::outcome::OutcomeClass;
use crate::policy::pipeline::BreakerPlace;
use crate::policy::retry_after::Hint;

impl RetryClient {
    /// The breakers learn an attempt's answer (`failed`: it was retryable): the client's
    /// inside the retry (outside, it learns the call's end), the router's provider's; then
    /// their transitions are collected.
    #[inline]
    pub(super) fn record_breakers(&mut self, now: Now, req: &mut RequestState, failed: bool) {
        if let Some(br) = self
            .breaker
            .as_mut()
            .filter(|_| self.breaker_place != BreakerPlace::OutsideRetry)
        {
            br.record(now.mono, failed);
            req.is_probe = false;
        }
        if let Some(router) = self.router.as_mut() {
            router.record(now.mono, req.provider, failed);
            req.is_probe = false;
        }
        self.collect_breaker_events();
    }

    /// Whether an open-circuit refusal is a failed attempt the retry re-sends (the breaker
    /// inside the retry) rather than the call's end.
    #[inline]
    pub fn retries_open_circuit(&self) -> bool {
        self.breaker_place == BreakerPlace::InsideRetry
    }

    /// The retry's answer to the open-circuit refusal [`Self::before_attempt`] just gave
    /// (the breaker inside the retry): a transient failure of an attempt that never left the
    /// client, so that neither the breaker nor the rate limiter learns from it, and the
    /// retry's blockers (attempts, deadline, caps, budget) decide as for any other failure.
    pub fn on_open_circuit(
        &mut self,
        now: Now,
        req: &mut RequestState,
        rng: &mut dyn rand::RngCore,
    ) -> Decision {
        self.release_slot(req);
        let d = self.decide_failure(
            now,
            req,
            OutcomeClass::Transient,
            false,
            true,
            Hint::Absent,
            rng,
        );
        self.collect_breaker_events();
        d
    }

    /// With the breaker outside the retry: record the call's outcome once, if the breaker
    /// let it through (`failed`: None gives a probe's place back unrecorded).
    pub(super) fn settle_outer(&mut self, now: Now, req: &mut RequestState, failed: Option<bool>) {
        if !req.breaker_admitted {
            return;
        }
        req.breaker_admitted = false;
        let probe = std::mem::take(&mut req.is_probe);
        if let Some(br) = self.breaker.as_mut() {
            match failed {
                Some(f) => br.record(now.mono, f),
                None if probe => br.cancel_probe(),
                None => {}
            }
        }
    }
}
