//! The `aws-adaptive` preset's send-rate limiter in both engines: it engages on throttling,
//! holds sends back (first attempts too), and its waits are counted apart; the counts stay
//! exact. (Its formulas are held against botocore in `aws_adaptive_conformance.rs`.)

use crate::support::{config_named, plan_of, run_live};
use stormrig::sim::{self, SimOptions};

/// `rate` requests per second for `secs` seconds, the target throttling every request with a
/// bare 429 from `from` for `for_`, `aws-standard` beside `aws-adaptive`.
fn throttled(rate: u32, secs: u32, from: &str, for_: &str, status: u16) -> String {
    format!(
        r#"name = "adaptive"
seed = 5
duration = "{secs}s"
drain = "30s"

[load]
kind = "constant"
rate = {rate}

[target]
builtin = "default"

[[faults]]
kind = "status"
status = {status}
at = "{from}"
for = "{for_}"

[[configs]]
preset = "aws-standard"

[[configs]]
preset = "aws-adaptive"
"#
    )
}

#[test]
fn sim_adaptive_holds_sends_after_throttling_and_counts_the_waits() {
    let plan = plan_of(&throttled(200, 20, "5s", "5s", 429));
    let a = sim::run(&plan, &SimOptions::default()).unwrap();
    let b = sim::run(&plan, &SimOptions::default()).unwrap();
    assert_eq!(
        serde_json::to_vec(&a.result).unwrap(),
        serde_json::to_vec(&b.result).unwrap(),
        "same seed, same output"
    );
    let r = &a.result;
    let std = config_named(&r.configs, "aws-standard");
    let ada = config_named(&r.configs, "aws-adaptive");
    for c in [std, ada] {
        assert_eq!(c.attempts, c.downstream_arrivals, "{}", c.name);
        assert_eq!(c.attempts, c.upstream_requests + c.retries, "{}", c.name);
        assert_eq!(c.upstream_requests, std.upstream_requests, "{}", c.name);
        assert_eq!(c.successes + c.failures + c.unfinished, c.upstream_requests);
    }
    assert_eq!(std.rate_limited_sends, 0);
    assert_eq!(std.rate_limit_wait_s, 0.0);
    assert!(ada.rate_limited_sends > 100, "{}", ada.rate_limited_sends);
    assert!(ada.rate_limit_wait_s > 0.0);
    assert!(ada.rate_limit_wait_ms.max >= ada.rate_limit_wait_ms.p50);
    assert!(ada.rate_limit_wait_ms.p50 > 0.0);
    // Held back, it sends less into the throttling target than standard mode does.
    assert!(
        ada.attempts < std.attempts,
        "{} vs {}",
        ada.attempts,
        std.attempts
    );
    // Its waits are in the requests' latency.
    assert!(ada.latency_ms.max >= ada.rate_limit_wait_ms.max * 0.99);
}

#[test]
fn sim_adaptive_limiter_stays_off_without_throttling() {
    let plan = plan_of(&throttled(200, 12, "4s", "4s", 503));
    let r = sim::run(&plan, &SimOptions::default()).unwrap().result;
    let ada = config_named(&r.configs, "aws-adaptive");
    assert!(ada.retries > 0, "the 503s were retried");
    assert_eq!(ada.rate_limited_sends, 0, "503 is not throttling");
    assert_eq!(ada.rate_limit_wait_s, 0.0);
}

#[test]
fn live_adaptive_waits_are_counted_and_every_attempt_reaches_the_target() {
    let plan = plan_of(&throttled(60, 3, "500ms", "1s", 429));
    let out = run_live(&plan, true);
    let r = &out.result;
    assert!(!r.partial);
    for c in &r.configs {
        assert_eq!(
            c.attempts, c.downstream_arrivals,
            "{}: client vs target",
            c.name
        );
        assert_eq!(c.attempts, c.upstream_requests + c.retries, "{}", c.name);
        let logged = out
            .attempts
            .iter()
            .filter(|a| a.config == c.name && a.outcome != "refused")
            .count() as u64;
        assert_eq!(
            logged, c.attempts,
            "{}: one log row per attempt sent",
            c.name
        );
    }
    let std = config_named(&r.configs, "aws-standard");
    let ada = config_named(&r.configs, "aws-adaptive");
    assert_eq!(std.rate_limited_sends, 0);
    assert!(ada.rate_limited_sends > 0, "the limiter held nothing back");
    assert!(ada.rate_limit_wait_s > 0.0);
}

#[test]
fn explain_says_the_limiter_exists_and_when_it_engages() {
    let plan = plan_of(&throttled(60, 3, "500ms", "1s", 429));
    let text = stormrig::advice::explain(&plan);
    let (standard, adaptive) = text
        .split_once("aws-adaptive")
        .expect("both configs are explained");
    assert!(!standard.contains("rate limiter"), "{text}");
    assert!(
        adaptive.contains("rate limiter: botocore's adaptive send-rate limiter: off until the first throttling answer"),
        "{text}"
    );
}

/// A deadline bounds the limiter's wait: a request held back ends at its deadline, refused
/// there, and its wait is not counted as a send held back.
#[test]
fn sim_adaptive_wait_ends_at_the_deadline() {
    let text = throttled(200, 12, "2s", "3s", 429).replace(
        "preset = \"aws-adaptive\"",
        "preset = \"aws-adaptive\"\ndeadline = \"1s\"",
    );
    let r = sim::run(&plan_of(&text), &SimOptions::default())
        .unwrap()
        .result;
    let ada = config_named(&r.configs, "aws-adaptive");
    assert!(ada.rate_limited_sends > 0);
    assert!(
        ada.failures_by_reason.get("deadline").copied().unwrap_or(0) > 0,
        "{:?}",
        ada.failures_by_reason
    );
    assert!(
        ada.rate_limit_wait_ms.max <= 1000.0,
        "{:?}",
        ada.rate_limit_wait_ms
    );
    assert!(ada.latency_ms.max <= 1100.0, "{:?}", ada.latency_ms);
    assert_eq!(ada.attempts, ada.downstream_arrivals);
}
