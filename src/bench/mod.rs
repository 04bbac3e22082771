//! Benchmarks that put stormrig side by side with peer tools (wrk, oha, nginx): each one is
//! bounded in time and count, stays on loopback, and prints `key=value` lines that
//! `tests/bench/peers.sh` parses.
//!
//! The load paths measured here are the real ones: every logical request goes through a
//! retry config's [`RetryClient`](crate::policy::client::RetryClient) and the [`Recorder`](crate::metrics::Recorder) behind the per-config lock, exactly as
//! in `stormrig run` ([`ConfigRuntime::drive`]). Nothing is skipped to look faster.

pub mod fleet_memory;
pub mod floor;
pub mod hotpath;
pub mod memory;
pub mod sim;
pub mod sim_memory;

pub use memory::{memory, memory_text, MemoryOpts, MemoryReport};

use std::fmt::Write as _;
use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use tokio::task::JoinSet;

use crate::live::clock::Epoch;
use crate::live::driver::{ConfigRuntime, RequestTemplate, RuntimeSpec};
use hotpath::PolicyPath;

use crate::metrics::{Percentiles, TargetStats};
use crate::policy::{self, RetryConfig};
use crate::scenario::{schedule, Dist, Fault, FaultKind, LoadShape, ServiceModel};
use crate::server::{self, TargetConfig};

// ---------------------------------------------------------------------------------------
// CPU and memory of this process
// ---------------------------------------------------------------------------------------

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

/// User + system CPU seconds consumed by this process so far (all threads), from
/// `/proc/self/stat`; `None` where there is no procfs.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; fields after its closing ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime field 15.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// CPU time of the calling thread (on-CPU nanoseconds from `/proc/thread-self/schedstat`):
/// immune to the thread being descheduled on a shared machine, unlike wall time.
pub fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(
        s.split_whitespace().next()?.parse().ok()?,
    ))
}

/// Times the threads of this process went to sleep of their own accord (the sum of
/// `voluntary_ctxt_switches` over `/proc/self/task/*/status`): each is a wake-up later, the
/// cost the open loop's pacing trades against its lag. `None` where there is no procfs.
pub fn voluntary_switches() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let status = std::fs::read_to_string(task.ok()?.path().join("status")).ok()?;
        let line = status
            .lines()
            .find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
        total += line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Resident set size of this process in KiB (`VmRSS` of `/proc/self/status`).
pub fn rss_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

/// A KiB figure of this process's `/proc/self/status`, by its field name (with the colon).
pub(crate) fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

// ---------------------------------------------------------------------------------------
// bench policy
// ---------------------------------------------------------------------------------------

/// One row of `bench policy`.
#[derive(Debug, Clone)]
pub struct PolicyRow {
    pub config: String,
    /// Status every attempt gets.
    pub status: u16,
    pub requests: u64,
    pub attempts: u64,
    pub retries: u64,
    /// Wall time of the loop.
    pub elapsed: Duration,
    /// On-CPU time of the loop's thread (None without procfs).
    pub cpu: Option<Duration>,
}

impl PolicyRow {
    /// Wall nanoseconds per attempt.
    pub fn ns_per_attempt(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.attempts.max(1) as f64
    }

    /// On-CPU nanoseconds per attempt (the figure to quote on a shared machine).
    pub fn cpu_ns_per_attempt(&self) -> Option<f64> {
        self.cpu
            .map(|c| c.as_nanos() as f64 / self.attempts.max(1) as f64)
    }
}

/// The cases `bench policy` measures: (preset, status every attempt gets).
pub const POLICY_CASES: &[(&str, u16)] = &[
    ("naive", 503),
    ("aws-standard", 503),
    ("naive", 200),
    ("aws-standard", 200),
];

/// The policy decision plus recording, per attempt, without I/O: `attempts` attempts of
/// [`PolicyPath`], which does what [`ConfigRuntime::drive`] does under the per-config lock.
pub fn policy_case(name: &str, status: u16, attempts: u64) -> Result<PolicyRow, String> {
    let config = policy::preset(name).map_err(|e| e.to_string())?;
    let mut path = PolicyPath::new(&config, status);
    let cpu0 = thread_cpu();
    let start = Instant::now();
    for _ in 0..attempts {
        path.attempt();
    }
    let elapsed = start.elapsed();
    let cpu = thread_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
    black_box(&path);
    Ok(PolicyRow {
        config: name.to_string(),
        status,
        requests: path.requests,
        attempts: path.attempts,
        retries: path.retries(),
        elapsed,
        cpu,
    })
}

