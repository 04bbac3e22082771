//! The run's recommendation: which retry config did best, by what measure, and the one fact
//! that decided against each of the others.
//!
//! What it optimises, in this order: the highest success share (successes per request
//! started, `success_share`), then, among the configs that reached it, the least load added
//! to the target (amplification). The order is the point: a config that never retries adds
//! no load at all, so ranking by load first would always name it, even when it lost the
//! requests a retry would have saved. Shares are compared exactly (successes × the other's
//! requests), not within a tolerance: a tolerance would let a config that lost a few more
//! requests win on load, which is the very mistake the order is there to prevent; the
//! figures are printed beside the choice so a reader can weigh a near tie.
//!
//! A run with one config, or where no config succeeded at all, gets no recommendation.

use serde::{Deserialize, Serialize};

use crate::metrics::drain::{BudgetDrain, PerClass, WindowRates};
use crate::metrics::numbers::{fmt_pct, thousands};
use crate::metrics::ConfigSummary;

/// What the recommendation optimised, in words (also in `summary.json`).
pub const OPTIMISED: &str =
    "the highest success share, then the least load added to the target (amplification)";

/// The recommendation as `summary.json` holds it (`recommendation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// [`OPTIMISED`].
    pub optimised: String,
    /// The recommended config(s): more than one only when they tie on both measures.
    pub best: Vec<String>,
    /// The best configs' success share (0-1) and amplification.
    pub success_share: f64,
    pub amplification: f64,
    /// Every other config, in run order, with what decided against it.
    pub others: Vec<NotChosen>,
    /// The whole recommendation in one paragraph, as the console and the page print it.
    pub sentence: String,
}

/// A config not recommended, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotChosen {
    pub config: String,
    pub success_share: f64,
    pub amplification: f64,
    /// The decisive fact, as a clause: "lost 11.9 % of requests (109 more than ratio): its
    /// quota drains above ...".
    pub why: String,
}

/// A config that started requests, with its exact share.
struct Ranked<'a> {
    c: &'a ConfigSummary,
    share: f64,
}

impl Ranked<'_> {
    /// successes / upstream_requests compared without rounding: a/b vs c/d as a·d vs c·b.
    fn share_cmp(&self, other: &Self) -> std::cmp::Ordering {
        let a = u128::from(self.c.successes) * u128::from(other.c.upstream_requests);
        let b = u128::from(other.c.successes) * u128::from(self.c.upstream_requests);
        a.cmp(&b)
    }
}

/// The recommendation for a run's configs; `None` with fewer than two configs that started
/// requests, or when none succeeded.
pub fn recommend(configs: &[ConfigSummary]) -> Option<Recommendation> {
    let ranked: Vec<Ranked> = configs
        .iter()
        .filter(|c| c.upstream_requests > 0)
        .map(|c| Ranked {
            c,
            share: c.successes as f64 / c.upstream_requests as f64,
        })
        .collect();
    if ranked.len() < 2 {
        return None;
    }
    let top = ranked.iter().max_by(|a, b| a.share_cmp(b))?;
    if top.c.successes == 0 {
        return None;
    }
    let leaders: Vec<&Ranked> = ranked.iter().filter(|r| r.share_cmp(top).is_eq()).collect();
    let least = leaders
        .iter()
        .map(|r| r.c.amplification)
        .fold(f64::INFINITY, f64::min);
    let best: Vec<&Ranked> = leaders
        .iter()
        .copied()
        .filter(|r| r.c.amplification == least)
        .collect();
    let (share, amplification) = (best[0].share, least);
    let others: Vec<NotChosen> = ranked
        .iter()
        .filter(|r| !best.iter().any(|b| std::ptr::eq(b.c, r.c)))
        .map(|r| NotChosen {
            config: r.c.name.clone(),
            success_share: r.share,
            amplification: r.c.amplification,
            why: if r.share_cmp(top).is_eq() {
                format!(
                    "reached {} % too, adding more load (amplification {}× against {}×)",
                    fmt_pct(r.share),
                    amp(r.c.amplification),
                    amp(least)
                )
            } else {
                // The count beside the share: two shares printed alike can still differ.
                let more = ((best[0].share - r.share) * r.c.upstream_requests as f64).round();
                format!(
                    "lost {} % of requests ({} more than {}): {}",
                    fmt_pct(1.0 - r.share),
                    thousands(more.max(1.0) as u64),
                    best[0].c.name,
                    decisive(r.c)
                )
            },
        })
        .collect();
    let names: Vec<String> = best.iter().map(|r| r.c.name.clone()).collect();
    let mut sentence = format!(
        "Recommended: {} (optimised for {OPTIMISED}: {} % success, amplification {}×).",
        names.join(" and "),
        fmt_pct(share),
        amp(amplification)
    );
    for o in &others {
        sentence.push_str(&format!(" {} {}.", o.config, o.why));
    }
    Some(Recommendation {
        optimised: OPTIMISED.to_string(),
        best: names,
        success_share: share,
        amplification,
        others,
        sentence,
    })
}

