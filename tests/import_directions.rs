//! The shape of the crate, checked: what happens around each attempt (`session`), the seeded
//! draws and the counting (`metrics`) are engine-neutral, so the live engine, the simulator
//! and the benchmarks share them; and the result header both engines build imports neither
//! engine. (The policy core's own check is in `src/policy/tests.rs`.)

use std::path::{Path, PathBuf};

const ENGINES: [&str; 5] = [
    "tokio",
    "hyper",
    "crate::live",
    "crate::sim",
    "crate::server",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `use` line of `file` (relative to `src/`) naming one of `forbidden`.
fn offending_uses(file: &Path, forbidden: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(src().join(file)).unwrap();
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("use ") || l.starts_with("pub use "))
        .filter(|l| forbidden.iter().any(|f| l.contains(f)))
        .map(|l| format!("{}: {l}", file.display()))
        .collect()
}

#[test]
fn session_draws_and_result_header_import_no_engine() {
    for file in ["session.rs", "draws.rs", "run_result.rs"] {
        assert_eq!(
            offending_uses(Path::new(file), &ENGINES),
            Vec::<String>::new()
        );
    }
}

#[test]
fn metrics_import_no_engine_session_or_report() {
    let mut forbidden = ENGINES.to_vec();
    forbidden.extend(["crate::session", "crate::report"]);
    let mut files = 0;
    for e in std::fs::read_dir(src().join("metrics")).unwrap() {
        let name = e.unwrap().file_name();
        let file = Path::new("metrics").join(&name);
        if file.extension().is_some_and(|x| x == "rs") {
            files += 1;
            assert_eq!(offending_uses(&file, &forbidden), Vec::<String>::new());
        }
    }
    assert!(files >= 5, "read {files} files of src/metrics");
}
