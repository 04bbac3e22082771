//! The per-attempt work of the live driver with the I/O taken out: the policy decision and
//! the recording, under the per-config lock, on a virtual clock.
//!
//! It exists so that `stormrig bench policy` and the divan benchmark
//! (`tests/bench/policy.rs`) time one and the same code, and so that this code follows
//! [`ConfigRuntime::drive`](crate::live::driver::ConfigRuntime::drive) step for step: the
//! same lock sections (the start of a request shares one with its first permit, an outcome
//! one with the next permit when the retry needs no wait, or with the end of the request),
//! the same recorder calls, and a per-request [`LazyRng`] seeded on its first draw. A
//! figure measured here that the driver could not reproduce would be worthless.

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::live::driver::Shared;
use crate::metrics::engine::{record_decision, record_permit, request_seed, LazyRng};
use crate::metrics::Recorder;
use crate::policy::{
    AttemptOutcome, BreakerState, Decision, GiveUpReason, Now, Permit, PolicyEvent, RequestState,
    Response, RetryClient, RetryConfig,
};

/// Virtual time one attempt takes: the clock moves by this much per attempt sent and never
/// jumps over a retry's wait, so a budget sees the densest storm it can.
pub const ATTEMPT_TIME: Duration = Duration::from_micros(1);

/// Salt of the per-request seeds (the driver's run seed).
const SEED: u64 = 1;

/// One retry config answering every attempt with the same status, driven one attempt at a
/// time.
pub struct PolicyPath {
    shared: Mutex<Shared>,
    status: u16,
    clock: Duration,
    /// The request between two attempts, if one is in flight.
    state: Option<RequestState>,
    /// Its RNG, reseeded per request in place, as the simulator does with its request
    /// slots (seeding is lazy, so a request that never draws never seeds).
    rng: LazyRng,
    intended: Duration,
    /// The permit already granted for the next attempt; `None` when the last retry had to
    /// wait, so the next attempt asks for it under a lock of its own, as the driver does
    /// after its sleep.
    permit: Option<Permit>,
    /// Logical requests started.
    pub requests: u64,
    /// Attempts sent (first tries and retries).
    pub attempts: u64,
    /// Retries the policy decided on.
    pub retries: u64,
}

