//! A hedged call in the session: its copies counted as attempts (a copy after the first is a
//! hedge), the copies still in flight when the call ends counted as cancelled, and the
//! hedges whose answer the call did not use counted as wasted.
//!
//! The engine keeps the copies and the one hedge timer of each call; the session says when
//! to send, when to (re)arm the timer, and when the call is over and its other copies must go.

use std::time::Duration;

use super::{Attempt, Ending, Request, Session};
use crate::draws::LazyRng;
use crate::policy::{
    attempt_label, AttemptLabel, AttemptOutcome, HedgeDecision, HedgeDue, Now, Permit, RetryClient,
};

/// What the engine does next with a hedged call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a hedged call that is not followed up never ends"]
pub enum Hedge {
    /// Send this copy now, and arm the call's hedge timer for the wait given (if any).
    Send(Attempt, Option<Duration>),
    /// Re-arm the call's hedge timer for this long from now (earlier timers are void).
    Arm(Duration),
    /// Nothing now: copies in flight or the armed timer carry the call on.
    Idle,
    /// The call has ended and is counted: close its copies still in flight (the session
    /// counted them as cancelled).
    Done(Ending),
}

impl Session {
    /// Whether request `req`'s policy hedges (engines take the hedged path for it).
    #[inline]
    pub fn hedges(&self, req: &Request) -> bool {
        self.clients[req.client as usize].is_hedging()
    }

    /// After the first copy of the hedged call in `slot` was sent: the wait before the
    /// next, if one may follow.
    pub fn hedge_armed_in(&mut self, now: Now, slot: &mut Option<Request>) -> Option<Duration> {
        let req = slot.as_mut()?;
        self.clients[req.client as usize].arm_hedge(now, &mut req.state)
    }

    /// The hedge timer of the call in `slot` went off (`rng`: the call's own, for a
    /// retry's backoff granted on a per-try timeout).
    pub fn hedge_due_in(
        &mut self,
        now: Now,
        slot: &mut Option<Request>,
        rng: &mut LazyRng,
    ) -> Hedge {
        let Some(req) = slot.as_mut() else {
            return Hedge::Idle;
        };
        let client = &mut self.clients[req.client as usize];
        match client.hedge_due(now, &mut req.state, rng) {
            HedgeDue::Send(permit) => self.send_hedge(now, slot, permit),
            HedgeDue::Arm(wait) => Hedge::Arm(wait),
            HedgeDue::Idle => Hedge::Idle,
            HedgeDue::Refused(reason) => {
                self.note_refused(now, reason);
                Hedge::Idle
            }
        }
    }

    /// A retry the policy refused without ending the call: a budget's refusal is counted
    /// as the retry path counts it.
    fn note_refused(&mut self, now: Now, reason: crate::policy::GiveUpReason) {
        if reason == crate::policy::GiveUpReason::BudgetRefused {
            self.rec.budget_refused(now.mono);
        }
    }

    /// Counts a copy the policy allowed and arms the timer of the one after it.
    fn send_hedge(&mut self, now: Now, slot: &mut Option<Request>, permit: Permit) -> Hedge {
        let Permit::Send {
            attempt,
            timeout,
            remaining_deadline,
            idempotency_key,
            provider,
        } = permit
        else {
            return Hedge::Idle;
        };
        let Some(req) = slot.as_mut() else {
            return Hedge::Idle;
        };
        self.rec.attempt_sent(now.mono, attempt);
        if RetryClient::copy_is_hedge(&req.state, attempt) {
            self.rec.hedges.sent += 1;
        }
        if !self.classes.is_empty() {
            self.rec.class_attempt(usize::from(req.class), attempt);
        }
        let next = self.clients[req.client as usize].arm_hedge(now, &mut req.state);
        Hedge::Send(
            Attempt {
                number: attempt,
                timeout,
                remaining_deadline,
                idempotency_key,
                provider,
                fallback: None,
            },
            next,
        )
    }

