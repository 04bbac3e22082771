//! `stormrig bench sim`: how fast the simulator runs a fixed storm on one thread.
//!
//! The storm is fixed and named so that figures from different builds compare: the shipped
//! `downstream-503-10s` scenario (compiled in, so the bench does not depend on the working
//! directory's copy) restricted to three configs, scaled by `--scale`. A layered case
//! follows: the shipped `layers-3x3-no-budget` (client and two layers, 64× and 16× at the
//! target), scaled by [`LAYERED_FACTOR`] × `--scale`, measured per attempt at its deepest
//! hop (the target's arrivals), so its figure compares with the single-hop one: a layered
//! storm should simulate no slower than half as fast per attempt at the deepest hop. The figure of merit
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
pub const TARGET_ATTEMPTS_PER_CPU_S: f64 = 10_000_000.0;

/// The layered storm's scenario, name, and scale per unit of `--scale` (at the default,
/// about 3.6 M attempts at its deepest hop).
const LAYERED_SCENARIO: &str = include_str!("../../scenarios/layers-3x3-no-budget.toml");
pub const LAYERED_STORM: &str = "layers-3x3-no-budget";
pub const LAYERED_FACTOR: f64 = 10.0;
/// The layered aim: deepest-hop attempts per CPU second at least this share of the
/// single-hop storm's attempts per CPU second.
pub const LAYERED_TARGET_SHARE: f64 = 0.5;

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimBenchError {
    #[error("the built-in bench scenario does not load: {0}")]
    Scenario(String),
    #[error(transparent)]
    Sim(#[from] sim::SimError),
}

/// One `bench sim` run: the single-hop storm, then the layered one.
#[derive(Debug, Clone)]
pub struct SimBenchReport {
    pub scale: f64,
    pub stats: SimStats,
    pub wall: Duration,
    /// On-CPU time of the simulating thread (`None` without procfs).
    pub cpu: Option<Duration>,
    pub layered: Measured,
    /// The storm's configs (the plan's names, in simulation order).
    pub configs: Vec<String>,
}

/// One storm simulated and timed.
#[derive(Debug, Clone)]
pub struct Measured {
    pub stats: SimStats,
    /// The plan's config names, in the order of `stats.config_attempts`.
    pub configs: Vec<String>,
    /// Attempts at the deepest hop: the target's arrivals, over all configs.
    pub deepest: u64,
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

impl Measured {
    /// Deepest-hop attempts per second of the thread's on-CPU time.
    pub fn deepest_per_cpu_s(&self) -> Option<f64> {
        self.cpu
            .map(|c| self.deepest as f64 / c.as_secs_f64().max(1e-9))
    }
}

/// A compiled-in shipped scenario as a plan.
fn built_in(name: &str, text: &str) -> Result<Plan, SimBenchError> {
    let path = format!("<built-in>/scenarios/{name}.toml");
    let sc = scenario::load::parse(Path::new(&path), text)
        .map_err(|e| SimBenchError::Scenario(e.to_string()))?;
    plan::build(sc, text).map_err(|e| SimBenchError::Scenario(e.to_string()))
}

/// The storm as a plan: the scenario with only [`CONFIGS`], in that order.
pub fn storm_plan() -> Result<Plan, SimBenchError> {
    let mut plan = built_in(STORM, SCENARIO)?;
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

/// Simulates the storm at `scale`, then the layered storm, on the calling thread, timing
/// only the simulations (planning happens before the clocks start).
pub fn run(scale: f64) -> Result<SimBenchReport, SimBenchError> {
    let single = measure(&storm_plan()?, scale)?;
    let layered = measure(
        &built_in(LAYERED_STORM, LAYERED_SCENARIO)?,
        scale * LAYERED_FACTOR,
    )?;
    Ok(SimBenchReport {
        scale,
        stats: single.stats,
        wall: single.wall,
        cpu: single.cpu,
        layered,
        configs: single.configs,
    })
}

fn measure(plan: &Plan, scale: f64) -> Result<Measured, SimBenchError> {
    let opts = SimOptions {
        scale,
        attempt_log: false,
        // One thread: the figure is per CPU second of the calling thread.
        jobs: 1,
        ..SimOptions::default()
    };
    let cpu0 = thread_cpu();
    let start = Instant::now();
    let out = sim::run(plan, &opts)?;
    let wall = start.elapsed();
    let cpu = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    Ok(Measured {
        stats: out.stats,
        configs: plan.configs.iter().map(|c| c.name.clone()).collect(),
        deepest: out
            .result
            .configs
            .iter()
            .map(|c| c.downstream_arrivals)
            .sum(),
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
    let _ = writeln!(
        out,
        "config_attempts={}",
        per_config(&r.configs, &r.stats.config_attempts)
    );
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
    let l = &r.layered;
    let deep = l.deepest_per_cpu_s();
    let share = deep.zip(per_cpu).map(|(d, s)| d / s.max(1e-9));
    let _ = writeln!(out, "layered_scenario={LAYERED_STORM}");
    let _ = writeln!(out, "layered_scale={}", r.scale * LAYERED_FACTOR);
    let _ = writeln!(out, "layered_attempts={}", l.stats.attempts);
    let _ = writeln!(out, "layered_deepest_attempts={}", l.deepest);
    let _ = writeln!(
        out,
        "layered_config_attempts={}",
        per_config(&l.configs, &l.stats.config_attempts)
    );
    let _ = writeln!(
        out,
        "layered_thread_cpu_s={}",
        na(l.cpu.map(|c| c.as_secs_f64()), 3)
    );
    let _ = writeln!(out, "layered_deepest_attempts_per_cpu_s={}", na(deep, 0));
    // Deepest-hop attempts per CPU second over the single-hop storm's attempts per CPU second.
    let _ = writeln!(out, "layered_share={}", na(share, 3));
    let _ = writeln!(
        out,
        "layered_target_met={}",
        share.map_or("NA".to_string(), |v| (v >= LAYERED_TARGET_SHARE)
            .to_string())
    );
    out
}

/// `name:attempts` per config, comma-separated, in simulation order.
fn per_config(names: &[String], attempts: &[u64]) -> String {
    names
        .iter()
        .zip(attempts)
        .map(|(n, a)| format!("{n}:{a}"))
        .collect::<Vec<_>>()
        .join(",")
}
