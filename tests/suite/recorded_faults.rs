//! Faults from a recording (`[[faults]] series = FILE`): a Prometheus rate series and an
//! error-ratio series of the same incident drive a replay whose offered rate and failure
//! share follow them second by second, live and simulated; a latency series is added in the
//! seconds it covers; bad fault series are refused at `check` by file, line and field.

use std::path::{Path, PathBuf};

use super::recorded_load::{chi_square, plan_at, prometheus, refused};
use crate::support::process::{bin, exits, tmp_dir, write};
use crate::support::run_live;
use stormrig::metrics::RunResult;

/// The 99.9 % quantile of chi-square with 10 degrees of freedom (tables; scipy's
/// `chi2.ppf(0.999, 10)` = 29.59).
const CHI2_10_999: f64 = 29.59;

const START: u64 = 1_796_306_520;

fn scenario(dir: &Path, load: &str, faults: &str, seconds: u64) -> PathBuf {
    write(
        dir,
        "faults.toml",
        &format!(
            r#"name = "fault-series"
seed = 5
duration = "{seconds}s"
drain = "2s"

[load]
{load}

{faults}

[target]
builtin = "default"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#
        ),
    )
}

/// Per second: requests offered (upstream starts), and (finished, failed).
fn per_second(result: &RunResult, seconds: usize) -> (Vec<f64>, Vec<(f64, f64)>) {
    let c = &result.configs[0];
    assert_eq!(c.upstream_requests, c.downstream_arrivals, "no retries");
    let mut offered = vec![0.0; seconds];
    let mut outcome = vec![(0.0, 0.0); seconds];
    for row in &result.timeseries {
        let s = row.second as usize;
        if s < seconds {
            offered[s] = row.upstream_started as f64;
            outcome[s] = (row.upstream_finished as f64, row.failures as f64);
        }
    }
    (offered, outcome)
}

/// Pearson's statistic of failures against binomial(finished, p) per second.
fn share_fit(outcome: &[(f64, f64)], p: &[f64]) -> f64 {
    outcome
        .iter()
        .zip(p)
        .map(|(&(n, f), &p)| (f - n * p) * (f - n * p) / (n * p * (1.0 - p)))
        .sum()
}

