//! `stormrig bench`: the benchmarks measured side by side with peer tools.

use clap::Subcommand;

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
        /// after it (0: one wake-up per arrival time; default: what `stormrig run` uses).
        #[arg(long)]
        batch_us: Option<u64>,
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
        /// after it, as the open loop's --batch-us (open loop only; default: what
        /// `stormrig run` uses).
        #[arg(long)]
        batch_us: Option<u64>,
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
        /// Requests in flight at once at the peak (default: the benchmark's own population).
        #[arg(long)]
        population: Option<u64>,
    },
    /// A fleet of client instances of one preset, each sending one request (a 503, then a
    /// 200): resident bytes per instance.
    FleetMemory {
        /// Client instances of the fleet (at most 1000000, the most one config may have).
        #[arg(long, default_value_t = 1_000_000)]
        clients: u32,
        /// Retry preset every instance runs.
        #[arg(long, default_value = "aws-standard")]
        config: String,
    },
    /// The simulator on one thread over a fixed 3-config storm (downstream-503-10s with
    /// naive, aws-standard, envoy): attempts per on-CPU second against the 10 M/s target.
    Sim {
        /// Multiply arrival rate and target capacity by N (default: the benchmark's own scale).
        #[arg(long)]
        scale: Option<f64>,
    },
}
