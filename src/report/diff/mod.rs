//! Run-to-run diff (`stormrig diff BASELINE_DIR RUN_DIR`): per config and headline figure,
//! the baseline value, the value now, the change, what change the figure is allowed, and
//! whether the change is a regression.
//!
//! Two live runs of the same scenario never agree to the microsecond, so one tolerance for
//! every figure either flags noise (a p50 of 1.4 ms against 2.1 ms on a shared runner) or
//! lets a real regression through. Each figure therefore has a [`Class`] saying how much it
//! moves by itself between two runs of the same seed, and each class a default
//! [`Tolerance`]: a relative share *and* an absolute floor, both of which a change must
//! exceed in the worse direction to count. A simulator run repeats bit for bit, so two
//! simulator runs compare exactly by default.
//!
//! `null` means "never happened": for `recovery_time_s` a run that never recovered where
//! the baseline did is a regression (and the reverse an improvement); for other figures a
//! null on either side is not compared.
//!
//! Configs present in only one run are listed (status [`RowStatus::Added`] /
//! [`RowStatus::Removed`], with the one side's values) and are never regressions.

use std::collections::BTreeMap;

mod scenario;
pub use scenario::changes as scenario_changes;

use super::figures::{self, Better};
use super::gates::{fmt_num, measure, text_table};
use crate::metrics::{ConfigSummary, Engine, RunResult};

/// An absolute change that counts as "any change": what "exact" allows for float noise.
pub const ABS_EPSILON: f64 = 1e-9;

/// How much a figure moves by itself between two runs of the same scenario and seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Fixed by the seed: the arrival schedule and the fault draws are hashes of (seed,
    /// request, attempt). Live, a count of a config whose decisions do not depend on timing
    /// (see [`timing_free`]) can still differ by the few attempts that land on the other
    /// side of a fault window's edge, judged by the target's clock.
    Seeded,
    /// A count or ratio that timing moves a little: how many retries a budget allowed
    /// depends on the order outcomes reached it.
    Timed,
    /// A count that timing moves a lot: refusals and failures are small differences of
    /// large counts; peaks depend on a few milliseconds.
    Volatile,
    /// A latency percentile in milliseconds with enough requests behind it (p50, p99).
    Latency,
    /// A far-tail latency (p999): a few requests of a run decide it, so two live runs can
    /// differ by several times. Shown, never a regression live unless a tolerance names it.
    Tail,
    /// A share of requests, 0 to 1.
    Share,
    /// A time in seconds, on the 1 s grid of the time series.
    Seconds,
}

/// A change counts as a regression when it is worse than *both* `relative` × |baseline|
/// and `absolute` (in the figure's own unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub relative: f64,
    pub absolute: f64,
}

impl Tolerance {
    pub const EXACT: Tolerance = Tolerance {
        relative: 0.0,
        absolute: ABS_EPSILON,
    };
    pub const UNGATED: Tolerance = Tolerance {
        relative: f64::INFINITY,
        absolute: f64::INFINITY,
    };

    fn allows(&self, baseline: f64, worse_by: f64) -> bool {
        worse_by <= (self.relative * baseline.abs()).max(self.absolute)
    }

    /// "±20 % ≥2", "exact", "±0.1 %".
    pub fn describe(&self) -> String {
        if self.relative == 0.0 && self.absolute <= ABS_EPSILON {
            return "exact".into();
        }
        if self.absolute == f64::INFINITY {
            return "not gated".into();
        }
        let mut s = String::new();
        if self.relative > 0.0 {
            s.push_str(&format!("±{} %", fmt_num(self.relative * 100.0)));
        }
        if self.absolute > ABS_EPSILON {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&format!("≥{}", fmt_num(self.absolute)));
        }
        s
    }
}

/// One headline figure: its name (a path into a config's `summary.json` object, as the
/// figure table [`figures::FIGURES`] lists it, which also says which way is better) and its
/// noise class.
#[derive(Debug, Clone, Copy)]
pub struct Headline {
    pub name: &'static str,
    /// The class of a budget-less, timer-free config's figure (see [`timing_free`]);
    /// `Seeded` figures of other configs are [`Class::Timed`].
    pub class: Class,
}

