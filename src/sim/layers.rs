//! Topology layers in virtual time: each hop between the client and the target, modeled as
//! the live layer proxy (`crate::live::layer`) behaves, with its own
//! [`Session`](crate::session::Session) (the layer's retry config, or a pass-through one)
//! deciding exactly as the live layer's does.
//!
//! Per attempt arriving at a layer, in the live layer's order:
//! 1. the arrival is counted and goes in flight (peak exact);
//! 2. beyond the layer's `concurrency` it is answered 503 at once (counted as rejected);
//! 3. the layer's service time is waited, sampled per (incoming request, attempt) from the
//!    same draw as live;
//! 4. the propagated deadline (whole milliseconds, as the header carries it) is inherited;
//! 5. one logical request is driven through the layer's session, with request id
//!    `incoming_request × 1024 + incoming_attempt`, against the next hop;
//! 6. its end is relayed upstream: a response keeps its status and retry hints; a timeout
//!    becomes 504, a reset 502; no attempt at all 504 for the deadline, else 503.
//!
//! Cancellation, as in the live engine: a caller that gives up on an attempt (its per-try
//! timeout, or its own caller's cancellation) closes the connection, and the hop it went to
//! drops its work on that attempt at once: the service wait, any retry not yet sent and the
//! attempt in flight (whose connection closes in turn, so the cancellation runs down the
//! chain). The layer's policy is told that the dropped request ended (its retry slot,
//! breaker probe and place among the budget's active requests are released, as the live
//! handler does when its future is dropped); its recorder counts no ending for it. Only the
//! target keeps working on what it accepted.

use std::time::Duration;

use super::clock::{dur, now, ns, sec, NET_DELAY};
use super::engine::{Kind, Sim, NONE, REPLY_RESET, REPLY_TIMEOUT};
use super::hop::{NO_DEADLINE, NO_REPLY, REQUEST_ID_STRIDE};
use super::verdicts::NO_FAULT;
use crate::draws::{draw, request_seed, SALT_LAYER_SERVICE};
use crate::policy::GiveUpReason;
use crate::session::Ending;

impl Sim<'_> {
    /// Attempt `a` reaches the layer it was sent to.
    pub(super) fn layer_arrive(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        if !at.client_waiting() {
            return; // the caller gave up before the request got there
        }
        at.handler_start();
        at.reached = true;
        let (request, attempt, gen) = (at.request, at.attempt, at.gen);
        let hop = &mut self.hops[at.hop as usize];
        hop.arrivals += 1;
        hop.in_flight += 1;
        hop.peak_in_flight = hop.peak_in_flight.max(hop.in_flight);
        if hop
            .concurrency
            .is_some_and(|c| hop.in_flight > u64::from(c))
        {
            hop.rejected += 1;
            self.send_reply(t, a, 503, NO_FAULT);
            return;
        }
        let wait = hop.service.as_ref().map_or(0, |s| {
            let u = draw(self.cfg.seed, request, attempt, SALT_LAYER_SERVICE);
            let u2 = draw(self.cfg.seed, request, attempt, SALT_LAYER_SERVICE + 1);
            s.sample_nanos(u, u2)
        });
        if wait > 0 {
            self.push(t.saturating_add(wait), Kind::LayerStart, a, gen);
        } else {
            self.layer_start(t, a);
        }
    }

    /// The layer's service time is over: its client starts one logical request for the
    /// attempt, unless the caller has gone.
    pub(super) fn layer_start(&mut self, t: u64, a: u32) {
        let at = &self.atts[a as usize];
        if !at.handler_alive() {
            return;
        }
        let h = at.hop as usize;
        let id = at
            .request
            .wrapping_mul(REQUEST_ID_STRIDE)
            .wrapping_add(u64::from(at.attempt).min(REQUEST_ID_STRIDE - 1));
        let arrived = at.sent_at + ns(NET_DELAY);
        let inherited =
            (at.deadline_ms != NO_DEADLINE).then(|| Duration::from_millis(at.deadline_ms));
        let parent_gen = at.gen;
        let mode = self.send_mode(h as u8 + 1);
        let r = self.alloc_req();
        let q = &mut self.reqs[r as usize];
        q.user = NONE;
        q.id = id;
        q.claimed = false;
        q.hop = h as u8 + 1;
        (q.carry, q.arrive) = mode;
        q.parent = a;
        q.parent_gen = parent_gen;
        q.last_status = NO_REPLY;
        q.last_fault = NO_FAULT;
        let hop = &mut self.hops[h];
        q.rng.reseed(request_seed(self.cfg.seed, hop.draw_key, id));
        let req_gen = q.gen;
        let at = &mut self.atts[a as usize];
        at.child = r;
        at.child_gen = req_gen;
        let step = hop.session.start_in(
            &mut self.reqs[r as usize].req,
            now(t),
            dur(arrived),
            id,
            self.idempotent,
            inherited,
        );
        self.follow(t, r, step);
    }

    /// A layer's request `r` ended: its final reply goes back to the caller's attempt.
    pub(super) fn relay(&mut self, t: u64, r: u32, ending: Ending) {
        let q = &self.reqs[r as usize];
        let (p, status, fault) = (q.parent, q.last_status, q.last_fault);
        let caller = &self.atts[p as usize];
        if caller.gen != q.parent_gen || !caller.handler_alive() {
            return; // the caller has gone (its request would have been dropped with it)
        }
        let (status, fault) = match status {
            NO_REPLY if ending.reason() == Some(GiveUpReason::Deadline) => (504, NO_FAULT),
            NO_REPLY => (503, NO_FAULT),
            REPLY_TIMEOUT => (504, NO_FAULT),
            REPLY_RESET => (502, NO_FAULT),
            s => (s, fault),
        };
        self.send_reply(t, p, status, fault);
    }

    /// The handler of attempt `a` leaves flight at the hop it was sent to.
    #[inline]
    pub(super) fn leave(&mut self, t: u64, a: u32) {
        let h = self.atts[a as usize].hop as usize;
        match self.hops.get_mut(h) {
            Some(hop) => hop.in_flight -= 1,
            None => self.counters.leave(sec(t)),
        }
    }

    /// The caller of attempt `a` closed its connection: the hop's handler ends, and a
    /// layer drops the request it was driving for it.
    pub(super) fn disconnect(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        if !at.handler_alive() {
            return;
        }
        at.handler_done();
        let (child, child_gen) = (at.child, at.child_gen);
        self.leave(t, a);
        if child != NONE {
            self.cancel_req(t, child, child_gen);
        }
    }

    /// Drops a layer's request: no further attempt or retry, and its attempt in flight is
    /// abandoned (its connection closes).
    fn cancel_req(&mut self, t: u64, r: u32, gen: u32) {
        let q = &mut self.reqs[r as usize];
        if q.gen != gen {
            return;
        }
        let Some(req) = q.req.take() else {
            return;
        };
        let (a, a_gen, hop) = (q.att, q.att_gen, q.hop as usize);
        // Only a layer's requests are cancelled (hop 0 is the load generator's client).
        if let Some(layer) = hop.checked_sub(1).and_then(|h| self.hops.get_mut(h)) {
            layer.session.abandon(now(t), req);
        }
        self.free_req(t, r);
        if a == NONE {
            return;
        }
        let at = &mut self.atts[a as usize];
        if at.gen == a_gen && at.client_waiting() {
            at.client_done();
            self.disconnect(t, a);
            self.maybe_free(a);
        }
    }
}
