//! Faults from a recording: a `[[faults]]` table with `series = FILE` becomes one ordinary
//! fault window per step of the series (runs of equal steps merged), so both engines apply
//! it through the same fault timeline as a hand-written window, at the same instants.
//!
//! What a step's values mean, by the fault's kind:
//! - `status` / `grpc-status`: the share of arrivals that fail, per status; a column per
//!   status (a CSV header `time,503,500`, or Prometheus series labelled `code`) gives a mix.
//!   The first failing fault in file order wins a request, so the k-th status of a step
//!   fires with `share_k / (1 − Σ earlier shares)`: each status gets its own share.
//! - `latency`: added seconds, one column (constant) or `p50` and `p99` (a log-normal with
//!   that median and 99th percentile); Prometheus series labelled `quantile` 0.5 and 0.99.
//! - `capacity`: the concurrency slots in force.
//!
//! Time: the series' first point is run time `at`; with a recorded load, the load's `from`,
//! `to` and `speed` cut and compress the fault series as they do the load, so a rate series
//! and an error series of the same incident stay aligned.

use std::time::Duration;

use super::columns::{Columns, Row};
use super::{at, RecordingError};
use crate::policy::GrpcStatus;
use crate::scenario::limits;
use crate::scenario::model::{Dist, Fault, FaultKind, FaultSection, LoadSection};
use crate::scenario::validate::refuse::{refuse, Checked, Refusal};

/// How a fault series reads a time with no point for longer than its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gaps {
    /// Refused at the point after the gap (the default).
    Refuse,
    /// No fault in the gap; the gaps are counted.
    None,
}

/// Why a fault series was not expanded.
#[derive(Debug)]
pub enum SeriesError {
    Field(Refusal),
    Content(RecordingError),
}

impl From<Refusal> for SeriesError {
    fn from(r: Refusal) -> Self {
        SeriesError::Field(r)
    }
}

impl From<RecordingError> for SeriesError {
    fn from(e: RecordingError) -> Self {
        SeriesError::Content(e)
    }
}

/// Where the series lands in the run: its first point at `at`, then the recorded load's
/// window (`from`, `to`: seconds of the recording) and `speed`.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    pub at: Duration,
    pub from: f64,
    pub to: Option<f64>,
    pub speed: f64,
    pub duration: Duration,
}

impl Placement {
    /// The recorded load's window and speed (none for a shape), for fault `f`.
    pub fn of(f: &FaultSection, load: &LoadSection, duration: Duration) -> Placement {
        let recorded = matches!(load.kind.as_str(), "series" | "trace");
        Placement {
            at: f.at,
            from: if recorded {
                load.from.unwrap_or(0.0)
            } else {
                0.0
            },
            to: if recorded { load.to } else { None },
            speed: if recorded {
                load.speed.unwrap_or(1.0)
            } else {
                1.0
            },
            duration,
        }
    }

    /// The run's window of recording nanoseconds `[start, end)` since the series' first
    /// point, cut to the load's window and the run's duration (`None` when nothing is left).
    fn clip(&self, start: i128, end: i128) -> Option<(Duration, Duration)> {
        let ns = |s: f64| (s * 1e9).round() as i128;
        let from = ns(self.from);
        let (s, e) = (start.max(from), end.min(self.to.map_or(i128::MAX, ns)));
        let run = |rel: i128| {
            self.at.saturating_add(Duration::from_nanos(
                ((rel - from) as f64 / self.speed) as u64,
            ))
        };
        let (a, b) = (run(s), run(e).min(self.duration));
        (s < e && a < b).then_some((a, b))
    }
}

/// What one step of the series does: a fault (its probability and kind) per column.
type Step = Vec<(f64, FaultKind)>;

