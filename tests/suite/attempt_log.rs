//! `attempts.csv` (`--attempt-log`) holds a row per attempt sent and a row per retry a
//! budget refused (no `sent_s`): a reader counting refusals in the log finds the summary's
//! figure, in both engines. Its text cells are neutralised for spreadsheets as summary.csv's.

use std::path::PathBuf;

use crate::support::{self, plan_of};
use stormrig::metrics::{AttemptRow, RunResult};
use stormrig::sim::{self, SimOptions};

/// An outage long enough to drain each budget kind, short enough to run live in seconds.
/// One config name starts with a character a spreadsheet reads as a formula.
const DRAINS: &str = r#"
name = "drains"
seed = 11
duration = "3s"
drain = "3s"

[load]
kind = "constant"
rate = 200

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "500ms"
for = "2s"

[[configs]]
name = "aws"
preset = "aws-standard"

[[configs]]
name = "-grpc"
preset = "grpc"

[[configs]]
name = "envoy"
preset = "envoy"
"#;

/// Per config: the refused rows (outcome `refused`, no `sent_s`) equal the summary's budget
/// refusals, the sent rows its attempts; and there was something to count.
fn assert_one_row_per_refusal(result: &RunResult, rows: &[AttemptRow]) {
    for c in &result.configs {
        let mine: Vec<&AttemptRow> = rows.iter().filter(|r| r.config == c.name).collect();
        let refused = mine.iter().filter(|r| r.outcome == "refused").count() as u64;
        let unsent = mine.iter().filter(|r| r.sent_s.is_none()).count() as u64;
        let sent = mine.iter().filter(|r| r.sent_s.is_some()).count() as u64;
        assert!(
            c.budget_refusals > 0,
            "{}: the outage drains the budget",
            c.name
        );
        assert_eq!(refused, c.budget_refusals, "{}", c.name);
        assert_eq!(
            unsent, refused,
            "{}: a refused retry was never sent",
            c.name
        );
        assert_eq!(sent, c.attempts, "{}", c.name);
        // A refused row follows its request's last sent attempt, numbered one above it.
        for r in mine.iter().filter(|r| r.outcome == "refused") {
            let last = mine
                .iter()
                .filter(|s| s.request == r.request && s.sent_s.is_some())
                .map(|s| s.attempt)
                .max();
            assert_eq!(last.map(|a| a + 1), Some(r.attempt), "{}: {r:?}", c.name);
        }
    }
}

#[test]
fn the_simulator_logs_one_row_per_refused_retry() {
    let out = sim::run(
        &plan_of(DRAINS),
        &SimOptions {
            attempt_log: true,
            ..SimOptions::default()
        },
    )
    .unwrap();
    assert_one_row_per_refusal(&out.result, &out.attempts);
}

#[test]
fn a_live_run_logs_one_row_per_refused_retry() {
    let out = support::run_live(&plan_of(DRAINS), true);
    assert_one_row_per_refusal(&out.result, &out.attempts);
}

#[test]
fn attempts_csv_cells_are_safe_to_open_in_a_spreadsheet() {
    let dir = std::env::temp_dir().join(format!("stormrig-attempts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("drains.toml");
    std::fs::write(&scenario, DRAINS).unwrap();
    let out = dir.join("run");
    support::process::succeed(
        crate::support::process::bin()
            .args(["sim", "--quiet", "--attempt-log", "--out"])
            .arg(&out)
            .arg(&scenario),
    );
    let text = std::fs::read_to_string(PathBuf::from(&out).join("attempts.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("config,request,attempt,sent_s,outcome,budget_after")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let configs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        configs,
        ["'-grpc", "aws", "envoy"].into_iter().collect(),
        "a name read as a formula is quoted"
    );
    // Numbers stay numbers: every sent_s and budget_after cell parses, none is quoted.
    for r in &rows {
        for cell in [r[1], r[2], r[3], r[5]] {
            assert!(cell.is_empty() || cell.parse::<f64>().is_ok(), "{r:?}");
        }
    }
    let refused = rows.iter().filter(|r| r[4] == "refused").count();
    assert!(refused > 0);
    assert!(rows
        .iter()
        .filter(|r| r[4] == "refused")
        .all(|r| r[3].is_empty()));
    std::fs::remove_dir_all(&dir).ok();
}
