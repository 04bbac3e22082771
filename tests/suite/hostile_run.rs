//! Hostile targets, signals, local limits and failing disks, met by the real binary: the run
//! ends within its duration plus drain, peak memory stays under a documented bound, every
//! attempt is classified, partial reports are marked, and a directory is never presented as
//! finished unless it is.
//!
//! Memory bound asserted: 256 MiB peak resident set (VmHWM) of the stormrig process, against
//! servers that send garbage, an endless chunked body, a 100 MB body, or a three-year
//! Retry-After. All traffic is on 127.0.0.1; every run is bounded in time.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::process::{
    bin, hostile_server, limit_open_files, tmp_dir, wait_watched, watch, write, Hostile,
};

/// The peak resident set a run may reach, whatever the target sends.
const RSS_BOUND_KIB: u64 = 256 * 1024;

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).unwrap()
}

/// Attempts of the first config, and the sum of its attempts by outcome.
fn attempts_classified(s: &serde_json::Value) -> (u64, u64) {
    let c = &s["configs"][0];
    let attempts = c["attempts"].as_u64().unwrap();
    let by: u64 = c["attempts_by_outcome"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    (attempts, by)
}

/// Runs one config against `kind` and checks what every hostile run must hold; returns the
/// run's `summary.json`.
fn against(kind: Hostile, config: &str) -> serde_json::Value {
    let upstream = hostile_server(kind);
    let dir = tmp_dir(&format!("hostile-{kind:?}"));
    // Two attempts of at most 1 s each: every request ends within the drain.
    let (duration, drain) = (3, 3);
    let p = write(
        &dir,
        "s.toml",
        &format!(
            "name = \"hostile\"\nduration = \"{duration}s\"\ndrain = \"{drain}s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nurl = \"http://{upstream}\"\n[[configs]]\npreset = \"naive\"\nper_try_timeout = \"1s\"\nmax_attempts = 2\n{config}\n"
        ),
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    let w = watch(cmd, Duration::from_secs(60));
    eprintln!(
        "{kind:?}: exit {}, {:.2} s, peak RSS {} MiB",
        w.code(),
        w.wall.as_secs_f64(),
        w.peak_rss_kib / 1024
    );
    assert_eq!(w.code(), 0, "{kind:?}: {}", w.stderr);
    // Duration plus drain, plus process start, target shutdown and report writing.
    let allowed = Duration::from_secs(duration + drain + 6);
    assert!(w.wall < allowed, "{kind:?}: took {:?}", w.wall);
    assert!(w.peak_rss_kib > 0, "VmHWM was read");
    assert!(
        w.peak_rss_kib < RSS_BOUND_KIB,
        "{kind:?}: peak RSS {} KiB",
        w.peak_rss_kib
    );
    let s = summary(&out);
    let (attempts, classified) = attempts_classified(&s);
    assert!(attempts > 0);
    assert_eq!(
        attempts, classified,
        "{kind:?}: every attempt has an outcome"
    );
    if !matches!(kind, Hostile::YearsRetryAfter) {
        assert_eq!(
            s["configs"][0]["unfinished"].as_u64(),
            Some(0),
            "{kind:?}: every request ended within the drain"
        );
    }
    s
}

#[test]
fn garbage_answers_are_classified_gateway_errors() {
    let s = against(Hostile::Garbage, "");
    let c = &s["configs"][0];
    let attempts = c["attempts"].as_u64().unwrap();
    // The proxy reached the server (forwarded), could not parse its answer and answered 502
    // itself: the client sees a gateway error, which naive retries as transient.
    assert_eq!(c["target_forwarded"].as_u64(), Some(attempts));
    assert_eq!(c["downstream_arrivals"].as_u64(), Some(attempts));
    let by = c["attempts_by_outcome"].as_object().unwrap();
    assert_eq!(
        by.iter()
            .filter(|(_, n)| n.as_u64() != Some(0))
            .map(|(k, n)| (k.as_str(), n.as_u64().unwrap()))
            .collect::<Vec<_>>(),
        vec![("transient", attempts)],
        "every attempt is the proxy's 502, a transient gateway error"
    );
    assert_eq!(
        c["target_unreached"].as_u64(),
        Some(0),
        "the server was reached"
    );
}

/// Nothing listens at the url: the proxy answers every attempt itself (502, connect failed).
/// None of them is a downstream arrival, the run says nothing reached the service and exits
/// 3, and the reports it wrote count every attempt as unreached.
#[test]
fn a_dead_target_is_named_not_counted_as_arrivals() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // dropped: nothing listens there now
    let dir = tmp_dir("dead-target");
    let p = write(
        &dir,
        "s.toml",
        &format!(
            "name = \"dead\"\nduration = \"1s\"\ndrain = \"2s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nurl = \"http://127.0.0.1:{port}\"\n[[configs]]\npreset = \"naive\"\n"
        ),
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    let w = watch(cmd, Duration::from_secs(60));
    assert_eq!(w.code(), 3, "{}", w.stderr);
    let s = summary(&out);
    let c = &s["configs"][0];
    let attempts = c["attempts"].as_u64().unwrap();
    assert!(attempts > 0);
    let want = format!("0 of {attempts} attempts reached http://127.0.0.1:{port}");
    assert!(w.stderr.contains(&want), "wanted {want:?} in: {}", w.stderr);
    assert_eq!(c["downstream_arrivals"].as_u64(), Some(0));
    assert_eq!(c["target_forwarded"].as_u64(), Some(0));
    assert_eq!(c["target_unreached"].as_u64(), Some(attempts));
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let mut lines = series.lines();
    let column = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "downstream_arrivals")
        .expect("timeseries.csv has downstream_arrivals");
    let rows: Vec<u64> = lines
        .map(|l| l.split(',').nth(column).unwrap().parse().unwrap())
        .collect();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|&n| n == 0),
        "no second of the time series has an arrival: {rows:?}"
    );
}

