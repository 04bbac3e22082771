//! The part of a recording that is replayed (`from`, `to`: seconds from its start) and how
//! fast (`speed`): the replay's t = 0 is `from`, and `speed` compresses time without
//! changing the number of requests (speed = 2 replays ten minutes in five, at twice the
//! rate), for a series as for a trace.

use std::time::Duration;

use super::nginx::Trace;
use super::series::Point;
use super::RecordingError;
use crate::scenario::load_shape::RateStep;

const NS: f64 = 1e9;

/// The replayed window and speed, checked by the caller (`from ≥ 0`, `to > from`,
/// `speed > 0`, all finite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub from: f64,
    pub to: Option<f64>,
    pub speed: f64,
}

impl Window {
    fn bounds_ns(&self) -> (i128, i128) {
        let from = (self.from * NS).round() as i128;
        let to = self.to.map_or(i128::MAX, |t| (t * NS).round() as i128);
        (from, to)
    }

    /// Recording nanoseconds since `from` to replay time.
    fn replay(&self, rel: i128) -> Duration {
        Duration::from_nanos(((rel as f64) / self.speed).round() as u64)
    }

    fn describe(&self) -> String {
        match self.to {
            Some(to) => format!("[{} s, {} s)", self.from, to),
            None => format!("[{} s, end)", self.from),
        }
    }
}

/// A series as rate steps of the replay: each point's rate holds until the next point, the
/// last one for the series' own step (its gap to the point before it; 1 s with one point),
/// clipped to the window, then a step of rate 0 where the recording ends. Returns the steps
/// and the replay time the recording ends at.
pub fn series_steps(
    points: &[Point],
    w: &Window,
) -> Result<(Vec<RateStep>, Duration), RecordingError> {
    let Some(first) = points.first() else {
        return Err(RecordingError::whole("holds no points"));
    };
    let last_gap = match points {
        [.., a, b] => b.t - a.t,
        _ => 1_000_000_000,
    };
    let (from, to) = w.bounds_ns();
    let mut steps = Vec::new();
    let mut end = 0i128;
    for (k, p) in points.iter().enumerate() {
        let start = p.t - first.t;
        let stop = points
            .get(k + 1)
            .map_or(start + last_gap, |n| n.t - first.t);
        let (s, e) = (start.max(from), stop.min(to));
        if s >= e {
            continue;
        }
        steps.push(RateStep {
            at: w.replay(s - from),
            rate: p.rate * w.speed,
        });
        end = e - from;
    }
    if steps.iter().all(|s| s.rate == 0.0) {
        let span = (points[points.len() - 1].t - first.t + last_gap) as f64 / NS;
        return Err(RecordingError::whole(format!(
            "offers no load in the window {} (the series spans {span} s)",
            w.describe()
        )));
    }
    // The recording ends: no load from there to the scenario's end.
    steps.push(RateStep {
        at: w.replay(end),
        rate: 0.0,
    });
    // Steps clipped to the same replay nanosecond (a very high speed) keep the later one.
    steps.dedup_by(|later, earlier| {
        let same = later.at == earlier.at;
        if same {
            earlier.rate = later.rate;
        }
        same
    });
    Ok((steps, w.replay(end)))
}

/// A trace's instants in the replay (nanoseconds, non-decreasing) with their classes, and
/// the replay time just after its last request.
pub fn trace_instants(
    trace: &Trace,
    w: &Window,
) -> Result<(Vec<u64>, Vec<u16>, Duration), RecordingError> {
    let (from, to) = w.bounds_ns();
    let mut times = Vec::new();
    let mut classes = Vec::new();
    for (t, c) in trace.times.iter().zip(&trace.classes) {
        let rel = t - trace.origin;
        if rel < from || rel >= to {
            continue;
        }
        times.push(u64::try_from(w.replay(rel - from).as_nanos()).unwrap_or(u64::MAX));
        classes.push(*c);
    }
    let Some(&last) = times.last() else {
        let span = (trace.times[trace.times.len() - 1] - trace.origin) as f64 / NS;
        return Err(RecordingError::whole(format!(
            "holds no request in the window {} (the log spans {span:.3} s)",
            w.describe()
        )));
    };
    Ok((times, classes, Duration::from_nanos(last.saturating_add(1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn pts(v: &[(i128, f64)]) -> Vec<Point> {
        v.iter()
            .map(|&(t, rate)| Point {
                t: 100 * S + t * S,
                rate,
            })
            .collect()
    }

    fn step(at_ms: u64, rate: f64) -> RateStep {
        RateStep {
            at: Duration::from_millis(at_ms),
            rate,
        }
    }

    #[test]
    fn a_series_holds_each_rate_to_the_next_point_and_the_last_for_one_step() {
        let p = pts(&[(0, 10.0), (10, 20.0), (20, 5.0)]);
        let all = Window {
            from: 0.0,
            to: None,
            speed: 1.0,
        };
        let (steps, end) = series_steps(&p, &all).unwrap();
        assert_eq!(
            steps,
            vec![
                step(0, 10.0),
                step(10_000, 20.0),
                step(20_000, 5.0),
                step(30_000, 0.0)
            ]
        );
        assert_eq!(end, Duration::from_secs(30));
        let cut = Window {
            from: 5.0,
            to: Some(15.0),
            speed: 2.0,
        };
        let (steps, end) = series_steps(&p, &cut).unwrap();
        assert_eq!(
            steps,
            vec![step(0, 20.0), step(2_500, 40.0), step(5_000, 0.0)]
        );
        assert_eq!(end, Duration::from_secs(5));
        let empty = Window {
            from: 40.0,
            to: None,
            speed: 1.0,
        };
        let e = series_steps(&p, &empty).unwrap_err();
        assert!(e.to_string().contains("spans 30 s"), "{e}");
    }

    #[test]
    fn a_trace_is_windowed_then_compressed() {
        let trace = Trace {
            origin: 7 * S,
            times: vec![7 * S, 8 * S, 9 * S + S / 2, 12 * S],
            classes: vec![0, 1, 2, 3],
            skipped: 0,
            folded: 0,
        };
        let w = Window {
            from: 1.0,
            to: Some(5.0),
            speed: 2.0,
        };
        let (times, classes, end) = trace_instants(&trace, &w).unwrap();
        assert_eq!(times, vec![0, 750_000_000]);
        assert_eq!(classes, vec![1, 2]);
        assert_eq!(end, Duration::from_nanos(750_000_001));
        let w = Window {
            from: 6.0,
            to: None,
            speed: 1.0,
        };
        assert!(trace_instants(&trace, &w).is_err());
    }
}
