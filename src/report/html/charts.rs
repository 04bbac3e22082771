//! The report's charts, drawn with plotters' SVG backend from a [`RunResult`] only.
//!
//! Time charts are declared in [`TIME_CHARTS`] (`time_specs.rs`): a title, a y axis and a few [`Line`]s, each
//! a function of one [`SecondRow`]. Every config is overlaid in its own colour (the same
//! colour on every chart); the line style tells the figures of one chart apart. Adding a
//! per-second chart is one more entry in that table; charts of another shape (the breaker
//! strips, the latency distribution) are functions next to it, listed in [`all`].
//!
//! plotters' SVG backend escapes every text it writes (`<`, `>`, `&`, `"`, `'`), and we
//! pass no user string into an attribute of our own making, so names drawn into a chart
//! cannot break out of it.

use std::borrow::Cow;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::time_specs::{num, pct, Dash, Line, TimeSpec};
pub(crate) use super::time_specs::{BUDGET_CHART, TIME_CHARTS};
use crate::metrics::{RunResult, SecondRow};

/// Pixel size of a chart's SVG (scaled to its grid cell by the stylesheet).
const W: u32 = 660;
const H: u32 = 300;
const FONT: &str = "sans-serif";

/// Colour of the config at index `i`, the same on every chart and in the legends
/// (Tableau 10, which stays distinguishable for common colour-vision deficiencies).
pub(crate) fn color(i: usize) -> RGBColor {
    const P: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = P[i % P.len()];
    RGBColor(r, g, b)
}

/// `#rrggbb` of [`color`], for the HTML legends.
pub(crate) fn css_color(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

const FAULT_FILL: RGBAColor = RGBAColor(214, 39, 40, 0.10);
const FAULT_TEXT: RGBColor = RGBColor(160, 30, 30);
const GRID: RGBColor = RGBColor(232, 232, 236);
const AXIS: RGBColor = RGBColor(120, 120, 130);
const LABEL: RGBColor = RGBColor(70, 70, 80);

/// One drawn chart, ready for the page.
pub(crate) struct Chart {
    pub id: &'static str,
    pub title: &'static str,
    /// Plain text explaining the line styles (escaped by the page).
    pub notes: Vec<(&'static str, Cow<'static, str>)>,
    /// Set when no config has data for this chart (the chart is still drawn, empty).
    pub empty: bool,
    pub svg: String,
}

/// What a chart failed with (plotters reports its errors as text).
#[derive(Debug)]
pub(crate) struct ChartError(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        ChartError(e.to_string())
    }
}

/// The run's per-second time series split per config, in the order of `run.configs`, each sorted by second.
pub(crate) struct ConfigSeries<'a> {
    pub names: Vec<&'a str>,
    pub rows: Vec<Vec<&'a SecondRow>>,
}

impl<'a> ConfigSeries<'a> {
    pub(super) fn of(run: &'a RunResult) -> Self {
        let mut names: Vec<&str> = run.configs.iter().map(|c| c.name.as_str()).collect();
        // Rows of a config missing from the summary still get drawn, after the others.
        for r in &run.timeseries {
            if !names.contains(&r.config.as_str()) {
                names.push(&r.config);
            }
        }
        let mut rows: Vec<Vec<&SecondRow>> = vec![Vec::new(); names.len()];
        for r in &run.timeseries {
            if let Some(i) = names.iter().position(|n| *n == r.config) {
                rows[i].push(r);
            }
        }
        for v in &mut rows {
            v.sort_by_key(|r| r.second);
        }
        ConfigSeries { names, rows }
    }
}

/// The x extent of time charts: the run's duration, or the last second measured.
fn x_max(run: &RunResult, tl: &ConfigSeries<'_>) -> f64 {
    let last = tl
        .rows
        .iter()
        .filter_map(|v| v.last())
        .map(|r| r.second as f64 + 1.0)
        .fold(0.0, f64::max);
    let faults = run.faults.iter().map(|f| f.end_s).fold(0.0, f64::max);
    let m = run.duration_s.max(last).max(faults);
    if m.is_finite() && m > 0.0 {
        m
    } else {
        1.0
    }
}

