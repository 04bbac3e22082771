//! Runs without a scenario file (`run --rate 100 --fault 503@1s+1s`): the flags become
//! `scenario.toml` in the run directory, which must give the same run as the file would,
//! and bad flags are refused by name before any load. And the first file of one's own,
//! from `stormrig new`.

use crate::support::process::{bin, exits, succeed, tmp_dir};

fn summary(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// The figures that do not depend on when the run happened, per config.
fn counts(summary: &serde_json::Value) -> Vec<(String, u64, u64, u64, u64)> {
    summary["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
            (
                c["name"].as_str().unwrap().to_string(),
                n("upstream_requests"),
                n("attempts"),
                n("downstream_arrivals"),
                n("budget_refusals"),
            )
        })
        .collect()
}

#[test]
fn a_one_line_sim_is_the_run_of_the_scenario_it_writes() {
    let root = tmp_dir("one-line-sim");
    let quick = root.join("quick");
    succeed(
        bin()
            .args([
                "sim",
                "-q",
                "--rate",
                "150",
                "--duration",
                "6s",
                "--fault",
                "503@1s+2s",
                "--fault",
                "reset:0.5@4s+1s",
                "--config",
                "naive",
                "--config",
                "aws-standard",
                "--out",
            ])
            .arg(&quick),
    );
    let written = quick.join("scenario.toml");
    let text = std::fs::read_to_string(&written).expect("the run writes its scenario");
    assert!(
        text.contains("rate = 150.0") && text.contains("status = 503"),
        "{text}"
    );
    let again = root.join("again");
    succeed(
        bin()
            .args(["sim", "-q"])
            .arg(&written)
            .arg("--out")
            .arg(&again),
    );
    let (a, b) = (counts(&summary(&quick)), counts(&summary(&again)));
    assert_eq!(a, b);
    let names: Vec<&str> = a.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["naive", "aws-standard"]);
    // The faults were applied: naive retried them.
    assert!(a[0].2 > a[0].1, "{a:?}");
}

