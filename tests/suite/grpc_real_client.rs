//! The `grpc` preset held against the gRPC project's own client: grpcio (C core) with a
//! service config holding the preset's retry policy and retry throttling, and stormrig's
//! `grpc` config, each making the same sequential unary calls against its own built-in
//! target with the same seeded fault timeline. Counts come from the targets (arrivals per
//! call id), never from either client.
//!
//! The timeline is scoped by path, not by time, so that which call fails never depends on
//! how fast the calls go: `/stormrig.Test/Unavailable` is always answered UNAVAILABLE
//! (trailers-only, HTTP 200), `/stormrig.Test/Pushback` the same with
//! `grpc-retry-pushback-ms: 300`, `/stormrig.Test/Ok` is served. What depends on timing
//! (the backoff delays drawn from jitter) is not compared; the pushback delay is checked as
//! a floor measured at the target.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use hyper::header::HeaderMap;
use hyper::Method;

use crate::support;
use stormrig::live::clock::Epoch;
use stormrig::live::driver::{ConfigRuntime, RequestTemplate, RuntimeSpec};
use stormrig::live::{grpc, http};
use stormrig::scenario::{Protocol, Target};
use stormrig::server::{self, Listen, TargetConfig, TargetHandle};

const SERVICE: &str = "stormrig.Test";
const PUSHBACK: Duration = Duration::from_millis(300);

fn plan() -> stormrig::plan::Plan {
    support::plan_of(&format!(
        r#"
name = "grpc-real-client"
seed = 7
duration = "10m"

[load]
kind = "constant"
rate = 1.0
grpc = {{ service = "{SERVICE}", method = "Ok" }}

[target]
builtin = "default"
protocol = "h2c"

[[faults]]
kind = "grpc-status"
grpc_status = "UNAVAILABLE"
path = "/{SERVICE}/Unavailable"
at = "0s"
for = "10m"

[[faults]]
kind = "grpc-status"
grpc_status = "UNAVAILABLE"
pushback = "{}ms"
path = "/{SERVICE}/Pushback"
at = "0s"
for = "10m"

[[configs]]
preset = "grpc"
"#,
        PUSHBACK.as_millis()
    ))
}

/// A built-in target with the plan's model and timeline, over h2c, logging arrivals.
async fn target(plan: &stormrig::plan::Plan, epoch: &Epoch) -> TargetHandle {
    let sc = &plan.scenario;
    let Target::Builtin { model, .. } = &sc.target else {
        unreachable!("the plan's target is built in")
    };
    let cfg = TargetConfig {
        model: model.clone(),
        faults: sc.faults.clone(),
        seed: sc.seed,
        dedup: None,
    };
    let listen = Listen {
        protocol: Protocol::H2c,
        tls: None,
    };
    let local = "127.0.0.1:0".parse().unwrap();
    let t = server::start_listening(local, cfg, epoch.mono, listen)
        .await
        .unwrap();
    t.log_arrivals();
    t
}

/// Arrival times at `t` per call id, for the ids `first..first + n`.
fn per_call(t: &TargetHandle, first: u64, n: usize) -> Vec<Vec<Duration>> {
    let mut by_id: BTreeMap<u64, Vec<Duration>> = BTreeMap::new();
    for (id, at) in t.arrivals_logged() {
        by_id.entry(id).or_default().push(at);
    }
    let calls: Vec<Vec<Duration>> = (first..first + n as u64)
        .map(|id| by_id.remove(&id).unwrap_or_default())
        .collect();
    assert!(by_id.is_empty(), "arrivals of no call: {by_id:?}");
    calls
}

/// The gRPC client makes `methods` in order against `t`; the codes it reports.
fn python_calls(t: &TargetHandle, first: u64, methods: &[&str]) -> Vec<String> {
    let args = [
        t.addr().to_string(),
        first.to_string(),
        SERVICE.to_string(),
        methods.join(","),
    ];
    support::python::json_lines("grpc_client.py", &args)
        .into_iter()
        .map(|v| v["code"].as_str().unwrap().to_string())
        .collect()
}

/// stormrig's `grpc` config makes `methods` in order against `t` (one client, one
/// connection, its retry state carried from call to call); the codes, gRPC-style.
async fn stormrig_calls(
    plan: &stormrig::plan::Plan,
    t: &TargetHandle,
    epoch: &Epoch,
    first: u64,
    methods: &[&str],
) -> Vec<String> {
    let planned = &plan.configs[0];
    let rt = ConfigRuntime::new(RuntimeSpec {
        draw_key: stormrig::draws::config_key(&planned.name),
        name: &planned.name,
        config: &planned.config,
        clients: NonZeroU32::MIN,
        base_uri: format!("http://{}", t.addr()),
        max_in_flight: 1,
        max_connections: None,
        seed: plan.scenario.seed,
        propagate_deadline: false,
        attempt_log: false,
        wire: http::Dialer {
            protocol: Protocol::H2c,
            tls: None,
        },
        trace: None,
        classes: &[],
        class_policies: &[],
    });
    let mut codes = Vec::new();
    for (i, m) in methods.iter().enumerate() {
        let mut headers = HeaderMap::new();
        grpc::call_headers(&mut headers);
        let tmpl = RequestTemplate {
            method: Method::POST,
            path: format!("/{SERVICE}/{m}"),
            headers,
            body: grpc::frame(b""),
            grpc: true,
            class: None,
            tokens: None,
        };
        let done = rt
            .drive(epoch, &tmpl, first + i as u64, epoch.elapsed(), None)
            .await;
        let code = match done.reply.as_ref().map(grpc::to_outcome) {
            Some(stormrig::policy::AttemptOutcome::Response(r)) => {
                r.grpc_status.map(|s| s.name().to_string())
            }
            _ => None,
        };
        codes.push(code.unwrap_or_else(|| "NO REPLY".into()));
    }
    codes
}