/// Splits one config's rows into contiguous runs of measured points (x at mid-second).
fn segments(rows: &[&SecondRow], f: fn(&SecondRow) -> Option<f64>) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let mut prev: Option<u64> = None;
    for r in rows {
        let v = f(r).filter(|v| v.is_finite());
        let contiguous = prev.is_some_and(|p| p + 1 == r.second);
        match v {
            Some(v) if contiguous || cur.is_empty() => cur.push((r.second as f64 + 0.5, v)),
            Some(v) => {
                out.push(std::mem::take(&mut cur));
                cur.push((r.second as f64 + 0.5, v));
            }
            None => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
        prev = Some(r.second);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn upper(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// Draws one polyline in a dash style (solid lines are one SVG element per segment).
fn draw_line<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    pts: &[(f64, f64)],
    color: RGBColor,
    dash: Dash,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let style = color.stroke_width(2);
    if pts.len() == 1 {
        // A lone second: a dot, or it would not show at all.
        chart
            .draw_series(std::iter::once(Circle::new(pts[0], 2, color.filled())))
            .map_err(|e| ChartError(e.to_string()))?;
        return Ok(());
    }
    let r = match dash {
        Dash::Solid => chart.draw_series(LineSeries::new(pts.iter().copied(), style)),
        Dash::Dashed => chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 7, 4, style)),
        Dash::Dotted => chart.draw_series(DashedLineSeries::new(
            pts.iter().copied(),
            2,
            3,
            color.stroke_width(2),
        )),
    };
    r.map(|_| ()).map_err(|e| ChartError(e.to_string()))
}

/// The mesh every chart shares: faint grid, grey axes, small labels.
macro_rules! mesh {
    ($chart:expr) => {
        $chart
            .configure_mesh()
            .light_line_style(GRID.mix(0.0))
            .bold_line_style(GRID)
            .axis_style(AXIS)
            .label_style((FONT, 12).into_font().color(&LABEL))
            .axis_desc_style((FONT, 12).into_font().color(&LABEL))
    };
}

/// Shaded fault windows, each labelled at its top left.
fn draw_faults<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    run: &RunResult,
    y: (f64, f64),
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    // Each window is its own band: edges drawn, labels staggered, so adjacent windows
    // (a failure rate stepping up) do not merge into one.
    for (i, f) in run.faults.iter().enumerate() {
        if !(f.start_s.is_finite() && f.end_s.is_finite()) {
            continue;
        }
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(f.start_s, y.0), (f.end_s, y.1)],
                FAULT_FILL.filled(),
            )))
            .map_err(|e| ChartError(e.to_string()))?;
        for x in [f.start_s, f.end_s] {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, y.0), (x, y.1)],
                    FAULT_TEXT.mix(0.35).stroke_width(1),
                )))
                .map_err(|e| ChartError(e.to_string()))?;
        }
        let label: String = f.described().chars().take(40).collect();
        let top = y.1 - (y.1 - y.0) * 0.06 * (i % 2) as f64;
        chart
            .draw_series(std::iter::once(Text::new(
                label,
                (f.start_s, top),
                (FONT, 11).into_font().color(&FAULT_TEXT),
            )))
            .map_err(|e| ChartError(e.to_string()))?;
    }
    Ok(())
}

fn area(buf: &mut String) -> DrawingArea<SVGBackend<'_>, Shift> {
    SVGBackend::with_string(buf, (W, H)).into_drawing_area()
}

/// A time chart's white canvas, axes (seconds across, `y_desc` up) and fault windows.
fn time_axes<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    run: &RunResult,
    xm: f64,
    (y0, y1): (f64, f64),
    y_desc: &str,
    y_fmt: fn(f64) -> String,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>, ChartError>
{
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .margin_right(18)
        .x_label_area_size(34)
        .y_label_area_size(58)
        .build_cartesian_2d(0.0..xm, y0..y1)?;
    let y_fmt = move |v: &f64| y_fmt(*v);
    let x_fmt = |v: &f64| format!("{v:.0}");
    mesh!(chart)
        .x_desc("seconds")
        .y_desc(y_desc)
        .x_labels(12)
        .y_labels(6)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;
    draw_faults(&mut chart, run, (y0, y1))?;
    Ok(chart)
}

/// One line's segments, per config.
type PerConfig = Vec<Vec<Vec<(f64, f64)>>>;

/// Draws one [`TimeSpec`] for every config.
pub(crate) fn time_chart(
    spec: &TimeSpec,
    run: &RunResult,
    tl: &ConfigSeries<'_>,
) -> Result<Chart, ChartError> {
    time_chart_with(spec, run, tl, &[])
}

