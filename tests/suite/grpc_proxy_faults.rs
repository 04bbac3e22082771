//! Every fault the proxy applies to a gRPC call (latency, `grpc-status`, reset, hang,
//! lost-response), in front of the gRPC project's own server (grpcio,
//! `tests/python/grpc_server.py`), held against the built-in target given the same faults
//! and seed: the real server counts exactly the calls the proxy forwarded, per config, and
//! each config's outcomes match the built-in run's within the timed-count tolerance (a
//! window's edges are decided by when each call arrives, which two live runs share only
//! to a few calls).

use stormrig::report::diff;

use crate::support::grpc_server::GrpcServer;
use crate::support::{self, config_named};

/// 3 s of 100 unary calls/s over h2c with one fault per half second, in this order:
/// latency, UNAVAILABLE, reset, hang, lost-response (forwarded, its answer replaced by 504),
/// then nothing. Every config has a per-try timeout, so a held call ends. The latency stays
/// below the per-try timeout: a call the proxy forwards with its deadline already spent
/// (`grpc-timeout: 1n`) is refused by grpcio's core before its handler, which counts calls,
/// ever sees it.
fn storm(target: &str) -> String {
    format!(
        r#"
name = "grpc-proxy-faults"
seed = 7
duration = "3s"

[load]
kind = "constant"
rate = 100.0
grpc = {{ service = "stormrig.Demo", method = "Get", message = "" }}

[target]
{target}
protocol = "h2c"

[[faults]]
kind = "latency"
add = {{ kind = "constant", value = "50ms" }}
at = "0.25s"
for = "0.5s"

[[faults]]
kind = "grpc-status"
grpc_status = "UNAVAILABLE"
pushback = "20ms"
at = "0.75s"
for = "0.5s"

[[faults]]
kind = "reset"
at = "1.25s"
for = "0.5s"

[[faults]]
kind = "hang"
at = "1.75s"
for = "0.5s"
probability = 0.5

[[faults]]
kind = "lost-response"
status = 504
at = "2.25s"
for = "0.5s"

[[configs]]
preset = "no-retry"
per_try_timeout = "100ms"

[[configs]]
name = "naive"
preset = "naive"
max_attempts = 3
per_try_timeout = "100ms"
retry_on = {{ grpc_statuses = ["unavailable", "deadline-exceeded"] }}

[[configs]]
preset = "grpc"
per_try_timeout = "100ms"
"#
    )
}

#[test]
fn the_proxys_grpc_faults_before_a_real_server_match_the_builtin_target() {
    let mut server = GrpcServer::start();
    let url = format!("url = \"http://{}\"", server.addr);
    let through = support::run_live(&support::plan_of(&storm(&url)), false);
    let calls = server.calls();
    println!("grpcio's calls: {calls:?}");
    let builtin = support::run_live(&support::plan_of(&storm("builtin = \"default\"")), false);
    let tol = diff::live_default(diff::Class::Timed);
    let near = |a: u64, b: u64| {
        let slack = (tol.relative * a.max(b) as f64).max(tol.absolute);
        (a as f64 - b as f64).abs() <= slack
    };
    for c in &through.result.configs {
        let name = &c.name;
        // Counted at each end: what the client sent reached the proxy, and what the proxy
        // forwarded is what grpcio received, to the call.
        assert_eq!(c.attempts, c.downstream_arrivals, "{name}");
        let real = calls.get(name.as_str()).map_or(0, |n| n.calls);
        assert_eq!(real, c.target_forwarded, "{name}: grpcio's calls");
        // Status, reset and hang faults are answered at the proxy, never forwarded; the
        // lost-response fault forwards and then drops the answer.
        assert!(c.target_forwarded < c.attempts, "{name}");
        assert!(c.target_forwarded > c.successes, "{name}: lost responses");
        assert_eq!(c.unfinished, 0, "{name}: every call ended");

        let b = config_named(&builtin.result.configs, name);
        println!(
            "{name}: through the proxy {:?} (forwarded {}), built-in {:?}",
            c.attempts_by_outcome, c.target_forwarded, b.attempts_by_outcome
        );
        let kinds: std::collections::BTreeSet<&String> = c
            .attempts_by_outcome
            .keys()
            .chain(b.attempts_by_outcome.keys())
            .collect();
        // Each fault shows as its own outcome, through the proxy as without it.
        assert!(kinds.len() >= 4, "{name}: {kinds:?}");
        for k in kinds {
            let (x, y) = (
                c.attempts_by_outcome.get(k).copied().unwrap_or(0),
                b.attempts_by_outcome.get(k).copied().unwrap_or(0),
            );
            assert!(
                near(x, y),
                "{name} {k}: {x} through the proxy, {y} built-in"
            );
        }
        for (what, x, y) in [
            ("attempts", c.attempts, b.attempts),
            ("successes", c.successes, b.successes),
            ("failures", c.failures, b.failures),
            ("budget refusals", c.budget_refusals, b.budget_refusals),
        ] {
            assert!(
                near(x, y),
                "{name} {what}: {x} through the proxy, {y} built-in"
            );
        }
    }
}
