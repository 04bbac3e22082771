//! Every run answers "at what failure rate does this budget drain, and did it?": thresholds
//! from the policy core's closed form beside the observed first-attempt failure rate of each
//! fault window; and every retry is either useful (its request then succeeded) or wasted.

use std::path::PathBuf;

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::plan;
use stormrig::sim::{self, SimError, SimOptions};

fn simulate(file: &str) -> Result<RunResult, SimError> {
    let p = plan::load(&crate::support::repo_root().join("scenarios").join(file))
        .unwrap_or_else(|e| panic!("{e}"));
    sim::run(&p, &SimOptions::default()).map(|o| o.result)
}

fn config<'a>(r: &'a RunResult, name: &str) -> &'a ConfigSummary {
    r.configs.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn failure_steps_thresholds_predict_every_drain() {
    let run = simulate("failure-steps.toml").unwrap();
    let threshold = |name: &str| {
        config(&run, name)
            .budget
            .as_ref()
            .and_then(|b| b.thresholds.transient)
            .unwrap_or_else(|| panic!("{name} has a transient threshold"))
    };
    assert!((threshold("aws-standard") - 0.2149).abs() < 0.001);
    assert!((threshold("aws-standard-classic") - 0.3207).abs() < 0.001);
    assert!((threshold("grpc") - 0.0909).abs() < 0.001);
    // finagle never retries a 503: no transient threshold, and the reason says so.
    let finagle = config(&run, "finagle").budget.as_ref().unwrap();
    assert_eq!(finagle.thresholds.transient, None);
    assert!(finagle.no_threshold_reasons["transient"].contains("never retries"));

    let mut drained = 0;
    for c in &run.configs {
        let b = c.budget.as_ref().unwrap();
        assert_eq!(b.windows.len(), 4, "{}", c.name);
        for w in &b.windows {
            assert_eq!(
                w.drain_predicted, w.drain_observed,
                "{} in {}-{} s: predicted {} observed {}",
                c.name, w.start_s, w.end_s, w.drain_predicted, w.drain_observed
            );
            drained += w.drain_observed as usize;
        }
    }
    // Not a vacuous agreement: aws-standard drains in 2 windows, classic in 1, grpc in 4.
    assert_eq!(drained, 7);
    // The observed first-attempt rates follow the scenario's steps.
    let aws = config(&run, "aws-standard");
    for (w, p) in aws.fault_windows.iter().zip([0.1, 0.2, 0.3, 0.4]) {
        assert!((w.failure_rate.transient - p).abs() < 0.03, "{w:?}");
        assert_eq!(w.first_attempts, 2000);
    }
    // aws-standard first refuses in the 30 % window, after its level started to fall.
    let b = aws.budget.as_ref().unwrap();
    let refusal = b.first_refusal_s.unwrap();
    assert!((25.0..35.0).contains(&refusal), "{refusal}");
    assert!(b.drain_start_s.unwrap() <= refusal);
    assert_eq!(b.lowest_level_pct, Some(0.0));
}

#[test]
fn useful_and_wasted_retries_add_up_in_every_shipped_scenario() {
    let mut checked = 0;
    for path in crate::support::shipped_scenarios() {
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        let run = match simulate(&file) {
            Ok(r) => r,
            Err(SimError::Unsupported(_)) => continue,
            Err(e) => panic!("{file}: {e}"),
        };
        for c in &run.configs {
            assert_eq!(c.unfinished, 0, "{file} {}", c.name);
            assert_eq!(
                c.useful_retries + c.wasted_retries,
                c.retries,
                "{file} {}",
                c.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} configs");
}

#[test]
fn naive_wastes_every_retry_of_the_outage() {
    let run = simulate("downstream-503-10s.toml").unwrap();
    let naive = config(&run, "naive");
    let outage = &run.faults[0];
    let in_outage: u64 = run
        .timeseries
        .iter()
        .filter(|r| r.config == "naive")
        .filter(|r| (r.second as f64) >= outage.start_s && (r.second as f64) < outage.end_s)
        .map(|r| r.retries)
        .sum();
    assert!(in_outage > 0);
    assert_eq!(naive.wasted_retries, in_outage);
    assert_eq!(naive.useful_retries, naive.retries - in_outage);
}

/// The shipped gRPC storm with one more config that retries gRPC statuses only (no HTTP
/// status, no transport outcome): its drain threshold must come from UNAVAILABLE and
/// RESOURCE_EXHAUSTED, the statuses gRPC's `retryableStatusCodes` name.
fn grpc_storm_with_grpc_only_config() -> PathBuf {
    let shipped = std::fs::read_to_string(
        crate::support::repo_root().join("scenarios/grpc-unavailable-storm.toml"),
    )
    .unwrap()
        + r#"
[[configs]]
name = "grpc-only"
preset = "grpc"
retry_on = { grpc_statuses = ["unavailable"], grpc_throttling_statuses = ["resource-exhausted"] }
"#;
    let dir = std::env::temp_dir().join(format!("stormrig-drain-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("grpc-storm.toml");
    std::fs::write(&p, shipped).unwrap();
    p
}

#[test]
fn the_grpc_storm_predicts_the_drain_it_observes() {
    let p = plan::load(&grpc_storm_with_grpc_only_config()).unwrap_or_else(|e| panic!("{e}"));
    let run = sim::run(&p, &SimOptions::default()).unwrap().result;
    for name in ["grpc", "grpc-only"] {
        let c = config(&run, name);
        let b = c.budget.as_ref().unwrap();
        // retryThrottling 10 / 0.1: r / (1 + r) for every class the config retries.
        assert_eq!(b.thresholds.transient, Some(0.0909), "{name}: {b:?}");
        assert_eq!(b.thresholds.throttling, Some(0.0909), "{name}: {b:?}");
        assert!(c.budget_refusals > 0, "{name} had refusals");
        assert_eq!(b.windows.len(), 1, "{name}");
        let w = &b.windows[0];
        assert!(w.drain_observed, "{name}: {w:?}");
        assert_eq!(w.drain_predicted, w.drain_observed, "{name}: {w:?}");
        assert_eq!(w.exceeded_thresholds, ["transient"], "{name}");
    }
    // Envoy's limit on concurrent retries has no balance: no threshold, and the reason says
    // why, not that UNAVAILABLE is never retried.
    let envoy = config(&run, "envoy-unavailable").budget.as_ref().unwrap();
    assert_eq!(envoy.thresholds.transient, None);
    assert!(
        envoy.no_threshold_reasons["transient"].contains("concurrent retries"),
        "{envoy:?}"
    );
}
