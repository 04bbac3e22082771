//! The built-in target's load shedding (queue discipline, cap on work in progress, rate
//! limit, Envoy's adaptive concurrency limit), in both engines: the shipped FIFO / LIFO /
//! CoDel / adaptive scenarios (FIFO stays metastable, the others recover, in the simulator,
//! on the sweep map and live), and
//! every shed answer counted by its reason so that attempts, arrivals and answers agree
//! exactly.

use crate::support::{self, config_named, repo_root};
use stormrig::metrics::ConfigSummary;
use stormrig::plan::{self, Plan};
use stormrig::sim::{self, SimOptions};
use stormrig::sweep::run::{self as sweep, SweepOptions};
use stormrig::sweep::{Axis, Base, Recovery};

const DISCIPLINES: [&str; 3] = ["fifo", "lifo", "codel"];

fn shipped(d: &str) -> std::path::PathBuf {
    repo_root().join(format!("scenarios/metastable-queue-{d}.toml"))
}

fn sim_config(p: &Plan) -> ConfigSummary {
    let out = sim::run(p, &SimOptions::default()).unwrap();
    config_named(&out.result.configs, "naive-timeout").clone()
}

/// Every attempt arrived, every shed is counted under one reason, and no arrival is both
/// served and shed.
fn assert_counted(c: &ConfigSummary, what: &str) {
    let by = c.target_shed_by_reason;
    // What the target never read (the generator's machine: never accepted or read before
    // the client gave up, or refused by its own limits) is labelled so, never lost.
    let never_read: u64 = ["not-accepted", "local-resource"]
        .iter()
        .filter_map(|l| c.attempts_by_outcome.get(*l))
        .sum();
    assert_eq!(
        c.attempts,
        c.downstream_arrivals + never_read,
        "{what}: attempts vs arrivals and attempts never read ({:?})",
        c.attempts_by_outcome
    );
    assert_eq!(by.total(), c.target_shed, "{what}: reasons vs shed");
    assert!(
        c.target_served_ok + c.target_shed <= c.downstream_arrivals,
        "{what}: served + shed above arrivals ({by:?})"
    );
}

/// As [`assert_counted`], for a run whose clients wait for every answer: each arrival was
/// served or shed, exactly. (Where clients time out, `target_served_ok` leaves out what
/// was served after the client left, which the target does not count apart.)
fn assert_exact(c: &ConfigSummary, what: &str) {
    assert_counted(c, what);
    assert_eq!(
        c.target_served_ok + c.target_shed,
        c.downstream_arrivals,
        "{what}: served + shed vs arrivals ({:?})",
        c.target_shed_by_reason
    );
}

