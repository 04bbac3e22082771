//! The live engine: real sockets on loopback. Every config gets its own fresh target and
//! runs at the same time as the others over the same seeded arrival schedule and fault
//! timeline, so the comparison is fair and a run takes one scenario duration.

pub mod clock;
pub mod driver;
pub mod exposition;
pub mod grpc;
pub mod http;
pub mod layer;
pub mod layer_grpc;
pub mod open_loop;
pub mod pacer;
pub mod progress;
pub mod push;
pub mod remote_write;
pub mod snapshot;
pub mod telemetry;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Method;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::draws;
use crate::metrics::{AttemptRow, ConfigSummary, Engine, RunResult, SecondRow, TargetStats};
use crate::plan::{Plan, PlannedConfig};
use crate::policy::RetryConfig;
use crate::run_result::ResultBuilder;
use crate::scenario::{schedule, LoadShape, ServiceModel, Target};
use crate::server::{self, TargetConfig, TargetHandle};
use clock::Epoch;
use driver::{ConfigRuntime, RequestMix, RequestTemplate, RuntimeSpec};

/// How a live run is carried out (not what it measures: that is the scenario).
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Keep one row per attempt for `attempts.csv`.
    pub attempt_log: bool,
    /// Draw progress bars (terminal) or print periodic lines (otherwise); false = silent.
    pub progress: bool,
    /// Asked every [`ABORT_CHECK_EVERY`] with each config's summary of the run so far (built
    /// as the final one is); true stops the run (`--abort-on-fail`: a gate that can no
    /// longer pass).
    pub abort_when: Option<AbortCheck>,
    /// SHA-256 of the scenario file, for `summary.json`'s `run` (see [`telemetry::run_meta`]).
    pub scenario_sha256: Option<String>,
    /// `--metrics-listen` and `--events`.
    pub telemetry: telemetry::TelemetryOptions,
    /// The client instances this process runs (`--shard`); the whole fleet by default.
    pub shard: crate::shard::Shard,
}

/// A predicate over one config's summary so far; see [`RunOptions::abort_when`].
pub type AbortCheck = Arc<dyn Fn(&ConfigSummary) -> bool + Send + Sync>;

/// How often `abort_when` is asked.
pub const ABORT_CHECK_EVERY: Duration = Duration::from_millis(200);

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("attempt_log", &self.attempt_log)
            .field("progress", &self.progress)
            .field("abort_when", &self.abort_when.is_some())
            .field("scenario_sha256", &self.scenario_sha256)
            .field("telemetry", &self.telemetry)
            .field("shard", &self.shard)
            .finish()
    }
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
    #[error("target TLS: {0}")]
    Tls(#[from] crate::tls::TlsError),
    #[error("could not start a topology layer: {0}")]
    Layer(std::io::Error),
    #[error(transparent)]
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("the open loop ended abnormally: {0}")]
    OpenLoop(#[from] tokio::task::JoinError),
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
    /// Why `--events` lines were lost (a write failed and the stream ended), if they were.
    pub events_error: Option<String>,
    /// Why the first failed TLS handshake with the target failed, if one did.
    pub tls_failure: Option<String>,
    /// Per config, the connections its generator opened to the next hop: with the
    /// attempts, streams per connection (HTTP/2 keeps one and multiplexes).
    pub connections: Vec<u64>,
    /// Per config, its client's recorder and its target's counts as the run left them:
    /// what a shard's dump holds.
    pub raw: Vec<(crate::metrics::Recorder, TargetStats)>,
}

pub use crate::run_result::HopStats;

