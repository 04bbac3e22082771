//! The `google-api-core` preset held against google-api-core's `Retry()` (pinned in
//! `tests/python/requirements.txt`), as Google's client libraries for Python wrap a call:
//! the same calls, all at once, against the same loopback timelines, compared per call.
//!
//! Per call, the attempts the server saw and how the call ended must be equal, and as the
//! case expects: 429, 500 and 503 retried with no attempt limit (three 503s and a fourth
//! answer: 4 attempts), resets retried, 502 and 504 and 4xx not retried, a `Retry-After`
//! ignored. Every delay the library drew (recorded from its own
//! `exponential_sleep_generator`) must lie in `[0, min(1 s x 2^k, 60 s))`, and so must
//! stormrig's (replayed from the policy with the live run's per-request seeds); stormrig's
//! measured gaps must follow its decided delays; and the two sets of delays, each divided
//! by its range, must pass a two-sample Kolmogorov-Smirnov test. The 120 s deadline is not
//! run out here (a call would take two minutes); `src/policy/tests.rs` holds the preset to
//! it through the policy.

use std::time::Instant;

use crate::support::conformance::{
    assert_call, gaps, library_calls, replayed_delays, request_of, stormrig_calls, Lateness,
};
use crate::support::scripted::{self, Answer};
use crate::support::stats::{ks_two_sample, mean};
use stormrig::live::clock::Epoch;

struct Case {
    name: &'static str,
    answers: Vec<Answer>,
    attempts: usize,
    end: &'static str,
}

/// Jittered calls are repeated so that each client gives enough delays to compare as
/// distributions.
const REPEATS: usize = 4;

fn cases() -> Vec<Case> {
    use Answer::*;
    let s = |code: u16| Status(code, vec![]);
    let case = |name: &str, answers: Vec<Answer>, attempts, end: &'static str| Case {
        name: name.to_string().leak(),
        answers,
        attempts,
        end,
    };
    let mut v = vec![
        case("s502", vec![s(502)], 1, "status 502"),
        case("s504", vec![s(504)], 1, "status 504"),
        case("s400", vec![s(400)], 1, "status 400"),
        case("s404", vec![s(404)], 1, "status 404"),
    ];
    for r in 0..REPEATS {
        v.push(case(&format!("s503.{r}"), vec![s(503); 3], 4, "ok"));
        v.push(case(&format!("s500.{r}"), vec![s(500)], 2, "ok"));
        v.push(case(&format!("s429.{r}"), vec![s(429); 2], 3, "ok"));
        v.push(case(&format!("reset.{r}"), vec![Reset; 2], 3, "ok"));
        v.push(case(
            &format!("ra.{r}"),
            vec![Status(503, vec![("retry-after", "30")])],
            2,
            "ok",
        ));
    }
    v
}

const PRESET: &str = "google-api-core";
const SEED: u64 = 23;

#[test]
fn google_api_core_retries_as_the_library_does_call_by_call() {
    let cases = cases();
    let calls: Vec<&str> = cases.iter().map(|c| c.name).collect();
    let rt = crate::support::two_worker_runtime();
    let timelines = cases
        .iter()
        .map(|c| (c.name.to_string(), c.answers.clone()))
        .collect();
    let (base, log) = scripted::start(&rt, timelines);
    let started = Instant::now();
    // The library first, then stormrig, so that neither's timers share the cores with the
    // other's work.
    let theirs = library_calls("google_api_core_client.py", &[], &base, &calls);
    let epoch = Epoch::start();
    let ours = rt.block_on(stormrig_calls(
        hyper::Method::POST,
        PRESET,
        "stormrig-google",
        &base,
        &epoch,
        &calls,
        SEED,
    ));
    eprintln!("calls made in {:.1} s", started.elapsed().as_secs_f64());

    let log = log.lock().unwrap();
    let (mut lib_norm, mut ours_norm) = (Vec::new(), Vec::new());
    let mut lateness = Lateness::default();
    for case in &cases {
        let call = case.name;
        let seen_lib = &log[&format!("google/{call}")];
        let seen_ours = &log[&format!("stormrig-google/{call}")];
        let (end_lib, drawn) = &theirs[call];
        let g_ours = gaps(seen_ours);
        eprintln!(
            "  {call:<10} {} {end_lib} | {} {}   {drawn:.3?} | {g_ours:.3?}",
            seen_lib.arrivals.len(),
            seen_ours.arrivals.len(),
            ours[call],
        );
        assert_call(
            call,
            ("google-api-core", seen_lib, end_lib),
            (PRESET, seen_ours, &ours[call]),
            (case.attempts, case.end),
        );
        assert_eq!(drawn.len(), case.attempts - 1, "{call}: a delay per retry");
        let decided = replayed_delays(PRESET, SEED, request_of(&calls, call), g_ours.len());
        for (k, ((&d, &mine), &gap)) in drawn.iter().zip(&decided).zip(&g_ours).enumerate() {
            let range = 2f64.powi(k as i32).min(60.0);
            assert!((0.0..=range).contains(&d), "{call} retry {k}: drew {d}");
            assert!(
                (0.0..=range).contains(&mine),
                "{call} retry {k}: decided {mine}"
            );
            lateness.check(&format!("{call} retry {k}"), gap, mine);
            lib_norm.push(d / range);
            ours_norm.push(mine / range);
        }
    }
    lateness.assert_median(PRESET);
    let (d, p) = ks_two_sample(&lib_norm, &ours_norm);
    eprintln!(
        "{} delays each; KS D = {d:.3}, p = {p:.3}; means {:.3} / {:.3}",
        lib_norm.len(),
        mean(&lib_norm),
        mean(&ours_norm)
    );
    assert!(lib_norm.len() >= 30);
    assert!(p > 0.01, "full jitter differs: D = {d:.3}, p = {p:.4}");
}
