//! The HTML report: structure, self-containment, escaping, size, determinism, baseline, and
//! the `stormrig report DIR` round trip through the data files.
//!
//! Set `STORMRIG_WRITE_SAMPLE=1` (or to a directory) to keep a sample page for the browser
//! check: `tests/browser/check.sh "$CARGO_TARGET_DIR/tmp/report-sample/index.html"`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use stormrig::metrics::drain;
use stormrig::metrics::{
    ConfigSummary, Engine, FaultBand, GateVerdict, Percentiles, RunResult, SecondRow,
};
use stormrig::report::{files, html};

const XSS: &str = "<script>alert(1)</script>";

/// A tiny deterministic noise source (the test must not depend on a seed crate's output).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How one synthetic config behaves in the fault.
struct Shape {
    name: &'static str,
    /// Arrivals per upstream request while the target fails.
    storm_amp: f64,
    bound: Option<f64>,
    budget: bool,
    breaker: bool,
    /// Seconds after the fault until goodput is back; None = never.
    recovery: Option<u64>,
}

const SHAPES: [Shape; 5] = [
    Shape {
        name: "no-retries",
        storm_amp: 1.0,
        bound: Some(1.0),
        budget: false,
        breaker: false,
        recovery: Some(0),
    },
    Shape {
        name: "naive 3 attempts",
        storm_amp: 2.7,
        bound: Some(3.0),
        budget: false,
        breaker: false,
        recovery: None,
    },
    Shape {
        name: "exp backoff + full jitter",
        storm_amp: 2.2,
        bound: Some(3.0),
        budget: false,
        breaker: false,
        recovery: Some(4),
    },
    Shape {
        name: "token budget 10%",
        storm_amp: 1.1,
        bound: Some(1.1),
        budget: true,
        breaker: false,
        recovery: Some(2),
    },
    Shape {
        name: "breaker & budget",
        storm_amp: 1.05,
        bound: Some(1.1),
        budget: true,
        breaker: true,
        recovery: Some(1),
    },
];

const SECONDS: u64 = 60;
const FAULT: (u64, u64) = (15, 30);
const SLOW: (u64, u64) = (40, 45);

fn row(shape: &Shape, s: u64, rng: &mut Lcg) -> SecondRow {
    let started = 200 + (rng.next() * 20.0) as u64;
    let in_fault = (FAULT.0..FAULT.1).contains(&s);
    let after = s >= FAULT.1;
    let recovered = match shape.recovery {
        Some(r) => s >= FAULT.1 + r,
        None => false,
    };
    let slow = (SLOW.0..SLOW.1).contains(&s);
    let amp = if in_fault || (after && !recovered) {
        shape.storm_amp * (0.9 + 0.2 * rng.next())
    } else {
        1.0 + 0.02 * rng.next()
    };
    let arrivals = (started as f64 * amp).round() as u64;
    let success_rate = if in_fault {
        0.4 + 0.1 * rng.next()
    } else if after && !recovered {
        0.6 + 0.1 * rng.next()
    } else {
        0.995 + 0.005 * rng.next()
    };
    let finished = started - (rng.next() * 3.0) as u64;
    let successes = (finished as f64 * success_rate).round() as u64;
    let retries = arrivals.saturating_sub(started);
    let budget_refusals = if shape.budget && in_fault {
        (started as f64 * 0.5 * rng.next()) as u64
    } else {
        0
    };
    let breaker_state = shape.breaker.then(|| match s {
        s if (FAULT.0 + 2..FAULT.0 + 8).contains(&s) => 2,
        s if (FAULT.0 + 8..FAULT.0 + 10).contains(&s) => 1,
        s if (FAULT.0 + 10..FAULT.1).contains(&s) => 2,
        s if s == FAULT.1 => 1,
        _ => 0,
    });
    let budget_level = shape.budget.then(|| {
        if in_fault {
            (10.0 - (s - FAULT.0) as f64 * 1.5).max(0.0)
        } else if after {
            ((s - FAULT.1) as f64 * 2.0).min(10.0)
        } else {
            10.0
        }
    });
    let p50 =
        if slow { 820.0 } else { 12.0 + 3.0 * rng.next() } + if in_fault { 40.0 } else { 0.0 };
    SecondRow {
        time: None,
        config: shape.name.to_string(),
        second: s,
        upstream_started: started,
        upstream_finished: finished,
        successes,
        failures: finished - successes,
        attempts: arrivals,
        retries,
        retries_transient: retries * 2 / 3,
        retries_throttling: retries / 3,
        budget_refusals,
        breaker_refusals: if breaker_state == Some(2) {
            started / 2
        } else {
            0
        },
        dropped: if in_fault && shape.storm_amp > 2.5 {
            30
        } else {
            0
        },
        downstream_arrivals: arrivals,
        target_in_flight_peak: (arrivals as f64 * p50 / 1000.0 * 3.0) as u64 + 2,
        target_served_ok: successes,
        client_in_flight_peak: (started as f64 * p50 / 1000.0 * 2.5) as u64 + 1,
        amplification: arrivals as f64 / started as f64,
        budget_level,
        breaker_state,
        latency_p50_ms: p50,
        latency_p99_ms: p50 * (3.0 + rng.next()),
        success_rate: successes as f64 / finished as f64,
        first_attempts: started,
        first_failed_transient: if in_fault { started * 6 / 10 } else { 0 },
        budget_level_pct: budget_level.map(|l| l * 10.0),
        ..SecondRow::default()
    }
}

