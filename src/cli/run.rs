//! `stormrig run` and `stormrig sim`: the options both share, and each one's own.

use std::path::PathBuf;

use clap::Args;

/// Options shared by `run` and `sim`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The scenario file (or none, with `--rate`: a one-line run).
    #[arg(required_unless_present = "rate")]
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub quick: QuickArgs,
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
    /// in the simulator. Faults that would start after it are dropped. With `--rate`, how
    /// long the one-line run lasts (default 20s).
    #[arg(long)]
    pub duration: Option<String>,
}

/// A run without a scenario file: the flags become `scenario.toml` in the run directory.
#[derive(Debug, Args)]
pub struct QuickArgs {
    /// Constant load in requests per second, without a scenario file (e.g. `--rate 300`).
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    pub rate: Option<f64>,
    /// With `--rate`: the loopback URL to rehearse (default: the built-in target).
    #[arg(long, value_name = "URL", requires = "rate")]
    pub url: Option<String>,
    /// With `--rate`: a fault, WHAT@AT+FOR (`503@5s+10s`, `503:0.3@5s+10s` for a share of
    /// the requests, `reset@5s+2s`, `hang@...`, `lost-response@...`); repeatable.
    #[arg(long = "fault", value_name = "SPEC", requires = "rate")]
    pub faults: Vec<String>,
    /// With `--rate`: a preset to run side by side; repeatable (default: no-retry, naive,
    /// aws-standard).
    #[arg(long = "config", value_name = "PRESET", requires = "rate")]
    pub configs: Vec<String>,
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
    /// Rehearse the scenario, unchanged, against the real service at URL (loopback unless
    /// the scenario's `allow_remote` names its host): its `[target]` becomes `url = URL`
    /// (protocol and the rest kept), and its faults are applied by the counting fault proxy
    /// in front of the service.
    #[arg(long, value_name = "URL", conflicts_with = "rate")]
    pub target_url: Option<String>,
    /// Push the same figures to a Prometheus Pushgateway at ADDR (loopback only, e.g.
    /// 127.0.0.1:9091) every --push-interval and once more when the run ends, as the group
    /// /metrics/job/stormrig/run/RUN_ID: a run shorter than a scrape interval still lands in
    /// Prometheus. A gateway that cannot be reached before the load is exit 3.
    #[arg(long, value_name = "ADDR")]
    pub push_gateway: Option<std::net::SocketAddr>,
    /// Push the same figures by Prometheus remote-write to URL (loopback only, e.g.
    /// http://127.0.0.1:9090/api/v1/write for a Prometheus started with
    /// --web.enable-remote-write-receiver) every --push-interval and once more when the run
    /// ends: each push is a sample at its own instant. Repeat for several receivers. A
    /// receiver that cannot be reached before the load is exit 3.
    #[arg(long, value_name = "URL")]
    pub remote_write: Vec<String>,
    /// Time between pushes to --push-gateway and --remote-write (at least 100ms).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    pub push_interval: std::time::Duration,
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
