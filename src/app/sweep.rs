//! `stormrig sweep` and `stormrig capacity` at the edge: files, console, `--confirm`'s
//! live runs and exit codes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::app::{AppError, Exit};
use crate::cli::{CapacityArgs, SweepArgs};
use crate::report::gates;
use crate::scenario::units::duration;
use crate::sweep::capacity::{self, CapacityOptions, CapacityResult, Direction};
use crate::sweep::grid::{Axis, Base};
use crate::sweep::run::{self, SweepOptions};
use crate::sweep::{files, page, SweepError};

fn bad(e: impl ToString) -> AppError {
    AppError {
        exit: Exit::BadInput,
        message: e.to_string(),
    }
}

fn failed(e: impl ToString) -> AppError {
    AppError {
        exit: Exit::RunFailed,
        message: e.to_string(),
    }
}

fn to_app(e: SweepError) -> AppError {
    match e {
        SweepError::Io(_) => failed(e),
        _ => bad(e),
    }
}

fn out_dir(out: &Option<PathBuf>, scenario: &str, kind: &str) -> PathBuf {
    out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
            .to_string()
            .replace(':', "-");
        Path::new("reports")
            .join(scenario)
            .join(format!("{kind}-{stamp}"))
    })
}

fn create(dir: &Path) -> Result<(), AppError> {
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("{}: {e}", dir.display())))
}

/// `stormrig sweep`.
pub fn sweep(args: SweepArgs) -> Result<Exit, AppError> {
    let (base, plan) = Base::read(&args.scenario).map_err(to_app)?;
    let mut axes: Vec<Axis> = args
        .vary
        .iter()
        .map(|s| Axis::parse(s))
        .collect::<Result<_, _>>()
        .map_err(to_app)?;
    base.note_scenario_values(&mut axes);
    crate::sweep::grid::check_size(&axes, args.seeds, plan.configs.len(), args.max_runs)
        .map_err(to_app)?;
    let late = duration::parse(&args.late).map_err(|e| bad(format!("--late: {e}")))?;
    let opts = SweepOptions {
        seeds: args.seeds,
        jobs: args.jobs,
        late_after_s: late.as_secs_f64(),
        stop: Some(super::signals::signal_flag()?),
        on_run: Some(|done, total| eprintln!("sweep: {done} of {total} runs done")),
    };
    let wall = std::time::Instant::now();
    let result = run::sweep(&base, &plan, &axes, &opts).map_err(to_app)?;
    let secs = wall.elapsed().as_secs_f64();
    eprintln!(
        "swept {} x {} x {} in {:.2} s wall",
        crate::metrics::numbers::count(result.points.len(), "point"),
        crate::metrics::numbers::count(result.seeds as usize, "seed"),
        crate::metrics::numbers::count(result.configs.len(), "config"),
        secs
    );
    let dir = out_dir(&args.out, &plan.scenario.name, "sweep");
    create(&dir)?;
    files::write(&dir, &result).map_err(to_app)?;
    let html = page::sweep(&result).map_err(failed)?;
    page::write(&dir, "sweep.html", &html).map_err(failed)?;
    super::out::say(recovery_table(&result))?;
    super::out::line(format!("reports: {}", dir.display()))?;
    if result.partial {
        eprintln!(
            "stormrig: the sweep was interrupted; the reports hold the {} points finished \
             and are marked partial",
            result.points.len()
        );
        return Ok(Exit::RunFailed);
    }
    Ok(Exit::Ok)
}

