//! `stormrig sweep` and `stormrig capacity` on the simulator: the threshold curve knees
//! where the policy core's drain thresholds say, the metastability map, the capacity search,
//! byte-identical output, and refusals before anything runs.

use crate::support;
use crate::support::process::write;

use stormrig::sweep::capacity::{self, CapacityOptions, Direction, Outcome};
use stormrig::sweep::run::{self, SweepOptions, DRAINED_SHARE, SUSTAINED_REFUSAL_SHARE};
use stormrig::sweep::{Axis, Base, Recovery};

fn stormrig(args: &[&str]) -> std::process::Output {
    crate::support::process::bin()
        .current_dir(support::repo_root())
        .args(args)
        .output()
        .unwrap()
}

/// A long steady 503 fault at a failure rate the sweep varies; three budgeted configs.
const STEADY: &str = r#"name = "steady-failure-rate"
description = "A 60 s 503 fault at a swept failure rate, 500 req/s."
seed = 1
duration = "70s"

[load]
kind = "constant"
rate = 500.0

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "5s"
for = "60s"
probability = 0.1

[[configs]]
preset = "aws-standard"

[[configs]]
preset = "aws-standard-classic"

[[configs]]
preset = "grpc"
"#;

#[test]
fn threshold_curve_knees_at_each_computed_drain_threshold() {
    let dir = support::process::tmp_dir("sweep-thresholds");
    let path = write(&dir, "steady.toml", STEADY);
    let (base, plan) = Base::read(&path).unwrap();
    let axis = Axis::parse("faults[0].probability=0..0.5:0.01").unwrap();
    let r = run::sweep(&base, &plan, &[axis], &SweepOptions::default()).unwrap();
    assert_eq!(r.points.len(), 51);
    assert_eq!(
        r.thresholds.len(),
        3,
        "every config has a transient threshold"
    );
    for (ci, name) in r.configs.iter().enumerate() {
        let computed = r
            .thresholds
            .iter()
            .find(|t| &t.config == name)
            .map(|t| t.value)
            .unwrap();
        // The first failure rate at which the budget spends most of the late fault below
        // half its level and refuses retries there: a sustained drain, not a start-up dip.
        let first = r
            .points
            .iter()
            .find(|p| {
                let f = &p.cells[ci].figures;
                f[DRAINED_SHARE].unwrap() >= 0.5 && f[SUSTAINED_REFUSAL_SHARE].unwrap() > 0.0
            })
            .unwrap_or_else(|| panic!("{name}: never drained up to 50 %"));
        let p = first.coords[0];
        assert!(
            (p - computed).abs() <= 0.02,
            "{name}: sustained refusals from {p}, computed threshold {computed}"
        );
        // Below the threshold by more than the grid step there are no sustained refusals.
        for pt in r.points.iter().filter(|pt| pt.coords[0] < computed - 0.02) {
            assert!(
                pt.cells[ci].figures[DRAINED_SHARE].unwrap() < 0.5,
                "{name} drained at {}",
                pt.coords[0]
            );
        }
    }
}

#[test]
fn metastability_map_marks_where_each_config_never_recovers() {
    let path = support::repo_root().join("scenarios/metastability-map.toml");
    let (base, plan) = Base::read(&path).unwrap();
    let axes = [
        Axis::parse("load.rate=400..700:100").unwrap(),
        Axis::parse("faults[0].for=250ms..2000ms:250ms").unwrap(),
    ];
    let r = run::sweep(&base, &plan, &axes, &SweepOptions::default()).unwrap();
    assert_eq!(r.points.len(), 4 * 8);
    let class = |ci: usize, rate: f64, f: f64| {
        r.points
            .iter()
            .find(|p| p.coords == [rate, f])
            .unwrap()
            .cells[ci]
            .recovery
    };
    let naive = r.configs.iter().position(|c| c == "naive-timeout").unwrap();
    // The budget-less config: fine at the fault's own capacity, metastable above it once
    // the trigger lasts long enough, and the edge moves with the load.
    // (Fault lengths are in the axis's unit, ms.)
    assert_eq!(class(naive, 400.0, 2000.0), Recovery::Recovered);
    assert_eq!(class(naive, 500.0, 2000.0), Recovery::Never);
    assert_eq!(class(naive, 500.0, 250.0), Recovery::Recovered);
    assert_eq!(class(naive, 700.0, 250.0), Recovery::Never);
    // What users see outside the trigger follows the map.
    let outside = |rate: f64, f: f64| {
        r.points
            .iter()
            .find(|p| p.coords == [rate, f])
            .unwrap()
            .cells[naive]
            .figures[run::SUCCESS_SHARE_OUTSIDE_FAULTS]
            .unwrap()
    };
    assert!(outside(400.0, 2000.0) > 0.99, "{}", outside(400.0, 2000.0));
    assert!(outside(500.0, 2000.0) < 0.5, "{}", outside(500.0, 2000.0));
    // Both budgets recover everywhere on this grid.
    for name in ["aws-standard-timeout", "ratio-budget-timeout"] {
        let ci = r.configs.iter().position(|c| c == name).unwrap();
        assert!(
            r.points
                .iter()
                .all(|p| p.cells[ci].recovery == Recovery::Recovered),
            "{name}"
        );
    }
}

