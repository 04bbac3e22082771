//! Every figure of one config's `summary.json` object, in one table: its unit, which way is
//! better, and how it moves while a run goes on.
//!
//! Gates may name exactly the figures listed here (`stormrig run` and `sim` refuse any other
//! before the load starts); `--abort-on-fail` stops a live run early on a gate whose figure
//! can no longer come back ([`Course::OnlyGrows`], [`Course::Fixed`]); `stormrig diff` calls a
//! change a regression by [`Better`]. A test walks every number of real summaries and fails on
//! one this table does not list, so a new figure cannot be left out of any of the three.
//!
//! A path is dotted as in a gate. `*` stands for one or more segments: a label of a count map
//! (`failures_by_reason.*`), a layer's name (`layers.*.attempts`, names may hold dots), or
//! any setting of the resolved retry config (`policy.*`).

/// What a figure counts or measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Logical requests, as the load generator started them (or executed them, at the target).
    Requests,
    /// HTTP requests on the wire (first tries and retries), or retries refused before sending.
    Attempts,
    /// Attempts in one second.
    AttemptsPerSecond,
    /// Logical requests in one second (offered load, goodput).
    RequestsPerSecond,
    /// One count over another: 2.0 = twice as many.
    Ratio,
    /// A part of a whole, 0 to 1.
    Share,
    /// A part of a whole or a change, in % (100 = all of it, or doubled).
    Percent,
    Milliseconds,
    Seconds,
    /// What write requests debited, in the requests' own amounts.
    Amount,
    /// LLM tokens (prompt + completion), as providers count them.
    Tokens,
    /// Money at the providers' prices, in the scenario's own (unnamed) currency.
    Money,
    /// Billionths of a money unit: the exact counts money figures are made from.
    MoneyNano,
    /// true (1) or false (0).
    Flag,
    /// A value of the retry config itself.
    Setting,
}

impl Unit {
    /// The unit in words, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Requests => "a count of requests",
            Attempts => "a count of attempts",
            AttemptsPerSecond => "attempts per second",
            RequestsPerSecond => "requests per second",
            Ratio => "a ratio",
            Share => "a share",
            Percent => "percent",
            Milliseconds => "milliseconds",
            Seconds => "seconds",
            Amount => "an amount",
            Tokens => "a count of tokens",
            Money => "an amount of money",
            MoneyNano => "an amount of money in billionths",
            Flag => "a flag (0 or 1)",
            Setting => "a setting",
        }
    }

    /// Whether a limit may be written with `%`: only for one thing over another.
    pub fn takes_percent(self) -> bool {
        matches!(self, Ratio | Share | Percent)
    }
}

/// Which way a figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// A description of the load or the config, not a quality.
    Neither,
}

/// How a figure moves while a run goes on: what `--abort-on-fail` may conclude from it early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Course {
    /// Never goes down (a count, or a running peak): a gate bounding it from above that is
    /// broken mid-run can never pass again.
    OnlyGrows,
    /// Known before the first request (settings and bounds): a gate on it that fails mid-run
    /// fails at the end too.
    Fixed,
    /// Goes up and down until the run ends (ratios, percentiles, times): judged at the end.
    Varies,
}

/// One row of [`FIGURES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    pub path: &'static str,
    pub unit: Unit,
    pub better: Better,
    pub course: Course,
}

const fn row(path: &'static str, unit: Unit, better: Better, course: Course) -> Figure {
    Figure {
        path,
        unit,
        better,
        course,
    }
}

use Better::{Higher, Lower, Neither};
use Course::{Fixed, OnlyGrows, Varies};
use Unit::*;