/// The `[target.service]` line of the shipped adaptive scenario.
fn adaptive_line() -> String {
    std::fs::read_to_string(shipped("adaptive"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("adaptive_concurrency"))
        .expect("the adaptive scenario sets adaptive_concurrency")
        .to_string()
}

/// The shipped files differ only in the discipline (or the adaptive limit) and the name.
#[test]
fn the_three_queue_scenarios_differ_only_in_the_discipline() {
    let strip = |d: &str| {
        std::fs::read_to_string(shipped(d))
            .unwrap()
            .lines()
            .filter(|l| {
                !l.starts_with('#')
                    && !l.starts_with("name")
                    && !l.starts_with("description")
                    && !l.starts_with("discipline")
                    && !l.starts_with("adaptive_concurrency")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip("fifo"), strip("lifo"));
    assert_eq!(strip("fifo"), strip("codel"));
    assert_eq!(strip("fifo"), strip("adaptive"));
}

#[test]
fn fifo_stays_metastable_where_lifo_and_codel_recover_in_the_simulator() {
    let mut by = std::collections::BTreeMap::new();
    for d in DISCIPLINES {
        let c = sim_config(&plan::load(&shipped(d)).unwrap());
        assert_counted(&c, d);
        by.insert(d, c);
    }
    let fifo = &by["fifo"];
    assert_eq!(fifo.recovered, Some(false), "fifo recovered");
    assert_eq!(fifo.target_shed_by_reason.codel, 0);
    for d in ["lifo", "codel"] {
        let c = &by[d];
        assert_eq!(c.recovered, Some(true), "{d} did not recover");
        assert!(
            c.recovery_time_s.unwrap() <= 2.0,
            "{d}: {:?}",
            c.recovery_time_s
        );
        assert!(
            c.amplification < fifo.amplification / 2.0,
            "{d}: {}",
            c.amplification
        );
        assert!(
            c.successes > 3 * fifo.successes,
            "{d}: {} vs {}",
            c.successes,
            fifo.successes
        );
    }
    // The FIFO queue behind Envoy's adaptive limit recovers too: the limit falls with the
    // latency and the excess is answered 503 at once.
    let adaptive = sim_config(&plan::load(&shipped("adaptive")).unwrap());
    assert_counted(&adaptive, "adaptive");
    assert_eq!(adaptive.recovered, Some(true), "adaptive did not recover");
    assert!(
        adaptive.successes > 3 * fifo.successes,
        "adaptive: {} vs {}",
        adaptive.successes,
        fifo.successes
    );
    assert!(adaptive.target_shed_by_reason.adaptive_concurrency > 0);
    assert_eq!(fifo.target_shed_by_reason.adaptive_concurrency, 0);
    // Each sheds its own way: CoDel sloughs at the grant, LIFO leaves the oldest to time out.
    assert!(by["codel"].target_shed_by_reason.codel > 0);
    assert_eq!(by["lifo"].target_shed_by_reason.codel, 0);
    assert!(by["lifo"].target_shed_by_reason.queue_timeout > 0);
}

/// On the map of load × trigger length, FIFO has never-recovered cells; LIFO and CoDel
/// recover in every cell.
#[test]
fn the_sweep_map_shows_fifo_never_recovering_where_lifo_and_codel_do() {
    let axes = [
        Axis::parse("load.rate=500..700:100").unwrap(),
        Axis::parse("faults[0].for=1000ms..5000ms:2000ms").unwrap(),
    ];
    let never = |d: &str| {
        let (base, plan) = Base::read(&shipped(d)).unwrap();
        let r = sweep::sweep(&base, &plan, &axes, &SweepOptions::default()).unwrap();
        assert_eq!(r.points.len(), 9);
        r.points
            .iter()
            .filter(|p| p.cells[0].recovery == Recovery::Never)
            .count()
    };
    assert!(never("fifo") >= 3, "fifo: {}", never("fifo"));
    assert_eq!(never("lifo"), 0);
    assert_eq!(never("codel"), 0);
    assert_eq!(never("adaptive"), 0);
}

/// A 10 s version of the shipped storm (trigger from 2 s to 5 s), live and simulated;
/// `service` is its `[target.service]` line.
fn short_storm(service: &str) -> String {
    format!(
        r#"name = "short-storm"
seed = 1
duration = "10s"
drain = "2s"

[load]
kind = "constant"
rate = 600.0

[target]
builtin = "small"

[target.service]
{service}

[[faults]]
kind = "capacity"
concurrency = 4
at = "2s"
for = "3s"

[[configs]]
name = "naive-timeout"
preset = "naive"
per_try_timeout = "100ms"
"#
    )
}

#[test]
fn live_fifo_stays_metastable_where_lifo_codel_and_the_adaptive_limit_recover_and_counts_agree() {
    for (d, written) in [
        ("fifo", "discipline = \"fifo\"".to_string()),
        ("lifo", "discipline = \"lifo\"".to_string()),
        (
            "codel",
            "discipline = { kind = \"codel\", target = \"5ms\", interval = \"100ms\" }".to_string(),
        ),
        ("adaptive", adaptive_line()),
    ] {
        let p = support::plan_of(&short_storm(&written));
        let sim = sim_config(&p);
        let live = support::run_live(&p, false);
        let live = config_named(&live.result.configs, "naive-timeout");
        assert_counted(live, d);
        assert_eq!(sim.recovered, Some(d != "fifo"), "{d}: sim");
        assert_eq!(live.recovered, Some(d != "fifo"), "{d}: live {live:?}");
    }
}

const LIMITED: &str = r#"name = "limited"
seed = 2
duration = "4s"
drain = "2s"

[load]
kind = "constant"
rate = 400.0

[target]
builtin = "small"

[target.service]
concurrency = 2
queue = 2
queue_timeout = "50ms"
max_in_flight = 3
rate_limit = { rate = 300, burst = 20, retry_after = "1s" }

[[configs]]
name = "no-retry"
preset = "no-retry"
"#;

/// The rate limit answers 429, the cap 503 at once, the queue the rest; each reason is
/// counted, and the counts add up to the arrivals exactly, in both engines.
#[test]
fn rate_limit_and_cap_shed_by_reason_and_the_counts_add_up() {
    let p = support::plan_of(LIMITED);
    let sim = sim_config_named(&p, "no-retry");
    let live = support::run_live(&p, false);
    let live = config_named(&live.result.configs, "no-retry").clone();
    for (engine, c) in [("sim", &sim), ("live", &live)] {
        assert_exact(c, engine);
        let by = c.target_shed_by_reason;
        // 400 req/s against 300 tokens/s (plus a burst of 20): about a quarter refused.
        let share = by.rate_limited as f64 / c.downstream_arrivals as f64;
        assert!(
            (0.15..0.35).contains(&share),
            "{engine}: {by:?} of {}",
            c.downstream_arrivals
        );
        assert!(by.max_in_flight > 0, "{engine}: {by:?}");
        assert_eq!(by.codel, 0, "{engine}");
        // The no-retry client sees a 429 as throttling.
        assert_eq!(
            c.attempts_by_outcome.get("throttle").copied().unwrap_or(0),
            by.rate_limited,
            "{engine}: {:?}",
            c.attempts_by_outcome
        );
    }
    // The token bucket counts the same whole nanoseconds in both engines; the arrivals
    // are the same schedule: the refusals agree within the live clock's jitter.
    let (s, l) = (
        sim.target_shed_by_reason.rate_limited as f64,
        live.target_shed_by_reason.rate_limited as f64,
    );
    assert!((s - l).abs() <= 0.05 * s + 5.0, "sim {s} live {l}");
}

fn sim_config_named(p: &Plan, name: &str) -> ConfigSummary {
    let out = sim::run(p, &SimOptions::default()).unwrap();
    config_named(&out.result.configs, name).clone()
}

/// A bad shedding value is refused at `check` with exit 2, naming the file, the line and
/// the field, before any load is sent.
#[test]
fn bad_shedding_values_are_refused_naming_file_line_and_field() {
    let dir = support::process::tmp_dir("shedding-check");
    for (line, field) in [
        ("discipline = \"random\"", "target.service.discipline"),
        (
            "discipline = { kind = \"codel\", target = \"100ms\", interval = \"50ms\" }",
            "target.service.discipline",
        ),
        (
            "discipline = { kind = \"lifo\", target = \"5ms\" }",
            "target.service.discipline",
        ),
        (
            "discipline = { kind = \"codel\", targt = \"5ms\" }",
            "target.service.discipline",
        ),
        ("max_in_flight = 0", "target.service.max_in_flight"),
        (
            "rate_limit = { rate = 0 }",
            "target.service.rate_limit.rate",
        ),
        (
            "rate_limit = { rate = 10, burst = 0 }",
            "target.service.rate_limit.burst",
        ),
        (
            "rate_limit = { rate = 10, retry_after = \"1500ms\" }",
            "target.service.rate_limit.retry_after",
        ),
        (
            "adaptive_concurrency = { min_rtt_interval = \"10s\" }",
            "target.service.adaptive_concurrency.update_interval",
        ),
        (
            "adaptive_concurrency = { update_interval = \"100ms\", min_rtt_interval = \"10s\", percentile = 0 }",
            "target.service.adaptive_concurrency.percentile",
        ),
        (
            "adaptive_concurrency = { update_interval = \"100ms\", min_rtt_interval = \"10s\", min_concurrency = 20, max_limit = 10 }",
            "target.service.adaptive_concurrency.max_limit",
        ),
        (
            "adaptive_concurrency = { update_interval = \"100ms\", min_rtt_interval = \"10s\", limit = 5 }",
            "target.service.adaptive_concurrency",
        ),
    ] {
        let text = format!(
            "name = \"bad\"\nduration = \"5s\"\n\n[load]\nkind = \"constant\"\nrate = 10.0\n\n[target]\nbuiltin = \"small\"\n\n[target.service]\n{line}\n\n[[configs]]\npreset = \"no-retry\"\n"
        );
        support::process::check_refuses(&dir, "bad.toml", &text, "bad.toml:12", field);
    }
}
