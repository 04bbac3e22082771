//! Topology layers in the plan: configs resolved like the compared configs (preset, then
//! overrides), absent = pass-through, errors located at the layer's field; the shipped layer
//! scenarios plan with the bounds their headers promise.

use std::num::NonZeroU32;
use std::time::Duration;

use crate::support::repo_root;
use stormrig::plan::{self, topology_bounds};
use stormrig::scenario;

const BASE: &str = r#"
name = "t"
duration = "10s"

[load]
kind = "constant"
rate = 100.0

[target]
builtin = "default"

[[configs]]
preset = "naive"
"#;

fn build(extra: &str) -> Result<plan::Plan, plan::PlanError> {
    let text = format!("{BASE}{extra}");
    let path = repo_root().join("scenarios/t.toml");
    let sc = scenario::parse(&path, &text).expect("scenario valid");
    plan::build(sc, &text)
}

#[test]
fn layers_resolve_like_configs_and_absent_is_pass_through() {
    let p = build(
        r#"
[[topology]]
name = "edge"

[[topology]]
name = "deep"
propagate_deadline = true
concurrency = 8
config = { preset = "naive", max_attempts = 3, per_try_timeout = "400ms" }
"#,
    )
    .unwrap();
    assert_eq!(p.layers.len(), 2);
    let (edge, deep) = (&p.layers[0], &p.layers[1]);
    assert!(edge.pass_through);
    assert_eq!(edge.config.max_attempts, 1);
    assert_eq!(edge.config.name, "edge");
    assert!(!deep.pass_through);
    assert_eq!(deep.config.name, "deep", "named after the layer");
    assert_eq!(deep.config.max_attempts, 3);
    assert_eq!(
        deep.config.per_try_timeout,
        Some(Duration::from_millis(400))
    );
    assert!(deep.propagate_deadline);
    assert_eq!(deep.concurrency, Some(8));
    let (budget, worst) = topology_bounds(
        &p.configs[0].config,
        NonZeroU32::MIN,
        p.layers.iter().map(|l| &l.config),
        100.0,
        Duration::from_secs(10),
    );
    assert_eq!(worst, 12.0);
    assert_eq!(budget, 12.0);
}

#[test]
fn a_bad_layer_config_is_located_at_its_field() {
    let e = build(
        r#"
[[topology]]
name = "edge"
config = { preset = "navie" }
"#,
    )
    .unwrap_err();
    assert_eq!(e.field, "topology[0].config.preset", "{e}");
    let e = build(
        r#"
[[topology]]
name = "edge"

[[topology]]
name = "deep"
config = { preset = "naive", max_attempts = 0 }
"#,
    )
    .unwrap_err();
    assert!(e.field.starts_with("topology[1].config"), "{e}");
    assert!(e.line > 1, "{e}");
}

#[test]
fn ratio_budget_bound_multiplies_per_hop() {
    let b = r#"budget = { kind = "ratio", ratio = 0.2, ttl = "10s", min_per_sec = 1 }"#;
    let p = build(&format!(
        "\n[[topology]]\nname = \"a\"\nconfig = {{ preset = \"naive\", {b} }}\n\
         \n[[topology]]\nname = \"b\"\nconfig = {{ preset = \"naive\", {b} }}\n"
    ))
    .unwrap();
    let mut gen = p.configs[0].config.clone();
    gen.budget = p.layers[0].config.budget.clone();
    let (rate, d) = (1000.0, Duration::from_secs(100));
    let (budget, worst) = topology_bounds(
        &gen,
        NonZeroU32::MIN,
        p.layers.iter().map(|l| &l.config),
        rate,
        d,
    );
    assert_eq!(worst, 64.0);
    // Per hop 1 + 0.2 + min_per_sec × (duration + ttl) / requests at that hop.
    let mut expect = 1.0;
    let mut r = rate;
    for _ in 0..3 {
        let hop = 1.2 + 110.0 / (r * 100.0);
        expect *= hop;
        r *= hop;
    }
    assert!((budget - expect).abs() < 1e-12, "{budget} vs {expect}");
    assert!(budget > 1.2f64.powi(3) && budget < 1.2f64.powi(3) + 0.01);
}

#[test]
fn shipped_layer_scenarios_plan_with_their_bounds() {
    let cases = [
        ("layers-3x3-no-budget", 64.0, 2),
        ("layers-3x3-ratio-budget", 64.0, 2),
        ("layers-deepest-only-deadline", 4.0, 2),
    ];
    for (name, worst, n) in cases {
        let p = plan::load(&repo_root().join(format!("scenarios/{name}.toml"))).unwrap();
        assert_eq!(p.layers.len(), n, "{name}");
        let (_, w) = topology_bounds(
            &p.configs[0].config,
            NonZeroU32::MIN,
            p.layers.iter().map(|l| &l.config),
            10.0,
            p.scenario.duration,
        );
        assert_eq!(w, worst, "{name}");
        if name.ends_with("deadline") {
            assert!(p.scenario.load.propagate_deadline);
            assert!(p.layers[0].pass_through && p.layers[0].propagate_deadline);
        }
    }
}