#[test]
fn budgetless_config_has_less_capacity_than_aws_standard() {
    let path = support::repo_root().join("scenarios/metastable-capacity.toml");
    let (base, plan) = Base::read(&path).unwrap();
    let mut axis = Axis::parse("load.rate=100..1000:100").unwrap();
    base.note_scenario_values(std::slice::from_mut(&mut axis));
    let objective = capacity::parse_objective("recovery_time_s <= 5").unwrap();
    let opts = CapacityOptions {
        direction: Direction::Largest,
        resolution: 10.0,
        tolerance: 0.0,
        jobs: 0,
        stop: None,
        on_probe: None,
    };
    let r = capacity::search(&base, &plan, &axis, &[objective], &opts).unwrap();
    let limit = |name: &str| {
        let c = r.configs.iter().find(|c| c.config == name).unwrap();
        match c.outcome {
            Outcome::Found { limit, beyond } => {
                assert!(beyond > limit && beyond - limit <= 10.0, "{name}: {c:?}");
                assert_eq!(c.binding, vec!["*: recovery_time_s <= 5".to_string()]);
                assert_eq!(c.headroom, Some(limit / 600.0));
                limit
            }
            ref o => panic!("{name}: {o:?}"),
        }
    };
    let naive = limit("naive-timeout");
    let aws = limit("aws-standard-timeout");
    assert!(naive < aws, "naive {naive} vs aws-standard {aws}");
    // The naive config cannot carry the scenario's own 600 req/s through the trigger.
    assert!(naive < 600.0 && aws > 600.0);
}

/// With a model tolerance the limit steps back from the knife edge: every limit also holds
/// with each service time 5 % longer, the value where it first fails as modeled is the
/// same edge a search without tolerance finds, and the margin between them is what a live
/// service may stray from its model.
#[test]
fn a_tolerant_limit_holds_with_a_slower_service_and_names_the_knife_edge() {
    let path = support::repo_root().join("scenarios/metastable-capacity.toml");
    let (base, plan) = Base::read(&path).unwrap();
    let mut axis = Axis::parse("load.rate=100..1000:100").unwrap();
    base.note_scenario_values(std::slice::from_mut(&mut axis));
    let objective = capacity::parse_objective("recovery_time_s <= 5").unwrap();
    let search = |tolerance: f64| {
        let opts = CapacityOptions {
            direction: Direction::Largest,
            resolution: 10.0,
            tolerance,
            jobs: 0,
            stop: None,
            on_probe: None,
        };
        capacity::search(&base, &plan, &axis, std::slice::from_ref(&objective), &opts).unwrap()
    };
    let (exact, tolerant) = (search(0.0), search(0.05));
    assert_eq!(tolerant.model_tolerance, 0.05);
    for (e, t) in exact.configs.iter().zip(&tolerant.configs) {
        let (
            Outcome::Found {
                limit: el,
                beyond: eb,
            },
            Outcome::Found { limit: tl, .. },
        ) = (&e.outcome, &t.outcome)
        else {
            panic!("{e:?}\n{t:?}");
        };
        assert!(tl <= el, "{}: tolerant {tl} above exact {el}", e.config);
        // Without tolerance the edge is the failing value next to the limit.
        assert_eq!(e.edge, Some(*eb), "{}", e.config);
        // The edge as modeled is found again, to the resolution, by the tolerant search.
        let edge = t.edge.unwrap_or_else(|| panic!("{}: no edge", t.config));
        assert!(
            (edge - eb).abs() <= 10.0,
            "{}: edge {edge} vs {eb}",
            t.config
        );
        // The probe at the limit held with the slower service; one that failed only slower
        // names the tolerance beside its objective.
        let at = t.probes.iter().find(|p| p.value == *tl).unwrap();
        assert!(at.passed && at.slower.as_ref().unwrap().passed, "{at:?}");
        for p in t.probes.iter().filter(|p| p.as_modeled() && !p.passed) {
            assert!(
                p.failed.iter().all(|f| f.ends_with("(service 5 % slower)")),
                "{p:?}"
            );
        }
        let m = capacity::margin(t).unwrap();
        assert!((m - (edge - tl) / edge).abs() < 1e-12);
    }
    // The budget-less config sits on a knife edge as modeled: the tolerance moves it.
    let naive = |r: &capacity::CapacityResult| {
        r.configs
            .iter()
            .find(|c| c.config == "naive-timeout")
            .unwrap()
            .limit
            .unwrap()
    };
    assert!(naive(&tolerant) < naive(&exact));
}

