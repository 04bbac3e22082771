//! `sweep.csv` (one row per point × config, every figure a column) and `sweep.json` (the
//! whole [`SweepResult`]). Both are functions of the result alone: no time stamps, sorted
//! keys, Rust's shortest round-trip float formatting, so two runs give the same bytes.

use std::collections::BTreeSet;
use std::path::Path;

use super::run::{missing, SweepResult};
use super::SweepError;
use crate::report::files::{safe_cells, write_atomic};

pub const SWEEP_CSV: &str = "sweep.csv";
pub const SWEEP_JSON: &str = "sweep.json";

/// A figure cell: empty for "none" (a recovery that never came).
fn cell(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x}"))
}

/// The CSV text: axis columns, `config`, `recovery`, every figure (mean over seeds), then
/// with several seeds each figure's spread as `FIGURE.sd`.
pub fn csv(r: &SweepResult) -> Result<Vec<u8>, SweepError> {
    let keys: BTreeSet<&String> = r
        .points
        .iter()
        .flat_map(|p| &p.cells)
        .flat_map(|c| c.figures.keys())
        .collect();
    let with_spread = r.seeds > 1;
    let mut header: Vec<String> = r.axes.iter().map(|a| a.path.clone()).collect();
    header.push("config".into());
    header.push("recovery".into());
    header.extend(keys.iter().map(|k| k.to_string()));
    if with_spread {
        header.extend(keys.iter().map(|k| format!("{k}.sd")));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| SweepError::Io(format!("{SWEEP_CSV}: {e}"));
    w.write_record(safe_cells(&header)).map_err(err)?;
    for p in &r.points {
        for c in &p.cells {
            let mut row: Vec<String> = p.coords.iter().map(|v| format!("{v}")).collect();
            row.push(c.config.clone());
            row.push(c.recovery.as_str().into());
            for k in &keys {
                row.push(cell(
                    c.figures.get(*k).copied().unwrap_or_else(|| missing(k)),
                ));
            }
            if with_spread {
                for k in &keys {
                    row.push(cell(
                        c.spread.get(*k).copied().unwrap_or_else(|| missing(k)),
                    ));
                }
            }
            w.write_record(safe_cells(&row)).map_err(err)?;
        }
    }
    w.into_inner()
        .map_err(|e| SweepError::Io(format!("{SWEEP_CSV}: {e}")))
}

/// Writes `sweep.csv` and `sweep.json` into `dir` (which must exist).
pub fn write(dir: &Path, r: &SweepResult) -> Result<(), SweepError> {
    let json = serde_json::to_vec_pretty(r).map_err(|e| SweepError::Io(e.to_string()))?;
    write_atomic(dir, SWEEP_CSV, &csv(r)?).map_err(|e| SweepError::Io(e.to_string()))?;
    write_atomic(dir, SWEEP_JSON, &json).map_err(|e| SweepError::Io(e.to_string()))
}
