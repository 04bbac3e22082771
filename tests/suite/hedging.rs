//! Hedged requests (gRFC A6's `hedgingPolicy`): copies sent before any failure, counted as
//! attempts at both ends; the copies in flight when a call ends counted as cancelled; the
//! retry throttle stopping hedges at the threshold where it stops retries; bad hedging
//! values refused at `check`.

use crate::support::{self, config_named, plan_of, repo_root};
use stormrig::metrics::ConfigSummary;
use stormrig::sim::{self, SimOptions};

/// The target's latency is 200 ms for the whole 10 s run (its service time, constant, with
/// slots to spare: about 12 of its 64 are ever busy), 20 calls a second.
fn latency_scenario(configs: &str) -> String {
    format!(
        r#"name = "hedging-latency"
seed = 1
duration = "10s"

[load]
kind = "constant"
rate = 20.0

[target]
builtin = "default"

[target.service]
service_time = {{ kind = "constant", value = "200ms" }}

{configs}"#
    )
}

fn hedged(name: &str, max_attempts: u32, delay_ms: u64) -> String {
    format!(
        "[[configs]]\nname = \"{name}\"\npreset = \"grpc-hedging\"\nhedging = {{ max_attempts = {max_attempts}, delay = \"{delay_ms}ms\" }}\n\n"
    )
}

fn sim_run(text: &str) -> Vec<ConfigSummary> {
    let plan = plan_of(text);
    sim::run(&plan, &SimOptions::default())
        .unwrap()
        .result
        .configs
}

/// A6's arithmetic, by hand: copy k (k = 1..) goes `(k - 1) * delay` after the call starts,
/// while none has answered and copies are left; the first copy answers after 200 ms (plus
/// the network's few µs), before the second (sent 50 ms or more later) can, so it wins and
/// every copy sent after it is cancelled. Timing decides nothing here: every copy is at
/// least 50 ms from an answer.
#[test]
fn grpc_hedging_copies_and_cancellations_follow_a6_arithmetic_in_the_simulator() {
    let calls = 20 * 10;
    // delay → copies per call, for a first answer at ~200 ms: 50 ms sends at 0, 50, 100
    // (max 3); 120 ms at 0, 120; 250 ms only the first.
    let cases = [
        ("d50", 3, 50, 3u64),
        ("d120", 3, 120, 2),
        ("d250", 3, 250, 1),
    ];
    let text = latency_scenario(
        &cases
            .iter()
            .map(|(n, m, d, _)| hedged(n, *m, *d))
            .collect::<String>(),
    );
    let configs = sim_run(&text);
    for (name, _, _, copies) in cases {
        let c = config_named(&configs, name);
        let what = format!("{name}: {c:#?}");
        assert_eq!(c.upstream_requests, calls, "{what}");
        assert_eq!(c.successes, calls, "{what}");
        assert_eq!(c.attempts, calls * copies, "{what}");
        assert_eq!(c.downstream_arrivals, calls * copies, "{what}");
        assert_eq!(c.hedges_sent, calls * (copies - 1), "{what}");
        assert_eq!(c.hedges_cancelled, calls * (copies - 1), "{what}");
        // No hedge ever carried a call's answer: every one was wasted.
        assert_eq!(c.hedges_wasted, calls * (copies - 1), "{what}");
        // A hedge whose answer its call did not use is a wasted retry, never a useful one.
        assert_eq!(c.useful_retries, 0, "{what}");
        assert_eq!(c.wasted_retries, calls * (copies - 1), "{what}");
        assert_eq!(c.amplification, copies as f64, "{what}");
        assert!(c.amplification <= c.amplification_bound.unwrap(), "{what}");
    }
}

