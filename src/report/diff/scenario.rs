//! What the two runs of a diff were runs *of*, where that changed: the scenario file, its
//! duration, its fault windows, the configs and each config's resolved policy field by
//! field. A regression read beside the edit that caused it ("aws-standard: max_attempts
//! 3 → 5") needs no archaeology; a regression with no edit beside it is the code's.

use std::collections::BTreeMap;

use crate::metrics::{FaultBand, RunResult};

/// Each difference in words, in a stable order: the file, the run's shape, configs added
/// or removed, then policy fields per config.
pub fn changes(baseline: &RunResult, run: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let sha = |r: &RunResult| r.run.as_ref().and_then(|m| m.scenario_sha256.clone());
    if let (Some(a), Some(b)) = (sha(baseline), sha(run)) {
        if a != b {
            out.push(format!(
                "scenario file: sha256 {} → {}",
                short(&a),
                short(&b)
            ));
        }
    }
    if baseline.duration_s != run.duration_s {
        out.push(format!(
            "duration: {} s → {} s",
            baseline.duration_s, run.duration_s
        ));
    }
    if baseline.drain_s != run.drain_s {
        let s = |d: Option<f64>| d.map_or("none".to_string(), |d| format!("{d} s"));
        out.push(format!(
            "drain: {} → {}",
            s(baseline.drain_s),
            s(run.drain_s)
        ));
    }
    if baseline.faults != run.faults {
        out.push(format!(
            "faults: {} → {}",
            faults(&baseline.faults),
            faults(&run.faults)
        ));
    }
    for b in &baseline.configs {
        match run.configs.iter().find(|c| c.name == b.name) {
            None => out.push(format!("config removed: {}", b.name)),
            Some(n) => {
                let (was, now) = (leaves(&b.policy), leaves(&n.policy));
                for (path, v) in &was {
                    match now.get(path) {
                        Some(w) if w == v => {}
                        Some(w) => out.push(format!("{}: {path} {v} → {w}", b.name)),
                        None => out.push(format!("{}: {path} {v} → (unset)", b.name)),
                    }
                }
                for (path, w) in now.iter().filter(|(p, _)| !was.contains_key(*p)) {
                    out.push(format!("{}: {path} (unset) → {w}", b.name));
                }
            }
        }
    }
    for n in &run.configs {
        if !baseline.configs.iter().any(|b| b.name == n.name) {
            out.push(format!("config added: {}", n.name));
        }
    }
    out
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// "503 5–15 s, latency 20–25 s at 50 %", or "none".
fn faults(bands: &[FaultBand]) -> String {
    if bands.is_empty() {
        return "none".into();
    }
    bands
        .iter()
        .map(|f| {
            let p = if f.probability < 1.0 {
                format!(" at {} %", f.probability * 100.0)
            } else {
                String::new()
            };
            format!("{} {}–{} s{p}", f.label, f.start_s, f.end_s)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every leaf of a policy object by its dotted path (`policy.backoff.base`), values as JSON
/// text; arrays are leaves (a list of statuses changes as a whole).
fn leaves(v: &serde_json::Value) -> BTreeMap<String, String> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, x) in map {
                    walk(&format!("{prefix}.{k}"), x, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("policy", v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policy_fields_are_named_by_path_both_ways() {
        let was = leaves(&json!({"max_attempts": 3, "backoff": {"base": 0.1}, "x": [1, 2]}));
        let now = leaves(&json!({"max_attempts": 5, "backoff": {"base": 0.1}}));
        assert_eq!(was["policy.max_attempts"], "3");
        assert_eq!(now["policy.max_attempts"], "5");
        assert_eq!(was["policy.backoff.base"], now["policy.backoff.base"]);
        assert_eq!(was["policy.x"], "[1,2]");
        assert!(!now.contains_key("policy.x"));
    }

    #[test]
    fn fault_windows_in_words() {
        let band = |label: &str, p| FaultBand {
            start_s: 5.0,
            end_s: 15.0,
            label: label.into(),
            probability: p,
        };
        assert_eq!(faults(&[]), "none");
        assert_eq!(
            faults(&[band("503", 1.0), band("latency", 0.5)]),
            "503 5–15 s, latency 5–15 s at 50 %"
        );
    }
}
