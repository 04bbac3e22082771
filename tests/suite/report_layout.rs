//! The report laid out by a real browser: every shipped scenario's simulated report, opened
//! in headless Chromium at 1400 px by `tests/browser/layout.sh`, has no table or panel that
//! scrolls sideways, no page wider than the window and no two chart labels drawn over each
//! other. The test command installs Chromium; without it this test fails, it never skips.

use std::process::Command;

use crate::support;
use crate::support::process::tmp_dir;

#[test]
fn every_shipped_scenarios_report_fits_1400_px_in_chromium() {
    let mut failed = Vec::new();
    for sim in support::simulate_every_shipped(&tmp_dir("layout"), &["--quiet"]) {
        let layout = Command::new("bash")
            .arg(support::repo_root().join("tests/browser/layout.sh"))
            .arg(sim.out.join("index.html"))
            .arg("1400")
            .output()
            .unwrap();
        eprintln!("{}", String::from_utf8_lossy(&layout.stdout).trim());
        if !layout.status.success() {
            failed.push(format!(
                "{}:\n{}",
                sim.name,
                String::from_utf8_lossy(&layout.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
