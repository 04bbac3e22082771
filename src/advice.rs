//! What `stormrig check` says about a plan beyond "it parses": configs that cannot retry any
//! failure the scenario injects (and would look best for it), per-try timeouts that the
//! deadline makes moot, budgets that cannot refill; and, with `--explain`, each config's
//! resolved policy in words.

use crate::policy::budget::AwsQuotaConfig;
use std::fmt::Write as _;

use crate::metrics::drain::thresholds;
use crate::metrics::numbers::fmt_pct;
use crate::plan::Plan;
use crate::policy::outcome::is_idempotent_method;
use crate::policy::words;
use crate::policy::{
    AttemptOutcome, BudgetConfig, GrpcStatus, OutcomeClass, Response, RetryConfig, TransportError,
};
use crate::scenario::{Fault, FaultKind};

/// One warning about one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub config: String,
    pub message: String,
}

/// What an attempt hit by `fault` comes back as, to this config's client; None when the
/// fault does not fail the attempt (extra latency without a per-try timeout).
fn outcome_of<'a>(fault: &'a Fault, config: &RetryConfig) -> Option<AttemptOutcome<'a>> {
    let status = |status: u16, code: Option<&'a str>| {
        AttemptOutcome::Response(Response {
            status,
            error_code: code,
            ..Response::default()
        })
    };
    let timeout = || {
        AttemptOutcome::Transport(if config.per_try_timeout.is_some() {
            TransportError::PerTryTimeout
        } else {
            TransportError::ReadTimeout
        })
    };
    match &fault.kind {
        FaultKind::Status {
            status: s,
            error_code,
            should_retry,
            ..
        } => Some(AttemptOutcome::Response(Response {
            status: *s,
            error_code: error_code.as_deref(),
            // What a config obeying `x-should-retry` makes of the answer depends on it.
            should_retry: should_retry.map(|b| if b { "true" } else { "false" }),
            ..Response::default()
        })),
        FaultKind::GrpcStatus { status, .. } => Some(AttemptOutcome::Response(Response {
            status: 200,
            grpc_status: Some(*status),
            ..Response::default()
        })),
        FaultKind::Reset => Some(AttemptOutcome::Transport(TransportError::Reset)),
        FaultKind::Hang | FaultKind::LostResponse { status: None } => Some(timeout()),
        FaultKind::LostResponse { status: Some(s) } => Some(status(*s, None)),
        FaultKind::Latency { .. } | FaultKind::Bandwidth { .. } | FaultKind::Slicer { .. } => {
            config.per_try_timeout.map(|_| timeout())
        }
        // The answer arrives whole; only the connection is not reused.
        FaultKind::SlowClose { .. } => None,
        // Over capacity the built-in target sheds with 503 or keeps the request queued.
        FaultKind::Capacity { .. } => Some(status(503, None)),
    }
}

fn outcome_name(o: &AttemptOutcome<'_>) -> String {
    match o {
        AttemptOutcome::Response(Response {
            grpc_status: Some(g),
            ..
        }) => format!("gRPC status {g}"),
        AttemptOutcome::Response(r) => format!("status {}", r.status),
        AttemptOutcome::Transport(t) => serde_json::to_value(t)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{t:?}")),
    }
}

/// Every reason `config` does not retry `o` (empty when it does).
fn why_not(config: &RetryConfig, method: &str, o: &AttemptOutcome<'_>) -> Vec<String> {
    let c = config.retry_on.classify(o);
    let mut why = Vec::new();
    if c.class == OutcomeClass::NonRetryable {
        why.push(match o {
            AttemptOutcome::Response(Response {
                grpc_status: Some(g),
                ..
            }) => format!("gRPC status {g} is not in retry_on.grpc_statuses"),
            AttemptOutcome::Response(r) => format!("status {} is not in retry_on", r.status),
            AttemptOutcome::Transport(_) => format!(
                "{} is not a retried transport outcome (retry_on.transport)",
                outcome_name(o)
            ),
        });
    }
    if !is_idempotent_method(method)
        && !c.never_sent
        && !config.retry_non_idempotent
        && !config.idempotency_key
    {
        why.push(format!(
            "{method} without an Idempotency-Key is not retried once it may have reached the server \
             (retry_non_idempotent = false)"
        ));
    }
    why
}

