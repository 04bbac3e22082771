//! The run's recommendation in `summary.json`, the console and the page: a config that
//! never retries is not recommended for adding no load when a retrying one kept more
//! requests, and a run with one config gets none.

use std::time::Duration;

use crate::support::process::{bin, tmp_dir, watch, write};

/// A 30 % 503 fault for 10 s of a 20 s run: `naive` retries its way past most of it,
/// `no-retry` loses every failed request but adds no load.
fn scenario(configs: &str) -> String {
    format!(
        r#"
name = "recommend"
seed = 7
duration = "20s"

[load]
kind = "constant"
rate = 100

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
probability = 0.3
at = "5s"
for = "10s"
{configs}
"#
    )
}

const NO_RETRY: &str = "\n[[configs]]\nname = \"no-retry\"\npreset = \"no-retry\"\n";
const NAIVE: &str = "\n[[configs]]\nname = \"naive\"\npreset = \"naive\"\n";

fn sim(name: &str, text: &str) -> (serde_json::Value, String, String) {
    let dir = tmp_dir(name);
    let sc = write(&dir, "s.toml", text);
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.arg("sim").arg(&sc).arg("--out").arg(&out);
    let w = watch(cmd, Duration::from_secs(60));
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    (serde_json::from_str(&summary).unwrap(), w.stdout, html)
}

#[test]
fn the_retrying_config_that_kept_more_requests_is_recommended_over_no_retry() {
    let (json, stdout, html) = sim("recommend-two", &scenario(&format!("{NO_RETRY}{NAIVE}")));
    let r = &json["recommendation"];
    assert_eq!(r["best"], serde_json::json!(["naive"]), "{r}");
    let share = |i: usize| {
        let c = &json["configs"][i];
        c["successes"].as_f64().unwrap() / c["upstream_requests"].as_f64().unwrap()
    };
    // What it optimised holds in the file's own figures: naive kept more, added more load.
    assert!(share(1) > share(0), "{json}");
    assert!(
        json["configs"][1]["amplification"].as_f64() > json["configs"][0]["amplification"].as_f64()
    );
    assert_eq!(r["success_share"].as_f64(), Some(share(1)));
    assert_eq!(r["others"][0]["config"], "no-retry");
    let why = r["others"][0]["why"].as_str().unwrap();
    assert!(why.ends_with("it never retries"), "{why}");
    let sentence = r["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("optimised for the highest success share"),
        "{sentence}"
    );
    // The console and the page say the same.
    assert!(
        stdout.replace("\n  ", " ").contains("Recommended: naive"),
        "{stdout}"
    );
    assert!(
        html.contains("Recommended: naive"),
        "no recommendation on the page"
    );
}

#[test]
fn a_run_with_one_config_gets_no_recommendation() {
    let (json, stdout, _) = sim("recommend-one", &scenario(NAIVE));
    assert!(json.get("recommendation").is_none(), "{json}");
    assert!(!stdout.contains("Recommended"), "{stdout}");
}
