//! The scenario file's shape, as serde reads it.
//!
//! Every struct denies unknown fields so a misspelt key is an error, not a silently ignored
//! setting: a storm rehearsal that quietly ran without its fault is worse than one that
//! refused to start. Values are checked for sense in `validate`, which knows the field
//! paths; this module only says what may be written.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::load_shape::{LoadShape, RateStep};
use super::units::duration;

/// One storm rehearsal: load, target, fault timeline, retry configs to compare, gates.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Short name; also the folder name under `reports/`.
    pub name: String,
    /// What the scenario demonstrates, shown in every report.
    #[serde(default)]
    pub description: String,
    /// Seed of every random choice: arrival schedule, fault draws, service times, jitter.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long load is offered. Requests still in flight at the end are allowed to finish
    /// (bounded by `drain`).
    #[serde(with = "duration")]
    pub duration: Duration,
    /// How long to wait after `duration` for in-flight requests before counting them unfinished.
    #[serde(default = "default_drain", with = "duration")]
    pub drain: Duration,
    pub load: LoadSection,
    pub target: TargetSpec,
    /// The fault timeline; windows may overlap.
    #[serde(default)]
    pub faults: Vec<FaultSection>,
    /// Layers between the load generator and the target, nearest first.
    #[serde(default)]
    pub topology: Vec<LayerSpec>,
    /// Retry configs to compare, side by side. Each is a `policy` retry-config table
    /// (`name`, optional `preset`, overrides); kept raw here and resolved by the loader so
    /// that policy errors can be located in the file.
    pub configs: Vec<toml::Table>,
    /// Gate expressions, kept verbatim here and parsed by the gates module.
    #[serde(default)]
    pub gates: Vec<String>,
    /// The config every other is judged against (default: the one named `no-retry`).
    #[serde(default)]
    pub baseline: Option<String>,
    /// LLM-style providers on the built-in target (`[[provider]]`), reached under
    /// `/providers/NAME`.
    #[serde(default, rename = "provider")]
    pub providers: Vec<super::provider::ProviderSection>,
}

fn default_seed() -> u64 {
    1
}

fn default_drain() -> Duration {
    Duration::from_secs(5)
}

/// The offered load as written: a `kind` plus the fields that kind uses. `validate` turns it
/// into a [`LoadShape`], where a wrong combination can no longer be expressed. (serde's
/// `flatten` cannot be combined with `deny_unknown_fields`, hence the flat form.)
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// `constant`, `poisson`, `ramp`, `steps`, `closed`, `burst`, `series` or `trace`.
    pub kind: String,
    /// Arrivals per second (`constant`, `poisson`).
    pub rate: Option<f64>,
    /// Start and end rate (`ramp`); for a recording (`series`, `trace`), the replayed
    /// window in seconds from its start.
    pub from: Option<f64>,
    pub to: Option<f64>,
    /// The recording (`series`, `trace`), relative to the scenario file.
    #[serde(default)]
    pub file: Option<String>,
    /// How a series becomes arrivals: `poisson` (default) or `constant`.
    #[serde(default)]
    pub arrivals: Option<String>,
    /// Time compression of a recording (`series`, `trace`): 2 replays it in half the time.
    #[serde(default)]
    pub speed: Option<f64>,
    /// The access log's format (`trace`): `nginx-combined` or `nginx-json`.
    #[serde(default)]
    pub format: Option<String>,
    /// Bad lines of a recording skipped and counted instead of refused (default 0).
    #[serde(default)]
    pub skip_bad_lines: Option<u64>,
    /// `trace`: a request to the same path from the same client within this long of its
    /// failed previous one is a retry, folded into its first attempt.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub fold_retries: Option<Duration>,
    /// `trace` (`nginx-json`): the field whose equal values are one request, its retries
    /// folded into its first attempt (an idempotency key or request id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fold_key: Option<String>,
    /// Rate steps (`steps`).
    pub steps: Option<Vec<RateStep>>,
    /// Users (`closed`).
    pub users: Option<u32>,
    /// Think time between a user's requests (`closed`).
    #[serde(default, with = "duration::option")]
    pub think_time: Option<Duration>,
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default = "default_path")]
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
    /// gRPC unary calls instead of plain HTTP requests ([`super::grpc`]).
    #[serde(default)]
    pub grpc: Option<super::grpc::GrpcSection>,
    /// Per-config cap on logical requests in flight. Arrivals past the cap are dropped and
    /// counted, never silently delayed (that would hide the overload the storm causes).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: u32,
    /// Per-config cap on the client's connections to the next hop, as a real client's pool
    /// limit: attempts beyond it wait for a connection (the wait is part of their latency
    /// and per-try timeout). Unset: unbounded, every attempt that finds no idle connection
    /// dials a new one.
    #[serde(default)]
    pub max_connections: Option<u32>,
    /// The load generator passes each request's remaining deadline to the next hop (the
    /// first topology layer, or the target) in `x-stormrig-deadline-ms`.
    #[serde(default)]
    pub propagate_deadline: bool,
    /// Raises the ceiling on planned arrivals (logical requests over all configs, default
    /// 100,000,000) for a storm that really is that large.
    #[serde(default)]
    pub max_planned_arrivals: Option<u64>,
    /// Raises the ceiling on client instances over all configs (`configs × clients`,
    /// default 4,000,000, at most 512 B of state each) for a fleet that really is that large.
    #[serde(default)]
    pub max_client_instances: Option<u64>,
    /// The fleet size: this many client instances per config, each with its own retry
    /// state (budget, breaker, cost ledger); request `id` is sent by instance `id mod
    /// clients` ([`crate::policy::fleet`]). Default 1: one client for the whole run.
    #[serde(default)]
    pub clients: Option<u32>,
    /// A weighted mix of request classes (`[[load.classes]]`), each sending its own
    /// method, path, headers, body and tokens; none: every request is the load's own.
    #[serde(default)]
    pub classes: Vec<super::classes::ClassSection>,
}