/// Per point, each config's recovery class (the map, as text).
fn recovery_table(r: &run::SweepResult) -> String {
    let mut header = vec!["POINT"];
    header.extend(r.configs.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = r
        .points
        .iter()
        .map(|p| {
            let mut row = vec![p.label.clone()];
            row.extend(p.cells.iter().map(|c| {
                let amp = c.figures.get("amplification").copied().flatten();
                format!(
                    "{} {}",
                    c.recovery.as_str(),
                    amp.map_or(String::new(), |a| format!("{a:.2}×"))
                )
            }));
            row
        })
        .collect();
    gates::text_table(&header, &rows)
}

/// `stormrig capacity`.
pub fn capacity(args: CapacityArgs) -> Result<Exit, AppError> {
    let (base, plan) = Base::read(&args.scenario).map_err(to_app)?;
    let mut axis = Axis::parse(&args.vary).map_err(to_app)?;
    base.note_scenario_values(std::slice::from_mut(&mut axis));
    let direction = match &args.find {
        Some(f) => Direction::parse(f).map_err(to_app)?,
        None => Direction::infer(&axis.path).ok_or_else(|| {
            bad(format!(
                "--vary {}: say whether to find the largest or the smallest value that holds \
                 (--find largest|smallest)",
                axis.path
            ))
        })?,
    };
    let objectives: Vec<gates::Gate> = args
        .objectives
        .iter()
        .map(|o| capacity::parse_objective(o))
        .collect::<Result<_, _>>()
        .map_err(to_app)?;
    let gate_list: Vec<gates::Gate> = args
        .gates
        .iter()
        .map(|g| gates::parse(g).map_err(bad))
        .collect::<Result<_, _>>()?;
    let opts = CapacityOptions {
        direction,
        resolution: args.resolution.unwrap_or(axis.step / 8.0),
        tolerance: match &args.model_tolerance {
            Some(t) => crate::sweep::tolerance::parse(t).map_err(bad)?,
            None => crate::sweep::tolerance::DEFAULT,
        },
        jobs: args.jobs,
        stop: Some(super::signals::signal_flag()?),
        on_probe: Some(|done, total| eprintln!("capacity: {done} of {total} grid probes done")),
    };
    let wall = std::time::Instant::now();
    let mut result = capacity::search(&base, &plan, &axis, &objectives, &opts).map_err(to_app)?;
    let probes: usize = result.configs.iter().map(|c| c.runs).sum();
    eprintln!(
        "{probes} simulator runs in {:.2} s wall",
        wall.elapsed().as_secs_f64()
    );
    if result.partial {
        // Gates and --confirm judge every config; an interrupted search has not them all.
        let dir = out_dir(&args.out, &plan.scenario.name, "capacity");
        create(&dir)?;
        write_capacity(&dir, &result)?;
        super::out::say(crate::sweep::capacity_table::table(&result))?;
        super::out::line(format!("reports: {}", dir.display()))?;
        eprintln!(
            "stormrig: the capacity search was interrupted; the reports hold the {} of {} \
             configs whose scan finished and are marked partial",
            result.configs.len(),
            plan.configs.len()
        );
        return Ok(Exit::RunFailed);
    }
    result.gates = capacity::evaluate_gates(&result, &gate_list).map_err(to_app)?;
    let dir = out_dir(&args.out, &plan.scenario.name, "capacity");
    create(&dir)?;
    write_capacity(&dir, &result)?;
    super::out::say(crate::sweep::capacity_table::table(&result))?;
    if !result.gates.is_empty() {
        super::out::say(gates::verdict_table(&result.gates))?;
    }
    let mut exit = if gates::all_passed(&result.gates) {
        Exit::Ok
    } else {
        Exit::GateFailed
    };
    if args.confirm {
        // The simulated answer is on disk first: a live run cut short still leaves it.
        confirm(&base, &plan, &mut result, &objectives)?;
        write_capacity(&dir, &result)?;
        super::out::say(crate::sweep::confirm::table(&result))?;
        if crate::sweep::confirm::any_disagreement(&result) {
            for c in &result.configs {
                for d in c.live.iter().flat_map(|l| &l.disagreements) {
                    eprintln!("live disagrees: {d}");
                }
            }
            exit = Exit::GateFailed;
        }
    }
    super::out::line(format!("reports: {}", dir.display()))?;
    Ok(exit)
}

fn write_capacity(dir: &Path, r: &CapacityResult) -> Result<(), AppError> {
    let json = serde_json::to_vec_pretty(r).map_err(failed)?;
    let io = |e: crate::report::files::FilesError| failed(e);
    crate::report::files::write_atomic(
        dir,
        "capacity.csv",
        &crate::sweep::capacity_table::csv(r).map_err(to_app)?,
    )
    .map_err(io)?;
    crate::report::files::write_atomic(dir, "capacity.json", &json).map_err(io)?;
    let html = page::capacity(r).map_err(failed)?;
    page::write(dir, "capacity.html", &html).map_err(failed)
}

/// Runs each found limit, and the value beyond its knife edge, live against the scenario's
/// target (the built-in one, or a `url` target through the counting proxy with its
/// loopback guard, as `run` does: the simulator used the `model` beside it), one run at a time
/// (two at once would share the machine and the loopback target's cores), with progress on
/// stderr: which config and value, how long the run lasts and the time spent so far; the
/// live engine's own progress (bars on a terminal, periodic lines otherwise) under it.
fn confirm(
    base: &Base,
    plan: &crate::plan::Plan,
    r: &mut CapacityResult,
    objectives: &[gates::Gate],
) -> Result<(), AppError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    let started = std::time::Instant::now();
    let axis = r.axis.clone();
    let outcome = crate::sweep::confirm::confirm(base, plan, r, objectives, |job| {
        let length = job.plan.scenario.duration + job.plan.scenario.drain;
        eprintln!(
            "confirm {}/{}: {} at {} = {} ({}), live for {:.0} s; {:.0} s elapsed",
            job.index,
            job.total,
            job.config,
            axis.path,
            axis.label(job.value),
            job.role.as_str(),
            length.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        let opts = crate::live::RunOptions {
            attempt_log: false,
            progress: true,
            abort_when: None,
            ..Default::default()
        };
        let (_tx, rx) = tokio::sync::watch::channel(false);
        rt.block_on(crate::live::run(job.plan, &opts, rx))
            .map(|o| o.result)
    });
    eprintln!("confirmed live in {:.1} s", started.elapsed().as_secs_f64());
    outcome.map_err(|e| match e {
        crate::sweep::confirm::ConfirmError::Sweep(e) => to_app(e),
        crate::sweep::confirm::ConfirmError::Live(e) => failed(e),
    })
}
