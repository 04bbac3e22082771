//! Running a sweep: every point × seed a full simulator run of every config, spread over
//! the cores; then per point and config the figures of `summary.json` (mean over seeds and
//! their spread) and the cell's recovery class.
//!
//! Seeds: replicate k of every point runs with the scenario's seed + k. The same seeds at
//! every point (common random numbers) make the difference between two points the effect
//! of the varied field, not of another draw; `--seeds N` shows how much a draw moves it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::grid::{self, Axis, Base};
use super::SweepError;
use crate::metrics::{ConfigSummary, RunResult};
use crate::plan::Plan;
use crate::report::gates;
pub use crate::sim::parallel;
use crate::sim::{self, SimOptions};

/// Name of the derived figure: the share of the seconds in the second halves of the fault
/// windows in which the budget refused at least one retry. A budget that drained refuses
/// nearly every second; one that only dipped at the start of a fault does not, so this
/// tells a sustained drain from a start-up burst.
pub const SUSTAINED_REFUSAL_SHARE: &str = "sustained_refusal_share";

/// Name of the derived figure: the share of the seconds in the second halves of the fault
/// windows that ended with the budget below half its level before the first fault. Where
/// the budget's expected drift turns negative (its drain threshold) this crosses one half:
/// a bucket that only dips by chance spends little time below half, a draining one most.
/// (For gRPC retry throttling, below half is exactly "retries disabled".)
pub const DRAINED_SHARE: &str = "drained_share";

/// Name of the derived figure: successes / upstream requests started, over the whole seconds
/// of the load that no fault window touches (what users see in normal operation: before
/// the trigger, and after it once it is over).
pub const SUCCESS_SHARE_OUTSIDE_FAULTS: &str = "success_share_outside_faults";

/// How a sweep is carried out.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Runs per point, with seeds `seed`, `seed + 1`, ...
    pub seeds: u32,
    /// Threads; 0 = every core.
    pub jobs: usize,
    /// A recovery later than this (seconds after the last fault) is "recovered late".
    pub late_after_s: f64,
    /// Set from outside (SIGINT, SIGTERM) to stop: the runs not started are skipped, the one
    /// under way stopped, and the result holds the points whose every seed finished
    /// (marked partial).
    pub stop: Option<Arc<AtomicBool>>,
    /// Told `(runs done, runs in all)` as each run of a point finishes (progress on the
    /// console; runs finish in any order across threads).
    pub on_run: Option<fn(usize, usize)>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            seeds: 1,
            jobs: 0,
            late_after_s: 5.0,
            stop: None,
            on_run: None,
        }
    }
}

/// Whether goodput came back after the faults, in one cell of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// The scenario has no fault: nothing to recover from.
    NoFault,
    Recovered,
    /// Recovered, but later than the sweep's `late_after_s`.
    Late,
    /// Never recovered before the load ended (metastable).
    Never,
    /// Goodput was already below the offered load before the fault (the run's
    /// `overloaded`): neither recovered nor metastable, and no recovery time is measured.
    /// Last, so that a cell is overloaded when any seed was.
    Overloaded,
}

impl Recovery {
    pub fn of(c: &ConfigSummary, late_after_s: f64) -> Recovery {
        if c.overloaded == Some(true) {
            return Recovery::Overloaded;
        }
        match (c.recovered, c.recovery_time_s) {
            (None, _) => Recovery::NoFault,
            (Some(true), Some(t)) if t > late_after_s => Recovery::Late,
            (Some(true), _) => Recovery::Recovered,
            (Some(false), _) => Recovery::Never,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Recovery::NoFault => "no-fault",
            Recovery::Recovered => "recovered",
            Recovery::Late => "late",
            Recovery::Never => "never",
            Recovery::Overloaded => "overloaded",
        }
    }
}

/// One config at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub config: String,
    /// The worst recovery over the seeds.
    pub recovery: Recovery,
    /// Every numeric figure of the config's `summary.json` object (dotted paths, booleans
    /// as 0/1) plus the derived ones; the mean over seeds, `null` when any seed had none.
    pub figures: BTreeMap<String, Option<f64>>,
    /// Sample standard deviation of each figure over the seeds (only with several seeds).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub spread: BTreeMap<String, Option<f64>>,
}

