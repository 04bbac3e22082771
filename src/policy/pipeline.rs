//! The order of a config's stages around one call, outermost first (`pipeline = ["timeout",
//! "retry", "breaker", "timeout"]`), and where that order changes what the client does.
//!
//! Most stages sit where their definition puts them: an overall `deadline` is a timeout
//! outside the retry, a `per_try_timeout` one inside it, a send-rate limiter is asked before
//! each send (botocore acquires on `before-send`). Writing them in the list only checks that
//! the reader's picture agrees with the config. The breaker is different: on which side of
//! the retry it stands decides what the client sends during an outage.
//!
//! * **Breaker outside the retry** (`["breaker", "retry"]`): the breaker is asked once per
//!   call, before its first attempt, and learns one outcome per call (the call's last). An
//!   open breaker fails the call before any attempt; a half-open breaker lets
//!   `half_open_probes` calls through, each with all of its retries. This is the order the
//!   retry pattern prescribes: the breaker contains what the retries would have sent.
//! * **Breaker inside the retry** (`["retry", "breaker"]`): each attempt asks the breaker and
//!   each attempt's outcome is recorded. An open-circuit refusal is a failed attempt the
//!   retry handles like any other retryable failure: it waits its backoff and asks again, so
//!   the call spends its attempts on refusals and re-sends as soon as the breaker half-opens.
//!   This is what Polly v8 and resilience4j do when built this way, by reading their source
//!   (not a run beside them): Polly's `RetryStrategyOptions.ShouldHandle` defaults to
//!   `DefaultPredicates.HandleOutcome`, every exception but `OperationCanceledException`
//!   (App-vNext/Polly 173d6d1, `src/Polly.Core/Retry/RetryStrategyOptions.TResult.cs` line
//!   99, `src/Polly.Core/Utils/DefaultPredicates.cs` line 6), and the open breaker's
//!   `BrokenCircuitException` is an `ExecutionRejectedException : Exception`
//!   (`src/Polly.Core/CircuitBreaker/BrokenCircuitException.cs` line 13); resilience4j's
//!   `RetryConfig` retries on `DEFAULT_RECORD_FAILURE_PREDICATE = throwable -> true` when no
//!   exception list is given (resilience4j af9e7c9, `resilience4j-retry/src/main/java/io/
//!   github/resilience4j/retry/RetryConfig.java` lines 43 and 428-431), and the open
//!   breaker's `CallNotPermittedException` is a `RuntimeException` (`resilience4j-
//!   circuitbreaker/.../CallNotPermittedException.java` line 25).
//! * **No `pipeline` written**: each attempt asks the breaker and is recorded, and a refusal
//!   ends the call without retrying it: what stormrig has always run, kept so that no
//!   existing config changes. No preset has a breaker.
//!
//! The bulkhead too may stand on either side. **Inside the retry** (the default, and
//! resilience4j's `Decorators` order, its `Bulkhead` innermost) each attempt takes a place
//! and gives it back with its outcome, so a call waiting out its backoff holds none.
//! **Outside the retry** (`["bulkhead", "retry"]`, Polly's concurrency limiter placed first
//! in a pipeline) a call takes a place before its first attempt and keeps it through its
//! backoffs and retries until it ends: the bulkhead bounds calls in flight, not attempts.

use super::error::{check, PolicyError};
use serde::{Deserialize, Serialize};

/// One stage of a call's pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Outside the retry: the overall `deadline`; inside it: the `per_try_timeout`.
    Timeout,
    /// The retry loop (attempts, backoff, budget).
    Retry,
    /// The circuit breaker.
    Breaker,
    /// The send-rate limiter (`rate_limiter`).
    RateLimiter,
    /// Hedged copies (in place of the retry).
    Hedging,
    /// The bulkhead (`bulkhead`).
    Bulkhead,
    /// The adaptive concurrency limiter (`concurrency_limit`).
    ConcurrencyLimit,
}

impl Stage {
    fn word(self) -> &'static str {
        match self {
            Stage::Timeout => "timeout",
            Stage::Retry => "retry",
            Stage::Breaker => "breaker",
            Stage::RateLimiter => "rate-limiter",
            Stage::Hedging => "hedging",
            Stage::Bulkhead => "bulkhead",
            Stage::ConcurrencyLimit => "concurrency-limit",
        }
    }
}

/// A written stage order, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pipeline(pub Vec<Stage>);

