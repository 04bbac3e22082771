//! The simulator's pending events, popped in (time, sequence) order exactly as one binary
//! heap ordered by (time, sequence) would pop them, but cheaper for the simulator's pattern.
//!
//! Most events are scheduled a fixed delay after "now" (network legs, per-try timeouts,
//! queue timeouts, think time, the next arrival of a sorted schedule), and "now" never goes
//! back, so each such kind comes in (time, sequence) order already: it goes to a FIFO lane
//! of its own while its time is not below the lane's last. Everything else (service
//! completions, retries) goes to a radix heap, which is valid here because no event is
//! ever scheduled before the last one popped: a push costs one bucket index, and an event
//! moves down a few buckets over its life instead of sifting through log₂ n levels of a
//! binary heap of thousands at every pop.

use std::collections::VecDeque;

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

/// Radix heap over the time: bucket `b ≥ 1` holds events whose time first differs from
/// `last` at bit `b − 1`; `near` holds those at exactly `last`, in sequence order.
///
/// Invariant: every event held is at or after `last`, and so is every later push (`last`
/// only moves up to the least time held, when that event is next to pop).
struct RadixHeap<P> {
    last: u64,
    near: VecDeque<Event<P>>,
    buckets: Vec<Vec<Event<P>>>,
    /// Bit `b − 1` set when bucket `b` is not empty.
    full: u64,
    /// The lowest non-empty bucket and its least time, once looked up; kept up to date by
    /// pushes and dropped by a redistribution. Most pops go to a lane, and each of them
    /// compares with this rather than scanning the bucket.
    lowest: Option<(usize, u64)>,
    /// A lower bound of the times held, `u64::MAX` when empty: most pops go to a lane, and
    /// each of them compares with this one number rather than looking into the heap.
    floor: u64,
}

impl<P: Copy> RadixHeap<P> {
    fn new() -> Self {
        RadixHeap {
            last: 0,
            near: VecDeque::new(),
            buckets: (0..=64).map(|_| Vec::new()).collect(),
            full: 0,
            lowest: None,
            floor: u64::MAX,
        }
    }

    #[inline]
    fn bucket(last: u64, t: u64) -> usize {
        (64 - (t ^ last).leading_zeros()) as usize
    }

    #[inline]
    fn push(&mut self, ev: Event<P>) {
        debug_assert!(ev.t >= self.last, "an event scheduled in the past");
        self.floor = self.floor.min(ev.t);
        let b = Self::bucket(self.last, ev.t);
        if b == 0 {
            // Pushed last, so the greatest sequence at this time.
            self.near.push_back(ev);
        } else {
            self.buckets[b].push(ev);
            self.full |= 1 << (b - 1);
            match &mut self.lowest {
                Some((lb, min)) if b == *lb => *min = (*min).min(ev.t),
                Some((lb, min)) if b < *lb => (*lb, *min) = (b, ev.t),
                _ => {}
            }
        }
    }

    /// The least (time, sequence) held, if it comes before `bound` ([`Event::key`]).
    #[inline(always)]
    fn pop_before(&mut self, bound: u128) -> Option<Event<P>> {
        if ((bound >> 64) as u64) < self.floor {
            return None; // everything held is later
        }
        let ev = self.look_before(bound);
        self.floor = if !self.near.is_empty() {
            self.last
        } else {
            match self.lowest {
                Some((_, min)) => min,
                None if self.full == 0 => u64::MAX,
                // Every event held is at or after `last`.
                None => self.last,
            }
        };
        ev
    }

    /// [`Self::pop_before`] without the floor.
    #[inline]
    fn look_before(&mut self, bound: u128) -> Option<Event<P>> {
        if self.near.is_empty() {
            let (b, min) = match self.lowest {
                Some(l) => l,
                None => {
                    if self.full == 0 {
                        return None;
                    }
                    let b = self.full.trailing_zeros() as usize + 1;
                    let min = self.buckets[b]
                        .iter()
                        .map(|e| e.t)
                        .min()
                        .unwrap_or(u64::MAX);
                    self.lowest = Some((b, min));
                    (b, min)
                }
            };
            if ((bound >> 64) as u64) < min {
                return None;
            }
            self.redistribute(b, min);
        }
        let head = self.near.front()?;
        if head.key() < bound {
            self.near.pop_front()
        } else {
            None
        }
    }

