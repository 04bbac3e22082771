//! Multi-hop topologies in the simulator: the shipped layered scenarios counted exactly
//! (64×, the per-hop ratio-budget allowance, the propagated deadline), the same bytes for
//! the same seed, and shapes and cancellation that must come out equal in both engines;
//! then the walk over every shipped scenario, the target's dedup, `url` targets with a
//! declared model, and `sim --duration`.

use std::path::Path;

use stormrig::metrics::ConfigSummary;
use stormrig::plan::{self, Plan};
use stormrig::scenario::Target;
use stormrig::sim::{self, SimError, SimOptions, SimOutput};

use super::topology_live::{plan_of, print, run};
use crate::support::{self, always_503, hop_counts as counts, layer, ratio_hop_max, slow_600ms};

fn shipped(name: &str) -> Plan {
    let path = support::repo_root().join(format!("scenarios/{name}.toml"));
    plan::load(Path::new(&path)).unwrap_or_else(|e| panic!("{e}"))
}

fn simulate(p: &Plan) -> SimOutput {
    sim::run(p, &SimOptions::default()).expect("the simulator models it")
}

#[test]
fn three_retrying_hops_give_64x_exactly() {
    let out = simulate(&shipped("layers-3x3-no-budget"));
    let c = support::config_named(&out.result.configs, "naive");
    print(c);
    let u = c.upstream_requests;
    assert!(u >= 10, "enough upstream requests: {u}");
    assert_eq!(c.unfinished, 0);
    assert_eq!(c.failures, u, "the target fails everything");
    assert_eq!(c.downstream_arrivals, 64 * u);
    assert_eq!(c.amplification, 64.0);
    assert_eq!(c.topology_bound, Some(64.0));
    assert_eq!(c.amplification_bound, Some(64.0));
    let names: Vec<_> = c.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["client", "edge", "backend"]);
    assert_eq!(counts(&c.layers[0]), (u, 4 * u, 3 * u));
    assert_eq!(counts(&c.layers[1]), (4 * u, 16 * u, 12 * u));
    assert_eq!(counts(&c.layers[2]), (16 * u, 64 * u, 48 * u));
    let n = support::config_named(&out.result.configs, "no-retry");
    assert_eq!(n.upstream_requests, u, "same schedule for both configs");
    assert_eq!(n.downstream_arrivals, 16 * u, "the layers alone");
    assert_eq!(counts(&n.layers[0]), (u, u, 0));
    // Every output of a layered run: summary.json, the console table, the HTML report.
    let json = serde_json::to_value(&out.result).unwrap();
    assert_eq!(json["engine"], "sim");
    assert_eq!(json["configs"][0]["layers"][2]["attempts"], 64 * u);
    assert_eq!(json["configs"][0]["topology_bound"], 64.0);
    let text = stormrig::report::text::summary(&out.result);
    assert!(text.contains("worst case (K+1)^L 64.00×"), "{text}");
    let page = stormrig::report::html::render(&out.result, None).unwrap();
    assert!(page.contains("<section id=\"layers\">"));
    assert!(page.contains("<td>backend</td>"));
}

#[test]
fn ratio_budget_hops_send_exactly_their_allowance() {
    let out = simulate(&shipped("layers-3x3-ratio-budget"));
    let c = &out.result.configs[0];
    print(c);
    let u = c.upstream_requests;
    assert_eq!(c.layers[0].arrivals, u);
    for (i, l) in c.layers.iter().enumerate() {
        if i > 0 {
            assert_eq!(l.arrivals, c.layers[i - 1].attempts, "{} arrivals", l.name);
        }
        // Every failure comes back at once, so each hop spends its whole allowance.
        assert_eq!(l.attempts, ratio_hop_max(l.arrivals), "{}", l.name);
        assert!(l.budget_refusals > 0, "{}: the budget refused", l.name);
    }
    assert_eq!(c.downstream_arrivals, c.layers[2].attempts);
    assert!(c.amplification <= c.amplification_bound.unwrap());
}