/// Draws one [`TimeSpec`] for every config, with horizontal `marks` across it.
pub(crate) fn time_chart_with(
    spec: &TimeSpec,
    run: &RunResult,
    tl: &ConfigSeries<'_>,
    marks: &[Mark],
) -> Result<Chart, ChartError> {
    let xm = x_max(run, tl);
    // Per line, per config: the segments to draw.
    let series: Vec<PerConfig> = spec
        .lines
        .iter()
        .map(|l| tl.rows.iter().map(|rows| segments(rows, l.value)).collect())
        .collect();
    let max = series
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .map(|p| p.1)
        .chain(marks.iter().map(|m| m.y))
        .fold(0.0, f64::max);
    let empty = series.iter().flatten().all(|segs| segs.is_empty());
    let (y0, y1) = spec.y_range.unwrap_or((0.0, upper(max)));
    let mut svg = String::new();
    {
        let root = area(&mut svg);
        let mut chart = time_axes(&root, run, xm, (y0, y1), spec.y_desc, spec.y_fmt)?;
        let rows = chart.plotting_area().get_pixel_range().1;
        let per_pixel = (y1 - y0) / f64::from((rows.end - rows.start).max(1));
        let at = label_rows(marks, MARK_LABEL_PX * per_pixel, (y0, y1));
        for (m, y) in marks.iter().zip(at) {
            draw_line(
                &mut chart,
                &[(0.0, m.y), (xm, m.y)],
                color(m.config),
                Dash::Dashed,
            )?;
            chart.draw_series(std::iter::once(Text::new(
                m.label.clone(),
                (xm, y),
                (FONT, 11)
                    .into_font()
                    .color(&color(m.config))
                    .pos(Pos::new(HPos::Right, VPos::Bottom)),
            )))?;
        }
        // Dashed figures first, so the solid headline figure stays on top.
        for (li, line) in spec.lines.iter().enumerate().rev() {
            for (ci, segs) in series[li].iter().enumerate() {
                for seg in segs {
                    draw_line(&mut chart, seg, color(ci), line.dash)?;
                }
            }
        }
        if empty {
            chart.draw_series(std::iter::once(Text::new(
                "no data in this run",
                (xm / 2.0, (y0 + y1) / 2.0),
                (FONT, 14)
                    .into_font()
                    .color(&AXIS)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))?;
        }
        root.present()?;
    }
    Ok(Chart {
        id: spec.id,
        title: spec.title,
        notes: spec
            .lines
            .iter()
            .map(|l| (l.dash.glyph(), l.label.into()))
            .collect(),
        empty,
        svg,
    })
}

/// Failed first attempts / first attempts in one second, whatever the class.
fn first_failure_rate(r: &SecondRow) -> Option<f64> {
    let failed = r.first_failed_transient
        + r.first_failed_throttling
        + r.first_failed_timeout
        + r.first_failed_other;
    (r.first_attempts > 0).then(|| failed as f64 / r.first_attempts as f64)
}

/// The observed failure rate of first attempts per second.
pub(crate) const DRAIN_CHART: TimeSpec = TimeSpec {
    id: "chart-drain",
    title: "Failure rate of first attempts against drain thresholds",
    y_desc: "failed first attempts",
    lines: &[Line {
        label: "observed failure rate of first attempts",
        dash: Dash::Solid,
        value: first_failure_rate,
    }],
    y_range: None,
    y_fmt: pct,
};

/// The height of a mark's label, in pixels, with a pixel between labels.
const MARK_LABEL_PX: f64 = 13.0;

/// Where each mark's label sits: just above its line, unless that would draw it over
/// another label; then labels are pushed up (and, at the top of the chart, down) until
/// each is `gap` from the next. Marks at the same height are not told apart by drawing
/// their labels over each other.
fn label_rows(marks: &[Mark], gap: f64, (y0, y1): (f64, f64)) -> Vec<f64> {
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by(|&a, &b| marks[a].y.total_cmp(&marks[b].y).then(a.cmp(&b)));
    let mut at = vec![0.0; marks.len()];
    let mut below = f64::NEG_INFINITY;
    for &i in &order {
        at[i] = marks[i].y.max(below + gap).max(y0);
        below = at[i];
    }
    // Labels pushed past the top come back down, each a gap below the one above it.
    let mut above = y1 - gap;
    for &i in order.iter().rev() {
        at[i] = at[i].min(above);
        above = at[i] - gap;
    }
    at
}

/// A horizontal line across a time chart in a config's colour, labelled at its right end.
pub(crate) struct Mark {
    pub config: usize,
    pub label: String,
    pub y: f64,
}

/// [`DRAIN_CHART`] with each config's drain thresholds as horizontal dashed lines in its
/// colour: where the observed rate is above a line, that config's budget is expected to
/// drain.
pub(crate) fn drain_chart(run: &RunResult, tl: &ConfigSeries<'_>) -> Result<Chart, ChartError> {
    let marks: Vec<Mark> = run
        .configs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.budget.as_ref().map(|b| (i, c, b)))
        .flat_map(|(i, c, b)| {
            // Kinds that drain at the same rate share one line and one label.
            let mut levels: Vec<(f64, Vec<&str>)> = Vec::new();
            for (k, t) in [
                ("transient", b.thresholds.transient),
                ("throttling", b.thresholds.throttling),
                ("timeout", b.thresholds.timeout),
            ] {
                let Some(t) = t else { continue };
                match levels.iter_mut().find(|(y, _)| *y == t) {
                    Some((_, kinds)) => kinds.push(k),
                    None => levels.push((t, vec![k])),
                }
            }
            levels.into_iter().map(move |(t, kinds)| Mark {
                config: i,
                label: format!(
                    "{} {} {}",
                    c.name.chars().take(24).collect::<String>(),
                    kinds.join(", "),
                    pct1(t)
                ),
                y: t,
            })
        })
        .collect();
    let mut chart = time_chart_with(&DRAIN_CHART, run, tl, &marks)?;
    chart.notes.push((
        Dash::Dashed.glyph(),
        "drain threshold (the budget drains above it)".into(),
    ));
    Ok(chart)
}

