//! `stormrig bench sim-memory`: what each request in flight costs the simulator in resident
//! memory, at a population no live run can hold (10 million at once by default).
//!
//! The storm is built so that every request stays in flight: the target hangs them all, the
//! per-try timeout is longer than the run and nothing drains, so the in-flight cap (raised
//! to the population) is what ends the pile-up, just before the load does. The figure is
//! the peak resident set over the simulation (VmHWM, reset just before it where the kernel
//! allows) minus the resident set before it, over the most requests in flight at once:
//! everything the engine keeps per request (its slab entries, its pending events, the
//! policy's per-request state) and nothing of the planning.
//!
//! The scenario caps `max_in_flight` at 1,000,000, so a larger population is that cap
//! multiplied by the simulator's own `scale`, as `stormrig sim --scale` does.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{rss_kib, thread_cpu};
use crate::plan;
use crate::scenario::{self, limits};
use crate::sim::{self, SimOptions};

/// Default `--population`: the product's aim.
pub const DEFAULT_POPULATION: u64 = 10_000_000;
/// The largest `--population`: far above what fits a 24 GiB machine today, so the ceiling is
/// memory (checked by the user's own machine), not this check.
pub const MAX_POPULATION: u64 = 100_000_000;
/// Virtual seconds over which the population arrives.
const LOAD_S: u64 = 10;
/// Arrivals exceed the cap by this share, so the cap is what stops the pile-up.
const OVERSHOOT: f64 = 1.01;

#[derive(Debug, thiserror::Error)]
pub enum SimMemoryError {
    #[error("--population {0}: must be between 1 and {MAX_POPULATION}")]
    Population(u64),
    #[error("the built-in sim-memory scenario does not load: {0}")]
    Scenario(String),
    #[error(transparent)]
    Sim(#[from] sim::SimError),
}

/// One `bench sim-memory` run.
#[derive(Debug, Clone)]
pub struct SimMemoryReport {
    pub population: u64,
    /// The simulator's `scale` over the scenario's own cap.
    pub scale: f64,
    /// VmRSS before the simulation, KiB.
    pub rss_before_kib: u64,
    /// VmHWM after it, KiB.
    pub peak_rss_kib: u64,
    /// Whether the high-water mark was reset just before the simulation (otherwise it
    /// counts from the start of the process, which did little else).
    pub peak_reset: bool,
    pub peak_in_flight: u64,
    pub unfinished: u64,
    pub dropped: u64,
    pub attempts: u64,
    pub events: u64,
    pub wall: Duration,
    pub cpu: Option<Duration>,
}

impl SimMemoryReport {
    /// Resident bytes the simulation added per request in flight at its peak.
    pub fn bytes_per_in_flight(&self) -> Option<u64> {
        let grown = self.peak_rss_kib.saturating_sub(self.rss_before_kib) * 1024;
        grown.checked_div(self.peak_in_flight)
    }
}

/// The storm's scenario at a cap of `cap` (at most [`limits::MAX_IN_FLIGHT`]).
fn scenario_text(cap: u64) -> String {
    let rate = cap as f64 * OVERSHOOT / LOAD_S as f64;
    format!(
        r#"name = "sim-memory"
description = "Every request hangs until the run ends: the in-flight cap bounds the pile-up."
seed = 1
duration = "{LOAD_S}s"
drain = "0s"

[load]
kind = "constant"
rate = {rate:.3}
max_in_flight = {cap}

[target]
builtin = "default"

[[faults]]
kind = "hang"
at = "0s"
for = "{LOAD_S}s"

[[configs]]
preset = "no-retry"
per_try_timeout = "600s"
"#
    )
}

/// The storm's plan and the scale that brings its cap to `population`.
pub fn storm(population: u64) -> Result<(plan::Plan, f64), SimMemoryError> {
    if !(1..=MAX_POPULATION).contains(&population) {
        return Err(SimMemoryError::Population(population));
    }
    let cap = population.min(u64::from(limits::MAX_IN_FLIGHT));
    let text = scenario_text(cap);
    let sc = scenario::load::parse(Path::new("<built-in>/sim-memory.toml"), &text)
        .map_err(|e| SimMemoryError::Scenario(e.to_string()))?;
    let plan = plan::build(sc, &text).map_err(|e| SimMemoryError::Scenario(e.to_string()))?;
    Ok((plan, population as f64 / cap as f64))
}

/// Simulates the storm on the calling thread and measures the resident set around it.
pub fn run(population: u64) -> Result<SimMemoryReport, SimMemoryError> {
    let (plan, scale) = storm(population)?;
    let opts = SimOptions {
        scale,
        attempt_log: false,
        jobs: 1,
        ..SimOptions::default()
    };
    let rss_before_kib = rss_kib().unwrap_or(0);
    let peak_reset = reset_peak_rss();
    let cpu0 = thread_cpu();
    let start = Instant::now();
    let out = sim::run(&plan, &opts)?;
    let wall = start.elapsed();
    let cpu = thread_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
    let peak_rss_kib = peak_rss_kib().unwrap_or(0);
    let c = out.result.configs.first();
    Ok(SimMemoryReport {
        population,
        scale,
        rss_before_kib,
        peak_rss_kib,
        peak_reset,
        peak_in_flight: c.map_or(0, |c| c.client_peak_in_flight),
        unfinished: c.map_or(0, |c| c.unfinished),
        dropped: c.map_or(0, |c| c.dropped),
        attempts: out.stats.attempts,
        events: out.stats.events,
        wall,
        cpu,
    })
}

/// Peak resident set of this process in KiB (`VmHWM` of `/proc/self/status`).
fn peak_rss_kib() -> Option<u64> {
    super::status_kib("VmHWM:")
}

/// Resets the peak resident set to the current one (Linux: `5` to `/proc/self/clear_refs`).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `bench sim-memory` output: one `key=value` per line.
pub fn text(r: &SimMemoryReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "bench=sim-memory");
    let _ = writeln!(out, "population={}", r.population);
    let _ = writeln!(out, "scale={}", r.scale);
    let _ = writeln!(out, "attempts={}", r.attempts);
    let _ = writeln!(out, "events={}", r.events);
    let _ = writeln!(out, "dropped={}", r.dropped);
    let _ = writeln!(out, "unfinished={}", r.unfinished);
    let _ = writeln!(out, "peak_in_flight={}", r.peak_in_flight);
    let _ = writeln!(out, "wall_s={:.3}", r.wall.as_secs_f64());
    let _ = writeln!(
        out,
        "thread_cpu_s={}",
        r.cpu
            .map_or("NA".to_string(), |c| format!("{:.3}", c.as_secs_f64()))
    );
    let _ = writeln!(out, "rss_before_kib={}", r.rss_before_kib);
    let _ = writeln!(out, "peak_rss_kib={}", r.peak_rss_kib);
    let _ = writeln!(out, "peak_rss_reset={}", r.peak_reset);
    let _ = writeln!(
        out,
        "bytes_per_in_flight={}",
        r.bytes_per_in_flight()
            .map_or("NA".to_string(), |b| b.to_string())
    );
    out
}