fn summary(shape: &Shape, rows: &[SecondRow]) -> ConfigSummary {
    let sum = |f: fn(&SecondRow) -> u64| rows.iter().map(f).sum::<u64>();
    let upstream = sum(|r| r.upstream_started);
    let arrivals = sum(|r| r.downstream_arrivals);
    let p50 = 14.0 * shape.storm_amp;
    let curve: Vec<[f64; 2]> = (0..=20)
        .map(|k| {
            let q = 1.0 - 0.5f64.powi(k);
            [q * 100.0, p50 * (1.0 + 4.0 * q.powi(8)) + k as f64 * 9.0]
        })
        .chain(std::iter::once([100.0, 2500.0 * shape.storm_amp]))
        .collect();
    let mut failures_by_reason = BTreeMap::new();
    failures_by_reason.insert("max-attempts".to_string(), sum(|r| r.failures) / 2);
    failures_by_reason.insert(
        "http-503".to_string(),
        sum(|r| r.failures) - sum(|r| r.failures) / 2,
    );
    let mut attempts_by_outcome = BTreeMap::new();
    attempts_by_outcome.insert("ok".to_string(), sum(|r| r.successes));
    attempts_by_outcome.insert("503".to_string(), arrivals - sum(|r| r.successes));
    ConfigSummary {
        connections: None,
        name: shape.name.to_string(),
        policy: serde_json::json!({
            "max_attempts": if shape.storm_amp > 1.0 { 3 } else { 1 },
            "backoff": {"kind": "exponential", "base_ms": 50, "cap_ms": 2000, "jitter": "full"},
            "budget": if shape.budget { serde_json::json!({"ratio": 0.1, "min_per_s": 10}) } else { serde_json::Value::Null },
            "breaker": shape.breaker,
        }),
        upstream_requests: upstream,
        attempts: sum(|r| r.attempts),
        retries: sum(|r| r.retries),
        downstream_arrivals: arrivals,
        amplification: arrivals as f64 / upstream as f64,
        peak_amplification_1s: rows.iter().map(|r| r.amplification).fold(0.0, f64::max),
        peak_concurrency: rows
            .iter()
            .map(|r| r.target_in_flight_peak)
            .max()
            .unwrap_or(0),
        client_peak_in_flight: rows
            .iter()
            .map(|r| r.client_in_flight_peak)
            .max()
            .unwrap_or(0),
        budget_refusals: sum(|r| r.budget_refusals),
        first_budget_refusal_s: shape.budget.then_some(FAULT.0 as f64 + 0.42),
        breaker_refusals: sum(|r| r.breaker_refusals),
        useful_retries: sum(|r| r.retries) / 2,
        wasted_retries: sum(|r| r.retries) - sum(|r| r.retries) / 2,
        hedges_sent: 0,
        hedges_cancelled: 0,
        hedges_wasted: 0,
        rate_limited_sends: 0,
        bulkhead_rejections: 0,
        limiter_rejections: 0,
        rate_limit_wait_s: 0.0,
        rate_limit_wait_ms: Default::default(),
        successes: sum(|r| r.successes),
        failures: sum(|r| r.failures),
        failures_by_reason,
        attempts_by_outcome,
        dropped: sum(|r| r.dropped),
        unfinished: 3,
        latency_ms: Percentiles {
            p50,
            p90: p50 * 2.0,
            p99: p50 * 5.0,
            p999: p50 * 9.0,
            max: 2500.0 * shape.storm_amp,
        },
        attempt_latency_ms: Percentiles {
            p50: 11.0,
            p90: 20.0,
            p99: 60.0,
            p999: 300.0,
            max: 1200.0,
        },
        success_latency_ms: Percentiles::default(),
        failure_latency_ms: Percentiles::default(),
        recovery_time_s: shape.recovery.map(|r| r as f64),
        recovered: Some(shape.recovery.is_some()),
        overloaded: Some(false),
        pre_fault_offered_rps: Some(100.0),
        pre_fault_goodput_rps: Some(100.0),
        amplification_bound: shape.bound,
        target_served_ok: sum(|r| r.target_served_ok),
        target_shed: if shape.storm_amp > 2.0 { 1234 } else { 0 },
        target_shed_by_reason: Default::default(),
        target_forwarded: 0,
        target_unreached: 0,
        proxy_answered: Default::default(),
        relayed_resets: Default::default(),
        duplicate_executions: (shape.storm_amp * 40.0) as u64,
        idempotency: Default::default(),
        latency_curve: curve,
        layers: Vec::new(),
        topology_bound: None,
        peak_retries_per_s: 0,
        idempotency_rules: "no POSTs (GET is idempotent)".into(),
        fault_windows: Vec::new(),
        budget: shape.budget.then(|| {
            let (thresholds, no_threshold_reasons) =
                drain::thresholds(&stormrig::policy::preset("grpc").unwrap());
            drain::BudgetDrain {
                kind: "grpc-throttling".into(),
                capacity: Some(10.0),
                thresholds,
                no_threshold_reasons,
                drain_start_s: Some(FAULT.0 as f64),
                first_refusal_s: Some(FAULT.0 as f64 + 0.42),
                empty_s: Some(FAULT.0 as f64 + 7.0),
                refilled_s: Some(FAULT.1 as f64 + 5.0),
                lowest_level_pct: Some(0.0),
                windows: vec![drain::DrainWindow {
                    start_s: FAULT.0 as f64,
                    end_s: FAULT.1 as f64,
                    exceeded_thresholds: vec!["transient".into()],
                    drain_predicted: true,
                    drain_observed: true,
                }],
            }
        }),
        verdict: None,
        providers: Vec::new(),
        tokens: None,
        money: None,
        routes: Vec::new(),
        degraded: None,
        classes: Vec::new(),
        class_policies: Default::default(),
    }
}

