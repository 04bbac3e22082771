//! Cross-module acceptance tests of the policy core (driving [`RetryClient`] end to end).

use super::*;
use crate::policy::budget::{AwsQuotaConfig, GrpcThrottlingConfig, RatioConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn at(mono: Duration) -> Now {
    Now::virtual_at(mono)
}

fn status(s: u16) -> AttemptOutcome<'static> {
    AttemptOutcome::Response(Response::status(s))
}

fn code(s: u16, c: &'static str) -> AttemptOutcome<'static> {
    AttemptOutcome::Response(Response {
        status: s,
        error_code: Some(c),
        ..Response::default()
    })
}

fn transport(t: TransportError) -> AttemptOutcome<'static> {
    AttemptOutcome::Transport(t)
}

/// Run one request where every attempt yields the next outcome of `outcomes` (the last one
/// repeats). Returns (attempts sent, final decision or refusal reason, delays).
fn run(
    client: &mut RetryClient,
    start: Duration,
    method: &str,
    outcomes: &[AttemptOutcome<'_>],
    r: &mut ChaCha8Rng,
) -> (u32, Result<(), GiveUpReason>, Vec<Duration>) {
    let mut now = at(start);
    let mut req = client.start(now, method, None);
    let mut delays = vec![];
    let mut i = 0;
    let result = loop {
        match client.before_attempt(now, &mut req) {
            Permit::Refuse(reason) => break Err(reason),
            Permit::Send { .. } => {
                let o = &outcomes[i.min(outcomes.len() - 1)];
                i += 1;
                match client.on_outcome(now, &mut req, o, r) {
                    Decision::Success => break Ok(()),
                    Decision::GiveUp { reason, .. } => break Err(reason),
                    Decision::Retry { after, .. } => {
                        delays.push(after);
                        now = at(now.mono + after);
                    }
                }
            }
        }
    };
    let n = req.attempts();
    client.finish(now, req);
    (n, result, delays)
}

// ---------------------------------------------------------------- limits and idempotency

#[test]
fn max_attempts_counts_the_first_try() {
    let mut r = rng(1);
    for (name, want) in [
        ("no-retry", 1),
        ("naive", 4),
        ("aws-standard", 3),
        ("aws-legacy", 5),
        ("grpc", 4),
        ("envoy", 2),
        ("istio", 3),
        ("polly", 4),
        ("resilience4j", 3),
        ("openai-python", 3),
        ("anthropic-python", 3),
    ] {
        let mut c = RetryClient::new(&preset(name).unwrap());
        let (n, res, delays) = run(&mut c, Duration::ZERO, "GET", &[status(503)], &mut r);
        assert_eq!(n, want, "{name}");
        assert_eq!(delays.len() as u32, want - 1, "{name}");
        assert_eq!(res, Err(GiveUpReason::MaxAttempts), "{name}");
    }
}

fn constant_config(delay: u64, attempts: u32, deadline: Option<u64>) -> RetryConfig {
    RetryConfig {
        name: "t".into(),
        max_attempts: attempts,
        deadline: deadline.map(ms),
        per_try_timeout: Some(ms(400)),
        backoff: Backoff::Constant { delay: ms(delay) },
        jitter: Jitter::None,
        ..RetryConfig::default()
    }
}

#[test]
fn deadline_is_never_exceeded() {
    let mut c = RetryClient::new(&constant_config(300, 10, Some(1000)));
    let start = ms(5000);
    let mut now = at(start);
    let mut req = c.start(now, "GET", None);
    let mut sent = vec![];
    let reason = loop {
        match c.before_attempt(now, &mut req) {
            Permit::Refuse(r) => break r,
            Permit::Send {
                timeout,
                remaining_deadline,
                attempt,
                ..
            } => {
                let rem = remaining_deadline.unwrap();
                assert_eq!(rem, start + ms(1000) - now.mono);
                assert_eq!(timeout, Some(ms(400).min(rem)));
                sent.push((attempt, now.mono - start));
                match c.on_outcome(now, &mut req, &status(503), &mut rng(0)) {
                    Decision::Retry { after, .. } => {
                        assert!(now.mono + after < start + ms(1000));
                        now = at(now.mono + after);
                    }
                    Decision::GiveUp { reason, .. } => break reason,
                    Decision::Success => unreachable!(),
                }
            }
        }
    };
    // attempts at 0, 300, 600, 900 ms; a retry at 1200 ms would pass the deadline.
    assert_eq!(
        sent,
        vec![(1, ms(0)), (2, ms(300)), (3, ms(600)), (4, ms(900))]
    );
    assert_eq!(reason, GiveUpReason::Deadline);
    c.finish(now, req);

    // An inherited deadline shorter than the config's wins; a spent one refuses the first try.
    let mut req = c.start(at(ms(0)), "GET", Some(ms(250)));
    assert_eq!(req.remaining_deadline(at(ms(100))), Some(ms(150)));
    match c.before_attempt(at(ms(100)), &mut req) {
        Permit::Send { timeout, .. } => assert_eq!(timeout, Some(ms(150))),
        p => panic!("{p:?}"),
    }
    c.finish(at(ms(100)), req);
    let mut req = c.start(at(ms(0)), "GET", Some(ms(0)));
    assert_eq!(
        c.before_attempt(at(ms(0)), &mut req),
        Permit::Refuse(GiveUpReason::Deadline)
    );
    c.finish(at(ms(0)), req);
}

#[test]
fn idempotency_rules() {
    let cfg = RetryConfig {
        retry_on: RetryOn {
            statuses: vec![StatusPattern::Exact(503)],
            transport: vec![TransportError::ConnectRefused, TransportError::ReadTimeout],
            ..RetryOn::default()
        },
        ..constant_config(10, 3, None)
    };
    let mut r = rng(2);
    let mut c = RetryClient::new(&cfg);
    // POST + read timeout (may have reached the server): not retried without a key.
    let (n, res, _) = run(
        &mut c,
        ms(0),
        "POST",
        &[transport(TransportError::ReadTimeout)],
        &mut r,
    );
    assert_eq!((n, res), (1, Err(GiveUpReason::NotIdempotent)));
    let (n, res, _) = run(&mut c, ms(0), "PATCH", &[status(503)], &mut r);
    assert_eq!((n, res), (1, Err(GiveUpReason::NotIdempotent)));
    // POST + connect refused (never reached the server): retried.
    let (n, res, _) = run(
        &mut c,
        ms(0),
        "POST",
        &[transport(TransportError::ConnectRefused), status(201)],
        &mut r,
    );
    assert_eq!((n, res), (2, Ok(())));
    // GET + read timeout: retried.
    let (n, _, _) = run(
        &mut c,
        ms(0),
        "GET",
        &[transport(TransportError::ReadTimeout)],
        &mut r,
    );
    assert_eq!(n, 3);
    // POST with an idempotency key: retried, and the permit says to attach the key.
    let mut k = RetryClient::new(&RetryConfig {
        idempotency_key: true,
        ..cfg.clone()
    });
    let (n, res, _) = run(
        &mut k,
        ms(0),
        "POST",
        &[transport(TransportError::ReadTimeout), status(200)],
        &mut r,
    );
    assert_eq!((n, res), (2, Ok(())));
    let mut req = k.start(at(ms(0)), "POST", None);
    assert!(matches!(
        k.before_attempt(at(ms(0)), &mut req),
        Permit::Send {
            idempotency_key: true,
            ..
        }
    ));
    k.finish(at(ms(0)), req);
    let mut req = k.start(at(ms(0)), "GET", None);
    assert!(matches!(
        k.before_attempt(at(ms(0)), &mut req),
        Permit::Send {
            idempotency_key: false,
            ..
        }
    ));
    k.finish(at(ms(0)), req);
    // retry_non_idempotent = true retries a POST whatever happened.
    let mut y = RetryClient::new(&RetryConfig {
        retry_non_idempotent: true,
        ..cfg
    });
    let (n, _, _) = run(&mut y, ms(0), "POST", &[status(503)], &mut r);
    assert_eq!(n, 3);
}

#[test]
fn success_and_non_retryable_end_the_request() {
    let mut c = RetryClient::new(&preset("naive").unwrap());
    let mut r = rng(3);
    assert_eq!(
        run(&mut c, ms(0), "GET", &[status(404)], &mut r).1,
        Err(GiveUpReason::NonRetryable)
    );
    assert_eq!(
        run(&mut c, ms(0), "GET", &[status(503), status(302)], &mut r).1,
        Ok(())
    );
    // after a decision that ends the request, before_attempt refuses
    let mut req = c.start(at(ms(0)), "GET", None);
    assert!(matches!(
        c.before_attempt(at(ms(0)), &mut req),
        Permit::Send { .. }
    ));
    assert_eq!(
        c.on_outcome(at(ms(0)), &mut req, &status(200), &mut r),
        Decision::Success
    );
    assert!(matches!(
        c.before_attempt(at(ms(0)), &mut req),
        Permit::Refuse(_)
    ));
    c.finish(at(ms(0)), req);
}

/// An RNG that counts the draws it gives.
struct Counting {
    inner: ChaCha8Rng,
    draws: u32,
}

impl rand::RngCore for Counting {
    fn next_u32(&mut self) -> u32 {
        self.draws += 1;
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.draws += 1;
        self.inner.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.draws += 1;
        self.inner.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.draws += 1;
        self.inner.try_fill_bytes(dest)
    }
}

/// A storm through aws-standard (full jitter, its quota drained within it), every attempt
/// a 503, 1 ms apart: per outcome, the decision and the draws it took.
fn storm_draws(deadline: Option<Duration>) -> Vec<(Decision, u32)> {
    let mut cfg = crate::policy::preset("aws-standard").unwrap();
    cfg.deadline = deadline;
    let mut c = RetryClient::new(&cfg);
    let mut r = Counting {
        inner: rng(7),
        draws: 0,
    };
    let mut out = vec![];
    let mut t = 0;
    for _ in 0..300 {
        let mut req = c.start(at(ms(t)), "GET", None);
        while let Permit::Send { .. } = c.before_attempt(at(ms(t)), &mut req) {
            t += 1;
            let before = r.draws;
            let d = c.on_outcome(at(ms(t)), &mut req, &status(503), &mut r);
            out.push((d, r.draws - before));
            if !matches!(d, Decision::Retry { .. }) {
                break;
            }
        }
        c.finish(at(ms(t)), req);
    }
    out
}

#[test]
fn a_deadline_the_wait_cannot_reach_draws_the_wait_only_for_a_granted_retry() {
    // 60 s is beyond any wait aws-standard's full jitter can give (its cap is 20 s): the
    // wait is drawn after the quota's grant, as without a deadline, so a refused retry
    // draws nothing, and every decision and wait is the same as without the deadline.
    let with = storm_draws(Some(Duration::from_secs(60)));
    assert_eq!(with, storm_draws(None));
    let refused = with
        .iter()
        .filter(|(d, _)| {
            matches!(
                d,
                Decision::GiveUp {
                    reason: GiveUpReason::BudgetRefused,
                    ..
                }
            )
        })
        .count();
    assert!(
        refused > 100,
        "the quota drains within the storm: {refused}"
    );
    for (d, draws) in &with {
        let want = u32::from(matches!(d, Decision::Retry { .. }));
        assert_eq!(*draws, want, "{d:?}");
    }
}

#[test]
fn retry_after_through_the_client_respects_cap_and_deadline() {
    let cfg = RetryConfig {
        retry_after: RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::RetryAfter,
            cap: Some(Duration::from_secs(30)),
        },
        ..constant_config(100, 5, Some(20_000))
    };
    let wall = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
    let now = Now {
        mono: ms(0),
        epoch_wall: wall,
    };
    let one = |v: &'static str| {
        let mut c = RetryClient::new(&cfg);
        let mut req = c.start(now, "GET", None);
        let _ = c.before_attempt(now, &mut req);
        let o = AttemptOutcome::Response(Response {
            status: 503,
            retry_after: Some(v),
            ..Response::default()
        });
        c.on_outcome(now, &mut req, &o, &mut rng(1))
    };
    assert!(matches!(one("2"), Decision::Retry { after, .. } if after == ms(2000)));
    assert!(
        matches!(one("Sun, 06 Nov 1994 08:49:47 GMT"), Decision::Retry { after, .. } if after == ms(10_000))
    );
    assert!(
        matches!(one("Sun, 06 Nov 1994 08:00:00 GMT"), Decision::Retry { after, .. } if after.is_zero())
    );
    assert!(matches!(one("garbage"), Decision::Retry { after, .. } if after == ms(100)));
    // 25 s is under the 30 s cap but past the 20 s deadline: give up instead of waiting
    assert!(matches!(
        one("25"),
        Decision::GiveUp {
            reason: GiveUpReason::Deadline,
            ..
        }
    ));
}

