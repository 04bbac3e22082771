//! The simulator's two slabs: `Req`, one logical request at a client, and `Att`, one
//! attempt from its send until nobody holds it any more, both reused through free lists
//! threaded through their free slots (see `engine`'s module docs for what each holds).

use super::event::Kind;
use super::hop::{NO_DEADLINE, NO_REPLY};
use super::provider::{Route, NO_FALLBACK};
use super::verdicts::NO_FAULT;
use crate::draws::LazyRng;
use crate::session;

/// No slot (the end of a free list, a request without a parent or an attempt).
pub(super) const NONE: u32 = u32::MAX;
/// `Att::timer_at` of an attempt without a held-back per-try timer.
pub(super) const NO_TIMER: u64 = u64::MAX;

/// What the target does with an arrival after its added latency.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    Status,
    Reset,
    Hang,
}

pub(super) struct Req {
    pub(super) gen: u32,
    /// The request between its steps; `None` once it has ended (the slot is free).
    pub(super) req: Option<session::Request>,
    pub(super) rng: LazyRng,
    /// Its request id (the session's, kept here so that a send need not reach into the
    /// request's box for it).
    pub(super) id: u64,
    pub(super) user: u32,
    pub(super) claimed: bool,
    /// The hop whose client drives it: 0 the load generator, `l` the `l`-th layer.
    pub(super) hop: u8,
    /// How its attempts go (the engine's `Sim::send_mode` of its hop): the deadline they carry, and
    /// whether they reach a layer or the target.
    pub(super) carry: Carry,
    pub(super) arrive: Kind,
    /// A layer's request: the caller's attempt it serves (and its generation), or `NONE`.
    pub(super) parent: u32,
    pub(super) parent_gen: u32,
    /// Its latest attempt and that attempt's generation.
    pub(super) att: u32,
    pub(super) att_gen: u32,
    /// Its latest reply (status, `REPLY_RESET`, `REPLY_TIMEOUT` or `NO_REPLY`) and fault,
    /// which a layer relays when the request ends.
    pub(super) last_status: u16,
    pub(super) last_fault: u16,
    /// Its request class (0 without classes, and at a layer).
    pub(super) class: u8,
    /// A hedged call's copies the client still waits for (attempt index, generation);
    /// empty for every other request.
    pub(super) copies: Vec<(u32, u32)>,
    /// While the slot is free: the next free slot (`NONE`: the last), see [`Sim::free_req`].
    pub(super) next_free: u32,
}

pub(super) struct Att {
    pub(super) gen: u32,
    pub(super) req: u32,
    pub(super) req_gen: u32,
    pub(super) request: u64,
    pub(super) attempt: u32,
    pub(super) sent_at: u64,
    /// The hop that sent it; it goes to the next layer, or to the target from the last hop.
    pub(super) hop: u8,
    /// With failover, the provider (index in the config's list) the policy sent it to.
    pub(super) provider: u8,
    /// Its request's class (0 without classes).
    pub(super) class: u8,
    /// After the policy gave up: the ladder's model rung it was sent to, or `NO_FALLBACK`.
    pub(super) fallback: u8,
    /// The propagated deadline it carries, in whole ms, or `NO_DEADLINE`.
    pub(super) deadline_ms: u64,
    /// At a layer: the request the layer drives for it (and its generation), or `NONE`.
    pub(super) child: u32,
    pub(super) child_gen: u32,
    /// Who still holds the slot ([`CLIENT`], [`HANDLER`], [`WORK`]): freed once nobody does.
    holds: u8,
    /// The next hop has read it (counted it among its arrivals): a hedged copy closed
    /// before then is one the target never counts.
    pub(super) reached: bool,
    /// It carries an idempotency key, and holds its key's right to execute at the target.
    pub(super) keyed: bool,
    pub(super) ticket: bool,
    pub(super) queued: bool,
    pub(super) act: Act,
    /// Its per-try timer while held back (see [`Sim::arm_timer`]): when it goes off, or
    /// `NO_TIMER` once it is in the queue, dropped, or when the attempt has none.
    pub(super) timer_at: u64,
    /// The timer's sequence number, taken when the attempt was sent.
    pub(super) timer_seq: u64,
    /// Lost-response fault that chose this attempt (index), or `NO_FAULT`.
    pub(super) lost: u16,
    pub(super) reply_status: u16,
    pub(super) reply_fault: u16,
    /// While the slot is free: the next free slot (`NONE`: the last), see [`Sim::maybe_free`].
    pub(super) next_free: u32,
}

