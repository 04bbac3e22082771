//! CI gates: pass/fail checks over the figures of `summary.json`.
//!
//! # Grammar
//!
//! ```text
//! GATE     := SELECTOR ":" FIGURE OP NUMBER
//! SELECTOR := "*" | CONFIG-NAME          (everything before the first ':')
//! FIGURE   := dotted path into one config's summary.json object
//! OP       := "<" | "<=" | ">" | ">=" | "=="
//! NUMBER   := a finite decimal number, optionally followed by "%" (meaning /100; only on
//!             figures that are one thing over another: ratios, shares, percentages)
//! ```
//!
//! `%` on a count, a time or a setting is an error naming the figure's unit
//! (`budget_refusals < 10%` would otherwise compare a count with 0.1). The short forms other
//! tools use name the figures they mean ([`SHORT_FORMS`]: `p99` is `latency_ms.p99`); an
//! unknown figure that is the last part of a listed one (`max`) is suggested in full.
//!
//! A run that was cut short (interrupted, or stopped by `--abort-on-fail`) settles only the
//! verdicts more of it could not undo (an upper bound on a count already broken); every
//! other verdict is "incomplete", never a pass.
//!
//! Whitespace around every part is ignored: `aws-standard: amplification <= 1.3`,
//! `*:latency_ms.p99<800`, `naive : budget_refusals == 0`, `*: success_share >= 99.5%`.
//!
//! # Figures
//!
//! A figure is a dotted path into the JSON object of one [`ConfigSummary`] as
//! `summary.json` holds it, one of those [`super::figures::FIGURES`] lists: `amplification`,
//! `latency_ms.p99`, `failures_by_reason.budget-refused`. Arrays of objects that carry a `name` field are
//! addressed by that name, so `layers.edge.amplification` selects the object of the
//! `layers` array whose `name` is `edge`. Keys and names that themselves contain dots are
//! found too (the longest matching key wins). Besides the stored figures, the derived
//! figure `success_share` (successes / upstream_requests) is available.
//!
//! * A figure that is `null` (for example `recovery_time_s` when goodput never came back)
//!   means "never happened". It **fails** the gate whatever the operator, with
//!   `measured = None`: for an upper-bound gate such as `recovery_time_s <= 30` a recovery
//!   that never came is the worst outcome, and no bound can be shown to hold for a value
//!   that was never measured.
//! * Booleans count as 1 (true) and 0 (false): `*: recovered == 1`.
//! * A label missing from the count maps `failures_by_reason` and `attempts_by_outcome`
//!   counts as 0, because those maps only hold labels that occurred. (So a misspelt label
//!   there is not caught; every other unknown figure is an error with a suggestion.)
//! * `==` compares with a relative tolerance of 1e-9, so `amplification == 1.3` holds for
//!   the float a division produced.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use super::figures::{self, Course};
use crate::metrics::{ConfigSummary, GateVerdict, RunResult};

/// The maps of counts by label whose missing labels count as zero.
pub const COUNT_MAPS: &[&str] = &["failures_by_reason", "attempts_by_outcome"];

/// Short forms a gate may write for a figure, as other load-testing tools name them.
pub const SHORT_FORMS: &[(&str, &str)] = &[
    ("p50", "latency_ms.p50"),
    ("p90", "latency_ms.p90"),
    ("p99", "latency_ms.p99"),
    ("p999", "latency_ms.p999"),
    ("p99.9", "latency_ms.p999"),
    ("amp", "amplification"),
];

/// Name of the derived figure successes / upstream_requests.
pub const SUCCESS_SHARE: &str = "success_share";

/// One parsed gate expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The expression as written (trimmed); verdicts and errors quote it.
    pub text: String,
    pub selector: Selector,
    pub figure: String,
    pub op: Op,
    pub limit: f64,
}

