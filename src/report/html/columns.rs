//! The summary table: one row per config, one column per figure (what it is, which way is
//! better, how it is shown), and with a baseline the baseline's figure and the change
//! beside each.

use std::fmt::Write as _;

use super::{escape, fixed, int, ms, over_bound, recovery_text, secs, success_ratio, swatch};
use crate::metrics::{ConfigSummary, RunResult};
use crate::report::figures::{self, Better};

/// When a column is shown at first; the others are one click away ("show all columns"), so
/// the table fits a laptop screen and a GET-only run is not padded with write figures.
#[derive(Clone, Copy)]
enum Shown {
    Always,
    /// A tail figure: detail, one click away.
    Detail,
    /// Shown when any config of the run makes it say something.
    When(fn(&ConfigSummary) -> bool),
}

fn has_budget(c: &ConfigSummary) -> bool {
    c.budget_refusals > 0
        || c.policy["budget"]["kind"]
            .as_str()
            .is_some_and(|k| k != "none")
}

fn has_breaker(c: &ConfigSummary) -> bool {
    c.breaker_refusals > 0 || !c.policy["breaker"].is_null()
}

fn has_hedging(c: &ConfigSummary) -> bool {
    c.hedges_sent > 0 || !c.policy["hedging"].is_null()
}

fn has_rate_limiter(c: &ConfigSummary) -> bool {
    c.rate_limited_sends > 0 || !c.policy["rate_limiter"].is_null()
}

fn has_bulkhead(c: &ConfigSummary) -> bool {
    c.bulkhead_rejections > 0 || !c.policy["bulkhead"].is_null()
}

fn has_concurrency_limit(c: &ConfigSummary) -> bool {
    c.limiter_rejections > 0 || !c.policy["concurrency_limit"].is_null()
}

/// A run with write requests (executions counted) or a dedup store at work.
fn has_writes(c: &ConfigSummary) -> bool {
    let i = &c.idempotency;
    i.executions > 0 || i.dedup_replays + i.dedup_conflicts + i.dedup_mismatches > 0
}

/// A column of the summary table.
struct Column {
    label: &'static str,
    title: &'static str,
    /// The figure of the summary's table (`report::figures`) the column shows, whose
    /// direction colours a change: the page and `stormrig diff` never disagree on which way
    /// is better. The success column shows the share of `successes`, which improves the
    /// same way.
    figure: Option<&'static str>,
    /// When the column is worth its width (see [`Shown`]).
    shown: Shown,
    /// The figure compared across configs and against the baseline.
    value: fn(&ConfigSummary) -> Option<f64>,
    /// The figure as shown (already escaped HTML).
    show: fn(&ConfigSummary) -> String,
}

