//! The page's "Providers" section: per config, what each LLM provider counted itself
//! (arrivals, 429s, served, tokens, money, `Retry-After` honoured or not), what the client
//! routed to it and its breaker's transitions; then the config's tokens, money and degraded
//! answers; and the chart of arrivals per second at each provider (its own counts, every
//! config). Shown only when the scenario has providers.

use std::fmt::Write as _;

use super::charts::{self, Chart};
use super::{chart_figure, escape, fixed, int, ms, swatch};
use crate::metrics::numbers::fmt_pct;
use crate::metrics::{ConfigSummary, RunResult};
use crate::policy::BreakerState;
use crate::scenario::provider::NANO_PER_UNIT;

/// Whether the page has the section (for the navigation bar).
pub(super) fn shown(run: &RunResult) -> bool {
    run.configs.iter().any(|c| !c.providers.is_empty())
}

/// Writes the section; `chart` is [`charts::provider_chart`]'s.
pub(super) fn section(p: &mut String, run: &RunResult, chart: Option<&Chart>) {
    if !shown(run) {
        return;
    }
    p.push_str(
        "<section id=\"providers\">\n<h2><a href=\"#providers\">Providers</a></h2>\n\
<p class=\"k\">Each provider's own counts. Tokens and money are charged for every arrival, \
a failed or throttled one too; <em>routed</em> is what the client sent the provider \
(configs with failover), equal to its arrivals.</p>\n",
    );
    for (i, c) in run.configs.iter().enumerate() {
        if c.providers.is_empty() {
            continue;
        }
        let _ = write!(
            p,
            "<h3>{}{}</h3>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>provider</th>\
<th>arrivals</th><th>429s</th><th>served</th><th>tokens</th><th>tokens served</th>\
<th>money</th><th>Retry-After honoured</th><th>early</th><th>routed</th>\
<th>bulkhead rejections</th><th>breaker transitions</th></tr></thead>\n<tbody>\n",
            swatch(i),
            escape(&c.name),
        );
        for s in &c.providers {
            let route = c.routes.iter().find(|r| r.name == s.name);
            let money = s.money_nano.map_or_else(
                || "—".to_string(),
                |m| fixed(m.received as f64 / NANO_PER_UNIT, 4),
            );
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&s.name),
                int(s.arrivals),
                int(s.throttled),
                int(s.served),
                int(s.tokens_received),
                int(s.tokens_served),
                money,
                int(s.retry_after_honoured),
                int(s.retry_after_early),
                route.map_or_else(|| "—".to_string(), |r| int(r.attempts)),
                route.map_or_else(|| "—".to_string(), |r| int(r.bulkhead_rejections)),
                route.map_or_else(|| "—".to_string(), transitions),
            );
        }
        p.push_str("</tbody></table></div>\n");
        let spend = spending(c);
        if !spend.is_empty() {
            let _ = writeln!(p, "<p>{}</p>", spend.join(" · "));
        }
    }
    if let Some(chart) = chart {
        p.push_str("<div class=\"grid\">\n");
        chart_figure(p, chart);
        p.push_str("</div>\n");
    }
    p.push_str("</section>\n");
}

/// A provider's breaker transitions: "→ open 5.2 s, → half-open 20.2 s".
fn transitions(r: &crate::metrics::provider::ProviderRoute) -> String {
    if r.breaker_transitions.is_empty() {
        return "—".into();
    }
    let word = |s: BreakerState| match s {
        BreakerState::Closed => "closed",
        BreakerState::HalfOpen => "half-open",
        BreakerState::Open => "open",
    };
    r.breaker_transitions
        .iter()
        .map(|t| format!("→ {} {} s", word(t.to), fixed(t.at_s, 1)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The config's tokens, money and degraded answers, one phrase each (escaped).
fn spending(c: &ConfigSummary) -> Vec<String> {
    let amp = |a: Option<f64>| a.map_or_else(|| "—".to_string(), |a| fixed(a, 2) + "×");
    let mut out = Vec::new();
    if let Some(t) = &c.tokens {
        out.push(format!(
            "tokens spent {}, wasted {} ({} %), {} the first attempts",
            int(t.spent),
            int(t.wasted),
            fmt_pct(t.wasted_share),
            amp(t.cost_amplification)
        ));
    }
    if let Some(m) = &c.money {
        out.push(format!(
            "money spent {}, wasted {} ({} %), {} the first attempts",
            fixed(m.total.spent, 4),
            fixed(m.total.wasted, 4),
            fmt_pct(m.total.wasted_share),
            amp(m.total.cost_amplification)
        ));
    }
    if let Some(d) = &c.degraded {
        let rungs: Vec<String> = d
            .rungs
            .iter()
            .map(|r| format!("{} {}", escape(&r.rung), int(r.requests)))
            .collect();
        out.push(format!(
            "degraded {} ({}), p99 {} ms",
            int(d.requests),
            rungs.join(", "),
            ms(d.latency_ms.p99)
        ));
    }
    out
}

/// The section's chart, drawn once for the page.
pub(super) fn chart(run: &RunResult) -> Result<Option<Chart>, charts::ChartError> {
    charts::provider_chart(run)
}
