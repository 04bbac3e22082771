//! The run's self-contained HTML page (`index.html`), drawn only from a [`RunResult`].
//!
//! Self-contained means no fetch of any kind: the stylesheet is inline, charts are inline
//! SVG drawn by plotters, and a Content-Security-Policy of `default-src 'none'` makes the
//! browser refuse (and report) anything that would still try. The only script is a tiny
//! error recorder: it counts uncaught errors, `console.error` calls and CSP violations
//! into `<html data-errors="N">`, which `tests/browser/check.sh` reads back.
//!
//! Every string that comes from the user (scenario, description, config names, fault
//! labels, gate text, policy JSON) goes through [`escape`] or, inside charts, through
//! plotters' SVG backend, which escapes its text too. Output is deterministic: the same
//! result renders to the same bytes (no render time, no hash-map order).

mod charts;
mod classes;
mod providers;

/// The config colours, shared with the sweep and capacity pages.
pub(crate) use charts::{color, css_color};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::metrics::result::fmt_pct;
use crate::metrics::{ConfigSummary, RunResult};
use crate::report::files::{self, FilesError};

/// The page's file name in a run directory.
pub const INDEX_HTML: &str = "index.html";

/// What can go wrong rendering or writing the page.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// plotters failed to draw a chart.
    #[error("drawing chart {chart}: {message}")]
    Chart { chart: String, message: String },
    #[error(transparent)]
    Files(#[from] FilesError),
}

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Renders the whole page. With a `baseline`, the summary table shows the baseline's figure
/// and the change beside each config's (matched by config name), as `stormrig diff` wants.
pub fn render(run: &RunResult, baseline: Option<&RunResult>) -> Result<String, HtmlError> {
    let charts::Charts {
        time: time_charts,
        drain: drain_charts,
        distribution,
    } = charts::all(run).map_err(|e| HtmlError::Chart {
        chart: "charts".into(),
        message: e.0,
    })?;
    let provider_chart = providers::chart(run).map_err(|e| HtmlError::Chart {
        chart: "chart-providers".into(),
        message: e.0,
    })?;
    let mut p = String::with_capacity(256 * 1024);
    head(&mut p, run);
    p.push_str("<body>\n<main>\n");
    header(&mut p, run, baseline);
    nav(&mut p, run);
    headlines(&mut p, run, baseline);
    verdicts(&mut p, run);
    gates(&mut p, run);
    table(&mut p, run, baseline);
    layers(&mut p, run);
    providers::section(&mut p, run, provider_chart.as_ref());
    classes::section(&mut p, run);
    budget_section(&mut p, run, &drain_charts);
    p.push_str("<section id=\"charts\">\n<h2><a href=\"#charts\">Over time</a></h2>\n");
    legend(&mut p, run);
    p.push_str("<div class=\"grid\">\n");
    for c in &time_charts {
        chart_figure(&mut p, c);
    }
    p.push_str("</div>\n</section>\n");
    p.push_str(
        "<section id=\"latency\">\n<h2><a href=\"#latency\">Latency distribution</a></h2>\n",
    );
    legend(&mut p, run);
    p.push_str("<div class=\"grid\">\n");
    chart_figure(&mut p, &distribution);
    latency_table(&mut p, run);
    p.push_str("</div>\n</section>\n");
    policies(&mut p, run);
    let _ = write!(
        p,
        "<footer>stormrig {} · engine {} · seed {}</footer>\n</main>\n</body>\n</html>\n",
        escape(&run.stormrig_version),
        run.engine.as_str(),
        run.seed
    );
    Ok(p)
}

/// Renders the page and writes it to `dir/index.html` atomically; returns its path.
pub fn write(
    dir: &Path,
    run: &RunResult,
    baseline: Option<&RunResult>,
) -> Result<PathBuf, HtmlError> {
    let page = render(run, baseline)?;
    files::write_atomic(dir, INDEX_HTML, page.as_bytes())?;
    Ok(dir.join(INDEX_HTML))
}

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
img-src data:; base-uri 'none'; form-action 'none'";

/// Counts errors into `<html data-errors>`; read by tests/browser/check.sh.
const ERROR_RECORDER: &str = "(function(){var d=document.documentElement,n=0;\
function bump(){n++;d.setAttribute('data-errors',String(n));}\
window.addEventListener('error',bump,true);\
window.addEventListener('unhandledrejection',bump);\
document.addEventListener('securitypolicyviolation',bump);\
var ce=console.error;console.error=function(){bump();return ce.apply(console,arguments);};})();";

