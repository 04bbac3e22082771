//! Hedging on the per-try timeout (Envoy's `hedge_on_per_try_timeout`, preset
//! `envoy-hedging`): a per-try timeout keeps its attempt and sends a retry beside it; the
//! first good answer wins. Hand arithmetic in both engines, the rules answer by answer
//! through the policy's API, and the values refused at `check`.

use crate::support::{self, config_named, plan_of, run_live};
use stormrig::metrics::ConfigSummary;
use stormrig::sim::{self, SimOptions};

/// 10 calls a second for `secs` against a target whose service time is `service`
/// (constant, slots to spare), through `configs`.
fn scenario(secs: u64, service: &str, faults: &str, configs: &str) -> String {
    format!(
        r#"name = "hedging-per-try"
seed = 1
duration = "{secs}s"
drain = "5s"

[load]
kind = "constant"
rate = 10.0

[target]
builtin = "default"

[target.service]
service_time = {{ kind = "constant", value = "{service}" }}

{faults}
{configs}"#
    )
}

fn config(name: &str, preset: &str, per_try_ms: u64) -> String {
    format!("[[configs]]\nname = \"{name}\"\npreset = \"{preset}\"\nper_try_timeout = \"{per_try_ms}ms\"\n\n")
}

fn sim_run(text: &str) -> Vec<ConfigSummary> {
    sim::run(&plan_of(text), &SimOptions::default())
        .unwrap()
        .result
        .configs
}

/// The answers take 200 ms. With a 50 ms per-try timeout, Envoy's hedging sends copy 2 at
/// 50 ms plus its backoff, U[0, 25 ms), while copy 1 goes on; copy 1 answers at ~200 ms, wins,
/// and copy 2 (at least 125 ms from an answer) is reset: 2 arrivals, 1 hedge sent, cancelled
/// and wasted per call, every call a success. The same route without hedging resets copy 1
/// at 50 ms and retries; copy 2 times out at 100-125 ms and the call fails (max attempts):
/// 2 arrivals per call, no success. With a 250 ms per-try timeout nothing is hedged. The
/// retry circuit breaker (3 concurrent retries) never refuses: a call holds its retry from
/// 50 ms to its end, at most two calls at once.
fn assert_hedged_arithmetic(configs: &[ConfigSummary], calls: u64) {
    let h = config_named(configs, "hedged");
    let what = format!("{h:#?}");
    assert_eq!(h.upstream_requests, calls, "{what}");
    assert_eq!(h.successes, calls, "{what}");
    assert_eq!(h.attempts, 2 * calls, "{what}");
    assert_eq!(h.downstream_arrivals, 2 * calls, "{what}");
    assert_eq!(h.hedges_sent, calls, "{what}");
    assert_eq!(h.hedges_cancelled, calls, "{what}");
    assert_eq!(h.hedges_wasted, calls, "{what}");
    assert_eq!((h.useful_retries, h.wasted_retries), (0, calls), "{what}");
    assert_eq!(h.budget_refusals, 0, "{what}");
    assert!(h.amplification <= h.amplification_bound.unwrap(), "{what}");

    let r = config_named(configs, "retried");
    let what = format!("{r:#?}");
    assert_eq!(r.upstream_requests, calls, "{what}");
    assert_eq!(r.successes, 0, "{what}");
    assert_eq!(r.attempts, 2 * calls, "{what}");
    assert_eq!(
        r.failures_by_reason.get("max-attempts"),
        Some(&calls),
        "{what}"
    );
    assert_eq!(r.hedges_sent, 0, "{what}");

    let slow = config_named(configs, "patient");
    let what = format!("{slow:#?}");
    assert_eq!(slow.successes, calls, "{what}");
    assert_eq!(slow.attempts, calls, "{what}");
    assert_eq!((slow.hedges_sent, slow.hedges_cancelled), (0, 0), "{what}");
}

fn latency_configs() -> String {
    [
        config("hedged", "envoy-hedging", 50),
        config("retried", "envoy", 50),
        config("patient", "envoy-hedging", 250),
    ]
    .concat()
}

#[test]
fn envoy_hedging_under_latency_follows_the_hand_arithmetic_in_the_simulator() {
    let configs = sim_run(&scenario(10, "200ms", "", &latency_configs()));
    assert_hedged_arithmetic(&configs, 100);
}

#[test]
fn envoy_hedging_under_latency_follows_the_hand_arithmetic_live() {
    let out = run_live(
        &plan_of(&scenario(2, "200ms", "", &latency_configs())),
        true,
    );
    assert_hedged_arithmetic(&out.result.configs, 20);
    // Every call's copy 1 answered, copy 2 closed.
    for row in out.attempts.iter().filter(|r| r.config == "hedged") {
        let want = match row.attempt {
            1 => "ok",
            _ => "cancelled",
        };
        assert_eq!(row.outcome, want, "{row:?}");
    }
}