/// The figures of one config, in `summary.json` order, plus the derived `success_share`.
#[rustfmt::skip]
pub const FIGURES: &[Figure] = &[
    //   path                                  unit               better   course
    row("upstream_requests",                   Requests,          Neither, OnlyGrows),
    row("attempts",                            Attempts,          Lower,   OnlyGrows),
    row("retries",                             Attempts,          Lower,   OnlyGrows),
    row("downstream_arrivals",                 Attempts,          Lower,   OnlyGrows),
    row("amplification",                       Ratio,             Lower,   Varies),
    row("peak_amplification_1s",               Ratio,             Lower,   Varies),
    row("peak_concurrency",                    Attempts,          Lower,   OnlyGrows),
    row("client_peak_in_flight",               Requests,          Neither, OnlyGrows),
    row("budget_refusals",                     Attempts,          Lower,   OnlyGrows),
    row("first_budget_refusal_s",              Seconds,           Higher,  Varies),
    row("breaker_refusals",                    Attempts,          Lower,   OnlyGrows),
    row("successes",                           Requests,          Higher,  OnlyGrows),
    row("failures",                            Requests,          Lower,   OnlyGrows),
    row("failures_by_reason.*",                Requests,          Lower,   OnlyGrows),
    row("attempts_by_outcome.*",               Attempts,          Neither, OnlyGrows),
    row("dropped",                             Requests,          Lower,   OnlyGrows),
    row("unfinished",                          Requests,          Lower,   Varies),
    row("latency_ms.p50",                      Milliseconds,      Lower,   Varies),
    row("latency_ms.p90",                      Milliseconds,      Lower,   Varies),
    row("latency_ms.p99",                      Milliseconds,      Lower,   Varies),
    row("latency_ms.p999",                     Milliseconds,      Lower,   Varies),
    row("latency_ms.max",                      Milliseconds,      Lower,   OnlyGrows),
    row("success_latency_ms.p50",              Milliseconds,      Lower,   Varies),
    row("success_latency_ms.p90",              Milliseconds,      Lower,   Varies),
    row("success_latency_ms.p99",              Milliseconds,      Lower,   Varies),
    row("success_latency_ms.p999",             Milliseconds,      Lower,   Varies),
    row("success_latency_ms.max",              Milliseconds,      Lower,   OnlyGrows),
    row("failure_latency_ms.p50",              Milliseconds,      Lower,   Varies),
    row("failure_latency_ms.p90",              Milliseconds,      Lower,   Varies),
    row("failure_latency_ms.p99",              Milliseconds,      Lower,   Varies),
    row("failure_latency_ms.p999",             Milliseconds,      Lower,   Varies),
    row("failure_latency_ms.max",              Milliseconds,      Lower,   OnlyGrows),
    row("attempt_latency_ms.p50",              Milliseconds,      Lower,   Varies),
    row("attempt_latency_ms.p90",              Milliseconds,      Lower,   Varies),
    row("attempt_latency_ms.p99",              Milliseconds,      Lower,   Varies),
    row("attempt_latency_ms.p999",             Milliseconds,      Lower,   Varies),
    row("attempt_latency_ms.max",              Milliseconds,      Lower,   OnlyGrows),
    row("recovery_time_s",                     Seconds,           Lower,   Varies),
    row("recovered",                           Flag,              Higher,  Varies),
    row("overloaded",                          Flag,              Lower,   Varies),
    row("pre_fault_offered_rps",               RequestsPerSecond, Neither, Varies),
    row("pre_fault_goodput_rps",               RequestsPerSecond, Higher,  Varies),
    row("amplification_bound",                 Ratio,             Neither, Fixed),
    row("target_served_ok",                    Attempts,          Higher,  OnlyGrows),
    row("target_shed",                         Attempts,          Lower,   OnlyGrows),
    row("target_shed_by_reason.*",             Attempts,          Lower,   OnlyGrows),
    row("target_forwarded",                    Attempts,          Neither, OnlyGrows),
    row("target_unreached",                    Attempts,          Lower,   OnlyGrows),
    row("proxy_answered.*",                    Attempts,          Lower,   OnlyGrows),
    row("relayed_resets.*",                    Attempts,          Lower,   OnlyGrows),
    row("duplicate_executions",                Requests,          Lower,   OnlyGrows),
    row("executions",                          Requests,          Neither, OnlyGrows),
    row("extra_executions",                    Requests,          Lower,   OnlyGrows),
    row("debited",                             Amount,            Neither, OnlyGrows),
    row("extra_debited",                       Amount,            Lower,   OnlyGrows),
    row("dedup_replays",                       Attempts,          Neither, OnlyGrows),
    row("dedup_conflicts",                     Attempts,          Neither, OnlyGrows),
    row("dedup_mismatches",                    Attempts,          Neither, OnlyGrows),
    row("layers.*.arrivals",                   Attempts,          Lower,   OnlyGrows),
    row("layers.*.attempts",                   Attempts,          Lower,   OnlyGrows),
    row("layers.*.retries",                    Attempts,          Lower,   OnlyGrows),
    row("layers.*.budget_refusals",            Attempts,          Lower,   OnlyGrows),
    row("layers.*.peak_in_flight",             Attempts,          Lower,   OnlyGrows),
    row("layers.*.amplification",              Ratio,             Lower,   Varies),
    row("layers.*.cumulative_amplification",   Ratio,             Lower,   Varies),
    row("layers.*.max_attempts",               Setting,           Neither, Fixed),
    row("topology_bound",                      Ratio,             Neither, Fixed),
    row("peak_retries_per_s",                  AttemptsPerSecond, Lower,   OnlyGrows),
    row("useful_retries",                      Attempts,          Higher,  OnlyGrows),
    row("wasted_retries",                      Attempts,          Lower,   OnlyGrows),
    row("hedges_sent",                         Attempts,          Lower,   OnlyGrows),
    row("hedges_cancelled",                    Attempts,          Lower,   OnlyGrows),
    row("hedges_wasted",                       Attempts,          Lower,   OnlyGrows),
    row("rate_limited_sends",                  Attempts,          Lower,   OnlyGrows),
    row("rate_limit_wait_s",                   Seconds,           Lower,   OnlyGrows),
    row("rate_limit_wait_ms.p50",              Milliseconds,      Lower,   Varies),
    row("rate_limit_wait_ms.p90",              Milliseconds,      Lower,   Varies),
    row("rate_limit_wait_ms.p99",              Milliseconds,      Lower,   Varies),
    row("bulkhead_rejections",                 Attempts,          Lower,   OnlyGrows),
    row("limiter_rejections",                  Attempts,          Lower,   OnlyGrows),
    row("rate_limit_wait_ms.p999",             Milliseconds,      Lower,   Varies),
    row("rate_limit_wait_ms.max",              Milliseconds,      Lower,   OnlyGrows),
    row("budget.capacity",                     Setting,           Neither, Varies),
    row("budget.thresholds.*",                 Share,             Higher,  Fixed),
    row("budget.drain_start_s",                Seconds,           Higher,  Varies),
    row("budget.first_refusal_s",              Seconds,           Higher,  Varies),
    row("budget.empty_s",                      Seconds,           Higher,  Varies),
    row("budget.refilled_s",                   Seconds,           Lower,   Varies),
    row("budget.lowest_level_pct",             Percent,           Higher,  Varies),
    row("verdict.retry_efficiency",            Share,             Higher,  Varies),
    row("verdict.extra_load_pct",              Percent,           Lower,   Varies),
    row("verdict.fault_load_added_pct",        Percent,           Lower,   Varies),
    row("verdict.extra_successes",             Requests,          Higher,  Varies),
    // Before `providers.*.served`, which a wildcard would otherwise let match these.
    row("providers.*.money_nano.received",     MoneyNano,         Lower,   OnlyGrows),
    row("providers.*.money_nano.first_attempts", MoneyNano,       Neither, OnlyGrows),
    row("providers.*.money_nano.served",       MoneyNano,         Higher,  OnlyGrows),
    row("providers.*.arrivals",                Attempts,          Lower,   OnlyGrows),
    row("providers.*.throttled",               Attempts,          Lower,   OnlyGrows),
    row("providers.*.served",                  Attempts,          Higher,  OnlyGrows),
    row("providers.*.tokens_received",         Tokens,            Lower,   OnlyGrows),
    row("providers.*.tokens_first_attempts",   Tokens,            Neither, OnlyGrows),
    row("providers.*.tokens_served",           Tokens,            Higher,  OnlyGrows),
    row("tokens.spent",                        Tokens,            Lower,   OnlyGrows),
    row("tokens.served",                       Tokens,            Higher,  OnlyGrows),
    row("tokens.wasted",                       Tokens,            Lower,   OnlyGrows),
    row("tokens.wasted_share",                 Share,             Lower,   Varies),
    row("tokens.cost_amplification",           Ratio,             Lower,   Varies),
    row("money.spent",                         Money,             Lower,   OnlyGrows),
    row("money.served",                        Money,             Higher,  OnlyGrows),
    row("money.wasted",                        Money,             Lower,   OnlyGrows),
    row("money.wasted_share",                  Share,             Lower,   Varies),
    row("money.cost_amplification",            Ratio,             Lower,   Varies),
    row("money.providers.*.spent",             Money,             Lower,   OnlyGrows),
    row("money.providers.*.served",            Money,             Higher,  OnlyGrows),
    row("money.providers.*.wasted",            Money,             Lower,   OnlyGrows),
    row("money.providers.*.wasted_share",      Share,             Lower,   Varies),
    row("money.providers.*.cost_amplification", Ratio,            Lower,   Varies),
    row("classes.*.weight_share",              Share,             Neither, Fixed),
    row("classes.*.upstream_requests",         Requests,          Neither, OnlyGrows),
    row("classes.*.attempts",                  Attempts,          Lower,   OnlyGrows),
    row("classes.*.retries",                   Attempts,          Lower,   OnlyGrows),
    row("classes.*.downstream_arrivals",       Attempts,          Lower,   OnlyGrows),
    row("classes.*.amplification",             Ratio,             Lower,   Varies),
    row("classes.*.successes",                 Requests,          Higher,  OnlyGrows),
    row("classes.*.failures",                  Requests,          Lower,   OnlyGrows),
    row("classes.*.degraded",                  Requests,          Lower,   OnlyGrows),
    row("classes.*.success_share",             Share,             Higher,  Varies),
    row("classes.*.tokens.received",           Tokens,            Lower,   OnlyGrows),
    row("classes.*.tokens.served",             Tokens,            Higher,  OnlyGrows),
    row("classes.*.latency_ms.p50",            Milliseconds,      Lower,   Varies),
    row("classes.*.latency_ms.p90",            Milliseconds,      Lower,   Varies),
    row("classes.*.latency_ms.p99",            Milliseconds,      Lower,   Varies),
    row("classes.*.latency_ms.p999",           Milliseconds,      Lower,   Varies),
    row("classes.*.latency_ms.max",            Milliseconds,      Lower,   OnlyGrows),
    row("success_share",                       Share,             Higher,  Varies),
    row("class_policies.*",                    Setting,           Neither, Fixed),
    row("policy.*",                            Setting,           Neither, Fixed),
];

