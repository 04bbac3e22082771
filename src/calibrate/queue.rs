//! The queue's depth and timeout, from one step past the target's capacity.
//!
//! Steps at or below the capacity never fill a queue, so they cannot say how deep it is or
//! how long it lets a request wait; yet that is what decides whether a storm is refused fast
//! (a shallow queue: 503 at once) or piles up (a deep one: every attempt waits, times out at
//! the client and is retried). The overload step offers 1.5x the highest throughput measured
//! for one step, and what the target did with the excess answers it:
//!
//! * nothing refused: the queue held the whole backlog the step built, `(rate - X) × step`,
//!   a lower bound;
//!
//! In the first two cases no request waited out a timeout: the grammar's timeout is kept
//! (the stated model's, else the default), which the longest wait seen did not reach.
//! * refused at once (the failures' median under half a slot's hold): the queue was full.
//!   The successes then waited behind a full queue, so by Little's law the requests in the
//!   system are `X × (success latency - path)`, and the queue is that less the slots;
//! * refused after a wait: the failures' median, less the path, is the queue timeout, and
//!   nothing was refused at once, so the queue held the backlog (a lower bound again).

use std::time::Duration;

use super::{Measured, StepLoad};

/// What the overload step showed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Finding {
    /// No request was refused: the queue holds at least `backlog`.
    NotFilled { backlog: u32 },
    /// Requests were refused at once: `in_system` requests were queued or served.
    Full { in_system: f64 },
    /// Requests were refused after waiting `waited_ms` (the median, less the path).
    TimedOut { waited_ms: f64, backlog: u32 },
}

/// The queue fitted from the overload step.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct QueueFit {
    /// The overload step's offered rate (req/s).
    pub rate: f64,
    pub queue: u32,
    pub queue_timeout: Option<Duration>,
    pub finding: Finding,
}

impl QueueFit {
    /// The finding in the model file's words.
    pub fn describe(&self) -> String {
        match self.finding {
            Finding::NotFilled { backlog } => format!(
                "an overload step at {} req/s refused nothing: the queue holds at least the \
                 {backlog} requests it built up (a lower bound)",
                self.rate
            ),
            Finding::Full { in_system } => format!(
                "an overload step at {} req/s was refused at once past a full queue: {:.1} \
                 requests in the system (Little's law) less {} slots -> queue {}",
                self.rate,
                in_system,
                in_system.round() as u32 - self.queue,
                self.queue
            ),
            Finding::TimedOut { waited_ms, backlog } => format!(
                "an overload step at {} req/s was refused after waiting {:.1} ms (the queue \
                 timeout); nothing was refused at once, so the queue holds at least the {} \
                 requests it built up",
                self.rate, waited_ms, backlog
            ),
        }
    }
}

/// Fits the queue from `m`, the overload step; `None` when `m` is no overload step.
/// `throughput` is the highest measured (req/s), `hold_ms` the mean hold of a slot and
/// `path_ms` the time a request spends outside one; `stated_timeout` is kept unless the
/// step measured one.
pub fn fit(
    m: &Measured,
    throughput: f64,
    slots: u32,
    hold_ms: f64,
    path_ms: f64,
    step: Duration,
    stated_timeout: Option<Duration>,
) -> Option<QueueFit> {
    let StepLoad::Overload { rate } = m.load else {
        return None;
    };
    let backlog = ((rate - throughput).max(0.0) * step.as_secs_f64()).ceil() as u32;
    let (queue, queue_timeout, finding) = match m.failure_p50_ms {
        None => (backlog, stated_timeout, Finding::NotFilled { backlog }),
        Some(failed) if failed < hold_ms / 2.0 => {
            let in_system = throughput * (m.success_p50_ms - path_ms).max(0.0) / 1000.0;
            let queue = (in_system.round() as u32).saturating_sub(slots);
            (queue, stated_timeout, Finding::Full { in_system })
        }
        Some(failed) => {
            let waited_ms = (failed - path_ms).max(0.0);
            let timeout = Duration::from_micros((waited_ms * 1000.0).round() as u64);
            (
                backlog,
                Some(timeout),
                Finding::TimedOut { waited_ms, backlog },
            )
        }
    };
    Some(QueueFit {
        rate,
        queue,
        queue_timeout,
        finding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overload(success_p50_ms: f64, failure_p50_ms: Option<f64>) -> Measured {
        Measured {
            load: StepLoad::Overload { rate: 600.0 },
            throughput: 400.0,
            p50_ms: success_p50_ms,
            p99_ms: success_p50_ms,
            success_p50_ms,
            failure_p50_ms,
            successes: 800,
            failures: failure_p50_ms.map_or(0, |_| 400),
        }
    }

    /// Fitted for 4 slots of 10 ms carrying 400 req/s, a path of 0.2 ms, 2 s steps.
    fn four_slots(m: &Measured) -> Option<QueueFit> {
        fit(m, 400.0, 4, 10.0, 0.2, Duration::from_secs(2), None)
    }

    #[test]
    fn a_full_queue_is_read_by_littles_law() {
        // 4 slots of 10 ms, queue 16: a success waits behind 16 and is served, 50 ms.
        let f = four_slots(&overload(50.2, Some(0.3)));
        let f = f.unwrap();
        assert_eq!(f.queue, 16);
        assert_eq!(f.queue_timeout, None);
    }

    #[test]
    fn a_refusal_after_a_wait_is_the_queue_timeout() {
        let f = four_slots(&overload(40.0, Some(50.2)));
        let f = f.unwrap();
        assert_eq!(f.queue_timeout, Some(Duration::from_millis(50)));
        assert_eq!(
            f.queue, 400,
            "the backlog of 2 s at 200 req/s over capacity"
        );
    }

    #[test]
    fn nothing_refused_is_a_lower_bound() {
        let f = four_slots(&overload(30.0, None));
        assert_eq!(f.unwrap().finding, Finding::NotFilled { backlog: 400 });
        let mut other = overload(30.0, None);
        other.load = StepLoad::Open { rate: 600.0 };
        assert_eq!(four_slots(&other), None);
    }
}
