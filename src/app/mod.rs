//! The I/O edge: turns command-line arguments into runs and reports, and every outcome into
//! one of the documented exit codes. The only module that depends on everything.
//!
//! One file per command or group of commands: `dispatch` hands a parsed command line to
//! `run` (`run` and `sim`), `check` (`check`, `thresholds`, `presets`), `proxy`, `bench`,
//! `shards` (`merge`, `k8s`), `sweep` (`sweep`, `capacity`) or `calibrate`; `reports` holds what every
//! run shares at both ends (its gates checked before any load, its reports written at the
//! end) and `diff`; `signals` the SIGINT/SIGTERM handling. This file keeps the exit codes
//! and the error every command returns.

mod bench;
mod calibrate;
mod check;
mod dispatch;
mod events;
mod out;
mod proxy;
mod replay_check;
mod reports;
mod run;
pub mod shards;
mod signals;
pub mod sweep;
mod template;

pub use dispatch::run;

use std::process::ExitCode;

/// Exit codes, as the README documents them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything ran and every gate passed.
    Ok = 0,
    /// A gate failed, or `diff` found a regression.
    GateFailed = 1,
    /// Bad input or usage: nothing ran.
    BadInput = 2,
    /// The run itself could not be carried out.
    RunFailed = 3,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// An error at the edge, with the exit code it maps to.
#[derive(Debug)]
pub struct AppError {
    pub exit: Exit,
    pub message: String,
}

impl AppError {
    fn bad(message: impl ToString) -> Self {
        AppError {
            exit: Exit::BadInput,
            message: printable(&message.to_string()),
        }
    }
    fn failed(message: impl ToString) -> Self {
        AppError {
            exit: Exit::RunFailed,
            message: printable(&message.to_string()),
        }
    }
}

/// `text` safe to print on a terminal: control characters (ESC, BEL, CR, ...) and the
/// Unicode controls that reorder or hide text are shown escaped (`\u{1b}`), so a scenario
/// file cannot retitle, recolour or rewrite the terminal of whoever checks it. Line breaks
/// between the lines of a message are kept.
pub fn printable(text: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