/// Parts of a config's `summary.json` object that hold no figure: its name, and the latency
/// curve (an array of points, drawn, never gated).
pub const NOT_FIGURES: &[&str] = &["name", "latency_curve"];

/// The row a gate's figure path falls under, if any.
pub fn find(path: &str) -> Option<&'static Figure> {
    let segs: Vec<&str> = path.split('.').collect();
    FIGURES.iter().find(|f| matches(f.path, &segs))
}

/// Whether `pattern` (dotted, `*` = one or more segments) matches the path `segs`.
fn matches(pattern: &str, segs: &[&str]) -> bool {
    fn walk(pat: &[&str], segs: &[&str]) -> bool {
        match pat.split_first() {
            None => segs.is_empty(),
            Some((&"*", rest)) => (1..=segs.len()).any(|k| walk(rest, &segs[k..])),
            Some((p, rest)) => segs.first() == Some(p) && walk(rest, &segs[1..]),
        }
    }
    let pat: Vec<&str> = pattern.split('.').collect();
    walk(&pat, segs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_take_one_or_more_segments() {
        assert_eq!(find("attempts").map(|f| f.path), Some("attempts"));
        assert_eq!(
            find("failures_by_reason.budget-refused").map(|f| f.path),
            Some("failures_by_reason.*")
        );
        assert_eq!(
            find("layers.db.primary.retries").map(|f| f.path),
            Some("layers.*.retries")
        );
        assert_eq!(
            find("policy.backoff.base").map(|f| f.path),
            Some("policy.*")
        );
        for not_one in [
            "failures_by_reason",
            "layers.edge",
            "latency_ms",
            "attempt",
            "x.attempts",
        ] {
            assert_eq!(find(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn paths_are_unique() {
        for (i, f) in FIGURES.iter().enumerate() {
            assert!(
                FIGURES[..i].iter().all(|g| g.path != f.path),
                "{} twice",
                f.path
            );
        }
    }
}