#[test]
fn client_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<RetryClient>();
    assert_send::<RequestState>();
}

// ---------------------------------------------------------------- breaker and cost through the client

#[test]
fn breaker_refuses_while_open_and_reports_transitions() {
    let cfg = RetryConfig {
        breaker: Some(BreakerConfig {
            failure_threshold: Some(3),
            failure_rate: None,
            window: 20,
            min_calls: 10,
            open_for: Duration::from_secs(5),
            half_open_probes: 1,
        }),
        ..constant_config(0, 1, None)
    };
    let mut c = RetryClient::new(&cfg);
    let mut r = rng(4);
    assert_eq!(c.breaker_state(), Some(BreakerState::Closed));
    for _ in 0..3 {
        let _ = run(&mut c, ms(0), "GET", &[status(503)], &mut r);
    }
    assert_eq!(c.breaker_state(), Some(BreakerState::Open));
    let (n, res, _) = run(&mut c, ms(1000), "GET", &[status(200)], &mut r);
    assert_eq!((n, res), (0, Err(GiveUpReason::BreakerOpen)));
    // half-open probe fails → open again
    assert_eq!(run(&mut c, ms(5000), "GET", &[status(503)], &mut r).0, 1);
    assert_eq!(c.breaker_state(), Some(BreakerState::Open));
    // a probe that succeeds closes it
    assert_eq!(
        run(&mut c, ms(10_000), "GET", &[status(200)], &mut r).1,
        Ok(())
    );
    assert_eq!(c.breaker_state(), Some(BreakerState::Closed));
    let ev: Vec<_> = c
        .drain_events()
        .into_iter()
        .map(|e| match e {
            PolicyEvent::Breaker { at, from, to } => (at.as_millis(), from, to),
            e => panic!("{e:?}"),
        })
        .collect();
    use BreakerState::*;
    assert_eq!(
        ev,
        vec![
            (0, Closed, Open),
            (5000, Open, HalfOpen),
            (5000, HalfOpen, Open),
            (10_000, Open, HalfOpen),
            (10_000, HalfOpen, Closed)
        ]
    );
    assert!(c.drain_events().is_empty());
    let json = serde_json::to_string(&PolicyEvent::Breaker {
        at: ms(1500),
        from: Open,
        to: HalfOpen,
    })
    .unwrap();
    assert_eq!(
        json,
        r#"{"event":"breaker","at":"1500ms","from":"open","to":"half-open"}"#
    );
}

