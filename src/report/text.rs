//! The short console summary printed after a run: one line per config, the figures a
//! reader looks at first.

use std::fmt::Write as _;

use crate::metrics::drain::PerClass;
use crate::metrics::numbers::fmt_pct;
use crate::metrics::{ConfigSummary, RunResult};
use crate::scenario::provider::NANO_PER_UNIT;

/// The widest line [`summary`] prints: it fits an 80-column terminal without wrapping.
pub const WIDTH: usize = 80;

/// Width of the config column; a longer name takes a line of its own.
const NAME: usize = 20;

/// A row of a table: the name padded to [`NAME`], or alone on its line when longer.
fn row(out: &mut String, name: &str, cells: &str) {
    if name.chars().count() > NAME {
        let _ = writeln!(out, "{name}");
        let _ = writeln!(out, "{:NAME$}{cells}", "");
    } else {
        let _ = writeln!(out, "{name:<NAME$}{cells}");
    }
}

/// A sentence wrapped to [`WIDTH`], continued lines indented.
fn prose(out: &mut String, text: &str) {
    out.push_str(&wrapped(text));
}

/// `text` wrapped to [`WIDTH`] columns, continued lines indented, each line ended: for
/// any line the CLI prints beside the tables.
pub fn wrapped(text: &str) -> String {
    let opts = textwrap::Options::new(WIDTH).subsequent_indent("  ");
    let mut out = String::new();
    for line in textwrap::wrap(text, opts) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// A plain-text summary of the headline figures, in two tables (the load the storm made,
/// then what it cost) and a few sentences; no line is wider than [`WIDTH`].
pub fn summary(run: &RunResult) -> String {
    let mut out = String::new();
    prose(
        &mut out,
        &format!(
            "{} ({:?}, seed {}, {:.1} s{})",
            run.scenario,
            run.engine,
            run.seed,
            run.duration_s,
            if run.partial { ", PARTIAL" } else { "" }
        ),
    );
    row(
        &mut out,
        "config",
        &format!(
            " {:>9} {:>9} {:>10} {:>7} {:>7} {:>9}",
            "upstream", "attempts", "downstream", "amp", "peak 1s", "peak conc"
        ),
    );
    for c in &run.configs {
        row(
            &mut out,
            &c.name,
            &format!(
                " {:>9} {:>9} {:>10} {:>6.2}× {:>6.2}× {:>9}",
                c.upstream_requests,
                c.attempts,
                c.downstream_arrivals,
                c.amplification,
                c.peak_amplification_1s,
                c.peak_concurrency,
            ),
        );
        layer_table(&mut out, c);
    }
    row(
        &mut out,
        "config",
        &format!(
            " {:>9} {:>8} {:>9} {:>9}",
            "refused", "success", "p99 ms", "recovery"
        ),
    );
    for c in &run.configs {
        let finished = c.successes + c.failures;
        let success = if finished > 0 {
            format!("{:.2} %", 100.0 * c.successes as f64 / finished as f64)
        } else {
            "-".into()
        };
        let recovery = match (c.recovered, c.recovery_time_s) {
            _ if c.overloaded == Some(true) => "overloaded".to_string(),
            (None, _) => "-".to_string(),
            (Some(true), Some(t)) => format!("{t:.0} s"),
            (Some(_), _) => "never".to_string(),
        };
        row(
            &mut out,
            &c.name,
            &format!(
                " {:>9} {:>8} {:>9.1} {:>9}",
                refused(c),
                success,
                c.latency_ms.p99,
                recovery
            ),
        );
    }
    for c in &run.configs {
        if let Some(line) = overload_line(run, c) {
            prose(&mut out, &line);
        }
    }
    for c in &run.configs {
        if let Some(line) = drain_line(c) {
            prose(&mut out, &line);
        }
    }
    for c in &run.configs {
        if let Some(line) = rejections_line(c) {
            prose(&mut out, &line);
        }
    }
    for c in &run.configs {
        if let Some(line) = providers_line(c) {
            prose(&mut out, &line);
        }
    }
    for c in &run.configs {
        provider_table(&mut out, c);
    }
    for c in &run.configs {
        class_table(&mut out, c);
    }
    for c in &run.configs {
        if let Some(v) = &c.verdict {
            prose(&mut out, &v.sentence);
        }
    }
    if let Some(line) = peak_retries_line(run) {
        prose(&mut out, &line);
    }
    if let Some(r) = super::recommend::recommend(&run.configs) {
        prose(&mut out, &r.sentence);
    }
    out
}

/// A layered config's topology bounds and one row per layer (nothing without layers).
fn layer_table(out: &mut String, c: &ConfigSummary) {
    if c.layers.is_empty() {
        return;
    }
    let bound = |b: Option<f64>| b.map(|v| format!("{v:.2}×")).unwrap_or("-".into());
    prose(
        out,
        &format!(
            "  topology: worst case (K+1)^L {}, budget bound {}",
            bound(c.topology_bound),
            bound(c.amplification_bound)
        ),
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>9} {:>9} {:>8} {:>7} {:>5} {:>6} {:>7}",
        "layer", "arrivals", "attempts", "retries", "refused", "peak", "amp", "cum"
    );
    for l in &c.layers {
        let name: String = l.name.chars().take(16).collect();
        let _ = writeln!(
            out,
            "  {:<16} {:>9} {:>9} {:>8} {:>7} {:>5} {:>5.2}× {:>6.2}×",
            name,
            l.arrivals,
            l.attempts,
            l.retries,
            l.budget_refusals,
            l.peak_in_flight,
            l.amplification,
            l.cumulative_amplification,
        );
    }
}

