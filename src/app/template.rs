//! `stormrig new`: writes the commented scenario template, never over a file that exists
//! unless asked (`--force`): a template is cheap, the user's scenario is not.

use std::io::Write;
use std::path::Path;

use super::{AppError, Exit};
use crate::scenario::template;

/// Writes the template to `file` (`-`: stdout).
pub(super) fn new(file: &Path, force: bool) -> Result<Exit, AppError> {
    if file == Path::new("-") {
        super::out::say(template::text("my-storm"))?;
        return Ok(Exit::Ok);
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let text = template::text(&template::name_from_stem(stem));
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut f = options.open(file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            AppError::bad(format!(
                "{}: exists; choose another file or pass --force to overwrite it",
                file.display()
            ))
        } else {
            AppError::bad(format!("{}: {e}", file.display()))
        }
    })?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| AppError::failed(format!("{}: {e}", file.display())))?;
    super::out::line(format!(
        "wrote {f}; next: stormrig check {f} --explain, then stormrig sim {f}",
        f = file.display()
    ))?;
    Ok(Exit::Ok)
}
