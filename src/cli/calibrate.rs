//! `stormrig calibrate`: a target measured under a bounded step load, and a service model
//! fitted to it.

use std::path::PathBuf;

use clap::Args;

/// `stormrig calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A scenario whose [target] is measured (its load's method, path and headers are sent;
    /// its load shape, faults, configs and gates are not used).
    pub scenario: PathBuf,
    /// Closed-loop steps at 1, 2, 4, ... users up to this many. Default (without
    /// --max-rate): 16.
    #[arg(long)]
    pub max_concurrency: Option<u32>,
    /// Open-loop steps at 1/8, 1/4, 1/2 and all of this rate (req/s).
    #[arg(long)]
    pub max_rate: Option<f64>,
    /// How long each step offers load.
    #[arg(long, default_value = "1s")]
    pub step_duration: String,
    /// The longest the whole calibration may take (every step's load and drain).
    #[arg(long, default_value = "2m")]
    pub max_time: String,
    /// After the other steps, one step at 1.5x the highest throughput measured: it fills
    /// the target's queue on purpose, to measure the queue's depth and timeout.
    #[arg(long)]
    pub overload: bool,
    /// Where to write the fitted model (a targets/NAME.toml file); default: print it.
    #[arg(long)]
    pub out: Option<PathBuf>,
}