/// A realistic 5-config × 60 s run with two faults and gates.
fn synthetic() -> RunResult {
    let mut rng = Lcg(7);
    let mut configs = Vec::new();
    let mut timeseries = Vec::new();
    for shape in &SHAPES {
        let rows: Vec<SecondRow> = (0..SECONDS).map(|s| row(shape, s, &mut rng)).collect();
        configs.push(summary(shape, &rows));
        timeseries.extend(rows);
    }
    let gates = configs
        .iter()
        .map(|c| GateVerdict {
            gate: "amplification <= 1.5".into(),
            config: c.name.clone(),
            figure: "amplification".into(),
            op: "<=".into(),
            limit: 1.5,
            measured: Some(c.amplification),
            passed: c.amplification <= 1.5,
            incomplete: false,
        })
        .collect();
    RunResult {
        scenario: "checkout-503-storm".into(),
        description: "The payment service returns 503 for 15 s, then slows down: which retry \
config keeps the storm small?"
            .into(),
        seed: 42,
        engine: Engine::Sim,
        partial: false,
        duration_s: SECONDS as f64,
        drain_s: None,
        stormrig_version: "0.1.0".into(),
        run: None,
        faults: vec![
            FaultBand {
                start_s: FAULT.0 as f64,
                end_s: FAULT.1 as f64,
                label: "503".into(),
                probability: 0.6,
            },
            FaultBand {
                start_s: SLOW.0 as f64,
                end_s: SLOW.1 as f64,
                label: "latency +800 ms".into(),
                probability: 1.0,
            },
        ],
        configs,
        gates,
        shards: None,
        upper_bounds: Default::default(),
        timeseries,
    }
}

