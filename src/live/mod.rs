//! The live engine: real sockets on loopback. Every config gets its own fresh target and
//! runs at the same time as the others over the same seeded arrival schedule and fault
//! timeline, so the comparison is fair and a run takes one scenario duration.

pub mod clock;
pub mod driver;
pub mod http;
pub mod progress;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Method;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::metrics::AttemptRow;
use crate::metrics::{summarize, Engine, FaultBand, Recorder, RunResult, RunShape, TargetStats};
use crate::plan::Plan;
use crate::policy::RetryClient;
use crate::scenario::{schedule, LoadShape, ServiceModel, Target};
use crate::target::{self, TargetConfig, TargetHandle};
use clock::Epoch;
use driver::{ConfigRuntime, RequestTemplate, Shared};

/// How a live run is carried out (not what it measures: that is the scenario).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep one row per attempt for `attempts.csv`.
    pub attempt_log: bool,
    /// Draw progress bars (terminal) or print periodic lines (otherwise); false = silent.
    pub progress: bool,
}

/// Why a live run could not be carried out at all.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("could not start the built-in target: {0}")]
    Target(#[from] target::TargetError),
    #[error("load.{field}: {message}")]
    Request {
        field: &'static str,
        message: String,
    },
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
}

/// Runs the plan live. `stop` turning true ends the load at once; the result is then
/// marked partial but still holds everything measured so far.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    mut stop: watch::Receiver<bool>,
) -> Result<LiveOutput, LiveError> {
    let sc = &plan.scenario;
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
                target::start(bind, cfg, epoch.mono).await?
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
                target::proxy::start_proxy(bind, upstream, cfg, epoch.mono).await?
            }
        };
        targets.push(handle);
    }

    let runtimes: Vec<Arc<ConfigRuntime>> = plan
        .configs
        .iter()
        .zip(&targets)
        .enumerate()
        .map(|(i, (c, t))| {
            Arc::new(ConfigRuntime {
                index: i,
                name: c.name.clone(),
                shared: Mutex::new(Shared {
                    client: RetryClient::new(&c.config),
                    rec: Recorder::new(),
                    log: opts.attempt_log.then(Vec::new),
                }),
                http: http::client(),
                base_uri: format!("http://{}", t.addr()),
                in_flight: AtomicU64::new(0),
                max_in_flight: u64::from(sc.load.max_in_flight),
                seed: sc.seed,
                propagate_deadline: false,
            })
        })
        .collect();

    let progress = opts
        .progress
        .then(|| progress::Progress::start(&runtimes, &targets, epoch, sc.duration));

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
    let load_ran = epoch.elapsed().min(sc.duration);

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
    // Whatever is still running now is counted as unfinished.
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let partial = interrupted || *stop.borrow();

    let mut stats: Vec<TargetStats> = Vec::with_capacity(targets.len());
    for t in targets {
        stats.push(t.shutdown().await);
    }
    if let Some(p) = progress {
        p.finish();
    }

    let fault_windows: Vec<(Duration, Duration)> =
        sc.faults.iter().map(|f| (f.at, f.at + f.length)).collect();
    let shape = RunShape {
        load_duration: load_ran,
        faults: &fault_windows,
    };
    let mut result = RunResult {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        seed: sc.seed,
        engine: Engine::Live,
        partial,
        duration_s: load_ran.as_secs_f64(),
        stormrig_version: env!("CARGO_PKG_VERSION").to_string(),
        faults: sc
            .faults
            .iter()
            .map(|f| FaultBand {
                start_s: f.at.as_secs_f64(),
                end_s: (f.at + f.length).as_secs_f64(),
                label: f.kind.label(),
            })
            .collect(),
        configs: Vec::new(),
        gates: Vec::new(),
        timeline: Vec::new(),
    };
    let mean_rate = match &sc.load.shape {
        LoadShape::Closed { .. } => 0.0,
        shape => schedule::expected_count(shape, sc.duration) / sc.duration.as_secs_f64(),
    };
    let mut attempts = Vec::new();
    for ((rt, planned), st) in runtimes.iter().zip(&plan.configs).zip(&stats) {
        let (summary, rows) = rt.with(|g| {
            if let Some(log) = g.log.as_mut() {
                attempts.append(log);
            }
            summarize(
                &rt.name,
                serde_json::to_value(&planned.config).unwrap_or_default(),
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
        result.configs.push(summary);
        result.timeline.extend(rows);
    }
    Ok(LiveOutput {
        result,
        attempts,
        schedule_lag_us: lag,
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

/// Open loop: arrivals come on schedule whatever the responses do. Each arrival starts one
/// logical request per config; a config at its in-flight cap drops (and counts) it.
/// Returns true when stopped early.
async fn open_loop(
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
            tokio::select! {
                _ = tokio::time::sleep_until(when) => {}
                _ = stop.changed() => return true,
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