/// A copy closed while it is still on its way to the target (the simulator's network takes
/// 50 µs each way) never reaches it: the target never counts it. Copy 2 goes 10 ms after the
/// call starts and reaches the target 50 µs later; copy 1's answer reaches the client at
/// 100 µs plus the service time. Served in 9,920 µs, the answer comes at 10,020 µs, while
/// copy 2 is on its way: it is counted `not-accepted`, not cancelled, and the run's attempts
/// equal its arrivals plus its attempts never read (before, two attempts in every call were
/// one arrival, and nothing said why). Served in 9,980 µs, copy 2 got there first (10,050
/// µs): an arrival, cancelled. Served in 9,950 µs, both happen at 10,050 µs: whichever the
/// engine takes first, both sums hold (every attempt is an outcome or a cancelled copy).
#[test]
fn a_copy_closed_before_it_reached_the_target_is_counted_never_read() {
    let calls = 20;
    for (service_us, read) in [(9_920, Some(false)), (9_980, Some(true)), (9_950, None)] {
        let text = format!(
            r#"name = "hedging-in-transit"
seed = 1
duration = "2s"

[load]
kind = "constant"
rate = 10.0

[target]
builtin = "default"

[target.service]
service_time = {{ kind = "constant", value = "{service_us}us" }}

[[configs]]
name = "h"
preset = "grpc-hedging"
hedging = {{ max_attempts = 2, delay = "10ms" }}
"#
        );
        let configs = sim_run(&text);
        let c = config_named(&configs, "h");
        let what = format!("{service_us} µs: {c:#?}");
        let unread = c
            .attempts_by_outcome
            .get("not-accepted")
            .copied()
            .unwrap_or(0);
        let outcomes: u64 = c.attempts_by_outcome.values().sum();
        assert_eq!(c.successes, calls, "{what}");
        assert_eq!(c.attempts, 2 * calls, "{what}");
        assert_eq!(c.hedges_sent, calls, "{what}");
        assert_eq!(c.hedges_cancelled + unread, calls, "{what}");
        assert_eq!(c.downstream_arrivals + unread, c.attempts, "{what}");
        assert_eq!(outcomes + c.hedges_cancelled, c.attempts, "{what}");
        match read {
            Some(true) => assert_eq!(unread, 0, "{what}"),
            Some(false) => assert_eq!(unread, calls, "{what}"),
            None => {}
        }
    }
}

/// The target answers 503 after 200 ms all run long, one call every 2 s: no two calls
/// overlap (the `grpc` preset's call lasts 4 × 200 ms plus its backoff, under 1.6 s), so the throttle's tokens (10, threshold 5, one per non-fatal answer) can be
/// followed call by call, and hedging stops at the very level where the `grpc` preset's
/// retries stop.
#[test]
fn the_throttle_stops_hedges_at_the_threshold_where_it_stops_retries() {
    let text = r#"name = "hedging-throttle"
seed = 1
duration = "16s"

[load]
kind = "constant"
rate = 0.5

[target]
builtin = "default"

[target.service]
service_time = { kind = "constant", value = "1ms" }

[[faults]]
kind = "latency"
add = { kind = "constant", value = "200ms" }
at = "0s"
for = "16s"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "16s"

[[configs]]
name = "hedged"
preset = "grpc-hedging"
hedging = { max_attempts = 3, delay = "50ms", shortcut = "grpc-java" }

[[configs]]
name = "retried"
preset = "grpc"
"#;
    let configs = sim_run(text);
    let calls = 8;
    let h = config_named(&configs, "hedged");
    // Call 1 (10 tokens): three copies (0, 50, 100 ms, all above 5 tokens), three 503s take
    // it to 7; it fails at its last copy. Call 2 (7): three copies; the first 503 leaves 6,
    // the second 5 (not above the threshold): the call ends there, its third copy cancelled.
    // Calls 3..8 (5 and below): the first copy only (a copy after it is never scheduled),
    // each 503 a token less.
    let arrivals = 3 + 3 + (calls - 2);
    assert_eq!(h.upstream_requests, calls, "{h:#?}");
    assert_eq!(h.failures, calls, "{h:#?}");
    assert_eq!(h.downstream_arrivals, arrivals, "{h:#?}");
    assert_eq!(h.attempts, arrivals, "{h:#?}");
    assert_eq!(h.hedges_sent, 4, "{h:#?}");
    assert_eq!(h.hedges_cancelled, 1, "{h:#?}");
    assert_eq!(h.hedges_wasted, 4, "{h:#?}");
    assert_eq!(h.failures_by_reason.get("max-attempts"), Some(&1), "{h:#?}");
    assert_eq!(
        h.failures_by_reason.get("budget-refused"),
        Some(&(calls - 1)),
        "{h:#?}"
    );
    // The grpc preset's retries under the same throttle: call 1 fails 4 times (10 → 6, its
    // 3 retries granted above 5), call 2's first failure leaves 5 and its retry is refused.
    let r = config_named(&configs, "retried");
    assert_eq!(r.downstream_arrivals, 4 + (calls - 1), "{r:#?}");
    assert_eq!(r.budget_refusals, calls - 1, "{r:#?}");
    // Both stop at the same level: the first refusal is in call 2 (started at 2 s) for
    // both, as the throttle reaches 5 tokens, and every later call is refused its first
    // copy's follower or its first retry.
    for (c, at) in [(h, h.first_budget_refusal_s), (r, r.first_budget_refusal_s)] {
        let at = at.unwrap_or_else(|| panic!("{}: no refusal", c.name));
        assert!(
            (2.0..2.5).contains(&at),
            "{}: first refusal at {at}",
            c.name
        );
    }
    assert_eq!(h.budget_refusals, calls - 1, "{h:#?}");
}

