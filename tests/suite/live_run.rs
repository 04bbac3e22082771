//! The storm run end to end on loopback: exact counts between client and target,
//! amplification against always-failing targets, and run-to-run reproducibility.

use std::time::Duration;

use crate::support::{self, config_named, plan_of};
use stormrig::live;
use stormrig::plan::Plan;
use stormrig::scenario::{self, Fault, FaultKind, LoadShape};

fn run(plan: &Plan, attempt_log: bool) -> live::LiveOutput {
    support::run_live(plan, attempt_log)
}

const MIXED: &str = r#"
name = "mixed"
seed = 7
duration = "3s"
drain = "5s"

[load]
kind = "poisson"
rate = 300

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "500ms"
for = "1500ms"
probability = 0.6

[[faults]]
kind = "reset"
at = "1s"
for = "1s"
probability = 0.3

[[configs]]
preset = "no-retry"

[[configs]]
preset = "naive"

[[configs]]
preset = "aws-standard"

[[configs]]
preset = "grpc"

[[configs]]
preset = "envoy"
"#;

/// For every config the client's attempts equal the target's own arrival count exactly,
/// and upstream requests equal the scheduled arrivals minus the counted drops.
#[test]
fn client_attempts_equal_target_arrivals_for_every_config() {
    let plan = plan_of(MIXED);
    let scheduled = scenario::arrivals(
        &plan.scenario.load.shape,
        plan.scenario.duration,
        plan.scenario.seed,
    )
    .count() as u64;
    let out = run(&plan, true);
    let r = &out.result;
    assert!(!r.partial);
    assert_eq!(r.configs.len(), 5);
    for c in &r.configs {
        assert_eq!(
            c.attempts, c.downstream_arrivals,
            "{}: client attempts vs target arrivals",
            c.name
        );
        assert_eq!(c.upstream_requests + c.dropped, scheduled, "{}", c.name);
        assert_eq!(c.successes + c.failures + c.unfinished, c.upstream_requests);
        assert_eq!(c.attempts, c.upstream_requests + c.retries, "{}", c.name);
        // The attempt log holds exactly one row per attempt sent (plus refusals).
        let logged = out
            .attempts
            .iter()
            .filter(|a| a.config == c.name && a.outcome != "refused")
            .count() as u64;
        assert_eq!(logged, c.attempts, "{}: attempt log rows", c.name);
    }
    // The storm happened: retrying configs sent more than they were asked to.
    assert!(config_named(&r.configs, "naive").retries > 0);
    assert_eq!(config_named(&r.configs, "no-retry").retries, 0);
}

const ALWAYS_503: &str = r#"
name = "always-503"
seed = 3
duration = "2s"

[load]
kind = "constant"
rate = 100

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"

[[configs]]
preset = "naive"

[[configs]]
name = "naive-6"
preset = "naive"
max_attempts = 6

[[configs]]
preset = "aws-standard"
backoff = { kind = "constant", delay = "0ms" }

[[configs]]
name = "ratio-10"
preset = "naive"
budget = { kind = "ratio", ratio = 0.1, ttl = "1s", min_per_sec = 1 }
"#;

/// Against a target that fails everything, a budget-less config multiplies load by exactly
/// its attempt limit; budgeted ones stay within their bound.
#[test]
fn always_failing_target_amplifies_to_max_attempts_or_the_budget_bound() {
    let mut plan = plan_of(ALWAYS_503);
    // Keep failing past the end of the load, so retries of the last arrivals fail too.
    plan.scenario.faults[0].length = Duration::from_secs(60);
    let out = run(&plan, false);
    let r = &out.result;
    let naive = config_named(&r.configs, "naive");
    assert_eq!(naive.upstream_requests, 200);
    assert_eq!(naive.downstream_arrivals, 4 * naive.upstream_requests);
    assert_eq!(naive.amplification, 4.0);
    let six = config_named(&r.configs, "naive-6");
    assert_eq!(six.downstream_arrivals, 6 * six.upstream_requests);
    for name in ["aws-standard", "ratio-10"] {
        let c = config_named(&r.configs, name);
        let bound = c.amplification_bound.unwrap();
        assert!(
            c.amplification <= bound,
            "{name}: {} > bound {bound}",
            c.amplification
        );
        assert!(c.budget_refusals > 0, "{name}: the budget never refused");
        assert!(c.first_budget_refusal_s.is_some());
    }
    // aws-standard: 500 tokens at 14 per retry allow exactly 35 retries, then nothing
    // refills them (no request ever succeeds on its first try).
    assert_eq!(config_named(&r.configs, "aws-standard").retries, 35);
}

