//! A latency histogram that records into a flat array of counts and builds its HDR
//! histogram when read.
//!
//! An HDR record is a call that reloads the histogram's shape, checks the range, updates the
//! minimum, maximum and total and saturates the count: some seventy instructions, and a
//! storm records three or four latencies per request. [`RunHistogram`] keeps its counts
//! itself, indexed exactly as HDR indexes them (the same buckets for the crate's one range,
//! 1 µs to one hour, at `DIGITS` significant digits), and a record is a clamp, a bucket
//! computation and an increment. The counts go into the HDR histogram when it is read
//! ([`RunHistogram::view`]) or [`RunHistogram::flush`]ed: each bucket's count recorded at
//! the bucket's lowest value, which is the histogram the values themselves give (the same
//! counts and total, and the same minimum and maximum, which HDR reports as their buckets'
//! bounds). Until the first record nothing is allocated, so a histogram no run records
//! into (a degraded latency, a limiter's waits, the rows of seconds without a finished
//! request) costs no zeroed counts array.

use std::borrow::Cow;
use std::cell::RefCell;

use hdrhistogram::Histogram;

use super::latency::{new_histogram, MAX_LATENCY_US};

/// An HDR histogram of microseconds at `DIGITS` significant digits (2 or 3), plus the
/// counts recorded since it was last brought up to date.
///
/// Values are clamped to the latency range, `[1, MAX_LATENCY_US]`, as they are recorded.
#[derive(Debug, Clone, Default)]
pub struct RunHistogram<const DIGITS: u8> {
    /// What was added, deserialized or flushed; `None` until then.
    hist: Option<Histogram<u64>>,
    /// Counts not yet in `hist`, by HDR index ([`index`]); empty when there are none.
    counts: Vec<u64>,
}

/// HDR's shape of a histogram with lowest value 1 at `digits` significant digits: the
/// magnitude of half a bucket's sub-buckets and the leading-zero base of the bucket index
/// (HDR's `sub_bucket_half_count_magnitude` and `leading_zero_count_base`), from the same
/// derivation (`2·10^digits` values at unit resolution, rounded up to a power of two).
const fn shape(digits: u8) -> (u32, u32) {
    let single_unit = 2 * 10u64.pow(digits as u32);
    let magnitude = 64 - (single_unit - 1).leading_zeros();
    (magnitude - 1, 64 - magnitude)
}

/// The HDR counts index of `v` (in `[1, MAX_LATENCY_US]`, or 0: index 0) at `digits`
/// significant digits.
#[inline(always)]
fn index(v: u64, digits: u8) -> usize {
    let (half_magnitude, lz_base) = shape(digits);
    let sub_bucket_mask = (1u64 << (half_magnitude + 1)) - 1;
    let bucket = lz_base - (v | sub_bucket_mask).leading_zeros();
    // HDR's `((bucket + 1) << half_magnitude) + (sub − half)`, with `half = 1 << half_magnitude`.
    ((bucket as usize) << half_magnitude) + (v >> bucket) as usize
}

/// The lowest value of the bucket at counts index `i` ([`index`]'s inverse on it).
fn lowest_at(i: usize, digits: u8) -> u64 {
    let (half_magnitude, _) = shape(digits);
    let bucket = (i >> half_magnitude).saturating_sub(1);
    let sub = i - (bucket << half_magnitude);
    (sub as u64) << bucket
}

impl<const DIGITS: u8> RunHistogram<DIGITS> {
    /// An empty histogram; nothing is allocated until the first record.
    pub fn new() -> Self {
        RunHistogram {
            hist: None,
            counts: Vec::new(),
        }
    }

