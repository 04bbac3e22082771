//! Uniform draws for the policy core's own tests that compare a cheaper float form with the
//! library's over many values. Written here because the policy core imports nothing from
//! the engines' draws module.

/// A uniform draw in [0, 1) from (stream, index): SplitMix64's finaliser.
pub(crate) fn unit(stream: u64, i: u64) -> f64 {
    let mut z = (stream << 32 ^ i)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}
