//! The simulator's pending events, popped in (time, sequence) order exactly as one binary
//! heap ordered by (time, sequence) would pop them, but cheaper for the simulator's pattern.
//!
//! Most events are scheduled a fixed delay after "now" (network legs, per-try timeouts,
//! queue timeouts, think time, the next arrival of a sorted schedule), and "now" never goes
//! back, so each such kind comes in (time, sequence) order already: it goes to a FIFO lane
//! of its own while its time is not below the lane's last. Everything else (service
//! completions, retries) goes to a binary heap, which therefore holds few events at once:
//! the services in progress and the retries waiting out their backoff.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A pending event: `seq` is unique and grows with every push, so (t, seq) orders events
/// at the same instant in the order they were scheduled.
#[derive(Clone, Copy, Debug)]
pub(super) struct Event<P> {
    pub t: u64,
    pub seq: u64,
    pub payload: P,
}

impl<P> Event<P> {
    /// (t, seq) as one number: compared with one wide compare rather than two branches.
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.t) << 64) | u128::from(self.seq)
    }
}

/// FIFO lanes.
pub(super) const LANES: usize = 3;

/// The lane of the events that always come in order, every one the same fixed delay after
/// "now" (the network legs): a push there skips the look at the lane's last time.
pub(super) const IN_ORDER_LANE: usize = 0;

/// One FIFO lane: a vector read from `head` on. Cheaper per event than a ring buffer (no
/// wrap-around index on every look at its head); it is emptied whenever its last event is
/// read, and moved down to its start only when it would otherwise grow and half of it is
/// already read, so each event is moved at most once on average.
///
/// Invariant: `head < events.len()`, or both are zero (the lane is empty).
struct Lane<P> {
    events: Vec<Event<P>>,
    head: usize,
    /// The time of the last event pushed, or a lower one after a sweep (0 at first): an
    /// event at or after it keeps the lane sorted. Once that event has been read the lane
    /// is empty, and every later push is at or after it anyway (time never goes back), so a
    /// push compares with this number rather than reading the lane's last event.
    tail_t: u64,
}

impl<P: Copy> Lane<P> {
    fn with_capacity(n: usize) -> Self {
        Lane {
            events: Vec::with_capacity(n),
            head: 0,
            tail_t: 0,
        }
    }

    #[inline(always)]
    fn front(&self) -> Option<&Event<P>> {
        self.events.get(self.head)
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.events.len() - self.head
    }

    #[inline(always)]
    fn push_back(&mut self, ev: Event<P>) {
        if self.events.len() == self.events.capacity() && 2 * self.head >= self.events.len() {
            self.compact();
        }
        self.events.push(ev);
    }

    /// The head event, and the key of the one after it (`u128::MAX`: none), which the
    /// queue keeps as the lane's head key.
    #[inline(always)]
    fn pop_front(&mut self) -> Option<(Event<P>, u128)> {
        let ev = *self.events.get(self.head)?;
        self.head += 1;
        match self.events.get(self.head) {
            Some(next) => Some((ev, next.key())),
            None => {
                self.events.clear();
                self.head = 0;
                Some((ev, u128::MAX))
            }
        }
    }

    /// The key of the head event ([`Event::key`]), `u128::MAX` when the lane is empty.
    #[inline]
    fn head_key(&self) -> u128 {
        self.front().map_or(u128::MAX, Event::key)
    }

    /// Drops the events already read from the vector's start.
    fn compact(&mut self) {
        self.events.drain(..self.head);
        self.head = 0;
    }

    fn retain(&mut self, mut keep: impl FnMut(&Event<P>) -> bool) {
        self.compact();
        self.events.retain(|e| keep(e));
        self.tail_t = self.events.last().map_or(0, |e| e.t);
    }
}

/// The events no lane takes, least (time, sequence) first: a binary heap, which holds few
/// of them at once (the services in progress, the retries waiting out their backoff).
struct Heap<P> {
    heap: BinaryHeap<Pending<P>>,
    /// The least key held ([`Event::key`]), or `end` when that is less: most pops go to a
    /// lane, and each of them compares with this one number rather than looking into the
    /// heap.
    least: u128,
    /// The key before which the queue ends, `(end, 0)`: held like an event that is never
    /// popped, so that neither the end of the run nor an empty queue costs a pop from a
    /// lane a test of its own (a lane's head at or after the end is never less than it).
    end: u128,
}