/// Thundering herds show in the worst second of retries, not in totals: the peak per 1 s
/// slot of each config that retried, and how much lower the calmest kept it than the worst.
fn peak_retries_line(run: &RunResult) -> Option<String> {
    let peaks: Vec<(&str, u64)> = run
        .configs
        .iter()
        .filter(|c| c.retries > 0)
        .map(|c| (c.name.as_str(), c.peak_retries_per_s))
        .collect();
    if peaks.len() < 2 {
        return None;
    }
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
    let mut line = format!("peak retries per 1 s slot: {}", list.join(", "));
    if lo > 0 && hi > lo {
        let _ = write!(
            line,
            " ({lo_name} is {:.2}× lower than {hi_name})",
            hi as f64 / lo as f64
        );
    }
    Some(line)
}

/// One line on where a config's requests were answered, for a config with failover or a
/// ladder: "failover: a 5 attempts (breaker opened 3×), b 60 attempts; degraded 60
/// (cached 36, static 24), p99 0.3 ms".
pub fn providers_line(c: &ConfigSummary) -> Option<String> {
    let mut parts = Vec::new();
    if !c.routes.is_empty() {
        let each: Vec<String> = c
            .routes
            .iter()
            .map(|r| {
                let opens = r
                    .breaker_transitions
                    .iter()
                    .filter(|t| t.to == crate::policy::BreakerState::Open)
                    .count();
                let mut notes = Vec::new();
                if opens > 0 {
                    notes.push(format!(
                        "breaker opened {}",
                        crate::metrics::numbers::count(opens, "time")
                    ));
                }
                if r.bulkhead_rejections > 0 {
                    notes.push(format!("bulkhead rejected {}", r.bulkhead_rejections));
                }
                match notes.is_empty() {
                    true => format!("{} {} attempts", r.name, r.attempts),
                    false => format!("{} {} attempts ({})", r.name, r.attempts, notes.join(", ")),
                }
            })
            .collect();
        parts.push(each.join(", "));
    }
    if let Some(d) = &c.degraded {
        let rungs: Vec<String> = d
            .rungs
            .iter()
            .map(|r| format!("{} {}", r.rung, r.requests))
            .collect();
        parts.push(format!(
            "degraded {} ({}), p99 {:.1} ms",
            d.requests,
            rungs.join(", "),
            d.latency_ms.p99
        ));
    }
    (!parts.is_empty()).then(|| format!("{}: {}", c.name, parts.join("; ")))
}