/// Hedging values a client cannot have are refused at `check` with exit 2, naming the file,
/// the line and the field, before any load is sent.
#[test]
fn bad_hedging_values_are_refused_naming_file_line_and_field() {
    let dir = support::process::tmp_dir("hedging-check");
    for (line, field) in [
        ("hedging = { max_attempts = 1 }", "hedging.max_attempts"),
        ("hedging = { max_attempts = 6 }", "hedging.max_attempts"),
        (
            "hedging = { max_attempts = 3, delay = \"-5ms\" }",
            "hedging",
        ),
        (
            "hedging = { max_attempts = 3, non_fatal = [\"ok\"] }",
            "hedging.non_fatal",
        ),
        (
            "hedging = { max_attempts = 3, non_fatal = [\"unavailible\"] }",
            "hedging",
        ),
        (
            "hedging = { max_attempts = 3, shortcut = \"sometimes\" }",
            "hedging",
        ),
        ("hedging = { max_attempts = 3, hops = 2 }", "hedging"),
        // A retry policy or a hedging policy, never both (gRFC A6).
        (
            "hedging = { max_attempts = 3 }\nmax_attempts = 4",
            "max_attempts",
        ),
        (
            "hedging = { max_attempts = 3 }\nbudget = { kind = \"ratio\", ratio = 0.1 }",
            "budget",
        ),
    ] {
        let text = support::one_config_scenario("h", &format!("preset = \"grpc-hedging\"\n{line}"));
        support::process::check_refuses(&dir, "bad.toml", &text, "bad.toml:1", field);
    }
}

/// A layer's client retries; hedged copies come from the load generator's client only, so a
/// hedging config on a layer is refused rather than run as plain retries.
#[test]
fn a_hedging_config_on_a_layer_is_refused_naming_the_field() {
    let dir = support::process::tmp_dir("hedging-layer");
    let text = "name = \"layer\"\nduration = \"5s\"\n\n[load]\nkind = \"constant\"\nrate = 10.0\n\n[target]\nbuiltin = \"small\"\n\n[[topology]]\nname = \"edge\"\nconfig = { preset = \"grpc-hedging\" }\n\n[[configs]]\npreset = \"grpc\"\n";
    support::process::check_refuses(
        &dir,
        "layer.toml",
        text,
        "layer.toml:13",
        "topology[0].config.hedging",
    );
}

/// Without hedging the new figures are zero, and the shipped scenarios' summaries carry
/// them (the figure table lists them: the every-figure test walks real summaries).
#[test]
fn a_config_without_hedging_counts_no_hedges() {
    let plan =
        stormrig::plan::load(&repo_root().join("scenarios/downstream-503-10s.toml")).unwrap();
    let out = sim::run(&plan, &SimOptions::default()).unwrap();
    for c in &out.result.configs {
        assert_eq!(
            (c.hedges_sent, c.hedges_cancelled, c.hedges_wasted),
            (0, 0, 0),
            "{}",
            c.name
        );
    }
}

mod policy {
    //! The hedge state machine through the policy's public API, answer by answer.

    use std::time::Duration;
    use stormrig::policy::{
        preset, AttemptOutcome, GiveUpReason, GrpcStatus, HedgeDecision, HedgeDue, HedgingConfig,
        Now, Permit, Response, RetryClient, Shortcut,
    };

    fn at(ms: u64) -> Now {
        Now::virtual_at(Duration::from_millis(ms))
    }

    fn client(shortcut: Shortcut) -> RetryClient {
        let mut c = preset("grpc-hedging").unwrap();
        c.max_attempts = 3;
        c.hedging = Some(HedgingConfig {
            max_attempts: 3,
            delay: Duration::from_millis(50),
            non_fatal: Some(vec![GrpcStatus::Unavailable]),
            shortcut,
        });
        c.validate().unwrap();
        RetryClient::new(&c)
    }