fn pct1(v: f64) -> String {
    format!("{} %", crate::metrics::numbers::fmt_pct(v))
}

/// Breaker state per config as horizontal strips: open in full colour, half-open pale.
pub(crate) fn breaker_chart(run: &RunResult, tl: &ConfigSeries<'_>) -> Result<Chart, ChartError> {
    let xm = x_max(run, tl);
    let n = tl.names.len().max(1) as i32;
    let empty = tl.rows.iter().flatten().all(|r| r.breaker_state.is_none());
    let h = (90 + 34 * n as u32).min(H * 2);
    let labels: Vec<String> = tl.names.iter().map(|n| shortened(n, 18)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(18)
            .x_label_area_size(34)
            .y_label_area_size(130)
            .build_cartesian_2d(0.0..xm, (0..n - 1).into_segmented())?;
        let y_fmt = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if *i >= 0 => {
                // Row 0 is drawn at the top.
                let idx = (n - 1 - *i) as usize;
                labels.get(idx).cloned().unwrap_or_default()
            }
            _ => String::new(),
        };
        let x_fmt = |v: &f64| format!("{v:.0}");
        mesh!(chart)
            .disable_y_mesh()
            .x_desc("seconds")
            .x_labels(12)
            .y_labels(n as usize)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for f in &run.faults {
            if f.start_s.is_finite() && f.end_s.is_finite() {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [
                        (f.start_s, SegmentValue::Exact(0)),
                        (f.end_s, SegmentValue::Exact(n)),
                    ],
                    FAULT_FILL.filled(),
                )))?;
            }
        }
        for (ci, rows) in tl.rows.iter().enumerate() {
            let row = n - 1 - ci as i32;
            let c = color(ci);
            // Closed: a thin baseline in the config's colour, so every row is identifiable.
            if rows.iter().any(|r| r.breaker_state.is_some()) {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(row)),
                        (xm, SegmentValue::Exact(row + 1)),
                    ],
                    c.mix(0.06).filled(),
                )))?;
            }
            for (s0, s1, st) in state_spans(rows) {
                let alpha = match st {
                    0 => continue,
                    1 => 0.35,
                    _ => 0.9,
                };
                chart.draw_series(std::iter::once(Rectangle::new(
                    [
                        (s0 as f64, SegmentValue::Exact(row)),
                        (s1 as f64, SegmentValue::Exact(row + 1)),
                    ],
                    c.mix(alpha).filled(),
                )))?;
            }
        }
        if empty {
            chart.draw_series(std::iter::once(Text::new(
                "no config has a circuit breaker",
                (xm / 2.0, SegmentValue::CenterOf(n / 2)),
                (FONT, 14)
                    .into_font()
                    .color(&AXIS)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))?;
        }
        root.present()?;
    }
    Ok(Chart {
        id: "chart-breaker",
        title: "Circuit breaker state",
        notes: vec![
            ("▇▇", "open".into()),
            ("▒▒", "half-open".into()),
            (
                "░░",
                "closed (row tinted when the config has a breaker)".into(),
            ),
        ],
        empty,
        svg,
    })
}