const COLUMNS: &[Column] = &[
    Column {
        label: "upstream",
        title: "logical requests offered",
        figure: Some("upstream_requests"),
        shown: Shown::Always,
        value: |c| Some(c.upstream_requests as f64),
        show: |c| int(c.upstream_requests),
    },
    Column {
        label: "attempts",
        title: "attempts the client sent",
        figure: Some("attempts"),
        shown: Shown::Always,
        value: |c| Some(c.attempts as f64),
        show: |c| int(c.attempts),
    },
    Column {
        label: "retries",
        title: "retries scheduled",
        figure: Some("retries"),
        shown: Shown::Always,
        value: |c| Some(c.retries as f64),
        show: |c| int(c.retries),
    },
    Column {
        label: "arrivals",
        title: "requests the target counted",
        figure: Some("downstream_arrivals"),
        shown: Shown::Always,
        value: |c| Some(c.downstream_arrivals as f64),
        show: |c| int(c.downstream_arrivals),
    },
    Column {
        label: "amplification / bound",
        title: "downstream arrivals ÷ upstream requests, beside the config's theoretical bound",
        figure: Some("amplification"),
        shown: Shown::Always,
        value: |c| Some(c.amplification),
        show: |c| {
            let b = match c.amplification_bound {
                Some(b) => format!(" <span class=\"bound\">/ ≤{}×</span>", fixed(b, 2)),
                None => " <span class=\"bound\">/ —</span>".into(),
            };
            format!("{}×{b}", fixed(c.amplification, 2))
        },
    },
    Column {
        label: "peak amp 1 s",
        title: "worst single second of arrivals ÷ upstream starts",
        figure: Some("peak_amplification_1s"),
        shown: Shown::Always,
        value: |c| Some(c.peak_amplification_1s),
        show: |c| format!("{}×", fixed(c.peak_amplification_1s, 2)),
    },
    Column {
        label: "peak concurrency",
        title: "most requests in flight at the target at once",
        figure: Some("peak_concurrency"),
        shown: Shown::Always,
        value: |c| Some(c.peak_concurrency as f64),
        show: |c| int(c.peak_concurrency),
    },
    Column {
        label: "client peak",
        title: "most logical requests in flight at the client",
        figure: Some("client_peak_in_flight"),
        shown: Shown::Detail,
        value: |c| Some(c.client_peak_in_flight as f64),
        show: |c| int(c.client_peak_in_flight),
    },
    Column {
        label: "success",
        title: "successes ÷ finished requests",
        figure: Some("successes"),
        shown: Shown::Always,
        value: success_ratio,
        show: |c| success_ratio(c).map_or("—".into(), |r| format!("{} %", fixed(r * 100.0, 2))),
    },
    Column {
        label: "failures",
        title: "requests that finished failed",
        figure: Some("failures"),
        shown: Shown::Always,
        value: |c| Some(c.failures as f64),
        show: |c| int(c.failures),
    },
    Column {
        label: "budget refusals",
        title: "retries the retry budget refused (first refusal time in brackets)",
        figure: Some("budget_refusals"),
        shown: Shown::When(has_budget),
        value: |c| Some(c.budget_refusals as f64),
        show: |c| match c.first_budget_refusal_s {
            Some(t) if c.budget_refusals > 0 => {
                format!(
                    "{} <span class=\"bound\">(@{})</span>",
                    int(c.budget_refusals),
                    secs(t)
                )
            }
            _ => int(c.budget_refusals),
        },
    },
    Column {
        label: "breaker refusals",
        title: "attempts the circuit breaker refused",
        figure: Some("breaker_refusals"),
        shown: Shown::When(has_breaker),
        value: |c| Some(c.breaker_refusals as f64),
        show: |c| int(c.breaker_refusals),
    },
    Column {
        label: "hedges sent",
        title: "copies of a call sent after its first (hedging)",
        figure: Some("hedges_sent"),
        shown: Shown::When(has_hedging),
        value: |c| Some(c.hedges_sent as f64),
        show: |c| int(c.hedges_sent),
    },
    Column {
        label: "hedges cancelled",
        title: "copies still in flight when their call ended, closed by the client",
        figure: Some("hedges_cancelled"),
        shown: Shown::When(has_hedging),
        value: |c| Some(c.hedges_cancelled as f64),
        show: |c| int(c.hedges_cancelled),
    },
    Column {
        label: "hedges wasted",
        title: "hedges whose answer their call did not use",
        figure: Some("hedges_wasted"),
        shown: Shown::When(has_hedging),
        value: |c| Some(c.hedges_wasted as f64),
        show: |c| int(c.hedges_wasted),
    },
    Column {
        label: "rate-limited sends",
        title: "attempts the client-side rate limiter held back before sending them",
        figure: Some("rate_limited_sends"),
        shown: Shown::When(has_rate_limiter),
        value: |c| Some(c.rate_limited_sends as f64),
        show: |c| int(c.rate_limited_sends),
    },
    Column {
        label: "bulkhead rejections",
        title: "attempts the bulkhead rejected: no place free and no room or time to wait",
        figure: Some("bulkhead_rejections"),
        shown: Shown::When(has_bulkhead),
        value: |c| Some(c.bulkhead_rejections as f64),
        show: |c| int(c.bulkhead_rejections),
    },
    Column {
        label: "limiter rejections",
        title: "attempts the adaptive concurrency limiter rejected: its limit was in flight",
        figure: Some("limiter_rejections"),
        shown: Shown::When(has_concurrency_limit),
        value: |c| Some(c.limiter_rejections as f64),
        show: |c| int(c.limiter_rejections),
    },
    Column {
        label: "rate-limit wait p99",
        title: "the 99th percentile of those attempts' waits for a token",
        figure: Some("rate_limit_wait_ms.p99"),
        shown: Shown::When(has_rate_limiter),
        value: |c| Some(c.rate_limit_wait_ms.p99),
        show: |c| ms(c.rate_limit_wait_ms.p99),
    },
    Column {
        label: "dropped",
        title: "arrivals refused by the in-flight cap",
        figure: Some("dropped"),
        shown: Shown::When(|c| c.dropped > 0),
        value: |c| Some(c.dropped as f64),
        show: |c| int(c.dropped),
    },
    Column {
        label: "success p99 ms",
        title: "end-to-end latency of the requests that succeeded, 99th percentile: what a \
caller who got an answer waited (a fast failure does not make it look better)",
        figure: Some("success_latency_ms.p99"),
        shown: Shown::Always,
        value: |c| Some(c.success_latency_ms.p99),
        show: |c| ms(c.success_latency_ms.p99),
    },
    Column {
        label: "failure p99 ms",
        title: "end-to-end latency of the requests that failed, 99th percentile",
        figure: Some("failure_latency_ms.p99"),
        shown: Shown::Detail,
        value: |c| Some(c.failure_latency_ms.p99),
        show: |c| ms(c.failure_latency_ms.p99),
    },
    Column {
        label: "p50 ms",
        title: "end-to-end latency, median",
        figure: Some("latency_ms.p50"),
        shown: Shown::Detail,
        value: |c| Some(c.latency_ms.p50),
        show: |c| ms(c.latency_ms.p50),
    },
    Column {
        label: "p99 ms",
        title: "end-to-end latency of every request, 99th percentile",
        figure: Some("latency_ms.p99"),
        shown: Shown::Detail,
        value: |c| Some(c.latency_ms.p99),
        show: |c| ms(c.latency_ms.p99),
    },
    Column {
        label: "p99.9 ms",
        title: "end-to-end latency, 99.9th percentile",
        figure: Some("latency_ms.p999"),
        shown: Shown::Detail,
        value: |c| Some(c.latency_ms.p999),
        show: |c| ms(c.latency_ms.p999),
    },
    Column {
        label: "max ms",
        title: "end-to-end latency, maximum",
        figure: Some("latency_ms.max"),
        shown: Shown::Detail,
        value: |c| Some(c.latency_ms.max),
        show: |c| ms(c.latency_ms.max),
    },
    Column {
        label: "recovery",
        title: "seconds from the end of the last fault until goodput was back",
        figure: Some("recovery_time_s"),
        shown: Shown::Always,
        value: |c| match c.recovered {
            Some(true) => c.recovery_time_s.or(Some(0.0)),
            Some(false) => Some(f64::INFINITY),
            None => None,
        },
        show: recovery_text,
    },
    Column {
        label: "idempotency",
        title: "the config's rule for non-idempotent methods (POST, PATCH): not retried once \
possibly sent, retried without a key, or retried with an Idempotency-Key; idempotent methods \
are retried under every rule",
        figure: None,
        shown: Shown::When(has_writes),
        value: |_| None,
        show: |c| escape(&c.idempotency_rules),
    },
    Column {
        label: "duplicates",
        title: "logical requests the target executed more than once",
        figure: Some("duplicate_executions"),
        shown: Shown::When(has_writes),
        value: |c| Some(c.duplicate_executions as f64),
        show: |c| int(c.duplicate_executions),
    },
    Column {
        label: "extra side effects",
        title: "executions beyond the first per logical request (amount debited twice)",
        figure: Some("extra_executions"),
        shown: Shown::When(has_writes),
        value: |c| Some(c.idempotency.extra_executions as f64),
        show: |c| {
            format!(
                "{} <span class=\"bound\">/ {} debited</span>",
                int(c.idempotency.extra_executions),
                int(c.idempotency.extra_debited)
            )
        },
    },
    Column {
        label: "dedup replay / 409 / 422",
        title: "Idempotency-Key dedup at the target: replays of a stored response, \
duplicates while executing (409), keys reused with another body (422)",
        figure: None,
        shown: Shown::When(has_writes),
        value: |_| None,
        show: |c| {
            let i = &c.idempotency;
            format!(
                "{} / {} / {}",
                int(i.dedup_replays),
                int(i.dedup_conflicts),
                int(i.dedup_mismatches)
            )
        },
    },
    Column {
        label: "shed",
        title: "requests the target shed",
        figure: Some("target_shed"),
        shown: Shown::When(|c| c.target_shed > 0),
        value: |c| Some(c.target_shed as f64),
        show: |c| int(c.target_shed),
    },
    Column {
        label: "proxy answered",
        title: "attempts the fault proxy answered itself instead of the service \
(connect or TLS failed, upstream timeout, body too large, too many interim answers, \
another protocol error); by reason in summary.json",
        // The total of the reasons, each a figure of the same unit and direction.
        figure: Some("proxy_answered.*"),
        shown: Shown::When(|c| c.proxy_answered.total() > 0),
        value: |c| Some(c.proxy_answered.total() as f64),
        show: |c| {
            format!(
                "{} ({})",
                int(c.proxy_answered.total()),
                c.proxy_answered.described()
            )
        },
    },
    Column {
        label: "relayed resets",
        title: "attempts the service reset (its connection, or an HTTP/2 stream) and the \
proxy relayed to the client as resets, apart from the scenario's own reset faults; HTTP/1.1 \
resets and HTTP/2 stream resets apart in summary.json",
        figure: Some("relayed_resets.*"),
        shown: Shown::When(|c| c.relayed_resets.total() > 0),
        value: |c| Some(c.relayed_resets.total() as f64),
        show: |c| int(c.relayed_resets.total()),
    },
];

