//! Every seeded random draw of a run, in one place, so that what is drawn from what can be
//! read off one page and kept the same in both engines.
//!
//! | draw | drawn from | used by |
//! |---|---|---|
//! | fault fires | `draw(seed, request, attempt, salt = fault index)` | `FaultTimeline::decide` |
//! | latency fault's added delay | `draw(seed, request, attempt, SALT_LATENCY_BASE + 2·index (+1))` | `FaultTimeline::decide` |
//! | target service time | `draw(seed, request, attempt, SALT_SERVICE_1 / _2)` | `FaultTimeline::service_time` |
//! | layer service time | `draw(seed, request, attempt, SALT_LAYER_SERVICE (+1))` | live topology layers |
//! | request class | `draw(seed, request, 0, SALT_CLASS)` against the classes' cumulative weights | [`class_of`], both engines |
//! | class token counts | `draw(seed, request, 0, SALT_PROMPT_TOKENS / SALT_COMPLETION_TOKENS)` | `RequestClass::tokens` |
//! | retry jitter | [`LazyRng`] seeded with [`request_seed`]`(seed, config_key(config[, layer]), request)` | the policy, through the session |
//!
//! `seed` is the scenario's seed, `request` the logical request id the client sends in
//! `x-stormrig-request` and `attempt` the 1-based attempt number. The target's draws
//! (faults, service time) depend on nothing else, so every compared config meets the same
//! faults on the same (request, attempt): the comparison is fair. A config's jitter also
//! depends on which config (and which layer) draws it, so configs do not share jitter; it is
//! keyed by the config's name, not its position, so running a config alone (`--only`) or
//! reordering the configs leaves its figures as they were.
//!
//! The target's draws are hashes rather than a sequential RNG: the n-th draw of a sequence
//! would depend on how many requests arrived before, which differs between a socket run and
//! a simulated one (and between two socket runs); a hash of the inputs does not.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Salt of the first uniform draw of a request's service time at the target.
pub const SALT_SERVICE_1: u64 = 0x5E5E_0000_0000_0001;
/// Salt of the second uniform draw of a request's service time (log-normal needs two).
pub const SALT_SERVICE_2: u64 = 0x5E5E_0000_0000_0002;
/// Base salt of the draws that sample a latency fault's added delay (`+ 2·index`, `+1`).
pub const SALT_LATENCY_BASE: u64 = 0x1A7E_0000_0000_0000;
/// Salt of a topology layer's service-time draws (`+1` for the second), distinct from the
/// target's.
pub const SALT_LAYER_SERVICE: u64 = 0x4c41_5945_5253; // "LAYERS"

/// Salt of a request's class draw (attempt 0: no attempt of the request draws with it).
pub const SALT_CLASS: u64 = 0xC1A5_5000_0000_0000;
/// Salts of a request class's prompt and completion token draws (attempt 0).
pub const SALT_PROMPT_TOKENS: u64 = 0xC1A5_5000_0000_0001;
pub const SALT_COMPLETION_TOKENS: u64 = 0xC1A5_5000_0000_0002;

/// The class of request `request`: the first whose cumulative weight exceeds a uniform draw
/// scaled to the total. A hash of (seed, request), like the target's draws, so both engines,
/// every config and every shard give a request the same class.
#[inline]
pub fn class_of(seed: u64, request: u64, cumulative: &[f64]) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    let u = draw(seed, request, 0, SALT_CLASS) * total;
    cumulative
        .iter()
        .position(|&c| u < c)
        .unwrap_or(cumulative.len().saturating_sub(1))
}

/// A whole number in `[min, max]`, uniform, drawn from (seed, request, salt).
#[inline]
pub fn uniform_count(seed: u64, request: u64, salt: u64, min: u64, max: u64) -> u64 {
    let span = (max - min).saturating_add(1) as f64;
    let k = (draw(seed, request, 0, salt) * span) as u64;
    min + k.min(max - min)
}