/// What a config spent in tokens and money ("llm: tokens spent 36000, wasted 24000
/// (66.7 %), 3.00× the first attempts"), then its providers as each counted itself.
fn provider_table(out: &mut String, c: &ConfigSummary) {
    if c.providers.is_empty() {
        return;
    }
    let amp = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{a:.2}×"));
    let mut line = String::new();
    if let Some(t) = &c.tokens {
        line = format!(
            "{}: tokens spent {}, wasted {} ({} %), {} the first attempts",
            c.name,
            t.spent,
            t.wasted,
            fmt_pct(t.wasted_share),
            amp(t.cost_amplification)
        );
    }
    if let Some(m) = &c.money {
        let _ = write!(
            line,
            "; money spent {:.4}, wasted {:.4} ({} %), {}",
            m.total.spent,
            m.total.wasted,
            fmt_pct(m.total.wasted_share),
            amp(m.total.cost_amplification)
        );
    }
    if line.is_empty() {
        line = format!("{}:", c.name);
    }
    prose(out, &line);
    let _ = writeln!(
        out,
        "  {:<10} {:>9} {:>6} {:>8} {:>11} {:>10} {:>6} {:>6}",
        "provider", "arrivals", "429s", "served", "tokens", "money", "RA ok", "early"
    );
    for p in &c.providers {
        let name: String = p.name.chars().take(10).collect();
        let money = p.money_nano.map_or("-".to_string(), |m| {
            format!("{:.4}", m.received as f64 / NANO_PER_UNIT)
        });
        let _ = writeln!(
            out,
            "  {:<10} {:>9} {:>6} {:>8} {:>11} {:>10} {:>6} {:>6}",
            name,
            p.arrivals,
            p.throttled,
            p.served,
            p.tokens_received,
            money,
            p.retry_after_honoured,
            p.retry_after_early
        );
    }
}

/// A config's figures per request class: what each class sent, what reached the target,
/// how many succeeded and how long its users waited.
fn class_table(out: &mut String, c: &ConfigSummary) {
    if c.classes.is_empty() {
        return;
    }
    prose(out, &format!("{}: per request class", c.name));
    let _ = writeln!(
        out,
        "  {:<12} {:>8} {:>8} {:>10} {:>6} {:>8} {:>8} {:>9}",
        "class", "requests", "attempts", "downstream", "amp", "success", "degraded", "p99 ms"
    );
    for k in &c.classes {
        let name: String = k.name.chars().take(12).collect();
        let _ = writeln!(
            out,
            "  {:<12} {:>8} {:>8} {:>10} {:>5.2}× {:>6} % {:>8} {:>9.1}",
            name,
            k.upstream_requests,
            k.attempts,
            k.downstream_arrivals,
            k.amplification,
            fmt_pct(k.success_share),
            k.degraded,
            k.latency_ms.p99
        );
    }
}

