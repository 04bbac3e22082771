//! What each per-second chart shows, as data: [`TIME_CHARTS`] in page order and the budget
//! chart, each a title, a y axis and a few [`Line`]s that are functions of one
//! [`SecondRow`]. Adding a per-second chart is one more entry here; `charts` draws them.

use crate::metrics::SecondRow;

/// How a line is stroked: the styles of one chart's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dash {
    Solid,
    Dashed,
    Dotted,
}

impl Dash {
    /// The legend glyph shown in the chart's note.
    pub(super) fn glyph(self) -> &'static str {
        match self {
            Dash::Solid => "━━",
            Dash::Dashed => "╍╍",
            Dash::Dotted => "┈┈",
        }
    }
}

/// One figure of a time chart, drawn for every config.
pub(crate) struct Line {
    pub label: &'static str,
    pub dash: Dash,
    /// The figure in one second; `None` leaves a gap (nothing measured that second).
    pub value: fn(&SecondRow) -> Option<f64>,
}

/// A per-second chart with all configs overlaid.
pub(crate) struct TimeSpec {
    pub id: &'static str,
    pub title: &'static str,
    pub y_desc: &'static str,
    pub lines: &'static [Line],
    /// A fixed y range (otherwise 0 to the largest value).
    pub y_range: Option<(f64, f64)>,
    pub y_fmt: fn(f64) -> String,
}

pub(super) fn num(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v.abs() >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

pub(super) fn pct(v: f64) -> String {
    format!("{:.0} %", v * 100.0)
}

pub(super) fn started(r: &SecondRow) -> bool {
    r.upstream_started > 0
}

fn finished(r: &SecondRow) -> bool {
    r.upstream_finished > 0
}

/// The per-second charts, in page order.
pub(crate) const TIME_CHARTS: &[TimeSpec] = &[
    TimeSpec {
        id: "chart-load",
        title: "Upstream rate vs downstream arrivals",
        y_desc: "requests / s",
        lines: &[
            Line {
                label: "downstream arrivals (at the target)",
                dash: Dash::Solid,
                value: |r| Some(r.downstream_arrivals as f64),
            },
            Line {
                label: "upstream requests started",
                dash: Dash::Dashed,
                value: |r| Some(r.upstream_started as f64),
            },
        ],
        y_range: None,
        y_fmt: num,
    },
    TimeSpec {
        id: "chart-amplification",
        title: "Amplification per second",
        y_desc: "arrivals / upstream",
        lines: &[Line {
            label: "downstream arrivals ÷ upstream started",
            dash: Dash::Solid,
            value: |r| started(r).then_some(r.amplification),
        }],
        y_range: None,
        y_fmt: num,
    },
    TimeSpec {
        id: "chart-inflight",
        title: "In flight",
        y_desc: "requests in flight (peak in second)",
        lines: &[
            Line {
                label: "at the target",
                dash: Dash::Solid,
                value: |r| Some(r.target_in_flight_peak as f64),
            },
            Line {
                label: "at the client (logical requests)",
                dash: Dash::Dashed,
                value: |r| Some(r.client_in_flight_peak as f64),
            },
        ],
        y_range: None,
        y_fmt: num,
    },
    TimeSpec {
        id: "chart-retries",
        title: "Retries and refusals",
        y_desc: "per second",
        lines: &[
            Line {
                label: "retries",
                dash: Dash::Solid,
                value: |r| Some(r.retries as f64),
            },
            Line {
                label: "budget refusals",
                dash: Dash::Dashed,
                value: |r| Some(r.budget_refusals as f64),
            },
            Line {
                label: "breaker refusals",
                dash: Dash::Dotted,
                value: |r| Some(r.breaker_refusals as f64),
            },
        ],
        y_range: None,
        y_fmt: num,
    },
    TimeSpec {
        id: "chart-success",
        title: "Success rate",
        y_desc: "successes / finished",
        lines: &[Line {
            label: "success rate of requests finishing in the second",
            dash: Dash::Solid,
            value: |r| finished(r).then_some(r.success_rate),
        }],
        y_range: Some((0.0, 1.02)),
        y_fmt: pct,
    },
    TimeSpec {
        id: "chart-latency",
        title: "Latency per second",
        y_desc: "ms",
        lines: &[
            Line {
                label: "p99",
                dash: Dash::Solid,
                value: |r| finished(r).then_some(r.latency_p99_ms),
            },
            Line {
                label: "p50",
                dash: Dash::Dashed,
                value: |r| finished(r).then_some(r.latency_p50_ms),
            },
        ],
        y_range: None,
        y_fmt: num,
    },
];

/// The budget level in % of each budget's capacity, so a 500-token quota and a 10-token
/// bucket share one axis.
pub(crate) const BUDGET_CHART: TimeSpec = TimeSpec {
    id: "chart-budget",
    title: "Retry budget level, % of capacity",
    y_desc: "% of capacity",
    lines: &[Line {
        label: "budget level (configs with a budget)",
        dash: Dash::Solid,
        value: |r| r.budget_level_pct,
    }],
    y_range: Some((0.0, 105.0)),
    y_fmt: |v| format!("{v:.0} %"),
};