const fn fig(name: &'static str, class: Class) -> Headline {
    Headline { name, class }
}

/// The headline figures compared, in table order.
pub const HEADLINES: &[Headline] = &[
    fig("upstream_requests", Class::Seeded),
    fig("attempts", Class::Seeded),
    fig("retries", Class::Seeded),
    fig("downstream_arrivals", Class::Seeded),
    fig("amplification", Class::Seeded),
    fig("peak_amplification_1s", Class::Volatile),
    fig("peak_concurrency", Class::Volatile),
    fig("budget_refusals", Class::Volatile),
    fig("failures", Class::Volatile),
    fig("success_share", Class::Share),
    fig("latency_ms.p50", Class::Latency),
    fig("latency_ms.p99", Class::Latency),
    fig("latency_ms.p999", Class::Tail),
    fig("recovery_time_s", Class::Seconds),
];

/// The tolerance a class gets by default when both runs are live.
pub fn live_default(class: Class) -> Tolerance {
    let t = |relative, absolute| Tolerance { relative, absolute };
    match class {
        // Measured on the main job, six live runs on a loaded 2-core machine diffed pairwise:
        // naive's retries 5997 to 6003 (window edges), envoy's refusals 363 to 455, peak
        // concurrency 3 to 14, p99 14 to 24 ms, p999 17 to 95 ms.
        Class::Seeded => t(0.005, 0.0),
        Class::Timed => t(0.05, 10.0),
        Class::Volatile => t(0.25, 20.0),
        Class::Latency => t(0.25, 10.0),
        Class::Tail => Tolerance::UNGATED,
        Class::Share => t(0.0, 0.01),
        Class::Seconds => t(0.20, 1.0),
    }
}

/// What a relative count tolerance means for a ratio figure: its absolute floor is a count
/// for counts and meaningless for ratios, so ratios keep only the relative part.
fn is_ratio(figure: &str) -> bool {
    matches!(figure, "amplification" | "peak_amplification_1s")
}

/// Whether a config's number of attempts is decided by the seed alone: no budget, no
/// breaker, no deadline, no per-try timeout and no backoff, so nothing a clock says can
/// change whether or when it retries. Read from the resolved policy in `summary.json`.
pub fn timing_free(policy: &serde_json::Value) -> bool {
    let kind = |k: &str| {
        policy
            .get(k)
            .and_then(|v| v.get("kind"))
            .and_then(|v| v.as_str())
    };
    let absent = |k: &str| policy.get(k).is_none_or(serde_json::Value::is_null);
    kind("budget").is_none_or(|k| k == "none")
        && kind("backoff").is_none_or(|k| k == "none")
        && absent("breaker")
        && absent("deadline")
        && absent("per_try_timeout")
}

/// How a diff is judged: overrides given on the command line over the engine's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiffOptions {
    /// `--tolerance 10%`: this relative tolerance for every figure (absolute floors kept).
    pub all: Option<f64>,
    /// `--tolerance FIGURE=…`: this figure's tolerance, whatever its class.
    pub per_figure: BTreeMap<String, Tolerance>,
}

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
    /// The change this figure was allowed (None for rows not compared).
    pub tolerance: Option<Tolerance>,
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

/// Reads a relative tolerance: `10%` → 0.10, `0.1` → 0.1. A bare number above 1 is refused
/// as ambiguous (write `10%` or `0.1`); negative and non-finite values are refused.
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
    let v =
        parse_plain(digits).ok_or_else(|| err("expected a share such as \"10%\" or \"0.1\""))?;
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

fn parse_plain(digits: &str) -> Option<f64> {
    let plain = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    digits.parse().ok().filter(|_| plain)
}