/// The same run with every user string hostile.
fn hostile() -> RunResult {
    let mut run = synthetic();
    run.scenario = XSS.into();
    run.description = format!("\"><img src=x onerror=alert(2)> {XSS} & 'quotes'");
    run.stormrig_version = "<b>0.1</b>".into();
    run.faults[0].label = format!("{XSS}fault");
    let old = run.configs[1].name.clone();
    let new = format!("{XSS}<img src=x onerror=alert(3)>");
    run.configs[1].name = new.clone();
    for r in &mut run.timeseries {
        if r.config == old {
            r.config = new.clone();
        }
    }
    run.configs[1].failures_by_reason.insert(XSS.into(), 1);
    run.configs[1].policy = serde_json::json!({ "note": XSS });
    for g in &mut run.gates {
        g.gate = format!("{XSS} gate");
        g.figure = "<i>amp</i>".into();
        g.op = "<=".into();
        if g.config == old {
            g.config = new.clone();
        }
    }
    run
}

const CHART_IDS: &[&str] = &[
    "chart-load",
    "chart-amplification",
    "chart-inflight",
    "chart-retries",
    "chart-breaker",
    "chart-drain",
    "chart-budget",
    "chart-success",
    "chart-latency",
    "chart-latency-distribution",
];

/// The start tags of the page (`<name ...>`), text content excluded: escaped text has no `<`.
fn tags(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(i) = rest.find('<') {
        let after = &rest[i + 1..];
        let end = after.find('>').map_or(after.len(), |e| e);
        if after.starts_with(|c: char| c.is_ascii_alphabetic()) {
            out.push(&after[..end]);
        }
        rest = &after[end.min(after.len())..];
    }
    out
}

/// Every value of the named attribute in the page's tags (case-insensitive name match).
fn attr_values(page: &str, name: &str) -> Vec<String> {
    let pat = format!("{name}=");
    let mut out = Vec::new();
    for tag in tags(page) {
        let lower = tag.to_ascii_lowercase();
        let mut from = 0;
        while let Some(i) = lower[from..].find(&pat) {
            let at = from + i;
            from = at + pat.len();
            // Only a whole attribute name (preceded by whitespace), not e.g. `data-src=`.
            if !lower[..at].ends_with(|c: char| c.is_whitespace()) {
                continue;
            }
            let rest = &tag[from..];
            let v = match rest.chars().next() {
                Some(q @ ('"' | '\'')) => rest[1..].split(q).next().unwrap_or(""),
                _ => rest.split(char::is_whitespace).next().unwrap_or(""),
            };
            out.push(v.to_string());
        }
    }
    out
}

