//! The per-try timers of the simulator's attempts: held back at the send, queued when the
//! attempt reaches the next hop unless its reply is due first, swept out of their lane once
//! stale.
//!
//! Why held back: a stale timer (its attempt answered) does nothing when popped, but it
//! costs a push, a place in its lane and a sweep. Most attempts of a storm are answered on
//! arrival (a fault's status, a reset), so their timers never need the queue; a config
//! with a deadline alone, whose timers go to the heap (each request's deadline is its
//! own), spends some 7 % fewer instructions for it. The order of every event popped stays
//! the same: a timer keeps the sequence number taken at its send.

use super::engine::{client_waits, Sim, NO_TIMER};
use super::event::{lane_of, Ev, Event, Kind, MIN_SWEEP, TIMEOUT_LANE};

impl Sim<'_> {
    /// At the send of attempt `a` (generation `gen`) arriving at the next hop at
    /// `arrive_at`: its timer's place in the order is taken now, as if it were queued now.
    /// A timer due by the arrival is queued at once (in the heap, which orders by the whole
    /// key); any other waits for [`Self::arm_timer`]. The reply path drops a held timer its
    /// reply beats (`send_reply`).
    #[inline]
    pub(super) fn hold_timer(&mut self, a: u32, gen: u32, due: u64, arrive_at: u64) {
        self.seq += 1;
        if due <= arrive_at {
            self.queue_timer(due, self.seq, a, gen, None);
        } else {
            let at = &mut self.atts[a as usize];
            at.timer_at = due;
            at.timer_seq = self.seq;
            self.timers_held = true;
        }
    }

    /// Queues attempt `a`'s held-back per-try timer once the attempt has reached the next
    /// hop, unless the client stopped waiting or the reply already on its way arrives
    /// first (then the timer would have been stale when popped). Most attempts of a storm
    /// are answered on arrival, so most timers never enter the queue. The timer keeps the
    /// sequence number of its send, so it pops exactly where it would have had it been
    /// queued then; timers reach here in the order their attempts were sent (every hop is
    /// `NET_DELAY` away), which keeps their lane sorted. Returns `true` (the arrival moved
    /// an attempt on).
    #[inline]
    pub(super) fn arm_timer(&mut self, a: u32) -> bool {
        if !self.timers_held {
            return true;
        }
        let at = &mut self.atts[a as usize];
        if at.timer_at != NO_TIMER {
            let (due, seq, gen) = (at.timer_at, at.timer_seq, at.gen);
            at.timer_at = NO_TIMER;
            if at.client_waiting() {
                self.queue_timer(due, seq, a, gen, lane_of(Kind::ClientTimeout));
            }
        }
        true
    }

    /// A per-try timer into the queue with the sequence number it was given at its send.
    fn queue_timer(&mut self, due: u64, seq: u64, a: u32, gen: u32, lane: Option<usize>) {
        let payload = Ev {
            kind: Kind::ClientTimeout,
            idx: a,
            gen,
        };
        self.events.push(
            Event {
                t: due,
                seq,
                payload,
            },
            lane,
        );
        if self.events.lane_len(TIMEOUT_LANE) >= self.sweep_at {
            self.sweep_timers();
        }
    }

    /// Sweeps the stale per-try timers out of their lane. Nearly every attempt ends long
    /// before its timer is due (envoy's 15 s route timeout at 60 k attempts/s leaves about
    /// a million), and a stale timer does nothing when popped, so dropping them changes no
    /// result; it keeps the lane the size of the attempts still waiting instead of growing
    /// (and page-faulting) by the rate times the timeout. Sweeping when the lane has
    /// doubled since the last sweep costs O(1) per timer.
    pub(super) fn sweep_timers(&mut self) {
        let atts = &self.atts;
        self.events.retain_lane(TIMEOUT_LANE, |ev| {
            client_waits(&atts[ev.idx as usize], ev.gen)
        });
        self.sweep_at = (2 * self.events.lane_len(TIMEOUT_LANE)).max(MIN_SWEEP);
    }
}