/// One point of the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointResult {
    /// The axes' values, in axis order.
    pub coords: Vec<f64>,
    pub label: String,
    pub cells: Vec<Cell>,
}

/// A computed drain threshold drawn on a failure-rate axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdMark {
    pub config: String,
    /// `transient` or `throttling`.
    pub kind: String,
    /// The failure rate (closed form of `stormrig thresholds`).
    pub value: f64,
}

/// Everything a sweep measured: `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepResult {
    pub scenario: String,
    pub description: String,
    pub engine: &'static str,
    pub seed: u64,
    pub seeds: u32,
    pub late_after_s: f64,
    pub stormrig_version: String,
    pub axes: Vec<Axis>,
    pub configs: Vec<String>,
    /// Drain thresholds, when the first axis is a status fault's probability.
    pub thresholds: Vec<ThresholdMark>,
    pub points: Vec<PointResult>,
    /// The sweep was interrupted: `points` are those finished, fewer than the grid's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Simulates `plan` with `seed`; a simulator refusal is bad input naming the point.
pub fn simulate(plan: &Plan, seed: u64, label: &str) -> Result<RunResult, SweepError> {
    simulate_until(plan, seed, label, None)
}

/// [`simulate`], stopped early (a partial result) when `stop` turns true.
fn simulate_until(
    plan: &Plan,
    seed: u64,
    label: &str,
    stop: Option<Arc<AtomicBool>>,
) -> Result<RunResult, SweepError> {
    let mut plan = plan.clone();
    plan.scenario.seed = seed;
    // The points already spread over the cores: each runs its configs on its own thread.
    let opts = SimOptions {
        jobs: 1,
        stop,
        ..SimOptions::default()
    };
    sim::run(&plan, &opts)
        .map(|o| o.result)
        .map_err(|e| SweepError::Point {
            point: label.to_string(),
            message: e.to_string(),
        })
}

/// Plans every point first (so a bad point stops the sweep before anything runs), then
/// simulates them all.
pub fn sweep(
    base: &Base,
    base_plan: &Plan,
    axes: &[Axis],
    opts: &SweepOptions,
) -> Result<SweepResult, SweepError> {
    if opts.seeds == 0 {
        return Err(SweepError::Usage("--seeds must be at least 1".into()));
    }
    if axes.is_empty() || axes.len() > 2 {
        return Err(SweepError::Usage(
            "a sweep varies one or two fields (--vary, once or twice)".into(),
        ));
    }
    let coords = grid::combinations(axes);
    let plans: Vec<Plan> = coords
        .iter()
        .map(|c| base.point(axes, c))
        .collect::<Result<_, _>>()?;
    let seeds = opts.seeds as usize;
    let seed0 = base_plan.scenario.seed;
    let stopped = || opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
    let done = AtomicUsize::new(0);
    let total = plans.len() * seeds;
    let runs = parallel(total, opts.jobs, |i| {
        if stopped() {
            return None;
        }
        let (p, k) = (i / seeds, i % seeds);
        let run = simulate_until(
            &plans[p],
            seed0.wrapping_add(k as u64),
            &grid::point_label(axes, &coords[p]),
            opts.stop.clone(),
        );
        // A run the signal cut short is not a point's figures.
        let run = match run {
            Ok(r) if r.partial => return None,
            other => other.map(|r| per_config(&r)),
        };
        if let Some(tell) = opts.on_run {
            tell(done.fetch_add(1, Ordering::SeqCst) + 1, total);
        }
        Some(run)
    });
    let mut runs = runs.into_iter();
    let mut points = Vec::with_capacity(plans.len());
    for c in &coords {
        let taken: Vec<_> = runs.by_ref().take(seeds).collect();
        let Some(reps) = taken.into_iter().collect::<Option<Vec<_>>>() else {
            continue; // a seed of this point did not run to its end
        };
        let reps: Vec<Vec<(ConfigSummary, Figures)>> =
            reps.into_iter().collect::<Result<_, _>>()?;
        points.push(PointResult {
            coords: c.clone(),
            label: grid::point_label(axes, c),
            cells: cells(&reps, opts.late_after_s),
        });
    }
    let partial = points.len() < coords.len();
    Ok(SweepResult {
        scenario: base_plan.scenario.name.clone(),
        description: base_plan.scenario.description.clone(),
        engine: "sim",
        seed: seed0,
        seeds: opts.seeds,
        late_after_s: opts.late_after_s,
        stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
        axes: axes.to_vec(),
        configs: base_plan.configs.iter().map(|c| c.name.clone()).collect(),
        thresholds: thresholds(base_plan, &axes[0]),
        points,
        partial,
    })
}

