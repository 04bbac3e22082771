//! The live engine: real sockets on loopback. Every config gets its own fresh target and
//! runs at the same time as the others over the same seeded arrival schedule and fault
//! timeline, so the comparison is fair and a run takes one scenario duration.

pub mod clock;
pub mod driver;
pub mod http;
pub mod layer;
pub mod progress;

use std::net::SocketAddr;
use std::str::FromStr;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Method;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::metrics::AttemptRow;
use crate::metrics::{summarize, Engine, RunResult, RunShape, TargetStats};
use crate::plan::Plan;

use crate::scenario::{schedule, LoadShape, ServiceModel, Target};
use crate::server::{self, TargetConfig, TargetHandle};
use clock::Epoch;
use driver::{ConfigRuntime, RequestTemplate, RuntimeSpec};

/// How a live run is carried out (not what it measures: that is the scenario).
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Keep one row per attempt for `attempts.csv`.
    pub attempt_log: bool,
    /// Draw progress bars (terminal) or print periodic lines (otherwise); false = silent.
    pub progress: bool,
    /// Asked every [`ABORT_CHECK_EVERY`] with each config's counts so far; true stops the
    /// run (`--abort-on-fail`: a gate on a count that can only grow has already failed).
    pub abort_when: Option<AbortCheck>,
}

/// A predicate over running counts; see [`RunOptions::abort_when`].
pub type AbortCheck = Arc<dyn Fn(&Snapshot) -> bool + Send + Sync>;

/// How often `abort_when` is asked.
pub const ABORT_CHECK_EVERY: Duration = Duration::from_millis(200);

/// One config's counts so far, by their summary.json names. Only counts that never go down
/// are here, so a gate they break cannot pass any more.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub config: String,
    pub figures: Vec<(&'static str, f64)>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("attempt_log", &self.attempt_log)
            .field("progress", &self.progress)
            .field("abort_when", &self.abort_when.is_some())
            .finish()
    }
}

/// Counts so far for one config: the client's from its recorder, arrivals from its target.
fn snapshot(rt: &ConfigRuntime, arrivals: u64) -> Snapshot {
    rt.with(|g| {
        let mut sum = [0u64; 8];
        for s in g.rec.seconds() {
            for (acc, v) in sum.iter_mut().zip([
                s.started,
                s.attempts,
                s.retries,
                s.budget_refusals,
                s.breaker_refusals,
                s.successes,
                s.failures,
                s.dropped,
            ]) {
                *acc += v;
            }
        }
        let names = [
            "upstream_requests",
            "attempts",
            "retries",
            "budget_refusals",
            "breaker_refusals",
            "successes",
            "failures",
            "dropped",
        ];
        let mut figures: Vec<(&'static str, f64)> =
            names.iter().zip(sum).map(|(n, v)| (*n, v as f64)).collect();
        figures.push(("downstream_arrivals", arrivals as f64));
        Snapshot {
            config: rt.name.clone(),
            figures,
        }
    })
}

/// Why a live run could not be carried out at all.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("could not start the built-in target: {0}")]
    Target(#[from] server::TargetError),
    #[error("load.{field}: {message}")]
    Request {
        field: &'static str,
        message: String,
    },
    #[error("could not start a topology layer: {0}")]
    Layer(std::io::Error),
    #[error("target {host}:{port}: {message}")]
    Resolve {
        host: String,
        port: u16,
        message: String,
    },
}

/// A finished live run: the result plus the attempt log, when asked for.
pub struct LiveOutput {
    pub result: RunResult,
    pub attempts: Vec<AttemptRow>,
    /// How late the scheduler started requests versus their intended time.
    pub schedule_lag_us: hdrhistogram::Histogram<u64>,
    /// Per config, per hop of the topology (generator first, then each layer): figures
    /// beyond the per-layer summary (empty for a direct run).
    pub hops: Vec<Vec<HopStats>>,
    /// The run was stopped by `abort_when` (a gate could no longer pass).
    pub aborted: bool,
}

/// What one hop of a topology did beyond the counts in `LayerSummary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopStats {
    pub name: String,
    /// Attempts sent with their per-try timeout cut short by the (propagated) deadline.
    pub deadline_cut: u64,
    /// Requests a layer answered 503 at once for its concurrency limit (0 for the generator).
    pub rejected: u64,
}

