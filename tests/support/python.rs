//! The Python environment of the tests that hold stormrig against a real client or validator
//! (the gRPC project's own client, the Kubernetes schemas): made once per test binary by
//! `tests/python/venv.sh`, which pins what it installs.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The environment's interpreter, creating the environment on first use (see
/// [`super::prepared`]).
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| super::prepared("tests/python/venv.sh"))
        .clone()
}

/// The interpreter of the environment with botocore 1.43 (`venv.sh botocore-1.43.txt`),
/// made on first use as [`python`]'s is.
pub fn botocore_1_43() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| prepared_env("botocore-1.43.txt"))
        .clone()
}

/// The interpreter of the environment with the LLM SDKs' previous major versions
/// (`venv.sh llm-sdk-previous.txt`), made on first use as [`python`]'s is.
pub fn llm_sdk_previous() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| prepared_env("llm-sdk-previous.txt"))
        .clone()
}

/// `tests/python/venv.sh REQUIREMENTS`: the interpreter of that file's environment.
fn prepared_env(requirements: &str) -> PathBuf {
    super::prepared_with("tests/python/venv.sh", &[requirements])
}

/// Runs `tests/python/SCRIPT` with `args` in the environment and returns what it printed,
/// one JSON value per line. Panics with the script's own message when it fails.
pub fn json_lines<S: AsRef<std::ffi::OsStr>>(script: &str, args: &[S]) -> Vec<serde_json::Value> {
    json_lines_in(&python(), script, args)
}

/// As [`json_lines`], with the interpreter `python` (another environment's).
pub fn json_lines_in<S: AsRef<std::ffi::OsStr>>(
    python: &std::path::Path,
    script: &str,
    args: &[S],
) -> Vec<serde_json::Value> {
    let mut cmd = Command::new(python);
    cmd.arg(super::repo_root().join("tests/python").join(script))
        .args(args);
    printed_json_lines(script, &mut cmd)
}

/// Runs a client script to its end and reads what it printed, one JSON value per line.
/// Panics with the script's own message when it fails.
pub fn printed_json_lines(script: &str, cmd: &mut Command) -> Vec<serde_json::Value> {
    let out = cmd.output().expect("the script runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("the script prints UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{script} printed {l:?}: {e}")))
        .collect()
}
