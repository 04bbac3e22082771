//! Load from a recording: an nginx access log replayed request for request (`kind =
//! "trace"`), live and in the simulator; a Prometheus `query_range` rate series followed
//! within sampling noise (`kind = "series"`); bad recordings refused before any load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::nginx::Nginx;
use crate::support::process::{bin, exits, tmp_dir, write};
use crate::support::{plan_of, run_live};
use stormrig::metrics::RunResult;
use stormrig::scenario::recording::clock;

/// A live run against nginx that leaves its two access logs: Poisson arrivals at 10 req/s
/// for 5 s, a mix of two paths, no retries. The per-second counts the replay must
/// reproduce come from nginx's own log, not from stormrig's schedule.
fn record_live(dir: &Path) -> (PathBuf, PathBuf) {
    let nginx = Nginx::start_recording();
    let mut plan = plan_of(
        r#"name = "recorded"
seed = 11
duration = "5s"
drain = "2s"

[load]
kind = "poisson"
rate = 10.0

[[load.classes]]
name = "orders"
path = "/api/orders?id=7"
weight = 3.0

[[load.classes]]
name = "health"
path = "/health"

[target]
builtin = "default"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#,
    );
    nginx.target(&mut plan);
    let out = run_live(&plan, false);
    let sent = out.result.configs[0].upstream_requests;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let lines = rt.block_on(nginx.log_with(sent as usize));
    assert_eq!(lines.len() as u64, sent, "nginx logged every request once");
    let combined = dir.join("access.log");
    let json = dir.join("access.json");
    std::fs::copy(nginx.prefix.join("access.log"), &combined).unwrap();
    std::fs::copy(nginx.prefix.join("access.json"), &json).unwrap();
    (combined, json)
}

/// Requests per second of a `combined` log, counted from its own `[$time_local]` stamps,
/// with the first line's second as second 0; and per path prefix.
fn log_seconds(text: &str) -> (Vec<u64>, BTreeMap<String, u64>) {
    let mut per_s: Vec<u64> = Vec::new();
    let mut by_path = BTreeMap::new();
    let mut first = None;
    for line in text.lines() {
        let stamp = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
        let t = clock::time_local(stamp).unwrap() / 1_000_000_000;
        let s = (t - *first.get_or_insert(t)) as usize;
        if per_s.len() <= s {
            per_s.resize(s + 1, 0);
        }
        per_s[s] += 1;
        let path = line.split('"').nth(1).unwrap().split(' ').nth(1).unwrap();
        let class = if path.starts_with("/api/orders") {
            "orders"
        } else {
            "health"
        };
        *by_path.entry(class.to_string()).or_insert(0) += 1;
    }
    (per_s, by_path)
}

fn replay_scenario(dir: &Path, file: &str, format: &str, seconds: usize) -> PathBuf {
    write(
        dir,
        "replay.toml",
        &format!(
            r#"name = "replay"
seed = 2
duration = "{seconds}s"
drain = "2s"

[load]
kind = "trace"
file = "{file}"
format = "{format}"

[[load.classes]]
name = "orders"
path = "/api/orders"

[[load.classes]]
name = "health"
path = "/health"

[target]
builtin = "default"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#
        ),
    )
}

pub(crate) fn plan_at(path: &Path) -> stormrig::plan::Plan {
    let sc = stormrig::scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(path).unwrap();
    stormrig::plan::build(sc, &text).expect("configs resolve")
}

fn arrivals_per_second(result: &RunResult, seconds: usize) -> Vec<u64> {
    let mut v = vec![0; seconds];
    for row in &result.timeseries {
        let s = row.second as usize;
        if s < seconds {
            v[s] = row.downstream_arrivals;
        } else {
            assert_eq!(row.downstream_arrivals, 0, "an arrival after the log's end");
        }
    }
    v
}

