//! The simulator: any scenario in virtual time, driving the very same policy objects as the
//! live engine (`RetryClient`: `start`, `before_attempt`, `on_outcome`, `finish`) against a
//! modeled built-in target, and recording the same events into the same `metrics::Recorder`,
//! so a figure means the same whichever engine produced it. The result is a `RunResult`
//! with `"engine": "sim"`; reports, CSV/JSON and gates apply unchanged.
//!
//! Pure: no tokio, no sockets, no clock reads. Time is a `u64` of virtual nanoseconds;
//! randomness comes from the same seeded draws as live ([`crate::draws`]: the hash-based
//! fault timeline and service times, and a per-request RNG for the jitter). The same plan
//! and options always give the same result, byte for byte.
//!
//! What is modeled (mirroring `crate::server` and `crate::live`):
//! * the arrival schedule of the scenario (open loop, lazily from `schedule::arrivals`, with
//!   the per-config `max_in_flight` cap dropping and counting arrivals), or a closed loop of
//!   users with think time;
//! * a fixed network delay of [`NET_DELAY`] each way per attempt;
//! * the target: arrival counted and in flight; the fault verdict of
//!   `FaultTimeline::decide` (added latency first, then status / reset / hang, or service
//!   for plain and lost-response requests); a FIFO queue bounded by `queue` in front of the
//!   concurrency slots in force (capacity faults), `queue_timeout` and a full queue shedding
//!   with 503; the sampled service time; lost responses;
//! * the per-try timeout: the client gives up, closes the connection and the target's
//!   handler ends (the request leaves flight, no response is counted), while the work the
//!   target already accepted (queue place, slot) carries on, exactly as the live target's
//!   separately spawned work task does;
//! * hangs and lost responses without a status hold until the client's timeout, or to the
//!   end of the run (then counted unfinished);
//! * retries at `now + after` as the policy decides.
//!
//! * multi-hop topologies: every layer between client and target with its own retry
//!   client, service time and concurrency limit, deadline propagation, relaying and
//!   cancellation exactly as the live layer proxy (see `hop`).
//!
//! * the target's idempotency-key dedup (see `dedup`), and what a write debits.
//!
//! Not modeled: a bounded client connection pool, and a real (URL) target that declares no
//! service model; those return [`SimError::Unsupported`].

mod clock;
mod engine;
mod event;
mod hedge;
mod hop;
mod layers;
mod parallel;
mod parts;
mod provider;
mod queue;
mod slots;
mod target;
mod timers;
mod verdicts;

use std::time::Duration;

pub use clock::{MIN_THINK, NET_DELAY};
pub use parallel::parallel;

use crate::metrics::{AttemptRow, Engine, RunResult};
use crate::plan::Plan;
use crate::run_result::{layer_summary, totals, HopStats, ResultBuilder};
use crate::scenario::timeline::FaultTimeline;
use crate::scenario::{schedule, DedupSpec, Fault, FaultKind, LoadShape, ServiceModel, Target};
use engine::{ConfigRun, Load};

/// How a simulation is carried out.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Multiplies arrival rates (closed-loop users, the in-flight cap) and target capacity
    /// (concurrency, queue, capacity faults) by this factor.
    pub scale: f64,
    /// Keep one row per attempt for `attempts.csv`.
    pub attempt_log: bool,
    /// Set from outside (a signal) to stop early: the result is then marked partial and
    /// holds the configs simulated so far, the current one up to where it stopped.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Threads the configs are spread over (0 = every core). Each config is simulated on
    /// its own, so the output is the same for any number.
    pub jobs: usize,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            scale: 1.0,
            attempt_log: false,
            stop: None,
            jobs: 0,
        }
    }
}

