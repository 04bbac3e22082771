//! Run-to-run diff (`stormrig diff BASELINE_DIR RUN_DIR --tolerance 10%`): per config and
//! headline figure, the baseline value, the value now, the relative change, and whether it
//! is a regression.
//!
//! Every figure has a better direction, read from the figure table
//! ([`super::figures::FIGURES`]): lower is better for all of [`HEADLINE_FIGURES`] but
//! `success_share`. A regression is a change in the worse direction by more than the
//! tolerance, relative to the baseline; when the baseline is 0 any worsening beyond
//! [`ABS_EPSILON`] counts. `null` means "never happened": for `recovery_time_s` a run that
//! never recovered where the baseline did is a regression (and the reverse an
//! improvement); for other figures a null on either side is not compared.
//!
//! Configs present in only one run are listed (status [`RowStatus::Added`] /
//! [`RowStatus::Removed`], with the one side's values) and are never regressions.

use super::figures::{self, Better};
use super::gates::{fmt_num, measure, text_table};
use crate::metrics::{ConfigSummary, RunResult};

/// An absolute change that counts as "any change" when the baseline is 0.
pub const ABS_EPSILON: f64 = 1e-9;

/// The headline figures compared, in table order.
pub const HEADLINE_FIGURES: &[&str] = &[
    "amplification",
    "peak_amplification_1s",
    "peak_concurrency",
    "downstream_arrivals",
    "retries",
    "budget_refusals",
    "failures",
    "success_share",
    "latency_ms.p50",
    "latency_ms.p99",
    "latency_ms.p999",
    "recovery_time_s",
];

/// Whether a config was compared or appears in one run only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStatus {
    Compared,
    /// Only in the new run (`baseline` is None).
    Added,
    /// Only in the baseline (`now` is None).
    Removed,
}

/// One figure of one config.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    pub config: String,
    pub figure: String,
    pub baseline: Option<f64>,
    pub now: Option<f64>,
    /// (now − baseline) / |baseline| × 100; None when either side is null, or the baseline
    /// is 0 and now is not.
    pub change_pct: Option<f64>,
    pub regression: bool,
    pub status: RowStatus,
}

/// Why a tolerance could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tolerance {text:?}: {what}")]
pub struct ToleranceError {
    pub text: String,
    pub what: String,
}

/// Reads a tolerance: `10%` → 0.10, `0.1` → 0.1. A bare number above 1 is refused as
/// ambiguous (write `10%` or `0.1`); negative and non-finite values are refused.
pub fn parse_tolerance(s: &str) -> Result<f64, ToleranceError> {
    let t = s.trim();
    let err = |what: &str| ToleranceError {
        text: s.to_string(),
        what: what.to_string(),
    };
    let (digits, pct) = match t.strip_suffix('%') {
        Some(d) => (d.trim_end(), true),
        None => (t, false),
    };
    let plain = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    let v: f64 = match digits.parse() {
        Ok(v) if plain => v,
        _ => return Err(err("expected a share such as \"10%\" or \"0.1\"")),
    };
    if !v.is_finite() || v < 0.0 {
        return Err(err("must be a finite number not below 0"));
    }
    if pct {
        Ok(v / 100.0)
    } else if v > 1.0 {
        Err(err(
            "ambiguous: write a percentage such as \"10%\" or a share such as \"0.1\"",
        ))
    } else {
        Ok(v)
    }
}

/// The value of a headline figure for one config, read as a gate reads it.
pub fn figure(c: &ConfigSummary, name: &str) -> Option<f64> {
    measure(c, name)
}

/// True for the figures where higher is better.
pub fn higher_is_better(figure: &str) -> bool {
    figures::find(figure).is_some_and(|f| f.better == Better::Higher)
}

fn compare(figure: &str, baseline: Option<f64>, now: Option<f64>, tol: f64) -> (Option<f64>, bool) {
    let (b, n) = match (baseline, now) {
        (Some(b), Some(n)) => (b, n),
        // Null = never happened; only a recovery that never came is comparable (worst).
        (Some(_), None) => return (None, figure == "recovery_time_s"),
        _ => return (None, false),
    };
    let change_pct = if b != 0.0 {
        Some((n - b) / b.abs() * 100.0)
    } else if n == 0.0 {
        Some(0.0)
    } else {
        None
    };
    let worse_by = if higher_is_better(figure) {
        b - n
    } else {
        n - b
    };
    let regression = if b != 0.0 {
        worse_by / b.abs() > tol
    } else {
        worse_by > ABS_EPSILON
    };
    (change_pct, regression)
}

/// Compares `run` with `baseline` over [`HEADLINE_FIGURES`], config by config (baseline order, then
/// configs only in `run`). `tolerance` is a share (0.1 = 10 %).
pub fn diff(baseline: &RunResult, run: &RunResult, tolerance: f64) -> Vec<DiffRow> {
    let find = |r: &'_ RunResult, name: &str| r.configs.iter().find(|c| c.name == name).cloned();
    let mut out = Vec::new();
    let mut push = |config: &str, b: Option<&ConfigSummary>, n: Option<&ConfigSummary>| {
        let status = match (b, n) {
            (Some(_), Some(_)) => RowStatus::Compared,
            (None, _) => RowStatus::Added,
            (_, None) => RowStatus::Removed,
        };
        for f in HEADLINE_FIGURES {
            let bv = b.and_then(|c| figure(c, f));
            let nv = n.and_then(|c| figure(c, f));
            let (change_pct, regression) = if status == RowStatus::Compared {
                compare(f, bv, nv, tolerance)
            } else {
                (None, false)
            };
            out.push(DiffRow {
                config: config.to_string(),
                figure: f.to_string(),
                baseline: bv,
                now: nv,
                change_pct,
                regression,
                status,
            });
        }
    };
    for b in &baseline.configs {
        let n = find(run, &b.name);
        push(&b.name, Some(b), n.as_ref());
    }
    for n in &run.configs {
        if find(baseline, &n.name).is_none() {
            push(&n.name, None, Some(n));
        }
    }
    out
}

/// True when any row is a regression.
pub fn has_regression(rows: &[DiffRow]) -> bool {
    rows.iter().any(|r| r.regression)
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "null".to_string(), fmt_num)
}

/// The diff as a plain-text table for stdout, with a closing count line.
pub fn table(rows: &[DiffRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let change = match (r.status, r.change_pct) {
                (RowStatus::Added, _) => "added".to_string(),
                (RowStatus::Removed, _) => "removed".to_string(),
                (_, Some(0.0)) => "0%".to_string(),
                (_, Some(p)) => format!("{:+.1}%", p),
                (_, None) if r.baseline == r.now => "0%".to_string(),
                (_, None) => "n/a".to_string(),
            };
            let verdict = match r.status {
                RowStatus::Compared if r.regression => "REGRESSION",
                RowStatus::Compared => "ok",
                _ => "-",
            };
            vec![
                r.config.clone(),
                r.figure.clone(),
                fmt_opt(r.baseline),
                fmt_opt(r.now),
                change,
                verdict.to_string(),
            ]
        })
        .collect();
    let mut out = text_table(
        &["CONFIG", "FIGURE", "BASELINE", "NOW", "CHANGE", "RESULT"],
        &cells,
    );
    let n = rows.iter().filter(|r| r.regression).count();
    out.push_str(&format!(
        "{n} regression{} beyond tolerance\n",
        if n == 1 { "" } else { "s" }
    ));
    out
}
