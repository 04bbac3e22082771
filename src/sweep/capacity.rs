//! The capacity search: per config, the largest offered load (or the smallest target
//! capacity) at which every objective holds.
//!
//! Objectives are gates (`recovery_time_s <= 5`, `*: latency_ms.p99 < 800`; a missing
//! selector means every config) over the figures a sweep has: every number of the config's
//! `summary.json` object plus the derived ones of [`super::run`] (e.g.
//! `success_share_outside_faults >= 99%`). Each config is searched on its own (the simulator runs
//! configs independently, so a config's outcome does not depend on the others):
//!
//! 1. a scan of the `--vary` grid (FROM..TO:STEP), from the easy end (low load, high
//!    capacity) to the hard end;
//! 2. when the passing points are one unbroken run from the easy end, bisection between
//!    the last passing and the first failing grid point, down to the resolution;
//! 3. when a point passes again after one failed, the outcome is not monotone in the field
//!    (a metastable system can recover at a higher load and not at a lower one, a seed's
//!    draw can land either way near the edge): the search reports the range from the first
//!    edge to the last passing point instead of a single limit.
//!
//! The scan catches a reversal only at grid resolution; bisection assumes monotony within
//! one step.
//!
//! A probe whose run was overloaded before the fault (goodput already below the offered
//! load, see `ConfigSummary::overloaded`) fails every objective, whatever it measured: its
//! recovery was measured against a saturated baseline, and capacity is never a load the
//! service could not carry before anything went wrong.

use serde::Serialize;

use super::grid::{Axis, Base};
use super::overload::before_fault;
pub use super::overload::{FirstFailed, Overload, OVERLOADED};
use super::run::{missing, parallel, per_config, simulate};
use super::tolerance::{self, SlowerProbe};
use super::SweepError;
use crate::metrics::{GateVerdict, RunResult};
use crate::plan::Plan;
use crate::report::gates::{self, Gate, Selector};

/// Which end of the field the search wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// The largest value that holds (offered load: `load.*`).
    Largest,
    /// The smallest value that holds (capacity: `target.*`).
    Smallest,
}

impl Direction {
    /// `load.*` → largest, `target.*` → smallest; other fields need `--find`.
    pub fn infer(path: &str) -> Option<Direction> {
        if path.starts_with("load.") {
            Some(Direction::Largest)
        } else if path.starts_with("target.") {
            Some(Direction::Smallest)
        } else {
            None
        }
    }

    pub fn parse(s: &str) -> Result<Direction, SweepError> {
        match s {
            "largest" => Ok(Direction::Largest),
            "smallest" => Ok(Direction::Smallest),
            _ => Err(SweepError::Usage(format!(
                "--find {s}: expected `largest` or `smallest`"
            ))),
        }
    }
}

/// One simulated value of the field for one config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    pub value: f64,
    pub passed: bool,
    /// The objectives that failed there (as written); every one when `overloaded`.
    pub failed: Vec<String>,
    /// The gate verdicts, with what was measured (an overloaded probe fails each one).
    pub verdicts: Vec<GateVerdict>,
    /// Set when the run was overloaded before the fault: why every objective failed.
    pub overloaded: Option<Overload>,
    /// With a model tolerance: the same value with every service time that much longer.
    /// `passed` needs both; `verdicts` are the run as modeled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slower: Option<SlowerProbe>,
}

impl Probe {
    /// What made this probe fail: its failed objectives, or [`OVERLOADED`].
    fn binding(&self) -> Vec<String> {
        if self.overloaded.is_some() {
            vec![OVERLOADED.to_string()]
        } else {
            self.failed.clone()
        }
    }

    /// Every objective held with the service exactly as modeled.
    pub fn as_modeled(&self) -> bool {
        self.overloaded.is_none() && gates::all_passed(&self.verdicts)
    }
}

/// What the search found for one config.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// Objectives hold up to `limit` and fail at `beyond` (one resolution step further).
    Found { limit: f64, beyond: f64 },
    /// Not monotone: the edge lies somewhere from `low` (the last point before the first
    /// failure) to `high` (the last passing point).
    Range { low: f64, high: f64 },
    /// Every point of the range holds: the limit is at least `at` (the hard end).
    HoldsEverywhere { at: f64 },
    /// No point of the range holds.
    HoldsNowhere,
}

