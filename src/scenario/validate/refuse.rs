//! The refusal every check returns, and the helpers that word one: a leaf that names only
//! the scenario's ceilings (`limits`), so the sections' own checks (`classes`, `grpc`,
//! `provider`) can use it without reaching back into the checks of the whole file.

use crate::scenario::limits;

/// A field that failed a check, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Dotted path, e.g. `faults[1].probability`.
    pub field: String,
    /// Names the value and the allowed range.
    pub message: String,
}

pub type Checked<T> = Result<T, Refusal>;

/// Usable as a folder name: non-empty, `[A-Za-z0-9._-]`, not `.` or `..`.
pub fn check_name(field: &str, name: &str) -> Checked<()> {
    if name.is_empty() {
        return refuse(
            field,
            "is empty; it names the report folder, e.g. \"downstream-503\"",
        );
    }
    if name.len() > limits::MAX_NAME_LEN {
        return refuse(
            field,
            format!(
                "is {} bytes long, above the limit of {}; it names a report folder",
                name.len(),
                limits::MAX_NAME_LEN
            ),
        );
    }
    if name == "." || name == ".." {
        return refuse(field, format!("`{name}` cannot be a folder name"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return refuse(
            field,
            format!("`{name}` contains {c:?}; a name may use only A-Z a-z 0-9 . _ -"),
        );
    }
    Ok(())
}

pub(crate) fn refuse<T>(field: impl Into<String>, message: impl Into<String>) -> Checked<T> {
    Err(Refusal {
        field: field.into(),
        message: message.into(),
    })
}

/// The nearest candidate to `word`, when one is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(word, c)))
        .filter(|(c, score)| *score >= 0.8 || strsim::levenshtein(word, c) <= 2)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c.to_string())
}

pub(crate) fn unknown_kind(what: &str, value: &str, known: &[&str]) -> String {
    let hint = match suggest(value, known.iter().copied()) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    };
    format!(
        "unknown {what} `{value}`{hint}; known: {}",
        known.join(", ")
    )
}

/// Fields of `section` that are set but not used by its kind.
pub(super) fn forbid(
    kind_desc: &str,
    takes: &str,
    set: &[(&str, bool)],
    prefix: &str,
) -> Checked<()> {
    if let Some((name, _)) = set.iter().find(|(_, present)| *present) {
        return refuse(
            format!("{prefix}.{name}"),
            format!("{kind_desc} takes {takes}, not `{name}`"),
        );
    }
    Ok(())
}

pub(super) fn require<T: Clone>(field: String, value: &Option<T>, why: &str) -> Checked<T> {
    match value {
        Some(v) => Ok(v.clone()),
        None => refuse(field, format!("is missing; {why}")),
    }
}
