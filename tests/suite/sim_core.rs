//! The simulator: determinism, metastability, thundering herd, purity.

use std::path::{Path, PathBuf};

use crate::support::{config_named, repo_root};
use stormrig::metrics::Engine;
use stormrig::plan::{self, Plan};
use stormrig::sim::{self, SimError, SimOptions};

fn plan(name: &str) -> Plan {
    plan::load(&repo_root().join("scenarios").join(name)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn same_seed_gives_byte_identical_summary() {
    let p = plan("downstream-503-10s.toml");
    let opts = SimOptions::default();
    let a = sim::run(&p, &opts).unwrap();
    let b = sim::run(&p, &opts).unwrap();
    let ja = serde_json::to_vec_pretty(&a.result).unwrap();
    let jb = serde_json::to_vec_pretty(&b.result).unwrap();
    assert_eq!(ja, jb);
    assert_eq!(a.result.timeseries, b.result.timeseries);
    assert_eq!(a.result.engine, Engine::Sim);
    assert!(!a.result.partial);
    assert!(String::from_utf8(ja)
        .unwrap()
        .contains("\"engine\": \"sim\""));
    // A different seed changes the jittered configs.
    let mut p2 = p.clone();
    p2.scenario.seed = 2;
    let c = sim::run(&p2, &opts).unwrap();
    assert_ne!(
        serde_json::to_vec_pretty(&c.result).unwrap(),
        serde_json::to_vec_pretty(&a.result).unwrap()
    );
}

/// Configs simulated in parallel are assembled in config order: the output is the same,
/// byte for byte and attempt row for attempt row, on one thread or many.
#[test]
fn thread_count_changes_no_output() {
    let p = plan("downstream-503-10s.toml");
    let run = |jobs| {
        sim::run(
            &p,
            &SimOptions {
                attempt_log: true,
                jobs,
                ..SimOptions::default()
            },
        )
        .unwrap()
    };
    let one = run(1);
    assert!(one.result.configs.len() >= 3);
    for jobs in [2, 3, 0] {
        let many = run(jobs);
        assert_eq!(
            serde_json::to_vec_pretty(&one.result).unwrap(),
            serde_json::to_vec_pretty(&many.result).unwrap(),
            "jobs = {jobs}"
        );
        assert_eq!(one.attempts, many.attempts, "jobs = {jobs}");
        assert_eq!(one.stats, many.stats, "jobs = {jobs}");
    }
}

#[test]
fn downstream_503_figures_make_sense() {
    let r = sim::run(&plan("downstream-503-10s.toml"), &SimOptions::default())
        .unwrap()
        .result;
    let none = config_named(&r.configs, "no-retry");
    assert_eq!(none.upstream_requests, 4000);
    assert_eq!(none.downstream_arrivals, 4000);
    assert_eq!(none.amplification, 1.0);
    assert_eq!(none.failures, 2000);
    let naive = config_named(&r.configs, "naive");
    // 2000 requests in the outage, 4 attempts each; 2000 outside once.
    assert_eq!(naive.downstream_arrivals, 2000 * 4 + 2000);
    assert_eq!(naive.unfinished, 0);
    let aws = config_named(&r.configs, "aws-standard");
    assert!(aws.budget_refusals > 0, "{aws:?}");
    assert!(aws.amplification < naive.amplification);
    for c in &r.configs {
        assert_eq!(c.recovered, Some(true), "{}", c.name);
        assert_eq!(c.upstream_requests, c.successes + c.failures + c.unfinished);
    }
}

#[test]
fn scale_multiplies_rate_and_capacity() {
    let p = plan("downstream-503-10s.toml");
    let r = sim::run(
        &p,
        &SimOptions {
            scale: 10.0,
            attempt_log: false,
            ..SimOptions::default()
        },
    )
    .unwrap()
    .result;
    assert_eq!(
        config_named(&r.configs, "no-retry").upstream_requests,
        40_000
    );
    assert_eq!(
        config_named(&r.configs, "naive").downstream_arrivals,
        100_000
    );
    assert!(matches!(
        sim::run(
            &p,
            &SimOptions {
                scale: 0.0,
                attempt_log: false,
                ..SimOptions::default()
            }
        ),
        Err(SimError::Scale(_))
    ));
}

#[test]
fn attempt_log_has_one_row_per_attempt() {
    let mut p = plan("downstream-503-10s.toml");
    p.configs.retain(|c| c.name == "naive");
    let out = sim::run(
        &p,
        &SimOptions {
            scale: 1.0,
            attempt_log: true,
            ..SimOptions::default()
        },
    )
    .unwrap();
    assert_eq!(out.attempts.len() as u64, out.result.configs[0].attempts);
    assert_eq!(out.stats.attempts, out.result.configs[0].attempts);
}

#[test]
fn metastable_capacity_aggressive_stays_down_budgeted_recovers() {
    let r = sim::run(&plan("metastable-capacity.toml"), &SimOptions::default())
        .unwrap()
        .result;
    for c in &r.configs {
        eprintln!(
            "{:<22} recovered {:?} after {:?} s; amplification {:.2}; successes {} / {}; target served {} shed {}",
            c.name,
            c.recovered,
            c.recovery_time_s,
            c.amplification,
            c.successes,
            c.upstream_requests,
            c.target_served_ok,
            c.target_shed
        );
    }
    let naive = config_named(&r.configs, "naive-timeout");
    let aws = config_named(&r.configs, "aws-standard-timeout");
    assert_eq!(naive.recovered, Some(false), "{naive:?}");
    assert_eq!(aws.recovered, Some(true), "{aws:?}");
    assert!(aws.recovery_time_s.unwrap() < 10.0);
    assert!(naive.amplification > 2.0 * aws.amplification);
}

#[test]
fn thundering_herd_jitter_cuts_the_peak() {
    let r = sim::run(&plan("thundering-herd-sim.toml"), &SimOptions::default())
        .unwrap()
        .result;
    let flat = config_named(&r.configs, "exp-no-jitter");
    let jit = config_named(&r.configs, "exp-full-jitter");
    let factor = flat.peak_retries_per_s as f64 / jit.peak_retries_per_s as f64;
    eprintln!(
        "peak retries per 1 s slot: no jitter {}, full jitter {}; reduction factor {factor:.2}; total retries {} vs {}",
        flat.peak_retries_per_s, jit.peak_retries_per_s, flat.retries, jit.retries
    );
    assert!(factor > 2.5, "factor {factor}");
    // Jitter moves retries, it does not remove them (all eventually give up or succeed).
    let diff = flat.retries.abs_diff(jit.retries) as f64 / flat.retries as f64;
    assert!(diff < 0.25, "{} vs {}", flat.retries, jit.retries);
    // The same field is filled from the time-series rows.
    let peak = r
        .timeseries
        .iter()
        .filter(|row| row.config == "exp-no-jitter")
        .map(|row| row.retries)
        .max()
        .unwrap();
    assert_eq!(peak, flat.peak_retries_per_s);
}

#[test]
fn bounded_connection_pools_are_refused_clearly() {
    let mut p = plan("downstream-503-10s.toml");
    p.scenario.load.max_connections = Some(8);
    let e = sim::run(&p, &SimOptions::default()).unwrap_err();
    assert!(matches!(e, SimError::Unsupported(_)));
    assert!(e.to_string().contains("max_connections"), "{e}");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_simulator_is_pure() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src/sim"), &mut files);
    assert!(files.len() >= 3, "{files:?}");
    let forbidden_use = ["tokio", "hyper", "crate::live", "crate::server"];
    // Built from pieces so this file does not trip its own check.
    let forbidden_any = [
        ["Instant", "::now"].concat(),
        ["SystemTime", "::now"].concat(),
        ["thread", "_rng"].concat(),
        ["tokio", "::"].concat(),
    ];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("use ") || l.starts_with("pub use ") || l.starts_with("extern crate") {
                for bad in forbidden_use {
                    assert!(!l.contains(bad), "{}: `{l}`", f.display());
                }
            }
            for bad in &forbidden_any {
                assert!(!l.contains(bad.as_str()), "{}: `{l}`", f.display());
            }
        }
    }
}