fn default_method() -> String {
    "GET".into()
}
fn default_path() -> String {
    "/".into()
}
fn default_max_in_flight() -> u32 {
    10_000
}

/// The validated load.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Load {
    pub shape: LoadShape,
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    /// The gRPC unary call every request makes, when the load speaks gRPC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<super::grpc::GrpcCall>,
    pub max_in_flight: u32,
    /// Client connection pool bound (see [`LoadSection::max_connections`]).
    pub max_connections: Option<u32>,
    /// Pass the remaining deadline downstream (see [`LoadSection::propagate_deadline`]).
    pub propagate_deadline: bool,
    /// Ceiling on planned arrivals over all configs (see [`LoadSection::max_planned_arrivals`]).
    pub max_planned_arrivals: u64,
    /// Ceiling on client instances over all configs (see [`LoadSection::max_client_instances`]).
    #[serde(skip)]
    pub max_client_instances: u64,
    /// Client instances per config (see [`LoadSection::clients`]).
    #[serde(skip_serializing_if = "is_one")]
    pub clients: NonZeroU32,
    /// The request classes of the mix; empty: every request is the load's own
    /// ([`Load::request_classes`] then gives that one class).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<super::classes::RequestClass>,
}

impl Load {
    /// The classes requests are drawn from: the written ones, or the load itself as the
    /// one class `default`.
    pub fn request_classes(&self) -> std::borrow::Cow<'_, [super::classes::RequestClass]> {
        if !self.classes.is_empty() {
            return std::borrow::Cow::Borrowed(&self.classes);
        }
        std::borrow::Cow::Owned(vec![super::classes::RequestClass {
            name: "default".into(),
            weight: 1.0,
            method: self.method.clone(),
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            idempotent: None,
            prompt_tokens: None,
            completion_tokens: None,
        }])
    }
}

fn is_one(n: &NonZeroU32) -> bool {
    n.get() == 1
}

/// What finally receives the traffic.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// A built-in service model: the name of a file `targets/<name>.toml`.
    #[serde(default)]
    pub builtin: Option<String>,
    /// Inline service model, overriding the named one field by field.
    #[serde(default)]
    pub service: Option<ServiceModelSpec>,
    /// A real HTTP/1.1 server; stormrig's counting fault proxy is put in front of it.
    #[serde(default)]
    pub url: Option<String>,
    /// Beside `url`: the service model (a file `targets/<name>.toml`) that stands in for the
    /// real server when the scenario is simulated.
    #[serde(default)]
    pub model: Option<String>,
    /// A non-loopback host the user explicitly allows as a target.
    #[serde(default)]
    pub allow_remote: Option<String>,
    /// Server-side `Idempotency-Key` deduplication on the target.
    #[serde(default)]
    pub dedup: Option<DedupSpec>,
    /// `http1` (default), `h2` (HTTP/2 over TLS) or `h2c` (HTTP/2 in clear).
    #[serde(default)]
    pub protocol: Option<String>,
    /// The built-in target serves TLS with a certificate generated at start (`url`
    /// targets say it with `https://`).
    #[serde(default)]
    pub tls: Option<bool>,
    /// PEM file of certificates trusted besides the system's roots (`https://` targets).
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Accept any certificate (`https://` targets); reported at every run.
    #[serde(default)]
    pub insecure_skip_verify: Option<bool>,
    /// `url` targets: how long the proxy waits for the service's complete answer before it
    /// answers 504 itself (default 30 s).
    #[serde(default, with = "duration::option")]
    pub upstream_timeout: Option<Duration>,
}

