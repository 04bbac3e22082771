//! `stormrig calibrate`: a service model measured, not guessed.
//!
//! `capacity` answers on the simulator, so its answer is only as good as the target's
//! service model; a hand-written model is a guess, and a guess that is 10 % optimistic moves a
//! capacity limit by 10 %. Calibration puts a bounded step load on the real target (closed
//! loop at 1, 2, 4, ... users, and/or open loop at rising rates), records each step's
//! throughput and latency distribution, and fits a model of the existing grammar to them:
//!
//! * [`steps`]: which steps, and the scenario of each (the measured scenario's target, one
//!   `no-retry` config, no faults): planned as a file is, so every check of a scenario holds;
//! * [`fit`]: slots from the throughput plateau by Little's law, the path's fixed overhead,
//!   the service-time distribution chosen by how well the simulator reproduces every step;
//! * [`queue`]: with `--overload`, the queue's depth and timeout from one step past the
//!   capacity (what the target refused, and after how long);
//! * [`file`](mod@file): the fitted model as a `targets/NAME.toml` file that says how it was measured.
//!
//! Engine-free like `sweep`: the live runs are the caller's (the CLI edge owns the runtime and
//! the sockets), handed out through a closure; the fitted model is checked by simulating
//! every step with the simulator.

pub mod file;
pub mod fit;
pub mod queue;
pub mod steps;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::metrics::RunResult;

pub use fit::{Fit, StepCheck};
pub use steps::{StepLoad, StepPlan};

/// Why a calibration could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// Bad usage (exit 2): a zero bound, a step plan past its time bound.
    #[error("{0}")]
    Usage(String),
    /// The scenario, or a step made from it, does not plan; the message names file and field.
    #[error("{0}")]
    Scenario(String),
    /// The target answered, but never with a success: nothing to fit.
    #[error("the target answered no request with a success at {step}: {outcomes}")]
    NoSuccess { step: String, outcomes: String },
    /// The simulator cannot run the fitted model (should not happen: it is a plain model).
    #[error("{0}")]
    Sim(String),
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Closed-loop steps at 1, 2, 4, ... users up to this (inclusive; the last step is this
    /// even when it is no power of two).
    pub max_concurrency: Option<u32>,
    /// Open-loop steps at 1/8, 1/4, 1/2 and all of this rate (req/s).
    pub max_rate: Option<f64>,
    /// How long each step offers load.
    pub step_duration: Duration,
    /// The planned time of every step (load plus its drain) must fit in this.
    pub max_time: Duration,
    /// After the other steps, one open-loop step at 1.5x the highest throughput measured,
    /// which fills the target's queue on purpose to measure it.
    pub overload: bool,
}

/// One step as measured live.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    pub load: StepLoad,
    /// Successes per second of the step's load.
    pub throughput: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The median latency of the successes alone (ms).
    pub success_p50_ms: f64,
    /// The median latency of the failures (ms); `None` without a failure.
    pub failure_p50_ms: Option<f64>,
    pub successes: u64,
    pub failures: u64,
}

impl Measured {
    /// The step's figures from its run's one config; `statuses` (the target's own count of
    /// its answers by status) name what it answered when nothing succeeded.
    pub fn of(
        load: StepLoad,
        run: &RunResult,
        statuses: &BTreeMap<u16, u64>,
        step: Duration,
    ) -> Result<Measured, CalibrateError> {
        let c = run
            .configs
            .first()
            .ok_or_else(|| CalibrateError::Sim("a step's run has no config".into()))?;
        if c.successes == 0 {
            let answered = statuses.iter().map(|(k, v)| format!("{v} × HTTP {k}"));
            let outcomes = answered
                .chain(
                    c.attempts_by_outcome
                        .iter()
                        .map(|(k, v)| format!("{v} × {k}")),
                )
                .collect::<Vec<_>>()
                .join(", ");
            return Err(CalibrateError::NoSuccess {
                step: load.label(),
                outcomes: if outcomes.is_empty() {
                    "no attempt finished".into()
                } else {
                    outcomes
                },
            });
        }
        Ok(Measured {
            load,
            throughput: c.successes as f64 / step.as_secs_f64(),
            p50_ms: c.latency_ms.p50,
            p99_ms: c.latency_ms.p99,
            success_p50_ms: c.success_latency_ms.p50,
            failure_p50_ms: (c.failures > 0).then_some(c.failure_latency_ms.p50),
            successes: c.successes,
            failures: c.failures,
        })
    }
}

/// A finished calibration: every step measured, the fit and its check.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub measured: Vec<Measured>,
    pub fit: Fit,
}

/// How much past the highest throughput measured the overload step offers.
pub const OVERLOAD_FACTOR: f64 = 1.5;

/// Measures every step of `plans` (made by [`steps::plan_all`], before any load) through
/// `live`, in order and one at a time (two at once would share the target), then, when
/// `overload` plans one, the overload step at [`OVERLOAD_FACTOR`] times the highest
/// throughput measured; then fits.
pub fn calibrate<E>(
    mut plans: Vec<StepPlan>,
    step: Duration,
    overload: Option<&dyn Fn(f64) -> Result<StepPlan, CalibrateError>>,
    mut live: impl FnMut(&StepPlan, usize, usize) -> Result<StepRun, E>,
) -> Result<Calibration, Outcome<E>> {
    let total = plans.len() + usize::from(overload.is_some());
    let mut measured = Vec::with_capacity(total);
    let mut measure = |p: &StepPlan, measured: &mut Vec<Measured>| {
        let run = live(p, measured.len() + 1, total).map_err(Outcome::Live)?;
        let m = Measured::of(p.load, &run.result, &run.statuses, step);
        measured.push(m.map_err(Outcome::Calibrate)?);
        Ok(())
    };
    for p in &plans {
        measure(p, &mut measured)?;
    }
    if let Some(make) = overload {
        let top = measured.iter().map(|m| m.throughput).fold(0.0, f64::max);
        let p = make((top * OVERLOAD_FACTOR).round().max(1.0)).map_err(Outcome::Calibrate)?;
        measure(&p, &mut measured)?;
        plans.push(p);
    }
    let fit = fit::fit(&plans, &measured, step).map_err(Outcome::Calibrate)?;
    Ok(Calibration { measured, fit })
}

/// One step's live run: its result, and the target's answers by status as it counted them.
pub struct StepRun {
    pub result: RunResult,
    pub statuses: BTreeMap<u16, u64>,
}

/// Why [`calibrate`] stopped: the library's refusal, or the caller's live run.
#[derive(Debug)]
pub enum Outcome<E> {
    Calibrate(CalibrateError),
    Live(E),
}