/// Answers that fail at once (503 in 1 ms) never reach a per-try timeout: Envoy's hedging
/// is then Envoy's retry, copy for copy (2 attempts a call, the retry no hedge), in both
/// engines' counts.
#[test]
fn without_a_slow_answer_envoy_hedging_retries_as_envoy_does() {
    let faults = "[[faults]]\nkind = \"status\"\nstatus = 503\nat = \"0s\"\nfor = \"5s\"\n";
    let configs = [
        config("hedged", "envoy-hedging", 50),
        config("retried", "envoy", 50),
    ]
    .concat();
    let text = scenario(5, "1ms", faults, &configs);
    let sim = sim_run(&text);
    let live = run_live(&plan_of(&text), true).result.configs;
    for configs in [&sim, &live] {
        let (h, r) = (
            config_named(configs, "hedged"),
            config_named(configs, "retried"),
        );
        let what = format!("{h:#?}\n{r:#?}");
        assert_eq!(h.attempts, 2 * h.upstream_requests, "{what}");
        assert_eq!(
            (
                h.upstream_requests,
                h.attempts,
                h.failures,
                h.downstream_arrivals
            ),
            (
                r.upstream_requests,
                r.attempts,
                r.failures,
                r.downstream_arrivals
            ),
            "{what}"
        );
        assert_eq!((h.hedges_sent, h.hedges_cancelled), (0, 0), "{what}");
    }
}

/// Values Envoy's hedging cannot run with are refused at `check`, naming file, line and
/// field.
#[test]
fn bad_per_try_hedging_values_are_refused_naming_file_line_and_field() {
    let dir = support::process::tmp_dir("hedging-per-try-check");
    for (lines, field) in [
        (
            "preset = \"envoy\"\nhedge_on_per_try_timeout = true",
            "per_try_timeout",
        ),
        (
            "preset = \"envoy-hedging\"\nbudget = { kind = \"ratio\", ratio = 0.1 }",
            "budget",
        ),
        (
            "preset = \"envoy-hedging\"\nmax_attempts = 65",
            "max_attempts",
        ),
        (
            "preset = \"grpc-hedging\"\nhedge_on_per_try_timeout = true\nper_try_timeout = \"1s\"",
            "hedge_on_per_try_timeout",
        ),
        (
            "preset = \"envoy-hedging\"\nbreaker = { failure_threshold = 5 }",
            "breaker",
        ),
    ] {
        let text = support::one_config_scenario("h", lines);
        support::process::check_refuses(&dir, "bad.toml", &text, "bad.toml:1", field);
    }
}

