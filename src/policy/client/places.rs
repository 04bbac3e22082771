//! The places an attempt holds while in flight: the bulkhead's (the client's one, or its
//! provider's) and the adaptive concurrency limiter's, taken in `before_attempt` and given
//! back with the outcome.

use super::{Now, RequestState, RetryClient};
use crate::policy::bulkhead::{Admission, Bulkhead, Bulkheads};
use std::time::Duration;

impl RetryClient {
    /// Ask before EVERY send of `req`, after [`Self::rate_limit`]: `None` when the
    /// bulkhead (if any) decided, or how long to wait in its queue before asking again. A
    /// deadline bounds the wait as it bounds the rate limiter's. With a bulkhead per
    /// provider the attempt waits in the queue of the provider routing would pick now; if
    /// that changes while it waits (the provider's breaker opened), it leaves that queue
    /// and joins the other's, its wait counted afresh.
    #[inline]
    pub fn bulkhead_wait(&mut self, now: Now, req: &mut RequestState) -> Option<Duration> {
        let b = self.bulkhead.as_deref()?;
        if Self::client_place_free(b, req) {
            // What the long way answers here, with nothing to move: no wait.
            return None;
        }
        self.bulkhead_wait_at(now, req)
    }

    /// The common case of a config with the client's one bulkhead, told inline: the attempt
    /// waits in no queue, a place is free and no one waits for one. Whatever the deadline,
    /// routing or an outside place say, the long ways ([`Self::bulkhead_wait_at`],
    /// [`Self::bulkhead_refuses_at`]) then neither wait nor refuse and move nothing (the
    /// client's bulkhead is slot 0, the slot such a request already has).
    #[inline]
    fn client_place_free(b: &Bulkheads, req: &RequestState) -> bool {
        req.queued_since.is_none()
            && req.bulkhead_slot == 0
            && b.client().is_some_and(Bulkhead::free_now)
    }

    /// [`Self::bulkhead_wait`] for a config with a bulkhead, out of line: a config without
    /// one pays a test of one pointer.
    fn bulkhead_wait_at(&mut self, now: Now, req: &mut RequestState) -> Option<Duration> {
        if req.ended.is_some() || self.holds_call_place(req) {
            return None;
        }
        let remaining = req.remaining_deadline(now);
        let slot = match self.bulkhead_slot(now, req) {
            Some(slot) if !remaining.is_some_and(|r| r.is_zero()) => slot,
            // Routing or the deadline refuses the attempt: it waits for no place.
            _ => {
                self.leave_bulkhead_queue(req);
                return None;
            }
        };
        self.bulkhead_slot_is(req, slot);
        let b = self.bulkhead.as_mut()?.at(slot);
        match b.admit(now.mono, &mut req.queued_since) {
            Admission::Free => None,
            Admission::Rejected => {
                req.bulkhead_rejected = true;
                None
            }
            Admission::Wait(d) => Some(remaining.map_or(d, |r| d.min(r))),
        }
    }

    /// Whether the attempt about to be sent must be refused for want of a bulkhead place
    /// (its wait was rejected, or no place is free now); a refused attempt leaves the queue.
    #[inline]
    pub(super) fn bulkhead_refuses(&mut self, now: Now, req: &mut RequestState) -> bool {
        let rejected = std::mem::take(&mut req.bulkhead_rejected);
        match self.bulkhead.as_deref() {
            None => false,
            Some(b) if !rejected && Self::client_place_free(b, req) => false,
            Some(_) => self.bulkhead_refuses_at(now, req, rejected),
        }
    }

    /// [`Self::bulkhead_refuses`] for a config with a bulkhead, out of line.
    fn bulkhead_refuses_at(&mut self, now: Now, req: &mut RequestState, rejected: bool) -> bool {
        if self.holds_call_place(req) {
            return false;
        }
        // Every provider refusing is routing's refusal, not the bulkhead's.
        let Some(slot) = self.bulkhead_slot(now, req) else {
            return false;
        };
        self.bulkhead_slot_is(req, slot);
        let full = !self
            .bulkhead
            .as_mut()
            .is_some_and(|b| b.at(slot).has_room());
        if rejected || full {
            self.leave_bulkhead_queue(req);
            return true;
        }
        false
    }

