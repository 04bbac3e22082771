//! The self-contained HTML page of a sweep (`sweep.html`) or a capacity search
//! (`capacity.html`): inline SVG charts drawn by plotters, an inline stylesheet, no script,
//! and a Content-Security-Policy of `default-src 'none'`, so the page fetches nothing.
//!
//! One varied field: each headline figure against it, one line per config, the computed
//! drain thresholds as dashed verticals when the field is a failure rate. Two fields: per
//! config, the metastability map (each cell recovered / recovered late / never recovered,
//! the edge of "never" drawn as a line) and a heat map of amplification.

use std::fmt::Write as _;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::capacity::{CapacityResult, Outcome};
use super::run::{Recovery, SweepResult};
use crate::report::gates::fmt_num;
use crate::report::html::{color, css_color, escape};

const W: u32 = 660;
const H: u32 = 300;
const FONT: &str = "sans-serif";
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";
const STYLE: &str = "html{font:14px/1.45 system-ui,sans-serif;background:#f7f7fa;color:#1d1d24}\
main{max-width:1400px;margin:0 auto;padding:24px 28px}h1{font-size:24px;margin:0 0 4px}\
h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #e3e3ea}.desc{color:#62626e}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}\
figure{margin:0;background:#fff;border:1px solid #e3e3ea;border-radius:6px;padding:10px 12px}\
figure svg{display:block;width:100%;height:auto}figcaption{font-size:12px;color:#62626e}\
table{border-collapse:collapse;background:#fff;font-variant-numeric:tabular-nums}\
th,td{padding:4px 8px;border-bottom:1px solid #e3e3ea;text-align:left}\
.legend span{margin-right:16px}.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px}\
.pass{color:#1b7f3b;font-weight:700}.fail{color:#b3261e;font-weight:700}";

/// The figures drawn against a single varied field, with their titles.
const LINE_FIGURES: &[(&str, &str)] = &[
    ("amplification", "Amplification (downstream / upstream)"),
    ("peak_amplification_1s", "Worst 1 s amplification"),
    ("budget_refusals", "Retries the budget refused"),
    (
        super::run::SUSTAINED_REFUSAL_SHARE,
        "Sustained refusals (share of late fault seconds refusing)",
    ),
    (
        super::run::DRAINED_SHARE,
        "Drained (share of late fault seconds below half the budget)",
    ),
    ("success_share", "Success share"),
    ("latency_ms.p99", "Latency p99, ms"),
    (
        "recovery_time_s",
        "Recovery time, s (gap = never recovered, or overloaded before the fault)",
    ),
    ("peak_concurrency", "Peak concurrency at the target"),
];

const RECOVERED: RGBColor = RGBColor(120, 190, 130);
const LATE: RGBColor = RGBColor(240, 190, 80);
const NEVER: RGBColor = RGBColor(214, 70, 60);
const NO_FAULT: RGBColor = RGBColor(200, 200, 205);
/// Overloaded before the fault: a cool colour apart from the traffic-light classes, since
/// it is neither a recovery nor a failure to recover.
const OVERLOADED: RGBColor = RGBColor(118, 86, 170);
const LABEL: RGBColor = RGBColor(70, 70, 80);

type Draw = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn head(p: &mut String, title: &str) {
    let _ = write!(
        p,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{} · stormrig</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(title)
    );
}

fn legend(p: &mut String, configs: &[String]) {
    p.push_str("<p class=\"legend\">");
    for (i, c) in configs.iter().enumerate() {
        let _ = write!(
            p,
            "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>",
            css_color(i),
            escape(c)
        );
    }
    p.push_str("</p>\n");
}

fn figure(p: &mut String, title: &str, svg: &str, caption: &str) {
    let _ = write!(
        p,
        "<figure>\n<h3>{}</h3>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(title),
        svg.trim(),
        escape(caption)
    );
}

