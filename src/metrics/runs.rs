//! A latency histogram that records runs of one value at once.
//!
//! Storms record long runs of the very same latency (every 503 of an outage answered in one
//! network round trip, every naive request failing after the same back-to-back attempts),
//! and an HDR record costs a bucket computation and a store into a counts array far larger
//! than the cache. [`RunHistogram`] keeps the latest value and how many times in a row it
//! came, and adds the run with one `record_n` when another value arrives. Adding a value
//! `n` times one by one and adding it once `n` times over give the same histogram (counts,
//! total, min and max), so nothing read changes.
//!
//! The open run is never lost to a reader: the histogram is only reachable through
//! [`RunHistogram::view`], which adds the open run (to a copy, when there is one), and
//! serialization writes that view.

use std::borrow::Cow;

use hdrhistogram::Histogram;

use super::latency::MAX_LATENCY_US;

/// An HDR histogram of microseconds plus the run of equal values not yet added to it.
///
/// Values are clamped to the latency range, `[1, MAX_LATENCY_US]`, as they go into the
/// histogram, once per run rather than once per value: a run of raw values lands as the
/// same count of the same clamped value, whichever way the runs split.
#[derive(Debug, Clone)]
pub struct RunHistogram {
    hist: Histogram<u64>,
    /// The value of the open run and its length (0: no open run).
    run_value: u64,
    run_len: u64,
}

impl RunHistogram {
    pub fn new(hist: Histogram<u64>) -> Self {
        RunHistogram {
            hist,
            run_value: 0,
            run_len: 0,
        }
    }

    /// Records `value` once, clamped to `[1, MAX_LATENCY_US]`.
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        if self.run_value == value {
            self.run_len += 1;
        } else {
            self.flush();
            self.run_value = value;
            self.run_len = 1;
        }
    }

    /// Adds the open run to the histogram, so that [`Self::view`] borrows it without a copy.
    #[inline]
    pub fn flush(&mut self) {
        if self.run_len > 0 {
            self.hist
                .saturating_record_n(clamped(self.run_value), self.run_len);
            self.run_len = 0;
        }
    }

    /// The histogram with every value recorded so far, the open run included.
    pub fn view(&self) -> Cow<'_, Histogram<u64>> {
        if self.run_len == 0 {
            Cow::Borrowed(&self.hist)
        } else {
            let mut h = self.hist.clone();
            h.saturating_record_n(clamped(self.run_value), self.run_len);
            Cow::Owned(h)
        }
    }

    /// Adds everything `o` recorded.
    pub fn add(&mut self, o: &RunHistogram) {
        self.flush();
        self.hist.add(&*o.view()).expect("histograms share bounds");
    }
}

/// A latency in microseconds clamped to the range every latency histogram tracks.
#[inline]
pub(super) fn clamped(us: u64) -> u64 {
    us.clamp(1, MAX_LATENCY_US)
}

impl serde::Serialize for RunHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        super::histogram_v2::serialize(&self.view(), s)
    }
}

impl<'de> serde::Deserialize<'de> for RunHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::histogram_v2::deserialize(d).map(RunHistogram::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::latency::new_histogram;

    /// Values with runs, repeats after other values, values out of range at both ends, and
    /// runs of values that clamp to the same one (0 and 1).
    const VALUES: [u64; 17] = [
        1,
        0,
        1,
        100,
        100,
        100,
        7,
        100,
        0,
        0,
        5_000_000_000,
        5_000_000_000,
        3,
        3,
        3,
        3,
        100,
    ];

    /// Each value clamped and recorded on its own.
    fn one_by_one(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram(3);
        for &v in values {
            h.saturating_record(clamped(v));
        }
        h
    }

    #[test]
    fn the_view_is_the_histogram_recorded_one_by_one() {
        for n in 0..=VALUES.len() {
            let mut r = RunHistogram::new(new_histogram(3));
            for &v in &VALUES[..n] {
                r.record(v);
            }
            let want = one_by_one(&VALUES[..n]);
            let view = r.view();
            assert_eq!(*view, want, "after {n} values");
            assert_eq!(view.len(), n as u64);
            assert_eq!((view.min(), view.max()), (want.min(), want.max()));
            drop(view);
            r.flush();
            assert!(matches!(r.view(), Cow::Borrowed(_)));
            assert_eq!(*r.view(), want);
        }
    }

    #[test]
    fn adding_counts_both_open_runs() {
        let (mut a, mut b) = (
            RunHistogram::new(new_histogram(3)),
            RunHistogram::new(new_histogram(3)),
        );
        VALUES[..5].iter().for_each(|&v| a.record(v));
        VALUES[5..].iter().for_each(|&v| b.record(v));
        a.add(&b);
        assert_eq!(*a.view(), one_by_one(&VALUES));
    }

    #[test]
    fn serializes_with_its_open_run() {
        let mut r = RunHistogram::new(new_histogram(3));
        VALUES.iter().for_each(|&v| r.record(v));
        let text = serde_json::to_string(&r).unwrap();
        let back: RunHistogram = serde_json::from_str(&text).unwrap();
        assert_eq!(*back.view(), one_by_one(&VALUES));
    }
}
