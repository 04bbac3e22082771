//! The degradation ladder: what a client answers itself when its providers could not.
//!
//! An agent platform whose providers are all down (every breaker open) or whose request
//! spent its attempts still owes its user an answer, a worse one: a cached answer for a
//! share of requests (those whose prompt happens to be in the cache), a static fallback
//! for the rest. Such an answer costs nothing downstream, and it is neither a success (the
//! user did not get what was asked) nor a failure (the user got something): a request the
//! ladder answers ends **degraded**, counted per rung.
//!
//! `ladder = [{ model = "small" }, { cached = 0.6 }, { static = true }]`: rungs are tried in
//! order. A `model` rung sends the request once more, to another provider (a lighter model:
//! it costs tokens there, and counts as an attempt); when that provider answers, the request
//! ends degraded at that rung, otherwise it falls to the next rung. A `cached` rung answers
//! `share` of the requests that reach it, picked by a seeded draw per request (the caller
//! supplies it, one per rung), the rest fall to the next rung; `static` answers every
//! request. A request no rung answers keeps its failure.
//!
//! The ladder answers only where a fallback is honest: not after a non-retryable answer
//! (the request itself was wrong), nor for a request that may have had a side effect and
//! was not retried for that reason, nor when the load generator's own machine failed.

use serde::{Deserialize, Serialize};

use super::error::PolicyError;
use super::give_up::GiveUpReason;

/// One rung of the ladder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Rung {
    /// `{ model = "NAME" }`: one more attempt, at provider `NAME` (a lighter model).
    Model(String),
    /// `{ cached = share }`: a cached answer for `share` ∈ (0, 1] of the requests.
    Cached(f64),
    /// `{ static = true }`: a static fallback for every request.
    Static(bool),
}

impl Rung {
    /// The rung's name in reports: `cached`, `static`, or `model NAME`.
    pub fn label(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Rung::Model(name) => format!("model {name}").into(),
            Rung::Cached(_) => "cached".into(),
            Rung::Static(_) => "static".into(),
        }
    }

    /// The provider a `model` rung sends its attempt to.
    pub fn model(&self) -> Option<&str> {
        match self {
            Rung::Model(name) => Some(name),
            _ => None,
        }
    }
}

/// What the ladder does for a request that gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Rung `i` answers it (cached, static).
    Answer(usize),
    /// Rung `i` is a model: send the request there once; its answer decides.
    Try(usize),
}

/// Would the ladder answer a request that gave up for `reason`?
pub fn degradable(reason: GiveUpReason) -> bool {
    !matches!(
        reason,
        GiveUpReason::NonRetryable | GiveUpReason::NotIdempotent | GiveUpReason::LocalResource
    )
}

/// The rung that answers a request that gave up for `reason`, if any; `draw(i)` is the
/// request's uniform draw in [0, 1) for rung `i`.
pub fn answer(
    ladder: &[Rung],
    reason: GiveUpReason,
    draw: impl FnMut(usize) -> f64,
) -> Option<usize> {
    match fall_from(ladder, 0, reason, draw)? {
        Fallback::Answer(i) | Fallback::Try(i) => Some(i),
    }
}

/// The first rung from `from` on that takes a request that gave up for `reason`: one that
/// answers it, or a model to try; `None` when none does. After a model rung whose provider
/// did not answer, the caller asks again from the rung after it.
pub fn fall_from(
    ladder: &[Rung],
    from: usize,
    reason: GiveUpReason,
    mut draw: impl FnMut(usize) -> f64,
) -> Option<Fallback> {
    if !degradable(reason) {
        return None;
    }
    ladder
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(i, rung)| match rung {
            Rung::Model(_) => Some(Fallback::Try(i)),
            Rung::Cached(share) => (draw(i) < *share).then_some(Fallback::Answer(i)),
            Rung::Static(on) => on.then_some(Fallback::Answer(i)),
        })
}