fn assert_self_contained(page: &str) {
    assert!(
        !attr_values(page, "href").is_empty(),
        "the attribute scan sees the anchors"
    );
    for name in [
        "src",
        "href",
        "xlink:href",
        "action",
        "poster",
        "srcset",
        "data",
    ] {
        for v in attr_values(page, name) {
            assert!(
                v.starts_with('#') || v.starts_with("data:"),
                "{name}={v:?} points outside the page"
            );
        }
    }
    let lower = page.to_ascii_lowercase();
    assert!(!lower.contains("<link"), "no <link> of any kind");
    assert!(!lower.contains("<script src"), "no external script");
    assert!(!lower.contains("@import"), "no CSS import");
    assert!(!lower.contains("url("), "no CSS url()");
    // The only absolute URL is the SVG namespace name, which is never fetched.
    let ns = "xmlns=\"http://www.w3.org/2000/svg\"";
    let without_ns = page.replace(ns, "");
    assert!(!without_ns.contains("http://"), "no http:// URL");
    assert!(!without_ns.contains("https://"), "no https:// URL");
    assert!(page.contains("default-src 'none'"), "CSP forbids fetches");
}

/// Every inline SVG parses as well-formed XML (escaping inside charts is sound).
fn assert_svgs_well_formed(page: &str) -> usize {
    let mut n = 0;
    let mut rest = page;
    while let Some(i) = rest.find("<svg") {
        let end = rest[i..].find("</svg>").expect("svg closed") + i + "</svg>".len();
        let svg = &rest[i..end];
        let mut reader = quick_xml::Reader::from_str(svg);
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("svg #{n} is not well-formed: {e}"),
            }
        }
        n += 1;
        rest = &rest[end..];
    }
    n
}

fn sample_dir() -> Option<PathBuf> {
    let v = std::env::var_os("STORMRIG_WRITE_SAMPLE")?;
    let dir = if v == "1" || v.is_empty() {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-sample")
    } else {
        PathBuf::from(v)
    };
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

#[test]
fn page_has_every_config_and_chart_and_fetches_nothing() {
    let run = synthetic();
    let page = html::render(&run, None).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.trim_end().ends_with("</html>"));
    for c in &run.configs {
        let name = html::escape(&c.name);
        // Headline card, table row, legends, policy: present several times.
        assert!(
            page.matches(name.as_str()).count() >= 4,
            "config {name} missing somewhere"
        );
    }
    for id in CHART_IDS {
        let at = page
            .find(&format!("<figure id=\"{id}\""))
            .unwrap_or_else(|| panic!("chart {id} missing"));
        let fig = &page[at..at + page[at..].find("</figure>").unwrap()];
        assert!(fig.contains("<svg"), "chart {id} has no svg");
        assert!(!fig.contains("empty-chart"), "chart {id} drew nothing");
        assert!(
            fig.contains("<polyline") || fig.contains("<rect") || fig.contains("<line"),
            "chart {id} has no marks"
        );
    }
    for section in [
        "headline", "verdicts", "gates", "summary", "budget", "charts", "latency", "policies",
    ] {
        assert!(
            page.contains(&format!("<section id=\"{section}\">")),
            "section {section}"
        );
        assert!(
            page.contains(&format!("href=\"#{section}\"")),
            "anchor {section}"
        );
    }
    // Header figures.
    assert!(page.contains("checkout-503-storm"));
    assert!(page.contains("<dd>42</dd>"), "seed");
    assert!(page.contains("<dd>sim</dd>"), "engine");
    assert!(page.contains("<dd>60 s</dd>"), "duration");
    assert!(page.contains("<dd>0.1.0</dd>"), "version");
    assert!(page.contains("503 · 60 %") && page.contains("latency +800 ms"));
    // Fault bands are drawn on every time chart (their label is in each chart's svg).
    assert!(page.matches("latency +800 ms").count() >= 8);
    // Amplification beside its bound; best marked; gates with a failure.
    assert!(page.contains("<span class=\"bound\">/ ≤3.00×</span>"));
    // No stars: the verdicts judge configs against the question, not per column.
    assert!(!page.contains("class=\"best\""));
    // Budgeted configs show their drain thresholds in the headline cards and as lines.
    assert!(page.contains("budget drains</span> <b>above 9.1 % transient"));
    let drain = &page[page.find("<figure id=\"chart-drain\"").unwrap()..];
    // Kinds that drain at the same rate share one label.
    let drain = &drain[..drain.find("</figure>").unwrap()];
    assert!(
        drain.contains("transient, throttling, timeout 9.1 %"),
        "{drain}"
    );
    assert!(page.contains(">FAIL<") && page.contains(">pass<"));
    assert!(!page.contains("Partial run"));
    assert_self_contained(&page);
    assert_eq!(assert_svgs_well_formed(&page), CHART_IDS.len());
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the error recorder"
    );
    if let Some(dir) = sample_dir() {
        let path = html::write(&dir, &run, None).unwrap();
        eprintln!("sample report: {}", path.display());
    }
}

