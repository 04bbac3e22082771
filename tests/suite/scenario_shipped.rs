//! Every shipped scenario and target file loads, and honours the limits the docs promise.

use std::time::Duration;

use crate::support::{repo_root, shipped_scenarios};
use stormrig::scenario::{load, parse_target, Target};

#[test]
fn every_shipped_scenario_loads() {
    let files = shipped_scenarios();
    assert!(
        files.len() >= 7,
        "expected the shipped scenarios, found {files:?}"
    );
    for path in files {
        let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(
            s.name,
            stem,
            "{}: name should match the file name",
            path.display()
        );
        assert!(
            s.duration + s.drain <= Duration::from_secs(60),
            "{}: runs longer than 60 s",
            path.display()
        );
        assert!(!s.description.is_empty(), "{}", path.display());
        assert!(!s.configs.is_empty());
        assert!(
            matches!(s.target, Target::Builtin { .. }),
            "{}: loopback built-in",
            path.display()
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with('#'),
            "{}: needs a header comment",
            path.display()
        );
        assert!(
            text.contains(&format!("stormrig run scenarios/{stem}.toml")),
            "{}: header should say how to run it",
            path.display()
        );
    }
}

#[test]
fn main_scenario_is_short_and_compares_five_configs() {
    let s = load(&repo_root().join("scenarios/downstream-503-10s.toml")).unwrap();
    assert!(s.duration + s.drain <= Duration::from_secs(30));
    let names: Vec<_> = s.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["no-retry", "naive", "aws-standard", "grpc", "envoy"]
    );
    assert_eq!(s.gates, ["aws-standard: amplification <= 1.5"]);
    assert_eq!(s.faults.len(), 1);
    assert_eq!(s.faults[0].at, Duration::from_secs(5));
    assert_eq!(s.faults[0].length, Duration::from_secs(10));
    // Config lines point at their `[[configs]]` headers; field paths index them.
    let text = std::fs::read_to_string(&s.path).unwrap();
    for (i, c) in s.configs.iter().enumerate() {
        assert_eq!(text.lines().nth(c.line - 1).unwrap().trim(), "[[configs]]");
        assert_eq!(c.field_path, format!("configs[{i}]"));
    }
}

#[test]
fn capacity_demo_uses_the_small_target() {
    let s = load(&repo_root().join("scenarios/capacity-halves.toml")).unwrap();
    match s.target {
        Target::Builtin { name, model, .. } => {
            assert_eq!(name, "small");
            assert_eq!(model.concurrency, 8);
            assert_eq!(model.queue, 200);
            assert_eq!(model.queue_timeout, Some(Duration::from_millis(500)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn target_files_parse() {
    for name in ["default", "small"] {
        let path = repo_root().join(format!("targets/{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        parse_target(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    }
}
