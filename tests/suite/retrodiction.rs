//! Retrodiction: a storm recorded with one retry config (naive), replayed from its caller
//! demand and its fault series through three configs. The config the fleet really had
//! reproduces the recorded downstream arrivals within 5 % in total and per 10 s bucket;
//! each other config's replay matches what that config really does in the same storm (a
//! run of the original scenario with it), so the difference `replay-check` reports is what
//! the config changes, computed, not typed.

use std::fmt::Write as _;
use std::path::Path;

use super::recorded_load::plan_at;
use crate::support::process::{bin, exits, tmp_dir, write};
use stormrig::metrics::RunResult;
use stormrig::report::retrodiction::{compare, read_recorded};

const CONFIGS: &str = r#"
[[configs]]
preset = "naive"

[[configs]]
preset = "aws-standard"

[[configs]]
preset = "no-retry"
"#;

/// The incident: Poisson callers at 200 req/s for 60 s, half the requests answered 503
/// from 20 s to 35 s.
fn storm(dir: &Path) -> RunResult {
    let path = write(
        dir,
        "storm.toml",
        &format!(
            r#"name = "storm"
seed = 21
duration = "60s"
drain = "10s"

[load]
kind = "poisson"
rate = 200.0

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
probability = 0.5
at = "20s"
for = "15s"
{CONFIGS}"#
        ),
    );
    stormrig::sim::run(&plan_at(&path), &Default::default())
        .unwrap()
        .result
}

/// Per second of `config`: (upstream started, downstream arrivals), over at least
/// `seconds`.
fn seconds_of(result: &RunResult, config: &str, seconds: usize) -> Vec<(u64, u64)> {
    let mut v = vec![(0, 0); seconds];
    for row in result.timeseries.iter().filter(|r| r.config == config) {
        if v.len() <= row.second as usize {
            v.resize(row.second as usize + 1, (0, 0));
        }
        v[row.second as usize] = (row.upstream_started, row.downstream_arrivals);
    }
    v
}

fn csv(header: &str, values: impl Iterator<Item = String>) -> String {
    let mut out = format!("{header}\n");
    for (s, v) in values.enumerate() {
        let _ = writeln!(out, "{s},{v}");
    }
    out
}

