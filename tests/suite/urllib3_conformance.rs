//! The `urllib3` preset held against urllib3's default retries (`Retry.DEFAULT`, pinned in
//! `tests/python/requirements.txt`): the same calls, all at once, against the same loopback
//! timelines, compared per call.
//!
//! Per call, the attempts the server saw and how the call ended must be equal, and as the
//! case expects: 413, 429 and 503 retried only when the answer carries a non-empty
//! `Retry-After` (seconds or an HTTP-date), whose wait both clients keep; other statuses
//! never retried; a reset retried for GET and not for POST; four attempts at most. The
//! waits urllib3 slept (recorded from its own `time.sleep`) must be the hints, and
//! stormrig's measured gaps must follow the same hints (or no wait at all).

use std::time::{Duration, Instant};

use hyper::Method;

use crate::support::conformance::{
    assert_call, assert_date_decision, gaps, library_calls, stormrig_calls, Lateness,
};
use crate::support::scripted::{self, Answer};
use stormrig::live::clock::Epoch;

struct Case {
    name: &'static str,
    method: Method,
    answers: Vec<Answer>,
    attempts: usize,
    end: &'static str,
    /// The wait before each retry both clients must keep, in seconds (0: none), or `None`
    /// for an HTTP-date hint, whose wait is how far ahead the server's date was.
    waits: Vec<Option<f64>>,
}

fn cases() -> Vec<Case> {
    use Answer::*;
    let ra = |code: u16, value: &'static str| Status(code, vec![("retry-after", value)]);
    let case = |name: &'static str,
                method: Method,
                answers: Vec<Answer>,
                attempts: usize,
                end: &'static str,
                waits: Vec<Option<f64>>| Case {
        name,
        method,
        answers,
        attempts,
        end,
        waits,
    };
    let get = Method::GET;
    vec![
        case(
            "s503-ra1",
            get.clone(),
            vec![ra(503, "1")],
            2,
            "ok",
            vec![Some(1.0)],
        ),
        case(
            "s429-ra1",
            get.clone(),
            vec![ra(429, "1")],
            2,
            "ok",
            vec![Some(1.0)],
        ),
        case(
            "s413-ra0",
            get.clone(),
            vec![ra(413, "0")],
            2,
            "ok",
            vec![Some(0.0)],
        ),
        case(
            "s503-ra0x4",
            get.clone(),
            vec![ra(503, "0"); 4],
            4,
            "status 503",
            vec![Some(0.0); 3],
        ),
        case(
            "s503-date",
            get.clone(),
            vec![DateAhead(503, Duration::from_secs(2))],
            2,
            "ok",
            vec![None],
        ),
        case(
            "s503-bare",
            get.clone(),
            vec![Status(503, vec![])],
            1,
            "status 503",
            vec![],
        ),
        case(
            "s503-empty",
            get.clone(),
            vec![ra(503, "")],
            1,
            "status 503",
            vec![],
        ),
        case(
            "s500-ra1",
            get.clone(),
            vec![ra(500, "1")],
            1,
            "status 500",
            vec![],
        ),
        case(
            "s502-ra1",
            get.clone(),
            vec![ra(502, "1")],
            1,
            "status 502",
            vec![],
        ),
        case(
            "s404",
            get.clone(),
            vec![Status(404, vec![])],
            1,
            "status 404",
            vec![],
        ),
        case("reset", get.clone(), vec![Reset], 2, "ok", vec![Some(0.0)]),
        case(
            "reset-x4",
            get,
            vec![Reset; 4],
            4,
            "connection-error",
            vec![Some(0.0); 3],
        ),
        case(
            "post-s503-ra0",
            Method::POST,
            vec![ra(503, "0")],
            1,
            "status 503",
            vec![],
        ),
        case(
            "post-reset",
            Method::POST,
            vec![Reset],
            1,
            "connection-error",
            vec![],
        ),
    ]
}

const PRESET: &str = "urllib3";
const SEED: u64 = 29;

#[test]
fn urllib3_retries_as_the_library_does_call_by_call() {
    let cases = cases();
    let rt = crate::support::two_worker_runtime();
    let timelines = cases
        .iter()
        .map(|c| (c.name.to_string(), c.answers.clone()))
        .collect();
    let (base, log) = scripted::start(&rt, timelines);
    let started = Instant::now();
    let names = |m: &Method| -> Vec<&str> {
        cases
            .iter()
            .filter(|c| c.method == *m)
            .map(|c| c.name)
            .collect()
    };
    let (gets, posts) = (names(&Method::GET), names(&Method::POST));
    // The library first, then stormrig, so that neither's timers share the cores with the
    // other's work.
    let mut theirs = library_calls("urllib3_client.py", &["GET"], &base, &gets);
    theirs.extend(library_calls("urllib3_client.py", &["POST"], &base, &posts));
    let epoch = Epoch::start();
    let mut ours = rt.block_on(stormrig_calls(
        Method::GET,
        PRESET,
        "stormrig-urllib3",
        &base,
        &epoch,
        &gets,
        SEED,
    ));
    ours.extend(rt.block_on(stormrig_calls(
        Method::POST,
        PRESET,
        "stormrig-urllib3",
        &base,
        &epoch,
        &posts,
        SEED,
    )));
    eprintln!("calls made in {:.1} s", started.elapsed().as_secs_f64());

    let log = log.lock().unwrap();
    let mut lateness = Lateness::default();
    for case in &cases {
        let call = case.name;
        let seen_lib = &log[&format!("urllib3/{call}")];
        let seen_ours = &log[&format!("stormrig-urllib3/{call}")];
        let (end_lib, slept) = &theirs[call];
        let (g_lib, g_ours) = (gaps(seen_lib), gaps(seen_ours));
        eprintln!(
            "  {call:<14} {} {end_lib} | {} {}   slept {slept:.3?} gaps {g_lib:.3?} | {g_ours:.3?}",
            seen_lib.arrivals.len(),
            seen_ours.arrivals.len(),
            ours[call],
        );
        assert_call(
            call,
            ("urllib3", seen_lib, end_lib),
            (PRESET, seen_ours, &ours[call]),
            (case.attempts, case.end),
        );
        assert_eq!(g_ours.len(), case.waits.len(), "{call}: a gap per retry");
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
        // Each wait urllib3 had to sleep, and whether it came from an HTTP-date.
        let slept_expected: Vec<(f64, bool)> = w_lib
            .iter()
            .zip(&case.waits)
            .map(|(&w, hint)| (w, hint.is_none()))
            .filter(|&(w, _)| w > 0.0)
            .collect();
        assert_eq!(
            slept.len(),
            slept_expected.len(),
            "{call}: urllib3 slept {slept:?}"
        );
        for (k, (&s, &(w, by_date))) in slept.iter().zip(&slept_expected).enumerate() {
            if by_date {
                assert_date_decision(&format!("urllib3 {call} sleep {k}"), s, w);
            } else {
                assert!(
                    (s - w).abs() < 0.05,
                    "{call}: urllib3 slept {s} for a hint of {w}"
                );
            }
        }
        for (k, &gap) in g_ours.iter().enumerate() {
            lateness.check(&format!("{call} retry {k}"), gap, w_ours[k]);
            assert!(
                g_lib[k] >= w_lib[k] - 0.002,
                "urllib3 {call} retry {k}: waited {:.4} s for {:.4} s",
                g_lib[k],
                w_lib[k]
            );
        }
    }
    lateness.assert_median(PRESET);
}
