//! One config's run in virtual time: a discrete-event loop over events popped in (time in
//! ns, sequence number) order (see `queue`), so that events at the same instant run in the
//! order they were scheduled and every run of the same plan is identical.
//!
//! Two slabs hold the moving parts, reused through free lists (no allocation per event or
//! per request once they have grown):
//! * `Req`: one logical request at the client (its `session::Request` between steps and its
//!   own RNG);
//! * `Att`: one attempt, from the client sending it until the client stopped waiting, the
//!   target's request handler ended *and* the target's work on it ended (a real server keeps
//!   serving a request whose client went away, exactly as the live target does).
//!
//! Events are small `Copy` values naming a slab index and its generation; an event whose
//! generation no longer matches (a timer of an attempt that already ended) is stale and
//! skipped.

use std::collections::VecDeque;
use std::time::Duration;

use super::clock::{dur, now, ns, sec, MIN_THINK, NET_DELAY};
pub(super) use super::event::Kind;
use super::event::{lane_of, Ev, Event, MIN_SWEEP};
use super::hop::{Hop, HopOut, HopRun, NO_DEADLINE};
use super::queue::{EventQueue, IN_ORDER_LANE};
pub(super) use super::slots::{Act, Att, Carry, Req, NONE, NO_TIMER};
use super::verdicts::{Verdicts, NO_FAULT};
use crate::draws::request_seed;
use crate::idempotency::Store;
use crate::metrics::target_counts::TargetCounts;
use crate::metrics::{AttemptRow, Recorder, TargetStats};
use crate::policy::{AttemptOutcome, GrpcStatus, Response, RetryConfig, TransportError};
use crate::scenario::schedule::Arrivals;
use crate::scenario::timeline::{FaultTimeline, Sampler};
use crate::scenario::ServiceModel;
use crate::session::{self, Next, Session};

use super::parts::{fault_parts, FaultParts};
use super::provider::{SimProvider, NO_FALLBACK};

/// `reply_status` values that are not HTTP statuses: a reset, the per-try timeout.
pub(super) const REPLY_RESET: u16 = 0;
pub(super) const REPLY_TIMEOUT: u16 = 1;

/// How load arrives for this config.
pub(crate) enum Load {
    Open(Arrivals),
    Closed { users: u32, think: Duration },
}

/// Everything one config's simulation needs.
pub(crate) struct ConfigRun<'a> {
    /// Keys the config's jitter draws ([`crate::draws::config_key`]).
    pub draw_key: u64,
    pub name: &'a str,
    pub config: &'a RetryConfig,
    /// Client instances of the config (`load.clients`), each with its own policy state.
    pub clients: std::num::NonZeroU32,
    pub seed: u64,
    /// The load's method (without classes, and at layers, which relay it).
    pub method: &'a str,
    /// What each request class sends (one class, the load itself, without classes).
    pub classes: Vec<SimClass>,
    /// Draws each request's class; `count_classes` when the load has classes of its own
    /// (the session then runs each class's policy and counts per class).
    pub mix: crate::scenario::classes::ClassMix,
    pub count_classes: bool,
    /// Per class, its own policy (`None`: the config's); empty without classes.
    pub class_policies: &'a [Option<RetryConfig>],
    /// The load makes gRPC calls: replies are read as gRPC statuses, as the live client
    /// reads the built-in target's answers (a shed 503 is UNAVAILABLE).
    pub grpc: bool,
    pub model: &'a ServiceModel,
    pub timeline: &'a FaultTimeline,
    pub load: Load,
    /// Load duration and the hard end (duration + drain), in ns.
    pub duration: u64,
    pub end: u64,
    pub max_in_flight: u64,
    /// The target's idempotency-key dedup: how long a key is remembered, in ns.
    pub dedup_retention: Option<u64>,
    /// The topology's layers, nearest to the client first (empty: a direct run).
    pub layers: Vec<HopRun<'a>>,
    /// The client passes its remaining deadline to the first layer.
    pub propagate_deadline: bool,
    pub attempt_log: bool,
    /// Turned true from outside (SIGINT, SIGTERM): the loop ends within a few thousand
    /// events, keeping what it counted so far.
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
    /// The providers the config's attempts reach, if any.
    pub provider: Option<SimProvider>,
}

