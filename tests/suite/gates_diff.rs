//! Run-to-run diff: planted regression, no regression, tolerance parsing, and a round trip
//! through the run files.

use stormrig::report::diff::{
    diff, has_regression, mismatch, parse_options, parse_tolerance, table, timing_free,
    DiffOptions, DiffRow, RowStatus, Tolerance,
};
use stormrig::report::files;

use crate::support;
use stormrig::metrics::{Engine, RunResult};
use support::{config, run};

fn baseline() -> RunResult {
    run(vec![
        config("aws-standard", 1.25, 700.0, 3),
        config("naive", 2.5, 900.0, 0),
    ])
}

/// The same relative tolerance for every figure, as `--tolerance 10%` gives.
fn tol(share: f64) -> DiffOptions {
    DiffOptions {
        all: Some(share),
        ..DiffOptions::default()
    }
}

fn row<'a>(rows: &'a [DiffRow], config: &str, figure: &str) -> &'a DiffRow {
    rows.iter()
        .find(|r| r.config == config && r.figure == figure)
        .unwrap_or_else(|| panic!("no row {config}/{figure}"))
}

#[test]
fn identical_runs_have_no_regression() {
    let rows = diff(&baseline(), &baseline(), &tol(0.10));
    assert_eq!(rows.len(), 2 * 14);
    assert!(!has_regression(&rows));
    let r = row(&rows, "naive", "amplification");
    assert_eq!(
        (r.baseline, r.now, r.change_pct, r.regression, r.status),
        (Some(2.5), Some(2.5), Some(0.0), false, RowStatus::Compared)
    );
    // Baseline 0 and now 0: no change.
    let r = row(&rows, "naive", "budget_refusals");
    assert_eq!((r.change_pct, r.regression), (Some(0.0), false));
}

#[test]
fn planted_regression_is_found_and_tolerance_respected() {
    let mut now = baseline();
    now.configs[1].amplification = 3.0; // +20 %: beyond 10 %
    now.configs[1].latency_ms.p99 = 950.0; // +5.6 %: within 10 %
    now.configs[0].latency_ms.p50 = 6.0; // −50 %: an improvement
    let rows = diff(&baseline(), &now, &tol(0.10));
    assert!(has_regression(&rows));
    let bad: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.regression)
        .map(|r| (r.config.as_str(), r.figure.as_str()))
        .collect();
    assert_eq!(bad, vec![("naive", "amplification")]);
    let r = row(&rows, "naive", "amplification");
    assert_eq!((r.baseline, r.now), (Some(2.5), Some(3.0)));
    assert!((r.change_pct.unwrap() - 20.0).abs() < 1e-9);
    let r = row(&rows, "aws-standard", "latency_ms.p50");
    assert_eq!((r.change_pct, r.regression), (Some(-50.0), false));
    // A looser tolerance lets the same change through.
    assert!(!has_regression(&diff(&baseline(), &now, &tol(0.25))));
}

#[test]
fn direction_zero_baseline_and_nulls() {
    let mut now = baseline();
    now.configs[1].budget_refusals = 1; // baseline 0: any increase counts
    now.configs[0].successes = 800; // success share 0.95 → 0.80: higher is better, so worse
    now.configs[0].recovery_time_s = None; // never recovered where the baseline did
    let rows = diff(&baseline(), &now, &tol(0.10));
    let r = row(&rows, "naive", "budget_refusals");
    assert_eq!((r.change_pct, r.regression), (None, true));
    let r = row(&rows, "aws-standard", "success_share");
    assert_eq!(
        (r.baseline, r.now, r.regression),
        (Some(0.95), Some(0.8), true)
    );
    let r = row(&rows, "aws-standard", "recovery_time_s");
    assert_eq!(
        (r.baseline, r.now, r.change_pct, r.regression),
        (Some(4.0), None, None, true)
    );

    // More successes and a recovery where there was none: improvements.
    let rows = diff(&now, &baseline(), &tol(0.10));
    let r = row(&rows, "aws-standard", "success_share");
    assert!(!r.regression);
    let r = row(&rows, "aws-standard", "recovery_time_s");
    assert_eq!((r.baseline, r.now, r.regression), (None, Some(4.0), false));
    let r = row(&rows, "naive", "budget_refusals");
    assert_eq!((r.change_pct, r.regression), (Some(-100.0), false));
}