#[test]
fn cost_caps_stop_retries() {
    let cfg = RetryConfig {
        attempt_cost: AttemptCost::Fixed(2.0),
        cost: Some(CostConfig {
            per_request_cap: Some(5.0),
            global_cap: Some(11.0),
        }),
        ..constant_config(0, 10, None)
    };
    let mut c = RetryClient::new(&cfg);
    let mut r = rng(5);
    // per request: 2 + 2 ≤ 5, a third attempt would make 6 > 5
    assert_eq!(run(&mut c, ms(0), "GET", &[status(503)], &mut r).0, 2);
    assert_eq!(c.cost_spent(), 4.0);
    let (n, res, _) = run(&mut c, ms(0), "GET", &[status(503)], &mut r);
    assert_eq!((n, res), (2, Err(GiveUpReason::CostCap)));
    // global: 8 spent; a first try fits (10), its retry would make 12 > 11
    let (n, res, _) = run(&mut c, ms(0), "GET", &[status(503)], &mut r);
    assert_eq!((n, res), (1, Err(GiveUpReason::CostCap)));
    // 10 spent: the cap is a ceiling, so the next request's first try (12 > 11) is not sent
    let (n, res, _) = run(&mut c, ms(0), "GET", &[status(503)], &mut r);
    assert_eq!((n, res), (0, Err(GiveUpReason::CostCap)));
    assert_eq!(c.cost_spent(), 10.0);
    let ev = c.drain_events();
    assert!(ev.contains(&PolicyEvent::CostCapReached {
        at: ms(0),
        scope: CostScope::Request
    }));
    assert!(ev.contains(&PolicyEvent::CostCapReached {
        at: ms(0),
        scope: CostScope::Global
    }));
}

// ---------------------------------------------------------------- budgets

#[test]
fn ratio_budget_bounds_retries_over_a_10_minute_outage() {
    let cfg = RetryConfig {
        budget: BudgetConfig::Ratio(RatioConfig {
            ratio: 0.2,
            ttl: Duration::from_secs(10),
            min_per_sec: 10,
            deposit: DepositOn::Request,
        }),
        ..constant_config(0, 4, None)
    };
    let mut c = RetryClient::new(&cfg);
    let mut r = rng(6);
    // 100 first tries per second for 600 s, every attempt fails with 503.
    let mut deposits = vec![0u64; 600];
    let mut retries = vec![0u64; 600];
    for i in 0..60_000u64 {
        let t = ms(i * 10);
        let (n, _, _) = run(&mut c, t, "GET", &[status(503)], &mut r);
        deposits[(i / 100) as usize] += 1;
        retries[(i / 100) as usize] += n as u64 - 1;
    }
    let total_d: u64 = deposits.iter().sum();
    let total_r: u64 = retries.iter().sum();
    let bound = 0.2 * total_d as f64 + 10.0 * 600.0;
    assert!(total_r as f64 <= bound, "{total_r} > {bound}");
    assert!(
        total_r as f64 >= 0.9 * 0.2 * total_d as f64,
        "the budget is used: {total_r}"
    );
    // every aligned 10-second window obeys the same bound
    for k in 0..=590 {
        let d: u64 = deposits[k..k + 10].iter().sum();
        let w: u64 = retries[k..k + 10].iter().sum();
        assert!(
            w as f64 <= 0.2 * d as f64 + 100.0,
            "window {k}: {w} retries for {d} deposits"
        );
    }
    assert!(c
        .drain_events()
        .iter()
        .any(|e| matches!(e, PolicyEvent::BudgetFirstRefusal { .. })));
}

/// Run `n` requests through a fresh aws-standard client with independent failures.
/// Returns (final level, lowest level seen).
fn aws_levels(failure: AttemptOutcome<'static>, p: f64, n: usize, seed: u64) -> (f64, f64) {
    use rand::Rng;
    let mut c = RetryClient::new(&preset("aws-standard").unwrap());
    let mut r = rng(seed);
    let mut min_level = f64::MAX;
    for i in 0..n {
        let mut now = at(ms(i as u64 * 10));
        let mut req = c.start(now, "GET", None);
        while let Permit::Send { .. } = c.before_attempt(now, &mut req) {
            let o = if r.gen::<f64>() < p {
                failure
            } else {
                status(200)
            };
            match c.on_outcome(now, &mut req, &o, &mut r) {
                Decision::Retry { after, .. } => now = at(now.mono + after),
                _ => break,
            }
        }
        c.finish(now, req);
        let l = c.budget_level().unwrap();
        assert!((0.0..=500.0).contains(&l));
        min_level = min_level.min(l);
    }
    (c.budget_level().unwrap(), min_level)
}

#[test]
fn aws_quota_drains_above_threshold_and_not_below() {
    // transient (c = 14, threshold 0.2149)
    let below = aws_levels(status(503), 0.17, 5000, 7);
    assert!(below.0 > 450.0 && below.1 > 350.0, "{below:?}");
    let above = aws_levels(status(503), 0.26, 5000, 8);
    assert!(above.1 < 14.0 && above.0 < 100.0, "{above:?}");
    // throttling (bare 429 → throttling, c = 5, threshold 0.3207)
    let below = aws_levels(status(429), 0.28, 5000, 9);
    assert!(below.0 > 450.0 && below.1 > 350.0, "{below:?}");
    let above = aws_levels(status(429), 0.37, 5000, 10);
    assert!(above.1 < 5.0 && above.0 < 100.0, "{above:?}");
}

