//! The `openai-python` and `anthropic-python` presets held against the real SDKs (openai and
//! anthropic for Python, pinned in `tests/python/requirements.txt`), as the conformance of
//! a preset means: the same calls against the same loopback server timeline, compared per
//! call.
//!
//! The server (here, on raw loopback sockets) answers each call by the attempts it has seen
//! of that call's path: a call's timeline is a list of answers (a status with headers, or a
//! connection reset), then 200. It records when each attempt arrived; the gaps between a
//! call's arrivals are the delays each client really waited, plus its own work between
//! reading an answer and sending the next attempt (a new connection included). The SDKs
//! also report each delay they decided (their "Retrying request ... in %f seconds" log line,
//! written just before they sleep it), which is free of that work: the Python interpreter
//! on a loaded machine adds tens of milliseconds of it, stormrig a few.
//!
//! What is checked, and how:
//! * by timing, both SDKs and stormrig side by side, all calls at once: attempts per call
//!   and the call's end (ok, final status, connection error) must be equal, and as the
//!   case expects. Where a hint fixes the delay (`Retry-After: 1`, `1.5`, an HTTP-date 2 s
//!   ahead, `retry-after-ms: 300`, both headers) the SDK's decided delay must be the hint
//!   (within 1 ms; 20 ms for the date, which the SDK measures from its own later now),
//!   stormrig's measured gap must lie within [hint - 2 ms, hint + 150 ms] with a median
//!   lateness of at most 20 ms over all its retries, and the SDK's measured gap must be no
//!   shorter than what it decided (it really waited). Where the delay is jittered (408, 409, 429 and 5xx
//!   without a hint, a reset, a negative Retry-After, `x-should-retry: true` on a 400) the
//!   SDK's decided delays must lie in its formula's range `[0.75, 1] x 0.5 s x 2^k`, and
//!   so must stormrig's (replayed from the policy with the live run's per-request seeds),
//!   stormrig's measured gaps must lie within [decided - 2 ms, decided + 150 ms] (median
//!   lateness 20 ms), and the two samples of decided delays, each divided by its nominal delay, must pass a
//!   two-sample Kolmogorov-Smirnov test (p > 0.01) and have means within 0.05 of each
//!   other;
//! * by calling the SDK's own functions (`_should_retry`, `_calculate_retry_timeout`) with a
//!   response's headers, no waiting, beside stormrig's policy deciding on the same answer:
//!   hints too long to wait for in a test (65 s, 120 s, 121 s, `1e400`, `inf`, a date 65 s
//!   ahead) and `x-should-retry` against a long hint. Whether to retry must be equal; a
//!   hinted delay equal (within 1 ms, or the time between the two computations for a date),
//!   except that stormrig clamps every hint at its 300 s ceiling where anthropic waits up
//!   to 4,294,967 s; an unhinted one in the jitter range for both.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use rand::SeedableRng;

use crate::support;
use crate::support::conformance::{
    assert_call, assert_date_decision, gaps, library_calls, replayed_delays, request_of,
    stormrig_calls, Lateness,
};
use crate::support::scripted::{self, Answer};
use crate::support::stats::{ks_two_sample, mean};
use stormrig::live::clock::Epoch;
use stormrig::policy::{preset, AttemptOutcome, Decision, Now, Permit, Response, RetryClient};

/// How long a call's delays are: fixed by a hint, or drawn by the SDK's jitter.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Delays {
    /// No retry: nothing to time.
    None,
    /// Every retry waits this hint.
    Hinted(f64),
    /// The hint is an HTTP-date: the server notes, per answer, how far ahead it was.
    HintedByDate,
    /// `[0.75, 1] x 0.5 s x 2^k` before retry k.
    Jittered,
}

struct Case {
    name: &'static str,
    answers: Vec<Answer>,
    /// Attempts a client of the SDK's defaults makes, and how the call ends.
    attempts: usize,
    end: &'static str,
    delays: Delays,
    /// Timed with the SDK in this list only (anthropic would wait 121 s where openai stops).
    sdks: &'static [&'static str],
}

const BOTH: &[&str] = &["openai", "anthropic"];
/// Jittered calls are repeated so that each client gives enough delays to compare as
/// distributions.
const REPEATS: usize = 3;

