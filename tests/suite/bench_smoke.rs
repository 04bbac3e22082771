//! Smoke tests of `stormrig bench`: the figures parse and the counts are exact (what the
//! client counted equals what the built-in target counted). No timing assertions.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use stormrig::bench::{self, GeneratorOpts, OpenLoopOpts};
use stormrig::server;

fn kv(text: &str) -> BTreeMap<String, String> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

#[test]
fn policy_bench_counts_and_prints() {
    let rows = bench::policy_bench(10_000).unwrap();
    assert_eq!(rows.len(), bench::POLICY_CASES.len());
    for r in &rows {
        assert_eq!(r.attempts, 10_000, "{r:?}");
        assert!(r.requests >= 1);
        if r.status == 200 {
            assert_eq!(r.requests, r.attempts);
            assert_eq!(r.retries, 0);
        }
    }
    // naive retries every 503 up to 4 attempts: 2,500 requests of 4 attempts each.
    let naive = rows
        .iter()
        .find(|r| r.config == "naive" && r.status == 503)
        .unwrap();
    assert_eq!(naive.requests, 2_500);
    assert_eq!(naive.retries, 7_500);
    let text = bench::policy_table(&rows);
    assert_eq!(text.lines().count(), rows.len());
    for line in text.lines() {
        let m = kv(line);
        assert_eq!(m["attempts"], "10000");
        let ns: f64 = m["ns_per_attempt"].parse().unwrap();
        assert!(ns > 0.0);
    }
}