/// A target definition file in `targets/`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    #[serde(default)]
    pub description: String,
    pub service: ServiceModelSpec,
}

/// The built-in target's service model, as written (every field optional so a scenario can
/// override one field of a named target).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceModelSpec {
    pub concurrency: Option<u32>,
    pub queue: Option<u32>,
    #[serde(default, with = "duration::option")]
    pub queue_timeout: Option<Duration>,
    pub service_time: Option<Dist>,
    /// Queue discipline: `"fifo"` (default), `"lifo"` or CoDel ([`super::shedding`]).
    #[serde(default)]
    pub discipline: Option<super::shedding::DisciplineSpec>,
    /// Work in progress (queued or served) at most; arrivals past it get 503 at once.
    #[serde(default)]
    pub max_in_flight: Option<u32>,
    /// A token bucket in front of the work, answering 429 (with `Retry-After`) when empty.
    #[serde(default)]
    pub rate_limit: Option<super::shedding::RateLimitSpec>,
    /// Envoy's adaptive concurrency limit in front of the work, answering 503 past it.
    #[serde(default)]
    pub adaptive_concurrency: Option<super::shedding::AdaptiveConcurrencySpec>,
}

/// The resolved service model: concurrency slots, a bounded FIFO queue in front of them,
/// and a service-time distribution. Overload queues, then times out, then is refused,
/// which is how metastable failures start.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceModel {
    /// Requests served at once.
    pub concurrency: u32,
    /// Requests allowed to wait for a slot; arrivals beyond it get 503 at once.
    pub queue: u32,
    /// A request that waited this long for a slot is answered 503 without service.
    pub queue_timeout: Option<Duration>,
    pub service_time: Dist,
    /// How it sheds besides the queue's bound and timeout (none by default).
    #[serde(default, skip_serializing_if = "super::shedding::Shedding::is_default")]
    pub shedding: super::shedding::Shedding,
}

impl Default for ServiceModel {
    fn default() -> Self {
        ServiceModel {
            concurrency: 256,
            queue: 1024,
            queue_timeout: Some(Duration::from_secs(1)),
            service_time: Dist::Constant {
                value: Duration::from_millis(2),
            },
            shedding: Default::default(),
        }
    }
}

impl ServiceModel {
    /// Applies the fields a spec sets on top of `self`.
    pub fn overlay(&self, spec: &ServiceModelSpec) -> ServiceModel {
        ServiceModel {
            concurrency: spec.concurrency.unwrap_or(self.concurrency),
            queue: spec.queue.unwrap_or(self.queue),
            queue_timeout: spec.queue_timeout.or(self.queue_timeout),
            service_time: spec
                .service_time
                .clone()
                .unwrap_or_else(|| self.service_time.clone()),
            shedding: super::shedding::Shedding {
                // Checked before the overlay (`validate::check_service_spec`).
                discipline: match &spec.discipline {
                    Some(d) => d.resolve().unwrap_or_default(),
                    None => self.shedding.discipline,
                },
                max_in_flight: spec.max_in_flight.or(self.shedding.max_in_flight),
                rate_limit: match &spec.rate_limit {
                    Some(r) => r.resolve().ok(),
                    None => self.shedding.rate_limit,
                },
                adaptive_concurrency: match &spec.adaptive_concurrency {
                    Some(a) => a.resolve().ok(),
                    None => self.shedding.adaptive_concurrency,
                },
            },
        }
    }
}

