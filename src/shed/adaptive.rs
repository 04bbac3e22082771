//! Envoy's adaptive concurrency limit (the `envoy.filters.http.adaptive_concurrency` filter
//! with its gradient controller), step for step, as both engines' targets apply it: a limit
//! on the requests in the work that it learns from their latency, answering 503 past it.
//!
//! A service whose queue grows answers slower; the controller sees the latency sampled over
//! each `update_interval` rise above the minimum it measured (the minRTT) and lowers the
//! limit, so excess arrivals are refused at once instead of queueing: a metastable storm's
//! retries meet fast 503s, not a queue that never drains. It rests on reading Envoy's source
//! (envoyproxy/envoy c35f67f,
//! `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc`),
//! not on a run beside Envoy:
//!
//! - the controller starts in a minRTT window: the limit is `min_concurrency` until
//!   `min_rtt_requests` requests admitted since the window opened have completed; the
//!   `percentile` of their latencies is the minRTT, and the limit goes back to what it was
//!   before the window (`enterMinRTTSamplingWindow`, `updateMinRTT`);
//! - every `update_interval` outside a window, the `percentile` of the latencies completed
//!   since the last update is the sample RTT, and the limit becomes
//!   `limit × gradient + √(limit × gradient)`, truncated, within `[min_concurrency,
//!   max_limit]`, where `gradient = (minRTT × (1 + buffer)) / sampleRTT` held to `[0.5, 2]`
//!   (`resetSampleWindow`, `calculateNewLimit`); an interval with no sample changes nothing;
//! - the next minRTT window opens `min_rtt_interval` plus a jitter after the last one
//!   closed, or at once when an update has set the limit to `min_concurrency` for the 5th
//!   time in a row (`updateConcurrencyLimit`);
//! - a request is admitted while fewer than the limit are outstanding
//!   (`forwardingDecision`); its latency is counted when it leaves the work, unless it was
//!   admitted before the current minRTT window opened (`recordLatencySample`).
//!
//! Where this differs from Envoy: timers are not needed, since the state matters only when a
//! request arrives or leaves, so every timer due by then fires first, in time order (a minRTT
//! window before a sample update due at the same instant); the percentile is exact
//! (nearest rank over the samples, in whole microseconds as Envoy records them), where
//! Envoy's log-linear histogram approximates it within its bucket; the jitter is a draw
//! that depends only on the window's number, not Envoy's random generator, so both engines
//! open each window at the same instant. "Outstanding" is the target's work in progress:
//! requests queued or served.

use crate::scenario::shedding::AdaptiveConcurrency;

/// Updates that set the limit to `min_concurrency` in a row before a minRTT window opens at
/// once (`consecutive_min_concurrency_set_ >= 5`).
const MIN_SET_IN_A_ROW: u32 = 5;
/// Salt of the jitter draws (apart from every other draw of the project).
const JITTER_SALT: u64 = 0xADA7_0C0C;
const MS: u64 = 1_000_000;
/// No timer armed.
const NEVER: u64 = u64::MAX;

/// One target's controller; times are nanoseconds since the target's start.
#[derive(Debug, Clone)]
pub struct AdaptiveLimit {
    cfg: AdaptiveConcurrency,
    limit: u32,
    /// The limit to restore when the minRTT window closes; 0 outside a window (Envoy's
    /// `deferred_limit_value_`, whose being above 0 is `inMinRTTSamplingWindow`).
    deferred: u32,
    /// Microseconds.
    min_rtt: u64,
    /// Latencies in whole microseconds since the last update or window opening.
    samples: Vec<u64>,
    /// When the current (or last) minRTT window opened: requests admitted before it are not
    /// sampled.
    epoch: u64,
    next_update: u64,
    next_window: u64,
    min_in_a_row: u32,
    windows: u64,
}

impl AdaptiveLimit {
    /// The controller at `start`, opening its first minRTT window (Envoy's constructor).
    pub fn new(cfg: AdaptiveConcurrency, start: u64) -> AdaptiveLimit {
        let mut a = AdaptiveLimit {
            cfg,
            limit: cfg.min_concurrency,
            deferred: 0,
            min_rtt: 0,
            samples: Vec::new(),
            epoch: start,
            next_update: start.saturating_add(cfg.update_interval_ms * MS),
            next_window: NEVER,
            min_in_a_row: 0,
            windows: 0,
        };
        a.open_window(start);
        a
    }