#[test]
fn added_and_removed_configs_are_listed_not_regressions() {
    let mut now = baseline();
    now.configs.remove(0);
    now.configs.push(config("token-bucket", 9.0, 5000.0, 0));
    let rows = diff(&baseline(), &now, &tol(0.10));
    assert!(!has_regression(&rows));
    let statuses: Vec<(&str, RowStatus)> = rows
        .iter()
        .filter(|r| r.figure == "amplification")
        .map(|r| (r.config.as_str(), r.status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("aws-standard", RowStatus::Removed),
            ("naive", RowStatus::Compared),
            ("token-bucket", RowStatus::Added)
        ]
    );
    let r = row(&rows, "token-bucket", "amplification");
    assert_eq!((r.baseline, r.now), (None, Some(9.0)));
    let r = row(&rows, "aws-standard", "amplification");
    assert_eq!((r.baseline, r.now), (Some(1.25), None));
}

#[test]
fn tolerance_parsing() {
    assert_eq!(parse_tolerance("10%"), Ok(0.10));
    assert_eq!(parse_tolerance(" 2.5 % "), Ok(0.025));
    assert_eq!(parse_tolerance("0.1"), Ok(0.1));
    assert_eq!(parse_tolerance("0"), Ok(0.0));
    assert_eq!(parse_tolerance("200%"), Ok(2.0));
    assert_eq!(
        parse_tolerance("10").unwrap_err().to_string(),
        r#"tolerance "10": ambiguous: write a percentage such as "10%" or a share such as "0.1""#
    );
    assert_eq!(
        parse_tolerance("-5%").unwrap_err().to_string(),
        r#"tolerance "-5%": must be a finite number not below 0"#
    );
    assert_eq!(
        parse_tolerance("lots").unwrap_err().to_string(),
        r#"tolerance "lots": expected a share such as "10%" or "0.1""#
    );
    assert!(parse_tolerance("inf").is_err());
    assert!(parse_tolerance("").is_err());
}

#[test]
fn table_shows_change_allowance_and_verdict() {
    let mut b = baseline();
    b.configs.truncate(1);
    let mut now = b.clone();
    now.configs[0].amplification = 1.5;
    let rows = diff(&b, &now, &tol(0.10));
    let shown: Vec<DiffRow> = rows
        .into_iter()
        .filter(|r| r.figure.contains("amplification"))
        .collect();
    let t = table(&shown);
    let expected = "\
CONFIG        FIGURE                 BASELINE  NOW  CHANGE   ALLOWED  RESULT
------------  ---------------------  --------  ---  -------  -------  ----------
aws-standard  amplification          1.25      1.5  +20.0 %  ±10 %    REGRESSION
aws-standard  peak_amplification_1s  2.5       2.5  0 %      ±10 %    ok
1 regression beyond tolerance
";
    assert_eq!(t, expected);
}

#[test]
fn diff_round_trips_through_run_files() {
    let root = std::env::temp_dir().join(format!("stormrig-gates-diff-{}", std::process::id()));
    let (bdir, ndir) = (root.join("baseline"), root.join("now"));
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&ndir).unwrap();
    let mut now = baseline();
    now.configs[0].latency_ms.p999 = 2000.0; // baseline 1400: +42.9 %
    files::write_data(&bdir, &baseline()).unwrap();
    files::write_data(&ndir, &now).unwrap();
    let (b, n) = (
        files::read_data(&bdir).unwrap(),
        files::read_data(&ndir).unwrap(),
    );
    assert_eq!(b, baseline());
    let rows = diff(&b, &n, &tol(0.10));
    assert!(has_regression(&rows));
    let bad: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.regression)
        .map(|r| (r.config.as_str(), r.figure.as_str()))
        .collect();
    assert_eq!(bad, vec![("aws-standard", "latency_ms.p999")]);
    assert!(!has_regression(&diff(&b, &b, &tol(0.10))));
    std::fs::remove_dir_all(&root).unwrap();
}

/// The same run measured live: budgets, backoff and a deadline make a config's counts
/// depend on timing; naive's do not.
fn live(configs: Vec<stormrig::metrics::ConfigSummary>) -> RunResult {
    let mut r = run(configs);
    r.engine = Engine::Live;
    r
}

fn live_baseline() -> RunResult {
    let mut envoy = config("envoy", 1.4, 30.0, 363);
    envoy.policy = serde_json::json!({
        "max_attempts": 2, "budget": {"kind": "envoy"}, "backoff": {"kind": "exponential"},
        "deadline": "15s"
    });
    let mut naive = config("naive", 2.5, 3.0, 0);
    naive.policy = serde_json::json!({
        "max_attempts": 4, "budget": {"kind": "none"}, "backoff": {"kind": "none"}
    });
    naive.latency_ms.p50 = 1.40;
    live(vec![envoy, naive])
}