/// Retries refused by the config's own limits: by its budget, and by its cost caps (a
/// request whose next retry would pass a cap ends as `cost-cap`). Both are the client
/// holding back, and a user looking for why a capped config sent less looks here.
/// One line on a config whose bulkhead or concurrency limiter rejected attempts.
fn rejections_line(c: &ConfigSummary) -> Option<String> {
    let mut parts = Vec::new();
    if c.bulkhead_rejections > 0 {
        parts.push(format!("{} by its bulkhead", c.bulkhead_rejections));
    }
    if c.limiter_rejections > 0 {
        parts.push(format!(
            "{} by its concurrency limiter",
            c.limiter_rejections
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "{}: attempts rejected unsent {}",
        c.name,
        parts.join(", ")
    ))
}

fn refused(c: &ConfigSummary) -> u64 {
    let by_cost = c.failures_by_reason.get("cost-cap").copied().unwrap_or(0);
    c.budget_refusals + by_cost
}

/// One line on a budgeted config: where it drains, what the run observed, when it refused:
/// "aws-standard drains above 21.5 % transient failures; observed 30 % in 25–35 s; first
/// refusal 28.3 s". The class shown is the one the faults hit hardest that has a threshold.
pub fn drain_line(c: &ConfigSummary) -> Option<String> {
    let b = c.budget.as_ref()?;
    let classes = |t: &PerClass<Option<f64>>| {
        [
            ("transient", t.transient),
            ("throttling", t.throttling),
            ("timeout", t.timeout),
        ]
    };
    let rate = |w: &crate::metrics::drain::WindowRates, class: &str| match class {
        "transient" => w.failure_rate.transient,
        "throttling" => w.failure_rate.throttling,
        _ => w.failure_rate.timeout,
    };
    let with: Vec<(&str, f64)> = classes(&b.thresholds)
        .into_iter()
        .filter_map(|(k, t)| t.map(|t| (k, t)))
        .collect();
    let Some(&(class, threshold)) = with.iter().max_by(|a, b| {
        let most = |k: &str| {
            c.fault_windows
                .iter()
                .map(|w| rate(w, k))
                .fold(0.0, f64::max)
        };
        most(a.0).total_cmp(&most(b.0)).then(b.1.total_cmp(&a.1))
    }) else {
        let why = b
            .no_threshold_reasons
            .get("transient")
            .map_or("no class has a drain threshold", String::as_str);
        return Some(format!("{}: no drain threshold ({why})", c.name));
    };
    let most = c
        .fault_windows
        .iter()
        .map(|w| rate(w, class))
        .fold(0.0, f64::max);
    let unretried = c.fault_windows.iter().any(|w| w.failure_rate_all > 0.0);
    if most == 0.0 && unretried {
        let reason = b
            .no_threshold_reasons
            .get_key_value("transient")
            .or_else(|| b.no_threshold_reasons.iter().next());
        if let Some((k, why)) = reason {
            return Some(format!(
                "{}: the faults' failures do not drain its budget (no {k} threshold: {why})",
                c.name
            ));
        }
    }
    let mut line = format!(
        "{} drains above {} % {class} failures",
        c.name,
        fmt_pct(threshold)
    );
    let over = c
        .fault_windows
        .iter()
        .find(|w| rate(w, class) > threshold)
        .map(|w| (w, "observed"));
    let worst = c
        .fault_windows
        .iter()
        .max_by(|a, b| rate(a, class).total_cmp(&rate(b, class)))
        .map(|w| (w, "observed at most"));
    if let Some((w, word)) = over.or(worst) {
        line.push_str(&format!(
            "; {word} {} % in {}–{} s",
            fmt_pct(rate(w, class)),
            w.start_s,
            w.end_s
        ));
    }
    match b.first_refusal_s {
        Some(t) => line.push_str(&format!("; first refusal {t:.1} s")),
        None => line.push_str("; no retry refused"),
    }
    Some(line)
}

/// "CONFIG: overloaded before the fault: goodput 0 of 1,200 req/s offered; first attempts
/// failed 94.1 % by timeout, ...; the target received ...", for a config whose goodput was
/// already below its offered load (its recovery is not measured, so the table says no
/// more): what the target received and how first attempts failed say it was saturated, not
/// stopped.
fn overload_line(run: &RunResult, c: &ConfigSummary) -> Option<String> {
    if c.overloaded != Some(true) {
        return None;
    }
    let (offered, goodput) = (c.pre_fault_offered_rps?, c.pre_fault_goodput_rps?);
    Some(format!(
        "{}: overloaded before the fault: goodput {} of {} req/s offered{}; recovery is not \
         measured against a saturated baseline",
        c.name,
        crate::metrics::numbers::thousands(goodput.round() as u64),
        crate::metrics::numbers::thousands(offered.round() as u64),
        crate::metrics::pre_fault::PreFaultWhy::of(
            &run.timeseries,
            &run.faults,
            run.duration_s,
            &c.name
        )
        .describe(offered)
    ))
}