/// Flat figures of one config.
pub type Figures = BTreeMap<String, Option<f64>>;

/// Each config's summary with its flat figures (the summary.json object plus derived).
pub fn per_config(run: &RunResult) -> Vec<(ConfigSummary, Figures)> {
    run.configs
        .iter()
        .map(|c| {
            let mut f = Figures::new();
            flatten(&gates::figures_of(c), "", &mut f);
            f.insert(
                SUSTAINED_REFUSAL_SHARE.to_string(),
                sustained_refusal_share(run, &c.name),
            );
            f.insert(DRAINED_SHARE.to_string(), drained_share(run, &c.name));
            f.insert(
                SUCCESS_SHARE_OUTSIDE_FAULTS.to_string(),
                success_share_outside_faults(run, &c.name),
            );
            (c.clone(), f)
        })
        .collect()
}

/// Numbers, booleans (0/1) and nulls below `v` by dotted path; the resolved policy, the
/// latency curve, layers and strings are not figures.
fn flatten(v: &Value, prefix: &str, out: &mut Figures) {
    let key = |k: &str| crate::scenario::source::join(prefix, k);
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                if prefix.is_empty() && matches!(k.as_str(), "policy" | "latency_curve") {
                    continue;
                }
                flatten(c, &key(k), out);
            }
        }
        Value::Number(n) => {
            out.insert(prefix.to_string(), n.as_f64());
        }
        Value::Bool(b) => {
            out.insert(prefix.to_string(), Some(if *b { 1.0 } else { 0.0 }));
        }
        Value::Null => {
            out.insert(prefix.to_string(), None);
        }
        Value::Array(_) | Value::String(_) => {}
    }
}

/// The whole seconds in the second halves of the run's fault windows.
fn late_fault_seconds(run: &RunResult) -> BTreeSet<u64> {
    let mut seconds = BTreeSet::new();
    for f in &run.faults {
        let from = (f.start_s + (f.end_s - f.start_s) / 2.0).ceil() as u64;
        let to = f.end_s.floor() as u64;
        seconds.extend(from..to);
    }
    seconds
}

/// The share of `seconds` for which `pred` holds on the config's row (a second without a
/// row does not hold); `None` for no seconds.
fn share_of(
    run: &RunResult,
    config: &str,
    seconds: &BTreeSet<u64>,
    pred: impl Fn(&crate::metrics::SecondRow) -> bool,
) -> Option<f64> {
    if seconds.is_empty() {
        return None;
    }
    let n = run
        .timeseries
        .iter()
        .filter(|r| r.config == config && seconds.contains(&r.second) && pred(r))
        .count();
    Some(n as f64 / seconds.len() as f64)
}

/// See [`SUSTAINED_REFUSAL_SHARE`]; `None` without a fault window of a whole second.
pub fn sustained_refusal_share(run: &RunResult, config: &str) -> Option<f64> {
    share_of(run, config, &late_fault_seconds(run), |r| {
        r.budget_refusals > 0
    })
}

/// See [`SUCCESS_SHARE_OUTSIDE_FAULTS`]; `None` when no request started in such a second.
pub fn success_share_outside_faults(run: &RunResult, config: &str) -> Option<f64> {
    let touched = |s: u64| {
        let (a, b) = (s as f64, s as f64 + 1.0);
        run.faults.iter().any(|f| a < f.end_s && f.start_s < b)
    };
    let (ok, started) = run
        .timeseries
        .iter()
        .filter(|r| r.config == config && (r.second as f64) < run.duration_s && !touched(r.second))
        .fold((0u64, 0u64), |(ok, st), r| {
            (ok + r.successes, st + r.upstream_started)
        });
    (started > 0).then(|| ok as f64 / started as f64)
}

