//! The result of a run, as every report reads it: `summary.json` is this type serialized,
//! `timeseries.csv` its per-second rows. Reports never learn which engine produced it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::drain::{budget_drain, window_rates, BudgetDrain, WindowRates};
use super::latency::Percentiles;
use super::pre_fault::pre_fault;
pub use super::pre_fault::OVERLOAD_TOLERANCE;
use super::recorder::Recorder;
use super::series::{FaultBand, SecondRow};
use super::target::TargetStats;
use super::verdict::Verdict;
use crate::policy::outcome::is_idempotent_method;
use crate::policy::RetryConfig;

/// Which engine measured a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Live,
    Sim,
}

impl Engine {
    /// The name `summary.json` gives it (`live`, `sim`).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Live => "live",
            Engine::Sim => "sim",
        }
    }
}

/// One gate's verdict for one config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    pub gate: String,
    pub config: String,
    pub figure: String,
    pub op: String,
    pub limit: f64,
    pub measured: Option<f64>,
    pub passed: bool,
    /// The run was cut short and the verdict could still have changed: neither a pass nor a
    /// settled failure (`passed` is false, so nothing reads it as a pass).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl GateVerdict {
    /// `PASS`, `FAIL` or `INCOMPLETE`, as tables print it.
    pub fn label(&self) -> &'static str {
        match (self.passed, self.incomplete) {
            (_, true) => "INCOMPLETE",
            (true, false) => "PASS",
            (false, false) => "FAIL",
        }
    }
}

/// Everything a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub engine: Engine,
    /// True when the run was interrupted or could not finish: figures cover only what ran.
    pub partial: bool,
    /// Seconds of offered load: the scenario's duration, or less when the run was cut short.
    pub duration_s: f64,
    /// Live runs: seconds after the load ended until the last request finished or the
    /// scenario's drain ran out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_s: Option<f64>,
    pub stormrig_version: String,
    /// Live runs: when and where the run ran (absent from simulator output, which depends
    /// on nothing but the scenario and seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunMeta>,
    pub faults: Vec<FaultBand>,
    pub configs: Vec<ConfigSummary>,
    #[serde(default)]
    pub gates: Vec<GateVerdict>,
    /// A result merged from shards (`stormrig merge`): how many processes ran the fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// Figures of a merged result that are not exact but an upper bound, each with why
    /// (peaks of several processes summed: they need not have coincided).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub upper_bounds: BTreeMap<String, String>,
    /// Per-second rows, written to `timeseries.csv` rather than into `summary.json`.
    #[serde(skip)]
    pub timeseries: Vec<SecondRow>,
}

/// Where and when a live run ran, so that its figures line up with dashboards and server
/// logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Unique per run; every attempt carries it in `x-stormrig-run`.
    pub id: String,
    /// The run's t = 0 (second 0 of `timeseries.csv`), RFC 3339 in UTC.
    pub started_at: String,
    pub host: String,
    /// SHA-256 of the scenario file as read, in hex (`sha256sum` prints the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_sha256: Option<String>,
}

