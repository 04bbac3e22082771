//! Every input file goes through one bounded reader: a FIFO or a device given where a file
//! belongs is refused with exit 2 naming it, before a byte is read (a FIFO `ca_file` used to
//! block `check` forever; `/dev/zero` read 818 MB until the allocator gave up).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::process::{bin, tmp_dir, watch, write, Watched};

/// Far above what refusing a file costs, far below what reading /dev/zero takes.
const RSS_CEILING_KIB: u64 = 200 * 1024;
/// A bound on the test, not a speed aim: a refusal ends at once, a blocked open() never.
const LIMIT: Duration = Duration::from_secs(30);

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let made = Command::new("mkfifo").arg(&p).status().unwrap();
    assert!(made.success());
    p
}

fn scenario_with_ca(dir: &Path, ca: &Path) -> PathBuf {
    let text = format!(
        "name = \"files\"\nduration = \"1s\"\n\n[load]\nkind = \"constant\"\nrate = 10.0\n\n\
         [target]\nurl = \"https://127.0.0.1:9/\"\nca_file = \"{}\"\n\n[[configs]]\npreset = \"naive\"\n",
        ca.display()
    );
    write(dir, "s.toml", &text)
}

fn refused_naming(w: &Watched, name: &Path, words: &str) {
    assert_eq!(w.code(), 2, "{}", w.stderr);
    assert!(
        w.stderr.contains(&name.display().to_string()),
        "{}",
        w.stderr
    );
    assert!(w.stderr.contains(words), "{}", w.stderr);
    assert!(!w.stderr.contains("panicked"), "{}", w.stderr);
    assert!(
        w.peak_rss_kib < RSS_CEILING_KIB,
        "{} KiB to refuse a file",
        w.peak_rss_kib
    );
}

#[test]
fn a_fifo_or_device_as_ca_file_is_refused_by_check() {
    let dir = tmp_dir("hostile-files-ca");
    for ca in [fifo(&dir, "ca.pem"), PathBuf::from("/dev/zero")] {
        let s = scenario_with_ca(&dir, &ca);
        let mut cmd = bin();
        cmd.arg("check").arg(&s);
        refused_naming(&watch(cmd, LIMIT), &ca, "not a regular file");
    }
}

#[test]
fn a_run_directory_of_fifos_and_devices_is_refused_by_report() {
    let dir = tmp_dir("hostile-files-report");
    let summary = fifo(&dir, "summary.json");
    let mut cmd = bin();
    cmd.arg("report").arg(&dir);
    refused_naming(&watch(cmd, LIMIT), &summary, "not a regular file");

    std::fs::remove_file(&summary).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &summary).unwrap();
    let mut cmd = bin();
    cmd.arg("report").arg(&dir);
    refused_naming(&watch(cmd, LIMIT), &summary, "not a regular file");
}

/// A real run's directory, from the simulator (two configs, 3 s).
fn simulated_run(dir: &Path) -> PathBuf {
    let s = write(
        dir,
        "s.toml",
        "name = \"files\"\nduration = \"3s\"\n[load]\nkind = \"constant\"\nrate = 10.0\n\
         [target]\nbuiltin = \"default\"\n[[configs]]\npreset = \"naive\"\n\
         [[configs]]\npreset = \"aws-standard\"\n",
    );
    let out = dir.join("run");
    let mut cmd = bin();
    cmd.args(["sim", "-q", "--out"]).arg(&out).arg(&s);
    let w = watch(cmd, LIMIT);
    assert_eq!(w.code(), 0, "{}", w.stderr);
    out
}

#[test]
fn a_garbage_or_cut_timeseries_is_refused_by_report_naming_the_line() {
    let dir = tmp_dir("hostile-files-series");
    let run = simulated_run(&dir);
    let series = run.join("timeseries.csv");
    let whole = std::fs::read_to_string(&series).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 7, "a header and 3 s × 2 configs: {whole}");
    let mut cmd = bin();
    cmd.arg("report").arg(&run);
    assert_eq!(watch(cmd, LIMIT).code(), 0, "the whole file reads");
    let cut = |n: usize| format!("{}\n", lines[..n].join("\n"));
    let dropped_row = format!("{}\n{}\n", lines[..2].join("\n"), lines[3..].join("\n"));
    for (text, line, words) in [
        ("garbage\n".to_string(), 1, "header"),
        (cut(1), 2, "cut short"),
        (cut(4), 5, "no rows for config"),
        (dropped_row, 3, "where 1 was due"),
    ] {
        std::fs::write(&series, &text).unwrap();
        let mut cmd = bin();
        cmd.arg("report").arg(&run);
        let w = watch(cmd, LIMIT);
        assert_eq!(w.code(), 2, "{text}: {}", w.stderr);
        let at = format!("{}:{line}: ", series.display());
        assert!(w.stderr.contains(&at), "{at} in {}", w.stderr);
        assert!(w.stderr.contains(words), "{words} in {}", w.stderr);
    }
}
