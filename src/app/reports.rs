//! What every run shares at both ends, whichever engine ran it and for merged shards too:
//! its gates, checked against the plan's shape before any load, and at the end the gates
//! judged and every report written, with the exit code; and `diff` between two runs.

use std::path::Path;

use super::{AppError, Exit};
use crate::live;
use crate::metrics::RunResult;
use crate::plan::Plan;
use crate::report::{self, files};

/// Scenario gates plus command-line gates, parsed and checked against the configs and
/// figures the run will have (a malformed gate, an unknown config or an unknown figure is
/// bad input, refused before any load). A scenario gate's error names its file and line.
pub(super) fn gates_of(
    plan: &Plan,
    extra: &[String],
) -> Result<Vec<report::gates::Gate>, AppError> {
    let shape = blank_result(plan);
    let sc = &plan.scenario;
    let located = |i: usize, e: report::gates::GateError| {
        let field = format!("gates[{i}]");
        let line = crate::scenario::load::read_text(&sc.path)
            .ok()
            .and_then(|text| crate::scenario::locate(&text, &field))
            .unwrap_or(1);
        AppError::bad(format!("{}:{line}: {field}: {e}", sc.path.display()))
    };
    let mut gates = Vec::with_capacity(sc.gates.len() + extra.len());
    for (i, text) in sc.gates.iter().enumerate() {
        let g = report::gates::parse(text).map_err(|e| located(i, e))?;
        report::gates::evaluate(std::slice::from_ref(&g), &shape).map_err(|e| located(i, e))?;
        gates.push(g);
    }
    for text in extra {
        let g = report::gates::parse(text).map_err(|e| AppError::bad(format!("--gate: {e}")))?;
        report::gates::evaluate(std::slice::from_ref(&g), &shape)
            .map_err(|e| AppError::bad(format!("--gate: {e}")))?;
        gates.push(g);
    }
    Ok(gates)
}

/// A result of the plan's shape with every count zero: the configs, figures and layers the
/// run will report, for checking gates before the run.
fn blank_result(plan: &Plan) -> RunResult {
    use crate::metrics::{summarize, Engine, Recorder, RunShape, TargetStats};
    let sc = &plan.scenario;
    let shape = RunShape {
        load_duration: sc.duration,
        faults: &[],
        method: &sc.load.method,
    };
    let configs = plan
        .configs
        .iter()
        .map(|c| {
            let (mut summary, _) = summarize(
                &c.name,
                &c.config,
                Some(1.0),
                &Recorder::new(),
                &TargetStats::default(),
                &shape,
            );
            if !plan.layers.is_empty() {
                summary.topology_bound = Some(1.0);
                let hop = |name: &str, max_attempts| {
                    live::layer::layer_summary(name, 0, 0, 0, 0, 0, 0, max_attempts)
                };
                summary.layers.push(hop("client", c.config.max_attempts));
                for l in &plan.layers {
                    summary.layers.push(hop(&l.name, l.config.max_attempts));
                }
            }
            summary
        })
        .collect();
    RunResult {
        scenario: sc.name.clone(),
        description: String::new(),
        seed: sc.seed,
        engine: Engine::Sim,
        partial: false,
        duration_s: sc.duration.as_secs_f64(),
        drain_s: None,
        stormrig_version: String::new(),
        run: None,
        faults: Vec::new(),
        configs,
        gates: Vec::new(),
        shards: None,
        upper_bounds: Default::default(),
        timeseries: Vec::new(),
    }
}

/// Gates, files, page, console summary, exit code: the same for every engine. `aborted`
/// says the run was stopped on purpose by `--abort-on-fail` (partial, but the verdicts
/// decide the exit code).
pub(super) fn finish(
    dir: &Path,
    result: &mut RunResult,
    gates: &[report::gates::Gate],
    aborted: bool,
) -> Result<Exit, AppError> {
    // An interrupted simulation holds the configs it reached: gates on the others have
    // nothing to judge (they were checked against the plan before the run).
    let reached: Vec<report::gates::Gate> = gates
        .iter()
        .filter(|g| match &g.selector {
            report::gates::Selector::Config(name) => {
                !result.partial || result.configs.iter().any(|c| &c.name == name)
            }
            report::gates::Selector::All => true,
        })
        .cloned()
        .collect();
    let verdicts = report::gates::evaluate(&reached, result);
    let (verdicts, gate_error) = match verdicts {
        Ok(v) => (v, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    result.gates = verdicts;
    // Each file is written even when one before it failed (a full disk may still take a
    // small one); the first failure is the run's error (exit 3), after the console summary.
    let mut unwritten: Vec<String> = Vec::new();
    let mut tried = vec![
        files::write_tables(dir, result).map_err(|e| e.to_string()),
        report::html::write(dir, result, None)
            .map(drop)
            .map_err(|e| e.to_string()),
    ];
    if !gates.is_empty() {
        tried.push(report::junit::write(dir, result).map_err(|e| e.to_string()));
    }
    unwritten.extend(tried.into_iter().filter_map(Result::err));
    // Last: its presence marks the directory as a finished run, which it is not when a
    // file before it is missing.
    if unwritten.is_empty() {
        if let Err(e) = files::write_summary(dir, result) {
            unwritten.push(e.to_string());
        }
    }
    super::out::say(report::text::summary(result))?;
    if !result.gates.is_empty() {
        super::out::say(report::gates::verdict_table(&result.gates))?;
    }
    super::out::line(format!("reports: {}", dir.display()))?;
    if !unwritten.is_empty() {
        return Err(AppError::failed(format!(
            "{} report file(s) could not be written: {}",
            unwritten.len(),
            unwritten.join("; ")
        )));
    }
    if let Some(e) = gate_error {
        // Gates were checked against the plan before the run; the run happened, so this is
        // not "bad input, nothing ran".
        return Err(AppError::failed(e));
    }
    if result.partial && !aborted {
        eprintln!("stormrig: the run was interrupted; the reports are marked partial");
        return Ok(Exit::RunFailed);
    }
    Ok(if report::gates::all_passed(&result.gates) {
        Exit::Ok
    } else {
        Exit::GateFailed
    })
}

pub(super) fn diff(
    baseline: &Path,
    run: &Path,
    tolerance: &[String],
    force: bool,
    changed_only: bool,
) -> Result<Exit, AppError> {
    let opts = report::diff::parse_options(tolerance).map_err(AppError::bad)?;
    let a = files::read_data(baseline).map_err(AppError::bad)?;
    let b = files::read_data(run).map_err(AppError::bad)?;
    let m = report::diff::mismatch(&a, &b);
    if !m.fatal.is_empty() && !force {
        return Err(AppError::bad(format!(
            "the two runs are not of the same experiment ({}); pass --force to compare anyway",
            m.fatal.join("; ")
        )));
    }
    for w in m.fatal.iter().chain(&m.warnings) {
        eprintln!("warning: the runs differ in {w}");
    }
    let changes = report::diff::scenario_changes(&a, &b);
    if !changes.is_empty() {
        super::out::line("what the runs were runs of changed:")?;
        for c in &changes {
            super::out::line(format!("  {c}"))?;
        }
        super::out::line("")?;
    }
    let mut rows = report::diff::diff(&a, &b, &opts);
    let regressed = report::diff::has_regression(&rows);
    if changed_only {
        let all = rows.len();
        rows.retain(report::diff::DiffRow::changed);
        eprintln!(
            "stormrig: {} of {all} rows changed (--changed-only)",
            rows.len()
        );
    }
    super::out::say(report::diff::table(&rows))?;
    Ok(if regressed {
        Exit::GateFailed
    } else {
        Exit::Ok
    })
}