#[test]
fn five_configs_by_sixty_seconds_is_under_two_megabytes() {
    let page = html::render(&synthetic(), None).unwrap();
    eprintln!("report size: {} bytes", page.len());
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    let with_base = html::render(&synthetic(), Some(&synthetic())).unwrap();
    eprintln!("report size with baseline: {} bytes", with_base.len());
    assert!(with_base.len() < 2_000_000);
}

#[test]
fn every_user_string_is_escaped() {
    let run = hostile();
    let page = html::render(&run, Some(&run)).unwrap();
    assert!(!page.contains(XSS), "raw script tag in the page");
    assert!(!page.contains("<img"), "raw img tag in the page");
    assert!(!page.contains("<i>amp</i>") && !page.contains("<b>0.1</b>"));
    assert_eq!(page.to_ascii_lowercase().matches("<script").count(), 1);
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The title and the h1 show the name as text.
    assert!(page.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt; · stormrig</title>"));
    assert!(page.contains("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>"));
    assert_self_contained(&page);
    assert_eq!(assert_svgs_well_formed(&page), CHART_IDS.len());
    if let Some(dir) = sample_dir() {
        let dir = dir.join("hostile");
        std::fs::create_dir_all(&dir).unwrap();
        html::write(&dir, &run, Some(&run)).unwrap();
    }
}

#[test]
fn partial_runs_carry_a_banner_and_gateless_runs_no_gate_section() {
    let mut run = synthetic();
    run.partial = true;
    run.duration_s = 37.5;
    run.timeseries.retain(|r| r.second < 38);
    run.gates.clear();
    let page = html::render(&run, None).unwrap();
    assert!(page.contains("class=\"banner partial\""));
    assert!(page.contains("Partial run"));
    assert!(page.contains("37.5 s"));
    assert!(!page.contains("<section id=\"gates\">"));
    assert!(!page.contains("href=\"#gates\""));
}

#[test]
fn rendering_is_deterministic() {
    let a = html::render(&synthetic(), None).unwrap();
    let b = html::render(&synthetic(), None).unwrap();
    assert!(a == b, "same result, different bytes");
    let c = html::render(&hostile(), Some(&synthetic())).unwrap();
    let d = html::render(&hostile(), Some(&synthetic())).unwrap();
    assert!(c == d);
}

#[test]
fn baseline_figures_and_changes_sit_beside_the_run() {
    let base = synthetic();
    let mut run = synthetic();
    run.configs[1].amplification = base.configs[1].amplification * 0.5;
    run.configs[1].peak_concurrency = base.configs[1].peak_concurrency * 2;
    run.configs.push(ConfigSummary {
        name: "brand new".into(),
        ..run.configs[0].clone()
    });
    run.configs.remove(0);
    let page = html::render(&run, Some(&base)).unwrap();
    assert!(page.contains("class=\"banner baseline\""));
    // One baseline row per config of the run.
    assert_eq!(
        page.matches("<tr class=\"base\">").count(),
        run.configs.len()
    );
    assert!(
        page.contains("<span class=\"down\">-50.0 %</span>"),
        "amplification halved"
    );
    assert!(
        page.contains("<span class=\"up\">+100.0 %</span>"),
        "concurrency doubled"
    );
    assert!(page.contains("not in the baseline"));
    assert!(page.contains("In the baseline only: no-retries."));
    assert_self_contained(&page);
    let plain = html::render(&run, None).unwrap();
    assert!(!plain.contains("class=\"base\""));
}

#[test]
fn report_rebuilds_from_the_data_files() {
    let run = synthetic();
    let dir = crate::support::process::tmp_dir("round-trip");
    files::write_data(&dir, &run).unwrap();
    let back = files::read_data(&dir).unwrap();
    assert_eq!(back.configs.len(), 5);
    assert_eq!(back.timeseries.len(), 5 * SECONDS as usize);
    let path = html::write(&dir, &back, None).unwrap();
    assert_eq!(path, dir.join("index.html"));
    let page = std::fs::read_to_string(&path).unwrap();
    // The page from the files is the page from the run.
    assert!(
        page == html::render(&run, None).unwrap(),
        "round trip changed the page"
    );
    assert!(!dir.join(".index.html.tmp").exists());
}

#[test]
fn an_empty_run_still_renders_every_section() {
    let run = RunResult {
        scenario: "nothing".into(),
        description: String::new(),
        seed: 0,
        engine: Engine::Live,
        partial: true,
        duration_s: 0.0,
        drain_s: None,
        stormrig_version: "0.1.0".into(),
        run: None,
        faults: vec![],
        configs: vec![],
        gates: vec![],
        shards: None,
        upper_bounds: Default::default(),
        timeseries: vec![],
    };
    let page = html::render(&run, None).unwrap();
    // A chart with nothing to show is not drawn as an empty panel: it is named in the
    // line that says so, in its section.
    let not_drawn = "Not drawn, nothing in this run to show: ";
    assert!(page.contains(not_drawn), "the empty charts are named");
    assert!(!page.contains("empty-chart"), "an empty panel was drawn");
    assert!(page.contains("<figure id=\"latency-table\""));
    assert!(page.contains("No fault injected."));
    assert_self_contained(&page);
    assert_svgs_well_formed(&page);
}

/// A figure every config shares does not separate them: the headline says it once.
#[test]
fn shared_headline_figures_are_said_once() {
    let mut run = synthetic();
    let page = html::render(&run, None).unwrap();
    assert!(!page.contains("The same for every config"));
    for c in &mut run.configs {
        c.peak_concurrency = 7;
    }
    let page = html::render(&run, None).unwrap();
    assert!(page.contains("The same for every config: peak concurrency 7."));
    assert!(!page.contains("peak concurrency</span> <b>7</b>"));
}

/// The summary table shows the columns a run makes say something and keeps the others one
/// click away: a GET-only run hides the write figures, a run with writes shows them.
#[test]
fn columns_without_anything_to_say_are_one_click_away() {
    let header = |page: &str, label: &str| -> String {
        let at = page
            .find(&format!(">{label}</th>"))
            .unwrap_or_else(|| panic!("no column {label}"));
        let open = page[..at].rfind("<th").unwrap();
        page[open..at].to_string()
    };
    let mut run = synthetic();
    for c in &mut run.configs {
        c.idempotency = Default::default();
        c.duplicate_executions = 0;
        c.target_shed = 0;
    }
    let page = html::render(&run, None).unwrap();
    assert!(header(&page, "duplicates").contains("class=\"opt\""));
    assert!(header(&page, "shed").contains("class=\"opt\""));
    assert!(!header(&page, "attempts").contains("opt"));
    assert!(
        page.contains("id=\"allcols\""),
        "the hidden columns need their toggle"
    );
    // A run with writes and nothing else beyond the usual columns shows the write figures
    // first in line (the table shows at most 13 columns at first, so it fits 1400 px).
    for c in &mut run.configs {
        c.policy = serde_json::json!({});
        c.budget_refusals = 0;
        c.breaker_refusals = 0;
        c.hedges_sent = 0;
        c.rate_limited_sends = 0;
        c.dropped = 0;
        c.proxy_answered = Default::default();
    }
    run.configs[0].idempotency.executions = 10;
    let page = html::render(&run, None).unwrap();
    assert!(!header(&page, "duplicates").contains("opt"));
    assert!(header(&page, "budget refusals").contains("opt"));
    let thead = &page[page.find("<thead>").unwrap()..page.find("</thead>").unwrap()];
    let shown = thead.matches("<th").count() - thead.matches("class=\"opt\"").count();
    assert!(shown <= 14, "{shown} columns shown at first");
}
