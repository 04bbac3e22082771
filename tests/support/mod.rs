//! Helpers shared by the integration tests: where the repository is, the shipped scenarios,
//! a config of a run by name, and fixtures for tests that build run results by hand (gates,
//! JUnit, diff): a plausible config summary and a run around it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use stormrig::metrics::{ConfigSummary, Engine, Percentiles, RunResult};

/// The repository root (tests run with it as working directory, but say so explicitly).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every shipped scenario file, sorted.
pub fn shipped_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("scenarios"))
        .expect("scenarios/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// The summary of the config called `name`; panics naming it when the run has none.
pub fn config_named<'a>(configs: &'a [ConfigSummary], name: &str) -> &'a ConfigSummary {
    configs
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no config named {name:?}"))
}

pub fn config(name: &str, amplification: f64, p99: f64, budget_refusals: u64) -> ConfigSummary {
    ConfigSummary {
        name: name.to_string(),
        policy: serde_json::json!({"max_attempts": 3}),
        upstream_requests: 1000,
        attempts: 1200,
        retries: 200,
        downstream_arrivals: (1000.0 * amplification) as u64,
        amplification,
        peak_amplification_1s: amplification * 2.0,
        peak_concurrency: 40,
        client_peak_in_flight: 35,
        budget_refusals,
        first_budget_refusal_s: None,
        breaker_refusals: 0,
        useful_retries: 150,
        wasted_retries: 50,
        successes: 950,
        failures: 50,
        failures_by_reason: BTreeMap::from([("max-attempts".to_string(), 50)]),
        attempts_by_outcome: BTreeMap::from([("ok".to_string(), 950)]),
        dropped: 0,
        unfinished: 0,
        latency_ms: Percentiles {
            p50: 12.0,
            p90: 40.0,
            p99,
            p999: p99 * 2.0,
            max: p99 * 3.0,
        },
        attempt_latency_ms: Percentiles::default(),
        recovery_time_s: Some(4.0),
        recovered: Some(true),
        amplification_bound: Some(3.0),
        target_served_ok: 950,
        target_shed: 10,
        target_forwarded: 0,
        duplicate_executions: 0,
        idempotency: Default::default(),
        latency_curve: vec![[50.0, 12.0], [99.0, p99]],
        layers: Vec::new(),
        topology_bound: None,
        peak_retries_per_s: 0,
        idempotency_rules: "no POSTs (GET is idempotent)".into(),
        fault_windows: Vec::new(),
        budget: None,
        verdict: None,
        providers: Vec::new(),
        tokens: None,
    }
}

pub fn run(configs: Vec<ConfigSummary>) -> RunResult {
    RunResult {
        scenario: "brownout".to_string(),
        description: "test run".to_string(),
        seed: 7,
        engine: Engine::Sim,
        partial: false,
        duration_s: 60.0,
        drain_s: None,
        stormrig_version: "0.1.0".to_string(),
        faults: vec![],
        configs,
        gates: vec![],
        timeseries: vec![],
    }
}

pub mod process;
/// A fresh, empty directory under the system temp dir for one test.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("stormrig-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `plan` live on loopback to its end (no attempt log, no progress display).
pub fn live_run(plan: &stormrig::plan::Plan) -> RunResult {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = stormrig::live::RunOptions {
            attempt_log: false,
            progress: false,
            abort_when: None,
        };
        stormrig::live::run(plan, &opts, rx)
            .await
            .expect("the live run completes")
            .result
    })
}