/// Which configs a gate applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `*`: every config of the run.
    All,
    /// One config, by name.
    Config(String),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    /// The operator as written in a gate.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    /// Whether `measured OP limit` holds (`==` with a relative tolerance of 1e-9).
    pub fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Lt => measured < limit,
            Op::Le => measured <= limit,
            Op::Gt => measured > limit,
            Op::Ge => measured >= limit,
            Op::Eq => {
                let scale = 1f64.max(measured.abs()).max(limit.abs());
                (measured - limit).abs() <= 1e-9 * scale
            }
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a gate could not be parsed or evaluated; every message names the gate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    /// The expression does not follow the grammar.
    #[error("gate {gate:?}: {what}")]
    Syntax { gate: String, what: String },
    /// No config of the run matches the selector.
    #[error("gate {gate:?}: no config named {name:?}{}", did_you_mean(suggestion))]
    UnknownConfig {
        gate: String,
        name: String,
        suggestion: Option<String>,
    },
    /// The run has no configs at all, so a `*` gate would check nothing.
    #[error("gate {gate:?}: the run has no configs to check")]
    NoConfigs { gate: String },
    /// The figure is not in summary.json for that config.
    #[error("gate {gate:?}: unknown figure {figure:?}{}", did_you_mean(suggestion))]
    UnknownFigure {
        gate: String,
        figure: String,
        suggestion: Option<String>,
    },
    /// The figure exists but is not a number (an object, array or string).
    #[error(
        "gate {gate:?}: figure {figure:?} of config {config:?} is {kind}, not a number{}",
        did_you_mean(suggestion)
    )]
    NotANumber {
        gate: String,
        figure: String,
        config: String,
        kind: &'static str,
        suggestion: Option<String>,
    },
}

fn did_you_mean(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean {s:?}?)"),
        None => String::new(),
    }
}

const GRAMMAR: &str = "expected \"SELECTOR: FIGURE OP NUMBER\"";
const OPERATORS: &str = "expected an operator <, <=, >, >=, == after the figure";

/// Parses one gate expression (see the module docs for the grammar).
pub fn parse(text: &str) -> Result<Gate, GateError> {
    let gate = text.trim();
    let err = |what: String| GateError::Syntax {
        gate: gate.to_string(),
        what,
    };
    if gate.is_empty() {
        return Err(err(format!("empty gate expression; {GRAMMAR}")));
    }
    let Some((sel, rest)) = gate.split_once(':') else {
        return Err(err(GRAMMAR.to_string()));
    };
    let sel = sel.trim();
    let selector = match sel {
        "" => {
            return Err(err(format!(
                "missing the config selector before ':' (a config name or *); {GRAMMAR}"
            )))
        }
        "*" => Selector::All,
        name => Selector::Config(name.to_string()),
    };
    let rest = rest.trim_start();
    let fig_end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '=' | '!'))
        .unwrap_or(rest.len());
    let written = &rest[..fig_end];
    let figure = SHORT_FORMS
        .iter()
        .find(|(short, _)| *short == written)
        .map_or(written, |(_, full)| *full);
    if figure.is_empty() {
        return Err(err(format!("missing the figure after ':'; {GRAMMAR}")));
    }
    if figure.starts_with('.') || figure.ends_with('.') || figure.contains("..") {
        return Err(err(format!(
            "figure {figure:?} is not a dotted path such as \"latency_ms.p99\""
        )));
    }
    let rest = rest[fig_end..].trim_start();
    let (op, rest) = if let Some(r) = rest.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = rest.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = rest.strip_prefix("==") {
        (Op::Eq, r)
    } else if let Some(r) = rest.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Op::Gt, r)
    } else {
        return Err(err(OPERATORS.to_string()));
    };
    let num = rest.trim();
    if num.is_empty() {
        return Err(err(format!("expected a number after {:?}", op.as_str())));
    }
    let (digits, percent) = match num.strip_suffix('%') {
        Some(d) => (d.trim_end(), true),
        None => (num, false),
    };
    // Only plain decimal numbers: f64's parser would also take "inf" and "NaN".
    let plain = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    let limit = match digits.parse::<f64>() {
        Ok(v) if plain && v.is_finite() => v,
        _ => {
            return Err(err(format!(
                "expected a number after {:?}, found {num:?}",
                op.as_str()
            )))
        }
    };
    let limit = match figures::find(figure).map(|f| f.unit) {
        _ if !percent => limit,
        // A figure already in percent takes its number as written.
        Some(figures::Unit::Percent) => limit,
        Some(unit) if !unit.takes_percent() => {
            return Err(err(format!(
                "`%` applies only to ratios and shares; {figure} is {}: write the number itself",
                unit.name()
            )))
        }
        // Divide (not multiply by 0.01) so that 95% is exactly the float 0.95.
        _ => limit / 100.0,
    };
    Ok(Gate {
        text: gate.to_string(),
        selector,
        figure: figure.to_string(),
        op,
        limit,
    })
}

