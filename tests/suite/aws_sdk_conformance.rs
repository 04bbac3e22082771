//! The `aws-standard` preset held against botocore (the AWS SDK for Python's core, pinned in
//! `tests/python/requirements.txt`) in standard retry mode, call by call over one loopback
//! timeline (see `support::aws_timeline`): the classification (transient statuses,
//! throttling by status and by error code, transient error codes, what is not retried, a
//! reset, an `x-amz-retry-after` hint), storms that drain the quota, throttled calls at the
//! bottom, a refill by successes and a second storm. Delays lie in `[0, base x 2^k)` with
//! base 50 ms (1 s for throttling); the hinted one is `max(t, min(hint, t + 5 s))`.

use crate::support;
use crate::support::aws_timeline::{
    amz_hint, amz_hinted, classification, draws_from_json, hold, range_2026, storms, Call, Rules,
};

fn botocore_calls(base: &str, n: usize) -> Vec<Call> {
    support::python::json_lines("botocore_client.py", &["calls", base, &n.to_string()])
        .iter()
        .map(Call::from_json)
        .collect()
}

fn botocore_draws(n: usize) -> Vec<Vec<f64>> {
    draws_from_json(&support::python::json_lines(
        "botocore_client.py",
        &["draws", &n.to_string(), "standard"],
    ))
}

#[test]
fn aws_standard_retries_as_botocore_does_call_by_call() {
    let mut timeline = classification();
    timeline.extend(storms());
    let rules = Rules {
        preset: "aws-standard",
        sdk: "botocore",
        range: range_2026,
        hinted: amz_hinted,
        hint: amz_hint,
        hint_slack: 0.0,
        min_refused: 4,
        draws: botocore_draws,
    };
    hold(&rules, timeline, botocore_calls);
}