/// `check --explain` says how each hedging config sends its copies.
#[test]
fn check_explain_says_how_each_config_hedges() {
    let path = support::repo_root().join("scenarios/hedging-latency-spike.toml");
    let o = support::process::succeed(
        support::process::bin()
            .args(["check", "--explain"])
            .arg(&path),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let section = |name: &str| -> String {
        let from = text
            .find(&format!("{name} (preset"))
            .unwrap_or_else(|| panic!("{text}"));
        text[from..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect()
    };
    assert!(
        section("envoy-hedging-100ms").contains("hedging: on the per-try timeout (Envoy)"),
        "{text}"
    );
    assert!(
        section("grpc-hedging-100ms").contains("hedging: up to 3 copies, 100ms apart"),
        "{text}"
    );
    assert!(!section("envoy-100ms").contains("hedging:"), "{text}");
}

mod policy {
    //! The rules answer by answer, through the policy's public API.

    use std::time::Duration;
    use stormrig::policy::{
        preset, AttemptOutcome, GiveUpReason, HedgeDecision, HedgeDue, Now, Permit, RequestState,
        Response, RetryClient,
    };

    fn at(ms: u64) -> Now {
        Now::virtual_at(Duration::from_millis(ms))
    }

    /// `envoy-hedging` with a 50 ms per-try timeout, `max_attempts` copies in all and at most
    /// `max_retries` retries at once.
    fn client(max_attempts: u32, max_retries: u32) -> RetryClient {
        let mut c = preset("envoy-hedging").unwrap();
        c.per_try_timeout = Some(Duration::from_millis(50));
        c.max_attempts = max_attempts;
        c.budget = stormrig::policy::BudgetConfig::Envoy(stormrig::policy::budget::EnvoyConfig {
            budget_percent: None,
            min_retry_concurrency: 3,
            max_retries,
        });
        c.validate().unwrap();
        RetryClient::new(&c)
    }

    fn rng() -> rand::rngs::mock::StepRng {
        // Every draw 0: a backoff of zero.
        rand::rngs::mock::StepRng::new(0, 0)
    }

    fn status(code: u16) -> AttemptOutcome<'static> {
        AttemptOutcome::Response(Response::status(code))
    }

    fn sent(p: Permit) -> (u32, Option<Duration>) {
        match p {
            Permit::Send {
                attempt, timeout, ..
            } => (attempt, timeout),
            other => panic!("expected a copy, got {other:?}"),
        }
    }

    fn due(c: &mut RetryClient, now: Now, req: &mut RequestState) -> HedgeDue {
        c.hedge_due(now, req, &mut rng())
    }

    fn answer(
        c: &mut RetryClient,
        now: Now,
        req: &mut RequestState,
        attempt: u32,
        outcome: &AttemptOutcome<'_>,
    ) -> HedgeDecision {
        c.on_hedge_outcome(now, req, attempt, outcome, &mut rng())
    }

    /// Starts a call and sends its first copy at `t0`: the per-try timer armed.
    fn first(c: &mut RetryClient, t0: u64) -> RequestState {
        let mut req = c.start(at(t0), "GET", None);
        let (n, timeout) = sent(c.before_attempt(at(t0), &mut req));
        assert_eq!(n, 1);
        // The per-try timeout only sends the next copy: the copy itself waits for the
        // route timeout (the preset's 15 s deadline).
        assert_eq!(timeout, Some(Duration::from_secs(15)));
        assert_eq!(
            c.arm_hedge(at(t0), &mut req),
            Some(Duration::from_millis(50))
        );
        req
    }

    #[test]
    fn a_per_try_timeout_sends_a_hedge_and_a_marked_copys_failure_is_dropped() {
        let mut c = client(2, 3);
        let mut req = first(&mut c, 0);
        assert_eq!(due(&mut c, at(49), &mut req), HedgeDue::Idle);
        // Backoff 0: the hedge goes at once, copy 1 still in flight.
        let HedgeDue::Send(p) = due(&mut c, at(50), &mut req) else {
            panic!("no hedge at the per-try timeout");
        };
        assert_eq!(sent(p).0, 2);
        assert!(RetryClient::copy_is_hedge(&req, 2));
        assert!(!RetryClient::copy_is_hedge(&req, 1));
        assert_eq!(RetryClient::hedges_sent(&req), 1);
        let _ = c.arm_hedge(at(50), &mut req);
        // Copy 1 was retried already: its 503 is dropped while copy 2 may still answer.
        let d = answer(&mut c, at(60), &mut req, 1, &status(503));
        assert!(matches!(d, HedgeDecision::Await { .. }), "{d:?}");
        let d = answer(&mut c, at(70), &mut req, 2, &status(200));
        assert_eq!(d, HedgeDecision::Success);
        c.finish(at(70), req);
    }

    #[test]
    fn an_unmarked_copys_failure_is_retried_and_that_retry_is_no_hedge() {
        let mut c = client(3, 3);
        let mut req = first(&mut c, 0);
        let d = answer(&mut c, at(10), &mut req, 1, &status(503));
        assert!(matches!(d, HedgeDecision::SendNow { .. }), "{d:?}");
        let (n, _) = sent(c.hedge_permit(at(10), &mut req).unwrap());
        assert_eq!(n, 2);
        assert!(!RetryClient::copy_is_hedge(&req, 2));
        // Copy 1 answered before its per-try timeout: that timer is void.
        assert_eq!(
            c.arm_hedge(at(10), &mut req),
            Some(Duration::from_millis(50))
        );
        assert_eq!(due(&mut c, at(50), &mut req), HedgeDue::Idle);
        let HedgeDue::Send(p) = due(&mut c, at(60), &mut req) else {
            panic!("no hedge at copy 2's per-try timeout");
        };
        assert_eq!(sent(p).0, 3);
        assert!(RetryClient::copy_is_hedge(&req, 3));
        // A non-retryable answer from the marked copy is the call's.
        let d = answer(&mut c, at(70), &mut req, 2, &status(404));
        assert!(
            matches!(
                d,
                HedgeDecision::GiveUp {
                    reason: GiveUpReason::NonRetryable,
                    ..
                }
            ),
            "{d:?}"
        );
        c.finish(at(70), req);
    }

    /// Envoy takes a retry off the request's allowance before asking the retry circuit
    /// breaker: a hedge the breaker refused still spent the call's one retry, so the
    /// copy's later 503 is final although the breaker has room again by then.
    #[test]
    fn a_retry_the_circuit_breaker_refused_still_spends_the_allowance() {
        let mut c = client(2, 1);
        let mut a = first(&mut c, 0);
        let mut b = first(&mut c, 0);
        // Call a's hedge holds the one retry there is.
        assert!(matches!(due(&mut c, at(50), &mut a), HedgeDue::Send(_)));
        // Call b's per-try timeout: refused (overflow), its copy goes on unmarked.
        assert_eq!(
            due(&mut c, at(50), &mut b),
            HedgeDue::Refused(GiveUpReason::BudgetRefused)
        );
        assert_eq!(c.budget_level(), Some(0.0));
        // Call a ends: its retry is released.
        let d = answer(&mut c, at(60), &mut a, 1, &status(200));
        assert_eq!(d, HedgeDecision::Success);
        c.finish(at(60), a);
        assert_eq!(c.budget_level(), Some(1.0));
        // b's 503 asks for a retry: none left.
        let d = answer(&mut c, at(70), &mut b, 1, &status(503));
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
        c.finish(at(70), b);
    }
}