/// Parses several gate expressions, stopping at the first error.
pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<Gate>, GateError> {
    texts.iter().map(|t| parse(t.as_ref())).collect()
}

/// Refuses a gate whose figure the figure table does not list, with the nearest listed
/// figure as a suggestion: a run checks this before the load, so that a misspelt figure is
/// bad input (and not a verdict after the whole run).
pub fn check_figure(gate: &Gate) -> Result<(), GateError> {
    if figures::find(&gate.figure).is_some() {
        return Ok(());
    }
    // The figure a short name stands for (`max` → `latency_ms.max`), else the nearest.
    let tail = format!(".{}", gate.figure);
    let suggestion = figures::FIGURES
        .iter()
        .find(|f| f.path.ends_with(&tail))
        .map(|f| f.path.to_string())
        .or_else(|| nearest(&gate.figure, figures::FIGURES.iter().map(|f| f.path)));
    Err(GateError::UnknownFigure {
        gate: gate.text.clone(),
        figure: gate.figure.clone(),
        suggestion,
    })
}

/// successes / upstream_requests; `None` when there were no requests.
pub fn success_share(c: &ConfigSummary) -> Option<f64> {
    (c.upstream_requests > 0).then(|| c.successes as f64 / c.upstream_requests as f64)
}

/// The summary.json object of one config, plus the derived figures.
pub fn figures_of(c: &ConfigSummary) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.entry(SUCCESS_SHARE).or_insert_with(|| {
            success_share(c)
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number)
        });
    }
    v
}

/// Where a figure path led.
enum Found<'a> {
    Value(&'a Value),
    /// A label missing from a count map: zero.
    ZeroCount,
    Missing,
}

fn child<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key),
        Value::Array(a) => a
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(key)),
        _ => None,
    }
}

/// Resolves `segs` below `v`, trying the longest dotted key first at each level.
fn resolve<'a>(v: &'a Value, segs: &[&str]) -> Option<&'a Value> {
    if segs.is_empty() {
        return Some(v);
    }
    (1..=segs.len()).rev().find_map(|k| {
        let key = segs[..k].join(".");
        child(v, &key).and_then(|c| resolve(c, &segs[k..]))
    })
}

fn lookup<'a>(figures: &'a Value, figure: &str) -> Found<'a> {
    let segs: Vec<&str> = figure.split('.').collect();
    if let Some(v) = resolve(figures, &segs) {
        return Found::Value(v);
    }
    if segs.len() >= 2 && COUNT_MAPS.contains(&segs[0]) && figures.get(segs[0]).is_some() {
        return Found::ZeroCount;
    }
    Found::Missing
}

/// Every addressable leaf path below `v` (numbers, booleans and nulls): what a gate can
/// name in a config's figures, and the suggestions for one that names nothing.
pub fn leaf_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                leaf_paths(c, &join(k), out);
            }
        }
        Value::Array(a) => {
            for e in a {
                if let Some(n) = e.get("name").and_then(Value::as_str) {
                    leaf_paths(e, &join(n), out);
                }
            }
        }
        Value::String(_) => {}
        _ => {
            if !prefix.is_empty() {
                out.insert(prefix.to_string());
            }
        }
    }
}

