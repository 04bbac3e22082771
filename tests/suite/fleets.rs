//! Client fleets (`[load] clients = N`): each instance drains its own budget, in both engines.

use stormrig::sim::{self, SimOptions};

use super::topology_live::{plan_of, run};
use crate::support::config_named;

/// 400 requests in the first half second against a target that fails everything; the
/// aws-standard quota never refills (nothing succeeds) and retries do not wait.
fn always_failing(clients: u32) -> String {
    format!(
        r#"
name = "fleet"
duration = "60s"
drain = "10s"

[load]
kind = "steps"
steps = [{{ at = "0s", rate = 800.0 }}, {{ at = "500ms", rate = 0.0 }}]
clients = {clients}

[target]
builtin = "default"
service = {{ concurrency = 10000, queue = 10000 }}

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "60s"

[[configs]]
preset = "aws-standard"
backoff = {{ kind = "constant", delay = "0ms" }}
"#
    )
}

/// 500 tokens at 14 per retry: 35 retries per instance before its quota is empty.
const PER_INSTANCE: u64 = 500 / 14;

fn sim_retries(clients: u32) -> (u64, u64, u64) {
    let out = sim::run(&plan_of(&always_failing(clients)), &SimOptions::default()).unwrap();
    let c = config_named(&out.result.configs, "aws-standard");
    assert_eq!(c.upstream_requests, 400);
    assert_eq!(c.downstream_arrivals, c.upstream_requests + c.retries);
    (c.retries, c.budget_refusals, c.downstream_arrivals)
}

#[test]
fn ten_simulated_clients_drain_ten_quotas() {
    let (retries, refusals, _) = sim_retries(10);
    assert_eq!(retries, 10 * PER_INSTANCE);
    assert!(refusals > 0, "every quota ran dry");
    let (one, _, _) = sim_retries(1);
    assert_eq!(one, PER_INSTANCE, "one client, one quota");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_live_clients_drain_ten_quotas() {
    let out = run(&always_failing(10)).await;
    let c = config_named(&out.result.configs, "aws-standard");
    assert_eq!(c.upstream_requests, 400);
    assert_eq!(c.retries, 10 * PER_INSTANCE);
    assert!(c.budget_refusals > 0);
    assert_eq!(c.downstream_arrivals, c.upstream_requests + c.retries);
}

#[test]
fn a_fleet_of_zero_is_refused_with_its_field() {
    let text = always_failing(0);
    let err = stormrig::scenario::parse(std::path::Path::new("fleet.toml"), &text).unwrap_err();
    assert_eq!(err.field(), Some("load.clients"));
    assert_eq!(err.line(), Some(9), "the line of `clients = 0`");
}

/// A ratio budget's reserve is per instance: ten instances retry more than one before all
/// their budgets refuse, and the bound the summary states counts ten reserves.
#[test]
fn a_fleet_has_one_ratio_reserve_per_instance_and_its_bound_says_so() {
    let ratio = "\n[[configs]]\nname = \"ratio-10\"\npreset = \"naive\"\nbudget = { kind = \"ratio\", ratio = 0.1, ttl = \"1s\", min_per_sec = 1 }\n";
    let summary = |clients: u32| {
        let plan = plan_of(&format!("{}{ratio}", always_failing(clients)));
        let out = sim::run(&plan, &SimOptions::default()).unwrap();
        let c = config_named(&out.result.configs, "ratio-10").clone();
        let rate = 400.0 / plan.scenario.duration.as_secs_f64();
        let bound = stormrig::plan::fleet_bound(
            &plan.configs[1].config,
            plan.scenario.load.clients,
            rate,
            plan.scenario.duration,
        );
        assert_eq!(c.amplification_bound, Some(bound));
        assert!(c.amplification <= bound, "{} > {bound}", c.amplification);
        c
    };
    let (one, ten) = (summary(1), summary(10));
    assert!(
        ten.retries > one.retries,
        "{} vs {}",
        ten.retries,
        one.retries
    );
    assert!(ten.amplification_bound > one.amplification_bound);
}

/// The shipped jitter lab: 1,000 clients failing together retry in one 1 s slot without
/// jitter, and spread over the 8 s window with full jitter (1,000 / 8 = 125 a slot on
/// average, so the busiest slot holds at least that).
#[test]
fn the_thousand_clients_lab_spreads_its_retries_with_jitter() {
    let path = crate::support::repo_root().join("scenarios/thousand-clients.toml");
    let plan = stormrig::plan::load(&path).unwrap();
    let out = sim::run(&plan, &SimOptions::default()).unwrap();
    let none = config_named(&out.result.configs, "no-jitter");
    let full = config_named(&out.result.configs, "full-jitter");
    for c in [none, full] {
        assert_eq!((c.upstream_requests, c.retries), (1000, 1000), "{}", c.name);
    }
    assert_eq!(none.peak_retries_per_s, 1000);
    assert!(
        (125..=200).contains(&full.peak_retries_per_s),
        "{}",
        full.peak_retries_per_s
    );
}

/// A burst is one request per client at t = 0, each client then on its own budget, live as
/// in the simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_burst_sends_one_request_per_client_at_once() {
    let text = always_failing(40).replace(
        "kind = \"steps\"\nsteps = [{ at = \"0s\", rate = 800.0 }, { at = \"500ms\", rate = 0.0 }]\n",
        "kind = \"burst\"\n",
    );
    let sim = sim::run(&plan_of(&text), &SimOptions::default()).unwrap();
    let live = run(&text).await;
    for r in [&sim.result, &live.result] {
        let c = config_named(&r.configs, "aws-standard");
        assert_eq!(c.upstream_requests, 40);
        // Two retries each: 40 quotas of 500 are far from empty.
        assert_eq!((c.retries, c.downstream_arrivals), (80, 120));
        assert_eq!(c.budget_refusals, 0);
    }
}
