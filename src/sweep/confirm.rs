//! `capacity --confirm`: each found limit, and a value past its knife edge, run again
//! live, with every objective's simulated and live figure side by side.
//!
//! A bare "live agrees: no" cannot be acted on: the user needs to know which objective moved
//! and by how much, to tell a model that is a little optimistic (live misses the threshold by
//! a hair) from one that is wrong (live never recovers). So each check keeps, per objective,
//! the four figures (simulated and live, at the limit and beyond it) and the verdicts, and
//! says in words every place where live and the simulator give different verdicts.
//!
//! The live runs themselves are the caller's (the CLI edge owns the runtime and the
//! sockets): [`confirm`] hands each run to a closure, in a fixed order, so the edge can
//! show progress and this module stays engine-free.

use super::capacity::{
    self, CapacityResult, ConfigCapacity, Direction, LiveCheck, ObjectiveCheck, Outcome, Probe,
};
use super::grid::Base;
use super::SweepError;
use crate::metrics::RunResult;
use crate::plan::Plan;
use crate::report::gates::{fmt_measured, fmt_num, Gate};

/// Which of the two values a live run is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Limit,
    Beyond,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Limit => "the limit",
            Role::Beyond => "beyond the edge",
        }
    }
}

/// One live run [`confirm`] asks for: the plan (one config, the value set) and where it
/// stands in the whole confirmation, for progress.
pub struct LiveRun<'a> {
    pub plan: &'a Plan,
    pub config: &'a str,
    pub value: f64,
    pub role: Role,
    /// 1-based, out of `total`.
    pub index: usize,
    pub total: usize,
}

/// The value live must fail at: the first grid value at or past the knife edge (where the
/// simulator fails with the service as modeled), so that a live service a little faster
/// than its model is not asked to fail inside the tolerance the limit was kept from; one
/// grid STEP beyond the limit when nothing failed as modeled within the range.
pub fn beyond(r: &CapacityResult, c: &ConfigCapacity, limit: f64) -> f64 {
    let past = |v: f64, edge: f64| match r.direction {
        Direction::Largest => v >= edge,
        Direction::Smallest => v <= edge,
    };
    let on_grid = c.edge.and_then(|edge| {
        let mut at: Vec<f64> = r
            .axis
            .values
            .iter()
            .copied()
            .filter(|v| past(*v, edge))
            .collect();
        at.sort_by(f64::total_cmp);
        match r.direction {
            Direction::Largest => at.first().copied(),
            Direction::Smallest => at.last().copied(),
        }
    });
    on_grid.unwrap_or_else(|| {
        r.axis.round(match r.direction {
            Direction::Largest => limit + r.axis.step,
            Direction::Smallest => limit - r.axis.step,
        })
    })
}