/// The splitmix64 finaliser: a bijective 64-bit mix with full avalanche (every input bit
/// flips each output bit with probability ≈ ½), which is what makes hash draws behave like
/// independent uniforms.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in `[0, 1)` that depends only on its inputs.
///
/// Each input is folded in through a full splitmix64 round (add the golden-ratio increment,
/// then mix), so that nearby inputs (request 7 vs 8, salt 0 vs 1) give unrelated outputs
/// and no two inputs cancel each other out. The top 53 bits become the mantissa of the
/// result, so every value is exactly representable and `1.0` is never returned.
#[inline]
pub fn draw(seed: u64, request: u64, attempt: u32, salt: u64) -> f64 {
    draw_salted(draw_key(seed, request, attempt), salt)
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The part of [`draw`] that does not depend on the salt: the several draws of one attempt
/// (each fault, the two of the service time) compute it once.
#[inline]
pub fn draw_key(seed: u64, request: u64, attempt: u32) -> u64 {
    draw_key_seeded(seed_key(seed), request, attempt)
}

/// The part of [`draw_key`] that depends on the seed alone: a run's draws all share it, so
/// a caller that draws per attempt works it out once.
#[inline]
pub fn seed_key(seed: u64) -> u64 {
    mix64(seed.wrapping_add(GAMMA))
}

/// [`draw_key`] from its [`seed_key`]:
/// `draw_key(s, r, a) == draw_key_seeded(seed_key(s), r, a)`.
#[inline]
pub fn draw_key_seeded(seed_key: u64, request: u64, attempt: u32) -> u64 {
    let h = mix64(seed_key ^ request.wrapping_add(GAMMA.wrapping_mul(2)));
    mix64(h ^ (attempt as u64).wrapping_add(GAMMA.wrapping_mul(3)))
}

/// [`draw`] from its [`draw_key`]: `draw(s, r, a, salt) == draw_salted(draw_key(s, r, a), salt)`.
#[inline]
pub fn draw_salted(key: u64, salt: u64) -> f64 {
    let h = mix64(key ^ salt.wrapping_add(GAMMA.wrapping_mul(4)));
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A per-request RNG seed: the same (seed, config key, request) always draws the same
/// jitter, whatever order requests run in. `config` is a [`config_key`].
pub fn request_seed(seed: u64, config: u64, request: u64) -> u64 {
    mix64(seed ^ config.wrapping_mul(GAMMA) ^ request.rotate_left(29))
}

/// The key of a compared config's jitter: a stable hash of its name (the same on every
/// machine and every build), so the config's draws do not depend on where it stands among
/// the others. A topology layer's client adds its layer's name ([`layer_key`]).
pub fn config_key(name: &str) -> u64 {
    fnv1a(FNV_OFFSET, name.as_bytes())
}

/// The key of a topology layer's client in the chain of compared config `config`.
pub fn layer_key(config: &str, layer: &str) -> u64 {
    // 0xFF never occurs in UTF-8, so no two (config, layer) pairs hash the same bytes.
    let h = fnv1a(FNV_OFFSET, config.as_bytes());
    fnv1a(fnv1a(h, &[0xFF]), layer.as_bytes())
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `bytes`, continuing from `h`: a fixed, documented hash, unlike std's
/// `DefaultHasher`, whose output may change between Rust releases.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_is_deterministic_in_range_and_input_sensitive() {
        let a = draw(1, 2, 3, 4);
        assert_eq!(a, draw(1, 2, 3, 4));
        assert!((0.0..1.0).contains(&a));
        for (s, r, at, salt) in [(2, 2, 3, 4), (1, 3, 3, 4), (1, 2, 4, 4), (1, 2, 3, 5)] {
            assert_ne!(a, draw(s, r, at, salt));
        }
        // Swapping inputs must not give the same value (no symmetric combination).
        assert_ne!(draw(5, 9, 1, 0), draw(9, 5, 1, 0));
    }

    #[test]
    fn draws_are_uniform_enough() {
        let n = 100_000u64;
        let mut buckets = [0u32; 10];
        let mut sum = 0.0;
        for r in 0..n {
            let u = draw(42, r, 1, 0);
            sum += u;
            buckets[(u * 10.0) as usize] += 1;
        }
        assert!(
            (sum / n as f64 - 0.5).abs() < 0.005,
            "mean {}",
            sum / n as f64
        );
        for b in buckets {
            assert!((b as f64 - 10_000.0).abs() < 400.0, "bucket {b}");
        }
    }

    #[test]
    fn config_keys_are_fixed_and_tell_names_and_layers_apart() {
        // FNV-1a test vectors: the keys may never change with the toolchain.
        assert_eq!(config_key(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(config_key("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(config_key("naive"), config_key("aws-standard"));
        assert_ne!(layer_key("naive", "edge"), config_key("naive"));
        assert_ne!(layer_key("ab", "c"), layer_key("a", "bc"));
    }

    #[test]
    fn lazy_seeding_draws_what_seeding_up_front_draws() {
        let seed = request_seed(7, config_key("naive"), 42);
        let mut lazy = LazyRng::new(seed);
        let mut eager = Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..4 {
            assert_eq!(lazy.next_u64(), eager.next_u64());
        }
    }
}