#[test]
fn grpc_throttling_stops_at_half_and_resumes_above() {
    let mut c = RetryClient::new(&preset("grpc").unwrap());
    let mut r = rng(11);
    let z = ms(0);
    // 4 failed attempts: 10 → 9, 8, 7 (retries allowed), 6 (final, still decremented)
    let (n, res, _) = run(&mut c, z, "POST", &[status(503)], &mut r);
    assert_eq!((n, res), (4, Err(GiveUpReason::MaxAttempts)));
    assert_eq!(c.budget_level(), Some(6.0));
    // 6 → 5: 5 ≤ 10/2, the retry is refused
    let (n, res, _) = run(&mut c, z, "POST", &[status(503)], &mut r);
    assert_eq!((n, res), (1, Err(GiveUpReason::BudgetRefused)));
    assert_eq!(c.budget_level(), Some(5.0));
    // 10 successes: 6.0; the next failure brings it back to 5.0: still refused
    for _ in 0..10 {
        let _ = run(&mut c, z, "POST", &[status(200)], &mut r);
    }
    assert_eq!(c.budget_level(), Some(6.0));
    assert_eq!(
        run(&mut c, z, "POST", &[status(503)], &mut r).1,
        Err(GiveUpReason::BudgetRefused)
    );
    // 11 successes: 6.1 → a failure leaves 5.1 > 5: retried again
    for _ in 0..11 {
        let _ = run(&mut c, z, "POST", &[status(200)], &mut r);
    }
    let (n, res, _) = run(&mut c, z, "POST", &[status(503), status(200)], &mut r);
    assert_eq!((n, res), (2, Ok(())));
    assert!((c.budget_level().unwrap() - 5.2).abs() < 1e-9);
    // non-retryable failures do not touch the bucket
    let _ = run(&mut c, z, "POST", &[status(400)], &mut r);
    assert!((c.budget_level().unwrap() - 5.2).abs() < 1e-9);
}

#[test]
fn envoy_allows_three_concurrent_retries() {
    let mut c = RetryClient::new(&preset("envoy").unwrap());
    let mut r = rng(12);
    let now = at(ms(0));
    let mut reqs: Vec<_> = (0..5).map(|_| c.start(now, "GET", None)).collect();
    let mut decisions = vec![];
    for req in reqs.iter_mut() {
        assert!(matches!(c.before_attempt(now, req), Permit::Send { .. }));
        decisions.push(c.on_outcome(now, req, &status(503), &mut r));
    }
    let granted = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Retry { .. }))
        .count();
    assert_eq!(granted, 3);
    assert!(matches!(
        decisions[3],
        Decision::GiveUp {
            reason: GiveUpReason::BudgetRefused,
            ..
        }
    ));
    assert_eq!(c.budget_level(), Some(0.0));
    // a retry's attempt ends → its slot is free again
    assert!(matches!(
        c.before_attempt(now, &mut reqs[0]),
        Permit::Send { attempt: 2, .. }
    ));
    assert_eq!(
        c.on_outcome(now, &mut reqs[0], &status(200), &mut r),
        Decision::Success
    );
    assert_eq!(c.budget_level(), Some(1.0));
    for req in reqs {
        c.finish(now, req);
    }
    assert_eq!(c.budget_level(), Some(3.0));
}

// ---------------------------------------------------------------- presets

/// First decision for one failed attempt on a fresh client of `name`.
fn first(name: &str, o: AttemptOutcome<'_>, seed: u64) -> (Decision, Option<f64>) {
    let mut c = RetryClient::new(&preset(name).unwrap());
    let now = at(ms(0));
    let mut req = c.start(now, "GET", None);
    assert!(matches!(
        c.before_attempt(now, &mut req),
        Permit::Send { .. }
    ));
    let d = c.on_outcome(now, &mut req, &o, &mut rng(seed));
    let level = c.budget_level();
    c.finish(now, req);
    (d, level)
}

fn after(d: Decision) -> Duration {
    match d {
        Decision::Retry { after, .. } => after,
        d => panic!("expected a retry, got {d:?}"),
    }
}

/// Mean and max of the first-retry delay over `n` seeds.
fn first_delays(name: &str, o: AttemptOutcome<'_>, n: u64) -> (f64, Duration) {
    let v: Vec<Duration> = (0..n).map(|s| after(first(name, o, s).0)).collect();
    (
        v.iter().map(|d| d.as_secs_f64()).sum::<f64>() / n as f64,
        v.into_iter().max().unwrap(),
    )
}

#[test]
fn preset_aws_standard() {
    let c = preset("aws-standard").unwrap();
    assert_eq!(c.max_attempts, 3);
    assert_eq!(
        c.budget,
        BudgetConfig::AwsQuota(AwsQuotaConfig {
            capacity: 500.0,
            transient_cost: 14.0,
            throttling_cost: 5.0,
            timeout_cost: 14.0,
            success_increment: 1.0
        })
    );
    // bare 429 → throttling retry, cost 5, delay U[0, 1 s)
    let (d, level) = first("aws-standard", status(429), 1);
    assert_eq!(d.class(), OutcomeClass::Throttling);
    assert_eq!(level, Some(495.0));
    let (mean, max) = first_delays("aws-standard", status(429), 2000);
    assert!(max < ms(1000) && (mean - 0.5).abs() < 0.03, "{mean}");
    // 503 → transient, cost 14, delay U[0, 50 ms); read timeout also 14
    let (d, level) = first("aws-standard", status(503), 1);
    assert_eq!((d.class(), level), (OutcomeClass::Transient, Some(486.0)));
    assert_eq!(
        first("aws-standard", transport(TransportError::ReadTimeout), 1).1,
        Some(486.0)
    );
    let (mean, max) = first_delays("aws-standard", status(503), 2000);
    assert!(max < ms(50) && (mean - 0.025).abs() < 0.002, "{mean}");
    // SlowDown on a 503 is throttling; 501 and 404 are not retried
    assert_eq!(
        first("aws-standard", code(503, "SlowDown"), 1).0.class(),
        OutcomeClass::Throttling
    );
    assert!(matches!(
        first("aws-standard", status(501), 1).0,
        Decision::GiveUp {
            reason: GiveUpReason::NonRetryable,
            ..
        }
    ));
    // x-amz-retry-after 3000 ms: max(t, min(3 s, t + 5 s)) = 3 s
    let hinted = AttemptOutcome::Response(Response {
        status: 503,
        amz_retry_after: Some("3000"),
        ..Response::default()
    });
    assert_eq!(after(first("aws-standard", hinted, 1).0), ms(3000));
    // refund of the last acquisition: 503 then success → back to 500; first-try success stays capped
    let mut c = RetryClient::new(&preset("aws-standard").unwrap());
    let _ = run(
        &mut c,
        ms(0),
        "GET",
        &[status(503), status(503), status(200)],
        &mut rng(1),
    );
    assert_eq!(c.budget_level(), Some(500.0 - 28.0 + 14.0));
}

