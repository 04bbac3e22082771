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

/// One way to spoil a file.
#[derive(Debug, Clone)]
enum Mutation {
    FlipByte { at: usize, byte: u8 },
    Truncate { at: usize },
    Extreme { nth: usize, value: &'static str },
    DeleteLine { nth: usize },
    HugeTable { what: usize, n: usize },
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "-0.0",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "9223372036854775807",
    "99999999999999999999999",
    "\"99999999h\"",
    "\"18446744073709551616s\"",
    "\"1e3s\"",
    "\"\"",
    "[]",
    "{}",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::FlipByte { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), proptest::sample::select(EXTREMES))
            .prop_map(|(nth, value)| Mutation::Extreme { nth, value }),
        any::<usize>().prop_map(|nth| Mutation::DeleteLine { nth }),
        (0usize..4, prop_oneof![Just(2usize), Just(200), Just(5000)])
            .prop_map(|(what, n)| Mutation::HugeTable { what, n }),
    ]
}

fn apply(text: &str, m: &Mutation) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    match m {
        Mutation::FlipByte { at, byte } => {
            let i = at % bytes.len();
            bytes[i] = *byte;
            bytes
        }
        Mutation::Truncate { at } => {
            bytes.truncate(at % (bytes.len() + 1));
            bytes
        }
        Mutation::Extreme { nth, value } => {
            // The nth number (a run of digits, with its decimal point) becomes `value`.
            let spans: Vec<(usize, usize)> = {
                let mut v = Vec::new();
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i].is_ascii_digit() {
                        let s = i;
                        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                            i += 1;
                        }
                        v.push((s, i));
                    } else {
                        i += 1;
                    }
                }
                v
            };
            if spans.is_empty() {
                return bytes;
            }
            let (s, e) = spans[nth % spans.len()];
            bytes.splice(s..e, value.bytes());
            bytes
        }
        Mutation::DeleteLine { nth } => {
            let lines: Vec<&str> = text.lines().collect();
            let k = nth % lines.len();
            lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != k)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        }
        Mutation::HugeTable { what, n } => {
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
        m in mutation(),
    ) {
        let files = shipped();
        let (name, text) = &files[which % files.len()];
        let bytes = apply(text, &m);
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