/// The candidate closest to `wanted` by Jaro-Winkler similarity, if any is close enough.
pub fn nearest<'a, I: IntoIterator<Item = &'a str>>(wanted: &str, candidates: I) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(wanted, c), c))
        .filter(|(s, _)| *s >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
    }
}

/// A figure's number in one config's figures: `Ok(None)` for null ("never happened"),
/// `Err` with what the path led to when that is no number (`None`: nothing).
fn value_of<'a>(figures: &'a Value, figure: &str) -> Result<Option<f64>, Option<&'a Value>> {
    match lookup(figures, figure) {
        Found::ZeroCount => Ok(Some(0.0)),
        Found::Value(Value::Null) => Ok(None),
        Found::Value(Value::Bool(b)) => Ok(Some(if *b { 1.0 } else { 0.0 })),
        Found::Value(Value::Number(n)) => Ok(n.as_f64()),
        Found::Value(v) => Err(Some(v)),
        Found::Missing => Err(None),
    }
}

/// One figure of one config, as a gate reads it; `None` when it is null or no number.
pub fn measure(c: &ConfigSummary, figure: &str) -> Option<f64> {
    value_of(&figures_of(c), figure).ok().flatten()
}

/// Evaluates gates against a run: one verdict per gate per matching config, in gate order
/// then config order. Unknown configs and figures are errors naming the gate.
pub fn evaluate(gates: &[Gate], run: &RunResult) -> Result<Vec<GateVerdict>, GateError> {
    let figures: Vec<Value> = run.configs.iter().map(figures_of).collect();
    let mut out = Vec::new();
    for gate in gates {
        let matching: Vec<usize> = match &gate.selector {
            Selector::All => (0..run.configs.len()).collect(),
            Selector::Config(name) => (0..run.configs.len())
                .filter(|&i| run.configs[i].name == *name)
                .collect(),
        };
        if matching.is_empty() {
            return Err(match &gate.selector {
                Selector::All => GateError::NoConfigs {
                    gate: gate.text.clone(),
                },
                Selector::Config(name) => GateError::UnknownConfig {
                    gate: gate.text.clone(),
                    name: name.clone(),
                    suggestion: nearest(name, run.configs.iter().map(|c| c.name.as_str())),
                },
            });
        }
        for i in matching {
            let config = &run.configs[i];
            let measured = match value_of(&figures[i], &gate.figure) {
                Ok(m) => m,
                Err(Some(v)) => {
                    let mut leaves = BTreeSet::new();
                    leaf_paths(v, &gate.figure, &mut leaves);
                    return Err(GateError::NotANumber {
                        gate: gate.text.clone(),
                        figure: gate.figure.clone(),
                        config: config.name.clone(),
                        kind: kind(v),
                        suggestion: leaves.into_iter().next(),
                    });
                }
                Err(None) => {
                    let mut leaves = BTreeSet::new();
                    leaf_paths(&figures[i], "", &mut leaves);
                    return Err(GateError::UnknownFigure {
                        gate: gate.text.clone(),
                        figure: gate.figure.clone(),
                        suggestion: nearest(&gate.figure, leaves.iter().map(String::as_str)),
                    });
                }
            };
            let passed = measured.is_some_and(|m| gate.op.holds(m, gate.limit));
            // A run cut short settles only the failures that more of it could not undo.
            let settled =
                !run.partial || (!passed && measured.is_some_and(|m| can_no_longer_pass(gate, m)));
            out.push(GateVerdict {
                gate: gate.text.clone(),
                config: config.name.clone(),
                figure: gate.figure.clone(),
                op: gate.op.as_str().to_string(),
                limit: gate.limit,
                measured,
                passed: passed && settled,
                incomplete: !settled,
            });
        }
    }
    Ok(out)
}

