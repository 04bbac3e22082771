//! Each stage of a retry config in words, for `check --explain`: a reader deciding between
//! configs should not have to decode `{"kind":"aws-quota","capacity":500.0,...}`, and three
//! LLM configs that differ in their failover, breakers and caps must read differently.

use std::fmt::Write;
use std::time::Duration;

use super::backoff::{Backoff, Jitter};
use super::breaker::BreakerConfig;
use super::budget::{BudgetConfig, DepositOn};
use super::cost::{AttemptCost, CostConfig, CostUnit};
use super::duration::format_duration;
use super::failover::FailoverConfig;
use super::ladder::Rung;
use super::retry_after::{HintHeader, RetryAfterConfig};

fn d(x: Duration) -> String {
    format_duration(x)
}

/// The nominal delay before retry n.
pub fn backoff(b: &Backoff) -> String {
    match b {
        Backoff::None => "none: each retry is sent at once".into(),
        Backoff::Constant { delay } => format!("constant {} before every retry", d(*delay)),
        Backoff::Linear { base, cap } => format!(
            "linear: {} × n before retry n{}",
            d(*base),
            cap.map_or(String::new(), |c| format!(", at most {}", d(c)))
        ),
        Backoff::Exponential {
            base,
            multiplier,
            cap,
            throttling_base,
        } => format!(
            "exponential: {} × {multiplier}^(n−1) before retry n{}{}",
            d(*base),
            cap.map_or(String::new(), |c| format!(", at most {}", d(c))),
            throttling_base.map_or(String::new(), |t| format!(
                " ({} in place of {} after a throttling failure)",
                d(t),
                d(*base)
            ))
        ),
    }
}

/// How the nominal delay d is randomized.
pub fn jitter(j: &Jitter) -> String {
    match j {
        Jitter::None => "none (every client waits exactly d: retries stay in step)".into(),
        Jitter::Full => "full: uniform in [0, d)".into(),
        Jitter::Equal => "equal: uniform in [d/2, d)".into(),
        Jitter::Decorrelated => "decorrelated: uniform in [base, 3 × the previous delay)".into(),
        Jitter::Proportional { pct } => format!("±{pct} % around d"),
        Jitter::Downward { pct } => format!("up to {pct} % below d"),
    }
}

/// Which server hint is honoured, and how far.
pub fn retry_after(r: &RetryAfterConfig) -> String {
    let header = match r.header {
        HintHeader::None => return "no server hint is honoured".into(),
        HintHeader::RetryAfter => "Retry-After",
        HintHeader::RetryAfterMs => "retry-after-ms, else Retry-After",
        HintHeader::XAmzRetryAfter => {
            return format!(
                "x-amz-retry-after: the hint, kept between the computed backoff and {} more",
                d(r.cap.unwrap_or(super::retry_after::AMZ_DEFAULT_EXTRA))
            )
        }
        HintHeader::GrpcRetryPushbackMs => "grpc-retry-pushback-ms (negative: no retry)",
        HintHeader::XAmzRetryAfterOrRetryAfter => {
            return format!(
                "x-amz-retry-after, else Retry-After: the hint, kept between the computed backoff and {} more",
                d(r.cap.unwrap_or(super::retry_after::AMZ_DEFAULT_EXTRA))
            )
        }
    };
    let mut s = format!("{header} honoured");
    if let Some(up_to) = r.honour_up_to {
        let _ = write!(s, " when above 0 and at most {}", d(up_to));
    }
    if let Some(cap) = r.cap {
        let _ = write!(s, ", capped at {}", d(cap));
    }
    if let Some(above) = r.refuse_above {
        let _ = write!(s, "; a hint above {} ends the retries", d(above));
    }
    s
}

/// The send-rate limiter and when it engages; `None` without one.
pub fn rate_limiter(l: &super::rate_limiter::RateLimiterConfig) -> Option<String> {
    use super::rate_limiter::{RateLimiterConfig, BETA, MAX_RATE_ADJUST_SCALE, MIN_FILL_RATE};
    match l {
        RateLimiterConfig::None => None,
        RateLimiterConfig::AwsAdaptive => Some(format!(
            "botocore's adaptive send-rate limiter: off until the first throttling answer; from \
             then on every send (first attempts too, to any path) waits for a token, refilled at \
             a rate cut to {} × the measured send rate on each throttling answer and grown back \
             along a cubic curve on the others, at most {} × the measured rate, at least {} per \
             second; its waits are the rate_limited_sends and rate_limit_wait_* figures",
            BETA, MAX_RATE_ADJUST_SCALE, MIN_FILL_RATE
        )),
    }
}

