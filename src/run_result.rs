//! The parts of a [`RunResult`] that do not depend on which engine ran: the header (scenario,
//! description, seed, engine, duration, version, fault bands) and how one config's counts
//! become its summary. Both engines build their result here, so a field added to the header
//! or a bound added to the summaries appears in live and simulated runs alike.

use std::time::Duration;

use crate::metrics::{
    summarize, ConfigSummary, Engine, FaultBand, Recorder, RunResult, RunShape, SecondRow,
    TargetStats,
};
use crate::plan::{amplification_bound, Plan, PlannedConfig};
use crate::scenario::{schedule, LoadShape};

/// What the summaries of one run are measured against.
pub struct ResultBuilder<'p> {
    plan: &'p Plan,
    /// Fault windows (start, end), for the before/during/after figures.
    fault_windows: Vec<(Duration, Duration)>,
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
            fault_windows: sc.faults.iter().map(|f| (f.at, f.at + f.length)).collect(),
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

    /// The result without any config yet.
    pub fn header(&self, engine: Engine, partial: bool) -> RunResult {
        let sc = &self.plan.scenario;
        RunResult {
            scenario: sc.name.clone(),
            description: sc.description.clone(),
            seed: sc.seed,
            engine,
            partial,
            duration_s: self.load_ran.as_secs_f64(),
            stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
            faults: sc
                .faults
                .iter()
                .map(|f| FaultBand {
                    start_s: f.at.as_secs_f64(),
                    end_s: (f.at + f.length).as_secs_f64(),
                    label: f.kind.label(),
                })
                .collect(),
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
            serde_json::to_value(&planned.config).unwrap_or_default(),
            Some(amplification_bound(
                &planned.config,
                self.mean_rate,
                self.plan.scenario.duration,
            )),
            rec,
            target,
            &RunShape {
                load_duration: self.load_ran,
                faults: &self.fault_windows,
            },
        )
    }
}
