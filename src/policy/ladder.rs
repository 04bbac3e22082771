//! The degradation ladder: what a client answers itself when its providers could not.
//!
//! An agent platform whose providers are all down (every breaker open) or whose request
//! spent its attempts still owes its user an answer, a worse one: a cached answer for a
//! share of requests (those whose prompt happens to be in the cache), a static fallback
//! for the rest. Such an answer costs nothing downstream, and it is neither a success (the
//! user did not get what was asked) nor a failure (the user got something): a request the
//! ladder answers ends **degraded**, counted per rung.
//!
//! `ladder = [{ cached = 0.6 }, { static = true }]`: rungs are tried in order; a `cached`
//! rung answers `share` of the requests that reach it, picked by a seeded draw per request
//! (the caller supplies it, one per rung), the rest fall to the next rung; `static` answers
//! every request. A request no rung answers keeps its failure.
//!
//! The ladder answers only where a fallback is honest: not after a non-retryable answer
//! (the request itself was wrong), nor for a request that may have had a side effect and
//! was not retried for that reason, nor when the load generator's own machine failed.

use serde::{Deserialize, Serialize};

use super::client::GiveUpReason;
use super::error::PolicyError;

/// One rung of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Rung {
    /// `{ cached = share }`: a cached answer for `share` ∈ (0, 1] of the requests.
    Cached(f64),
    /// `{ static = true }`: a static fallback for every request.
    Static(bool),
}

impl Rung {
    /// The rung's name in reports.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Cached(_) => "cached",
            Rung::Static(_) => "static",
        }
    }
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
    mut draw: impl FnMut(usize) -> f64,
) -> Option<usize> {
    if !degradable(reason) {
        return None;
    }
    ladder.iter().enumerate().find_map(|(i, rung)| {
        let takes = match *rung {
            Rung::Cached(share) => draw(i) < share,
            Rung::Static(on) => on,
        };
        takes.then_some(i)
    })
}

/// Shares in (0, 1], `static = true` and nothing after it (no request reaches it).
pub fn validate(ladder: &[Rung]) -> Result<(), PolicyError> {
    for (i, rung) in ladder.iter().enumerate() {
        let field = format!("ladder[{i}]");
        match *rung {
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