/// Shares in (0, 1], `static = true` and nothing after it (no request reaches it).
pub fn validate(ladder: &[Rung]) -> Result<(), PolicyError> {
    for (i, rung) in ladder.iter().enumerate() {
        let field = format!("ladder[{i}]");
        match *rung {
            Rung::Model(ref name) if name.is_empty() || name.contains('/') => {
                return Err(PolicyError::invalid(
                    format!("{field}.model"),
                    name,
                    "the name of a [[provider]] of the scenario",
                ))
            }
            Rung::Cached(share) if !(share > 0.0 && share <= 1.0) => {
                return Err(PolicyError::invalid(
                    format!("{field}.cached"),
                    share,
                    "a share in (0, 1]",
                ))
            }
            Rung::Static(false) => {
                return Err(PolicyError::invalid(
                    format!("{field}.static"),
                    false,
                    "true (leave the rung out otherwise)",
                ))
            }
            _ => {}
        }
        let last_for_all = matches!(rung, Rung::Static(true) | Rung::Cached(1.0));
        if last_for_all && i + 1 < ladder.len() {
            return Err(PolicyError::invalid(
                format!("ladder[{}]", i + 1),
                ladder[i + 1].label(),
                "no rung after one that answers every request",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: [Rung; 2] = [Rung::Cached(0.6), Rung::Static(true)];

    #[test]
    fn cached_answers_its_share_and_static_the_rest() {
        let max = GiveUpReason::MaxAttempts;
        assert_eq!(answer(&LADDER, max, |_| 0.59), Some(0));
        assert_eq!(answer(&LADDER, max, |_| 0.6), Some(1));
        assert_eq!(answer(&LADDER[..1], max, |_| 0.6), None, "no rung left");
        assert_eq!(answer(&[], GiveUpReason::BreakerOpen, |_| 0.0), None);
        // Each rung its own draw.
        let two = [Rung::Cached(0.5), Rung::Cached(0.5)];
        assert_eq!(answer(&two, max, |i| [0.9, 0.1][i]), Some(1));
    }

    #[test]
    fn no_fallback_for_a_wrong_request_or_a_possible_side_effect() {
        for r in GiveUpReason::ALL {
            let got = answer(&LADDER, r, |_| 0.0);
            assert_eq!(got.is_some(), degradable(r), "{r:?}");
        }
        assert!(!degradable(GiveUpReason::NotIdempotent));
        assert!(degradable(GiveUpReason::BreakerOpen));
    }

    #[test]
    fn a_model_rung_is_tried_and_the_ladder_goes_on_after_it() {
        let ladder = [
            Rung::Model("small".into()),
            Rung::Cached(0.5),
            Rung::Static(true),
        ];
        let max = GiveUpReason::MaxAttempts;
        assert_eq!(fall_from(&ladder, 0, max, |_| 0.9), Some(Fallback::Try(0)));
        assert_eq!(
            fall_from(&ladder, 1, max, |_| 0.1),
            Some(Fallback::Answer(1))
        );
        assert_eq!(
            fall_from(&ladder, 1, max, |_| 0.9),
            Some(Fallback::Answer(2))
        );
        assert_eq!(fall_from(&ladder, 3, max, |_| 0.0), None);
        assert_eq!(
            fall_from(&ladder, 0, GiveUpReason::NotIdempotent, |_| 0.0),
            None
        );
        assert_eq!(ladder[0].label(), "model small");
        assert_eq!(ladder[0].model(), Some("small"));
        validate(&ladder).unwrap();
        assert!(validate(&[Rung::Model(String::new())])
            .unwrap_err()
            .to_string()
            .contains("ladder[0].model"));
    }

    #[test]
    fn validation_names_the_rung() {
        let bad = |l: &[Rung]| validate(l).unwrap_err().to_string();
        assert!(bad(&[Rung::Cached(1.5)]).contains("ladder[0].cached"));
        assert!(bad(&[Rung::Cached(0.0)]).contains("ladder[0].cached"));
        assert!(bad(&[Rung::Cached(0.5), Rung::Static(false)]).contains("ladder[1].static"));
        assert!(bad(&[Rung::Static(true), Rung::Cached(0.5)]).contains("ladder[1]"));
        validate(&LADDER).unwrap();
        validate(&[]).unwrap();
    }

    #[test]
    fn parses_as_written() {
        #[derive(Deserialize)]
        struct T {
            ladder: Vec<Rung>,
        }
        let t: T = toml::from_str("ladder = [{ cached = 0.6 }, { static = true }]").unwrap();
        assert_eq!(t.ladder, LADDER);
    }
}
