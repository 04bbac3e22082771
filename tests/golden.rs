//! Golden simulator outputs: the `summary.json`, `summary.csv` and `timeseries.csv` that
//! `stormrig sim` writes for every shipped scenario it can model, committed under
//! `tests/golden/<scenario>/`. Any drift fails, so a change that claims to leave the
//! simulator's figures alone is checked, and a change that moves them must say so.
//!
//! To re-bless on purpose (and say why in the commit):
//!
//!     STORMRIG_BLESS=1 cargo test --release --test golden

use std::collections::BTreeSet;
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

/// Simulates `scenario` and writes its data files into a fresh directory. Every shipped
/// scenario is one the simulator models: a refusal fails the test, it never shrinks what is
/// pinned.
fn simulate(scenario: &Path, out: &Path) {
    let p = plan::load(scenario).unwrap_or_else(|e| panic!("{e}"));
    match sim::run(&p, &SimOptions::default()) {
        Ok(o) => {
            fs::create_dir_all(out).unwrap();
            write_data(out, &o.result).unwrap();
        }
        Err(SimError::Unsupported(why)) => panic!(
            "{}: the simulator refuses a shipped scenario ({why}); every shipped scenario is \
             pinned here",
            scenario.display()
        ),
        Err(e) => panic!("{}: {e}", scenario.display()),
    }
}

/// The folders under `tests/golden/`, by name.
fn golden_folders() -> BTreeSet<String> {
    fs::read_dir(repo_root().join("tests/golden"))
        .expect("tests/golden exists")
        .map(|e| e.expect("tests/golden is readable"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
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
    let mut pinned = BTreeSet::new();
    for scenario in shipped_scenarios() {
        let stem = scenario.file_stem().unwrap().to_str().unwrap().to_string();
        let golden = repo_root().join("tests/golden").join(&stem);
        let out = tmp.join(&stem);
        simulate(&scenario, &out);
        pinned.insert(stem.clone());
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
    assert!(!pinned.is_empty(), "no shipped scenario found");
    let orphans: Vec<String> = golden_folders().difference(&pinned).cloned().collect();
    assert!(
        orphans.is_empty(),
        "tests/golden has folders of no shipped scenario (remove them): {}",
        orphans.join(", ")
    );
    assert!(
        drift.is_empty(),
        "simulator output drifted from tests/golden (re-bless on purpose with \
         STORMRIG_BLESS=1 cargo test --release --test golden, and say why in the commit):\n{}",
        drift.join("\n")
    );
}