    /// Records `value` once, clamped to `[1, MAX_LATENCY_US]`: 0 counts at index 0, which
    /// no value in range has and which folds in as 1 (so that a record clamps only above).
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        let i = index(value.min(MAX_LATENCY_US), DIGITS);
        match self.counts.get_mut(i) {
            Some(n) => *n += 1,
            None => self.first_record(i),
        }
    }

    /// The first record since the counts were last folded in: takes a zeroed array of
    /// counts, one a flush on this thread gave back if there is one.
    #[cold]
    #[inline(never)]
    fn first_record(&mut self, i: usize) {
        let len = index(MAX_LATENCY_US, DIGITS) + 1;
        self.counts = SPARE
            .with_borrow_mut(|spare| spare[usize::from(DIGITS == 3)].pop())
            .unwrap_or_else(|| vec![0; len]);
        debug_assert!(self.counts.len() == len && self.counts.iter().all(|&n| n == 0));
        self.counts[i] = 1;
    }

    /// Puts the counts into the histogram, so that [`Self::view`] borrows it without a copy.
    /// The counts array, zeroed again, goes to the thread's spares.
    pub fn flush(&mut self) {
        if !self.counts.is_empty() {
            let h = self.hist.get_or_insert_with(|| new_histogram(DIGITS));
            let mut counts = std::mem::take(&mut self.counts);
            fold::<DIGITS>(h, &mut counts);
            SPARE.with_borrow_mut(|spare| {
                let spare = &mut spare[usize::from(DIGITS == 3)];
                if spare.len() < MAX_SPARE[usize::from(DIGITS == 3)] {
                    spare.push(counts);
                }
            });
        }
    }

    /// The histogram with every value recorded so far.
    pub fn view(&self) -> Cow<'_, Histogram<u64>> {
        match &self.hist {
            Some(h) if self.counts.is_empty() => Cow::Borrowed(h),
            hist => {
                let mut h = hist.clone().unwrap_or_else(|| new_histogram(DIGITS));
                fold::<DIGITS>(&mut h, &mut self.counts.clone());
                Cow::Owned(h)
            }
        }
    }

    /// How many values were recorded (or added) in all.
    pub fn len(&self) -> u64 {
        self.hist.as_ref().map_or(0, Histogram::len) + self.counts.iter().sum::<u64>()
    }

    /// Whether nothing was recorded (or added).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds everything `o` recorded.
    pub fn add(&mut self, o: &RunHistogram<DIGITS>) {
        if o.hist.is_none() && o.counts.is_empty() {
            return;
        }
        self.flush();
        self.hist
            .get_or_insert_with(|| new_histogram(DIGITS))
            .add(&*o.view())
            .expect("histograms share bounds");
    }
}

/// Records `counts` (by HDR index at `DIGITS` digits) into `h`, each at its bucket's
/// lowest value.
/// Most buckets are empty (a run's latencies span a few powers of two), so the scan skips
/// blocks of them with one test each. `counts` is left zeroed.
fn fold<const DIGITS: u8>(h: &mut Histogram<u64>, counts: &mut [u64]) {
    const BLOCK: usize = 16;
    for (b, block) in counts.chunks_mut(BLOCK).enumerate() {
        if block.iter().fold(0, |any, &n| any | n) == 0 {
            continue;
        }
        for (k, &n) in block.iter().enumerate() {
            if n > 0 {
                // Index 0 holds the zeros, clamped to 1.
                h.saturating_record_n(lowest_at(b * BLOCK + k, DIGITS).max(1), n);
            }
        }
        block.fill(0);
    }
}

/// Spare counts arrays a thread keeps per precision (2 digits, 26 KB each: a config's rows
/// of seconds; 3 digits, 184 KB each: a recorder's four run-wide histograms), so that what a
/// thread holds back stays a few MB: 64 × 26 KB + 16 × 184 KB.
const MAX_SPARE: [usize; 2] = [64, 16];

thread_local! {
    /// Zeroed counts arrays that flushes gave back, by precision (index 0: 2 digits, 1: 3):
    /// the recorders a thread makes one after another (the simulator's configs) zero each
    /// array once, not once per histogram (zeroing is most of a histogram's fixed cost).
    static SPARE: RefCell<[Vec<Vec<u64>>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// A latency in microseconds clamped to the range every latency histogram tracks.
#[inline(always)]
pub(super) fn clamped(us: u64) -> u64 {
    us.clamp(1, MAX_LATENCY_US)
}

impl<const DIGITS: u8> serde::Serialize for RunHistogram<DIGITS> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        super::histogram_v2::serialize(&self.view(), s)
    }
}

