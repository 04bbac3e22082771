//! Engine-neutral helpers that the live engine and the simulator must share exactly, so that
//! the same (seed, config, request) draws the same jitter and the same give-up reason or
//! breaker state is charted under the same name whichever engine ran.

use std::time::Duration;

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::recorder::{Recorder, RetryReason};
use crate::policy::{
    attempt_label, AttemptOutcome, BreakerState, Decision, GiveUpReason, OutcomeClass, Permit,
    RetryClient,
};

/// Records what the policy answered when asked for the next attempt, identically in both
/// engines (and in the policy benchmark): an attempt sent, or a refusal by the breaker or
/// the budget. Returns true when a sent attempt's per-try timeout was cut short by the
/// request's deadline (the live engine counts those).
pub fn record_permit(
    rec: &mut Recorder,
    client: &RetryClient,
    t: Duration,
    permit: &Permit,
) -> bool {
    match permit {
        Permit::Send {
            attempt, timeout, ..
        } => {
            rec.attempt_sent(t, *attempt);
            matches!(
                (timeout, client.config().per_try_timeout),
                (Some(t), Some(p)) if *t < p
            )
        }
        Permit::Refuse(reason) => {
            match reason {
                GiveUpReason::BreakerOpen => rec.breaker_refused(t),
                GiveUpReason::BudgetRefused => rec.budget_refused(t),
                _ => {}
            }
            false
        }
    }
}

/// Records what the policy decided about one attempt's outcome, identically in both engines
/// (and in the policy benchmark): the attempt's end and its label, the budget and breaker
/// sample, and a scheduled retry or a retry the budget refused. `t` is when the outcome
/// arrived, `latency` how long the attempt took, `attempt` its number (1 = the first try).
/// Returns the attempt-log label and the budget level after the decision.
pub fn record_decision(
    rec: &mut Recorder,
    client: &RetryClient,
    t: Duration,
    latency: Duration,
    outcome: &AttemptOutcome<'_>,
    decision: &Decision,
    attempt: u32,
) -> (&'static str, Option<f64>) {
    let label = attempt_label(outcome, decision.class());
    rec.attempt_done(t, latency, label, attempt);
    let label = label.as_str();
    let level = client.budget_level();
    let breaker = client.breaker_state().map(breaker_level);
    rec.sample_policy(t, level, breaker);
    match decision {
        Decision::Retry { class, .. } => rec.retry_scheduled(
            t,
            if *class == OutcomeClass::Throttling {
                RetryReason::Throttling
            } else {
                RetryReason::Transient
            },
        ),
        Decision::GiveUp {
            reason: GiveUpReason::BudgetRefused,
            ..
        } => rec.budget_refused(t),
        _ => {}
    }
    (label, level)
}

/// A per-request RNG seed: the same (seed, config, request) always draws the same jitter,
/// whatever order requests run in.
pub fn request_seed(seed: u64, config: usize, request: u64) -> u64 {
    let mut z =
        seed ^ (config as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ request.rotate_left(29);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Breaker state as charted: closed 0, half-open 1, open 2.
pub fn breaker_level(s: BreakerState) -> u8 {
    match s {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    }
}

/// The give-up reason as reports name it.
pub fn reason_label(r: GiveUpReason) -> &'static str {
    match r {
        GiveUpReason::NonRetryable => "non-retryable",
        GiveUpReason::MaxAttempts => "max-attempts",
        GiveUpReason::Deadline => "deadline",
        GiveUpReason::BudgetRefused => "budget-refused",
        GiveUpReason::BreakerOpen => "breaker-open",
        GiveUpReason::CostCap => "cost-cap",
        GiveUpReason::NotIdempotent => "not-idempotent",
        GiveUpReason::ServerPushback => "server-pushback",
    }
}

/// A request's RNG, seeded on its first draw rather than when the request starts: most
/// requests never draw (no retry, or no jitter), so they skip seeding, and seeding on first
/// use gives exactly the same sequence as seeding up front.
///
/// Xoshiro256++ rather than a ChaCha: a request draws a few jitter values at most, and a
/// ChaCha computes a 256-byte block for them (the simulator's largest single cost after the
/// event loop); jitter needs a well-distributed seedable stream, not a cryptographic one.
/// Both engines use this type, so the same (seed, config, request) still draws the same
/// jitter whichever engine runs.
#[derive(Debug, Clone)]
pub struct LazyRng {
    seed: u64,
    rng: Option<Xoshiro256PlusPlus>,
}

impl LazyRng {
    pub fn new(seed: u64) -> Self {
        LazyRng { seed, rng: None }
    }

    /// Starts over with another seed (the simulator reuses request slots).
    #[inline]
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed;
        self.rng = None;
    }

    #[inline]
    fn get(&mut self) -> &mut Xoshiro256PlusPlus {
        let seed = self.seed;
        self.rng
            .get_or_insert_with(|| Xoshiro256PlusPlus::seed_from_u64(seed))
    }
}

impl RngCore for LazyRng {
    fn next_u32(&mut self) -> u32 {
        self.get().next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.get().next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.get().fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.get().try_fill_bytes(dest)
    }
}