/// Where a config's breaker stands, which decides what its open state does to a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BreakerPlace {
    /// No order written: each attempt asks, a refusal ends the call.
    #[default]
    PerAttempt,
    /// Inside the retry: each attempt asks, a refusal is a failure the retry re-sends.
    InsideRetry,
    /// Outside the retry: each call asks once and is recorded once.
    OutsideRetry,
}

impl Pipeline {
    /// Whether the bulkhead stands outside the retry: one place per call, held until the
    /// call ends (see the module's doc).
    pub fn bulkhead_outside(&self) -> bool {
        match (
            self.0.iter().position(|s| *s == Stage::Bulkhead),
            self.loop_at(),
        ) {
            (Some(b), Some(r)) => b < r,
            _ => false,
        }
    }
}

/// What of the config a pipeline must agree with: which stages it has.
#[derive(Clone, Copy, Debug)]
pub struct Present {
    /// An overall deadline is set.
    pub deadline: bool,
    /// A per-try timeout is set.
    pub per_try_timeout: bool,
    /// A breaker is set.
    pub breaker: bool,
    /// A failover list is set (its breakers are per provider, inside the retry).
    pub failover: bool,
    /// A send-rate limiter is set.
    pub rate_limiter: bool,
    /// Hedging is set.
    pub hedging: bool,
    /// A bulkhead is set.
    pub bulkhead: bool,
    /// The bulkhead is one per provider (`failover.bulkhead`).
    pub bulkhead_per_provider: bool,
    /// An adaptive concurrency limiter is set.
    pub concurrency_limit: bool,
}

impl Pipeline {
    /// The position of the call's loop: the retry, or hedging in its place.
    fn loop_at(&self) -> Option<usize> {
        self.0
            .iter()
            .position(|s| matches!(s, Stage::Retry | Stage::Hedging))
    }

    /// Where the breaker stands in this order.
    pub fn breaker_place(&self) -> BreakerPlace {
        match (
            self.0.iter().position(|s| *s == Stage::Breaker),
            self.loop_at(),
        ) {
            (Some(b), Some(r)) if b < r => BreakerPlace::OutsideRetry,
            (Some(_), Some(_)) => BreakerPlace::InsideRetry,
            _ => BreakerPlace::PerAttempt,
        }
    }

    /// Refuse an order that names a stage the config lacks, leaves out one it has, repeats
    /// one, or puts one where its definition cannot stand.
    pub fn validate(&self, has: Present) -> Result<(), PolicyError> {
        let stages = &self.0;
        let words: Vec<&str> = stages.iter().map(|s| s.word()).collect();
        let list = format!("[{}]", words.join(", "));
        let count = |s: Stage| stages.iter().filter(|x| **x == s).count();
        let looped = count(Stage::Retry) + count(Stage::Hedging);
        check(
            looped == 1,
            "pipeline",
            &list,
            "exactly one \"retry\" (or \"hedging\", in its place): the loop the other stages \
             stand inside or outside of",
        )?;
        check(
            (count(Stage::Hedging) == 1) == has.hedging,
            "pipeline",
            &list,
            "\"hedging\" in place of \"retry\" exactly when the config has a hedging table",
        )?;
        let at = self.loop_at().unwrap_or(0);
        let (outer, inner) = stages.split_at(at);
        let inner = &inner[1..];
        for (side, stages) in [("outside", outer), ("inside", inner)] {
            for s in [Stage::Timeout, Stage::Breaker, Stage::RateLimiter] {
                check(
                    stages.iter().filter(|x| **x == s).count() <= 1,
                    "pipeline",
                    &list,
                    &format!("\"{}\" at most once {side} the retry", s.word()),
                )?;
            }
        }
        Self::validate_sides(outer, inner, has, &list)
    }

