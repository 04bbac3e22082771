//! The `aws-js-v3` preset held against the AWS SDK for JavaScript v3's retry strategy
//! (`@smithy/util-retry`, pinned in `tests/node/package-lock.json`), driven by the SDK's own
//! retry middleware in `tests/node/aws_js_v3_client.js`, call by call over one loopback
//! timeline (see `support::aws_timeline`): botocore's classification calls, then what the
//! JavaScript SDK reads differently (`Retry-After` in whole and fractional seconds, a long
//! one kept to `t + 5 s`, a past HTTP-date, a throttling code on a 503, a 501 that is not
//! retried), storms that drain the quota, throttled calls at the bottom, a refill and a
//! second storm. Delays lie in `[0, base x 2^k)` with base 50 ms (1 s for throttling);
//! a hinted one is `max(t, min(hint, t + 5 s))`.

use crate::support;
use crate::support::aws_timeline::{
    amz_hint, amz_hinted, classification, draws_from_json, hold, range_2026, status, storms,
    Answer, Call, Rules,
};

fn js_calls(base: &str, n: usize) -> Vec<Call> {
    support::node::json_lines("aws_js_v3_client.js", &["calls", base, &n.to_string()])
        .iter()
        .map(Call::from_json)
        .collect()
}

fn js_draws(n: usize) -> Vec<Vec<f64>> {
    draws_from_json(&support::node::json_lines(
        "aws_js_v3_client.js",
        &["draws", &n.to_string()],
    ))
}

/// A `Retry-After` this many seconds (digits, maybe a fraction), or a past date: 0.
fn retry_after(a: &Answer) -> Option<f64> {
    amz_hint(a).or_else(|| match a {
        Answer::Status(_, _, extra) => {
            extra
                .iter()
                .find(|(k, _)| *k == "retry-after")
                .map(|(_, v)| {
                    if v.ends_with("GMT") {
                        0.0
                    } else {
                        v.parse().unwrap()
                    }
                })
        }
        Answer::Reset => None,
    })
}

#[test]
fn aws_js_v3_retries_as_the_javascript_sdk_does_call_by_call() {
    let ra = |v: &'static str| Answer::Status(503, None, vec![("retry-after", v)]);
    let mut timeline = classification();
    timeline.extend([
        vec![ra("1")],
        vec![ra("0.5"), ra("1")],
        vec![Answer::Status(429, None, vec![("retry-after", "65")])],
        vec![ra("Sun, 06 Nov 1994 08:49:37 GMT")],
        vec![status(503, Some("SlowDown")), status(503, None)],
        vec![status(501, None)],
        vec![Answer::Reset, Answer::Reset],
    ]);
    timeline.extend(storms());
    let rules = Rules {
        preset: "aws-js-v3",
        sdk: "@smithy/util-retry",
        range: range_2026,
        hinted: amz_hinted,
        hint: retry_after,
        // The SDK turns a hint into a date when it reads the answer and subtracts the
        // clock when it decides, a few milliseconds later.
        hint_slack: 0.010,
        min_refused: 4,
        draws: js_draws,
    };
    hold(&rules, timeline, js_calls);
}
