//! The hints LLM APIs send beside `Retry-After`, sent by a scenario's status fault and obeyed
//! (or not) by each config, in both engines: `x-should-retry: false` stops the LLM SDK
//! presets' retries of a 503, `x-should-retry: true` makes them retry a 400, and
//! `retry-after-ms` is read before `Retry-After`. A config that does not obey the headers
//! runs beside each, so that the difference is the header's doing.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::sim::{self, SimOptions};

use crate::support;

fn scenario(fault: &str) -> String {
    format!(
        r#"
name = "llm-sdk-hints"
seed = 3
duration = "4s"
drain = "1s"

# Ten requests at t = 0: every retry (at most 1.5 s later) meets the fault too.
[load]
kind = "burst"
clients = 10
method = "POST"
path = "/v1/chat/completions"

[target]
builtin = "default"

[[faults]]
kind = "status"
at = "0s"
for = "4s"
{fault}

[[configs]]
name = "sdk"
preset = "openai-python"

[[configs]]
name = "deaf"
preset = "openai-python"
retry_after = {{ header = "none" }}
retry_on = {{ statuses = [408, 409, "5xx"], throttling_statuses = [429] }}
"#
    )
}

/// Both engines' results of `fault`'s scenario.
fn both(fault: &str) -> [RunResult; 2] {
    let p = support::plan_of(&scenario(fault));
    [
        sim::run(&p, &SimOptions::default()).unwrap().result,
        support::run_live(&p, false).result,
    ]
}

fn of<'a>(run: &'a RunResult, name: &str) -> &'a ConfigSummary {
    support::config_named(&run.configs, name)
}

#[test]
fn x_should_retry_false_stops_the_retries_of_a_503_in_both_engines() {
    for run in both("status = 503\nshould_retry = false") {
        let (sdk, deaf) = (of(&run, "sdk"), of(&run, "deaf"));
        assert!(sdk.upstream_requests > 0);
        assert_eq!(sdk.attempts, sdk.upstream_requests, "{:?}", run.engine);
        assert_eq!(
            sdk.failures_by_reason.get("server-pushback"),
            Some(&sdk.upstream_requests),
            "{:?}",
            sdk.failures_by_reason
        );
        assert_eq!(
            deaf.attempts,
            3 * deaf.upstream_requests,
            "{:?}",
            run.engine
        );
    }
}

#[test]
fn x_should_retry_true_makes_a_400_retried_in_both_engines() {
    for run in both("status = 400\nshould_retry = true") {
        let (sdk, deaf) = (of(&run, "sdk"), of(&run, "deaf"));
        assert_eq!(sdk.attempts, 3 * sdk.upstream_requests, "{:?}", run.engine);
        assert_eq!(deaf.attempts, deaf.upstream_requests, "{:?}", run.engine);
    }
}

#[test]
fn retry_after_ms_is_read_before_retry_after_in_both_engines() {
    // 429 with retry-after-ms 300 beside Retry-After 5: the SDK waits 300 ms twice, its
    // deaf twin its own backoff, 0.375-0.5 s then 0.75-1 s.
    for run in both("status = 429\nretry_after = \"5s\"\nretry_after_ms = \"300ms\"") {
        let (sdk, deaf) = (of(&run, "sdk"), of(&run, "deaf"));
        assert_eq!(sdk.attempts, 3 * sdk.upstream_requests);
        let p50 = sdk.latency_ms.p50;
        assert!(
            (600.0..700.0).contains(&p50),
            "{:?}: sdk p50 {p50}",
            run.engine
        );
        let deaf_p50 = deaf.latency_ms.p50;
        assert!(deaf_p50 >= 1125.0, "{:?}: deaf p50 {deaf_p50}", run.engine);
    }
}
