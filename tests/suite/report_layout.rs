//! The report laid out by a real browser: every shipped scenario's simulated report, opened
//! in headless Chromium at 1400 px by `tests/browser/layout.sh`, has no table or panel that
//! scrolls sideways, no page wider than the window and no two chart labels drawn over each
//! other. The test command installs Chromium; without it this test fails, it never skips.

use std::process::Command;

use crate::support;
use crate::support::process::{bin, tmp_dir};

#[test]
fn every_shipped_scenarios_report_fits_1400_px_in_chromium() {
    let dir = tmp_dir("layout");
    let mut failed = Vec::new();
    for scenario in support::shipped_scenarios() {
        let name = scenario.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.join(&name);
        let run = bin()
            .arg("sim")
            .arg(&scenario)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        // 1 = a gate failed: the report is whole.
        assert!(
            matches!(run.status.code(), Some(0 | 1)),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let layout = Command::new("bash")
            .arg(support::repo_root().join("tests/browser/layout.sh"))
            .arg(out.join("index.html"))
            .arg("1400")
            .output()
            .unwrap();
        eprintln!("{}", String::from_utf8_lossy(&layout.stdout).trim());
        if !layout.status.success() {
            failed.push(format!(
                "{name}:\n{}",
                String::from_utf8_lossy(&layout.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