const STYLE: &str = r#"
:root{--fg:#1d1d24;--muted:#62626e;--line:#e3e3ea;--bg:#f7f7fa;--card:#fff;--accent:#2b59c3;--bad:#b3261e;--good:#1b7f3b;
--font:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;--mono:ui-monospace,"SF Mono",Menlo,Consolas,monospace}
*{box-sizing:border-box}
html{background:var(--bg);color:var(--fg);font:14px/1.45 var(--font)}
body{margin:0}
main{max-width:1400px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:0 0 4px;word-break:break-word}
h2{font-size:18px;margin:32px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h2 a,h3 a{color:inherit;text-decoration:none}
h2 a:hover::after,h3 a:hover::after{content:" #";color:var(--muted)}
h3{font-size:14px;margin:0 0 6px}
.desc{color:var(--muted);margin:0 0 12px;max-width:90ch;white-space:pre-wrap}
dl.meta{display:flex;flex-wrap:wrap;gap:6px 22px;margin:8px 0}
dl.meta div{display:flex;gap:6px}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums}
.faults{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0;padding:0;list-style:none}
.faults li{background:rgba(214,39,40,.10);color:#8a1f1f;border-radius:4px;padding:2px 8px;font-size:13px}
.banner{border-radius:6px;padding:10px 14px;margin:12px 0;font-weight:600}
.banner.partial{background:#fff4d6;border:1px solid #e8c35a;color:#6b4b00}
.banner.baseline{background:#eef3ff;border:1px solid #b9c9f0;color:#23407e;font-weight:400}
nav{display:flex;flex-wrap:wrap;gap:4px 16px;margin:14px 0 0;font-size:13px}
nav a{color:var(--accent);text-decoration:none}
nav a:hover{text-decoration:underline}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:12px}
.card{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--c);border-radius:6px;padding:10px 14px}
.card h3{word-break:break-word}
.card p{margin:2px 0;font-variant-numeric:tabular-nums}
.card .bound{white-space:nowrap}
.card .k{color:var(--muted)}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;background:var(--c);vertical-align:-1px;margin-right:6px}
.tablewrap{overflow-x:auto;display:inline-block;max-width:100%;background:var(--card);border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}
th,td{padding:5px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid var(--line)}
th{background:#f0f0f5;font-weight:600;vertical-align:bottom;white-space:normal;min-width:4.5em;max-width:7.5em;line-height:1.2}
th:first-child,td:first-child{text-align:left;position:sticky;left:0;z-index:1}
th:first-child{background:#f0f0f5}
td:first-child{background:inherit;min-width:10em;max-width:16em;white-space:normal;word-break:break-word}
table.text th,table.text td{text-align:left}
figure table th,figure table td{padding:4px 6px}
tbody tr{background:var(--card)}
tbody tr:nth-child(even){background:#fbfbfd}
td.over{color:var(--bad);font-weight:700}
.bound{color:var(--muted);font-weight:400}
tr.base td{color:var(--muted);font-size:12px;background:#f6f7fb;border-bottom:2px solid var(--line)}
.up{color:var(--bad)}.down{color:var(--good)}.flat{color:var(--muted)}
.ok{color:var(--good);font-weight:700}.fail{color:var(--bad);font-weight:700}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;margin:0 0 10px;font-size:13px}
.legend span{word-break:break-word}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 12px}
figure svg{display:block;width:100%;height:auto}
figure svg text{font-family:var(--font)}
figcaption{font-size:12px;color:var(--muted);margin-top:4px}
figcaption .g{font-family:var(--mono);letter-spacing:-1px;margin-right:4px;color:var(--fg)}
figcaption span.n{margin-right:14px}
.empty{color:var(--muted);font-style:italic}
details{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:6px 0}
summary{cursor:pointer;font-weight:600}
pre{font:12px/1.4 var(--mono);overflow-x:auto;margin:8px 0 0}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"#;

fn head(p: &mut String, run: &RunResult) {
    let _ = write!(
        p,
        "<!DOCTYPE html>\n<html lang=\"en\" data-errors=\"0\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"generator\" content=\"stormrig {}\">\n\
<title>{} · stormrig</title>\n<script>{ERROR_RECORDER}</script>\n<style>{STYLE}</style>\n</head>\n",
        escape(&run.stormrig_version),
        escape(&run.scenario),
    );
}

fn secs(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

fn header(p: &mut String, run: &RunResult, baseline: Option<&RunResult>) {
    let _ = write!(
        p,
        "<header id=\"top\">\n<h1>{}</h1>\n",
        escape(&run.scenario)
    );
    if !run.description.trim().is_empty() {
        let _ = writeln!(
            p,
            "<p class=\"desc\">{}</p>",
            escape(run.description.trim())
        );
    }
    p.push_str("<dl class=\"meta\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(p, "<div><dt>{k}</dt><dd>{v}</dd></div>");
    };
    item("seed", run.seed.to_string());
    item("engine", run.engine.as_str().to_string());
    item("duration", secs(run.duration_s));
    item("configs", run.configs.len().to_string());
    item("stormrig", escape(&run.stormrig_version));
    p.push_str("</dl>\n");
    if run.faults.is_empty() {
        p.push_str("<p class=\"k\">No fault injected.</p>\n");
    } else {
        p.push_str("<ul class=\"faults\" title=\"fault windows, shaded on every time chart\">");
        for f in &run.faults {
            let _ = write!(
                p,
                "<li>{}–{}: {}</li>",
                secs(f.start_s),
                secs(f.end_s),
                escape(&f.described())
            );
        }
        p.push_str("</ul>\n");
    }
    if run.partial {
        let _ = writeln!(
            p,
            "<div class=\"banner partial\" role=\"alert\">Partial run: it was interrupted or \
could not finish; the figures cover only the {} that ran.</div>",
            secs(run.duration_s)
        );
    }
    if let Some(n) = run.shards {
        let _ = write!(
            p,
            "<div class=\"banner\">Merged from {n} shards: counts and latency histograms add \
exactly. Upper bounds, not exact:<ul>"
        );
        for (figure, why) in &run.upper_bounds {
            let _ = write!(p, "<li><b>{}</b>: {}</li>", escape(figure), escape(why));
        }
        p.push_str("</ul></div>\n");
    }
    if let Some(b) = baseline {
        let _ = writeln!(
            p,
            "<div class=\"banner baseline\">Compared with baseline <b>{}</b> (seed {}, engine {}, \
{}, stormrig {}): each config's row is followed by the baseline's figure and the change.</div>",
            escape(&b.scenario),
            b.seed,
            b.engine.as_str(),
            secs(b.duration_s),
            escape(&b.stormrig_version)
        );
    }
    p.push_str("</header>\n");
}

fn nav(p: &mut String, run: &RunResult) {
    p.push_str("<nav><a href=\"#headline\">Headline</a>");
    if !run.gates.is_empty() {
        p.push_str("<a href=\"#gates\">Gates</a>");
    }
    p.push_str("<a href=\"#verdicts\">Verdicts</a><a href=\"#summary\">Summary table</a>");
    if run.configs.iter().any(|c| !c.layers.is_empty()) {
        p.push_str("<a href=\"#layers\">Layers</a>");
    }
    if providers::shown(run) {
        p.push_str("<a href=\"#providers\">Providers</a>");
    }
    if classes::shown(run) {
        p.push_str("<a href=\"#classes\">Request classes</a>");
    }
    p.push_str("<a href=\"#budget\">Budget drain</a><a href=\"#charts\">Over time</a>");
    for s in charts::TIME_CHARTS {
        let _ = write!(p, "<a href=\"#{}\">{}</a>", s.id, s.title);
    }
    p.push_str(
        "<a href=\"#chart-breaker\">Circuit breaker state</a><a href=\"#latency\">Latency distribution</a>\
<a href=\"#policies\">Retry configs</a></nav>\n",
    );
}

fn int(n: u64) -> String {
    crate::metrics::verdict::thousands(n)
}

fn fixed(v: f64, d: usize) -> String {
    if v.is_finite() {
        format!("{v:.d$}")
    } else {
        "—".into()
    }
}

fn ms(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn success_ratio(c: &ConfigSummary) -> Option<f64> {
    let done = c.successes + c.failures;
    (done > 0).then(|| c.successes as f64 / done as f64)
}

fn recovery_text(c: &ConfigSummary) -> String {
    match (c.recovered, c.recovery_time_s) {
        (None, _) => "n/a".into(),
        (Some(false), _) => "never".into(),
        (Some(true), Some(t)) => secs(t),
        (Some(true), None) => "yes".into(),
    }
}

/// Which way a figure is better, for marking the best config and colouring changes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
    Neither,
}

/// A column of the summary table.
struct Column {
    label: &'static str,
    title: &'static str,
    better: Better,
    /// The figure compared across configs and against the baseline.
    value: fn(&ConfigSummary) -> Option<f64>,
    /// The figure as shown (already escaped HTML).
    show: fn(&ConfigSummary) -> String,
}

const COLUMNS: &[Column] = &[
    Column {
        label: "upstream",
        title: "logical requests offered",
        better: Better::Neither,
        value: |c| Some(c.upstream_requests as f64),
        show: |c| int(c.upstream_requests),
    },
    Column {
        label: "attempts",
        title: "attempts the client sent",
        better: Better::Lower,
        value: |c| Some(c.attempts as f64),
        show: |c| int(c.attempts),
    },
    Column {
        label: "retries",
        title: "retries scheduled",
        better: Better::Lower,
        value: |c| Some(c.retries as f64),
        show: |c| int(c.retries),
    },
    Column {
        label: "arrivals",
        title: "requests the target counted",
        better: Better::Lower,
        value: |c| Some(c.downstream_arrivals as f64),
        show: |c| int(c.downstream_arrivals),
    },
    Column {
        label: "amplification / bound",
        title: "downstream arrivals ÷ upstream requests, beside the config's theoretical bound",
        better: Better::Lower,
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
        better: Better::Lower,
        value: |c| Some(c.peak_amplification_1s),
        show: |c| format!("{}×", fixed(c.peak_amplification_1s, 2)),
    },
    Column {
        label: "peak concurrency",
        title: "most requests in flight at the target at once",
        better: Better::Lower,
        value: |c| Some(c.peak_concurrency as f64),
        show: |c| int(c.peak_concurrency),
    },
    Column {
        label: "client peak",
        title: "most logical requests in flight at the client",
        better: Better::Lower,
        value: |c| Some(c.client_peak_in_flight as f64),
        show: |c| int(c.client_peak_in_flight),
    },
    Column {
        label: "success",
        title: "successes ÷ finished requests",
        better: Better::Higher,
        value: success_ratio,
        show: |c| success_ratio(c).map_or("—".into(), |r| format!("{}%", fixed(r * 100.0, 2))),
    },
    Column {
        label: "failures",
        title: "requests that finished failed",
        better: Better::Lower,
        value: |c| Some(c.failures as f64),
        show: |c| int(c.failures),
    },
    Column {
        label: "budget refusals",
        title: "retries the retry budget refused (first refusal time in brackets)",
        better: Better::Neither,
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
        better: Better::Neither,
        value: |c| Some(c.breaker_refusals as f64),
        show: |c| int(c.breaker_refusals),
    },
    Column {
        label: "dropped",
        title: "arrivals refused by the in-flight cap",
        better: Better::Lower,
        value: |c| Some(c.dropped as f64),
        show: |c| int(c.dropped),
    },
    Column {
        label: "p50 ms",
        title: "end-to-end latency, median",
        better: Better::Lower,
        value: |c| Some(c.latency_ms.p50),
        show: |c| ms(c.latency_ms.p50),
    },
    Column {
        label: "p99 ms",
        title: "end-to-end latency, 99th percentile",
        better: Better::Lower,
        value: |c| Some(c.latency_ms.p99),
        show: |c| ms(c.latency_ms.p99),
    },
    Column {
        label: "p99.9 ms",
        title: "end-to-end latency, 99.9th percentile",
        better: Better::Lower,
        value: |c| Some(c.latency_ms.p999),
        show: |c| ms(c.latency_ms.p999),
    },
    Column {
        label: "max ms",
        title: "end-to-end latency, maximum",
        better: Better::Lower,
        value: |c| Some(c.latency_ms.max),
        show: |c| ms(c.latency_ms.max),
    },
    Column {
        label: "recovery",
        title: "seconds from the end of the last fault until goodput was back",
        better: Better::Lower,
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
        better: Better::Neither,
        value: |_| None,
        show: |c| escape(&c.idempotency_rules),
    },
    Column {
        label: "duplicates",
        title: "logical requests the target executed more than once",
        better: Better::Lower,
        value: |c| Some(c.duplicate_executions as f64),
        show: |c| int(c.duplicate_executions),
    },
    Column {
        label: "extra side effects",
        title: "executions beyond the first per logical request (amount debited twice)",
        better: Better::Lower,
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
        better: Better::Neither,
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
        better: Better::Lower,
        value: |c| Some(c.target_shed as f64),
        show: |c| int(c.target_shed),
    },
];

/// Whether amplification exceeds its bound by more than the table's rounding shows.
fn over_bound(c: &ConfigSummary) -> bool {
    c.amplification_bound
        .is_some_and(|b| c.amplification >= b + 0.005)
}

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"sw\" style=\"--c:{}\"></span>",
        charts::css_color(i)
    )
}

fn headlines(p: &mut String, run: &RunResult, baseline: Option<&RunResult>) {
    p.push_str("<section id=\"headline\">\n<h2><a href=\"#headline\">Headline</a></h2>\n");
    // A figure every config shares does not separate them: say it once, above the cards.
    let same = |f: &dyn Fn(&ConfigSummary) -> String| {
        let v: Vec<String> = run.configs.iter().map(f).collect();
        (v.len() >= 2 && v.windows(2).all(|w| w[0] == w[1])).then(|| v[0].clone())
    };
    let same_peak = same(&|c| int(c.peak_concurrency));
    let same_recovery = same(&recovery_text);
    let shared: Vec<String> = [
        same_peak.as_ref().map(|v| format!("peak concurrency {v}")),
        same_recovery.as_ref().map(|v| format!("recovery {v}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !shared.is_empty() {
        let _ = writeln!(
            p,
            "<p class=\"k\">The same for every config: {}.</p>",
            escape(&shared.join(", "))
        );
    }
    p.push_str("<div class=\"cards\">\n");
    for (i, c) in run.configs.iter().enumerate() {
        let bound = c.amplification_bound.map_or(String::new(), |b| {
            format!(" <span class=\"bound\">bound ≤{}×</span>", fixed(b, 2))
        });
        let base = baseline
            .and_then(|b| b.configs.iter().find(|bc| bc.name == c.name))
            .map_or(String::new(), |bc| {
                format!(
                    "<p><span class=\"k\">baseline amplification</span> {}× {}</p>",
                    fixed(bc.amplification, 2),
                    change(c.amplification, bc.amplification, Better::Lower)
                )
            });
        let over = if over_bound(c) {
            " class=\"fail\" title=\"above the config's theoretical bound\""
        } else {
            ""
        };
        let _ = writeln!(
            p,
            "<div class=\"card\" style=\"--c:{}\"><h3>{}{}</h3>\
<p><span class=\"k\">amplification</span> <b{over}>{}×</b>{bound}</p>{base}\
{}<p><span class=\"k\">success</span> <b>{}</b></p>{}{}{}</div>",
            charts::css_color(i),
            swatch(i),
            escape(&c.name),
            fixed(c.amplification, 2),
            if same_peak.is_some() {
                String::new()
            } else {
                format!(
                    "<p><span class=\"k\">peak concurrency</span> <b>{}</b></p>",
                    int(c.peak_concurrency)
                )
            },
            success_ratio(c).map_or("—".into(), |r| format!("{}%", fixed(r * 100.0, 2))),
            if same_recovery.is_some() {
                String::new()
            } else {
                format!(
                    "<p><span class=\"k\">recovery</span> <b>{}</b></p>",
                    recovery_text(c)
                )
            },
            card_thresholds(c),
            c.verdict.as_ref().map_or(String::new(), |v| format!(
                "<p class=\"verdict\">{}</p>",
                escape(&v.sentence)
            )),
        );
    }
    if run.configs.is_empty() {
        p.push_str("<p class=\"empty\">This run has no config.</p>\n");
    }
    p.push_str("</div>\n</section>\n");
}

/// A headline card's line on the budget: where it drains, or why it never does.
fn card_thresholds(c: &ConfigSummary) -> String {
    threshold_text(c).map_or(String::new(), |text| {
        format!(
            "<p><span class=\"k\">budget drains</span> <b>{}</b></p>",
            escape(&text)
        )
    })
}

/// "above 21.5 % transient, 32.1 % throttling", or "no drain threshold"; None without a budget.
fn threshold_text(c: &ConfigSummary) -> Option<String> {
    let t = &c.budget.as_ref()?.thresholds;
    let list: Vec<String> = [
        ("transient", t.transient),
        ("throttling", t.throttling),
        ("timeout", t.timeout),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("{} % {k}", fmt_pct(v))))
    .collect();
    Some(if list.is_empty() {
        "no drain threshold".to_string()
    } else {
        format!("above {}", list.join(", "))
    })
}

/// One sentence per config: what its retries bought against the baseline.
fn verdicts(p: &mut String, run: &RunResult) {
    p.push_str("<section id=\"verdicts\">\n<h2><a href=\"#verdicts\">Verdicts</a></h2>\n");
    let base = run
        .configs
        .iter()
        .find_map(|c| c.verdict.as_ref().and_then(|v| v.baseline.clone()));
    let _ = writeln!(
        p,
        "<p class=\"k\">{}</p>\n<ul class=\"verdicts\">",
        match &base {
            Some(b) => format!(
                "Against {}: extra downstream load (during the faults when there are faults) \
and the successes it bought. A retry is useful when its request then succeeded, wasted when it \
still failed.",
                escape(b)
            ),
            None => "No baseline in this run (add a no-retry config or set baseline = \"NAME\"): \
retries split into useful (the request then succeeded) and wasted (it still failed)."
                .to_string(),
        }
    );
    for (i, c) in run.configs.iter().enumerate() {
        if let Some(v) = &c.verdict {
            let _ = writeln!(p, "<li>{}{}</li>", swatch(i), escape(&v.sentence));
        }
    }
    p.push_str("</ul>\n</section>\n");
}

/// Budget drain: thresholds beside the observed failure rate, the level in % of capacity,
/// and per fault window whether the thresholds predicted the drain.
fn budget_section(p: &mut String, run: &RunResult, drain_charts: &[charts::Chart]) {
    p.push_str("<section id=\"budget\">\n<h2><a href=\"#budget\">Budget drain</a></h2>\n");
    p.push_str(
        "<p class=\"k\">A budget drains when the failure rate of first attempts stays above its \
threshold (computed from its costs and refills). Each fault window: the observed rate, whether it \
was above a threshold (predicted) and whether the budget drained (observed).</p>\n",
    );
    let budgeted: Vec<&ConfigSummary> = run.configs.iter().filter(|c| c.budget.is_some()).collect();
    if budgeted.is_empty() {
        p.push_str("<p class=\"empty\">No config in this run has a retry budget.</p>\n");
    } else {
        p.push_str(
            "<div class=\"tablewrap\"><table class=\"text\">\n<thead><tr><th>config</th>\
<th>thresholds</th><th>drain start</th><th>first refusal</th><th>empty</th><th>refilled</th>\
<th>lowest level</th><th>fault windows: observed rate · predicted / observed</th></tr></thead>\n<tbody>\n",
        );
        for c in budgeted {
            let b = c.budget.as_ref().expect("filtered");
            let t = |v: Option<f64>| v.map_or("—".to_string(), secs);
            let windows: Vec<String> = b
                .windows
                .iter()
                .zip(&c.fault_windows)
                .map(|(w, r)| {
                    let yn = |x: bool| if x { "drains" } else { "holds" };
                    format!(
                        "{}–{}: {} % · {} / {}",
                        w.start_s,
                        w.end_s,
                        fmt_pct(r.failure_rate_all),
                        yn(w.drain_predicted),
                        yn(w.drain_observed)
                    )
                })
                .collect();
            let reasons: Vec<String> = b
                .no_threshold_reasons
                .iter()
                .map(|(k, why)| format!("no {k}: {why}"))
                .collect();
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.name),
                escape(&threshold_text(c).unwrap_or_default()),
                if reasons.is_empty() { String::new() } else { format!("<br><span class=\"k\">{}</span>", escape(&reasons.join("; "))) },
                t(b.drain_start_s),
                t(b.first_refusal_s),
                t(b.empty_s),
                t(b.refilled_s),
                b.lowest_level_pct.map_or("—".into(), |v| format!("{} %", fixed(v, 0))),
                escape(&windows.join("; ")),
            );
        }
        p.push_str("</tbody></table></div>\n");
    }
    legend(p, run);
    p.push_str("<div class=\"grid\">\n");
    for c in drain_charts {
        chart_figure(p, c);
    }
    p.push_str("</div>\n</section>\n");
}