/// The runtime of the live engine on `threads` threads (None: one per core available).
/// One thread is a current-thread runtime: the load loop, the connections and any
/// in-process target then share that thread, as `wrk -t1` and `oha --worker-threads 1`
/// do, with no hand-over between a blocked caller and a worker.
pub fn runtime(threads: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    match threads {
        Some(n) if n <= 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
}

/// Runs the plan live. `stop` turning true ends the load at once; the result is then
/// marked partial but still holds everything measured so far.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    external_stop: watch::Receiver<bool>,
) -> Result<LiveOutput, LiveError> {
    let sc = &plan.scenario;
    let mut stop = StopSignal::forward(external_stop);
    let tmpl = requests(plan)?;
    let epoch = Epoch::start();
    let meta = telemetry::run_meta(&epoch, opts.scenario_sha256.clone());

    let (targets, wires): (Vec<_>, Vec<_>) = start_targets(plan, epoch).await?.into_iter().unzip();
    let (chains, entries) = start_chains(plan, &targets, &wires, epoch).await?;
    let runtimes = client_runtimes(plan, &entries, &targets, opts, &meta);
    let probes = targets.iter().map(|t| t.probe()).collect();
    let telemetry =
        telemetry::Telemetry::start(&opts.telemetry, &runtimes, probes, &meta, &sc.name, epoch)
            .await?;
    let progress = opts
        .progress
        .then(|| progress::Progress::start(&runtimes, &targets, epoch, sc.duration, &sc.faults));
    let layer_sets: Vec<Vec<Arc<layer::Layer>>> = chains
        .iter()
        .map(|chain| chain.iter().map(|h| Arc::clone(&h.layer)).collect())
        .collect();
    let aborted = Arc::new(AtomicBool::new(false));
    let watcher = opts.abort_when.clone().map(|check| {
        let watched = Watched {
            plan: Arc::new(plan.clone()),
            runtimes: runtimes.clone(),
            probes: targets.iter().map(|t| t.probe()).collect(),
            layer_sets: layer_sets.clone(),
        };
        watch_summaries(check, watched, epoch, &stop, &aborted)
    });

    let mut tasks = JoinSet::new();
    let (interrupted, lag) =
        drive_load(plan, opts, &runtimes, &tmpl, epoch, &mut stop, &mut tasks).await?;
    // The load's length is the scenario's (the last arrival of a burst comes long before its
    // end), unless the run was stopped early.
    let load_ran = if interrupted || *stop.rx.borrow() {
        epoch.elapsed().min(sc.duration)
    } else {
        sc.duration
    };
    if !interrupted {
        drain(plan, epoch, &mut tasks, &mut stop.rx).await;
    }
    let drain_s = epoch.elapsed().saturating_sub(sc.duration).as_secs_f64();
    // Whatever is still running now is counted as unfinished.
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let partial = interrupted || *stop.rx.borrow();
    stop.forward.abort();
    if let Some(w) = watcher {
        w.abort();
    }

    let events_error = telemetry.finish().await;
    let stats = shut_down(chains, targets).await;
    if let Some(p) = progress {
        p.finish();
    }
    let ran = Ran {
        load: load_ran,
        drain_s,
        partial,
    };
    let (mut result, attempts, hops) = collect(plan, &runtimes, &stats, &layer_sets, ran);
    let raw = runtimes
        .iter()
        .zip(stats)
        .map(|(rt, st)| (rt.with(|g| g.recorder().clone()), st))
        .collect();
    telemetry::stamp(&mut result, meta, &epoch);
    Ok(LiveOutput {
        result,
        attempts,
        schedule_lag_us: lag,
        hops,
        aborted: aborted.load(Ordering::SeqCst),
        events_error,
        tls_failure: runtimes
            .iter()
            .map(|r| &r.http)
            .chain(layer_sets.iter().flatten().map(|l| &l.rt.http))
            .find_map(|h| h.tls_failure())
            .map(str::to_string),
        connections: runtimes
            .iter()
            .map(|r| r.http.connections_opened())
            .collect(),
        raw,
    })
}

/// The load, open or closed loop, for the scenario's duration or until stopped: whether it
/// was stopped, and the open loop's schedule lag (empty for a closed loop).
async fn drive_load(
    plan: &Plan,
    opts: &RunOptions,
    runtimes: &[Arc<ConfigRuntime>],
    tmpl: &RequestMix,
    epoch: Epoch,
    stop: &mut StopSignal,
    tasks: &mut JoinSet<()>,
) -> Result<(bool, hdrhistogram::Histogram<u64>), LiveError> {
    let sc = &plan.scenario;
    match &sc.load.shape {
        LoadShape::Closed { users, think_time } => {
            let (users, think) = (*users, *think_time);
            closed_loop(runtimes, tmpl, epoch, sc.duration, users, think, tasks);
            let stopped = wait_or_stop(epoch.at(sc.duration), &mut stop.rx).await;
            Ok((stopped, crate::metrics::latency::new_histogram(3)))
        }
        shape => {
            // A shard keeps the arrivals of its own client instances, with their ids.
            let (shard, clients) = (opts.shard, sc.load.clients);
            let arrivals = (0u64..)
                .zip(schedule::arrivals(shape, sc.duration, sc.seed))
                .filter(move |(id, _)| shard.owns(*id, clients));
            let ended = open_loop::spawn(
                arrivals,
                runtimes.to_vec(),
                tmpl,
                epoch,
                stop.rx.clone(),
                pacer::Pacing::DEFAULT,
            )
            .await
            .map_err(LiveError::from)?;
            *tasks = ended.tasks;
            Ok((ended.stopped, ended.lag))
        }
    }
}

