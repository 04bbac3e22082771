//! The commands that read a scenario or a preset and print what it holds, without sending
//! any load: `check`, `thresholds` and `presets`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::reports::gates_of;
use super::run::insecure_warning;
use super::{printable, AppError, Exit};
use crate::metrics::numbers::count;
use crate::plan;

pub(super) fn check(paths: &[PathBuf], strict: bool, explain: bool) -> Result<Exit, AppError> {
    let mut warned = 0;
    for p in paths {
        let plan = plan::load(p).map_err(AppError::bad)?;
        gates_of(&plan, &[])?;
        super::out::line(format!(
            "{}: ok ({}, {}, {} s)",
            printable(&p.display().to_string()),
            count(plan.configs.len(), "config"),
            count(plan.scenario.faults.len(), "fault"),
            plan.scenario.duration.as_secs_f64()
        ))?;
        if let Some(w) = insecure_warning(&plan) {
            eprintln!("{w}");
            warned += 1;
        }
        if let Some(w) = skipped_lines_warning(&plan) {
            eprintln!("{}: warning: load.file: {w}", p.display());
            warned += 1;
        }
        for (field, w) in &plan.scenario.recording_notes {
            eprintln!("{}: warning: {field}: {w}", p.display());
            warned += 1;
        }
        for w in crate::advice::warnings(&plan) {
            eprintln!(
                "{}: warning: config {}: {}",
                p.display(),
                w.config,
                w.message
            );
            warned += 1;
        }
        if explain {
            super::out::say(crate::advice::explain(&plan))?;
        }
    }
    if strict && warned > 0 {
        return Err(AppError::bad(format!(
            "{warned} warning(s), and --strict treats warnings as errors"
        )));
    }
    Ok(Exit::Ok)
}

/// `stormrig thresholds`: of one preset (`--config`), or of every config of a scenario
/// as resolved; one table per config, or JSON (one report, or a list for a scenario).
pub(super) fn thresholds(
    scenario: Option<&Path>,
    preset: Option<&str>,
    max_attempts: Option<u32>,
    seed: u64,
    json: bool,
) -> Result<Exit, AppError> {
    let mut clients = 1;
    let configs = match (scenario, preset) {
        (Some(p), _) => {
            let plan = plan::load(p).map_err(AppError::bad)?;
            clients = plan.scenario.load.clients.get();
            plan.configs.into_iter().map(|c| c.config).collect()
        }
        (None, Some(name)) => vec![crate::policy::preset(name).map_err(AppError::bad)?],
        (None, None) => return Err(AppError::bad("give a scenario file or --config PRESET")),
    };
    let reports: Vec<_> = configs
        .iter()
        .map(|c| crate::policy::thresholds::compute(c, max_attempts, seed))
        .collect();
    if json {
        let text = match (scenario, reports.as_slice()) {
            (None, [one]) => serde_json::to_string_pretty(one),
            _ => serde_json::to_string_pretty(&reports),
        };
        super::out::line(text.map_err(AppError::failed)?)?;
    } else if scenario.is_some() {
        super::out::say(thresholds_overview(&reports))?;
        if clients > 1 {
            super::out::line(format!(
                "a fleet of {clients} clients per config: each instance has its own budget, so \
                 these thresholds hold per instance unchanged; what grows {clients}-fold is the \
                 number of retries allowed before every budget is empty"
            ))?;
        }
    } else {
        for r in &reports {
            super::out::say(thresholds_table(r))?;
        }
    }
    Ok(Exit::Ok)
}

/// One row per config: the closed form (Monte Carlo) per class, or why there is none.
fn thresholds_overview(reports: &[crate::policy::ThresholdReport]) -> String {
    let mut out = format!(
        "{:<24} {:<16} {:>8}  {:<18} {:<18} {:<18}\n",
        "config", "budget", "attempts", "transient", "throttling", "timeout"
    );
    let cell = |k: &crate::policy::thresholds::KindThreshold| match (k.closed_form, k.monte_carlo) {
        (Some(c), Some(m)) => format!("{:.1} % ({:.1} %)", c * 100.0, m * 100.0),
        (Some(c), None) => format!("{:.1} %", c * 100.0),
        _ => "-".to_string(),
    };
    for r in reports {
        let _ = writeln!(
            out,
            "{:<24} {:<16} {:>8}  {:<18} {:<18} {:<18}",
            r.config,
            r.budget,
            r.max_attempts,
            cell(&r.transient),
            cell(&r.throttling),
            cell(&r.timeout)
        );
        for (kind, k) in [
            ("transient", &r.transient),
            ("throttling", &r.throttling),
            ("timeout", &r.timeout),
        ] {
            if let (None, Some(why)) = (k.closed_form, &k.reason) {
                if why != "the config has no retry budget: nothing drains" || kind == "transient" {
                    let _ = writeln!(out, "  no {kind} threshold: {why}");
                }
            }
        }
    }
    out.push_str("closed form (Monte Carlo through the real client); the budget drains when the failure rate of first attempts stays above it\n");
    out
}

fn thresholds_table(r: &crate::policy::ThresholdReport) -> String {
    let mut out = format!(
        "{} (budget {}, {} attempts): failure rate above which the budget drains on average\n",
        r.config, r.budget, r.max_attempts
    );
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1} %", v * 100.0));
    let _ = writeln!(
        out,
        "{:<11} {:>12} {:>12} {:>6}  note",
        "failures", "closed form", "monte carlo", "cost"
    );
    for (kind, k) in [
        ("transient", &r.transient),
        ("throttling", &r.throttling),
        ("timeout", &r.timeout),
    ] {
        let _ = writeln!(
            out,
            "{:<11} {:>12} {:>12} {:>6}  {}",
            kind,
            pct(k.closed_form),
            pct(k.monte_carlo),
            k.cost.map_or("-".into(), |c| format!("{c}")),
            k.reason.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(out, "{}", r.model);
    out
}

pub(super) fn presets_table() -> String {
    let mut out = String::new();
    for p in crate::policy::presets::PRESETS {
        let _ = writeln!(
            out,
            "{:<22} {}\n{:<22} source: {}\n{:<22} library: {}; checked against: {}",
            p.name, p.summary, "", p.source, "", p.library, p.checked_against
        );
    }
    out
}

/// A recording replayed without some of its lines (`load.skip_bad_lines`): said, never
/// silent.
fn skipped_lines_warning(plan: &plan::Plan) -> Option<String> {
    use crate::scenario::LoadShape;
    let (file, skipped) = match &plan.scenario.load.shape {
        LoadShape::Series {
            file,
            skipped_lines,
            ..
        }
        | LoadShape::Trace {
            file,
            skipped_lines,
            ..
        } => (file, *skipped_lines),
        _ => return None,
    };
    (skipped > 0).then(|| {
        format!(
            "{skipped} bad line(s) of {} skipped under skip_bad_lines; the replay lacks them",
            file.display()
        )
    })
}
