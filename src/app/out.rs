//! What the commands print for people, and where: stdout, unless `run --events -` took
//! stdout for its JSON lines, in which case stderr, so a program reading the events never
//! meets a table.
//!
//! `print!` panics when stdout is closed or full (`stormrig presets > /dev/full` ended with
//! rc 101): every line goes through [`say`] instead, which returns the failure as exit 3
//! with its reason. A reader that closed the pipe early (`| head -1`) is a write failure
//! too: what it did not read was lost, and a script testing the exit code should know.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use super::AppError;

/// Stdout carries machine-readable lines (`run --events -`): people's output goes to stderr.
static HUMAN_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// From now on, what [`say`] prints goes to stderr.
pub(super) fn keep_stdout_for_events() {
    HUMAN_TO_STDERR.store(true, Ordering::SeqCst);
}

/// Writes `text` for people and flushes it; a failed write is exit 3 naming the stream.
pub(super) fn say(text: impl AsRef<str>) -> Result<(), AppError> {
    let bytes = text.as_ref().as_bytes();
    if HUMAN_TO_STDERR.load(Ordering::SeqCst) {
        let mut err = std::io::stderr().lock();
        err.write_all(bytes)
            .and_then(|()| err.flush())
            .map_err(|e| write_failed("stderr", &e))
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| write_failed("stdout", &e))
    }
}

/// [`say`] with a line break after `text`.
pub(super) fn line(text: impl AsRef<str>) -> Result<(), AppError> {
    say(format!("{}\n", text.as_ref()))
}

/// The error of a failed write to `stream`, in words: a closed pipe says the reader left.
pub(super) fn write_failed(stream: &str, e: &std::io::Error) -> AppError {
    AppError::failed(if e.kind() == std::io::ErrorKind::BrokenPipe {
        format!("{stream}: the reader closed it (broken pipe); the output after that was lost")
    } else {
        format!("{stream}: cannot write: {e}; the output was lost")
    })
}