/// What a request class sends, as the modeled target sees it.
#[derive(Debug, Clone)]
pub(crate) struct SimClass {
    pub path: String,
    /// Not a GET or HEAD: the target counts its executions.
    pub write: bool,
    /// What one execution of a write debits (`x-stormrig-amount`, else 1).
    pub amount: u64,
    /// A retry may repeat its effect (the session's rules for writes apply otherwise).
    pub idempotent: bool,
}

/// How many events pass between two looks at [`ConfigRun::stop`] (well under a millisecond).
const STOP_CHECK_EVERY: u64 = 4096;

/// What one config's simulation produced.
pub(crate) struct ConfigOut {
    pub rec: Recorder,
    pub stats: TargetStats,
    pub log: Vec<AttemptRow>,
    pub attempts: u64,
    pub events: u64,
    pub end_t: u64,
    /// What each layer counted, nearest to the client first.
    pub layers: Vec<HopOut>,
    /// Attempts of the client whose per-try timeout the deadline cut short.
    pub deadline_cut: u64,
    /// Ended early by [`ConfigRun::stop`].
    pub stopped: bool,
}

pub(super) struct Sim<'a> {
    pub(super) cfg: ConfigRun<'a>,
    pub(super) session: Session,
    /// The topology's layers, nearest to the client first.
    pub(super) hops: Vec<Hop>,
    pub(super) counters: TargetCounts,
    /// Most requests holding a service slot at once.
    pub(super) peak_serving: u64,
    pub(super) events: EventQueue<Ev>,
    pub(super) seq: u64,
    pub(super) reqs: Vec<Req>,
    /// The free slots of each slab, a stack threaded through the free slots themselves
    /// (`NONE`: empty): freeing a slot writes two numbers, where a `Vec` of free indices
    /// paid a capacity check and a store per free and a bounds check per take.
    free_req: u32,
    pub(super) atts: Vec<Att>,
    free_att: u32,
    pub(super) parts: Vec<FaultParts>,
    /// The outcome of a plain answer (no fault's parts), kept whole: a reply writes its
    /// status (and gRPC status) into it rather than building the whole response anew.
    plain: AttemptOutcome<'static>,
    /// The model's service-time distribution, prepared once.
    pub(super) service: Sampler,
    /// The fault verdicts by time segment.
    pub(super) verdicts: Verdicts<'a>,
    /// Keyed by (hop whose client sent it, that client's request id), as live keys are
    /// `<client name>-<request id>`.
    pub(super) dedup: Option<Store<(u8, u64)>>,
    pub(super) claimed: u64,
    next_id: u64,
    user_n: Vec<u64>,
    // Service slots: in force, taken, waiters (attempt index, generation, since when, ns).
    pub(super) cap: u32,
    pub(super) serving: u32,
    pub(super) queue: VecDeque<(u32, u32, u64)>,
    /// The service's shedding (`crate::shed`): rate limit and cap before the queue, the
    /// discipline's order, CoDel when asked for.
    pub(super) gate: crate::shed::Gate,
    pub(super) lifo: bool,
    pub(super) codel: Option<crate::shed::Codel>,
    /// When each attempt in the work was admitted, kept only when the gate learns from the
    /// work's latency (the adaptive concurrency limit).
    pub(super) admitted: std::collections::HashMap<u32, u64>,
    attempts: u64,
    /// The load's method is idempotent (read once: every request without classes sends it).
    pub(super) idempotent: bool,
    /// Length of the timer lane at which its stale timers are swept out.
    pub(super) sweep_at: usize,
    /// Some attempt has held back a per-try timer (see `arm_timer`): until then an arrival
    /// looks for none.
    pub(super) timers_held: bool,
    /// The config hedges its calls: the client's requests take the hedged path (`hedge`).
    pub(super) hedging: bool,
}

