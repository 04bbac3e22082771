//! `--events PATH`, opened before any load is sent, so a path the run cannot or must not
//! write is refused (exit 2) while nothing has happened yet.
//!
//! Three ways it went wrong before: `--events s.toml` truncated the scenario the run had
//! just read (any input of the command is now refused, compared by device and inode, not by
//! spelling); a FIFO with no reader blocked `open` forever, deaf to SIGINT and SIGTERM (it
//! is now opened without blocking, which fails at once when no one reads, and refused with
//! that reason); and writes that failed were dropped in silence (the run now ends with
//! exit 3 naming them, see `live::telemetry`).

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use super::{out, printable, AppError};
use crate::live::telemetry::EventsTo;

/// Where `--events` writes: stdout for `-` (people's output then goes to stderr), or the
/// file at `path`, opened for writing.
pub(super) fn open(path: &Path) -> Result<EventsTo, AppError> {
    if path.as_os_str() == "-" {
        out::keep_stdout_for_events();
        return Ok(EventsTo::Stdout);
    }
    let shown = printable(&path.display().to_string());
    if let Some(input) = crate::input::read_as(path) {
        return Err(AppError::bad(format!(
            "--events {shown}: is {}, an input of this run; writing the events there would \
             destroy it: give another path",
            printable(&input.display().to_string())
        )));
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            AppError::bad(if e.raw_os_error() == Some(libc::ENXIO) {
                format!(
                    "--events {shown}: a FIFO that no process reads; start its reader first \
                     (opening it would wait for one forever)"
                )
            } else {
                format!("--events {shown}: cannot open it for writing: {e}")
            })
        })?;
    blocking(&file).map_err(|e| AppError::bad(format!("--events {shown}: {e}")))?;
    Ok(EventsTo::File {
        path: path.to_path_buf(),
        file: Arc::new(file),
    })
}

/// Clears `O_NONBLOCK` again: it was there for `open` only, and a FIFO whose reader is slow
/// must make the writer wait, not fail with `EAGAIN` and lose lines.
fn blocking(file: &std::fs::File) -> std::io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(file)?;
    fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
    Ok(())
}