/// The headline figures of one retry config (a row of `summary.csv`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    pub name: String,
    /// The resolved retry config, as the policy core serializes it.
    #[serde(default)]
    pub policy: serde_json::Value,
    pub upstream_requests: u64,
    pub attempts: u64,
    pub retries: u64,
    /// Requests the target itself counted.
    pub downstream_arrivals: u64,
    /// downstream_arrivals / upstream_requests.
    pub amplification: f64,
    /// The worst single second of downstream arrivals, in multiples of the mean upstream
    /// rate (upstream requests per second of load); never below `amplification`, which
    /// also counts arrivals after the load ended.
    pub peak_amplification_1s: f64,
    /// The most requests in flight at once at the target, counted by the target.
    pub peak_concurrency: u64,
    /// The most logical requests in flight at once at the client.
    pub client_peak_in_flight: u64,
    pub budget_refusals: u64,
    pub first_budget_refusal_s: Option<f64>,
    pub breaker_refusals: u64,
    /// Retries of requests that then succeeded, and of requests that still failed; they add
    /// up to `retries` (retries of requests unfinished at the end count in neither).
    #[serde(default)]
    pub useful_retries: u64,
    #[serde(default)]
    pub wasted_retries: u64,
    /// A hedging config's copies after a call's first (they are among `attempts` and
    /// `retries`, which count every attempt after a call's first as gRFC A6 line 343 does),
    /// the copies still in flight when their call ended and were closed, and the hedges
    /// whose answer their call did not use. All zero without hedging.
    #[serde(default)]
    pub hedges_sent: u64,
    #[serde(default)]
    pub hedges_cancelled: u64,
    #[serde(default)]
    pub hedges_wasted: u64,
    /// Attempts a send-rate limiter (`aws-adaptive`'s) held back before they went, their
    /// waits added up, and the waits' percentiles. All zero without a limiter, or while it
    /// never engaged (it does at the first throttling answer).
    #[serde(default)]
    pub rate_limited_sends: u64,
    #[serde(default)]
    pub rate_limit_wait_s: f64,
    #[serde(default)]
    pub rate_limit_wait_ms: Percentiles,
    /// Attempts the bulkhead rejected (no place, no room or time left in its queue), and
    /// attempts the adaptive concurrency limiter rejected (its limit in flight): each ended
    /// its call unsent, `bulkhead-full` / `limit-exceeded` among the failure reasons.
    #[serde(default)]
    pub bulkhead_rejections: u64,
    #[serde(default)]
    pub limiter_rejections: u64,
    pub successes: u64,
    pub failures: u64,
    pub failures_by_reason: BTreeMap<String, u64>,
    pub attempts_by_outcome: BTreeMap<String, u64>,
    /// Arrivals refused by the in-flight cap.
    pub dropped: u64,
    /// Started but not finished when the run ended.
    pub unfinished: u64,
    pub latency_ms: Percentiles,
    pub attempt_latency_ms: Percentiles,
    /// `latency_ms` of the requests that succeeded and of those that failed (zeros when
    /// none did).
    #[serde(default)]
    pub success_latency_ms: Percentiles,
    #[serde(default)]
    pub failure_latency_ms: Percentiles,
    /// Seconds from the end of the last fault window until goodput was back near its
    /// pre-fault level; null when it never came back, when there was no fault, or when the
    /// run was `overloaded` before the fault (its pre-fault level was no normal to return to).
    pub recovery_time_s: Option<f64>,
    /// Whether goodput recovered after the faults; null when the scenario has no fault or
    /// the run was `overloaded` before it (neither recovered nor metastable).
    pub recovered: Option<bool>,
    /// Goodput was already below the offered load before the first fault, by more than
    /// [`OVERLOAD_TOLERANCE`]: recovery is not measured (see `recovered`). Null when no whole
    /// second of load came before the first fault (or there is no fault).
    #[serde(default)]
    pub overloaded: Option<bool>,
    /// Offered load (requests started plus those the in-flight cap dropped) and goodput
    /// (successes), per second, over the second half of the whole seconds before the first
    /// fault: what `overloaded` compares. Null as `overloaded` is.
    #[serde(default)]
    pub pre_fault_offered_rps: Option<f64>,
    #[serde(default)]
    pub pre_fault_goodput_rps: Option<f64>,
    /// Upper bound on amplification the config allows (its attempt cap, or its budget's bound).
    pub amplification_bound: Option<f64>,
    /// Target-side goodput and damage figures.
    pub target_served_ok: u64,
    pub target_shed: u64,
    /// `target_shed` by reason (queue full, queue timeout, CoDel, the cap on work in
    /// progress, the rate limit); the reasons add up to it.
    #[serde(default)]
    pub target_shed_by_reason: super::ShedCounts,
    /// Requests the fault proxy handed to the real server (0 for the built-in target).
    #[serde(default)]
    pub target_forwarded: u64,
    /// Attempts the fault proxy answered itself because the real server could not be
    /// reached (connect or TLS handshake failed); not in `downstream_arrivals` (0 for the
    /// built-in target and the simulator).
    #[serde(default)]
    pub target_unreached: u64,
    /// Attempts the fault proxy answered itself instead of the service, by reason (connect
    /// or TLS failed, upstream timeout, body too large, too many interim answers, another
    /// protocol error); all 0 for the built-in target and the simulator.
    #[serde(default)]
    pub proxy_answered: super::ProxyAnswered,
    /// Forwarded attempts the service reset (its connection, or an HTTP/2 stream), which the
    /// proxy relayed to the client as resets: apart from the scenario's own reset faults (0
    /// for the built-in target and the simulator).
    #[serde(default)]
    pub relayed_resets: super::RelayedResets,
    /// Logical requests the target executed more than once.
    pub duplicate_executions: u64,
    /// The rest of the idempotency damage and dedup figures, flat in `summary.json`.
    #[serde(flatten)]
    pub idempotency: IdempotencyFigures,
    /// The end-to-end latency distribution as (percentile, ms) points for the HDR curve.
    pub latency_curve: Vec<[f64; 2]>,
    /// Per-layer counts for multi-hop topologies (empty for a direct run).
    #[serde(default)]
    pub layers: Vec<LayerSummary>,
    /// Worst case (K+1)^L over the topology's retrying layers, when there are layers.
    #[serde(default)]
    pub topology_bound: Option<f64>,
    /// The most retries the client sent in any one second (the thundering-herd peak).
    #[serde(default)]
    pub peak_retries_per_s: u64,
    /// The config's rules for non-idempotent requests, in words ("no POSTs" when the
    /// scenario sends none).
    #[serde(default)]
    pub idempotency_rules: String,
    /// Observed failure rates of first attempts in each fault window.
    #[serde(default)]
    pub fault_windows: Vec<WindowRates>,
    /// The retry budget's thresholds and drain, for a config with a budget.
    #[serde(default)]
    pub budget: Option<BudgetDrain>,
    /// What the config's retries bought against the baseline config.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Each provider's own counts (scenarios with `[[provider]]` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<super::provider::ProviderStats>,
    /// Tokens spent, served and wasted over every provider, and the cost amplification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<super::provider::TokenFigures>,
    /// Money spent, served and wasted, and its amplification, over the priced providers and
    /// per priced provider (scenarios where some `[[provider]]` has a `price` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<super::provider::MoneyFigures>,
    /// Live runs: the connections the generator opened to the next hop and what HTTP/2
    /// did to its streams (absent from simulations, which model no connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionFigures>,
    /// With failover: what the client sent each provider, and each provider's breaker
    /// transitions (the client's side of `providers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<super::provider::ProviderRoute>,
    /// Requests the config's ladder answered (configs with a `ladder` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<super::degraded::DegradedFigures>,
    /// Per request class of a mixed load, in the load's order (empty without classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<super::classes::ClassSummary>,
    /// The resolved policy of each request class that has one of its own, by class name
    /// (the other classes run under `policy`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub class_policies: BTreeMap<String, serde_json::Value>,
}

