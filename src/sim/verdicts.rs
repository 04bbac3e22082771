//! The target's fault verdicts, looked up by time segment instead of decided per arrival.
//!
//! The request faults' windows cut the run into segments in which the same faults are
//! active. In most segments the verdict does not depend on the arrival: no fault is active
//! (plain service), or every active fault is certain, applies to every path and adds no
//! latency, so `FaultTimeline::decide` makes no draw and answers the same for every
//! request. Those verdicts are decided once per segment; only the others are decided per
//! arrival. Arrivals come in time order, so a cursor finds the segment in O(1).

use std::cmp::Ordering;
use std::time::Duration;

use crate::scenario::timeline::{Action, FaultTimeline, FaultVerdict};
use crate::scenario::FaultKind;

/// A fault index that names no fault (a reply no fault chose).
pub(super) const NO_FAULT: u16 = u16::MAX;

/// What an arrival in a segment gets: a few bytes, copied out at every arrival.
#[derive(Clone, Copy, Debug)]
pub(super) enum Segment {
    /// No request fault is active: plain service, no draw.
    Plain,
    /// Every arrival in the segment is answered at once with `status` and the reply parts
    /// of fault `fault` (a status or gRPC-status fault without added latency): the
    /// verdict already worked out to what the target does with it, the outage's case.
    Answer { status: u16, fault: u16 },
    /// The verdict of every arrival in the segment: [`Verdicts::fixed`] of this index.
    Fixed(usize),
    /// The verdict depends on the arrival (a draw, a path): ask the timeline.
    Decide,
}

/// The segments of one run, in time order, and where the last lookup found itself.
pub(super) struct Verdicts<'a> {
    /// Start of each segment in ns; the first is 0, and a segment lasts until the next one.
    starts: Vec<u64>,
    segments: Vec<Segment>,
    /// The verdicts of the `Fixed` segments.
    fixed: Vec<FaultVerdict<'a>>,
    /// The segment of the last lookup, and its bounds `[start, next)` in ns: a lookup in
    /// the same segment compares twice and reads nothing else.
    current: Segment,
    start: u64,
    next: u64,
}

/// A fault's active window `[from, to)` in ns, exactly as `Fault::active_at` tests it.
fn window(at: Duration, length: Duration) -> (u64, u64) {
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    (ns(at), at.checked_add(length).map_or(u64::MAX, ns))
}

/// The segment of a verdict every arrival gets: worked out to its answer when it is one at
/// once (as the target would: a gRPC status goes out as HTTP 200, its parts carry it), else
/// the verdict, kept in `fixed`.
fn fixed<'a>(v: FaultVerdict<'a>, fixed: &mut Vec<FaultVerdict<'a>>) -> Segment {
    let fault = v.fault.map_or(NO_FAULT, |f| f as u16);
    match v.action {
        Action::Status { status, .. } if v.extra_latency.is_zero() => {
            Segment::Answer { status, fault }
        }
        Action::GrpcStatus { .. } if v.extra_latency.is_zero() => {
            Segment::Answer { status: 200, fault }
        }
        _ => {
            fixed.push(v);
            Segment::Fixed(fixed.len() - 1)
        }
    }
}

impl<'a> Verdicts<'a> {
    pub(super) fn new(timeline: &'a FaultTimeline) -> Self {
        let faults: Vec<_> = timeline
            .faults()
            .iter()
            .filter(|f| !matches!(f.kind, FaultKind::Capacity { .. }))
            .map(|f| (f, window(f.at, f.length)))
            .collect();
        let mut starts: Vec<u64> = std::iter::once(0)
            .chain(faults.iter().flat_map(|(_, (from, to))| [*from, *to]))
            .filter(|&t| t != u64::MAX)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut verdicts = Vec::new();
        let segments: Vec<Segment> = starts
            .iter()
            .map(|&start| {
                // Window ends are segment starts, so what is active at the start stays
                // active through the segment.
                let active: Vec<_> = faults
                    .iter()
                    .filter(|(_, (from, to))| start >= *from && start < *to)
                    .map(|(f, _)| f)
                    .collect();
                if active.is_empty() {
                    Segment::Plain
                } else if active.iter().all(|f| {
                    // `decide` draws for a probability below 1 and for added latency.
                    f.probability.partial_cmp(&1.0) != Some(Ordering::Less)
                        && f.path.is_none()
                        && !matches!(f.kind, FaultKind::Latency { .. })
                }) {
                    // Certain faults on every path: no draw, so any request and path will do.
                    let v = timeline.decide(Duration::from_nanos(start), "", 0, 0);
                    fixed(v, &mut verdicts)
                } else {
                    Segment::Decide
                }
            })
            .collect();
        let mut v = Verdicts {
            starts,
            segments,
            fixed: verdicts,
            current: Segment::Plain,
            start: 0,
            next: 0,
        };
        v.seek(0);
        v
    }