/// Simulates one config from t = 0 to the end of its drain.
pub(crate) fn simulate(cfg: ConfigRun<'_>) -> ConfigOut {
    let parts = fault_parts(cfg.timeline);
    let cap = cfg
        .timeline
        .capacity_at(Duration::ZERO, cfg.model.concurrency);
    let sim = Sim {
        session: {
            let s = Session::fleet(cfg.name, cfg.config, cfg.clients, cfg.attempt_log)
                .seeded(cfg.seed, cfg.draw_key);
            match cfg.count_classes {
                true => {
                    s.with_classes(cfg.class_policies, cfg.classes.iter().map(|c| c.idempotent))
                }
                false => s,
            }
        },
        hops: cfg.layers.iter().map(Hop::new).collect(),
        counters: TargetCounts::new(),
        peak_serving: 0,
        events: EventQueue::until(cfg.end),
        seq: 0,
        reqs: Vec::new(),
        free_req: NONE,
        atts: Vec::new(),
        free_att: NONE,
        parts,
        plain: AttemptOutcome::Response(Response {
            status: 0,
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
            amz_retry_after: None,
            grpc_pushback_ms: None,
            error_code: None,
            grpc_status: None,
        }),
        service: Sampler::new(&cfg.model.service_time),
        verdicts: Verdicts::new(cfg.timeline),
        dedup: cfg.dedup_retention.map(Store::new),
        claimed: 0,
        next_id: 0,
        user_n: Vec::new(),
        cap,
        serving: 0,
        queue: VecDeque::new(),
        gate: crate::shed::Gate::new(&cfg.model.shedding),
        lifo: cfg.model.shedding.discipline == crate::scenario::shedding::Discipline::Lifo,
        codel: crate::shed::codel(cfg.model.shedding.discipline, 0),
        admitted: std::collections::HashMap::new(),
        attempts: 0,
        idempotent: crate::policy::is_idempotent_method(cfg.method),
        sweep_at: MIN_SWEEP,
        timers_held: false,
        hedging: cfg.config.hedges(),
        cfg,
    };
    sim.run()
}

