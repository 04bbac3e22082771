//! The result of a run, as every report reads it: `summary.json` is this type serialized,
//! `timeseries.csv` its per-second rows. Reports never learn which engine produced it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::recorder::{Percentiles, Recorder};
use super::target::TargetStats;

/// Which engine measured a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Live,
    Sim,
}

/// A fault window drawn as a band on time charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultBand {
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
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
    /// Seconds of offered load actually run.
    pub duration_s: f64,
    pub stormrig_version: String,
    pub faults: Vec<FaultBand>,
    pub configs: Vec<ConfigSummary>,
    #[serde(default)]
    pub gates: Vec<GateVerdict>,
    /// Per-second rows, written to `timeseries.csv` rather than into `summary.json`.
    #[serde(skip)]
    pub timeseries: Vec<SecondRow>,
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
    /// The worst single second of downstream arrivals / upstream starts.
    pub peak_amplification_1s: f64,
    /// The most requests in flight at once at the target, counted by the target.
    pub peak_concurrency: u64,
    /// The most logical requests in flight at once at the client.
    pub client_peak_in_flight: u64,
    pub budget_refusals: u64,
    pub first_budget_refusal_s: Option<f64>,
    pub breaker_refusals: u64,
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
    /// Seconds from the end of the last fault window until goodput was back near its
    /// pre-fault level; null when it never came back (or there was no fault).
    pub recovery_time_s: Option<f64>,
    /// Whether goodput recovered after the faults; null when the scenario has no fault.
    pub recovered: Option<bool>,
    /// Upper bound on amplification the config allows (its attempt cap, or its budget's bound).
    pub amplification_bound: Option<f64>,
    /// Target-side goodput and damage figures.
    pub target_served_ok: u64,
    pub target_shed: u64,
    /// Requests the fault proxy handed to the real server (0 for the built-in target).
    #[serde(default)]
    pub target_forwarded: u64,
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

/// One second of one config (a row of `timeseries.csv`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondRow {
    pub config: String,
    pub second: u64,
    pub upstream_started: u64,
    pub upstream_finished: u64,
    pub successes: u64,
    pub failures: u64,
    pub attempts: u64,
    pub retries: u64,
    pub retries_transient: u64,
    pub retries_throttling: u64,
    pub budget_refusals: u64,
    pub breaker_refusals: u64,
    pub dropped: u64,
    pub downstream_arrivals: u64,
    pub target_in_flight_peak: u64,
    pub target_served_ok: u64,
    pub client_in_flight_peak: u64,
    /// downstream_arrivals / upstream_started in this second (0 when nothing started).
    pub amplification: f64,
    pub budget_level: Option<f64>,
    /// 0 closed, 1 half-open, 2 open.
    pub breaker_state: Option<u8>,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// successes / finished in this second (1 when nothing finished).
    pub success_rate: f64,
}

/// One row of `attempts.csv` (with `--attempt-log`): users debug budgets with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRow {
    pub config: String,
    pub request: u64,
    pub attempt: u32,
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
    /// Fault windows (start, end).
    pub faults: &'a [(Duration, Duration)],
}

/// Fraction of the pre-fault goodput ratio that counts as "recovered".
pub const RECOVERY_FRACTION: f64 = 0.9;
/// Consecutive seconds goodput must hold for recovery to count.
pub const RECOVERY_HOLD_S: usize = 3;

/// Builds one config's summary and per-second rows from its recorder and its target's counts.
pub fn summarize(
    name: &str,
    policy: serde_json::Value,
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
    let get = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let mut rows = Vec::with_capacity(n);
    let mut totals = [0u64; 8];
    let mut peak_amp: f64 = 0.0;
    for i in 0..n {
        let s = secs.get(i);
        let c = |f: fn(&super::recorder::Second) -> u64| s.map(f).unwrap_or(0);
        let started = c(|s| s.started);
        let arrivals = get(&target.arrivals_per_s, i);
        let amp = if started > 0 {
            arrivals as f64 / started as f64
        } else {
            0.0
        };
        if started > 0 {
            peak_amp = peak_amp.max(amp);
        }
        let finished = c(|s| s.finished);
        let successes = c(|s| s.successes);
        let row = SecondRow {
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
            target_in_flight_peak: get(&target.peak_in_flight_per_s, i),
            target_served_ok: get(&target.served_ok_per_s, i),
            client_in_flight_peak: c(|s| s.client_in_flight_peak),
            amplification: amp,
            budget_level: s.and_then(|s| s.budget_level),
            breaker_state: s.and_then(|s| s.breaker),
            latency_p50_ms: s
                .filter(|s| !s.latency_us.is_empty())
                .map(|s| s.latency_us.value_at_quantile(0.5) as f64 / 1000.0)
                .unwrap_or(0.0),
            latency_p99_ms: s
                .filter(|s| !s.latency_us.is_empty())
                .map(|s| s.latency_us.value_at_quantile(0.99) as f64 / 1000.0)
                .unwrap_or(0.0),
            success_rate: if finished > 0 {
                successes as f64 / finished as f64
            } else {
                1.0
            },
        };
        for (t, v) in totals.iter_mut().zip([
            row.upstream_started,
            row.attempts,
            row.retries,
            row.budget_refusals,
            row.breaker_refusals,
            row.successes,
            row.failures,
            row.dropped,
        ]) {
            *t += v;
        }
        rows.push(row);
    }
    let [upstream, attempts, retries, budget_refusals, breaker_refusals, successes, failures, dropped] =
        totals;
    let (recovered, recovery_time_s) = recovery(&rows, shape);
    let summary = ConfigSummary {
        name: name.to_string(),
        policy,
        upstream_requests: upstream,
        attempts,
        retries,
        downstream_arrivals: target.arrivals,
        amplification: if upstream > 0 {
            target.arrivals as f64 / upstream as f64
        } else {
            0.0
        },
        peak_amplification_1s: peak_amp,
        peak_concurrency: target.peak_in_flight,
        client_peak_in_flight: rec.client_in_flight_peak,
        budget_refusals,
        first_budget_refusal_s: rec.first_budget_refusal.map(|d| d.as_secs_f64()),
        breaker_refusals,
        successes,
        failures,
        failures_by_reason: rec.failures_by_reason(),
        attempts_by_outcome: rec.attempts_by_outcome(),
        dropped,
        unfinished: rec.in_flight(),
        latency_ms: Percentiles::of(&rec.latency_us),
        attempt_latency_ms: Percentiles::of(&rec.attempt_latency_us),
        recovery_time_s,
        recovered,
        amplification_bound,
        target_served_ok: target.served_ok,
        target_shed: target.shed,
        target_forwarded: target.forwarded,
        duplicate_executions: target.duplicate_executions,
        idempotency: IdempotencyFigures::of(target),
        latency_curve: latency_curve(&rec.latency_us),
        layers: Vec::new(),
        topology_bound: None,
        peak_retries_per_s: rows.iter().map(|r| r.retries).max().unwrap_or(0),
    };
    (summary, rows)
}

