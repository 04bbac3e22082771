//! The varied fields of a sweep (`--vary PATH=FROM..TO:STEP`) and the grid of points they
//! span; each point is the scenario with those fields edited, planned through the ordinary
//! loader (so a point that makes no sense is refused exactly as a file would be).

use std::path::Path;

use serde::Serialize;

use super::edit::{self, NewValue, Seg};
use super::SweepError;
use crate::plan::{self, Plan};
use crate::scenario;

/// The most points one sweep may have, on one axis and over the whole grid: beyond it a
/// typo in STEP is likelier than intent (two axes of 1,001 and 1,000 values planned a
/// million scenarios and grew past 2.4 GB before the first run).
pub const MAX_POINTS: usize = 10_000;
/// Default ceiling on a sweep's simulations of one config (points × seeds × configs); each
/// keeps its figures until the sweep is written (`--seeds 4294967295` tried to allocate
/// 481 GB). `--max-runs` raises it.
pub const DEFAULT_MAX_RUNS: u64 = 1_000_000;

/// A duration unit a value may carry, with its length in seconds.
const UNITS: &[(&str, f64)] = &[
    ("ns", 1e-9),
    ("us", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// One varied field and its values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// The dotted path as written, e.g. `faults[0].for`.
    pub path: String,
    #[serde(skip)]
    segs: Vec<Seg>,
    /// The unit of a duration field (`s`, `ms`, ...); values are in this unit.
    pub unit: Option<String>,
    pub from: f64,
    pub to: f64,
    pub step: f64,
    /// The values, from FROM to TO (inclusive when a whole number of steps reaches it).
    pub values: Vec<f64>,
    /// The value the scenario file itself has there, when written (in the axis's unit).
    pub scenario_value: Option<f64>,
    /// Written without a decimal point: a field that is absent is written as an integer.
    #[serde(skip)]
    integer: bool,
    /// Decimals of the most precise of FROM, TO and STEP: values are rounded to them, so
    /// 0.1 + 0.2 is 0.3 as the user wrote it.
    #[serde(skip)]
    decimals: u32,
}

impl Axis {
    /// Parses `PATH=FROM..TO:STEP`; values of a duration field carry a unit (`5s..30s:5s`).
    pub fn parse(spec: &str) -> Result<Axis, SweepError> {
        let bad = |message: String| SweepError::Vary {
            spec: spec.to_string(),
            message,
        };
        let (path, range) = spec.split_once('=').ok_or_else(|| {
            bad("expected PATH=FROM..TO:STEP, e.g. load.rate=100..1000:50".into())
        })?;
        let path = path.trim();
        let segs = edit::parse_path(path).map_err(bad)?;
        let (from_to, step) = range
            .split_once(':')
            .ok_or_else(|| bad("missing :STEP after FROM..TO".into()))?;
        let (from, to) = from_to
            .split_once("..")
            .ok_or_else(|| bad("expected FROM..TO before :STEP".into()))?;
        let parts = [from.trim(), to.trim(), step.trim()];
        let mut nums = [0.0; 3];
        let mut unit: Option<&str> = None;
        let mut decimals = 0;
        let mut integer = true;
        for (i, text) in parts.iter().enumerate() {
            let (n, u) = number(text).map_err(&bad)?;
            if i > 0 && u != unit {
                return Err(bad(format!(
                    "`{text}`: FROM, TO and STEP must carry the same unit"
                )));
            }
            unit = u;
            nums[i] = n;
            let (places, fraction) = written_decimals(text);
            decimals = decimals.max(places);
            integer &= !fraction;
        }
        let [from, to, step] = nums;
        if step <= 0.0 {
            return Err(bad(format!("STEP {step} must be above 0")));
        }
        if to < from {
            return Err(bad(format!("TO {to} is below FROM {from}")));
        }
        let count = ((to - from) / step + 1e-9).floor() + 1.0;
        if count > MAX_POINTS as f64 {
            return Err(bad(format!(
                "{count} values; a sweep has at most {MAX_POINTS} points"
            )));
        }
        let round = |v: f64| {
            let p = 10f64.powi(decimals as i32);
            (v * p).round() / p
        };
        let values = (0..count as usize)
            .map(|i| round(from + i as f64 * step))
            .collect();
        Ok(Axis {
            path: path.to_string(),
            segs,
            unit: unit.map(str::to_string),
            from,
            to,
            step,
            values,
            scenario_value: None,
            integer,
            decimals,
        })
    }

    /// Seconds per unit of a duration axis.
    fn per_unit(&self) -> Option<f64> {
        let u = self.unit.as_deref()?;
        UNITS.iter().find(|(n, _)| *n == u).map(|(_, s)| *s)
    }

    /// What to write into the file for axis value `v`.
    pub fn new_value(&self, v: f64) -> NewValue {
        match self.per_unit() {
            Some(s) => NewValue::Seconds(v * s),
            None => NewValue::Number {
                value: v,
                integer: self.integer,
            },
        }
    }

    /// `v` rounded to the axis's written precision (for values bisection computes).
    pub fn round(&self, v: f64) -> f64 {
        let p = 10f64.powi(self.decimals.max(6) as i32);
        (v * p).round() / p
    }

    /// `v` as the user writes it: `600`, `0.25`, `10s`.
    pub fn label(&self, v: f64) -> String {
        format!(
            "{}{}",
            crate::report::gates::fmt_num(v),
            self.unit.as_deref().unwrap_or("")
        )
    }

    /// The axis title: the path, with its unit when it has one.
    pub fn label_unit(&self) -> String {
        match &self.unit {
            Some(u) => format!("{} ({u})", self.path),
            None => self.path.clone(),
        }
    }

    /// Notes the scenario's own value of the field, in the axis's unit.
    fn read_scenario_value(&mut self, doc: &toml_edit::DocumentMut) {
        let v = edit::get(doc, &self.segs);
        self.scenario_value = match self.per_unit() {
            Some(s) => v.map(|x| x / s),
            None => v,
        };
    }
}

/// `600`, `0.25`, `10s`, `250ms`, `1e3`, `1.5e-3s` → (number, unit). The unit is the
/// letters at the end, so an exponent's `e` is part of the number (`1e308` was refused as
/// "unknown unit `e308`").
fn number(text: &str) -> Result<(f64, Option<&str>), String> {
    let split = text
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .len();
    let (n, u) = text.split_at(split);
    let n: f64 = n
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("`{text}` is not a number"))?;
    let u = (!u.is_empty()).then_some(u);
    if let Some(u) = u {
        if !UNITS.iter().any(|(name, _)| *name == u) {
            let names: Vec<&str> = UNITS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "`{text}`: unknown unit `{u}`; known: {}",
                names.join(", ")
            ));
        }
    }
    Ok((n, u))
}