/// The fault windows of fault `i` (`f`, whose `series` was read into `columns`), with the
/// number of gaps read as no fault.
pub fn expand(
    i: usize,
    f: &FaultSection,
    columns: &Columns,
    place: Placement,
) -> Result<(Vec<Fault>, u64), SeriesError> {
    let p = format!("faults[{i}]");
    if !f.length.is_zero() {
        return Err(SeriesError::Field(Refusal {
            field: format!("{p}.for"),
            message: "a series fault lasts as long as its series; remove `for`".into(),
        }));
    }
    let gaps = match f.gaps.as_deref() {
        None | Some("refuse") => Gaps::Refuse,
        Some("none") => Gaps::None,
        Some(other) => {
            return Err(SeriesError::Field(Refusal {
                field: format!("{p}.gaps"),
                message: format!("`{other}` is not a gap policy: \"refuse\" or \"none\""),
            }))
        }
    };
    let reader = Reader::new(&p, f, &columns.names)?;
    let rows = &columns.rows;
    let step_ns = rows
        .windows(2)
        .map(|w| w[1].t - w[0].t)
        .min()
        .unwrap_or(1_000_000_000);
    let origin = rows[0].t;
    let mut out = Vec::new();
    let mut counted_gaps = 0u64;
    // The pending run of equal steps: its start, end (recording ns) and step.
    let mut run: Option<(i128, i128, Step)> = None;
    for (k, row) in rows.iter().enumerate() {
        let start = row.t - origin;
        let next = rows.get(k + 1).map(|n| n.t - origin);
        let mut end = next.unwrap_or(start + step_ns);
        if end - start > step_ns + step_ns / 2 {
            let n = &rows[k + 1];
            if gaps == Gaps::Refuse {
                return Err(at(
                    n.line,
                    "time",
                    format!(
                        "is {} s after the previous point, and the series' step is {} s: a gap; \
                         fill it, or set {p}.gaps = \"none\" to read a gap as no fault",
                        (end - start) as f64 / 1e9,
                        step_ns as f64 / 1e9
                    ),
                )
                .into());
            }
            counted_gaps += 1;
            end = start + step_ns;
        }
        let step = reader.step(row)?;
        match &mut run {
            Some((_, e, s)) if *e == start && *s == step => *e = end,
            _ => {
                if let Some(done) = run.replace((start, end, step)) {
                    emit(&p, f, done, &place, &mut out)?;
                }
            }
        }
    }
    if let Some(done) = run {
        emit(&p, f, done, &place, &mut out)?;
    }
    Ok((out, counted_gaps))
}

/// Appends the windows of one run of equal steps, within the run's duration.
fn emit(
    p: &str,
    f: &FaultSection,
    (start, end, step): (i128, i128, Step),
    place: &Placement,
    out: &mut Vec<Fault>,
) -> Checked<()> {
    let Some((a, b)) = place.clip(start, end) else {
        return Ok(());
    };
    for (probability, kind) in step {
        if probability <= 0.0 {
            continue;
        }
        if out.len() >= limits::MAX_SERIES_FAULT_WINDOWS {
            return refuse(
                format!("{p}.series"),
                format!(
                    "gives more than {} fault windows (steps of different values); \
                     use a coarser step",
                    limits::MAX_SERIES_FAULT_WINDOWS
                ),
            );
        }
        out.push(Fault {
            at: a,
            length: b - a,
            path: f.path.clone(),
            probability,
            kind,
        });
    }
    Ok(())
}

/// How the columns of a series are read, for the fault's kind.
enum Reader {
    /// Failure shares, a kind per column.
    Shares(Vec<FaultKind>),
    /// Added latency: a constant, or the columns of the median and the p99.
    Latency {
        p50: usize,
        p99: Option<usize>,
        probability: f64,
    },
    Capacity,
}

