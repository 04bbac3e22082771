//! Multi-layer topologies in the live engine: real layer proxies on 127.0.0.1 between the
//! load generator and the built-in target, each retrying with its own config. Counts are
//! exact (every hop counts its own arrivals and attempts; the target counts what reached
//! it); every run is bounded to a few seconds.

use std::path::Path;
use std::time::Duration;

use stormrig::live::{self, LiveOutput, RunOptions};
use stormrig::metrics::ConfigSummary;
use stormrig::plan::{self, Plan};
use stormrig::scenario;
use tokio::sync::watch;

use crate::support::{always_503, hop_counts as counts, layer, ratio_hop_max, slow_600ms};

pub(super) fn plan_of(text: &str) -> Plan {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/topology-test.toml");
    let sc = scenario::parse(&path, text).expect("valid scenario");
    plan::build(sc, text).expect("valid configs")
}

/// The tests of this file run one at a time: they measure time-sensitive behaviour
/// (deadlines) on a shared machine.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(super) async fn run(text: &str) -> LiveOutput {
    let plan = plan_of(text);
    let _one_at_a_time = SERIAL.lock().await;
    // The sender must outlive the run: a dropped sender reads as "stop".
    let (_tx, rx) = watch::channel(false);
    tokio::time::timeout(
        Duration::from_secs(30),
        live::run(&plan, &RunOptions::default(), rx),
    )
    .await
    .expect("run bounded")
    .expect("run ok")
}

