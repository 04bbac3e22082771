//! The parts of a [`RunResult`] that do not depend on which engine ran: the header (scenario,
//! description, seed, engine, duration, version, fault bands) and how one config's counts
//! become its summary. Both engines build their result here, so a field added to the header
//! or a bound added to the summaries appears in live and simulated runs alike.

use std::time::Duration;

use crate::metrics::{
    judge, summarize, ConfigSummary, Engine, FaultBand, LayerSummary, Recorder, RunResult,
    RunShape, SecondRow, TargetStats,
};
use crate::plan::{fault_bands, fleet_bound, Plan, PlannedConfig};
use crate::policy::RetryConfig;
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
            shards: None,
            upper_bounds: Default::default(),
            timeseries: Vec::new(),
        }
    }

    /// One config's summary and per-second rows, from what its client recorded and its
    /// target counted.
    pub fn config_summary(
        &self,
        planned: &PlannedConfig,
        rec: &Recorder,
        target: &TargetStats,
    ) -> (ConfigSummary, Vec<SecondRow>) {
        let (mut summary, rows) = summarize(
            &planned.name,
            &planned.config,
            Some(fleet_bound(
                &planned.config,
                self.plan.scenario.load.clients,
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
        );
        let classes = &self.plan.scenario.load.classes;
        let total: f64 = classes.iter().map(|c| c.weight).sum();
        summary.classes = classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                crate::metrics::ClassSummary::of(
                    &c.name,
                    c.weight / total,
                    rec.classes.get(i).unwrap_or(&Default::default()),
                    target.arrivals_by_class.get(i).copied().unwrap_or(0),
                    (!target.providers.is_empty())
                        .then(|| target.tokens_by_class.get(i).copied().unwrap_or_default()),
                )
            })
            .collect();
        summary.class_policies = classes
            .iter()
            .zip(&planned.class_policies)
            .filter_map(|(c, p)| {
                let p = p.as_ref()?;
                Some((c.name.clone(), serde_json::to_value(p).unwrap_or_default()))
            })
            .collect();
        (summary, rows)
    }

    /// A topology run's bounds and per-layer rows in one config's summary: the load
    /// generator's row from the summary itself, then one row per layer, which `layers`
    /// builds given the upstream request count. Both engines add their rows here, so the
    /// tables and charts of a layered run mean the same whichever engine ran it.
    pub fn add_layers(
        &self,
        summary: &mut ConfigSummary,
        config: &RetryConfig,
        layers: impl FnOnce(u64) -> Vec<LayerSummary>,
    ) {
        let plan = self.plan;
        let (budget, worst) = crate::plan::topology_bounds(
            config,
            plan.scenario.load.clients,
            plan.layers.iter().map(|l| &l.config),
            self.mean_rate,
            plan.scenario.duration,
        );
        summary.amplification_bound = Some(budget);
        summary.topology_bound = Some(worst);
        let upstream = summary.upstream_requests;
        summary.layers.push(layer_summary(
            "client",
            upstream,
            summary.attempts,
            summary.retries,
            summary.budget_refusals,
            summary.client_peak_in_flight,
            upstream,
            config.max_attempts,
        ));
        summary.layers.extend(layers(upstream));
    }

    /// Once every config is in: each config's verdict against the baseline config.
    pub fn judge(&self, result: &mut RunResult) {
        judge::judge(result, self.plan.scenario.baseline.as_deref());
    }
}

/// Builds one row of the per-layer table.
#[allow(clippy::too_many_arguments)]
pub fn layer_summary(
    name: &str,
    arrivals: u64,
    attempts: u64,
    retries: u64,
    budget_refusals: u64,
    peak_in_flight: u64,
    upstream: u64,
    max_attempts: u32,
) -> LayerSummary {
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    LayerSummary {
        name: name.to_string(),
        arrivals,
        attempts,
        retries,
        budget_refusals,
        peak_in_flight,
        amplification: ratio(attempts, arrivals),
        cumulative_amplification: ratio(attempts, upstream),
        max_attempts,
    }
}

/// (attempts, retries, budget refusals) a recorder counted.
pub fn totals(rec: &Recorder) -> (u64, u64, u64) {
    rec.seconds().iter().fold((0, 0, 0), |(a, r, b), s| {
        (a + s.attempts, r + s.retries, b + s.budget_refusals)
    })
}

/// What one hop of a topology did beyond the counts in `LayerSummary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopStats {
    pub name: String,
    /// Attempts sent with their per-try timeout cut short by the (propagated) deadline.
    pub deadline_cut: u64,
    /// Requests a layer answered 503 at once for its concurrency limit (0 for the generator).
    pub rejected: u64,
}