#[test]
fn a_propagated_deadline_stops_the_deepest_layer_with_the_live_counts() {
    let out = simulate(&shipped("layers-deepest-only-deadline"));
    let c = &out.result.configs[0];
    print(c);
    let u = c.upstream_requests;
    assert!(u >= 10);
    // ⌈1000 ms / 400 ms⌉ = 3 attempts at the deepest layer, the third cut to what is left.
    assert_eq!(counts(&c.layers[0]), (u, u, 0));
    assert_eq!(counts(&c.layers[1]), (u, u, 0), "pass-through");
    assert_eq!(counts(&c.layers[2]), (u, 3 * u, 2 * u));
    assert_eq!(c.downstream_arrivals, 3 * u);
    assert_eq!(c.failures, u);
    let cut: Vec<u64> = out.hops[0].iter().map(|h| h.deadline_cut).collect();
    assert_eq!(
        cut,
        [0, 0, u],
        "exactly the third attempt per request was cut"
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    for name in ["layers-3x3-ratio-budget", "layers-deepest-only-deadline"] {
        let p = shipped(name);
        let a = serde_json::to_string(&simulate(&p).result).unwrap();
        let b = serde_json::to_string(&simulate(&p).result).unwrap();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn a_layer_at_its_concurrency_limit_answers_503_at_once() {
    // One slow pass-through layer that takes one request at a time; the client does not
    // retry, so every arrival beyond the one in service is rejected, never forwarded.
    let text = always_503(
        "topo-limit",
        40.0,
        "\n[[topology]]\nname = \"slow\"\nconcurrency = 1\n\
         service_time = { kind = \"constant\", value = \"1s\" }\n\
         \n[[configs]]\npreset = \"no-retry\"\n",
    );
    let out = simulate(&plan_of(&text));
    let c = &out.result.configs[0];
    print(c);
    let rejected = out.hops[0][1].rejected;
    assert!(rejected > 0, "the limit rejected some");
    assert_eq!(c.layers[1].arrivals, c.upstream_requests);
    assert_eq!(c.downstream_arrivals, c.upstream_requests - rejected);
}

/// Upstream requests, target arrivals and every hop's counts.
fn figures(c: &ConfigSummary) -> (u64, u64, Vec<(u64, u64, u64)>) {
    let hops = c.layers.iter().map(counts).collect();
    (c.upstream_requests, c.downstream_arrivals, hops)
}

/// Runs `text` in both engines and asserts their counts are identical; returns them.
async fn both_engines(text: &str) -> (u64, u64, Vec<(u64, u64, u64)>) {
    let simulated = simulate(&plan_of(text));
    let live = run(text).await;
    let (s, l) = (&simulated.result.configs[0], &live.result.configs[0]);
    print(s);
    print(l);
    assert_eq!(figures(s), figures(l), "simulator and live engine differ");
    figures(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hops_of_one_retry_behind_a_retrying_client_give_32x_in_both_engines() {
    let two = r#"{ preset = "naive", max_attempts = 2 }"#;
    let hops: String = ["a", "b", "c", "d"].iter().map(|n| layer(n, two)).collect();
    let text = always_503(
        "topo-32",
        40.0,
        &format!("{hops}\n[[configs]]\npreset = \"naive\"\nmax_attempts = 2\n"),
    );
    let (u, d, hops) = both_engines(&text).await;
    assert!(u >= 15);
    assert_eq!(d, 32 * u);
    assert_eq!(hops[4], (16 * u, 32 * u, 16 * u));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hops_of_four_retries_behind_a_four_retry_client_give_125x_in_both_engines() {
    let five = r#"{ preset = "naive", max_attempts = 5 }"#;
    let text = always_503(
        "topo-125",
        40.0,
        &format!(
            "{}{}\n[[configs]]\npreset = \"naive\"\nmax_attempts = 5\n",
            layer("edge", five),
            layer("backend", five)
        ),
    );
    let (u, d, hops) = both_engines(&text).await;
    assert!(u >= 15);
    assert_eq!(d, 125 * u);
    assert_eq!(hops[2], (25 * u, 125 * u, 100 * u));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_cancels_the_layers_retries_in_both_engines() {
    // No deadline travels down: the client gives up after 1 s on its own, the layer retries
    // every 400 ms against a 600 ms target. Its attempts start at 0, 400 and 800 ms; at
    // 1000 ms the client closes its connection and the layer drops the request, so the
    // fourth attempt (due at 1200 ms) is never sent: 3 per request, not 4.
    let deep = layer("deep", r#"{ preset = "naive", per_try_timeout = "400ms" }"#);
    let text = slow_600ms(
        "topo-cancel",
        "",
        &(deep
            + r#"
[[configs]]
name = "client"
preset = "no-retry"
per_try_timeout = "1s"
"#),
    );
    let (u, d, hops) = both_engines(&text).await;
    assert!(u >= 8);
    assert_eq!(hops[1], (u, 3 * u, 2 * u));
    assert_eq!(d, 3 * u);
}

/// `stormrig sim` exits 0 on every shipped scenario: layered ones, dedup on the target and
/// everything else the simulator models.
#[test]
fn the_simulator_runs_every_shipped_scenario() {
    let dir = support::process::tmp_dir("sim-walk");
    for scenario in support::shipped_scenarios() {
        let out = dir.join(scenario.file_stem().unwrap());
        support::process::succeed(
            support::process::bin()
                .args(["sim", "-q", "--out"])
                .arg(&out)
                .arg(&scenario),
        );
        assert!(out.join("summary.json").exists(), "{}", scenario.display());
    }
}

#[test]
fn the_target_deduplicates_keyed_writes_as_live() {
    let out = simulate(&shipped("payments-lost-responses"));
    let configs = &out.result.configs;
    let no_key = support::config_named(configs, "naive-no-key");
    let keyed = support::config_named(configs, "naive-with-key");
    print(no_key);
    print(keyed);
    // The same attempts reach the target; with a key, every retry of a lost response is
    // answered from the store instead of debiting again.
    assert_eq!(keyed.downstream_arrivals, no_key.downstream_arrivals);
    assert!(no_key.idempotency.extra_executions > 0);
    assert_eq!(no_key.idempotency.dedup_replays, 0);
    assert_eq!(keyed.idempotency.extra_executions, 0);
    assert_eq!(keyed.idempotency.executions, keyed.upstream_requests);
    assert_eq!(
        keyed.idempotency.dedup_replays, keyed.retries,
        "every retry replays"
    );
    // What one execution debits comes from the scenario's x-stormrig-amount header.
    assert_eq!(
        keyed.idempotency.debited,
        100 * keyed.idempotency.executions
    );
}

fn url_scenario(target: &str) -> String {
    format!(
        r#"
name = "url-model"
duration = "2s"

[load]
kind = "constant"
rate = 50.0

[target]
{target}

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "1s"

[[configs]]
preset = "naive"
"#
    )
}

#[test]
fn a_url_target_simulates_with_a_declared_model_and_is_refused_without_one() {
    let url = r#"url = "http://127.0.0.1:9""#;
    let with = plan_of(&url_scenario(&format!(
        "{url}\nmodel = \"default\"\nservice = {{ concurrency = 7 }}"
    )));
    let Target::Url { model: Some(m), .. } = &with.scenario.target else {
        panic!("the model is resolved");
    };
    assert_eq!(m.concurrency, 7, "service overlays the named model");
    let c = &simulate(&with).result.configs[0];
    assert_eq!(c.downstream_arrivals, c.attempts);
    assert!(c.successes > 0);
    // The same storm against the built-in target with the same model: the same figures.
    let builtin = plan_of(&url_scenario(
        "builtin = \"default\"\nservice = { concurrency = 7 }",
    ));
    let b = &simulate(&builtin).result.configs[0];
    assert_eq!(
        (c.attempts, c.successes, c.downstream_arrivals),
        (b.attempts, b.successes, b.downstream_arrivals)
    );

    let without = plan_of(&url_scenario(url));
    let e = sim::run(&without, &SimOptions::default()).unwrap_err();
    assert!(matches!(e, SimError::Unsupported(_)));
    assert!(e.to_string().contains("model = \"default\""), "{e}");
}

#[test]
fn a_model_beside_a_builtin_target_is_refused_with_its_field() {
    let path = support::repo_root().join("scenarios/url-model.toml");
    let text = url_scenario("builtin = \"default\"\nmodel = \"default\"");
    let e = stormrig::scenario::parse(&path, &text).unwrap_err();
    assert_eq!(e.field(), Some("target.model"), "{e}");
    let text = url_scenario("url = \"http://127.0.0.1:9\"\nservice = { concurrency = 7 }");
    let e = stormrig::scenario::parse(&path, &text).unwrap_err();
    assert_eq!(e.field(), Some("target.service"), "{e}");
    assert!(e.to_string().contains("model = \"default\""), "{e}");
}

#[test]
fn sim_takes_duration_like_run() {
    let dir = support::process::tmp_dir("sim-duration");
    support::process::succeed(
        support::process::bin()
            .args(["sim", "-q", "--duration", "2s", "--out"])
            .arg(&dir)
            .arg(support::repo_root().join("scenarios/downstream-503-10s.toml")),
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["duration_s"], 2.0);
    let o = support::process::bin()
        .args(["sim", "-q", "--duration", "soon"])
        .arg(support::repo_root().join("scenarios/downstream-503-10s.toml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--duration"));
}
