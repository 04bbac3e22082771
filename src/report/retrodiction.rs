//! The retrodiction check (`stormrig replay-check`): does a rehearsal of a recorded incident
//! reproduce what the downstream saw? The recording's downstream arrivals per second are
//! compared with each config's, in total and per bucket (10 s by default); a config
//! reproduces the incident when both stay within the tolerance, and the others are said by
//! how much they would have changed it.
//!
//! A bucket holding under 1 % of the recorded arrivals (a drain's last stragglers) is shown
//! but not judged: a relative change of a handful of requests says nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::metrics::RunResult;
use crate::scenario::recording::{series, RecordingError};

/// A bucket judged holds at least this share of the recorded arrivals.
pub const MIN_JUDGED_SHARE: f64 = 0.01;

/// Why a recorded downstream series was not read.
#[derive(Debug, thiserror::Error)]
pub enum RecordedError {
    #[error("{}: {reason}", file.display())]
    Unreadable { file: PathBuf, reason: String },
    #[error("{}:{}: {error}", file.display(), error.line())]
    Content {
        file: PathBuf,
        error: RecordingError,
    },
}

/// Reads the recorded downstream arrivals per second: a rate series (CSV `time,rate` or a
/// Prometheus `query_range` answer) whose first point is the replay's second 0; each
/// point's rate holds until the next (the last for one step), counted per whole second.
pub fn read_recorded(file: &Path) -> Result<Vec<f64>, RecordedError> {
    use crate::input::{self, Kind};
    let unreadable = |reason: String| RecordedError::Unreadable {
        file: file.to_path_buf(),
        reason,
    };
    let bytes = input::read(file, Kind::Recording).map_err(|e| unreadable(e.reason()))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("is not UTF-8 text".into()))?;
    let parsed = series::parse(&text, 0).map_err(|error| RecordedError::Content {
        file: file.to_path_buf(),
        error,
    })?;
    Ok(per_second(&parsed.points))
}

fn per_second(points: &[series::Point]) -> Vec<f64> {
    const S: i128 = 1_000_000_000;
    let origin = points[0].t;
    let last_gap = match points {
        [.., a, b] => b.t - a.t,
        _ => S,
    };
    let end = points[points.len() - 1].t - origin + last_gap;
    let seconds = ((end + S - 1) / S).max(1) as usize;
    let mut out = vec![0.0; seconds];
    let mut k = 0;
    for (s, v) in out.iter_mut().enumerate() {
        let t = s as i128 * S;
        while k + 1 < points.len() && points[k + 1].t - origin <= t {
            k += 1;
        }
        *v = points[k].rate;
    }
    out
}

/// One bucket of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    pub start_s: u64,
    pub recorded: f64,
    pub rehearsed: f64,
    /// (rehearsed − recorded) / recorded, in %; `None` when the bucket is not judged.
    pub change_pct: Option<f64>,
}

/// One config's rehearsal against the recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigFit {
    pub config: String,
    pub recorded_total: f64,
    pub rehearsed_total: f64,
    pub total_change_pct: f64,
    /// The judged bucket of the largest change (by size), in %.
    pub worst_bucket_change_pct: f64,
    /// Downstream arrivals over the caller demand replayed (the config's upstream
    /// requests): the recording's, and the rehearsal's.
    pub recorded_amplification: f64,
    pub rehearsed_amplification: f64,
    pub reproduces: bool,
    pub buckets: Vec<Bucket>,
}

/// The check of every config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayCheck {
    pub bucket_s: u64,
    pub tolerance_pct: f64,
    pub configs: Vec<ConfigFit>,
    /// The config that reproduces the recording best (smallest worst-bucket change), when
    /// any does.
    pub reproduced_by: Option<String>,
}

/// Compares each config of `result` with the `recorded` downstream arrivals per second.
pub fn compare(
    recorded: &[f64],
    result: &RunResult,
    bucket_s: u64,
    tolerance_pct: f64,
) -> ReplayCheck {
    let bucket_s = bucket_s.max(1);
    let configs: Vec<ConfigFit> = result
        .configs
        .iter()
        .map(|c| {
            let mut rehearsed: Vec<f64> = Vec::new();
            for row in result.timeseries.iter().filter(|r| r.config == c.name) {
                let s = row.second as usize;
                if rehearsed.len() <= s {
                    rehearsed.resize(s + 1, 0.0);
                }
                rehearsed[s] += row.downstream_arrivals as f64;
            }
            fit(
                &c.name,
                recorded,
                &rehearsed,
                c.upstream_requests as f64,
                bucket_s,
                tolerance_pct,
            )
        })
        .collect();
    let reproduced_by = configs
        .iter()
        .filter(|c| c.reproduces)
        .min_by(|a, b| {
            a.worst_bucket_change_pct
                .abs()
                .total_cmp(&b.worst_bucket_change_pct.abs())
        })
        .map(|c| c.config.clone());
    ReplayCheck {
        bucket_s,
        tolerance_pct,
        configs,
        reproduced_by,
    }
}

