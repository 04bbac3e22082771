//! A target's counts as they are made, by whole second of run time: one plain struct for
//! the live target (behind its mutex, reading the clock) and the simulator's modeled target
//! (driven by virtual time), so that both count with exactly the same meaning.
//!
//! An arrival goes in flight until its response leaves, its connection is reset, or the
//! client drops the connection. Seconds only move forward: a second older than one already
//! seen counts as that later second.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::TargetStats;

/// Per-second series never grow past this index (a week), whatever the clock says.
const MAX_SECOND: usize = 7 * 24 * 3600;

/// The whole second of run time `t` that the per-second series count it in (capped).
#[inline]
pub fn second_of(t: Duration) -> usize {
    (t.as_secs() as usize).min(MAX_SECOND)
}

// Both run per arrival and per answer: kept inline (the compiler's own choice moved with
// unrelated changes, 40 instructions per simulated attempt), the rare growth out of line.
// Each looks its entry up once (`get_mut`), the growth and its write out of line.
#[inline]
fn bump(series: &mut Vec<u64>, sec: usize) {
    add(series, sec, 1);
}

#[inline]
fn add(series: &mut Vec<u64>, sec: usize, n: u64) {
    match series.get_mut(sec) {
        Some(v) => *v += n,
        None => grow(series, sec, n),
    }
}

#[inline]
fn raise(series: &mut Vec<u64>, sec: usize, level: u64) {
    match series.get_mut(sec) {
        Some(n) => {
            if *n < level {
                *n = level;
            }
        }
        None => grow(series, sec, level),
    }
}

/// Grows `series` to hold `sec`, whose new entry is `value` (the entries between are 0).
#[cold]
fn grow(series: &mut Vec<u64>, sec: usize, value: u64) {
    series.resize(sec, 0);
    series.push(value);
}

/// The counts so far: the plain totals and series already in their reported form
/// (`stats`), plus what only counting needs.
#[derive(Debug, Clone)]
pub struct TargetCounts {
    /// Everything but `responses_by_status` and `peak_serving`, filled in by `snapshot`.
    stats: TargetStats,
    in_flight: u64,
    /// Last second whose `peak_in_flight_per_s` entry has been brought up to date.
    cur_sec: usize,
    /// What the arrivals of `cur_sec` add to its entries of `arrivals_per_s` (a count) and
    /// `peak_in_flight_per_s` (a level, 0 for none), not yet written there: every arrival
    /// counts in `cur_sec`, so these stay at hand until the second moves on (or a snapshot).
    cur_arrivals: u64,
    cur_peak: u64,
    /// Responses by status, indexed by the code (100..=999): an index, not a map lookup.
    by_status: Vec<u64>,
    /// Executions so far per logical request id (write requests only).
    executed: HashMap<u64, u32>,
}

impl Default for TargetCounts {
    fn default() -> Self {
        Self::new()
    }
}

impl TargetCounts {
    pub fn new() -> Self {
        TargetCounts {
            stats: TargetStats::default(),
            in_flight: 0,
            cur_sec: 0,
            cur_arrivals: 0,
            cur_peak: 0,
            by_status: vec![0; 1000],
            executed: HashMap::new(),
        }
    }

    /// Brings the per-second in-flight peaks up to `sec`: the level in flight now has been
    /// held through every second since the last change, so each of them saw at least it.
    /// Per arrival and per departure: the check inline, the move to a later second (once
    /// a second) out of line.
    #[inline(always)]
    pub fn advance(&mut self, sec: usize) {
        if sec > self.cur_sec {
            self.move_to(sec);
        }
    }

    #[cold]
    #[inline(never)]
    fn move_to(&mut self, sec: usize) {
        self.write_current();
        let level = self.in_flight;
        for s in self.cur_sec + 1..=sec {
            raise(&mut self.stats.peak_in_flight_per_s, s, level);
        }
        self.cur_sec = sec;
    }

    /// Writes what the current second's arrivals added into its entries of the series.
    #[inline]
    fn write_current(&mut self) {
        if self.cur_arrivals > 0 {
            add(
                &mut self.stats.arrivals_per_s,
                self.cur_sec,
                self.cur_arrivals,
            );
            self.cur_arrivals = 0;
        }
        if self.cur_peak > 0 {
            raise(
                &mut self.stats.peak_in_flight_per_s,
                self.cur_sec,
                self.cur_peak,
            );
            self.cur_peak = 0;
        }
    }

