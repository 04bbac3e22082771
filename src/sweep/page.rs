//! The self-contained HTML page of a sweep (`sweep.html`) or a capacity search
//! (`capacity.html`): inline SVG charts drawn by plotters, an inline stylesheet, no script,
//! and a Content-Security-Policy of `default-src 'none'`, so the page fetches nothing.
//!
//! One varied field: each headline figure against it, one line per config, the computed
//! drain thresholds as dashed verticals when the field is a failure rate. Two fields: per
//! config, the metastability map (each cell recovered / recovered late / never recovered /
//! overloaded before the fault, the edge of "never" drawn as a line) and a heat map of
//! amplification. The maps are drawn as plain SVG rectangles, each with its value in a
//! `<title>` (the browser shows it on hover); every amplification map of a page shares one
//! colour scale, shown as a colour bar with its minimum and maximum, so equal values are
//! equal colours across configs and a light map means little amplification, not merely
//! the least of its own config.

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
/// The amplification scale's ends: the page's smallest value is drawn in `SCALE_LOW`, its
/// largest in `SCALE_HIGH`.
const SCALE_LOW: RGBColor = RGBColor(245, 246, 250);
const SCALE_HIGH: RGBColor = RGBColor(31, 60, 140);
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
    if r.partial {
        p.push_str(
            "<p class=\"partial\"><strong>Partial:</strong> the sweep was interrupted; \
             only the points that finished are shown.</p>\n",
        );
    }
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
            "<h2>Metastability map</h2>\n<p>Each cell one simulator run (hover for its \
figures). The black line is the edge of never-recovered cells. Overloaded: goodput was \
already more than {} % below the offered load before the fault, so there was no normal \
to recover to; such a point meets no objective.</p>\n",
            fmt_num(crate::metrics::OVERLOAD_TOLERANCE * 100.0)
        );
        recovery_legend(&mut p);
        p.push_str("<div class=\"grid\">\n");
        for (ci, name) in r.configs.iter().enumerate() {
            let svg = map_svg(r, ci, &MapKind::Recovery);
            figure(&mut p, &format!("{name}: recovery"), &svg, "");
        }
        let scale = Scale::of(r, "amplification");
        let _ = write!(
            p,
            "</div>\n<h2>Amplification</h2>\n<p>Downstream arrivals per upstream request, \
one colour scale for every config of the page: {} (lightest) to {} (darkest).</p>\n\
<div class=\"grid\">\n",
            times(scale.min),
            times(scale.max)
        );
        for (ci, name) in r.configs.iter().enumerate() {
            let svg = map_svg(r, ci, &MapKind::Figure("amplification", scale));
            figure(
                &mut p,
                &format!("{name}: amplification"),
                &svg,
                "darker = more downstream load per upstream request, on the colour bar's scale",
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

/// An amplification-like value as a multiple: "1.04×".
fn times(v: f64) -> String {
    format!("{v:.2}×")
}

/// One colour scale shared by every map of a figure on a page.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    min: f64,
    max: f64,
}

impl Scale {
    /// The smallest and largest value of `fig` over every point and config of the sweep
    /// (0..0 when it has none).
    fn of(r: &SweepResult, fig: &str) -> Scale {
        let values = r
            .points
            .iter()
            .flat_map(|p| &p.cells)
            .filter_map(|c| c.figures.get(fig).copied().flatten())
            .filter(|v| v.is_finite());
        let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if min > max {
            Scale { min: 0.0, max: 0.0 }
        } else {
            Scale { min, max }
        }
    }

    /// The colour of `v`: linear from `SCALE_LOW` at `min` to `SCALE_HIGH` at `max`.
    fn color(self, v: f64) -> RGBColor {
        let k = if self.max > self.min {
            ((v - self.min) / (self.max - self.min)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mix = |a: u8, b: u8| (f64::from(a) + k * (f64::from(b) - f64::from(a))).round() as u8;
        RGBColor(
            mix(SCALE_LOW.0, SCALE_HIGH.0),
            mix(SCALE_LOW.1, SCALE_HIGH.1),
            mix(SCALE_LOW.2, SCALE_HIGH.2),
        )
    }
}

/// What a map over two fields colours its cells by.
enum MapKind<'a> {
    /// The cell's recovery class.
    Recovery,
    /// A figure, on a scale shared across the page.
    Figure(&'a str, Scale),
}

// The map's geometry inside the page's W × H chart box.
const MAP_LEFT: f64 = 70.0;
const MAP_TOP: f64 = 12.0;
const MAP_RIGHT: f64 = W as f64 - 96.0;
const MAP_BOTTOM: f64 = H as f64 - 48.0;

/// One config's map over two fields as SVG: a rectangle per point with its value in a
/// `<title>`, the axes' values, the edge of never-recovered cells, and for a figure the
/// colour bar of its scale.
fn map_svg(r: &SweepResult, ci: usize, kind: &MapKind<'_>) -> String {
    let (ax, ay) = (&r.axes[0], &r.axes[1]);
    let (nx, ny) = (ax.values.len().max(1), ay.values.len().max(1));
    let (cw, ch) = (
        (MAP_RIGHT - MAP_LEFT) / nx as f64,
        (MAP_BOTTOM - MAP_TOP) / ny as f64,
    );
    // Cell (i, j) of the grid: x grows with the first field, y upwards with the second.
    let x_of = |i: usize| MAP_LEFT + i as f64 * cw;
    let y_of = |j: usize| MAP_BOTTOM - (j + 1) as f64 * ch;
    let mut svg = String::with_capacity(256 * nx * ny + 4096);
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
viewBox=\"0 0 {W} {H}\" font-family=\"{FONT}\" font-size=\"12\">\n\
<rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{H}\" fill=\"#ffffff\"/>\n"
    );
    let config = &r.configs[ci];
    for (pi, pt) in r.points.iter().enumerate() {
        let (i, j) = (pi / ny, pi % ny);
        let Some(cell) = pt.cells.get(ci) else {
            continue;
        };
        let (fill, what) = match kind {
            MapKind::Recovery => (recovery_color(cell.recovery), recovery_words(cell)),
            MapKind::Figure(fig, scale) => match cell.figures.get(*fig).copied().flatten() {
                Some(v) => (scale.color(v), format!("{fig} {}", times(v))),
                None => (NO_FAULT, format!("{fig}: none")),
            },
        };
        let _ = writeln!(
            svg,
            "<rect class=\"cell\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" \
fill=\"{}\"><title>{} · {}: {}</title></rect>",
            x_of(i),
            y_of(j),
            cw,
            ch,
            hex(fill),
            escape(config),
            escape(&pt.label),
            escape(&what)
        );
    }
    // The edge of never-recovered cells.
    let class = |i: usize, j: usize| {
        r.points
            .get(i * ny + j)
            .and_then(|p| p.cells.get(ci))
            .map(|c| c.recovery)
    };
    let never = |i: usize, j: usize| class(i, j) == Some(Recovery::Never);
    let mut edge = String::new();
    for i in 0..nx {
        for j in 0..ny {
            if i + 1 < nx && never(i, j) != never(i + 1, j) {
                let x = x_of(i + 1);
                let _ = write!(edge, "M{x:.2} {:.2}V{:.2}", y_of(j) + ch, y_of(j));
            }
            if j + 1 < ny && never(i, j) != never(i, j + 1) {
                let y = y_of(j);
                let _ = write!(edge, "M{:.2} {y:.2}H{:.2}", x_of(i), x_of(i) + cw);
            }
        }
    }
    if !edge.is_empty() {
        let _ = writeln!(
            svg,
            "<path d=\"{edge}\" fill=\"none\" stroke=\"#000000\" stroke-width=\"3\"/>"
        );
    }
    // Axis values, at most 12 across and 10 up.
    let label = hex(LABEL);
    let every_x = nx.div_ceil(12);
    for (i, v) in ax.values.iter().enumerate().step_by(every_x) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\" fill=\"{label}\">{}</text>",
            x_of(i) + cw / 2.0,
            MAP_BOTTOM + 16.0,
            escape(&ax.label(*v))
        );
    }
    let every_y = ny.div_ceil(10);
    for (j, v) in ay.values.iter().enumerate().step_by(every_y) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\" fill=\"{label}\">{}</text>",
            MAP_LEFT - 6.0,
            y_of(j) + ch / 2.0 + 4.0,
            escape(&ay.label(*v))
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\" fill=\"{label}\">{}</text>",
        (MAP_LEFT + MAP_RIGHT) / 2.0,
        MAP_BOTTOM + 36.0,
        escape(&ax.path)
    );
    let (yx, yy) = (14.0, (MAP_TOP + MAP_BOTTOM) / 2.0);
    let _ = writeln!(
        svg,
        "<text x=\"{yx:.2}\" y=\"{yy:.2}\" text-anchor=\"middle\" fill=\"{label}\" \
transform=\"rotate(-90 {yx:.2} {yy:.2})\">{}</text>",
        escape(&ay.path)
    );
    if let MapKind::Figure(fig, scale) = kind {
        color_bar(&mut svg, fig, *scale);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Steps of the colour bar.
const BAR_STEPS: usize = 32;

/// The colour bar of `scale` right of the map: its maximum on top, its minimum below.
fn color_bar(svg: &mut String, fig: &str, scale: Scale) {
    let (x, w) = (MAP_RIGHT + 18.0, 14.0);
    let step = (MAP_BOTTOM - MAP_TOP) / BAR_STEPS as f64;
    let _ = writeln!(
        svg,
        "<g class=\"colorbar\" data-min=\"{}\" data-max=\"{}\"><title>{} scale: {} to {}</title>",
        scale.min,
        scale.max,
        escape(fig),
        times(scale.min),
        times(scale.max)
    );
    for k in 0..BAR_STEPS {
        // Step k from the bottom, coloured at its middle.
        let v = scale.min + (scale.max - scale.min) * (k as f64 + 0.5) / BAR_STEPS as f64;
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{w:.2}\" height=\"{:.2}\" fill=\"{}\"/>",
            MAP_BOTTOM - (k + 1) as f64 * step,
            step + 0.5,
            hex(scale.color(v))
        );
    }
    let label = hex(LABEL);
    for (y, v, class) in [
        (MAP_TOP + 4.0, scale.max, "max"),
        (MAP_BOTTOM, scale.min, "min"),
    ] {
        let _ = writeln!(
            svg,
            "<text class=\"{class}\" x=\"{:.2}\" y=\"{y:.2}\" fill=\"{label}\">{}</text>",
            x + w + 4.0,
            times(v)
        );
    }
    svg.push_str("</g>\n");
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
    if r.model_tolerance > 0.0 {
        let _ = writeln!(
            p,
            "<p>A limit holds with the service as modeled <em>and</em> with every service time \
{} % longer (<code>--model-tolerance</code>): near a knee a service a little slower than its \
model moves the answer. \"As modeled fails at\" is the knife edge; the margin is how far the \
limit lies below it.</p>",
            crate::report::gates::fmt_num((r.model_tolerance * 1000.0).round() / 10.0)
        );
    }
    if r.partial {
        p.push_str(
            "<p class=\"partial\"><strong>Partial:</strong> the search was interrupted; \
             only the configs whose scan finished are shown.</p>\n",
        );
    }
    p.push_str("<h2>Capacity</h2>\n<table>\n<thead><tr><th>config</th><th>limit</th><th>as modeled fails at</th><th>margin</th><th>headroom</th><th>binding objective</th><th>overloaded before the fault</th></tr></thead>\n<tbody>\n");
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
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.config),
            escape(&found),
            c.edge.map_or("-".into(), |e| escape(&r.axis.label(e))),
            super::capacity::margin(c).map_or("-".into(), |m| format!("{:.1} %", m * 100.0)),
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
    live_section(&mut p, r);
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

