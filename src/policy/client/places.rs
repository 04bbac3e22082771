//! The places an attempt holds while in flight: the bulkhead's and the adaptive
//! concurrency limiter's, taken in `before_attempt` and given back with the outcome.

use super::{Now, RequestState, RetryClient};
use crate::policy::bulkhead::Admission;
use std::time::Duration;

impl RetryClient {
    /// Ask before EVERY send of `req`, after [`Self::rate_limit`]: `None` when the
    /// bulkhead (if any) decided, or how long to wait in its queue before asking again. A
    /// deadline bounds the wait as it bounds the rate limiter's.
    #[inline]
    pub fn bulkhead_wait(&mut self, now: Now, req: &mut RequestState) -> Option<Duration> {
        let b = self.bulkhead.as_mut()?;
        if req.ended.is_some() {
            return None;
        }
        let remaining = req.remaining_deadline(now);
        if remaining.is_some_and(|r| r.is_zero()) {
            b.leave_queue(&mut req.queued_since);
            return None;
        }
        match b.admit(now.mono, &mut req.queued_since) {
            Admission::Free => None,
            Admission::Rejected => {
                req.bulkhead_rejected = true;
                None
            }
            Admission::Wait(d) => Some(remaining.map_or(d, |r| d.min(r))),
        }
    }

    /// The bulkhead's attempts in flight and the concurrency limiter's limit, if the config
    /// has them (tests and reports read them).
    pub fn concurrency_state(&self) -> (Option<u32>, Option<u32>) {
        (
            self.bulkhead.as_ref().map(|b| b.in_flight()),
            self.concurrency.as_ref().map(|l| l.limit()),
        )
    }

    /// Give back the places the attempt in flight held: `drop` says how the concurrency
    /// limiter learns from it (None: it is not a sample, the attempt ended unanswered).
    pub(super) fn release_places(&mut self, now: Now, req: &mut RequestState, drop: Option<bool>) {
        if std::mem::take(&mut req.holds_bulkhead) {
            if let Some(b) = self.bulkhead.as_mut() {
                b.leave();
            }
        }
        if let (Some((at, inflight)), Some(l)) =
            (req.limit_sample.take(), self.concurrency.as_mut())
        {
            match drop {
                Some(d) => l.sample(now.mono.saturating_sub(at), inflight, d),
                None => l.ignore(),
            }
        }
    }
}