pub(super) fn print(c: &ConfigSummary) {
    eprintln!(
        "{}: U={} D={} amp={:.4} bound={:?} worst={:?}",
        c.name,
        c.upstream_requests,
        c.downstream_arrivals,
        c.amplification,
        c.amplification_bound,
        c.topology_bound
    );
    for l in &c.layers {
        eprintln!(
            "  {:<8} arrivals={:<6} attempts={:<6} retries={:<6} refused={:<5} peak={:<5} amp={:.3} cum={:.3} max={}",
            l.name,
            l.arrivals,
            l.attempts,
            l.retries,
            l.budget_refusals,
            l.peak_in_flight,
            l.amplification,
            l.cumulative_amplification,
            l.max_attempts
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_retrying_hops_of_four_attempts_give_64x_exactly() {
    let naive = r#"{ preset = "naive" }"#;
    let text = always_503(
        "topo-64",
        40.0,
        &format!(
            "{}{}\n[[configs]]\npreset = \"naive\"\n",
            layer("edge", naive),
            layer("backend", naive)
        ),
    );
    let out = run(&text).await;
    let c = &out.result.configs[0];
    print(c);
    let u = c.upstream_requests;
    assert!(u >= 15, "enough upstream requests: {u}");
    assert_eq!(c.unfinished, 0);
    assert_eq!(c.failures, u, "the target fails everything");
    assert_eq!(c.downstream_arrivals, 64 * u, "target arrivals = 64 × U");
    assert_eq!(c.amplification, 64.0);
    assert_eq!(c.topology_bound, Some(64.0));
    assert_eq!(c.amplification_bound, Some(64.0), "no budget: the cap");
    let names: Vec<_> = c.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["client", "edge", "backend"]);
    assert_eq!(counts(&c.layers[0]), (u, 4 * u, 3 * u));
    assert_eq!(counts(&c.layers[1]), (4 * u, 16 * u, 12 * u));
    assert_eq!(counts(&c.layers[2]), (16 * u, 64 * u, 48 * u));
    for (l, cum) in c.layers.iter().zip([4.0, 16.0, 64.0]) {
        assert_eq!(l.amplification, 4.0, "{}", l.name);
        assert_eq!(l.cumulative_amplification, cum, "{}", l.name);
        assert_eq!(l.max_attempts, 4);
        assert_eq!(l.budget_refusals, 0);
        assert!(l.peak_in_flight >= 1);
    }
    // Every output carries the layers: summary.json, the console table, the HTML report.
    let json = serde_json::to_value(&out.result).unwrap();
    let layers = json["configs"][0]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3);
    assert_eq!(layers[2]["attempts"], 64 * u);
    assert_eq!(json["configs"][0]["topology_bound"], 64.0);
    let text = stormrig::report::text::summary(&out.result);
    assert!(text.contains("worst case (K+1)^L 64.00×"), "{text}");
    assert!(text.contains("backend"), "{text}");
    let page = stormrig::report::html::render(&out.result, None).unwrap();
    assert!(page.contains("<section id=\"layers\">"));
    assert!(page.contains("<td>backend</td>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_retrying_hops_of_three_attempts_give_9x_exactly_and_configs_do_not_mix() {
    let three = r#"{ preset = "naive", max_attempts = 3 }"#;
    let text = always_503(
        "topo-9",
        40.0,
        &format!(
            "{}\n[[configs]]\nname = \"three\"\npreset = \"naive\"\nmax_attempts = 3\n\n[[configs]]\npreset = \"no-retry\"\n",
            layer("only", three)
        ),
    );
    let out = run(&text).await;
    let (c, n) = (&out.result.configs[0], &out.result.configs[1]);
    print(c);
    print(n);
    let u = c.upstream_requests;
    assert!(u >= 15);
    assert_eq!(n.upstream_requests, u, "same schedule for both configs");
    assert_eq!(c.downstream_arrivals, 9 * u);
    assert_eq!(c.topology_bound, Some(9.0));
    assert_eq!(counts(&c.layers[0]), (u, 3 * u, 2 * u));
    assert_eq!(counts(&c.layers[1]), (3 * u, 9 * u, 6 * u));
    // The other config has its own chain: only the layer retries.
    assert_eq!(n.downstream_arrivals, 3 * u);
    assert_eq!(n.topology_bound, Some(3.0));
    assert_eq!(counts(&n.layers[0]), (u, u, 0));
    assert_eq!(counts(&n.layers[1]), (u, 3 * u, 2 * u));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_only_at_the_deepest_layer_stay_within_k_plus_1() {
    let text = always_503(
        "topo-deepest",
        40.0,
        "\n[[topology]]\nname = \"edge\"\n\n[[topology]]\nname = \"mid\"\n\
         \n[[topology]]\nname = \"deep\"\nconfig = { preset = \"naive\" }\n\
         \n[[configs]]\npreset = \"no-retry\"\n",
    );
    let out = run(&text).await;
    let c = &out.result.configs[0];
    print(c);
    let u = c.upstream_requests;
    assert!(u >= 15);
    assert_eq!(c.topology_bound, Some(4.0), "1 × 1 × 1 × 4");
    assert!(c.amplification <= 4.0);
    assert_eq!(c.downstream_arrivals, 4 * u);
    assert_eq!(counts(&c.layers[0]), (u, u, 0));
    assert_eq!(counts(&c.layers[1]), (u, u, 0), "pass-through");
    assert_eq!(counts(&c.layers[2]), (u, u, 0), "pass-through");
    assert_eq!(counts(&c.layers[3]), (u, 4 * u, 3 * u));
    assert_eq!(c.layers[1].max_attempts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ratio_budget_at_every_hop_bounds_a_long_outage() {
    let budget = r#"budget = { kind = "ratio", ratio = 0.2, ttl = "10s", min_per_sec = 1 }"#;
    let cfg = format!(r#"{{ preset = "naive", {budget} }}"#);
    let text = always_503(
        "topo-ratio",
        800.0,
        &format!(
            "{}{}\n[[configs]]\nname = \"ratio\"\npreset = \"naive\"\n{budget}\n",
            layer("edge", &cfg),
            layer("backend", &cfg)
        ),
    );
    let out = run(&text).await;
    let c = &out.result.configs[0];
    print(c);
    let u = c.upstream_requests;
    assert!(u >= 300, "enough requests for the ratio to dominate: {u}");
    assert_eq!(c.unfinished, 0);
    // Each hop within its exact budget allowance, given what arrived at it.
    let mut expected_max = u;
    for (i, l) in c.layers.iter().enumerate() {
        if i > 0 {
            assert_eq!(l.arrivals, c.layers[i - 1].attempts, "{} arrivals", l.name);
        }
        assert!(
            l.attempts <= ratio_hop_max(l.arrivals),
            "{}: {} attempts for {} arrivals",
            l.name,
            l.attempts,
            l.arrivals
        );
        assert!(l.budget_refusals > 0, "{}: the budget refused", l.name);
        expected_max = ratio_hop_max(expected_max);
    }
    assert_eq!(c.downstream_arrivals, c.layers[2].attempts);
    // End to end: (1.2)^3 plus the reserve allowance, computed exactly for this U.
    let bound = expected_max as f64 / u as f64;
    eprintln!(
        "measured {:.4}, exact bound {bound:.4}, 1.2^3 = {:.4}, reported bound {:?}, worst {:?}",
        c.amplification,
        1.2f64.powi(3),
        c.amplification_bound,
        c.topology_bound
    );
    assert!(c.downstream_arrivals <= expected_max);
    assert!(c.amplification <= bound);
    assert!(bound < 2.0, "the ratio dominates the reserve");
    assert!(c.amplification <= c.amplification_bound.unwrap());
    assert_eq!(c.topology_bound, Some(64.0));
    assert!(c.amplification > 1.2, "the budget allowed retries at all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propagated_deadline_stops_the_deepest_layer_in_time() {
    let deep = layer("deep", r#"{ preset = "naive", per_try_timeout = "400ms" }"#);
    let text = slow_600ms(
        "topo-deadline",
        "propagate_deadline = true",
        &(r#"
[[topology]]
name = "edge"
propagate_deadline = true
"#
        .to_string()
            + &deep
            + r#"
[[configs]]
name = "client"
preset = "no-retry"
deadline = "1s"
"#),
    );
    let out = run(&text).await;
    let c = &out.result.configs[0];
    print(c);
    eprintln!("{:?}", out.hops);
    let u = c.upstream_requests;
    assert!(u >= 8);
    // ⌈1000 ms / 400 ms⌉ = 3 attempts at the deepest layer, the third cut to what is left.
    assert_eq!(counts(&c.layers[0]), (u, u, 0));
    assert_eq!(counts(&c.layers[1]), (u, u, 0));
    assert_eq!(counts(&c.layers[2]), (u, 3 * u, 2 * u));
    assert_eq!(c.downstream_arrivals, 3 * u);
    assert!(c.amplification <= 4.0);
    let cut: Vec<u64> = out.hops[0].iter().map(|h| h.deadline_cut).collect();
    assert_eq!(
        cut,
        [0, 0, u],
        "exactly the third attempt per request was cut"
    );
    assert_eq!(c.failures, u);
}
