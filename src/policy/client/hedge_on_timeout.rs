//! Hedging on the per-try timeout, as Envoy's router does it (`hedge_policy {
//! hedge_on_per_try_timeout: true }`): a per-try timeout does not cancel its attempt; a retry
//! goes out beside it, and the first good answer of any attempt is the call's.
//!
//! Unlike gRFC A6's hedging, this is the config's *retry* loop with one more trigger: every
//! copy after the first is a retry of the config (its `max_attempts`, backoff, retry
//! circuit breaker or budget), and a copy sent on a per-try timeout is a hedge. The rules
//! rest on reading Envoy's source (envoyproxy/envoy at 001b1c0, `source/common/router/`;
//! no Envoy is run beside it):
//! * `router.cc` `Filter::onPerTryTimeoutCommon`: with hedging on, a per-try timeout goes to
//!   `onSoftPerTryTimeout` instead of resetting the attempt. That asks
//!   `RetryStateImpl::shouldHedgeRetryPerTryTimeout` (`retry_state_impl.cc`), which is
//!   `shouldRetry(RetryWithBackoff)` whatever `retry_on` says; when granted, the attempt is
//!   marked `retried` and goes on; when refused, it goes on unmarked;
//! * `retry_state_impl.cc` `RetryStateImpl::shouldRetry`: the retry resource the previous
//!   grant held is released first (`resetRetry`); no retries left refuses; otherwise one
//!   retry is taken off `retries_remaining_` *before* the circuit breaker is asked, so an
//!   overflow spends a retry that is never sent; a grant holds one retry resource and arms
//!   the jittered backoff timer;
//! * `router.cc` `Filter::onUpstreamHeaders`: a marked attempt's answer never asks for a
//!   retry; an answer the policy would retry but cannot (marked, out of retries, overflow)
//!   is dropped while another attempt awaits headers or a retry is pending
//!   (`could_not_retry`); any other answer is the call's, and `resetOtherUpstreams` resets
//!   the rest (the pending retry's timer goes with the retry state). `onUpstreamReset` /
//!   `maybeRetryReset` treat a reset the same way.
//!
//! The route timeout (the config's deadline) bounds the call: as the config's other retries,
//! a retry whose backoff would end past it is not scheduled.

use super::{GiveUpReason, HedgeDecision, HedgeDue, Now, RequestState, RetryClient};
use crate::policy::budget::CostKind;
use crate::policy::outcome::{AttemptOutcome, OutcomeClass};
use crate::policy::retry_after::Hint;
use std::time::Duration;

/// A call's record beside its [`RequestState`], for a config that hedges on its per-try
/// timeout.
#[derive(Clone, Debug, Default)]
pub(crate) struct PerTryHedge {
    /// The newest copy may still ask for a retry of its own (Envoy: not yet `retried`).
    newest_unmarked: bool,
    /// What the call's armed timer does when it goes off.
    timer: Timer,
    /// Retries taken off the config's allowance (`max_attempts − 1`): sent, pending, or
    /// refused by the retry circuit breaker or budget.
    retries_charged: u32,
    /// Bit n−1 set: copy n was sent on a per-try timeout.
    hedge_copies: u64,
    /// The retry pending was granted on a per-try timeout: the copy it sends is a hedge.
    pending_is_hedge: bool,
    /// Why the last retry asked for was refused: the call's reason when it ends on a failure.
    refused: Option<GiveUpReason>,
}

/// What the call's one timer (`next_hedge_at`) is armed for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Timer {
    #[default]
    None,
    /// The newest copy's per-try timeout.
    PerTry,
    /// The granted retry's backoff has run out: send it.
    Retry,
}

impl PerTryHedge {
    /// Whether copy `attempt` was sent on a per-try timeout.
    pub(super) fn is_hedge(&self, attempt: u32) -> bool {
        (1..=64).contains(&attempt) && self.hedge_copies & (1 << (attempt - 1)) != 0
    }