    fn grpc(status: GrpcStatus, pushback: Option<&'static str>) -> AttemptOutcome<'static> {
        AttemptOutcome::Response(Response {
            grpc_status: Some(status),
            grpc_pushback_ms: pushback,
            ..Response::status(200)
        })
    }

    fn number(p: Option<Permit>) -> u32 {
        match p {
            Some(Permit::Send { attempt, .. }) => attempt,
            other => panic!("expected a copy, got {other:?}"),
        }
    }

    /// The timer of `req` going off at `now`: the copy it sends, if any (A6 never re-arms).
    fn due(
        c: &mut RetryClient,
        now: Now,
        req: &mut stormrig::policy::RequestState,
    ) -> Option<Permit> {
        match c.hedge_due(now, req, &mut rand::rngs::mock::StepRng::new(0, 0)) {
            HedgeDue::Send(p) => Some(p),
            HedgeDue::Idle => None,
            other => panic!("gRFC A6 hedging's timer came to {other:?}"),
        }
    }

    /// The answer of copy `attempt`.
    fn answer(
        c: &mut RetryClient,
        now: Now,
        req: &mut stormrig::policy::RequestState,
        attempt: u32,
        outcome: &AttemptOutcome<'_>,
    ) -> HedgeDecision {
        c.on_hedge_outcome(
            now,
            req,
            attempt,
            outcome,
            &mut rand::rngs::mock::StepRng::new(0, 0),
        )
    }

    #[test]
    fn a6_sends_the_next_copy_at_once_after_a_non_fatal_status() {
        let mut c = client(Shortcut::A6);
        let mut req = c.start(at(0), "GET", None);
        assert_eq!(number(Some(c.before_attempt(at(0), &mut req))), 1);
        assert_eq!(
            c.arm_hedge(at(0), &mut req),
            Some(Duration::from_millis(50))
        );
        // A timer not yet due sends nothing.
        assert_eq!(due(&mut c, at(49), &mut req), None);
        assert_eq!(number(due(&mut c, at(50), &mut req)), 2);
        assert_eq!(
            c.arm_hedge(at(50), &mut req),
            Some(Duration::from_millis(50))
        );
        let unavailable = grpc(GrpcStatus::Unavailable, None);
        let d = answer(&mut c, at(60), &mut req, 1, &unavailable);
        assert!(matches!(d, HedgeDecision::SendNow { .. }), "{d:?}");
        assert_eq!(number(c.hedge_permit(at(60), &mut req)), 3);
        // Out of copies: no timer; the voided one sends nothing.
        assert_eq!(c.arm_hedge(at(60), &mut req), None);
        assert_eq!(due(&mut c, at(100), &mut req), None);
        let d = answer(&mut c, at(70), &mut req, 2, &unavailable);
        assert!(matches!(d, HedgeDecision::Await { .. }), "{d:?}");
        let d = answer(&mut c, at(80), &mut req, 3, &unavailable);
        assert!(
            matches!(
                d,
                HedgeDecision::GiveUp {
                    reason: GiveUpReason::MaxAttempts,
                    ..
                }
            ),
            "{d:?}"
        );
        c.finish(at(80), req);
    }

    #[test]
    fn grpc_java_keeps_the_timer_and_a_fatal_status_ends_the_call() {
        let mut c = client(Shortcut::GrpcJava);
        let mut req = c.start(at(0), "GET", None);
        let _ = c.before_attempt(at(0), &mut req);
        let _ = c.arm_hedge(at(0), &mut req);
        assert_eq!(number(due(&mut c, at(50), &mut req)), 2);
        let _ = c.arm_hedge(at(50), &mut req);
        let d = answer(
            &mut c,
            at(60),
            &mut req,
            1,
            &grpc(GrpcStatus::Unavailable, None),
        );
        assert!(matches!(d, HedgeDecision::Await { .. }), "{d:?}");
        // INVALID_ARGUMENT is fatal: the call ends with copy 2 still out.
        let d = answer(
            &mut c,
            at(70),
            &mut req,
            2,
            &grpc(GrpcStatus::InvalidArgument, None),
        );
        assert!(d.ends() && !matches!(d, HedgeDecision::Success), "{d:?}");
        assert_eq!(due(&mut c, at(100), &mut req), None);
        c.finish(at(70), req);
    }

    #[test]
    fn a_do_not_retry_pushback_stops_hedging_and_a_success_wins() {
        let mut c = client(Shortcut::A6);
        let mut req = c.start(at(0), "GET", None);
        let _ = c.before_attempt(at(0), &mut req);
        let _ = c.arm_hedge(at(0), &mut req);
        assert_eq!(number(due(&mut c, at(50), &mut req)), 2);
        let _ = c.arm_hedge(at(50), &mut req);
        let d = answer(
            &mut c,
            at(60),
            &mut req,
            1,
            &grpc(GrpcStatus::Unavailable, Some("-1")),
        );
        assert!(matches!(d, HedgeDecision::Await { .. }), "{d:?}");
        // Frozen: the armed timer sends nothing.
        assert_eq!(due(&mut c, at(100), &mut req), None);
        let d = answer(&mut c, at(110), &mut req, 2, &grpc(GrpcStatus::Ok, None));
        assert_eq!(d, HedgeDecision::Success);
        c.finish(at(110), req);
    }
}