/// `--confirm`'s checks: per config and objective the simulated and live figures at the
/// limit and beyond its knife edge, and every disagreement in words.
fn live_section(p: &mut String, r: &CapacityResult) {
    if r.configs.iter().all(|c| c.live.is_none()) {
        return;
    }
    p.push_str("<h2>Live confirmation</h2>\n<table>\n<thead><tr><th>config</th><th>objective</th><th>value</th><th>simulated</th><th>live</th><th>value</th><th>simulated</th><th>live</th><th>live agrees</th></tr></thead>\n<tbody>\n");
    let cell = |m: Option<f64>, ok: bool| {
        format!(
            "<td class=\"{}\">{}</td>",
            if ok { "pass" } else { "fail" },
            escape(&crate::report::gates::fmt_measured(m))
        )
    };
    for c in &r.configs {
        let Some(l) = &c.live else {
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td colspan=\"8\">not run (no single limit)</td></tr>",
                escape(&c.config)
            );
            continue;
        };
        for o in &l.objectives {
            let _ = writeln!(
                p,
                "<tr><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td>{}{}<td class=\"{}\">{}</td></tr>",
                escape(&c.config),
                escape(&o.objective),
                escape(&r.axis.label(l.limit)),
                cell(o.sim_at_limit, o.sim_passed_at_limit),
                cell(o.live_at_limit, o.live_passed_at_limit),
                escape(&r.axis.label(l.beyond)),
                cell(o.sim_beyond, o.sim_passed_beyond),
                cell(o.live_beyond, o.live_passed_beyond),
                if o.agrees() { "pass" } else { "fail" },
                if o.agrees() { "yes" } else { "NO" }
            );
        }
    }
    p.push_str("</tbody></table>\n");
    let notes: Vec<&String> = r
        .configs
        .iter()
        .flat_map(|c| c.live.iter().flat_map(|l| &l.disagreements))
        .collect();
    if !notes.is_empty() {
        p.push_str("<ul>\n");
        for d in notes {
            let _ = writeln!(p, "<li>live disagrees: {}</li>", escape(d));
        }
        p.push_str("</ul>\n");
    }
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
