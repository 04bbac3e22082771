//! Hedged calls on real loopback sockets: copies sent at the hedging delay, the first
//! answer taken, the others closed (an HTTP/1.1 copy's connection, an HTTP/2 copy's
//! stream), every copy counted at both ends to the request; the same scenario in virtual
//! time gives the same counts, copy for copy, where timing decides nothing.

use std::collections::BTreeSet;

use crate::support::{config_named, plan_of, run_live};
use stormrig::metrics::{AttemptRow, ConfigSummary};
use stormrig::sim::{self, SimOptions};

/// 20 calls a second for 2 s against a target that takes 200 ms over each (constant, 64
/// slots of which about 12 are ever busy), through `configs`; `wire` goes in `[target]`
/// (and a gRPC call in `[load]` when `grpc`).
fn slow_target(wire: &str, grpc: bool, configs: &str) -> String {
    let call = match grpc {
        true => "grpc = { service = \"stormrig.Test\", method = \"Get\", message = \"hi\" }",
        false => "",
    };
    format!(
        r#"name = "hedging-live"
seed = 1
duration = "2s"
drain = "5s"

[load]
kind = "constant"
rate = 20.0
{call}

[target]
builtin = "default"
{wire}

[target.service]
service_time = {{ kind = "constant", value = "200ms" }}

{configs}"#
    )
}

/// 3 copies, 50 ms apart: copies at 0, 50 and 100 ms, each at least 50 ms away from the
/// first answer (~200 ms), so scheduling noise of a few ms decides nothing.
const THREE_AT_50MS: &str = "[[configs]]\nname = \"d50\"\npreset = \"grpc-hedging\"\nhedging = { max_attempts = 3, delay = \"50ms\" }\n";

const CALLS: u64 = 40;

/// The A6 arithmetic of `tests/suite/hedging.rs`'s simulator test, per call: copies 1, 2
/// and 3 reach the target, copy 1 answers first (200 ms) and wins, copies 2 and 3 are
/// closed. So 3 arrivals per call, 2 hedges sent, cancelled and wasted.
fn assert_a6_arithmetic(c: &ConfigSummary) {
    let what = format!("{c:#?}");
    assert_eq!(c.upstream_requests, CALLS, "{what}");
    assert_eq!(c.successes, CALLS, "{what}");
    assert_eq!(c.attempts, 3 * CALLS, "{what}");
    // The target's own count, to the request.
    assert_eq!(c.downstream_arrivals, c.attempts, "{what}");
    assert_eq!(c.hedges_sent, 2 * CALLS, "{what}");
    assert_eq!(c.hedges_cancelled, 2 * CALLS, "{what}");
    assert_eq!(c.hedges_wasted, 2 * CALLS, "{what}");
    assert_eq!(c.attempts_by_outcome.get("ok"), Some(&CALLS), "{what}");
    // Every copy has one outcome, or was closed in flight.
    let outcomes: u64 = c.attempts_by_outcome.values().sum();
    assert_eq!(outcomes + c.hedges_cancelled, c.attempts, "{what}");
}

/// Per call: copy 1 answered `ok`, copies 2 and 3 `cancelled`, nothing else.
fn assert_rows_per_call(rows: &[AttemptRow]) {
    let got: BTreeSet<(u64, u32, &str)> = rows
        .iter()
        .map(|r| (r.request, r.attempt, r.outcome))
        .collect();
    assert_eq!(got.len(), rows.len(), "one row per copy: {rows:?}");
    let want: BTreeSet<(u64, u32, &str)> = (0..CALLS)
        .flat_map(|id| [(id, 1, "ok"), (id, 2, "cancelled"), (id, 3, "cancelled")])
        .collect();
    assert_eq!(got, want);
}

#[test]
fn live_hedges_over_http1_follow_a6_arithmetic_and_close_their_connections() {
    let plan = plan_of(&slow_target("", false, THREE_AT_50MS));
    let out = run_live(&plan, true);
    let c = config_named(&out.result.configs, "d50");
    assert_a6_arithmetic(c);
    assert_rows_per_call(&out.attempts);
    // A closed HTTP/1.1 copy takes its connection with it: never reused, so each
    // cancelled copy had a connection of its own.
    assert!(
        out.connections[0] >= c.hedges_cancelled,
        "{} connections for {} cancelled copies",
        out.connections[0],
        c.hedges_cancelled
    );
}

