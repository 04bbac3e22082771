//! A live run as the tools around it see it: `--metrics-listen` scraped while the run goes,
//! `--events -` one JSON line per config per second, and the run's identity and absolute
//! time in `summary.json` and `timeseries.csv`. The real binary, on loopback, bounded.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::Value;

use crate::support::process::{bin, tmp_dir, wait_watched, watch, write};
use crate::support::three_seconds_of_503;

/// GET `path` from `port` on 127.0.0.1; None when nothing answers yet.
pub(crate) fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The value of `name{run="...",config="CONFIG"[,...]}` in a Prometheus text, `extra`
/// being the labels after the config's (`,le="0.1"`), if any.
fn sample_with(text: &str, name: &str, config: &str, extra: &str) -> Option<f64> {
    let tail = format!(",config=\"{config}\"{extra}}} ");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{run=\"")))
        .find_map(|l| l.split_once(&tail).map(|(_, v)| v))
        .map(|v| v.parse().unwrap())
}

/// The value of `name{run="...",config="CONFIG"}` in a Prometheus text.
fn sample(text: &str, name: &str, config: &str) -> Option<f64> {
    sample_with(text, name, config, "")
}

#[test]
fn a_live_run_serves_metrics_streams_events_and_carries_its_identity() {
    let dir = tmp_dir("telemetry");
    let scenario = write(
        &dir,
        "telemetry.toml",
        &three_seconds_of_503("telemetry", "aws-standard"),
    );
    let out = dir.join("out");
    let port = free_port();
    let start = Instant::now();
    let child = bin()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .arg("--metrics-listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--events")
        .arg("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");

    // Scraped while the run goes: once something has been sent, every config has its
    // series, and the counts only grow.
    let mut scrapes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while scrapes.len() < 2 && Instant::now() < deadline {
        if let Some(text) = get(port, "/metrics") {
            if sample(&text, "stormrig_attempts_total", "aws-standard").is_some_and(|v| v > 0.0) {
                scrapes.push(text);
                std::thread::sleep(Duration::from_millis(700));
                continue;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let missing = get(port, "/other");
    let done = wait_watched(child, start, Duration::from_secs(30));
    assert_eq!(done.code(), 0, "{}", done.stderr);
    assert_eq!(
        scrapes.len(),
        2,
        "no metrics during the run: {}",
        done.stderr
    );
    assert!(scrapes[0].starts_with("HTTP/1.1 200"), "{}", scrapes[0]);
    assert!(missing.is_some_and(|t| t.starts_with("HTTP/1.1 404")));
    for config in ["no-retry", "aws-standard"] {
        for name in [
            "stormrig_upstream_requests_total",
            "stormrig_attempts_total",
            "stormrig_retries_total",
            "stormrig_budget_refusals_total",
            "stormrig_downstream_arrivals_total",
            "stormrig_in_flight",
        ] {
            let a = sample(&scrapes[0], name, config).unwrap_or_else(|| panic!("{name} {config}"));
            let b = sample(&scrapes[1], name, config).unwrap();
            if name.ends_with("_total") {
                assert!(b >= a, "{name} {config}: {a} then {b}");
            }
        }
    }
    // Only a config with a budget has a level, a share of its capacity.
    let level = sample(&scrapes[1], "stormrig_budget_level_ratio", "aws-standard").unwrap();
    assert!((0.0..=1.0).contains(&level), "{level}");
    assert!(sample(&scrapes[1], "stormrig_budget_level_ratio", "no-retry").is_none());
    // Attempts by outcome add up to the attempts; the latency histogram is cumulative and
    // its +Inf bucket is its count, the requests that finished: successes and failures.
    let last = &scrapes[1];
    for config in ["no-retry", "aws-standard"] {
        let attempts = sample(last, "stormrig_attempts_total", config).unwrap();
        // Every outcome line of the config: sent attempts that ended, so at most the
        // attempts sent (some are still in flight at a scrape).
        let config_label = format!("config=\"{config}\",outcome=");
        let by_outcome: f64 = last
            .lines()
            .filter(|l| l.starts_with("stormrig_attempts_by_outcome_total{"))
            .filter(|l| l.contains(&config_label))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        assert!(
            by_outcome <= attempts && by_outcome > 0.0,
            "{config}: {by_outcome} of {attempts}"
        );
        let finished = sample(last, "stormrig_successes_total", config).unwrap()
            + sample(last, "stormrig_failures_total", config).unwrap();
        let h = "stormrig_request_duration_seconds";
        let count = sample(last, &format!("{h}_count"), config).unwrap();
        assert_eq!(count, finished, "{config}");
        let inf = sample_with(last, &format!("{h}_bucket"), config, ",le=\"+Inf\"").unwrap();
        assert_eq!(inf, count);
        let mut previous = 0.0;
        for le in ["0.005", "0.01", "0.1", "1", "10"] {
            let n = sample_with(
                last,
                &format!("{h}_bucket"),
                config,
                &format!(",le=\"{le}\""),
            )
            .unwrap_or_else(|| panic!("{h} le={le}: {last}"));
            assert!(n >= previous && n <= count, "{config} le={le}: {n}");
            previous = n;
        }
    }

    // Events: one line per config per second, seconds in order, from the first on.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let run = &summary["run"];
    let mut seconds: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in done.stdout.lines().filter(|l| l.starts_with('{')) {
        let e: Value = serde_json::from_str(line).expect(line);
        assert_eq!(e["run"], run["id"], "{line}");
        assert!(e["attempts"].as_u64().is_some() && e["arrivals"].as_u64().is_some());
        seconds
            .entry(e["config"].as_str().unwrap().to_string())
            .or_default()
            .push(e["second"].as_u64().unwrap());
    }
    assert_eq!(seconds.len(), 2, "{}", done.stdout);
    let first = &seconds["no-retry"];
    assert_eq!(first, &seconds["aws-standard"]);
    assert!(first.len() >= 3, "{first:?}");
    assert!(
        first.iter().copied().eq(1..=first.len() as u64),
        "{first:?}"
    );

    // The run's identity: start (RFC 3339, UTC), host, version, the scenario's SHA-256 as
    // sha256sum prints it.
    let started = humantime::parse_rfc3339(run["started_at"].as_str().unwrap()).unwrap();
    assert!(run["started_at"].as_str().unwrap().ends_with('Z'));
    let age = std::time::SystemTime::now()
        .duration_since(started)
        .unwrap();
    assert!(age <= done.wall, "{age:?} > {:?}", done.wall);
    assert!(!run["host"].as_str().unwrap().is_empty());
    assert!(run["id"].as_str().unwrap().len() >= 16);
    // Every per-config series names the run.
    let run_label = format!("{{run=\"{}\",config=", run["id"].as_str().unwrap());
    assert!(
        scrapes[1].contains(&format!("stormrig_attempts_total{run_label}")),
        "{}",
        scrapes[1]
    );
    assert_eq!(summary["stormrig_version"], env!("CARGO_PKG_VERSION"));
    let sum = std::process::Command::new("sha256sum")
        .arg(&scenario)
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    assert_eq!(
        run["scenario_sha256"].as_str().unwrap(),
        sum.split_whitespace().next().unwrap()
    );

    // timeseries.csv: each second's absolute start.
    let mut r = csv::Reader::from_path(out.join("timeseries.csv")).unwrap();
    let headers = r.headers().unwrap().clone();
    let (si, ti) = (
        headers.iter().position(|h| h == "second").unwrap(),
        headers
            .iter()
            .position(|h| h == "time")
            .expect("a time column"),
    );
    let start_s = started.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    for row in r.records() {
        let row = row.unwrap();
        let second: f64 = row[si].parse().unwrap();
        let t = humantime::parse_rfc3339(&row[ti]).unwrap();
        let t = t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        assert!((t - start_s - second).abs() < 0.002, "{row:?}");
    }
}

#[test]
fn metrics_are_never_served_beyond_loopback_and_the_simulator_stays_timeless() {
    let dir = tmp_dir("telemetry-refused");
    let scenario = write(
        &dir,
        "telemetry.toml",
        &three_seconds_of_503("telemetry", "aws-standard"),
    );
    let mut cmd = bin();
    cmd.arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--metrics-listen")
        .arg("0.0.0.0:9464");
    let w = watch(cmd, Duration::from_secs(10));
    assert_eq!(w.code(), 2, "{}", w.stderr);
    assert!(w.stderr.contains("loopback"), "{}", w.stderr);
    assert!(!dir.join("out").exists(), "nothing ran");

    // The simulator's output has no run identity and no absolute time: the same seed and
    // scenario give the same bytes.
    let mut cmd = bin();
    cmd.arg("sim")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.join("sim"));
    let w = watch(cmd, Duration::from_secs(20));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    let summary = std::fs::read_to_string(dir.join("sim/summary.json")).unwrap();
    assert!(!summary.contains("\"run\""), "{summary}");
    let series = std::fs::read_to_string(dir.join("sim/timeseries.csv")).unwrap();
    assert!(
        series.starts_with("config,second,upstream_started"),
        "{series}"
    );
}