#[test]
fn an_endless_chunked_body_leaves_memory_bounded() {
    against(Hostile::EndlessChunked, "");
}

#[test]
fn a_100_mb_body_leaves_memory_bounded() {
    against(Hostile::HugeBody, "");
}

/// Each request waits the clamped hint (300 s), so it is still waiting at the end and counted
/// unfinished: the run itself ends on time.
#[test]
fn a_years_long_retry_after_is_clamped_and_the_run_ends() {
    against(
        Hostile::YearsRetryAfter,
        "retry_after = { header = \"retry-after\" }",
    );
}

#[test]
fn sigterm_stops_the_simulator_with_partial_reports() {
    let dir = tmp_dir("sim-sigterm");
    let out = dir.join("out");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/downstream-503-10s.toml");
    let start = Instant::now();
    let child = bin()
        .args(["sim", "--scale", "2000", "--out"])
        .arg(&out)
        .arg(&scenario)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let w = wait_watched(child, start, Duration::from_secs(120));
    let stopped_in = sent.elapsed();
    eprintln!("sim stopped {stopped_in:?} after SIGTERM");
    assert_eq!(w.code(), 3, "{}", w.stderr);
    assert!(stopped_in < Duration::from_secs(2), "{stopped_in:?}");
    assert!(w.stderr.contains("interrupted"), "{}", w.stderr);
    let s = summary(&out);
    assert_eq!(s["partial"], serde_json::Value::Bool(true));
    assert!(out.join("index.html").exists());
}

#[test]
fn an_open_file_limit_shows_as_local_resource_outcomes_with_a_warning() {
    let dir = tmp_dir("ulimit");
    let p = write(
        &dir,
        "s.toml",
        "name = \"fd-starved\"\nduration = \"2s\"\ndrain = \"1s\"\n[load]\nkind = \"constant\"\nrate = 1000.0\n[target]\nbuiltin = \"default\"\nservice = { concurrency = 100000, service_time = { kind = \"constant\", value = \"300ms\" } }\n[[configs]]\npreset = \"naive\"\nper_try_timeout = \"1s\"\n",
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    limit_open_files(&mut cmd, 200);
    let w = watch(cmd, Duration::from_secs(60));
    assert!(w.code() == 0 || w.code() == 3, "{}", w.stderr);
    let s = summary(&out);
    let local = s["configs"][0]["attempts_by_outcome"]["local-resource"]
        .as_u64()
        .unwrap_or(0);
    eprintln!(
        "local-resource attempts: {local}; stderr: {}",
        w.stderr.trim()
    );
    assert!(
        local > 0,
        "{}",
        serde_json::to_string(&s["configs"][0]["attempts_by_outcome"]).unwrap()
    );
    assert_eq!(
        s["configs"][0]["failures_by_reason"]["local-resource"].as_u64(),
        Some(local),
        "each local-resource attempt ended its request, never retried"
    );
    assert!(w.stderr.contains("ulimit -n"), "{}", w.stderr);
    assert!(w.stderr.contains("200"), "{}", w.stderr);
}

#[test]
fn a_failed_write_leaves_no_temporary_file_and_no_summary() {
    let dir = tmp_dir("reports");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A stale summary from an earlier run, and a directory where index.html must go.
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    std::fs::create_dir_all(out.join("index.html")).unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/downstream-503-10s.toml");
    let o = bin()
        .args(["sim", "--out"])
        .arg(&out)
        .arg(&scenario)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("index.html"), "{stderr}");
    assert!(!out.join("summary.json").exists(), "presented as finished");
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Reading it back says it is unfinished.
    let o = bin().arg("report").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a finished run"));
}