impl PolicyPath {
    /// A fresh client and recorder for `config`; every attempt will get `status`.
    pub fn new(config: &RetryConfig, status: u16) -> PolicyPath {
        PolicyPath {
            shared: Mutex::new(Shared {
                client: RetryClient::new(config),
                rec: Recorder::new(),
                log: None,
            }),
            status,
            clock: Duration::ZERO,
            state: None,
            rng: LazyRng::new(0),
            intended: Duration::ZERO,
            permit: None,
            requests: 0,
            attempts: 0,
            retries: 0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        lock(&self.shared)
    }

    /// Sends exactly one attempt: starts a request when none is in flight (and more when the
    /// policy refuses before sending), feeds the policy the attempt's outcome and records it,
    /// and ends the request when the policy stops it.
    pub fn attempt(&mut self) {
        let (mut state, attempt) = loop {
            let mut state = match self.state.take() {
                Some(s) => s,
                None => self.start(),
            };
            let permit = match self.permit.take() {
                Some(p) => p,
                None => permit_locked(&mut self.lock(), self.clock, &mut state),
            };
            match permit {
                Permit::Send { attempt, .. } => break (state, attempt),
                Permit::Refuse(reason) => {
                    finish_locked(
                        &mut self.lock(),
                        self.clock,
                        state,
                        self.intended,
                        Some(reason),
                    );
                }
            }
        };
        black_box(attempt);
        self.attempts += 1;
        self.clock += ATTEMPT_TIME;
        let outcome = AttemptOutcome::Response(Response::status(black_box(self.status)));
        let mut g = lock(&self.shared);
        let now = Now::virtual_at(self.clock);
        let d = g
            .client
            .on_outcome(now, &mut state, &outcome, &mut self.rng);
        let Shared { client, rec, .. } = &mut *g;
        record_decision(rec, client, now.mono, ATTEMPT_TIME, &outcome, &d, attempt);
        drain(&mut g);
        match d {
            Decision::Success => finish_locked(&mut g, self.clock, state, self.intended, None),
            Decision::GiveUp { reason, .. } => {
                finish_locked(&mut g, self.clock, state, self.intended, Some(reason))
            }
            Decision::Retry { after, .. } => {
                self.retries += 1;
                if after.is_zero() {
                    self.permit = Some(permit_locked(&mut g, self.clock, &mut state));
                }
                self.state = Some(state);
            }
        }
    }

    /// A new logical request, started together with its first permit in one lock section.
    fn start(&mut self) -> RequestState {
        let id = self.requests;
        self.requests += 1;
        self.intended = self.clock;
        self.rng.reseed(request_seed(SEED, 0, id));
        let mut g = lock(&self.shared);
        g.rec.upstream_started(self.intended);
        let mut state = g.client.start(Now::virtual_at(self.clock), "GET", None);
        self.permit = Some(permit_locked(&mut g, self.clock, &mut state));
        state
    }

    /// Runs `f` on the recorder (for checks once the timing is over).
    pub fn with_recorder<R>(&self, f: impl FnOnce(&Recorder) -> R) -> R {
        f(&self.lock().rec)
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic while holding the lock would already have failed the run; keep counting.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Asks the policy for the next attempt and counts what it said, as the driver's
/// `permit_locked` does (without the attempt log, which benchmarks leave off).
fn permit_locked(g: &mut Shared, clock: Duration, state: &mut RequestState) -> Permit {
    let now = Now::virtual_at(clock);
    let p = g.client.before_attempt(now, state);
    let Shared { client, rec, .. } = &mut *g;
    // The driver counts attempts whose per-try timeout the deadline cut short.
    black_box(record_permit(rec, client, now.mono, &p));
    if let Permit::Refuse(_) = p {
        black_box(g.client.budget_level());
    }
    drain(g);
    p
}

/// Ends a logical request: the policy's bookkeeping and the recorder.
fn finish_locked(
    g: &mut Shared,
    clock: Duration,
    state: RequestState,
    intended: Duration,
    reason: Option<GiveUpReason>,
) {
    let now = Now::virtual_at(clock);
    let attempts = state.attempts();
    g.client.finish(now, state);
    g.rec.upstream_finished(
        now.mono,
        now.mono.saturating_sub(intended),
        reason,
        attempts,
    );
}

fn drain(g: &mut Shared) {
    for e in g.client.drain_events() {
        if let PolicyEvent::Breaker {
            to: BreakerState::Open,
            ..
        } = e
        {
            g.rec.breaker_opened();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy;

    fn path(name: &str, status: u16) -> PolicyPath {
        PolicyPath::new(&policy::preset(name).unwrap(), status)
    }

    #[test]
    fn naive_503_sends_four_attempts_per_request_and_counts_them() {
        let mut p = path("naive", 503);
        for _ in 0..400 {
            p.attempt();
        }
        assert_eq!((p.requests, p.attempts, p.retries), (100, 400, 300));
        p.with_recorder(|r| {
            let s = &r.seconds()[0];
            assert_eq!((s.started, s.finished, s.failures), (100, 100, 100));
            assert_eq!(
                (s.attempts, s.retries, s.retries_transient),
                (400, 300, 300)
            );
            assert_eq!(r.in_flight(), 0);
            assert_eq!(r.attempt_latency_us.len(), 400);
        });
    }

    #[test]
    fn aws_standard_503_drains_the_quota_then_sends_one_attempt_per_request() {
        let mut p = path("aws-standard", 503);
        for _ in 0..1_000 {
            p.attempt();
        }
        // 500 tokens at 14 per transient retry: 35 retries (17 requests of 3 attempts, one
        // of 2), then every request gives up after its first attempt.
        assert_eq!((p.requests, p.attempts, p.retries), (965, 1_000, 35));
        p.with_recorder(|r| {
            let s = &r.seconds()[0];
            assert_eq!(s.budget_refusals, 965 - 17);
            assert_eq!(r.failures_by_reason()["max-attempts"], 17);
            assert_eq!((s.finished, r.in_flight()), (965, 0));
        });
    }

    #[test]
    fn status_200_is_one_attempt_per_request() {
        for name in ["naive", "aws-standard"] {
            let mut p = path(name, 200);
            for _ in 0..100 {
                p.attempt();
            }
            assert_eq!((p.requests, p.attempts, p.retries), (100, 100, 0));
            p.with_recorder(|r| assert_eq!(r.seconds()[0].successes, 100));
        }
    }
}