/// A config's figures are its own: running it alone (`--only`) or among the others in
/// another order gives the very same summary, because its jitter is keyed by its name and
/// the target's fault draws by (seed, request, attempt) alone.
#[test]
fn a_config_alone_or_reordered_gives_the_same_summary() {
    let all = plan("downstream-503-10s.toml");
    assert!(
        all.configs.len() > 2,
        "the scenario compares several configs"
    );
    let opts = SimOptions::default();
    let json = |p: &Plan, name: &str| {
        let out = sim::run(p, &opts).unwrap();
        serde_json::to_string_pretty(config_named(&out.result.configs, name)).unwrap()
    };
    let mut alone = all.clone();
    alone.configs.retain(|c| c.name == "aws-standard");
    let mut reordered = all.clone();
    reordered.configs.reverse();
    let together = json(&all, "aws-standard");
    assert!(together.contains("\"budget_refusals\""));
    // With only its baseline beside it (what `--only aws-standard` runs), the whole object
    // is the same, verdict included.
    let mut with_baseline = all.clone();
    with_baseline
        .configs
        .retain(|c| c.name == "aws-standard" || c.name == "no-retry");
    assert_eq!(json(&with_baseline, "aws-standard"), together);
    // Truly alone, every figure is the same; only the verdict loses its baseline.
    let without_verdict = |text: String| {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let verdict = v.as_object_mut().unwrap().remove("verdict");
        (v, verdict)
    };
    let (alone_figures, alone_verdict) = without_verdict(json(&alone, "aws-standard"));
    let (together_figures, _) = without_verdict(together.clone());
    assert_eq!(alone_figures, together_figures);
    assert_eq!(alone_verdict.unwrap()["baseline"], serde_json::Value::Null);
    for c in &all.configs {
        assert_eq!(json(&reordered, &c.name), json(&all, &c.name), "{}", c.name);
    }
}

