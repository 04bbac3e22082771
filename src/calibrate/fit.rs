//! The fit: a service model of the existing grammar from the measured steps, checked by
//! simulating every step with it.
//!
//! * Slots, by Little's law. In a closed loop of one user with no think time, one request is
//!   in the system at any moment, so the mean time a request spends (path plus the time it
//!   holds a slot) is `1 / X₁`, X₁ the throughput of that step. Once the users outnumber the
//!   slots, the throughput stops rising (the plateau X_max) and every slot is busy:
//!   `slots = X_max × hold`. With the path small beside the hold, `slots ≈ X_max / X₁`,
//!   rounded to a whole number; the mean hold is then `slots / X_max` and the path's fixed
//!   overhead (client, sockets, a proxy: time spent outside a slot) what is left of `1 / X₁`.
//!   Without a plateau (the top step still gained more than 10 % over the one before) the
//!   slots are at least the top step's users, and the file says so.
//! * The service-time distribution: the low step's latency less the path, as each of the
//!   grammar's distributions would give it (constant at the mean hold, log-normal through the
//!   median and the 99th percentile, exponential at the mean hold); the one whose simulation
//!   comes nearest the measured steps (the worst relative error of throughput, p50 and p99
//!   over every step) is kept.
//! * The queue and its timeout: from the overload step when there is one ([`super::queue`]);
//!   else not measured (the steps never fill a queue): the stated model's, else the
//!   default, widened to hold every user of the top step.

use std::time::Duration;

use super::steps::{StepLoad, StepPlan};
use super::{CalibrateError, Measured};
use crate::scenario::{Dist, ServiceModel, Target};
use crate::sim::{self, SimOptions};

/// A step's live figures beside those of the fitted model simulated at the same step.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepCheck {
    pub live: Measured,
    pub sim: Measured,
    /// The worst of |sim − live| / live over throughput, p50 and p99.
    pub error: f64,
}

/// The fitted model and how it was found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fit {
    pub model: ServiceModel,
    /// The top step's throughput rose less than 10 % over the step before it: the slots are
    /// the plateau's, not a lower bound.
    pub plateau: bool,
    /// The highest throughput of any step (req/s).
    pub max_throughput: f64,
    /// Mean time of a request at the lowest step (ms): `1 / X₁` for one closed-loop user,
    /// else that step's median latency.
    pub low_mean_ms: f64,
    /// Mean time a request holds its slot (ms).
    pub hold_ms: f64,
    /// The path's fixed overhead: time outside a slot, per request (ms).
    pub path_ms: f64,
    /// Every distribution tried, with its worst step error.
    pub candidates: Vec<(String, f64)>,
    /// The queue as the overload step showed it (`None`: no overload step; the queue is
    /// the stated model's).
    pub queue_fit: Option<super::queue::QueueFit>,
    /// The kept distribution's step checks.
    pub checks: Vec<StepCheck>,
    /// The worst step error of the kept model.
    pub error: f64,
}

/// How much the top closed step must gain over the one before it to count as still rising.
const PLATEAU_GAIN: f64 = 1.10;