/// Runs every config with a single limit (`Found`) live at the limit and beyond its knife edge,
/// through `live`, and stores the check in the config's `live`. Configs without a single
/// limit are left unchecked (`live: null`). Every plan is built before the first live run,
/// so a bad point is refused before any load is sent.
pub fn confirm<E>(
    base: &Base,
    base_plan: &Plan,
    r: &mut CapacityResult,
    objectives: &[Gate],
    mut live: impl FnMut(LiveRun<'_>) -> Result<RunResult, E>,
) -> Result<(), ConfirmError<E>> {
    let mut jobs = Vec::new();
    for (ci, c) in r.configs.iter().enumerate() {
        let Outcome::Found { limit, .. } = c.outcome else {
            continue;
        };
        let beyond = beyond(r, c, limit);
        let mut plans = Vec::new();
        for (value, role) in [(limit, Role::Limit), (beyond, Role::Beyond)] {
            let plan = capacity::plan_for(base, base_plan, &r.axis, ci, value)?;
            let sim = match c.probes.iter().find(|p| p.value == value) {
                Some(p) => p.clone(),
                None => capacity::probe_plan(&plan, &r.axis, value, objectives, r.seed)?,
            };
            plans.push((plan, value, role, sim));
        }
        jobs.push((ci, plans));
    }
    let total = jobs.len() * 2;
    let mut index = 0;
    for (ci, plans) in jobs {
        let mut judged = Vec::new();
        for (plan, value, role, sim) in plans {
            index += 1;
            let run = live(LiveRun {
                plan: &plan,
                config: &r.configs[ci].config,
                value,
                role,
                index,
                total,
            })
            .map_err(ConfirmError::Live)?;
            let live_probe = capacity::judge(&run, value, objectives)?;
            judged.push((sim, live_probe));
        }
        let [(sim_l, live_l), (sim_b, live_b)]: [(Probe, Probe); 2] = judged
            .try_into()
            .unwrap_or_else(|_| unreachable!("two values per config"));
        let check = compare(r, &r.configs[ci].config, [&sim_l, &live_l, &sim_b, &live_b]);
        r.configs[ci].live = Some(check);
    }
    Ok(())
}

/// Why a confirmation stopped: bad input found by the library, or the caller's live run.
#[derive(Debug)]
pub enum ConfirmError<E> {
    Sweep(SweepError),
    Live(E),
}

impl<E> From<SweepError> for ConfirmError<E> {
    fn from(e: SweepError) -> Self {
        ConfirmError::Sweep(e)
    }
}

/// The check of one config from its four probes: simulated and live at the limit, then at
/// the value beyond it.
fn compare(r: &CapacityResult, config: &str, [sl, ll, sb, lb]: [&Probe; 4]) -> LiveCheck {
    let mut objectives = Vec::new();
    let mut disagreements = Vec::new();
    for (i, v) in sl.verdicts.iter().enumerate() {
        let find = |p: &Probe| p.verdicts.get(i).filter(|w| w.gate == v.gate).cloned();
        let (Some(vl), Some(sbv), Some(lbv)) = (find(ll), find(sb), find(lb)) else {
            continue;
        };
        let o = ObjectiveCheck {
            objective: v.gate.clone(),
            figure: v.figure.clone(),
            op: v.op.clone(),
            threshold: v.limit,
            sim_at_limit: v.measured,
            live_at_limit: vl.measured,
            sim_beyond: sbv.measured,
            live_beyond: lbv.measured,
            sim_passed_at_limit: v.passed,
            live_passed_at_limit: vl.passed,
            sim_passed_beyond: sbv.passed,
            live_passed_beyond: lbv.passed,
        };
        for (at, value, sim_ok, live_ok, sim_m, live_m) in [
            (
                Role::Limit,
                sl.value,
                o.sim_passed_at_limit,
                o.live_passed_at_limit,
                o.sim_at_limit,
                o.live_at_limit,
            ),
            (
                Role::Beyond,
                sb.value,
                o.sim_passed_beyond,
                o.live_passed_beyond,
                o.sim_beyond,
                o.live_beyond,
            ),
        ] {
            if sim_ok != live_ok {
                disagreements.push(format!(
                    "{config} at {} = {} ({}): `{}` {} live and {} simulated: live {}, sim {}{}",
                    r.axis.path,
                    r.axis.label(value),
                    at.as_str(),
                    o.objective,
                    if live_ok { "holds" } else { "fails" },
                    if sim_ok { "holds" } else { "fails" },
                    fmt_measured(live_m),
                    fmt_measured(sim_m),
                    how_far(live_m, sim_m, o.threshold),
                ));
            }
        }
        objectives.push(o);
    }
    for (p, s) in [(ll, sl), (lb, sb)] {
        if let (Some(o), None) = (&p.overloaded, &s.overloaded) {
            disagreements.push(format!(
                "{config}: live was {} (the simulator was not)",
                o.describe(&r.axis)
            ));
        }
    }
    // Stricter than the capacity answer alone: an objective whose verdict differs beyond
    // the limit, where the run fails anyway, still says the model is off.
    let agrees = sl.passed == ll.passed && sb.passed == lb.passed && disagreements.is_empty();
    LiveCheck {
        limit: sl.value,
        beyond: sb.value,
        sim_passed_at_limit: sl.passed,
        live_passed_at_limit: ll.passed,
        sim_passed_beyond: sb.passed,
        live_passed_beyond: lb.passed,
        live_overloaded_at_limit: ll.overloaded,
        live_overloaded_beyond: lb.overloaded,
        objectives,
        agrees,
        disagreements,
    }
}

/// "; live - sim = +2.5, live - threshold = -0.7", or why no difference can be given.
fn how_far(live: Option<f64>, sim: Option<f64>, threshold: f64) -> String {
    match (live, sim) {
        (Some(l), Some(s)) => format!(
            " (live - sim = {}, live - threshold = {})",
            signed(l - s),
            signed(l - threshold)
        ),
        (Some(l), None) => format!(" (live - threshold = {})", signed(l - threshold)),
        _ => String::new(),
    }
}

fn signed(x: f64) -> String {
    let x = (x * 1e4).round() / 1e4;
    if x > 0.0 {
        format!("+{}", fmt_num(x))
    } else {
        fmt_num(x)
    }
}

/// The console table of the checks: per config and objective, the four figures and
/// whether live agrees; configs without a single limit say so.
pub fn table(r: &CapacityResult) -> String {
    let mut rows = Vec::new();
    for c in &r.configs {
        let Some(l) = &c.live else {
            rows.push(vec![
                c.config.clone(),
                "-".into(),
                "not run (no single limit)".into(),
                String::new(),
                String::new(),
            ]);
            continue;
        };
        let mark = |m: Option<f64>, ok: bool| {
            format!(
                "{} {}",
                fmt_measured(m).replace(" (never happened)", ""),
                if ok { "ok" } else { "FAIL" }
            )
        };
        for o in &l.objectives {
            rows.push(vec![
                c.config.clone(),
                o.objective.clone(),
                format!(
                    "{}: sim {} / live {}",
                    r.axis.label(l.limit),
                    mark(o.sim_at_limit, o.sim_passed_at_limit),
                    mark(o.live_at_limit, o.live_passed_at_limit)
                ),
                format!(
                    "{}: sim {} / live {}",
                    r.axis.label(l.beyond),
                    mark(o.sim_beyond, o.sim_passed_beyond),
                    mark(o.live_beyond, o.live_passed_beyond)
                ),
                if o.agrees() { "yes" } else { "NO" }.into(),
            ]);
        }
    }
    let mut out = crate::report::gates::text_table(
        &[
            "CONFIG",
            "OBJECTIVE",
            "AT LIMIT",
            "BEYOND THE EDGE",
            "LIVE AGREES",
        ],
        &rows,
    );
    for c in &r.configs {
        if let Some(l) = &c.live {
            for d in &l.disagreements {
                out.push_str(&format!("live disagrees: {d}\n"));
            }
        }
    }
    out
}

/// True when some config was confirmed and live disagreed.
pub fn any_disagreement(r: &CapacityResult) -> bool {
    r.configs
        .iter()
        .any(|c| c.live.as_ref().is_some_and(|l| !l.agrees))
}
