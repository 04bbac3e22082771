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
mod columns;
mod providers;
mod time_specs;

/// The config colours, shared with the sweep and capacity pages.
pub(crate) use charts::{color, css_color};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::metrics::numbers::fmt_pct;
use crate::metrics::{ConfigSummary, RunResult};
use crate::report::figures::Better;
use crate::report::files::{self, FilesError};
use columns::change;

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
    nav(&mut p, run, &time_charts);
    headlines(&mut p, run, baseline);
    verdicts(&mut p, run);
    gates(&mut p, run);
    columns::table(&mut p, run, baseline);
    layers(&mut p, run);
    providers::section(&mut p, run, provider_chart.as_ref());
    classes::section(&mut p, run);
    budget_section(&mut p, run, &drain_charts);
    p.push_str("<section id=\"charts\">\n<h2><a href=\"#charts\">Over time</a></h2>\n");
    legend(&mut p, run);
    drawn_charts(&mut p, &time_charts);
    p.push_str("</section>\n");
    p.push_str(
        "<section id=\"latency\">\n<h2><a href=\"#latency\">Latency distribution</a></h2>\n",
    );
    legend(&mut p, run);
    p.push_str("<div class=\"grid\">\n");
    if !distribution.empty {
        chart_figure(&mut p, &distribution);
    }
    latency_table(&mut p, run);
    p.push_str("</div>\n");
    if distribution.empty {
        let _ = writeln!(
            p,
            "<p class=\"empty\">Not drawn, nothing in this run to show: {}.</p>",
            escape(distribution.title)
        );
    }
    p.push_str("</section>\n");
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

/// The page's stylesheet, inlined into its `<style>` (the page fetches nothing). The
/// leading line break is the one the page has always carried before the first rule.
const STYLE: &str = concat!("\n", include_str!("style.css"));

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

/// The charts that have something to show, in a grid; the names of those that have not, in
/// one line below it (a panel with nothing in it is not drawn).
fn drawn_charts(p: &mut String, charts: &[charts::Chart]) {
    p.push_str("<div class=\"grid\">\n");
    for c in charts.iter().filter(|c| !c.empty) {
        chart_figure(p, c);
    }
    p.push_str("</div>\n");
    let left: Vec<&str> = charts.iter().filter(|c| c.empty).map(|c| c.title).collect();
    if !left.is_empty() {
        let _ = writeln!(
            p,
            "<p class=\"empty\">Not drawn, nothing in this run to show: {}.</p>",
            escape(&left.join(", "))
        );
    }
}

fn nav(p: &mut String, run: &RunResult, time_charts: &[charts::Chart]) {
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
    for c in time_charts.iter().filter(|c| !c.empty) {
        let _ = write!(p, "<a href=\"#{}\">{}</a>", c.id, escape(c.title));
    }
    p.push_str(
        "<a href=\"#latency\">Latency distribution</a><a href=\"#policies\">Retry configs</a></nav>\n",
    );
}

fn int(n: u64) -> String {
    crate::metrics::numbers::thousands(n)
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
    if c.overloaded == Some(true) {
        return "overloaded".into();
    }
    match (c.recovered, c.recovery_time_s) {
        (None, _) => "n/a".into(),
        (Some(false), _) => "never".into(),
        (Some(true), Some(t)) => secs(t),
        (Some(true), None) => "yes".into(),
    }
}

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
    if let Some(r) = crate::report::recommend::recommend(&run.configs) {
        let _ = writeln!(
            p,
            "<p class=\"recommendation\" id=\"recommendation\">{}</p>",
            escape(&r.sentence)
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
{}<p><span class=\"k\">success</span> <b>{}</b></p>{}{}{}{}</div>",
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
            success_ratio(c).map_or("—".into(), |r| format!("{} %", fixed(r * 100.0, 2))),
            // The headline latency is what a caller who got an answer waited: failures
            // that end fast would make an overall percentile look better than any success.
            if c.successes > 0 {
                format!(
                    "<p><span class=\"k\">p99 of successes</span> <b>{} ms</b></p>",
                    ms(c.success_latency_ms.p99)
                )
            } else {
                "<p><span class=\"k\">p99 of successes</span> <b>— (none succeeded)</b></p>".into()
            },
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
                "<tr><td>{}</td><td class=\"wrap\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>",
                escape(&c.name),
                escape(&threshold_text(c).unwrap_or_default()),
                if reasons.is_empty() { String::new() } else { format!("<br><span class=\"k\">{}</span>", escape(&reasons.join("; "))) },
                t(b.drain_start_s),
                t(b.first_refusal_s),
                t(b.empty_s),
                t(b.refilled_s),
                b.lowest_level_pct.map_or("—".into(), |v| format!("{} %", fixed(v, 0))),
                windows.iter().map(|w| escape(w)).collect::<Vec<_>>().join("<br>"),
            );
        }
        p.push_str("</tbody></table></div>\n");
    }
    legend(p, run);
    drawn_charts(p, drain_charts);
    p.push_str("</section>\n");
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
<th>success p50</th><th>success p99</th><th>failure p50</th><th>failure p99</th>\
<th>attempt p50</th><th>attempt p99</th><th>attempt max</th></tr></thead>\n<tbody>\n",
    );
    for (i, c) in run.configs.iter().enumerate() {
        let l = &c.latency_ms;
        let a = &c.attempt_latency_ms;
        let (ok, failed) = (&c.success_latency_ms, &c.failure_latency_ms);
        // An empty side has no latency: a dash, not a 0 ms that reads as fast.
        let side = |n: u64, v: f64| if n > 0 { ms(v) } else { "—".into() };
        let _ = writeln!(
            p,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(i),
            escape(&c.name),
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            side(c.successes, ok.p50),
            side(c.successes, ok.p99),
            side(c.failures, failed.p50),
            side(c.failures, failed.p99),
            ms(a.p50),
            ms(a.p99),
            ms(a.max)
        );
    }
    p.push_str("</tbody></table></div>\n<figcaption>End-to-end latency (with retries) of every request, of those that succeeded and of those that failed; and single-attempt latency.</figcaption></figure>\n");
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
}