    /// Copies sent on a per-try timeout so far.
    pub(super) fn hedges(&self) -> u32 {
        self.hedge_copies.count_ones()
    }

    /// Copy `attempt` was just sent.
    pub(super) fn sent(&mut self, attempt: u32) {
        if std::mem::take(&mut self.pending_is_hedge) && (1..=64).contains(&attempt) {
            self.hedge_copies |= 1 << (attempt - 1);
        }
    }
}

impl RetryClient {
    /// A new call's record: only a config that hedges on its per-try timeout has one.
    pub(super) fn per_try_record(&self) -> Option<Box<PerTryHedge>> {
        self.shared
            .config
            .hedge_on_per_try_timeout
            .then(Default::default)
    }

    /// After copy `req.attempts` was sent at `now`: its per-try timer, the timer of the call.
    pub(super) fn arm_per_try(&mut self, now: Now, req: &mut RequestState) -> Option<Duration> {
        let after = self.shared.config.per_try_timeout?;
        let p = req.per_try.as_deref_mut()?;
        if req.ended.is_some() {
            return None;
        }
        p.newest_unmarked = true;
        p.timer = Timer::PerTry;
        req.next_hedge_at = Some(now.mono.saturating_add(after));
        Some(after)
    }

    /// The call's timer went off at `now`: the newest copy's per-try timeout (a hedged
    /// retry, when granted) or the granted retry's send time.
    pub(super) fn per_try_due(
        &mut self,
        now: Now,
        req: &mut RequestState,
        rng: &mut dyn rand::RngCore,
    ) -> HedgeDue {
        match req.next_hedge_at {
            Some(at) if at <= now.mono => {}
            _ => return HedgeDue::Idle,
        }
        req.next_hedge_at = None;
        let Some(p) = req.per_try.as_deref_mut() else {
            return HedgeDue::Idle;
        };
        match std::mem::take(&mut p.timer) {
            Timer::None => HedgeDue::Idle,
            Timer::Retry => self.send_due(now, req),
            Timer::PerTry => {
                if req.ended.is_some() {
                    return HedgeDue::Idle;
                }
                match self.per_try_retry(now, req, CostKind::Timeout, Hint::Absent, rng, true) {
                    Err(reason) => HedgeDue::Refused(reason),
                    Ok(after) => {
                        if let Some(p) = req.per_try.as_deref_mut() {
                            p.newest_unmarked = false;
                        }
                        self.schedule(now, req, after)
                    }
                }
            }
        }
    }

    /// A granted retry: sent now, or its timer armed.
    fn schedule(&mut self, now: Now, req: &mut RequestState, after: Duration) -> HedgeDue {
        if after.is_zero() {
            return self.send_due(now, req);
        }
        self.arm_retry(now, req, after);
        HedgeDue::Arm(after)
    }

    fn arm_retry(&mut self, now: Now, req: &mut RequestState, after: Duration) {
        if let Some(p) = req.per_try.as_deref_mut() {
            p.timer = Timer::Retry;
        }
        req.next_hedge_at = Some(now.mono.saturating_add(after));
    }

    fn send_due(&mut self, now: Now, req: &mut RequestState) -> HedgeDue {
        match self.hedge_permit(now, req) {
            Some(permit) => HedgeDue::Send(permit),
            None => HedgeDue::Idle,
        }
    }

