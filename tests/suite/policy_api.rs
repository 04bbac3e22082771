//! The policy API as an engine sees it from outside the crate: resolve a config from TOML, drive
//! a request through `RetryClient`, write attempt-log labels, read thresholds.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use stormrig::policy::{
    attempt_label, preset_names, thresholds, AttemptOutcome, Decision, GiveUpReason, Now, Permit,
    Response, RetryClient, RetryConfigSpec, TransportError, REFUSED_LABEL,
};

#[test]
fn engine_loop_from_outside_the_crate() {
    let spec = RetryConfigSpec::from_toml(
        r#"
name = "edge"
preset = "aws-standard"
deadline = "2s"
per_try_timeout = "500ms"
"#,
    )
    .unwrap();
    let config = spec.resolve().unwrap();
    let mut client = RetryClient::new(&config);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let script = [
        AttemptOutcome::Transport(TransportError::ReadTimeout),
        AttemptOutcome::Response(Response::status(503)),
        AttemptOutcome::Response(Response::status(200)),
    ];
    let mut now = Now::virtual_at(Duration::ZERO);
    let mut req = client.start(now, "GET", Some(Duration::from_secs(5)));
    let mut log = vec![];
    for outcome in &script {
        match client.before_attempt(now, &mut req) {
            Permit::Refuse(_) => {
                log.push(REFUSED_LABEL);
                break;
            }
            Permit::Send { timeout, .. } => {
                assert!(timeout.unwrap() <= Duration::from_millis(500));
                let d = client.on_outcome(now, &mut req, outcome, &mut rng);
                log.push(attempt_label(outcome, d.class()).as_str());
                match d {
                    Decision::Retry { after, .. } => now = Now::virtual_at(now.mono + after),
                    _ => break,
                }
            }
        }
    }
    assert_eq!(req.attempts(), 3);
    client.finish(now, req);
    assert_eq!(log, ["timeout", "transient", "ok"]);
    // 500 - 14 - 14 + 14 (refund of the last acquisition)
    assert_eq!(client.budget_level(), Some(486.0));
    assert!(preset_names().contains(&"aws-standard"));
    let json = serde_json::to_string(client.config()).unwrap();
    assert!(json.contains("\"aws-quota\""));
    let _ = GiveUpReason::BudgetRefused;
}

#[test]
fn thresholds_report_is_self_describing() {
    let config = stormrig::policy::preset("no-retry").unwrap();
    let report = thresholds::compute(&config, None, 1);
    let v = serde_json::to_value(&report).unwrap();
    assert!(v["transient"]["closed_form"].is_null());
    assert!(v["transient"]["reason"]
        .as_str()
        .unwrap()
        .contains("no retry budget"));
}
