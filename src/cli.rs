//! The command line as clap reads it. No file or network I/O here: `app` turns these
//! arguments into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Rehearse retry storms before production has one.
#[derive(Debug, Parser)]
#[command(name = "stormrig", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario live on loopback: real sockets, real targets, every config side by side.
    Run(RunArgs),
    /// Run a scenario in virtual time (deterministic; large populations, long storms).
    Sim(SimArgs),
    /// Validate scenario files without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
    },
    /// The failure rate above which a config's retry budget drains.
    Thresholds {
        /// Preset name.
        #[arg(long)]
        config: String,
        /// Override the preset's max attempts (counting the first try).
        #[arg(long)]
        max_attempts: Option<u32>,
        /// Seed of the Monte-Carlo confirmation.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the retry presets with their sources.
    Presets,
    /// Run the counting fault proxy on its own in front of a real HTTP server, until
    /// SIGINT/SIGTERM. Control: POST /_stormrig/faults/start|stop, GET /_stormrig/metrics.
    Proxy {
        /// Loopback address to listen on, e.g. 127.0.0.1:9000.
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// The real server, e.g. http://127.0.0.1:8080.
        #[arg(long)]
        upstream: String,
        /// A TOML file of [[faults]] in the scenario format (started by the control endpoint).
        #[arg(long)]
        faults: Option<PathBuf>,
        /// Seed of the fault draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Allow this non-loopback upstream host explicitly.
        #[arg(long)]
        allow_remote: Option<String>,
    },
    /// Rebuild index.html of a run directory from its CSV/JSON files.
    Report {
        /// A run directory (holds summary.json).
        dir: PathBuf,
    },
    /// Compare a run with a baseline run; exit 1 on a regression beyond the tolerance.
    Diff {
        baseline: PathBuf,
        run: PathBuf,
        /// Relative change that counts as a regression ("10%" or "0.1").
        #[arg(long, default_value = "10%")]
        tolerance: String,
    },
}

/// Options shared by `run` and `sim`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Output directory (default: reports/<scenario>/<timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Extra gate, e.g. 'aws-standard: amplification <= 1.3' or '*: latency_ms.p99 < 800'.
    #[arg(long = "gate")]
    pub gates: Vec<String>,
    /// Only run these configs (by name); repeatable.
    #[arg(long = "only")]
    pub only: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write attempts.csv: one row per attempt (request, attempt, outcome, budget_after).
    #[arg(long)]
    pub attempt_log: bool,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Stop the run as soon as a gate can no longer pass (reports are still written).
    #[arg(long)]
    pub abort_on_fail: bool,
    /// Override the scenario's duration (e.g. "5s"), for quick rehearsals.
    #[arg(long)]
    pub duration: Option<String>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Multiply arrival rate and target capacity by N.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}
