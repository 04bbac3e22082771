//! Whether a run was overloaded before its fault (goodput short of the offered load over
//! the seconds before it), and why, from its per-second rows: what the target
//! received and how first attempts failed, over the seconds `overloaded` compares.
//!
//! "Goodput 0 of 850 req/s" alone reads as a target that stopped, when past its capacity it
//! works flat out: its full queue refuses at once (503) and what it does queue waits longer
//! than the client's timeout, so every attempt fails while the target serves, and retries
//! multiply what it receives. The console line of a run and the capacity search's
//! overloaded point both say so, from this one place.

use serde::Serialize;

use super::series::{FaultBand, SecondRow};

/// How far pre-fault goodput may fall short of the offered load before the run counts as
/// overloaded: 5 %. Recovery is measured against the pre-fault level; a service that was
/// already saturated "recovers" to its saturation, and a run at 1.5x capacity would pass
/// `recovery_time_s <= 5` at a fifth of its requests served. Within 5 % the recovery
/// criterion (90 % of the baseline) still means at least 85 % of the offered load served.
/// The comparison skips the first half of the pre-fault seconds (responses still in flight
/// when load starts, up to a few seconds for slow targets, cost 4-8 % over all of them in
/// the shipped LLM scenarios and none in their second half); on the shipped scenarios a
/// healthy second half loses under 0.1 % (requests still in flight at its end), and a
/// service past its capacity loses at least its excess, so 5 % tells the two apart from
/// about 1.05x the capacity up.
pub const OVERLOAD_TOLERANCE: f64 = 0.05;

/// Offered load and goodput before the first fault, per second (see
/// `ConfigSummary::overloaded`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PreFault {
    pub offered_rps: f64,
    pub goodput_rps: f64,
}

impl PreFault {
    /// Goodput short of the offered load by more than [`OVERLOAD_TOLERANCE`].
    pub fn overloaded(self) -> bool {
        self.goodput_rps < (1.0 - OVERLOAD_TOLERANCE) * self.offered_rps
    }
}

/// The seconds `overloaded` compares (of a config's `rows` per-second rows): the second half
/// of the whole seconds of load before the first fault; `None` without a fault or a whole
/// second before it.
pub fn pre_fault_seconds(
    rows: usize,
    faults: &[FaultBand],
    load_duration_s: f64,
) -> Option<std::ops::Range<usize>> {
    let first_start = faults.iter().map(|f| f.start_s).reduce(f64::min)?;
    let n = (first_start.max(0.0).floor() as usize)
        .min(load_duration_s as usize)
        .min(rows);
    (n > 0).then_some(n / 2..n)
}

/// Offered load and goodput over the second half of the whole seconds of load before the
/// first fault (the first half holds the start-up, whose responses lag their arrivals);
/// `None` without a fault or without a whole second of load before it.
pub(crate) fn pre_fault(
    rows: &[SecondRow],
    faults: &[FaultBand],
    load_duration_s: f64,
) -> Option<PreFault> {
    let seconds = pre_fault_seconds(rows.len(), faults, load_duration_s);
    let window = &rows[seconds?];
    let per_s =
        |f: fn(&SecondRow) -> u64| window.iter().map(f).sum::<u64>() as f64 / window.len() as f64;
    Some(PreFault {
        offered_rps: per_s(|r| r.upstream_started + r.dropped),
        goodput_rps: per_s(|r| r.successes),
    })
}

/// How first attempts failed, as shares of first attempts, by the class the config gave
/// the failure (transient: 5xx and resets; throttling: 429; timeout: per-try timeout or
/// deadline at the client; other: failures the config does not retry).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FirstFailed {
    pub transient: f64,
    pub throttling: f64,
    pub timeout: f64,
    pub other: f64,
}

/// Over the seconds before the fault: attempts the target received per second, and how
/// first attempts failed; each `None` when the run has no per-second rows there.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PreFaultWhy {
    pub arrivals_rps: Option<f64>,
    pub first_failed: Option<FirstFailed>,
}

impl PreFaultWhy {
    /// Of config `config` of a run: its per-second rows (`timeseries`, every config's), its
    /// fault windows and how long its load lasted.
    pub fn of(
        timeseries: &[SecondRow],
        faults: &[FaultBand],
        duration_s: f64,
        config: &str,
    ) -> PreFaultWhy {
        let rows: Vec<&SecondRow> = timeseries.iter().filter(|r| r.config == config).collect();
        let Some(seconds) = pre_fault_seconds(rows.len(), faults, duration_s) else {
            return PreFaultWhy::default();
        };
        let window = &rows[seconds];
        let sum = |f: fn(&SecondRow) -> u64| window.iter().map(|r| f(r)).sum::<u64>();
        let first = sum(|r| r.first_attempts);
        let share = |n: u64| n as f64 / first as f64;
        PreFaultWhy {
            arrivals_rps: Some(sum(|r| r.downstream_arrivals) as f64 / window.len() as f64),
            first_failed: (first > 0).then(|| FirstFailed {
                transient: share(sum(|r| r.first_failed_transient)),
                throttling: share(sum(|r| r.first_failed_throttling)),
                timeout: share(sum(|r| r.first_failed_timeout)),
                other: share(sum(|r| r.first_failed_other)),
            }),
        }
    }

    /// "; first attempts failed 76.1 % transient, 23.9 % by timeout; the target received
    /// 3,368 attempts/s (3.96× the offered load)", or nothing without rows.
    pub fn describe(&self, offered_rps: f64) -> String {
        let mut s = String::new();
        if let Some(f) = self.first_failed {
            let mut parts: Vec<(f64, &str)> = [
                (f.transient, "transient"),
                (f.throttling, "throttled"),
                (f.timeout, "by timeout"),
                (f.other, "not retried"),
            ]
            .into_iter()
            .filter(|(share, _)| *share >= 0.0005)
            .collect();
            parts.sort_by(|a, b| b.0.total_cmp(&a.0));
            if !parts.is_empty() {
                let parts: Vec<String> = parts
                    .iter()
                    .map(|(share, how)| format!("{} % {how}", super::numbers::fmt_pct(*share)))
                    .collect();
                s.push_str(&format!("; first attempts failed {}", parts.join(", ")));
            }
        }
        if let (Some(arrivals), true) = (self.arrivals_rps, offered_rps > 0.0) {
            s.push_str(&format!(
                "; the target received {} attempts/s ({:.2}× the offered load)",
                super::numbers::thousands(arrivals.round().max(0.0) as u64),
                arrivals / offered_rps
            ));
        }
        s
    }
}