/// What [`Heap::pop_before`] found.
enum Before<P> {
    /// Its least event, before the bound.
    Event(Event<P>),
    /// Nothing before the bound.
    Nothing,
    /// The end, before the bound.
    End,
}

/// An event in [`Heap`], ordered so that the least key is the greatest (the standard
/// library's heap is a max-heap).
#[derive(Clone, Copy)]
struct Pending<P>(Event<P>);

impl<P> PartialEq for Pending<P> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl<P> Eq for Pending<P> {}

impl<P> PartialOrd for Pending<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<P> Ord for Pending<P> {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.key().cmp(&self.0.key())
    }
}

impl<P: Copy> Heap<P> {
    fn until(end: u64) -> Self {
        let end = u128::from(end) << 64;
        Heap {
            heap: BinaryHeap::new(),
            least: end,
            end,
        }
    }

    #[inline]
    fn push(&mut self, ev: Event<P>) {
        self.least = self.least.min(ev.key());
        self.heap.push(Pending(ev));
    }

    /// The least (time, sequence) held, if it comes before `bound` ([`Event::key`]), or the
    /// end if that comes first.
    #[inline(always)]
    fn pop_before(&mut self, bound: u128) -> Before<P> {
        if bound < self.least {
            return Before::Nothing;
        }
        if self.least == self.end {
            return Before::End;
        }
        let Some(Pending(ev)) = self.heap.pop() else {
            return Before::End; // never: `least` below `end` is an event's key
        };
        self.least = self
            .heap
            .peek()
            .map_or(self.end, |p| p.0.key().min(self.end));
        Before::Event(ev)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// The FIFO lanes plus the heap; see the module docs.
pub(super) struct EventQueue<P> {
    heap: Heap<P>,
    lanes: [Lane<P>; LANES],
    /// Each lane's head key ([`Event::key`]), `u128::MAX` when the lane is empty: a pop
    /// compares these three numbers, side by side, instead of reaching into each lane's
    /// vector, and only the lane popped reads its next event.
    heads: [u128; LANES],
}

impl<P: Copy> EventQueue<P> {
    /// A queue whose pops end before the first event due at or after `end` (ns).
    pub(super) fn until(end: u64) -> Self {
        EventQueue {
            heap: Heap::until(end),
            lanes: std::array::from_fn(|_| Lane::with_capacity(1024)),
            heads: [u128::MAX; LANES],
        }
    }

    /// Schedules `ev`, in `lane` if it keeps that lane sorted. `ev.t` must not be before
    /// the last event popped, nor, in [`IN_ORDER_LANE`], before the last event pushed there.
    #[inline(always)]
    pub(super) fn push(&mut self, ev: Event<P>, lane: Option<usize>) {
        if let Some(l) = lane {
            let lane = &mut self.lanes[l];
            debug_assert!(l != IN_ORDER_LANE || lane.tail_t <= ev.t, "out of order");
            if l == IN_ORDER_LANE || lane.tail_t <= ev.t {
                lane.tail_t = ev.t;
                if lane.events.is_empty() {
                    self.heads[l] = ev.key();
                }
                lane.push_back(ev);
                return;
            }
        }
        self.heap.push(ev);
    }

    /// The next event in (time, sequence) order; `None` once that is due at or after the
    /// queue's end, or none is left.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Event<P>> {
        // The least lane head (no event has key `u128::MAX`: sequence numbers never get
        // there). Written out for the three lanes: two compares and selects, no loop.
        let [k0, k1, k2] = self.heads;
        let (b01, k01) = if k1 < k0 { (1, k1) } else { (0, k0) };
        let (best, key) = if k2 < k01 { (2, k2) } else { (b01, k01) };
        match self.heap.pop_before(key) {
            Before::Event(ev) => return Some(ev),
            Before::End => return None,
            // A lane's head comes first, so some lane has one (an empty lane's key,
            // `u128::MAX`, is never less than the end's).
            Before::Nothing => {}
        }
        let (ev, next) = self.lanes[best].pop_front()?;
        self.heads[best] = next;
        Some(ev)
    }

    /// Events waiting in `lane`.
    #[inline]
    pub(super) fn lane_len(&self, lane: usize) -> usize {
        self.lanes[lane].len()
    }

    /// Drops the events of `lane` whose payload `keep` refuses; the rest keep their order,
    /// so the lane stays sorted. For lanes that fill up with events known to be stale.
    pub(super) fn retain_lane(&mut self, lane: usize, mut keep: impl FnMut(&P) -> bool) {
        self.lanes[lane].retain(|e| keep(&e.payload));
        self.heads[lane] = self.lanes[lane].head_key();
    }

    /// Events pending.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(Lane::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use proptest::prelude::*;

    use super::*;

    /// A step of a simulation: pop one event, then schedule some after it, then perhaps
    /// sweep a lane.
    #[derive(Debug, Clone)]
    struct Step {
        /// (delay after now, lane choice) of each push.
        pushes: Vec<(u64, u8)>,
        /// (lane, m): drop that lane's events whose payload is a multiple of m.
        sweep: Option<(u8, u8)>,
    }

    fn delay() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            0u64..4,
            0u64..100_000,
            0u64..10_000_000_000,
            Just(50_000u64),
        ]
    }

    /// The in-order lane's fixed delay in the tests.
    const IN_ORDER_DELAY: u64 = 50_000;

    fn step() -> impl Strategy<Value = Step> {
        (
            prop::collection::vec((delay(), 0u8..8), 0..4),
            prop::option::weighted(0.1, (0u8..LANES as u8, 2u8..4)),
        )
            .prop_map(|(pushes, sweep)| Step { pushes, sweep })
    }

    proptest! {
        /// Pops come out exactly as from a binary heap ordered by (time, sequence), less
        /// the events a lane sweep dropped.
        #[test]
        fn pops_in_heap_order(initial in prop::collection::vec((delay(), 0u8..8), 1..20),
                              steps in prop::collection::vec(step(), 0..300)) {
            let mut q = EventQueue::until(u64::MAX);
            let mut reference = BinaryHeap::new();
            let mut seq = 0u64;
            // The in-order lane takes only what comes in order, as the simulator's network
            // legs do: its pushes are a fixed delay after now, whatever the delay drawn.
            let mut push = |q: &mut EventQueue<u64>, r: &mut BinaryHeap<Reverse<(u64, u64)>>,
                            now: u64, d: u64, lane: u8| {
                seq += 1;
                let lane = (usize::from(lane) < LANES).then_some(usize::from(lane));
                let t = now + if lane == Some(IN_ORDER_LANE) { IN_ORDER_DELAY } else { d };
                q.push(Event { t, seq, payload: seq }, lane);
                r.push(Reverse((t, seq)));
            };
            for (d, lane) in initial {
                push(&mut q, &mut reference, 0, d, lane);
            }
            for s in steps {
                let Some(Reverse(want)) = reference.pop() else { break };
                let got = q.pop().expect("an event");
                prop_assert_eq!((got.t, got.seq), want);
                prop_assert_eq!(got.payload, got.seq);
                for (d, lane) in s.pushes {
                    push(&mut q, &mut reference, want.0, d, lane);
                }
                if let Some((lane, m)) = s.sweep {
                    let mut dropped = std::collections::HashSet::new();
                    q.retain_lane(usize::from(lane), |p| {
                        let keep = p % u64::from(m) != 0;
                        if !keep {
                            dropped.insert(*p);
                        }
                        keep
                    });
                    reference.retain(|Reverse((_, seq))| !dropped.contains(seq));
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse(want)) = reference.pop() {
                let got = q.pop().expect("an event");
                prop_assert_eq!((got.t, got.seq), want);
            }
            prop_assert!(q.pop().is_none());
        }
    }

    proptest! {
        /// Pops end before the first event due at or after the end, as a loop that
        /// stopped there would; an empty queue ends as well.
        #[test]
        fn pops_end_before_the_end(times in prop::collection::vec((delay(), 0u8..8), 0..60),
                                   end in delay()) {
            let mut q = EventQueue::until(end);
            let mut want = Vec::new();
            for (seq, &(t, lane)) in (1u64..).zip(&times) {
                // The in-order lane in time order only: its events sorted.
                let lane = (usize::from(lane) < LANES && usize::from(lane) != IN_ORDER_LANE)
                    .then_some(usize::from(lane));
                q.push(Event { t, seq, payload: () }, lane);
                want.push((t, seq));
            }
            want.sort_unstable();
            want.retain(|&(t, _)| t < end);
            let got: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop()).map(|e| (e.t, e.seq)).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn same_instant_keeps_schedule_order() {
        let mut q = EventQueue::until(u64::MAX);
        for seq in 1..=5u64 {
            let lane = if seq % 2 == 0 { Some(0) } else { None };
            q.push(
                Event {
                    t: 7,
                    seq,
                    payload: (),
                },
                lane,
            );
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|e| e.seq).collect();
        assert_eq!(order, [1, 2, 3, 4, 5]);
    }
}
