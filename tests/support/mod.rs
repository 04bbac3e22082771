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

/// One shipped scenario simulated with its reports written: its name (the file stem), the
/// folder of its reports and its console output.
pub struct SimulatedScenario {
    pub name: String,
    pub out: PathBuf,
    pub console: String,
}

/// Every shipped scenario simulated (`stormrig sim FILE --out DIR/NAME`, `args` added), for
/// tests that read every shipped report. Exit 1 (a gate failed) still writes whole reports;
/// any other exit panics naming the scenario.
pub fn simulate_every_shipped(dir: &std::path::Path, args: &[&str]) -> Vec<SimulatedScenario> {
    shipped_scenarios()
        .into_iter()
        .map(|scenario| {
            let name = scenario.file_stem().unwrap().to_string_lossy().to_string();
            let out = dir.join(&name);
            let run = process::bin()
                .arg("sim")
                .arg(&scenario)
                .args(args)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                matches!(run.status.code(), Some(0 | 1)),
                "{name}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            SimulatedScenario {
                name,
                out,
                console: String::from_utf8_lossy(&run.stdout).into_owned(),
            }
        })
        .collect()
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
        connections: None,
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
        hedges_sent: 0,
        hedges_cancelled: 0,
        hedges_wasted: 0,
        rate_limited_sends: 0,
        bulkhead_rejections: 0,
        limiter_rejections: 0,
        rate_limit_wait_s: 0.0,
        rate_limit_wait_ms: Default::default(),
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
        success_latency_ms: Percentiles::default(),
        failure_latency_ms: Percentiles::default(),
        recovery_time_s: Some(4.0),
        recovered: Some(true),
        overloaded: Some(false),
        pre_fault_offered_rps: Some(100.0),
        pre_fault_goodput_rps: Some(100.0),
        amplification_bound: Some(3.0),
        target_served_ok: 950,
        target_shed: 10,
        target_shed_by_reason: Default::default(),
        target_forwarded: 0,
        target_unreached: 0,
        proxy_answered: Default::default(),
        relayed_resets: Default::default(),
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
        money: None,
        routes: Vec::new(),
        degraded: None,
        classes: Vec::new(),
        class_policies: Default::default(),
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
        run: None,
        faults: vec![],
        configs,
        gates: vec![],
        shards: None,
        upper_bounds: Default::default(),
        timeseries: vec![],
    }
}

pub mod nginx;

/// The built-in target serving every request at once, with room for 1,024 in flight and as
/// many waiting: an upstream that counts what reaches it and adds no time of its own.
pub fn instant_target() -> stormrig::server::TargetConfig {
    use stormrig::scenario::{Dist, ServiceModel};
    stormrig::server::TargetConfig {
        model: ServiceModel {
            concurrency: 1024,
            queue: 1024,
            queue_timeout: None,
            service_time: Dist::Constant {
                value: std::time::Duration::ZERO,
            },
            shedding: Default::default(),
        },
        faults: Vec::new(),
        seed: 1,
        dedup: None,
    }
}

/// How many of a config's calls ended for `reason` (`bulkhead-full`, `max-attempts`, ...).
pub fn failures_for(c: &ConfigSummary, reason: &str) -> u64 {
    c.failures_by_reason.get(reason).copied().unwrap_or(0)
}

/// A fault over the whole of a short test (an hour), on every request.
pub fn always(kind: stormrig::scenario::FaultKind) -> stormrig::scenario::Fault {
    stormrig::scenario::Fault {
        at: std::time::Duration::ZERO,
        length: std::time::Duration::from_secs(3600),
        path: None,
        probability: 1.0,
        kind,
    }
}

/// What a preparation script (`tests/python/venv.sh`, `tests/node/modules.sh`) printed: the
/// path of what it made. Panics with the script's own message when it fails (no python3 or
/// npm, no registry): a test that needs a real client fails loudly rather than pass without.
pub fn prepared(script: &str) -> PathBuf {
    prepared_with(script, &[])
}

