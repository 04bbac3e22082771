//! Run-to-run diff: planted regression, no regression, tolerance parsing, and a round trip
//! through the run files.

use stormrig::report::diff::{diff, has_regression, parse_tolerance, table, DiffRow, RowStatus};
use stormrig::report::files;

use crate::support;
use stormrig::metrics::RunResult;
use support::{config, run};

fn baseline() -> RunResult {
    run(vec![
        config("aws-standard", 1.25, 700.0, 3),
        config("naive", 2.5, 900.0, 0),
    ])
}

fn row<'a>(rows: &'a [DiffRow], config: &str, figure: &str) -> &'a DiffRow {
    rows.iter()
        .find(|r| r.config == config && r.figure == figure)
        .unwrap_or_else(|| panic!("no row {config}/{figure}"))
}

#[test]
fn identical_runs_have_no_regression() {
    let rows = diff(&baseline(), &baseline(), 0.10);
    assert_eq!(rows.len(), 2 * 12);
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
    let rows = diff(&baseline(), &now, 0.10);
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
    assert!(!has_regression(&diff(&baseline(), &now, 0.25)));
}

#[test]
fn direction_zero_baseline_and_nulls() {
    let mut now = baseline();
    now.configs[1].budget_refusals = 1; // baseline 0: any increase counts
    now.configs[0].successes = 800; // success share 0.95 → 0.80: higher is better, so worse
    now.configs[0].recovery_time_s = None; // never recovered where the baseline did
    let rows = diff(&baseline(), &now, 0.10);
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
    let rows = diff(&now, &baseline(), 0.10);
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
    let rows = diff(&baseline(), &now, 0.10);
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
fn table_shows_change_and_verdict() {
    let mut b = baseline();
    b.configs.truncate(1);
    let mut now = b.clone();
    now.configs[0].amplification = 1.5;
    let rows = diff(&b, &now, 0.10);
    let t = table(&rows[..2]);
    let expected = "\
CONFIG        FIGURE                 BASELINE  NOW  CHANGE  RESULT
------------  ---------------------  --------  ---  ------  ----------
aws-standard  amplification          1.25      1.5  +20.0%  REGRESSION
aws-standard  peak_amplification_1s  2.5       2.5  0%      ok
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
    let rows = diff(&b, &n, 0.10);
    assert!(has_regression(&rows));
    let bad: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.regression)
        .map(|r| (r.config.as_str(), r.figure.as_str()))
        .collect();
    assert_eq!(bad, vec![("aws-standard", "latency_ms.p999")]);
    assert!(!has_regression(&diff(&b, &b, 0.10)));
    std::fs::remove_dir_all(&root).unwrap();
}