/// Counts about the simulation itself (not about the storm), for speed figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimStats {
    /// Attempts simulated over all configs and every hop of a topology.
    pub attempts: u64,
    /// The same per config, in the plan's order: what a profile of one config's run
    /// divides by (`tests/bench/callgrind-sim.sh` with `SPLIT=1`).
    pub config_attempts: Vec<u64>,
    /// Events that moved a request, attempt or user on, over all configs (stale timers
    /// and replies nobody waited for are not counted).
    pub events: u64,
    /// Virtual time simulated: the longest config's span (load plus the drain it needed).
    pub virtual_time: Duration,
}

/// A finished simulation: the result plus the attempt log, when asked for.
#[derive(Debug, Clone)]
pub struct SimOutput {
    pub result: RunResult,
    pub attempts: Vec<AttemptRow>,
    pub stats: SimStats,
    /// Per config, per hop of the topology (client first, then each layer): figures beyond
    /// the per-layer summary (empty for a direct run), as the live engine reports them.
    pub hops: Vec<Vec<HopStats>>,
}

/// Why a plan cannot be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the simulator cannot model {0}; run it live with `stormrig run`")]
    Unsupported(String),
    #[error("--scale {0}: must be a finite number above 0")]
    Scale(f64),
    /// A trace replays its recorded requests one for one: there is no rate to scale.
    #[error(
        "--scale {0}: a trace load replays its recorded requests one for one, with no rate \
         to scale; run it at --scale 1 (or record a series, whose rates scale)"
    )]
    TraceScale(f64),
}

/// Simulates the plan. Each config runs independently over the same arrival schedule
/// against its own modeled target, as in live runs.
pub fn run(plan: &Plan, opts: &SimOptions) -> Result<SimOutput, SimError> {
    let sc = &plan.scenario;
    let scale = opts.scale;
    if !scale.is_finite() || scale <= 0.0 {
        return Err(SimError::Scale(scale));
    }
    if scale != 1.0 && matches!(sc.load.shape, LoadShape::Trace { .. }) {
        return Err(SimError::TraceScale(scale));
    }
    let (model, dedup) = modeled_target(plan)?;
    let model = scale_model(model, scale);
    let dedup_retention = dedup.filter(|d| d.enabled).map(|d| ns(d.retention));
    let request_classes = sc.load.request_classes();
    let timeline = FaultTimeline::new(scale_faults(&sc.faults, scale), sc.seed);
    let shape = scale_shape(&sc.load.shape, scale);
    let max_in_flight = u64::from(scale_count(sc.load.max_in_flight, scale));

    let (method, classes) = sim_classes(&sc.load, &request_classes);
    let mix = crate::scenario::classes::ClassMix::of_load(&sc.load);

    let builder = ResultBuilder::new(plan, &shape, sc.duration);
    let mut result = builder.header(Engine::Sim, false, None);
    let mut attempts = Vec::new();
    let mut stats = SimStats::default();
    let mut hops = Vec::new();
    // Every config on its own (in parallel), then assembled in config order.
    let outs = parallel(plan.configs.len(), opts.jobs, |ci| {
        let planned = &plan.configs[ci];
        let load = match &shape {
            LoadShape::Closed { users, think_time } => Load::Closed {
                users: *users,
                think: *think_time,
            },
            s => Load::Open(schedule::arrivals(s, sc.duration, sc.seed)),
        };
        engine::simulate(ConfigRun {
            draw_key: crate::draws::config_key(&planned.name),
            name: &planned.name,
            config: &planned.config,
            clients: sc.load.clients,
            seed: sc.seed,
            method,
            classes: classes.clone(),
            mix: mix.clone(),
            count_classes: !sc.load.classes.is_empty(),
            class_policies: &planned.class_policies,
            grpc: sc.load.grpc.is_some(),
            model: &model,
            timeline: &timeline,
            load,
            duration: ns(sc.duration),
            end: ns(sc.duration.saturating_add(sc.drain)),
            max_in_flight,
            dedup_retention,
            layers: plan
                .layers
                .iter()
                .map(|l| hop::HopRun {
                    name: &l.name,
                    config: &l.config,
                    // Distinct per (config, layer), as live keys each layer's draws.
                    draw_key: crate::draws::layer_key(&planned.name, &l.name),
                    propagate_deadline: l.propagate_deadline,
                    service_time: l.service_time.as_ref(),
                    concurrency: l.concurrency.map(|c| scale_count(c, scale)),
                })
                .collect(),
            propagate_deadline: sc.load.propagate_deadline,
            attempt_log: opts.attempt_log,
            stop: opts.stop.as_deref(),
            provider: provider::SimProvider::for_run(
                &sc.providers,
                &request_classes,
                &(0..request_classes.len())
                    .map(|i| planned.policy_of(i))
                    .collect::<Vec<_>>(),
                sc.seed,
            ),
        })
    });
    for (planned, mut out) in plan.configs.iter().zip(outs) {
        stats.attempts += out.attempts;
        stats.config_attempts.push(out.attempts);
        stats.events += out.events;
        stats.virtual_time = stats.virtual_time.max(Duration::from_nanos(out.end_t));
        attempts.append(&mut out.log);
        let (mut summary, rows) = builder.config_summary(planned, &out.rec, &out.stats);
        if !plan.layers.is_empty() {
            add_layers(&builder, plan, planned, &out, &mut summary);
            hops.push(hop_stats(plan, &out));
        }
        result.configs.push(summary);
        result.timeseries.extend(rows);
        if out.stopped {
            result.partial = true;
            break;
        }
    }
    builder.judge(&mut result);
    Ok(SimOutput {
        result,
        attempts,
        stats,
        hops,
    })
}