/// Fits a model to the measured steps (in the order of `plans`).
pub fn fit(
    plans: &[StepPlan],
    measured: &[Measured],
    step: Duration,
) -> Result<Fit, CalibrateError> {
    let first = plans
        .first()
        .ok_or_else(|| CalibrateError::Usage("no step to fit".into()))?;
    let max_throughput = measured.iter().map(|m| m.throughput).fold(0.0, f64::max);
    let low = lowest(measured)?;
    let low_mean_ms = match low.load {
        StepLoad::Closed { users: 1 } => 1000.0 / low.throughput,
        _ => low.p50_ms,
    };
    let plateau = has_plateau(measured);
    let top_users = measured
        .iter()
        .filter_map(|m| match m.load {
            StepLoad::Closed { users } => Some(users),
            StepLoad::Open { .. } | StepLoad::Overload { .. } => None,
        })
        .max();
    let estimate = (max_throughput * low_mean_ms / 1000.0).round().max(1.0) as u32;
    let slots = match (plateau, top_users) {
        (false, Some(u)) => estimate.max(u),
        _ => estimate,
    };
    let (hold_ms, path_ms) = if plateau {
        let hold = 1000.0 * f64::from(slots) / max_throughput;
        (hold.min(low_mean_ms), (low_mean_ms - hold).max(0.0))
    } else {
        (low_mean_ms, 0.0)
    };
    let stated = match &first.plan.scenario.target {
        Target::Builtin { model, .. } => Some(model.clone()),
        Target::Url { model, .. } => model.clone(),
    }
    .unwrap_or_default();
    let queue_fit = measured.iter().find_map(|m| {
        let timeout = stated.queue_timeout;
        super::queue::fit(m, max_throughput, slots, hold_ms, path_ms, step, timeout)
    });
    let (queue, queue_timeout) = match &queue_fit {
        Some(q) => (q.queue, q.queue_timeout),
        None => (
            stated.queue.max(top_users.unwrap_or(0)),
            stated.queue_timeout,
        ),
    };
    let mut candidates = Vec::new();
    let mut best: Option<(Dist, Vec<StepCheck>, f64)> = None;
    for dist in distributions(hold_ms, low.p50_ms - path_ms, low.p99_ms - path_ms) {
        let model = ServiceModel {
            concurrency: slots,
            queue,
            queue_timeout,
            service_time: dist.clone(),
            shedding: stated.shedding,
        };
        let checks = check(plans, measured, &model, step)?;
        let error = checks.iter().map(|c| c.error).fold(0.0, f64::max);
        candidates.push((describe(&dist), error));
        if best.as_ref().is_none_or(|b| error < b.2) {
            best = Some((dist, checks, error));
        }
    }
    let (dist, checks, error) = best.expect("at least one distribution is tried");
    Ok(Fit {
        model: ServiceModel {
            concurrency: slots,
            queue,
            queue_timeout,
            service_time: dist,
            shedding: stated.shedding,
        },
        plateau,
        max_throughput,
        low_mean_ms,
        hold_ms,
        path_ms,
        candidates,
        queue_fit,
        checks,
        error,
    })
}