    /// Counts an arrival at second `sec` and puts it in flight.
    #[inline(always)]
    pub fn arrive(&mut self, sec: usize) -> usize {
        let sec = sec.max(self.cur_sec);
        self.advance(sec);
        self.stats.arrivals += 1;
        self.cur_arrivals += 1;
        self.in_flight += 1;
        let level = self.in_flight;
        if level > self.stats.peak_in_flight {
            self.stats.peak_in_flight = level;
        }
        if level > self.cur_peak {
            self.cur_peak = level;
        }
        sec
    }

    /// The fault proxy could not reach the real server for an arrival counted at second
    /// `arrived` (the second [`TargetCounts::arrive`] returned): it is taken out of the
    /// arrivals, total and per second, and counted as unreached. The target never saw it.
    pub fn unreached(&mut self, arrived: usize) {
        self.stats.arrivals = self.stats.arrivals.saturating_sub(1);
        if arrived == self.cur_sec && self.cur_arrivals > 0 {
            self.cur_arrivals -= 1;
        } else if let Some(n) = self.stats.arrivals_per_s.get_mut(arrived) {
            *n = n.saturating_sub(1);
        }
        self.stats.unreached += 1;
    }

    /// The fault proxy answered an arrival itself, for `reason`.
    pub fn proxy_answered(&mut self, reason: super::ProxyAnswer) {
        self.stats.proxy_answered.count(reason);
    }

    /// The fault proxy relayed the service's reset of an arrival (`stream`: to an HTTP/2
    /// client, as a stream reset; else as a closed connection).
    pub fn relayed_reset(&mut self, stream: bool) {
        self.stats.relayed_resets.count(stream);
    }

    /// A request left flight at second `sec` (answered, or dropped with its connection).
    #[inline]
    pub fn leave(&mut self, sec: usize) {
        self.advance(sec);
        self.in_flight -= 1;
    }

    /// An arrival at `sec` answered at once with `status` (not served): exactly what
    /// `arrive`, `respond(status, None)` and `leave` would count, as if the answer
    /// took no time.
    pub fn answer_at_once(&mut self, sec: usize, status: u16) {
        self.arrive(sec);
        self.count_status(status);
        self.in_flight -= 1;
    }

    #[inline]
    fn count_status(&mut self, status: u16) {
        if let Some(n) = self.by_status.get_mut(usize::from(status)) {
            *n += 1;
        }
    }

    /// A response went out with `status`; `served_at` is its second when it is a 2xx after
    /// real service (goodput), `None` for any other answer (no second needed: a caller
    /// reading a clock reads it only for goodput).
    #[inline]
    pub fn respond(&mut self, status: u16, served_at: Option<usize>) {
        self.count_status(status);
        if let Some(sec) = served_at {
            self.stats.served_ok += 1;
            bump(&mut self.stats.served_ok_per_s, sec);
        }
    }

    pub fn reset(&mut self) {
        self.stats.resets += 1;
    }

    pub fn hang(&mut self) {
        self.stats.hangs += 1;
    }

    pub fn shed(&mut self, reason: super::shed::ShedReason) {
        self.stats.shed += 1;
        self.stats.shed_by_reason.count(reason);
    }

    pub fn lost_response(&mut self) {
        self.stats.lost_responses += 1;
    }

    /// The arrival just counted belongs to request class `class` (loads with classes only:
    /// the target draws it from the request id as the client did).
    #[inline]
    pub fn class_arrived(&mut self, class: usize) {
        bump(&mut self.stats.arrivals_by_class, class);
    }

    /// An arrival of class `class` at a provider that charged it `tokens`; `served` when
    /// the provider answered it 200 (counted again then, with `served` true).
    pub fn class_tokens(&mut self, class: usize, tokens: u64, served: bool) {
        let v = &mut self.stats.tokens_by_class;
        if v.len() <= class {
            v.resize(class + 1, Default::default());
        }
        match served {
            false => v[class].received += tokens,
            true => v[class].served += tokens,
        }
    }

    /// A request was handed to the real upstream server (fault proxy only).
    pub fn forward(&mut self) {
        self.stats.forwarded += 1;
    }

    /// A write request of logical request `request` executed: its side effect happened,
    /// debiting `amount` from the account. The second execution of a logical request makes
    /// it a duplicate; every execution after the first is an extra side effect.
    pub fn execute(&mut self, request: u64, amount: u64) {
        self.stats.executions += 1;
        self.stats.debited = self.stats.debited.saturating_add(amount);
        let n = self.executed.entry(request).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 {
            self.stats.extra_executions += 1;
            self.stats.extra_debited = self.stats.extra_debited.saturating_add(amount);
        }
        if n == 2 {
            self.stats.duplicate_executions += 1;
        }
    }

