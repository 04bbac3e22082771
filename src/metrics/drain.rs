//! Budget drain: a run's answer to "at what failure rate does this budget run dry, and did
//! it?". The threshold comes from the policy core's closed form for the config as resolved;
//! the observed side comes from the per-second rows: first-attempt failure rates per fault
//! window and the budget's sampled levels.
//!
//! Definitions (reports/README.md repeats them):
//! * observed failure rate of a window: failed first attempts / first attempts whose outcome
//!   arrived in the window's whole seconds, per class the config gave the failure;
//! * drain predicted: some class's observed rate is above that class's threshold;
//! * drain observed: at the window's end the budget was at its floor (it refused a retry in
//!   the window's last second), or its level fell by at least half its capacity across the
//!   window;
//! * drain start: the end of the last second, before the first refusal, in which the level
//!   was still at 90 % of capacity or more (where it fell for good);
//! * empty: the first second whose lowest level was below 5 % of capacity;
//! * refilled: the first second after the last refusal whose level was back at 90 %.

use crate::policy::budget::{AwsQuotaConfig, GrpcThrottlingConfig};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::series::{FaultBand, SecondRow};
use crate::policy::thresholds::{run_threshold, Kind};
use crate::policy::{BudgetConfig, RetryConfig};

/// Level at or above which a budget counts as full (fraction of capacity).
const FULL: f64 = 0.9;
/// Level below which a budget counts as empty (fraction of capacity).
const EMPTY: f64 = 0.05;
/// Fall across one window, in capacity, that counts as a drain without refusals.
const DRAIN_FALL: f64 = 0.5;

/// A figure per failure class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerClass<T> {
    pub transient: T,
    pub throttling: T,
    pub timeout: T,
}

impl<T: Copy> PerClass<T> {
    fn get(&self, k: Kind) -> T {
        match k {
            Kind::Transient => self.transient,
            Kind::Throttling => self.throttling,
            Kind::Timeout => self.timeout,
        }
    }
}

/// First-attempt failure rates of one fault window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRates {
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
    /// First attempts whose outcome arrived in the window.
    pub first_attempts: u64,
    /// Failed first attempts / first attempts, per class the config gave the failure.
    pub failure_rate: PerClass<f64>,
    /// Every failed first attempt, retried or not, / first attempts.
    pub failure_rate_all: f64,
}

/// One fault window against the budget's thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrainWindow {
    pub start_s: f64,
    pub end_s: f64,
    /// Classes whose observed rate was above their threshold.
    pub exceeded_thresholds: Vec<String>,
    /// Some class's observed rate was above its threshold.
    pub drain_predicted: bool,
    /// The budget was at its floor at the window's end, or fell by half its capacity.
    pub drain_observed: bool,
}

/// A config's budget in a run: thresholds, when it drained, and per fault window whether
/// the thresholds predicted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetDrain {
    /// Budget kind (`ratio`, `aws-quota`, `grpc-throttling`, `envoy`).
    pub kind: String,
    /// Capacity the `_pct` figures divide by: the bucket size, or for a ratio budget (whose
    /// ceiling moves with traffic) the highest level seen in the run.
    pub capacity: Option<f64>,
    /// Failure rate of first attempts above which the budget drains, per class; `null`
    /// with the reason in `no_threshold_reasons`.
    pub thresholds: PerClass<Option<f64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub no_threshold_reasons: BTreeMap<String, String>,
    pub drain_start_s: Option<f64>,
    pub first_refusal_s: Option<f64>,
    pub empty_s: Option<f64>,
    pub refilled_s: Option<f64>,
    pub lowest_level_pct: Option<f64>,
    pub windows: Vec<DrainWindow>,
}

/// The seconds a window covers: every second that overlaps it.
fn seconds_of(rows: &[SecondRow], start_s: f64, end_s: f64) -> &[SecondRow] {
    let a = (start_s.floor() as usize).min(rows.len());
    let b = (end_s.ceil() as usize).clamp(a, rows.len());
    &rows[a..b]
}

fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// Observed first-attempt failure rates per fault window.
pub fn window_rates(rows: &[SecondRow], faults: &[FaultBand]) -> Vec<WindowRates> {
    faults
        .iter()
        .map(|f| {
            let secs = seconds_of(rows, f.start_s, f.end_s);
            let sum = |g: fn(&SecondRow) -> u64| secs.iter().map(g).sum::<u64>();
            let n = sum(|r| r.first_attempts);
            WindowRates {
                start_s: f.start_s,
                end_s: f.end_s,
                label: f.described(),
                first_attempts: n,
                failure_rate: PerClass {
                    transient: ratio(sum(|r| r.first_failed_transient), n),
                    throttling: ratio(sum(|r| r.first_failed_throttling), n),
                    timeout: ratio(sum(|r| r.first_failed_timeout), n),
                },
                failure_rate_all: ratio(
                    sum(|r| {
                        r.first_failed_transient
                            + r.first_failed_throttling
                            + r.first_failed_timeout
                            + r.first_failed_other
                    }),
                    n,
                ),
            }
        })
        .collect()
}