/// gRFC A6's throttling, written out independently of stormrig's implementation: milli-
/// tokens from 10000, -1000 per failed attempt, a retry only above 5000, +100 per success.
fn a6_attempts(methods: &[&str]) -> Vec<usize> {
    let mut tokens: i64 = 10_000;
    methods
        .iter()
        .map(|m| {
            if *m == "Ok" {
                tokens = (tokens + 100).min(10_000);
                return 1;
            }
            let mut attempts = 0;
            loop {
                attempts += 1;
                tokens = (tokens - 1000).max(0);
                if attempts == 4 || tokens <= 5000 {
                    return attempts;
                }
            }
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    crate::support::two_worker_runtime()
}

#[test]
fn throttling_refuses_and_resumes_at_the_same_calls_as_the_real_grpc_client() {
    // UNAVAILABLE until the bucket is at half, successes to fill it above half again,
    // failures that get one retry then none, successes, and a failure retried in full.
    let mut methods = vec!["Unavailable"; 5];
    methods.extend(["Ok"; 45]);
    methods.extend(["Unavailable"; 3]);
    methods.extend(["Ok"; 60]);
    methods.push("Unavailable");
    let expected = a6_attempts(&methods);
    let plan = plan();
    let rt = runtime();
    let epoch = Epoch::start();
    let (py_target, sr_target) =
        rt.block_on(async { (target(&plan, &epoch).await, target(&plan, &epoch).await) });

    let py_codes = python_calls(&py_target, 1, &methods);
    let sr_codes = rt.block_on(stormrig_calls(&plan, &sr_target, &epoch, 1, &methods));
    let want: Vec<String> = methods
        .iter()
        .map(|m| if *m == "Ok" { "OK" } else { "UNAVAILABLE" }.to_string())
        .collect();
    assert_eq!(py_codes, want, "the real client's codes");
    assert_eq!(sr_codes, want, "stormrig's codes");

    let count = |t: &TargetHandle| -> Vec<usize> {
        per_call(t, 1, methods.len()).iter().map(Vec::len).collect()
    };
    let py = count(&py_target);
    let sr = count(&sr_target);
    assert_eq!(py, expected, "grpcio against gRFC A6's arithmetic");
    assert_eq!(sr, py, "stormrig's grpc config against grpcio, per call");
    assert_eq!(
        sr_target.stats().arrivals,
        py_target.stats().arrivals,
        "in total"
    );
    // The shape the comparison is about: full retries, then the first refusal at call 2,
    // one retry again after 45 successes, and full retries after 60 more.
    assert_eq!(&sr[..5], &[4, 1, 1, 1, 1]);
    assert_eq!(&sr[50..53], &[2, 1, 1]);
    assert_eq!(sr[113], 4);
    rt.block_on(async {
        py_target.shutdown().await;
        sr_target.shutdown().await;
    });
}

#[test]
fn pushback_is_honoured_by_both_as_measured_at_the_target() {
    let plan = plan();
    let rt = runtime();
    let epoch = Epoch::start();
    let (py_target, sr_target) =
        rt.block_on(async { (target(&plan, &epoch).await, target(&plan, &epoch).await) });
    let methods = ["Pushback"];
    assert_eq!(python_calls(&py_target, 1, &methods), ["UNAVAILABLE"]);
    assert_eq!(
        rt.block_on(stormrig_calls(&plan, &sr_target, &epoch, 1, &methods)),
        ["UNAVAILABLE"]
    );
    for (who, t) in [("grpcio", &py_target), ("stormrig", &sr_target)] {
        let calls = per_call(t, 1, 1);
        let arrivals = &calls[0];
        // The bucket is full: all 4 attempts, each after the advertised pushback (the
        // backoff alone would be 80–120 ms for the first retry).
        assert_eq!(arrivals.len(), 4, "{who}: {arrivals:?}");
        let gaps: Vec<_> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
        eprintln!("{who}: gaps between attempts at the target {gaps:?}");
        for w in arrivals.windows(2) {
            assert!(w[1] - w[0] >= PUSHBACK, "{who}: {arrivals:?}");
        }
    }
    rt.block_on(async {
        py_target.shutdown().await;
        sr_target.shutdown().await;
    });
}