/// The retry budget: what it spends, what refills it.
pub fn budget(b: &BudgetConfig) -> String {
    match b {
        BudgetConfig::None => {
            "none: every retryable failure is retried up to the attempt limit".into()
        }
        BudgetConfig::Ratio(c) => format!(
            "ratio: retries ≤ {} % of the {} over the last {}, plus a reserve of {} per second",
            c.ratio * 100.0,
            match c.deposit {
                DepositOn::Request => "requests",
                DepositOn::Success => "successful requests",
            },
            d(c.ttl),
            c.min_per_sec
        ),
        BudgetConfig::AwsQuota(c) => format!(
            "AWS retry quota of {} tokens: a retry after a transient failure costs {}, after a \
             throttling failure {}, after a timeout {}; a success returns {} (or what its \
             retry cost); no tokens, no retry",
            c.capacity, c.transient_cost, c.throttling_cost, c.timeout_cost, c.success_increment
        ),
        BudgetConfig::GrpcThrottling(c) => format!(
            "gRPC retry throttling: {} tokens, one lost per retryable failure, {} regained per \
             success; retries only while more than half remain",
            c.max_tokens, c.token_ratio
        ),
        BudgetConfig::Envoy(c) => match c.budget_percent {
            Some(p) => format!(
                "Envoy retry budget: concurrent retries ≤ {p} % of active requests, at least {}",
                c.min_retry_concurrency
            ),
            None => format!(
                "Envoy retry circuit breaker: at most {} retries in flight at once",
                c.max_retries
            ),
        },
    }
}

/// When the circuit opens, for how long, and how it closes.
pub fn breaker(b: &BreakerConfig) -> String {
    let mut opens = Vec::new();
    if let Some(n) = b.failure_threshold {
        opens.push(format!("{n} consecutive failures"));
    }
    if let Some(r) = b.failure_rate {
        opens.push(format!(
            "{} % failures among the last {} calls (after {} calls)",
            r * 100.0,
            b.window,
            b.min_calls
        ));
    }
    format!(
        "opens after {}; refuses every attempt for {}, then lets {} probe{} through",
        opens.join(" or "),
        d(b.open_for),
        b.half_open_probes,
        if b.half_open_probes == 1 { "" } else { "s" }
    )
}

/// The order of the stages around a call, and what it means for the breaker.
pub fn pipeline(c: &super::config::RetryConfig) -> String {
    use super::pipeline::BreakerPlace;
    let order = c.effective_pipeline().words();
    let written = if c.pipeline.is_some() {
        "as written"
    } else {
        "the default"
    };
    let breaker = match (&c.breaker, c.pipeline.as_ref().map(|p| p.breaker_place())) {
        (None, _) => "",
        (Some(_), Some(BreakerPlace::OutsideRetry)) => {
            "; the breaker is asked once per call and learns each call's last outcome: while \
             it is open no attempt is sent, a probe is a whole call with its retries"
        }
        (Some(_), Some(BreakerPlace::InsideRetry)) => {
            "; every attempt asks the breaker and an open-circuit refusal is a failed attempt \
             the retry re-sends after its backoff (the order the retry pattern warns of)"
        }
        (Some(_), _) => {
            "; every attempt asks the breaker, and its refusal ends the call without a retry"
        }
    };
    let bulkhead = if c.pipeline.as_ref().is_some_and(|p| p.bulkhead_outside()) {
        "; the bulkhead is asked once per call, which holds its place through its backoffs \
         and retries until it ends: it bounds calls in flight, not attempts"
    } else {
        ""
    };
    format!("{order} (outermost first, {written}){breaker}{bulkhead}")
}

/// The bulkhead: its places, its queue; `per_call` when it stands outside the retry (a
/// place is a call's, not an attempt's).
pub fn bulkhead(b: &super::bulkhead::BulkheadConfig, per_call: bool) -> String {
    let (one, many) = if per_call {
        ("a call", "calls")
    } else {
        ("an attempt", "attempts")
    };
    let queue = if b.max_queue == 0 {
        format!("no queue: {one} that finds them taken is rejected")
    } else {
        format!(
            "up to {} {many} wait up to {} for one, then are rejected",
            b.max_queue,
            d(b.max_wait)
        )
    };
    format!(
        "at most {} {many} in flight; {queue} (the call ends bulkhead-full, unsent)",
        b.max_concurrent
    )
}

