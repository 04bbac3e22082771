//! Hedged calls in virtual time: a call's copies in flight, its one hedge timer, and the
//! copies closed when the call ends (the target's handler of each ends then; work the
//! target already accepted carries on, as on a real server whose client cancelled).
//!
//! Only the load generator's client hedges here (hop 0); a layer's client runs the retry
//! path.

use super::clock::{now, ns};
use super::engine::{Kind, Sim, NONE};
use crate::session::Hedge;

impl Sim<'_> {
    /// The first copy of hedged call `r` went out as attempt slot `a`: it is a copy the
    /// client waits for, and the timer of the next copy is armed.
    pub(super) fn first_copy(&mut self, t: u64, r: u32, a: u32) {
        let gen = self.atts[a as usize].gen;
        let q = &mut self.reqs[r as usize];
        q.copies.clear();
        q.copies.push((a, gen));
        if let Some(wait) = self.session.hedge_armed_in(now(t), &mut q.req) {
            let g = q.gen;
            self.push(t.saturating_add(ns(wait)), Kind::HedgeDue, r, g);
        }
    }

    /// Hedged call `r`'s timer went off.
    pub(super) fn hedge_due(&mut self, t: u64, r: u32) {
        let q = &mut self.reqs[r as usize];
        let h = self.session.hedge_due_in(now(t), &mut q.req, &mut q.rng);
        self.follow_hedge(t, r, h);
    }

    /// Carries out what the session said for hedged call `r`.
    pub(super) fn follow_hedge(&mut self, t: u64, r: u32, h: Hedge) {
        match h {
            Hedge::Idle => {}
            Hedge::Arm(wait) => {
                let g = self.reqs[r as usize].gen;
                self.push(t.saturating_add(ns(wait)), Kind::HedgeDue, r, g);
            }
            Hedge::Send(attempt, next) => {
                let a = self.send(t, r, attempt);
                let gen = self.atts[a as usize].gen;
                let q = &mut self.reqs[r as usize];
                q.copies.push((a, gen));
                let g = q.gen;
                if let Some(wait) = next {
                    self.push(t.saturating_add(ns(wait)), Kind::HedgeDue, r, g);
                }
            }
            Hedge::Done(ending) => {
                self.cancel_copies(t, r);
                if self.reqs[r as usize].parent != NONE {
                    self.relay(t, r, ending);
                }
                self.free_req(t, r);
            }
        }
    }

    /// Closes the copies of call `r` the client still waits for: each is counted cancelled
    /// and its connection closes (the next hop's handler ends).
    fn cancel_copies(&mut self, t: u64, r: u32) {
        let copies = std::mem::take(&mut self.reqs[r as usize].copies);
        for &(a, gen) in &copies {
            let at = &mut self.atts[a as usize];
            if at.gen != gen || !at.client_waiting() {
                continue;
            }
            at.client_done();
            let (id, attempt, read) = (at.request, at.attempt, at.reached);
            // A copy closed within the network delay of its sending never reaches the
            // target: counted `not-accepted`, not cancelled, as the live client counts a
            // copy it closed before the in-process target read it.
            self.session.hedge_cancelled(id, attempt, read);
            self.disconnect(t, a);
            self.maybe_free(a);
        }
        let mut copies = copies;
        copies.clear();
        self.reqs[r as usize].copies = copies;
    }
}
