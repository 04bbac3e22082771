//! The `aws-adaptive` preset's rate limiter held against botocore's adaptive-mode classes
//! (pinned in `tests/python/requirements.txt`), side by side on one timeline.
//!
//! `tests/python/botocore_adaptive.py` runs the limiter botocore's own
//! `adaptive.register_retry_handler` builds (ClientRateLimiter, TokenBucket, CubicCalculator,
//! RateClocker, ThrottlingErrorDetector) on a virtual clock; this test drives a
//! `RetryClient` of the `aws-adaptive` preset through the same timeline on virtual time:
//! one sender, an attempt due every 25 ms (or when the previous answer came), sent when the
//! limiter grants it, answered 20 ms later by the timeline's window for that time: bursts
//! of bare 429s, throttling error codes (with HTTP 400 and 503), transient 503s, resets and
//! a non-retryable 400 between stretches of 200s. Per attempt these must agree: when it was
//! sent (the token's acquisition time) within 1 µs (stormrig's waits are whole nanoseconds,
//! botocore's float seconds), whether the answer counted as throttling, whether the
//! limiter is on, and the fill rate, the bucket's capacity and the measured send rate after
//! the answer to a relative 1e-7 (the times fed to the same formulas differ by up to a
//! nanosecond). No socket is opened.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::time::Duration;

use crate::support;
use stormrig::policy::{
    preset, AttemptOutcome, Now, Permit, Response, RetryClient, TransportError,
};

/// The answer windows, in seconds of answer time; 200 outside them.
fn timeline() -> Value {
    json!({
        "start_s": 0.013,
        "interval_s": 0.025,
        "latency_s": 0.02,
        "calls": 1200,
        "answers": [
            {"from_s": 3.0, "to_s": 4.0, "status": 429, "code": null},
            {"from_s": 4.0, "to_s": 4.5, "status": 503, "code": null},
            {"from_s": 12.0, "to_s": 12.6, "status": 400, "code": "ThrottlingException"},
            {"from_s": 12.6, "to_s": 13.0, "transport": "reset"},
            {"from_s": 30.0, "to_s": 34.0, "status": 503, "code": "SlowDown"},
            {"from_s": 40.0, "to_s": 41.0, "status": 400, "code": "ValidationException"}
        ]
    })
}

/// What stormrig's limiter did with one attempt.
struct Row {
    sent_s: f64,
    throttling: bool,
    fill_rate: f64,
    max_capacity: f64,
    measured_rate: f64,
    enabled: bool,
}

fn answer_at(answers: &[Value], t: f64) -> Option<&Value> {
    answers
        .iter()
        .find(|a| a["from_s"].as_f64().unwrap() <= t && t < a["to_s"].as_f64().unwrap())
}

fn stormrig_rows(tl: &Value) -> Vec<Row> {
    let config = preset("aws-adaptive").expect("the preset exists");
    let mut client = RetryClient::new(&config);
    let answers = tl["answers"].as_array().unwrap();
    let (start, interval) = (
        tl["start_s"].as_f64().unwrap(),
        tl["interval_s"].as_f64().unwrap(),
    );
    let latency = Duration::from_secs_f64(tl["latency_s"].as_f64().unwrap());
    let mut clock = Duration::ZERO;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut rows = Vec::new();
    for i in 0..tl["calls"].as_u64().unwrap() {
        let due = Duration::from_secs_f64(start + i as f64 * interval);
        clock = clock.max(due);
        let mut req = client.start(Now::virtual_at(clock), "POST", None);
        while let Some(wait) = client.rate_limit(Now::virtual_at(clock), &req) {
            clock += wait;
        }
        let sent = clock;
        assert!(
            matches!(
                client.before_attempt(Now::virtual_at(sent), &mut req),
                Permit::Send { .. }
            ),
            "a first attempt is always permitted"
        );
        clock = sent + latency;
        let answer = answer_at(answers, clock.as_secs_f64());
        let outcome = match answer {
            Some(a) if a.get("transport").is_some() => {
                AttemptOutcome::Transport(TransportError::Reset)
            }
            Some(a) => AttemptOutcome::Response(Response {
                error_code: a["code"].as_str(),
                ..Response::status(a["status"].as_u64().unwrap() as u16)
            }),
            None => AttemptOutcome::Response(Response::status(200)),
        };
        let d = client.on_outcome(Now::virtual_at(clock), &mut req, &outcome, &mut rng);
        client.finish(Now::virtual_at(clock), req);
        let l = client
            .rate_limiter()
            .expect("aws-adaptive has a rate limiter");
        rows.push(Row {
            sent_s: sent.as_secs_f64(),
            throttling: d.class() == stormrig::policy::OutcomeClass::Throttling,
            fill_rate: l.fill_rate(),
            max_capacity: l.max_capacity(),
            measured_rate: l.measured_rate(),
            enabled: l.enabled(),
        });
    }
    rows
}

/// Relative difference. The formulas are botocore's operation for operation, but the times
/// they are fed differ by up to a nanosecond (stormrig's clock unit), and CUBIC's growth
/// `0.4·(t − last_fail − k)³` turns that into about 1e-9 of the rate.
fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

#[test]
fn aws_adaptive_sends_when_botocore_adaptive_does() {
    let tl = timeline();
    let botocore = support::python::json_lines("botocore_adaptive.py", &[tl.to_string()]);
    let ours = stormrig_rows(&tl);
    assert_eq!(botocore.len(), ours.len());
    let (mut worst_sent, mut worst_rate) = (0.0f64, 0.0f64);
    for (b, o) in botocore.iter().zip(&ours) {
        let call = &b["call"];
        let f = |k: &str| b[k].as_f64().unwrap();
        worst_sent = worst_sent.max((f("sent_s") - o.sent_s).abs());
        assert!(
            (f("sent_s") - o.sent_s).abs() <= 1e-6,
            "call {call}: botocore sent at {} s, stormrig at {} s",
            f("sent_s"),
            o.sent_s
        );
        assert_eq!(
            b["throttling"].as_bool(),
            Some(o.throttling),
            "call {call}: throttling"
        );
        assert_eq!(
            b["enabled"].as_bool(),
            Some(o.enabled),
            "call {call}: limiter on"
        );
        for (k, mine) in [
            ("fill_rate", o.fill_rate),
            ("max_capacity", o.max_capacity),
            ("measured_rate", o.measured_rate),
        ] {
            worst_rate = worst_rate.max(rel(f(k), mine));
            assert!(
                rel(f(k), mine) <= 1e-7,
                "call {call}: {k} botocore {} stormrig {mine}",
                f(k)
            );
        }
    }
    eprintln!(
        "{} attempts: send times within {worst_sent:.3e} s, rates within {worst_rate:.3e} \
         (relative)",
        ours.len()
    );
    // The timeline must have put the limiter through its paces, or agreeing proves little:
    // it engaged, held most sends back, fell to its floor, and grew back to well above it.
    let waited = botocore
        .iter()
        .filter(|b| b["sent_s"].as_f64().unwrap() > b["due_s"].as_f64().unwrap() + 1e-9)
        .count();
    let floor = ours
        .iter()
        .position(|o| o.enabled && o.fill_rate == 0.5)
        .expect("the rate fell to its floor once engaged");
    assert!(waited > 500, "only {waited} sends waited");
    assert!(
        ours[floor..].iter().any(|o| o.fill_rate > 50.0),
        "the rate never grew back"
    );
    assert!(ours.iter().filter(|o| o.throttling).count() >= 20);
}