#[test]
fn preset_aws_standard_classic() {
    // bare 429 not retried; 429 with a throttling code retried at cost 5
    assert!(matches!(
        first("aws-standard-classic", status(429), 1).0,
        Decision::GiveUp {
            reason: GiveUpReason::NonRetryable,
            ..
        }
    ));
    let (d, level) = first("aws-standard-classic", code(429, "ThrottlingException"), 1);
    assert_eq!((d.class(), level), (OutcomeClass::Throttling, Some(495.0)));
    assert_eq!(first("aws-standard-classic", status(503), 1).1, Some(495.0));
    assert_eq!(
        first(
            "aws-standard-classic",
            transport(TransportError::ReadTimeout),
            1
        )
        .1,
        Some(490.0)
    );
    assert_eq!(
        first(
            "aws-standard-classic",
            transport(TransportError::ConnectTimeout),
            1
        )
        .1,
        Some(490.0)
    );
    let (mean, max) = first_delays("aws-standard-classic", status(503), 2000);
    assert!(max < ms(1000) && (mean - 0.5).abs() < 0.03, "{mean}");
    // no x-amz-retry-after
    let hinted = AttemptOutcome::Response(Response {
        status: 503,
        amz_retry_after: Some("3000"),
        ..Response::default()
    });
    assert!(after(first("aws-standard-classic", hinted, 1).0) < ms(1000));
}

#[test]
fn preset_aws_legacy() {
    let c = preset("aws-legacy").unwrap();
    assert_eq!(
        (c.max_attempts, c.budget.kind_name(), c.backoff.cap()),
        (5, "none", None)
    );
    for s in [429, 500, 502, 503, 504, 509] {
        assert!(
            matches!(first("aws-legacy", status(s), 1).0, Decision::Retry { .. }),
            "{s}"
        );
    }
    assert!(matches!(
        first("aws-legacy", status(501), 1).0,
        Decision::GiveUp { .. }
    ));
    // retry n waits U[0, 2^(n-1) s), uncapped: the 4th retry can exceed 4 s
    let mut longest = Duration::ZERO;
    for seed in 0..200 {
        let mut cl = RetryClient::new(&c);
        let (_, _, d) = run(&mut cl, ms(0), "GET", &[status(503)], &mut rng(seed));
        assert_eq!(d.len(), 4);
        for (i, x) in d.iter().enumerate() {
            assert!(*x < Duration::from_secs(1 << i));
        }
        longest = longest.max(d[3]);
    }
    assert!(longest > Duration::from_secs(4), "{longest:?}");
}

#[test]
fn preset_grpc() {
    let c = preset("grpc").unwrap();
    assert_eq!(c.max_attempts, 4);
    assert_eq!(
        c.budget,
        BudgetConfig::GrpcThrottling(GrpcThrottlingConfig {
            max_tokens: 10.0,
            token_ratio: 0.1
        })
    );
    assert_eq!(c.jitter, Jitter::Proportional { pct: 20.0 });
    // delays: 100 ms, 200 ms, 400 ms nominal × U[0.8, 1.2)
    for seed in 0..100 {
        let mut cl = RetryClient::new(&c);
        let (_, _, d) = run(&mut cl, ms(0), "POST", &[status(503)], &mut rng(seed));
        for (x, nominal) in d.iter().zip([100u64, 200, 400]) {
            assert!(
                *x >= ms(nominal * 8 / 10) && *x < ms(nominal * 12 / 10),
                "{x:?}"
            );
        }
    }
    // UNAVAILABLE mapping: 502/503/504/429 and connect failures retried; read timeout (DEADLINE_EXCEEDED) not
    for o in [
        status(502),
        status(503),
        status(504),
        status(429),
        transport(TransportError::ConnectRefused),
    ] {
        assert!(
            matches!(first("grpc", o, 1).0, Decision::Retry { .. }),
            "{o:?}"
        );
    }
    assert!(matches!(
        first("grpc", transport(TransportError::ReadTimeout), 1).0,
        Decision::GiveUp { .. }
    ));
    assert!(matches!(
        first("grpc", status(500), 1).0,
        Decision::GiveUp { .. }
    ));
    // pushback: ≥ 0 → exactly that, and the sequence restarts; negative → no retry
    let push = |v: &'static str| {
        AttemptOutcome::Response(Response {
            status: 503,
            grpc_pushback_ms: Some(v),
            ..Response::default()
        })
    };
    assert_eq!(after(first("grpc", push("1500"), 1).0), ms(1500));
    let (d, level) = first("grpc", push("-1"), 1);
    assert!(matches!(
        d,
        Decision::GiveUp {
            reason: GiveUpReason::ServerPushback,
            ..
        }
    ));
    assert_eq!(
        level,
        Some(9.0),
        "a do-not-retry pushback still costs a token"
    );
    let mut cl = RetryClient::new(&c);
    let (_, _, d) = run(
        &mut cl,
        ms(0),
        "POST",
        &[status(503), push("700"), status(503), status(503)],
        &mut rng(3),
    );
    assert_eq!(d[1], ms(700));
    assert!(
        d[2] >= ms(80) && d[2] < ms(120),
        "after a pushback the backoff restarts: {:?}",
        d[2]
    );
}

#[test]
fn preset_envoy_and_istio() {
    let e = preset("envoy").unwrap();
    assert_eq!(
        (e.max_attempts, e.deadline),
        (2, Some(Duration::from_secs(15)))
    );
    let (mean, max) = first_delays("envoy", status(500), 2000);
    assert!(max < ms(25) && (mean - 0.0125).abs() < 0.001, "{mean}");
    for o in [
        status(500),
        status(599),
        transport(TransportError::ConnectRefused),
        transport(TransportError::Reset),
    ] {
        assert!(
            matches!(first("envoy", o, 1).0, Decision::Retry { .. }),
            "{o:?}"
        );
    }
    assert!(matches!(
        first("envoy", status(429), 1).0,
        Decision::GiveUp { .. }
    ));
    // windows U[0,25), U[0,50), U[0,100), U[0,200), U[0,250), U[0,250)
    let b = &e.backoff;
    assert_eq!(
        (1..=6).map(|n| b.nominal(n, false)).collect::<Vec<_>>(),
        [25, 50, 100, 200, 250, 250].map(ms).to_vec()
    );

    let i = preset("istio").unwrap();
    assert_eq!(
        (i.max_attempts, i.budget.kind_name(), i.deadline),
        (3, "none", None)
    );
    assert!(matches!(
        first("istio", status(503), 1).0,
        Decision::Retry { .. }
    ));
    assert!(matches!(
        first("istio", transport(TransportError::ConnectTimeout), 1).0,
        Decision::Retry { .. }
    ));
    for o in [status(500), status(502), transport(TransportError::Reset)] {
        assert!(
            matches!(
                first("istio", o, 1).0,
                Decision::GiveUp {
                    reason: GiveUpReason::NonRetryable,
                    ..
                }
            ),
            "{o:?}"
        );
    }
    // no concurrent-retry limit
    let mut c = RetryClient::new(&i);
    let now = at(ms(0));
    let mut granted = 0;
    let mut reqs = vec![];
    for _ in 0..50 {
        let mut req = c.start(now, "GET", None);
        let _ = c.before_attempt(now, &mut req);
        granted += matches!(
            c.on_outcome(now, &mut req, &status(503), &mut rng(1)),
            Decision::Retry { .. }
        ) as u32;
        reqs.push(req);
    }
    assert_eq!(granted, 50);
}

