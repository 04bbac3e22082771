//! `--push-gateway`: a live run pushes its figures to a real Prometheus Pushgateway (the
//! Debian package the test command installs), which then holds the run's final counts per
//! config, equal to its `summary.json`. A gateway that is not there stops the run before any
//! load; a gateway off loopback is refused before anything connects.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::telemetry::{free_port, get};
use crate::support::process::{bin, exits, tmp_dir, write};
use crate::support::three_seconds_of_503;

const GATEWAY: &str = "/usr/bin/prometheus-pushgateway";

/// A Pushgateway on a free loopback port, stopped when dropped.
struct Gateway {
    child: Child,
    port: u16,
}

impl Gateway {
    fn start() -> Gateway {
        let port = free_port();
        let child = Command::new(GATEWAY)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{GATEWAY}: {e} (tests/run.sh installs it)"));
        let gw = Gateway { child, port };
        let deadline = Instant::now() + Duration::from_secs(15);
        while !get(port, "/-/ready").is_some_and(|t| t.starts_with("HTTP/1.1 200")) {
            assert!(
                Instant::now() < deadline,
                "the Pushgateway never became ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        gw
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `name` for `config` in the run's group, as the gateway exposes it (labels
/// in its own order, `job` and `run` from the group).
fn pushed(text: &str, name: &str, config: &str, run: &str) -> Option<f64> {
    let want = [
        format!("config=\"{config}\""),
        "job=\"stormrig\"".to_string(),
        format!("run=\"{run}\""),
    ];
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| want.iter().all(|w| l.contains(w.as_str())))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn a_run_pushes_its_final_counts_to_a_real_pushgateway() {
    let gw = Gateway::start();
    let dir = tmp_dir("push");
    let scenario = write(
        &dir,
        "push.toml",
        &three_seconds_of_503("push", "aws-standard"),
    );
    let out = dir.join("out");
    exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .arg("--push-gateway")
            .arg(format!("127.0.0.1:{}", gw.port))
            .arg("--push-interval")
            .arg("1s"),
        0,
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let run = summary["run"]["id"].as_str().expect("run id").to_string();
    let text = get(gw.port, "/metrics").expect("the gateway answers");
    let configs = summary["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        let name = c["name"].as_str().unwrap();
        for (metric, key) in [
            ("stormrig_upstream_requests_total", "upstream_requests"),
            ("stormrig_attempts_total", "attempts"),
            ("stormrig_retries_total", "retries"),
            ("stormrig_successes_total", "successes"),
            ("stormrig_failures_total", "failures"),
            ("stormrig_budget_refusals_total", "budget_refusals"),
            ("stormrig_downstream_arrivals_total", "downstream_arrivals"),
        ] {
            let v = pushed(&text, metric, name, &run)
                .unwrap_or_else(|| panic!("{metric} of {name} not on the gateway:\n{text}"));
            assert_eq!(v, c[key].as_u64().unwrap() as f64, "{metric} of {name}");
        }
        assert!(c["attempts"].as_u64().unwrap() > 0, "{name}");
    }
}

#[test]
fn a_gateway_that_is_not_there_stops_the_run_before_any_load() {
    let dir = tmp_dir("push-absent");
    let scenario = write(&dir, "push.toml", &three_seconds_of_503("push", "naive"));
    let out = dir.join("out");
    let o = exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .arg("--push-gateway")
            .arg(format!("127.0.0.1:{}", free_port())),
        3,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--push-gateway 127.0.0.1:"), "{err}");
    assert!(!out.join("summary.json").exists(), "a run was reported");
}

#[test]
fn a_gateway_off_loopback_or_a_tiny_interval_is_refused_before_anything_connects() {
    let dir = tmp_dir("push-refused");
    let scenario = write(&dir, "push.toml", &three_seconds_of_503("push", "naive"));
    // Checked before any socket is opened: the address is never contacted.
    let o = exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--push-gateway")
            .arg("192.0.2.1:9091"),
        2,
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("only a loopback address"));
    let o = exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--push-gateway")
            .arg("127.0.0.1:9091")
            .arg("--push-interval")
            .arg("10ms"),
        2,
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--push-interval"));
}