/// Plot coordinates of every chart here: two f64 axes.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// An SVG chart of the page's size over `x` × `y`, drawn by `body`.
fn svg_chart(
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    y_label_area: u32,
    body: impl FnOnce(&mut Plot<'_, '_>) -> Draw,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(18)
            .x_label_area_size(34)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(x, y)
            .map_err(err)?;
        body(&mut chart)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Renders the sweep page.
pub fn sweep(r: &SweepResult) -> Result<String, String> {
    let mut p = String::with_capacity(128 * 1024);
    head(&mut p, &format!("{} sweep", r.scenario));
    let axes: Vec<String> = r
        .axes
        .iter()
        .map(|a| {
            format!(
                "{} = {}..{} step {}",
                a.path,
                a.label(a.from),
                a.label(a.to),
                a.label(a.step)
            )
        })
        .collect();
    let _ = write!(
        p,
        "<h1>{} · sweep</h1>\n<p class=\"desc\">{}</p>\n<p>Varied: {}. {} points × {} configs, \
{} seed(s) from {} each, simulator. Recovered late: after {} s.</p>\n",
        escape(&r.scenario),
        escape(&r.description),
        escape(&axes.join("; ")),
        r.points.len(),
        r.configs.len(),
        r.seeds,
        r.seed,
        fmt_num(r.late_after_s)
    );
    legend(&mut p, &r.configs);
    if r.axes.len() == 1 {
        p.push_str("<h2>Figures against the varied field</h2>\n<div class=\"grid\">\n");
        for (fig, title) in LINE_FIGURES {
            let svg = line_chart(r, fig)?;
            let caption = if r.thresholds.is_empty() {
                String::new()
            } else {
                let marks: Vec<String> = r
                    .thresholds
                    .iter()
                    .map(|t| format!("{} {:.1} %", t.config, t.value * 100.0))
                    .collect();
                format!(
                    "dashed verticals: computed drain thresholds ({})",
                    marks.join(", ")
                )
            };
            figure(&mut p, title, &svg, &caption);
        }
        p.push_str("</div>\n");
    } else {
        let _ = write!(
            p,
            "<h2>Metastability map</h2>\n<p>Each cell one simulator run. The black line is the \
edge of never-recovered cells. Overloaded: goodput was already more than {} % below the \
offered load before the fault, so there was no normal to recover to; such a point meets no \
objective.</p>\n",
            fmt_num(crate::metrics::OVERLOAD_TOLERANCE * 100.0)
        );
        recovery_legend(&mut p);
        p.push_str("<div class=\"grid\">\n");
        for (ci, name) in r.configs.iter().enumerate() {
            let svg = heat_map(r, ci, None)?;
            figure(&mut p, &format!("{name}: recovery"), &svg, "");
        }
        p.push_str("</div>\n<h2>Amplification</h2>\n<div class=\"grid\">\n");
        for (ci, name) in r.configs.iter().enumerate() {
            let svg = heat_map(r, ci, Some("amplification"))?;
            figure(
                &mut p,
                &format!("{name}: amplification"),
                &svg,
                "darker = more downstream load per upstream request",
            );
        }
        p.push_str("</div>\n");
    }
    p.push_str("<h2>Recovery per point</h2>\n<table>\n<thead><tr><th>point</th>");
    for c in &r.configs {
        let _ = write!(p, "<th>{}</th>", escape(c));
    }
    p.push_str("</tr></thead>\n<tbody>\n");
    for pt in &r.points {
        let _ = write!(p, "<tr><td>{}</td>", escape(&pt.label));
        for c in &pt.cells {
            let _ = write!(p, "<td>{}</td>", escape(&recovery_words(c)));
        }
        p.push_str("</tr>\n");
    }
    let _ = write!(
        p,
        "</tbody></table>\n<footer><p class=\"desc\">stormrig {} · sweep.csv and sweep.json hold every figure</p></footer>\n</main>\n</body>\n</html>\n",
        escape(&r.stormrig_version)
    );
    Ok(p)
}

fn line_chart(r: &SweepResult, fig: &str) -> Result<String, String> {
    let axis = &r.axes[0];
    let series: Vec<Vec<(f64, Option<f64>)>> = (0..r.configs.len())
        .map(|ci| {
            r.points
                .iter()
                .map(|p| {
                    let v = p
                        .cells
                        .get(ci)
                        .and_then(|c| c.figures.get(fig).copied().flatten());
                    (p.coords[0], v)
                })
                .collect()
        })
        .collect();
    let max = series
        .iter()
        .flatten()
        .filter_map(|(_, v)| *v)
        .fold(0.0_f64, f64::max);
    let y1 = if max > 0.0 { max * 1.08 } else { 1.0 };
    let (x0, x1) = (axis.from, axis.to.max(axis.from + axis.step));
    svg_chart(x0..x1, 0.0..y1, 58, |chart| {
        let xf = |v: &f64| fmt_num((v * 1e4).round() / 1e4);
        let yf = |v: &f64| fmt_num((v * 100.0).round() / 100.0);
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(232, 232, 236))
            .label_style((FONT, 12).into_font().color(&LABEL))
            .x_desc(axis.label_unit())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .draw()
            .map_err(err)?;
        for t in &r.thresholds {
            let ci = r.configs.iter().position(|c| *c == t.config).unwrap_or(0);
            chart
                .draw_series(DashedLineSeries::new(
                    [(t.value, 0.0), (t.value, y1)],
                    6,
                    4,
                    color(ci).stroke_width(1),
                ))
                .map_err(err)?;
        }
        for (ci, s) in series.iter().enumerate() {
            // A null breaks the line (e.g. a recovery that never came).
            let mut seg: Vec<(f64, f64)> = Vec::new();
            let mut segs = Vec::new();
            for (x, v) in s {
                match v {
                    Some(y) => seg.push((*x, *y)),
                    None => segs.push(std::mem::take(&mut seg)),
                }
            }
            segs.push(seg);
            for seg in segs.iter().filter(|s| !s.is_empty()) {
                chart
                    .draw_series(LineSeries::new(
                        seg.iter().copied(),
                        color(ci).stroke_width(2),
                    ))
                    .map_err(err)?;
                chart
                    .draw_series(seg.iter().map(|p| Circle::new(*p, 2, color(ci).filled())))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

fn recovery_color(r: Recovery) -> RGBColor {
    match r {
        Recovery::Recovered => RECOVERED,
        Recovery::Late => LATE,
        Recovery::Never => NEVER,
        Recovery::Overloaded => OVERLOADED,
        Recovery::NoFault => NO_FAULT,
    }
}

/// `#rrggbb`.
fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The legend of the recovery maps: one swatch per class.
fn recovery_legend(p: &mut String) {
    p.push_str("<p class=\"legend\">");
    for (class, words) in [
        (Recovery::Recovered, "recovered"),
        (Recovery::Late, "recovered late"),
        (
            Recovery::Never,
            "never recovered (goodput not back before the load ended)",
        ),
        (Recovery::Overloaded, "overloaded before the fault"),
        (Recovery::NoFault, "no fault"),
    ] {
        let _ = write!(
            p,
            "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>",
            hex(recovery_color(class)),
            escape(words)
        );
    }
    p.push_str("</p>\n");
}

/// A cell's recovery in words: the class, its time, or what overloaded it.
fn recovery_words(c: &super::run::Cell) -> String {
    let fig = |k: &str| c.figures.get(k).copied().flatten();
    match c.recovery {
        Recovery::Overloaded => {
            match (fig("pre_fault_goodput_rps"), fig("pre_fault_offered_rps")) {
                (Some(g), Some(o)) => format!(
                    "overloaded before the fault: goodput {} of {} req/s",
                    fmt_num(g.round()),
                    fmt_num(o.round())
                ),
                _ => "overloaded before the fault".into(),
            }
        }
        class => match fig("recovery_time_s") {
            Some(t) => format!("{} ({} s)", class.as_str(), fmt_num(t)),
            None => class.as_str().into(),
        },
    }
}

/// One config's map over two fields: recovery class, or a figure's intensity.
fn heat_map(r: &SweepResult, ci: usize, fig: Option<&str>) -> Result<String, String> {
    let (ax, ay) = (&r.axes[0], &r.axes[1]);
    let (nx, ny) = (ax.values.len(), ay.values.len());
    let max = r
        .points
        .iter()
        .filter_map(|p| fig.and_then(|f| p.cells[ci].figures.get(f).copied().flatten()))
        .fold(0.0_f64, f64::max);
    svg_chart(0.0..nx as f64, 0.0..ny as f64, 58, |chart| {
        let xf = |v: &f64| label_at(ax, *v);
        let yf = |v: &f64| label_at(ay, *v);
        chart
            .configure_mesh()
            .disable_mesh()
            .label_style((FONT, 12).into_font().color(&LABEL))
            .x_desc(ax.path.as_str())
            .y_desc(ay.path.as_str())
            .x_labels(nx.min(12))
            .y_labels(ny.min(10))
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .draw()
            .map_err(err)?;
        let class = |i: usize, j: usize| r.points[i * ny + j].cells[ci].recovery;
        for i in 0..nx {
            for j in 0..ny {
                let cell = &r.points[i * ny + j].cells[ci];
                let fill = match fig {
                    None => recovery_color(cell.recovery),
                    Some(f) => {
                        let v = cell.figures.get(f).copied().flatten().unwrap_or(0.0);
                        let k = if max > 0.0 { v / max } else { 0.0 };
                        let c = |base: u8, dark: u8| {
                            (f64::from(base) - k * (f64::from(base) - f64::from(dark))) as u8
                        };
                        RGBColor(c(245, 31), c(246, 60), c(250, 140))
                    }
                };
                let (x, y) = (i as f64, j as f64);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        fill.filled(),
                    )))
                    .map_err(err)?;
            }
        }
        // The edge of never-recovered cells.
        let edge = BLACK.stroke_width(3);
        let never = |i: usize, j: usize| class(i, j) == Recovery::Never;
        for i in 0..nx {
            for j in 0..ny {
                let (x, y) = (i as f64, j as f64);
                if i + 1 < nx && never(i, j) != never(i + 1, j) {
                    chart
                        .draw_series(LineSeries::new([(x + 1.0, y), (x + 1.0, y + 1.0)], edge))
                        .map_err(err)?;
                }
                if j + 1 < ny && never(i, j) != never(i, j + 1) {
                    chart
                        .draw_series(LineSeries::new([(x, y + 1.0), (x + 1.0, y + 1.0)], edge))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    })
}

/// The axis value of the cell whose band holds coordinate `v` (cell i spans [i, i+1)).
fn label_at(axis: &super::Axis, v: f64) -> String {
    let i = v.floor().max(0.0) as usize;
    axis.values.get(i).map_or(String::new(), |x| axis.label(*x))
}

/// Renders the capacity page.
pub fn capacity(r: &CapacityResult) -> Result<String, String> {
    let mut p = String::with_capacity(64 * 1024);
    head(&mut p, &format!("{} capacity", r.scenario));
    let _ = write!(
        p,
        "<h1>{} · capacity</h1>\n<p class=\"desc\">{}</p>\n<p>The {} {} at which every objective \
holds ({}), per config: grid {}..{} step {}, then bisection to {}; simulator, seed {}.</p>\n",
        escape(&r.scenario),
        escape(&r.description),
        match r.direction {
            super::capacity::Direction::Largest => "largest",
            super::capacity::Direction::Smallest => "smallest",
        },
        escape(&r.axis.path),
        escape(&r.objectives.join("; ")),
        escape(&r.axis.label(r.axis.from)),
        escape(&r.axis.label(r.axis.to)),
        escape(&r.axis.label(r.axis.step)),
        escape(&r.axis.label(r.resolution)),
        r.seed
    );
    p.push_str("<h2>Capacity</h2>\n<table>\n<thead><tr><th>config</th><th>limit</th><th>headroom</th><th>binding objective</th><th>overloaded before the fault</th></tr></thead>\n<tbody>\n");
    for c in &r.configs {
        let found = match c.outcome {
            Outcome::Found { limit, beyond } => format!(
                "{} (fails at {})",
                r.axis.label(limit),
                r.axis.label(beyond)
            ),
            Outcome::Range { low, high } => format!(
                "between {} and {}: not monotone",
                r.axis.label(low),
                r.axis.label(high)
            ),
            Outcome::HoldsEverywhere { at } => {
                format!("beyond {} (whole range holds)", r.axis.label(at))
            }
            Outcome::HoldsNowhere => "none in range".into(),
        };
        let overloaded = c.overloaded.map_or("-".into(), |o| o.describe(&r.axis));
        let _ = writeln!(
            p,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.config),
            escape(&found),
            c.headroom.map_or("-".into(), |h| format!("{:.2}×", h)),
            escape(&c.binding.join("; ")),
            escape(&overloaded)
        );
    }
    p.push_str("</tbody></table>\n");
    if !r.gates.is_empty() {
        p.push_str("<h2>Gates</h2>\n<table><thead><tr><th>gate</th><th>config</th><th>measured</th><th>result</th></tr></thead><tbody>\n");
        for g in &r.gates {
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                escape(&g.gate),
                escape(&g.config),
                crate::report::gates::fmt_measured(g.measured),
                if g.passed { "pass" } else { "fail" },
                if g.passed { "PASS" } else { "FAIL" }
            );
        }
        p.push_str("</tbody></table>\n");
    }
    p.push_str("<h2>Probes</h2>\n<div class=\"grid\">\n");
    let svg = probe_chart(r)?;
    figure(
        &mut p,
        "Every simulated value, per config",
        &svg,
        "green dot: every objective holds; red cross: one fails; purple cross: overloaded \
before the fault (goodput already below the offered load), so every objective fails; \
black bar: the limit found",
    );
    let _ = write!(
        p,
        "</div>\n<footer><p class=\"desc\">stormrig {} · capacity.json and capacity.csv hold every probe</p></footer>\n</main>\n</body>\n</html>\n",
        escape(&r.stormrig_version)
    );
    Ok(p)
}

fn probe_chart(r: &CapacityResult) -> Result<String, String> {
    let n = r.configs.len().max(1);
    let (x0, x1) = (r.axis.from, r.axis.to.max(r.axis.from + r.axis.step));
    svg_chart(x0..x1, -0.5..(n as f64 - 0.5), 140, |chart| {
        let names: Vec<String> = r.configs.iter().map(|c| c.config.clone()).collect();
        let yf = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let xf = |v: &f64| fmt_num((v * 1e3).round() / 1e3);
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(232, 232, 236))
            .label_style((FONT, 12).into_font().color(&LABEL))
            .x_desc(r.axis.label_unit())
            .y_labels(n)
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .draw()
            .map_err(err)?;
        for (ci, c) in r.configs.iter().enumerate() {
            let y = ci as f64;
            for pr in &c.probes {
                if pr.passed {
                    chart
                        .draw_series(std::iter::once(Circle::new(
                            (pr.value, y),
                            4,
                            RECOVERED.filled(),
                        )))
                        .map_err(err)?;
                } else {
                    let c = if pr.overloaded.is_some() {
                        OVERLOADED
                    } else {
                        NEVER
                    };
                    chart
                        .draw_series(std::iter::once(Cross::new(
                            (pr.value, y),
                            4,
                            c.stroke_width(2),
                        )))
                        .map_err(err)?;
                }
            }
            if let Some(l) = c.limit {
                chart
                    .draw_series(LineSeries::new(
                        [(l, y - 0.3), (l, y + 0.3)],
                        BLACK.stroke_width(3),
                    ))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

/// Writes a page into `dir` under `name`.
pub fn write(dir: &std::path::Path, name: &str, page: &str) -> Draw {
    crate::report::files::write_atomic(dir, name, page.as_bytes()).map_err(err)
}