/// `name` cut to `max` characters, with an ellipsis when it was longer.
fn shortened(name: &str, max: usize) -> String {
    let mut s: String = name.chars().take(max).collect();
    if name.chars().count() > max {
        s.push('…');
    }
    s
}

/// Runs of consecutive seconds in one breaker state (0 closed, 1 half-open, 2 open), as
/// (first second, second after the last, state): one rectangle each instead of one per
/// second.
fn state_spans(rows: &[&SecondRow]) -> Vec<(u64, u64, u8)> {
    let mut run_start: Option<(u64, u8)> = None;
    let mut spans = Vec::new();
    let mut last = 0u64;
    for r in rows {
        let st = r.breaker_state.unwrap_or(0);
        match run_start {
            Some((_, st0)) if st0 == st && r.second == last + 1 => {}
            Some((s0, st0)) => {
                spans.push((s0, last + 1, st0));
                run_start = Some((r.second, st));
            }
            None => run_start = Some((r.second, st)),
        }
        last = r.second;
    }
    if let Some((s0, st0)) = run_start {
        spans.push((s0, last + 1, st0));
    }
    spans
}

/// Arrivals per second at each provider, as the provider counted them, for every config
/// (with failover or not): config by colour, provider by line style. `None` when no
/// provider was reached.
pub(crate) fn provider_chart(run: &RunResult) -> Result<Option<Chart>, ChartError> {
    const DASHES: [Dash; 3] = [Dash::Solid, Dash::Dashed, Dash::Dotted];
    let reached = || {
        run.configs
            .iter()
            .flat_map(|c| &c.providers)
            .filter(|p| p.arrivals > 0)
    };
    let mut names: Vec<&str> = Vec::new();
    for p in reached() {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let dash_of = |name: &str| DASHES[names.iter().position(|n| *n == name).unwrap_or(0) % 3];
    let xm = x_max(run, &ConfigSeries::of(run));
    let max = reached()
        .flat_map(|p| &p.arrivals_per_s)
        .map(|&n| n as f64)
        .fold(0.0, f64::max);
    let (y0, y1) = (0.0, upper(max));
    let mut svg = String::new();
    {
        let root = area(&mut svg);
        let mut chart = time_axes(&root, run, xm, (y0, y1), "arrivals / s", num)?;
        for (ci, c) in run.configs.iter().enumerate() {
            for p in c.providers.iter().filter(|p| p.arrivals > 0) {
                // No arrival after the last counted second is a count of 0, drawn as one.
                let seconds = p.arrivals_per_s.len().max(xm.ceil() as usize);
                let pts: Vec<(f64, f64)> = (0..seconds)
                    .map(|s| {
                        let n = p.arrivals_per_s.get(s).copied().unwrap_or(0);
                        (s as f64 + 0.5, n as f64)
                    })
                    .collect();
                if !pts.is_empty() {
                    draw_line(&mut chart, &pts, color(ci), dash_of(&p.name))?;
                }
            }
        }
        root.present()?;
    }
    Ok(Some(Chart {
        id: "chart-providers",
        title: "Arrivals per second at each provider",
        notes: names
            .iter()
            .map(|n| (dash_of(n).glyph(), Cow::Owned(format!("provider {n}"))))
            .collect(),
        empty: max == 0.0,
        svg,
    }))
}

/// x of the "nines" axis: −log10(1 − p/100); p = 100 has no place on it.
fn nines(p: f64) -> Option<f64> {
    let q = 1.0 - p / 100.0;
    (q > 0.0 && p >= 0.0).then(|| -q.log10())
}

/// The HDR latency distribution (percentile curve), every config overlaid.
pub(crate) fn latency_distribution(run: &RunResult) -> Result<Chart, ChartError> {
    let curves: Vec<Vec<(f64, f64)>> = run
        .configs
        .iter()
        .map(|c| {
            c.latency_curve
                .iter()
                .filter(|p| p[1].is_finite())
                .filter_map(|p| nines(p[0]).map(|x| (x, p[1])))
                .collect()
        })
        .collect();
    let empty = curves.iter().all(|c| c.is_empty());
    let x_hi = curves
        .iter()
        .flatten()
        .map(|p| p.0)
        .fold(3.0, f64::max)
        .ceil();
    let max = curves.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let (y0, y1) = (0.0, upper(max));
    let mut svg = String::new();
    {
        let root = area(&mut svg);
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(36)
            .x_label_area_size(34)
            .y_label_area_size(58)
            .build_cartesian_2d(0.0..x_hi, y0..y1)?;
        let x_fmt = |v: &f64| {
            // Label only the whole nines: 0%, 90%, 99%, 99.9% …
            let k = v.round();
            if (v - k).abs() > 1e-6 || k < 0.0 {
                return String::new();
            }
            let k = k as usize;
            match k {
                0 => "0 %".to_string(),
                1 => "90 %".to_string(),
                _ => format!("99.{} %", "9".repeat(k - 2)).replace("99. %", "99 %"),
            }
        };
        let y_fmt = |v: &f64| num(*v);
        mesh!(chart)
            .x_desc("percentile")
            .y_desc("latency, ms")
            .x_labels(x_hi as usize + 1)
            .y_labels(6)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for (ci, pts) in curves.iter().enumerate() {
            if !pts.is_empty() {
                draw_line(&mut chart, pts, color(ci), Dash::Solid)?;
            }
        }
        if empty {
            chart.draw_series(std::iter::once(Text::new(
                "no latency recorded",
                (x_hi / 2.0, y1 / 2.0),
                (FONT, 14)
                    .into_font()
                    .color(&AXIS)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))?;
        }
        root.present()?;
    }
    Ok(Chart {
        id: "chart-latency-distribution",
        title: "Latency distribution (HDR percentile curve)",
        notes: vec![(
            "━━",
            "end-to-end latency at each percentile; x axis in nines, −log10(1 − p)".into(),
        )],
        empty,
        svg,
    })
}

/// Every chart of the page, in order: the time charts, the breaker strips, the distribution.
/// The page's charts: the time charts, the budget-drain pair, the latency distribution.
pub(crate) struct Charts {
    pub time: Vec<Chart>,
    pub drain: Vec<Chart>,
    pub distribution: Chart,
}

pub(crate) fn all(run: &RunResult) -> Result<Charts, ChartError> {
    let tl = ConfigSeries::of(run);
    let mut time = Vec::with_capacity(TIME_CHARTS.len() + 1);
    for spec in TIME_CHARTS {
        time.push(time_chart(spec, run, &tl)?);
    }
    // The breaker strips go after the retries, before success rate.
    let at = TIME_CHARTS
        .iter()
        .position(|s| s.id == "chart-retries")
        .map_or(time.len(), |i| i + 1);
    time.insert(at, breaker_chart(run, &tl)?);
    Ok(Charts {
        time,
        drain: vec![drain_chart(run, &tl)?, time_chart(&BUDGET_CHART, run, &tl)?],
        distribution: latency_distribution(run)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::time_specs::started;
    use super::*;

    #[test]
    fn nines_axis() {
        assert_eq!(nines(0.0), Some(0.0));
        assert!((nines(99.0).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(nines(100.0), None);
    }

    #[test]
    fn segments_break_at_gaps() {
        let mk = |s: u64, started: u64| SecondRow {
            time: None,
            config: "a".into(),
            second: s,
            upstream_started: started,
            amplification: 1.0,
            success_rate: 1.0,
            ..SecondRow::default()
        };
        let rows = [mk(0, 1), mk(1, 1), mk(2, 0), mk(3, 1), mk(5, 1)];
        let refs: Vec<&SecondRow> = rows.iter().collect();
        let segs = segments(&refs, |r| started(r).then_some(r.amplification));
        assert_eq!(segs.len(), 3);
        assert_eq!(segs[0].len(), 2);
    }
}