    /// The stages on each side of the loop (`outer`, `inner`) against the config's.
    fn validate_sides(
        outer: &[Stage],
        inner: &[Stage],
        has: Present,
        list: &str,
    ) -> Result<(), PolicyError> {
        let count = |s: Stage| outer.iter().chain(inner).filter(|x| **x == s).count();
        check(
            outer.contains(&Stage::Timeout) == has.deadline,
            "pipeline",
            list,
            "\"timeout\" before (outside) \"retry\" exactly when the config has a deadline: \
             a timeout around the retry is the whole call's",
        )?;
        check(
            inner.contains(&Stage::Timeout) == has.per_try_timeout,
            "pipeline",
            list,
            "\"timeout\" after (inside) \"retry\" exactly when the config has a \
             per_try_timeout: a timeout inside the retry is one attempt's",
        )?;
        check(
            (count(Stage::Breaker) == 1) == has.breaker,
            "pipeline",
            list,
            "\"breaker\" once exactly when the config has a breaker table",
        )?;
        check(
            !(has.failover && has.breaker),
            "pipeline",
            list,
            "no pipeline beside failover with a breaker: its breakers are one per provider, \
             asked by each attempt, and stand inside the retry only",
        )?;
        check(
            (count(Stage::RateLimiter) == 1) == has.rate_limiter,
            "pipeline",
            list,
            "\"rate-limiter\" once exactly when the config has a rate_limiter",
        )?;
        for (s, has) in [
            (Stage::Bulkhead, has.bulkhead),
            (Stage::ConcurrencyLimit, has.concurrency_limit),
        ] {
            check(
                (count(s) == 1) == has,
                "pipeline",
                list,
                &format!(
                    "\"{}\" once exactly when the config has a {} table",
                    s.word(),
                    s.word().replace('-', "_")
                ),
            )?;
        }
        // Inside the retry the stages stand in the order stormrig asks them, the only one
        // it runs: a list in another order would describe a client it does not model.
        let rank = |s: &Stage| match s {
            Stage::RateLimiter => 0,
            Stage::Breaker => 1,
            Stage::Bulkhead => 2,
            Stage::ConcurrencyLimit => 3,
            _ => 4,
        };
        check(
            inner.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])),
            "pipeline",
            list,
            "inside \"retry\" the order rate-limiter, breaker, bulkhead, concurrency-limit, \
             timeout (the order each attempt asks them)",
        )?;
        Self::validate_places(outer, has, list)?;
        check(
            !outer.contains(&Stage::RateLimiter),
            "pipeline",
            list,
            "\"rate-limiter\" after (inside) \"retry\": botocore's limiter is asked before \
             every send, retries included",
        )?;
        // The innermost timeout bounds one send, so nothing may stand inside it.
        if let Some(t) = inner.iter().position(|s| *s == Stage::Timeout) {
            check(
                t + 1 == inner.len(),
                "pipeline",
                list,
                "the per-try \"timeout\" last: it bounds the send itself",
            )?;
        }
        if let Some(t) = outer.iter().position(|s| *s == Stage::Timeout) {
            check(
                t == 0,
                "pipeline",
                list,
                "the overall \"timeout\" first: the deadline bounds the whole call, waits \
                 for a breaker included",
            )?;
        }
        Ok(())
    }

    /// Where the bulkhead and the concurrency limit may stand: the limit inside the retry
    /// only, the bulkhead on either side but inside with a bulkhead per provider, and
    /// before an outside breaker.
    fn validate_places(outer: &[Stage], has: Present, list: &str) -> Result<(), PolicyError> {
        check(
            !outer.contains(&Stage::ConcurrencyLimit),
            "pipeline",
            list,
            "\"concurrency-limit\" after (inside) \"retry\": each attempt takes a place \
             and gives it back with its outcome, the round trip the limit learns from",
        )?;
        check(
            !(outer.contains(&Stage::Bulkhead) && has.bulkhead_per_provider),
            "pipeline",
            list,
            "\"bulkhead\" after (inside) \"retry\" with a bulkhead per provider: each \
             attempt takes a place at the provider it goes to",
        )?;
        // Outside the retry a call asks the bulkhead before the breaker, the order it
        // runs: a call the bulkhead rejects never takes a half-open breaker's probe.
        let at = |s: Stage| outer.iter().position(|x| *x == s);
        if let (Some(b), Some(br)) = (at(Stage::Bulkhead), at(Stage::Breaker)) {
            check(
                b < br,
                "pipeline",
                list,
                "outside \"retry\" the order timeout, bulkhead, breaker (the order each call \
                 asks them)",
            )?;
        }
        Ok(())
    }

    /// The order stormrig runs when none is written, for `check --explain`.
    pub fn default_for(has: Present) -> Pipeline {
        let mut s = Vec::new();
        if has.deadline {
            s.push(Stage::Timeout);
        }
        s.push(if has.hedging {
            Stage::Hedging
        } else {
            Stage::Retry
        });
        if has.rate_limiter {
            s.push(Stage::RateLimiter);
        }
        if has.breaker {
            s.push(Stage::Breaker);
        }
        if has.bulkhead {
            s.push(Stage::Bulkhead);
        }
        if has.concurrency_limit {
            s.push(Stage::ConcurrencyLimit);
        }
        if has.per_try_timeout {
            s.push(Stage::Timeout);
        }
        Pipeline(s)
    }

    /// The stages in words, outermost first.
    pub fn words(&self) -> String {
        let at = self.loop_at();
        let words: Vec<String> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, s)| match (s, at) {
                (Stage::Timeout, Some(r)) if i < r => "deadline".to_string(),
                (Stage::Timeout, _) => "per-try timeout".to_string(),
                (s, _) => s.word().to_string(),
            })
            .collect();
        words.join(" › ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Pipeline {
        let text = format!(
            "p = [{}]",
            words
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        #[derive(Deserialize)]
        struct T {
            p: Pipeline,
        }
        toml::from_str::<T>(&text).unwrap().p
    }

    const BREAKER: Present = Present {
        deadline: true,
        per_try_timeout: true,
        breaker: true,
        failover: false,
        rate_limiter: false,
        hedging: false,
        bulkhead: false,
        bulkhead_per_provider: false,
        concurrency_limit: false,
    };

    #[test]
    fn the_breaker_side_of_the_retry_is_read_off_the_order() {
        let outside = p(&["timeout", "breaker", "retry", "timeout"]);
        outside.validate(BREAKER).unwrap();
        assert_eq!(outside.breaker_place(), BreakerPlace::OutsideRetry);
        let inside = p(&["timeout", "retry", "breaker", "timeout"]);
        inside.validate(BREAKER).unwrap();
        assert_eq!(inside.breaker_place(), BreakerPlace::InsideRetry);
        assert_eq!(
            inside.words(),
            "deadline › retry › breaker › per-try timeout"
        );
        assert_eq!(Pipeline::default_for(BREAKER), inside);
    }

    #[test]
    fn orders_that_make_no_sense_are_refused() {
        for bad in [
            &["timeout", "breaker", "timeout"][..],
            &["timeout", "retry", "retry", "breaker", "timeout"],
            &["timeout", "breaker", "retry", "breaker", "timeout"],
            &["retry", "breaker", "timeout"],
            &["timeout", "retry", "breaker"],
            &["timeout", "retry", "timeout"],
            &["timeout", "retry", "timeout", "breaker"],
            &["breaker", "timeout", "retry", "timeout"],
            &["timeout", "hedging", "breaker", "timeout"],
            &["timeout", "retry", "breaker", "rate-limiter", "timeout"],
        ] {
            let e = p(bad).validate(BREAKER).expect_err(&format!("{bad:?}"));
            assert_eq!(e.field(), Some("pipeline"), "{bad:?}: {e}");
        }
        let limiter = Present {
            rate_limiter: true,
            ..BREAKER
        };
        p(&["timeout", "retry", "rate-limiter", "breaker", "timeout"])
            .validate(limiter)
            .unwrap();
        p(&["timeout", "rate-limiter", "retry", "breaker", "timeout"])
            .validate(limiter)
            .unwrap_err();
        let failover = Present {
            failover: true,
            ..BREAKER
        };
        p(&["timeout", "retry", "breaker", "timeout"])
            .validate(failover)
            .unwrap_err();
    }

    #[test]
    fn the_bulkhead_stands_on_either_side_of_the_retry_before_the_breaker() {
        let has = Present {
            bulkhead: true,
            ..BREAKER
        };
        let outside = p(&["timeout", "bulkhead", "breaker", "retry", "timeout"]);
        outside.validate(has).unwrap();
        assert!(outside.bulkhead_outside());
        let inside = p(&["timeout", "breaker", "retry", "bulkhead", "timeout"]);
        inside.validate(has).unwrap();
        assert!(!inside.bulkhead_outside());
        assert!(!Pipeline::default_for(has).bulkhead_outside());
        p(&["timeout", "breaker", "bulkhead", "retry", "timeout"])
            .validate(has)
            .unwrap_err();
        let per_provider = Present {
            bulkhead_per_provider: true,
            breaker: false,
            ..has
        };
        p(&["timeout", "bulkhead", "retry", "timeout"])
            .validate(per_provider)
            .unwrap_err();
        let limit = Present {
            concurrency_limit: true,
            bulkhead: false,
            ..BREAKER
        };
        p(&[
            "timeout",
            "concurrency-limit",
            "breaker",
            "retry",
            "timeout",
        ])
        .validate(limit)
        .unwrap_err();
    }

    #[test]
    fn unknown_stages_do_not_parse() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            p: Pipeline,
        }
        assert!(toml::from_str::<T>("p = [\"retry\", \"breakr\"]").is_err());
    }
}