    /// Empties bucket `b` into lower buckets relative to the new `last`. Called with `near`
    /// empty and `last` the bucket's least time.
    fn redistribute(&mut self, b: usize, last: u64) {
        self.last = last;
        self.lowest = None;
        if self.buckets[b].len() == 1 {
            // The usual case (a service completion or a retry alone in its bucket): the
            // event is the one at `last`, so it goes to `near`, alone, as the loop below
            // would put it.
            if let Some(ev) = self.buckets[b].pop() {
                self.full &= !(1 << (b - 1));
                self.near.push_back(ev);
                return;
            }
        }
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.full &= !(1 << (b - 1));
        for ev in moving.drain(..) {
            let nb = Self::bucket(last, ev.t);
            if nb == 0 {
                self.near.push_back(ev);
            } else {
                self.buckets[nb].push(ev);
                self.full |= 1 << (nb - 1);
            }
        }
        // Give the bucket its allocation back.
        self.buckets[b] = moving;
        if self.near.len() > 1 {
            self.near.make_contiguous().sort_unstable_by_key(|e| e.seq);
        }
    }
}

/// The FIFO lanes plus the radix heap; see the module docs.
pub(super) struct EventQueue<P> {
    heap: RadixHeap<P>,
    lanes: [Lane<P>; LANES],
    /// Each lane's head key ([`Event::key`]), `u128::MAX` when the lane is empty: a pop
    /// compares these three numbers, side by side, instead of reaching into each lane's
    /// vector, and only the lane popped reads its next event.
    heads: [u128; LANES],
}

impl<P: Copy> EventQueue<P> {
    pub(super) fn new() -> Self {
        EventQueue {
            heap: RadixHeap::new(),
            lanes: std::array::from_fn(|_| Lane::with_capacity(1024)),
            heads: [u128::MAX; LANES],
        }
    }

    /// Schedules `ev`, in `lane` if it keeps that lane sorted. `ev.t` must not be before
    /// the last event popped.
    #[inline(always)]
    pub(super) fn push(&mut self, ev: Event<P>, lane: Option<usize>) {
        if let Some(l) = lane {
            let lane = &mut self.lanes[l];
            if lane.tail_t <= ev.t {
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

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Event<P>> {
        // The least lane head (no event has key `u128::MAX`: sequence numbers never get
        // there).
        // Written out for the three lanes: two compares and selects, no loop.
        let [k0, k1, k2] = self.heads;
        let (b01, k01) = if k1 < k0 { (1, k1) } else { (0, k0) };
        let (best, key) = if k2 < k01 { (2, k2) } else { (b01, k01) };
        if let Some(ev) = self.heap.pop_before(key) {
            return Some(ev);
        }
        if key == u128::MAX {
            return None;
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
        let heap = self.heap.near.len() + self.heap.buckets.iter().map(Vec::len).sum::<usize>();
        heap + self.lanes.iter().map(Lane::len).sum::<usize>()
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
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let mut seq = 0u64;
            let mut push = |q: &mut EventQueue<u64>, r: &mut BinaryHeap<Reverse<(u64, u64)>>,
                            t: u64, lane: u8| {
                seq += 1;
                let lane = (usize::from(lane) < LANES).then_some(usize::from(lane));
                q.push(Event { t, seq, payload: seq }, lane);
                r.push(Reverse((t, seq)));
            };
            for (t, lane) in initial {
                push(&mut q, &mut reference, t, lane);
            }
            for s in steps {
                let Some(Reverse(want)) = reference.pop() else { break };
                let got = q.pop().expect("an event");
                prop_assert_eq!((got.t, got.seq), want);
                prop_assert_eq!(got.payload, got.seq);
                for (d, lane) in s.pushes {
                    push(&mut q, &mut reference, want.0 + d, lane);
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

    #[test]
    fn same_instant_keeps_schedule_order() {
        let mut q = EventQueue::new();
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