#[test]
fn sweep_csv_is_byte_identical_between_runs_and_thread_counts() {
    let dir = support::process::tmp_dir("sweep-bytes");
    let mut outs = Vec::new();
    for (run, jobs) in [("a", "2"), ("b", "2"), ("c", "1")] {
        let out = dir.join(run);
        let o = stormrig(&[
            "sweep",
            "scenarios/downstream-503-10s.toml",
            "--vary",
            "faults[0].probability=0..0.9:0.1",
            "--seeds",
            "2",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        outs.push(out);
    }
    let csv: Vec<Vec<u8>> = outs
        .iter()
        .map(|d| std::fs::read(d.join("sweep.csv")).unwrap())
        .collect();
    assert_eq!(csv[0], csv[1]);
    assert_eq!(csv[0], csv[2]);
    for d in &outs[1..] {
        assert_eq!(
            std::fs::read(d.join("sweep.json")).unwrap(),
            std::fs::read(outs[0].join("sweep.json")).unwrap()
        );
    }
    let text = String::from_utf8(csv[0].clone()).unwrap();
    let header = text.lines().next().unwrap();
    for col in [
        "faults[0].probability",
        "config",
        "recovery",
        "amplification",
        "latency_ms.p99",
        "amplification.sd",
    ] {
        assert!(header.split(',').any(|c| c == col), "{col} in {header}");
    }
    // 10 points x 5 configs, plus the header.
    assert_eq!(text.lines().count(), 51);
    let page = std::fs::read_to_string(outs[0].join("sweep.html")).unwrap();
    assert!(page.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    // Self-contained: nothing to fetch (the only URL is the SVG namespace).
    assert!(!page.contains("src=") && !page.contains("<link") && !page.contains("<script"));
}

#[test]
fn an_invalid_point_is_refused_before_anything_runs() {
    let dir = support::process::tmp_dir("sweep-bad");
    let out = dir.join("out");
    let o = stormrig(&[
        "sweep",
        "scenarios/downstream-503-10s.toml",
        "--vary",
        "faults[0].probability=0.5..1.5:0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("point faults[0].probability=1.5"), "{err}");
    assert!(err.contains("downstream-503-10s.toml:"), "{err}");
    assert!(err.contains(": faults[0].probability:"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused sweep");

    let o = stormrig(&[
        "sweep",
        "scenarios/downstream-503-10s.toml",
        "--vary",
        "faults[0].for=1..5:1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unit"));
}

#[test]
fn layered_scenarios_sweep_in_the_simulator() {
    let dir = support::process::tmp_dir("sweep-layers");
    let o = stormrig(&[
        "sweep",
        "scenarios/layers-3x3-no-budget.toml",
        "--vary",
        "faults[0].for=3s..4s:1s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The fault outlasts the load at both points: every request meets it at every hop.
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    let amp = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == "amplification")
        .unwrap();
    let naive: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains(",naive,"))
        .map(|l| l.split(',').nth(amp).unwrap())
        .collect();
    assert_eq!(naive, ["64", "64"], "{csv}");
}

#[test]
fn capacity_gates_fail_the_command_when_headroom_shrinks() {
    let dir = support::process::tmp_dir("capacity-gates");
    let run = |gate: &str| {
        stormrig(&[
            "capacity",
            "scenarios/metastable-capacity.toml",
            "--vary",
            "load.rate=100..1000:100",
            "--objective",
            "recovery_time_s <= 5",
            "--gate",
            gate,
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
    };
    let ok = run("aws-standard-timeout: capacity.max_rate >= 700");
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(stdout.contains("HEADROOM"), "{stdout}");
    let fail = run("*: capacity.headroom >= 1");
    assert_eq!(fail.status.code(), Some(1), "naive's headroom is below 1");
    let bad = run("*: capacity.nonsense >= 1");
    assert_eq!(bad.status.code(), Some(2));
    for f in ["capacity.json", "capacity.csv", "capacity.html"] {
        assert!(dir.join("out").join(f).is_file(), "{f}");
    }
}

/// A scaled-down metastable scenario (10 s) for the live confirmation.
const META_SMALL: &str = r#"name = "metastable-small"
description = "Scaled-down capacity drop: 8 slots x 10 ms, halved for 3 s."
seed = 1
duration = "10s"
drain = "1s"

[load]
kind = "constant"
rate = 600.0

[target]
builtin = "small"

[[faults]]
kind = "capacity"
concurrency = 4
at = "2s"
for = "3s"

[[configs]]
name = "naive-timeout"
preset = "naive"
per_try_timeout = "100ms"
"#;

#[test]
fn confirm_reruns_the_limit_live_and_agrees() {
    let dir = support::process::tmp_dir("capacity-confirm");
    let path = write(&dir, "metastable-small.toml", META_SMALL);
    // Grid points only (resolution = STEP): the limit (half the degraded capacity) and the
    // next step beyond it (above it) are 300 req/s apart, clear of live's scheduling noise
    // on a loaded machine (a limit at 75 % of the degraded capacity flipped once in five).
    let o = stormrig(&[
        "capacity",
        path.to_str().unwrap(),
        "--vary",
        "load.rate=200..1100:300",
        "--resolution",
        "300",
        "--objective",
        "recovery_time_s <= 5",
        "--confirm",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("200 (fails at 500)"), "{stdout}");
    // The confirmation's row: the objective, simulated and live at both values.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("naive-timeout") && l.contains("200: sim"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let (limit, beyond) = line
        .split_once(" 500: ")
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        limit.contains("200: sim") && limit.trim_end().ends_with("ok"),
        "{line}"
    );
    assert!(
        beyond.contains("FAIL / live") && beyond.contains("FAIL"),
        "{line}"
    );
    assert!(line.trim_end().ends_with("yes"), "{line}");
}

#[test]
fn confirm_names_the_objective_live_disagrees_on_and_writes_both_figures() {
    let dir = support::process::tmp_dir("capacity-confirm-disagrees");
    let path = write(&dir, "metastable-small.toml", META_SMALL);
    let out = dir.join("out");
    // The small target serves in a constant 10 ms. Beyond the knife edge (500 req/s, with
    // naive retries on a 100 ms per-try timeout through a capacity drop) the simulator's
    // median stays at 10.103 ms (its path is 2 x 50 us, in the histogram's bucket) while
    // live's is about 101 ms (101.4 in runs over hyper's server and the lean one alike):
    // the model's answer there does not survive contact with the real target, and confirm
    // must say so. At the limit (200 req/s) the two medians are a few tens of microseconds
    // apart, live's path against the model's, on either side depending on the machine:
    // this test does not look there. With no model tolerance: a service 5 % slower
    // (10.5 ms) would fail the objective everywhere, and there would be no limit to confirm.
    let o = stormrig(&[
        "capacity",
        path.to_str().unwrap(),
        "--vary",
        "load.rate=200..1100:300",
        "--resolution",
        "300",
        "--model-tolerance",
        "0",
        "--objective",
        "recovery_time_s <= 5",
        "--objective",
        "latency_ms.p50 <= 10.15",
        "--confirm",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    // Progress: which run, of how many, for which value.
    assert!(
        stderr.contains("confirm 1/2: naive-timeout at load.rate = 200 (the limit)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("confirm 2/2: naive-timeout at load.rate = 500"),
        "{stderr}"
    );
    let said = stderr
        .lines()
        .find(|l| l.starts_with("live disagrees: naive-timeout at load.rate = 500"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(said.contains("latency_ms.p50 <= 10.15"), "{said}");
    assert!(said.contains("live - threshold = +"), "{said}");
    // capacity.json: both figures of both objectives at both values.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("capacity.json")).unwrap()).unwrap();
    let live = &json["configs"][0]["live"];
    assert_eq!(live["agrees"], false, "{live}");
    assert_eq!(
        (live["limit"].as_f64(), live["beyond"].as_f64()),
        (Some(200.0), Some(500.0))
    );
    let objectives = live["objectives"].as_array().unwrap();
    assert_eq!(objectives.len(), 2, "{live}");
    let recovery = &objectives[0];
    assert_eq!(recovery["sim_passed_at_limit"], true, "{recovery}");
    assert_eq!(recovery["live_passed_at_limit"], true, "{recovery}");
    assert_eq!(recovery["live_passed_beyond"], false, "{recovery}");
    let p50 = &objectives[1];
    let sim = p50["sim_beyond"].as_f64().unwrap();
    let live_p50 = p50["live_beyond"].as_f64().unwrap();
    assert!(sim <= 10.15 && live_p50 > 10.15, "{p50}");
    assert_eq!(p50["sim_passed_beyond"], true, "{p50}");
    assert_eq!(p50["live_passed_beyond"], false, "{p50}");
    // capacity.csv: the same figures in the objective's columns.
    let csv = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        let i = header.iter().position(|h| *h == name);
        row[i.unwrap_or_else(|| panic!("{name} in {csv}"))]
    };
    assert_eq!(col("live_agrees"), "false");
    assert_eq!(col("objective_2"), "*: latency_ms.p50 <= 10.15");
    assert_eq!(col("objective_2.sim_beyond").parse::<f64>().unwrap(), sim);
    assert_eq!(
        col("objective_2.live_beyond").parse::<f64>().unwrap(),
        live_p50
    );
    // capacity.html: the live section, with the disagreement in words.
    let html = std::fs::read_to_string(out.join("capacity.html")).unwrap();
    assert!(html.contains("Live confirmation"), "no live section");
    assert!(html.contains("live disagrees: naive-timeout at load.rate = 500"));
}

/// A scaled-down capacity drop on the small target (8 slots x 10 ms = 800 req/s): half
/// the slots for 2 s from 4 s. The sweeps set the load.
const OVERLOAD_SMALL: &str = r#"name = "overload-small"
description = "The small target (800 req/s) loses half its slots for 2 s from 4 s."
seed = 1
duration = "12s"

[load]
kind = "constant"
rate = 600.0

[target]
builtin = "small"

[[faults]]
kind = "capacity"
concurrency = 4
at = "4s"
for = "2s"

[[configs]]
name = "aws-standard-timeout"
preset = "aws-standard"
per_try_timeout = "100ms"

[[configs]]
name = "naive-timeout"
preset = "naive"
per_try_timeout = "100ms"
"#;

/// Successes per started request over `seconds` of one config's timeline.
fn goodput_ratio(
    run: &stormrig::metrics::RunResult,
    config: &str,
    seconds: std::ops::Range<u64>,
) -> f64 {
    let (ok, started) = run
        .timeseries
        .iter()
        .filter(|r| r.config == config && seconds.contains(&r.second))
        .fold((0, 0), |(ok, st), r| {
            (ok + r.successes, st + r.upstream_started)
        });
    ok as f64 / started as f64
}

#[test]
fn a_load_beyond_capacity_is_overloaded_before_the_fault_and_never_recovered() {
    let dir = support::process::tmp_dir("sweep-overload");
    let path = write(&dir, "overload-small.toml", OVERLOAD_SMALL);
    let (base, _) = Base::read(&path).unwrap();
    let axis = Axis::parse("load.rate=400..1200:800").unwrap();
    let at = |rate: f64| {
        let plan = base.point(std::slice::from_ref(&axis), &[rate]).unwrap();
        run::simulate(&plan, 1, &format!("load.rate={rate}")).unwrap()
    };
    let tolerance = stormrig::metrics::OVERLOAD_TOLERANCE;
    let objective = capacity::parse_objective("recovery_time_s <= 5").unwrap();

    // 1.5x the capacity: saturated before the fault.
    let over = at(1200.0);
    for c in &over.configs {
        let (offered, goodput) = (
            c.pre_fault_offered_rps.unwrap(),
            c.pre_fault_goodput_rps.unwrap(),
        );
        assert!(
            (offered - 1200.0).abs() < 1.0,
            "{}: offered {offered}",
            c.name
        );
        assert!(
            goodput < (1.0 - tolerance) * offered,
            "{}: {goodput}",
            c.name
        );
        assert_eq!(c.overloaded, Some(true), "{}", c.name);
        assert_eq!((c.recovered, c.recovery_time_s), (None, None), "{}", c.name);
    }
    // The trap the overload verdict closes: measured against its own saturated pre-fault
    // level, goodput is "back" within seconds of the fault's end.
    let trapped = over.configs.iter().any(|c| {
        let before = goodput_ratio(&over, &c.name, 2..4);
        goodput_ratio(&over, &c.name, 6..9) >= 0.9 * before
    });
    assert!(
        trapped,
        "no config looks recovered against its saturated baseline"
    );
    // Judged one config at a time, as a capacity probe: every objective fails.
    for ci in 0..over.configs.len() {
        let mut one = over.clone();
        one.configs = vec![over.configs[ci].clone()];
        let p = capacity::judge(&one, 1200.0, std::slice::from_ref(&objective)).unwrap();
        assert!(!p.passed && p.overloaded.is_some(), "{p:?}");
        assert!(p.verdicts.iter().all(|v| !v.passed), "{p:?}");
    }

    // 0.5x the capacity: healthy before the fault, and it recovers.
    let under = at(400.0);
    for c in &under.configs {
        assert_eq!(c.overloaded, Some(false), "{}", c.name);
        let goodput = c.pre_fault_goodput_rps.unwrap();
        assert!(goodput >= (1.0 - tolerance) * c.pre_fault_offered_rps.unwrap());
        assert_eq!(c.recovered, Some(true), "{}", c.name);
        let mut one = under.clone();
        one.configs = vec![c.clone()];
        let p = capacity::judge(&one, 400.0, std::slice::from_ref(&objective)).unwrap();
        assert!(p.passed && p.overloaded.is_none(), "{p:?}");
    }

    // The sweep marks the overloaded cells as their own class, in sweep.csv too.
    let (base, plan) = Base::read(&path).unwrap();
    let r = run::sweep(&base, &plan, &[axis], &SweepOptions::default()).unwrap();
    for (point, want) in r.points.iter().zip([false, true]) {
        for c in &point.cells {
            assert_eq!(
                c.recovery == Recovery::Overloaded,
                want,
                "{}: {c:?}",
                point.label
            );
        }
    }
    let csv = String::from_utf8(stormrig::sweep::files::csv(&r).unwrap()).unwrap();
    let col = |name: &str| {
        csv.lines()
            .next()
            .unwrap()
            .split(',')
            .position(|c| c == name)
            .unwrap()
    };
    let (recovery, flag) = (col("recovery"), col("overloaded"));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 4, "{csv}");
    for (i, row) in rows.iter().enumerate() {
        // Rows: 400 then 1200, each config in turn.
        let want = i >= 2;
        assert_eq!(row[recovery] == "overloaded", want, "{csv}");
        assert_eq!(row[flag], if want { "1" } else { "0" }, "{csv}");
    }
}

#[test]
fn capacity_never_picks_a_load_that_was_overloaded_before_the_fault() {
    let dir = support::process::tmp_dir("capacity-overload");
    let path = write(&dir, "overload-small.toml", OVERLOAD_SMALL);
    let out = dir.join("out");
    // Grid points only: 400 (0.5x the capacity), 800 (1x), 1200 (1.5x).
    let o = stormrig(&[
        "capacity",
        path.to_str().unwrap(),
        "--vary",
        "load.rate=400..1200:400",
        "--resolution",
        "400",
        "--objective",
        "recovery_time_s <= 5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("capacity.json")).unwrap()).unwrap();
    for c in json["configs"].as_array().unwrap() {
        let name = c["config"].as_str().unwrap();
        let limit = c["limit"].as_f64().unwrap_or(0.0);
        assert!(limit < 1200.0, "{name}: limit {limit}");
        let probe = c["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["value"] == 1200.0)
            .unwrap();
        assert_eq!(probe["passed"], false, "{name}");
        let o = &probe["overloaded"];
        let (offered, goodput) = (
            o["offered_rps"].as_f64().unwrap(),
            o["goodput_rps"].as_f64().unwrap(),
        );
        assert!(goodput < offered, "{name}: {o}");
        // The config's overload point is the easiest overloaded probe: 1200 or below.
        let first = c["overloaded"]["value"].as_f64().unwrap();
        assert!(first <= 1200.0 && first > limit, "{name}: {c}");
        let sentence = format!(
            "{name}: overloaded before the fault at load.rate = {}: pre-fault goodput ",
            stormrig::report::gates::fmt_num(first)
        );
        assert!(stdout.contains(&sentence), "{sentence} in {stdout}");
    }
    let csv = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("overloaded_at"),
        "{csv}"
    );
}

/// A 503 fault at a swept failure rate and load, a config that never retries and one that
/// retries up to 4 times: equal amplification (no failures, or no retries) at some cells of
/// each, different maxima.
const AMP_MAP: &str = r#"name = "amp-map"
description = "A 503 fault of swept probability and load."
seed = 1
duration = "6s"

[load]
kind = "constant"
rate = 100.0

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "2s"
for = "2s"
probability = 0.5

[[configs]]
preset = "no-retry"

[[configs]]
preset = "naive"
"#;

/// Every map cell of a sweep page: (config, point label) → (fill, title text).
fn map_cells(
    page: &str,
    what: &str,
) -> std::collections::BTreeMap<(String, String), (String, String)> {
    let mut out = std::collections::BTreeMap::new();
    for chunk in page.split("<rect class=\"cell\"").skip(1) {
        let fill = chunk
            .split("fill=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let title = chunk
            .split("<title>")
            .nth(1)
            .unwrap()
            .split("</title>")
            .next()
            .unwrap();
        if !title.contains(what) {
            continue;
        }
        let (config, rest) = title.split_once(" · ").unwrap();
        let (label, value) = rest.rsplit_once(": ").unwrap();
        out.insert(
            (config.to_string(), label.to_string()),
            (fill.to_string(), value.to_string()),
        );
    }
    out
}

#[test]
fn amplification_maps_share_one_colour_scale_with_a_colour_bar() {
    let dir = support::process::tmp_dir("sweep-amp-scale");
    let path = write(&dir, "amp-map.toml", AMP_MAP);
    let (base, plan) = Base::read(&path).unwrap();
    let axes = [
        Axis::parse("faults[0].probability=0..0.5:0.5").unwrap(),
        Axis::parse("load.rate=100..200:100").unwrap(),
    ];
    let r = run::sweep(&base, &plan, &axes, &SweepOptions::default()).unwrap();
    let page = stormrig::sweep::page::sweep(&r).unwrap();
    let cells = map_cells(&page, "amplification");
    assert_eq!(cells.len(), 2 * 4, "{cells:?}");
    let amp = |config: &str, label: &str| {
        let ci = r.configs.iter().position(|c| c == config).unwrap();
        r.points.iter().find(|p| p.label == label).unwrap().cells[ci].figures["amplification"]
            .unwrap()
    };
    let quiet = "faults[0].probability=0, load.rate=100";
    let stormy = "faults[0].probability=0.5, load.rate=100";
    // Without failures both configs send each request once; with them only naive retries.
    assert_eq!(amp("no-retry", stormy), amp("naive", quiet));
    assert!(amp("naive", stormy) > amp("naive", quiet));
    let cell = |config: &str, label: &str| cells[&(config.to_string(), label.to_string())].clone();
    // Equal amplification, equal colour, in the maps of two configs (no-retry's map is
    // all 1.0, its own maximum: a per-config scale draws it darkest).
    assert_eq!(cell("no-retry", stormy).0, cell("naive", quiet).0);
    assert_eq!(cell("no-retry", quiet).0, cell("naive", quiet).0);
    assert_ne!(cell("naive", stormy).0, cell("naive", quiet).0);
    // Each cell's value is in its title.
    assert_eq!(cell("naive", quiet).1, "amplification 1.00×");
    let top = amp("naive", stormy);
    assert_eq!(cell("naive", stormy).1, format!("amplification {top:.2}×"));
    // One colour bar per map, all with the page's minimum and maximum.
    let (lo, hi) = r
        .points
        .iter()
        .flat_map(|p| &p.cells)
        .map(|c| c.figures["amplification"].unwrap())
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let bar = format!("<g class=\"colorbar\" data-min=\"{lo}\" data-max=\"{hi}\">");
    assert_eq!(page.matches(&bar).count(), 2, "{bar}");
    // The recovery maps' legend names every class, the overloaded one included.
    for words in [
        "recovered late",
        "never recovered",
        "overloaded before the fault",
        "no fault",
    ] {
        assert!(page.contains(&format!("</span>{words}")), "{words}");
    }
}