/// Runs the plan live. `stop` turning true ends the load at once; the result is then
/// marked partial but still holds everything measured so far.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    external_stop: watch::Receiver<bool>,
) -> Result<LiveOutput, LiveError> {
    let sc = &plan.scenario;
    // One stop signal for the run: the caller's (SIGINT, SIGTERM) or an abort on a gate.
    let (stop_tx, mut stop) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let forward = {
        let tx = Arc::clone(&stop_tx);
        let mut ext = external_stop;
        tokio::spawn(async move {
            while ext.changed().await.is_ok() {
                if *ext.borrow() {
                    let _ = tx.send(true);
                    break;
                }
            }
        })
    };
    let aborted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tmpl = template(plan)?;
    let epoch = Epoch::start();

    // One fresh target per config, all sharing the epoch so fault windows line up: the
    // built-in server, or the counting fault proxy in front of the real server.
    let mut targets: Vec<TargetHandle> = Vec::new();
    let bind = SocketAddr::from(([127, 0, 0, 1], 0));
    for _ in &plan.configs {
        let handle = match &sc.target {
            Target::Builtin { model, dedup, .. } => {
                let cfg = TargetConfig {
                    model: model.clone(),
                    faults: sc.faults.clone(),
                    seed: sc.seed,
                    dedup: dedup.clone(),
                };
                server::start(bind, cfg, epoch.mono).await?
            }
            Target::Url {
                host, port, dedup, ..
            } => {
                let upstream = resolve(host, *port)?;
                let cfg = TargetConfig {
                    // The real server sets the pace; the proxy itself never limits forwards.
                    model: ServiceModel {
                        concurrency: u32::MAX,
                        queue: u32::MAX,
                        queue_timeout: None,
                        service_time: crate::scenario::Dist::Constant {
                            value: Duration::ZERO,
                        },
                    },
                    faults: sc.faults.clone(),
                    seed: sc.seed,
                    dedup: dedup.clone(),
                };
                server::proxy::start_proxy(bind, upstream, cfg, epoch.mono).await?
            }
        };
        targets.push(handle);
    }

    // Topology: one independent chain of layer proxies per config, deepest first, each
    // pointed at the next hop; the generator then talks to the first layer.
    let mut chains: Vec<Vec<layer::LayerHandle>> = Vec::with_capacity(targets.len());
    let mut entries: Vec<String> = Vec::with_capacity(targets.len());
    for (ci, t) in targets.iter().enumerate() {
        let mut next = format!("http://{}", t.addr());
        let mut chain = Vec::with_capacity(plan.layers.len());
        for (li, pl) in plan.layers.iter().enumerate().rev() {
            let rt = Arc::new(ConfigRuntime::new(RuntimeSpec {
                // Distinct per (config, layer) so jitter draws never coincide across hops.
                index: ci | ((li + 1) << 16),
                name: &pl.name,
                config: &pl.config,
                base_uri: next,
                max_in_flight: u64::MAX,
                max_connections: None,
                seed: sc.seed,
                propagate_deadline: pl.propagate_deadline,
                attempt_log: false,
            }));
            let l = Arc::new(layer::Layer::new(
                pl.name.clone(),
                rt,
                pl.service_time.clone(),
                pl.concurrency,
                sc.seed,
            ));
            let h = layer::start(bind, l, epoch)
                .await
                .map_err(LiveError::Layer)?;
            next = format!("http://{}", h.addr());
            chain.push(h);
        }
        chain.reverse();
        entries.push(next);
        chains.push(chain);
    }

    let runtimes: Vec<Arc<ConfigRuntime>> = plan
        .configs
        .iter()
        .zip(&entries)
        .enumerate()
        .map(|(i, (c, entry))| {
            Arc::new(ConfigRuntime::new(RuntimeSpec {
                index: i,
                name: &c.name,
                config: &c.config,
                base_uri: entry.clone(),
                max_in_flight: u64::from(sc.load.max_in_flight),
                max_connections: sc.load.max_connections.map(|n| n as usize),
                seed: sc.seed,
                propagate_deadline: sc.load.propagate_deadline,
                attempt_log: opts.attempt_log,
            }))
        })
        .collect();

    let progress = opts
        .progress
        .then(|| progress::Progress::start(&runtimes, &targets, epoch, sc.duration));

    let watcher = opts.abort_when.clone().map(|check| {
        let probes: Vec<_> = targets.iter().map(|t| t.probe()).collect();
        let runtimes = runtimes.clone();
        let tx = Arc::clone(&stop_tx);
        let aborted = Arc::clone(&aborted);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(ABORT_CHECK_EVERY);
            loop {
                tick.tick().await;
                let hit = runtimes
                    .iter()
                    .zip(&probes)
                    .any(|(rt, p)| check(&snapshot(rt, p.arrivals())));
                if hit {
                    aborted.store(true, std::sync::atomic::Ordering::SeqCst);
                    let _ = tx.send(true);
                    break;
                }
            }
        })
    });

    let mut tasks = JoinSet::new();
    let mut lag = crate::metrics::recorder::new_histogram(3);
    let interrupted = match &sc.load.shape {
        LoadShape::Closed { users, think_time } => {
            closed_loop(
                &runtimes,
                &tmpl,
                epoch,
                sc.duration,
                *users,
                *think_time,
                &mut tasks,
            );
            wait_or_stop(epoch.at(sc.duration), &mut stop).await
        }
        shape => {
            let arrivals = schedule::arrivals(shape, sc.duration, sc.seed);
            open_loop(
                arrivals, &runtimes, &tmpl, epoch, &mut tasks, &mut lag, &mut stop,
            )
            .await
        }
    };
    // The load's length is the scenario's (the last arrival of a burst comes long before its
    // end), unless the run was stopped early.
    let load_ran = if interrupted || *stop.borrow() {
        epoch.elapsed().min(sc.duration)
    } else {
        sc.duration
    };

    // Let requests in flight finish (bounded by the drain time), unless told to stop.
    if !interrupted {
        let deadline = epoch.at(sc.duration + sc.drain);
        loop {
            tokio::select! {
                next = tasks.join_next() => if next.is_none() { break },
                _ = tokio::time::sleep_until(deadline) => break,
                _ = stop.changed() => break,
            }
        }
    }
    let drain_s = epoch.elapsed().saturating_sub(sc.duration).as_secs_f64();
    // Whatever is still running now is counted as unfinished.
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let partial = interrupted || *stop.borrow();
    forward.abort();
    if let Some(w) = watcher {
        w.abort();
    }

    // Layers go first: requests still inside them are dropped, then the targets count.
    let mut layer_sets: Vec<Vec<Arc<layer::Layer>>> = Vec::with_capacity(chains.len());
    for chain in chains {
        let mut set = Vec::with_capacity(chain.len());
        for h in chain {
            set.push(Arc::clone(&h.layer));
            h.shutdown().await;
        }
        layer_sets.push(set);
    }

    let mut stats: Vec<TargetStats> = Vec::with_capacity(targets.len());
    for t in targets {
        stats.push(t.shutdown().await);
    }
    if let Some(p) = progress {
        p.finish();
    }

    let fault_bands = crate::plan::fault_bands(&sc.faults);
    let shape = RunShape {
        load_duration: load_ran,
        faults: &fault_bands,
        method: &sc.load.method,
    };
    let mut result = RunResult {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        seed: sc.seed,
        engine: Engine::Live,
        partial,
        duration_s: load_ran.as_secs_f64(),
        drain_s: Some(drain_s),
        stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
        faults: fault_bands.clone(),
        configs: Vec::new(),
        gates: Vec::new(),
        timeline: Vec::new(),
    };
    let mean_rate = match &sc.load.shape {
        LoadShape::Closed { .. } => 0.0,
        shape => schedule::expected_count(shape, sc.duration) / sc.duration.as_secs_f64(),
    };
    let mut attempts = Vec::new();
    let mut hops = Vec::new();
    for (((rt, planned), st), layers) in runtimes
        .iter()
        .zip(&plan.configs)
        .zip(&stats)
        .zip(&layer_sets)
    {
        let (mut summary, rows) = rt.with(|g| {
            if let Some(log) = g.log.as_mut() {
                attempts.append(log);
            }
            summarize(
                &rt.name,
                &planned.config,
                Some(crate::plan::amplification_bound(
                    &planned.config,
                    mean_rate,
                    sc.duration,
                )),
                &g.rec,
                st,
                &shape,
            )
        });
        if !plan.layers.is_empty() {
            let (budget, worst) =
                crate::plan::topology_bounds(&planned.config, &plan.layers, mean_rate, sc.duration);
            summary.amplification_bound = Some(budget);
            summary.topology_bound = Some(worst);
            let upstream = summary.upstream_requests;
            summary.layers.push(layer::layer_summary(
                "client",
                upstream,
                summary.attempts,
                summary.retries,
                summary.budget_refusals,
                summary.client_peak_in_flight,
                upstream,
                planned.config.max_attempts,
            ));
            let mut h = vec![HopStats {
                name: "client".into(),
                deadline_cut: rt.deadline_cut.load(std::sync::atomic::Ordering::SeqCst),
                rejected: 0,
            }];
            for l in layers {
                summary.layers.push(l.summary(upstream));
                h.push(HopStats {
                    name: l.name.clone(),
                    deadline_cut: l.rt.deadline_cut.load(std::sync::atomic::Ordering::SeqCst),
                    rejected: l.rejected.load(std::sync::atomic::Ordering::SeqCst),
                });
            }
            hops.push(h);
        }
        result.configs.push(summary);
        result.timeline.extend(rows);
    }
    crate::metrics::verdict::judge(&mut result, sc.baseline.as_deref());
    Ok(LiveOutput {
        result,
        attempts,
        schedule_lag_us: lag,
        hops,
        aborted: aborted.load(std::sync::atomic::Ordering::SeqCst),
    })
}

