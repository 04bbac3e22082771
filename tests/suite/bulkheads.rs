//! Bulkheads and adaptive client concurrency limiters: a bulkhead of 10 without a queue
//! under a hang fault holds the target's in-flight count to 10 and counts its rejections
//! exactly, in both engines; outside the retry a bulkhead holds one place per call through
//! its retries; the limiters' rejections are their own outcome; bad values are refused at
//! `check`.

use crate::support::{self, config_named, failures_for, plan_of};
use stormrig::metrics::ConfigSummary;
use stormrig::sim::{self, SimOptions};

/// 20 calls a second for 5 s against a target that answers in 10 ms, but holds every
/// request that arrives from 1 s to 4 s without answering; each config sends one attempt
/// per call and gives it up after 1025 ms.
fn hang_scenario(configs: &str) -> String {
    format!(
        r#"name = "bulkhead-hang"
seed = 1
duration = "5s"

[load]
kind = "constant"
rate = 20.0

[target]
builtin = "default"

[target.service]
service_time = {{ kind = "constant", value = "10ms" }}

[[faults]]
kind = "hang"
at = "1s"
for = "3s"

{configs}"#
    )
}

fn config(name: &str, extra: &str) -> String {
    format!(
        "[[configs]]\nname = \"{name}\"\nmax_attempts = 1\nper_try_timeout = \"1025ms\"\n{extra}\n\n"
    )
}

/// Counting that holds in both engines: every call either sent its one attempt (which the
/// target counted) or was rejected by the bulkhead, and each rejection is one
/// `bulkhead-full` ending.
fn rejections_add_up(c: &ConfigSummary) {
    assert_eq!(c.attempts, c.downstream_arrivals, "{c:#?}");
    assert_eq!(
        c.attempts + c.bulkhead_rejections,
        c.upstream_requests,
        "{c:#?}"
    );
    assert_eq!(
        failures_for(c, "bulkhead-full"),
        c.bulkhead_rejections,
        "{c:#?}"
    );
    assert_eq!(c.limiter_rejections, 0, "{c:#?}");
}

/// By hand: the calls at 1.00 to 1.45 s take the 10 places and hang; the next place frees
/// 1025 ms after the first was taken, at 2.025 s, so the 11 calls at 1.50 to 2.00 s are
/// rejected and the call at 2.05 s takes it. Cycles of 1.05 s (21 calls): 10 admitted and
/// hung, 11 rejected, starting at 1.00, 2.05 and 3.10 s; the third cycle's rejected calls
/// (3.60 to 4.10 s) include the first three after the fault. Rejections 3 × 11 = 33;
/// hung attempts 30 (each ends `non-retryable`: the per-try timeout is not retried here);
/// successes: the 20 calls before 1 s and the 17 from 4.15 s on. Without the bulkhead
/// every call is sent: 1025 ms of calls 50 ms apart, 21, hang at once.
#[test]
fn a_bulkhead_of_ten_holds_the_target_to_ten_in_flight_in_the_simulator() {
    let text = hang_scenario(&format!(
        "{}{}",
        config(
            "bulkhead-10",
            "bulkhead = { max_concurrent = 10, max_queue = 0 }"
        ),
        config("no-bulkhead", "")
    ));
    let out = sim::run(&plan_of(&text), &SimOptions::default()).unwrap();
    let b = config_named(&out.result.configs, "bulkhead-10");
    rejections_add_up(b);
    assert_eq!(b.upstream_requests, 100, "{b:#?}");
    assert_eq!(b.peak_concurrency, 10, "{b:#?}");
    assert_eq!(b.bulkhead_rejections, 33, "{b:#?}");
    assert_eq!(failures_for(b, "non-retryable"), 30, "{b:#?}");
    assert_eq!(b.successes, 20 + 17, "{b:#?}");
    let free = config_named(&out.result.configs, "no-bulkhead");
    assert_eq!(free.peak_concurrency, 21, "{free:#?}");
    assert_eq!(free.bulkhead_rejections, 0, "{free:#?}");
}