/// The config's thresholds per class, and the reasons of the missing ones.
pub fn thresholds(config: &RetryConfig) -> (PerClass<Option<f64>>, BTreeMap<String, String>) {
    let mut reasons = BTreeMap::new();
    let mut one = |k: Kind| match run_threshold(config, k) {
        Ok(t) => Some(t),
        Err(why) => {
            reasons.insert(k.as_str().to_string(), why);
            None
        }
    };
    let t = PerClass {
        transient: one(Kind::Transient),
        throttling: one(Kind::Throttling),
        timeout: one(Kind::Timeout),
    };
    (t, reasons)
}

/// What 100 % of a config's budget level is: the capacity of a token budget, the highest
/// level seen (`levels`) of a ratio budget; None without a budget or without a level to
/// speak of (Envoy's concurrent-retry limit).
pub fn budget_capacity(config: &RetryConfig, levels: impl Iterator<Item = f64>) -> Option<f64> {
    match &config.budget {
        BudgetConfig::None | BudgetConfig::Envoy(_) => None,
        BudgetConfig::AwsQuota(AwsQuotaConfig { capacity, .. }) => Some(*capacity),
        BudgetConfig::GrpcThrottling(GrpcThrottlingConfig { max_tokens, .. }) => Some(*max_tokens),
        BudgetConfig::Ratio(_) => {
            levels.fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.max(l))))
        }
    }
    .filter(|c| *c > 0.0)
}

/// The budget's drain figures, and each row's level in % of capacity. None without a budget.
pub fn budget_drain(
    config: &RetryConfig,
    rows: &mut [SecondRow],
    windows: &[WindowRates],
    first_refusal_s: Option<f64>,
) -> Option<BudgetDrain> {
    if matches!(config.budget, BudgetConfig::None) {
        return None;
    }
    let capacity = budget_capacity(config, rows.iter().filter_map(|r| r.budget_level));
    let (thresholds, no_threshold_reasons) = thresholds(config);
    let pct = |l: f64| capacity.map(|c| 100.0 * l / c);
    for r in rows.iter_mut() {
        r.budget_level_pct = r.budget_level.and_then(pct);
    }
    let full =
        |r: &SecondRow| capacity.is_some_and(|c| r.budget_level.is_some_and(|l| l >= FULL * c));
    let refusal_second = first_refusal_s.map(|t| t.floor() as usize);
    let drain_start_s = refusal_second.map(|end| {
        rows[..end.min(rows.len())]
            .iter()
            .rposition(full)
            .map_or(0.0, |i| (i + 1) as f64)
    });
    let empty_s = capacity.and_then(|c| {
        rows.iter()
            .position(|r| r.budget_low.is_some_and(|l| l < EMPTY * c))
            .map(|i| i as f64)
    });
    let refilled_s = rows
        .iter()
        .rposition(|r| r.budget_refusals > 0)
        .and_then(|last| {
            rows[last + 1..]
                .iter()
                .position(full)
                .map(|i| (last + 1 + i) as f64)
        });
    let lowest_level_pct = rows
        .iter()
        .filter_map(|r| r.budget_low)
        .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.min(l))))
        .and_then(pct);
    let level_at = |i: usize| {
        rows[..=i.min(rows.len().saturating_sub(1))]
            .iter()
            .rev()
            .find_map(|r| r.budget_level)
    };
    let windows = windows
        .iter()
        .map(|w| {
            let exceeded: Vec<String> = Kind::ALL
                .iter()
                .filter(|k| {
                    thresholds
                        .get(**k)
                        .is_some_and(|t| w.failure_rate.get(**k) > t)
                })
                .map(|k| k.as_str().to_string())
                .collect();
            let secs = seconds_of(rows, w.start_s, w.end_s);
            let at_floor = secs.last().is_some_and(|r| r.budget_refusals > 0);
            let (a, b) = (w.start_s.floor() as usize, w.end_s.ceil() as usize);
            let fell = match (
                capacity,
                a.checked_sub(1).and_then(level_at),
                b.checked_sub(1).and_then(level_at),
            ) {
                (Some(c), Some(before), Some(after)) => before - after >= DRAIN_FALL * c,
                _ => false,
            };
            DrainWindow {
                start_s: w.start_s,
                end_s: w.end_s,
                drain_predicted: !exceeded.is_empty(),
                exceeded_thresholds: exceeded,
                drain_observed: !rows.is_empty() && (at_floor || fell),
            }
        })
        .collect();
    Some(BudgetDrain {
        kind: config.budget.kind_name().to_string(),
        capacity,
        thresholds,
        no_threshold_reasons,
        drain_start_s,
        first_refusal_s,
        empty_s,
        refilled_s,
        lowest_level_pct,
        windows,
    })
}