/// How a config's attempts used connections: over HTTP/1.1 one attempt at a time per
/// connection; over HTTP/2 many streams on one, which the server may reset one by one
/// (RST_STREAM) or all at once (GOAWAY).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionFigures {
    /// `http1`, `h2` or `h2c`.
    pub protocol: String,
    /// Connections opened (TCP and, where spoken, TLS up).
    pub opened: u64,
    /// Attempts sent per connection opened (streams per connection over HTTP/2).
    pub attempts_per_connection: f64,
    /// Attempts whose stream the server reset (RST_STREAM).
    pub stream_resets: u64,
    /// Attempts a GOAWAY took with it.
    pub goaways: u64,
}

impl ConnectionFigures {
    /// The figures of `summary`'s attempts over `opened` connections speaking `protocol`.
    pub fn of(protocol: &str, opened: u64, summary: &ConfigSummary) -> Self {
        let label = |l: &str| summary.attempts_by_outcome.get(l).copied().unwrap_or(0);
        ConnectionFigures {
            protocol: protocol.to_string(),
            opened,
            attempts_per_connection: if opened == 0 {
                0.0
            } else {
                summary.attempts as f64 / opened as f64
            },
            stream_resets: label("stream-reset"),
            goaways: label("goaway"),
        }
    }
}