/// Every warning of the plan, config by config.
pub fn warnings(plan: &Plan) -> Vec<Warning> {
    let sc = &plan.scenario;
    let mut out = Vec::new();
    for pc in &plan.configs {
        let c = &pc.config;
        let mut warn = |message: String| {
            out.push(Warning {
                config: pc.name.clone(),
                message,
            })
        };
        let failing: Vec<Vec<String>> = sc
            .faults
            .iter()
            .filter_map(|f| outcome_of(f, c))
            .map(|o| why_not(c, &sc.load.method, &o))
            .collect();
        if c.max_attempts > 1 && !failing.is_empty() && failing.iter().all(|w| !w.is_empty()) {
            let reasons: Vec<String> =
                failing.into_iter().flatten().fold(Vec::new(), |mut v, w| {
                    if !v.contains(&w) {
                        v.push(w);
                    }
                    v
                });
            warn(format!(
                "can retry none of the failures the scenario injects, although max_attempts = {}: {}",
                c.max_attempts,
                reasons.join("; ")
            ));
        }
        if let (Some(t), Some(d)) = (c.per_try_timeout, c.deadline) {
            if t >= d {
                warn(format!(
                    "per_try_timeout ({t:?}) is not shorter than the deadline ({d:?}): no attempt can \
                     time out and still leave time for a retry"
                ));
            }
        }
        if let BudgetConfig::AwsQuota(AwsQuotaConfig {
            success_increment, ..
        }) = c.budget
        {
            if success_increment <= 0.0 {
                warn(
                    "the retry quota's success_increment is 0: once spent it never refills".into(),
                );
            }
        }
        let (t, _) = thresholds(c);
        for f in &sc.faults {
            let whole_run = f.at.is_zero() && f.at + f.length >= sc.duration;
            let Some(o) = outcome_of(f, c).filter(|_| whole_run) else {
                continue;
            };
            let cl = c.retry_on.classify(&o);
            let threshold = match cl.class {
                OutcomeClass::Throttling => t.throttling,
                OutcomeClass::Transient if cl.timeout => t.timeout,
                OutcomeClass::Transient => t.transient,
                _ => None,
            };
            if let Some(t) = threshold.filter(|t| f.probability > *t) {
                warn(format!(
                    "its budget can never refill: {} of {} % of requests for the whole run is above \
                     its drain threshold of {} %",
                    outcome_name(&o),
                    fmt_pct(f.probability),
                    fmt_pct(t)
                ));
            }
        }
    }
    out
}

fn list<T: serde::Serialize>(items: &[T]) -> String {
    let v: Vec<String> = items
        .iter()
        .map(|i| match serde_json::to_value(i) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(v) => v.to_string(),
            Err(_) => "?".into(),
        })
        .collect();
    if v.is_empty() {
        "nothing".into()
    } else {
        v.join(", ")
    }
}

/// gRPC statuses by the spec's names (`UNAVAILABLE, RESOURCE_EXHAUSTED`), as a reader of
/// gRPC's documentation meets them.
fn grpc_names(statuses: &[GrpcStatus]) -> String {
    if statuses.is_empty() {
        return "nothing".into();
    }
    let names: Vec<&str> = statuses.iter().map(|g| g.name()).collect();
    names.join(", ")
}

/// Each config's resolved policy in words (`stormrig check --explain`), then, for a load
/// with request classes, which policy each class runs under.
pub fn explain(plan: &Plan) -> String {
    let load = &plan.scenario.load;
    let mut out = String::new();
    for pc in &plan.configs {
        let _ = writeln!(out, "{}{}", pc.name, preset_words(&pc.config));
        let idempotent = is_idempotent_method(&load.method);
        explain_policy(&mut out, &pc.config, &load.method, idempotent);
        for (i, class) in load.classes.iter().enumerate() {
            let what = format!("  class {} ({} {})", class.name, class.method, class.path);
            match pc.class_policies.get(i).and_then(Option::as_ref) {
                None => {
                    let _ = writeln!(out, "{what}: the config's policy, sharing its state");
                }
                Some(c) => {
                    let _ = writeln!(out, "{what}: a policy of its own{}", preset_words(c));
                    explain_policy(&mut out, c, &class.method, class.idempotent());
                }
            }
        }
    }
    out
}

fn preset_words(c: &crate::policy::RetryConfig) -> String {
    c.preset.as_ref().map_or(
        " (no preset: the defaults of a config without one)".to_string(),
        |p| format!(" (preset {p})"),
    )
}