/// Goodput here is the share of requests started in a second that succeeded
/// (successes / started, by intended start second would need per-request bookkeeping;
/// finishing successes per started request is what the recorder has, and over whole
/// seconds of steady offered load they agree). Recovery is the first second after the last
/// fault window from which this ratio holds at ≥ 90 % of its pre-fault mean for
/// `RECOVERY_HOLD_S` seconds in a row (or until the load ends).
fn recovery(rows: &[SecondRow], shape: &RunShape<'_>) -> (Option<bool>, Option<f64>) {
    let Some(first_start) = shape.faults.iter().map(|f| f.0).min() else {
        return (None, None);
    };
    let fault_end = shape.faults.iter().map(|f| f.1).max().unwrap_or_default();
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
        .take(first_start.as_secs() as usize)
        .filter_map(ratio)
        .collect();
    let baseline = if pre.is_empty() {
        1.0
    } else {
        pre.iter().sum::<f64>() / pre.len() as f64
    };
    let threshold = RECOVERY_FRACTION * baseline;
    let from = fault_end.as_secs_f64().ceil() as usize;
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
            return (
                Some(true),
                Some(s as f64 - fault_end.as_secs_f64()).map(|x| x.max(0.0)),
            );
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
            config: "c".into(),
            second,
            upstream_started: started,
            upstream_finished: started,
            successes,
            failures: started - successes,
            attempts: 0,
            retries: 0,
            retries_transient: 0,
            retries_throttling: 0,
            budget_refusals: 0,
            breaker_refusals: 0,
            dropped: 0,
            downstream_arrivals: 0,
            target_in_flight_peak: 0,
            target_served_ok: 0,
            client_in_flight_peak: 0,
            amplification: 0.0,
            budget_level: None,
            breaker_state: None,
            latency_p50_ms: 0.0,
            latency_p99_ms: 0.0,
            success_rate: 1.0,
        }
    }

    fn shape(faults: &[(Duration, Duration)]) -> RunShape<'_> {
        RunShape {
            load_duration: Duration::from_secs(10),
            faults,
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
        let f = [(Duration::from_secs(2), Duration::from_secs(5))];
        assert_eq!(recovery(&rows, &shape(&f)), (Some(true), Some(1.0)));
    }

    #[test]
    fn no_recovery_is_none_and_no_fault_is_not_applicable() {
        let rows: Vec<_> = (0..10)
            .map(|i| row(i, 100, if i < 2 { 100 } else { 10 }))
            .collect();
        let f = [(Duration::from_secs(2), Duration::from_secs(5))];
        assert_eq!(recovery(&rows, &shape(&f)), (Some(false), None));
        assert_eq!(recovery(&rows, &shape(&[])), (None, None));
    }

    #[test]
    fn summary_takes_downstream_from_target_counts() {
        let mut rec = Recorder::new();
        for i in 0..10 {
            let t = Duration::from_millis(i * 100);
            rec.upstream_started(t);
            rec.attempt_sent(t, 1);
            rec.attempt_sent(t, 2);
            rec.upstream_finished(t, Duration::from_millis(5), None);
        }
        let target = TargetStats {
            arrivals: 20,
            arrivals_per_s: vec![20],
            peak_in_flight: 3,
            ..Default::default()
        };
        let (s, rows) = summarize(
            "x",
            serde_json::Value::Null,
            Some(2.0),
            &rec,
            &target,
            &RunShape {
                load_duration: Duration::from_secs(1),
                faults: &[],
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
    }
}
