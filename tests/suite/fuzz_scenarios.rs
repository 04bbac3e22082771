//! Property-based fuzzing of `stormrig check` over mutations of every shipped scenario:
//! byte flips, truncations, numeric extremes, deleted lines, huge tables. Whatever the
//! mutation, `check` answers in bounded time, never panics, and a refusal is bad input
//! (exit 2) whose message starts with the file's name.
//!
//! `check` runs in-process through the same entry point as the binary (`app::run`), so a
//! panic anywhere on its path fails the property. The case count is `FUZZ_CASES` below
//! (override with `PROPTEST_CASES`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use proptest::prelude::*;
use stormrig::app::{self, Exit};
use stormrig::cli::Cli;

use crate::support::mutate::{apply, mutation, Mutation};

/// Cases per run of the property.
const FUZZ_CASES: u32 = 1000;
/// The longest a single `check` may take, even of a file grown to thousands of tables.
const CHECK_BOUND: Duration = Duration::from_secs(2);

fn shipped() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// One way to spoil a scenario file: a text mutation, or a table repeated until the file
/// is huge.
#[derive(Debug, Clone)]
enum ScenarioMutation {
    Text(Mutation),
    HugeTable { what: usize, n: usize },
}

fn scenario_mutation() -> impl Strategy<Value = ScenarioMutation> {
    prop_oneof![
        4 => mutation().prop_map(ScenarioMutation::Text),
        1 => (0usize..4, prop_oneof![Just(2usize), Just(200), Just(5000)])
            .prop_map(|(what, n)| ScenarioMutation::HugeTable { what, n }),
    ]
}

fn spoil(text: &str, m: &ScenarioMutation) -> Vec<u8> {
    match m {
        ScenarioMutation::Text(m) => apply(text, m),
        ScenarioMutation::HugeTable { what, n } => {
            let block = match what {
                0 => "\n[[faults]]\nkind = \"status\"\nstatus = 503\nat = \"1s\"\nfor = \"1s\"\n",
                1 => "\n[[configs]]\npreset = \"naive\"\n",
                2 => "\n[[topology]]\nname = \"hop\"\n",
                _ => "\n[[load.steps]]\nat = \"1s\"\nrate = 1.0\n",
            };
            let mut t = text.to_string();
            for i in 0..*n {
                // Layer names must differ; the rest may repeat.
                t.push_str(&block.replace("\"hop\"", &format!("\"hop{i}\"")));
            }
            t.into_bytes()
        }
    }
}

fn tmp_file(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormrig-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: FUZZ_CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn check_of_any_mutation_is_bounded_total_and_located(
        which in any::<usize>(),
        m in scenario_mutation(),
    ) {
        let files = shipped();
        let (name, text) = &files[which % files.len()];
        let bytes = spoil(text, &m);
        let path = tmp_file(name);
        std::fs::write(&path, &bytes).unwrap();
        let cli = Cli::try_parse_from(["stormrig".as_ref(), "check".as_ref(), path.as_os_str()])
            .unwrap();
        let t = Instant::now();
        let outcome = app::run(cli);
        let took = t.elapsed();
        prop_assert!(took < CHECK_BOUND, "{name} {m:?}: check took {took:?}");
        match outcome {
            Ok(exit) => prop_assert_eq!(exit, Exit::Ok),
            Err(e) => {
                prop_assert_eq!(e.exit, Exit::BadInput, "{} {:?}: {}", name, m, e.message);
                let file = path.display().to_string();
                prop_assert!(
                    e.message.starts_with(&file),
                    "{} {:?}: the message does not name the file: {}",
                    name,
                    m,
                    e.message
                );
                prop_assert!(!e.message.contains('\x1b'), "raw ESC in {}", e.message);
            }
        }
    }
}

/// Every input that once broke `check`, kept in `tests/fuzz-corpus/scenarios/` under a name
/// that says what it holds: each is accepted, or refused with exit 2 by a message that
/// names the file and carries no raw control character.
#[test]
fn every_scenario_of_the_corpus_is_answered_by_name() {
    let dir = crate::support::repo_root().join("tests/fuzz-corpus/scenarios");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "{cases:?}");
    for path in cases {
        let cli =
            Cli::try_parse_from(["stormrig".as_ref(), "check".as_ref(), path.as_os_str()]).unwrap();
        let t = Instant::now();
        let outcome = app::run(cli);
        assert!(t.elapsed() < CHECK_BOUND, "{}", path.display());
        if let Err(e) = outcome {
            assert_eq!(e.exit, Exit::BadInput, "{}: {}", path.display(), e.message);
            let file = path.display().to_string();
            assert!(e.message.starts_with(&file), "{}", e.message);
            assert!(
                !e.message.chars().any(|c| c.is_control() && c != '\n'),
                "{}",
                e.message
            );
            assert!(
                !e.message.trim_end().ends_with(':'),
                "an empty reason: {}",
                e.message
            );
        }
    }
}
