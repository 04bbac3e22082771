//! The one error type of the policy core.
//!
//! Every refusal names the offending field with a dotted path (`backoff.cap`), the value that
//! was given and what would have been accepted, because these errors are read by people editing
//! a scenario file, not by programs.

/// Why a retry config (or a piece of one) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A field holds a value outside its allowed range.
    #[error("{field} = {value} is not allowed: expected {expected}")]
    InvalidValue {
        /// Dotted path of the field, e.g. `backoff.cap`.
        field: String,
        /// The value as given.
        value: String,
        /// The allowed range or forms.
        expected: String,
    },
    /// A preset name that does not exist.
    #[error("unknown preset \"{name}\"{}; known presets: {known}", did_you_mean(.suggestion))]
    UnknownPreset {
        /// The name as given.
        name: String,
        /// The closest known preset name, if one is close enough.
        suggestion: Option<String>,
        /// Comma-separated list of every preset.
        known: String,
    },
    /// A duration string that does not parse.
    #[error("invalid duration \"{value}\": {reason}")]
    InvalidDuration {
        /// The string as given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The config text itself did not parse (syntax, unknown field, wrong type).
    #[error("retry config does not parse: {0}")]
    Parse(String),
}

fn did_you_mean(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean \"{s}\"?)"),
        None => String::new(),
    }
}

impl PolicyError {
    /// Shorthand for [`PolicyError::InvalidValue`].
    pub fn invalid(
        field: impl Into<String>,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        PolicyError::InvalidValue {
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// The dotted field path this error is about, when it is about one field.
    pub fn field(&self) -> Option<&str> {
        match self {
            PolicyError::InvalidValue { field, .. } => Some(field),
            PolicyError::UnknownPreset { .. } => Some("preset"),
            _ => None,
        }
    }
}

/// `Ok` when `ok`, else the refusal of `field` holding `value`, naming what `expected`.
pub(crate) fn check(
    ok: bool,
    field: &str,
    value: impl std::fmt::Display,
    expected: &str,
) -> Result<(), PolicyError> {
    if ok {
        Ok(())
    } else {
        Err(PolicyError::invalid(field, value, expected))
    }
}
