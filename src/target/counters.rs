//! The target's exact counts. One `std::sync::Mutex` guards them all: every update is a few
//! integer operations, the lock is held for nanoseconds, and a single lock makes the
//! snapshot consistent (arrivals, in-flight and per-second series agree with each other).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::TargetStats;

/// Per-second series never grow past this index (a week), whatever the clock says.
const MAX_SECOND: usize = 7 * 24 * 3600;

#[derive(Default)]
struct Inner {
    arrivals: u64,
    arrivals_per_s: Vec<u64>,
    in_flight: u64,
    peak_in_flight: u64,
    peak_in_flight_per_s: Vec<u64>,
    /// Last second whose `peak_in_flight_per_s` entry has been brought up to date.
    cur_sec: usize,
    served_ok: u64,
    served_ok_per_s: Vec<u64>,
    /// Responses by status, indexed by the code (100..=999).
    by_status: Vec<u64>,
    resets: u64,
    hangs: u64,
    shed: u64,
    lost_responses: u64,
    forwarded: u64,
    executions: u64,
    duplicate_executions: u64,
    extra_executions: u64,
    debited: u64,
    extra_debited: u64,
    dedup_replays: u64,
    dedup_conflicts: u64,
    dedup_mismatches: u64,
    /// Executions so far per logical request id (write requests only).
    executed: HashMap<u64, u32>,
}

fn bump(series: &mut Vec<u64>, sec: usize) {
    if series.len() <= sec {
        series.resize(sec + 1, 0);
    }
    series[sec] += 1;
}

fn raise(series: &mut Vec<u64>, sec: usize, level: u64) {
    if series.len() <= sec {
        series.resize(sec + 1, 0);
    }
    if series[sec] < level {
        series[sec] = level;
    }
}

impl Inner {
    fn arrive(&mut self, sec: usize) {
        let sec = sec.max(self.cur_sec);
        self.advance(sec);
        self.arrivals += 1;
        bump(&mut self.arrivals_per_s, sec);
        self.in_flight += 1;
        let level = self.in_flight;
        if level > self.peak_in_flight {
            self.peak_in_flight = level;
        }
        let s = self.cur_sec;
        raise(&mut self.peak_in_flight_per_s, s, level);
    }

    /// Brings the per-second in-flight peaks up to `sec`: the level in flight now has been
    /// held through every second since the last change, so each of them saw at least it.
    fn advance(&mut self, sec: usize) {
        if sec > self.cur_sec {
            let level = self.in_flight;
            for s in self.cur_sec + 1..=sec {
                raise(&mut self.peak_in_flight_per_s, s, level);
            }
            self.cur_sec = sec;
        }
    }
}

pub(crate) struct Counters {
    epoch: Instant,
    inner: Mutex<Inner>,
}

