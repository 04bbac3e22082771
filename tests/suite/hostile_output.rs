//! Output streams that cannot lose or destroy data, met by the real binary: `--events`
//! never overwrites an input of the run, never blocks on a FIFO no one reads, and a write
//! that fails (a full device, a reader that left) ends in exit 3 naming the stream, with
//! the reports still written; stdout that cannot be written is exit 3, never a panic; and
//! with `--events -`, stdout carries JSON lines only.
//!
//! Every run is short (1 to 3 s of load on the built-in target, on 127.0.0.1) and watched with a
//! time limit far above its length, so a hang fails the test instead of stalling it.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::process::{bin, tmp_dir, wait_watched, watch, write};

/// Far above a 1 s run: a limit for a hang, not a timing.
const LIMIT: Duration = Duration::from_secs(60);

fn scenario(dir: &Path) -> std::path::PathBuf {
    scenario_of(dir, 1)
}

/// `seconds` of 20 requests per second, one config.
fn scenario_of(dir: &Path, seconds: u32) -> std::path::PathBuf {
    write(
        dir,
        "s.toml",
        &format!("name = \"out\"\nduration = \"{seconds}s\"\ndrain = \"1s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n\
         [target]\nbuiltin = \"default\"\n[[configs]]\npreset = \"naive\"\n"),
    )
}

fn no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_full_stdout_is_exit_3_not_a_panic() {
    for args in [&["presets"][..], &["presets", "--json"][..]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut cmd = bin();
        cmd.args(args).stdout(full).stderr(Stdio::piped());
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains("stdout: cannot write"), "{stderr}");
        no_panic(&stderr);
    }
}

#[test]
fn events_never_overwrite_an_input_of_the_run() {
    let dir = tmp_dir("events-input");
    let s = scenario(&dir);
    let before = std::fs::read(&s).unwrap();
    // The same file by another spelling: compared as a file, not as a string.
    let roundabout = dir.join(".").join("s.toml");
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "-q", "--out"])
        .arg(&out)
        .arg(&s)
        .arg("--events")
        .arg(&roundabout);
    let w = watch(cmd, LIMIT);
    assert_eq!(w.code(), 2, "{}", w.stderr);
    assert!(w.stderr.contains("an input of this run"), "{}", w.stderr);
    assert_eq!(std::fs::read(&s).unwrap(), before, "the scenario is intact");
    assert!(!out.exists(), "refused before anything ran");
}

#[test]
fn a_fifo_no_one_reads_is_refused_at_once() {
    let dir = tmp_dir("events-fifo");
    let s = scenario(&dir);
    let fifo = dir.join("events.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut cmd = bin();
    cmd.args(["run", "-q", "--out"])
        .arg(dir.join("out"))
        .arg(&s)
        .arg("--events")
        .arg(&fifo);
    let w = watch(cmd, LIMIT);
    // Killed at the limit, it would have no code: a hang fails here.
    assert_eq!(w.code(), 2, "{}", w.stderr);
    assert!(w.stderr.contains("no process reads"), "{}", w.stderr);
}

#[test]
fn events_that_cannot_be_written_are_exit_3_with_the_reports_written() {
    let dir = tmp_dir("events-full");
    let s = scenario(&dir);
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "-q", "--out"])
        .arg(&out)
        .arg(&s)
        .args(["--events", "/dev/full"]);
    let w = watch(cmd, LIMIT);
    assert_eq!(w.code(), 3, "{}", w.stderr);
    assert!(
        w.stderr.contains("--events /dev/full: cannot write"),
        "{}",
        w.stderr
    );
    for f in [
        "summary.json",
        "summary.csv",
        "timeseries.csv",
        "index.html",
    ] {
        assert!(out.join(f).is_file(), "{f} written");
    }
}

#[test]
fn a_reader_that_leaves_early_is_exit_3_not_a_panic() {
    let dir = tmp_dir("events-head");
    // Three seconds: lines are written after the reader has left.
    let s = scenario_of(&dir, 3);
    let start = Instant::now();
    let mut child = bin()
        .args(["run", "-q", "--out"])
        .arg(dir.join("out"))
        .arg(&s)
        .args(["--events", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: one line read, then the pipe closed.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    serde_json::from_str::<serde_json::Value>(&first).expect("a JSON line");
    let mut err = child.stderr.take().unwrap();
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = err_t.join().unwrap();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("broken pipe"), "{stderr}");
    no_panic(&stderr);
}

#[test]
fn with_events_on_stdout_every_stdout_line_is_json() {
    let dir = tmp_dir("events-stdout");
    let s = scenario(&dir);
    let start = Instant::now();
    let child = bin()
        .args(["run", "-q", "--out"])
        .arg(dir.join("out"))
        .arg(&s)
        .args(["--events", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let w = wait_watched(child, start, LIMIT);
    assert_eq!(w.code(), 0, "{}", w.stderr);
    let lines: Vec<&str> = w.stdout.lines().collect();
    assert!(!lines.is_empty(), "events were written");
    for l in &lines {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert_eq!(v["config"], "naive", "{l}");
    }
    // The people's summary went to stderr.
    assert!(w.stderr.contains("reports: "), "{}", w.stderr);
}

#[test]
fn a_report_file_that_cannot_be_written_is_exit_3_and_the_others_are() {
    let dir = tmp_dir("report-unwritable");
    let s = scenario(&dir);
    let out = dir.join("out");
    // A directory where summary.csv goes: the rename onto it fails.
    std::fs::create_dir_all(out.join("summary.csv").join("x")).unwrap();
    let mut cmd = bin();
    cmd.args(["sim", "-q", "--out"]).arg(&out).arg(&s);
    let w = watch(cmd, LIMIT);
    assert_eq!(w.code(), 3, "{}", w.stderr);
    assert!(w.stderr.contains("summary.csv"), "{}", w.stderr);
    for f in ["timeseries.csv", "index.html"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    // A directory missing a file is not presented as a finished run.
    assert!(!out.join("summary.json").exists());
}
