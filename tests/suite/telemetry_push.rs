//! `--push-gateway`: a live run pushes its figures to a real Prometheus Pushgateway (the
//! Debian package the test command installs), which then holds the run's final counts per
//! config, equal to its `summary.json`. A gateway that is not there stops the run before any
//! load; a gateway off loopback is refused before anything connects.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::telemetry::{free_port, get};
use crate::support::process::{bin, exits, tmp_dir, write};
use crate::support::three_seconds_of_503;

const GATEWAY: &str = "/usr/bin/prometheus-pushgateway";
const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A receiver (Pushgateway or Prometheus) on a free loopback port, stopped when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    /// Starts `program` with `args` and `--web.listen-address` on a free port, and waits
    /// (at most 30 s) for its `/-/ready` to answer 200.
    fn start(program: &str, args: &[String]) -> Daemon {
        let port = free_port();
        let child = Command::new(program)
            .args(args)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e} (tests/run.sh installs it)"));
        let d = Daemon { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !get(port, "/-/ready").is_some_and(|t| t.starts_with("HTTP/1.1 200")) {
            assert!(Instant::now() < deadline, "{program} never became ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        d
    }

    fn gateway() -> Daemon {
        Daemon::start(GATEWAY, &[])
    }

    /// A Prometheus that scrapes nothing and takes remote-write samples, its storage in
    /// `dir`.
    fn prometheus(dir: &Path) -> Daemon {
        let config = write(dir, "prometheus.yml", "global:\n  scrape_interval: 1h\n");
        Daemon::start(
            PROMETHEUS,
            &[
                format!("--config.file={}", config.display()),
                format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
                "--web.enable-remote-write-receiver".into(),
            ],
        )
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `name` for `config` in the run's group, as the gateway exposes it (labels
/// in its own order, `job` and `run` from the group).
/// The counters every push carries per config, and the `summary.json` key each must equal.
const COUNTS: [(&str, &str); 7] = [
    ("stormrig_upstream_requests_total", "upstream_requests"),
    ("stormrig_attempts_total", "attempts"),
    ("stormrig_retries_total", "retries"),
    ("stormrig_successes_total", "successes"),
    ("stormrig_failures_total", "failures"),
    ("stormrig_budget_refusals_total", "budget_refusals"),
    ("stormrig_downstream_arrivals_total", "downstream_arrivals"),
];

/// Runs three seconds of 503s (`three_seconds_of_503`) with `flag value` and a push
/// every second; returns the run's `summary.json` and its run id.
fn run_pushing(dir: &Path, name: &str, flag: &str, value: String) -> (Value, String) {
    let scenario = write(
        dir,
        &format!("{name}.toml"),
        &three_seconds_of_503(name, "aws-standard"),
    );
    let out = dir.join("out");
    exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .arg(flag)
            .arg(value)
            .arg("--push-interval")
            .arg("1s"),
        0,
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let run = summary["run"]["id"].as_str().expect("run id").to_string();
    (summary, run)
}

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
    let gw = Daemon::gateway();
    let dir = tmp_dir("push");
    let (summary, run) = run_pushing(
        &dir,
        "push",
        "--push-gateway",
        format!("127.0.0.1:{}", gw.port),
    );
    let text = get(gw.port, "/metrics").expect("the gateway answers");
    let configs = summary["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        let name = c["name"].as_str().unwrap();
        for (metric, key) in COUNTS {
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

/// The `data.result` of a PromQL instant query against `port`, asked over HTTP/1.0 so the
/// answer comes whole, never chunked.
fn query(port: u16, promql: &str) -> Vec<Value> {
    use std::io::{Read, Write};
    let enc: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("Prometheus answers");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /api/v1/query?query={enc} HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["status"], "success", "{promql}: {text}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// The one value `promql` gives, as a number.
fn one_value(port: u16, promql: &str) -> f64 {
    let r = query(port, promql);
    assert_eq!(r.len(), 1, "{promql}: {r:?}");
    r[0]["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn a_run_writes_its_counts_to_a_real_prometheus_by_remote_write() {
    let dir = tmp_dir("remote-write");
    let prom = Daemon::prometheus(&dir);
    let (summary, run) = run_pushing(
        &dir,
        "remote-write",
        "--remote-write",
        format!("http://127.0.0.1:{}/api/v1/write", prom.port),
    );
    let configs = summary["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        let name = c["name"].as_str().unwrap();
        let series = |metric: &str| format!("{metric}{{run=\"{run}\",config=\"{name}\"}}");
        for (metric, key) in COUNTS {
            let v = one_value(prom.port, &series(metric));
            assert_eq!(v, c[key].as_u64().unwrap() as f64, "{metric} of {name}");
        }
        assert!(c["attempts"].as_u64().unwrap() > 0, "{name}");
        // Every push is a sample of its own: the one before any load (no attempt yet) and
        // the final one at least, not only the last text as a gateway holds.
        let attempts = series("stormrig_attempts_total");
        let points = one_value(prom.port, &format!("count_over_time({attempts}[1h])"));
        assert!(points >= 2.0, "{name}: {points} samples");
        assert_eq!(
            one_value(prom.port, &format!("min_over_time({attempts}[1h])")),
            0.0,
            "{name}: the push before the load"
        );
        let requests = one_value(
            prom.port,
            &format!(
                "stormrig_request_duration_seconds_bucket{{run=\"{run}\",config=\"{name}\",le=\"+Inf\"}}"
            ),
        );
        assert_eq!(
            requests,
            c["successes"].as_f64().unwrap() + c["failures"].as_f64().unwrap(),
            "{name}: the histogram counts every finished request"
        );
    }
}

#[test]
fn a_remote_write_receiver_off_loopback_or_absent_is_refused_before_any_load() {
    let dir = tmp_dir("remote-write-refused");
    let scenario = write(&dir, "rw.toml", &three_seconds_of_503("rw", "naive"));
    // Refused while the arguments are read: the address is never contacted.
    let o = exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--remote-write")
            .arg("http://192.0.2.1:9090/api/v1/write"),
        2,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("only a loopback address"), "{err}");
    let out = dir.join("out");
    let url = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let o = exits(
        bin()
            .arg("run")
            .arg(&scenario)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .arg("--remote-write")
            .arg(&url),
        3,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("--remote-write {url}")), "{err}");
    assert!(!out.join("summary.json").exists(), "a run was reported");
}