fn gates(p: &mut String, run: &RunResult) {
    if run.gates.is_empty() {
        return;
    }
    let failed = run.gates.iter().filter(|g| g.label() == "FAIL").count();
    let passed = run.gates.iter().filter(|g| g.passed).count();
    let _ = write!(
        p,
        "<section id=\"gates\">\n<h2><a href=\"#gates\">Gates</a></h2>\n<p>{} of {} verdicts \
passed{}.</p>\n<div class=\"tablewrap\"><table class=\"text\">\n<thead><tr><th>gate</th><th>config</th>\
<th>figure</th><th>limit</th><th>measured</th><th>verdict</th></tr></thead>\n<tbody>\n",
        passed,
        run.gates.len(),
        if failed > 0 {
            format!(", <span class=\"fail\">{failed} failed</span>")
        } else {
            String::new()
        }
    );
    for g in &run.gates {
        let _ = writeln!(
            p,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.gate),
            escape(&g.config),
            escape(&g.figure),
            escape(&g.op),
            fixed(g.limit, 3),
            g.measured.map_or("—".into(), |m| fixed(m, 3)),
            match g.label() {
                "PASS" => "<span class=\"ok\">pass</span>",
                "INCOMPLETE" => "<span class=\"fail\">incomplete</span>",
                _ => "<span class=\"fail\">FAIL</span>",
            }
        );
    }
    p.push_str("</tbody></table></div>\n</section>\n");
}