/// What non-idempotent retries cost, as the target counted it, and what its
/// `Idempotency-Key` dedup did. Absent from older `summary.json` files: zeros.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdempotencyFigures {
    /// Side-effecting executions of write requests (each debits the request's amount).
    pub executions: u64,
    /// Executions beyond the first per logical request: the extra side effects.
    pub extra_executions: u64,
    /// Amount debited by all executions, and by the extra ones (money taken twice).
    pub debited: u64,
    pub extra_debited: u64,
    /// Keyed retries answered from the dedup store without executing.
    pub dedup_replays: u64,
    /// Keyed duplicates that arrived while the first was executing (409).
    pub dedup_conflicts: u64,
    /// Keys reused with another body (422).
    pub dedup_mismatches: u64,
}

impl IdempotencyFigures {
    pub fn of(target: &TargetStats) -> Self {
        IdempotencyFigures {
            executions: target.executions,
            extra_executions: target.extra_executions,
            debited: target.debited,
            extra_debited: target.extra_debited,
            dedup_replays: target.dedup_replays,
            dedup_conflicts: target.dedup_conflicts,
            dedup_mismatches: target.dedup_mismatches,
        }
    }
}

/// One row of `attempts.csv` (with `--attempt-log`): users debug budgets with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRow {
    pub config: String,
    pub request: u64,
    pub attempt: u32,
    /// When the attempt was sent, in seconds from the run's start (`run.started_at` in
    /// `summary.json`); empty for an attempt the policy refused (never sent).
    pub sent_s: Option<f64>,
    /// ok, transient, throttle, timeout, client-error or refused.
    pub outcome: &'static str,
    /// The budget's level after this attempt was accounted (empty without a budget).
    pub budget_after: Option<f64>,
}

/// One layer of a multi-hop topology, as counted for one config. Layer 0 is the load
/// generator's own client; then each proxy layer in order, nearest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerSummary {
    pub name: String,
    /// Requests that arrived at this layer (counted by the layer's server; for the load
    /// generator, the upstream requests).
    pub arrivals: u64,
    /// Attempts this layer's client sent downstream.
    pub attempts: u64,
    pub retries: u64,
    pub budget_refusals: u64,
    /// Most requests in flight at once inside this layer.
    pub peak_in_flight: u64,
    /// attempts / arrivals at this layer.
    pub amplification: f64,
    /// attempts of this layer / upstream requests.
    pub cumulative_amplification: f64,
    /// The most attempts per arrival this layer's config allows (its max attempts).
    pub max_attempts: u32,
}

/// What `summarize` needs to know about the run beyond the counts.
pub struct RunShape<'a> {
    /// Length of the offered load.
    pub load_duration: Duration,
    /// Fault windows.
    pub faults: &'a [FaultBand],
    /// The HTTP method of the load.
    pub method: &'a str,
}

/// A config's rules for non-idempotent methods (POST, PATCH), in words. Idempotent methods
/// (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) are retried under every rule, so a scenario
/// that sends only those gets "no POSTs".
pub fn idempotency_rules(config: &RetryConfig, method: &str) -> String {
    if is_idempotent_method(method) {
        return format!("no POSTs ({method} is idempotent)");
    }
    match (config.retry_non_idempotent, config.idempotency_key) {
        (_, true) => "POST retried with Idempotency-Key".into(),
        (true, false) => "POST retried without key".into(),
        (false, false) => "POST retried only if never sent".into(),
    }
}

/// Fraction of the pre-fault goodput ratio that counts as "recovered".
pub const RECOVERY_FRACTION: f64 = 0.9;
/// Consecutive seconds goodput must hold for recovery to count.
pub const RECOVERY_HOLD_S: usize = 3;

/// Amplification over the run (arrivals / upstream) and its peak second (the busiest
/// second's arrivals over the mean upstream rate, never below the run's).
fn amplifications(
    upstream: u64,
    arrivals: u64,
    peak_arrivals: u64,
    load_duration: std::time::Duration,
) -> (f64, f64) {
    let amplification = if upstream > 0 {
        arrivals as f64 / upstream as f64
    } else {
        0.0
    };
    let load_s = load_duration.as_secs_f64();
    let mean_upstream_per_s = if load_s > 0.0 {
        upstream as f64 / load_s
    } else {
        upstream as f64
    };
    let peak = if mean_upstream_per_s > 0.0 {
        (peak_arrivals as f64 / mean_upstream_per_s).max(amplification)
    } else {
        0.0
    };
    (amplification, peak)
}