fn by_class(result: &RunResult) -> BTreeMap<String, u64> {
    result.configs[0]
        .classes
        .iter()
        .map(|c| (c.name.clone(), c.downstream_arrivals))
        .collect()
}

#[test]
fn an_nginx_log_is_replayed_second_for_second_live_and_simulated() {
    let dir = tmp_dir("trace-replay");
    let (combined, json) = record_live(&dir);
    let text = std::fs::read_to_string(&combined).unwrap();
    let (want, want_classes) = log_seconds(&text);
    assert!(want.len() >= 4, "the live run spans its seconds: {want:?}");
    assert!(
        want.iter().collect::<std::collections::BTreeSet<_>>().len() > 1,
        "Poisson arrivals give seconds of different counts: {want:?}"
    );
    let seconds = want.len();

    let plan = plan_at(&replay_scenario(
        &dir,
        "access.log",
        "nginx-combined",
        seconds,
    ));
    let sim = stormrig::sim::run(&plan, &Default::default()).unwrap();
    assert_eq!(arrivals_per_second(&sim.result, seconds), want, "simulated");
    assert_eq!(by_class(&sim.result), want_classes, "simulated, by path");

    let live = run_live(&plan, false);
    assert_eq!(arrivals_per_second(&live.result, seconds), want, "live");
    assert_eq!(by_class(&live.result), want_classes, "live, by path");
    let c = &live.result.configs[0];
    assert_eq!(c.upstream_requests, c.downstream_arrivals);

    // The JSON log of the same requests, stamped to the millisecond: the same requests,
    // each within a millisecond of its own second's count in the simulator.
    let plan = plan_at(&replay_scenario(
        &dir,
        "access.json",
        "nginx-json",
        seconds + 1,
    ));
    let sim = stormrig::sim::run(&plan, &Default::default()).unwrap();
    let got = arrivals_per_second(&sim.result, seconds + 1);
    assert_eq!(got.iter().sum::<u64>(), want.iter().sum::<u64>());
    assert_eq!(by_class(&sim.result), want_classes, "json, by path");
    let json_text = std::fs::read_to_string(&json).unwrap();
    // `$msec` is seconds with exactly three decimals: milliseconds as an integer.
    let msec: Vec<u64> = json_text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["msec"]
                .as_str()
                .unwrap()
                .replace('.', "")
                .parse()
                .unwrap()
        })
        .collect();
    let mut want_ms = vec![0u64; seconds + 1];
    for m in &msec {
        want_ms[((m - msec[0]) / 1000) as usize] += 1;
    }
    assert_eq!(got, want_ms, "json: per second from the first line's $msec");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Prometheus `query_range` answer of one series, pretty-printed as `curl | jq` shows it.
pub(crate) fn prometheus(start: u64, step: u64, rates: &[f64]) -> String {
    let values: Vec<String> = rates
        .iter()
        .enumerate()
        .map(|(i, r)| format!("        [{}, \"{r}\"]", start + i as u64 * step))
        .collect();
    format!(
        "{{\n  \"status\": \"success\",\n  \"data\": {{\n    \"resultType\": \"matrix\",\n    \
         \"result\": [\n      {{\n        \"metric\": {{\"job\": \"payments\"}},\n        \
         \"values\": [\n{}\n        ]\n      }}\n    ]\n  }}\n}}\n",
        values.join(",\n")
    )
}

fn series_scenario(dir: &Path, file: &str, seconds: u64, extra: &str) -> PathBuf {
    write(
        dir,
        "series.toml",
        &format!(
            r#"name = "series"
seed = 3
duration = "{seconds}s"

[load]
kind = "series"
file = "{file}"
{extra}

[target]
builtin = "default"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#
        ),
    )
}