/// What each request class sends, as the modeled target sees it: a gRPC call is a POST to
/// /service/method (path-scoped faults see that path) that writes; otherwise the load's
/// method, or each class's.
fn sim_classes<'a>(
    load: &'a crate::scenario::Load,
    request_classes: &[crate::scenario::classes::RequestClass],
) -> (&'a str, Vec<engine::SimClass>) {
    let amount = |headers: &std::collections::BTreeMap<String, String>| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(crate::headers::AMOUNT))
            .and_then(|(_, v)| crate::headers::parse_u64(v.as_bytes()))
            .unwrap_or(1)
    };
    match &load.grpc {
        Some(g) => (
            "POST",
            vec![engine::SimClass {
                path: g.path(),
                write: true,
                amount: amount(&load.headers),
                idempotent: false,
            }],
        ),
        None => (
            load.method.as_str(),
            request_classes
                .iter()
                .map(|c| engine::SimClass {
                    path: c.path.clone(),
                    write: c.writes(),
                    amount: amount(&c.headers),
                    idempotent: c.idempotent(),
                })
                .collect(),
        ),
    }
}

/// Each layer's summary within the config's summary.
fn add_layers(
    builder: &ResultBuilder<'_>,
    plan: &Plan,
    planned: &crate::plan::PlannedConfig,
    out: &engine::ConfigOut,
    summary: &mut crate::metrics::ConfigSummary,
) {
    builder.add_layers(summary, &planned.config, |upstream| {
        plan.layers
            .iter()
            .zip(&out.layers)
            .map(|(l, o)| {
                let (attempts, retries, refusals) = totals(&o.rec);
                layer_summary(
                    &l.name,
                    o.arrivals,
                    attempts,
                    retries,
                    refusals,
                    o.peak_in_flight,
                    upstream,
                    l.config.max_attempts,
                )
            })
            .collect()
    });
}

/// The per-hop figures (the client, then each layer) the console prints for a layered run.
fn hop_stats(plan: &Plan, out: &engine::ConfigOut) -> Vec<HopStats> {
    let client = HopStats {
        name: "client".into(),
        deadline_cut: out.deadline_cut,
        rejected: 0,
    };
    let layers = plan.layers.iter().zip(&out.layers).map(|(l, o)| HopStats {
        name: l.name.clone(),
        deadline_cut: o.deadline_cut,
        rejected: o.rejected,
    });
    std::iter::once(client).chain(layers).collect()
}

