//! The simulator's events: what each kind does, the slab entry it is for, and the FIFO lane
//! of the kinds always scheduled a fixed delay after "now" (see `queue`), so the engine's
//! loop reads as a list of handlers.

use super::queue;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Arrival,
    UserStart,
    RetryDue,
    TargetArrive,
    FaultAct,
    WorkStart,
    QueueTimeout,
    ServiceDone,
    Reply,
    ClientTimeout,
    Capacity,
    /// An attempt reaches a topology layer.
    LayerArrive,
    /// A layer's service time is over.
    LayerStart,
    /// A hedged call's timer: its next copy may be due (see `hedge`).
    HedgeDue,
}

/// What an event does: its kind, and the slab entry (request, attempt or user) it is for
/// with that entry's generation when scheduled.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ev {
    pub(super) kind: Kind,
    pub(super) idx: u32,
    pub(super) gen: u32,
}

pub(super) type Event = queue::Event<Ev>;

/// The lane of the per-try timers.
pub(super) const TIMEOUT_LANE: usize = 1;
/// The timer lane is not swept of stale timers below this length.
pub(super) const MIN_SWEEP: usize = 4096;

/// The FIFO lane of each kind that is always scheduled a fixed delay after "now" (or, for
/// arrivals, in schedule order); see `queue`. Every pop looks at every lane, so the rarer
/// kinds share one: a load is open (arrivals) or closed (user starts), never both, and a
/// queue timeout that would break that lane's order goes to the heap instead (the order
/// popped is the same wherever an event waits).
#[inline]
pub(super) fn lane_of(kind: Kind) -> Option<usize> {
    match kind {
        Kind::TargetArrive | Kind::LayerArrive | Kind::Reply => Some(queue::IN_ORDER_LANE),
        Kind::ClientTimeout => Some(TIMEOUT_LANE),
        Kind::Arrival | Kind::UserStart | Kind::QueueTimeout => Some(2),
        _ => None,
    }
}