/// Offered requests per second (upstream starts; the target counted each as an arrival,
/// the last ones of a second maybe in the next).
fn offered(result: &RunResult, seconds: usize) -> Vec<f64> {
    let mut v = vec![0.0; seconds];
    let c = &result.configs[0];
    assert_eq!(c.upstream_requests, c.downstream_arrivals);
    for row in &result.timeseries {
        if (row.second as usize) < seconds {
            v[row.second as usize] = row.upstream_started as f64;
        }
    }
    v
}

/// Pearson's chi-square of observed counts against expected ones.
pub(crate) fn chi_square(observed: &[f64], expected: &[f64]) -> f64 {
    observed
        .iter()
        .zip(expected)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum()
}

/// The 99.9 % quantile of chi-square with 40 degrees of freedom (tables; scipy's
/// `chi2.ppf(0.999, 40)` = 73.40).
const CHI2_40_999: f64 = 73.40;

#[test]
fn a_prometheus_series_is_followed_within_sampling_noise() {
    let dir = tmp_dir("series-prometheus");
    // 40 s of a surge at 5 s steps: the payments API from 100 to 1,200 req/s and back.
    let rates = [100.0, 250.0, 400.0, 800.0, 1200.0, 600.0, 150.0, 50.0];
    write(&dir, "rates.json", &prometheus(1_796_306_520, 5, &rates));
    let expected: Vec<f64> = (0..40).map(|s| rates[s / 5]).collect();

    // Poisson arrivals (the default), seeded: each second's count is Poisson with the
    // step's rate, so Pearson's statistic over the 40 seconds is chi-square with 40
    // degrees of freedom; the seed is fixed, so the figure is the same on every run.
    let plan = plan_at(&series_scenario(&dir, "rates.json", 40, ""));
    let sim = stormrig::sim::run(&plan, &Default::default()).unwrap();
    let got = offered(&sim.result, 40);
    let fit = chi_square(&got, &expected);
    assert!(fit < CHI2_40_999, "chi-square {fit:.1} over 40 s: {got:?}");
    // The test can tell a series it does not follow: the same counts against the series
    // shifted by one step, or against its mean, are far outside the noise.
    let shifted: Vec<f64> = (0..40).map(|s| rates[(s / 5 + 1) % 8]).collect();
    assert!(chi_square(&got, &shifted) > 10.0 * CHI2_40_999);
    let mean = vec![rates.iter().sum::<f64>() / 8.0; 40];
    assert!(chi_square(&got, &mean) > 10.0 * CHI2_40_999);

    // Evenly spaced arrivals follow it exactly: each second holds its step's rate.
    let plan = plan_at(&series_scenario(
        &dir,
        "rates.json",
        40,
        "arrivals = \"constant\"",
    ));
    let sim = stormrig::sim::run(&plan, &Default::default()).unwrap();
    assert_eq!(offered(&sim.result, 40), expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_csv_series_is_windowed_and_compressed() {
    let dir = tmp_dir("series-csv");
    write(
        &dir,
        "rates.csv",
        "time,rate\n2026-12-03T14:02:00Z,100\n2026-12-03T14:02:05Z,300\n\
         2026-12-03T14:02:10Z,200\n2026-12-03T14:02:15Z,40\n",
    );
    // From 5 s to 15 s of the recording at speed 2: 10 s of it in 5 s, at twice the rate,
    // 300 → 600 req/s for 2.5 s, then 200 → 400 req/s; nothing after it in the duration.
    let plan = plan_at(&series_scenario(
        &dir,
        "rates.csv",
        7,
        "arrivals = \"constant\"\nfrom = 5.0\nto = 15.0\nspeed = 2.0",
    ));
    let sim = stormrig::sim::run(&plan, &Default::default()).unwrap();
    assert_eq!(
        offered(&sim.result, 7),
        vec![600.0, 600.0, 500.0, 400.0, 400.0, 0.0, 0.0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `stormrig check` on `scenario` exits 2 before any load, with one line naming `at`.
pub(crate) fn refused(scenario: &Path, at: &str, says: &str) {
    let out = exits(bin().arg("check").arg(scenario), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(at), "expected `{at}` in: {err}");
    assert!(err.contains(says), "expected `{says}` in: {err}");
}

#[test]
fn bad_recordings_are_refused_with_file_line_and_field() {
    let dir = tmp_dir("bad-recordings");
    let d = dir.display();
    // A missing file: the scenario's own line of `load.file`.
    let s = series_scenario(&dir, "absent.csv", 10, "");
    refused(
        &s,
        &format!("{d}/series.toml:7: load.file"),
        "cannot be read",
    );
    // A bad cell, and a time out of order: the recording's line and column.
    write(&dir, "rates.csv", "time,rate\n0,100\n5,many\n");
    let s = series_scenario(&dir, "rates.csv", 10, "");
    refused(&s, &format!("{d}/rates.csv:3: load.file: rate"), "`many`");
    write(&dir, "rates.csv", "0,100\n5,100\n4,100\n");
    refused(
        &s,
        &format!("{d}/rates.csv:3: load.file: time"),
        "not after",
    );
    // The bad-line policy: skipped up to its ceiling, counted; one more is refused.
    write(&dir, "rates.csv", "0,100\nx,1\n5,100\ny,1\n");
    let s = series_scenario(&dir, "rates.csv", 10, "skip_bad_lines = 1");
    refused(
        &s,
        &format!("{d}/rates.csv:4: load.file: time"),
        "1 bad lines skipped",
    );
    let s = series_scenario(&dir, "rates.csv", 10, "skip_bad_lines = 2");
    let out = exits(bin().arg("check").arg(&s), 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("load.file: 2 bad line(s)"),
        "said, not silent: {err}"
    );
    // A Prometheus answer with several series.
    let one = "{\"metric\":{},\"values\":[[1,\"5\"]]}";
    write(
        &dir,
        "many.json",
        &format!(
            "{{\"status\":\"success\",\"data\":{{\"resultType\":\"matrix\",\"result\":[{one},{one}]}}}}"
        ),
    );
    let s = series_scenario(&dir, "many.json", 10, "");
    refused(&s, &format!("{d}/many.json:1: load.file"), "holds 2 series");
    // A duration that does not cover the recording.
    write(&dir, "rates.csv", "0,100\n30,100\n");
    let s = series_scenario(&dir, "rates.csv", 10, "");
    refused(&s, &format!("{d}/series.toml:3: duration"), "or more");
    // An access log out of order, and one with a request line nginx logs as `-`.
    let line = |t: &str, req: &str| {
        format!("127.0.0.1 - - [03/Dec/2026:14:02:{t} +0000] \"{req}\" 200 3 \"-\" \"x\"\n")
    };
    write(
        &dir,
        "access.log",
        &(line("01", "GET /health HTTP/1.1") + &line("00", "GET /health HTTP/1.1")),
    );
    let s = replay_scenario(&dir, "access.log", "nginx-combined", 10);
    refused(
        &s,
        &format!("{d}/access.log:2: load.file: time_local"),
        "before the previous line",
    );
    write(&dir, "access.log", &line("01", "-"));
    refused(&s, &format!("{d}/access.log:1: load.file: request"), "`-`");
    // The planned-arrivals ceiling counts the recording's requests.
    write(
        &dir,
        "access.log",
        &(line("01", "GET /health HTTP/1.1") + &line("01", "GET /health HTTP/1.1")),
    );
    let capped = std::fs::read_to_string(&s).unwrap().replace(
        "format = \"nginx-combined\"",
        "format = \"nginx-combined\"\nmax_planned_arrivals = 1",
    );
    let capped = write(&dir, "capped.toml", &capped);
    refused(&capped, "load.file", "plans 2 arrivals");
    // A path of no class.
    write(&dir, "access.log", &line("01", "GET /admin HTTP/1.1"));
    refused(
        &s,
        &format!("{d}/access.log:1: load.file: request"),
        "`/admin`",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
