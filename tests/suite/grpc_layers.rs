//! gRPC calls through `[[topology]]` layers, live against the built-in target and in the
//! simulator: every hop relays the call over HTTP/2 in clear and reads the reply by its
//! `grpc-status` (every answer here is HTTP 200, so a hop that read HTTP statuses would
//! retry nothing), counts per hop are exact (attempts at one hop are the arrivals at the
//! next), and a layer inherits the call's `grpc-timeout` as its deadline.

use stormrig::metrics::ConfigSummary;
use stormrig::sim::{self, SimOptions};

use crate::support::{self, hop_counts as counts, layer};

/// A gRPC storm of 20 calls/s for half a second over h2c against the built-in target, with
/// `faults` over the whole run, then `extra` (layers, configs).
fn grpc_storm(name: &str, faults: &str, extra: &str) -> String {
    format!(
        r#"
name = "{name}"
seed = 11
duration = "60s"
drain = "10s"

[load]
kind = "steps"
steps = [{{ at = "0s", rate = 20.0 }}, {{ at = "500ms", rate = 0.0 }}]
grpc = {{ service = "stormrig.Demo", method = "Get", message = "" }}

[target]
builtin = "default"
protocol = "h2c"
service = {{ concurrency = 10000, queue = 10000 }}
{faults}
{extra}
"#
    )
}

const UNAVAILABLE: &str = "[[faults]]\nkind = \"grpc-status\"\ngrpc_status = \"UNAVAILABLE\"\npushback = \"1ms\"\nat = \"0s\"\nfor = \"60s\"\n";

const THREE_ON_UNAVAILABLE: &str =
    r#"{ preset = "naive", max_attempts = 3, retry_on = { grpc_statuses = ["unavailable"] } }"#;

/// Per hop (arrivals, attempts, retries), then the target's arrivals.
fn figures(c: &ConfigSummary) -> Vec<(u64, u64, u64)> {
    let mut v: Vec<_> = c.layers.iter().map(counts).collect();
    v.push((c.downstream_arrivals, 0, 0));
    v
}

#[test]
fn two_grpc_layers_retrying_unavailable_give_27x_exactly_live_and_simulated() {
    let text = grpc_storm(
        "grpc-layers-27",
        UNAVAILABLE,
        &format!(
            "{}{}\n[[configs]]\nname = \"naive\"\npreset = \"naive\"\nmax_attempts = 3\nretry_on = {{ grpc_statuses = [\"unavailable\"] }}\n",
            layer("edge", THREE_ON_UNAVAILABLE),
            layer("backend", THREE_ON_UNAVAILABLE),
        ),
    );
    let plan = support::plan_of(&text);
    let live = support::run_live(&plan, false);
    let simulated = sim::run(&plan, &SimOptions::default()).unwrap();
    let c = &live.result.configs[0];
    let s = &simulated.result.configs[0];
    println!("live {:?}\nsim  {:?}", figures(c), figures(s));
    let u = c.upstream_requests;
    assert!(u >= 8, "enough calls: {u}");
    assert_eq!(c.unfinished, 0);
    assert_eq!(c.failures, u, "every call ends UNAVAILABLE");
    assert_eq!(
        c.failures_by_reason.values().sum::<u64>(),
        u,
        "{:?}",
        c.failures_by_reason
    );
    let names: Vec<_> = c.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["client", "edge", "backend"]);
    // Each hop retries the gRPC status it names, and what one hop sent the next received.
    assert_eq!(counts(&c.layers[0]), (u, 3 * u, 2 * u));
    assert_eq!(counts(&c.layers[1]), (3 * u, 9 * u, 6 * u));
    assert_eq!(counts(&c.layers[2]), (9 * u, 27 * u, 18 * u));
    assert_eq!(c.downstream_arrivals, 27 * u);
    // No timing decides a count here: the simulator agrees to the call.
    assert_eq!(figures(c), figures(s));
    assert_eq!(
        c.attempts_by_outcome, s.attempts_by_outcome,
        "the generator's outcomes are the same gRPC statuses"
    );
}

/// The generator's config gives each call 250 ms (`grpc-timeout`); the target takes 100 ms
/// to fail each try, and the layer would retry after 200 ms. A layer that inherited the
/// call's deadline gives up at once (its retry would start past it) and relays the failure
/// at about 100 ms; one that did not would wait, and the caller's own 250 ms would run out
/// first. Live and simulated alike.
#[test]
fn a_grpc_layer_inherits_the_calls_deadline() {
    let slow_unavailable = format!(
        "{UNAVAILABLE}[[faults]]\nkind = \"latency\"\nadd = {{ kind = \"constant\", value = \"100ms\" }}\nat = \"0s\"\nfor = \"60s\"\n"
    );
    let text = grpc_storm(
        "grpc-layer-deadline",
        &slow_unavailable,
        &format!(
            "{}\n[[configs]]\npreset = \"no-retry\"\nper_try_timeout = \"250ms\"\n",
            layer(
                "edge",
                r#"{ preset = "naive", max_attempts = 10, backoff = { kind = "constant", delay = "200ms" }, retry_on = { grpc_statuses = ["unavailable"] } }"#
            ),
        ),
    );
    let plan = support::plan_of(&text);
    let live = support::run_live(&plan, false);
    let simulated = sim::run(&plan, &SimOptions::default()).unwrap();
    for (engine, c) in [
        ("live", &live.result.configs[0]),
        ("sim", &simulated.result.configs[0]),
    ] {
        println!(
            "{engine} {:?} {:?} p99 {:?} ms",
            figures(c),
            c.attempts_by_outcome,
            c.latency_ms.p99
        );
        let u = c.upstream_requests;
        assert!(u >= 8, "{engine}: enough calls: {u}");
        let edge = &c.layers[1];
        assert_eq!(
            (edge.arrivals, edge.attempts),
            (u, u),
            "{engine}: one try each"
        );
        assert_eq!(c.downstream_arrivals, u, "{engine}");
        assert_eq!(c.failures, u, "{engine}");
        // Relayed before the caller's own timeout: the layer did not wait for its retry.
        assert!(
            c.latency_ms.p99 < 200.0,
            "{engine}: p99 {} ms",
            c.latency_ms.p99
        );
    }
}
