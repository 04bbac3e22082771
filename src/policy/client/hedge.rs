//! A hedged call's copies: when the next one goes, and what an answer does to the call.
//!
//! The rules are gRFC A6's (grpc/proposal `A6-client-retries.md` lines 147-157, 189-193,
//! 205 and 216-236), and where A6's text leaves a choice or grpc-java does otherwise, grpc-java's
//! (`core/src/main/java/io/grpc/internal/RetriableStream.java` at 5fda0c7, cited by line):
//! * the first copy goes at once; the next is scheduled `delay` after each copy is sent, while
//!   copies are left and the throttle is above its threshold, else hedging freezes (lines
//!   410-427, 494-502);
//! * a success commits: the throttle gains `token_ratio`, the other copies are cancelled
//!   (lines 889-897; A6 line 151);
//! * a fatal status commits that failure and cancels the others (A6 line 153); a fatal
//!   status with a "do not retry" pushback takes a token first (line 1104);
//! * a non-fatal status takes a token (lines 1103-1106); when that leaves the tokens at or
//!   below the threshold the call commits that failure, cancelling the others (line 1112:
//!   not hedgeable, then `commitAndRun`, lines 985-1003 and 1053); a "do not retry"
//!   pushback freezes hedging, the copies in flight go on (lines 437-440); otherwise the
//!   next copy's timer moves as the config's [`Shortcut`] says;
//! * when no copy is in flight and none can follow, the last failure is the call's (lines
//!   995-1002).

use super::{GiveUpReason, Now, Permit, RequestState, RetryClient};
use crate::policy::budget::CostKind;
use crate::policy::deadline::min_opt;
use crate::policy::hedging::Shortcut;
use crate::policy::outcome::{AttemptOutcome, OutcomeClass};
use crate::policy::retry_after::Hint;
use std::time::Duration;

/// What a hedged call does after one of its copies answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HedgeDecision {
    /// The copy succeeded: the call is over; cancel the copies still in flight.
    Success,
    /// The call failed with this copy's answer; cancel the copies still in flight.
    GiveUp {
        /// Why.
        reason: GiveUpReason,
        /// Class of the answer.
        class: OutcomeClass,
    },
    /// Send the next copy now ([`RetryClient::hedge_permit`]).
    SendNow {
        /// Class of the answer.
        class: OutcomeClass,
    },
    /// The next copy is due after this long (a pushback); the earlier timer is void.
    Later {
        /// From now.
        after: Duration,
        /// Class of the answer.
        class: OutcomeClass,
    },
    /// Nothing to do now: copies in flight or the armed timer carry the call on.
    Await {
        /// Class of the answer.
        class: OutcomeClass,
    },
    /// The answer is dropped, another copy may still answer for the call; the retry it
    /// asked for was refused for `refused` (hedging on the per-try timeout).
    Dropped {
        /// Class of the answer.
        class: OutcomeClass,
        /// Why no retry followed it.
        refused: GiveUpReason,
    },
}

/// What a hedged call's timer going off comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HedgeDue {
    /// Send this copy now.
    Send(Permit),
    /// Re-arm the call's timer for this long from now (a retry granted on a per-try
    /// timeout, sent after its backoff).
    Arm(Duration),
    /// Nothing: a timer an answer moved or voided, or no copy may follow.
    Idle,
    /// No copy: the retry a per-try timeout asked for was refused, for this reason.
    Refused(GiveUpReason),
}

impl HedgeDecision {
    /// The class of the answer this decision follows.
    pub fn class(&self) -> OutcomeClass {
        match self {
            HedgeDecision::Success => OutcomeClass::Success,
            HedgeDecision::GiveUp { class, .. }
            | HedgeDecision::SendNow { class }
            | HedgeDecision::Later { class, .. }
            | HedgeDecision::Await { class }
            | HedgeDecision::Dropped { class, .. } => *class,
        }
    }

    /// The call is over.
    pub fn ends(&self) -> bool {
        matches!(self, HedgeDecision::Success | HedgeDecision::GiveUp { .. })
    }
}