/// Over HTTP/1.1 and over HTTP/2 in clear alike.
#[tokio::test(flavor = "current_thread")]
async fn generator_counts_match_target_arrivals() {
    for h2c in [false, true] {
        let listen = server::Listen {
            protocol: if h2c {
                stormrig::scenario::Protocol::H2c
            } else {
                stormrig::scenario::Protocol::Http1
            },
            tls: None,
        };
        let start = tokio::time::Instant::now();
        let handle =
            server::start_listening(loopback(), crate::support::instant_target(), start, listen)
                .await
                .unwrap();
        let opts = GeneratorOpts {
            url: format!("http://{}/", handle.addr()),
            connections: 8,
            duration: Duration::from_millis(700),
            config: "naive".into(),
            h2c,
        };
        let (counted, elapsed) = bench::generator_run(&opts).await.unwrap();
        let stats = handle.shutdown().await;
        assert!(counted.requests > 0);
        assert_eq!(counted.successes, counted.requests);
        assert_eq!(counted.attempts, counted.requests);
        assert_eq!(stats.arrivals, counted.attempts);
        let report = bench::GeneratorReport {
            counted,
            elapsed,
            cpu_s: bench::cpu_seconds(),
            threads: 1,
        };
        let m = kv(&bench::generator_text(&opts, &report));
        assert_eq!(m["requests"], stats.arrivals.to_string());
        assert_eq!(m["protocol"], if h2c { "h2c" } else { "http1" });
        for k in [
            "req_per_s",
            "p50_ms",
            "p99_ms",
            "cpu_s",
            "cpu_s_per_million",
        ] {
            let _: f64 = m[k].parse().unwrap_or_else(|_| panic!("{k} = {}", m[k]));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn generator_retries_reach_the_target() {
    // Every request gets 503: naive sends 4 attempts per logical request, all counted there.
    let cfg = bench::status_target_config(503, Duration::from_secs(60));
    let handle = server::start(loopback(), cfg, tokio::time::Instant::now())
        .await
        .unwrap();
    let opts = GeneratorOpts {
        url: format!("http://{}/", handle.addr()),
        connections: 4,
        duration: Duration::from_millis(500),
        config: "naive".into(),
        h2c: false,
    };
    let (counted, _) = bench::generator_run(&opts).await.unwrap();
    let stats = handle.shutdown().await;
    assert!(counted.requests > 0);
    assert_eq!(counted.successes, 0);
    assert_eq!(counted.attempts, 4 * counted.requests);
    assert_eq!(counted.retries, 3 * counted.requests);
    assert_eq!(stats.arrivals, counted.attempts);
    assert_eq!(stats.responses_by_status.get(&503), Some(&counted.attempts));
}

/// An open loop at 200 arrivals per second (one every 5 ms) for `duration` through `naive`
/// against the built-in target answering 200: its report, its options and the target's
/// arrivals.
async fn open_loop_at_200(
    duration: Duration,
    pacing: stormrig::live::pacer::Pacing,
) -> (bench::OpenLoopReport, OpenLoopOpts, u64) {
    let handle = server::start(
        loopback(),
        crate::support::instant_target(),
        tokio::time::Instant::now(),
    )
    .await
    .unwrap();
    let opts = OpenLoopOpts {
        url: format!("http://{}/", handle.addr()),
        rate: 200.0,
        duration,
        config: "naive".into(),
        max_in_flight: 1000,
        connections: Some(8),
        drain: Duration::from_secs(2),
        pacing,
    };
    let config = stormrig::policy::preset("naive").unwrap();
    let (r, _) = bench::open_loop_run(&opts, config).await.unwrap();
    let stats = handle.shutdown().await;
    (r, opts, stats.arrivals)
}

/// A batch window starts the arrivals due within it on one wake-up: never before the last
/// of them is due (so the first waits for it), and every arrival still starts once.
#[tokio::test(flavor = "current_thread")]
async fn a_batch_window_starts_its_arrivals_together_and_every_one_once() {
    // A 12 ms window holds three arrivals.
    let pacing = stormrig::live::pacer::Pacing {
        spin: Duration::ZERO,
        batch: Duration::from_millis(12),
    };
    let (r, _, arrivals) = open_loop_at_200(Duration::from_millis(150), pacing).await;
    assert_eq!(r.scheduled, 30);
    assert_eq!(r.counted.requests, 30);
    assert_eq!(arrivals, 30);
    // The first arrival of each window starts when the third is due, 10 ms after it.
    assert!(r.lag_max_us >= 10_000, "lag max {} µs", r.lag_max_us);
}

#[tokio::test(flavor = "current_thread")]
async fn open_loop_starts_every_arrival() {
    let (r, opts, arrivals) = open_loop_at_200(
        Duration::from_millis(500),
        stormrig::live::pacer::Pacing::DEFAULT,
    )
    .await;
    assert_eq!(r.scheduled, 100);
    assert_eq!(r.counted.requests, 100);
    assert_eq!(r.counted.dropped, 0);
    assert_eq!(arrivals, 100);
    let m = kv(&bench::open_loop_text(&opts, &r));
    assert_eq!(m["scheduled"], "100");
    let _: f64 = m["lag_p99_ms"].parse().unwrap();
    let _: f64 = m["achieved_rate"].parse().unwrap();
    assert!(m.contains_key("sleeps_per_request"));
}

#[test]
fn sim_bench_prints_its_keys() {
    let out = crate::support::process::succeed(
        crate::support::process::bin().args(["bench", "sim", "--scale", "0.5"]),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let m = kv(&text);
    assert_eq!(m["bench"], "sim");
    assert_eq!(m["configs"], "naive,aws-standard,envoy");
    assert_eq!(m["scale"], "0.5");
    let attempts: u64 = m["attempts"].parse().unwrap();
    let events: u64 = m["events"].parse().unwrap();
    assert!(attempts > 0);
    assert!(events >= attempts);
    let simulated: f64 = m["simulated_s"].parse().unwrap();
    assert!(simulated >= 20.0, "the load lasts 20 s: {simulated}");
    for k in [
        "wall_s",
        "thread_cpu_s",
        "attempts_per_cpu_s",
        "attempts_per_wall_s",
        "sim_speedup",
        "target_attempts_per_cpu_s",
        "layered_thread_cpu_s",
        "layered_deepest_attempts_per_cpu_s",
        "layered_share",
    ] {
        let _: f64 = m[k].parse().unwrap_or_else(|_| panic!("{k} = {}", m[k]));
    }
    assert!(["true", "false"].contains(&m["target_met"].as_str()));
    // The layered case: 5 × 15 requests, 64× (naive) and 16× (no-retry) at the target.
    assert_eq!(m["layered_scenario"], "layers-3x3-no-budget");
    let deepest: u64 = m["layered_deepest_attempts"].parse().unwrap();
    assert_eq!(deepest, 75 * (64 + 16));
    let all: u64 = m["layered_attempts"].parse().unwrap();
    assert_eq!(
        all,
        75 * (4 + 16 + 64) + 75 * (1 + 4 + 16),
        "every hop's attempts"
    );
    assert!(["true", "false"].contains(&m["layered_target_met"].as_str()));
}

#[test]
fn sim_bench_refuses_a_bad_scale() {
    let out = crate::support::process::bin()
        .args(["bench", "sim", "--scale", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scale"));
}

#[test]
fn fleet_memory_bench_uses_every_instance_and_prints_bytes_per_instance() {
    let (code, m, err) = bench_cli(&["fleet-memory", "--clients", "2000"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(m["bench"], "fleet-memory");
    assert_eq!(m["config"], "aws-standard");
    // One request per instance, a 503 and then a 200: two attempts each, exactly.
    assert_eq!(
        (m["clients"].as_str(), m["requests"].as_str()),
        ("2000", "2000")
    );
    assert_eq!(m["attempts"], "4000");
    let inline: u64 = m["inline_bytes"].parse().unwrap();
    assert!((8..=4096).contains(&inline), "{inline}");
    let _: u64 = m["bytes_per_instance"].parse().unwrap();
    let before: u64 = m["rss_before_kib"].parse().unwrap();
    let after: u64 = m["rss_after_kib"].parse().unwrap();
    assert!(before > 0 && after > 0);
}

#[test]
fn fleet_memory_bench_refuses_bad_input_with_exit_2() {
    for (args, says) in [
        (&["fleet-memory", "--clients", "0"][..], "--clients 0"),
        (
            &["fleet-memory", "--clients", "1000001"][..],
            "--clients 1000001",
        ),
        (&["fleet-memory", "--config", "no-such"][..], "--config"),
    ] {
        let (code, _, err) = bench_cli(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn sim_bench_storm_is_the_named_three_configs() {
    let plan = stormrig::bench::sim::storm_plan().unwrap();
    let names: Vec<_> = plan.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, stormrig::bench::sim::CONFIGS);
    assert_eq!(plan.scenario.name, stormrig::bench::sim::STORM);
}

/// `stormrig bench ARGS...`: exit code, stdout as `key=value`, stderr.
fn bench_cli(args: &[&str]) -> (Option<i32>, BTreeMap<String, String>, String) {
    let out = crate::support::process::bin()
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), kv(&stdout), stderr)
}

/// Over HTTP/2 every hanging request is a stream of the one connection, past the 200
/// streams the built-in target allows by default; the cap, not a stream limit, stops them.
#[test]
fn memory_bench_holds_more_streams_than_the_default_limit_over_one_h2c_connection() {
    let (code, m, err) = bench_cli(&[
        "memory",
        "--h2c",
        "--rate",
        "600",
        "--duration",
        "2s",
        "--max-in-flight",
        "300",
        "--per-try-timeout",
        "60s",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(m["bench"], "memory");
    assert_eq!(m["protocol"], "h2c");
    assert_eq!(m["in_flight_bound"], "max-in-flight");
    assert_eq!(m["max_in_flight"], "300");
    assert_eq!(m["connections_opened"], "1");
    assert_eq!(m["peak_in_flight"], "300");
    assert_eq!(m["target_peak_in_flight"], "300");
    assert_eq!(m["target_hangs"], "300");
    assert_eq!(m["requests_finished"], "0");
    for k in [
        "rss_second_half_spread_pct",
        "rss_growth_kib",
        "rss_after_load_kib",
        "bytes_per_in_flight",
    ] {
        let _: f64 = m[k].parse().unwrap_or_else(|_| panic!("{k} = {}", m[k]));
    }
}

/// Over HTTP/1.1 a cap beyond the descriptor limit is lowered to what fits, two
/// descriptors per hanging request, and the output says so.
#[test]
fn memory_bench_over_http1_lowers_the_cap_to_the_descriptors() {
    let (code, m, err) = bench_cli(&[
        "memory",
        "--rate",
        "10",
        "--duration",
        "1s",
        "--max-in-flight",
        "100000000",
        "--per-try-timeout",
        "60s",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(m["protocol"], "http1");
    assert_eq!(m["max_in_flight_asked"], "100000000");
    assert_eq!(m["descriptors_per_in_flight"], "2");
    let cap: u64 = m["max_in_flight"].parse().unwrap();
    match m["in_flight_bound"].as_str() {
        "descriptors" => {
            let soft: u64 = m["nofile_soft"].parse().unwrap();
            assert!(cap * 2 < soft, "{m:?}");
        }
        "ephemeral-ports" => assert_eq!(m["local_ports"], cap.to_string()),
        other => panic!("bound {other}: {m:?}"),
    }
    assert_eq!(
        m["nofile_soft"], m["nofile_hard"],
        "the soft limit is raised"
    );
}

#[test]
fn memory_bench_refuses_a_zero_cap() {
    let (code, _, err) = bench_cli(&["memory", "--h2c", "--max-in-flight", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--max-in-flight"), "{err}");
}

/// Every simulated request stays in flight until the run ends: the cap is the population.
#[test]
fn sim_memory_bench_keeps_its_whole_population_in_flight() {
    let (code, m, err) = bench_cli(&["sim-memory", "--population", "2000"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(m["bench"], "sim-memory");
    assert_eq!(m["population"], "2000");
    assert_eq!(m["peak_in_flight"], "2000");
    assert_eq!(m["unfinished"], "2000");
    assert_eq!(m["attempts"], "2000");
    let dropped: u64 = m["dropped"].parse().unwrap();
    assert!(dropped > 0, "arrivals beyond the cap are dropped: {m:?}");
    for k in [
        "wall_s",
        "rss_before_kib",
        "peak_rss_kib",
        "bytes_per_in_flight",
    ] {
        let _: f64 = m[k].parse().unwrap_or_else(|_| panic!("{k} = {}", m[k]));
    }
    assert!(["true", "false"].contains(&m["peak_rss_reset"].as_str()));
}

#[test]
fn sim_memory_bench_refuses_a_population_out_of_range() {
    for bad in ["0", "100000001"] {
        let (code, _, err) = bench_cli(&["sim-memory", "--population", bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("--population"), "{err}");
    }
}

/// Ten million in flight takes a scale of ten over the scenario's own cap of a million.
#[test]
fn sim_memory_storm_scales_past_the_scenario_cap() {
    let (plan, scale) = stormrig::bench::sim_memory::storm(10_000_000).unwrap();
    assert_eq!(plan.scenario.load.max_in_flight, 1_000_000);
    assert_eq!(scale, 10.0);
    let (_, scale) = stormrig::bench::sim_memory::storm(5_000).unwrap();
    assert_eq!(scale, 1.0);
}

/// The floor counts exactly, closed and open: every request it wrote reached the target and
/// was answered, and an open schedule of 2,000/s for 0.3 s holds 600 arrivals.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn floor_counts_match_target_arrivals() {
    use stormrig::bench::floor::{self, FloorMode, FloorOpts};
    let open = FloorMode::Open {
        rate: 2000.0,
        batch: Duration::from_micros(50),
    };
    for mode in [FloorMode::Closed, open] {
        let handle = server::start(
            loopback(),
            crate::support::instant_target(),
            tokio::time::Instant::now(),
        )
        .await
        .unwrap();
        let url = format!("http://{}/", handle.addr());
        let opts = FloorOpts::new(&url, 8, Duration::from_millis(300), mode).unwrap();
        let (opts, r) = tokio::task::spawn_blocking(move || {
            let r = floor::run(&opts).unwrap();
            (opts, r)
        })
        .await
        .unwrap();
        let stats = handle.shutdown().await;
        assert!(r.sent > 0, "{mode:?}");
        assert_eq!(r.abandoned, 0, "{mode:?}");
        assert_eq!(r.received, r.sent, "{mode:?}");
        assert_eq!(stats.arrivals, r.sent, "{mode:?}");
        let m = kv(&floor::text(&opts, &r));
        assert_eq!(m["requests"], stats.arrivals.to_string());
        if mode == open {
            assert_eq!(r.scheduled, 600);
            assert_eq!(r.sent + r.dropped, 600);
            let _: f64 = m["lag_p99_ms"].parse().unwrap();
        }
        for k in ["req_per_s", "p50_ms", "cpu_s_per_million"] {
            let _: f64 = m[k].parse().unwrap_or_else(|_| panic!("{k} = {}", m[k]));
        }
    }
}

/// A URL the floor cannot read is refused with exit 2, naming the flag, before anything is
/// sent (the loopback guard's own cases are the validation's unit tests).
#[test]
fn floor_refuses_a_bad_url_with_exit_2() {
    let (code, _, stderr) =
        bench_cli(&["floor", "--url", "https://127.0.0.1:1/", "--duration", "1s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--url https://127.0.0.1:1/"), "{stderr}");
}