/// Reads every `--tolerance` argument: `10%` (all figures) or `FIGURE=10%` or
/// `FIGURE=10%,5` (relative share and absolute floor in the figure's unit; `FIGURE=0`
/// means exact). A figure outside [`HEADLINES`] is refused with the list.
pub fn parse_options(args: &[String]) -> Result<DiffOptions, ToleranceError> {
    let mut o = DiffOptions::default();
    for a in args {
        let Some((name, value)) = a.split_once('=') else {
            o.all = Some(parse_tolerance(a)?);
            continue;
        };
        let name = name.trim();
        if !HEADLINES.iter().any(|f| f.name == name) {
            let names: Vec<_> = HEADLINES.iter().map(|f| f.name).collect();
            return Err(ToleranceError {
                text: a.clone(),
                what: format!("unknown figure {name:?}; one of {}", names.join(", ")),
            });
        }
        let (rel, abs) = match value.split_once(',') {
            Some((r, a2)) => (r, Some(a2.trim())),
            None => (value, None),
        };
        let relative = parse_tolerance(rel).map_err(|e| ToleranceError {
            text: a.clone(),
            what: e.what,
        })?;
        let absolute = match abs {
            None => ABS_EPSILON,
            Some(x) => parse_plain(x)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| ToleranceError {
                    text: a.clone(),
                    what: format!("absolute floor {x:?}: expected a number not below 0"),
                })?
                .max(ABS_EPSILON),
        };
        o.per_figure
            .insert(name.to_string(), Tolerance { relative, absolute });
    }
    Ok(o)
}

/// What differs between the two runs beyond their figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mismatch {
    /// Differences that make the comparison meaningless (another scenario, another engine):
    /// refused unless forced.
    pub fatal: Vec<String>,
    /// Differences worth a warning (another seed, another stormrig version).
    pub warnings: Vec<String>,
}

/// Compares what the two runs were runs *of*.
pub fn mismatch(baseline: &RunResult, run: &RunResult) -> Mismatch {
    let mut m = Mismatch::default();
    if baseline.scenario != run.scenario {
        m.fatal.push(format!(
            "scenario: baseline {:?}, run {:?}",
            baseline.scenario, run.scenario
        ));
    }
    if baseline.engine != run.engine {
        m.fatal.push(format!(
            "engine: baseline {}, run {}",
            baseline.engine.as_str(),
            run.engine.as_str()
        ));
    }
    if baseline.seed != run.seed {
        m.warnings.push(format!(
            "seed: baseline {}, run {} (counts fixed by the seed are compared as timed counts)",
            baseline.seed, run.seed
        ));
    }
    if baseline.stormrig_version != run.stormrig_version {
        m.warnings.push(format!(
            "stormrig version: baseline {}, run {}",
            baseline.stormrig_version, run.stormrig_version
        ));
    }
    m
}

/// The value of a headline figure for one config, read as a gate reads it.
pub fn figure(c: &ConfigSummary, name: &str) -> Option<f64> {
    measure(c, name)
}

/// Which way is better for a figure, from the figure table.
fn better(figure: &str) -> Better {
    figures::find(figure).map_or(Better::Neither, |f| f.better)
}

/// True for the figures where higher is better.
pub fn higher_is_better(figure: &str) -> bool {
    better(figure) == Better::Higher
}

/// The tolerance one figure of one config gets in this comparison.
fn tolerance_for(
    f: &Headline,
    both_sim: bool,
    seeded_holds: bool,
    opts: &DiffOptions,
) -> Tolerance {
    if let Some(t) = opts.per_figure.get(f.name) {
        return *t;
    }
    let mut t = if both_sim {
        Tolerance::EXACT
    } else {
        let class = match f.class {
            Class::Seeded if !seeded_holds => Class::Timed,
            c => c,
        };
        live_default(class)
    };
    if is_ratio(f.name) {
        t.absolute = t.absolute.min(ABS_EPSILON);
    }
    if let Some(rel) = opts.all {
        if t == Tolerance::UNGATED {
            t.absolute = ABS_EPSILON;
        }
        t.relative = rel;
    }
    t
}