/// The change from `base` to `now`, coloured by whether it is an improvement.
fn change(now: f64, base: f64, better: Better) -> String {
    if !(now.is_finite() && base.is_finite()) {
        return if now == base {
            "<span class=\"flat\">±0%</span>".into()
        } else {
            "<span class=\"flat\">—</span>".into()
        };
    }
    if now == base {
        return "<span class=\"flat\">±0%</span>".into();
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
        "<span class=\"{class}\">{}{}%</span>",
        if pct > 0.0 { "+" } else { "" },
        fixed(pct, 1)
    )
}

fn table(p: &mut String, run: &RunResult, baseline: Option<&RunResult>) {
    p.push_str(
        "<section id=\"summary\">\n<h2><a href=\"#summary\">Summary table</a></h2>\n\
<p class=\"k\">Amplification is shown beside its theoretical bound. Which config is \
better depends on the question: the verdicts above weigh the load each config added \
against the successes it bought.</p>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>config</th>",
    );
    for col in COLUMNS {
        let _ = write!(p, "<th title=\"{}\">{}</th>", escape(col.title), col.label);
    }
    p.push_str("</tr></thead>\n<tbody>\n");
    for (i, c) in run.configs.iter().enumerate() {
        let _ = write!(p, "<tr><td>{}{}</td>", swatch(i), escape(&c.name));
        for col in COLUMNS {
            let mut class = Vec::new();
            if col.label.starts_with("amplification") && over_bound(c) {
                class.push("over");
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
                    for col in COLUMNS {
                        let d = match ((col.value)(c), (col.value)(bc)) {
                            (Some(now), Some(base)) => change(now, base, col.better),
                            _ => String::new(),
                        };
                        let _ = write!(p, "<td>{} {d}</td>", (col.show)(bc));
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

/// One table per config of a multi-hop topology: what each hop received and sent, and the
/// measured amplification beside the worst case (K+1)^L and the budget bound.
fn layers(p: &mut String, run: &RunResult) {
    if run.configs.iter().all(|c| c.layers.is_empty()) {
        return;
    }
    p.push_str(
        "<section id=\"layers\">\n<h2><a href=\"#layers\">Layers</a></h2>\n\
<p class=\"k\">Each hop from the load generator's client to the layer nearest the target. \
Amplification is attempts / arrivals at the hop; cumulative is attempts / upstream requests. \
The last hop's attempts are the requests the target counted.</p>\n",
    );
    for (i, c) in run.configs.iter().enumerate() {
        if c.layers.is_empty() {
            continue;
        }
        let bound = |b: Option<f64>| b.map(|v| fixed(v, 2) + "×").unwrap_or_else(|| "—".into());
        let _ = write!(
            p,
            "<h3>{}{}</h3>\n<p>measured {}× at the target · worst case (K+1)^L {} · budget bound {}</p>\n\
<div class=\"tablewrap\"><table>\n<thead><tr><th>layer</th><th>arrivals</th><th>attempts</th>\
<th>retries</th><th>budget refusals</th><th>peak in flight</th><th>amplification</th>\
<th>cumulative</th><th>max attempts</th></tr></thead>\n<tbody>\n",
            swatch(i),
            escape(&c.name),
            fixed(c.amplification, 2),
            bound(c.topology_bound),
            bound(c.amplification_bound),
        );
        for l in &c.layers {
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
<td>{}×</td><td>{}×</td><td>{}</td></tr>",
                escape(&l.name),
                int(l.arrivals),
                int(l.attempts),
                int(l.retries),
                int(l.budget_refusals),
                int(l.peak_in_flight),
                fixed(l.amplification, 2),
                fixed(l.cumulative_amplification, 2),
                l.max_attempts
            );
        }
        p.push_str("</tbody></table></div>\n");
    }
    p.push_str("</section>\n");
}

fn legend(p: &mut String, run: &RunResult) {
    p.push_str("<div class=\"legend\">");
    for (i, c) in run.configs.iter().enumerate() {
        let _ = write!(p, "<span>{}{}</span>", swatch(i), escape(&c.name));
    }
    // Time-series rows of configs missing from the summary are drawn after the others.
    let mut extra: Vec<&str> = Vec::new();
    for r in &run.timeseries {
        if !run.configs.iter().any(|c| c.name == r.config) && !extra.contains(&r.config.as_str()) {
            extra.push(&r.config);
        }
    }
    for (k, name) in extra.iter().enumerate() {
        let _ = write!(
            p,
            "<span>{}{}</span>",
            swatch(run.configs.len() + k),
            escape(name)
        );
    }
    if !run.faults.is_empty() {
        p.push_str(
            "<span><span class=\"sw\" style=\"--c:rgba(214,39,40,.18)\"></span>fault window</span>",
        );
    }
    p.push_str("</div>\n");
}

fn chart_figure(p: &mut String, c: &charts::Chart) {
    let _ = write!(
        p,
        "<figure id=\"{}\" class=\"chart{}\">\n<h3><a href=\"#{}\">{}</a></h3>\n",
        c.id,
        if c.empty { " empty-chart" } else { "" },
        c.id,
        escape(c.title)
    );
    // plotters' SVG root carries its size and viewBox; the stylesheet scales it to the cell.
    p.push_str(c.svg.trim());
    p.push_str("\n<figcaption>");
    for (glyph, label) in &c.notes {
        let _ = write!(
            p,
            "<span class=\"n\"><span class=\"g\">{glyph}</span>{}</span>",
            escape(label)
        );
    }
    p.push_str("</figcaption>\n</figure>\n");
}

fn latency_table(p: &mut String, run: &RunResult) {
    p.push_str(
        "<figure id=\"latency-table\"><h3>Latency percentiles, ms</h3>\n<div class=\"tablewrap\"><table>\n\
<thead><tr><th>config</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th>\
<th>attempt p50</th><th>attempt p99</th><th>attempt max</th></tr></thead>\n<tbody>\n",
    );
    for (i, c) in run.configs.iter().enumerate() {
        let l = &c.latency_ms;
        let a = &c.attempt_latency_ms;
        let _ = writeln!(
            p,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(i),
            escape(&c.name),
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            ms(a.p50),
            ms(a.p99),
            ms(a.max)
        );
    }
    p.push_str("</tbody></table></div>\n<figcaption>End-to-end latency (with retries) and single-attempt latency.</figcaption></figure>\n");
}

fn policies(p: &mut String, run: &RunResult) {
    p.push_str("<section id=\"policies\">\n<h2><a href=\"#policies\">Retry configs</a></h2>\n");
    for (i, c) in run.configs.iter().enumerate() {
        let json = serde_json::to_string_pretty(&c.policy).unwrap_or_else(|_| "null".into());
        let reasons: Vec<String> = c
            .failures_by_reason
            .iter()
            .map(|(k, v)| format!("{}: {}", escape(k), int(*v)))
            .collect();
        let outcomes: Vec<String> = c
            .attempts_by_outcome
            .iter()
            .map(|(k, v)| format!("{}: {}", escape(k), int(*v)))
            .collect();
        let _ = write!(
            p,
            "<details><summary>{}{}</summary>\n<p><span class=\"k\">failures by reason</span> {}<br>\
<span class=\"k\">attempts by outcome</span> {}<br><span class=\"k\">unfinished at end</span> {} · \
<span class=\"k\">target served ok</span> {}<br><span class=\"k\">idempotency</span> {} · \
<span class=\"k\">executions</span> {} · <span class=\"k\">debited</span> {} (extra {})</p>\n<pre>{}</pre></details>\n",
            swatch(i),
            escape(&c.name),
            if reasons.is_empty() { "none".into() } else { reasons.join(", ") },
            if outcomes.is_empty() { "none".into() } else { outcomes.join(", ") },
            int(c.unfinished),
            int(c.target_served_ok),
            escape(&c.idempotency_rules),
            int(c.idempotency.executions),
            int(c.idempotency.debited),
            int(c.idempotency.extra_debited),
            escape(&json)
        );
        for (class, policy) in &c.class_policies {
            let json = serde_json::to_string_pretty(policy).unwrap_or_else(|_| "null".into());
            let _ = writeln!(
                p,
                "<details><summary>{}{} · class {}: a policy of its own</summary>\n<pre>{}</pre></details>",
                swatch(i),
                escape(&c.name),
                escape(class),
                escape(&json)
            );
        }
    }
    p.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_five() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn thousands() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(1234567), "1,234,567");
    }

    #[test]
    fn change_colours_by_direction() {
        assert!(change(2.0, 1.0, Better::Lower).contains("up"));
        assert!(change(2.0, 1.0, Better::Lower).contains("+100.0%"));
        assert!(change(0.5, 1.0, Better::Lower).contains("down"));
        assert!(change(1.0, 1.0, Better::Lower).contains("±0%"));
        assert!(change(1.0, 0.0, Better::Lower).contains("new"));
    }
}