    /// Envoy's `shouldRetry(RetryWithBackoff)`: the previous grant's retry resource back,
    /// then the allowance, the circuit breaker or budget, and the backoff; `on_timeout`: the
    /// copy it sends will be a hedge. A refusal is noted as the call's reason.
    fn per_try_retry(
        &mut self,
        now: Now,
        req: &mut RequestState,
        kind: CostKind,
        hint: Hint,
        rng: &mut dyn rand::RngCore,
        on_timeout: bool,
    ) -> Result<Duration, GiveUpReason> {
        self.release_slot(req);
        let cfg = &self.shared.config;
        let allowance = cfg.max_attempts.saturating_sub(1);
        let granted = 'grant: {
            if hint == Hint::DoNotRetry {
                break 'grant Err(GiveUpReason::ServerPushback);
            }
            if !req.idempotent && !cfg.retry_non_idempotent && !cfg.idempotency_key {
                break 'grant Err(GiveUpReason::NotIdempotent);
            }
            match req.per_try.as_deref_mut() {
                Some(p) if p.retries_charged < allowance => p.retries_charged += 1,
                _ => break 'grant Err(GiveUpReason::MaxAttempts),
            }
            if !self.budget_grants(now, req, kind) {
                break 'grant Err(GiveUpReason::BudgetRefused);
            }
            let after = self.delay(req, kind == CostKind::Throttling, hint, rng);
            if req
                .deadline_at
                .is_some_and(|d| now.mono.saturating_add(after) >= d)
            {
                self.release_slot(req);
                break 'grant Err(GiveUpReason::Deadline);
            }
            Ok(after)
        };
        if let Some(p) = req.per_try.as_deref_mut() {
            match granted {
                Ok(_) => p.pending_is_hedge = on_timeout,
                Err(reason) => p.refused = Some(reason),
            }
        }
        granted
    }

    /// The answer of copy `attempt` of a call that hedges on its per-try timeout, still
    /// going on (the caller took the copy out of flight).
    pub(super) fn on_per_try_outcome(
        &mut self,
        now: Now,
        req: &mut RequestState,
        attempt: u32,
        outcome: &AttemptOutcome<'_>,
        rng: &mut dyn rand::RngCore,
    ) -> HedgeDecision {
        let newest = attempt == req.attempts;
        let mut unmarked = false;
        if let Some(p) = req.per_try.as_deref_mut().filter(|_| newest) {
            unmarked = std::mem::take(&mut p.newest_unmarked);
            if p.timer == Timer::PerTry {
                p.timer = Timer::None;
                req.next_hedge_at = None;
            }
        }
        let c = self
            .shared
            .statuses
            .classify(&self.shared.config.retry_on, outcome);
        let class = c.class;
        match class {
            OutcomeClass::Success => {
                if let Some(b) = self.budget.as_mut() {
                    b.on_success(now.mono, req.last_charge);
                }
                self.commit(req, GiveUpReason::NonRetryable);
                return HedgeDecision::Success;
            }
            OutcomeClass::LocalResource => {
                return self.hedge_fails(req, GiveUpReason::LocalResource, class);
            }
            OutcomeClass::NonRetryable => {
                return self.hedge_fails(req, GiveUpReason::NonRetryable, class);
            }
            OutcomeClass::Transient | OutcomeClass::Throttling => {}
        }
        let (reason, asked) = if unmarked {
            let kind = match (class, c.timeout) {
                (OutcomeClass::Throttling, _) => CostKind::Throttling,
                (_, true) => CostKind::Timeout,
                _ => CostKind::Transient,
            };
            let hint = match outcome {
                AttemptOutcome::Response(r) => {
                    self.shared.config.retry_after.hint(r, || now.wall())
                }
                AttemptOutcome::Transport(_) => Hint::Absent,
            };
            match self.per_try_retry(now, req, kind, hint, rng, false) {
                // Sent at once: the session asks for its permit.
                Ok(after) if after.is_zero() => return HedgeDecision::SendNow { class },
                Ok(after) => {
                    self.arm_retry(now, req, after);
                    return HedgeDecision::Later { after, class };
                }
                Err(reason) => (reason, true),
            }
        } else {
            let reason = req.per_try.as_ref().and_then(|p| p.refused);
            (reason.unwrap_or(GiveUpReason::MaxAttempts), false)
        };
        let pending = req
            .per_try
            .as_ref()
            .is_some_and(|p| p.timer == Timer::Retry);
        if req.outstanding > 0 || pending {
            // Dropped: another copy may still answer for the call.
            return match asked {
                true => HedgeDecision::Dropped {
                    class,
                    refused: reason,
                },
                false => HedgeDecision::Await { class },
            };
        }
        self.hedge_fails(req, reason, class)
    }
}
