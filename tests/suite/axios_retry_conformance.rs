//! The `axios-retry` preset held against axios-retry's defaults (`axiosRetry(axios)`, both
//! pinned in `tests/node/package-lock.json`, driven by `tests/node/axios_retry_client.js`):
//! the same calls, all at once, against the same loopback timelines, compared per call.
//!
//! Per call, the attempts the server saw and how the call ended must be equal, and as the
//! case expects: a 429 and every 5xx retried for GET and PUT, not for POST; 4xx never; a
//! reset retried; four attempts at most; no wait but a `Retry-After` (whole seconds or an
//! HTTP-date), whose wait both clients keep. The waits axios-retry decided (its own
//! `retryAfter`, which its default `retryDelay` returns) must be the hints, and stormrig's
//! measured gaps must follow the same hints (or no wait at all).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hyper::Method;

use crate::support;
use crate::support::conformance::{
    assert_call, assert_date_decision, calls_by_name, gaps, stormrig_calls, Lateness,
};
use crate::support::scripted::{self, Answer};
use stormrig::live::clock::Epoch;

struct Case {
    name: &'static str,
    method: Method,
    answers: Vec<Answer>,
    attempts: usize,
    end: &'static str,
    /// The wait before each retry, in seconds (0: none), or `None` for an HTTP-date hint,
    /// whose wait is how far ahead the server's date was.
    waits: Vec<Option<f64>>,
}

fn cases() -> Vec<Case> {
    use Answer::*;
    let ra = |code: u16, value: &'static str| Status(code, vec![("retry-after", value)]);
    let s = |code: u16| Status(code, vec![]);
    let case = |name, method: &Method, answers, attempts, end, waits| Case {
        name,
        method: method.clone(),
        answers,
        attempts,
        end,
        waits,
    };
    let (get, put, post) = (Method::GET, Method::PUT, Method::POST);
    vec![
        case("s503", &get, vec![s(503)], 2, "ok", vec![Some(0.0)]),
        case("s501", &get, vec![s(501)], 2, "ok", vec![Some(0.0)]),
        case(
            "s500x4",
            &get,
            vec![s(500); 4],
            4,
            "status 500",
            vec![Some(0.0); 3],
        ),
        case("s429", &get, vec![s(429)], 2, "ok", vec![Some(0.0)]),
        case(
            "s429-ra1",
            &get,
            vec![ra(429, "1")],
            2,
            "ok",
            vec![Some(1.0)],
        ),
        case(
            "s503-ra0",
            &get,
            vec![ra(503, "0")],
            2,
            "ok",
            vec![Some(0.0)],
        ),
        case(
            "s503-date",
            &get,
            vec![DateAhead(503, Duration::from_secs(2))],
            2,
            "ok",
            vec![None],
        ),
        case("s404", &get, vec![s(404)], 1, "status 404", vec![]),
        case("s408", &get, vec![s(408)], 1, "status 408", vec![]),
        case(
            "s400-ra1",
            &get,
            vec![ra(400, "1")],
            1,
            "status 400",
            vec![],
        ),
        case("reset", &get, vec![Reset], 2, "ok", vec![Some(0.0)]),
        case(
            "reset-x4",
            &get,
            vec![Reset; 4],
            4,
            "connection-error",
            vec![Some(0.0); 3],
        ),
        case("put-s502", &put, vec![s(502)], 2, "ok", vec![Some(0.0)]),
        case("post-s503", &post, vec![s(503)], 1, "status 503", vec![]),
        case(
            "post-s429-ra1",
            &post,
            vec![ra(429, "1")],
            1,
            "status 429",
            vec![],
        ),
    ]
}

const PRESET: &str = "axios-retry";
const SEED: u64 = 31;

/// axios-retry's calls: each call's end and the waits it decided.
fn library_calls(method: &str, base: &str, calls: &[&str]) -> BTreeMap<String, (String, Vec<f64>)> {
    let joined = calls.join(",");
    calls_by_name(support::node::json_lines(
        "axios_retry_client.js",
        &["calls", method, base, &joined],
    ))
}

#[test]
fn axios_retry_retries_as_the_library_does_call_by_call() {
    let cases = cases();
    let rt = crate::support::two_worker_runtime();
    let timelines = cases
        .iter()
        .map(|c| (c.name.to_string(), c.answers.clone()))
        .collect();
    let (base, log) = scripted::start(&rt, timelines);
    let started = Instant::now();
    let methods = [Method::GET, Method::PUT, Method::POST];
    let names = |m: &Method| -> Vec<&str> {
        cases
            .iter()
            .filter(|c| c.method == *m)
            .map(|c| c.name)
            .collect()
    };
    // The library first, then stormrig, so that neither's timers share the cores with the
    // other's work.
    let mut theirs = BTreeMap::new();
    for m in &methods {
        theirs.extend(library_calls(m.as_str(), &base, &names(m)));
    }
    let epoch = Epoch::start();
    let mut ours = BTreeMap::new();
    for m in &methods {
        ours.extend(rt.block_on(stormrig_calls(
            m.clone(),
            PRESET,
            "stormrig-axios",
            &base,
            &epoch,
            &names(m),
            SEED,
        )));
    }
    eprintln!("calls made in {:.1} s", started.elapsed().as_secs_f64());

    let log = log.lock().unwrap();
    let mut lateness = Lateness::default();
    for case in &cases {
        let call = case.name;
        let seen_lib = &log[&format!("axios/{call}")];
        let seen_ours = &log[&format!("stormrig-axios/{call}")];
        let (end_lib, decided) = &theirs[call];
        let (g_lib, g_ours) = (gaps(seen_lib), gaps(seen_ours));
        eprintln!(
            "  {call:<14} {} {end_lib} | {} {}   decided {decided:.3?} gaps {g_lib:.3?} | {g_ours:.3?}",
            seen_lib.arrivals.len(),
            seen_ours.arrivals.len(),
            ours[call],
        );
        assert_call(
            call,
            ("axios-retry", seen_lib, end_lib),
            (PRESET, seen_ours, &ours[call]),
            (case.attempts, case.end),
        );
        assert_eq!(g_ours.len(), case.waits.len(), "{call}: a gap per retry");
        assert_eq!(
            decided.len(),
            case.waits.len(),
            "{call}: a decision per retry"
        );
        // The wait each client had to keep before retry k: the hint, or for an HTTP-date
        // how far ahead the date was when the server sent it to that client.
        let waits = |seen: &scripted::Seen| -> Vec<f64> {
            let mut dates = seen.date_ahead.iter();
            case.waits
                .iter()
                .map(|w| w.unwrap_or_else(|| *dates.next().expect("an HTTP-date hint was sent")))
                .collect()
        };
        let (w_lib, w_ours) = (waits(seen_lib), waits(seen_ours));
        for (k, (&d, &w)) in decided.iter().zip(&w_lib).enumerate() {
            if case.waits[k].is_none() {
                assert_date_decision(&format!("axios-retry {call} retry {k}"), d, w);
            } else {
                assert!(
                    (d - w).abs() < 0.02,
                    "{call} retry {k}: axios-retry decided {d} s for a wait of {w} s"
                );
            }
            assert!(
                g_lib[k] >= w - 0.002,
                "axios-retry {call} retry {k}: waited {:.4} s for {w:.4} s",
                g_lib[k]
            );
        }
        for (k, &gap) in g_ours.iter().enumerate() {
            lateness.check(&format!("{call} retry {k}"), gap, w_ours[k]);
        }
    }
    lateness.assert_median(PRESET);
}