/// The same storm through the live engine, against the built-in target on loopback: the
/// target's own count of requests in flight never passes 10, and the rejections add up to
/// the request (timing may move a call from one cycle to the next, so the figures by hand
/// are the simulator's to match).
#[test]
fn a_bulkhead_of_ten_holds_the_target_to_ten_in_flight_live() {
    let text = hang_scenario(&config(
        "bulkhead-10",
        "bulkhead = { max_concurrent = 10, max_queue = 0 }",
    ));
    let out = support::run_live(&plan_of(&text), false);
    let b = config_named(&out.result.configs, "bulkhead-10");
    rejections_add_up(b);
    assert_eq!(b.upstream_requests, 100, "{b:#?}");
    assert!(b.peak_concurrency <= 10, "{b:#?}");
    assert!(b.peak_concurrency >= 9, "the hang fills the places: {b:#?}");
    assert!(b.bulkhead_rejections >= 25, "{b:#?}");
}

/// A bulkhead with a queue: an attempt waits up to `max_wait` for a place; one that gets
/// none in time, or finds the queue full, is rejected. Under the hang no place frees
/// within 200 ms of a wait but at the cycle's turn, so the count stays exact.
#[test]
fn a_queued_bulkhead_and_the_adaptive_limiters_count_their_rejections() {
    let text = hang_scenario(&format!(
        "{}{}{}",
        config(
            "queued",
            "bulkhead = { max_concurrent = 10, max_queue = 5, max_wait = \"200ms\" }"
        ),
        config(
            "aimd",
            "concurrency_limit = { kind = \"aimd\", initial_limit = 10, min_limit = 1, max_limit = 20 }"
        ),
        config(
            "gradient2",
            "concurrency_limit = { kind = \"gradient2\", initial_limit = 10, min_limit = 1, max_limit = 20 }"
        ),
    ));
    let out = sim::run(&plan_of(&text), &SimOptions::default()).unwrap();
    let q = config_named(&out.result.configs, "queued");
    rejections_add_up(q);
    assert!(q.peak_concurrency <= 10, "{q:#?}");
    for name in ["aimd", "gradient2"] {
        let c = config_named(&out.result.configs, name);
        assert_eq!(c.attempts, c.downstream_arrivals, "{c:#?}");
        assert_eq!(
            c.attempts + c.limiter_rejections,
            c.upstream_requests,
            "{c:#?}"
        );
        assert_eq!(
            failures_for(c, "limit-exceeded"),
            c.limiter_rejections,
            "{c:#?}"
        );
        assert!(c.limiter_rejections > 0, "{c:#?}");
        assert!(c.peak_concurrency <= 20, "{c:#?}");
    }
}

/// 20 calls a second for 1 s against a target answering every request 503 (for 2 s: the
/// last call's retries too); each config
/// sends 3 attempts 107 ms apart (no jitter) behind a bulkhead of 2, outside or inside the
/// retry.
fn sides_scenario() -> String {
    let config = |name: &str, pipeline: &str| {
        format!(
            "[[configs]]\nname = \"{name}\"\nmax_attempts = 3\n\
             backoff = {{ kind = \"constant\", delay = \"107ms\" }}\njitter = {{ kind = \"none\" }}\n\
             retry_on = {{ statuses = [503] }}\nbulkhead = {{ max_concurrent = 2 }}\n\
             pipeline = {pipeline}\n\n"
        )
    };
    format!(
        r#"name = "bulkhead-sides"
seed = 1
duration = "2s"

[load]
kind = "steps"
steps = [{{ at = "0s", rate = 20.0 }}, {{ at = "1s", rate = 0.0 }}]

[target]
builtin = "default"

[target.service]
service_time = {{ kind = "constant", value = "1ms" }}

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"

{}{}"#,
        config("outside", "[\"bulkhead\", \"retry\"]"),
        config("inside", "[\"retry\", \"bulkhead\"]"),
    )
}

/// By hand. Outside the retry a call holds its place from its first attempt to its end,
/// 214 ms and two answers later (3 attempts 107 ms apart): the calls at 0 and 50 ms take
/// the 2 places; those at 100, 150 and 200 ms find both held and are rejected; the call at
/// 250 ms takes the place the first call left at 214+ ms, 300 ms the second's; and so on
/// every 250 ms: 8 calls sent (3 attempts each, all failing at the attempt limit), 12
/// rejected. Inside the retry an attempt holds its place only until its answer, a few
/// ms: the attempts of calls 50 ms apart start 0, 7 and 14 ms past each 50 ms, never more
/// than 2 at once, so nothing is rejected and every call sends its 3 attempts.
fn bulkhead_sides_by_hand(outside: &ConfigSummary, inside: &ConfigSummary, exact: bool) {
    for c in [outside, inside] {
        rejections_add_up_per_call(c);
        assert_eq!(c.upstream_requests, 20, "{c:#?}");
        assert_eq!(c.successes, 0, "{c:#?}");
    }
    assert_eq!(inside.bulkhead_rejections, 0, "{inside:#?}");
    assert_eq!(inside.attempts, 60, "{inside:#?}");
    if exact {
        assert_eq!(outside.bulkhead_rejections, 12, "{outside:#?}");
    } else {
        assert!(
            (11..=13).contains(&outside.bulkhead_rejections),
            "{outside:#?}"
        );
    }
    assert_eq!(
        outside.attempts,
        3 * (20 - outside.bulkhead_rejections),
        "{outside:#?}"
    );
}

