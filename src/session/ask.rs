//! What the policy says of a request's next attempt, counted: the bare way's permit
//! first, then the long way's ([`Asked`]), shared by both ways of holding a request.

use super::{Attempt, Request, Session};
use crate::policy::{GiveUpReason, Now, Permit};
use std::time::Duration;

/// What the policy said of a request's next attempt ([`Session::permit`]), before the
/// request moves.
pub(super) enum Asked {
    Send(Attempt),
    Wait(Duration),
    Refused(GiveUpReason),
    /// A breaker inside the retry refused it: the retry answers the refusal.
    OpenCircuit,
}

impl Session {
    /// The bare way's permit (see `RetryClient::bare_for`): the attempt, counted, when it
    /// goes that way; `None` leaves the request to [`Self::ask`]. Asked before it, so the
    /// attempt goes straight to the engine's step, not through [`Asked`].
    #[inline(always)]
    pub(super) fn ask_bare(&mut self, now: Now, req: &mut Request) -> Option<Attempt> {
        let Session {
            clients,
            rec,
            classes,
            ..
        } = self;
        let client = &mut clients[req.client as usize];
        if !client.bare_for(&req.state) {
            return None;
        }
        // No rate limiter, bulkhead, provider, deadline or policy event on this way.
        let send = client.take_bare_attempt(&mut req.state)?;
        rec.attempt_sent(now.mono, send.attempt);
        if !classes.is_empty() {
            rec.class_attempt(usize::from(req.class), send.attempt);
        }
        Some(Attempt {
            number: send.attempt,
            timeout: send.timeout,
            remaining_deadline: None,
            idempotency_key: send.idempotency_key,
            provider: None,
            fallback: None,
        })
    }

    /// What the policy says of the request's next attempt, counted, with the request left
    /// where it is: both ways of holding a request ([`Self::permit`], [`Self::permit_in`])
    /// share it, and neither moves the request on the way.
    #[inline(always)]
    pub(super) fn ask(&mut self, now: Now, req: &mut Request) -> Asked {
        let client = &mut self.clients[req.client as usize];
        // The rate limiter first, as botocore's adaptive mode acquires its token on
        // `before-send`: an attempt it holds back is asked for again when the wait is over.
        if let Some(wait) = client.rate_limit(now, &req.state) {
            req.limited_since.get_or_insert(now.mono);
            return Asked::Wait(wait);
        }
        if let Some(wait) = client.bulkhead_wait(now, &mut req.state) {
            return Asked::Wait(wait);
        }
        let permit = client.before_attempt(now, &mut req.state);
        // Nothing below moves the client: whether it has events to record is known now.
        let has_events = client.has_events();
        // Looked at only after a rate limiter's wait: most attempts had none.
        if req.limited_since.is_some() {
            if let (Some(since), Permit::Send { .. }) = (req.limited_since.take(), &permit) {
                // Counted once the attempt goes: a wait that ended in a refusal (a deadline)
                // held back no send.
                self.rec.rate_limited.waited(now.mono.saturating_sub(since));
            }
        }
        let step = match permit {
            Permit::Send {
                attempt,
                timeout,
                remaining_deadline,
                idempotency_key,
                provider,
            } => {
                self.rec.attempt_sent(now.mono, attempt);
                if !self.classes.is_empty() {
                    self.rec.class_attempt(usize::from(req.class), attempt);
                }
                if let Some(slot) = provider {
                    self.rec.routes.attempt(slot, now.mono);
                }
                if matches!(
                    (timeout, client.config().per_try_timeout),
                    (Some(t), Some(p)) if t < p
                ) {
                    self.deadline_cut += 1;
                }
                Ok(Attempt {
                    number: attempt,
                    timeout,
                    remaining_deadline,
                    idempotency_key,
                    provider,
                    fallback: None,
                })
            }
            Permit::Refuse(GiveUpReason::BreakerOpen) if client.retries_open_circuit() => {
                return Asked::OpenCircuit;
            }
            Permit::Refuse(reason) => {
                match reason {
                    GiveUpReason::BreakerOpen => self.rec.breaker_refused(now.mono),
                    GiveUpReason::BudgetRefused => self.rec.budget_refused(now.mono),
                    GiveUpReason::BulkheadFull => {
                        self.rec.bulkhead_rejections += 1;
                        if let Some(slot) = client.bulkhead_provider(&req.state) {
                            self.rec.routes.bulkhead_rejection(slot);
                        }
                    }
                    GiveUpReason::LimitExceeded => self.rec.limiter_rejections += 1,
                    _ => {}
                }
                let attempt = req.state.attempts() + 1;
                let level = client.budget_level();
                self.log_row(req.id, attempt, None, "refused", level);
                Err(reason)
            }
        };
        if has_events {
            self.record_events(req.client);
        }
        match step {
            Ok(attempt) => Asked::Send(attempt),
            Err(reason) => Asked::Refused(reason),
        }
    }
}