/// One config's capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigCapacity {
    pub config: String,
    pub outcome: Outcome,
    /// The first value at which an objective fails with the service exactly as modeled (the
    /// knife edge), beyond the limit; equal to `Found`'s `beyond` without a tolerance,
    /// `null` when nothing fails as modeled within the range or there is no single limit.
    pub edge: Option<f64>,
    /// The limit as a single figure (`Found`: the limit; `Range`: its low end;
    /// `HoldsEverywhere`: the hard end, a bound); `null` when nothing holds.
    pub limit: Option<f64>,
    /// limit / the scenario's value (largest), or the scenario's value / limit (smallest):
    /// how many times the scenario's load fits, or its capacity exceeds what is needed.
    pub headroom: Option<f64>,
    /// The objectives that failed just beyond the limit, or [`OVERLOADED`] when the run
    /// there was overloaded before the fault.
    pub binding: Vec<String>,
    /// The probe nearest the easy end that was overloaded before the fault, if any: from
    /// there on the service could not carry the load even without a fault.
    pub overloaded: Option<Overload>,
    /// Every simulated probe, in the order run.
    pub probes: Vec<Probe>,
    /// Simulator runs made for this config: each probe, its slower twin, and the runs that
    /// placed the knife edge.
    pub runs: usize,
    /// `--confirm`'s live re-run of the limit and the value beyond its knife edge (see [`super::confirm::beyond`]) (`null`: not confirmed,
    /// or no single limit to confirm).
    pub live: Option<LiveCheck>,
}

/// `capacity.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityResult {
    pub scenario: String,
    pub description: String,
    pub engine: &'static str,
    pub seed: u64,
    pub stormrig_version: String,
    pub axis: Axis,
    pub direction: Direction,
    pub resolution: f64,
    /// A probe passes only if its objectives also hold with every service time this share
    /// longer (`--model-tolerance`; 0: as modeled only).
    pub model_tolerance: f64,
    pub objectives: Vec<String>,
    pub configs: Vec<ConfigCapacity>,
    /// Verdicts of `--gate`s on the capacity figures.
    pub gates: Vec<GateVerdict>,
    /// The search was interrupted (SIGINT, SIGTERM): `configs` holds those whose grid scan
    /// finished, fewer than the scenario's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Parses an objective; a missing selector means every config.
pub fn parse_objective(text: &str) -> Result<Gate, SweepError> {
    let direct = gates::parse(text);
    let parsed = match direct {
        Ok(g) => Ok(g),
        Err(e) if !text.contains(':') => {
            gates::parse(&format!("*: {}", text.trim())).map_err(|_| e)
        }
        Err(e) => Err(e),
    };
    parsed.map_err(|e| SweepError::Usage(format!("--objective: {e}")))
}

/// What a capacity search needs besides the scenario.
#[derive(Debug, Clone)]
pub struct CapacityOptions {
    pub direction: Direction,
    /// Bisection stops when the bracket is this narrow (in the axis's unit).
    pub resolution: f64,
    /// See [`CapacityResult::model_tolerance`].
    pub tolerance: f64,
    pub jobs: usize,
    /// Set from outside (SIGINT, SIGTERM) to stop: grid probes not started are skipped, and
    /// only configs whose whole scan ran are refined and reported (marked partial).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Told `(probes done, probes of the grid scan)` as each grid probe finishes.
    pub on_probe: Option<fn(usize, usize)>,
}

fn applies(g: &Gate, config: &str) -> bool {
    match &g.selector {
        Selector::All => true,
        Selector::Config(n) => n == config,
    }
}