/// The run's one stop signal: the caller's (SIGINT, SIGTERM) forwarded, or an abort on a
/// gate sent directly.
struct StopSignal {
    tx: Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
    /// The task forwarding the caller's signal.
    forward: tokio::task::JoinHandle<()>,
}

impl StopSignal {
    fn forward(mut external: watch::Receiver<bool>) -> StopSignal {
        let (tx, rx) = watch::channel(false);
        let tx = Arc::new(tx);
        let forward = {
            let tx = Arc::clone(&tx);
            tokio::spawn(async move {
                while external.changed().await.is_ok() {
                    if *external.borrow() {
                        let _ = tx.send(true);
                        break;
                    }
                }
            })
        };
        StopSignal { tx, rx, forward }
    }
}

/// One fresh target per config, all sharing the epoch so fault windows line up: the
/// built-in server, or the counting fault proxy in front of the real server. With each,
/// what the hop that reaches it speaks: the scenario's protocol and TLS to the built-in
/// target (trusting the certificate it made), clear text to the proxy (HTTP/2 in clear when
/// the real server speaks HTTP/2), whose upstream side then speaks the scenario's wire.
async fn start_targets(
    plan: &Plan,
    epoch: Epoch,
) -> Result<Vec<(TargetHandle, http::Dialer)>, LiveError> {
    let sc = &plan.scenario;
    let wire = sc.target.wire();
    let mut targets = Vec::with_capacity(plan.configs.len());
    for _ in &plan.configs {
        let handle = match &sc.target {
            Target::Builtin { model, dedup, .. } => {
                let cfg = TargetConfig {
                    model: model.clone(),
                    faults: sc.faults.clone(),
                    seed: sc.seed,
                    dedup: dedup.clone(),
                };
                let (listen, cert) = server::Listen::generated(wire.protocol, wire.tls.is_some())?;
                let handle = server::start_with_providers(
                    LOOPBACK,
                    cfg,
                    sc.providers.clone(),
                    epoch.mono,
                    listen,
                )
                .await?;
                let ip = handle.addr().ip().to_string();
                (handle, http::Dialer::new(wire, &ip, cert.as_ref())?)
            }
            Target::Url {
                host,
                port,
                dedup,
                upstream_timeout,
                ..
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
                        shedding: Default::default(),
                    },
                    faults: sc.faults.clone(),
                    seed: sc.seed,
                    dedup: dedup.clone(),
                };
                let hop = if wire.protocol.is_h2() {
                    crate::scenario::Protocol::H2c
                } else {
                    crate::scenario::Protocol::Http1
                };
                let tls = match &wire.tls {
                    Some(trust) => Some((
                        crate::tls::client_config(trust, wire.protocol, None)?,
                        host.clone(),
                    )),
                    None => None,
                };
                let options = server::proxy::ProxyOptions {
                    upstream: server::proxy::UpstreamWire {
                        protocol: wire.protocol,
                        tls,
                    },
                    listen: server::Listen {
                        protocol: hop,
                        tls: None,
                    },
                    upstream_timeout: upstream_timeout
                        .unwrap_or(server::proxy::ProxyOptions::default().upstream_timeout),
                    ..server::proxy::ProxyOptions::default()
                };
                let handle =
                    server::proxy::start_proxy_with(LOOPBACK, upstream, cfg, epoch.mono, options)
                        .await?;
                let hop = http::Dialer {
                    protocol: hop,
                    tls: None,
                };
                (handle, hop)
            }
        };
        if !sc.load.classes.is_empty() {
            handle.0.count_classes(server::ArrivalClasses {
                mix: crate::scenario::classes::ClassMix::of_load(&sc.load),
                seed: sc.seed,
                writes: sc.load.classes.iter().map(|c| c.writes()).collect(),
            });
        }
        targets.push(handle);
    }
    Ok(targets)
}

