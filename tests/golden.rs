//! Golden simulator outputs: the `summary.json`, `summary.csv` and `timeseries.csv` that
//! `stormrig sim` writes for every shipped scenario it can model, committed under
//! `tests/golden/<scenario>/`. Any drift fails, so a change that claims to leave the
//! simulator's figures alone is checked, and a change that moves them must say so.
//!
//! To re-bless on purpose (and say why in the commit):
//!
//!     STORMRIG_BLESS=1 cargo test --release --test golden

use std::fs;
use std::path::Path;

mod support;
use stormrig::plan;
use stormrig::report::files::write_data;
use stormrig::sim::{self, SimError, SimOptions};
use support::{repo_root, shipped_scenarios};

const FILES: [&str; 3] = ["summary.json", "summary.csv", "timeseries.csv"];

fn bless() -> bool {
    std::env::var_os("STORMRIG_BLESS").is_some_and(|v| v != "0")
}

/// Simulates `scenario` and writes its data files into a fresh directory; `None` when the
/// simulator refuses the scenario as a whole (what it cannot model yet).
fn simulate(scenario: &Path, out: &Path) -> Option<()> {
    let p = plan::load(scenario).unwrap_or_else(|e| panic!("{e}"));
    match sim::run(&p, &SimOptions::default()) {
        Ok(o) => {
            fs::create_dir_all(out).unwrap();
            write_data(out, &o.result).unwrap();
            Some(())
        }
        Err(SimError::Unsupported(_)) => None,
        Err(e) => panic!("{}: {e}", scenario.display()),
    }
}

/// The first line where two texts differ, for a message a reader can act on.
fn first_difference(want: &str, got: &str) -> String {
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}:\n  golden: {w}\n  now:    {g}", i + 1);
        }
    }
    format!(
        "lengths differ: golden {} lines, now {} lines",
        want.lines().count(),
        got.lines().count()
    )
}

#[test]
fn simulator_outputs_match_the_golden_files() {
    let tmp = std::env::temp_dir().join(format!("stormrig-golden-{}", std::process::id()));
    let mut drift = Vec::new();
    let mut pinned = 0;
    for scenario in shipped_scenarios() {
        let stem = scenario.file_stem().unwrap().to_str().unwrap().to_string();
        let golden = repo_root().join("tests/golden").join(&stem);
        let out = tmp.join(&stem);
        if simulate(&scenario, &out).is_none() {
            assert!(
                !golden.exists(),
                "{stem}: the simulator refuses it, but tests/golden/{stem} exists"
            );
            continue;
        }
        pinned += 1;
        for name in FILES {
            let got = fs::read_to_string(out.join(name)).unwrap();
            let path = golden.join(name);
            if bless() {
                fs::create_dir_all(&golden).unwrap();
                fs::write(&path, &got).unwrap();
                continue;
            }
            match fs::read_to_string(&path) {
                Ok(want) if want == got => {}
                Ok(want) => drift.push(format!("{stem}/{name}: {}", first_difference(&want, &got))),
                Err(_) => drift.push(format!("{stem}/{name}: no golden file")),
            }
        }
    }
    let _ = fs::remove_dir_all(&tmp);
    assert!(pinned >= 9, "only {pinned} scenarios simulated");
    assert!(
        drift.is_empty(),
        "simulator output drifted from tests/golden (re-bless on purpose with \
         STORMRIG_BLESS=1 cargo test --release --test golden, and say why in the commit):\n{}",
        drift.join("\n")
    );
}