    /// The segment of time `t` (ns). Cheapest when `t` stays in the segment of the last
    /// lookup, as arrivals in time order nearly always do.
    #[inline(always)]
    pub(super) fn at(&mut self, t: u64) -> Segment {
        if t < self.start || t >= self.next {
            self.seek(t);
        }
        self.current
    }

    /// Makes the segment of `t` the current one.
    #[cold]
    fn seek(&mut self, t: u64) {
        // `starts[0]` is 0, so some segment holds every `t`.
        let i = self.starts.partition_point(|&s| s <= t).max(1) - 1;
        self.current = self.segments[i];
        self.start = self.starts[i];
        self.next = self.starts.get(i + 1).copied().unwrap_or(u64::MAX);
    }

    /// The verdict of a `Fixed` segment.
    #[inline]
    pub(super) fn fixed(&self, i: usize) -> FaultVerdict<'a> {
        self.fixed[i]
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::scenario::{Fault, FaultKind};

    fn kind() -> impl Strategy<Value = FaultKind> {
        prop_oneof![
            (500u16..504).prop_map(|status| FaultKind::Status {
                status,
                retry_after: None,
                retry_after_ms: None,
                should_retry: None,
                error_code: None,
            }),
            Just(FaultKind::Reset),
            Just(FaultKind::Hang),
            Just(FaultKind::LostResponse { status: None }),
            Just(FaultKind::Capacity { concurrency: 2 }),
        ]
    }

    fn fault() -> impl Strategy<Value = Fault> {
        (
            0u64..50,
            0u64..50,
            prop_oneof![Just(1.0f64), Just(0.5), Just(2.0)],
            prop::option::weighted(0.2, Just("/a".to_string())),
            kind(),
        )
            .prop_map(|(at, len, probability, path, kind)| Fault {
                at: Duration::from_millis(at),
                length: Duration::from_millis(len),
                path,
                probability,
                kind,
            })
    }

    proptest! {
        /// Every lookup answers what `decide` answers, for times in any order.
        #[test]
        fn same_verdict_as_decide(faults in prop::collection::vec(fault(), 0..5),
                                  times in prop::collection::vec(0u64..120, 1..60),
                                  seed in 0u64..4) {
            let tl = FaultTimeline::new(faults, seed);
            let mut v = Verdicts::new(&tl);
            for (i, ms) in times.into_iter().enumerate() {
                // Half a millisecond either side of the window edges too.
                let t = ms * 500_000;
                let (request, attempt) = (i as u64, 1 + i as u32 % 3);
                for path in ["/a/b", "/c"] {
                    let want = tl.decide(Duration::from_nanos(t), path, request, attempt);
                    let got = match v.at(t) {
                        Segment::Answer { status, fault } => {
                            prop_assert_eq!(want.extra_latency, Duration::ZERO);
                            prop_assert_eq!(want.fault.map_or(NO_FAULT, |f| f as u16), fault);
                            match want.action {
                                Action::Status { status: s, .. } => prop_assert_eq!(s, status),
                                Action::GrpcStatus { .. } => prop_assert_eq!(200, status),
                                other => prop_assert!(false, "answered for {:?}", other),
                            }
                            continue;
                        }
                        Segment::Plain => {
                            prop_assert_eq!(want.action, Action::Serve);
                            prop_assert_eq!(want.fault, None);
                            prop_assert_eq!(want.extra_latency, Duration::ZERO);
                            continue;
                        }
                        Segment::Fixed(i) => v.fixed(i),
                        Segment::Decide => tl.decide(Duration::from_nanos(t), path, request, attempt),
                    };
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}