/// Every call either sent its first attempt or was rejected; each sent call failed at its
/// attempt limit (the target answers nothing but 503).
fn rejections_add_up_per_call(c: &ConfigSummary) {
    assert_eq!(c.attempts, c.downstream_arrivals, "{c:#?}");
    assert_eq!(
        failures_for(c, "bulkhead-full"),
        c.bulkhead_rejections,
        "{c:#?}"
    );
    assert_eq!(
        failures_for(c, "max-attempts") + c.bulkhead_rejections,
        c.upstream_requests,
        "{c:#?}"
    );
}

#[test]
fn a_bulkhead_outside_the_retry_holds_a_place_per_call_in_the_simulator() {
    let out = sim::run(&plan_of(&sides_scenario()), &SimOptions::default()).unwrap();
    let configs = &out.result.configs;
    let outside = config_named(configs, "outside");
    bulkhead_sides_by_hand(outside, config_named(configs, "inside"), true);
    assert!(outside.peak_concurrency <= 2, "{outside:#?}");
}

#[test]
fn a_bulkhead_outside_the_retry_holds_a_place_per_call_live() {
    let out = support::run_live(&plan_of(&sides_scenario()), false);
    let configs = &out.result.configs;
    bulkhead_sides_by_hand(
        config_named(configs, "outside"),
        config_named(configs, "inside"),
        false,
    );
}

/// `check --explain` says which side the bulkhead stands on, and what a place is then.
#[test]
fn explain_says_what_a_bulkhead_place_is_on_each_side() {
    let explained = stormrig::advice::explain(&plan_of(&sides_scenario()));
    let inside_at = explained.find("\ninside").expect("the inside config");
    let (outside, inside) = explained.split_at(inside_at);
    assert!(
        outside.contains("bulkhead: at most 2 calls in flight")
            && outside.contains("pipeline: bulkhead › retry (outermost first, as written)")
            && outside.contains("bounds calls in flight, not attempts"),
        "{outside}"
    );
    assert!(
        inside.contains("bulkhead: at most 2 attempts in flight")
            && !inside.contains("bounds calls"),
        "{inside}"
    );
}

/// Bad values exit 2 at `check`, naming the file, the line and the field.
#[test]
fn bad_bulkhead_and_limiter_values_are_refused_at_check() {
    let dir = support::process::tmp_dir("bulkhead-check");
    for (line, field) in [
        (
            "bulkhead = { max_concurrent = 0 }",
            "bulkhead.max_concurrent",
        ),
        (
            "bulkhead = { max_concurrent = 10, max_queue = 5 }",
            "bulkhead.max_wait",
        ),
        (
            "bulkhead = { max_concurrent = 10, max_wait = \"1s\" }",
            "bulkhead.max_wait",
        ),
        ("bulkhead = { max_concurrent = 10, queue = 1 }", "bulkhead"),
        (
            "concurrency_limit = { kind = \"aimd\", backoff_ratio = 0.4 }",
            "concurrency_limit.backoff_ratio",
        ),
        (
            "concurrency_limit = { kind = \"aimd\", initial_limit = 500 }",
            "concurrency_limit.initial_limit",
        ),
        (
            "concurrency_limit = { kind = \"gradient2\", rtt_tolerance = 0.5 }",
            "concurrency_limit.rtt_tolerance",
        ),
        (
            "concurrency_limit = { kind = \"vegas\" }",
            "concurrency_limit",
        ),
        (
            "concurrency_limit = { kind = \"aimd\" }\npipeline = [\"concurrency-limit\", \"retry\"]",
            "pipeline",
        ),
    ] {
        let text = crate::support::one_config_scenario("b", line);
        let at = crate::support::line_starting(&text, field.split('.').next().unwrap());
        support::process::check_refuses(&dir, "bad.toml", &text, &format!("bad.toml:{at}"), field);
    }
}