/// The decimals `text` (a number as [`number`] reads it) is written with, its exponent
/// counted (`0.25` → 2, `1e-3` → 3, `1.5e3` → 0), at most 15; and whether it has a
/// fraction at all as written (a decimal point or a negative exponent).
fn written_decimals(text: &str) -> (u32, bool) {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let (mantissa, exp) = match digits.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (digits, 0),
    };
    let frac = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i64);
    let decimals = (frac - exp).clamp(0, 15) as u32;
    (decimals, mantissa.contains('.') || exp < 0)
}

/// The scenario a sweep edits: its path (for messages and target lookup) and text.
#[derive(Debug, Clone)]
pub struct Base {
    pub path: std::path::PathBuf,
    pub text: String,
    doc: toml_edit::DocumentMut,
}

impl Base {
    /// Reads the scenario file; a file that does not load as it is is refused first.
    pub fn read(path: &Path) -> Result<(Base, Plan), SweepError> {
        let plan = plan::load(path).map_err(|e| SweepError::Scenario(e.to_string()))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| SweepError::Scenario(format!("{}: {e}", path.display())))?;
        let doc = edit::document(&text)
            .map_err(|e| SweepError::Scenario(format!("{}: {e}", path.display())))?;
        Ok((
            Base {
                path: path.to_path_buf(),
                text,
                doc,
            },
            plan,
        ))
    }

    /// Fills in each axis's scenario value.
    pub fn note_scenario_values(&self, axes: &mut [Axis]) {
        for a in axes {
            a.read_scenario_value(&self.doc);
        }
    }

    /// Whether bisection must keep to whole numbers: the field is written as an integer,
    /// or not written and the axis was given without decimals.
    pub fn is_integer_field(&self, axis: &Axis) -> bool {
        match edit::written(&self.doc, &axis.segs) {
            Some(toml_edit::Value::Integer(_)) => true,
            Some(_) => false,
            None => axis.integer && axis.unit.is_none(),
        }
    }

    /// The scenario with `axes[i]` set to `values[i]`, planned. `label` names the point in
    /// errors.
    pub fn point(&self, axes: &[Axis], values: &[f64]) -> Result<Plan, SweepError> {
        let label = point_label(axes, values);
        let mut doc = self.doc.clone();
        for (a, v) in axes.iter().zip(values) {
            edit::set(&mut doc, &a.segs, a.new_value(*v)).map_err(|message| SweepError::Point {
                point: label.clone(),
                message,
            })?;
        }
        let text = doc.to_string();
        let point_err = |message: String| SweepError::Point {
            point: label.clone(),
            message,
        };
        let scenario = scenario::parse(&self.path, &text).map_err(|e| point_err(e.to_string()))?;
        plan::build(scenario, &text).map_err(|e| point_err(e.to_string()))
    }
}