    /// The next attempt asks the bulkhead of provider `slot`: a wait in another
    /// provider's queue ends there (the route moved while it waited).
    fn bulkhead_slot_is(&mut self, req: &mut RequestState, slot: usize) {
        if req.queued_since.is_some() && usize::from(req.bulkhead_slot) != slot {
            self.leave_bulkhead_queue(req);
        }
        req.bulkhead_slot = slot as u8;
    }

    /// The provider whose bulkhead the next attempt passes: where routing would send it
    /// (None: nowhere, every provider's breaker refuses), 0 for the client's one bulkhead.
    #[inline]
    fn bulkhead_slot(&self, now: Now, req: &RequestState) -> Option<usize> {
        match (self.bulkhead.as_deref(), &self.router) {
            (Some(Bulkheads::PerProvider(_)), Some(router)) => {
                router.peek(now.mono, req.attempts + 1, req.provider)
            }
            _ => Some(0),
        }
    }

    /// With a bulkhead per provider, the provider whose bulkhead rejected `req`'s attempt
    /// (after a `bulkhead-full` refusal; None with the client's one bulkhead or none).
    pub fn bulkhead_provider(&self, req: &RequestState) -> Option<usize> {
        self.bulkhead
            .as_ref()
            .filter(|b| b.per_provider())
            .map(|_| usize::from(req.bulkhead_slot))
    }

    /// Leave the bulkhead queue the request waits in, if it waits in one.
    pub(super) fn leave_bulkhead_queue(&mut self, req: &mut RequestState) {
        if let Some(b) = self.bulkhead.as_mut() {
            b.at(usize::from(req.bulkhead_slot))
                .leave_queue(&mut req.queued_since);
        }
    }

    /// Whether the call already holds the place of a bulkhead outside the retry (taken by
    /// its first attempt, kept through its retries).
    fn holds_call_place(&self, req: &RequestState) -> bool {
        self.bulkhead_outside && req.holds_bulkhead
    }

    /// Give back the place of a bulkhead outside the retry: the call has ended.
    pub(super) fn release_call_place(&mut self, req: &mut RequestState) {
        if self.bulkhead_outside && std::mem::take(&mut req.holds_bulkhead) {
            if let Some(b) = self.bulkhead.as_mut() {
                b.at(0).leave();
            }
        }
    }

    /// Take the places of an attempt routed to `provider` (0 without failover).
    #[inline]
    pub(super) fn take_places(&mut self, now: Now, req: &mut RequestState, provider: usize) {
        if self.holds_call_place(req) {
            // Outside the retry: the call's place, taken by its first attempt.
        } else if let Some(b) = self.bulkhead.as_mut() {
            debug_assert!(!b.per_provider() || usize::from(req.bulkhead_slot) == provider);
            b.at(provider).enter();
            req.holds_bulkhead = true;
        }
        if let Some(l) = self.concurrency.as_mut() {
            req.limit_sample = l.acquire().map(|inflight| (now.mono, inflight));
        }
    }

    /// The bulkheads' attempts in flight (over every provider's) and the concurrency
    /// limiter's limit, if the config has them (tests and reports read them).
    pub fn concurrency_state(&self) -> (Option<u32>, Option<u32>) {
        (
            self.bulkhead.as_ref().map(|b| b.in_flight()),
            self.concurrency.as_ref().map(|l| l.limit()),
        )
    }