#[test]
fn preset_finagle_polly_resilience4j_naive_no_retry() {
    let f = preset("finagle").unwrap();
    assert_eq!(
        f.budget,
        BudgetConfig::Ratio(RatioConfig {
            ratio: 0.2,
            ttl: Duration::from_secs(10),
            min_per_sec: 10,
            deposit: DepositOn::Success
        })
    );
    assert!(matches!(
        first("finagle", status(503), 1).0,
        Decision::GiveUp {
            reason: GiveUpReason::NonRetryable,
            ..
        }
    ));
    assert!(matches!(
        first("finagle", transport(TransportError::Reset), 1).0,
        Decision::GiveUp { .. }
    ));
    assert_eq!(
        after(first("finagle", transport(TransportError::ConnectRefused), 1).0),
        Duration::ZERO
    );
    let (d, level) = first("finagle", transport(TransportError::ConnectTimeout), 1);
    assert_eq!(
        (after(d), level),
        (Duration::ZERO, Some(99.0)),
        "reserve 10/s × 10 s, one withdrawn"
    );

    let mut c = RetryClient::new(&preset("polly").unwrap());
    let (n, _, d) = run(
        &mut c,
        ms(0),
        "POST",
        &[transport(TransportError::Reset)],
        &mut rng(1),
    );
    assert_eq!((n, d), (4, vec![Duration::from_secs(2); 3]));
    let mut c = RetryClient::new(&preset("resilience4j").unwrap());
    let (n, _, d) = run(&mut c, ms(0), "GET", &[status(500)], &mut rng(1));
    assert_eq!((n, d), (3, vec![ms(500); 2]));
    let mut c = RetryClient::new(&preset("naive").unwrap());
    let (n, _, d) = run(&mut c, ms(0), "POST", &[status(429)], &mut rng(1));
    assert_eq!((n, d), (4, vec![Duration::ZERO; 3]));
    assert_eq!(c.budget_level(), None);
    let (d, _) = first("no-retry", status(503), 1);
    assert_eq!(
        d,
        Decision::GiveUp {
            reason: GiveUpReason::MaxAttempts,
            class: OutcomeClass::Transient
        }
    );
}

#[test]
fn spec_overrides_a_preset_field() {
    let spec = RetryConfigSpec::from_toml(
        "name = \"mine\"\npreset = \"grpc\"\nmax_attempts = 2\njitter = { kind = \"none\" }",
    )
    .unwrap();
    let c = spec.resolve().unwrap();
    assert_eq!(
        (c.name.as_str(), c.max_attempts, c.jitter.clone()),
        ("mine", 2, Jitter::None)
    );
    assert_eq!(c.budget, preset("grpc").unwrap().budget);
    let mut cl = RetryClient::new(&c);
    let (n, _, d) = run(&mut cl, ms(0), "POST", &[status(503)], &mut rng(1));
    assert_eq!((n, d), (2, vec![ms(100)]));
}

// ---------------------------------------------------------------- thresholds

#[test]
fn thresholds_aws_standard_three_attempts() {
    let rep = thresholds::compute(&preset("aws-standard").unwrap(), Some(3), 42);
    let t = &rep.transient;
    let h = &rep.throttling;
    assert_eq!((t.cost, h.cost), (Some(14.0), Some(5.0)));
    assert!((t.closed_form.unwrap() - 0.2149).abs() < 1e-4, "{t:?}");
    assert!((h.closed_form.unwrap() - 0.3207).abs() < 1e-4, "{h:?}");
    assert!((t.monte_carlo.unwrap() - 0.2149).abs() < 0.01, "{t:?}");
    assert!((h.monte_carlo.unwrap() - 0.3207).abs() < 0.01, "{h:?}");
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["transient"]["closed_form"], 0.2149);
    assert_eq!(json["throttling"]["cost"], 5.0);
    assert_eq!(json["budget"], "aws-quota");
}

#[test]
fn thresholds_classic_grpc_finagle() {
    let quick = thresholds::McOptions {
        coarse_requests: 1000,
        requests_per_point: 8000,
    };
    let rep = thresholds::compute_with(&preset("aws-standard-classic").unwrap(), None, 7, quick);
    assert!((rep.transient.closed_form.unwrap() - 0.3207).abs() < 1e-4);
    assert!((rep.timeout.closed_form.unwrap() - 0.2460).abs() < 1e-4);
    assert_eq!(rep.throttling.cost, Some(5.0));
    assert!(
        (rep.timeout.monte_carlo.unwrap() - 0.2460).abs() < 0.015,
        "{:?}",
        rep.timeout
    );

    let rep = thresholds::compute_with(&preset("grpc").unwrap(), None, 7, quick);
    let g = &rep.transient;
    assert!((g.closed_form.unwrap() - 0.0909).abs() < 1e-4, "{g:?}");
    assert!((g.monte_carlo.unwrap() - 0.0909).abs() < 0.01, "{g:?}");

    // Finagle requeues only failures that never reached the server: a 503 or a reset is
    // final, so there is no transient threshold; a connect timeout is requeued. Deposits on
    // success, 21 attempts: 0.2·(1 − p^21) = p + … + p^20
    let no_transient = |rep: &thresholds::ThresholdReport, why: &str| {
        assert_eq!(rep.transient.closed_form, None);
        assert!(rep.transient.reason.as_deref().unwrap().contains(why));
    };
    let rep = thresholds::compute_with(&preset("finagle").unwrap(), None, 7, quick);
    no_transient(&rep, "never retries");
    let f = &rep.timeout;
    let want = thresholds::bisect(
        |p| thresholds::ratio_drift(p, 0.2, 21, DepositOn::Success),
        0.0,
        1.0,
    )
    .unwrap();
    assert!((f.closed_form.unwrap() - want).abs() < 1e-4);
    assert!(
        (f.monte_carlo.unwrap() - want).abs() < 0.015,
        "{f:?} vs {want}"
    );
    assert!(
        rep.throttling.reason.is_some(),
        "finagle never retries throttling"
    );

    // max_attempts 1: no threshold, with a reason
    let rep = thresholds::compute_with(&preset("aws-standard").unwrap(), Some(1), 7, quick);
    no_transient(&rep, "1 attempt");
}