/// Where servers of a run listen: loopback, on a port the system picks.
const LOOPBACK: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    0,
));

/// Topology: one independent chain of layer proxies per config, deepest first, each
/// pointed at the next hop. Returns the chains (nearest layer first) and, per config, the
/// URI the generator talks to (its first layer, or its target in a direct run).
async fn start_chains(
    plan: &Plan,
    targets: &[TargetHandle],
    wires: &[http::Dialer],
    epoch: Epoch,
) -> Result<(Vec<Vec<layer::LayerHandle>>, Vec<Entry>), LiveError> {
    let sc = &plan.scenario;
    let mut chains = Vec::with_capacity(targets.len());
    let mut entries = Vec::with_capacity(targets.len());
    for (ci, (t, wire)) in targets.iter().zip(wires).enumerate() {
        let scheme = if wire.tls.is_some() { "https" } else { "http" };
        let mut next = format!("{scheme}://{}", t.addr());
        // The deepest hop speaks the target's wire; hops between stormrig's own layers
        // are HTTP/1.1 in clear, or HTTP/2 in clear for gRPC calls (their status travels
        // in HTTP/2 trailers).
        let grpc = sc.load.grpc.is_some();
        let layer_wire = || http::Dialer {
            protocol: match grpc {
                true => crate::scenario::Protocol::H2c,
                false => crate::scenario::Protocol::default(),
            },
            tls: None,
        };
        let mut next_wire = wire.clone();
        let mut chain = Vec::with_capacity(plan.layers.len());
        for pl in plan.layers.iter().rev() {
            let rt = Arc::new(ConfigRuntime::new(RuntimeSpec {
                // Distinct per (config, layer) so jitter draws never coincide across hops.
                draw_key: draws::layer_key(&plan.configs[ci].name, &pl.name),
                name: &pl.name,
                config: &pl.config,
                clients: std::num::NonZeroU32::MIN,
                base_uri: next,
                max_in_flight: u64::MAX,
                max_connections: None,
                seed: sc.seed,
                propagate_deadline: pl.propagate_deadline,
                attempt_log: false,
                wire: std::mem::replace(&mut next_wire, layer_wire()),
                // Passes on the generator's.
                trace: None,
                classes: &[],
                class_policies: &[],
            }));
            let l = Arc::new(
                layer::Layer::new(
                    pl.name.clone(),
                    rt,
                    pl.service_time.clone(),
                    pl.concurrency,
                    sc.seed,
                )
                .relaying_grpc(grpc),
            );
            let h = layer::start(LOOPBACK, l, epoch)
                .await
                .map_err(LiveError::Layer)?;
            next = format!("http://{}", h.addr());
            chain.push(h);
        }
        chain.reverse();
        entries.push(Entry {
            uri: next,
            wire: next_wire,
        });
        chains.push(chain);
    }
    Ok((chains, entries))
}

/// Where a config's generator sends its attempts, and how.
struct Entry {
    uri: String,
    wire: http::Dialer,
}

/// The load generator's client of each compared config, pointed at its entry URI.
/// Each config's client; one that talks to its in-process target (or proxy) directly, with
/// no layer between, settles every attempt with it ([`server::Claims`]).
fn client_runtimes(
    plan: &Plan,
    entries: &[Entry],
    targets: &[TargetHandle],
    opts: &RunOptions,
    meta: &crate::metrics::RunMeta,
) -> Vec<Arc<ConfigRuntime>> {
    let sc = &plan.scenario;
    plan.configs
        .iter()
        .zip(entries)
        .zip(targets)
        .map(|((c, entry), target)| {
            let rt = ConfigRuntime::new(RuntimeSpec {
                draw_key: draws::config_key(&c.name),
                name: &c.name,
                config: &c.config,
                clients: sc.load.clients,
                base_uri: entry.uri.clone(),
                max_in_flight: u64::from(sc.load.max_in_flight),
                max_connections: sc.load.max_connections.map(|n| n as usize),
                seed: sc.seed,
                propagate_deadline: sc.load.propagate_deadline,
                attempt_log: opts.attempt_log,
                wire: entry.wire.clone(),
                trace: Some(driver::Trace {
                    config: &c.name,
                    run: &meta.id,
                }),
                classes: &sc.load.classes,
                class_policies: &c.class_policies,
            });
            Arc::new(match plan.layers.is_empty() {
                true => rt.with_claims(target.claim_attempts()),
                false => rt,
            })
        })
        .collect()
}

