//! A scenario's recording read and cut: the file named by `load.file` (relative to the
//! scenario), through the bounded reader, parsed by its kind, windowed by `from`/`to` and
//! compressed by `speed`. The validation of `[load]` turns the result into a load shape.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::nginx::{self, Format};
use super::{series, window, RecordingError, Window};
use crate::scenario::classes::ClassSection;
use crate::scenario::load_shape::{RateStep, SeriesArrivals};
use crate::scenario::model::LoadSection;
use crate::scenario::validate::refuse::{refuse, unknown_kind, Checked, Refusal};

/// A recording, ready to replay.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    Series {
        file: PathBuf,
        arrivals: SeriesArrivals,
        steps: Vec<RateStep>,
        /// Where the recording ends in the replay.
        end: Duration,
        skipped: u64,
    },
    Trace {
        file: PathBuf,
        times: Arc<[u64]>,
        classes: Option<Arc<[u16]>>,
        end: Duration,
        skipped: u64,
        /// Retries folded into their first attempt (`fold_retries`, `fold_key`).
        folded: u64,
    },
}

impl Recorded {
    pub fn end(&self) -> Duration {
        match self {
            Recorded::Series { end, .. } | Recorded::Trace { end, .. } => *end,
        }
    }
}

/// Why a recording was not read.
#[derive(Debug)]
pub enum ReadError {
    /// A field of `[load]` (missing `file`, bad `speed`, …).
    Field(Refusal),
    /// The file named by `load.file` cannot be read (missing, a directory, too large).
    Unreadable { file: PathBuf, reason: String },
    /// The recording's own content, at a line of it.
    Content {
        file: PathBuf,
        error: RecordingError,
    },
}

impl From<Refusal> for ReadError {
    fn from(r: Refusal) -> ReadError {
        ReadError::Field(r)
    }
}

/// The recording of a `series` or `trace` load (`None` for any other kind).
pub fn read(scenario: &Path, l: &LoadSection) -> Result<Option<Recorded>, ReadError> {
    let series = match l.kind.as_str() {
        "series" => true,
        "trace" => false,
        _ => return Ok(None),
    };
    let f = |name: &str| format!("load.{name}");
    let Some(name) = &l.file else {
        return Err(refusal(
            f("file"),
            format!(
                "a {} load replays a recording; give its path (relative to the scenario), \
                 e.g. file = \"{}\"",
                l.kind,
                if series {
                    "recordings/rates.csv"
                } else {
                    "recordings/access.log"
                }
            ),
        ));
    };
    let window = check_window(l)?;
    let file = scenario.parent().unwrap_or(Path::new("")).join(name);
    let text = read_text(&file)?;
    let allowed = l.skip_bad_lines.unwrap_or(0);
    let content = |error| ReadError::Content {
        file: file.clone(),
        error,
    };
    if series {
        let arrivals = match l.arrivals.as_deref().unwrap_or("poisson") {
            "poisson" => SeriesArrivals::Poisson,
            "constant" => SeriesArrivals::Constant,
            other => {
                return Err(refusal(
                    f("arrivals"),
                    unknown_kind("series arrival process", other, &["poisson", "constant"]),
                ))
            }
        };
        let parsed = series::parse(&text, allowed).map_err(content)?;
        let (steps, end) = window::series_steps(&parsed.points, &window).map_err(content)?;
        return Ok(Some(Recorded::Series {
            file,
            arrivals,
            steps,
            end,
            skipped: parsed.skipped,
        }));
    }
    let format = match l.format.as_deref() {
        None => {
            return Err(refusal(
                f("format"),
                format!("say how the log is written: {}", Format::NAMES.join(" or ")),
            ))
        }
        Some(s) => Format::parse(s).ok_or_else(|| Refusal {
            field: f("format"),
            message: unknown_kind("log format", s, Format::NAMES),
        })?,
    };
    let prefixes = class_prefixes(&l.classes, &l.path);
    let class_of = |path: &str| match &prefixes {
        None => Some(0),
        Some(p) => class_by_prefix(p, path),
    };
    if l.fold_key.is_some() && format != Format::NginxJson {
        return Err(refusal(
            f("fold_key"),
            "names a field of a JSON log; only format = \"nginx-json\" logs fields by name \
             (fold the others by client and path with fold_retries)"
                .into(),
        ));
    }
    if l.fold_retries
        .is_some_and(|w| w.is_zero() || w > Duration::from_secs(3600))
    {
        return Err(refusal(
            f("fold_retries"),
            "is outside (0s, 1h]: the longest gap between a failed attempt and its retry".into(),
        ));
    }
    let fold = super::fold::Fold {
        window_ns: l.fold_retries.map(|w| w.as_nanos() as i128),
        key: l.fold_key.clone(),
    };
    let parsed = nginx::parse_folding(&text, format, allowed, &class_of, &fold).map_err(content)?;
    let (times, classes, end) = window::trace_instants(&parsed, &window).map_err(content)?;
    Ok(Some(Recorded::Trace {
        file,
        times: times.into(),
        classes: prefixes.map(|_| classes.into()),
        end,
        skipped: parsed.skipped,
        folded: parsed.folded,
    }))
}