    /// The limit in force now.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Whether a request arriving at `now` with `outstanding` requests in the work may enter.
    pub fn admit(&mut self, now: u64, outstanding: usize) -> bool {
        self.fire_timers(now);
        outstanding < self.limit as usize
    }

    /// A request admitted at `admitted` left the work at `now` (served or shed after it was
    /// admitted): its latency is a sample.
    pub fn left(&mut self, now: u64, admitted: u64) {
        self.fire_timers(now);
        if admitted < self.epoch {
            return;
        }
        self.samples.push(now.saturating_sub(admitted) / 1_000);
        self.close_window_if_complete(now);
    }

    fn in_window(&self) -> bool {
        self.deferred > 0
    }

    /// Every timer due by `now`, in time order; on a tie the minRTT window first.
    fn fire_timers(&mut self, now: u64) {
        loop {
            let at = self.next_window.min(self.next_update);
            if at > now {
                return;
            }
            if self.next_window <= self.next_update {
                self.next_window = NEVER;
                self.open_window(at);
            } else {
                self.update(at);
            }
        }
    }

    fn open_window(&mut self, at: u64) {
        if self.in_window() {
            return;
        }
        self.deferred = self.limit;
        self.set_limit(self.cfg.min_concurrency, at);
        self.samples.clear();
        self.epoch = at;
        self.windows += 1;
    }

    fn close_window_if_complete(&mut self, now: u64) {
        if !self.in_window() || self.samples.len() < self.cfg.min_rtt_requests as usize {
            return;
        }
        self.min_rtt = self.aggregate();
        self.set_limit(self.deferred, now);
        self.deferred = 0;
        self.next_window = now.saturating_add(self.jittered_interval());
        self.next_update = now.saturating_add(self.cfg.update_interval_ms * MS);
    }

    /// The sample-reset timer: in a window it gives up (the window's close re-arms it).
    fn update(&mut self, at: u64) {
        if self.in_window() {
            self.next_update = NEVER;
            return;
        }
        self.next_update = at.saturating_add(self.cfg.update_interval_ms * MS);
        if self.samples.is_empty() {
            return;
        }
        let sample_rtt = self.aggregate();
        let limit = self.new_limit(sample_rtt);
        self.set_limit(limit, at);
    }

    /// `calculateNewLimit`.
    fn new_limit(&self, sample_rtt: u64) -> u32 {
        let buffered = self.min_rtt as f64 + self.min_rtt as f64 * self.cfg.buffer;
        // A sample of 0 µs: Envoy's division gives infinity (or NaN), which its clamp turns
        // into 2.
        let gradient = if sample_rtt == 0 {
            2.0
        } else {
            (buffered / sample_rtt as f64).clamp(0.5, 2.0)
        };
        let limit = f64::from(self.limit) * gradient;
        let new_limit = (limit + limit.sqrt()) as u32;
        new_limit.clamp(self.cfg.min_concurrency, self.cfg.max_limit)
    }

    /// `updateConcurrencyLimit`: counts the updates that leave the limit at its minimum.
    fn set_limit(&mut self, limit: u32, at: u64) {
        let old = self.limit;
        self.limit = limit;
        let min = self.cfg.min_concurrency;
        if !self.in_window() && old == min && limit == min {
            self.min_in_a_row += 1;
        } else {
            self.min_in_a_row = 0;
        }
        if self.min_in_a_row >= MIN_SET_IN_A_ROW {
            self.next_window = at;
        }
    }

    /// The configured percentile of the samples (nearest rank), which are then cleared.
    fn aggregate(&mut self) -> u64 {
        let n = self.samples.len();
        let rank = ((self.cfg.percentile * n as f64).ceil() as usize).clamp(1, n);
        let (_, v, _) = self.samples.select_nth_unstable(rank - 1);
        let v = *v;
        self.samples.clear();
        v
    }

