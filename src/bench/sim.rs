//! `stormrig bench sim`: how fast the simulator runs a fixed storm on one thread.
//!
//! The storm is fixed and named so that figures from different builds compare: the shipped
//! `downstream-503-10s` scenario (compiled in, so the bench does not depend on the working
//! directory's copy) restricted to three configs, scaled by `--scale`. The figure of merit
//! divides by the thread's *on-CPU* time, not wall time: on a shared machine wall time
//! also counts the time other processes held the core.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::thread_cpu;
use crate::plan::{self, Plan};
use crate::scenario;
use crate::sim::{self, SimOptions, SimStats};

/// The scenario of the storm (its builtin target is the compiled-in default).
const SCENARIO: &str = include_str!("../../scenarios/downstream-503-10s.toml");
/// What the storm is called in the output.
pub const STORM: &str = "downstream-503-10s";
/// The three configs it keeps: no budget, a token bucket, a concurrent-retry cap.
pub const CONFIGS: [&str; 3] = ["naive", "aws-standard", "envoy"];
/// Default `--scale`: about 5 M attempts, a few seconds at today's speed.
pub const DEFAULT_SCALE: f64 = 300.0;
/// The aim: simulated attempts per second of one core.
pub const TARGET_ATTEMPTS_PER_CPU_S: f64 = 5_000_000.0;

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimBenchError {
    #[error("the built-in bench scenario does not load: {0}")]
    Scenario(String),
    #[error(transparent)]
    Sim(#[from] sim::SimError),
}

/// One `bench sim` run.
#[derive(Debug, Clone)]
pub struct SimBenchReport {
    pub scale: f64,
    pub stats: SimStats,
    pub wall: Duration,
    /// On-CPU time of the simulating thread (`None` without procfs).
    pub cpu: Option<Duration>,
}

impl SimBenchReport {
    /// Attempts per second of the thread's on-CPU time.
    pub fn attempts_per_cpu_s(&self) -> Option<f64> {
        self.cpu
            .map(|c| self.stats.attempts as f64 / c.as_secs_f64().max(1e-9))
    }

    /// Attempts per second of wall time (what a user waits for, load included).
    pub fn attempts_per_wall_s(&self) -> f64 {
        self.stats.attempts as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Simulated time per wall time.
    pub fn sim_speedup(&self) -> f64 {
        self.stats.virtual_time.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The storm as a plan: the scenario with only [`CONFIGS`], in that order.
pub fn storm_plan() -> Result<Plan, SimBenchError> {
    let path = Path::new("<built-in>/scenarios/downstream-503-10s.toml");
    let sc = scenario::load::parse(path, SCENARIO)
        .map_err(|e| SimBenchError::Scenario(e.to_string()))?;
    let mut plan = plan::build(sc, SCENARIO).map_err(|e| SimBenchError::Scenario(e.to_string()))?;
    plan.configs.retain(|c| CONFIGS.contains(&c.name.as_str()));
    if plan.configs.len() != CONFIGS.len() {
        return Err(SimBenchError::Scenario(format!(
            "expected configs {}, found {}",
            CONFIGS.join(", "),
            plan.configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(plan)
}

/// Simulates the storm at `scale` on the calling thread, timing only the simulation
/// (planning happens before the clocks start).
pub fn run(scale: f64) -> Result<SimBenchReport, SimBenchError> {
    let plan = storm_plan()?;
    let opts = SimOptions {
        scale,
        attempt_log: false,
        ..SimOptions::default()
    };
    let cpu0 = thread_cpu();
    let start = Instant::now();
    let out = sim::run(&plan, &opts)?;
    let wall = start.elapsed();
    let cpu = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    Ok(SimBenchReport {
        scale,
        stats: out.stats,
        wall,
        cpu,
    })
}

/// `bench sim` output: one `key=value` per line.
pub fn text(r: &SimBenchReport) -> String {
    let na =
        |v: Option<f64>, digits: usize| v.map_or("NA".to_string(), |v| format!("{v:.digits$}"));
    let per_cpu = r.attempts_per_cpu_s();
    let mut out = String::new();
    let _ = writeln!(out, "bench=sim");
    let _ = writeln!(out, "scenario={STORM}");
    let _ = writeln!(out, "configs={}", CONFIGS.join(","));
    let _ = writeln!(out, "scale={}", r.scale);
    let _ = writeln!(out, "simulated_s={:.3}", r.stats.virtual_time.as_secs_f64());
    let _ = writeln!(out, "attempts={}", r.stats.attempts);
    let _ = writeln!(out, "events={}", r.stats.events);
    let _ = writeln!(out, "wall_s={:.3}", r.wall.as_secs_f64());
    let _ = writeln!(
        out,
        "thread_cpu_s={}",
        na(r.cpu.map(|c| c.as_secs_f64()), 3)
    );
    // The figure of merit: attempts per on-CPU second of the simulating thread.
    let _ = writeln!(out, "attempts_per_cpu_s={}", na(per_cpu, 0));
    let _ = writeln!(out, "attempts_per_wall_s={:.0}", r.attempts_per_wall_s());
    let _ = writeln!(out, "sim_speedup={:.1}", r.sim_speedup());
    let _ = writeln!(
        out,
        "target_attempts_per_cpu_s={TARGET_ATTEMPTS_PER_CPU_S:.0}"
    );
    let _ = writeln!(
        out,
        "target_met={}",
        per_cpu.map_or("NA".to_string(), |v| (v >= TARGET_ATTEMPTS_PER_CPU_S)
            .to_string())
    );
    out
}
