//! What a granted retry takes: the budget's word (its charge and retry slot) and the wait
//! before it, shared by the retry loop and hedging on the per-try timeout.

use super::{CostKind, Hint, Now, RequestState, RetryClient};
use std::time::Duration;

impl RetryClient {
    /// The budget's word on a retry: granted (`req` holds its charge and retry slot), or
    /// refused (the first refusal noted). Without a budget, granted.
    #[inline]
    pub(super) fn budget_grants(
        &mut self,
        now: Now,
        req: &mut RequestState,
        kind: CostKind,
    ) -> bool {
        let Some(b) = self.budget.as_mut() else {
            return true;
        };
        match b.try_retry(now.mono, kind, false) {
            Some(charge) => {
                req.last_charge = Some(charge);
                req.holds_retry_slot = true;
                true
            }
            None => {
                let level = b.level();
                self.note_budget_refusal(now.mono, level);
                false
            }
        }
    }

    /// The longest wait [`Self::delay`] can give the request's next retry, known without a
    /// draw; `None` when only the draw tells (a jitter that may go above the nominal delay).
    pub(super) fn delay_at_most(
        &self,
        req: &RequestState,
        throttling: bool,
        hint: Hint,
    ) -> Option<Duration> {
        let cfg = &self.shared.config;
        let nominal =
            self.shared
                .nominals
                .get(&cfg.backoff, req.retries_since_reset + 1, throttling);
        let most = cfg.jitter.at_most(nominal)?;
        // A longer computed wait never combines with the hint into a shorter one.
        Some(cfg.retry_after.combine(most, hint).0)
    }

    /// The wait before the request's next retry: backoff, jitter, then the server's hint;
    /// advances the request's backoff sequence. Inlined: as a call, its arguments and the
    /// registers it saved around the jitter's draw were a third of its cost.
    #[inline(always)]
    pub(super) fn delay(
        &self,
        req: &mut RequestState,
        throttling: bool,
        hint: Hint,
        rng: &mut dyn rand::RngCore,
    ) -> Duration {
        let n = req.retries_since_reset + 1;
        if self.shared.paths.no_wait {
            // What the look-up, the jitter and the hint come to for such a config.
            req.retries_since_reset = n;
            return Duration::ZERO;
        }
        let cfg = &self.shared.config;
        let nominal = self.shared.nominals.get(&cfg.backoff, n, throttling);
        let nominals = &self.shared.nominals;
        let jittered = cfg.jitter.apply(
            nominal,
            nominals.base(throttling),
            nominals.cap(),
            &mut req.decorrelated_prev,
            rng,
        );
        let (delay, reset) = cfg.retry_after.combine(jittered, hint);
        req.retries_since_reset = if reset { 0 } else { n };
        delay
    }
}
