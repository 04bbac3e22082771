//! An overloaded capacity point, and what it says: goodput before the fault against the
//! offered load, with how first attempts failed and what the target received over the same
//! seconds, so that a goodput of 0 does not read as a target that stopped.

use serde::Serialize;

use super::grid::Axis;
use crate::metrics::result::pre_fault_seconds;
use crate::metrics::RunResult;

/// What `capacity::ConfigCapacity::binding` says when the probe beyond the limit was overloaded.
pub const OVERLOADED: &str = "overloaded before the fault";

/// Offered load and goodput before the fault of a run that was overloaded there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Overload {
    /// The field's value (for a probe: its own).
    pub value: f64,
    pub offered_rps: f64,
    /// Successes at the client per second: what the client got, not what the target did.
    pub goodput_rps: f64,
    /// Over the same seconds: attempts the target received per second, and how first
    /// attempts failed (shares of first attempts). A goodput of 0 is no stopped target: past
    /// its capacity its queue is full (503 at once) and the wait of what it queues exceeds the
    /// client's timeout, so every attempt fails while the target works through its queue, and
    /// retries multiply the arrivals. `None` when the run has no per-second rows.
    pub arrivals_rps: Option<f64>,
    pub first_failed: Option<FirstFailed>,
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

impl Overload {
    /// "overloaded before the fault at load.rate = 850: pre-fault goodput 0 of 850 req/s;
    /// first attempts failed 76.1 % transient, 23.9 % by timeout; the target received 3,368
    /// attempts/s (4.0x the offered load)": without the second half, a goodput of 0 reads as
    /// a target that stopped, when it was working at full capacity, refusing what its queue
    /// could not hold and serving clients that no longer waited.
    pub fn describe(&self, axis: &Axis) -> String {
        let n = |v: f64| crate::metrics::numbers::thousands(v.round().max(0.0) as u64);
        let mut s = format!(
            "{OVERLOADED} at {} = {}: pre-fault goodput {} of {} req/s",
            axis.path,
            axis.label(self.value),
            n(self.goodput_rps),
            n(self.offered_rps)
        );
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
                    .map(|(share, how)| {
                        format!("{} % {how}", crate::metrics::numbers::fmt_pct(*share))
                    })
                    .collect();
                s.push_str(&format!("; first attempts failed {}", parts.join(", ")));
            }
        }
        if let (Some(arrivals), true) = (self.arrivals_rps, self.offered_rps > 0.0) {
            s.push_str(&format!(
                "; the target received {} attempts/s ({:.1}x the offered load)",
                n(arrivals),
                arrivals / self.offered_rps
            ));
        }
        s
    }
}

/// Over the seconds `overloaded` compares: attempts the target received per second, and
/// how first attempts failed (the other fields are left 0).
pub(super) fn before_fault(run: &RunResult, config: &str) -> Overload {
    use crate::metrics::SecondRow;
    let rows: Vec<&SecondRow> = run
        .timeseries
        .iter()
        .filter(|r| r.config == config)
        .collect();
    let mut o = Overload {
        value: 0.0,
        offered_rps: 0.0,
        goodput_rps: 0.0,
        arrivals_rps: None,
        first_failed: None,
    };
    if let Some(seconds) = pre_fault_seconds(rows.len(), &run.faults, run.duration_s) {
        let window = &rows[seconds];
        let sum = |f: fn(&SecondRow) -> u64| window.iter().map(|r| f(r)).sum::<u64>();
        o.arrivals_rps = Some(sum(|r| r.downstream_arrivals) as f64 / window.len() as f64);
        let first = sum(|r| r.first_attempts);
        if first > 0 {
            let share = |n: u64| n as f64 / first as f64;
            o.first_failed = Some(FirstFailed {
                transient: share(sum(|r| r.first_failed_transient)),
                throttling: share(sum(|r| r.first_failed_throttling)),
                timeout: share(sum(|r| r.first_failed_timeout)),
                other: share(sum(|r| r.first_failed_other)),
            });
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A goodput of 0 comes with what the client and the target saw over the same seconds,
    /// so it does not read as a target that stopped.
    #[test]
    fn an_overload_says_why_its_goodput_is_what_it_is() {
        let axis = crate::sweep::grid::Axis::parse("load.rate=100..1000:50").unwrap();
        let mut o = Overload {
            value: 850.0,
            offered_rps: 850.0,
            goodput_rps: 0.0,
            arrivals_rps: Some(3368.0),
            first_failed: Some(FirstFailed {
                transient: 0.761,
                throttling: 0.0,
                timeout: 0.239,
                other: 0.0,
            }),
        };
        assert_eq!(
            o.describe(&axis),
            "overloaded before the fault at load.rate = 850: pre-fault goodput 0 of 850 req/s; \
             first attempts failed 76.1 % transient, 23.9 % by timeout; the target received \
             3,368 attempts/s (4.0x the offered load)"
        );
        // Without per-second rows: the figures alone.
        o.arrivals_rps = None;
        o.first_failed = None;
        assert_eq!(
            o.describe(&axis),
            "overloaded before the fault at load.rate = 850: pre-fault goodput 0 of 850 req/s"
        );
    }
}