#[test]
fn connection_level_faults_are_refused_clearly() {
    let mut p = plan("downstream-503-10s.toml");
    let mut f = p.scenario.faults[0].clone();
    f.kind = stormrig::scenario::FaultKind::Bandwidth { bytes_per_s: 100 };
    p.scenario.faults.push(f);
    let e = sim::run(&p, &SimOptions::default()).unwrap_err();
    assert!(matches!(e, SimError::Unsupported(_)));
    let shown = e.to_string();
    assert!(shown.contains("faults[1] is bandwidth 100 B/s"), "{shown}");
    assert!(shown.contains("stormrig run"), "{shown}");
}

/// Every finished request's latency is a success's or a failure's: over every shipped
/// scenario and config, the slowest request overall is the slower of the two sides, and a
/// side with no request is all zeros.
#[test]
fn latency_splits_into_successes_and_failures() {
    let mut checked = 0;
    for path in crate::support::shipped_scenarios() {
        let p = plan::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let run = match sim::run(&p, &SimOptions::default()) {
            Ok(o) => o.result,
            Err(SimError::Unsupported(_)) => continue,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        for c in &run.configs {
            let (all, ok, failed) = (c.latency_ms, c.success_latency_ms, c.failure_latency_ms);
            let name = format!("{} {}", path.display(), c.name);
            assert_eq!(all.max, ok.max.max(failed.max), "{name}");
            for (side, n) in [(ok, c.successes), (failed, c.failures)] {
                assert_eq!(side.max == 0.0, n == 0, "{name}: {side:?} for {n} requests");
                assert!(side.p50 <= side.p99 && side.p99 <= side.max, "{name}");
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}