fn cases() -> Vec<Case> {
    use Answer::*;
    let s = |code, h: &[(&'static str, &'static str)]| Status(code, h.to_vec());
    let case = |name, answers, attempts, end, delays| Case {
        name,
        answers,
        attempts,
        end,
        delays,
        sdks: BOTH,
    };
    let mut v = vec![
        case(
            "ra-1",
            vec![s(429, &[("retry-after", "1")])],
            2,
            "ok",
            Delays::Hinted(1.0),
        ),
        case(
            "ra-1.5",
            vec![s(429, &[("retry-after", "1.5")])],
            2,
            "ok",
            Delays::Hinted(1.5),
        ),
        Case {
            sdks: &["openai"],
            ..case(
                "ra-121",
                vec![s(429, &[("retry-after", "121")])],
                1,
                "status 429",
                Delays::None,
            )
        },
        case(
            "ra-date",
            vec![DateAhead(503, Duration::from_secs(2))],
            2,
            "ok",
            Delays::HintedByDate,
        ),
        case(
            "ra-ms",
            vec![s(429, &[("retry-after-ms", "300")])],
            2,
            "ok",
            Delays::Hinted(0.3),
        ),
        case(
            "ra-both",
            vec![s(429, &[("retry-after-ms", "200"), ("retry-after", "3")])],
            2,
            "ok",
            Delays::Hinted(0.2),
        ),
        case(
            "xsr-false-503",
            vec![s(503, &[("x-should-retry", "false")])],
            1,
            "status 503",
            Delays::None,
        ),
        case("s400", vec![s(400, &[])], 1, "status 400", Delays::None),
    ];
    for r in 0..REPEATS {
        let name = |n: &str| -> &'static str { format!("{n}.{r}").leak() };
        v.push(case(
            name("ra-neg"),
            vec![s(503, &[("retry-after", "-1")])],
            2,
            "ok",
            Delays::Jittered,
        ));
        v.push(case(
            name("xsr-true-400"),
            vec![s(400, &[("x-should-retry", "true")])],
            2,
            "ok",
            Delays::Jittered,
        ));
        for code in [408, 409, 429, 500, 503] {
            v.push(case(
                name(&format!("s{code}")),
                vec![s(code, &[]); 3],
                3,
                format!("status {code}").leak(),
                Delays::Jittered,
            ));
        }
        v.push(case(
            name("reset"),
            vec![Reset; 3],
            3,
            "connection-error",
            Delays::Jittered,
        ));
    }
    v
}

fn case_of<'a>(cases: &'a [Case], name: &str) -> &'a Case {
    cases.iter().find(|c| c.name == name).expect("a known case")
}

/// The SDK makes `calls` at once against `base`; each call's end and the delays it decided.
fn sdk_calls(sdk: &str, base: &str, calls: &[&str]) -> BTreeMap<String, (String, Vec<f64>)> {
    library_calls("llm_sdk_client.py", &[sdk], base, calls)
}

/// The seed of stormrig's calls.
const SEED: u64 = 11;