impl Reader {
    fn new(p: &str, f: &FaultSection, names: &[String]) -> Checked<Reader> {
        let series = format!("{p}.series");
        match f.kind.as_str() {
            "status" | "grpc-status" => {
                if f.probability.is_some() {
                    return refuse(
                        format!("{p}.probability"),
                        "the series gives each step's failure share; remove `probability`",
                    );
                }
                let grpc = f.kind == "grpc-status";
                let given = if grpc { f.grpc_status.is_some() } else { f.status.is_some() };
                let kinds = names
                    .iter()
                    .map(|name| {
                        let mut one = f.clone();
                        (one.series, one.gaps) = (None, None);
                        one.length = Duration::from_secs(1);
                        one.at = Duration::ZERO;
                        if given && names.len() > 1 {
                            return refuse(
                                series.clone(),
                                format!(
                                    "has {} columns (a status mix); remove `{}` to take each \
                                     column's status from its name",
                                    names.len(),
                                    if grpc { "grpc_status" } else { "status" }
                                ),
                            );
                        }
                        if !given {
                            let bad = || {
                                refuse(
                                    series.clone(),
                                    format!(
                                        "column `{name}` names no {}; name each column by \
                                         its status (a CSV header `time,503,500`, a \
                                         Prometheus label `code`), or give one with `{}`",
                                        if grpc { "gRPC status" } else { "status code" },
                                        if grpc { "grpc_status" } else { "status" }
                                    ),
                                )
                            };
                            if grpc {
                                one.grpc_status = match GrpcStatus::parse(name) {
                                    Some(s) => Some(s),
                                    None => return bad(),
                                };
                            } else {
                                one.status = match name.parse::<u16>() {
                                    Ok(s) => Some(s),
                                    Err(_) => return bad(),
                                };
                            }
                        }
                        crate::scenario::validate::check_fault(0, &one, Duration::MAX)
                            .map(|fault| fault.kind)
                            .map_err(|r| Refusal {
                                field: r.field.replacen("faults[0]", p, 1),
                                message: r.message,
                            })
                    })
                    .collect::<Checked<Vec<_>>>()?;
                Ok(Reader::Shares(kinds))
            }
            "latency" => {
                if f.add.is_some() {
                    return refuse(format!("{p}.add"), "the series gives the added latency; remove `add`");
                }
                let find = |want: &[&str]| names.iter().position(|n| want.contains(&n.as_str()));
                let (p50, p99) = match (names, find(&["p50", "0.5", "median"]), find(&["p99", "0.99"])) {
                    ([_], _, None) => (0, None),
                    ([_, _], Some(a), Some(b)) => (a, Some(b)),
                    _ => {
                        return refuse(
                            series,
                            format!(
                                "has the columns [{}]; a latency series has one (seconds added) \
                                 or two, `p50` and `p99` (Prometheus: `quantile` 0.5 and 0.99)",
                                names.join(", ")
                            ),
                        )
                    }
                };
                let probability = f.probability.unwrap_or(1.0);
                if !(0.0..=1.0).contains(&probability) {
                    return refuse(format!("{p}.probability"), format!("{probability} is outside [0, 1]"));
                }
                Ok(Reader::Latency { p50, p99, probability })
            }
            "capacity" => {
                if names.len() != 1 {
                    return refuse(series, "a capacity series has one column: the slots in force");
                }
                if f.concurrency.is_some() {
                    return refuse(format!("{p}.concurrency"), "the series gives the slots; remove `concurrency`");
                }
                Ok(Reader::Capacity)
            }
            other => refuse(
                series,
                format!("a {other} fault takes no series; status, grpc-status, latency and capacity faults do"),
            ),
        }
    }