/// How a hedging config sends its copies, if it hedges.
fn explain_hedging(out: &mut String, c: &crate::policy::RetryConfig) {
    if let Some(h) = &c.hedging {
        let _ = writeln!(
            out,
            "  hedging: up to {} copies, {:?} apart while none has answered, in place of \
             retries (gRFC A6); the first success wins, the others are closed",
            h.max_attempts, h.delay
        );
    } else if c.hedge_on_per_try_timeout {
        let _ = writeln!(
            out,
            "  hedging: on the per-try timeout (Envoy): the attempt goes on and the next \
             retry is sent beside it after its backoff; the first good answer wins, the \
             others are closed"
        );
    }
}

/// One policy in words; `idempotent` says whether the calls it sends may be repeated
/// (`method`'s rule, or what a request class declares).
fn explain_policy(
    out: &mut String,
    c: &crate::policy::RetryConfig,
    method: &str,
    idempotent: bool,
) {
    let r = &c.retry_on;
    {
        let _ = writeln!(
            out,
            "  attempts: up to {} (first try included){}{}",
            c.max_attempts,
            c.per_try_timeout
                .map_or(String::new(), |t| format!("; per-try timeout {t:?}")),
            c.deadline
                .map_or(String::new(), |d| format!("; deadline {d:?}"))
        );
        explain_hedging(out, c);
        let _ = writeln!(
            out,
            "  retries: statuses {} as transient, {} as throttling{}; transport {}{}",
            list(&r.statuses),
            list(&r.throttling_statuses),
            if r.hinted_statuses.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} as throttling only with a Retry-After",
                    list(&r.hinted_statuses)
                )
            },
            list(&r.transport),
            if r.throttling_codes.is_empty() && r.transient_codes.is_empty() {
                String::new()
            } else {
                format!(
                    "; error codes {} (throttling), {} (transient)",
                    list(&r.throttling_codes),
                    list(&r.transient_codes)
                )
            }
        );
        if !r.grpc_statuses.is_empty() || !r.grpc_throttling_statuses.is_empty() {
            let _ = writeln!(
                out,
                "  retries gRPC calls failing with: {} as transient, {} as throttling \
                 (the status in the trailers, whatever the HTTP status)",
                grpc_names(&r.grpc_statuses),
                grpc_names(&r.grpc_throttling_statuses)
            );
        }
        let _ = writeln!(
            out,
            "  does not retry: every other status and transport outcome{}",
            if idempotent {
                format!("; {method} is idempotent here, so method never stops a retry")
            } else if c.idempotency_key {
                format!("; {method} is retried with an Idempotency-Key")
            } else if c.retry_non_idempotent {
                format!("; {method} is retried without a key (duplicates possible)")
            } else {
                format!("; {method} once it may have reached the server (only never-sent failures are retried)")
            }
        );
        let _ = writeln!(out, "  backoff: {}", words::backoff(&c.backoff));
        let _ = writeln!(out, "  jitter: {}", words::jitter(&c.jitter));
        let _ = writeln!(
            out,
            "  server hints: {}",
            words::retry_after(&c.retry_after)
        );
        let (t, reasons) = thresholds(c);
        let th: Vec<String> = [
            ("transient", t.transient),
            ("throttling", t.throttling),
            ("timeout", t.timeout),
        ]
        .into_iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k} {} %", fmt_pct(v)),
            None => format!("{k}: none ({})", reasons.get(k).map_or("", String::as_str)),
        })
        .collect();
        let _ = writeln!(out, "  budget: {}", words::budget(&c.budget));
        if !matches!(c.budget, BudgetConfig::None) {
            let _ = writeln!(out, "  drains above: {}", th.join("; "));
        }
        if let Some(l) = words::rate_limiter(&c.rate_limiter) {
            let _ = writeln!(out, "  rate limiter: {l}");
        }
        if let Some(b) = &c.breaker {
            let _ = writeln!(out, "  breaker: {}", words::breaker(b));
        }
        if let Some(b) = &c.bulkhead {
            let per_call = c.pipeline.as_ref().is_some_and(|p| p.bulkhead_outside());
            let _ = writeln!(out, "  bulkhead: {}", words::bulkhead(b, per_call));
        }
        if let Some(l) = &c.concurrency_limit {
            let _ = writeln!(out, "  concurrency limit: {}", words::concurrency_limit(l));
        }
        let _ = writeln!(out, "  pipeline: {}", words::pipeline(c));
        if let Some(cost) = &c.cost {
            let _ = writeln!(out, "  cost caps: {}", words::cost(cost, &c.attempt_cost));
        }
        if let Some(f) = &c.failover {
            let _ = writeln!(out, "  failover: {}", words::failover(f));
        }
        if !c.ladder.is_empty() {
            let _ = writeln!(out, "  fallback: {}", words::ladder(&c.ladder));
        }
    }
}
