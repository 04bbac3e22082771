//! Failover between providers: each attempt goes where the config's failover rule sends it,
//! in both engines, and each provider counts exactly the attempts the client sent it.

use std::collections::BTreeMap;

use stormrig::metrics::{AttemptRow, ConfigSummary, RunResult};
use stormrig::plan::{self, Plan};
use stormrig::sim::{self, SimOptions};

use crate::support;

/// Successes over requests that ended.
fn success_rate(c: &ConfigSummary) -> f64 {
    c.successes as f64 / (c.successes + c.failures) as f64
}

/// 40 calls/s for 1.5 s to provider `a`, which answers 503 to everything; `b` is healthy.
/// `failover` sends attempts 1 and 2 to `a`, attempt 3 on to `b`.
pub(crate) const A_DOWN: &str = r#"
name = "provider-a-down"
seed = 7
duration = "2s"
drain = "3s"

[load]
kind = "steps"
steps = [{ at = "0s", rate = 40.0 }, { at = "1500ms", rate = 0.0 }]
method = "POST"
path = "/providers/a/v1/chat/completions"

[target]
builtin = "default"

[[provider]]
name = "a"
time_to_first_token = "1ms"
time_per_output_token = "0s"

[[provider]]
name = "b"
time_to_first_token = "2ms"
time_per_output_token = "0s"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"
path = "/providers/a"

[[configs]]
name = "same-provider"
preset = "naive"

[[configs]]
name = "failover"
preset = "naive"
failover = { providers = ["a", "b"], same_provider_retries = 1 }
"#;

/// Attempts the client sent to each provider, from its attempt log and the policy's rule.
fn client_attempts_per_provider(
    plan: &Plan,
    rows: &[AttemptRow],
) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for row in rows.iter().filter(|r| r.sent_s.is_some()) {
        let cfg = &plan
            .configs
            .iter()
            .find(|c| c.name == row.config)
            .expect("a config of the plan")
            .config;
        let provider = cfg
            .failover
            .as_ref()
            .map_or("a", |f| f.provider(row.attempt));
        *out.entry((row.config.clone(), provider.to_string()))
            .or_default() += 1;
    }
    out
}

fn check_counts(plan: &Plan, run: &RunResult, rows: &[AttemptRow]) {
    let client = client_attempts_per_provider(plan, rows);
    for c in &run.configs {
        let mut sum = 0;
        for p in &c.providers {
            let sent = client
                .get(&(c.name.clone(), p.name.clone()))
                .copied()
                .unwrap_or(0);
            assert_eq!(p.arrivals, sent, "{} at provider {}", c.name, p.name);
            sum += p.arrivals;
        }
        assert_eq!(
            sum, c.attempts,
            "{}: every attempt reached one provider",
            c.name
        );
        assert_eq!(sum, c.downstream_arrivals, "{}", c.name);
    }
    let u = |name: &str| support::config_named(&run.configs, name).upstream_requests;
    let by = |cfg: &str, p: &str| {
        support::config_named(&run.configs, cfg)
            .providers
            .iter()
            .find(|s| s.name == p)
            .map_or(0, |s| s.arrivals)
    };
    // naive makes 4 attempts: all on `a` without failover; a, a, then `b` answers with it.
    assert_eq!(by("same-provider", "a"), 4 * u("same-provider"));
    assert_eq!(by("same-provider", "b"), 0);
    assert_eq!(by("failover", "a"), 2 * u("failover"));
    assert_eq!(by("failover", "b"), u("failover"));
    let f = support::config_named(&run.configs, "failover");
    assert_eq!(f.failures, 0, "b answers every third attempt");
    assert_eq!(f.successes, u("failover"));
    assert_eq!(
        support::config_named(&run.configs, "same-provider").successes,
        0
    );
}

#[test]
fn each_provider_counts_exactly_the_attempts_failover_sent_it_in_the_simulator() {
    let p = support::plan_of(A_DOWN);
    let opts = SimOptions {
        attempt_log: true,
        ..SimOptions::default()
    };
    let out = sim::run(&p, &opts).unwrap();
    check_counts(&p, &out.result, &out.attempts);
}

#[test]
fn each_provider_counts_exactly_the_attempts_failover_sent_it_live() {
    let p = support::plan_of(A_DOWN);
    let out = support::run_live(&p, true);
    check_counts(&p, &out.result, &out.attempts);
}

/// The shipped scenario: while `a` is down, failing over keeps success at 99 % or more;
/// retrying on `a` alone does not.
#[test]
fn shipped_outage_scenario_failover_keeps_success_and_same_provider_does_not() {
    let path = support::repo_root().join("scenarios/llm-provider-outage-failover.toml");
    let p = plan::load(&path).unwrap();
    let run = sim::run(&p, &SimOptions::default()).unwrap().result;
    let rate = |name: &str| success_rate(support::config_named(&run.configs, name));
    assert!(rate("failover") >= 0.99, "failover: {}", rate("failover"));
    assert!(
        rate("same-provider") < 0.99,
        "same-provider: {}",
        rate("same-provider")
    );
}

#[test]
fn failover_to_a_provider_the_scenario_lacks_is_refused_naming_the_field() {
    let text = A_DOWN.replace(r#"providers = ["a", "b"]"#, r#"providers = ["a", "c"]"#);
    let path = std::path::Path::new("tests/inline.toml");
    let sc = stormrig::scenario::parse(path, &text).unwrap();
    let e = plan::build(sc, &text).unwrap_err();
    assert_eq!(e.field, "configs[1].failover");
    assert!(e.message.contains("\"c\""), "{}", e.message);
    let line = crate::support::line_starting(&text, "failover");
    assert_eq!(e.line, line);
}

#[test]
fn failover_in_a_layer_is_refused_naming_the_field() {
    let text = format!(
        "{}{}",
        A_DOWN.replace(
            r#"failover = { providers = ["a", "b"], same_provider_retries = 1 }"#,
            ""
        ),
        support::layer(
            "gateway",
            r#"{ preset = "naive", failover = { providers = ["a", "b"] } }"#
        )
    );
    let sc = stormrig::scenario::parse(std::path::Path::new("tests/inline.toml"), &text).unwrap();
    let e = plan::build(sc, &text).unwrap_err();
    assert_eq!(e.field, "topology[0].config.failover");
    assert_eq!(e.line, text.lines().count(), "the layer's config line");
}
