//! One config's run in virtual time: a discrete-event loop over events popped in (time in
//! ns, sequence number) order (see `queue`), so that events at the same instant run in the
//! order they were scheduled and every run of the same plan is identical.
//!
//! Two slabs hold the moving parts, reused through free lists (no allocation per event or
//! per request once they have grown):
//! * `Req`: one logical request at the client (its `RequestState` and its own RNG);
//! * `Att`: one attempt, from the client sending it until the client stopped waiting, the
//!   target's request handler ended *and* the target's work on it ended (a real server keeps
//!   serving a request whose client went away, exactly as the live target does).
//!
//! Events are small `Copy` values naming a slab index and its generation; an event whose
//! generation no longer matches (a timer of an attempt that already ended) is stale and
//! skipped.

use std::collections::VecDeque;
use std::time::Duration;

use super::queue::{self, EventQueue};
use crate::metrics::engine::{record_decision, record_permit, request_seed, LazyRng};
use crate::metrics::target_counts::{second_of, TargetCounts};
use crate::metrics::{AttemptRow, Recorder, TargetStats};
use crate::policy::{
    AttemptOutcome, BreakerState, Decision, GiveUpReason, Now, Permit, PolicyEvent, RequestState,
    Response, RetryClient, RetryConfig, TransportError,
};
use crate::scenario::schedule::Arrivals;
use crate::scenario::timeline::{Action, FaultTimeline, Sampler};
use crate::scenario::{FaultKind, ServiceModel};

/// One-way network delay between client and target (each way), a loopback round trip's
/// order of magnitude. Every attempt pays it twice, unless it times out first.
pub const NET_DELAY: Duration = Duration::from_micros(50);

/// Smallest gap between a closed-loop user's requests when `think_time` is zero (what a
/// live task spends between two requests, at least); it also keeps a user whose requests
/// are refused at once (open breaker) from looping at one instant forever.
pub const MIN_THINK: Duration = Duration::from_micros(1);

const NONE: u32 = u32::MAX;
const NO_FAULT: u16 = u16::MAX;
/// `reply_status` values that are not HTTP statuses.
const REPLY_RESET: u16 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
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
}

/// What an event does: its kind, and the slab entry (request, attempt or user) it is for
/// with that entry's generation when scheduled.
#[derive(Clone, Copy, Debug)]
struct Ev {
    kind: Kind,
    idx: u32,
    gen: u32,
}

type Event = queue::Event<Ev>;

/// The lane of the per-try timers.
const TIMEOUT_LANE: usize = 1;
/// The timer lane is not swept of stale timers below this length.
const MIN_SWEEP: usize = 4096;

/// The FIFO lane of each kind that is always scheduled a fixed delay after "now" (or, for
/// arrivals, in schedule order); see `queue`.
#[inline]
fn lane_of(kind: Kind) -> Option<usize> {
    match kind {
        Kind::TargetArrive | Kind::Reply => Some(0),
        Kind::ClientTimeout => Some(TIMEOUT_LANE),
        Kind::QueueTimeout => Some(2),
        Kind::UserStart => Some(3),
        Kind::Arrival => Some(4),
        _ => None,
    }
}

/// What the target does with an arrival after its added latency.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Act {
    Status,
    Reset,
    Hang,
}

struct Req {
    gen: u32,
    id: u64,
    intended: u64,
    state: Option<RequestState>,
    rng: LazyRng,
    user: u32,
    claimed: bool,
}

struct Att {
    gen: u32,
    req: u32,
    req_gen: u32,
    request: u64,
    attempt: u32,
    sent_at: u64,
    /// The client still waits for this attempt's reply.
    client_waiting: bool,
    /// The target's request handler is running (the request is in flight at the target).
    handler_alive: bool,
    /// The target's work (queue, service) on it is running.
    work_active: bool,
    queued: bool,
    act: Act,
    /// Lost-response fault that chose this attempt (index), or `NO_FAULT`.
    lost: u16,
    reply_status: u16,
    reply_fault: u16,
}

/// Precomputed response parts of each fault, indexed like the faults.
struct FaultParts {
    /// `Retry-After` as whole seconds text, rounded up as the live target sends it.
    retry_after: Option<String>,
    error_code: Option<String>,
    lost_status: Option<u16>,
}

/// How load arrives for this config.
pub(crate) enum Load {
    Open(Arrivals),
    Closed { users: u32, think: Duration },
}