/// Every case of [`POLICY_CASES`], `attempts` each.
pub fn policy_bench(attempts: u64) -> Result<Vec<PolicyRow>, String> {
    POLICY_CASES
        .iter()
        .map(|(name, status)| policy_case(name, *status, attempts))
        .collect()
}

/// `bench policy` output: one `key=value` line per case.
pub fn policy_table(rows: &[PolicyRow]) -> String {
    let mut out = String::new();
    for r in rows {
        let _ = writeln!(
            out,
            "bench=policy config={} status={} requests={} attempts={} retries={} elapsed_s={:.3} ns_per_attempt={:.1} cpu_ns_per_attempt={}",
            r.config,
            r.status,
            r.requests,
            r.attempts,
            r.retries,
            r.elapsed.as_secs_f64(),
            r.ns_per_attempt(),
            r.cpu_ns_per_attempt()
                .map_or("NA".to_string(), |v| format!("{v:.1}"))
        );
    }
    out
}

// ---------------------------------------------------------------------------------------
// the real load path, shared by generator / open-loop / memory
// ---------------------------------------------------------------------------------------

/// `http://host:port/path` split into the base URI the driver prepends and the path.
pub fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--url {url}: must start with http://"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("--url {url}: no host"));
    }
    // The loopback guard's own reading of the host: the benches drive only this machine,
    // whatever URL they are given.
    let (host, _) = crate::scenario::validate::parse_url(url).map_err(|e| format!("--url {e}"))?;
    if !crate::scenario::host::allowed(&host, None) {
        return Err(format!(
            "--url {url}: loopback only (127.0.0.1, [::1] or localhost)"
        ));
    }
    Ok((format!("http://{authority}"), path.to_string()))
}

fn get(path: &str) -> RequestTemplate {
    RequestTemplate {
        method: Method::GET,
        path: path.to_string(),
        headers: HeaderMap::new(),
        body: Bytes::new(),
        grpc: false,
        class: None,
        tokens: None,
    }
}

/// A config's runtime exactly as `live::run` builds it (pooled keep-alive client, policy
/// and recorder behind one lock).
pub fn config_runtime(config: &RetryConfig, base_uri: String, max_in_flight: u64) -> ConfigRuntime {
    config_runtime_over(config, base_uri, max_in_flight, Default::default())
}

/// [`config_runtime`] speaking `wire`.
pub fn config_runtime_over(
    config: &RetryConfig,
    base_uri: String,
    max_in_flight: u64,
    wire: crate::live::http::Dialer,
) -> ConfigRuntime {
    ConfigRuntime::new(RuntimeSpec {
        draw_key: crate::draws::config_key(&config.name),
        name: &config.name,
        config,
        clients: std::num::NonZeroU32::MIN,
        base_uri,
        max_in_flight,
        max_connections: None,
        seed: 1,
        propagate_deadline: false,
        attempt_log: false,
        wire,
        trace: None,
        classes: &[],
        class_policies: &[],
    })
}

pub(crate) fn config_named(name: &str) -> Result<RetryConfig, String> {
    let mut c = policy::preset(name).map_err(|e| format!("--config {name}: {e}"))?;
    if c.name.is_empty() {
        c.name = name.to_string();
    }
    Ok(c)
}

/// What the recorder of a finished bench run holds.
#[derive(Debug, Clone, Default)]
pub struct Counted {
    /// Logical requests finished.
    pub requests: u64,
    pub successes: u64,
    /// Attempts sent (first tries + retries).
    pub attempts: u64,
    pub retries: u64,
    pub dropped: u64,
    /// End-to-end latency from the intended start, in ms.
    pub latency: Percentiles,
}

fn counted(rt: &ConfigRuntime) -> Counted {
    rt.with(|g| {
        let mut c = Counted {
            latency: Percentiles::of(&g.recorder().latency_us()),
            ..Counted::default()
        };
        for s in g.recorder().seconds() {
            c.requests += s.finished;
            c.successes += s.successes;
            c.attempts += s.attempts;
            c.retries += s.retries;
            c.dropped += s.dropped;
        }
        c
    })
}