/// True when every verdict passed (and so for no verdicts at all).
pub fn all_passed(v: &[GateVerdict]) -> bool {
    v.iter().all(|v| v.passed)
}

/// Whether `--abort-on-fail` may judge the gate before the run ends: its figure only grows,
/// or is fixed before the run ([`Course`]). Figures that go up and down are judged at the end.
pub fn may_stop_early(gate: &Gate) -> bool {
    figures::find(&gate.figure).is_some_and(|f| f.course != Course::Varies)
}

/// For `--abort-on-fail`: whether the gate can no longer pass given its figure so far. For a
/// figure that only grows, true for an upper bound already reached or passed (`<` with
/// so-far ≥ limit, `<=` or `==` with so-far > limit) and never for a lower bound, which more
/// of the run could still satisfy; for a fixed figure, true whenever the gate fails; never
/// for figures that go up and down.
pub fn can_no_longer_pass(gate: &Gate, figure_so_far: f64) -> bool {
    let Some(f) = figures::find(&gate.figure) else {
        return false;
    };
    match (f.course, gate.op) {
        (Course::Varies, _) => false,
        (Course::Fixed, op) => !op.holds(figure_so_far, gate.limit),
        (Course::OnlyGrows, Op::Lt) => figure_so_far >= gate.limit,
        (Course::OnlyGrows, Op::Le | Op::Eq) => {
            figure_so_far > gate.limit && !gate.op.holds(figure_so_far, gate.limit)
        }
        (Course::OnlyGrows, Op::Gt | Op::Ge) => false,
    }
}

/// For `--abort-on-fail`: whether some gate that applies to this config can no longer pass,
/// judged on the config's figures so far (a summary of the run up to now, built as the
/// final one is).
pub fn broken_early(gates: &[Gate], so_far: &ConfigSummary) -> bool {
    let figures = figures_of(so_far);
    gates.iter().any(|g| {
        let applies = match &g.selector {
            Selector::All => true,
            Selector::Config(name) => *name == so_far.name,
        };
        applies
            && may_stop_early(g)
            && value_of(&figures, &g.figure)
                .ok()
                .flatten()
                .is_some_and(|v| can_no_longer_pass(g, v))
    })
}

/// A number for tables and messages: integers plainly, others with up to 4 decimals.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" || s.is_empty() {
            "0".to_string()
        } else {
            s.to_string()
        }
    }
}

/// A measured value for tables and messages; `null` is spelt out.
pub fn fmt_measured(m: Option<f64>) -> String {
    m.map_or_else(|| "null (never happened)".to_string(), fmt_num)
}

/// Left-aligned plain-text table with a header rule.
pub(crate) fn text_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(c);
            if i + 1 < w.len() {
                s.push_str(&" ".repeat(w[i] - c.chars().count()));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(&mut header.iter().copied());
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    out.push_str(&line(&mut rule.iter().map(String::as_str)));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// The verdicts as a plain-text table for stdout, with a closing count line.
pub fn verdict_table(v: &[GateVerdict]) -> String {
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|v| {
            vec![
                v.gate.clone(),
                v.config.clone(),
                fmt_measured(v.measured),
                format!("{} {}", v.op, fmt_num(v.limit)),
                v.label().to_string(),
            ]
        })
        .collect();
    let mut out = text_table(&["GATE", "CONFIG", "MEASURED", "LIMIT", "RESULT"], &rows);
    let incomplete = v.iter().filter(|v| v.incomplete).count();
    let failed = v.iter().filter(|v| !v.passed).count() - incomplete;
    out.push_str(&format!(
        "{} of {} gate checks passed, {failed} failed",
        v.len() - failed - incomplete,
        v.len()
    ));
    if incomplete > 0 {
        out.push_str(&format!(
            ", {incomplete} incomplete (the run was cut short)"
        ));
    }
    out.push('\n');
    out
}
