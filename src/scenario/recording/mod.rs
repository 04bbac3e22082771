//! Recorded load: a rate series (CSV `time,rate` or a Prometheus `query_range` answer) or
//! an access log (nginx `combined` or a JSON `log_format` with `$msec`), parsed into what
//! the arrival schedule replays. Every refusal names the recording's line and column; a
//! scenario may allow up to `skip_bad_lines` bad lines, counted, never silently.
//!
//! Times in a recording are wall-clock stamps; the replay's t = 0 is the recording's first
//! line (for `$time_local`, the start of its second), so unix stamps, RFC 3339 times and
//! seconds from the start all work the same way.

pub mod clock;
pub mod columns;
pub mod fault_series;
pub mod fold;
pub mod line;
pub mod nginx;
pub mod proxies;
pub mod read;
pub mod series;
pub mod window;

pub use window::Window;

/// Why a recording was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordingError {
    /// A line (or a point of a JSON answer, by the line it starts on) that does not parse,
    /// or is out of order.
    #[error("{column}: {message}")]
    Line {
        line: usize,
        column: &'static str,
        message: String,
    },
    /// The recording as a whole: empty, several series, no load in the window.
    #[error("{message}")]
    Whole { line: usize, message: String },
}

impl RecordingError {
    /// The 1-based line of the recording the refusal points at.
    pub fn line(&self) -> usize {
        match self {
            RecordingError::Line { line, .. } | RecordingError::Whole { line, .. } => *line,
        }
    }

    pub(crate) fn whole(message: impl Into<String>) -> RecordingError {
        RecordingError::Whole {
            line: 1,
            message: message.into(),
        }
    }
}

/// The bad-line policy: up to `allowed` bad lines are skipped and counted; the next one is
/// refused, saying how many were skipped before it.
#[derive(Debug)]
pub(crate) struct BadLines {
    allowed: u64,
    pub(crate) skipped: u64,
}

impl BadLines {
    pub(crate) fn new(allowed: u64) -> BadLines {
        BadLines {
            allowed,
            skipped: 0,
        }
    }

    /// Skips the bad line `e` when the policy still allows one, else refuses it.
    pub(crate) fn skip(&mut self, e: RecordingError) -> Result<(), RecordingError> {
        if self.skipped < self.allowed {
            self.skipped += 1;
            return Ok(());
        }
        Err(match e {
            RecordingError::Line {
                line,
                column,
                message,
            } if self.allowed > 0 => RecordingError::Line {
                line,
                column,
                message: format!(
                    "{message} (and {} bad lines skipped before it, the most load.skip_bad_lines allows)",
                    self.skipped
                ),
            },
            other => other,
        })
    }
}

/// A line error at `line` (1-based) in `column`.
pub(crate) fn at(line: usize, column: &'static str, message: impl Into<String>) -> RecordingError {
    RecordingError::Line {
        line,
        column,
        message: message.into(),
    }
}