/// What an attempt carries to the next hop as its deadline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Carry {
    /// Nothing (HTTP without deadline propagation).
    Nothing,
    /// The request's remaining deadline (HTTP with propagation).
    Remaining,
    /// A gRPC call's `grpc-timeout`: what remains of the deadline, else the try's timeout.
    RemainingElseTry,
}

/// The holders of an attempt's slot, one bit each in [`Att::holds`], so that whether any is
/// left is one compare where three flags took three loads and branches.
/// The client still waits for its reply.
const CLIENT: u8 = 1;
/// The next hop's request handler is running (the request is in flight there).
const HANDLER: u8 = 2;
/// The target's work (queue, service) on it is running.
const WORK: u8 = 4;

impl Att {
    /// Where it goes among the providers: class, failover slot, model rung.
    #[inline]
    pub(super) fn route(&self) -> Route {
        (self.class, self.provider, self.fallback)
    }

    /// The client still waits for its reply.
    #[inline(always)]
    pub(super) fn client_waiting(&self) -> bool {
        self.holds & CLIENT != 0
    }

    /// The next hop's request handler is running (the request is in flight there).
    #[inline(always)]
    pub(super) fn handler_alive(&self) -> bool {
        self.holds & HANDLER != 0
    }

    /// The client stopped waiting for its reply.
    #[inline(always)]
    pub(super) fn client_done(&mut self) {
        self.holds &= !CLIENT;
    }

    /// The next hop's handler started on it.
    #[inline(always)]
    pub(super) fn handler_start(&mut self) {
        self.holds |= HANDLER;
    }

    /// The next hop's handler ended.
    #[inline(always)]
    pub(super) fn handler_done(&mut self) {
        self.holds &= !HANDLER;
    }

    /// The target's work on it started.
    #[inline(always)]
    pub(super) fn work_start(&mut self) {
        self.holds |= WORK;
    }

    /// The target's work on it ended.
    #[inline(always)]
    pub(super) fn work_done(&mut self) {
        self.holds &= !WORK;
    }

    /// Just sent: only the client holds it.
    #[inline(always)]
    pub(super) fn sent(&mut self) {
        self.holds = CLIENT;
    }
}

impl Req {
    /// A new slot, free: every field at the value a free slot holds.
    pub(super) fn empty() -> Req {
        Req {
            gen: 0,
            req: None,
            rng: LazyRng::new(0),
            id: 0,
            user: NONE,
            claimed: false,
            hop: 0,
            carry: Carry::Nothing,
            arrive: Kind::TargetArrive,
            parent: NONE,
            parent_gen: 0,
            att: NONE,
            att_gen: 0,
            last_status: NO_REPLY,
            last_fault: NO_FAULT,
            class: 0,
            copies: Vec::new(),
            next_free: NONE,
        }
    }
}

impl Att {
    /// A new slot, free: every field at the value a free slot holds.
    pub(super) fn empty() -> Att {
        Att {
            gen: 0,
            req: 0,
            req_gen: 0,
            request: 0,
            attempt: 0,
            sent_at: 0,
            hop: 0,
            provider: 0,
            class: 0,
            fallback: NO_FALLBACK,
            deadline_ms: NO_DEADLINE,
            child: NONE,
            child_gen: 0,
            holds: 0,
            reached: false,
            keyed: false,
            ticket: false,
            queued: false,
            act: Act::Hang,
            timer_at: NO_TIMER,
            timer_seq: 0,
            lost: NO_FAULT,
            reply_status: 0,
            reply_fault: NO_FAULT,
            next_free: NONE,
        }
    }

    /// Nobody holds it any more: the slot may be freed.
    #[inline(always)]
    pub(super) fn unheld(&self) -> bool {
        self.holds == 0
    }
}