// ---------------------------------------------------------------- properties

mod props {
    use super::*;
    use proptest::prelude::*;

    fn backoff() -> impl Strategy<Value = Backoff> {
        (0u8..4, 1u64..2000, 1.0f64..4.0, 0u64..30_000, any::<bool>()).prop_map(
            |(k, base, mult, extra, capped)| {
                let cap = capped.then(|| ms(base + extra));
                match k {
                    0 => Backoff::None,
                    1 => Backoff::Constant { delay: ms(base) },
                    2 => Backoff::Linear {
                        base: ms(base),
                        cap,
                    },
                    _ => Backoff::Exponential {
                        base: ms(base),
                        multiplier: mult,
                        cap,
                        throttling_base: None,
                    },
                }
            },
        )
    }

    fn jitter() -> impl Strategy<Value = Jitter> {
        (0u8..5, 1.0f64..100.0).prop_map(|(k, pct)| match k {
            0 => Jitter::None,
            1 => Jitter::Full,
            2 => Jitter::Equal,
            3 => Jitter::Decorrelated,
            _ => Jitter::Proportional { pct },
        })
    }

    fn budget() -> impl Strategy<Value = BudgetConfig> {
        prop_oneof![
            Just(BudgetConfig::None),
            Just(preset("aws-standard").unwrap().budget),
            Just(preset("grpc").unwrap().budget),
            Just(preset("envoy").unwrap().budget),
            Just(BudgetConfig::Ratio(RatioConfig {
                ratio: 0.1,
                ttl: Duration::from_secs(1),
                min_per_sec: 1,
                deposit: DepositOn::Request
            })),
        ]
    }