/// The modeled target's service model and dedup, or why the simulator cannot model the plan.
fn modeled_target(plan: &Plan) -> Result<(&ServiceModel, Option<&DedupSpec>), SimError> {
    let sc = &plan.scenario;
    if let Some((i, f)) = sc
        .faults
        .iter()
        .enumerate()
        .find(|(_, f)| f.kind.delivery().is_some())
    {
        // Their cost is the wire's: bytes and sockets the simulator does not model.
        return Err(SimError::Unsupported(format!(
            "connection-level faults (faults[{i}] is {}; bandwidth, slow-close and slicer \
             shape bytes on the connection)",
            f.kind.label()
        )));
    }
    if let Some(n) = sc.load.max_connections {
        return Err(SimError::Unsupported(format!(
            "a bounded client connection pool (load.max_connections = {n})"
        )));
    }
    match &sc.target {
        Target::Builtin { model, dedup, .. }
        | Target::Url {
            model: Some(model),
            dedup,
            ..
        } => Ok((model, dedup.as_ref())),
        Target::Url {
            url, model: None, ..
        } => Err(SimError::Unsupported(format!(
            "a real server target ({url}) without a service model; to simulate it, add \
             `model = \"default\"` (or another file of targets/) beside `url` in [target], \
             with `service = {{ ... }}` to adjust it"
        ))),
    }
}

/// The faults with capacity faults' slots scaled.
fn scale_faults(faults: &[Fault], scale: f64) -> Vec<Fault> {
    faults
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if let FaultKind::Capacity { concurrency } = &mut f.kind {
                *concurrency = scale_count(*concurrency, scale);
            }
            f
        })
        .collect()
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `n × scale`, rounded, at least 1; `u32::MAX` (unbounded) stays unbounded.
fn scale_count(n: u32, scale: f64) -> u32 {
    if n == u32::MAX {
        return n;
    }
    (f64::from(n) * scale)
        .round()
        .clamp(1.0, f64::from(u32::MAX)) as u32
}

fn scale_model(m: &ServiceModel, scale: f64) -> ServiceModel {
    ServiceModel {
        concurrency: scale_count(m.concurrency, scale),
        queue: if m.queue == 0 {
            0
        } else {
            scale_count(m.queue, scale)
        },
        queue_timeout: m.queue_timeout,
        service_time: m.service_time.clone(),
        shedding: m.shedding.scaled(scale),
    }
}

fn scale_shape(shape: &LoadShape, scale: f64) -> LoadShape {
    match shape {
        LoadShape::Constant { rate } => LoadShape::Constant { rate: rate * scale },
        LoadShape::Poisson { rate } => LoadShape::Poisson { rate: rate * scale },
        LoadShape::Ramp { from, to } => LoadShape::Ramp {
            from: from * scale,
            to: to * scale,
        },
        LoadShape::Steps { steps } => LoadShape::Steps {
            steps: steps
                .iter()
                .map(|s| crate::scenario::RateStep {
                    at: s.at,
                    rate: s.rate * scale,
                })
                .collect(),
        },
        LoadShape::Closed { users, think_time } => LoadShape::Closed {
            users: scale_count(*users, scale),
            think_time: *think_time,
        },
        LoadShape::Burst { requests } => LoadShape::Burst {
            requests: scale_count(*requests, scale),
        },
        LoadShape::Series {
            file,
            arrivals,
            steps,
            skipped_lines,
        } => LoadShape::Series {
            file: file.clone(),
            arrivals: *arrivals,
            steps: steps
                .iter()
                .map(|s| crate::scenario::RateStep {
                    at: s.at,
                    rate: s.rate * scale,
                })
                .collect(),
            skipped_lines: *skipped_lines,
        },
        // Refused at any other scale (`SimError::TraceScale`).
        LoadShape::Trace { .. } => shape.clone(),
    }
}