/// What two live runs of the same seed measured on a shared runner a minute apart: latency
/// and the timing-dependent counts moved, the seed-fixed ones did not.
#[test]
fn live_noise_is_not_a_regression_by_default() {
    let mut now = live_baseline();
    now.configs[1].latency_ms.p50 = 2.12; // +51 %, but 0.72 ms
    now.configs[1].latency_ms.p99 = 4.5; // +50 %, 1.5 ms
    now.configs[0].budget_refusals = 407; // +12 %
    now.configs[0].downstream_arrivals += 20; // +1.4 %
    now.configs[0].amplification *= 1.01;
    now.configs[0].peak_concurrency = 14; // 3 → 14 seen between two runs of the main job
    now.configs[1].latency_ms.p999 *= 4.0; // a handful of requests decide it
    let rows = diff(&live_baseline(), &now, &DiffOptions::default());
    assert!(!has_regression(&rows), "{}", table(&rows));
    // The allowance of each class is shown.
    let r = row(&rows, "naive", "latency_ms.p50");
    assert_eq!(r.tolerance.unwrap().describe(), "±25 % ≥10");
    let r = row(&rows, "naive", "latency_ms.p999");
    assert_eq!(r.tolerance.unwrap().describe(), "not gated");
    let r = row(&rows, "naive", "downstream_arrivals");
    assert_eq!(r.tolerance.unwrap().describe(), "±0.5 %");
    let r = row(&rows, "envoy", "downstream_arrivals");
    assert_eq!(r.tolerance.unwrap().describe(), "±5 % ≥10");
}

#[test]
fn live_defaults_catch_a_planted_regression() {
    // +20 % amplification of the timed config: beyond its 5 %.
    let mut now = live_baseline();
    now.configs[0].amplification *= 1.2;
    let rows = diff(&live_baseline(), &now, &DiffOptions::default());
    let bad: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.regression)
        .map(|r| (r.config.as_str(), r.figure.as_str()))
        .collect();
    assert_eq!(bad, vec![("envoy", "amplification")]);
    // Seed-fixed counts of a timer-free config: a few attempts more is a regression.
    let mut now = live_baseline();
    now.configs[1].downstream_arrivals += 30; // 2500 → 2530: +1.2 %
    let rows = diff(&live_baseline(), &now, &DiffOptions::default());
    assert!(row(&rows, "naive", "downstream_arrivals").regression);
    // A latency regression well beyond the floor.
    let mut now = live_baseline();
    now.configs[0].latency_ms.p99 = 45.0; // 30 → 45 ms: +50 %, 15 ms
    assert!(
        row(
            &diff(&live_baseline(), &now, &DiffOptions::default()),
            "envoy",
            "latency_ms.p99"
        )
        .regression
    );
}

#[test]
fn simulator_runs_compare_exactly_by_default() {
    let mut now = baseline();
    now.configs[0].latency_ms.p50 += 0.001;
    let rows = diff(&baseline(), &now, &DiffOptions::default());
    let r = row(&rows, "aws-standard", "latency_ms.p50");
    assert!(r.regression);
    assert_eq!(r.tolerance, Some(Tolerance::EXACT));
    assert!(!has_regression(&diff(
        &baseline(),
        &baseline(),
        &DiffOptions::default()
    )));
}

#[test]
fn per_figure_tolerances_override_the_class() {
    let o = parse_options(&["latency_ms.p99=30%,5".into(), "retries=0".into()]).unwrap();
    assert_eq!(
        o.per_figure["latency_ms.p99"],
        Tolerance {
            relative: 0.3,
            absolute: 5.0
        }
    );
    assert_eq!(o.per_figure["retries"].describe(), "exact");
    assert_eq!(o.all, None);
    assert_eq!(parse_options(&["5%".into()]).unwrap().all, Some(0.05));
    let e = parse_options(&["p99=10%".into()]).unwrap_err().to_string();
    assert!(
        e.contains("unknown figure \"p99\"") && e.contains("latency_ms.p99"),
        "{e}"
    );
    assert!(parse_options(&["retries=10%,lots".into()]).is_err());

    let mut now = live_baseline();
    now.configs[0].latency_ms.p99 = 45.0;
    let o = parse_options(&["latency_ms.p99=60%".into()]).unwrap();
    assert!(!has_regression(&diff(&live_baseline(), &now, &o)));
}