/// Builds one config's summary and per-second rows from its recorder and its target's counts.
pub fn summarize(
    name: &str,
    config: &RetryConfig,
    amplification_bound: Option<f64>,
    rec: &Recorder,
    target: &TargetStats,
    shape: &RunShape<'_>,
) -> (ConfigSummary, Vec<SecondRow>) {
    let secs = rec.seconds();
    let n = secs
        .len()
        .max(target.arrivals_per_s.len())
        .max(shape.load_duration.as_secs_f64().ceil() as usize);
    let mut rows: Vec<SecondRow> = (0..n)
        .map(|i| second_row(name, i, secs.get(i), target))
        .collect();
    let peak_arrivals = rows.iter().map(|r| r.downstream_arrivals).max();
    let total = |f: fn(&SecondRow) -> u64| rows.iter().map(f).sum::<u64>();
    let upstream = total(|r| r.upstream_started);
    let attempts = total(|r| r.attempts);
    let retries = total(|r| r.retries);
    let budget_refusals = total(|r| r.budget_refusals);
    let breaker_refusals = total(|r| r.breaker_refusals);
    let successes = total(|r| r.successes);
    let failures = total(|r| r.failures);
    let dropped = total(|r| r.dropped);
    let useful_retries = total(|r| r.useful_retries);
    let wasted_retries = total(|r| r.wasted_retries);
    let pre_fault = pre_fault(&rows, shape.faults, shape.load_duration.as_secs_f64());
    let overloaded = pre_fault.map(|p| p.overloaded());
    let (recovered, recovery_time_s) = if overloaded == Some(true) {
        (None, None)
    } else {
        recovery(&rows, shape)
    };
    let (amplification, peak_amplification_1s) = amplifications(
        upstream,
        target.arrivals,
        peak_arrivals.unwrap_or(0),
        shape.load_duration,
    );
    let first_budget_refusal_s = rec.first_budget_refusal.map(|d| d.as_secs_f64());
    let fault_windows = window_rates(&rows, shape.faults);
    let budget = budget_drain(config, &mut rows, &fault_windows, first_budget_refusal_s);
    let summary = ConfigSummary {
        connections: None,
        name: name.to_string(),
        policy: serde_json::to_value(config).unwrap_or_default(),
        upstream_requests: upstream,
        attempts,
        retries,
        downstream_arrivals: target.arrivals,
        amplification,
        peak_amplification_1s,
        peak_concurrency: target.peak_in_flight,
        client_peak_in_flight: rec.client_in_flight_peak,
        budget_refusals,
        first_budget_refusal_s,
        breaker_refusals,
        useful_retries,
        wasted_retries,
        hedges_sent: rec.hedges.sent,
        hedges_cancelled: rec.hedges.cancelled,
        hedges_wasted: rec.hedges.wasted,
        rate_limited_sends: rec.rate_limited.sends,
        rate_limit_wait_s: rec.rate_limited.total_s(),
        rate_limit_wait_ms: Percentiles::of(&rec.rate_limited.wait_us.view()),
        bulkhead_rejections: rec.bulkhead_rejections,
        limiter_rejections: rec.limiter_rejections,
        successes,
        failures,
        failures_by_reason: rec.failures_by_reason(),
        attempts_by_outcome: rec.attempts_by_outcome(),
        dropped,
        unfinished: rec.in_flight(),
        latency_ms: Percentiles::of(&rec.latency_us()),
        attempt_latency_ms: Percentiles::of(&rec.attempt_latency_us()),
        success_latency_ms: Percentiles::of(&rec.success_latency_us()),
        failure_latency_ms: Percentiles::of(&rec.failure_latency_us()),
        recovery_time_s,
        recovered,
        overloaded,
        pre_fault_offered_rps: pre_fault.map(|p| p.offered_rps),
        pre_fault_goodput_rps: pre_fault.map(|p| p.goodput_rps),
        amplification_bound,
        target_served_ok: target.served_ok,
        target_shed: target.shed,
        target_shed_by_reason: target.shed_by_reason,
        target_forwarded: target.forwarded,
        target_unreached: target.unreached,
        proxy_answered: target.proxy_answered,
        relayed_resets: target.relayed_resets,
        duplicate_executions: target.duplicate_executions,
        idempotency: IdempotencyFigures::of(target),
        latency_curve: latency_curve(&rec.latency_us()),
        layers: Vec::new(),
        topology_bound: None,
        peak_retries_per_s: rows.iter().map(|r| r.retries).max().unwrap_or(0),
        idempotency_rules: idempotency_rules(config, shape.method),
        fault_windows,
        budget,
        verdict: None,
        providers: target.providers.clone(),
        tokens: (!target.providers.is_empty())
            .then(|| super::provider::TokenFigures::of(&target.providers)),
        money: super::provider::MoneyFigures::of(&target.providers),
        routes: config
            .failover
            .as_ref()
            .map(|f| rec.routes.named(&f.providers))
            .unwrap_or_default(),
        degraded: super::degraded::DegradedFigures::of(&config.ladder, rec),
        classes: Vec::new(),
        class_policies: BTreeMap::new(),
    };
    (summary, rows)
}