    /// Takes the answer of copy number `attempt` of the hedged call in `slot` (sent
    /// `latency` before `now`) to the policy and counts what follows.
    pub fn hedge_outcome_in(
        &mut self,
        now: Now,
        slot: &mut Option<Request>,
        attempt: u32,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
    ) -> Hedge {
        let Some(req) = slot.as_mut() else {
            return Hedge::Idle;
        };
        let client = &mut self.clients[req.client as usize];
        let d = client.on_hedge_outcome(now, &mut req.state, attempt, outcome, rng);
        let t = now.mono;
        let label = self
            .relabel
            .take()
            .unwrap_or_else(|| attempt_label(outcome, d.class()));
        self.rec.attempt_done(t, latency, label, attempt);
        let client = &self.clients[req.client as usize];
        let level = client.budget_level();
        let breaker = client.breaker_state().map(crate::metrics::breaker_level);
        self.rec.sample_policy(t, level, breaker);
        let id = req.id;
        self.log_row(
            id,
            attempt,
            Some(t.saturating_sub(latency)),
            label.as_str(),
            level,
        );
        let c = req.client;
        if let HedgeDecision::GiveUp { reason, .. }
        | HedgeDecision::Dropped {
            refused: reason, ..
        } = d
        {
            self.note_refused(now, reason);
        }
        self.drain_events(c);
        let ending = match d {
            HedgeDecision::Success => Ending::Succeeded,
            HedgeDecision::GiveUp { reason, .. } => Ending::GaveUp(reason),
            HedgeDecision::Await { .. } | HedgeDecision::Dropped { .. } => return Hedge::Idle,
            HedgeDecision::Later { after, .. } => return Hedge::Arm(after),
            HedgeDecision::SendNow { .. } => {
                let Some(req) = slot.as_mut() else {
                    return Hedge::Idle;
                };
                let permit = self.clients[c as usize].hedge_permit(now, &mut req.state);
                return match permit {
                    Some(p) => self.send_hedge(now, slot, p),
                    None => Hedge::Idle,
                };
            }
        };
        let Some(req) = slot.take() else {
            return Hedge::Idle;
        };
        self.end_hedged(now, req, attempt, ending)
    }

    /// Ends a hedged call whose copy `winner` answered for it: the hedges that did not carry
    /// its answer are wasted (the engine closes and reports the copies still in flight).
    fn end_hedged(&mut self, now: Now, req: Request, winner: u32, ending: Ending) -> Hedge {
        let hedges = RetryClient::hedges_sent(&req.state);
        let won_by_hedge = u32::from(
            ending == Ending::Succeeded && RetryClient::copy_is_hedge(&req.state, winner),
        );
        let wasted = u64::from(hedges - won_by_hedge);
        self.rec.hedges.wasted += wasted;
        let step = self.end(now, req, ending);
        if ending == Ending::Succeeded {
            // The call's retries count as useful when it succeeds; its wasted hedges were not.
            self.rec.hedges_unused(now.mono, wasted);
        }
        match step {
            super::Step::Done(e) => Hedge::Done(e),
            _ => Hedge::Done(ending),
        }
    }

    /// [`Self::hedge_outcome_in`], the copy counted and logged under `label` in place of
    /// its own when one is given (`not-accepted`: the in-process target never read it), as
    /// [`Self::outcome_as_in`] does for a retried attempt.
    #[allow(clippy::too_many_arguments)]
    pub fn hedge_outcome_as(
        &mut self,
        now: Now,
        slot: &mut Option<Request>,
        attempt: u32,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
        label: Option<AttemptLabel>,
    ) -> Hedge {
        self.relabel = label;
        let h = self.hedge_outcome_in(now, slot, attempt, latency, outcome, rng);
        self.relabel = None;
        h
    }

    /// The engine closed copy `attempt` of call `id`, still in flight when the call ended,
    /// and logged (no send time of its own in the row). `read`: whether the target had read
    /// it. Read, it is counted cancelled (`cancelled`); closed before the target read it,
    /// it is one the target never counts, so it is counted `not-accepted` instead. Either
    /// way a run's attempts equal its arrivals plus the attempts never read, and the sum
    /// of its outcomes plus its cancelled copies.
    pub fn hedge_cancelled(&mut self, id: u64, attempt: u32, read: bool) {
        let label = match read {
            true => {
                self.rec.hedges.cancelled += 1;
                "cancelled"
            }
            false => {
                self.rec.attempt_unanswered(AttemptLabel::NotAccepted);
                AttemptLabel::NotAccepted.as_str()
            }
        };
        self.log_row(id, attempt, None, label, None);
    }

    /// Copy `attempt` of call `id` (sent at `sent`) was still on the wire when the engine
    /// dropped the call (the run's drain ended): counted and logged under `label`
    /// (`unfinished`, or `not-accepted` when the target never read it), as
    /// [`Self::abandon_on_wire`] counts a retried request's attempt. The engine then hands
    /// the call to [`Self::abandon`].
    pub fn hedge_unanswered(&mut self, id: u64, attempt: u32, sent: Duration, label: AttemptLabel) {
        self.rec.attempt_unanswered(label);
        self.log_row(id, attempt, Some(sent), label.as_str(), None);
    }
}