/// Refuses a grid before any point is planned: a field varied twice, more than
/// [`MAX_POINTS`] points in all, or more than `max_runs` simulations of one config
/// (`points × seeds × configs`). Each message gives the figure and how to lower or raise it.
pub fn check_size(
    axes: &[Axis],
    seeds: u32,
    configs: usize,
    max_runs: u64,
) -> Result<u64, SweepError> {
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.segs == a.segs) {
            return Err(SweepError::Usage(format!(
                "--vary {}: the same field is varied twice; give each field once",
                a.path
            )));
        }
    }
    let points = axes
        .iter()
        .fold(1u64, |n, a| n.saturating_mul(a.values.len() as u64));
    if points > MAX_POINTS as u64 {
        let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
        return Err(SweepError::Usage(format!(
            "the grid has {} points ({}), above the limit of {MAX_POINTS}; make a STEP coarser",
            points,
            sizes.join(" × ")
        )));
    }
    let runs = points
        .saturating_mul(u64::from(seeds))
        .saturating_mul(configs.max(1) as u64);
    if runs > max_runs {
        return Err(SweepError::Usage(format!(
            "{runs} simulations ({points} points × {seeds} seeds × {} configs), above the \
             ceiling of {max_runs}; lower --seeds, make a STEP coarser, or raise --max-runs",
            configs.max(1)
        )));
    }
    Ok(runs)
}

/// `load.rate=600, faults[0].for=10s`.
pub fn point_label(axes: &[Axis], values: &[f64]) -> String {
    axes.iter()
        .zip(values)
        .map(|(a, v)| format!("{}={}", a.path, a.label(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every combination of the axes' values, the first axis outermost.
pub fn combinations(axes: &[Axis]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                a.values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push(*v);
                    p
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_with_and_without_units() {
        let a = Axis::parse("faults[0].probability=0..0.5:0.1").unwrap();
        assert_eq!(a.values, vec![0.0, 0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(a.unit, None);
        let a = Axis::parse("faults[0].for=5s..20s:5s").unwrap();
        assert_eq!(a.values, vec![5.0, 10.0, 15.0, 20.0]);
        assert_eq!(a.new_value(10.0), NewValue::Seconds(10.0));
        let a = Axis::parse("load.rate=100..250:100").unwrap();
        assert_eq!(a.values, vec![100.0, 200.0]);
        assert_eq!(
            a.new_value(100.0),
            NewValue::Number {
                value: 100.0,
                integer: true
            }
        );
    }

    #[test]
    fn refuses_bad_ranges() {
        for (spec, needle) in [
            ("load.rate", "PATH=FROM..TO:STEP"),
            ("load.rate=1..5", ":STEP"),
            ("load.rate=5..1:1", "below"),
            ("load.rate=1..5:0", "above 0"),
            ("load.rate=1..5x:1", "unit"),
            ("faults[0].for=1s..5ms:1s", "same unit"),
            ("load.rate=0..1000000:1", "at most"),
        ] {
            let e = Axis::parse(spec).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn numbers_take_exponents() {
        let a = Axis::parse("load.rate=1e2..3e2:1e2").unwrap();
        assert_eq!(a.values, vec![100.0, 200.0, 300.0]);
        let a = Axis::parse("faults[0].probability=0..2e-3:1e-3").unwrap();
        assert_eq!(a.values, vec![0.0, 0.001, 0.002]);
        let a = Axis::parse("faults[0].for=1e3ms..2e3ms:1e3ms").unwrap();
        assert_eq!(a.unit.as_deref(), Some("ms"));
        assert_eq!(a.values, vec![1000.0, 2000.0]);
        // A huge range is refused for its size, not for a unit it does not have.
        let e = Axis::parse("load.rate=1..1e308:1e300")
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most"), "{e}");
        assert!(!e.contains("unit"), "{e}");
    }

    #[test]
    fn refuses_grids_too_large_or_twice_varied() {
        let a = Axis::parse("load.rate=1..1001:1").unwrap();
        let b = Axis::parse("faults[0].probability=0..0.999:0.001").unwrap();
        let e = check_size(&[a.clone(), b], 1, 1, DEFAULT_MAX_RUNS).unwrap_err();
        assert!(
            e.to_string().contains("1001000 points (1001 × 1000)"),
            "{e}"
        );
        let e = check_size(&[a.clone(), a.clone()], 1, 1, DEFAULT_MAX_RUNS).unwrap_err();
        assert!(e.to_string().contains("varied twice"), "{e}");
        let e = check_size(std::slice::from_ref(&a), u32::MAX, 5, DEFAULT_MAX_RUNS).unwrap_err();
        assert!(e.to_string().contains("21496311311475 simulations"), "{e}");
        assert!(e.to_string().contains("--max-runs"), "{e}");
        assert_eq!(check_size(&[a], 2, 5, DEFAULT_MAX_RUNS).unwrap(), 10_010);
    }

    #[test]
    fn combines_outer_first() {
        let a = Axis::parse("a=1..2:1").unwrap();
        let b = Axis::parse("b=10..30:10").unwrap();
        let c = combinations(&[a, b]);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![1.0, 10.0]);
        assert_eq!(c[3], vec![2.0, 10.0]);
    }
}