/// A duration distribution (service times, added latency).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Dist {
    Constant {
        #[serde(with = "duration")]
        value: Duration,
    },
    Uniform {
        #[serde(with = "duration")]
        min: Duration,
        #[serde(with = "duration")]
        max: Duration,
    },
    Exponential {
        #[serde(with = "duration")]
        mean: Duration,
    },
    /// Log-normal given by its median and 99th percentile, the two figures people know.
    LogNormal {
        #[serde(with = "duration")]
        median: Duration,
        #[serde(with = "duration")]
        p99: Duration,
    },
}

impl Dist {
    /// The same distribution with every duration `factor` times as long: a service that
    /// much slower than its model (`stormrig capacity --model-tolerance` asks whether a
    /// limit survives it). Shape is kept: a log-normal's spread, a uniform's width ratio.
    pub fn stretched(&self, factor: f64) -> Dist {
        let s = |d: Duration| d.mul_f64(factor);
        match *self {
            Dist::Constant { value } => Dist::Constant { value: s(value) },
            Dist::Uniform { min, max } => Dist::Uniform {
                min: s(min),
                max: s(max),
            },
            Dist::Exponential { mean } => Dist::Exponential { mean: s(mean) },
            Dist::LogNormal { median, p99 } => Dist::LogNormal {
                median: s(median),
                p99: s(p99),
            },
        }
    }
}

/// Server-side deduplication by `Idempotency-Key`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DedupSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// How long a key is remembered.
    #[serde(default = "default_retention", with = "duration")]
    pub retention: Duration,
}

fn yes() -> bool {
    true
}
fn default_retention() -> Duration {
    Duration::from_secs(60)
}

/// One timed fault window as written: `kind` plus the fields that kind uses.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSection {
    /// `status`, `latency`, `reset`, `hang`, `capacity`, `lost-response`, `bandwidth`,
    /// `slow-close` or `slicer`.
    pub kind: String,
    /// Start of the window; of a `series` fault, where its first point lands (default 0s).
    #[serde(default, with = "duration")]
    pub at: Duration,
    /// Length of the window (required, except by a `series` fault, which lasts its series).
    #[serde(default, rename = "for", with = "duration")]
    pub length: Duration,
    /// A recorded series (CSV or Prometheus `query_range`, relative to the scenario) giving
    /// the fault per step: failure shares, added latency or slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// A `series` fault's reading of a time with no point: `refuse` (default) or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    pub probability: Option<f64>,
    pub status: Option<u16>,
    #[serde(default, with = "duration::option")]
    pub retry_after: Option<Duration>,
    /// `status`: a `retry-after-ms` header to send (whole milliseconds, rounded up).
    #[serde(default, with = "duration::option")]
    pub retry_after_ms: Option<Duration>,
    /// `status`: an `x-should-retry: true|false` header to send.
    pub should_retry: Option<bool>,
    pub error_code: Option<String>,
    pub add: Option<Dist>,
    pub concurrency: Option<u32>,
    /// `bandwidth`: the rate the response body is delivered at.
    pub bytes_per_s: Option<u64>,
    /// `slicer`: the size of each slice of the response body.
    pub slice_bytes: Option<u32>,
    /// `slow-close`: how long the connection stays open after the response; `slicer`: the
    /// pause between two slices.
    #[serde(default, with = "duration::option")]
    pub delay: Option<Duration>,
    /// `grpc-status`: the gRPC status to answer (`"UNAVAILABLE"`, `"resource-exhausted"`, 14).
    pub grpc_status: Option<crate::policy::GrpcStatus>,
    /// `grpc-status`: the `grpc-retry-pushback-ms` to send with it.
    #[serde(default, with = "duration::option")]
    pub pushback: Option<Duration>,
}

/// One validated fault window on the target.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fault {
    /// Start, from the beginning of the run.
    pub at: Duration,
    /// Length of the window.
    pub length: Duration,
    /// Only requests whose path starts with this are affected (all when absent).
    pub path: Option<String>,
    /// Chance that one arrival is affected, drawn per (request, attempt) from the seed.
    pub probability: f64,
    pub kind: FaultKind,
}

impl Fault {
    /// Whether the window covers run time `t`.
    pub fn active_at(&self, t: Duration) -> bool {
        t >= self.at && t < self.at + self.length
    }
}