#[test]
fn a_prometheus_rate_and_error_ratio_drive_the_replay_live_and_simulated() {
    let dir = tmp_dir("fault-series");
    // 10 s of an incident at 2 s steps: the rate climbs and falls, the error ratio (the
    // 503s' share, as `sum(rate(..{code="503"}[1m])) / sum(rate(..[1m]))` answers it)
    // peaks with it.
    let rates = [40.0, 80.0, 160.0, 120.0, 60.0];
    let errors = [0.05, 0.2, 0.5, 0.3, 0.1];
    write(&dir, "rates.json", &prometheus(START, 2, &rates));
    write(&dir, "errors.json", &prometheus(START, 2, &errors));
    let path = scenario(
        &dir,
        "kind = \"series\"\nfile = \"rates.json\"",
        "[[faults]]\nkind = \"status\"\nstatus = 503\nseries = \"errors.json\"",
        10,
    );
    let plan = plan_at(&path);
    assert_eq!(plan.scenario.faults.len(), 5, "one window per step");
    let want_rate: Vec<f64> = (0..10).map(|s| rates[s / 2]).collect();
    let want_share: Vec<f64> = (0..10).map(|s| errors[s / 2]).collect();
    // The same counts against a flat error ratio (the incident's mean): the test can tell.
    let flat = vec![errors.iter().sum::<f64>() / 5.0; 10];

    let sim = stormrig::sim::run(&plan, &Default::default())
        .unwrap()
        .result;
    let live = run_live(&plan, false).result;
    for (engine, result) in [("simulated", &sim), ("live", &live)] {
        let (offered, outcome) = per_second(result, 10);
        let rate_fit = chi_square(&offered, &want_rate);
        assert!(
            rate_fit < CHI2_10_999,
            "{engine}: offered chi-square {rate_fit:.1}: {offered:?}"
        );
        let fit = share_fit(&outcome, &want_share);
        assert!(
            fit < CHI2_10_999,
            "{engine}: failure-share chi-square {fit:.1}: {outcome:?}"
        );
        let off = share_fit(&outcome, &flat);
        assert!(
            off > 3.0 * CHI2_10_999,
            "{engine}: a flat ratio must not fit ({off:.1}): {outcome:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_status_mix_and_a_latency_series_act_in_their_seconds() {
    let dir = tmp_dir("fault-series-mix");
    // A CSV mix: 503s and 429s in shares of their own, from 2 s to 6 s.
    write(
        &dir,
        "mix.csv",
        "time,503,429\n0,0,0\n2,0.3,0.2\n4,0.1,0.6\n6,0,0\n",
    );
    // 300 ms added from 6 s to 8 s, after the failures.
    write(&dir, "slow.csv", "time,value\n0,0\n2,0\n4,0\n6,0.3\n8,0\n");
    let path = scenario(
        &dir,
        "kind = \"constant\"\nrate = 200.0",
        "[[faults]]\nkind = \"status\"\nseries = \"mix.csv\"\n\n\
         [[faults]]\nkind = \"latency\"\nseries = \"slow.csv\"",
        10,
    );
    let plan = plan_at(&path);
    let sim = stormrig::sim::run(&plan, &Default::default())
        .unwrap()
        .result;
    let (_, outcome) = per_second(&sim, 10);
    let want = [0.0, 0.0, 0.5, 0.5, 0.7, 0.7, 0.0, 0.0, 0.0, 0.0];
    for (s, (&(_, f), &p)) in outcome.iter().zip(&want).enumerate() {
        if p == 0.0 {
            assert_eq!(f, 0.0, "second {s}: no fault, no failure");
        }
    }
    let fit = share_fit(&outcome[2..6], &want[2..6]);
    assert!(
        fit < 18.47,
        "chi-square(4) 99.9 % is 18.47: {fit:.1} {outcome:?}"
    );
    // Each status has its own share: 503 then 429, the first failing fault in file order
    // wins a request, and the series' shares are kept anyway.
    let bands: Vec<(f64, String)> = sim
        .faults
        .iter()
        .map(|b| (b.start_s, b.described()))
        .collect();
    assert_eq!(bands.len(), 5, "{bands:?}");
    for (b, want) in sim.faults.iter().zip([0.3, 0.2 / 0.7, 0.1, 0.6 / 0.9]) {
        assert!((b.probability - want).abs() < 1e-12, "{bands:?}");
    }
    // The latency series: requests finishing in seconds 6 and 7 took 300 ms more.
    for row in &sim.timeseries {
        let slow = (6..=7).contains(&row.second);
        if row.second < 10 && row.successes > 0 {
            assert_eq!(
                row.latency_p50_ms >= 300.0,
                slow,
                "second {}: p50 {} ms",
                row.second,
                row.latency_p50_ms
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_fault_series_are_refused_with_file_line_and_field() {
    let dir = tmp_dir("bad-fault-series");
    let d = dir.display();
    let s = |hours: u64, extra: &str| {
        scenario(
            &dir,
            "kind = \"constant\"\nrate = 10.0",
            &format!("[[faults]]\nkind = \"status\"\nseries = \"errors.csv\"\n{extra}"),
            hours * 3600,
        )
    };
    let at = |line: usize, what: &str| format!("{d}/errors.csv:{line}: faults[0].series: {what}");
    // Unparseable, out of order, shares above 1, a column that names no status.
    write(&dir, "errors.csv", "time,503\n0,0.1\n2,lots\n");
    refused(&s(1, "status = 503"), &at(3, "value"), "`lots`");
    write(&dir, "errors.csv", "time,503\n0,0.1\n4,0.1\n2,0.1\n");
    refused(&s(1, ""), &at(4, "time"), "not after");
    write(&dir, "errors.csv", "time,503,500\n0,0.6,0.6\n");
    refused(&s(1, ""), &at(2, "value"), "add up to 1.2");
    write(&dir, "errors.csv", "time,oops\n0,0.1\n");
    refused(
        &s(1, ""),
        "faults[0].series",
        "column `oops` names no status code",
    );
    // A gap: refused at the point after it, or read as no fault and counted when asked.
    write(&dir, "errors.csv", "0,0.1\n2,0.1\n4,0.1\n10,0.1\n");
    refused(&s(1, "status = 503"), &at(4, "time"), "a gap");
    let ok = s(1, "status = 503\ngaps = \"none\"");
    let out = exits(bin().arg("check").arg(&ok), 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("faults[0].series: 0 bad line(s)"), "{err}");
    assert!(err.contains("1 gap(s) read as no fault"), "{err}");
    // A 6 h recording at one step per second (21,600 windows) is taken; past the ceiling,
    // more windows are refused by name.
    let rows: String = (0..61_300)
        .map(|i| format!("{i},{}\n", if i % 2 == 0 { 0.1 } else { 0.2 }))
        .collect();
    write(&dir, "errors.csv", &rows);
    let out = exits(bin().arg("check").arg(s(6, "status = 503")), 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("21600 faults"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    refused(
        &s(17, "status = 503"),
        "faults[0].series",
        "more than 60000 fault windows",
    );
    // A file past the bounded reader's limit is not read at all.
    let f = std::fs::File::create(dir.join("errors.csv")).unwrap();
    f.set_len((256 << 20) + 1).unwrap();
    refused(
        &s(1, "status = 503"),
        "faults[0].series",
        "larger than 256 MiB",
    );
    // A fault kind that takes no series, and `for` beside a series.
    write(&dir, "errors.csv", "0,0.1\n");
    let reset = std::fs::read_to_string(s(1, ""))
        .unwrap()
        .replace("\"status\"", "\"reset\"");
    refused(
        &write(&dir, "reset.toml", &reset),
        "faults[0].series",
        "takes no series",
    );
    refused(
        &s(1, "status = 503\nfor = \"5s\""),
        "faults[0].for",
        "remove `for`",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