/// Same seed and scenario → the same arrival schedule and fault decisions: counts equal run
/// to run. Fault draws are a hash of (seed, request, attempt), so they do not depend on
/// timing; what real sockets cannot fix is which side of a window edge an attempt lands
/// on, or the order in which concurrent outcomes reach a shared budget. So the windows here
/// span the whole run and the configs have no budget.
#[test]
fn same_seed_gives_same_counts() {
    let text = MIXED.replace(
        "[[configs]]\npreset = \"aws-standard\"\n\n[[configs]]\npreset = \"grpc\"\n\n[[configs]]\npreset = \"envoy\"\n",
        "",
    );
    let mut plan = plan_of(&text);
    assert_eq!(plan.configs.len(), 2);
    for f in &mut plan.scenario.faults {
        f.at = Duration::ZERO;
        f.length = Duration::from_secs(60);
    }
    let a = run(&plan, false).result;
    let b = run(&plan, false).result;
    for (x, y) in a.configs.iter().zip(&b.configs) {
        assert_eq!(x.upstream_requests, y.upstream_requests);
        assert_eq!(x.attempts, y.attempts, "{}", x.name);
        assert_eq!(x.downstream_arrivals, y.downstream_arrivals);
        assert_eq!(x.successes, y.successes);
        assert_eq!(x.failures_by_reason, y.failures_by_reason);
    }
}

/// 300 ms added to every request that arrives in the first 2 s.
fn slow_first_two_seconds() -> Fault {
    Fault {
        at: Duration::ZERO,
        length: Duration::from_secs(2),
        path: None,
        probability: 1.0,
        kind: FaultKind::Latency {
            add: scenario::Dist::Constant {
                value: Duration::from_millis(300),
            },
        },
    }
}

/// A per-config in-flight cap drops arrivals explicitly instead of slowing down.
#[test]
fn in_flight_cap_counts_drops() {
    let mut plan = plan_of(ALWAYS_503);
    plan.configs.truncate(1);
    plan.scenario.load.max_in_flight = 5;
    plan.scenario.faults = vec![slow_first_two_seconds()];
    assert!(matches!(
        plan.scenario.load.shape,
        LoadShape::Constant { .. }
    ));
    let r = run(&plan, false).result;
    let c = &r.configs[0];
    assert!(c.dropped > 0, "the cap never dropped anything");
    assert_eq!(c.upstream_requests + c.dropped, 200);
    assert!(c.client_peak_in_flight <= 5);
    assert_eq!(c.attempts, c.downstream_arrivals);
}

/// A bounded client pool holds the target's concurrency to the bound: with 300 ms of added
/// latency for the first 2 s at 100 req/s (about 30 requests in flight unbounded), the
/// target never sees more than 3 at once, requests queue in the client instead (their
/// latency counts from the intended start), and counts stay exact.
#[test]
fn bounded_connection_pool_caps_target_concurrency() {
    let mut plan = plan_of(ALWAYS_503);
    plan.configs.truncate(1);
    plan.scenario.load.max_connections = Some(3);
    plan.scenario.faults = vec![slow_first_two_seconds()];
    plan.scenario.drain = Duration::from_secs(30);
    let r = run(&plan, false).result;
    let c = &r.configs[0];
    assert_eq!(c.upstream_requests, 200);
    assert_eq!(c.attempts, c.downstream_arrivals);
    assert!(
        (1..=3).contains(&c.peak_concurrency),
        "target saw {} at once",
        c.peak_concurrency
    );
    // The requests the pool held back were in flight at the client, waiting.
    assert!(c.client_peak_in_flight > 3, "{}", c.client_peak_in_flight);
}

/// A real target that refuses connections: the fault proxy answers 502 and says the request
/// never reached the server, so a config that keeps POST retries to never-sent requests
/// still retries, and counts stay exact at the proxy.
#[test]
fn refused_real_target_is_a_failed_connect_even_for_post() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        r#"
name = "refused"
duration = "1s"

[load]
kind = "constant"
rate = 20
method = "POST"

[target]
url = "http://127.0.0.1:{port}"

[[configs]]
name = "post-safe"
preset = "naive"
max_attempts = 3
retry_non_idempotent = false
"#
    );
    let plan = plan_of(&text);
    let out = run(&plan, true);
    let c = &out.result.configs[0];
    assert_eq!(c.upstream_requests, 20);
    assert_eq!(
        c.attempts, 60,
        "every POST retried: it never reached the server"
    );
    assert_eq!(c.downstream_arrivals, 0, "none reached the server");
    assert_eq!(
        c.target_unreached, 60,
        "every attempt answered by the proxy itself"
    );
    assert_eq!(c.failures_by_reason.get("max-attempts"), Some(&20));
    assert_eq!(c.duplicate_executions, 0);
    assert!(out.attempts.iter().all(|a| a.outcome == "transient"));
}