/// The step with the least load: one closed-loop user, else the lowest rate (never the
/// overload step, whose latency is its queue's).
fn lowest(measured: &[Measured]) -> Result<&Measured, CalibrateError> {
    let key = |m: &Measured| match m.load {
        StepLoad::Closed { users } => (0, f64::from(users)),
        StepLoad::Open { rate } => (1, rate),
        StepLoad::Overload { rate } => (2, rate),
    };
    measured
        .iter()
        .filter(|m| !matches!(m.load, StepLoad::Overload { .. }))
        .min_by(|a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .ok_or_else(|| CalibrateError::Usage("no step below the overload step".into()))
}

/// Whether the throughput stopped rising: the top closed step gained less than 10 % over
/// the one before it, or the top open step carried less than 90 % of its rate.
fn has_plateau(measured: &[Measured]) -> bool {
    let mut closed: Vec<(u32, f64)> = measured
        .iter()
        .filter_map(|m| match m.load {
            StepLoad::Closed { users } => Some((users, m.throughput)),
            StepLoad::Open { .. } | StepLoad::Overload { .. } => None,
        })
        .collect();
    closed.sort_by_key(|c| c.0);
    let closed_flat = matches!(closed.as_slice(), [.., (_, a), (_, b)] if *b < a * PLATEAU_GAIN);
    let open_short = measured.iter().any(|m| match m.load {
        StepLoad::Open { rate } | StepLoad::Overload { rate } => m.throughput < 0.9 * rate,
        StepLoad::Closed { .. } => false,
    });
    closed_flat || open_short
}

/// The grammar's distributions through the low step's figures (ms): constant and
/// exponential at the mean hold, and log-normals from the median with a tail from none up to
/// the measured p99 in eighths, each scaled to the mean hold so that it carries the
/// plateau's throughput. Part of a low step's spread can lie outside the slot (timer jitter
/// on the path), where it does not compound in a queue; the search finds how much of it the
/// slots see.
fn distributions(mean: f64, median: f64, p99: f64) -> Vec<Dist> {
    let d = |ms: f64| Duration::from_micros((ms.max(0.001) * 1000.0).round() as u64);
    let mut v = vec![
        Dist::Constant { value: d(mean) },
        Dist::Exponential { mean: d(mean) },
    ];
    if median > 0.0 && p99 > median * 1.001 {
        for k in 1..=8 {
            let tail = median + (p99 - median) * f64::from(k) / 8.0;
            let shape = Dist::LogNormal {
                median: d(median),
                p99: d(tail),
            };
            let scale = mean / mean_ms(&shape);
            v.push(Dist::LogNormal {
                median: d(median * scale),
                p99: d(tail * scale),
            });
        }
    }
    v
}

/// A distribution in the file's words.
pub fn describe(d: &Dist) -> String {
    let f = |d: &Duration| crate::scenario::units::duration::format(*d);
    match d {
        Dist::Constant { value } => format!("constant {}", f(value)),
        Dist::Uniform { min, max } => format!("uniform {}..{}", f(min), f(max)),
        Dist::Exponential { mean } => format!("exponential, mean {}", f(mean)),
        Dist::LogNormal { median, p99 } => {
            format!("log-normal, median {}, p99 {}", f(median), f(p99))
        }
    }
}

/// The mean of a distribution (ms): what a request holds a slot for on average.
pub fn mean_ms(d: &Dist) -> f64 {
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    match d {
        Dist::Constant { value } => ms(value),
        Dist::Uniform { min, max } => (ms(min) + ms(max)) / 2.0,
        Dist::Exponential { mean } => ms(mean),
        Dist::LogNormal { median, p99 } => {
            // ln(p99 / median) = z₀.₉₉ σ; the mean is median · e^{σ²/2}.
            let sigma = (ms(p99) / ms(median)).ln() / 2.326_347_874;
            ms(median) * (sigma * sigma / 2.0).exp()
        }
    }
}

/// Simulates every step with `model` as the target's and compares it with the live step.
pub fn check(
    plans: &[StepPlan],
    measured: &[Measured],
    model: &ServiceModel,
    step: Duration,
) -> Result<Vec<StepCheck>, CalibrateError> {
    plans
        .iter()
        .zip(measured)
        .map(|(p, live)| {
            let mut plan = p.plan.clone();
            match &mut plan.scenario.target {
                Target::Builtin { model: m, .. } => *m = model.clone(),
                Target::Url { model: m, .. } => *m = Some(model.clone()),
            }
            let out = sim::run(&plan, &SimOptions::default())
                .map_err(|e| CalibrateError::Sim(e.to_string()))?;
            let sim = Measured::of(p.load, &out.result, &Default::default(), step)?;
            let rel = |s: f64, l: f64| if l > 0.0 { (s - l).abs() / l } else { 0.0 };
            let error = match p.load {
                // Past the capacity the latency is the queue's and the throughput the
                // slots': the successes' median and the throughput are what the queue fit
                // must reproduce (the all-requests percentiles mix in the refusals).
                StepLoad::Overload { .. } => rel(sim.throughput, live.throughput)
                    .max(rel(sim.success_p50_ms, live.success_p50_ms)),
                _ => rel(sim.throughput, live.throughput)
                    .max(rel(sim.p50_ms, live.p50_ms))
                    .max(rel(sim.p99_ms, live.p99_ms)),
            };
            Ok(StepCheck {
                live: live.clone(),
                sim,
                error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_normal_mean_is_above_its_median() {
        let d = Dist::LogNormal {
            median: Duration::from_millis(2),
            p99: Duration::from_millis(10),
        };
        let m = mean_ms(&d);
        assert!(m > 2.0 && m < 10.0, "{m}");
        assert_eq!(
            mean_ms(&Dist::Constant {
                value: Duration::from_millis(10)
            }),
            10.0
        );
    }
}