impl Column {
    fn better(&self) -> Better {
        self.figure
            .and_then(figures::find)
            .map_or(Better::Neither, |f| f.better)
    }
}

/// The change from `base` to `now`, coloured by whether it is an improvement.
pub(super) fn change(now: f64, base: f64, better: Better) -> String {
    if !(now.is_finite() && base.is_finite()) {
        return if now == base {
            "<span class=\"flat\">±0 %</span>".into()
        } else {
            "<span class=\"flat\">—</span>".into()
        };
    }
    if now == base {
        return "<span class=\"flat\">±0 %</span>".into();
    }
    let class = match (better, now < base) {
        (Better::Neither, _) => "flat",
        (Better::Lower, true) | (Better::Higher, false) => "down",
        _ => "up",
    };
    if base == 0.0 {
        return format!("<span class=\"{class}\">new</span>");
    }
    let pct = (now - base) / base.abs() * 100.0;
    format!(
        "<span class=\"{class}\">{}{} %</span>",
        if pct > 0.0 { "+" } else { "" },
        fixed(pct, 1)
    )
}

/// The summary table: a row per config, and with a `baseline` the baseline's figure and
/// the change under each.
/// How many columns beside the config's the table shows at first: as many as fit 1400 px
/// with headers of two lines (`tests/browser/layout.sh` holds it to that width). Columns a
/// run makes relevant are shown in table order until the table is full; the rest are one
/// click away with the details.
const SHOWN_AT_MOST: usize = 13;

