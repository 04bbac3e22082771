//! Why a run was overloaded before its fault, from its per-second rows: what the target
//! received and how first attempts failed, over the seconds `overloaded` compares.
//!
//! "Goodput 0 of 850 req/s" alone reads as a target that stopped, when past its capacity it
//! works flat out: its full queue refuses at once (503) and what it does queue waits longer
//! than the client's timeout, so every attempt fails while the target serves, and retries
//! multiply what it receives. The console line of a run and the capacity search's
//! overloaded point both say so, from this one place.

use serde::Serialize;

use super::result::pre_fault_seconds;
use super::{RunResult, SecondRow};

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
    /// Of config `config` of `run`.
    pub fn of(run: &RunResult, config: &str) -> PreFaultWhy {
        let rows: Vec<&SecondRow> = run
            .timeseries
            .iter()
            .filter(|r| r.config == config)
            .collect();
        let Some(seconds) = pre_fault_seconds(rows.len(), &run.faults, run.duration_s) else {
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
    /// 3,368 attempts/s (4.0x the offered load)", or nothing without rows.
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
                "; the target received {} attempts/s ({:.1}x the offered load)",
                super::numbers::thousands(arrivals.round().max(0.0) as u64),
                arrivals / offered_rps
            ));
        }
        s
    }
}
