//! Judging each config against the baseline (see [`super::verdict`] for what a verdict
//! says and why): the figures a [`Verdict`] holds, computed from a finished run.

use super::numbers::{signed, thousands};
use super::result::{ConfigSummary, RunResult};
use super::verdict::{Verdict, DEFAULT_BASELINE};

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
