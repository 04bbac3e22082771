//! The refusal every check returns, and the helpers that word one: a leaf that names nothing
//! else of the scenario, so the sections' own checks (`classes`, `grpc`, `provider`) can use
//! it without reaching back into the checks of the whole file.

/// A field that failed a check, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Dotted path, e.g. `faults[1].probability`.
    pub field: String,
    /// Names the value and the allowed range.
    pub message: String,
}

pub type Checked<T> = Result<T, Refusal>;

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

pub(super) fn unknown_kind(what: &str, value: &str, known: &[&str]) -> String {
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
