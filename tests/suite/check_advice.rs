//! `stormrig check` warns about configs that cannot retry what the scenario injects (they
//! would otherwise look best for it), `--strict` turns warnings into exit 2, and `--explain`
//! says what each config retries.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

/// A hand-written config with max_attempts = 5, a per-try timeout and backoff, no preset,
/// against POSTs and a latency fault: POSTs are not retried by default and the per-try
/// timeout is not in the default transport list, so it can retry nothing.
const NEVER_RETRIES: &str = r#"name = "never-retries"
seed = 3
duration = "10s"

[load]
kind = "constant"
rate = 100
method = "POST"

[target]
builtin = "default"

[[faults]]
kind = "latency"
add = { kind = "constant", value = "800ms" }
at = "2s"
for = "5s"

[[configs]]
preset = "no-retry"

[[configs]]
name = "hand-written"
max_attempts = 5
per_try_timeout = "300ms"
backoff = { kind = "exponential", base = "100ms", multiplier = 2.0, cap = "2s" }
"#;

/// The scenario in a file of the calling test's own (tests run in parallel).
fn scenario(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stormrig-advice-{}-{test}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join("never-retries.toml");
    fs::write(&p, NEVER_RETRIES).unwrap();
    p
}

fn check(test: &str, args: &[&str]) -> Output {
    crate::support::process::bin()
        .arg("check")
        .args(args)
        .arg(scenario(test))
        .output()
        .expect("binary runs")
}

#[test]
fn a_config_that_can_retry_nothing_is_named_with_the_reason() {
    let o = check("named", &[]);
    assert_eq!(o.status.code(), Some(0), "warnings alone do not fail");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: config hand-written"), "{err}");
    assert!(err.contains("can retry none"), "{err}");
    assert!(err.contains("POST without an Idempotency-Key"), "{err}");
    // The baseline never retries by design: no warning for it.
    assert!(!err.contains("config no-retry"), "{err}");
}

