//! An open-circuit refusal of a breaker that stands inside the retry: a failed attempt that
//! never left the client, which the retry answers like any other (see
//! `policy::pipeline`). Counted as a breaker refusal and logged as an `open-circuit` row.

use super::{draws, Ending, LazyRng, Next, Request, Session};
use crate::metrics::RetryReason;
use crate::policy::{Decision, GiveUpReason, Now};

/// Salts the jitter of a retry after an open-circuit refusal apart from the request's own
/// jitter stream, which the engine holds.
const OPEN_CIRCUIT_SALT: u64 = 0x0be2_c1c0;

impl Session {
    /// The refusal [`Session::permit_in`] just got for the request in `slot`: the retry's
    /// decision on it, a wait before the next attempt or the request's end.
    pub(super) fn open_circuit(&mut self, now: Now, slot: &mut Option<Request>) -> Next {
        let Some(req) = slot.as_mut() else {
            unreachable!("open_circuit without a request in its slot");
        };
        self.rec.breaker_refused(now.mono);
        req.unsent_attempts += 1;
        let client = &mut self.clients[req.client as usize];
        let attempt = req.state.attempts();
        // Its own draws, keyed by the attempt it stands for.
        let key = draws::request_seed(self.seed, self.draw_key ^ OPEN_CIRCUIT_SALT, req.id);
        let mut rng = LazyRng::new(draws::request_seed(key, 0, u64::from(attempt)));
        let d = client.on_open_circuit(now, &mut req.state, &mut rng);
        let level = client.budget_level();
        self.log_row(req.id, attempt, None, "open-circuit", level);
        self.drain_events(req.client);
        match d {
            Decision::Retry { after, .. } => {
                self.rec.retry_scheduled(now.mono, RetryReason::Transient);
                if after.is_zero() {
                    return self.permit_in(now, slot);
                }
                Next::Wait(after)
            }
            Decision::GiveUp { reason, .. } => {
                if reason == GiveUpReason::BudgetRefused {
                    self.rec.budget_refused(now.mono);
                }
                let Some(req) = slot.take() else {
                    unreachable!("the request left its slot");
                };
                self.finish(now, req, Ending::GaveUp(reason)).keep_in(slot)
            }
            Decision::Success => unreachable!("an open-circuit refusal never succeeds"),
        }
    }
}
