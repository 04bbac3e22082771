//! The Node packages of the tests that hold stormrig against a real JavaScript client
//! (Toxiproxy's client library, the AWS SDK for JavaScript v3's retry strategy,
//! axios-retry): installed once per test binary by `tests/node/modules.sh`, pinned by
//! `tests/node/package-lock.json`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The `node_modules` directory, installing it on first use (see [`super::prepared`]).
pub fn modules() -> PathBuf {
    static MODULES: OnceLock<PathBuf> = OnceLock::new();
    MODULES
        .get_or_init(|| super::prepared("tests/node/modules.sh"))
        .clone()
}

/// Runs `tests/node/SCRIPT` with `args` and the pinned packages; what it printed, one JSON
/// value per line.
pub fn json_lines<S: AsRef<std::ffi::OsStr>>(script: &str, args: &[S]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("node");
    cmd.arg(super::repo_root().join("tests/node").join(script))
        .args(args)
        .env("NODE_PATH", modules());
    super::python::printed_json_lines(script, &mut cmd)
}