/// Everything one config's simulation needs.
pub(crate) struct ConfigRun<'a> {
    pub index: usize,
    pub name: &'a str,
    pub config: &'a RetryConfig,
    pub seed: u64,
    pub method: &'a str,
    pub path: &'a str,
    pub model: &'a ServiceModel,
    pub timeline: &'a FaultTimeline,
    pub load: Load,
    /// Load duration and the hard end (duration + drain), in ns.
    pub duration: u64,
    pub end: u64,
    pub max_in_flight: u64,
    pub attempt_log: bool,
}

/// What one config's simulation produced.
pub(crate) struct ConfigOut {
    pub rec: Recorder,
    pub stats: TargetStats,
    pub log: Vec<AttemptRow>,
    pub attempts: u64,
    pub events: u64,
    pub end_t: u64,
}

#[inline]
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[inline]
fn dur(t: u64) -> Duration {
    Duration::from_nanos(t)
}

/// The target's whole second of virtual time `t`.
#[inline]
fn sec(t: u64) -> usize {
    second_of(dur(t))
}

#[inline]
fn now(t: u64) -> Now {
    Now::virtual_at(dur(t))
}

struct Sim<'a> {
    cfg: ConfigRun<'a>,
    client: RetryClient,
    rec: Recorder,
    log: Vec<AttemptRow>,
    counters: TargetCounts,
    /// Most requests the gate served at once.
    peak_serving: u64,
    events: EventQueue<Ev>,
    seq: u64,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    atts: Vec<Att>,
    free_atts: Vec<u32>,
    parts: Vec<FaultParts>,
    /// The model's service-time distribution, prepared once.
    service: Sampler,
    /// Active windows `[from, to)` in ns of the faults that act on requests (all but
    /// capacity faults), exactly as `Fault::active_at` tests them.
    fault_windows: Vec<(u64, u64)>,
    write: bool,
    claimed: u64,
    next_id: u64,
    user_n: Vec<u64>,
    // The gate: slots in force, slots taken, FIFO waiters (attempt index, generation).
    cap: u32,
    serving: u32,
    queue: VecDeque<(u32, u32)>,
    attempts: u64,
    /// Length of the timer lane at which its stale timers are swept out.
    sweep_at: usize,
}

/// Simulates one config from t = 0 to the end of its drain.
pub(crate) fn simulate(cfg: ConfigRun<'_>) -> ConfigOut {
    let parts = cfg
        .timeline
        .faults()
        .iter()
        .map(|f| match &f.kind {
            FaultKind::Status {
                retry_after,
                error_code,
                ..
            } => FaultParts {
                retry_after: retry_after
                    .map(|d| (d.as_secs() + u64::from(d.subsec_nanos() > 0)).to_string()),
                error_code: error_code.clone(),
                lost_status: None,
            },
            FaultKind::LostResponse { status } => FaultParts {
                retry_after: None,
                error_code: None,
                lost_status: *status,
            },
            _ => FaultParts {
                retry_after: None,
                error_code: None,
                lost_status: None,
            },
        })
        .collect();
    let fault_windows = cfg
        .timeline
        .faults()
        .iter()
        .filter(|f| !matches!(f.kind, FaultKind::Capacity { .. }))
        .map(|f| {
            let to = f.at.checked_add(f.length).map_or(u64::MAX, ns);
            (ns(f.at), to)
        })
        .collect();
    let write = !matches!(cfg.method, "GET" | "HEAD");
    let cap = cfg
        .timeline
        .capacity_at(Duration::ZERO, cfg.model.concurrency);
    let sim = Sim {
        client: RetryClient::new(cfg.config),
        rec: Recorder::new(),
        log: Vec::new(),
        counters: TargetCounts::new(),
        peak_serving: 0,
        events: EventQueue::new(),
        seq: 0,
        reqs: Vec::new(),
        free_reqs: Vec::new(),
        atts: Vec::new(),
        free_atts: Vec::new(),
        parts,
        service: Sampler::new(&cfg.model.service_time),
        fault_windows,
        write,
        claimed: 0,
        next_id: 0,
        user_n: Vec::new(),
        cap,
        serving: 0,
        queue: VecDeque::new(),
        attempts: 0,
        sweep_at: MIN_SWEEP,
        cfg,
    };
    sim.run()
}