fn fit(
    name: &str,
    recorded: &[f64],
    rehearsed: &[f64],
    upstream: f64,
    bucket_s: u64,
    tolerance_pct: f64,
) -> ConfigFit {
    let pct = |new: f64, old: f64| {
        if old > 0.0 {
            (new - old) / old * 100.0
        } else {
            0.0
        }
    };
    let recorded_total: f64 = recorded.iter().sum();
    let rehearsed_total: f64 = rehearsed.iter().sum();
    let seconds = recorded.len().max(rehearsed.len());
    let b = bucket_s as usize;
    let buckets: Vec<Bucket> = (0..seconds.div_ceil(b))
        .map(|k| {
            let sum = |v: &[f64]| v.iter().skip(k * b).take(b).sum::<f64>();
            let (old, new) = (sum(recorded), sum(rehearsed));
            Bucket {
                start_s: (k * b) as u64,
                recorded: old,
                rehearsed: new,
                change_pct: (old >= MIN_JUDGED_SHARE * recorded_total && old > 0.0)
                    .then(|| pct(new, old)),
            }
        })
        .collect();
    let worst = buckets
        .iter()
        .filter_map(|b| b.change_pct)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()))
        .unwrap_or(0.0);
    let total_change_pct = pct(rehearsed_total, recorded_total);
    let ratio = |x: f64| if upstream > 0.0 { x / upstream } else { 0.0 };
    ConfigFit {
        config: name.to_string(),
        recorded_total,
        rehearsed_total,
        total_change_pct,
        worst_bucket_change_pct: worst,
        recorded_amplification: ratio(recorded_total),
        rehearsed_amplification: ratio(rehearsed_total),
        reproduces: total_change_pct.abs() <= tolerance_pct && worst.abs() <= tolerance_pct,
        buckets,
    }
}

/// The check as a table, then which config reproduces the recording and what the others
/// change.
pub fn text(check: &ReplayCheck) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{:<20} {:>10} {:>10} {:>9} {:>12} {:>7} {:>7}  verdict\n",
        "config", "recorded", "rehearsed", "total", "worst bucket", "amp rec", "amp reh"
    );
    for c in &check.configs {
        let _ = writeln!(
            out,
            "{:<20} {:>10.0} {:>10.0} {:>+8.1}% {:>+11.1}% {:>7.2} {:>7.2}  {}",
            c.config,
            c.recorded_total,
            c.rehearsed_total,
            c.total_change_pct,
            c.worst_bucket_change_pct,
            c.recorded_amplification,
            c.rehearsed_amplification,
            if c.reproduces {
                "reproduces"
            } else {
                "differs"
            }
        );
    }
    let _ = match &check.reproduced_by {
        Some(name) => writeln!(
            out,
            "{name} reproduces the recording within {} % in total and per {} s bucket; \
             the others would have changed the downstream arrivals by the totals above.",
            check.tolerance_pct, check.bucket_s
        ),
        None => writeln!(
            out,
            "no config reproduces the recording within {} % in total and per {} s bucket.",
            check.tolerance_pct, check.bucket_s
        ),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_counted_per_second_from_its_first_point() {
        let p = |t: i128, rate: f64| series::Point {
            t: t * 1_000_000_000,
            rate,
        };
        assert_eq!(
            per_second(&[p(100, 5.0), p(102, 7.0), p(105, 1.0)]),
            vec![5.0, 5.0, 7.0, 7.0, 7.0, 1.0, 1.0, 1.0]
        );
    }

    #[test]
    fn small_buckets_are_shown_not_judged() {
        let recorded = vec![100.0; 20].into_iter().chain([1.0]).collect::<Vec<_>>();
        let mut rehearsed = recorded.clone();
        rehearsed[20] = 5.0;
        rehearsed[0] = 104.0;
        let f = fit("x", &recorded, &rehearsed, 2000.0, 10, 5.0);
        assert_eq!(f.buckets.len(), 3);
        assert_eq!(f.buckets[2].change_pct, None);
        assert!((f.worst_bucket_change_pct - 0.4).abs() < 1e-9);
        assert!(f.reproduces);
        rehearsed[1] = 160.0;
        assert!(!fit("x", &recorded, &rehearsed, 2000.0, 10, 5.0).reproduces);
    }
}
