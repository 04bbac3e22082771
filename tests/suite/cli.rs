//! The real binary in a subprocess: exit codes, bad input, interruption, every shipped
//! scenario, report rebuild and run-to-run diff.

use crate::support::shipped_scenarios;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    crate::support::process::bin()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormrig-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write_scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

const SMALL: &str = r#"name = "small"
seed = 5
duration = "1s"
drain = "2s"

[load]
kind = "constant"
rate = 50

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "1s"

[[configs]]
preset = "naive"

[[configs]]
preset = "no-retry"
"#;

#[test]
fn exit_codes_for_pass_fail_and_bad_gates() {
    let dir = tmp("exit");
    let sc = write_scenario(&dir, "small.toml", SMALL);
    let sc = sc.to_str().unwrap();

    let out = dir.join("pass");
    let o = run(&[
        "run",
        sc,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--gate",
        "no-retry: amplification == 1",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["engine"], "live");
    assert_eq!(summary["partial"], false);
    assert_eq!(summary["gates"][0]["passed"], true);
    assert!(out.join("junit.xml").exists());
    assert!(out.join("index.html").exists());

    let out = dir.join("fail");
    let o = run(&[
        "run",
        sc,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--gate",
        "naive: amplification < 1",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("FAIL"), "{stdout}");
    let junit = fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");

    let out = dir.join("badgate");
    let o = run(&[
        "run",
        sc,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--gate",
        "naive amplification < 2",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("SELECTOR: FIGURE OP NUMBER"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "a bad gate must not leave a run directory");
}

#[test]
fn bad_scenarios_exit_2_with_file_line_field_and_no_report_dir() {
    let dir = tmp("bad");
    let cases = [
        (
            "syntax.toml",
            SMALL.replace("rate = 50", "rate = = 50"),
            "syntax.toml:8",
        ),
        (
            "unknown.toml",
            SMALL.replace("duration = \"1s\"", "durration = \"1s\""),
            "did you mean `duration`",
        ),
        (
            "negative.toml",
            SMALL.replace("rate = 50", "rate = -50"),
            "load.rate",
        ),
        (
            "prob.toml",
            SMALL.replace("for = \"1s\"", "for = \"1s\"\nprobability = 1.5"),
            "faults[0].probability",
        ),
        (
            "outside.toml",
            SMALL.replace("for = \"1s\"", "for = \"9s\""),
            "faults[0].for",
        ),
        (
            "preset.toml",
            SMALL.replace("preset = \"naive\"", "preset = \"naïve\""),
            "configs[0].preset",
        ),
        (
            "field.toml",
            SMALL.replace("preset = \"naive\"", "preset = \"naive\"\nmax_atempts = 3"),
            "configs[0].max_atempts",
        ),
    ];
    for (name, text, needle) in cases {
        let p = write_scenario(&dir, name, &text);
        let out = dir.join(format!("out-{name}"));
        let o = run(&[
            "run",
            p.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(err.contains(name), "{name}: message names the file: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: one line: {err}");
        assert!(!out.exists(), "{name}: no report directory for bad input");
    }
    let o = run(&["check", dir.join("missing.toml").to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("missing.toml"));
}

/// SIGINT mid-run stops the load within a second, still writes the reports, marks them
/// partial, and exits 3.
#[test]
fn sigint_writes_partial_reports() {
    let dir = tmp("sigint");
    let sc = write_scenario(
        &dir,
        "long.toml",
        &SMALL.replace("duration = \"1s\"", "duration = \"30s\""),
    );
    let out = dir.join("out");
    let mut child = bin()
        .args([
            "run",
            sc.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(3));
    assert!(took < Duration::from_secs(2), "stopping took {took:?}");
    let summary: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"], true);
    assert!(summary["duration_s"].as_f64().unwrap() < 5.0);
    assert!(summary["configs"][0]["upstream_requests"].as_u64().unwrap() > 0);
    assert!(out.join("index.html").exists());
}

#[test]
fn every_shipped_scenario_checks_and_a_short_run_completes() {
    let all = shipped_scenarios();
    assert!(all.len() >= 7);
    let mut args = vec!["check".to_string()];
    args.extend(all.iter().map(|p| p.display().to_string()));
    let o = bin().args(&args).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let dir = tmp("shipped");
    let handles: Vec<_> = all
        .into_iter()
        .map(|p| {
            let out = dir.join(p.file_stem().unwrap());
            std::thread::spawn(move || {
                let o = bin()
                    .args(["run", p.to_str().unwrap(), "--quiet", "--duration", "2s"])
                    .arg("--out")
                    .arg(&out)
                    .output()
                    .unwrap();
                (p, out, o)
            })
        })
        .collect();
    for h in handles {
        let (p, out, o) = h.join().unwrap();
        // A shortened run may fail its gates (1), but it must complete and write reports.
        assert!(
            matches!(code(&o), 0 | 1),
            "{}: exit {:?}: {}",
            p.display(),
            o.status.code(),
            stderr(&o)
        );
        let summary: serde_json::Value =
            serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["partial"], false, "{}", p.display());
        // Exact equality of attempts and arrivals is proven in tests/suite/live_run.rs; here some
        // scenarios cut attempts with per-try timeouts, and an attempt abandoned before the
        // target read it is sent but never arrives. The target can never see more.
        for c in summary["configs"].as_array().unwrap() {
            // With a topology the target hears from the deepest layer, not the client.
            let sent = match c["layers"].as_array().and_then(|l| l.last()) {
                Some(deepest) => deepest["attempts"].as_u64().unwrap(),
                None => c["attempts"].as_u64().unwrap(),
            };
            let arrived = c["downstream_arrivals"].as_u64().unwrap();
            assert!(arrived <= sent, "{}: {arrived} > {sent}", p.display());
            assert!(
                c["upstream_requests"].as_u64().unwrap() > 0,
                "{}",
                p.display()
            );
        }
        assert!(out.join("index.html").exists());
    }
}

#[test]
fn report_rebuilds_and_diff_finds_a_planted_regression() {
    let dir = tmp("diff");
    let sc = write_scenario(&dir, "small.toml", SMALL);
    let base = dir.join("base");
    let o = run(&[
        "run",
        sc.to_str().unwrap(),
        "--quiet",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    fs::remove_file(base.join("index.html")).unwrap();
    let o = run(&["report", base.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(base.join("index.html").exists());

    let o = run(&["diff", base.to_str().unwrap(), base.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));

    // Plant a regression: naive's amplification and retries double.
    let worse = dir.join("worse");
    fs::create_dir_all(&worse).unwrap();
    fs::copy(base.join("timeseries.csv"), worse.join("timeseries.csv")).unwrap();
    let mut summary: serde_json::Value =
        serde_json::from_slice(&fs::read(base.join("summary.json")).unwrap()).unwrap();
    let naive = &mut summary["configs"][0];
    assert_eq!(naive["name"], "naive");
    let amp = naive["amplification"].as_f64().unwrap();
    naive["amplification"] = serde_json::json!(amp * 2.0);
    fs::write(
        worse.join("summary.json"),
        serde_json::to_vec(&summary).unwrap(),
    )
    .unwrap();
    let o = run(&[
        "diff",
        base.to_str().unwrap(),
        worse.to_str().unwrap(),
        "--tolerance",
        "10%",
    ]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn thresholds_json_for_aws_standard() {
    let o = run(&["thresholds", "--config", "aws-standard", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["max_attempts"], 3);
    let t = v["transient"]["closed_form"].as_f64().unwrap();
    let th = v["throttling"]["closed_form"].as_f64().unwrap();
    assert!((t - 0.2149).abs() < 0.001, "{t}");
    assert!((th - 0.3207).abs() < 0.001, "{th}");
    let mc = v["transient"]["monte_carlo"].as_f64().unwrap();
    assert!((mc - t).abs() < 0.01, "{mc}");
    let o = run(&["thresholds", "--config", "naive", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["transient"]["closed_form"].is_null());
    assert!(v["transient"]["reason"].is_string());
    let o = run(&["thresholds", "--config", "aws-standrd"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("aws-standard"),
        "did-you-mean: {}",
        stderr(&o)
    );
}

#[test]
fn presets_json_names_each_library_and_what_it_was_checked_against() {
    let o = run(&["presets", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = v.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, stormrig::policy::preset_names());
    // A version claimed is the one the comparison tests pin, so that bumping either
    // without the other fails here: a Python package as `LIB==VERSION` in one of the
    // requirement files, a Node package as `"LIB": "VERSION"` in package.json (whose lock
    // `tests/node/modules.sh` installs from).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pins: Vec<String> = std::fs::read_dir(root.join("tests/python"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.extension().is_some_and(|x| x == "txt"))
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines()
                .map(|l| l.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let node: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/node/package.json")).unwrap(),
    )
    .unwrap();
    for (lib, version) in node["dependencies"].as_object().unwrap() {
        pins.push(format!("{lib}=={}", version.as_str().unwrap()));
    }
    let mut versioned = 0;
    for p in list {
        let name = p["name"].as_str().unwrap();
        for field in ["summary", "source", "library", "checked_against"] {
            assert!(
                p[field].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: {field}"
            );
        }
        let checked = p["checked_against"].as_str().unwrap();
        if checked != "source" {
            let (lib, version) = checked.split_once(' ').expect("LIBRARY VERSION");
            assert!(
                pins.iter().any(|l| *l == format!("{lib}=={version}")),
                "{name}: {checked} is not pinned in tests/python or tests/node/package.json"
            );
            versioned += 1;
        }
    }
    for (name, lib) in [
        ("openai-python", "openai "),
        ("anthropic-python", "anthropic "),
        ("openai-python-v1", "openai 1."),
        ("anthropic-python-v0", "anthropic 0."),
        ("grpc", "grpcio "),
        ("aws-standard", "botocore "),
        ("aws-standard-classic", "botocore 1.43."),
        ("aws-legacy", "botocore 1.43."),
        ("aws-js-v3", "@smithy/util-retry "),
        ("axios-retry", "axios-retry "),
    ] {
        let p = list.iter().find(|p| p["name"] == name).unwrap();
        assert!(
            p["checked_against"].as_str().unwrap().starts_with(lib),
            "{name}: {p}"
        );
    }
    assert!(versioned >= 12, "{versioned}");
    let text = run(&["presets"]);
    assert_eq!(code(&text), 0);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("checked against: openai 3."), "{text}");
}

/// Runs SMALL stretched to a 30 s outage live with `--abort-on-fail` and one gate; returns
/// the process output and the run's summary.json.
fn run_aborting(name: &str, gate: &str) -> (std::process::Output, serde_json::Value) {
    let dir = tmp(name);
    let sc = write_scenario(
        &dir,
        "long.toml",
        &SMALL
            .replace("duration = \"1s\"", "duration = \"30s\"")
            .replace("for = \"1s\"", "for = \"30s\""),
    );
    let out = dir.join("out");
    let o = run(&[
        "run",
        sc.to_str().unwrap(),
        "--quiet",
        "--abort-on-fail",
        "--gate",
        gate,
        "--out",
        out.to_str().unwrap(),
    ]);
    let summary = fs::read(out.join("summary.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no summary.json ({e}): {}", stderr(&o)));
    (o, summary)
}

/// `--abort-on-fail` stops a live run once a gate on a growing count is already broken,
/// still writes the reports, and exits 1 on that gate.
#[test]
fn abort_on_fail_stops_early_on_a_broken_count_gate() {
    let started = Instant::now();
    let (o, summary) = run_aborting("abort", "naive: attempts <= 100");
    let took = started.elapsed();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(stderr(&o).contains("--abort-on-fail"), "{}", stderr(&o));
    assert_eq!(summary["partial"], true);
    assert_eq!(summary["gates"][0]["passed"], false);
    assert!(summary["gates"][0]["measured"].as_f64().unwrap() > 100.0);
}

/// A gate on a figure the running counts never carried before (a failure reason) stops a
/// live run early too: `--abort-on-fail` judges a summary of the run so far, built as the
/// final one is, for every figure that only grows.
#[test]
fn abort_on_fail_stops_on_a_failure_reason() {
    let (o, summary) = run_aborting(
        "abort-reason",
        "naive: failures_by_reason.max-attempts <= 5",
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--abort-on-fail"), "{}", stderr(&o));
    assert_eq!(summary["partial"], true);
    // The load stopped well before its 30 s: the gate, not the schedule, ended it.
    let ran = summary["duration_s"].as_f64().unwrap();
    assert!(ran < 20.0, "load ran {ran} s");
    let verdict = &summary["gates"][0];
    assert_eq!(verdict["passed"], false);
    assert!(verdict["measured"].as_f64().unwrap() > 5.0, "{verdict}");
}

/// `sim --only aws-standard` gives aws-standard's very object of the full run: its draws
/// are keyed by its name, and the baseline its verdict is judged against stays in the run.
#[test]
fn only_keeps_a_configs_summary_identical() {
    let dir = tmp("only");
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/downstream-503-10s.toml"
    );
    let (all, only) = (dir.join("all"), dir.join("only"));
    let o = run(&["sim", scenario, "--quiet", "--out", all.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(&[
        "sim",
        scenario,
        "--quiet",
        "--only",
        "aws-standard",
        "--out",
        only.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let object = |d: &Path, name: &str| {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
        let names: Vec<String> = v["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        let c = v["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap();
        (names, c)
    };
    let (names, alone) = object(&only, "aws-standard");
    assert_eq!(names, ["no-retry", "aws-standard"]);
    let (_, together) = object(&all, "aws-standard");
    assert_eq!(alone, together);
    assert_eq!(alone["verdict"]["baseline"], "no-retry");
    let _ = std::fs::remove_dir_all(&dir);
}
