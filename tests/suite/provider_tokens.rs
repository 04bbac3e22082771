//! Providers count tokens themselves, in both engines: against a provider that fails every
//! call, six attempts spend exactly six times the tokens of one, and a budget whose unit is
//! the request's tokens caps spending at its limit. The provider's own arrival counts equal
//! the client's attempts exactly, live too.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::plan::{self, Plan};
use stormrig::sim::{self, SimOptions};

use crate::support;

/// 50 requests in the first second, each of 1,000 prompt + 200 completion tokens, to a
/// provider that answers 503 to everything for the whole run.
pub(crate) const ALWAYS_FAILS: &str = r#"
name = "provider-always-fails"
seed = 3
duration = "2s"
drain = "3s"

[load]
kind = "steps"
steps = [{ at = "0s", rate = 50.0 }, { at = "1s", rate = 0.0 }]
method = "POST"
path = "/providers/llm-a/v1/chat/completions"

[target]
builtin = "default"

[[provider]]
name = "llm-a"
prompt_tokens = 1000
completion_tokens = 200
time_to_first_token = "1ms"
time_per_output_token = "0s"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"
path = "/providers/llm-a"

[[configs]]
name = "six-attempts"
preset = "naive"
max_attempts = 6

# A token budget: each attempt costs the request's 1,200 tokens; one request may spend 3,600.
[[configs]]
name = "token-budget"
preset = "naive"
max_attempts = 6
attempt_cost = 1200
cost = { per_request_cap = 3600 }
"#;

pub fn plan_of(text: &str) -> Plan {
    let path = support::repo_root().join("scenarios/provider-test.toml");
    let sc = stormrig::scenario::parse(&path, text).unwrap();
    plan::build(sc, text).unwrap()
}

fn check_spending(run: &RunResult) {
    let c = |name: &str| -> &ConfigSummary { support::config_named(&run.configs, name) };
    for cfg in &run.configs {
        let p = &cfg.providers[0];
        assert_eq!(p.name, "llm-a");
        assert_eq!(
            p.arrivals, cfg.attempts,
            "{}: provider arrivals = attempts",
            cfg.name
        );
        assert_eq!(p.arrivals, cfg.downstream_arrivals, "{}", cfg.name);
        assert_eq!(p.served, 0, "{}", cfg.name);
        assert_eq!(cfg.upstream_requests, 50, "{}", cfg.name);
        assert_eq!(p.tokens_first_attempts, 50 * 1200, "{}", cfg.name);
    }
    let six = c("six-attempts");
    let t = six.tokens.as_ref().unwrap();
    assert_eq!(six.attempts, 6 * 50);
    assert_eq!(t.spent, 6 * 50 * 1200);
    assert_eq!(t.wasted, t.spent);
    assert_eq!(t.cost_amplification, Some(6.0));

    let capped = c("token-budget");
    let t = capped.tokens.as_ref().unwrap();
    assert_eq!(
        t.spent,
        50 * 3600,
        "every request spends its 3,600 tokens, no more"
    );
    assert_eq!(t.cost_amplification, Some(3.0));
    assert_eq!(capped.failures_by_reason.get("cost-cap"), Some(&50));
}

#[test]
fn six_attempts_spend_six_times_the_tokens_and_a_token_budget_caps_spending_in_the_simulator() {
    let p = plan_of(ALWAYS_FAILS);
    let run = sim::run(&p, &SimOptions::default()).unwrap().result;
    check_spending(&run);
}

#[test]
fn six_attempts_spend_six_times_the_tokens_and_a_token_budget_caps_spending_live() {
    let p = plan_of(ALWAYS_FAILS);
    check_spending(&support::run_live(&p, false).result);
}

/// 60 calls/s for 2 s against a 60 RPM provider (a full minute's 60 to start with): most are throttled. Whatever the engine,
/// every attempt is counted by the provider, and every arrival is either served or
/// throttled by it (no fault is in play).
pub(crate) const THROTTLED: &str = r#"
name = "provider-throttles"
seed = 5
duration = "2s"
drain = "2s"

[load]
kind = "constant"
rate = 60.0
method = "POST"
path = "/providers/llm/v1/chat/completions"

[target]
builtin = "default"

[[provider]]
name = "llm"
requests_per_minute = 60
time_to_first_token = "1ms"
time_per_output_token = "0s"

[[configs]]
name = "naive"
preset = "naive"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#;

fn check_throttled(run: &RunResult) {
    for c in &run.configs {
        let p = &c.providers[0];
        assert_eq!(p.arrivals, c.attempts, "{}", c.name);
        assert_eq!(p.served + p.throttled, p.arrivals, "{}", c.name);
        assert_eq!(
            c.attempts_by_outcome.get("throttle").copied().unwrap_or(0),
            p.throttled,
            "{}: the client saw every 429 the provider sent",
            c.name
        );
        assert!(p.throttled > 0 && p.served > 0, "{}: {p:?}", c.name);
        assert_eq!(p.tokens_served, p.served * 1200, "{}", c.name);
    }
}

#[test]
fn provider_counts_equal_client_counts_under_throttling_in_both_engines() {
    let p = plan_of(THROTTLED);
    check_throttled(&sim::run(&p, &SimOptions::default()).unwrap().result);
    check_throttled(&support::run_live(&p, false).result);
}
