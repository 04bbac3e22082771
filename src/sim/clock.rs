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

#[inline]
pub(super) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
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