    /// A keyed request was answered from the dedup store without executing.
    pub fn dedup_replay(&mut self) {
        self.stats.dedup_replays += 1;
    }

    /// A keyed request arrived while its key was still executing (answered 409).
    pub fn dedup_conflict(&mut self) {
        self.stats.dedup_conflicts += 1;
    }

    /// A used key arrived with another body (answered 422).
    pub fn dedup_mismatch(&mut self) {
        self.stats.dedup_mismatches += 1;
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The counts as of second `sec`; `peak_serving` comes from the target's slots.
    pub fn snapshot(&mut self, sec: usize, peak_serving: u64) -> TargetStats {
        self.advance(sec);
        self.write_current();
        TargetStats {
            responses_by_status: self
                .by_status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| (s as u16, *n))
                .collect::<BTreeMap<u16, u64>>(),
            peak_serving,
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_peaks_carry_the_level_held_across_seconds() {
        let mut c = TargetCounts::new();
        c.arrive(0);
        c.arrive(0);
        c.arrive(2); // second 2: 3 in flight
        c.leave(2);
        c.leave(2);
        let s = c.snapshot(3, 0);
        assert_eq!(s.arrivals, 3);
        assert_eq!(s.arrivals_per_s, vec![2, 0, 1]);
        assert_eq!(s.peak_in_flight, 3);
        // Second 1 had no event but still held 2 in flight; second 3 holds 1.
        assert_eq!(s.peak_in_flight_per_s, vec![2, 2, 3, 1]);
    }

    #[test]
    fn series_are_those_of_counting_each_arrival_in_place() {
        // Arrivals, departures and unreached arrivals over seconds with gaps, snapshots
        // taken between them (in the second being counted), against the series by hand.
        let mut c = TargetCounts::new();
        c.arrive(0);
        c.arrive(0);
        let s = c.arrive(0);
        c.unreached(s);
        c.leave(0);
        assert_eq!(c.snapshot(0, 0).arrivals_per_s, vec![2]);
        c.arrive(0);
        c.leave(1);
        c.leave(1);
        c.leave(1);
        c.arrive(4);
        c.unreached(0);
        let s = c.snapshot(4, 0);
        assert_eq!(s.arrivals_per_s, vec![2, 0, 0, 0, 1]);
        assert_eq!(s.peak_in_flight_per_s, vec![3, 3, 0, 0, 1]);
        c.arrive(4);
        c.leave(6);
        let s = c.snapshot(7, 0);
        assert_eq!(s.arrivals, 4);
        assert_eq!(s.unreached, 2);
        assert_eq!(s.arrivals_per_s, vec![2, 0, 0, 0, 2]);
        assert_eq!(s.peak_in_flight_per_s, vec![3, 3, 0, 0, 2, 2, 2, 1]);
    }

    #[test]
    fn seconds_only_move_forward() {
        let mut c = TargetCounts::new();
        c.arrive(3);
        c.arrive(1); // read before another thread's second 3: counts in second 3
        assert_eq!(c.snapshot(3, 0).arrivals_per_s, vec![0, 0, 0, 2]);
    }

    #[test]
    fn answer_at_once_counts_what_its_three_steps_would() {
        let mut a = TargetCounts::new();
        a.answer_at_once(1, 503);
        let mut b = TargetCounts::new();
        b.arrive(1);
        b.respond(503, None);
        b.leave(1);
        assert_eq!(a.snapshot(2, 0), b.snapshot(2, 0));
    }

    #[test]
    fn duplicates_count_requests_extras_count_executions() {
        let mut c = TargetCounts::new();
        // Request 1 executes three times (amount 5), request 2 twice (amount 7), 3 once.
        for (r, amount) in [(1, 5), (2, 7), (1, 5), (1, 5), (3, 1), (2, 7)] {
            c.execute(r, amount);
        }
        c.dedup_replay();
        c.dedup_replay();
        c.dedup_conflict();
        c.dedup_mismatch();
        let s = c.snapshot(0, 0);
        assert_eq!(s.executions, 6);
        assert_eq!(s.duplicate_executions, 2, "requests 1 and 2");
        assert_eq!(s.extra_executions, 3, "two extra for 1, one for 2");
        assert_eq!(s.debited, 5 + 7 + 5 + 5 + 1 + 7);
        assert_eq!(s.extra_debited, 5 + 5 + 7);
        assert_eq!(
            (s.dedup_replays, s.dedup_conflicts, s.dedup_mismatches),
            (2, 1, 1)
        );
    }
}