impl RetryClient {
    /// The config hedges its calls.
    #[inline]
    pub fn is_hedging(&self) -> bool {
        self.shared.config.hedges()
    }

    /// How long an attempt may take: the per-try timeout, unless the config hedges on it
    /// (then it only sends the next copy) — within the time left before the deadline.
    pub(super) fn attempt_timeout(&self, remaining: Option<Duration>) -> Option<Duration> {
        match self.shared.config.hedge_on_per_try_timeout {
            true => remaining,
            false => min_opt(self.shared.config.per_try_timeout, remaining),
        }
    }

    /// Whether copy `attempt` of `req` was a hedge: every copy after the first under gRFC
    /// A6; under Envoy's hedging, a retry its per-try timeout sent (a retry after a failed
    /// answer is not one).
    pub fn copy_is_hedge(req: &RequestState, attempt: u32) -> bool {
        match req.per_try.as_deref() {
            Some(p) => p.is_hedge(attempt),
            None => attempt > 1,
        }
    }

    /// The hedges of `req` sent so far.
    pub fn hedges_sent(req: &RequestState) -> u32 {
        match req.per_try.as_deref() {
            Some(p) => p.hedges(),
            None => req.attempts.saturating_sub(1),
        }
    }

    /// Copies of `req` sent and not yet answered (nor cancelled).
    pub fn in_flight(req: &RequestState) -> u32 {
        req.outstanding
    }

    /// Whether another copy may still be sent: not committed, not frozen, copies left.
    fn potential(&self, req: &RequestState) -> bool {
        req.ended.is_none() && !req.hedge_frozen && req.attempts < self.shared.config.max_attempts
    }

    /// After a copy was sent at `now`: arms the next copy's timer, `delay` from now, when
    /// one may follow and the throttle is above its threshold; otherwise hedging freezes.
    /// Returns the wait to arm.
    pub fn arm_hedge(&mut self, now: Now, req: &mut RequestState) -> Option<Duration> {
        if req.per_try.is_some() {
            return self.arm_per_try(now, req);
        }
        let Some(h) = &self.shared.config.hedging else {
            return None;
        };
        let delay = h.delay;
        let throttle_ok = self.budget.as_ref().is_none_or(|b| b.hedge_allowed());
        if self.potential(req) && throttle_ok {
            req.next_hedge_at = Some(now.mono.saturating_add(delay));
            Some(delay)
        } else {
            req.hedge_frozen = true;
            req.next_hedge_at = None;
            None
        }
    }

    /// A hedge timer went off at `now`: the next copy's permit when this timer is the one
    /// armed last and the call goes on (under Envoy's hedging, a per-try timeout may instead
    /// grant a retry sent after its backoff: the timer to re-arm).
    pub fn hedge_due(
        &mut self,
        now: Now,
        req: &mut RequestState,
        rng: &mut dyn rand::RngCore,
    ) -> HedgeDue {
        if req.per_try.is_some() {
            return self.per_try_due(now, req, rng);
        }
        let permit = match req.next_hedge_at {
            Some(at) if at <= now.mono => self.hedge_permit(now, req),
            _ => None,
        };
        permit.map_or(HedgeDue::Idle, HedgeDue::Send)
    }

    /// The next copy, sent now: `None` when the call is over, frozen, out of copies or out
    /// of time.
    pub fn hedge_permit(&mut self, now: Now, req: &mut RequestState) -> Option<Permit> {
        req.next_hedge_at = None;
        if !self.potential(req) {
            return None;
        }
        let remaining = req.remaining_deadline(now);
        if remaining.is_some_and(|r| r.is_zero()) {
            return None;
        }
        req.attempts += 1;
        req.outstanding += 1;
        req.awaiting_outcome = true;
        if let Some(p) = req.per_try.as_deref_mut() {
            p.sent(req.attempts);
        }
        Some(Permit::Send {
            attempt: req.attempts,
            timeout: self.attempt_timeout(remaining),
            remaining_deadline: remaining,
            idempotency_key: self.shared.config.idempotency_key && !req.idempotent,
            provider: None,
        })
    }

