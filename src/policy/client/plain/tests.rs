//! The bare way decides as the long ways do: the same permits, decisions and request
//! state, outcome after outcome, for every config that takes it.

use super::super::{RequestState, RetryClient};
use crate::policy::outcome::TransportError;
use crate::policy::{
    preset, preset_names, AttemptOutcome, Decision, Now, Permit, Response, RetryConfig,
};
use rand::SeedableRng;
use std::time::Duration;

/// Outcomes that reach every arm: success, the failure classes, the transports that did
/// and did not reach the server, the local resource.
fn outcomes() -> Vec<AttemptOutcome<'static>> {
    let mut v: Vec<AttemptOutcome<'static>> = [200, 204, 404, 429, 500, 503, 504]
        .into_iter()
        .map(|s| AttemptOutcome::Response(Response::status(s)))
        .collect();
    v.extend(
        [
            TransportError::ConnectRefused,
            TransportError::Reset,
            TransportError::PerTryTimeout,
            TransportError::LocalResource,
        ]
        .map(AttemptOutcome::Transport),
    );
    v
}

/// The configs the bare way serves: the presets that take it, and variants that stop a
/// non-idempotent retry, key it, or time each try out.
fn bare_configs() -> Vec<(String, RetryConfig)> {
    let mut v = Vec::new();
    for name in preset_names() {
        let config = preset(name).unwrap();
        if !super::Paths::of(&config).bare {
            continue;
        }
        v.push((
            format!("{name} no non-idempotent retry"),
            RetryConfig {
                retry_non_idempotent: false,
                ..config.clone()
            },
        ));
        v.push((
            format!("{name} keyed"),
            RetryConfig {
                retry_non_idempotent: false,
                idempotency_key: true,
                ..config.clone()
            },
        ));
        v.push((
            format!("{name} per-try timeout"),
            RetryConfig {
                per_try_timeout: Some(Duration::from_millis(300)),
                ..config.clone()
            },
        ));
        v.push((name.to_string(), config));
    }
    v
}

/// One request driven through `outcomes` (as many as its attempts take) by both ways;
/// every step compared.
fn drive(name: &str, config: &RetryConfig, method: &str, outcomes: &[AttemptOutcome<'_>]) {
    let now = Now::virtual_at(Duration::from_millis(5));
    let mut bare = RetryClient::new(config);
    let mut long = RetryClient::new(config);
    assert!(bare.shared.paths.bare, "{name}");
    let mut b = bare.start(now, method, None);
    let mut l = long.start(now, method, None);
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let same = |b: &RequestState, l: &RequestState, at: &str| {
        assert_eq!(format!("{b:?}"), format!("{l:?}"), "{name} {method} {at}");
    };
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(bare.bare_for(&b), "{name}");
        let permit = long.before_attempt(now, &mut l);
        match bare.take_bare_attempt(&mut b) {
            Some(send) => assert_eq!(
                permit,
                Permit::Send {
                    attempt: send.attempt,
                    timeout: send.timeout,
                    remaining_deadline: None,
                    idempotency_key: send.idempotency_key,
                    provider: None,
                },
                "{name} {method} permit {i}"
            ),
            None => {
                assert!(matches!(permit, Permit::Refuse(_)), "{name} {method} {i}");
                // The bare way leaves a refused request to the long way, untouched.
                assert_eq!(bare.before_attempt(now, &mut b), permit, "{name} {i}");
                same(&b, &l, "refused");
                break;
            }
        }
        same(&b, &l, "sent");
        assert_eq!(bare.cost_spent(), long.cost_spent(), "{name}");
        let d = long.on_outcome(now, &mut l, outcome, &mut rng);
        assert_eq!(
            bare.on_bare_outcome(&mut b, outcome),
            d,
            "{name} {method} {outcome:?}"
        );
        same(&b, &l, "decided");
        if !matches!(d, Decision::Retry { .. }) {
            break;
        }
    }
    assert!(!bare.has_events() && !long.has_events(), "{name}");
    long.finish(now, l);
    bare.finish(now, b);
}

#[test]
fn the_bare_way_decides_as_the_long_way_does() {
    let configs = bare_configs();
    assert!(
        configs.iter().any(|(n, _)| n == "naive"),
        "naive takes the bare way"
    );
    let all = outcomes();
    for (name, config) in &configs {
        for method in ["GET", "POST"] {
            // Each outcome repeated until the request ends, then each after a failure.
            for o in &all {
                drive(name, config, method, &vec![*o; 6]);
                let after_failure = [all[5], all[5], *o, all[5], *o];
                drive(name, config, method, &after_failure);
            }
        }
    }
}

#[test]
fn a_deadline_a_budget_or_a_wait_leaves_the_bare_way() {
    let naive = preset("naive").unwrap();
    let now = Now::virtual_at(Duration::ZERO);
    let mut c = RetryClient::new(&naive);
    let inherited = c.start(now, "GET", Some(Duration::from_secs(1)));
    assert!(!c.bare_for(&inherited), "a request with a deadline");
    let plain = c.start(now, "GET", None);
    assert!(c.bare_for(&plain));
    for name in ["aws-standard", "envoy", "grpc"] {
        if let Ok(config) = preset(name) {
            assert!(!super::Paths::of(&config).bare, "{name}");
        }
    }
}
