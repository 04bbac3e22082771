//! Verdicts: what each config's retries bought, against a baseline. A config that never
//! retries must not look best for not retrying; so each config is judged by the load it
//! added (overall and during the faults) and the successes that load bought, and its
//! retries are split into useful (the request then succeeded) and wasted (it still failed).
//!
//! The baseline is the scenario's `baseline = "NAME"`, else the config named `no-retry`,
//! else none (then only the retry split is given).

use serde::{Deserialize, Serialize};

use super::result::{ConfigSummary, RunResult};

/// The config every other is judged against, unless the scenario names one.
pub const DEFAULT_BASELINE: &str = "no-retry";

/// One config against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The config judged against (`null`: no baseline in this run).
    pub baseline: Option<String>,
    /// useful_retries / retries (`null` without retries).
    pub retry_efficiency: Option<f64>,
    /// Downstream arrivals beyond the baseline's, in % of the baseline's.
    pub extra_load_pct: Option<f64>,
    /// Downstream arrivals during the fault windows beyond the baseline's, in %.
    pub fault_load_added_pct: Option<f64>,
    /// Successes beyond the baseline's (negative: fewer).
    pub extra_successes: Option<i64>,
    /// The verdict in one sentence.
    pub sentence: String,
}

/// `n` with thousands separators: 12345 → "12,345".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn signed(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "+" };
    format!("{sign}{}", thousands(n.unsigned_abs()))
}

fn pct_change(now: u64, base: u64) -> Option<f64> {
    (base > 0).then(|| 100.0 * (now as f64 - base as f64) / base as f64)
}

/// Downstream arrivals of `config` in the seconds any fault window overlaps.
fn fault_arrivals(run: &RunResult, config: &str) -> u64 {
    run.timeseries
        .iter()
        .filter(|r| r.config == config)
        .filter(|r| {
            let (a, b) = (r.second as f64, r.second as f64 + 1.0);
            run.faults.iter().any(|f| a < f.end_s && b > f.start_s)
        })
        .map(|r| r.downstream_arrivals)
        .sum()
}

/// Which config of `run` is the baseline: `named` (the scenario's choice), else `no-retry`.
pub fn baseline_of<'a>(run: &'a RunResult, named: Option<&str>) -> Option<&'a ConfigSummary> {
    let name = named.unwrap_or(DEFAULT_BASELINE);
    run.configs.iter().find(|c| c.name == name)
}

/// Judges every config of `run` against its baseline (see the module doc).
pub fn judge(run: &mut RunResult, named: Option<&str>) {
    let base = baseline_of(run, named).map(|b| {
        (
            b.name.clone(),
            b.downstream_arrivals,
            b.successes,
            fault_arrivals(run, &b.name),
        )
    });
    let verdicts: Vec<Verdict> = run
        .configs
        .iter()
        .map(|c| {
            let efficiency = (c.retries > 0).then(|| c.useful_retries as f64 / c.retries as f64);
            let mut sentence = format!(
                "{}: {} retries, {} useful",
                c.name,
                thousands(c.retries),
                thousands(c.useful_retries)
            );
            if let Some(e) = efficiency.filter(|_| c.useful_retries > 0) {
                let digits = if e < 0.1 { 1 } else { 0 };
                sentence.push_str(&format!(" ({:.*} %)", digits, e * 100.0));
            }
            let Some((name, arrivals, successes, in_faults)) = &base else {
                return Verdict {
                    baseline: None,
                    retry_efficiency: efficiency,
                    extra_load_pct: None,
                    fault_load_added_pct: None,
                    extra_successes: None,
                    sentence,
                };
            };
            let extra_load = pct_change(c.downstream_arrivals, *arrivals);
            let fault_load = pct_change(fault_arrivals(run, &c.name), *in_faults)
                .filter(|_| !run.faults.is_empty());
            let extra = c.successes as i64 - *successes as i64;
            if c.name == *name {
                sentence = format!("{}: the baseline the others are judged against", c.name);
            } else {
                let load = match (fault_load, extra_load) {
                    (Some(f), _) => format!("{f:+.0} % load during the faults"),
                    (None, Some(l)) => format!("{l:+.0} % load"),
                    (None, None) => "load against an idle baseline".into(),
                };
                sentence.push_str(&format!(
                    "; {load} for {} successes over {name}",
                    signed(extra)
                ));
                if let (Some(true), Some(offered), Some(goodput)) = (
                    c.overloaded,
                    c.pre_fault_offered_rps,
                    c.pre_fault_goodput_rps,
                ) {
                    sentence.push_str(&format!(
                        "; overloaded before the faults (goodput {} of {} req/s), \
                         so recovery is not measured",
                        thousands(goodput.round() as u64),
                        thousands(offered.round() as u64)
                    ));
                } else if let Some(t) = c.recovery_time_s {
                    sentence.push_str(&format!("; recovered {t:.0} s after the faults"));
                } else if c.recovered == Some(false) {
                    sentence.push_str("; never recovered");
                }
            }
            Verdict {
                baseline: Some(name.clone()),
                retry_efficiency: efficiency,
                extra_load_pct: extra_load,
                fault_load_added_pct: fault_load,
                extra_successes: Some(extra),
                sentence,
            }
        })
        .collect();
    for (c, v) in run.configs.iter_mut().zip(verdicts) {
        c.verdict = Some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(6000), "6,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(signed(-1500), "-1,500");
    }
}