fn amp(a: f64) -> String {
    format!("{a:.2}")
}

/// Why a config lost requests the best one kept, in the order a reader would check: its
/// budget ran dry against a failure rate above its threshold; it never retries; it was
/// already overloaded before the fault; it never recovered after it; else what most of its
/// failures were.
fn decisive(c: &ConfigSummary) -> String {
    if let Some(fact) = c.budget.as_ref().and_then(|b| drained(b, &c.fault_windows)) {
        return fact;
    }
    if c.retries == 0 && c.budget.is_none() && c.breaker_refusals == 0 {
        return "it never retries".into();
    }
    if c.overloaded == Some(true) {
        if let (Some(offered), Some(goodput)) = (c.pre_fault_offered_rps, c.pre_fault_goodput_rps) {
            return format!(
                "it was overloaded before the fault (goodput {} of {} req/s offered)",
                thousands(goodput.round().max(0.0) as u64),
                thousands(offered.round().max(0.0) as u64)
            );
        }
    }
    if c.recovered == Some(false) {
        return format!(
            "it never recovered after the fault (amplification {}×)",
            amp(c.amplification)
        );
    }
    match c.failures_by_reason.iter().max_by_key(|(_, n)| **n) {
        Some((reason, n)) if *n > 0 => format!(
            "most of its failures were {reason} ({} of {})",
            thousands(*n),
            thousands(c.failures)
        ),
        _ => format!(
            "{} of its requests did not finish",
            thousands(c.upstream_requests - c.successes)
        ),
    }
}

/// "its quota drains above 21.5 % transient failures and 29.9 % were observed", for the
/// first fault window where the budget was observed to drain with a class above its
/// threshold; `None` when it never drained so.
fn drained(b: &BudgetDrain, windows: &[WindowRates]) -> Option<String> {
    let word = if b.kind == "aws-quota" {
        "quota"
    } else {
        "budget"
    };
    b.windows.iter().filter(|d| d.drain_observed).find_map(|d| {
        let rates = windows
            .iter()
            .find(|w| w.start_s == d.start_s && w.end_s == d.end_s)?;
        d.exceeded_thresholds.iter().find_map(|class| {
            let threshold = class_of(&b.thresholds, class)??;
            let observed = class_of(&rates.failure_rate, class)?;
            Some(format!(
                "its {word} drains above {} % {class} failures and {} % were observed",
                fmt_pct(threshold),
                fmt_pct(observed)
            ))
        })
    })
}

