//! The `aws-standard-classic` and `aws-legacy` presets held against botocore 1.43 (its last
//! 1.43 release, in an environment of its own, `tests/python/venv.sh botocore-1.43.txt`), in standard
//! and legacy retry mode, call by call over one loopback timeline (see
//! `support::aws_timeline`): botocore's classification calls, where 1.43 differs from 1.44
//! (a bare 429 is not retried in standard mode, `x-amz-retry-after` is ignored), then for
//! the classic quota (cost 5 per retry) a storm and throttled calls and a refill. The storm
//! does not drain the quota: at 5 a retry and delays of up to 1 s and 2 s that would take
//! 50 calls and over a minute per client; the refusal itself is the code `aws-standard`'s
//! test drives to the bottom. Delays lie in `[0, 2^k)` s (capped at 20 s in standard mode,
//! uncapped in legacy mode), whatever the answer.

use crate::support;
use crate::support::aws_timeline::{
    amz_hinted, classification, draws_from_json, hold, status, Answer, Call, Rules,
};

fn botocore_calls(mode: &'static str) -> impl FnOnce(&str, usize) -> Vec<Call> {
    move |base, n| {
        let python = support::python::botocore_1_43();
        let n = n.to_string();
        support::python::json_lines_in(&python, "botocore_client.py", &["calls", base, &n, mode])
            .iter()
            .map(Call::from_json)
            .collect()
    }
}

/// `n` draws of botocore 1.43's own backoff function per retry, in retry mode `mode`.
fn botocore_draws(mode: &str, n: usize) -> Vec<Vec<f64>> {
    let python = support::python::botocore_1_43();
    let n = n.to_string();
    draws_from_json(&support::python::json_lines_in(
        &python,
        "botocore_client.py",
        &["draws", &n, mode],
    ))
}

fn standard_draws(n: usize) -> Vec<Vec<f64>> {
    botocore_draws("standard", n)
}

fn legacy_draws(n: usize) -> Vec<Vec<f64>> {
    botocore_draws("legacy", n)
}

/// `[0, min(2^k, 20))` s: botocore 1.43's standard mode, one base for every kind.
fn range_classic(_: &Answer, k: usize) -> f64 {
    2f64.powi(k as i32).min(20.0)
}

/// `[0, 2^k)` s: legacy mode, no cap.
fn range_legacy(_: &Answer, k: usize) -> f64 {
    2f64.powi(k as i32)
}

fn no_hint(_: &Answer) -> Option<f64> {
    None
}

#[test]
fn aws_standard_classic_retries_as_botocore_1_43_does_call_by_call() {
    let mut timeline = classification();
    timeline.extend(std::iter::repeat_n(vec![status(503, None); 3], 10));
    timeline.extend(std::iter::repeat_n(
        vec![status(400, Some("Throttling"))],
        3,
    ));
    timeline.extend(std::iter::repeat_n(vec![], 5));
    let rules = Rules {
        preset: "aws-standard-classic",
        sdk: "botocore 1.43 standard",
        range: range_classic,
        hinted: amz_hinted,
        hint: no_hint,
        hint_slack: 0.0,
        min_refused: 0,
        draws: standard_draws,
    };
    hold(&rules, timeline, botocore_calls("standard"));
}

#[test]
fn aws_legacy_retries_as_botocore_1_43_does_call_by_call() {
    let rules = Rules {
        preset: "aws-legacy",
        sdk: "botocore 1.43 legacy",
        range: range_legacy,
        hinted: amz_hinted,
        hint: no_hint,
        hint_slack: 0.0,
        min_refused: 0,
        draws: legacy_draws,
    };
    hold(&rules, classification(), botocore_calls("legacy"));
}