impl Sim<'_> {
    #[inline]
    fn push(&mut self, t: u64, kind: Kind, idx: u32, gen: u32) {
        self.seq += 1;
        self.events.push(
            Event {
                t,
                seq: self.seq,
                payload: Ev { kind, idx, gen },
            },
            lane_of(kind),
        );
    }

    fn run(mut self) -> ConfigOut {
        for at in self.cfg.timeline.capacity_changes() {
            self.push(ns(at), Kind::Capacity, 0, 0);
        }
        let mut arrivals = None;
        match std::mem::replace(&mut self.cfg.load, Load::Open(empty_arrivals())) {
            Load::Open(mut a) => {
                if let Some(first) = a.next() {
                    self.push(ns(first), Kind::Arrival, 0, 0);
                }
                arrivals = Some(a);
            }
            Load::Closed { users, think } => {
                self.user_n = vec![0; users as usize];
                self.cfg.load = Load::Closed { users, think };
                for u in 0..users {
                    self.push(0, Kind::UserStart, u, 0);
                }
            }
        }
        let end = self.cfg.end;
        let mut events = 0u64;
        let mut last_t = 0u64;
        while let Some(ev) = self.events.pop() {
            if ev.t >= end {
                break;
            }
            let t = ev.t;
            let Ev { kind, idx, gen } = ev.payload;
            // Whether the event moved a request, an attempt or a user on (a stale timer, a
            // reply nobody waits for, a capacity change do not): the run lasts until the
            // last one that did, as a live run drains until its last request is done.
            let acted = match kind {
                Kind::Arrival => {
                    let id = self.next_id;
                    self.next_id += 1;
                    if self.claimed >= self.cfg.max_in_flight {
                        self.rec.dropped(dur(t));
                    } else {
                        self.claimed += 1;
                        self.start_request(t, id, NONE, true);
                    }
                    if let Some(next) = arrivals.as_mut().and_then(|a| a.next()) {
                        self.push(ns(next), Kind::Arrival, 0, 0);
                    }
                    true
                }
                Kind::UserStart => {
                    let go = t < self.cfg.duration;
                    if go {
                        let user = idx;
                        let users = self.user_n.len() as u64;
                        let n = self.user_n[user as usize];
                        self.user_n[user as usize] += 1;
                        // Request ids interleave users so they stay unique, as live does.
                        self.start_request(t, n * users + u64::from(user), user, false);
                    }
                    go
                }
                Kind::RetryDue => {
                    let r = idx as usize;
                    let go = self.reqs[r].gen == gen && self.reqs[r].state.is_some();
                    if go {
                        self.try_attempt(t, idx);
                    }
                    go
                }
                Kind::TargetArrive => {
                    let go = self.att_ok(idx, gen);
                    if go {
                        self.target_arrive(t, idx);
                    }
                    go
                }
                Kind::FaultAct => {
                    let go = self.att_ok(idx, gen);
                    if go {
                        self.fault_act(t, idx);
                    }
                    go
                }
                Kind::WorkStart => {
                    let go = self.att_ok(idx, gen);
                    if go {
                        self.work_start(t, idx);
                    }
                    go
                }
                Kind::QueueTimeout => {
                    let go = self.att_ok(idx, gen) && self.atts[idx as usize].queued;
                    if go {
                        self.queue_timeout(t, idx);
                    }
                    go
                }
                Kind::ServiceDone => {
                    let go = self.att_ok(idx, gen);
                    if go {
                        self.service_done(t, idx);
                    }
                    go
                }
                Kind::Reply => {
                    let go = self.client_waits(idx, gen);
                    if go {
                        let a = &mut self.atts[idx as usize];
                        a.client_waiting = false;
                        let (status, fault) = (a.reply_status, a.reply_fault);
                        self.client_outcome(t, idx, status, fault);
                    }
                    go
                }
                Kind::ClientTimeout => {
                    let go = self.client_waits(idx, gen);
                    if go {
                        let a = &mut self.atts[idx as usize];
                        a.client_waiting = false;
                        // The client closes its connection: the target's handler ends (the
                        // request leaves flight); work already accepted carries on.
                        if a.handler_alive {
                            a.handler_alive = false;
                            self.counters.leave(sec(t));
                        }
                        self.client_outcome(t, idx, 1, NO_FAULT);
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
            };
            if acted {
                events += 1;
                last_t = t;
            }
        }
        let end_t = last_t.max(self.cfg.duration).min(end);
        ConfigOut {
            stats: self.counters.snapshot(sec(end_t), self.peak_serving),
            rec: self.rec,
            log: self.log,
            attempts: self.attempts,
            events,
            end_t,
        }
    }

    #[inline]
    fn att_ok(&self, idx: u32, gen: u32) -> bool {
        self.atts[idx as usize].gen == gen
    }

    #[inline]
    fn client_waits(&self, idx: u32, gen: u32) -> bool {
        client_waits(&self.atts[idx as usize], gen)
    }

    /// Sweeps the stale per-try timers out of their lane. Nearly every attempt ends long
    /// before its timer is due (envoy's 15 s route timeout at 60 k attempts/s leaves about
    /// a million), and a stale timer does nothing when popped, so dropping them changes no
    /// result; it keeps the lane the size of the attempts still waiting instead of growing
    /// (and page-faulting) by the rate times the timeout. Sweeping when the lane has
    /// doubled since the last sweep costs O(1) per timer.
    fn sweep_timers(&mut self) {
        let atts = &self.atts;
        self.events.retain_lane(TIMEOUT_LANE, |ev| {
            client_waits(&atts[ev.idx as usize], ev.gen)
        });
        self.sweep_at = (2 * self.events.lane_len(TIMEOUT_LANE)).max(MIN_SWEEP);
    }

    fn alloc_req(&mut self) -> u32 {
        if let Some(r) = self.free_reqs.pop() {
            return r;
        }
        self.reqs.push(Req {
            gen: 0,
            id: 0,
            intended: 0,
            state: None,
            rng: LazyRng::new(0),
            user: NONE,
            claimed: false,
        });
        (self.reqs.len() - 1) as u32
    }

    fn alloc_att(&mut self) -> u32 {
        if let Some(a) = self.free_atts.pop() {
            return a;
        }
        self.atts.push(Att {
            gen: 0,
            req: 0,
            req_gen: 0,
            request: 0,
            attempt: 0,
            sent_at: 0,
            client_waiting: false,
            handler_alive: false,
            work_active: false,
            queued: false,
            act: Act::Hang,
            lost: NO_FAULT,
            reply_status: 0,
            reply_fault: NO_FAULT,
        });
        (self.atts.len() - 1) as u32
    }

    /// Frees an attempt once nobody (client, handler, work) holds it any more.
    #[inline]
    fn maybe_free(&mut self, a: u32) {
        let at = &mut self.atts[a as usize];
        if !at.client_waiting && !at.handler_alive && !at.work_active {
            at.gen = at.gen.wrapping_add(1);
            self.free_atts.push(a);
        }
    }

    fn start_request(&mut self, t: u64, id: u64, user: u32, claimed: bool) {
        let r = self.alloc_req();
        let seed = request_seed(self.cfg.seed, self.cfg.index, id);
        self.rec.upstream_started(dur(t));
        let state = self.client.start(now(t), self.cfg.method, None);
        let q = &mut self.reqs[r as usize];
        q.id = id;
        q.intended = t;
        q.user = user;
        q.claimed = claimed;
        q.rng.reseed(seed);
        q.state = Some(state);
        self.try_attempt(t, r);
    }

    fn try_attempt(&mut self, t: u64, r: u32) {
        let nw = now(t);
        let q = &mut self.reqs[r as usize];
        let Some(state) = q.state.as_mut() else {
            return;
        };
        let permit = self.client.before_attempt(nw, state);
        record_permit(&mut self.rec, &self.client, dur(t), &permit);
        match permit {
            Permit::Send {
                attempt, timeout, ..
            } => {
                self.drain_policy();
                self.attempts += 1;
                let (id, req_gen) = (q_id(&self.reqs[r as usize]), self.reqs[r as usize].gen);
                let a = self.alloc_att();
                let at = &mut self.atts[a as usize];
                at.req = r;
                at.req_gen = req_gen;
                at.request = id;
                at.attempt = attempt;
                at.sent_at = t;
                at.client_waiting = true;
                at.handler_alive = false;
                at.work_active = false;
                at.queued = false;
                at.lost = NO_FAULT;
                at.reply_status = 0;
                at.reply_fault = NO_FAULT;
                let gen = at.gen;
                self.push(t + ns(NET_DELAY), Kind::TargetArrive, a, gen);
                if let Some(to) = timeout {
                    self.push(t.saturating_add(ns(to)), Kind::ClientTimeout, a, gen);
                    if self.events.lane_len(TIMEOUT_LANE) >= self.sweep_at {
                        self.sweep_timers();
                    }
                }
            }
            Permit::Refuse(reason) => {
                if self.cfg.attempt_log {
                    let q = &self.reqs[r as usize];
                    let attempt = q.state.as_ref().map_or(0, |s| s.attempts()) + 1;
                    self.log.push(AttemptRow {
                        config: self.cfg.name.to_string(),
                        request: q.id,
                        attempt,
                        outcome: "refused",
                        budget_after: self.client.budget_level(),
                    });
                }
                self.drain_policy();
                self.finish(t, r, Some(reason));
            }
        }
    }

    fn drain_policy(&mut self) {
        for e in self.client.drain_events() {
            if let PolicyEvent::Breaker {
                to: BreakerState::Open,
                ..
            } = e
            {
                self.rec.breaker_opened();
            }
        }
    }

    fn finish(&mut self, t: u64, r: u32, reason: Option<GiveUpReason>) {
        let q = &mut self.reqs[r as usize];
        let Some(state) = q.state.take() else {
            return;
        };
        let (intended, user, claimed) = (q.intended, q.user, q.claimed);
        q.gen = q.gen.wrapping_add(1);
        self.free_reqs.push(r);
        let attempts = state.attempts();
        self.client.finish(now(t), state);
        self.rec
            .upstream_finished(dur(t), dur(t.saturating_sub(intended)), reason, attempts);
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
        let (r, req_gen, attempt, sent_at) = {
            let at = &self.atts[a as usize];
            (at.req, at.req_gen, at.attempt, at.sent_at)
        };
        self.maybe_free(a);
        let q = &mut self.reqs[r as usize];
        if q.gen != req_gen {
            return;
        }
        let Some(state) = q.state.as_mut() else {
            return;
        };
        let nw = now(t);
        let outcome = match status {
            REPLY_RESET => AttemptOutcome::Transport(TransportError::Reset),
            1 => AttemptOutcome::Transport(TransportError::PerTryTimeout),
            s => {
                let p = self.parts.get(fault as usize);
                AttemptOutcome::Response(Response {
                    status: s,
                    retry_after: p.and_then(|p| p.retry_after.as_deref()),
                    amz_retry_after: None,
                    grpc_pushback_ms: None,
                    error_code: p.and_then(|p| p.error_code.as_deref()),
                })
            }
        };
        let d = self.client.on_outcome(nw, state, &outcome, &mut q.rng);
        let (label, level) = record_decision(
            &mut self.rec,
            &self.client,
            dur(t),
            dur(t.saturating_sub(sent_at)),
            &outcome,
            &d,
            attempt,
        );
        if self.cfg.attempt_log {
            self.log.push(AttemptRow {
                config: self.cfg.name.to_string(),
                request: q.id,
                attempt,
                outcome: label,
                budget_after: level,
            });
        }
        self.drain_policy();
        match d {
            Decision::Success => self.finish(t, r, None),
            Decision::GiveUp { reason, .. } => self.finish(t, r, Some(reason)),
            Decision::Retry { after, .. } => {
                if after.is_zero() {
                    self.try_attempt(t, r);
                } else {
                    let gen = self.reqs[r as usize].gen;
                    self.push(t.saturating_add(ns(after)), Kind::RetryDue, r, gen);
                }
            }
        }
    }

    // ------------------------------------------------------------------ the modeled target

    fn target_arrive(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        if !at.client_waiting {
            return; // the client gave up before the request got there
        }
        self.counters.arrive(sec(t));
        at.handler_alive = true;
        if !self
            .fault_windows
            .iter()
            .any(|&(from, to)| t >= from && t < to)
        {
            // No request fault is active: `decide` would serve plainly, without a draw.
            at.work_active = true;
            self.work_start(t, a);
            return;
        }
        let v = self
            .cfg
            .timeline
            .decide(dur(t), self.cfg.path, at.request, at.attempt);
        let extra = ns(v.extra_latency);
        let fault = v.fault.map_or(NO_FAULT, |f| f as u16);
        let gen = at.gen;
        let act = match v.action {
            Action::Serve => None,
            Action::LostResponse { .. } => {
                at.lost = fault;
                None
            }
            Action::Status { status, .. } => {
                at.reply_status = status;
                at.reply_fault = fault;
                Some(Act::Status)
            }
            Action::Reset => Some(Act::Reset),
            Action::Hang => Some(Act::Hang),
        };
        match act {
            Some(act) => {
                at.act = act;
                if extra > 0 {
                    self.push(t + extra, Kind::FaultAct, a, gen);
                } else {
                    self.fault_act(t, a);
                }
            }
            None => {
                at.work_active = true;
                if extra > 0 {
                    self.push(t + extra, Kind::WorkStart, a, gen);
                } else {
                    self.work_start(t, a);
                }
            }
        }
    }

    /// A terminal fault acts (after its added latency), if the client is still connected.
    fn fault_act(&mut self, t: u64, a: u32) {
        let at = &self.atts[a as usize];
        if !at.handler_alive {
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

    /// The handler ends and the reply travels back to the client.
    fn send_reply(&mut self, t: u64, a: u32, status: u16, fault: u16) {
        self.counters.leave(sec(t));
        let at = &mut self.atts[a as usize];
        at.handler_alive = false;
        at.reply_status = status;
        at.reply_fault = fault;
        let gen = at.gen;
        self.push(t + ns(NET_DELAY), Kind::Reply, a, gen);
    }

    /// The work asks the gate for a slot: at once if one is free and nobody waits, else in
    /// FIFO order, or refused when the queue is full.
    fn work_start(&mut self, t: u64, a: u32) {
        if self.queue.is_empty() && self.serving < self.cap {
            self.grant(t, a);
        } else if self.queue.len() >= self.cfg.model.queue as usize {
            self.counters.shed();
            self.work_shed(t, a);
        } else {
            let at = &mut self.atts[a as usize];
            at.queued = true;
            let gen = at.gen;
            self.queue.push_back((a, gen));
            if let Some(qt) = self.cfg.model.queue_timeout {
                self.push(t.saturating_add(ns(qt)), Kind::QueueTimeout, a, gen);
            }
        }
    }

    fn grant(&mut self, t: u64, a: u32) {
        self.serving += 1;
        self.peak_serving = self.peak_serving.max(u64::from(self.serving));
        let at = &mut self.atts[a as usize];
        at.queued = false;
        let service = self
            .cfg
            .timeline
            .service_time_with(&self.service, at.request, at.attempt);
        let gen = at.gen;
        self.push(t.saturating_add(ns(service)), Kind::ServiceDone, a, gen);
    }

    /// Hands free slots to waiters, FIFO.
    fn pump(&mut self, t: u64) {
        while self.serving < self.cap {
            let Some((a, _)) = self.queue.pop_front() else {
                break;
            };
            self.grant(t, a);
        }
    }

    fn queue_timeout(&mut self, t: u64, a: u32) {
        // Every waiter has the same queue timeout, so the one expiring is normally the head.
        if let Some(pos) = self.queue.iter().position(|(w, _)| *w == a) {
            self.queue.remove(pos);
        }
        self.atts[a as usize].queued = false;
        self.counters.shed();
        self.work_shed(t, a);
    }

    /// The work ended without service: 503 to the client, if still connected.
    fn work_shed(&mut self, t: u64, a: u32) {
        let at = &mut self.atts[a as usize];
        at.work_active = false;
        if at.handler_alive {
            self.counters.respond(503, None);
            self.send_reply(t, a, 503, NO_FAULT);
        }
        self.maybe_free(a);
    }

    fn service_done(&mut self, t: u64, a: u32) {
        self.serving -= 1;
        self.pump(t);
        let at = &mut self.atts[a as usize];
        at.work_active = false;
        let (request, alive, lost) = (at.request, at.handler_alive, at.lost);
        if self.write {
            // The simulator debits one unit per execution (it does not read amounts).
            self.counters.execute(request, 1);
        }
        if alive {
            if lost == NO_FAULT {
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

/// The client still waits on attempt `a` as of generation `gen`: a reply or a per-try
/// timer of that generation still has something to end.
#[inline]
fn client_waits(a: &Att, gen: u32) -> bool {
    a.gen == gen && a.client_waiting
}

#[inline]
fn q_id(q: &Req) -> u64 {
    q.id
}

fn empty_arrivals() -> Arrivals {
    crate::scenario::schedule::arrivals(
        &crate::scenario::LoadShape::Constant { rate: 0.0 },
        Duration::ZERO,
        0,
    )
}