    /// `applyJitter`: the interval plus a whole number of milliseconds below
    /// `ceil(interval × jitter)`.
    fn jittered_interval(&self) -> u64 {
        let interval = self.cfg.min_rtt_interval_ms;
        let range = (interval as f64 * self.cfg.jitter).ceil() as u64;
        let extra = if range == 0 {
            0
        } else {
            let u = crate::draws::draw(0, self.windows, 0, JITTER_SALT);
            ((u * range as f64) as u64).min(range - 1)
        };
        (interval + extra) * MS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> AdaptiveConcurrency {
        AdaptiveConcurrency {
            update_interval_ms: 100,
            min_rtt_interval_ms: 10_000,
            min_rtt_requests: 4,
            min_concurrency: 3,
            jitter: 0.0,
            buffer: 0.25,
            percentile: 0.5,
            max_limit: 1000,
        }
    }

    #[test]
    fn the_first_window_holds_min_concurrency_until_its_samples_are_in() {
        let mut a = AdaptiveLimit::new(cfg(), 0);
        assert_eq!(a.limit(), 3);
        assert!(a.admit(0, 2));
        assert!(!a.admit(0, 3));
        // The update timer at 100 ms gives up in the window: the limit stays.
        for (i, lat) in [10u64, 20, 30].iter().enumerate() {
            a.left(150 * MS + i as u64, 150 * MS + i as u64 - lat * MS);
        }
        assert_eq!(a.limit(), 3);
        // The 4th sample closes it: minRTT = nearest-rank median of 10, 20, 30, 40 ms =
        // 20 ms; the limit goes back to the one before the window (3).
        a.left(200 * MS, 160 * MS);
        assert_eq!(a.min_rtt, 20_000);
        assert_eq!(a.limit(), 3);
        assert!(!a.in_window());
        assert_eq!(a.next_update, 300 * MS);
        assert_eq!(a.next_window, 10_200 * MS);
    }

    /// The gradient by hand: minRTT 20 ms, buffered 25 ms.
    #[test]
    fn each_update_scales_the_limit_by_the_gradient_plus_its_square_root() {
        let mut a = AdaptiveLimit::new(cfg(), 0);
        for _ in 0..4 {
            a.left(50 * MS, 30 * MS);
        }
        assert_eq!(a.min_rtt, 20_000);
        // Fast samples (10 ms): gradient 25/10 held to 2; 3 × 2 = 6, + √6 = 8.449 → 8.
        a.left(60 * MS, 50 * MS);
        assert!(a.admit(150 * MS, 0));
        assert_eq!(a.limit(), 8);
        // Slow samples (100 ms): gradient 0.25 held to 0.5; 8 × 0.5 = 4, + 2 = 6.
        a.left(200 * MS, 100 * MS);
        a.admit(250 * MS, 0);
        assert_eq!(a.limit(), 6);
        // No sample in an interval: no change.
        a.admit(350 * MS, 0);
        assert_eq!(a.limit(), 6);
        // 25 ms exactly: gradient 1; 6 + √6 = 8.449 → 8.
        a.left(360 * MS, 335 * MS);
        a.admit(450 * MS, 0);
        assert_eq!(a.limit(), 8);
    }

    #[test]
    fn five_updates_at_the_minimum_open_a_window_at_once() {
        let mut c = cfg();
        c.min_concurrency = 1;
        let mut a = AdaptiveLimit::new(c, 0);
        for _ in 0..4 {
            a.left(50 * MS, 49 * MS);
        }
        assert_eq!((a.min_rtt, a.limit()), (1_000, 1));
        // Each interval a slow sample: 1 × 0.5 = 0.5 + 0.707 → 1, the minimum each time.
        for k in 1..=5u64 {
            a.left((50 + 100 * k) * MS - MS, (50 + 100 * k) * MS - 100 * MS);
            a.admit((50 + 100 * k) * MS, 0);
            assert_eq!(a.in_window(), k == 5, "update {k}");
        }
        assert_eq!(a.epoch, 550 * MS);
    }

    #[test]
    fn requests_admitted_before_a_window_opened_are_not_sampled() {
        let mut a = AdaptiveLimit::new(cfg(), 1_000 * MS);
        a.left(1_050 * MS, 900 * MS);
        assert!(a.samples.is_empty());
    }

    #[test]
    fn the_jitter_stays_below_its_range_and_depends_only_on_the_window() {
        let mut c = cfg();
        c.jitter = 0.15;
        let a = AdaptiveLimit::new(c, 0);
        let b = AdaptiveLimit::new(c, 7);
        let j = a.jittered_interval();
        assert_eq!(j, b.jittered_interval());
        assert!((10_000 * MS..11_500 * MS).contains(&j), "{j}");
    }
}