fn compare(
    f: &Headline,
    baseline: Option<f64>,
    now: Option<f64>,
    tol: Tolerance,
) -> (Option<f64>, bool) {
    let (b, n) = match (baseline, now) {
        (Some(b), Some(n)) => (b, n),
        // Null = never happened; only a recovery that never came is comparable (worst).
        (Some(_), None) => return (None, f.name == "recovery_time_s"),
        _ => return (None, false),
    };
    let change_pct = if b != 0.0 {
        Some((n - b) / b.abs() * 100.0)
    } else if n == 0.0 {
        Some(0.0)
    } else {
        None
    };
    // A figure with no better direction (the upstream count) is worse for any change.
    let worse_by = match better(f.name) {
        Better::Higher => b - n,
        Better::Lower => n - b,
        Better::Neither => (n - b).abs(),
    };
    (change_pct, !tol.allows(b, worse_by))
}

/// Compares `run` with `baseline` over [`HEADLINES`], config by config (baseline order, then
/// configs only in `run`).
pub fn diff(baseline: &RunResult, run: &RunResult, opts: &DiffOptions) -> Vec<DiffRow> {
    let both_sim = baseline.engine == Engine::Sim && run.engine == Engine::Sim;
    let same_seed = baseline.seed == run.seed;
    let find = |r: &'_ RunResult, name: &str| r.configs.iter().find(|c| c.name == name).cloned();
    let mut out = Vec::new();
    let mut push = |config: &str, b: Option<&ConfigSummary>, n: Option<&ConfigSummary>| {
        let status = match (b, n) {
            (Some(_), Some(_)) => RowStatus::Compared,
            (None, _) => RowStatus::Added,
            (_, None) => RowStatus::Removed,
        };
        let seeded_holds = same_seed
            && b.is_some_and(|c| timing_free(&c.policy))
            && n.is_some_and(|c| timing_free(&c.policy));
        for f in HEADLINES {
            let bv = b.and_then(|c| figure(c, f.name));
            let nv = n.and_then(|c| figure(c, f.name));
            let (tolerance, change_pct, regression) = if status == RowStatus::Compared {
                let t = tolerance_for(f, both_sim, seeded_holds, opts);
                let (c, r) = compare(f, bv, nv, t);
                (Some(t), c, r)
            } else {
                (None, None, false)
            };
            out.push(DiffRow {
                config: config.to_string(),
                figure: f.name.to_string(),
                baseline: bv,
                now: nv,
                change_pct,
                tolerance,
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

impl DiffRow {
    /// Whether the row shows a change worth reading: a regression, a config on one side
    /// only, or a figure that moved at all (`--changed-only` keeps these).
    pub fn changed(&self) -> bool {
        self.regression
            || self.status != RowStatus::Compared
            || match (self.baseline, self.now) {
                (Some(b), Some(n)) => (n - b).abs() > ABS_EPSILON,
                (b, n) => b.is_some() != n.is_some(),
            }
    }
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
                (_, Some(0.0)) => "0 %".to_string(),
                (_, Some(p)) => format!("{:+.1} %", p),
                (_, None) if r.baseline == r.now => "0 %".to_string(),
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
                r.tolerance.map_or_else(|| "-".into(), |t| t.describe()),
                verdict.to_string(),
            ]
        })
        .collect();
    let mut out = text_table(
        &[
            "CONFIG", "FIGURE", "BASELINE", "NOW", "CHANGE", "ALLOWED", "RESULT",
        ],
        &cells,
    );
    let n = rows.iter().filter(|r| r.regression).count();
    out.push_str(&format!(
        "{n} regression{} beyond tolerance\n",
        if n == 1 { "" } else { "s" }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headlines_are_figures_with_a_direction() {
        for h in HEADLINES {
            let f = figures::find(h.name)
                .unwrap_or_else(|| panic!("{} is not in the figure table", h.name));
            // Only the upstream count has no better side: diff flags any change of it.
            assert!(
                f.better != Better::Neither || h.name == "upstream_requests",
                "{}: diff needs a better direction",
                h.name
            );
        }
    }
}
