//! The parts of a [`RunResult`] that do not depend on which engine ran: the header (scenario,
//! description, seed, engine, duration, version, fault bands) and how one config's counts
//! become its summary. Both engines build their result here, so a field added to the header
//! or a bound added to the summaries appears in live and simulated runs alike.

use std::time::Duration;

use crate::metrics::{
    summarize, verdict, ConfigSummary, Engine, FaultBand, Recorder, RunResult, RunShape, SecondRow,
    TargetStats,
};
use crate::plan::{amplification_bound, fault_bands, Plan, PlannedConfig};
use crate::scenario::{schedule, LoadShape};

/// What the summaries of one run are measured against.
pub struct ResultBuilder<'p> {
    plan: &'p Plan,
    /// Fault windows, for the before/during/after figures and the fault bands of charts.
    fault_bands: Vec<FaultBand>,
    /// Logical requests per second the load shape offers on average (0 for a closed loop).
    mean_rate: f64,
    /// Offered load actually run.
    load_ran: Duration,
}

impl<'p> ResultBuilder<'p> {
    /// `shape` is the load as the engine ran it (the simulator scales it), `load_ran` how
    /// much of the scenario's duration was run.
    pub fn new(plan: &'p Plan, shape: &LoadShape, load_ran: Duration) -> Self {
        let sc = &plan.scenario;
        let mean_rate = match shape {
            LoadShape::Closed { .. } => 0.0,
            s => schedule::expected_count(s, sc.duration) / sc.duration.as_secs_f64(),
        };
        ResultBuilder {
            plan,
            fault_bands: fault_bands(&sc.faults),
            mean_rate,
            load_ran,
        }
    }

    pub fn mean_rate(&self) -> f64 {
        self.mean_rate
    }

    pub fn plan(&self) -> &'p Plan {
        self.plan
    }

    /// The result without any config yet; `drain_s` is how long a live run drained after its
    /// load (None in the simulator, which drains in virtual time).
    pub fn header(&self, engine: Engine, partial: bool, drain_s: Option<f64>) -> RunResult {
        let sc = &self.plan.scenario;
        RunResult {
            scenario: sc.name.clone(),
            description: sc.description.clone(),
            seed: sc.seed,
            engine,
            partial,
            duration_s: self.load_ran.as_secs_f64(),
            drain_s,
            stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
            run: None,
            faults: self.fault_bands.clone(),
            configs: Vec::new(),
            gates: Vec::new(),
            timeseries: Vec::new(),
        }
    }

    /// One config's summary and per-second rows, from what its client recorded and its
    /// target counted.
    pub fn summarize(
        &self,
        planned: &PlannedConfig,
        rec: &Recorder,
        target: &TargetStats,
    ) -> (ConfigSummary, Vec<SecondRow>) {
        summarize(
            &planned.name,
            &planned.config,
            Some(amplification_bound(
                &planned.config,
                self.mean_rate,
                self.plan.scenario.duration,
            )),
            rec,
            target,
            &RunShape {
                load_duration: self.load_ran,
                faults: &self.fault_bands,
                method: &self.plan.scenario.load.method,
            },
        )
    }

    /// Once every config is in: each config's verdict against the baseline config.
    pub fn judge(&self, result: &mut RunResult) {
        verdict::judge(result, self.plan.scenario.baseline.as_deref());
    }
}