// ---------------------------------------------------------------------------------------
// bench generator (closed loop, max throughput)
// ---------------------------------------------------------------------------------------

/// Options of `bench generator`.
#[derive(Debug, Clone)]
pub struct GeneratorOpts {
    pub url: String,
    pub connections: usize,
    pub duration: Duration,
    pub config: String,
    /// HTTP/2 in clear instead of HTTP/1.1.
    pub h2c: bool,
}

/// Result of `bench generator`.
#[derive(Debug, Clone)]
pub struct GeneratorReport {
    pub counted: Counted,
    pub elapsed: Duration,
    /// CPU seconds of the whole process over the run (None without procfs, or when the
    /// run was driven inside someone else's runtime).
    pub cpu_s: Option<f64>,
    pub threads: usize,
}

impl GeneratorReport {
    pub fn req_per_s(&self) -> f64 {
        self.counted.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Closed loop inside the caller's runtime: `connections` logical requests at once, each
/// driven through the retry config by [`ConfigRuntime::drive`]; a loop starts no request
/// once `duration` has passed and every request started is finished before this returns
/// (so the counts are exact: attempts sent == requests the target received).
pub async fn generator_run(opts: &GeneratorOpts) -> Result<(Counted, Duration), String> {
    let (base, path) = split_url(&opts.url)?;
    let config = config_named(&opts.config)?;
    let wire = crate::live::http::Dialer {
        protocol: if opts.h2c {
            crate::scenario::Protocol::H2c
        } else {
            crate::scenario::Protocol::Http1
        },
        tls: None,
    };
    let rt = Arc::new(config_runtime_over(&config, base, u64::MAX, wire));
    let tmpl = Arc::new(get(&path));
    let epoch = Epoch::start();
    let users = opts.connections.max(1) as u64;
    let mut tasks = JoinSet::new();
    for user in 0..users {
        let rt = Arc::clone(&rt);
        let tmpl = Arc::clone(&tmpl);
        let duration = opts.duration;
        tasks.spawn(async move {
            let mut n = 0u64;
            loop {
                let intended = epoch.elapsed();
                if intended >= duration {
                    break;
                }
                rt.drive(&epoch, &tmpl, n * users + user, intended, None)
                    .await;
                n += 1;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let elapsed = epoch.elapsed();
    Ok((counted(&rt), elapsed))
}

/// `bench generator`: [`generator_run`] on its own runtime of `threads` threads, with the
/// process's CPU time around it.
pub fn generator(opts: &GeneratorOpts, threads: usize) -> Result<GeneratorReport, String> {
    let rt = crate::live::runtime(Some(threads)).map_err(|e| e.to_string())?;
    let cpu0 = cpu_seconds();
    let (counted, elapsed) = rt.block_on(generator_run(opts))?;
    let cpu1 = cpu_seconds();
    drop(rt);
    Ok(GeneratorReport {
        counted,
        elapsed,
        cpu_s: cpu0.zip(cpu1).map(|(a, b)| b - a),
        threads,
    })
}

fn cpu_lines(out: &mut String, cpu_s: Option<f64>, requests: u64) {
    match cpu_s {
        Some(c) => {
            let per_m = if requests > 0 {
                c / (requests as f64 / 1e6)
            } else {
                0.0
            };
            let _ = writeln!(out, "cpu_s={c:.2}");
            let _ = writeln!(out, "cpu_s_per_million={per_m:.2}");
        }
        None => {
            let _ = writeln!(out, "cpu_s=NA");
            let _ = writeln!(out, "cpu_s_per_million=NA");
        }
    }
}

pub fn generator_text(opts: &GeneratorOpts, r: &GeneratorReport) -> String {
    let c = &r.counted;
    let mut out = String::new();
    let _ = writeln!(out, "bench=generator");
    let _ = writeln!(out, "url={}", opts.url);
    let _ = writeln!(out, "config={}", opts.config);
    let _ = writeln!(out, "threads={}", r.threads);
    let _ = writeln!(out, "connections={}", opts.connections);
    let _ = writeln!(out, "protocol={}", if opts.h2c { "h2c" } else { "http1" });
    let _ = writeln!(out, "elapsed_s={:.3}", r.elapsed.as_secs_f64());
    let _ = writeln!(out, "requests={}", c.requests);
    let _ = writeln!(out, "successes={}", c.successes);
    let _ = writeln!(out, "attempts={}", c.attempts);
    let _ = writeln!(out, "retries={}", c.retries);
    let _ = writeln!(out, "req_per_s={:.0}", r.req_per_s());
    let _ = writeln!(out, "p50_ms={:.3}", c.latency.p50);
    let _ = writeln!(out, "p99_ms={:.3}", c.latency.p99);
    cpu_lines(&mut out, r.cpu_s, c.requests);
    out
}

// ---------------------------------------------------------------------------------------
// bench open-loop
// ---------------------------------------------------------------------------------------

/// Options of `bench open-loop` (and `bench memory`).
#[derive(Debug, Clone)]
pub struct OpenLoopOpts {
    pub url: String,
    pub rate: f64,
    pub duration: Duration,
    pub config: String,
    pub max_in_flight: u64,
    /// Connections the config's pool may hold (attempts beyond them wait for one), as
    /// oha's `-c`; None: unbounded, as `stormrig run`.
    pub connections: Option<usize>,
    /// Requests still in flight this long after the last arrival are abandoned.
    pub drain: Duration,
    /// How the scheduler waits for each arrival (spin, batch window).
    pub pacing: crate::live::pacer::Pacing,
}

#[derive(Debug, Clone)]
pub struct OpenLoopReport {
    pub counted: Counted,
    /// Arrivals the scheduler started (or dropped at the in-flight cap).
    pub scheduled: u64,
    /// Time from t = 0 to the moment the last arrival was started.
    pub last_start: Duration,
    /// Schedule lag (actual start − intended start), µs.
    pub lag: Percentiles,
    pub lag_max_us: u64,
    pub cpu_s: Option<f64>,
    /// Voluntary sleeps of the process's threads over the run ([`voluntary_switches`]).
    pub sleeps: Option<u64>,
    pub threads: usize,
    pub abandoned: u64,
}

impl OpenLoopReport {
    /// Arrivals started per second of the load phase: the schedule's rate when the
    /// scheduler kept up; lower when it fell behind (the last start came late).
    pub fn achieved_rate(&self, opts: &OpenLoopOpts) -> f64 {
        let span = opts
            .duration
            .as_secs_f64()
            .max(self.last_start.as_secs_f64() + 1.0 / opts.rate);
        self.scheduled as f64 / span
    }
}

/// The open loop of `stormrig run` ([`crate::live::open_loop::spawn`]: its scheduler, spawning,
/// in-flight cap and lag measurement) over the real driver, on a seeded constant-rate
/// schedule, then a bounded drain.
pub async fn open_loop_run(
    opts: &OpenLoopOpts,
    config: RetryConfig,
) -> Result<(OpenLoopReport, Arc<ConfigRuntime>), String> {
    open_loop_run_over(opts, config, Default::default()).await
}

/// [`open_loop_run`] speaking `wire`.
pub async fn open_loop_run_over(
    opts: &OpenLoopOpts,
    config: RetryConfig,
    wire: crate::live::http::Dialer,
) -> Result<(OpenLoopReport, Arc<ConfigRuntime>), String> {
    let (base, path) = split_url(&opts.url)?;
    if opts.max_in_flight == 0 {
        return Err("max in flight must be at least 1".into());
    }
    let mut crt = config_runtime_over(&config, base, opts.max_in_flight, wire);
    if let Some(n) = opts.connections {
        crt.http = crt.http.with_max_connections(n);
    }
    let rt = Arc::new(crt);
    let tmpl = crate::live::driver::RequestMix::single(get(&path));
    let shape = LoadShape::Constant { rate: opts.rate };
    let arrivals = schedule::arrivals(&shape, opts.duration, 1);
    let epoch = Epoch::start();
    // Never signalled: the bench runs its whole schedule.
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let ended = crate::live::open_loop::spawn(
        (0u64..).zip(arrivals),
        vec![Arc::clone(&rt)],
        &tmpl,
        epoch,
        stop,
        opts.pacing,
    )
    .await
    .map_err(|e| crate::live::LiveError::from(e).to_string())?;
    let (mut tasks, lag) = (ended.tasks, ended.lag);
    let last_start = epoch.elapsed();
    let scheduled = lag.len();
    // The rest of the load phase (when the schedule ended early) and the drain.
    let load_end = epoch.at(opts.duration);
    let drain_end = epoch.at(opts.duration + opts.drain);
    loop {
        tokio::select! {
            next = tasks.join_next() => if next.is_none() { break },
            _ = tokio::time::sleep_until(drain_end) => break,
        }
    }
    tokio::time::sleep_until(load_end).await;
    let abandoned = tasks.len() as u64;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let report = OpenLoopReport {
        counted: counted(&rt),
        scheduled,
        last_start,
        lag: Percentiles::of(&lag),
        lag_max_us: lag.max(),
        cpu_s: None,
        sleeps: None,
        threads: 0,
        abandoned,
    };
    Ok((report, rt))
}

/// `bench open-loop` on its own runtime.
pub fn open_loop(opts: &OpenLoopOpts, threads: usize) -> Result<OpenLoopReport, String> {
    let rt = crate::live::runtime(Some(threads)).map_err(|e| e.to_string())?;
    let cpu0 = cpu_seconds();
    let sleeps0 = voluntary_switches();
    let config = config_named(&opts.config)?;
    let (mut r, _) = rt.block_on(open_loop_run(opts, config))?;
    let cpu1 = cpu_seconds();
    r.sleeps = sleeps0
        .zip(voluntary_switches())
        .map(|(a, b)| b.saturating_sub(a));
    drop(rt);
    r.cpu_s = cpu0.zip(cpu1).map(|(a, b)| b - a);
    r.threads = threads;
    Ok(r)
}

pub fn open_loop_text(opts: &OpenLoopOpts, r: &OpenLoopReport) -> String {
    let c = &r.counted;
    let mut out = String::new();
    let _ = writeln!(out, "bench=open-loop");
    let _ = writeln!(out, "url={}", opts.url);
    let _ = writeln!(out, "config={}", opts.config);
    let _ = writeln!(out, "threads={}", r.threads);
    match opts.connections {
        Some(n) => {
            let _ = writeln!(out, "connections={n}");
        }
        None => {
            let _ = writeln!(out, "connections=unbounded");
        }
    }
    let _ = writeln!(out, "rate={:.0}", opts.rate);
    let _ = writeln!(out, "spin_us={}", opts.pacing.spin.as_micros());
    let _ = writeln!(out, "batch_us={}", opts.pacing.batch.as_micros());
    let _ = writeln!(out, "duration_s={:.3}", opts.duration.as_secs_f64());
    let _ = writeln!(out, "scheduled={}", r.scheduled);
    let _ = writeln!(out, "last_start_s={:.4}", r.last_start.as_secs_f64());
    rate_lines(&mut out, r.achieved_rate(opts), opts.rate);
    let _ = writeln!(out, "requests={}", c.requests);
    let _ = writeln!(out, "successes={}", c.successes);
    let _ = writeln!(out, "attempts={}", c.attempts);
    let _ = writeln!(out, "dropped={}", c.dropped);
    let _ = writeln!(out, "abandoned={}", r.abandoned);
    let _ = writeln!(
        out,
        "req_per_s={:.0}",
        c.requests as f64 / opts.duration.as_secs_f64()
    );
    lag_lines(&mut out, &r.lag, r.lag_max_us);
    let _ = writeln!(out, "p50_ms={:.3}", c.latency.p50);
    let _ = writeln!(out, "p99_ms={:.3}", c.latency.p99);
    cpu_lines(&mut out, r.cpu_s, c.requests);
    sleeps_line(&mut out, r.sleeps, r.scheduled);
    out
}

/// The achieved rate of a schedule and its error against the rate asked for.
fn rate_lines(out: &mut String, achieved: f64, rate: f64) {
    let _ = writeln!(out, "achieved_rate={achieved:.1}");
    let _ = writeln!(
        out,
        "achieved_rate_error_pct={:.3}",
        (achieved / rate - 1.0) * 100.0
    );
}

/// The schedule lag: percentiles are in µs in the histogram, and `Percentiles` reads them as
/// ms/1000.
fn lag_lines(out: &mut String, lag: &Percentiles, max_us: u64) {
    let _ = writeln!(out, "lag_p50_ms={:.3}", lag.p50);
    let _ = writeln!(out, "lag_p99_ms={:.3}", lag.p99);
    let _ = writeln!(out, "lag_max_ms={:.3}", ms(max_us));
}

/// Sleeps per request: the wake-ups the pacing costs, a figure that a busy machine changes
/// less than CPU time (a loop running behind sleeps less, though). NA without procfs or
/// without requests.
fn sleeps_line(out: &mut String, sleeps: Option<u64>, requests: u64) {
    let _ = writeln!(
        out,
        "sleeps_per_request={}",
        sleeps
            .filter(|_| requests > 0)
            .map_or("NA".to_string(), |s| format!(
                "{:.3}",
                s as f64 / requests as f64
            ))
    );
}

// ---------------------------------------------------------------------------------------
// bench target
// ---------------------------------------------------------------------------------------

/// A built-in target that answers every request with `status` for `length`, at once and
/// without service (a `Status` fault covering the whole run).
pub fn status_target_config(status: u16, length: Duration) -> TargetConfig {
    one_fault_target(
        FaultKind::Status {
            status,
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
            error_code: None,
        },
        length,
    )
}

pub(crate) fn one_fault_target(kind: FaultKind, length: Duration) -> TargetConfig {
    TargetConfig {
        model: ServiceModel {
            concurrency: u32::MAX,
            queue: u32::MAX,
            queue_timeout: None,
            service_time: Dist::Constant {
                value: Duration::ZERO,
            },
            shedding: Default::default(),
        },
        faults: vec![Fault {
            at: Duration::ZERO,
            length,
            path: None,
            probability: 1.0,
            kind,
        }],
        seed: 1,
        dedup: None,
    }
}

/// `bench target`: serves until `duration` passes or SIGINT/SIGTERM, then prints the
/// target's own counts and its CPU time.
pub fn target_bench(
    listen: SocketAddr,
    status: u16,
    threads: usize,
    duration: Duration,
) -> Result<String, String> {
    if !listen.ip().is_loopback() {
        return Err(format!("--listen {listen}: loopback only"));
    }
    let rt = crate::live::runtime(Some(threads)).map_err(|e| e.to_string())?;
    let cpu0 = cpu_seconds();
    let started = Instant::now();
    let stats: TargetStats = rt.block_on(async {
        // Faults cover an extra hour so a run stopped late never serves 200s.
        let cfg = status_target_config(status, duration + Duration::from_secs(3600));
        let handle = server::start(listen, cfg, tokio::time::Instant::now())
            .await
            .map_err(|e| e.to_string())?;
        eprintln!("stormrig bench target: listening on {}", handle.addr());
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = shutdown_signal() => {}
        }
        Ok::<_, String>(handle.shutdown().await)
    })?;
    let cpu1 = cpu_seconds();
    let elapsed = started.elapsed();
    drop(rt);
    let mut out = String::new();
    let _ = writeln!(out, "bench=target");
    let _ = writeln!(out, "listen={listen}");
    let _ = writeln!(out, "threads={threads}");
    let _ = writeln!(out, "elapsed_s={:.3}", elapsed.as_secs_f64());
    let _ = writeln!(out, "arrivals={}", stats.arrivals);
    for (s, n) in &stats.responses_by_status {
        let _ = writeln!(out, "responses_{s}={n}");
    }
    cpu_lines(&mut out, cpu0.zip(cpu1).map(|(a, b)| b - a), stats.arrivals);
    Ok(out)
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benches' URLs pass the loopback guard or are refused before any connection.
    #[test]
    fn bench_urls_are_loopback_only() {
        for ok in [
            "http://127.0.0.1:8080/",
            "http://[::1]:80/x",
            "http://localhost:1",
            "http://127.1:9/",
        ] {
            assert!(split_url(ok).is_ok(), "{ok}");
        }
        for remote in [
            "http://10.0.0.1:80/",
            "http://example.com/",
            "http://[2001:db8::1]:80/",
            "http://evil.localhost:80/",
        ] {
            let e = split_url(remote).unwrap_err();
            assert!(e.contains("loopback only"), "{remote}: {e}");
        }
    }
}