    /// The faults of one row of the series.
    fn step(&self, row: &Row) -> Result<Step, RecordingError> {
        match self {
            Reader::Shares(kinds) => {
                let shares: Vec<f64> = row.values.iter().map(|v| v.unwrap_or(0.0)).collect();
                let total: f64 = shares.iter().sum();
                if total > 1.0 + 1e-9 {
                    return Err(at(
                        row.line,
                        "value",
                        format!("the failure shares add up to {total}, above 1"),
                    ));
                }
                let mut left = 1.0;
                Ok(shares
                    .iter()
                    .zip(kinds)
                    .map(|(&s, kind)| {
                        let p = if left > 0.0 { (s / left).min(1.0) } else { 0.0 };
                        left -= s;
                        (p, kind.clone())
                    })
                    .collect())
            }
            Reader::Latency {
                p50,
                p99,
                probability,
            } => {
                let Some(median) = row.values[*p50] else {
                    return Ok(Vec::new());
                };
                let d = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
                let add = match p99 {
                    None => Dist::Constant { value: d(median) },
                    Some(k) => {
                        let Some(top) = row.values[*k] else {
                            return Ok(Vec::new());
                        };
                        if top < median {
                            return Err(at(
                                row.line,
                                "value",
                                format!("the p99 {top} s is below the p50 {median} s"),
                            ));
                        }
                        Dist::LogNormal {
                            median: d(median),
                            p99: d(top),
                        }
                    }
                };
                if median <= 0.0 {
                    return Ok(Vec::new());
                }
                Ok(vec![(*probability, FaultKind::Latency { add })])
            }
            Reader::Capacity => {
                let Some(v) = row.values[0] else {
                    return Ok(Vec::new());
                };
                let c = v.round();
                if !(1.0..=limits::MAX_SLOTS as f64).contains(&c) {
                    return Err(at(
                        row.line,
                        "value",
                        format!("{v} slots is outside [1, {}]", limits::MAX_SLOTS),
                    ));
                }
                Ok(vec![(
                    1.0,
                    FaultKind::Capacity {
                        concurrency: c as u32,
                    },
                )])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::recording::columns;
    use crate::scenario::timeline::{Action, FaultTimeline};

    fn section(kind: &str) -> FaultSection {
        let toml = format!("kind = \"{kind}\"\nseries = \"x.csv\"");
        toml::from_str(&toml).unwrap()
    }

    fn place(secs: u64) -> Placement {
        Placement {
            at: Duration::ZERO,
            from: 0.0,
            to: None,
            speed: 1.0,
            duration: Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_status_mix_keeps_each_share_under_first_wins() {
        let c = columns::parse("time,503,429,500\n0,0.2,0.3,0.1\n", 0).unwrap();
        let (faults, _) = expand(0, &section("status"), &c, place(10)).unwrap();
        assert_eq!(faults.len(), 3);
        let tl = FaultTimeline::new(faults, 7);
        let n = 40_000u64;
        let mut seen = [0u64; 3];
        for r in 0..n {
            if let Action::Status { status, .. } = tl.decide(Duration::ZERO, "/", r, 1).action {
                seen[[503, 429, 500].iter().position(|&s| s == status).unwrap()] += 1;
            }
        }
        // Pearson's statistic of the three statuses and "served", 3 degrees of freedom:
        // 99.9 % is 16.27.
        let want = [0.2, 0.3, 0.1];
        let served = n - seen.iter().sum::<u64>();
        let fit: f64 = seen
            .iter()
            .zip(want)
            .map(|(&o, p)| (o as f64 - n as f64 * p).powi(2) / (n as f64 * p))
            .sum::<f64>()
            + (served as f64 - n as f64 * 0.4).powi(2) / (n as f64 * 0.4);
        assert!(fit < 16.27, "{fit:.1}: {seen:?}");
    }

    #[test]
    fn steps_are_merged_placed_and_cut_to_the_load_window() {
        let c = columns::parse("0,4\n1,4\n2,2\n3,2\n4,8\n", 0).unwrap();
        let mut p = place(100);
        p.at = Duration::from_secs(1);
        let (faults, _) = expand(0, &section("capacity"), &c, p).unwrap();
        let spans: Vec<(u64, u64)> = faults
            .iter()
            .map(|f| (f.at.as_secs(), f.length.as_secs()))
            .collect();
        assert_eq!(spans, vec![(1, 2), (3, 2), (5, 1)]);
        let tl = FaultTimeline::new(faults, 1);
        assert_eq!(tl.capacity_at(Duration::from_millis(500), 64), 64);
        assert_eq!(tl.capacity_at(Duration::from_secs(2), 64), 4);
        assert_eq!(tl.capacity_at(Duration::from_secs(5), 64), 8);
        assert_eq!(tl.capacity_at(Duration::from_secs(6), 64), 64);
        // A recorded load from 2 s of its recording at speed 2: the series likewise.
        let mut p = place(100);
        (p.from, p.speed) = (2.0, 2.0);
        let (faults, _) = expand(0, &section("capacity"), &c, p).unwrap();
        let spans: Vec<(u128, u128)> = faults
            .iter()
            .map(|f| (f.at.as_millis(), f.length.as_millis()))
            .collect();
        assert_eq!(spans, vec![(0, 1000), (1000, 500)]);
    }

    #[test]
    fn a_latency_series_of_quantiles_is_a_log_normal() {
        let c = columns::parse("time,p50,p99\n0,0.1,0.5\n1,0,0\n", 0).unwrap();
        let (faults, _) = expand(0, &section("latency"), &c, place(10)).unwrap();
        assert_eq!(faults.len(), 1);
        assert_eq!(
            faults[0].kind,
            FaultKind::Latency {
                add: Dist::LogNormal {
                    median: Duration::from_millis(100),
                    p99: Duration::from_millis(500)
                }
            }
        );
        let c = columns::parse("time,p50,p99\n0,0.5,0.1\n", 0).unwrap();
        let e = expand(0, &section("latency"), &c, place(10)).unwrap_err();
        assert!(
            matches!(e, SeriesError::Content(ref e) if e.line() == 2),
            "{e:?}"
        );
    }
}
