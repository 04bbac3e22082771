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
    /// Simulate a scenario over a grid of one or two varied fields (sweep.csv/json/html).
    Sweep(crate::app::sweep::SweepArgs),
    /// Per config, the largest load (or smallest capacity) at which objectives hold.
    Capacity(crate::app::sweep::CapacityArgs),
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
    /// (JOB_COMPLETION_INDEX is the shard) and a merge Job writing /results/merged.
    K8s(crate::app::shards::K8sArgs),
    /// Rebuild index.html of a run directory from its CSV/JSON files.
    Report {
        /// A run directory (holds summary.json).
        dir: PathBuf,
    },
    /// Compare a run with a baseline run; exit 1 on a regression beyond the tolerance.
    /// Each figure has a default tolerance for its noise between two live runs (exact for
    /// two simulator runs); the ALLOWED column shows it.
    Diff {
        baseline: PathBuf,
        run: PathBuf,
        /// "10%" sets the relative tolerance of every figure (absolute floors kept);
        /// "FIGURE=20%" or "FIGURE=20%,5" (share, absolute floor in the figure's unit) one
        /// figure's, e.g. 'latency_ms.p99=30%,5'; "FIGURE=0" makes it exact. Repeatable.
        #[arg(long)]
        tolerance: Vec<String>,
        /// Compare even runs of different scenarios or engines.
        #[arg(long)]
        force: bool,
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
    /// Override the scenario's duration (e.g. "5s"): a quick rehearsal live, a longer storm
    /// in the simulator. Faults that would start after it are dropped.
    #[arg(long)]
    pub duration: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Stop the run as soon as a gate can no longer pass (reports are still written).
    #[arg(long)]
    pub abort_on_fail: bool,
    /// Serve Prometheus text at http://ADDR/metrics while the run goes (per config:
    /// upstream, attempts, retries, refusals, arrivals, in flight, budget level); loopback
    /// addresses only, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Write one JSON line per config per second while the run goes, to FILE or `-`
    /// (standard output).
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<PathBuf>,
    /// Threads of the live engine (default: the cores available; 1: the load, the
    /// connections and any in-process target share one thread). Configs side by side and
    /// their requests spread over them; no count and no seeded draw depends on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// Which part of the fleet a live run drives, and when it starts.
#[derive(Debug, Args)]
pub struct ShardArgs {
    /// Run shard I of N: the client instances whose index is I mod N, over the same seeded
    /// schedule (N at most load.clients; not with a closed loop or a topology). Writes
    /// shard.json for `stormrig merge`.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Run shard $JOB_COMPLETION_INDEX of N, as a Kubernetes Indexed Job numbers its pods.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// Start the load at this instant, RFC 3339 in UTC (e.g. 2026-12-01T05:00:00Z), so that
    /// shards share second 0; at most 24 h ahead, refused when more than 5 s past.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Multiply arrival rate and target capacity by N (simulator only: a live run's load
    /// and target are what this machine really drives).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}

/// `stormrig bench ...`
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Policy decision plus recording per attempt, without I/O (ns per attempt).
    Policy {
        /// Attempts per case.
        #[arg(long, default_value_t = 5_000_000)]
        iterations: u64,
    },
    /// Closed-loop max throughput through a retry config (policy and recorder in the path).
    Generator {
        /// e.g. http://127.0.0.1:8080/
        #[arg(long)]
        url: String,
        /// Logical requests in flight at once (each loops).
        #[arg(long, default_value_t = 64)]
        connections: usize,
        #[arg(long, default_value = "10s")]
        duration: String,
        /// Retry preset.
        #[arg(long, default_value = "naive")]
        config: String,
        /// Runtime threads (1 = a current-thread runtime: the whole generator on one thread).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Speak HTTP/2 in clear (prior knowledge) instead of HTTP/1.1: one connection,
        /// a stream per request.
        #[arg(long)]
        h2c: bool,
    },
    /// Open loop at a fixed rate through a retry config: achieved rate, schedule lag,
    /// latency from the intended start.
    OpenLoop {
        #[arg(long)]
        url: String,
        #[arg(long, default_value_t = 20_000.0)]
        rate: f64,
        #[arg(long, default_value = "10s")]
        duration: String,
        #[arg(long, default_value = "naive")]
        config: String,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Per-config in-flight cap (arrivals beyond it are dropped and counted).
        #[arg(long, default_value_t = 10_000)]
        max_in_flight: u64,
        /// Connections the pool may hold, as oha's `-c` (0: unbounded, as `stormrig run`).
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Microseconds before each arrival the scheduler stops sleeping on its timer and
        /// yields until the arrival is due (0: no spinning; the default of `stormrig run`).
        #[arg(long, default_value_t = 0)]
        spin_us: u64,
        /// Microseconds an arrival may start late to share a wake-up with the arrivals
        /// after it (0: one wake-up per arrival time; the default is `stormrig run`'s).
        #[arg(long, default_value_t = crate::live::pacer::Pacing::DEFAULT.batch.as_micros() as u64)]
        batch_us: u64,
    },
    /// The cheapest load loop this machine allows, as a peer: one thread, raw epoll,
    /// keep-alive HTTP/1.1, one fixed GET, no retry policy. Closed (no --rate) or an open
    /// loop at --rate on a timerfd: what pacing itself costs here.
    Floor {
        /// http://IP:PORT/path with a loopback IP literal.
        #[arg(long)]
        url: String,
        /// Arrivals per second (an open loop); without it, a closed loop.
        #[arg(long)]
        rate: Option<f64>,
        #[arg(long, default_value = "10s")]
        duration: String,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Microseconds an arrival may start late to share a wake-up with the arrivals
        /// after it, as the open loop's --batch-us (open loop only).
        #[arg(long, default_value_t = crate::live::pacer::Pacing::DEFAULT.batch.as_micros() as u64)]
        batch_us: u64,
    },
    /// The built-in target answering every request with one status, for wrk to drive.
    Target {
        /// Loopback address, e.g. 127.0.0.1:9090.
        #[arg(long)]
        listen: std::net::SocketAddr,
        #[arg(long, default_value_t = 503)]
        status: u16,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Serve this long (or until SIGINT/SIGTERM).
        #[arg(long, default_value = "30s")]
        duration: String,
    },
    /// Open loop against an in-process target that hangs every request: RSS every second,
    /// bytes per request in flight.
    Memory {
        #[arg(long, default_value_t = 5_000.0)]
        rate: f64,
        #[arg(long, default_value = "60s")]
        duration: String,
        /// In-flight cap; over HTTP/1.1 lowered to what the descriptor limit allows (two
        /// per hanging request), and the output says which limit bound it.
        #[arg(long, default_value_t = 2_000)]
        max_in_flight: u64,
        #[arg(long, default_value = "1s")]
        per_try_timeout: String,
        #[arg(long, default_value = "naive")]
        config: String,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Speak HTTP/2 in clear (prior knowledge) instead of HTTP/1.1: one connection,
        /// a stream per request, the in-process target allowing as many as the cap.
        #[arg(long)]
        h2c: bool,
    },
    /// The simulator on one thread over a storm in which every request stays in flight:
    /// peak RSS and bytes per simulated request in flight.
    SimMemory {
        /// Requests in flight at once at the peak.
        #[arg(long, default_value_t = crate::bench::sim_memory::DEFAULT_POPULATION)]
        population: u64,
    },
    /// The simulator on one thread over a fixed 3-config storm (downstream-503-10s with
    /// naive, aws-standard, envoy): attempts per on-CPU second against the 10 M/s target.
    Sim {
        /// Multiply arrival rate and target capacity by N.
        #[arg(long, default_value_t = crate::bench::sim::DEFAULT_SCALE)]
        scale: f64,
    },
}
