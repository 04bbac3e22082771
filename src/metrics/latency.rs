//! Latency as every histogram of the crate holds it: microseconds from 1 µs to one hour,
//! and the percentiles reports read from it. A leaf, so that the recorder, the per-class
//! counts and the histogram dump format share one range without reading each other.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency a histogram tracks: one hour. Longer values are clamped (and still counted).
pub(crate) const MAX_LATENCY_US: u64 = 3_600_000_000;

/// An empty latency histogram over the range every other one has, so any two add up.
pub(crate) fn new_histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, sigfig)
        .expect("static histogram bounds are valid")
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    /// Reads percentiles from a microsecond histogram; all zero when it is empty.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_empty_are_zero() {
        assert_eq!(Percentiles::of(&new_histogram(3)), Percentiles::default());
    }
}