/// Runs the search for every config of `base_plan`.
pub fn search(
    base: &Base,
    base_plan: &Plan,
    axis: &Axis,
    objectives: &[Gate],
    opts: &CapacityOptions,
) -> Result<CapacityResult, SweepError> {
    if objectives.is_empty() {
        return Err(SweepError::Usage(
            "give at least one --objective, e.g. 'recovery_time_s <= 5'".into(),
        ));
    }
    let names: Vec<&str> = base_plan.configs.iter().map(|c| c.name.as_str()).collect();
    for g in objectives {
        if let Selector::Config(n) = &g.selector {
            if !names.contains(&n.as_str()) {
                return Err(SweepError::Usage(format!(
                    "--objective {:?}: the scenario has no config {n:?} (it has: {})",
                    g.text,
                    names.join(", ")
                )));
            }
        }
    }
    if opts.resolution.is_nan() || opts.resolution <= 0.0 {
        return Err(SweepError::Usage("--resolution must be above 0".into()));
    }
    // The grid, easy end first; every grid plan is validated before anything runs.
    let mut grid = axis.values.clone();
    if opts.direction == Direction::Smallest {
        grid.reverse();
    }
    let plans: Vec<Plan> = grid
        .iter()
        .map(|v| base.point(std::slice::from_ref(axis), &[*v]))
        .collect::<Result<_, _>>()?;
    let seed = base_plan.scenario.seed;
    let n = grid.len();
    let stopped = || {
        opts.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let scans = parallel(names.len() * n, opts.jobs, |i| {
        let (ci, gi) = (i / n, i % n);
        let probed = (!stopped()).then(|| {
            probe(
                &only(&plans[gi], ci),
                axis,
                grid[gi],
                objectives,
                seed,
                opts.tolerance,
            )
        });
        if let (Some(_), Some(tell)) = (&probed, opts.on_probe) {
            tell(
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1,
                names.len() * n,
            );
        }
        probed
    });
    let mut scans = scans.into_iter();
    // Each config whose every probe ran, with its scan.
    let mut scanned: Vec<(usize, Vec<Probe>)> = Vec::new();
    for ci in 0..names.len() {
        let taken: Vec<_> = scans.by_ref().take(n).collect();
        if let Some(probes) = taken.into_iter().collect::<Option<Vec<_>>>() {
            scanned.push((ci, probes.into_iter().collect::<Result<_, _>>()?));
        }
    }
    let partial = scanned.len() < names.len();
    // Bisection per config, configs in parallel (a few runs each: the bracket is one STEP).
    let configs = parallel(scanned.len(), opts.jobs, |k| {
        let (ci, scan) = &scanned[k];
        refine(base, base_plan, axis, *ci, &grid, scan, objectives, opts)
    })
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    Ok(CapacityResult {
        scenario: base_plan.scenario.name.clone(),
        description: base_plan.scenario.description.clone(),
        engine: "sim",
        seed,
        stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
        axis: axis.clone(),
        direction: opts.direction,
        resolution: opts.resolution,
        model_tolerance: opts.tolerance,
        objectives: objectives.iter().map(|g| g.text.clone()).collect(),
        configs,
        gates: Vec::new(),
        partial,
    })
}

/// `plan` with only its config `ci`.
fn only(plan: &Plan, ci: usize) -> Plan {
    let mut p = plan.clone();
    p.configs = vec![plan.configs[ci].clone()];
    p
}

/// The plan of config `ci` alone at `value` of the axis.
pub fn plan_for(
    base: &Base,
    base_plan: &Plan,
    axis: &Axis,
    ci: usize,
    value: f64,
) -> Result<Plan, SweepError> {
    debug_assert!(ci < base_plan.configs.len());
    Ok(only(&base.point(std::slice::from_ref(axis), &[value])?, ci))
}

/// Simulates one value of a one-config plan (see [`plan_for`]) as modeled and judges it.
pub fn probe_plan(
    plan: &Plan,
    axis: &Axis,
    value: f64,
    objectives: &[Gate],
    seed: u64,
) -> Result<Probe, SweepError> {
    probe(plan, axis, value, objectives, seed, 0.0)
}

/// Simulates one value for one config and judges the objectives that apply to it; with a
/// tolerance, again with the slower service, and it passes only if both do.
fn probe(
    plan: &Plan,
    axis: &Axis,
    value: f64,
    objectives: &[Gate],
    seed: u64,
    tolerance: f64,
) -> Result<Probe, SweepError> {
    let label = format!("{}={}", axis.path, axis.label(value));
    let run = simulate(plan, seed, &label)?;
    let mut p = judge(&run, value, objectives)?;
    let Some(slow_plan) = (tolerance > 0.0)
        .then(|| tolerance::slower(plan, tolerance))
        .flatten()
    else {
        return Ok(p);
    };
    let slow = judge(
        &simulate(
            &slow_plan,
            seed,
            &format!("{label} ({})", tolerance::label(tolerance)),
        )?,
        value,
        objectives,
    )?;
    let slower = SlowerProbe {
        passed: slow.passed,
        failed: slow.failed,
        overloaded: slow.overloaded.is_some(),
    };
    if p.passed && !slower.passed {
        p.passed = false;
        let why = tolerance::label(tolerance);
        p.failed = if slower.overloaded {
            vec![format!("{OVERLOADED} ({why})")]
        } else {
            slower
                .failed
                .iter()
                .map(|f| format!("{f} ({why})"))
                .collect()
        };
    }
    p.slower = Some(slower);
    Ok(p)
}

/// The objectives that apply to the run's (single) config, judged.
pub fn judge(run: &RunResult, value: f64, objectives: &[Gate]) -> Result<Probe, SweepError> {
    let Some((summary, figures)) = per_config(run).into_iter().next() else {
        return Err(SweepError::Usage("the run has no config to judge".into()));
    };
    let mut verdicts = Vec::new();
    for g in objectives.iter().filter(|g| applies(g, &summary.name)) {
        let measured = match figures.get(&g.figure) {
            Some(v) => *v,
            None => missing(&g.figure).map(Some).ok_or_else(|| {
                let hint = gates::nearest(&g.figure, figures.keys().map(String::as_str))
                    .map_or(String::new(), |s| format!(" (did you mean {s:?}?)"));
                SweepError::Usage(format!(
                    "--objective {:?}: unknown figure {:?}{hint}",
                    g.text, g.figure
                ))
            })?,
        };
        verdicts.push(verdict(g, &summary.name, measured));
    }
    let overloaded = match (
        summary.overloaded,
        summary.pre_fault_offered_rps,
        summary.pre_fault_goodput_rps,
    ) {
        (Some(true), Some(offered_rps), Some(goodput_rps)) => Some(Overload {
            value,
            offered_rps,
            goodput_rps,
            ..before_fault(run, &summary.name)
        }),
        _ => None,
    };
    if overloaded.is_some() {
        for v in &mut verdicts {
            v.passed = false;
        }
    }
    Ok(Probe {
        value,
        passed: overloaded.is_none() && gates::all_passed(&verdicts),
        failed: verdicts
            .iter()
            .filter(|v| !v.passed)
            .map(|v| v.gate.clone())
            .collect(),
        verdicts,
        overloaded,
        slower: None,
    })
}

/// One gate's verdict on one config; a figure that never happened (`None`) fails.
fn verdict(g: &Gate, config: &str, measured: Option<f64>) -> GateVerdict {
    GateVerdict {
        gate: g.text.clone(),
        config: config.to_string(),
        figure: g.figure.clone(),
        op: g.op.as_str().to_string(),
        limit: g.limit,
        measured,
        passed: measured.is_some_and(|m| g.op.holds(m, g.limit)),
        incomplete: false,
    }
}

/// What a grid scan (easy end first) says before any bisection.
#[derive(Debug, Clone, PartialEq)]
enum Scan {
    /// The outcome is already known.
    Done(Outcome),
    /// Passing at `ok`, failing at `bad` = `grid[index]`, monotone so far: bisect.
    Bracket { ok: f64, bad: f64, index: usize },
}

fn read_scan(grid: &[f64], passed: &[bool]) -> Scan {
    let first_fail = passed.iter().position(|p| !p);
    let last_pass = passed.iter().rposition(|p| *p);
    match (first_fail, last_pass) {
        (None, _) => Scan::Done(Outcome::HoldsEverywhere {
            at: grid[grid.len() - 1],
        }),
        (Some(_), None) => Scan::Done(Outcome::HoldsNowhere),
        (Some(f), Some(l)) if l > f => Scan::Done(Outcome::Range {
            low: if f == 0 { grid[0] } else { grid[f - 1] },
            high: grid[l],
        }),
        (Some(f), Some(_)) => Scan::Bracket {
            ok: grid[f - 1],
            bad: grid[f],
            index: f,
        },
    }
}

#[allow(clippy::too_many_arguments)]
fn refine(
    base: &Base,
    base_plan: &Plan,
    axis: &Axis,
    ci: usize,
    grid: &[f64],
    scan: &[Probe],
    objectives: &[Gate],
    opts: &CapacityOptions,
) -> Result<ConfigCapacity, SweepError> {
    let config = base_plan.configs[ci].name.clone();
    let mut probes = scan.to_vec();
    let passed: Vec<bool> = scan.iter().map(|p| p.passed).collect();
    let (outcome, binding) = match read_scan(grid, &passed) {
        Scan::Done(o) => {
            let first_fail = scan.iter().find(|p| !p.passed);
            (o, first_fail.map(Probe::binding).unwrap_or_default())
        }
        Scan::Bracket { ok, bad, index } => {
            let mut binding = scan[index].binding();
            let (ok, bad) = bisect(base, axis, opts, ok, bad, |mid| {
                let plan = plan_for(base, base_plan, axis, ci, mid)?;
                let seed = base_plan.scenario.seed;
                let p = probe(&plan, axis, mid, objectives, seed, opts.tolerance)?;
                let passed = p.passed;
                if !passed {
                    binding = p.binding();
                }
                probes.push(p);
                Ok(passed)
            })?;
            (
                Outcome::Found {
                    limit: ok,
                    beyond: bad,
                },
                binding,
            )
        }
    };
    let mut runs = probes.len() + probes.iter().filter(|p| p.slower.is_some()).count();
    let edge = match outcome {
        Outcome::Found { limit, .. } if opts.tolerance > 0.0 => {
            let (edge, more) =
                knife_edge(base, base_plan, axis, ci, limit, &probes, objectives, opts)?;
            runs += more;
            edge
        }
        Outcome::Found { beyond, .. } => Some(beyond),
        _ => None,
    };
    let limit = match outcome {
        Outcome::Found { limit, .. } => Some(limit),
        Outcome::Range { low, .. } => Some(low),
        Outcome::HoldsEverywhere { at } => Some(at),
        Outcome::HoldsNowhere => None,
    };
    let headroom = match (limit, axis.scenario_value, opts.direction) {
        (Some(l), Some(s), Direction::Largest) if s > 0.0 => Some(l / s),
        (Some(l), Some(s), Direction::Smallest) if l > 0.0 => Some(s / l),
        _ => None,
    };
    // Nearest the easy end: the largest load searches run upwards, the smallest
    // capacity searches downwards.
    let overloaded = probes.iter().filter_map(|p| p.overloaded).reduce(|a, b| {
        let easier = match opts.direction {
            Direction::Largest => b.value < a.value,
            Direction::Smallest => b.value > a.value,
        };
        if easier {
            b
        } else {
            a
        }
    });
    Ok(ConfigCapacity {
        config,
        outcome,
        edge,
        limit,
        headroom,
        binding,
        overloaded,
        probes,
        runs,
        live: None,
    })
}

/// The first value beyond `limit` at which an objective fails with the service as
/// modeled: the nearest probe that failed so, bisected down to the resolution against the
/// farthest one that held; `None` when every probe beyond the limit held as modeled. Also
/// the number of simulator runs the bisection made.
#[allow(clippy::too_many_arguments)]
fn knife_edge(
    base: &Base,
    base_plan: &Plan,
    axis: &Axis,
    ci: usize,
    limit: f64,
    probes: &[Probe],
    objectives: &[Gate],
    opts: &CapacityOptions,
) -> Result<(Option<f64>, usize), SweepError> {
    // Distance from the limit in the search's direction: beyond it is positive.
    let ahead = |v: f64| match opts.direction {
        Direction::Largest => v - limit,
        Direction::Smallest => limit - v,
    };
    let Some(bad) = probes
        .iter()
        .filter(|p| ahead(p.value) > 0.0 && !p.as_modeled())
        .map(|p| p.value)
        .min_by(|a, b| ahead(*a).total_cmp(&ahead(*b)))
    else {
        return Ok((None, 0));
    };
    let ok = probes
        .iter()
        .filter(|p| ahead(p.value) >= 0.0 && ahead(p.value) < ahead(bad) && p.as_modeled())
        .map(|p| p.value)
        .max_by(|a, b| ahead(*a).total_cmp(&ahead(*b)))
        .unwrap_or(limit);
    let mut runs = 0;
    let (_, bad) = bisect(base, axis, opts, ok, bad, |mid| {
        let plan = plan_for(base, base_plan, axis, ci, mid)?;
        runs += 1;
        Ok(probe_plan(&plan, axis, mid, objectives, base_plan.scenario.seed)?.as_modeled())
    })?;
    Ok((Some(bad), runs))
}

/// Narrows the bracket from `ok` (passes) to `bad` (fails) by halves down to the resolution
/// (at least a whole step on an integer field); `passes` judges one value. Returns the
/// bracket.
fn bisect(
    base: &Base,
    axis: &Axis,
    opts: &CapacityOptions,
    mut ok: f64,
    mut bad: f64,
    mut passes: impl FnMut(f64) -> Result<bool, SweepError>,
) -> Result<(f64, f64), SweepError> {
    let integer_field = base.is_integer_field(axis);
    let step_min = if integer_field {
        opts.resolution.max(1.0)
    } else {
        opts.resolution
    };
    while (bad - ok).abs() > step_min {
        let mut mid = axis.round((ok + bad) / 2.0);
        if integer_field {
            mid = mid.round();
        }
        if mid == ok || mid == bad {
            break;
        }
        if passes(mid)? {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    Ok((ok, bad))
}

/// The capacity figures gates can name: `capacity.limit`, `capacity.headroom`, and
/// `capacity.max_rate` (a `load.rate` search) or `capacity.min_capacity` (a `target.*`
/// search).
pub fn figure(r: &CapacityResult, c: &ConfigCapacity, name: &str) -> Option<Option<f64>> {
    match name {
        "capacity.limit" => Some(c.limit),
        "capacity.headroom" => Some(c.headroom),
        "capacity.max_rate" if r.axis.path == "load.rate" => Some(c.limit),
        "capacity.min_capacity" if r.direction == Direction::Smallest => Some(c.limit),
        _ => None,
    }
}

/// Judges `--gate`s on the capacity figures; an unknown config or figure is bad input.
pub fn evaluate_gates(r: &CapacityResult, gates_: &[Gate]) -> Result<Vec<GateVerdict>, SweepError> {
    let mut out = Vec::new();
    for g in gates_ {
        let matching: Vec<&ConfigCapacity> =
            r.configs.iter().filter(|c| applies(g, &c.config)).collect();
        if matching.is_empty() {
            return Err(SweepError::Usage(format!(
                "gate {:?}: no config of that name",
                g.text
            )));
        }
        for c in matching {
            let measured = figure(r, c, &g.figure).ok_or_else(|| {
                SweepError::Usage(format!(
                    "gate {:?}: a capacity gate names capacity.limit, capacity.headroom, \
                     capacity.max_rate (load.rate searches) or capacity.min_capacity \
                     (target searches)",
                    g.text
                ))
            })?;
            out.push(verdict(g, &c.config, measured));
        }
    }
    Ok(out)
}

/// How far a found limit lies from the knife edge (the first value failing with the service
/// exactly as modeled), as a share of that value: the distance a live service may stray
/// from the model before the limit moves. Without a model tolerance it is only the
/// bisection's last step, and a live run's noise near a knee crosses it.
pub fn margin(c: &ConfigCapacity) -> Option<f64> {
    match (c.limit, c.edge, &c.outcome) {
        (Some(limit), Some(edge), Outcome::Found { .. }) if edge != 0.0 => {
            Some(((edge - limit) / edge).abs())
        }
        _ => None,
    }
}

/// One objective, simulated and live, at the limit and beyond its knife edge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectiveCheck {
    /// As written (`recovery_time_s <= 5`).
    pub objective: String,
    pub figure: String,
    pub op: String,
    pub threshold: f64,
    /// The figures measured (`None`: it never happened, e.g. no recovery).
    pub sim_at_limit: Option<f64>,
    pub live_at_limit: Option<f64>,
    pub sim_beyond: Option<f64>,
    pub live_beyond: Option<f64>,
    /// The verdicts (an overloaded run fails every objective, whatever it measured).
    pub sim_passed_at_limit: bool,
    pub live_passed_at_limit: bool,
    pub sim_passed_beyond: bool,
    pub live_passed_beyond: bool,
}

impl ObjectiveCheck {
    /// Live gives this objective the simulator's verdict at both values.
    pub fn agrees(&self) -> bool {
        self.sim_passed_at_limit == self.live_passed_at_limit
            && self.sim_passed_beyond == self.live_passed_beyond
    }
}

/// One config's live re-run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveCheck {
    /// The limit the simulator found, and the value beyond its knife edge that live must fail at.
    pub limit: f64,
    pub beyond: f64,
    pub sim_passed_at_limit: bool,
    pub live_passed_at_limit: bool,
    pub sim_passed_beyond: bool,
    pub live_passed_beyond: bool,
    /// Set when the live run there was overloaded before the fault.
    pub live_overloaded_at_limit: Option<Overload>,
    pub live_overloaded_beyond: Option<Overload>,
    pub objectives: Vec<ObjectiveCheck>,
    /// Live gives the simulator's verdict at both values, objective by objective.
    pub agrees: bool,
    /// Where live and the simulator differ, in words: which value, which objective, the two
    /// figures, and how far live is from the threshold.
    pub disagreements: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(outcome: Outcome, limit: Option<f64>, edge: Option<f64>) -> ConfigCapacity {
        ConfigCapacity {
            config: "c".into(),
            outcome,
            edge,
            limit,
            headroom: None,
            binding: Vec::new(),
            overloaded: None,
            probes: Vec::new(),
            runs: 0,
            live: None,
        }
    }

    #[test]
    fn the_margin_is_the_gap_to_the_knife_edge() {
        let found = Outcome::Found {
            limit: 400.0,
            beyond: 406.25,
        };
        let m = margin(&config(found.clone(), Some(400.0), Some(406.25))).unwrap();
        assert!((m - 6.25 / 406.25).abs() < 1e-12, "{m}");
        // With a tolerance the edge lies past the first point the slower service fails.
        let m = margin(&config(found, Some(400.0), Some(450.0))).unwrap();
        assert!((m - 50.0 / 450.0).abs() < 1e-12, "{m}");
        // Searching for the smallest capacity, the failing point lies below the limit.
        let smallest = Outcome::Found {
            limit: 8.0,
            beyond: 7.0,
        };
        let m = margin(&config(smallest, Some(8.0), Some(7.0))).unwrap();
        assert!((m - 1.0 / 7.0).abs() < 1e-12);
        assert_eq!(margin(&config(Outcome::HoldsNowhere, None, None)), None);
        let nothing_fails_as_modeled = Outcome::Found {
            limit: 400.0,
            beyond: 450.0,
        };
        assert_eq!(
            margin(&config(nothing_fails_as_modeled, Some(400.0), None)),
            None
        );
    }

    #[test]
    fn a_scan_brackets_monotone_outcomes_and_reports_reversals_as_a_range() {
        let g = [100.0, 200.0, 300.0, 400.0];
        assert_eq!(
            read_scan(&g, &[true, true, false, false]),
            Scan::Bracket {
                ok: 200.0,
                bad: 300.0,
                index: 2
            }
        );
        assert_eq!(
            read_scan(&g, &[true, false, true, false]),
            Scan::Done(Outcome::Range {
                low: 100.0,
                high: 300.0
            })
        );
        assert_eq!(
            read_scan(&g, &[false, true, false, false]),
            Scan::Done(Outcome::Range {
                low: 100.0,
                high: 200.0
            })
        );
        assert_eq!(
            read_scan(&g, &[true; 4]),
            Scan::Done(Outcome::HoldsEverywhere { at: 400.0 })
        );
        assert_eq!(
            read_scan(&g, &[false; 4]),
            Scan::Done(Outcome::HoldsNowhere)
        );
    }

    #[test]
    fn objectives_may_leave_out_the_selector() {
        let g = parse_objective("recovery_time_s <= 5").unwrap();
        assert_eq!(g.selector, Selector::All);
        assert_eq!(g.figure, "recovery_time_s");
        let g = parse_objective("naive: amplification < 2").unwrap();
        assert_eq!(g.selector, Selector::Config("naive".into()));
        assert!(parse_objective("recovery_time_s <=").is_err());
    }
}
