//! The degradation ladder after the policy gave up: a rung that answers the request ends it
//! degraded, a model rung (another provider) gets one more attempt, which the policy never
//! sees. Rare, so kept out of the request's common path.

use std::time::Duration;

use super::{draws, Attempt, Ending, Request, Session, Step};
use crate::policy::ladder::{self, Fallback};
use crate::policy::{attempt_label, AttemptOutcome, GiveUpReason, Now, OutcomeClass};

/// Salts the ladder's per-rung draws apart from every other draw of a request.
const LADDER_SALT: u64 = 0x1add_e500;

impl Session {
    /// The ladder from rung `from` on, for a request that gave up for `reason`: a rung that
    /// answers it ends it degraded, a model rung gets one more attempt, no rung leaves it
    /// failed.
    #[cold]
    pub(super) fn fall(
        &mut self,
        now: Now,
        mut req: Request,
        reason: GiveUpReason,
        from: usize,
    ) -> Step {
        let key = draws::request_seed(self.seed, self.draw_key, req.id);
        let rungs = &self.clients[req.client as usize].config().ladder;
        let fallback = ladder::fall_from(rungs, from, reason, |i| {
            draws::draw_salted(key, LADDER_SALT.wrapping_add(i as u64))
        });
        match fallback {
            Some(Fallback::Answer(rung)) => self.end(now, req, Ending::Degraded { reason, rung }),
            None => self.end(now, req, Ending::GaveUp(reason)),
            Some(Fallback::Try(rung)) => {
                let rung = rung as u8;
                req.fell = Some((rung, reason));
                req.fallback_attempts += 1;
                let number = req.state.attempts() + req.fallback_attempts;
                self.rec.attempt_sent(now.mono, number);
                if !self.classes.is_empty() {
                    self.rec.class_attempt(usize::from(req.class), number);
                }
                let config = self.clients[req.client as usize].config();
                let attempt = Attempt {
                    number,
                    timeout: config.per_try_timeout,
                    remaining_deadline: None,
                    idempotency_key: config.idempotency_key,
                    provider: None,
                    fallback: Some(rung),
                };
                Step::Send(req, attempt)
            }
        }
    }

    /// The answer of a model rung's attempt: a success ends the request degraded at that
    /// rung; anything else goes on down the ladder. The policy never sees it.
    #[cold]
    pub(super) fn fallback_answered(
        &mut self,
        now: Now,
        req: Request,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        (rung, reason): (u8, GiveUpReason),
    ) -> Step {
        let class = self.clients[req.client as usize]
            .config()
            .retry_on
            .classify(outcome)
            .class;
        let label = self
            .relabel
            .take()
            .unwrap_or_else(|| attempt_label(outcome, class));
        let number = req.state.attempts() + req.fallback_attempts;
        let t = now.mono;
        self.rec.attempt_done(t, latency, label, number);
        let level = self.clients[req.client as usize].budget_level();
        self.log_row(
            req.id,
            number,
            Some(t.saturating_sub(latency)),
            label.as_str(),
            level,
        );
        if class == OutcomeClass::Success {
            let rung = usize::from(rung);
            return self.end(now, req, Ending::Degraded { reason, rung });
        }
        self.fall(now, req, reason, usize::from(rung) + 1)
    }
}