#[test]
fn the_llm_sdk_presets_retry_as_the_real_sdks_do_call_by_call() {
    let cases = cases();
    let rt = crate::support::two_worker_runtime();
    let timelines = cases
        .iter()
        .map(|c| (c.name.to_string(), c.answers.clone()))
        .collect();
    let (base, log) = scripted::start(&rt, timelines);
    let epoch = Epoch::start();

    let started = Instant::now();
    let pairs = [
        ("openai", "openai-python"),
        ("anthropic", "anthropic-python"),
    ];
    let calls_of = |sdk: &str| -> Vec<&'static str> {
        cases
            .iter()
            .filter(|c| c.sdks.contains(&sdk))
            .map(|c| c.name)
            .collect()
    };
    // The two SDKs in their own processes at once, then stormrig: its client would
    // otherwise share two cores with two Python interpreters importing the SDKs, and its
    // timers would fire late by that much.
    let python: Vec<_> = pairs
        .iter()
        .map(|(sdk, _)| {
            let (sdk, base, calls) = (sdk.to_string(), base.clone(), calls_of(sdk));
            std::thread::spawn(move || sdk_calls(&sdk, &base, &calls))
        })
        .collect();
    let theirs: Vec<BTreeMap<String, (String, Vec<f64>)>> =
        python.into_iter().map(|t| t.join().unwrap()).collect();
    let ours: Vec<BTreeMap<String, String>> = rt.block_on(async {
        let mut v = Vec::new();
        for (sdk, name) in pairs {
            v.push(
                stormrig_calls(
                    hyper::Method::POST,
                    name,
                    &format!("stormrig-{sdk}"),
                    &base,
                    &epoch,
                    &calls_of(sdk),
                    SEED,
                )
                .await,
            );
        }
        v
    });
    eprintln!("calls made in {:.1} s", started.elapsed().as_secs_f64());

    let log = log.lock().unwrap();
    for (((sdk, name), theirs), ours) in pairs.iter().zip(&theirs).zip(&ours) {
        let mut jitter = (Vec::new(), Vec::new());
        let mut lateness = Lateness::default();
        eprintln!(
            "{sdk} vs {name}: call, attempts and end; delays (s): SDK decided / SDK measured \
             at the server | stormrig measured"
        );
        for call in calls_of(sdk) {
            let case = case_of(&cases, call);
            let seen_sdk = &log[&format!("{sdk}/{call}")];
            let seen_ours = &log[&format!("stormrig-{sdk}/{call}")];
            let (g_sdk, g_ours) = (gaps(seen_sdk), gaps(seen_ours));
            let (end_sdk, decided) = &theirs[call];
            let fmt = |g: &[f64]| {
                g.iter()
                    .map(|x| format!("{x:.3}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            eprintln!(
                "  {call:<16} {} {end_sdk} | {} {}   [{}] / [{}] | [{}]",
                seen_sdk.arrivals.len(),
                seen_ours.arrivals.len(),
                ours[call],
                fmt(decided),
                fmt(&g_sdk),
                fmt(&g_ours)
            );
            assert_call(
                call,
                (sdk, seen_sdk, end_sdk),
                (name, seen_ours, &ours[call]),
                (case.attempts, case.end),
            );
            assert_eq!(
                decided.len(),
                g_sdk.len(),
                "{sdk} {call}: a decided delay per retry"
            );
            for (k, (d, gap)) in decided.iter().zip(&g_sdk).enumerate() {
                assert!(
                    gap >= &(d - 0.002),
                    "{sdk} {call} retry {k}: decided {d}, waited {gap}"
                );
            }
            let ours_decided =
                replayed_delays(name, SEED, request_of(&calls_of(sdk), call), g_ours.len());
            for (k, (d, ours)) in decided.iter().zip(&g_ours).enumerate() {
                let nominal = 0.5 * 2f64.powi(k as i32);
                // The hint each client was given: an HTTP-date is its own per call, whole
                // seconds ahead of when the server sent it.
                let hints = match case.delays {
                    Delays::None => unreachable!("{call} has no retry"),
                    Delays::Hinted(h) => Some((h, h)),
                    Delays::HintedByDate => Some((seen_sdk.date_ahead[k], seen_ours.date_ahead[k])),
                    Delays::Jittered => None,
                };
                match hints {
                    Some((theirs, h)) => {
                        if case.delays == Delays::HintedByDate {
                            assert_date_decision(&format!("{sdk} {call} retry {k}"), *d, theirs);
                        } else {
                            assert!(
                                (d - theirs).abs() <= 0.001,
                                "{sdk} {call} retry {k}: decided {d:.4} s for a hint of \
                                 {theirs:.4} s"
                            );
                        }
                        lateness.check(&format!("{name} {call} retry {k} (hinted)"), *ours, h);
                    }
                    None => {
                        assert!(
                            *d >= 0.75 * nominal && *d <= nominal,
                            "{sdk} {call} retry {k}: decided {d:.4} s, outside its own formula"
                        );
                        let mine = ours_decided[k];
                        assert!(
                            mine >= 0.75 * nominal && mine <= nominal,
                            "{name} {call} retry {k}: decided {mine:.4} s, outside the SDK's \
                             [{:.3}, {nominal:.3}] s",
                            0.75 * nominal
                        );
                        lateness.check(&format!("{name} {call} retry {k}"), *ours, mine);
                        jitter.0.push(d / nominal);
                        jitter.1.push(mine / nominal);
                    }
                }
            }
        }
        lateness.assert_median(name);
        let (d, p) = ks_two_sample(&jitter.0, &jitter.1);
        let (m_sdk, m_ours) = (mean(&jitter.0), mean(&jitter.1));
        eprintln!(
            "  jittered delays / nominal: {} decided by {sdk}, mean {m_sdk:.4}; {} decided by \
             {name}, mean {m_ours:.4}; KS D = {d:.3}, p = {p:.3}",
            jitter.0.len(),
            jitter.1.len()
        );
        assert!(jitter.0.len() >= 30 && jitter.0.len() == jitter.1.len());
        assert!(
            p > 0.01,
            "{sdk} and {name} jitter differ: KS D = {d:.3}, p = {p:.4}"
        );
        assert!(
            (m_sdk - m_ours).abs() < 0.05,
            "{sdk} mean {m_sdk:.4} vs {name} mean {m_ours:.4}"
        );
    }
    eprintln!("whole test {:.1} s", started.elapsed().as_secs_f64());
}

/// One answer's headers, for the SDK's functions and for stormrig's policy.
struct Decide {
    name: &'static str,
    status: u16,
    headers: Vec<(&'static str, String)>,
}

/// What the SDK's `_should_retry` and `_calculate_retry_timeout` say of each answer, run by
/// the interpreter `python` (the environment decides the SDK's version).
fn sdk_decisions(python: &std::path::Path, sdk: &str, cases: &[Decide]) -> Vec<(bool, f64, f64)> {
    let json: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            let headers: serde_json::Map<String, serde_json::Value> = c
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(v.clone())))
                .collect();
            serde_json::json!({"name": c.name, "status": c.status, "headers": headers})
        })
        .collect();
    let json = serde_json::Value::from(json).to_string();
    support::python::json_lines_in(python, "llm_sdk_client.py", &["decide", sdk, &json])
        .into_iter()
        .map(|v| {
            (
                v["retry"].as_bool().unwrap(),
                v["delay_s"].as_f64().unwrap(),
                v["now"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// stormrig's policy deciding on a first attempt's answer: Some(delay) or None (no retry),
/// and the wall clock it decided at (seconds since the Unix epoch).
fn stormrig_decision(preset_name: &str, c: &Decide, at: f64) -> (Option<f64>, f64) {
    let mut client = RetryClient::new(&preset(preset_name).unwrap());
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(at);
    let now = Now {
        mono: Duration::ZERO,
        epoch_wall: wall,
    };
    let mut req = client.start(now, "POST", None);
    assert!(matches!(
        client.before_attempt(now, &mut req),
        Permit::Send { .. }
    ));
    let get = |name: &str| {
        c.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    };
    let outcome = AttemptOutcome::Response(Response {
        status: c.status,
        retry_after: get("retry-after"),
        retry_after_ms: get("retry-after-ms"),
        should_retry: get("x-should-retry"),
        ..Response::default()
    });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let delay = match client.on_outcome(now, &mut req, &outcome, &mut rng) {
        Decision::Retry { after, .. } => Some(after.as_secs_f64()),
        _ => None,
    };
    let at = wall
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    (delay, at)
}

/// Answers whose hints are too long to wait for in a test, or that `x-should-retry` decides.
fn long_hints() -> Vec<Decide> {
    let ra = |v: &str| vec![("retry-after", v.to_string())];
    let in_65s = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(65));
    vec![
        Decide {
            name: "ra-65",
            status: 429,
            headers: ra("65"),
        },
        Decide {
            name: "ra-120",
            status: 429,
            headers: ra("120"),
        },
        Decide {
            name: "ra-121",
            status: 429,
            headers: ra("121"),
        },
        Decide {
            name: "ra-121-on-503",
            status: 503,
            headers: ra("121"),
        },
        Decide {
            name: "ra-ms-121000",
            status: 429,
            headers: vec![("retry-after-ms", "121000".into())],
        },
        Decide {
            name: "ra-0",
            status: 429,
            headers: ra("0"),
        },
        Decide {
            name: "ra-nan",
            status: 429,
            headers: ra("nan"),
        },
        Decide {
            name: "ra-inf",
            status: 429,
            headers: ra("inf"),
        },
        Decide {
            name: "ra-1e400",
            status: 429,
            headers: ra("1e400"),
        },
        Decide {
            name: "ra-garbage",
            status: 503,
            headers: ra("soon"),
        },
        Decide {
            name: "date-65",
            status: 503,
            headers: ra(&in_65s),
        },
        Decide {
            name: "xsr-true-ra-121",
            status: 400,
            headers: vec![
                ("x-should-retry", "true".into()),
                ("retry-after", "121".into()),
            ],
        },
        Decide {
            name: "xsr-false-ra-1",
            status: 503,
            headers: vec![
                ("x-should-retry", "false".into()),
                ("retry-after", "1".into()),
            ],
        },
        Decide {
            name: "xsr-True-400",
            status: 400,
            headers: vec![("x-should-retry", "True".into())],
        },
        Decide {
            name: "s400",
            status: 400,
            headers: vec![],
        },
        Decide {
            name: "ra-30",
            status: 429,
            headers: ra("30"),
        },
        Decide {
            name: "ra-60",
            status: 429,
            headers: ra("60"),
        },
        Decide {
            name: "ra-61",
            status: 429,
            headers: ra("61"),
        },
    ]
}

#[test]
fn hints_too_long_to_wait_for_are_decided_as_the_sdks_own_functions_decide() {
    let python = support::python::python();
    assert_decided_alike(
        &python,
        &[
            ("openai", "openai-python"),
            ("anthropic", "anthropic-python"),
        ],
    );
}

/// The previous majors (openai 1.x, anthropic 0.x, pinned in
/// `tests/python/llm-sdk-previous.txt`) against their own presets: they follow a hint only
/// up to 60 s and ignore a longer one (computed backoff, still retried), which the answers
/// above straddle (30, 60, 61, 65, 120 and 121 s, a date 65 s ahead, `retry-after-ms` of
/// 121 s).
#[test]
fn the_previous_sdk_majors_decide_as_their_presets_do() {
    let python = support::python::llm_sdk_previous();
    assert_decided_alike(
        &python,
        &[
            ("openai", "openai-python-v1"),
            ("anthropic", "anthropic-python-v0"),
        ],
    );
}

/// Each SDK's decisions on [`long_hints`] beside its preset's: whether to retry equal; a
/// hinted delay equal (within 1 ms, or the time between the two computations for a date),
/// but for stormrig's 300 s ceiling; an unhinted one in the jitter range for both.
fn assert_decided_alike(python: &std::path::Path, pairs: &[(&str, &str)]) {
    let cases = long_hints();
    const CEILING: f64 = 300.0;
    for &(sdk, name) in pairs {
        let theirs = sdk_decisions(python, sdk, &cases);
        assert_eq!(theirs.len(), cases.len());
        eprintln!("{sdk} vs {name}: answer, SDK retry/delay | stormrig");
        for (c, (retry, delay, at)) in cases.iter().zip(theirs) {
            // Decided at the SDK's own instant: a date hint means the same wait to both,
            // however long the SDK's process took to start.
            let (ours, our_at) = stormrig_decision(name, c, at);
            eprintln!("  {:<16} {retry} {delay:.3} | {ours:?}", c.name);
            assert_eq!(ours.is_some(), retry, "{sdk} {}: whether to retry", c.name);
            let Some(ours) = ours else { continue };
            let jittered = |d: f64| (0.375..=0.5).contains(&d);
            if jittered(delay) {
                assert!(
                    jittered(ours),
                    "{name} {}: {ours} outside the jitter range",
                    c.name
                );
            } else if c.name.starts_with("date") {
                let skew = (at - our_at).abs() + 0.001;
                assert!(
                    (ours - delay).abs() <= skew,
                    "{name} {}: {ours} vs the SDK's {delay} (computed {skew:.3} s apart)",
                    c.name
                );
            } else {
                assert!(
                    (ours - delay.min(CEILING)).abs() <= 0.001,
                    "{name} {}: {ours} vs the SDK's {delay} (stormrig's ceiling {CEILING} s)",
                    c.name
                );
            }
        }
    }
}

#[test]
fn the_ks_test_tells_the_sdk_jitter_from_full_jitter() {
    // Without power the distribution check above would prove nothing: 42 draws of the
    // SDK's U(0.75, 1] against 42 of full jitter U(0, 1] must be told apart.
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    use rand::Rng;
    let sdk: Vec<f64> = (0..42).map(|_| 1.0 - 0.25 * r.gen::<f64>()).collect();
    let full: Vec<f64> = (0..42).map(|_| r.gen::<f64>()).collect();
    let same: Vec<f64> = (0..42).map(|_| 1.0 - 0.25 * r.gen::<f64>()).collect();
    assert!(ks_two_sample(&sdk, &full).1 < 0.01);
    assert!(ks_two_sample(&sdk, &same).1 > 0.01);
}