/// See [`DRAINED_SHARE`]; `None` without a budget level before the first fault.
pub fn drained_share(run: &RunResult, config: &str) -> Option<f64> {
    let first = run
        .faults
        .iter()
        .map(|f| f.start_s)
        .fold(f64::INFINITY, f64::min);
    let full = run
        .timeseries
        .iter()
        .filter(|r| r.config == config && (r.second as f64) < first)
        .filter_map(|r| r.budget_level)
        .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.max(l))))?;
    share_of(run, config, &late_fault_seconds(run), |r| {
        r.budget_level.is_some_and(|l| l < full / 2.0)
    })
}

/// Cells of one point from its replicates (each a list of configs in plan order).
fn cells(reps: &[Vec<(ConfigSummary, Figures)>], late_after_s: f64) -> Vec<Cell> {
    let n_configs = reps.first().map_or(0, Vec::len);
    (0..n_configs)
        .map(|ci| {
            let runs: Vec<&(ConfigSummary, Figures)> = reps.iter().map(|r| &r[ci]).collect();
            let keys: BTreeSet<&String> = runs.iter().flat_map(|(_, f)| f.keys()).collect();
            let mut figures = Figures::new();
            let mut spread = Figures::new();
            for k in keys {
                let xs: Option<Vec<f64>> = runs
                    .iter()
                    .map(|(_, f)| f.get(k).copied().unwrap_or_else(|| missing(k)))
                    .collect();
                figures.insert(k.clone(), xs.as_ref().map(|x| mean(x)));
                if runs.len() > 1 {
                    spread.insert(k.clone(), xs.as_ref().map(|x| sd(x)));
                }
            }
            Cell {
                config: runs[0].0.name.clone(),
                recovery: runs
                    .iter()
                    .map(|(c, _)| Recovery::of(c, late_after_s))
                    .max()
                    .unwrap_or(Recovery::NoFault),
                figures,
                spread,
            }
        })
        .collect()
}

/// The value of a figure a run did not have: a label missing from a count map is a count
/// of 0; anything else is unknown.
pub fn missing(key: &str) -> Option<f64> {
    let head = key.split('.').next().unwrap_or("");
    gates::COUNT_MAPS.contains(&head).then_some(0.0)
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sample standard deviation (n − 1).
fn sd(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

/// The configs' computed drain thresholds, when `axis` is the probability of a status
/// fault: throttling for a 429 fault, transient otherwise.
fn thresholds(plan: &Plan, axis: &Axis) -> Vec<ThresholdMark> {
    let Some(index) = axis
        .path
        .strip_prefix("faults[")
        .and_then(|r| r.strip_suffix("].probability"))
        .and_then(|i| i.parse::<usize>().ok())
    else {
        return Vec::new();
    };
    let Some(crate::scenario::FaultKind::Status { status, .. }) =
        plan.scenario.faults.get(index).map(|f| &f.kind)
    else {
        return Vec::new();
    };
    let throttling = *status == 429;
    // Only the closed form is drawn: a small Monte-Carlo effort keeps this instant.
    let mc = crate::policy::thresholds::McOptions {
        coarse_requests: 200,
        requests_per_point: 200,
    };
    plan.configs
        .iter()
        .filter_map(|c| {
            let r = crate::policy::thresholds::compute_with(&c.config, None, 1, mc);
            let k = if throttling {
                &r.throttling
            } else {
                &r.transient
            };
            Some(ThresholdMark {
                config: c.name.clone(),
                kind: if throttling {
                    "throttling"
                } else {
                    "transient"
                }
                .into(),
                value: k.closed_form?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_keeps_task_order() {
        let out = parallel(50, 3, |i| i * 2);
        assert_eq!(out, (0..50).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn spread_is_sample_sd() {
        assert_eq!(sd(&[1.0, 1.0]), 0.0);
        assert!((sd(&[1.0, 3.0]) - std::f64::consts::SQRT_2).abs() < 1e-12);
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
    }

    #[test]
    fn flattens_numbers_and_skips_policy() {
        let v = serde_json::json!({"policy": {"max_attempts": 3}, "a": 1, "b": {"c": true, "d": null}, "name": "x"});
        let mut f = Figures::new();
        flatten(&v, "", &mut f);
        assert_eq!(f.len(), 3);
        assert_eq!(f["a"], Some(1.0));
        assert_eq!(f["b.c"], Some(1.0));
        assert_eq!(f["b.d"], None);
        assert_eq!(missing("failures_by_reason.x"), Some(0.0));
        assert_eq!(missing("recovery_time_s"), None);
    }
}
