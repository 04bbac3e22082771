//! The page's "Request classes" section: per config, each class of a mixed load side by
//! side (requests, attempts, what reached the target, successes, degraded answers,
//! latency), so a policy that rescues one class by hammering another shows it. Shown only
//! when the load has classes.

use std::fmt::Write as _;

use super::{escape, fixed, int, ms, swatch};
use crate::metrics::numbers::fmt_pct;
use crate::metrics::RunResult;

/// Whether the page has the section (for the navigation bar).
pub(super) fn shown(run: &RunResult) -> bool {
    run.configs.iter().any(|c| !c.classes.is_empty())
}

/// Writes the section.
pub(super) fn section(p: &mut String, run: &RunResult) {
    if !shown(run) {
        return;
    }
    p.push_str(
        "<section id=\"classes\">\n<h2><a href=\"#classes\">Request classes</a></h2>\n\
<p class=\"k\">Each request's class is drawn from the seed and its id, the same in every \
config; <em>downstream</em> is what the target counted of the class itself. A class with a \
policy of its own says so in the retry configs below.</p>\n",
    );
    for (i, c) in run.configs.iter().enumerate() {
        if c.classes.is_empty() {
            continue;
        }
        let _ = write!(
            p,
            "<h3>{}{}</h3>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>class</th>\
<th>share</th><th>requests</th><th>attempts</th><th>retries</th><th>downstream</th>\
<th>amplification</th><th>successes</th><th>failures</th><th>degraded</th><th>success</th>\
<th>p50 ms</th><th>p99 ms</th></tr></thead>\n<tbody>\n",
            swatch(i),
            escape(&c.name),
        );
        for k in &c.classes {
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{} %</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
<td>{}×</td><td>{}</td><td>{}</td><td>{}</td><td>{} %</td><td>{}</td><td>{}</td></tr>",
                escape(&k.name),
                fmt_pct(k.weight_share),
                int(k.upstream_requests),
                int(k.attempts),
                int(k.retries),
                int(k.downstream_arrivals),
                fixed(k.amplification, 2),
                int(k.successes),
                int(k.failures),
                int(k.degraded),
                fmt_pct(k.success_share),
                ms(k.latency_ms.p50),
                ms(k.latency_ms.p99),
            );
        }
        p.push_str("</tbody></table></div>\n");
    }
    p.push_str("</section>\n");
}