/// The adaptive concurrency limiter and how its limit moves.
pub fn concurrency_limit(l: &super::concurrency_limit::ConcurrencyLimitConfig) -> String {
    use super::concurrency_limit::ConcurrencyLimitConfig as L;
    let (how, initial, min, max) = match l {
        L::Aimd {
            initial_limit,
            min_limit,
            max_limit,
            backoff_ratio,
            timeout,
        } => (
            format!(
                "AIMD (Netflix concurrency-limits): × {backoff_ratio} on a failure, a timeout \
                 or a round trip over {}, + 1 on a success with at least half the limit in \
                 flight",
                d(*timeout)
            ),
            initial_limit,
            min_limit,
            max_limit,
        ),
        L::Gradient2 {
            initial_limit,
            min_limit,
            max_limit,
            smoothing,
            queue_size,
            long_window,
            rtt_tolerance,
        } => (
            format!(
                "Gradient2 (Netflix concurrency-limits): the limit × min(1, {rtt_tolerance} × \
                 the long-term round trip ({long_window} samples) / this one) + {queue_size}, \
                 smoothed by {smoothing}"
            ),
            initial_limit,
            min_limit,
            max_limit,
        ),
    };
    format!(
        "{how}; starts at {initial}, between {min} and {max}; an attempt that finds the limit \
         in flight is rejected (the call ends limit-exceeded, unsent)"
    )
}

/// The cost caps, with the rule that makes them bound retries rather than spending.
pub fn cost(c: &CostConfig, unit: &AttemptCost) -> String {
    let unit = match unit {
        AttemptCost::Fixed(x) if *x == 1.0 => "attempts".to_string(),
        AttemptCost::Fixed(x) => format!("cost units ({x} per attempt)"),
        AttemptCost::Derived(u) | AttemptCost::Resolved { unit: u, .. } => match u {
            CostUnit::Tokens => "tokens".to_string(),
            CostUnit::Money => "money (tokens at the provider's price)".to_string(),
        },
    };
    let mut caps = Vec::new();
    if let Some(r) = c.per_request_cap {
        caps.push(format!("{r} per request"));
    }
    if let Some(g) = c.global_cap {
        caps.push(format!("{g} for the whole client"));
    }
    format!(
        "no attempt is sent that would spend more than {} in {unit}: retries stop at the cap, \
         and once the client's spend reaches it new requests fail without an attempt",
        caps.join(" or ")
    )
}

/// Which provider each attempt goes to.
pub fn failover(f: &FailoverConfig) -> String {
    let mut s = format!(
        "first tries to {}; {} retr{} there, then {}",
        f.providers[0],
        f.same_provider_retries,
        if f.same_provider_retries == 1 {
            "y"
        } else {
            "ies"
        },
        if f.providers.len() > 1 {
            format!("on to {} in turn", f.providers[1..].join(", "))
        } else {
            "no other provider".into()
        }
    );
    if let Some(b) = &f.breaker {
        let _ = write!(s, "; a breaker per provider {}", breaker(b));
    }
    if let Some(b) = &f.bulkhead {
        let _ = write!(
            s,
            "; a bulkhead per provider, each: {} (asked at the provider the attempt goes to)",
            bulkhead(b, false)
        );
    }
    s
}

/// What the client answers itself when its attempts could not.
pub fn ladder(rungs: &[Rung]) -> String {
    let steps: Vec<String> = rungs
        .iter()
        .map(|r| match r {
            Rung::Model(name) => format!("one more attempt at {name}"),
            Rung::Cached(share) => format!("a cached answer for {} % of requests", share * 100.0),
            Rung::Static(_) => "a static answer".into(),
        })
        .collect();
    format!("when every attempt failed: {}", steps.join(", then "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::presets;

    #[test]
    fn no_stage_is_printed_as_data() {
        for p in presets::PRESETS {
            let c = presets::preset(p.name).unwrap();
            let text = [
                backoff(&c.backoff),
                jitter(&c.jitter),
                retry_after(&c.retry_after),
                budget(&c.budget),
            ]
            .join(" ");
            assert!(
                !text.contains('{') && !text.contains('"'),
                "{}: {text}",
                p.name
            );
        }
    }

    #[test]
    fn caps_say_what_they_bound() {
        let c = CostConfig {
            per_request_cap: None,
            global_cap: Some(2.0),
        };
        let t = cost(&c, &AttemptCost::Derived(CostUnit::Money));
        assert!(
            t.contains("2 for the whole client")
                && t.contains("new requests fail without an attempt"),
            "{t}"
        );
    }
}