fn class_of<T: Copy>(p: &PerClass<T>, class: &str) -> Option<T> {
    match class {
        "transient" => Some(p.transient),
        "throttling" => Some(p.throttling),
        "timeout" => Some(p.timeout),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::drain::DrainWindow;

    /// A config summary with only the figures the chooser reads set.
    fn config(name: &str, started: u64, successes: u64, amplification: f64) -> ConfigSummary {
        let mut c: ConfigSummary = serde_json::from_value(serde_json::json!({
            "name": name, "upstream_requests": started, "attempts": started, "retries": 0,
            "downstream_arrivals": started, "amplification": amplification,
            "peak_amplification_1s": amplification, "peak_concurrency": 1,
            "client_peak_in_flight": 1, "budget_refusals": 0, "first_budget_refusal_s": null,
            "breaker_refusals": 0, "successes": successes, "failures": started - successes,
            "failures_by_reason": {}, "attempts_by_outcome": {}, "dropped": 0,
            "unfinished": 0,
            "latency_ms": {"p50": 1.0, "p90": 1.0, "p99": 1.0, "p999": 1.0, "max": 1.0},
            "attempt_latency_ms": {"p50": 1.0, "p90": 1.0, "p99": 1.0, "p999": 1.0, "max": 1.0},
            "recovery_time_s": null, "recovered": null, "amplification_bound": null,
            "target_served_ok": successes, "target_shed": 0, "duplicate_executions": 0,
            "latency_curve": []
        }))
        .expect("a config summary");
        if amplification > 1.0 {
            c.retries = ((amplification - 1.0) * started as f64) as u64;
        }
        if started > successes {
            c.failures_by_reason
                .insert("timeout".into(), started - successes);
        }
        c
    }

    /// An aws-quota budget that drained in a 10-20 s window at 29.9 % transient failures.
    fn drained_quota(mut c: ConfigSummary) -> ConfigSummary {
        c.fault_windows = vec![WindowRates {
            start_s: 10.0,
            end_s: 20.0,
            label: "503".into(),
            first_attempts: 1000,
            failure_rate: PerClass {
                transient: 0.299,
                throttling: 0.0,
                timeout: 0.0,
            },
            failure_rate_all: 0.299,
        }];
        c.budget = Some(BudgetDrain {
            kind: "aws-quota".into(),
            capacity: Some(500.0),
            thresholds: PerClass {
                transient: Some(0.215),
                throttling: None,
                timeout: Some(0.4),
            },
            no_threshold_reasons: Default::default(),
            drain_start_s: Some(11.0),
            first_refusal_s: Some(12.0),
            empty_s: Some(13.0),
            refilled_s: None,
            lowest_level_pct: Some(0.0),
            windows: vec![DrainWindow {
                start_s: 10.0,
                end_s: 20.0,
                exceeded_thresholds: vec!["transient".into()],
                drain_predicted: true,
                drain_observed: true,
            }],
        });
        c
    }

    #[test]
    fn one_config_gets_no_recommendation() {
        assert_eq!(recommend(&[config("naive", 1000, 990, 1.3)]), None);
        assert_eq!(recommend(&[]), None);
    }

    #[test]
    fn nothing_succeeded_gets_no_recommendation() {
        let r = recommend(&[config("a", 100, 0, 1.0), config("b", 100, 0, 3.0)]);
        assert_eq!(r, None);
    }

    /// The config that adds no load is not best when it lost requests a retrying config
    /// kept, however small the difference.
    #[test]
    fn a_config_that_never_retries_is_not_best_for_adding_no_load() {
        let r = recommend(&[
            config("no-retry", 10_000, 9_999, 1.0),
            config("naive", 10_000, 10_000, 1.02),
        ])
        .unwrap();
        assert_eq!(r.best, ["naive"]);
        assert_eq!(r.others[0].config, "no-retry");
        assert!(
            r.others[0].why.contains("it never retries"),
            "{}",
            r.sentence
        );
        assert!(r.sentence.contains(OPTIMISED), "{}", r.sentence);
    }

    /// Among the configs with the highest share, the one that added the least load; a
    /// config that never retries and lost nothing is then rightly best.
    #[test]
    fn among_equal_shares_the_least_load_wins() {
        let r = recommend(&[
            config("naive", 1000, 1000, 3.19),
            config("ratio", 1000, 1000, 1.10),
            config("no-retry", 1000, 1000, 1.0),
        ])
        .unwrap();
        assert_eq!(r.best, ["no-retry"]);
        assert_eq!(r.others.len(), 2);
        assert!(
            r.others[0]
                .why
                .contains("adding more load (amplification 3.19× against 1.00×)"),
            "{}",
            r.sentence
        );
        // Shares are compared exactly, not by the started counts: 500/500 ties 1000/1000.
        let r = recommend(&[config("a", 500, 500, 1.5), config("b", 1000, 1000, 1.2)]).unwrap();
        assert_eq!(r.best, ["b"]);
        // A tie on both measures names both.
        let r = recommend(&[config("a", 100, 90, 1.5), config("b", 100, 90, 1.5)]).unwrap();
        assert_eq!(r.best, ["a", "b"]);
        assert!(r.others.is_empty());
    }

    /// The decisive fact of a budgeted config that drained: its threshold and the rate seen.
    #[test]
    fn a_drained_budget_names_its_threshold_and_the_observed_rate() {
        let r = recommend(&[
            drained_quota(config("aws-standard", 1000, 881, 1.2)),
            config("ratio", 1000, 990, 1.1),
        ])
        .unwrap();
        assert_eq!(r.best, ["ratio"]);
        assert_eq!(
            r.others[0].why,
            "lost 11.9 % of requests (109 more than ratio): its quota drains above 21.5 % \
             transient failures and 29.9 % were observed"
        );
    }

    /// Overloaded before the fault, and never recovered, are named before the failures'
    /// most common reason.
    #[test]
    fn overload_and_no_recovery_are_decisive_before_the_failure_reason() {
        let mut over = config("over", 1000, 500, 2.0);
        over.overloaded = Some(true);
        over.pre_fault_offered_rps = Some(762.4);
        over.pre_fault_goodput_rps = Some(0.0);
        let mut stuck = config("stuck", 1000, 600, 3.19);
        stuck.recovered = Some(false);
        let plain = config("plain", 1000, 700, 1.5);
        let r = recommend(&[over, stuck, plain, config("best", 1000, 990, 1.1)]).unwrap();
        let why: Vec<&str> = r.others.iter().map(|o| o.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "lost 50 % of requests (490 more than best): it was overloaded before the fault \
                 (goodput 0 of 762 req/s offered)",
                "lost 40 % of requests (390 more than best): it never recovered after the fault \
                 (amplification 3.19×)",
                "lost 30 % of requests (290 more than best): most of its failures were timeout \
                 (300 of 300)",
            ]
        );
    }
}
