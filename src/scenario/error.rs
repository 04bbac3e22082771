//! Scenario errors: one line each, `file:line: dotted.field.path: message`, so that an editor
//! or CI log can jump to the place and a person can fix it without reading the source.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong, without where.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Unreadable(#[source] io::Error),
    /// The text is not TOML.
    #[error("TOML syntax error: {0}")]
    Syntax(String),
    /// A key no struct knows; `suggestion` is the nearest known key, if one is close.
    #[error("unknown key `{key}`{}", did_you_mean(.suggestion))]
    UnknownKey {
        key: String,
        suggestion: Option<String>,
        expected: Vec<String>,
    },
    /// A value of the wrong TOML type, or a required key that is missing.
    #[error("{0}")]
    WrongType(String),
    /// A well-typed value that makes no sense (out of range, unknown kind, wrong combination).
    #[error("{0}")]
    Invalid(String),
}

fn did_you_mean(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    }
}

/// A refused scenario or target file. `Display` is one line:
/// `scenarios/x.toml:12: faults[1].probability: 1.5 is outside [0, 1]`.
///
/// Boxed inside so that `Result<_, ScenarioError>` stays one pointer wide.
#[derive(Debug)]
pub struct ScenarioError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    file: PathBuf,
    line: Option<usize>,
    field: Option<String>,
    kind: ErrorKind,
}

impl ScenarioError {
    pub fn new(
        file: impl Into<PathBuf>,
        line: Option<usize>,
        field: Option<String>,
        kind: ErrorKind,
    ) -> Self {
        ScenarioError(Box::new(Inner {
            file: file.into(),
            line,
            field: field.filter(|f| !f.is_empty()),
            kind,
        }))
    }

    pub fn unreadable(file: &Path, err: io::Error) -> Self {
        ScenarioError::new(file, None, None, ErrorKind::Unreadable(err))
    }

    /// The file the error is in (a scenario or a target definition).
    pub fn file(&self) -> &Path {
        &self.0.file
    }

    /// 1-based line; `None` only when the file could not be read.
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// Dotted field path such as `faults[1].probability`; `None` for syntax and read errors.
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The message without file, line and field.
    pub fn message(&self) -> String {
        self.0.kind.to_string()
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.file.display())?;
        if let Some(line) = self.0.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.0.field {
            write!(f, ": {field}")?;
        }
        // One line, whatever the underlying message looked like.
        let msg = self.0.kind.to_string();
        let msg: Vec<&str> = msg
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        write!(f, ": {}", msg.join("; "))
    }
}

impl std::error::Error for ScenarioError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            ErrorKind::Unreadable(e) => Some(e),
            _ => None,
        }
    }
}
