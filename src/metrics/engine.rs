//! Engine-neutral helpers that the live engine and the simulator must share exactly, so that
//! the same (seed, config, request) draws the same jitter and the same give-up reason or
//! breaker state is charted under the same name whichever engine ran.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::policy::GiveUpReason;

/// A per-request RNG seed: the same (seed, config, request) always draws the same jitter,
/// whatever order requests run in.
pub fn request_seed(seed: u64, config: usize, request: u64) -> u64 {
    let mut z =
        seed ^ (config as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ request.rotate_left(29);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
