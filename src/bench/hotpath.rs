//! The per-attempt work of the live driver with the I/O taken out: the [`Session`] under the
//! per-config lock, on a virtual clock.
//!
//! It exists so that `stormrig bench policy` and the divan benchmark
//! (`tests/bench/policy.rs`) time one and the same code, and so that this code takes the
//! steps [`ConfigRuntime::drive`](crate::live::driver::ConfigRuntime::drive) takes: the same
//! session calls in the same lock sections (the start of a request shares one with its first
//! permit, an outcome one with the next permit when the retry needs no wait, or with the end
//! of the request), the request kept in one slot between its steps, and a per-request
//! [`LazyRng`] seeded on its first draw. A figure
//! measured here that the driver could not reproduce would be worthless.

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::draws::{request_seed, LazyRng};
use crate::metrics::Recorder;
use crate::policy::{is_idempotent_method, AttemptOutcome, Now, Response, RetryConfig};
use crate::session::{Attempt, Next, Request, Session};

/// Virtual time one attempt takes: the clock moves by this much per attempt sent and never
/// jumps over a retry's wait, so a budget sees the densest storm it can.
pub const ATTEMPT_TIME: Duration = Duration::from_micros(1);

/// Salt of the per-request seeds (the driver's run seed).
const SEED: u64 = 1;

/// One retry config answering every attempt with the same status, driven one attempt at a
/// time.
pub struct PolicyPath {
    session: Mutex<Session>,
    status: u16,
    clock: Duration,
    /// The request in flight has its next attempt granted (sent by the next call). When it
    /// has not, the next call asks for it under a lock of its own, as the driver does after
    /// its sleep (a request in the slot), or starts a request (an empty slot). The granted
    /// attempt itself is looked at when granted and not kept: a copy of it kept across calls
    /// would be read back while its writes are still on their way to memory, a stall the
    /// driver, with a round trip between the two, never has.
    granted: bool,
    /// The request in flight, kept in place between its steps, as the driver keeps it in
    /// its guard's slot.
    slot: Option<Request>,
    /// The RNG of the request in flight, reseeded per request in place, as the simulator
    /// does with its request slots (seeding is lazy, so a request that never draws never
    /// seeds).
    rng: LazyRng,
    /// Keys the jitter draws, as the driver's config name does.
    draw_key: u64,
    /// Logical requests started.
    pub requests: u64,
    /// Attempts sent (first tries and retries).
    pub attempts: u64,
}

impl PolicyPath {
    /// A fresh session for `config`; every attempt will get `status`.
    pub fn new(config: &RetryConfig, status: u16) -> PolicyPath {
        PolicyPath {
            session: Mutex::new(Session::new("bench", config, false)),
            status,
            clock: Duration::ZERO,
            granted: false,
            slot: None,
            rng: LazyRng::new(0),
            draw_key: crate::draws::config_key(&config.name),
            requests: 0,
            attempts: 0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// Sends exactly one attempt: starts a request when none is in flight (and more when the
    /// policy refuses before sending), feeds the policy the attempt's outcome and records it,
    /// and ends the request when the policy stops it.
    pub fn attempt(&mut self) {
        let now = Now::virtual_at(self.clock);
        if !self.granted {
            let mut step = match self.slot {
                Some(_) => lock(&self.session).permit_in(now, &mut self.slot),
                None => self.start(now),
            };
            loop {
                step = match step {
                    Next::Send(attempt) => break sent(attempt),
                    Next::Wait(_) => lock(&self.session).permit_in(now, &mut self.slot),
                    Next::Done(_) => self.start(now),
                };
            }
        }
        self.attempts += 1;
        self.clock += ATTEMPT_TIME;
        let outcome = AttemptOutcome::Response(Response::status(black_box(self.status)));
        let next = lock(&self.session).outcome_in(
            Now::virtual_at(self.clock),
            &mut self.slot,
            ATTEMPT_TIME,
            &outcome,
            &mut self.rng,
        );
        self.granted = match next {
            Next::Send(attempt) => {
                sent(attempt);
                true
            }
            Next::Wait(_) => false,
            Next::Done(ending) => {
                black_box(ending);
                false
            }
        };
    }

    /// A new logical request, started together with its first permit in one lock section.
    #[inline(always)]
    fn start(&mut self, now: Now) -> Next {
        let id = self.requests;
        self.requests += 1;
        self.rng.reseed(request_seed(SEED, self.draw_key, id));
        lock(&self.session).start_in(
            &mut self.slot,
            now,
            now.mono,
            id,
            is_idempotent_method("GET"),
            None,
        )
    }

    /// Retries the policy decided on.
    pub fn retries(&self) -> u64 {
        self.with_recorder(|r| r.seconds().iter().map(|s| s.retries).sum())
    }

    /// Runs `f` on the recorder (for checks once the timing is over).
    pub fn with_recorder<R>(&self, f: impl FnOnce(&Recorder) -> R) -> R {
        f(self.lock().recorder())
    }
}

/// What the harness does with a granted attempt in place of sending it.
#[inline(always)]
fn sent(attempt: Attempt) {
    black_box(attempt.number);
}

fn lock(session: &Mutex<Session>) -> MutexGuard<'_, Session> {
    // A panic while holding the lock would already have failed the run; keep counting.
    session.lock().unwrap_or_else(|p| p.into_inner())
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
        assert_eq!((p.requests, p.attempts, p.retries()), (100, 400, 300));
        p.with_recorder(|r| {
            let s = &r.seconds()[0];
            assert_eq!((s.started, s.finished, s.failures), (100, 100, 100));
            assert_eq!(
                (s.attempts, s.retries, s.retries_transient),
                (400, 300, 300)
            );
            assert_eq!(r.in_flight(), 0);
            assert_eq!(r.attempt_latency_us().len(), 400);
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
        assert_eq!((p.requests, p.attempts, p.retries()), (965, 1_000, 35));
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
            assert_eq!((p.requests, p.attempts, p.retries()), (100, 100, 0));
            p.with_recorder(|r| assert_eq!(r.seconds()[0].successes, 100));
        }
    }
}
