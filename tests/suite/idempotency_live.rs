//! Idempotency under a storm of lost responses, through the real live engine on loopback:
//! the shipped `payments-lost-responses` scenario, shortened to a few seconds. The fault
//! draws depend only on (seed, request, attempt), so the client side can recompute which
//! attempts were processed-then-lost and check the target's own counts against that exactly.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::support::config_named;
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Method;
use stormrig::headers;
use stormrig::live::clock::Epoch;
use stormrig::live::driver::{ConfigRuntime, RequestTemplate, RuntimeSpec};
use stormrig::live::{self, RunOptions};
use stormrig::plan::{self, Plan};
use stormrig::policy::{GiveUpReason, RetryConfigSpec};
use stormrig::scenario::timeline::{Action, FaultTimeline};
use stormrig::scenario::{LoadShape, Target};
use stormrig::server::{self, TargetConfig};
use tokio::sync::watch;

const AMOUNT: u64 = 100;

fn scenario_plan() -> Plan {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/payments-lost-responses.toml");
    let mut plan = plan::load(&path).unwrap_or_else(|e| panic!("{e}"));
    // A few seconds: 2 s at 50/s = 100 payments; both lost-response faults cover the whole
    // run (so a verdict does not depend on arrival time); drain long enough for 4 attempts
    // of 500 ms per-try timeouts.
    let sc = &mut plan.scenario;
    sc.duration = Duration::from_secs(2);
    sc.drain = Duration::from_secs(4);
    sc.load.shape = LoadShape::Constant { rate: 50.0 };
    for f in &mut sc.faults {
        f.at = Duration::ZERO;
        f.length = Duration::from_secs(60);
    }
    plan
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_responses_duplicate_only_unkeyed_post_retries() {
    let plan = scenario_plan();
    assert!(
        matches!(plan.scenario.target, Target::Builtin { dedup: Some(ref d), .. } if d.enabled)
    );
    let timeline = FaultTimeline::new(plan.scenario.faults.clone(), plan.scenario.seed);
    let lost = |request: u64, attempt: u32| {
        matches!(
            timeline
                .decide(Duration::from_secs(1), "/payments", request, attempt)
                .action,
            Action::LostResponse { .. }
        )
    };
    let max_attempts = plan
        .configs
        .iter()
        .find(|c| c.name == "naive-no-key")
        .unwrap()
        .config
        .max_attempts;

    let (_tx, rx) = watch::channel(false);
    let opts = RunOptions {
        attempt_log: true,
        progress: false,
        abort_when: None,
        ..Default::default()
    };
    let out = live::run(&plan, &opts, rx).await.expect("live run");
    let run = &out.result;
    assert!(!run.partial);

    // Attempts sent per (config, request), from the attempt log.
    let mut sent: BTreeMap<(&str, u64), u32> = BTreeMap::new();
    for row in &out.attempts {
        if row.outcome != "refused" {
            *sent.entry((row.config.as_str(), row.request)).or_default() += 1;
        }
    }
    let requests = |name: &str| -> Vec<(u64, u32)> {
        sent.iter()
            .filter(|((c, _), _)| *c == name)
            .map(|((_, r), n)| (*r, *n))
            .collect()
    };

    // ---- naive-no-key: every attempt is processed, so every retry is a second debit.
    let c = config_named(&run.configs, "naive-no-key");
    let u = c.upstream_requests;
    assert_eq!(u, 100);
    assert_eq!(c.unfinished, 0);
    let reqs = requests("naive-no-key");
    assert_eq!(reqs.len() as u64, u);
    let mut expect_dup = 0;
    let mut expect_extra = 0;
    let mut expect_all_lost = 0;
    for &(r, n) in &reqs {
        // The client kept trying exactly while the target lost the responses.
        let first_answered = (1..=max_attempts).find(|&a| !lost(r, a));
        assert_eq!(
            n,
            first_answered.unwrap_or(max_attempts),
            "request {r}: attempts sent"
        );
        if first_answered.is_none() {
            expect_all_lost += 1;
        }
        if n >= 2 {
            // An earlier attempt was processed, its response lost, and the request was sent again.
            expect_dup += 1;
        }
        expect_extra += u64::from(n - 1);
    }
    let i = &c.idempotency;
    println!(
        "naive-no-key: upstream {u}, attempts {}, executions {}, duplicates {}, extra {}, extra debited {}, successes {}, failures {:?}",
        c.attempts, i.executions, c.duplicate_executions, i.extra_executions, i.extra_debited, c.successes, c.failures_by_reason
    );
    assert!(expect_dup > 0, "the storm must cause duplicates");
    assert_eq!(
        c.duplicate_executions, expect_dup,
        "target == client-side count"
    );
    assert_eq!(i.extra_executions, expect_extra);
    assert_eq!(i.executions, c.attempts, "every attempt executed");
    assert_eq!(i.executions, u + expect_extra);
    assert_eq!(i.debited, i.executions * AMOUNT);
    assert_eq!(i.extra_debited, expect_extra * AMOUNT);
    assert_eq!(c.successes, u - expect_all_lost);
    assert_eq!(i.dedup_replays, 0, "no key, no replay");

    // ---- naive-with-key: the same retries, replayed by the target's dedup.
    let k = config_named(&run.configs, "naive-with-key");
    let ki = &k.idempotency;
    println!(
        "naive-with-key: upstream {}, attempts {}, executions {}, duplicates {}, replays {}, 409 {}, 422 {}, successes {}, failures {:?}",
        k.upstream_requests, k.attempts, ki.executions, k.duplicate_executions, ki.dedup_replays,
        ki.dedup_conflicts, ki.dedup_mismatches, k.successes, k.failures_by_reason
    );
    assert_eq!(k.upstream_requests, u);
    assert_eq!(k.unfinished, 0);
    assert_eq!(k.duplicate_executions, 0);
    assert_eq!(ki.extra_executions, 0);
    assert_eq!(ki.extra_debited, 0);
    assert_eq!(ki.executions, u, "each payment debited exactly once");
    assert_eq!(ki.debited, u * AMOUNT);
    assert_eq!(k.attempts, c.attempts, "same fault draws, same retries");
    assert_eq!(ki.dedup_replays, k.attempts - u, "every retry is a replay");
    assert_eq!((ki.dedup_conflicts, ki.dedup_mismatches), (0, 0));
    // The client still succeeds wherever a final attempt's response got through.
    assert_eq!(k.successes, u - expect_all_lost);
    assert_eq!(k.successes, c.successes);

    // ---- idempotent-only: never retries a POST that may have been processed.
    let s = config_named(&run.configs, "idempotent-only");
    let si = &s.idempotency;
    let first_lost = reqs.iter().filter(|(r, _)| lost(*r, 1)).count() as u64;
    println!(
        "idempotent-only: upstream {}, attempts {}, executions {}, duplicates {}, successes {}, failures {:?}",
        s.upstream_requests, s.attempts, si.executions, s.duplicate_executions, s.successes, s.failures_by_reason
    );
    assert_eq!(s.upstream_requests, u);
    assert_eq!(s.duplicate_executions, 0);
    assert_eq!(si.extra_executions, 0);
    assert_eq!(s.attempts, u);
    assert_eq!(s.retries, 0);
    assert_eq!(si.executions, u);
    assert_eq!(
        s.failures_by_reason.get("not-idempotent"),
        Some(&first_lost)
    );
    assert_eq!(s.failures, first_lost);
    assert_eq!(s.successes, u - first_lost);
}

/// Connect refused proves the request never reached the server: a POST is retried even by
/// a config that never retries a possibly-processed POST, and executes exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_refused_post_is_retried_without_duplicates() {
    let spec = RetryConfigSpec::from_toml(
        r#"
name = "post-safe"
max_attempts = 20
retry_non_idempotent = false
idempotency_key = false
backoff = { kind = "exponential", base = "20ms", multiplier = 2.0, cap = "40ms" }
jitter = { kind = "none" }
"#,
    )
    .expect("spec");
    let cfg = spec.resolve().expect("config");
    // A loopback port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let rt = Arc::new(ConfigRuntime::new(RuntimeSpec {
        draw_key: stormrig::draws::config_key("post-safe"),
        name: "post-safe",
        config: &cfg,
        clients: std::num::NonZeroU32::MIN,
        base_uri: format!("http://{addr}"),
        max_in_flight: 1000,
        max_connections: None,
        seed: 1,
        propagate_deadline: false,
        attempt_log: true,
        wire: Default::default(),
        trace: None,
        classes: &[],
        class_policies: &[],
    }));
    let mut hdrs = HeaderMap::new();
    hdrs.insert(
        HeaderName::from_static(headers::AMOUNT),
        HeaderValue::from(AMOUNT),
    );
    let tmpl = Arc::new(RequestTemplate {
        method: Method::POST,
        path: "/payments".into(),
        headers: hdrs,
        body: Bytes::from_static(b"{\"amount\":100}"),
        grpc: false,
        class: None,
        tokens: None,
    });
    let epoch = Epoch::start();

    // Nobody listens at all: every attempt is refused, and all of them are made.
    let fin = rt.drive(&epoch, &tmpl, 1000, Duration::ZERO, None).await;
    assert!(!fin.ok);
    assert_eq!(fin.reason, Some(GiveUpReason::MaxAttempts));

    // Ten payments start while the port is closed; the target comes up 150 ms later.
    const N: u64 = 10;
    let mut tasks = Vec::new();
    for id in 0..N {
        let (rt, tmpl) = (rt.clone(), tmpl.clone());
        tasks.push(tokio::spawn(async move {
            rt.drive(&epoch, &tmpl, id, epoch.elapsed(), None).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let t = server::start(
        addr,
        TargetConfig {
            model: Default::default(),
            faults: vec![],
            seed: 1,
            dedup: None,
        },
        epoch.mono,
    )
    .await
    .expect("target on the refused port");
    for task in tasks {
        let fin = task.await.unwrap();
        assert!(fin.ok, "{:?}", fin.reason);
    }
    let st = t.shutdown().await;
    let (attempts, log) = rt.with(|g| {
        (
            g.recorder().attempts_by_outcome().values().sum::<u64>(),
            g.log().to_vec(),
        )
    });
    let refused_before = log
        .iter()
        .filter(|r| r.request < N && r.outcome != "ok")
        .count() as u64;
    println!(
        "connect refused: {N} payments, {} attempts ({} refused) + 20 for the never-served one; target arrivals {}, executions {}, duplicates {}",
        refused_before + N, refused_before, st.arrivals, st.executions, st.duplicate_executions
    );
    assert_eq!(attempts, 20 + refused_before + N);
    assert!(
        refused_before >= N,
        "every payment was refused at least once"
    );
    assert_eq!(st.arrivals, N, "refused attempts never reached the server");
    assert_eq!(st.executions, N);
    assert_eq!((st.duplicate_executions, st.extra_executions), (0, 0));
    assert_eq!(st.debited, N * AMOUNT);
}
