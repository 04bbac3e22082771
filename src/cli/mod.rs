//! The command line as clap reads it: every command, flag and help text in one room, so a
//! reader finds the whole surface here and `app` holds none of it. No file or network I/O and
//! no defaults read from the engines: where a default belongs to an engine, the flag is an
//! `Option` and `app` resolves it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod bench;
mod calibrate;
mod k8s;
mod run;
mod sweep;

pub use bench::BenchCommand;
pub use calibrate::CalibrateArgs;
pub use k8s::{K8sArgs, SpreadArg};
pub use run::{CommonArgs, QuickArgs, RunArgs, ShardArgs, SimArgs};
pub use sweep::{CapacityArgs, SweepArgs};

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
    Run(Box<RunArgs>),
    /// Run a scenario in virtual time (deterministic; large populations, long storms).
    Sim(SimArgs),
    /// Simulate a scenario over a grid of one or two varied fields (sweep.csv/json/html).
    Sweep(SweepArgs),
    /// Per config, the largest load (or smallest capacity) at which objectives hold.
    Capacity(CapacityArgs),
    /// Measure a target under a bounded step load and fit a service model (targets/NAME.toml).
    Calibrate(CalibrateArgs),
    /// Write a commented scenario template to start from (FILE `-`: standard output).
    New {
        /// Where to write it; the scenario's name is the file's stem.
        #[arg(default_value = "scenario.toml")]
        file: PathBuf,
        /// Overwrite FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Simulate a scenario that replays a recorded incident and say, per config, whether
    /// it reproduces the downstream arrivals the incident recorded (exit 1 when none does).
    ReplayCheck {
        /// The replay scenario (its load and faults from the incident's recordings).
        scenario: PathBuf,
        /// The downstream arrivals the incident recorded: a rate series (CSV `time,rate` or
        /// a Prometheus query_range answer) whose first point is the replay's second 0.
        #[arg(long)]
        recorded: PathBuf,
        /// Seconds per bucket of the comparison.
        #[arg(long, default_value_t = 10)]
        bucket_s: u64,
        /// The largest change, in %, in total and per bucket, that still reproduces.
        #[arg(long, default_value_t = 5.0)]
        tolerance: f64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Validate scenario files without running them.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Treat warnings (a config that can retry none of the injected failures, ...) as
        /// errors: exit 2.
        #[arg(long)]
        strict: bool,
        /// Print each config's resolved policy in words.
        #[arg(long)]
        explain: bool,
    },
    /// The failure rate above which a config's retry budget drains.
    Thresholds {
        /// A scenario file: the thresholds of each of its configs as resolved (custom
        /// configs and overrides included).
        #[arg(required_unless_present = "config", conflicts_with = "config")]
        scenario: Option<PathBuf>,
        /// Preset name.
        #[arg(long)]
        config: Option<String>,
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
    /// List the retry presets with their sources, the library each stands for and what it
    /// was checked against.
    Presets {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run the counting fault proxy on its own in front of a real HTTP server, until
    /// SIGINT/SIGTERM. Control: GET|POST /_stormrig/faults (JSON), DELETE
    /// /_stormrig/faults/ID, POST /_stormrig/faults/ID/enable|disable,
    /// POST /_stormrig/faults/start|stop, GET /_stormrig/metrics.
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
        /// The token control requests must carry (`Authorization: Bearer TOKEN`); default:
        /// a random one, printed at start.
        #[arg(long)]
        control_token: Option<String>,
    },
    /// Serve Toxiproxy's HTTP API (named proxies with their own listen address and
    /// upstream, toxics latency, bandwidth, slow_close, slicer, timeout and reset_peer) on a
    /// control port of its own, so Toxiproxy's client libraries drive stormrig's counting
    /// proxies; until SIGINT/SIGTERM. The proxies relay HTTP, on loopback.
    Toxiproxy {
        /// Loopback address of the API (Toxiproxy's default port is 8474).
        #[arg(long, default_value = "127.0.0.1:8474")]
        listen: std::net::SocketAddr,
        /// A JSON array of proxies to create at start, as `toxiproxy-server -config`.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Seed of the per-request toxicity draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Allow this non-loopback upstream host explicitly.
        #[arg(long)]
        allow_remote: Option<String>,
    },
    /// Benchmarks to compare stormrig with peer tools (wrk, oha, nginx); loopback only,
    /// bounded in time, `key=value` output (see tests/bench/peers.sh).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Merge the run directories of every shard of one run into one result: the same
    /// summary.json, CSVs and HTML as a single run, with `shards: N`.
    Merge {
        /// Every shard's run directory (each holds shard.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the merged reports go.
        #[arg(long)]
        out: PathBuf,
        /// The scenario file, when it is no longer where the shards read it (its SHA-256
        /// must still match theirs).
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Extra gate, as `run --gate`.
        #[arg(long = "gate")]
        gates: Vec<String>,
    },
    /// Print Kubernetes manifests (YAML) for a sharded storm: a ConfigMap holding the
    /// scenario, a ReadWriteMany claim for the results, an Indexed Job with one pod per shard
    /// (JOB_COMPLETION_INDEX is the shard) and a merge Job writing /results/RUN/merged.
    K8s(K8sArgs),
    /// Rebuild index.html of a run directory from its CSV/JSON files.
    Report {
        /// A run directory (holds summary.json).
        dir: PathBuf,
    },
    /// Compare a run with a baseline run; exit 1 on a regression beyond the tolerance.
    /// Each figure has a default tolerance for its noise between two live runs (exact for
    /// two simulator runs); the ALLOWED column shows it.
    Diff {
        /// The run directory compared against (holds summary.json), e.g. main's last run.
        baseline: PathBuf,
        /// The run directory judged (holds summary.json).
        run: PathBuf,
        /// "10%" sets the relative tolerance of every figure (absolute floors kept);
        /// "FIGURE=20%" or "FIGURE=20%,5" (share, absolute floor in the figure's unit) one
        /// figure's, e.g. 'latency_ms.p99=30%,5'; "FIGURE=0" makes it exact. Repeatable.
        #[arg(long)]
        tolerance: Vec<String>,
        /// Compare even runs of different scenarios or engines.
        #[arg(long)]
        force: bool,
        /// Show only rows that moved, regressed, or whose config is on one side only.
        #[arg(long)]
        changed_only: bool,
    },
}
