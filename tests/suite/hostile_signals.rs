//! `sweep` and `capacity` stopped by SIGINT as `run` and `sim` are: what finished so far is
//! written (sweep.csv, sweep.json, sweep.html; capacity's files with the configs whose scan
//! finished), marked partial, exit 3. Before, the process died with rc 130 and nothing on
//! disk.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::process::{bin, tmp_dir, write};

const SCENARIO: &str =
    "name = \"sw\"\nduration = \"60s\"\n[load]\nkind = \"constant\"\nrate = 100.0\n\
[target]\nbuiltin = \"default\"\n[[faults]]\nkind = \"status\"\nstatus = 503\n\
at = \"10s\"\nfor = \"10s\"\n[[configs]]\npreset = \"aws-standard\"\n\
[[configs]]\npreset = \"naive\"\n";

/// Runs `args` on the scenario, sends SIGINT once stderr has a line with `progress`, and
/// returns the exit code and everything on stderr.
fn interrupted(args: &[&str], progress: &str) -> (Option<i32>, String) {
    let dir = tmp_dir(&format!("sigint-{}", args[0]));
    let s = write(&dir, "s.toml", SCENARIO);
    let mut child = bin()
        .arg(args[0])
        .arg(&s)
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // Wait for the first finished run, as the command reports it.
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        seen.push_str(&line);
        if line.contains(progress) {
            break;
        }
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    seen.push_str(&rest.join().unwrap());
    (status.code(), seen)
}

#[test]
fn an_interrupted_sweep_writes_the_points_it_finished() {
    let out = tmp_dir("sigint-sweep-out").join("out");
    // 951 points × 2 configs on one thread: far longer than the moment it takes to stop it.
    let (code, seen) = interrupted(
        &[
            "sweep",
            "--vary",
            "load.rate=100..2000:2",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        "runs done",
    );
    assert_eq!(code, Some(3), "{seen}");
    assert!(seen.contains("marked partial"), "{seen}");
    for f in ["sweep.csv", "sweep.json", "sweep.html"] {
        assert!(out.join(f).is_file(), "{f}: {seen}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    let points = json["points"].as_array().unwrap().len();
    assert!((1..951).contains(&points), "{points} points");
    let csv_rows = std::fs::read_to_string(out.join("sweep.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        csv_rows,
        2 * points + 1,
        "one row per finished point and config"
    );
    let html = std::fs::read_to_string(out.join("sweep.html")).unwrap();
    assert!(html.contains("Partial:"));
}

#[test]
fn an_interrupted_capacity_search_writes_what_it_finished() {
    let out = tmp_dir("sigint-capacity-out").join("out");
    let (code, seen) = interrupted(
        &[
            "capacity",
            "--vary",
            "load.rate=100..2000:2",
            "--objective",
            "recovery_time_s <= 5",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        "grid probes done",
    );
    assert_eq!(code, Some(3), "{seen}");
    assert!(seen.contains("marked partial"), "{seen}");
    for f in ["capacity.csv", "capacity.json", "capacity.html"] {
        assert!(out.join(f).is_file(), "{f}: {seen}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    assert!(json["configs"].as_array().unwrap().len() < 2, "{json}");
    let html = std::fs::read_to_string(out.join("capacity.html")).unwrap();
    assert!(html.contains("Partial:"));
}
