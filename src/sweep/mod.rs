//! Capacity planning on the simulator: many runs of one scenario with a field varied.
//!
//! * [`grid`]: the varied fields (`--vary PATH=FROM..TO:STEP`) and the points they span;
//!   each point is the scenario file edited in place ([`edit`]) and loaded as a file is.
//! * [`run`]: every point × seed simulated on all cores; the figures of each config's
//!   `summary.json` object per point, averaged over seeds with their spread; the recovery
//!   class of each cell (the metastability map).
//! * [`files`]: `sweep.csv` and `sweep.json`, the same bytes for the same inputs.
//! * [`capacity`]: per config, the largest load (or smallest capacity) at which objectives
//!   in the gate grammar hold, by a grid scan and bisection; non-monotone outcomes are
//!   reported as a range.
//! * [`confirm`]: `capacity --confirm`'s comparison of the simulated and live figures at
//!   each limit and beyond its knife edge, objective by objective (the live runs are the caller's).
//! * [`page`]: the self-contained HTML page of a sweep or a capacity search.
//!
//! Only the simulator is driven here: it is deterministic, so a sweep is a function of its
//! inputs, and hundreds of storms cost seconds.

pub mod capacity;
pub mod capacity_table;
pub mod confirm;
pub mod edit;
pub mod files;
pub mod grid;
pub mod overload;
pub mod page;
pub mod run;
pub mod tolerance;

pub use grid::{Axis, Base};
pub use run::{Recovery, SweepOptions, SweepResult};

/// Why a sweep or capacity search could not run; all are bad input (exit 2) but `Io`.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A `--vary` argument that does not parse.
    #[error("--vary {spec}: {message}")]
    Vary { spec: String, message: String },
    /// The scenario file itself does not load.
    #[error("{0}")]
    Scenario(String),
    /// One point of the grid is not a valid scenario; the message names file, line, field.
    #[error("point {point}: {message}")]
    Point { point: String, message: String },
    /// The scenario uses what the simulator does not model.
    #[error("{0}")]
    Unsupported(String),
    /// Other bad usage (seeds, objectives, gates).
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("{0}")]
    Io(String),
}
