//! The modeled target in virtual time: what happens to an attempt from its arrival at the
//! target to its reply. Answered early by a fault, replayed or refused by the idempotency
//! store, throttled by a capacity fault, then queued for a service slot, served for a drawn
//! service time (or shed), and answered; a lost-response fault executes the request and
//! drops its answer. The live target (`server::request`) takes the same steps in the same
//! order, which the simulator-versus-live tests hold it to.

use super::clock::{dur, ns, sec, NET_DELAY};
use super::engine::{Act, Kind, Sim, NO_TIMER, REPLY_RESET};
use super::parts::FaultParts;
use super::verdicts::{Segment, NO_FAULT};
use crate::idempotency::Begin;
use crate::scenario::timeline::Action;
use crate::shed::Shed;

/// The body every simulated attempt sends: the scenario's, the same for every attempt, so a
/// key is never reused with another body (the live target's 422) here.
const SAME_BODY: u64 = 0;

impl Sim<'_> {
    pub(super) fn target_arrive(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        if !at.client_waiting() {
            return; // the client gave up before the request got there
        }
        self.counters.arrive(sec(t));
        at.handler_start();
        at.reached = true;
        if self.cfg.count_classes {
            self.counters.class_arrived(usize::from(at.class));
        }
        if let Some(p) = self.cfg.provider.as_mut() {
            let tokens = p.arrive(at.route(), (at.request, at.attempt), dur(t));
            if let (true, Some(n)) = (self.cfg.count_classes, tokens) {
                self.counters.class_tokens(usize::from(at.class), n, false);
            }
        }
        let v = match self.verdicts.at(t) {
            Segment::Plain => {
                // No request fault is active: `decide` would serve plainly, without a draw.
                if !self.answered_early(t, a) {
                    self.atts[a as usize].work_start();
                    self.work_start(t, a);
                }
                return;
            }
            Segment::Answer { status, fault } => {
                // What the `Fixed` path below does for a status at once, without the
                // verdict's working out: most attempts of an outage end here.
                at.reply_status = status;
                at.reply_fault = fault;
                at.act = Act::Status;
                self.counters.respond(status, None);
                self.send_reply(t, a, status, fault);
                return;
            }
            Segment::Fixed(i) => self.verdicts.fixed(i),
            Segment::Decide => {
                let path = self
                    .cfg
                    .provider
                    .as_ref()
                    .map_or(self.cfg.classes[usize::from(at.class)].path.as_str(), |p| {
                        p.path(at.route())
                    });
                self.cfg
                    .timeline
                    .decide(dur(t), path, at.request, at.attempt)
            }
        };
        let extra = ns(v.extra_latency);
        let fault = v.fault.map_or(NO_FAULT, |f| f as u16);
        let gen = at.gen;
        let act = match v.action {
            // Connection-level faults are refused before a simulation starts
            // (see `modeled_target`): their verdicts never reach here.
            Action::Serve | Action::Deliver(_) => None,
            Action::LostResponse { .. } => {
                at.lost = fault;
                None
            }
            Action::Status { status, .. } => {
                at.reply_status = status;
                at.reply_fault = fault;
                Some(Act::Status)
            }
            // Trailers-only, with HTTP 200: the fault's parts carry the gRPC status.
            Action::GrpcStatus { .. } => {
                at.reply_status = 200;
                at.reply_fault = fault;
                Some(Act::Status)
            }
            Action::Reset => Some(Act::Reset),
            Action::Hang => Some(Act::Hang),
        };
        match act {
            Some(Act::Status) if extra == 0 => {
                // What `fault_act` does for a status at once, the handler being alive (it
                // was just counted in): most attempts of an outage end here, without a call.
                at.act = Act::Status;
                let (s, f) = (at.reply_status, at.reply_fault);
                self.counters.respond(s, None);
                self.send_reply(t, a, s, f);
            }
            Some(act) => {
                at.act = act;
                if extra > 0 {
                    self.push(t + extra, Kind::FaultAct, a, gen);
                } else {
                    self.fault_act(t, a);
                }
            }
            None => {
                if self.answered_early(t, a) {
                    return;
                }
                self.atts[a as usize].work_start();
                if extra > 0 {
                    self.push(t + extra, Kind::WorkStart, a, gen);
                } else {
                    self.work_start(t, a);
                }
            }
        }
    }

    /// The provider's limits, then the dedup check: true when either answered attempt `a`
    /// before any work. Most runs have neither, so they pay two inlined tests, not two calls.
    #[inline(always)]
    pub(super) fn answered_early(&mut self, t: u64, a: u32) -> bool {
        (self.cfg.provider.is_some() && self.throttled(t, a))
            || (self.dedup.is_some() && self.deduplicated(t, a))
    }

    /// The target's dedup check of a keyed write, after the fault verdict and before the
    /// work: true when it answered (a replay, 409) instead of executing.
    pub(super) fn deduplicated(&mut self, t: u64, a: u32) -> bool {
        let at = &mut self.atts[a as usize];
        let write = self.cfg.classes[usize::from(at.class)].write;
        let Some(store) = self.dedup.as_mut().filter(|_| write && at.keyed) else {
            return false;
        };
        let status = match store.begin((at.hop, at.request), SAME_BODY, t) {
            Begin::Execute => {
                at.ticket = true;
                return false;
            }
            Begin::Replay(_) if at.lost != NO_FAULT => {
                // A replay (counted), whose stored response travels the same lossy path
                // as the first one.
                self.counters.dedup_replay();
                self.counters.lost_response();
                match self.parts.get(at.lost as usize).and_then(|p| p.lost_status) {
                    Some(s) => s,
                    None => return true, // no answer: held until the client gives up
                }
            }
            Begin::Replay(s) => {
                self.counters.dedup_replay();
                s
            }
            Begin::Conflict => {
                self.counters.dedup_conflict();
                409
            }
            Begin::Mismatch => {
                self.counters.dedup_mismatch();
                422
            }
        };
        self.counters.respond(status, None);
        self.send_reply(t, a, status, NO_FAULT);
        true
    }

    /// A provider's own limits, after the fault windows (as the live target orders them):
    /// true when the provider throttled attempt `a` (answered 429 with `Retry-After`).
    pub(super) fn throttled(&mut self, t: u64, a: u32) -> bool {
        let Some(p) = self.cfg.provider.as_mut() else {
            return false;
        };
        let at = &self.atts[a as usize];
        let Err(secs) = p.admit(at.route(), at.request, dur(t)) else {
            return false;
        };
        let part = self.retry_after_index(secs.to_string());
        let at = &mut self.atts[a as usize];
        at.act = Act::Status;
        at.reply_status = 429;
        at.reply_fault = part;
        self.fault_act(t, a);
        true
    }

    /// The reply parts of a 429 carrying `Retry-After: value` and nothing else, added once.
    fn retry_after_index(&mut self, value: String) -> u16 {
        let part = match self.parts.iter().position(|p| {
            p.lost_status.is_none()
                && p.grpc.is_none()
                && p.error_code.is_none()
                && p.retry_after_ms.is_none()
                && p.should_retry.is_none()
                && p.retry_after.as_deref() == Some(value.as_str())
        }) {
            Some(i) => i,
            None => {
                self.parts
                    .push(FaultParts::new(Some(value), None, None, None, None, None));
                self.parts.len() - 1
            }
        };
        u16::try_from(part).unwrap_or(NO_FAULT)
    }

    /// The reply parts of the service rate limit's 429: its `Retry-After`, if it sends one.
    fn retry_after_part(&mut self) -> u16 {
        match self
            .cfg
            .model
            .shedding
            .rate_limit
            .and_then(|l| l.retry_after_s)
        {
            Some(secs) => self.retry_after_index(secs.to_string()),
            None => NO_FAULT,
        }
    }

    /// A terminal fault acts (after its added latency), if the client is still connected.
    pub(super) fn fault_act(&mut self, t: u64, a: u32) {
        let at = &self.atts[a as usize];
        if !at.handler_alive() {
            return;
        }
        match at.act {
            Act::Status => {
                let (s, f) = (at.reply_status, at.reply_fault);
                self.counters.respond(s, None);
                self.send_reply(t, a, s, f);
            }
            Act::Reset => {
                self.counters.reset();
                self.send_reply(t, a, REPLY_RESET, NO_FAULT);
            }
            Act::Hang => self.counters.hang(),
        }
    }

    /// The handler ends and the reply travels back to the client. Inlined: nearly every
    /// attempt ends here, and the call's own prologue and epilogue cost as much as its body.
    #[inline(always)]
    pub(super) fn send_reply(&mut self, t: u64, a: u32, status: u16, fault: u16) {
        self.leave(t, a);
        let at = &mut self.atts[a as usize];
        at.handler_done();
        at.reply_status = status;
        at.reply_fault = fault;
        let reply_at = t + ns(NET_DELAY);
        // A reply due before the per-try timer still held back makes the timer stale: it is
        // never queued (see `Sim::arm_timer`). Due at the same instant, the timer (sent
        // first) still goes off first.
        if reply_at < at.timer_at {
            at.timer_at = NO_TIMER;
        }
        let gen = at.gen;
        self.push(reply_at, Kind::Reply, a, gen);
    }

    /// The work asks for a service slot, past the rate limit and the cap on work in
    /// progress: at once if one is free and nobody waits, else in the discipline's order, or
    /// refused when the queue is full (the live target's `Slots::acquire`).
    pub(super) fn work_start(&mut self, t: u64, a: u32) {
        let in_work = self.serving as usize + self.queue.len();
        if let Err(why) = self.gate.admit(t, in_work) {
            return self.work_shed(t, a, why);
        }
        if self.queue.is_empty() && self.serving < self.cap {
            // A free slot at once: CoDel hears of a wait of zero (it never sheds it).
            if let Some(c) = self.codel.as_mut() {
                c.shed(t, 0);
            }
            self.entered_work(t, a);
            self.grant(t, a);
        } else if self.queue.len() >= self.cfg.model.queue as usize {
            // Admitted, then shed by the full queue at once: a sample of no latency.
            self.gate.left(t, t);
            self.work_shed(t, a, Shed::QueueFull);
        } else {
            self.entered_work(t, a);
            let at = &mut self.atts[a as usize];
            at.queued = true;
            let gen = at.gen;
            self.queue.push_back((a, gen, t));
            if let Some(qt) = self.cfg.model.queue_timeout {
                self.push(t.saturating_add(ns(qt)), Kind::QueueTimeout, a, gen);
            }
        }
    }

    /// Attempt `a` entered the work (a slot or the queue) at `t`: kept for the adaptive
    /// limit, which hears its latency when it leaves.
    #[inline]
    fn entered_work(&mut self, t: u64, a: u32) {
        if self.gate.learns() {
            self.admitted.insert(a, t);
        }
    }

    /// Attempt `a` left the work at `t`: the adaptive limit hears its latency.
    #[inline]
    fn left_work(&mut self, t: u64, a: u32) {
        if !self.gate.learns() {
            return;
        }
        if let Some(admitted) = self.admitted.remove(&a) {
            self.gate.left(t, admitted);
        }
    }

    pub(super) fn grant(&mut self, t: u64, a: u32) {
        self.serving += 1;
        self.peak_serving = self.peak_serving.max(u64::from(self.serving));
        let at = &mut self.atts[a as usize];
        at.queued = false;
        let service = match self
            .cfg
            .provider
            .as_ref()
            .and_then(|p| p.latency(at.route(), at.request))
        {
            Some(latency) => ns(latency),
            None => self
                .cfg
                .timeline
                .service_nanos_with(&self.service, at.request, at.attempt),
        };
        let gen = at.gen;
        self.push(t.saturating_add(service), Kind::ServiceDone, a, gen);
    }

    /// Hands free slots to waiters in the discipline's order; under CoDel a waiter may be
    /// shed instead, and the slot goes on to the next.
    pub(super) fn pump(&mut self, t: u64) {
        while self.serving < self.cap {
            let next = match self.lifo {
                true => self.queue.pop_back(),
                false => self.queue.pop_front(),
            };
            let Some((a, _, since)) = next else {
                break;
            };
            if let Some(c) = self.codel.as_mut() {
                if c.shed(t, t - since) {
                    self.atts[a as usize].queued = false;
                    self.left_work(t, a);
                    self.work_shed(t, a, Shed::Codel);
                    continue;
                }
            }
            self.grant(t, a);
        }
    }

    pub(super) fn queue_timeout(&mut self, t: u64, a: u32) {
        // Every waiter has the same queue timeout, so under FIFO the one expiring is normally
        // the head (under LIFO, the tail's far end: the search runs from the front).
        if let Some(pos) = self.queue.iter().position(|(w, ..)| *w == a) {
            self.queue.remove(pos);
        }
        self.atts[a as usize].queued = false;
        self.left_work(t, a);
        self.work_shed(t, a, Shed::QueueTimeout);
    }

    /// The work ended without service (counted by reason): 503 to the client, or 429 with
    /// the rate limit's `Retry-After`, if still connected.
    pub(super) fn work_shed(&mut self, t: u64, a: u32, why: Shed) {
        self.counters.shed(why.reason());
        let at = &mut self.atts[a as usize];
        at.work_done();
        if std::mem::take(&mut at.ticket) {
            // Shed before it ran: the key is forgotten, so a retry may execute.
            if let Some(store) = self.dedup.as_mut() {
                store.forget(&(at.hop, at.request));
            }
        }
        if at.handler_alive() {
            let status = why.status();
            let part = match why {
                Shed::RateLimited => self.retry_after_part(),
                _ => NO_FAULT,
            };
            self.counters.respond(status, None);
            self.send_reply(t, a, status, part);
        }
        self.maybe_free(a);
    }

    pub(super) fn service_done(&mut self, t: u64, a: u32) {
        self.serving -= 1;
        self.left_work(t, a);
        self.pump(t);
        let at = &mut self.atts[a as usize];
        at.work_done();
        let (request, alive, lost) = (at.request, at.handler_alive(), at.lost);
        if std::mem::take(&mut at.ticket) {
            if let Some(store) = self.dedup.as_mut() {
                store.complete((at.hop, request), SAME_BODY, 200, t);
            }
        }
        let class = &self.cfg.classes[usize::from(at.class)];
        if class.write {
            self.counters.execute(request, class.amount);
        }
        if alive {
            if lost == NO_FAULT {
                if let Some(p) = self.cfg.provider.as_mut() {
                    let at = &self.atts[a as usize];
                    let tokens = p.served(at.route(), request);
                    if let (true, Some(n)) = (self.cfg.count_classes, tokens) {
                        self.counters.class_tokens(usize::from(at.class), n, true);
                    }
                }
                self.counters.respond(200, Some(sec(t)));
                self.send_reply(t, a, 200, NO_FAULT);
            } else {
                self.counters.lost_response();
                // Without a status the response is lost on the way: the handler holds until
                // the client gives up.
                if let Some(s) = self.parts.get(lost as usize).and_then(|p| p.lost_status) {
                    self.counters.respond(s, None);
                    self.send_reply(t, a, s, NO_FAULT);
                }
            }
        }
        self.maybe_free(a);
    }
}
