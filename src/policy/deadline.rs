//! Limits in time: the overall deadline (which includes backoff waits) and the per-try timeout.
//!
//! The effective deadline of a request is `min(config.deadline, inherited)` measured from the
//! request's start; an absolute instant on the run's monotonic clock is kept so that the
//! remaining time can be propagated downstream (`remaining = deadline_at − now`, saturating at
//! 0). A per-try timeout never outlives the deadline: `timeout = min(per_try, remaining)`.

use std::time::Duration;

/// `min` of two optional limits (None = unlimited).
pub fn min_opt(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The absolute deadline of a request started at `now`.
pub fn deadline_at(
    now: Duration,
    config_deadline: Option<Duration>,
    inherited: Option<Duration>,
) -> Option<Duration> {
    min_opt(config_deadline, inherited).map(|d| now.saturating_add(d))
}

/// Time left before `deadline_at` (None = no deadline).
pub fn remaining(deadline_at: Option<Duration>, now: Duration) -> Option<Duration> {
    deadline_at.map(|d| d.saturating_sub(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_deadline_is_the_min() {
        let s = Duration::from_secs;
        assert_eq!(deadline_at(s(10), Some(s(5)), Some(s(3))), Some(s(13)));
        assert_eq!(deadline_at(s(10), None, Some(s(3))), Some(s(13)));
        assert_eq!(deadline_at(s(10), Some(s(5)), None), Some(s(15)));
        assert_eq!(deadline_at(s(10), None, None), None);
        assert_eq!(remaining(Some(s(13)), s(20)), Some(Duration::ZERO));
        assert_eq!(min_opt(Some(s(2)), Some(s(1))), Some(s(1)));
    }
}
