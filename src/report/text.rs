//! The short console summary printed after a run: one line per config, the figures a
//! reader looks at first.

use std::fmt::Write as _;

use crate::metrics::RunResult;

/// A plain-text table of the headline figures.
pub fn summary(run: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({:?}, seed {}, {:.1} s{})",
        run.scenario,
        run.engine,
        run.seed,
        run.duration_s,
        if run.partial { ", PARTIAL" } else { "" }
    );
    let _ = writeln!(
        out,
        "{:<22} {:>9} {:>9} {:>11} {:>7} {:>8} {:>9} {:>8} {:>8} {:>9} {:>9}",
        "config",
        "upstream",
        "attempts",
        "downstream",
        "amp",
        "peak 1s",
        "peak conc",
        "refused",
        "success",
        "p99 ms",
        "recovery"
    );
    for c in &run.configs {
        let finished = c.successes + c.failures;
        let success = if finished > 0 {
            format!("{:.1}%", 100.0 * c.successes as f64 / finished as f64)
        } else {
            "-".into()
        };
        let recovery = match (c.recovered, c.recovery_time_s) {
            (None, _) => "-".to_string(),
            (Some(true), Some(t)) => format!("{t:.0} s"),
            (Some(_), _) => "never".to_string(),
        };
        let _ = writeln!(
            out,
            "{:<22} {:>9} {:>9} {:>11} {:>6.2}× {:>7.2}× {:>9} {:>8} {:>8} {:>9.1} {:>9}",
            c.name,
            c.upstream_requests,
            c.attempts,
            c.downstream_arrivals,
            c.amplification,
            c.peak_amplification_1s,
            c.peak_concurrency,
            c.budget_refusals,
            success,
            c.latency_ms.p99,
            recovery
        );
        if !c.layers.is_empty() {
            let bound = |b: Option<f64>| b.map(|v| format!("{v:.2}×")).unwrap_or("-".into());
            let _ = writeln!(
                out,
                "  topology: worst case (K+1)^L {}, budget bound {}",
                bound(c.topology_bound),
                bound(c.amplification_bound)
            );
            for l in &c.layers {
                let _ = writeln!(
                    out,
                    "  {:<20} {:>9} arrivals {:>9} attempts {:>8} retries {:>7} refused {:>6} peak {:>6.2}× {:>7.2}× cum (max {})",
                    l.name,
                    l.arrivals,
                    l.attempts,
                    l.retries,
                    l.budget_refusals,
                    l.peak_in_flight,
                    l.amplification,
                    l.cumulative_amplification,
                    l.max_attempts
                );
            }
        }
    }
    // Thundering herds show in the worst second of retries, not in totals: give the peak per
    // 1 s slot and how much lower the calmest config kept it than the worst.
    let peaks: Vec<(&str, u64)> = run
        .configs
        .iter()
        .filter(|c| c.retries > 0)
        .map(|c| (c.name.as_str(), c.peak_retries_per_s))
        .collect();
    if peaks.len() >= 2 {
        let (hi_name, hi) = peaks
            .iter()
            .max_by_key(|p| p.1)
            .copied()
            .unwrap_or_default();
        let (lo_name, lo) = peaks
            .iter()
            .min_by_key(|p| p.1)
            .copied()
            .unwrap_or_default();
        let list: Vec<String> = peaks.iter().map(|(n, p)| format!("{n} {p}")).collect();
        let _ = write!(out, "peak retries per 1 s slot: {}", list.join(", "));
        if lo > 0 && hi > lo {
            let _ = write!(
                out,
                " ({lo_name} is {:.2}× lower than {hi_name})",
                hi as f64 / lo as f64
            );
        }
        out.push('\n');
    }
    out
}