    /// Give back the places the attempt in flight held: `drop` says how the concurrency
    /// limiter learns from it (None: it is not a sample, the attempt ended unanswered).
    pub(super) fn release_places(&mut self, now: Now, req: &mut RequestState, drop: Option<bool>) {
        // Outside the retry the place is the call's, given back when it ends.
        if !self.bulkhead_outside && std::mem::take(&mut req.holds_bulkhead) {
            if let Some(b) = self.bulkhead.as_mut() {
                // The attempt in flight went to `req.provider` (one at a time with failover).
                b.at(req.provider).leave();
            }
        }
        if let (Some((at, inflight)), Some(l)) =
            (req.limit_sample.take(), self.concurrency.as_mut())
        {
            match drop {
                Some(d) => l.sample_between(at, now.mono, inflight, d),
                None => l.ignore(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::{
        AttemptOutcome, Decision, Now, Permit, Response, RetryClient, RetryConfigSpec,
    };
    use rand::SeedableRng;
    use std::time::Duration;

    fn at(ms: u64) -> Now {
        Now::virtual_at(Duration::from_millis(ms))
    }

    /// Each provider's (in flight, queued).
    fn places(c: &RetryClient) -> Vec<(u32, u32)> {
        match c.bulkhead.as_deref() {
            Some(crate::policy::bulkhead::Bulkheads::PerProvider(v)) => {
                v.iter().map(|b| (b.in_flight(), b.queued())).collect()
            }
            other => panic!("a bulkhead per provider, not {other:?}"),
        }
    }

    /// The client's one bulkhead, its (in flight, queued).
    fn client_places(c: &RetryClient) -> (u32, u32) {
        let b = c.bulkhead.as_deref().and_then(|b| b.client()).unwrap();
        (b.in_flight(), b.queued())
    }

    /// What a request's bulkhead fields hold.
    fn fields(r: &super::RequestState) -> (Option<Duration>, u8, bool, bool) {
        (
            r.queued_since,
            r.bulkhead_slot,
            r.bulkhead_rejected,
            r.holds_bulkhead,
        )
    }

    /// The inline answer of `bulkhead_wait` and `bulkhead_refuses` is the long way's: two
    /// clients of the same config (a bulkhead of 2 with a queue of 2, a 40 ms deadline)
    /// take the same random steps (requests start, ask to wait, are checked before sending,
    /// take and give back places, end), one through the public calls, the other through
    /// the long ways alone; every answer and every bulkhead count and request field must
    /// agree after every step. It also counts how often the inline answer was taken and
    /// how often the long way waited or refused, so a run that never met either proves
    /// nothing.
    #[test]
    fn the_inline_bulkhead_answer_is_the_long_ways() {
        let config = RetryConfigSpec::from_toml(
            r#"
name = "p"
max_attempts = 3
deadline = "40ms"
bulkhead = { max_concurrent = 2, max_queue = 2, max_wait = "3ms" }
"#,
        )
        .unwrap()
        .resolve()
        .unwrap();
        let (mut fast, mut long) = (RetryClient::new(&config), RetryClient::new(&config));
        let mut reqs: Vec<(super::RequestState, super::RequestState)> = Vec::new();
        let mut draw = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let (mut inline, mut waits, mut refusals) = (0u32, 0u32, 0u32);
        let mut t = 0u64;
        for step in 0..20_000 {
            use rand::Rng;
            t += draw.gen_range(0..2_000u64);
            let now = Now::virtual_at(Duration::from_micros(t));
            let pick = if reqs.is_empty() {
                0
            } else {
                draw.gen_range(0..reqs.len())
            };
            match draw.gen_range(0..6u32) {
                0 | 1 if reqs.len() < 8 => {
                    reqs.push((fast.start(now, "GET", None), long.start(now, "GET", None)));
                }
                0..=2 if !reqs.is_empty() => {
                    let (a, b) = &mut reqs[pick];
                    inline += u32::from(
                        a.queued_since.is_none()
                            && RetryClient::client_place_free(fast.bulkhead.as_deref().unwrap(), a),
                    );
                    let got = fast.bulkhead_wait(now, a);
                    let want = long.bulkhead_wait_at(now, b);
                    assert_eq!(got, want, "step {step}: the wait");
                    waits += u32::from(want.is_some());
                }
                3 if !reqs.is_empty() => {
                    let (a, b) = &mut reqs[pick];
                    let got = fast.bulkhead_refuses(now, a);
                    let rejected = std::mem::take(&mut b.bulkhead_rejected);
                    let want = long.bulkhead_refuses_at(now, b, rejected);
                    assert_eq!(got, want, "step {step}: the refusal");
                    refusals += u32::from(want);
                    if !want && !a.holds_bulkhead {
                        fast.take_places(now, a, 0);
                        long.take_places(now, b, 0);
                    }
                }
                4 if !reqs.is_empty() => {
                    let (a, b) = &mut reqs[pick];
                    fast.release_places(now, a, Some(false));
                    long.release_places(now, b, Some(false));
                }
                5 if !reqs.is_empty() => {
                    let (a, b) = reqs.swap_remove(pick);
                    fast.finish(now, a);
                    long.finish(now, b);
                }
                _ => {}
            }
            assert_eq!(client_places(&fast), client_places(&long), "step {step}");
            for (a, b) in &reqs {
                assert_eq!(fields(a), fields(b), "step {step}");
            }
        }
        assert!(
            inline > 1_000 && waits > 500 && refusals > 100,
            "inline {inline}, waits {waits}, refusals {refusals}"
        );
    }

    /// An attempt queued at `a` whose breaker opens while it waits leaves `a`'s queue and
    /// takes `b`'s place, the provider routing then sends it to.
    #[test]
    fn a_waiter_follows_the_route_when_its_providers_breaker_opens() {
        let config = RetryConfigSpec::from_toml(
            r#"
name = "p"
max_attempts = 1
failover = { providers = ["a", "b"], same_provider_retries = 0, breaker = { failure_threshold = 1, open_for = "10s" }, bulkhead = { max_concurrent = 1, max_queue = 1, max_wait = "1s" } }
"#,
        )
        .unwrap()
        .resolve()
        .unwrap();
        let mut c = RetryClient::new(&config);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut first = c.start(at(0), "GET", None);
        assert_eq!(c.bulkhead_wait(at(0), &mut first), None);
        assert!(matches!(
            c.before_attempt(at(0), &mut first),
            Permit::Send {
                provider: Some(0),
                ..
            }
        ));
        let mut second = c.start(at(0), "GET", None);
        assert!(c.bulkhead_wait(at(0), &mut second).is_some());
        // A third finds a's place taken and its queue full: rejected, at a.
        let mut third = c.start(at(0), "GET", None);
        assert_eq!(c.bulkhead_wait(at(0), &mut third), None);
        assert!(matches!(
            c.before_attempt(at(0), &mut third),
            Permit::Refuse(crate::policy::GiveUpReason::BulkheadFull)
        ));
        assert_eq!(c.bulkhead_provider(&third), Some(0));
        assert_eq!(places(&c), [(1, 1), (0, 0)]);
        // The first try fails: a's breaker opens, its place is free again.
        let failed = AttemptOutcome::Response(Response::status(503));
        let d = c.on_outcome(at(5), &mut first, &failed, &mut rng);
        assert!(matches!(d, Decision::GiveUp { .. }), "{d:?}");
        assert_eq!(places(&c), [(0, 1), (0, 0)]);
        // The waiter asks again: routing now picks b, so it leaves a's queue and goes.
        assert_eq!(c.bulkhead_wait(at(6), &mut second), None);
        assert_eq!(places(&c), [(0, 0), (0, 0)]);
        assert!(matches!(
            c.before_attempt(at(6), &mut second),
            Permit::Send {
                provider: Some(1),
                ..
            }
        ));
        assert_eq!(places(&c), [(0, 0), (1, 0)]);
        c.finish(at(7), second);
        c.finish(at(7), first);
        c.finish(at(7), third);
        assert_eq!(places(&c), [(0, 0), (0, 0)]);
    }
}