/// [`prepared`] with arguments to the script.
pub fn prepared_with(script: &str, args: &[&str]) -> PathBuf {
    let out = std::process::Command::new("bash")
        .arg(repo_root().join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("bash runs {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The tokio runtime of the in-process loopback tests that drive a client and a server
/// together: two workers, one per core of the machines CI runs on.
pub fn two_worker_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The 1-based number of the first line of `text` that starts with `prefix` (where a
/// refusal of a bad value must point).
pub fn line_starting(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}:\n{text}"))
        + 1
}

/// A scenario that `check` reads to its one config, `name`, written as `config_lines`:
/// 10 req/s for 5 s against the small built-in target (the bad-value tests' frame).
pub fn one_config_scenario(name: &str, config_lines: &str) -> String {
    format!(
        "name = \"bad\"\nduration = \"5s\"\n\n[load]\nkind = \"constant\"\nrate = 10.0\n\n[target]\nbuiltin = \"small\"\n\n[[configs]]\nname = \"{name}\"\n{config_lines}\n"
    )
}

/// A plan from scenario text, as if read from `tests/inline.toml`.
pub fn plan_of(text: &str) -> stormrig::plan::Plan {
    let path = std::path::Path::new("tests/inline.toml");
    let sc = stormrig::scenario::parse(path, text).expect("scenario parses");
    stormrig::plan::build(sc, text).expect("configs resolve")
}

/// Runs `plan` live on a two-thread runtime, silent.
pub fn run_live(plan: &stormrig::plan::Plan, attempt_log: bool) -> stormrig::live::LiveOutput {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = stormrig::live::RunOptions {
            attempt_log,
            progress: false,
            abort_when: None,
            ..Default::default()
        };
        stormrig::live::run(plan, &opts, rx)
            .await
            .expect("run completes")
    })
}
pub mod aws_timeline;
pub mod conformance;
pub mod grpc_server;
pub mod http;
pub mod mutate;
pub mod node;
pub mod pod_security;
pub mod process;
pub mod python;
pub mod scripted;
pub mod stats;

/// A three-second live scenario on the built-in target: 50 req/s, a 503 from 1 s to 2.5 s,
/// `no-retry` beside an `aws-standard` config called `name`.
pub fn three_seconds_of_503(scenario: &str, name: &str) -> String {
    format!(
        r#"name = "{scenario}"
seed = 3
duration = "3s"
drain = "2s"

[load]
kind = "constant"
rate = 50

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "1s"
for = "1500ms"

[[configs]]
preset = "no-retry"

[[configs]]
name = "{name}"
preset = "aws-standard"
"#
    )
}
/// A storm of `rate` requests per second for the first half second only, so a run ends
/// once those requests have (the fault window outlasts any slow machine). `load` adds to
/// `[load]`, `fault` is the one fault's kind and parameters, `extra` adds the topology and
/// configs.
fn half_second_storm(name: &str, rate: f64, load: &str, fault: &str, extra: &str) -> String {
    format!(
        r#"
name = "{name}"
duration = "60s"
drain = "10s"

[load]
kind = "steps"
steps = [{{ at = "0s", rate = {rate:.1} }}, {{ at = "500ms", rate = 0.0 }}]
{load}

[target]
builtin = "default"
service = {{ concurrency = 10000, queue = 10000 }}

[[faults]]
{fault}
at = "0s"
for = "60s"
{extra}
"#
    )
}

/// A layered storm: 503 for everything, `rate` per second for the first half second.
pub fn always_503(name: &str, rate: f64, extra: &str) -> String {
    half_second_storm(name, rate, "", "kind = \"status\"\nstatus = 503", extra)
}

/// One `[[topology]]` layer with an inline config.
pub fn layer(name: &str, config: &str) -> String {
    format!("\n[[topology]]\nname = \"{name}\"\nconfig = {config}\n")
}

/// (arrivals, attempts, retries) of one hop.
pub fn hop_counts(l: &stormrig::metrics::LayerSummary) -> (u64, u64, u64) {
    (l.arrivals, l.attempts, l.retries)
}

/// Most attempts a hop with a 20 % ratio budget (ttl 10 s, 1/s reserve, no expiry within
/// the run) and 4 attempts can send for `a` arrivals: every arrival deposits 1000, a retry
/// withdraws floor(1000 / 0.2) = 5000, the reserve is 1 × 10 × 5000; so retries ≤
/// floor((1000 a + 50000) / 5000) = floor(0.2 a) + 10, and ≤ 3 a.
pub fn ratio_hop_max(a: u64) -> u64 {
    a + (3 * a).min((1000 * a + 50_000) / 5000)
}

/// A storm against a target that answers every request after 600 ms: 20 requests per second
/// for the first half second.
pub fn slow_600ms(name: &str, load: &str, extra: &str) -> String {
    let fault = "kind = \"latency\"\nadd = { kind = \"constant\", value = \"600ms\" }";
    half_second_storm(name, 20.0, load, fault, extra)
}