impl<'de, const DIGITS: u8> serde::Deserialize<'de> for RunHistogram<DIGITS> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A dump's histogram may hold other digits (the format allows 2 or 3): the counts
        // recorded here still fold in by value.
        super::histogram_v2::deserialize(d).map(|h| RunHistogram {
            hist: Some(h),
            counts: Vec::new(),
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Values with repeats, repeats after other values, values out of range at both ends,
    /// and values that clamp to the same one (0 and 1).
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

    /// Each value clamped and recorded on its own, straight into an HDR histogram.
    fn one_by_one(values: &[u64], digits: u8) -> Histogram<u64> {
        let mut h = new_histogram(digits);
        for &v in values {
            h.saturating_record(clamped(v));
        }
        h
    }

    /// Every bucket edge of the range (each power of two, each sub-bucket step around it,
    /// one either side), every value up to 5,000, and a spread of others.
    fn awkward_values() -> Vec<u64> {
        let mut v: Vec<u64> = (0..=5_000).collect();
        for shift in 0..33 {
            let p = 1u64 << shift;
            for d in [
                0, 1, 2, 3, 7, 8, 9, 255, 256, 257, 1023, 1024, 1025, 2047, 2048,
            ] {
                v.extend([p.saturating_sub(d), p + d]);
            }
        }
        let mut x = 12_345u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            v.push(x >> (x % 40 + 24));
        }
        v.extend([
            MAX_LATENCY_US - 1,
            MAX_LATENCY_US,
            MAX_LATENCY_US + 1,
            u64::MAX,
        ]);
        v
    }

    /// The bucket arithmetic is HDR's own: each value lands in the bucket HDR puts it in,
    /// whose lowest value is what HDR calls its lowest equivalent.
    fn indexes_as_hdr_does(digits: u8) {
        let h = new_histogram(digits);
        let len = index(MAX_LATENCY_US, digits) + 1;
        assert!(len <= h.distinct_values());
        for v in awkward_values() {
            let v = clamped(v);
            let i = index(v, digits);
            assert_eq!(
                lowest_at(i, digits),
                h.lowest_equivalent(v),
                "{v} at {digits}"
            );
        }
        for i in 0..len {
            assert_eq!(index(lowest_at(i, digits), digits), i);
        }
    }

    #[test]
    fn indexes_as_hdr_does_at_two_and_three_digits() {
        indexes_as_hdr_does(2);
        indexes_as_hdr_does(3);
    }

    #[test]
    fn the_view_is_the_histogram_recorded_one_by_one() {
        for n in 0..=VALUES.len() {
            let mut r = RunHistogram::<3>::new();
            for &v in &VALUES[..n] {
                r.record(v);
            }
            let want = one_by_one(&VALUES[..n], 3);
            let view = r.view();
            assert_eq!(*view, want, "after {n} values");
            assert_eq!((view.len(), r.len()), (n as u64, n as u64));
            assert_eq!((view.min(), view.max()), (want.min(), want.max()));
            drop(view);
            r.flush();
            assert!(n == 0 || matches!(r.view(), Cow::Borrowed(_)));
            assert_eq!(*r.view(), want);
        }
    }

    #[test]
    fn every_figure_read_is_the_one_of_the_values_themselves() {
        let values = awkward_values();
        for digits in [2, 3] {
            let want = one_by_one(&values, digits);
            let got = match digits {
                2 => {
                    let mut r = RunHistogram::<2>::new();
                    values.iter().for_each(|&v| r.record(v));
                    r.view().into_owned()
                }
                _ => {
                    let mut r = RunHistogram::<3>::new();
                    values.iter().for_each(|&v| r.record(v));
                    r.view().into_owned()
                }
            };
            assert_eq!(got, want);
            assert_eq!(
                (got.min(), got.max(), got.min_nz(), got.mean(), got.stdev()),
                (
                    want.min(),
                    want.max(),
                    want.min_nz(),
                    want.mean(),
                    want.stdev()
                )
            );
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(got.value_at_quantile(q), want.value_at_quantile(q));
            }
            let encode = super::super::histogram_v2::encode;
            assert_eq!(encode(&got), encode(&want));
        }
    }

    #[test]
    fn adding_counts_both_sides_recorded_and_folded() {
        let (mut a, mut b) = (RunHistogram::<3>::new(), RunHistogram::<3>::new());
        VALUES[..5].iter().for_each(|&v| a.record(v));
        VALUES[5..].iter().for_each(|&v| b.record(v));
        a.add(&b);
        assert_eq!(*a.view(), one_by_one(&VALUES, 3));
        // An empty one adds nothing, and adding to an empty one copies.
        a.add(&RunHistogram::new());
        let mut c = RunHistogram::<3>::new();
        c.add(&a);
        assert_eq!(*c.view(), one_by_one(&VALUES, 3));
        assert!(RunHistogram::<2>::new().is_empty());
    }

    #[test]
    fn serializes_what_it_recorded_and_records_on_after_reading() {
        let mut r = RunHistogram::<3>::new();
        VALUES[..9].iter().for_each(|&v| r.record(v));
        let text = serde_json::to_string(&r).unwrap();
        let mut back: RunHistogram<3> = serde_json::from_str(&text).unwrap();
        assert_eq!(*back.view(), one_by_one(&VALUES[..9], 3));
        VALUES[9..].iter().for_each(|&v| back.record(v));
        assert_eq!(*back.view(), one_by_one(&VALUES, 3));
        let empty = serde_json::to_string(&RunHistogram::<2>::new()).unwrap();
        assert_eq!(
            empty,
            serde_json::to_string(&super::super::histogram_v2::encode(&new_histogram(2))).unwrap()
        );
    }
}
