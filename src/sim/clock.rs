//! Virtual time: nanoseconds since the run's start in a `u64`, and the fixed costs every
//! simulated attempt pays. A leaf, so that the engine and the parts that extend it (layers,
//! the modeled target) read the same clock without reading each other.

use std::time::Duration;

use crate::metrics::target_counts::second_of;
use crate::policy::Now;

/// One-way network delay between client and target (each way), a loopback round trip's
/// order of magnitude. Every attempt pays it twice, unless it times out first.
pub const NET_DELAY: Duration = Duration::from_micros(50);

/// Smallest gap between a closed-loop user's requests when `think_time` is zero (what a
/// live task spends between two requests, at least); it also keeps a user whose requests
/// are refused at once (open breaker) from looping at one instant forever.
pub const MIN_THINK: Duration = Duration::from_micros(1);

/// `d` in whole nanoseconds, `u64::MAX` beyond: `as_nanos` without its 128-bit product
/// (the same value, as the 64-bit sum overflows exactly where that product exceeds u64).
#[inline]
pub(super) fn ns(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

#[inline]
pub(super) fn dur(t: u64) -> Duration {
    Duration::from_nanos(t)
}

/// The target's whole second of virtual time `t`.
#[inline]
pub(super) fn sec(t: u64) -> usize {
    second_of(dur(t))
}

#[inline]
pub(super) fn now(t: u64) -> Now {
    Now::virtual_at(dur(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_is_as_nanos_saturated_to_u64() {
        let edge = Duration::from_nanos(u64::MAX);
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new(1, 999_999_999),
            NET_DELAY,
            edge,
            edge - Duration::from_nanos(1),
            edge + Duration::from_nanos(1),
            Duration::new(edge.as_secs() + 1, 0),
            Duration::MAX,
        ] {
            assert_eq!(
                ns(d),
                u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
                "{d:?}"
            );
        }
    }
}
