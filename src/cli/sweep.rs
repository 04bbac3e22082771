//! `stormrig sweep` and `stormrig capacity`: the simulator over a grid of scenario edits.

use std::path::PathBuf;

use clap::Args;

/// `stormrig sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// A field and its values: PATH=FROM..TO:STEP, e.g. load.rate=100..1000:50,
    /// faults[0].for=5s..30s:5s. Once or twice (a map over two fields).
    #[arg(long = "vary", required = true)]
    pub vary: Vec<String>,
    /// Runs per point (seeds seed, seed+1, ...): figures are their mean, with the spread.
    #[arg(long, default_value_t = 1)]
    pub seeds: u32,
    /// Threads (0: every core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Ceiling on simulations (points × seeds × configs); a larger sweep is refused
    /// before it starts.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_runs: u64,
    /// A recovery later than this after the last fault counts as "recovered late".
    #[arg(long, default_value = "5s")]
    pub late: String,
    /// Output directory (default: reports/<scenario>/sweep-<timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `stormrig capacity`.
#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The field to search and the grid to scan: PATH=FROM..TO:STEP, e.g.
    /// load.rate=100..2000:100 or target.service.concurrency=2..64:2.
    #[arg(long)]
    pub vary: String,
    /// What must hold, in the gate grammar; the selector is optional
    /// ('recovery_time_s <= 5', 'aws-standard: latency_ms.p99 < 800'). Repeatable.
    #[arg(long = "objective", required = true)]
    pub objectives: Vec<String>,
    /// largest (default for load.*) or smallest (default for target.*).
    #[arg(long)]
    pub find: Option<String>,
    /// Bisection stops at this width (default: STEP / 8).
    #[arg(long)]
    pub resolution: Option<f64>,
    /// A gate on the capacity figures, e.g. 'aws-standard: capacity.max_rate >= 800'.
    #[arg(long = "gate")]
    pub gates: Vec<String>,
    /// A limit must also hold with every service time this much longer than modeled
    /// (a share, 0.05, or a percentage, 5%; 0: the knife edge as modeled). Default 5%.
    #[arg(long = "model-tolerance")]
    pub model_tolerance: Option<String>,
    /// Re-run each config's limit, and the first grid value at or past where it fails as
    /// modeled, live against the scenario's target (built-in, or `url` through the
    /// counting proxy), and report whether live agrees (exit 1 when it does not).
    #[arg(long)]
    pub confirm: bool,
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    #[arg(long)]
    pub out: Option<PathBuf>,
}
