//! The modeled built-in target: the same counts as `target::counters`, kept without locks
//! and driven by virtual time. The gate (slots + FIFO queue) lives in the engine, next to
//! the events that move requests through it.

use std::collections::{BTreeMap, HashMap};

use crate::metrics::TargetStats;

/// Per-second series never grow past this index (a week), as in the live target.
const MAX_SECOND: usize = 7 * 24 * 3600;

const NS_PER_S: u64 = 1_000_000_000;

fn sec_of(t: u64) -> usize {
    ((t / NS_PER_S) as usize).min(MAX_SECOND)
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

/// The target's own counts, with exactly the semantics of the live target's counters:
/// an arrival goes in flight until its response leaves, its connection is reset, or the
/// client drops the connection (per-try timeout).
pub(crate) struct Counters {
    arrivals: u64,
    arrivals_per_s: Vec<u64>,
    in_flight: u64,
    peak_in_flight: u64,
    peak_in_flight_per_s: Vec<u64>,
    cur_sec: usize,
    served_ok: u64,
    served_ok_per_s: Vec<u64>,
    by_status: Vec<u64>,
    resets: u64,
    hangs: u64,
    shed: u64,
    lost_responses: u64,
    executions: u64,
    duplicate_executions: u64,
    extra_executions: u64,
    /// Executions so far per logical request id (write requests only).
    executed: HashMap<u64, u32>,
    pub(crate) peak_serving: u64,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            arrivals: 0,
            arrivals_per_s: Vec::new(),
            in_flight: 0,
            peak_in_flight: 0,
            peak_in_flight_per_s: Vec::new(),
            cur_sec: 0,
            served_ok: 0,
            served_ok_per_s: Vec::new(),
            by_status: vec![0; 1000],
            resets: 0,
            hangs: 0,
            shed: 0,
            lost_responses: 0,
            executions: 0,
            duplicate_executions: 0,
            extra_executions: 0,
            executed: HashMap::new(),
            peak_serving: 0,
        }
    }

    /// Brings the per-second in-flight peaks up to `sec` (the level held since the last
    /// change was seen by every second in between).
    #[inline]
    fn advance(&mut self, sec: usize) {
        if sec > self.cur_sec {
            let level = self.in_flight;
            for s in self.cur_sec + 1..=sec {
                raise(&mut self.peak_in_flight_per_s, s, level);
            }
            self.cur_sec = sec;
        }
    }

    #[inline]
    pub(crate) fn arrive(&mut self, t: u64) {
        let sec = sec_of(t);
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

    #[inline]
    pub(crate) fn leave(&mut self, t: u64) {
        self.advance(sec_of(t));
        self.in_flight -= 1;
    }

    #[inline]
    pub(crate) fn respond(&mut self, t: u64, status: u16, served: bool) {
        if let Some(n) = self.by_status.get_mut(status as usize) {
            *n += 1;
        }
        if served {
            self.served_ok += 1;
            bump(&mut self.served_ok_per_s, sec_of(t));
        }
    }

    pub(crate) fn reset(&mut self) {
        self.resets += 1;
    }

    pub(crate) fn hang(&mut self) {
        self.hangs += 1;
    }

    pub(crate) fn shed(&mut self) {
        self.shed += 1;
    }

    pub(crate) fn lost_response(&mut self) {
        self.lost_responses += 1;
    }

    pub(crate) fn execute(&mut self, request: u64) {
        self.executions += 1;
        let n = self.executed.entry(request).or_insert(0);
        *n += 1;
        // As the live target counts: a request executed a second time becomes a duplicate
        // once; every execution past its first is an extra side effect.
        if *n == 2 {
            self.duplicate_executions += 1;
        }
        if *n > 1 {
            self.extra_executions += 1;
        }
    }

    /// The final counts, as of run time `t`.
    pub(crate) fn snapshot(&mut self, t: u64) -> TargetStats {
        self.advance(sec_of(t));
        TargetStats {
            arrivals: self.arrivals,
            arrivals_per_s: self.arrivals_per_s.clone(),
            peak_in_flight: self.peak_in_flight,
            peak_in_flight_per_s: self.peak_in_flight_per_s.clone(),
            served_ok: self.served_ok,
            served_ok_per_s: self.served_ok_per_s.clone(),
            responses_by_status: self
                .by_status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| (s as u16, *n))
                .collect::<BTreeMap<u16, u64>>(),
            resets: self.resets,
            hangs: self.hangs,
            shed: self.shed,
            forwarded: 0,
            executions: self.executions,
            duplicate_executions: self.duplicate_executions,
            extra_executions: self.extra_executions,
            // The simulator debits one unit per execution (it does not read amounts).
            debited: self.executions,
            extra_debited: self.extra_executions,
            dedup_replays: 0,
            dedup_conflicts: 0,
            dedup_mismatches: 0,
            peak_serving: self.peak_serving,
            lost_responses: self.lost_responses,
        }
    }
}