#[test]
fn runs_of_different_experiments_are_told_apart() {
    let a = live_baseline();
    let mut b = a.clone();
    assert_eq!(mismatch(&a, &b), Default::default());
    b.scenario = "other".into();
    b.engine = Engine::Sim;
    b.seed = 8;
    let m = mismatch(&a, &b);
    assert_eq!(m.fatal.len(), 2, "{m:?}");
    assert!(m.fatal[0].contains("scenario") && m.fatal[1].contains("engine"));
    assert!(m.warnings[0].contains("seed"));
    // Another seed: naive's seed-fixed counts are no longer held to the seed's precision.
    let mut c = a.clone();
    c.seed = 8;
    c.configs[1].downstream_arrivals += 30;
    assert!(!has_regression(&diff(&a, &c, &DiffOptions::default())));
}

#[test]
fn timing_free_reads_the_resolved_policy() {
    use serde_json::json;
    assert!(timing_free(
        &json!({"budget": {"kind": "none"}, "backoff": {"kind": "none"}})
    ));
    assert!(!timing_free(&json!({"budget": {"kind": "aws-quota"}})));
    assert!(!timing_free(&json!({"backoff": {"kind": "exponential"}})));
    assert!(!timing_free(&json!({"per_try_timeout": "100ms"})));
    assert!(!timing_free(&json!({"breaker": {"failure_threshold": 5}})));
}

/// The command refuses runs of different scenarios unless forced, and says so on stderr.
#[test]
fn cli_refuses_different_scenarios_unless_forced() {
    let root = std::env::temp_dir().join(format!("stormrig-diff-cli-{}", std::process::id()));
    let (bdir, ndir) = (root.join("a"), root.join("b"));
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&ndir).unwrap();
    let mut other = baseline();
    other.scenario = "another".into();
    files::write_data(&bdir, &baseline()).unwrap();
    files::write_data(&ndir, &other).unwrap();
    let bin = env!("CARGO_BIN_EXE_stormrig");
    let out = std::process::Command::new(bin)
        .args(["diff".as_ref(), bdir.as_os_str(), ndir.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scenario") && err.contains("--force"), "{err}");
    let out = support::process::succeed(std::process::Command::new(bin).args([
        "diff".as_ref(),
        bdir.as_os_str(),
        ndir.as_os_str(),
        "--force".as_ref(),
    ]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: the runs differ in scenario"));
    std::fs::remove_dir_all(&root).unwrap();
}

/// A diff names what changed in what was run (a policy field, the scenario file) beside
/// the figures, and `--changed-only` keeps the rows that moved and only those.
#[test]
fn cli_names_the_edit_and_keeps_only_changed_rows() {
    let root = std::env::temp_dir().join(format!("stormrig-diff-edit-{}", std::process::id()));
    let (bdir, ndir) = (root.join("a"), root.join("b"));
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&ndir).unwrap();
    let mut base = baseline();
    base.configs[0].policy = serde_json::json!({"max_attempts": 3, "backoff": {"base_ms": 50}});
    let mut now = base.clone();
    now.configs[0].policy = serde_json::json!({"max_attempts": 5, "backoff": {"base_ms": 50}});
    now.configs[0].attempts += 100;
    files::write_data(&bdir, &base).unwrap();
    files::write_data(&ndir, &now).unwrap();
    let bin = env!("CARGO_BIN_EXE_stormrig");
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(["diff".as_ref(), bdir.as_os_str(), ndir.as_os_str()])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let all = run(&[]);
    assert!(
        all.contains("aws-standard: policy.max_attempts 3 → 5"),
        "{all}"
    );
    assert!(!all.contains("policy.backoff.base_ms"), "{all}");
    let changed = run(&["--changed-only"]);
    let rows = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("aws-standard") || l.starts_with("naive"))
            .count()
    };
    let moved: Vec<&str> = changed
        .lines()
        .filter(|l| l.starts_with("aws-standard") || l.starts_with("naive"))
        .collect();
    assert!(
        !moved.is_empty() && rows(&changed) < rows(&all),
        "{changed}"
    );
    assert!(
        moved.iter().all(|l| l.starts_with("aws-standard")),
        "naive did not move: {changed}"
    );
    assert!(moved.iter().any(|l| l.contains("attempts")), "{changed}");
    std::fs::remove_dir_all(&root).unwrap();
}