/// Second `i` of one config: what its client recorded then (`s`, absent when nothing
/// happened) beside what its target counted.
fn second_row(
    name: &str,
    i: usize,
    s: Option<&super::recorder::Second>,
    target: &TargetStats,
) -> SecondRow {
    let get = |v: &[u64]| v.get(i).copied().unwrap_or(0);
    let c = |f: fn(&super::recorder::Second) -> u64| s.map(f).unwrap_or(0);
    let started = c(|s| s.started);
    let arrivals = get(&target.arrivals_per_s);
    let amp = if started > 0 {
        arrivals as f64 / started as f64
    } else {
        0.0
    };
    let finished = c(|s| s.finished);
    let successes = c(|s| s.successes);
    SecondRow {
        time: None,
        config: name.to_string(),
        second: i as u64,
        upstream_started: started,
        upstream_finished: finished,
        successes,
        failures: c(|s| s.failures),
        attempts: c(|s| s.attempts),
        retries: c(|s| s.retries),
        retries_transient: c(|s| s.retries_transient),
        retries_throttling: c(|s| s.retries_throttling),
        budget_refusals: c(|s| s.budget_refusals),
        breaker_refusals: c(|s| s.breaker_refusals),
        dropped: c(|s| s.dropped),
        downstream_arrivals: arrivals,
        target_in_flight_peak: get(&target.peak_in_flight_per_s),
        target_served_ok: get(&target.served_ok_per_s),
        client_in_flight_peak: c(|s| s.client_in_flight_peak),
        amplification: amp,
        first_attempts: c(|s| s.first_attempts),
        first_failed_transient: c(|s| s.first_failed.transient),
        first_failed_throttling: c(|s| s.first_failed.throttling),
        first_failed_timeout: c(|s| s.first_failed.timeout),
        first_failed_other: c(|s| s.first_failed.other),
        useful_retries: c(|s| s.useful_retries),
        wasted_retries: c(|s| s.wasted_retries),
        budget_level: s.and_then(|s| s.budget_level),
        budget_low: s.and_then(|s| s.budget_low),
        budget_level_pct: None,
        breaker_state: s.and_then(|s| s.breaker),
        latency_p50_ms: s
            .filter(|s| !s.latency_us().is_empty())
            .map(|s| s.latency_us().value_at_quantile(0.5) as f64 / 1000.0)
            .unwrap_or(0.0),
        latency_p99_ms: s
            .filter(|s| !s.latency_us().is_empty())
            .map(|s| s.latency_us().value_at_quantile(0.99) as f64 / 1000.0)
            .unwrap_or(0.0),
        success_rate: if finished > 0 {
            successes as f64 / finished as f64
        } else {
            1.0
        },
    }
}