/// Per column, whether it starts hidden.
fn hidden_columns(run: &RunResult) -> Vec<bool> {
    let mut room = SHOWN_AT_MOST
        - COLUMNS
            .iter()
            .filter(|c| matches!(c.shown, Shown::Always))
            .count();
    COLUMNS
        .iter()
        .map(|col| match col.shown {
            Shown::Always => false,
            Shown::Detail => true,
            Shown::When(says) if run.configs.iter().any(says) && room > 0 => {
                room -= 1;
                false
            }
            Shown::When(_) => true,
        })
        .collect()
}

pub(super) fn table(p: &mut String, run: &RunResult, baseline: Option<&RunResult>) {
    p.push_str(
        "<section id=\"summary\">\n<h2><a href=\"#summary\">Summary table</a></h2>\n\
<p class=\"k\">Amplification is shown beside its theoretical bound. Which config is \
better depends on the question: the verdicts above weigh the load each config added \
against the successes it bought.</p>\n",
    );
    let hidden = hidden_columns(run);
    let names: Vec<&str> = COLUMNS
        .iter()
        .zip(&hidden)
        .filter(|(_, h)| **h)
        .map(|(c, _)| c.label)
        .collect();
    if !names.is_empty() {
        let _ = writeln!(
            p,
            "<input type=\"checkbox\" id=\"allcols\" class=\"allcols\">\
<label for=\"allcols\" class=\"k\"> show all columns ({} more: {})</label>",
            names.len(),
            escape(&names.join(", "))
        );
    }
    p.push_str("<div class=\"tablewrap\"><table>\n<thead><tr><th>config</th>");
    let opt = |i: usize| if hidden[i] { " class=\"opt\"" } else { "" };
    for (i, col) in COLUMNS.iter().enumerate() {
        let _ = write!(
            p,
            "<th title=\"{}\"{}>{}</th>",
            escape(col.title),
            opt(i),
            col.label
        );
    }
    p.push_str("</tr></thead>\n<tbody>\n");
    for (i, c) in run.configs.iter().enumerate() {
        let _ = write!(p, "<tr><td>{}{}</td>", swatch(i), escape(&c.name));
        for (i, col) in COLUMNS.iter().enumerate() {
            let mut class = Vec::new();
            if col.label.starts_with("amplification") && over_bound(c) {
                class.push("over");
            }
            if hidden[i] {
                class.push("opt");
            }
            let title = if class.contains(&"over") {
                " title=\"above the config's theoretical bound\""
            } else {
                ""
            };
            if class.is_empty() {
                let _ = write!(p, "<td>{}</td>", (col.show)(c));
            } else {
                let _ = write!(
                    p,
                    "<td class=\"{}\"{title}>{}</td>",
                    class.join(" "),
                    (col.show)(c)
                );
            }
        }
        p.push_str("</tr>\n");
        if let Some(b) = baseline {
            match b.configs.iter().find(|bc| bc.name == c.name) {
                Some(bc) => {
                    p.push_str("<tr class=\"base\"><td>baseline</td>");
                    for (i, col) in COLUMNS.iter().enumerate() {
                        let d = match ((col.value)(c), (col.value)(bc)) {
                            (Some(now), Some(base)) => change(now, base, col.better()),
                            _ => String::new(),
                        };
                        let _ = write!(p, "<td{}>{} {d}</td>", opt(i), (col.show)(bc));
                    }
                    p.push_str("</tr>\n");
                }
                None => {
                    let _ = writeln!(
                        p,
                        "<tr class=\"base\"><td>baseline</td><td colspan=\"{}\" style=\"text-align:left\">\
not in the baseline</td></tr>",
                        COLUMNS.len()
                    );
                }
            }
        }
    }
    p.push_str("</tbody></table></div>\n");
    if let Some(b) = baseline {
        let missing: Vec<String> = b
            .configs
            .iter()
            .filter(|bc| !run.configs.iter().any(|c| c.name == bc.name))
            .map(|bc| escape(&bc.name))
            .collect();
        if !missing.is_empty() {
            let _ = writeln!(
                p,
                "<p class=\"k\">In the baseline only: {}.</p>",
                missing.join(", ")
            );
        }
    }
    p.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_colours_by_direction() {
        assert!(change(2.0, 1.0, Better::Lower).contains("up"));
        assert!(change(2.0, 1.0, Better::Lower).contains("+100.0 %"));
        assert!(change(0.5, 1.0, Better::Lower).contains("down"));
        assert!(change(1.0, 1.0, Better::Lower).contains("±0 %"));
        assert!(change(1.0, 0.0, Better::Lower).contains("new"));
    }

    /// A column that names a figure the table does not hold would silently lose its
    /// direction (and colour every change grey).
    #[test]
    fn every_column_names_a_figure_of_the_table() {
        for col in COLUMNS {
            if let Some(f) = col.figure {
                assert!(
                    figures::find(f).is_some(),
                    "{}: {f} is no figure",
                    col.label
                );
            } else {
                assert!(
                    ["idempotency", "dedup replay / 409 / 422"].contains(&col.label),
                    "{}: a column with a value to compare needs a figure",
                    col.label
                );
            }
        }
    }
}
