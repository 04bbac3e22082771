//! An overloaded capacity point, and what it says: goodput before the fault against the
//! offered load, with how first attempts failed and what the target received over the same
//! seconds, so that a goodput of 0 does not read as a target that stopped.

use serde::Serialize;

use super::grid::Axis;
pub use crate::metrics::pre_fault::FirstFailed;
use crate::metrics::pre_fault::PreFaultWhy;
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

impl Overload {
    /// "overloaded before the fault at load.rate = 850: pre-fault goodput 0 of 850 req/s;
    /// first attempts failed 76.1 % transient, 23.9 % by timeout; the target received 3,368
    /// attempts/s (3.96× the offered load)": without the second half, a goodput of 0 reads as
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
        s.push_str(
            &PreFaultWhy {
                arrivals_rps: self.arrivals_rps,
                first_failed: self.first_failed,
            }
            .describe(self.offered_rps),
        );
        s
    }
}

/// Over the seconds `overloaded` compares: attempts the target received per second, and
/// how first attempts failed (the other fields are left 0).
pub(super) fn before_fault(run: &RunResult, config: &str) -> Overload {
    let why = PreFaultWhy::of(&run.timeseries, &run.faults, run.duration_s, config);
    Overload {
        value: 0.0,
        offered_rps: 0.0,
        goodput_rps: 0.0,
        arrivals_rps: why.arrivals_rps,
        first_failed: why.first_failed,
    }
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
             3,368 attempts/s (3.96× the offered load)"
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