/// What the abort watcher reads each config's summary so far from.
struct Watched {
    plan: Arc<Plan>,
    runtimes: Vec<Arc<ConfigRuntime>>,
    probes: Vec<server::TargetProbe>,
    layer_sets: Vec<Vec<Arc<layer::Layer>>>,
}

/// Asks `check` every [`ABORT_CHECK_EVERY`] about each config's summary so far, built by
/// [`summarize_config`] exactly as the end of the run builds it; the first yes marks the
/// run aborted and stops it.
fn watch_summaries(
    check: AbortCheck,
    w: Watched,
    epoch: Epoch,
    stop: &StopSignal,
    aborted: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let tx = Arc::clone(&stop.tx);
    let aborted = Arc::clone(aborted);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(ABORT_CHECK_EVERY);
        let sc = &w.plan.scenario;
        loop {
            tick.tick().await;
            let load_ran = epoch.elapsed().min(sc.duration);
            let builder = ResultBuilder::new(&w.plan, &sc.load.shape, load_ran);
            let hit = w.plan.configs.iter().enumerate().any(|(i, planned)| {
                let target = w.probes[i].stats();
                let (so_far, _) =
                    summarize_config(&builder, planned, &w.runtimes[i], &target, &w.layer_sets[i]);
                check(&so_far)
            });
            if hit {
                aborted.store(true, Ordering::SeqCst);
                let _ = tx.send(true);
                break;
            }
        }
    })
}

/// Lets requests in flight finish, bounded by the scenario's drain time, unless told to
/// stop.
async fn drain(
    plan: &Plan,
    epoch: Epoch,
    tasks: &mut JoinSet<()>,
    stop: &mut watch::Receiver<bool>,
) {
    let sc = &plan.scenario;
    let deadline = epoch.at(sc.duration + sc.drain);
    loop {
        tokio::select! {
            next = tasks.join_next() => if next.is_none() { break },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = stop.changed() => break,
        }
    }
}

/// Stops the layers first (requests still inside them are dropped), then the targets,
/// which then count. Returns each config's target counts.
async fn shut_down(
    chains: Vec<Vec<layer::LayerHandle>>,
    targets: Vec<TargetHandle>,
) -> Vec<TargetStats> {
    for chain in chains {
        for h in chain {
            h.shutdown().await;
        }
    }
    let mut stats = Vec::with_capacity(targets.len());
    for t in targets {
        stats.push(t.shutdown().await);
    }
    stats
}

/// One config's summary and per-second rows from its counts so far: the client's from its
/// session, the downstream ones from its target, and one row per hop of a topology. The
/// end of the run and `--abort-on-fail` both read a config through here, so a gate is
/// judged mid-run on the very figure it is judged on at the end.
fn summarize_config(
    builder: &ResultBuilder<'_>,
    planned: &PlannedConfig,
    rt: &ConfigRuntime,
    target: &TargetStats,
    layers: &[Arc<layer::Layer>],
) -> (ConfigSummary, Vec<SecondRow>) {
    let (mut summary, rows) = rt.with(|g| builder.config_summary(planned, g.recorder(), target));
    if !builder.plan().layers.is_empty() {
        add_layer_rows(builder, &mut summary, &planned.config, layers);
    }
    (summary, rows)
}

/// How much of the scenario a live run carried out.
struct Ran {
    /// The load's length: the scenario's, or less when stopped early.
    load: Duration,
    /// How long requests drained after the load, in seconds.
    drain_s: f64,
    partial: bool,
}