#[test]
fn a_one_line_live_run_counts_exactly_against_the_builtin_target() {
    let dir = tmp_dir("one-line-live").join("run");
    let out = exits(
        bin()
            .args(["run", "-q", "--rate", "100", "--duration", "2s"])
            .args(["--fault", "503@0.5s+1s", "--out"])
            .arg(&dir),
        0,
    );
    let s = summary(&dir);
    let configs = s["configs"].as_array().unwrap();
    let names: Vec<&str> = configs
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["no-retry", "naive", "aws-standard"],
        "the default presets"
    );
    for c in configs {
        assert_eq!(c["attempts"], c["downstream_arrivals"], "{}", c["name"]);
        assert!(c["upstream_requests"].as_u64().unwrap() >= 150, "{c}");
    }
    assert!(
        std::fs::read_to_string(dir.join("scenario.toml"))
            .unwrap()
            .contains("builtin = \"default\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_one_line_flags_are_refused_by_name_before_any_load() {
    let dir = tmp_dir("one-line-bad");
    for (args, says) in [
        (
            vec!["--rate", "100", "--fault", "503@5s"],
            "--fault \"503@5s\"",
        ),
        (vec!["--rate", "0"], "--rate 0"),
        (
            vec!["--rate", "100", "--config", "aws-standart"],
            "aws-standard",
        ),
        (
            vec!["--rate", "100", "--url", "http://127.0.0.1:9/\"x"],
            "--url",
        ),
        (vec!["--rate", "100", "--duration", "5 sec"], "duration"),
    ] {
        let out = exits(
            bin().arg("run").args(&args).arg("--out").arg(dir.join("r")),
            2,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!dir.join("r/summary.json").exists(), "{args:?} ran");
    }
    // Neither a file and flags, nor flags without --rate.
    exits(
        bin().args(["run", "scenarios/downstream-503-10s.toml", "--rate", "5"]),
        2,
    );
    exits(bin().args(["run", "--fault", "503@1s+1s"]), 2);
}

/// `stormrig new` writes a template that `check --strict` accepts and `sim` runs with its
/// gate passing, named after the file; it never overwrites a file without `--force`.
#[test]
fn new_writes_a_template_that_checks_and_simulates_and_never_overwrites() {
    let dir = tmp_dir("new-template");
    let file = dir.join("payments storm.toml");
    succeed(bin().arg("new").arg(&file));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("name = \"payments-storm\""), "{text}");
    succeed(bin().args(["check", "--strict", "--explain"]).arg(&file));
    let out = dir.join("out");
    succeed(bin().arg("sim").arg(&file).arg("--out").arg(&out).arg("-q"));
    let names: Vec<String> = counts(&summary(&out)).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["no-retry", "naive", "aws-standard", "mine"]);

    std::fs::write(&file, "my own work\n").unwrap();
    let refused = exits(bin().arg("new").arg(&file), 2);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("payments storm.toml") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my own work\n");
    succeed(bin().arg("new").arg(&file).arg("--force"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    let printed = succeed(bin().args(["new", "-"]));
    let printed = String::from_utf8(printed.stdout).unwrap();
    assert_eq!(printed, text.replace("payments-storm", "my-storm"));
}

/// Every line of `nginx`'s access log once it holds `n`, waiting at most 5 s (nginx writes
/// a line after it answers).
fn nginx_lines(nginx: &crate::support::nginx::Nginx, n: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while nginx.log().len() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nginx.log().len()
}

#[test]
fn a_one_line_run_against_nginx_counts_as_the_scenario_file_it_wrote() {
    use crate::support::nginx::Nginx;
    let dir = tmp_dir("one-line-nginx");
    let (flags, file) = (dir.join("flags"), dir.join("file"));
    // The window's edges fall between the 10 ms arrivals, so a late arrival does not move
    // a request across them.
    let by_flags = Nginx::start();
    exits(
        bin()
            .args(["run", "-q", "--rate", "100", "--duration", "2s"])
            .args(["--url", &format!("http://{}/", by_flags.addr())])
            .args(["--fault", "503@505ms+1s", "--out"])
            .arg(&flags),
        0,
    );
    // The scenario the flags wrote, run as a file against a second nginx of its own.
    let by_file = Nginx::start();
    exits(
        bin()
            .arg("run")
            .arg(flags.join("scenario.toml"))
            .args(["-q", "--target-url", &format!("http://{}/", by_file.addr())])
            .arg("--out")
            .arg(&file),
        0,
    );
    let (a, b) = (summary(&flags), summary(&file));
    for (s, nginx) in [(&a, &by_flags), (&b, &by_file)] {
        let forwarded: u64 = s["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["target_forwarded"].as_u64().unwrap())
            .sum();
        assert!(forwarded > 0);
        assert_eq!(
            nginx_lines(nginx, forwarded as usize) as u64,
            forwarded,
            "nginx counted what the proxy forwarded"
        );
    }
    let (ca, cb) = (
        a["configs"].as_array().unwrap(),
        b["configs"].as_array().unwrap(),
    );
    assert_eq!(ca.len(), cb.len());
    for (x, y) in ca.iter().zip(cb) {
        let name = x["name"].as_str().unwrap();
        assert_eq!(x["name"], y["name"]);
        assert_eq!(x["upstream_requests"], y["upstream_requests"], "{name}");
        assert_eq!(x["attempts"], x["downstream_arrivals"], "{name}");
        assert_eq!(y["attempts"], y["downstream_arrivals"], "{name}");
    }
    // The fault: no-retry's failures are the requests in the window, in both runs.
    let failures = |c: &[serde_json::Value]| c[0]["failures"].as_u64().unwrap();
    assert_eq!(ca[0]["name"], "no-retry");
    assert!((90..=110).contains(&failures(ca)), "{}", failures(ca));
    assert_eq!(failures(ca), failures(cb));
}
