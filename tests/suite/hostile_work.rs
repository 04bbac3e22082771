//! Ceilings on what a file implies, not only on what it says: a closed loop with no think
//! time, a fleet of a million clients in every config, a sweep grid or seed count that
//! multiplies into millions of runs. Each is refused with exit 2 before any work, naming
//! the figure and how to raise the ceiling; the refusal itself stays small (a peak resident
//! set far below what the work would have taken, asserted as a ceiling).

use crate::support;

use std::time::Duration;

use support::process::{bin, tmp_dir, watch, write, Watched};

/// A refusal is a parse and a multiplication: a ceiling on its peak resident set, far
/// below the gigabytes the refused work would take (the unbounded grid grew past 2.4 GB).
const REFUSAL_RSS_KIB: u64 = 128 * 1024;

/// Generous: a hang or runaway work fails here instead of stalling the suite.
const LIMIT: Duration = Duration::from_secs(60);

fn scenario(load: &str, configs: usize) -> String {
    let mut s = format!(
        "name = \"work\"\nduration = \"2s\"\n[load]\n{load}\n[target]\nbuiltin = \"default\"\n\
         [[faults]]\nkind = \"status\"\nstatus = 503\nat = \"0s\"\nfor = \"1s\"\nprobability = 0.5\n"
    );
    for i in 0..configs {
        s.push_str(&format!(
            "[[configs]]\nname = \"c{i}\"\npreset = \"naive\"\n"
        ));
    }
    s
}

fn run(dir: &std::path::Path, text: &str, args: &[&str]) -> Watched {
    let p = write(dir, "s.toml", text);
    let mut cmd = bin();
    cmd.args(args).arg(&p);
    watch(cmd, LIMIT)
}

/// Refused with exit 2, quickly and small, with every one of `words` in the message.
fn refused(w: &Watched, words: &[&str]) {
    assert_eq!(w.code(), 2, "{}", w.stderr);
    for word in words {
        assert!(w.stderr.contains(word), "{word}: {}", w.stderr);
    }
    assert!(!w.stderr.contains("panicked"), "{}", w.stderr);
    assert!(
        w.peak_rss_kib < REFUSAL_RSS_KIB,
        "peak RSS {} KiB refusing: {}",
        w.peak_rss_kib,
        w.stderr
    );
}

#[test]
fn a_closed_loop_without_think_time_counts_its_work() {
    let dir = tmp_dir("work-closed");
    let load = "kind = \"closed\"\nusers = 100000\nthink_time = \"0s\"";
    for cmd in ["check", "sim"] {
        let w = run(&dir, &scenario(load, 1), &[cmd]);
        refused(
            &w,
            &[
                "load.users",
                "10000000000 arrivals",
                "think_time",
                "max_planned_arrivals",
            ],
        );
    }
    // A closed loop of a sensible size passes.
    let load = "kind = \"closed\"\nusers = 50\nthink_time = \"0s\"";
    let w = run(&dir, &scenario(load, 1), &["check"]);
    assert_eq!(w.code(), 0, "{}", w.stderr);
}

#[test]
fn a_fleet_is_bounded_over_all_configs() {
    let dir = tmp_dir("work-fleet");
    let load = "kind = \"constant\"\nrate = 10.0\nclients = 1000000";
    let w = run(&dir, &scenario(load, 32), &["check"]);
    refused(
        &w,
        &[
            "load.clients",
            "32000000 client instances",
            "15.3 GiB",
            "max_client_instances",
        ],
    );
    // One config of a million is within the default; more is allowed when asked for.
    let w = run(&dir, &scenario(load, 1), &["check"]);
    assert_eq!(w.code(), 0, "{}", w.stderr);
    let raised = format!("{load}\nmax_client_instances = 5000000");
    let w = run(&dir, &scenario(&raised, 5), &["check"]);
    assert_eq!(w.code(), 0, "{}", w.stderr);
}

#[test]
fn a_sweep_is_bounded_over_its_whole_grid() {
    let dir = tmp_dir("work-sweep");
    let text = scenario("kind = \"constant\"\nrate = 10.0", 1);
    let out = dir.join("out");
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        run(&dir, &text, &args)
    };
    let w = sweep(&[
        "--vary",
        "load.rate=1..1001:1",
        "--vary",
        "faults[0].probability=0..0.999:0.001",
    ]);
    refused(&w, &["1001000 points (1001 × 1000)", "10000"]);
    let w = sweep(&["--vary", "load.rate=1..10:1", "--seeds", "4294967295"]);
    refused(&w, &["42949672950 simulations", "--max-runs"]);
    let w = sweep(&["--vary", "load.rate=1..10:1", "--vary", "load.rate=1..10:1"]);
    refused(&w, &["varied twice"]);
    let w = sweep(&["--vary", "load.rate=1..1e308:1e300"]);
    refused(&w, &["at most 10000 points"]);
    assert!(!w.stderr.contains("unit"), "{}", w.stderr);
    assert!(!out.exists(), "nothing written");
}