    fn outcome() -> impl Strategy<Value = AttemptOutcome<'static>> {
        prop_oneof![
            Just(status(200)),
            Just(status(503)),
            Just(status(429)),
            Just(status(404)),
            Just(AttemptOutcome::Response(Response {
                status: 503,
                retry_after: Some("3"),
                ..Response::default()
            })),
            Just(AttemptOutcome::Response(Response {
                status: 429,
                retry_after: Some("100000"),
                ..Response::default()
            })),
            Just(transport(TransportError::ConnectRefused)),
            Just(transport(TransportError::ReadTimeout)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn delays_attempts_and_levels_stay_in_bounds(
            b in backoff(),
            j in jitter(),
            max_attempts in 1u32..8,
            deadline in proptest::option::of(1u64..20_000),
            bud in budget(),
            honour_retry_after in any::<bool>(),
            outcomes in proptest::collection::vec(outcome(), 1..40),
            method in prop_oneof![Just("GET"), Just("POST")],
            seed in any::<u64>(),
        ) {
            let cfg = RetryConfig {
                name: "prop".into(),
                max_attempts,
                deadline: deadline.map(ms),
                per_try_timeout: Some(ms(700)),
                retry_on: preset("naive").unwrap().retry_on,
                backoff: b.clone(),
                jitter: j.clone(),
                retry_after: if honour_retry_after {
                    RetryAfterConfig { header: HintHeader::RetryAfter, cap: Some(Duration::from_secs(10)), honour_up_to: None, refuse_above: None }
                } else {
                    RetryAfterConfig::default()
                },
                budget: bud,
                ..RetryConfig::default()
            };
            prop_assume!(cfg.validate().is_ok());
            // The largest delay the config may produce.
            let cap_bound = b.cap().map(|c| match j {
                Jitter::Proportional { pct } => c.mul_f64(1.0 + pct / 100.0),
                _ => c,
            });
            let cap_bound = cap_bound.map(|c| if honour_retry_after { c.max(Duration::from_secs(10)) } else { c });
            let mut client = RetryClient::new(&cfg);
            let mut r = rng(seed);
            let mut i = 0usize;
            let mut t = Duration::ZERO;
            while i < outcomes.len() {
                let mut now = at(t);
                let mut req = client.start(now, method, None);
                let dl = req.deadline_at();
                while let Permit::Send { attempt, timeout, remaining_deadline, .. } = client.before_attempt(now, &mut req) {
                    prop_assert!(attempt <= max_attempts);
                    if let Some(rem) = remaining_deadline {
                        prop_assert!(!rem.is_zero());
                        prop_assert!(timeout.unwrap() <= rem);
                        prop_assert_eq!(Some(now.mono + rem), dl);
                    }
                    let o = outcomes[i % outcomes.len()];
                    i += 1;
                    let d = client.on_outcome(now, &mut req, &o, &mut r);
                    if let Some((lo, hi)) = client.budget_bounds() {
                        let l = client.budget_level().unwrap();
                        prop_assert!(l >= lo && l <= hi, "level {} outside [{}, {}]", l, lo, hi);
                    }
                    match d {
                        Decision::Retry { after, .. } => {
                            if let Some(c) = cap_bound {
                                prop_assert!(after <= c, "{:?} > cap {:?}", after, c);
                            }
                            if let Some(dl) = dl {
                                prop_assert!(now.mono + after < dl, "retry would start past the deadline");
                            }
                            now = at(now.mono + after);
                        }
                        _ => break,
                    }
                    if i >= outcomes.len() * 3 { break; }
                }
                prop_assert!(req.attempts() <= max_attempts);
                if let Some(dl) = dl {
                    prop_assert!(now.mono <= dl);
                }
                client.finish(now, req);
                t = now.mono + ms(1);
                if i >= outcomes.len() * 3 { break; }
            }
        }

        #[test]
        fn jitter_never_negative_never_above_its_bound(
            b in backoff(),
            j in jitter(),
            n in 1u32..64,
            seed in any::<u64>(),
        ) {
            let mut r = rng(seed);
            let nominal = b.nominal(n, false);
            if let Some(c) = b.cap() {
                prop_assert!(nominal <= c);
            }
            let mut prev = b.base(false);
            for _ in 0..20 {
                let d = j.apply(nominal, b.base(false), b.cap(), &mut prev, &mut r);
                match &j {
                    Jitter::None => prop_assert_eq!(d, nominal),
                    Jitter::Full | Jitter::Equal => prop_assert!(d <= nominal),
                    Jitter::Downward { pct } => prop_assert!(d <= nominal && d >= nominal.mul_f64(1.0 - pct / 100.0)),
                    Jitter::Proportional { pct } => prop_assert!(d <= nominal.mul_f64(1.0 + pct / 100.0)),
                    Jitter::Decorrelated => {
                        prop_assert!(d >= b.base(false).min(b.cap().unwrap_or(Duration::MAX)));
                        if let Some(c) = b.cap() { prop_assert!(d <= c); }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- LLM SDK presets

#[test]
fn llm_sdk_presets_back_off_in_the_sdk_band_and_follow_short_retry_after_hints() {
    let mut r = rng(19);
    let names = [
        "openai-python",
        "openai-python-v1",
        "anthropic-python",
        "anthropic-python-v0",
    ];
    for name in names {
        let mut c = RetryClient::new(&preset(name).unwrap());
        // POST like every inference call; 500 then 500 then give up after 3 attempts.
        let (n, res, delays) = run(&mut c, Duration::ZERO, "POST", &[status(500)], &mut r);
        assert_eq!((n, res), (3, Err(GiveUpReason::MaxAttempts)), "{name}");
        for (k, d) in delays.iter().enumerate() {
            let nominal = 0.5 * 2f64.powi(k as i32);
            let s = d.as_secs_f64();
            assert!(s > 0.75 * nominal && s <= nominal, "{name} retry {k}: {s}");
        }
        for (st, retried) in [
            (408, true),
            (409, true),
            (429, true),
            (503, true),
            (400, false),
        ] {
            let (n, _, _) = run(&mut c, Duration::ZERO, "POST", &[status(st)], &mut r);
            assert_eq!(n > 1, retried, "{name} status {st}");
        }
        let hinted = |ra: Option<&'static str>, ra_ms: Option<&'static str>| {
            AttemptOutcome::Response(Response {
                status: 429,
                retry_after: ra,
                retry_after_ms: ra_ms,
                ..Response::default()
            })
        };
        let first_delay = |c: &mut RetryClient, o, r: &mut ChaCha8Rng| {
            let (n, res, d) = run(c, Duration::ZERO, "POST", &[o, status(200)], r);
            (n, res, d.first().copied())
        };
        let (_, _, d) = first_delay(&mut c, hinted(Some("7"), None), &mut r);
        assert_eq!(d, Some(Duration::from_secs(7)), "{name}: 7 s is followed");
        let (_, _, d) = first_delay(&mut c, hinted(Some("1.5"), None), &mut r);
        assert_eq!(d, Some(ms(1500)), "{name}: fractional seconds");
        let (_, _, d) = first_delay(&mut c, hinted(Some("9"), Some("250")), &mut r);
        assert_eq!(d, Some(ms(250)), "{name}: retry-after-ms first");
        let (_, _, d) = first_delay(&mut c, hinted(Some("-3"), None), &mut r);
        assert!(d.unwrap() <= ms(500), "{name}: negative falls back, {d:?}");
        // The window differs by version.
        let (n, res, d) = first_delay(&mut c, hinted(Some("90"), None), &mut r);
        let (n121, res121, d121) = first_delay(&mut c, hinted(Some("121"), None), &mut r);
        match name {
            "openai-python" => {
                assert_eq!(d, Some(Duration::from_secs(90)), "{name}");
                assert_eq!(
                    (n121, res121, d121),
                    (1, Err(GiveUpReason::ServerPushback), None)
                );
            }
            "anthropic-python" => {
                assert_eq!(d, Some(Duration::from_secs(90)), "{name}");
                assert_eq!(d121, Some(Duration::from_secs(121)), "{name}");
            }
            _ => {
                assert!(d.unwrap() <= ms(500), "{name}: 90 s is ignored, {d:?}");
                assert!(d121.unwrap() <= ms(500), "{name}: 121 s is ignored");
                assert_eq!((n, res, n121, res121), (2, Ok(()), 2, Ok(())), "{name}");
            }
        }
        // x-should-retry wins over the status, both ways.
        let said = |st: u16, v: &'static str| {
            AttemptOutcome::Response(Response {
                status: st,
                should_retry: Some(v),
                ..Response::default()
            })
        };
        let (n, res, _) = run(
            &mut c,
            Duration::ZERO,
            "POST",
            &[said(400, "true"), status(200)],
            &mut r,
        );
        assert_eq!(
            (n, res),
            (2, Ok(())),
            "{name}: x-should-retry true on a 400"
        );
        let (n, res, _) = run(
            &mut c,
            Duration::ZERO,
            "POST",
            &[said(503, "false")],
            &mut r,
        );
        assert_eq!(
            (n, res),
            (1, Err(GiveUpReason::ServerPushback)),
            "{name}: false on a 503"
        );
        let (n, _, _) = run(&mut c, Duration::ZERO, "POST", &[said(400, "True")], &mut r);
        assert_eq!(n, 1, "{name}: only the exact string counts");
    }
    // A config that does not obey the header ignores it.
    let mut plain = RetryClient::new(&RetryConfig::default());
    let o = AttemptOutcome::Response(Response {
        status: 503,
        should_retry: Some("false"),
        ..Response::default()
    });
    let (n, _, _) = run(&mut plain, Duration::ZERO, "GET", &[o], &mut r);
    assert_eq!(n, 3);
}

#[test]
fn preset_google_api_core_retries_until_a_wait_would_pass_its_120_s_deadline() {
    // An outage that never ends: the deadline alone stops the request, before a wait that
    // would end past it, never within the 100-attempt ceiling.
    for seed in 0..200 {
        let mut c = RetryClient::new(&preset("google-api-core").unwrap());
        let (n, result, delays) = run(&mut c, ms(0), "POST", &[status(503)], &mut rng(seed));
        assert_eq!(result, Err(GiveUpReason::Deadline), "seed {seed}");
        assert!(n > 3 && n < 100, "seed {seed}: {n} attempts");
        let waited: Duration = delays.iter().sum();
        assert!(waited < Duration::from_secs(120), "seed {seed}: {waited:?}");
        for (k, d) in delays.iter().enumerate() {
            let range = 2f64.powi(k as i32).min(60.0);
            assert!(d.as_secs_f64() < range, "seed {seed} retry {k}: {d:?}");
        }
    }
    for (o, retried) in [
        (status(429), true),
        (status(500), true),
        (status(503), true),
        (status(502), false),
        (status(504), false),
        (status(408), false),
        (transport(TransportError::Reset), true),
        (transport(TransportError::ConnectRefused), true),
        (transport(TransportError::ReadTimeout), false),
    ] {
        let d = first("google-api-core", o, 1).0;
        assert_eq!(matches!(d, Decision::Retry { .. }), retried, "{o:?}: {d:?}");
    }
    // A hint is not the decorator's business: the wait is drawn from [0, 1 s) whatever it says.
    let hinted = AttemptOutcome::Response(Response {
        retry_after: Some("30"),
        ..Response::status(503)
    });
    assert!(after(first("google-api-core", hinted, 3).0) < Duration::from_secs(1));
}