#[test]
fn strict_turns_warnings_into_exit_2() {
    let o = check("strict", &["--strict"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--strict"));
}

#[test]
fn explain_says_what_each_config_retries() {
    let o = check("explain", &["--explain"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("hand-written (no preset"), "{out}");
    assert!(out.contains("attempts: up to 5"), "{out}");
    assert!(
        out.contains("POST once it may have reached the server"),
        "{out}"
    );
}

#[test]
fn shipped_failure_steps_explains_thresholds() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/failure-steps.toml");
    let o = crate::support::process::bin()
        .args(["check", "--explain"])
        .arg(p)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("drains above: transient 21.5 %"), "{out}");
    assert!(
        out.contains("transient: none (the config never retries"),
        "{out}"
    );
}

#[test]
fn thresholds_of_a_scenario_cover_each_config_as_resolved() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/failure-steps.toml");
    let o = crate::support::process::succeed(
        crate::support::process::bin()
            .args(["thresholds", "--json"])
            .arg(&p),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reports = v.as_array().unwrap();
    assert_eq!(reports.len(), 4);
    let transient = |i: usize| reports[i]["transient"]["closed_form"].as_f64();
    assert_eq!(reports[0]["config"], "aws-standard");
    assert_eq!(transient(0), Some(0.2149));
    assert_eq!(transient(1), Some(0.3207));
    assert_eq!(transient(2), Some(0.0909));
    assert_eq!(transient(3), None, "finagle never retries a 503");
    // The table names every config, the custom ones of a file included.
    let o = crate::support::process::bin()
        .arg("thresholds")
        .arg(scenario("thresholds"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("hand-written"), "{out}");
}

/// A gRPC-only config: retries UNAVAILABLE and RESOURCE_EXHAUSTED, no HTTP status.
const GRPC_ONLY: &str = r#"name = "grpc-only"
seed = 1
duration = "5s"

[load]
kind = "constant"
rate = 50.0
grpc = { service = "stormrig.Demo", method = "Get", message = "" }

[target]
builtin = "default"
protocol = "h2c"

[[faults]]
kind = "grpc-status"
grpc_status = "UNAVAILABLE"
at = "1s"
for = "2s"

[[configs]]
name = "grpc-only"
preset = "grpc"
retry_on = { grpc_statuses = ["unavailable"], grpc_throttling_statuses = ["resource-exhausted"] }
"#;

fn grpc_only(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stormrig-advice-{}-{test}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join("grpc-only.toml");
    fs::write(&p, GRPC_ONLY).unwrap();
    p
}

#[test]
fn thresholds_of_a_grpc_only_config_come_from_its_grpc_statuses() {
    let o = crate::support::process::succeed(
        crate::support::process::bin()
            .args(["thresholds", "--json"])
            .arg(grpc_only("grpc-thresholds")),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["config"], "grpc-only");
    // retryThrottling 10 / 0.1 drains above r / (1 + r) = 0.0909, whatever the class.
    for kind in ["transient", "throttling"] {
        assert_eq!(r[kind]["closed_form"].as_f64(), Some(0.0909), "{kind}: {r}");
        let mc = r[kind]["monte_carlo"]
            .as_f64()
            .unwrap_or_else(|| panic!("{kind}: {r}"));
        assert!((mc - 0.0909).abs() < 0.01, "{kind}: {mc}");
    }
    // It retries no timeout: no threshold for that class.
    assert_eq!(r["timeout"]["closed_form"], serde_json::Value::Null);
}

#[test]
fn explain_names_the_grpc_statuses_a_config_retries() {
    let o = crate::support::process::succeed(
        crate::support::process::bin()
            .args(["check", "--explain"])
            .arg(grpc_only("grpc-explain")),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "gRPC calls failing with: UNAVAILABLE as transient, RESOURCE_EXHAUSTED as throttling"
        ),
        "{out}"
    );
    assert!(
        out.contains("drains above: transient 9.1 %; throttling 9.1 %"),
        "{out}"
    );
    assert!(!out.contains("[\"unavailable\""), "no raw JSON: {out}");
}

/// Three LLM configs that differ only in their failover, breakers, cost caps and fallback
/// must read differently, each stage in words, none as data.
#[test]
fn explain_names_failover_breakers_caps_and_fallback_in_words() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/llm-provider-outage-failover.toml");
    let text = fs::read_to_string(p).unwrap()
        + r#"
[[configs]]
name = "capped"
preset = "naive"
attempt_cost = "tokens"
cost = { global_cap = 50000 }
breaker = { failure_rate = 0.5, open_for = "10s" }
"#;
    let dir = crate::support::process::tmp_dir("explain-llm");
    let file = crate::support::process::write(&dir, "llm.toml", &text);
    let o = crate::support::process::succeed(
        crate::support::process::bin()
            .args(["check", "--explain"])
            .arg(&file),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(4 configs, 1 fault, 20 s)"), "{out}");
    // A config's lines: its name's line and the indented lines below it.
    let section = |name: &str| -> String {
        let head = format!("{name} (");
        let mut lines = out.lines().skip_while(|l| !l.starts_with(&head));
        let first = lines.next().unwrap_or_else(|| panic!("{name}: {out}"));
        std::iter::once(first)
            .chain(lines.take_while(|l| l.starts_with("  ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let same = section("same-provider");
    assert!(
        !same.contains("failover:") && !same.contains("fallback:"),
        "{same}"
    );
    let failover = section("failover");
    assert!(
        failover.contains("failover: first tries to a; 1 retry there, then on to b"),
        "{failover}"
    );
    let ladder = section("breaker-ladder");
    assert!(
        ladder.contains("a breaker per provider opens after 3 consecutive failures"),
        "{ladder}"
    );
    assert!(ladder.contains("refuses every attempt for 15s"), "{ladder}");
    assert!(ladder.contains("fallback: when every attempt failed: a cached answer for 60 % of requests, then a static answer"), "{ladder}");
    let capped = section("capped");
    assert!(capped.contains("cost caps: no attempt is sent that would spend more than 50000 for the whole client in tokens"), "{capped}");
    assert!(
        capped.contains("new requests fail without an attempt"),
        "{capped}"
    );
    assert!(
        capped.contains("breaker: opens after 50 % failures among the last 20 calls"),
        "{capped}"
    );
    for line in out.lines() {
        assert!(
            !line.contains('{') && !line.contains("\"kind\""),
            "raw data: {line}"
        );
    }
}