/// Goodput here is the share of requests started in a second that succeeded
/// (successes / started, by intended start second would need per-request bookkeeping;
/// finishing successes per started request is what the recorder has, and over whole
/// seconds of steady offered load they agree). Recovery is the first second after the last
/// fault window from which this ratio holds at ≥ 90 % of its pre-fault mean for
/// `RECOVERY_HOLD_S` seconds in a row (or until the load ends).
fn recovery(rows: &[SecondRow], shape: &RunShape<'_>) -> (Option<bool>, Option<f64>) {
    let Some(first_start) = shape.faults.iter().map(|f| f.start_s).reduce(f64::min) else {
        return (None, None);
    };
    let fault_end = shape.faults.iter().map(|f| f.end_s).fold(0.0, f64::max);
    let load_end = shape.load_duration.as_secs() as usize;
    let ratio = |r: &SecondRow| {
        if r.upstream_started == 0 {
            None
        } else {
            Some(r.successes as f64 / r.upstream_started as f64)
        }
    };
    let pre: Vec<f64> = rows
        .iter()
        .take(first_start.floor() as usize)
        .filter_map(ratio)
        .collect();
    let baseline = if pre.is_empty() {
        1.0
    } else {
        pre.iter().sum::<f64>() / pre.len() as f64
    };
    let threshold = RECOVERY_FRACTION * baseline;
    let from = fault_end.ceil() as usize;
    let end = load_end.min(rows.len());
    if from >= end {
        return (Some(false), None);
    }
    for s in from..end {
        let hold_end = (s + RECOVERY_HOLD_S).min(end);
        let ok = rows[s..hold_end]
            .iter()
            .all(|r| ratio(r).is_none_or(|g| g >= threshold));
        if ok && ratio(&rows[s]).is_some() {
            return (Some(true), Some((s as f64 - fault_end).max(0.0)));
        }
    }
    (Some(false), None)
}