#[test]
fn live_hedges_over_h2c_and_grpc_follow_a6_arithmetic_and_reset_only_their_streams() {
    for grpc in [false, true] {
        let plan = plan_of(&slow_target("protocol = \"h2c\"", grpc, THREE_AT_50MS));
        let out = run_live(&plan, true);
        let c = config_named(&out.result.configs, "d50");
        assert_a6_arithmetic(c);
        assert_rows_per_call(&out.attempts);
        // A closed HTTP/2 copy resets its stream; the connection carries on.
        assert!(
            out.connections[0] < c.hedges_cancelled,
            "grpc {grpc}: {} connections for {} cancelled copies",
            out.connections[0],
            c.hedges_cancelled
        );
    }
}

/// The same scenario in both engines, with copies 50 ms or more from any answer: every
/// seed-fixed figure and every attempt-log row (request, copy, outcome) are equal.
#[test]
fn live_and_simulated_hedging_agree_copy_for_copy() {
    let configs = format!(
        "{THREE_AT_50MS}\n[[configs]]\nname = \"d120\"\npreset = \"grpc-hedging\"\nhedging = {{ max_attempts = 3, delay = \"120ms\" }}\n"
    );
    let plan = plan_of(&slow_target("", false, &configs));
    let live = run_live(&plan, true);
    let opts = SimOptions {
        attempt_log: true,
        ..SimOptions::default()
    };
    let sim = sim::run(&plan, &opts).unwrap();
    for name in ["d50", "d120"] {
        let (l, s) = (
            config_named(&live.result.configs, name),
            config_named(&sim.result.configs, name),
        );
        let figures = |c: &ConfigSummary| {
            (
                c.upstream_requests,
                c.successes,
                c.failures,
                c.attempts,
                c.downstream_arrivals,
                (c.hedges_sent, c.hedges_cancelled, c.hedges_wasted),
                c.attempts_by_outcome.clone(),
            )
        };
        assert_eq!(figures(l), figures(s), "{name}: live {l:#?}\nsim {s:#?}");
        let rows = |rows: &[AttemptRow]| -> BTreeSet<(u64, u32, &'static str)> {
            rows.iter()
                .filter(|r| r.config == name)
                .map(|r| (r.request, r.attempt, r.outcome))
                .collect()
        };
        assert_eq!(rows(&live.attempts), rows(&sim.attempts), "{name}");
    }
    // d120: copies at 0 and 120 ms only.
    let d120 = config_named(&live.result.configs, "d120");
    assert_eq!(d120.downstream_arrivals, 2 * CALLS, "{d120:#?}");
}

/// Calls whose copies are all still at the target when the drain ends (5 s service, a
/// 300 ms drain): each copy is counted `unfinished` and is still an arrival; none is
/// counted cancelled, as no call ended.
#[test]
fn hedged_copies_held_past_the_drain_are_unfinished_arrivals() {
    let text = r#"name = "hedging-drain"
seed = 1
duration = "1s"
drain = "300ms"

[load]
kind = "constant"
rate = 10.0

[target]
builtin = "default"

[target.service]
concurrency = 1000
service_time = { kind = "constant", value = "5s" }

[[configs]]
name = "held"
preset = "grpc-hedging"
hedging = { max_attempts = 2, delay = "50ms" }
"#;
    let out = run_live(&plan_of(text), true);
    let c = config_named(&out.result.configs, "held");
    let what = format!("{c:#?}");
    // 10 calls, each with its second copy sent 50 ms in, long before the run's end.
    assert_eq!(c.upstream_requests, 10, "{what}");
    assert_eq!(c.attempts, 20, "{what}");
    assert_eq!(c.downstream_arrivals, 20, "{what}");
    assert_eq!(c.attempts_by_outcome.get("unfinished"), Some(&20), "{what}");
    assert_eq!((c.hedges_sent, c.hedges_cancelled), (10, 0), "{what}");
    let unfinished = out
        .attempts
        .iter()
        .filter(|r| r.outcome == "unfinished" && r.sent_s.is_some())
        .count();
    assert_eq!(unfinished, 20);
}