fn refusal(field: String, message: String) -> ReadError {
    ReadError::Field(Refusal { field, message })
}

fn read_text(file: &Path) -> Result<String, ReadError> {
    use crate::input::{self, Kind};
    let unreadable = |reason: String| ReadError::Unreadable {
        file: file.to_path_buf(),
        reason,
    };
    let bytes = input::read(file, Kind::Recording).map_err(|e| unreadable(e.reason()))?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        ReadError::Content {
            file: file.to_path_buf(),
            error: super::at(line, "text", "is not UTF-8"),
        }
    })
}

/// `from`, `to` and `speed`: a window of the recording in seconds, and a finite speed > 0.
fn check_window(l: &LoadSection) -> Checked<Window> {
    let from = l.from.unwrap_or(0.0);
    if !(from.is_finite() && from >= 0.0) {
        return refuse(
            "load.from",
            format!("{from} is outside [0, ∞); seconds from the recording's start"),
        );
    }
    if let Some(to) = l.to {
        if !(to.is_finite() && to > from) {
            return refuse(
                "load.to",
                format!("{to} is not after load.from ({from}); seconds from the recording's start"),
            );
        }
    }
    let speed = l.speed.unwrap_or(1.0);
    if !(speed.is_finite() && (1e-3..=1e6).contains(&speed)) {
        return refuse(
            "load.speed",
            format!(
                "{speed} is outside [0.001, 1000000]; 2 replays the recording in half its time"
            ),
        );
    }
    Ok(Window {
        from,
        to: l.to,
        speed,
    })
}

/// Each class's path without its query, when the load has classes: a recorded request goes
/// to the class whose path is the longest prefix of its own.
fn class_prefixes(classes: &[ClassSection], load_path: &str) -> Option<Vec<String>> {
    if classes.is_empty() {
        return None;
    }
    Some(
        classes
            .iter()
            .map(|c| {
                let p = c.path.as_deref().unwrap_or(load_path);
                p.split('?').next().unwrap_or(p).to_string()
            })
            .collect(),
    )
}

/// The class whose prefix is the longest that `path` starts with (the first on a tie).
fn class_by_prefix(prefixes: &[String], path: &str) -> Option<u16> {
    prefixes
        .iter()
        .enumerate()
        .filter(|(_, p)| path.starts_with(p.as_str()))
        .max_by_key(|(i, p)| (p.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_class_prefix_wins() {
        let p: Vec<String> = ["/", "/api", "/api/orders", "/api"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(class_by_prefix(&p, "/api/orders/7?x=1"), Some(2));
        assert_eq!(class_by_prefix(&p, "/api/users"), Some(1), "first of a tie");
        assert_eq!(class_by_prefix(&p, "/health"), Some(0));
        assert_eq!(class_by_prefix(&p[1..], "/health"), None);
    }
}
