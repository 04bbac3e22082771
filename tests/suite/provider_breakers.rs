//! A breaker per provider: with failover, each provider's breaker opens at its own
//! threshold, an open provider is skipped (the attempt goes to the next provider whose
//! breaker lets it through), one probe reaches it after `open_for`. Both engines, and the
//! client's per-provider counts equal each provider's own, exactly.

use stormrig::metrics::provider::{BreakerTransition, ProviderRoute};
use stormrig::metrics::{AttemptRow, ConfigSummary, RunResult};
use stormrig::policy::BreakerState::{Closed, HalfOpen, Open};
use stormrig::sim::{self, SimOptions};

use super::provider_failover::A_DOWN;
use crate::support;

/// Provider `a` answers 503 to everything, `b` is healthy (the failover tests' scenario);
/// `a`'s breaker opens after 3 failures for 500 ms. Calls come 25 ms apart and naive
/// retries at once, so requests never overlap and every transition can be placed among
/// the attempts exactly.
fn scenario() -> String {
    let base = &A_DOWN[..A_DOWN.find("[[configs]]").expect("configs")];
    format!(
        "{base}[[configs]]\nname = \"breakers\"\npreset = \"naive\"\n\
         failover = {{ providers = [\"a\", \"b\"], same_provider_retries = 1, \
         breaker = {{ failure_threshold = 3, open_for = \"500ms\" }} }}\n"
    )
}

const OPEN_FOR_S: f64 = 0.5;

fn route<'a>(c: &'a ConfigSummary, name: &str) -> &'a ProviderRoute {
    c.routes
        .iter()
        .find(|r| r.name == name)
        .expect("a route per provider")
}

/// Failed attempts (all of them `a`'s: `b` answers every call) sent in `[from, to)`.
fn failures_sent(rows: &[AttemptRow], from: f64, to: f64) -> usize {
    rows.iter()
        .filter(|r| r.outcome != "ok" && r.sent_s.is_some_and(|s| from <= s && s < to))
        .count()
}

/// Where a transition falls among the attempts' send times: an opening happens when a
/// failure's answer arrives (after it was sent); a half-opening when the probe is let
/// through, at its send time, which the attempt log computes back from its latency (a
/// hair either side live: calls are 25 ms apart, so 5 ms settles it).
fn place(t: &BreakerTransition) -> f64 {
    match t.to {
        HalfOpen => t.at_s - 0.005,
        _ => t.at_s,
    }
}

fn check(run: &RunResult, rows: &[AttemptRow]) {
    let c = support::config_named(&run.configs, "breakers");
    // The client's count per provider is the provider's own, exactly.
    for p in &c.providers {
        assert_eq!(
            route(c, &p.name).attempts,
            p.arrivals,
            "provider {}",
            p.name
        );
    }
    assert_eq!(c.routes.iter().map(|r| r.attempts).sum::<u64>(), c.attempts);
    assert_eq!(c.failures, 0, "b answers whatever a's breaker does");
    assert!(
        route(c, "b").breaker_transitions.is_empty(),
        "b never fails"
    );

    let t: &[BreakerTransition] = &route(c, "a").breaker_transitions;
    let states: Vec<_> = t.iter().map(|x| (x.from, x.to)).collect();
    assert!(states.len() >= 5, "opened at least three times: {states:?}");
    assert_eq!(states[0], (Closed, Open));
    for pair in states[1..].chunks(2) {
        assert_eq!(pair[0], (Open, HalfOpen), "{states:?}");
        if pair.len() == 2 {
            assert_eq!(pair[1], (HalfOpen, Open), "the probe fails: {states:?}");
        }
    }
    // It opened at the third consecutive failure, not before, not after.
    assert_eq!(failures_sent(rows, 0.0, place(&t[0])), 3);
    for w in t.windows(2) {
        match (w[0].to, w[1].to) {
            // Open for `open_for`: the first attempt after it is the probe (calls come
            // every 25 ms, so it is at most one gap later).
            (Open, HalfOpen) => {
                let gap = w[1].at_s - w[0].at_s;
                assert!(
                    (OPEN_FOR_S..OPEN_FOR_S + 0.1).contains(&gap),
                    "half-open {gap} s after opening"
                );
                // Nothing reached `a` while it was open.
                assert_eq!(failures_sent(rows, place(&w[0]), place(&w[1])), 0);
            }
            // One probe, and its failure re-opens at once.
            (HalfOpen, Open) => assert_eq!(failures_sent(rows, place(&w[0]), place(&w[1])), 1),
            other => panic!("unexpected {other:?}"),
        }
    }
    let probes = states.iter().filter(|s| s.1 == HalfOpen).count() as u64;
    assert_eq!(route(c, "a").attempts, 3 + probes);
}

#[test]
fn each_provider_breaker_opens_at_its_threshold_in_the_simulator() {
    let p = support::plan_of(&scenario());
    let opts = SimOptions {
        attempt_log: true,
        ..SimOptions::default()
    };
    let out = sim::run(&p, &opts).unwrap();
    check(&out.result, &out.attempts);
}

#[test]
fn each_provider_breaker_opens_at_its_threshold_live() {
    let p = support::plan_of(&scenario());
    let out = support::run_live(&p, true);
    check(&out.result, &out.attempts);
}

#[test]
fn a_bad_provider_breaker_is_refused_naming_the_field() {
    let text = scenario().replace("failure_threshold = 3, ", "");
    let sc = stormrig::scenario::parse(std::path::Path::new("tests/inline.toml"), &text).unwrap();
    let e = stormrig::plan::build(sc, &text).unwrap_err();
    assert!(e.field.ends_with("failover.breaker"), "{}", e.field);
    assert_eq!(e.line, crate::support::line_starting(&text, "failover"));
}