/// What a fault does to an affected arrival.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultKind {
    /// Answer with `status` at once, without service. `retry_after` adds a `Retry-After`
    /// header (whole seconds, as RFC 9110 delay-seconds); `error_code` adds
    /// `x-amzn-errortype` so AWS-style classifiers see a throttling code. `retry_after_ms`
    /// adds `retry-after-ms` (whole milliseconds, rounded up) and `should_retry` adds
    /// `x-should-retry: true|false`, the two hints LLM APIs send and their SDKs obey.
    Status {
        status: u16,
        retry_after: Option<Duration>,
        #[serde(
            default,
            with = "duration::option",
            skip_serializing_if = "Option::is_none"
        )]
        retry_after_ms: Option<Duration>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        should_retry: Option<bool>,
        error_code: Option<String>,
    },
    /// Answer a gRPC call at once with `status` (trailers-only, HTTP 200, as gRPC servers
    /// do), with `grpc-retry-pushback-ms` when `pushback` is set.
    GrpcStatus {
        status: crate::policy::GrpcStatus,
        pushback: Option<Duration>,
    },
    /// Add latency before service.
    Latency { add: Dist },
    /// Close the connection without answering (TCP reset).
    Reset,
    /// Accept and never answer, until the client gives up.
    Hang,
    /// Change the number of concurrency slots (e.g. capacity halves).
    Capacity { concurrency: u32 },
    /// Serve the request (side effects happen), then lose the response: the client sees a
    /// read timeout or, with `status`, a gateway error such as 504.
    LostResponse { status: Option<u16> },
    /// Serve, then deliver the response body at `bytes_per_s`.
    Bandwidth { bytes_per_s: u64 },
    /// Serve, then hold the connection open for `delay` after the response before closing
    /// it (HTTP/1.1 answers `Connection: close`).
    SlowClose { delay: Duration },
    /// Serve, then write the response body in slices of `slice_bytes` with `delay` between
    /// two slices.
    Slicer { slice_bytes: u32, delay: Duration },
}

/// How a served response travels back when a connection-level fault decided the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Bandwidth { bytes_per_s: u64 },
    SlowClose { delay: Duration },
    Slicer { slice_bytes: u32, delay: Duration },
}

impl FaultKind {
    /// Short label for reports and the fault bands of the charts.
    pub fn label(&self) -> String {
        match self {
            FaultKind::Status {
                status,
                retry_after: Some(ra),
                ..
            } => format!("{status} (Retry-After {}s)", ra.as_secs()),
            FaultKind::Status { status, .. } => format!("{status}"),
            FaultKind::GrpcStatus {
                status,
                pushback: Some(p),
            } => format!("{status} (pushback {} ms)", p.as_millis()),
            FaultKind::GrpcStatus { status, .. } => format!("{status}"),
            FaultKind::Latency { .. } => "latency".into(),
            FaultKind::Reset => "reset".into(),
            FaultKind::Hang => "hang".into(),
            FaultKind::Capacity { concurrency } => format!("capacity {concurrency}"),
            FaultKind::LostResponse { status: Some(s) } => format!("lost response ({s})"),
            FaultKind::LostResponse { status: None } => "lost response".into(),
            FaultKind::Bandwidth { bytes_per_s } => format!("bandwidth {bytes_per_s} B/s"),
            FaultKind::SlowClose { .. } => "slow close".into(),
            FaultKind::Slicer { slice_bytes, .. } => format!("slicer {slice_bytes} B"),
        }
    }

    /// The connection-level delivery of this kind, if it is one (the simulator refuses
    /// them; the built-in target and the proxy shape the response with them).
    pub fn delivery(&self) -> Option<Delivery> {
        match *self {
            FaultKind::Bandwidth { bytes_per_s } => Some(Delivery::Bandwidth { bytes_per_s }),
            FaultKind::SlowClose { delay } => Some(Delivery::SlowClose { delay }),
            FaultKind::Slicer { slice_bytes, delay } => {
                Some(Delivery::Slicer { slice_bytes, delay })
            }
            _ => None,
        }
    }
}

/// One hop between the load generator and the target that may retry on its own.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSpec {
    pub name: String,
    /// Retry config table for this layer (`name`/`preset`/overrides); absent = pass-through.
    #[serde(default)]
    pub config: Option<toml::Table>,
    /// Pass the remaining deadline downstream in `x-stormrig-deadline-ms`.
    #[serde(default)]
    pub propagate_deadline: bool,
    /// Work the layer itself does per request.
    #[serde(default)]
    pub service_time: Option<Dist>,
    /// Requests the layer handles at once; beyond it, 503.
    #[serde(default)]
    pub concurrency: Option<u32>,
}
