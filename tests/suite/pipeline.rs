//! Pipelines with an explicit stage order: the same breaker outside and inside the same
//! retry (the shipped `breaker-order` scenario) with figures worked out by hand, orders
//! that make no sense refused at `check`, and `check --explain` saying the order.

use crate::support::{self, config_named, failures_for, plan_of, repo_root};
use stormrig::sim::{self, SimOptions};

fn shipped() -> String {
    std::fs::read_to_string(repo_root().join("scenarios/breaker-order.toml")).unwrap()
}

/// The hand arithmetic of the shipped scenario. A call every 500 ms (40 in 20 s; calls
/// 0..=9 start before the outage at 5 s, calls at 15.0 s and later after it); an attempt is
/// answered 10 ms after it is sent; a retry goes 100 ms after the failure it answers, so a
/// call whose three attempts fail sends them at +0, +110 and +220 ms and fails at +230 ms.
/// The breaker opens after 3 consecutive failures and half-opens 1.75 s after opening.
///
/// Outside the retry (one outcome per call): the calls at 5.0, 5.5 and 6.0 s fail (9
/// attempts), the breaker opens at 6.23 s. The calls at 6.5, 7.0, 7.5 s are refused (7.5 is
/// 1.27 s after); 8.0 s (1.77 s after) is the probe: a whole call, 3 attempts, fails, and
/// the breaker opens again at 8.23. So every 2 s: 3 refused calls, one probe call of 3
/// attempts, for probes at 8, 10, 12 and 14 s (14.22 s is still in the outage) and refusals
/// up to 15.5 s; the probe at 16.0 s succeeds and closes it. Refusals 5 × 3 = 15, one per
/// call; attempts 10 + 9 + 4 × 3 + 8 = 39; during the open state (6.23 to 16.0 s) the
/// target receives only the probes' 12 attempts; successes 10 + 8 = 18; 7 calls fail at
/// their attempt limit.
///
/// Inside the retry (one outcome per attempt, a refusal re-sent): the call at 5.0 s fails
/// its 3 attempts and the third opens the breaker at 5.23 s. The calls at 5.5, 6.0 and
/// 6.5 s are refused at +0, +100, +200 ms (3 refusals each: the retry re-sends the
/// open-circuit failure until the attempts are spent); the call at 7.0 s (1.77 s after) is
/// the probe, fails at 7.01 s and re-opens the breaker, and its 2 retries are refused at
/// 7.11 and 7.21 s. The calls at 7.5, 8.0 and 8.5 s are refused 3 times each (8.7 s is
/// 1.69 s after 7.01), 9.0 s probes: every 2 s, 3 × 3 + 2 = 11 refusals and one attempt
/// sent. Probes at 7, 9, 11, 13 s; the call at 15.0 s (1.99 s after the breaker re-opened
/// at 13.01 s) is the next probe, after the outage, and succeeds.
/// Refusals 9 (5.5–6.5 s) + 4 × 11 = 53; attempts 10 + 3 + 4 + 10 = 27 (the calls from
/// 15.0 s on, 10 of them, succeed at once); successes 10 + 10 = 20; the other 20 calls end
/// at their attempt limit, none as breaker-open.
#[test]
fn breaker_outside_the_retry_sends_only_its_probes_and_inside_it_retries_refusals() {
    let out = sim::run(
        &plan_of(&shipped()),
        &SimOptions {
            attempt_log: true,
            ..SimOptions::default()
        },
    )
    .unwrap();
    let configs = &out.result.configs;
    let outside = config_named(configs, "breaker-outside");
    let inside = config_named(configs, "breaker-inside");
    for c in [outside, inside] {
        assert_eq!(c.upstream_requests, 40, "{c:#?}");
        assert_eq!(c.attempts, c.downstream_arrivals, "{c:#?}");
    }
    let probes = 4;
    assert_eq!(outside.breaker_refusals, 15, "{outside:#?}");
    assert_eq!(failures_for(outside, "breaker-open"), 15, "{outside:#?}");
    assert_eq!(
        outside.attempts,
        10 + 3 * 3 + probes * 3 + 8,
        "{outside:#?}"
    );
    assert_eq!(outside.successes, 18, "{outside:#?}");
    assert_eq!(failures_for(outside, "max-attempts"), 7, "{outside:#?}");

    assert_eq!(inside.breaker_refusals, 9 + probes * 11, "{inside:#?}");
    assert_eq!(failures_for(inside, "breaker-open"), 0, "{inside:#?}");
    assert_eq!(inside.attempts, 10 + 3 + probes + 10, "{inside:#?}");
    assert_eq!(inside.successes, 20, "{inside:#?}");
    assert_eq!(failures_for(inside, "max-attempts"), 20, "{inside:#?}");

    // The open state of the outside breaker: 6.23 s to 16.0 s; what the target received in
    // it is the probes' attempts, nothing else.
    let sent_in_open = out
        .attempts
        .iter()
        .filter(|r| r.config == "breaker-outside")
        .filter_map(|r| r.sent_s)
        .filter(|&t| (6.23..16.0).contains(&t))
        .count() as u64;
    assert_eq!(sent_in_open, probes * 3);
    // Each re-sent refusal is an `open-circuit` row of the attempt log, inside only.
    let rows = |config: &str| {
        out.attempts
            .iter()
            .filter(|r| r.config == config && r.outcome == "open-circuit")
            .count() as u64
    };
    assert_eq!(rows("breaker-inside"), inside.breaker_refusals);
    assert_eq!(rows("breaker-outside"), 0);
}