/// The socket address of a real target (validated as loopback or explicitly allowed).
fn resolve(host: &str, port: u16) -> Result<SocketAddr, LiveError> {
    use std::net::ToSocketAddrs;
    let err = |message: String| LiveError::Resolve {
        host: host.to_string(),
        port,
        message,
    };
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| err(e.to_string()))?;
    addrs
        .find(|a| a.is_ipv4())
        .or_else(|| (host, port).to_socket_addrs().ok()?.next())
        .ok_or_else(|| err("resolves to no address".into()))
}

fn template(plan: &Plan) -> Result<RequestTemplate, LiveError> {
    let load = &plan.scenario.load;
    let method = Method::from_str(&load.method).map_err(|e| LiveError::Request {
        field: "method",
        message: e.to_string(),
    })?;
    let mut headers = HeaderMap::new();
    for (k, v) in &load.headers {
        let name = HeaderName::from_str(k).map_err(|e| LiveError::Request {
            field: "headers",
            message: format!("{k}: {e}"),
        })?;
        let value = HeaderValue::from_str(v).map_err(|e| LiveError::Request {
            field: "headers",
            message: format!("{k}: {e}"),
        })?;
        headers.insert(name, value);
    }
    Ok(RequestTemplate {
        method,
        path: load.path.clone(),
        headers,
        body: Bytes::from(load.body.clone().unwrap_or_default()),
    })
}