/// The run's result from each config's session, target counts and layers: the summaries,
/// the attempt log and the per-hop figures of a topology.
fn collect(
    plan: &Plan,
    runtimes: &[Arc<ConfigRuntime>],
    stats: &[TargetStats],
    layer_sets: &[Vec<Arc<layer::Layer>>],
    ran: Ran,
) -> (RunResult, Vec<AttemptRow>, Vec<Vec<HopStats>>) {
    let sc = &plan.scenario;
    let builder = ResultBuilder::new(plan, &sc.load.shape, ran.load);
    let mut result = builder.header(Engine::Live, ran.partial, Some(ran.drain_s));
    let mut attempts = Vec::new();
    let mut hops = Vec::new();
    for (((rt, planned), st), layers) in runtimes
        .iter()
        .zip(&plan.configs)
        .zip(stats)
        .zip(layer_sets)
    {
        rt.with(|g| attempts.append(&mut g.take_log()));
        let (mut summary, rows) = summarize_config(&builder, planned, rt, st, layers);
        summary.connections = Some(crate::metrics::result::ConnectionFigures::of(
            rt.http.protocol().as_str(),
            rt.http.connections_opened(),
            &summary,
        ));
        if !plan.layers.is_empty() {
            hops.push(hop_stats(rt, layers));
        }
        result.configs.push(summary);
        result.timeseries.extend(rows);
    }
    builder.judge(&mut result);
    (result, attempts, hops)
}

/// A topology run's per-layer rows and bounds in one config's summary.
fn add_layer_rows(
    builder: &ResultBuilder<'_>,
    summary: &mut ConfigSummary,
    config: &RetryConfig,
    layers: &[Arc<layer::Layer>],
) {
    builder.add_layers(summary, config, |upstream| {
        layers.iter().map(|l| l.summary(upstream)).collect()
    });
}

/// A topology run's per-hop figures beyond the layer rows (generator first).
fn hop_stats(rt: &ConfigRuntime, layers: &[Arc<layer::Layer>]) -> Vec<HopStats> {
    let mut hops = vec![HopStats {
        name: "client".into(),
        deadline_cut: rt.with(|g| g.deadline_cut()),
        rejected: 0,
    }];
    for l in layers {
        hops.push(HopStats {
            name: l.name.clone(),
            deadline_cut: l.rt.with(|g| g.deadline_cut()),
            rejected: l.rejected.load(Ordering::SeqCst),
        });
    }
    hops
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

/// What the load's requests send: one template per request class (the load itself without
/// classes), picked per request id.
fn requests(plan: &Plan) -> Result<RequestMix, LiveError> {
    let load = &plan.scenario.load;
    if load.classes.is_empty() {
        return Ok(RequestMix::single(template(
            &load.method,
            &load.path,
            &load.headers,
            load.body.as_deref(),
            load.grpc.as_ref(),
        )?));
    }
    let templates = load
        .classes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut t = template(&c.method, &c.path, &c.headers, c.body.as_deref(), None)?;
            t.class = Some(i);
            t.tokens = (c.prompt_tokens.is_some() || c.completion_tokens.is_some())
                .then(|| Arc::new(c.clone()));
            Ok(t)
        })
        .collect::<Result<Vec<_>, LiveError>>()?;
    Ok(RequestMix::classes(
        templates,
        crate::scenario::classes::ClassMix::of_load(load),
        plan.scenario.seed,
    ))
}

fn template(
    method: &str,
    path: &str,
    load_headers: &std::collections::BTreeMap<String, String>,
    body: Option<&str>,
    grpc: Option<&crate::scenario::grpc::GrpcCall>,
) -> Result<RequestTemplate, LiveError> {
    let method = Method::from_str(method).map_err(|e| LiveError::Request {
        field: "method",
        message: e.to_string(),
    })?;
    let mut headers = HeaderMap::new();
    for (k, v) in load_headers {
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
    if let Some(g) = grpc {
        grpc::call_headers(&mut headers);
        return Ok(RequestTemplate {
            method: Method::POST,
            path: g.path(),
            headers,
            body: grpc::frame(g.message.as_bytes()),
            grpc: true,
            class: None,
            tokens: None,
        });
    }
    Ok(RequestTemplate {
        method,
        path: path.to_string(),
        headers,
        body: Bytes::from(body.unwrap_or_default().to_string()),
        grpc: false,
        class: None,
        tokens: None,
    })
}

/// Closed loop: `users` per config, each sending, waiting for the outcome, thinking, and
/// sending again until the load duration ends.
fn closed_loop(
    runtimes: &[Arc<ConfigRuntime>],
    tmpl: &RequestMix,
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
                    rt.drive(&epoch, tmpl.pick(id), id, intended, None).await;
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