/// (percentile, ms) points of the HDR percentile curve, at the classic 1 − 1/2^k steps.
fn latency_curve(h: &hdrhistogram::Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in 0..=20 {
        let q = 1.0 - 0.5f64.powi(k);
        out.push([q * 100.0, h.value_at_quantile(q) as f64 / 1000.0]);
    }
    out.push([100.0, h.max() as f64 / 1000.0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(second: u64, started: u64, successes: u64) -> SecondRow {
        SecondRow {
            time: None,
            config: "c".into(),
            second,
            upstream_started: started,
            upstream_finished: started,
            successes,
            failures: started - successes,
            success_rate: 1.0,
            ..SecondRow::default()
        }
    }

    fn band(start_s: f64, end_s: f64) -> FaultBand {
        FaultBand {
            start_s,
            end_s,
            label: "503".into(),
            probability: 1.0,
        }
    }

    /// The load's length in [`shape`], in seconds.
    const LOAD_S: f64 = 10.0;

    fn shape(faults: &[FaultBand]) -> RunShape<'_> {
        RunShape {
            load_duration: Duration::from_secs_f64(LOAD_S),
            faults,
            method: "GET",
        }
    }

    #[test]
    fn recovery_counts_from_fault_end() {
        let goodput = [100, 100, 0, 0, 0, 50, 95, 100, 100, 100];
        let rows: Vec<_> = goodput
            .iter()
            .enumerate()
            .map(|(i, g)| row(i as u64, 100, *g))
            .collect();
        let f = [band(2.0, 5.0)];
        assert_eq!(recovery(&rows, &shape(&f)), (Some(true), Some(1.0)));
    }

    #[test]
    fn no_recovery_is_none_and_no_fault_is_not_applicable() {
        let rows: Vec<_> = (0..10)
            .map(|i| row(i, 100, if i < 2 { 100 } else { 10 }))
            .collect();
        let f = [band(2.0, 5.0)];
        assert_eq!(recovery(&rows, &shape(&f)), (Some(false), None));
        assert_eq!(recovery(&rows, &shape(&[])), (None, None));
    }

    #[test]
    fn a_run_saturated_before_the_fault_is_overloaded_not_recovered() {
        // 1200 offered per second, 800 served before the fault as after it: goodput is back
        // at its pre-fault level right after the fault, which was saturation all along.
        let rows: Vec<_> = (0..10)
            .map(|i| row(i, 1200, if (4..6).contains(&i) { 300 } else { 800 }))
            .collect();
        let f = [band(4.0, 6.0)];
        assert_eq!(recovery(&rows, &shape(&f)), (Some(true), Some(0.0)));
        let p = pre_fault(&rows, &f, LOAD_S).unwrap();
        assert_eq!((p.offered_rps, p.goodput_rps), (1200.0, 800.0));
        assert!(p.overloaded());
        // Dropped arrivals are offered load too.
        let mut capped = rows.clone();
        for r in &mut capped {
            r.upstream_started = 800;
            r.dropped = 400;
        }
        assert!(pre_fault(&capped, &f, LOAD_S).unwrap().overloaded());
    }

    #[test]
    fn a_slow_start_is_not_overload_and_no_pre_fault_second_is_no_verdict() {
        // Second 0 answers half its arrivals (responses still in flight); the second half of
        // the pre-fault seconds is whole.
        let rows: Vec<_> = (0..10)
            .map(|i| row(i, 100, if i == 0 { 50 } else { 100 }))
            .collect();
        let f = [band(4.0, 6.0)];
        let p = pre_fault(&rows, &f, LOAD_S).unwrap();
        assert_eq!((p.offered_rps, p.goodput_rps), (100.0, 100.0));
        assert!(!p.overloaded());
        // 94 of 100 is beyond the tolerance, 96 within it.
        let at = |g: u64| {
            let rows: Vec<_> = (0..10).map(|i| row(i, 100, g)).collect();
            pre_fault(&rows, &f, LOAD_S).unwrap().overloaded()
        };
        assert!(at(94) && !at(96));
        assert_eq!(pre_fault(&rows, &[band(0.5, 6.0)], LOAD_S), None);
        assert_eq!(pre_fault(&rows, &[], LOAD_S), None);
    }

    #[test]
    fn summary_takes_downstream_from_target_counts() {
        let mut rec = Recorder::new();
        for i in 0..10 {
            let t = Duration::from_millis(i * 100);
            rec.upstream_started(t);
            rec.attempt_sent(t, 1);
            rec.attempt_sent(t, 2);
            rec.upstream_finished(t, Duration::from_millis(5), None, 2);
        }
        let target = TargetStats {
            arrivals: 20,
            arrivals_per_s: vec![20],
            peak_in_flight: 3,
            ..Default::default()
        };
        let (s, rows) = summarize(
            "x",
            &RetryConfig::default(),
            Some(2.0),
            &rec,
            &target,
            &RunShape {
                load_duration: Duration::from_secs(1),
                faults: &[],
                method: "GET",
            },
        );
        assert_eq!(s.upstream_requests, 10);
        assert_eq!(s.attempts, 20);
        assert_eq!(s.retries, 10);
        assert_eq!(s.downstream_arrivals, 20);
        assert_eq!(s.amplification, 2.0);
        assert_eq!(s.peak_amplification_1s, 2.0);
        assert_eq!(rows.len(), 1);
        assert_eq!(s.recovered, None);
        assert_eq!((s.useful_retries, s.wasted_retries), (10, 0));
        assert!(s.idempotency_rules.starts_with("no POSTs"));
    }

    /// Retries that all land in a second with no new requests (a herd after the load
    /// stopped) still show in the peak, and it is never below the overall amplification.
    #[test]
    fn peak_amplification_is_never_below_amplification() {
        let mut rec = Recorder::new();
        for i in 0..10 {
            rec.upstream_started(Duration::from_millis(i * 100));
        }
        let target = TargetStats {
            arrivals: 30,
            arrivals_per_s: vec![10, 0, 20],
            ..Default::default()
        };
        let shape = RunShape {
            load_duration: Duration::from_secs(2),
            faults: &[],
            method: "GET",
        };
        let (s, rows) = summarize("x", &RetryConfig::default(), None, &rec, &target, &shape);
        assert_eq!(s.amplification, 3.0);
        // 20 arrivals in second 2 against a mean of 5 upstream requests per second.
        assert_eq!(s.peak_amplification_1s, 4.0);
        assert!(rows.iter().all(|r| r.amplification <= 1.0));
    }
}