    /// Feeds the answer of copy `attempt` of a hedged call.
    pub fn on_hedge_outcome(
        &mut self,
        now: Now,
        req: &mut RequestState,
        attempt: u32,
        outcome: &AttemptOutcome<'_>,
        rng: &mut dyn rand::RngCore,
    ) -> HedgeDecision {
        req.outstanding = req.outstanding.saturating_sub(1);
        req.awaiting_outcome = req.outstanding > 0;
        if req.ended.is_some() {
            // Answered after the call committed: nothing learns from it.
            return HedgeDecision::Await {
                class: OutcomeClass::NonRetryable,
            };
        }
        if req.per_try.is_some() {
            return self.on_per_try_outcome(now, req, attempt, outcome, rng);
        }
        let c = self
            .shared
            .statuses
            .classify(&self.shared.config.retry_on, outcome);
        let hint = match outcome {
            AttemptOutcome::Response(r) => self.shared.config.retry_after.hint(r, || now.wall()),
            AttemptOutcome::Transport(_) => Hint::Absent,
        };
        let kind = match (c.class, c.timeout) {
            (OutcomeClass::Throttling, _) => CostKind::Throttling,
            (_, true) => CostKind::Timeout,
            _ => CostKind::Transient,
        };
        match c.class {
            OutcomeClass::Success => {
                if let Some(b) = self.budget.as_mut() {
                    b.on_success(now.mono, None);
                }
                self.commit(req, GiveUpReason::NonRetryable);
                return HedgeDecision::Success;
            }
            OutcomeClass::LocalResource => {
                return self.hedge_fails(req, GiveUpReason::LocalResource, c.class);
            }
            OutcomeClass::NonRetryable => {
                if hint == Hint::DoNotRetry {
                    if let Some(b) = self.budget.as_mut() {
                        let _ = b.try_retry(now.mono, kind, true);
                    }
                }
                return self.hedge_fails(req, GiveUpReason::NonRetryable, c.class);
            }
            OutcomeClass::Transient | OutcomeClass::Throttling => {}
        }
        if let Some(b) = self.budget.as_mut() {
            if b.try_retry(now.mono, kind, false).is_none() {
                let level = b.level();
                self.note_budget_refusal(now.mono, level);
                return self.hedge_fails(req, GiveUpReason::BudgetRefused, c.class);
            }
        }
        let class = c.class;
        if hint == Hint::DoNotRetry {
            req.hedge_frozen = true;
            req.next_hedge_at = None;
        } else if self.potential(req) {
            let shortcut = self.shared.config.hedging.as_ref().map(|h| h.shortcut);
            match (shortcut, hint) {
                (Some(Shortcut::A6), Hint::Delay(after)) if !after.is_zero() => {
                    req.next_hedge_at = Some(now.mono.saturating_add(after));
                    return HedgeDecision::Later { after, class };
                }
                (Some(Shortcut::A6), _) | (Some(Shortcut::GrpcJava), Hint::Delay(_)) => {
                    return HedgeDecision::SendNow { class };
                }
                _ => {}
            }
        }
        if req.outstanding == 0 && !self.potential(req) {
            let reason = if req.hedge_frozen && hint == Hint::DoNotRetry {
                GiveUpReason::ServerPushback
            } else if req.hedge_frozen && req.attempts < self.shared.config.max_attempts {
                GiveUpReason::BudgetRefused
            } else {
                GiveUpReason::MaxAttempts
            };
            return self.hedge_fails(req, reason, class);
        }
        HedgeDecision::Await { class }
    }

    pub(super) fn commit(&mut self, req: &mut RequestState, reason: GiveUpReason) {
        req.ended = Some(reason);
        req.next_hedge_at = None;
    }

    pub(super) fn hedge_fails(
        &mut self,
        req: &mut RequestState,
        reason: GiveUpReason,
        class: OutcomeClass,
    ) -> HedgeDecision {
        self.commit(req, reason);
        HedgeDecision::GiveUp { reason, class }
    }
}