#[test]
fn the_fleets_config_reproduces_its_storm_and_the_others_change_it_by_what_they_do() {
    let dir = tmp_dir("retrodiction");
    let truth = storm(&dir);
    // What the incident left: naive's caller demand and downstream arrivals per second,
    // and the share of 503s per second (the fault schedule as an error-ratio series).
    let naive = seconds_of(&truth, "naive", 70);
    write(
        &dir,
        "demand.csv",
        &csv("time,rate", naive[..60].iter().map(|(u, _)| u.to_string())),
    );
    write(
        &dir,
        "downstream.csv",
        &csv("time,rate", naive.iter().map(|(_, d)| d.to_string())),
    );
    write(
        &dir,
        "errors.csv",
        &csv(
            "time,503",
            (0..60).map(|s| if (20..35).contains(&s) { "0.5" } else { "0" }.to_string()),
        ),
    );
    let replay = write(
        &dir,
        "replay.toml",
        &format!(
            r#"name = "replay"
seed = 22
duration = "60s"
drain = "10s"

[load]
kind = "series"
file = "demand.csv"
arrivals = "constant"

[target]
builtin = "default"

[[faults]]
kind = "status"
series = "errors.csv"
{CONFIGS}"#
        ),
    );
    let rehearsal = stormrig::sim::run(&plan_at(&replay), &Default::default())
        .unwrap()
        .result;
    let recorded = read_recorded(&dir.join("downstream.csv")).unwrap();
    let check = compare(&recorded, &rehearsal, 10, 5.0);
    let fit = |name: &str| check.configs.iter().find(|c| c.config == name).unwrap();
    assert!(fit("naive").reproduces, "{:#?}", fit("naive"));
    assert_eq!(check.reproduced_by.as_deref(), Some("naive"));

    let demand: f64 = naive.iter().map(|(u, _)| *u as f64).sum();
    let recorded_total: f64 = recorded.iter().sum();
    for other in ["aws-standard", "no-retry"] {
        let f = fit(other);
        assert!(!f.reproduces, "{other} is not the fleet's config: {f:#?}");
        // What the config really does in the storm, from the original scenario's run of
        // it: the replay predicts it within 5 % in total and per bucket.
        let real: Vec<f64> = seconds_of(&truth, other, 70)
            .iter()
            .map(|(_, d)| *d as f64)
            .collect();
        let own = compare(&real, &rehearsal, 10, 5.0);
        let own = own.configs.iter().find(|c| c.config == other).unwrap();
        assert!(own.reproduces, "{other} against its own storm: {own:#?}");
        // And so the change replay-check reports is the config's real change.
        let real_change = (real.iter().sum::<f64>() - recorded_total) / recorded_total * 100.0;
        assert!(
            (f.total_change_pct - real_change).abs() < 5.0,
            "{other}: {} % against {real_change} %",
            f.total_change_pct
        );
    }
    // No retries: the rehearsal's downstream is the callers' demand, so its change is the
    // recorded retries, taken away.
    let none = fit("no-retry");
    assert_eq!(none.rehearsed_total, demand);
    assert!((none.rehearsed_amplification - 1.0).abs() < 1e-12);
    assert!(fit("naive").rehearsed_amplification > 1.2, "{check:#?}");

    // The command says the same.
    let out = exits(
        bin()
            .arg("replay-check")
            .arg(&replay)
            .arg("--recorded")
            .arg(dir.join("downstream.csv")),
        0,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("naive reproduces the recording"), "{text}");
    let out = exits(
        bin()
            .arg("replay-check")
            .arg(&replay)
            .arg("--recorded")
            .arg(dir.join("downstream.csv"))
            .arg("--json"),
        0,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["reproduced_by"], "naive");
    // A recording no config reproduces (twice the arrivals): exit 1, said.
    let doubled = csv("time,rate", recorded.iter().map(|d| (2.0 * d).to_string()));
    let twice = write(&dir, "twice.csv", &doubled);
    let out = exits(
        bin()
            .arg("replay-check")
            .arg(&replay)
            .arg("--recorded")
            .arg(&twice),
        1,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no config reproduces"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recorded_scenario_sweeps_its_speed_or_names_the_point_it_cannot_replay() {
    let dir = tmp_dir("sweep-speed");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/recorded-surge.toml");
    exits(
        bin()
            .args(["sweep", "--vary", "load.speed=1..2:1", "--out"])
            .arg(dir.join("ok"))
            .arg(scenario),
        0,
    );
    let table = std::fs::read_to_string(dir.join("ok/sweep.csv")).unwrap();
    let mut points: Vec<(String, String)> = table
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect();
    points.sort();
    assert_eq!(points.len(), 6, "two speeds of three configs: {points:?}");
    assert_eq!(points[0], ("1".into(), "aws-standard".into()));
    assert_eq!(points[5], ("2".into(), "no-retry".into()));
    // At half speed the 45 s recording takes 90 s, past the scenario's duration: the point
    // is refused by name before anything runs.
    let out = exits(
        bin()
            .args(["sweep", "--vary", "load.speed=0.5..1:0.5", "--out"])
            .arg(dir.join("slow"))
            .arg(scenario),
        2,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("point load.speed=0.5") && err.contains("duration: 45s is shorter"),
        "{err}"
    );
    assert!(!dir.join("slow/sweep.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped incident (scenarios/recorded-incident.toml): its trace folds the fleet's
/// retries back by request id, and its replay through naive, the fleet's config,
/// reproduces nginx's recorded arrivals; the others send the service fewer.
#[test]
fn the_shipped_incident_is_reproduced_by_the_fleets_config() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plan = plan_at(&root.join("scenarios/recorded-incident.toml"));
    let log =
        std::fs::read_to_string(root.join("scenarios/recordings/incident-access.json")).unwrap();
    let first_attempts = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["request_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    let result = stormrig::sim::run(&plan, &Default::default())
        .unwrap()
        .result;
    for c in &result.configs {
        assert_eq!(
            c.upstream_requests, first_attempts,
            "{}: the callers' demand",
            c.name
        );
    }
    let recorded = read_recorded(&root.join("scenarios/recordings/incident-rates.json")).unwrap();
    assert_eq!(recorded.iter().sum::<f64>(), log.lines().count() as f64);
    let check = compare(&recorded, &result, 10, 5.0);
    assert_eq!(check.reproduced_by.as_deref(), Some("naive"), "{check:#?}");
    for other in ["aws-standard", "no-retry"] {
        let f = check.configs.iter().find(|c| c.config == other).unwrap();
        assert!(f.total_change_pct < -5.0, "{other}: {f:#?}");
    }
}
