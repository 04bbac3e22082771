//! The capacity search's answer as a console table and as `capacity.csv`: one row per
//! config, the limit beside its knife edge and margin, and with `--confirm` the live check.

use super::capacity::{margin, CapacityResult, Direction, Outcome};
use super::SweepError;
use crate::report::files::safe_cells;
use crate::report::gates;

/// The capacity table for the console.
pub fn table(r: &CapacityResult) -> String {
    let unit = |v: f64| r.axis.label(v);
    let rows: Vec<Vec<String>> = r
        .configs
        .iter()
        .map(|c| {
            let found = match c.outcome {
                Outcome::Found { limit, beyond } => {
                    format!("{} (fails at {})", unit(limit), unit(beyond))
                }
                Outcome::Range { low, high } => {
                    format!("between {} and {} (not monotone)", unit(low), unit(high))
                }
                Outcome::HoldsEverywhere { at } => format!(
                    "{} {} (holds over the whole range)",
                    if r.direction == Direction::Largest {
                        ">="
                    } else {
                        "<="
                    },
                    unit(at)
                ),
                Outcome::HoldsNowhere => "none in range".into(),
            };
            vec![
                c.config.clone(),
                found,
                c.edge.map_or("-".into(), unit),
                margin(c).map_or("-".into(), |m| format!("{:.1} %", m * 100.0)),
                c.headroom.map_or("-".into(), |h| format!("{h:.2}×")),
                if c.binding.is_empty() {
                    "-".into()
                } else {
                    c.binding.join("; ")
                },
            ]
        })
        .collect();
    let what = match r.direction {
        Direction::Largest => format!("largest {}", r.axis.path),
        Direction::Smallest => format!("smallest {}", r.axis.path),
    };
    let mut out = crate::report::gates::text_table(
        &[
            "CONFIG",
            &what.to_uppercase(),
            "AS MODELED FAILS AT",
            "MARGIN",
            "HEADROOM",
            "BINDING OBJECTIVE",
        ],
        &rows,
    );
    if r.model_tolerance > 0.0 {
        out.push_str(&format!(
            "limits hold with the service as modeled and with every service time {} % longer \
             (--model-tolerance); margin: how far the limit lies below the first value that \
             fails as modeled, as a share of it\n",
            gates::fmt_num((r.model_tolerance * 1000.0).round() / 10.0)
        ));
    } else if r.configs.iter().any(|c| margin(c).is_some()) {
        out.push_str(
            "margin: how far the limit lies from the first failing point, as a share of it; \
             with --model-tolerance 0 the limit is a knife edge: a service that much slower \
             than its model moves it live\n",
        );
    }
    if let Some(s) = r.axis.scenario_value {
        out.push_str(&format!(
            "headroom against the scenario's {} = {}\n",
            r.axis.path,
            unit(s)
        ));
    }
    for c in &r.configs {
        if let Some(o) = &c.overloaded {
            out.push_str(&format!(
                "{}: {}; every objective fails there\n",
                c.config,
                o.describe(&r.axis)
            ));
        }
    }
    out
}

/// A `capacity.csv` number: Rust's shortest round-trip form (as `sweep.csv`), empty for
/// none.
fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x}"))
}

/// A `capacity.csv` verdict: `true`/`false`, empty when not confirmed.
fn flag(v: Option<bool>) -> String {
    v.map_or_else(String::new, |b| b.to_string())
}

/// `capacity.csv`: one row per config. With `--confirm`, `live_agrees` and, per objective
/// N (1-based, in the order given), `objective_N` (its text) and its simulated and live
/// figures at the limit and beyond the knife edge (`objective_N.sim_at_limit`, ...).
pub fn csv(r: &CapacityResult) -> Result<Vec<u8>, SweepError> {
    let mut header: Vec<String> = [
        "config",
        "field",
        "direction",
        "outcome",
        "limit",
        "beyond",
        "edge",
        "margin",
        "model_tolerance",
        "range_high",
        "scenario_value",
        "headroom",
        "binding",
        "overloaded_at",
        "overloaded_offered_rps",
        "overloaded_goodput_rps",
        "runs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let confirmed = r.configs.iter().any(|c| c.live.is_some());
    const PER_OBJECTIVE: [&str; 4] = ["sim_at_limit", "live_at_limit", "sim_beyond", "live_beyond"];
    if confirmed {
        header.extend(["live_beyond_value", "live_agrees"].map(String::from));
        for i in 1..=r.objectives.len() {
            header.push(format!("objective_{i}"));
            header.extend(PER_OBJECTIVE.iter().map(|k| format!("objective_{i}.{k}")));
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| SweepError::Io(format!("capacity.csv: {e}"));
    w.write_record(safe_cells(&header)).map_err(err)?;
    for c in &r.configs {
        let (outcome, beyond, high) = match c.outcome {
            Outcome::Found { beyond, .. } => ("found", Some(beyond), None),
            Outcome::Range { high, .. } => ("range", None, Some(high)),
            Outcome::HoldsEverywhere { .. } => ("holds-everywhere", None, None),
            Outcome::HoldsNowhere => ("holds-nowhere", None, None),
        };
        let direction = match r.direction {
            Direction::Largest => "largest",
            Direction::Smallest => "smallest",
        };
        let mut row = vec![
            c.config.clone(),
            r.axis.path.clone(),
            direction.to_string(),
            outcome.to_string(),
            num(c.limit),
            num(beyond),
            num(c.edge),
            num(margin(c)),
            num(Some(r.model_tolerance)),
            num(high),
            num(r.axis.scenario_value),
            num(c.headroom),
            c.binding.join("; "),
            num(c.overloaded.map(|o| o.value)),
            num(c.overloaded.map(|o| o.offered_rps)),
            num(c.overloaded.map(|o| o.goodput_rps)),
            c.runs.to_string(),
        ];
        if confirmed {
            let live = c.live.as_ref();
            row.push(num(live.map(|l| l.beyond)));
            row.push(flag(live.map(|l| l.agrees)));
            for text in &r.objectives {
                let o = live.and_then(|l| l.objectives.iter().find(|o| &o.objective == text));
                row.push(o.map_or_else(String::new, |o| o.objective.clone()));
                for v in [
                    o.and_then(|o| o.sim_at_limit),
                    o.and_then(|o| o.live_at_limit),
                    o.and_then(|o| o.sim_beyond),
                    o.and_then(|o| o.live_beyond),
                ] {
                    row.push(num(v));
                }
            }
        }
        w.write_record(safe_cells(&row)).map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| SweepError::Io(format!("capacity.csv: {e}")))
}