impl Counters {
    pub(crate) fn new(epoch: Instant) -> Self {
        Counters {
            epoch,
            inner: Mutex::new(Inner {
                by_status: vec![0; 1000],
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the counts half-updated in a way that
        // matters more than losing them all, so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run time now (zero before the epoch) and its whole second.
    pub(crate) fn now(&self) -> (Duration, usize) {
        let t = Instant::now().saturating_duration_since(self.epoch);
        (t, (t.as_secs() as usize).min(MAX_SECOND))
    }

    /// Counts an arrival and puts it in flight. Returns its run time.
    #[cfg(test)]
    pub(crate) fn arrive(&self) -> Duration {
        let mut c = self.lock();
        // Read the clock under the lock so seconds only move forward.
        let (t, sec) = self.now();
        c.arrive(sec);
        t
    }

    /// Counts an arrival at whole second `sec` (from [`Counters::now`], read just before)
    /// and puts it in flight. A second already passed by another thread counts as that
    /// later second, so seconds only move forward.
    pub(crate) fn arrive_at(&self, sec: usize) {
        self.lock().arrive(sec);
    }

    /// An arrival at whole second `sec` answered at once with `status` (not served): the
    /// arrival, the response and the leave under one lock, as if the answer took no time.
    /// Counts exactly what `arrive_at`, `respond(status, false)` and `leave` would.
    pub(crate) fn answer_at_once(&self, sec: usize, status: u16) {
        let mut c = self.lock();
        c.arrive(sec);
        c.by_status[status as usize] += 1;
        c.in_flight -= 1;
    }

    /// A request left flight (answered, or dropped with its connection).
    pub(crate) fn leave(&self) {
        let mut c = self.lock();
        let (_, sec) = self.now();
        c.advance(sec);
        c.in_flight -= 1;
    }

    /// A response went out with `status`; `served` when it is a 2xx after real service.
    pub(crate) fn respond(&self, status: u16, served: bool) {
        let mut c = self.lock();
        c.by_status[status as usize] += 1;
        if served {
            let (_, sec) = self.now();
            c.served_ok += 1;
            bump(&mut c.served_ok_per_s, sec);
        }
    }

    pub(crate) fn reset(&self) {
        self.lock().resets += 1;
    }

    pub(crate) fn hang(&self) {
        self.lock().hangs += 1;
    }

    pub(crate) fn shed(&self) {
        self.lock().shed += 1;
    }

    pub(crate) fn lost_response(&self) {
        self.lock().lost_responses += 1;
    }

    /// A request was handed to the real upstream server (fault proxy only).
    pub(crate) fn forward(&self) {
        self.lock().forwarded += 1;
    }

    /// The run's t = 0.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A write request of logical request `request` executed: its side effect happened,
    /// debiting `amount` from the account. The second execution of a logical request makes
    /// it a duplicate; every execution after the first is an extra side effect.
    pub(crate) fn execute(&self, request: u64, amount: u64) {
        let mut c = self.lock();
        c.executions += 1;
        c.debited = c.debited.saturating_add(amount);
        let n = c.executed.entry(request).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 {
            c.extra_executions += 1;
            c.extra_debited = c.extra_debited.saturating_add(amount);
        }
        if n == 2 {
            c.duplicate_executions += 1;
        }
    }

    /// A keyed request was answered from the dedup store without executing.
    pub(crate) fn dedup_replay(&self) {
        self.lock().dedup_replays += 1;
    }

    /// A keyed request arrived while its key was still executing (answered 409).
    pub(crate) fn dedup_conflict(&self) {
        self.lock().dedup_conflicts += 1;
    }

    /// A used key arrived with another body (answered 422).
    pub(crate) fn dedup_mismatch(&self) {
        self.lock().dedup_mismatches += 1;
    }

    /// Moves the epoch back by `d`: for tests, the same as `d` passing.
    #[cfg(test)]
    fn pass(&mut self, d: Duration) {
        self.epoch -= d;
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.lock().in_flight
    }

    pub(crate) fn snapshot(&self, peak_serving: u64) -> TargetStats {
        let mut c = self.lock();
        let (_, sec) = self.now();
        c.advance(sec);
        TargetStats {
            arrivals: c.arrivals,
            arrivals_per_s: c.arrivals_per_s.clone(),
            peak_in_flight: c.peak_in_flight,
            peak_in_flight_per_s: c.peak_in_flight_per_s.clone(),
            served_ok: c.served_ok,
            served_ok_per_s: c.served_ok_per_s.clone(),
            responses_by_status: c
                .by_status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| (s as u16, *n))
                .collect::<BTreeMap<u16, u64>>(),
            resets: c.resets,
            hangs: c.hangs,
            shed: c.shed,
            forwarded: c.forwarded,
            executions: c.executions,
            duplicate_executions: c.duplicate_executions,
            extra_executions: c.extra_executions,
            debited: c.debited,
            extra_debited: c.extra_debited,
            dedup_replays: c.dedup_replays,
            dedup_conflicts: c.dedup_conflicts,
            dedup_mismatches: c.dedup_mismatches,
            peak_serving,
            lost_responses: c.lost_responses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn per_second_peaks_carry_the_level_held_across_seconds() {
        let mut c = Counters::new(Instant::now());
        c.arrive();
        c.arrive();
        c.pass(Duration::from_millis(2_500));
        c.arrive(); // second 2: 3 in flight
        c.leave();
        c.leave();
        c.pass(Duration::from_secs(1));
        let s = c.snapshot(0);
        assert_eq!(s.arrivals, 3);
        assert_eq!(s.arrivals_per_s, vec![2, 0, 1]);
        assert_eq!(s.peak_in_flight, 3);
        // Second 1 had no event but still held 2 in flight; second 3 holds 1.
        assert_eq!(s.peak_in_flight_per_s, vec![2, 2, 3, 1]);
    }

    #[test]
    fn duplicates_count_requests_extras_count_executions() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let _g = rt.enter();
        let c = Counters::new(Instant::now());
        // Request 1 executes three times (amount 5), request 2 twice (amount 7), 3 once.
        for (r, amount) in [(1, 5), (2, 7), (1, 5), (1, 5), (3, 1), (2, 7)] {
            c.execute(r, amount);
        }
        c.dedup_replay();
        c.dedup_replay();
        c.dedup_conflict();
        c.dedup_mismatch();
        let s = c.snapshot(0);
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