impl Sim<'_> {
    #[inline]
    pub(super) fn push(&mut self, t: u64, kind: Kind, idx: u32, gen: u32) {
        self.push_in(t, kind, idx, gen, lane_of(kind));
    }

    /// [`Self::push`] for a network leg (an arrival at the next hop, a reply), whose lane
    /// is known without looking at its kind.
    #[inline(always)]
    pub(super) fn push_leg(&mut self, t: u64, kind: Kind, idx: u32, gen: u32) {
        debug_assert_eq!(lane_of(kind), Some(IN_ORDER_LANE));
        self.push_in(t, kind, idx, gen, Some(IN_ORDER_LANE));
    }

    /// Schedules an event with the next sequence number, in `lane` if it keeps it sorted.
    #[inline(always)]
    fn push_in(&mut self, t: u64, kind: Kind, idx: u32, gen: u32, lane: Option<usize>) {
        self.seq += 1;
        self.events.push(
            Event {
                t,
                seq: self.seq,
                payload: Ev { kind, idx, gen },
            },
            lane,
        );
    }

    fn run(mut self) -> ConfigOut {
        self.schedule_start();
        let end = self.cfg.end;
        let mut events = 0u64;
        let mut last_t = 0u64;
        let mut popped = 0u64;
        let mut stopped = false;
        // The queue ends before the first event due at or after `end`.
        while let Some(ev) = self.events.pop() {
            popped += 1;
            if popped % STOP_CHECK_EVERY == 0
                && self
                    .cfg
                    .stop
                    .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            {
                stopped = true;
                break;
            }
            // The run lasts until the last event that moved a request, an attempt or a user
            // on, as a live run drains until its last request is done.
            if self.handle(ev.t, ev.payload) {
                events += 1;
                last_t = ev.t;
            }
        }
        let end_t = last_t.max(self.cfg.duration).min(end);
        let deadline_cut = self.session.deadline_cut();
        let (rec, log) = self.session.into_parts();
        let mut stats = self.counters.snapshot(sec(end_t), self.peak_serving);
        if let Some(p) = self.cfg.provider.take() {
            stats.providers = p.into_stats();
        }
        ConfigOut {
            stats,
            rec,
            log,
            layers: self.hops.into_iter().map(Hop::finish).collect(),
            deadline_cut,
            attempts: self.attempts,
            events,
            end_t,
            stopped,
        }
    }

    /// Schedules what starts the run: the capacity changes, then the first arrival of an
    /// open loop or every user of a closed one.
    fn schedule_start(&mut self) {
        for at in self.cfg.timeline.capacity_changes() {
            self.push(ns(at), Kind::Capacity, 0, 0);
        }
        match &mut self.cfg.load {
            Load::Open(arrivals) => {
                if let Some(first) = arrivals.next_nanos() {
                    self.push(first, Kind::Arrival, 0, 0);
                }
            }
            Load::Closed { users, .. } => {
                let users = *users;
                self.user_n = vec![0; users as usize];
                for u in 0..users {
                    self.push(0, Kind::UserStart, u, 0);
                }
            }
        }
    }

    /// Carries out one event at time `t`. Returns whether it moved a request, an attempt or
    /// a user on (a stale timer, a reply nobody waits for, a capacity change do not).
    #[inline(always)]
    fn handle(&mut self, t: u64, ev: Ev) -> bool {
        let Ev { kind, idx, gen } = ev;
        match kind {
            Kind::Arrival => {
                self.arrival(t);
                true
            }
            Kind::UserStart => self.user_start(t, idx),
            Kind::RetryDue => {
                let q = &self.reqs[idx as usize];
                let go = q.gen == gen && q.req.is_some();
                if go {
                    self.retry_due(t, idx);
                }
                go
            }
            Kind::TargetArrive => {
                self.run_if(self.att_ok(idx, gen), t, idx, Self::target_arrive)
                    && self.arm_timer(idx)
            }
            Kind::FaultAct => self.run_if(self.att_ok(idx, gen), t, idx, Self::fault_act),
            Kind::WorkStart => self.run_if(self.att_ok(idx, gen), t, idx, Self::work_start),
            Kind::QueueTimeout => {
                let go = self.att_ok(idx, gen) && self.atts[idx as usize].queued;
                self.run_if(go, t, idx, Self::queue_timeout)
            }
            Kind::ServiceDone => self.run_if(self.att_ok(idx, gen), t, idx, Self::service_done),
            Kind::Reply => self.run_if(self.client_waits(idx, gen), t, idx, Self::reply),
            Kind::ClientTimeout => {
                self.run_if(self.client_waits(idx, gen), t, idx, Self::client_timeout)
            }
            Kind::LayerArrive => {
                self.run_if(self.att_ok(idx, gen), t, idx, Self::layer_arrive)
                    && self.arm_timer(idx)
            }
            Kind::LayerStart => self.run_if(self.att_ok(idx, gen), t, idx, Self::layer_start),
            Kind::HedgeDue => {
                let q = &self.reqs[idx as usize];
                let go = q.gen == gen && q.req.is_some();
                if go {
                    self.hedge_due(t, idx);
                }
                go
            }
            Kind::Capacity => {
                self.cap = self
                    .cfg
                    .timeline
                    .capacity_at(dur(t), self.cfg.model.concurrency);
                self.pump(t);
                false
            }
        }
    }

    /// Runs `f` for attempt `a` when `go` (the event still concerns it); returns `go`.
    #[inline]
    fn run_if(&mut self, go: bool, t: u64, a: u32, f: fn(&mut Self, u64, u32)) -> bool {
        if go {
            f(self, t, a);
        }
        go
    }

    /// An open-loop arrival: a new request, or one dropped at the in-flight cap; then the
    /// next arrival is scheduled.
    fn arrival(&mut self, t: u64) {
        let id = self.next_id;
        self.next_id += 1;
        if self.claimed >= self.cfg.max_in_flight {
            self.session.dropped(dur(t));
        } else {
            self.claimed += 1;
            self.start_request(t, id, NONE, true);
        }
        let next = match &mut self.cfg.load {
            Load::Open(arrivals) => arrivals.next_nanos(),
            Load::Closed { .. } => None,
        };
        if let Some(next) = next {
            self.push(next, Kind::Arrival, 0, 0);
        }
    }

    /// A closed-loop user starts its next request, while the load lasts.
    fn user_start(&mut self, t: u64, user: u32) -> bool {
        let go = t < self.cfg.duration;
        if go {
            let users = self.user_n.len() as u64;
            let n = self.user_n[user as usize];
            self.user_n[user as usize] += 1;
            // Request ids interleave users so they stay unique, as live does.
            self.start_request(t, n * users + u64::from(user), user, false);
        }
        go
    }

    /// The reply of attempt `a` reached the client. Inlined: nearly every attempt ends
    /// here, and the call only passed its arguments on.
    #[inline(always)]
    fn reply(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        at.client_done();
        let (status, fault) = (at.reply_status, at.reply_fault);
        self.client_outcome(t, a, status, fault);
    }

    /// The client's per-try timer of attempt `a` went off first.
    fn client_timeout(&mut self, t: u64, a: u32) {
        self.atts[a as usize].client_done();
        // The client closes its connection: the next hop's handler ends (the request leaves
        // flight there, a layer drops what it was doing for it); work the target already
        // accepted carries on.
        self.disconnect(t, a);
        self.client_outcome(t, a, REPLY_TIMEOUT, NO_FAULT);
    }

    #[inline]
    fn att_ok(&self, idx: u32, gen: u32) -> bool {
        self.atts[idx as usize].gen == gen
    }

    #[inline]
    fn client_waits(&self, idx: u32, gen: u32) -> bool {
        client_waits(&self.atts[idx as usize], gen)
    }

    pub(super) fn alloc_req(&mut self) -> u32 {
        let r = self.free_req;
        if r != NONE {
            self.free_req = self.reqs[r as usize].next_free;
            return r;
        }
        self.reqs.push(Req::empty());
        (self.reqs.len() - 1) as u32
    }

    fn alloc_att(&mut self) -> u32 {
        let a = self.free_att;
        if a != NONE {
            self.free_att = self.atts[a as usize].next_free;
            return a;
        }
        self.atts.push(Att::empty());
        (self.atts.len() - 1) as u32
    }

    /// Frees an attempt once nobody (client, handler, work) holds it any more.
    #[inline]
    pub(super) fn maybe_free(&mut self, a: u32) {
        let at = &mut self.atts[a as usize];
        if at.unheld() {
            at.gen = at.gen.wrapping_add(1);
            at.next_free = self.free_att;
            self.free_att = a;
        }
    }

    fn start_request(&mut self, t: u64, id: u64, user: u32, claimed: bool) {
        let mode = self.send_mode(0);
        let r = self.alloc_req();
        let q = &mut self.reqs[r as usize];
        q.user = user;
        q.id = id;
        q.claimed = claimed;
        q.hop = 0;
        q.parent = NONE;
        (q.carry, q.arrive) = mode;
        q.rng
            .reseed(request_seed(self.cfg.seed, self.cfg.draw_key, id));
        let step = if self.cfg.count_classes {
            let class = self.cfg.mix.class_of(self.cfg.seed, id);
            q.class = class as u8;
            self.session
                .start_class_in(&mut q.req, now(t), dur(t), id, class, None)
        } else {
            self.session
                .start_in(&mut q.req, now(t), dur(t), id, self.idempotent, None)
        };
        self.follow(t, r, step);
    }

    /// A retry's backoff or a rate limiter's wait is over: ask for its permit.
    fn retry_due(&mut self, t: u64, r: u32) {
        let q = &mut self.reqs[r as usize];
        if q.req.is_none() {
            return;
        }
        let session = match q.hop {
            0 => &mut self.session,
            h => &mut self.hops[h as usize - 1].session,
        };
        let step = session.permit_in(now(t), &mut q.req);
        self.follow(t, r, step);
    }

    /// Carries out what the session said to do next with request slot `r` (whose request
    /// the session keeps in the slot): send an attempt, schedule the retry, or free the slot
    /// of a request that ended.
    #[inline(always)]
    pub(super) fn follow(&mut self, t: u64, r: u32, step: Next) {
        match step {
            Next::Send(attempt) => {
                let a = self.send(t, r, attempt);
                if self.hedging && self.reqs[r as usize].hop == 0 {
                    self.first_copy(t, r, a);
                }
            }
            Next::Wait(after) => {
                let gen = self.reqs[r as usize].gen;
                self.push(t.saturating_add(ns(after)), Kind::RetryDue, r, gen);
            }
            Next::Done(ending) => {
                if self.reqs[r as usize].parent != NONE {
                    self.relay(t, r, ending);
                }
                self.free_req(t, r);
            }
        }
    }

    /// Sends an attempt of request slot `r` now: the attempt slot it takes (returned), its
    /// arrival at the next hop, its per-try timer.
    #[inline(always)]
    pub(super) fn send(&mut self, t: u64, r: u32, attempt: session::Attempt) -> u32 {
        self.attempts += 1;
        let a = self.alloc_att();
        let q = &mut self.reqs[r as usize];
        q.att = a;
        let at = &mut self.atts[a as usize];
        q.att_gen = at.gen;
        at.hop = q.hop;
        let carried = match q.carry {
            Carry::Nothing => None,
            Carry::Remaining => attempt.remaining_deadline,
            Carry::RemainingElseTry => attempt.remaining_deadline.or(attempt.timeout),
        };
        at.deadline_ms = match carried {
            Some(rem) => u64::try_from(rem.as_millis()).unwrap_or(u64::MAX - 1),
            None => NO_DEADLINE,
        };
        at.child = NONE;
        at.req = r;
        at.req_gen = q.gen;
        at.request = q.id;
        at.attempt = attempt.number;
        at.provider = attempt.provider.map_or(0, |p| p as u8);
        at.class = q.class;
        at.fallback = attempt.fallback.unwrap_or(NO_FALLBACK);
        at.sent_at = t;
        at.sent();
        at.reached = false;
        at.keyed = attempt.idempotency_key;
        at.ticket = false;
        at.queued = false;
        at.lost = NO_FAULT;
        at.timer_at = NO_TIMER;
        at.reply_status = 0;
        at.reply_fault = NO_FAULT;
        let (gen, arrive) = (at.gen, q.arrive);
        let arrive_at = t + ns(NET_DELAY);
        self.push_leg(arrive_at, arrive, a, gen);
        if let Some(to) = attempt.timeout {
            self.hold_timer(a, gen, t.saturating_add(ns(to)), arrive_at);
        }
        a
    }

    /// How a request driven by hop `hop`'s client sends its attempts: the deadline they
    /// carry, and whether they reach a layer or the target. Worked out once per request.
    pub(super) fn send_mode(&self, hop: u8) -> (Carry, Kind) {
        let propagate = match hop {
            0 => self.cfg.propagate_deadline,
            h => self.hops[h as usize - 1].propagate_deadline,
        };
        // A gRPC call always carries its deadline (`grpc-timeout`: what remains of it, else
        // the try's), which the next layer inherits as the live one does.
        let carry = match (self.cfg.grpc, propagate) {
            (true, _) => Carry::RemainingElseTry,
            (false, true) => Carry::Remaining,
            (false, false) => Carry::Nothing,
        };
        let arrive = match (hop as usize) < self.hops.len() {
            true => Kind::LayerArrive,
            false => Kind::TargetArrive,
        };
        (carry, arrive)
    }

    /// Frees the slot of a request that ended; a closed-loop user thinks, then starts its
    /// next request.
    pub(super) fn free_req(&mut self, t: u64, r: u32) {
        let q = &mut self.reqs[r as usize];
        let (user, claimed) = (q.user, q.claimed);
        q.gen = q.gen.wrapping_add(1);
        q.next_free = self.free_req;
        self.free_req = r;
        if claimed {
            self.claimed -= 1;
        }
        if user != NONE {
            let think = match self.cfg.load {
                Load::Closed { think, .. } => think.max(MIN_THINK),
                Load::Open(_) => MIN_THINK,
            };
            self.push(t + ns(think), Kind::UserStart, user, 0);
        }
    }

    /// The reply (or timeout) of attempt `a` reached the client: ask the policy what next.
    /// `status`: an HTTP status, `REPLY_RESET`, or 1 for the per-try timeout.
    fn client_outcome(&mut self, t: u64, a: u32, status: u16, fault: u16) {
        let (r, req_gen, sent_at) = {
            let at = &self.atts[a as usize];
            (at.req, at.req_gen, at.sent_at)
        };
        self.maybe_free(a);
        let q = &mut self.reqs[r as usize];
        if q.gen != req_gen {
            return;
        }
        if q.req.is_none() {
            return;
        }
        q.last_status = status;
        q.last_fault = fault;
        let with_parts;
        let outcome: &AttemptOutcome<'_> = match status {
            REPLY_RESET => &AttemptOutcome::Transport(TransportError::Reset),
            REPLY_TIMEOUT => &AttemptOutcome::Transport(TransportError::PerTryTimeout),
            // Looked at once: most replies carry no fault's parts, or parts with nothing
            // but their status (a plain answer).
            s => match self.parts.get(fault as usize).filter(|p| !p.plain) {
                Some(p) => {
                    let g = p.grpc.as_ref();
                    with_parts = AttemptOutcome::Response(Response {
                        status: s,
                        retry_after: p.retry_after.as_deref(),
                        retry_after_ms: p.retry_after_ms.as_deref(),
                        should_retry: p.should_retry,
                        amz_retry_after: None,
                        grpc_pushback_ms: g.and_then(|g| g.1.as_deref()),
                        error_code: p.error_code.as_deref(),
                        grpc_status: match g {
                            Some(g) => Some(g.0),
                            None => grpc_status_of(self.cfg.grpc, s),
                        },
                    });
                    &with_parts
                }
                None => {
                    if let AttemptOutcome::Response(p) = &mut self.plain {
                        p.status = s;
                        p.grpc_status = grpc_status_of(self.cfg.grpc, s);
                    }
                    &self.plain
                }
            },
        };
        if self.hedging && q.hop == 0 {
            let attempt = self.atts[a as usize].attempt;
            q.copies.retain(|&(c, _)| c != a);
            let h = self.session.hedge_outcome_in(
                now(t),
                &mut q.req,
                attempt,
                dur(t.saturating_sub(sent_at)),
                outcome,
                &mut q.rng,
            );
            self.follow_hedge(t, r, h);
            return;
        }
        let session = match q.hop {
            0 => &mut self.session,
            h => &mut self.hops[h as usize - 1].session,
        };
        let step = session.outcome_in(
            now(t),
            &mut q.req,
            dur(t.saturating_sub(sent_at)),
            outcome,
            &mut q.rng,
        );
        self.follow(t, r, step);
    }
}

/// The gRPC status a reply without a fault's own reads as: HTTP's mapped, for a gRPC load
/// (as the live client reads the built-in target's answers); none otherwise.
#[inline(always)]
fn grpc_status_of(grpc: bool, status: u16) -> Option<GrpcStatus> {
    grpc.then(|| GrpcStatus::from_http(status).unwrap_or(GrpcStatus::Ok))
}

/// The client still waits on attempt `a` as of generation `gen`: a reply or a per-try
/// timer of that generation still has something to end.
#[inline]
pub(super) fn client_waits(a: &Att, gen: u32) -> bool {
    a.gen == gen && a.client_waiting()
}