/// The live engine drives the same policy: each refused call of the outside breaker is one
/// refusal and one breaker-open ending, and the inside breaker's refusals are re-sent (no
/// call ends as breaker-open, and refusals outnumber refused calls). Timing decides the
/// exact figures on a busy machine, so only what holds whatever the timing is checked.
#[test]
fn the_live_engine_runs_the_same_breaker_orders() {
    let plan = plan_of(&shipped());
    let out = support::run_live(&plan, false);
    let configs = &out.result.configs;
    let outside = config_named(configs, "breaker-outside");
    let inside = config_named(configs, "breaker-inside");
    for c in [outside, inside] {
        assert_eq!(c.upstream_requests, 40, "{c:#?}");
        assert_eq!(c.attempts, c.downstream_arrivals, "{c:#?}");
    }
    assert!(outside.breaker_refusals > 0, "{outside:#?}");
    assert_eq!(
        outside.breaker_refusals,
        failures_for(outside, "breaker-open"),
        "{outside:#?}"
    );
    assert!(inside.breaker_refusals > 0, "{inside:#?}");
    assert_eq!(failures_for(inside, "breaker-open"), 0, "{inside:#?}");
    // A refused call re-sends its refusal until its 3 attempts are spent.
    assert!(
        inside.breaker_refusals >= 2 * (40 - inside.successes),
        "{inside:#?}"
    );
}

fn scenario(config_lines: &str) -> String {
    crate::support::one_config_scenario("p", config_lines)
}

/// Orders that make no sense exit 2 at `check`, naming the file, the line and the field.
#[test]
fn orders_that_make_no_sense_are_refused_at_check() {
    let dir = support::process::tmp_dir("pipeline-check");
    let breaker = "breaker = { failure_threshold = 3, open_for = \"1s\" }";
    for lines in [
        // No retry to stand inside or outside of.
        format!("{breaker}\npipeline = [\"breaker\"]"),
        // A breaker listed that the config does not have.
        "pipeline = [\"breaker\", \"retry\"]".to_string(),
        // A breaker the config has, left out.
        format!("{breaker}\npipeline = [\"retry\"]"),
        // Twice the retry.
        format!("{breaker}\npipeline = [\"retry\", \"breaker\", \"retry\"]"),
        // A per-try timeout that is not innermost, and one the config lacks.
        format!(
            "per_try_timeout = \"1s\"\n{breaker}\npipeline = [\"retry\", \"timeout\", \"breaker\"]"
        ),
        format!("{breaker}\npipeline = [\"timeout\", \"retry\", \"breaker\"]"),
        // The rate limiter outside the retry.
        "rate_limiter = { kind = \"aws-adaptive\" }\npipeline = [\"rate-limiter\", \"retry\"]"
            .to_string(),
    ] {
        let text = scenario(&lines);
        let line = crate::support::line_starting(&text, "pipeline");
        support::process::check_refuses(
            &dir,
            "bad.toml",
            &text,
            &format!("bad.toml:{line}"),
            "pipeline",
        );
    }
    // An unknown stage is a parse error naming the field.
    let text = scenario("pipeline = [\"retry\", \"bulkhed\"]");
    support::process::check_refuses(&dir, "bad.toml", &text, "bad.toml:", "pipeline");
}

/// `check --explain` says the order, and what it makes of the breaker, for a written order
/// and for the default.
#[test]
fn explain_says_the_order_and_what_it_does_to_the_breaker() {
    let text = shipped().replace(
        "[[configs]]\nname = \"breaker-inside\"",
        "[[configs]]\nname = \"breaker-default\"\nbreaker = { failure_threshold = 3, open_for = \"1s\" }\n\n[[configs]]\nname = \"breaker-inside\"",
    );
    let explained = stormrig::advice::explain(&plan_of(&text));
    let part = |name: &str| {
        let from = explained.find(name).expect(name);
        let rest = &explained[from..];
        let end = rest[1..].find("\nbreaker-").map_or(rest.len(), |e| e + 1);
        rest[..end].to_string()
    };
    let outside = part("breaker-outside");
    assert!(
        outside.contains("pipeline: breaker › retry (outermost first, as written)")
            && outside.contains("asked once per call"),
        "{outside}"
    );
    let inside = part("breaker-inside");
    assert!(
        inside.contains("pipeline: retry › breaker (outermost first, as written)")
            && inside.contains("re-sends"),
        "{inside}"
    );
    let default = part("breaker-default");
    assert!(
        default.contains("pipeline: retry › breaker (outermost first, the default)")
            && default.contains("ends the call without a retry"),
        "{default}"
    );
}