/// How long before an arrival [`open_loop`] stops sleeping and yields until it is due:
/// one tick of tokio's timer wheel.
const SPIN_WINDOW: Duration = Duration::from_millis(1);

/// Open loop: arrivals come on schedule whatever the responses do. Each arrival starts one
/// logical request per config; a config at its in-flight cap drops (and counts) it. The
/// start lag of each arrival (actual − intended start, µs) goes into `lag`.
/// Returns true when stopped early. `stormrig bench open-loop` measures this very function.
pub(crate) async fn open_loop(
    arrivals: schedule::Arrivals,
    runtimes: &[Arc<ConfigRuntime>],
    tmpl: &RequestTemplate,
    epoch: Epoch,
    tasks: &mut JoinSet<()>,
    lag: &mut hdrhistogram::Histogram<u64>,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let tmpl = Arc::new(tmpl.clone());
    for (id, intended) in arrivals.enumerate() {
        let when = epoch.at(intended);
        if tokio::time::Instant::now() < when {
            // tokio's timer wheel ticks in whole milliseconds and rounds a deadline up, so
            // `sleep_until(when)` wakes up to ~1 ms late and every arrival due in that
            // millisecond starts in one burst. Sleep only to `SPIN_WINDOW` before the
            // arrival, then yield until it is due: each yield lets in-flight requests and
            // the I/O driver run, and the spin is bounded by `SPIN_WINDOW` (plus the
            // timer's own lateness), after which the stop signal is checked below.
            let coarse = when.checked_sub(SPIN_WINDOW).unwrap_or(when);
            if tokio::time::Instant::now() < coarse {
                tokio::select! {
                    _ = tokio::time::sleep_until(coarse) => {}
                    _ = stop.changed() => return true,
                }
            }
            while tokio::time::Instant::now() < when {
                tokio::task::yield_now().await;
            }
        }
        if *stop.borrow() {
            return true;
        }
        let late = epoch.elapsed().saturating_sub(intended);
        lag.saturating_record(late.as_micros() as u64);
        for rt in runtimes {
            if !rt.try_claim() {
                rt.dropped(intended);
                continue;
            }
            let rt = Arc::clone(rt);
            let tmpl = Arc::clone(&tmpl);
            tasks.spawn(async move {
                rt.drive(&epoch, &tmpl, id as u64, intended, None).await;
                rt.release();
            });
        }
        // Reap finished tasks now and then so the set does not grow with the run.
        while tasks.try_join_next().is_some() {}
    }
    false
}

/// Closed loop: `users` per config, each sending, waiting for the outcome, thinking, and
/// sending again until the load duration ends.
fn closed_loop(
    runtimes: &[Arc<ConfigRuntime>],
    tmpl: &RequestTemplate,
    epoch: Epoch,
    duration: Duration,
    users: u32,
    think: Duration,
    tasks: &mut JoinSet<()>,
) {
    let tmpl = Arc::new(tmpl.clone());
    for rt in runtimes {
        for user in 0..u64::from(users) {
            let rt = Arc::clone(rt);
            let tmpl = Arc::clone(&tmpl);
            tasks.spawn(async move {
                let mut n = 0u64;
                loop {
                    let intended = epoch.elapsed();
                    if intended >= duration {
                        break;
                    }
                    // Request ids interleave users so they stay unique per config.
                    let id = n * u64::from(users) + user;
                    rt.drive(&epoch, &tmpl, id, intended, None).await;
                    n += 1;
                    if !think.is_zero() {
                        tokio::time::sleep(think).await;
                    }
                }
            });
        }
    }
}

/// Waits until `until`, or returns true early if told to stop.
async fn wait_or_stop(until: tokio::time::Instant, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep_until(until) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}
