//! What happens around each attempt of one retry config's client, whichever engine sends the
//! attempts: asking the policy for a permit, counting it, taking the attempt's outcome to the
//! policy, counting the decision, writing the attempt log, and ending the request.
//!
//! The live driver (under its per-config lock), the simulator (directly) and the policy
//! benchmark all drive a [`Session`], so a count or a log row added here appears in all three
//! at once and means the same in each. Engine-neutral on purpose: no tokio, no hyper, no
//! clock reads; time comes in as a [`Now`].
//!
//! A logical request moves through the session by value: [`Session::start`],
//! [`Session::permit`] and [`Session::outcome`] take the [`Request`] and hand it back inside
//! the next [`Step`] only while it has a next step. A request that has ended is gone, so it
//! cannot be finished twice or sent again; an attempt can only be sent on a [`Step::Send`].

use std::time::Duration;

mod ask;
mod fallback;
mod hedge;
mod open_circuit;
mod step;

pub use step::{Next, Step};

pub use hedge::Hedge;

use ask::Asked;

use crate::draws::{self, LazyRng};
use crate::metrics::{AttemptRow, Recorder, RetryReason};
use crate::policy::{
    attempt_label, AttemptLabel, AttemptOutcome, BreakerState, Decision, Fleet, GiveUpReason, Now,
    OutcomeClass, PolicyEvent, RequestState, RetryClient, RetryConfig,
};
use std::num::NonZeroU32;

/// One retry config's client fleet: the policy's shared state (budget, breaker) of each
/// instance, the recorder and the attempt log, which change together so counts and decisions
/// never disagree. The recorder counts the whole fleet.
pub struct Session {
    /// Every client instance of every fleet, fleet after fleet: a request names the one
    /// that sends it by one index ([`RequestData::client`]), so a step finds its client
    /// with one bounds check, not a fleet's and then an instance's.
    clients: Vec<RetryClient>,
    /// The config's own fleet first, then one per request class with a policy of its own.
    fleets: Vec<FleetSpan>,
    /// Whether any fleet's config has a degradation ladder: without one a request that
    /// gives up ends there, told by one flag rather than a look at its config.
    ladders: bool,
    /// Per request class: which fleet runs it and whether its calls are idempotent (empty:
    /// one class whose method decides, counted as the config's whole).
    classes: Vec<ClassRoute>,
    rec: Recorder,
    /// The config's name, as attempt-log rows carry it.
    name: String,
    log: Option<Vec<AttemptRow>>,
    /// Attempts sent with their per-try timeout cut short by the request's deadline (they
    /// may end by timing out at the deadline, never after it).
    deadline_cut: u64,
    /// The scenario's seed and the config's draw key: the ladder's draws per request.
    seed: u64,
    draw_key: u64,
    /// The label the next outcome is counted under in place of its own ([`Self::outcome_as_in`]).
    relabel: Option<AttemptLabel>,
    /// The boxes of ended requests, for the next ones to start in (at most [`SPARE_MAX`]).
    /// Boxes, not the data itself: each is handed out whole as a [`Request`].
    #[allow(clippy::vec_box)]
    spare: Vec<Box<RequestData>>,
}

/// Boxes of ended requests a session keeps for the next ones: enough for the requests
/// that end between two starts in any engine, few enough to be no memory figure.
const SPARE_MAX: usize = 64;

/// Where a fleet's instances are in [`Session::clients`].
#[derive(Debug, Clone, Copy)]
struct FleetSpan {
    /// Its instance 0's index.
    first: u32,
    /// Its number of instances (at least one).
    size: u32,
}

impl FleetSpan {
    /// The index in [`Session::clients`] of the instance that sends logical request `id`
    /// (as [`Fleet::instance_of`] assigns them).
    #[inline(always)]
    fn client_of(self, id: u64) -> u32 {
        // A fleet of one (most configs) skips the division, the costliest instruction of a
        // request start.
        match self.size {
            1 => self.first,
            n => self.first + (id % u64::from(n)) as u32,
        }
    }
}

/// Where a request class's requests go in the session.
#[derive(Debug, Clone, Copy)]
struct ClassRoute {
    fleet: u8,
    idempotent: bool,
}

/// One logical request between two steps: the policy's per-request state and what the
/// session needs to count and log it ([`RequestData`]), behind one pointer.
///
/// The engines move a request by value at every step ([`Step`]); its data, over 200
/// bytes, was copied with it three or four times per attempt (a sixth of `bench policy`
/// in memmove). Boxed, a step moves a pointer, and the session keeps the boxes of ended
/// requests for the next ones, so a request costs no allocation
/// once a few have ended.
#[derive(Debug)]
pub struct Request {
    data: Box<RequestData>,
}

impl std::ops::Deref for Request {
    type Target = RequestData;

    #[inline(always)]
    fn deref(&self) -> &RequestData {
        &self.data
    }
}

impl std::ops::DerefMut for Request {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut RequestData {
        &mut self.data
    }
}

/// What a [`Request`] holds: private to the session, named only as its target.
#[derive(Debug, Default)]
pub struct RequestData {
    state: RequestState,
    id: u64,
    /// Its request class (0 without classes).
    class: u8,
    /// Attempts sent to the ladder's model rungs after the policy gave up (they are not the
    /// policy's, so its state does not count them).
    fallback_attempts: u32,
    /// Attempts the breaker inside the retry refused: the policy counts them, the target
    /// never saw them, so they are neither sent retries nor useful or wasted ones.
    unsent_attempts: u32,
    /// On a model rung: that rung and why the policy gave up.
    fell: Option<(u8, GiveUpReason)>,
    /// The client instance that sends it, its index in [`Session::clients`] (the instance
    /// [`Fleet::instance_of`] names, of the fleet whose policy runs it).
    client: u32,
    intended: Duration,
    /// When the config's rate limiter first held back the attempt about to be sent (None:
    /// not held back).
    limited_since: Option<Duration>,
}

impl Request {
    /// The request id attempts carry (and the attempt log names).
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// What the policy allowed for the attempt about to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1-based attempt number.
    pub number: u32,
    /// The per-try timeout (already cut to the remaining deadline).
    pub timeout: Option<Duration>,
    /// Time left before the request's deadline, to pass downstream.
    pub remaining_deadline: Option<Duration>,
    /// Send an idempotency key with it.
    pub idempotency_key: bool,
    /// With failover, the provider (index in the config's list) the policy sent it to.
    pub provider: Option<usize>,
    /// After the policy gave up: the rung of the ladder whose model (another provider) the
    /// attempt goes to.
    pub fallback: Option<u8>,
}

/// How a logical request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Succeeded,
    GaveUp(GiveUpReason),
    /// It gave up, and rung `rung` of the config's ladder answered it instead.
    Degraded {
        reason: GiveUpReason,
        rung: usize,
    },
}

impl Ending {
    /// The give-up reason, `None` for a success. A degraded request gave up downstream,
    /// so it has one.
    pub fn reason(self) -> Option<GiveUpReason> {
        match self {
            Ending::Succeeded => None,
            Ending::GaveUp(r) | Ending::Degraded { reason: r, .. } => Some(r),
        }
    }
}

/// What the policy decided on an attempt's outcome ([`Session::outcome`]), before the
/// request moves.
enum Decided {
    /// Retry with no wait: ask for the next attempt now.
    RetryNow,
    Wait(Duration),
    End(Ending),
}

impl Session {
    /// A fresh policy client and recorder for `config`; the attempt log only when asked for.
    pub fn new(name: &str, config: &RetryConfig, attempt_log: bool) -> Session {
        Session::fleet(name, config, NonZeroU32::MIN, attempt_log)
    }

    /// A fleet of `clients` fresh policy clients of `config`, one recorder for all of them.
    pub fn fleet(
        name: &str,
        config: &RetryConfig,
        clients: NonZeroU32,
        attempt_log: bool,
    ) -> Session {
        Session {
            clients: Fleet::new(config, clients).into_clients(),
            fleets: vec![FleetSpan {
                first: 0,
                size: clients.get(),
            }],
            ladders: !config.ladder.is_empty(),
            classes: Vec::new(),
            rec: Recorder::new(),
            name: name.to_string(),
            log: attempt_log.then(Vec::new),
            deadline_cut: 0,
            seed: 0,
            draw_key: draws::config_key(name),
            relabel: None,
            spare: Vec::new(),
        }
    }

    /// Keys the ladder's draws by the scenario's `seed` and the config's `draw_key` (as
    /// the engines key the config's jitter), so the same seed picks the same requests.
    pub fn seeded(mut self, seed: u64, draw_key: u64) -> Session {
        self.seed = seed;
        self.draw_key = draw_key;
        self
    }

    /// Counts per request class, one policy per class: `policies[i]` is class i's own
    /// policy (`None`: the config's, sharing its state), `idempotent[i]` whether its calls
    /// may be repeated. Each own policy gets a fleet of the config's size.
    pub fn with_classes(
        mut self,
        policies: &[Option<RetryConfig>],
        idempotent: impl IntoIterator<Item = bool>,
    ) -> Session {
        let clients = NonZeroU32::new(self.fleets[0].size).unwrap_or(NonZeroU32::MIN);
        self.classes = idempotent
            .into_iter()
            .enumerate()
            .map(|(i, idempotent)| {
                let fleet = match policies.get(i).and_then(Option::as_ref) {
                    Some(p) => {
                        let first = self.clients.len() as u32;
                        self.clients.extend(Fleet::new(p, clients).into_clients());
                        self.fleets.push(FleetSpan {
                            first,
                            size: clients.get(),
                        });
                        self.ladders |= !p.ladder.is_empty();
                        (self.fleets.len() - 1) as u8
                    }
                    None => 0,
                };
                ClassRoute { fleet, idempotent }
            })
            .collect();
        self.rec.count_classes(self.classes.len());
        self
    }

    /// Starts logical request `id` (intended to start at `intended`) and asks for its first
    /// attempt in the same step.
    #[inline(always)]
    pub fn start(
        &mut self,
        now: Now,
        intended: Duration,
        id: u64,
        method: &str,
        inherited_deadline: Option<Duration>,
    ) -> Step {
        let idempotent = crate::policy::is_idempotent_method(method);
        let req = self.begin(now, intended, id, 0, idempotent, inherited_deadline);
        self.permit(now, req)
    }

    /// [`Self::start`] for an engine that keeps the request in `slot` (see [`Next`]), and
    /// that read its method's idempotency once (`is_idempotent_method`) rather than per
    /// request.
    #[inline(always)]
    pub fn start_in(
        &mut self,
        slot: &mut Option<Request>,
        now: Now,
        intended: Duration,
        id: u64,
        idempotent: bool,
        inherited_deadline: Option<Duration>,
    ) -> Next {
        *slot = Some(self.begin(now, intended, id, 0, idempotent, inherited_deadline));
        self.permit_in(now, slot)
    }

    /// [`Self::start`] for a request of class `class` (see [`Self::with_classes`]).
    #[inline(always)]
    pub fn start_class(
        &mut self,
        now: Now,
        intended: Duration,
        id: u64,
        class: usize,
        inherited_deadline: Option<Duration>,
    ) -> Step {
        let route = self.classes[class];
        let req = self.begin(
            now,
            intended,
            id,
            class as u8,
            route.idempotent,
            inherited_deadline,
        );
        self.permit(now, req)
    }

    /// [`Self::start_class`] for an engine that keeps the request in `slot` (see [`Next`]).
    #[inline(always)]
    pub fn start_class_in(
        &mut self,
        slot: &mut Option<Request>,
        now: Now,
        intended: Duration,
        id: u64,
        class: usize,
        inherited_deadline: Option<Duration>,
    ) -> Next {
        let route = self.classes[class];
        *slot = Some(self.begin(
            now,
            intended,
            id,
            class as u8,
            route.idempotent,
            inherited_deadline,
        ));
        self.permit_in(now, slot)
    }

    /// A new request, counted as started; its first attempt is still to be asked for.
    #[inline(always)]
    fn begin(
        &mut self,
        now: Now,
        intended: Duration,
        id: u64,
        class: u8,
        idempotent: bool,
        inherited_deadline: Option<Duration>,
    ) -> Request {
        self.rec.upstream_started(intended);
        let fleet = self.classes.get(usize::from(class)).map_or(0, |c| c.fleet);
        let client = self.fleets[usize::from(fleet)].client_of(id);
        if !self.classes.is_empty() {
            self.rec.class_started(usize::from(class));
        }
        // Written in place, field by field, into an ended request's box (see
        // `RetryClient::start_call_in`); every field named, so none is left stale.
        let mut data = self.spare.pop().unwrap_or_default();
        let RequestData {
            state,
            id: d_id,
            class: d_class,
            fallback_attempts,
            unsent_attempts,
            fell,
            client: d_client,
            intended: d_intended,
            limited_since,
        } = &mut *data;
        self.clients[client as usize].start_call_in(now, idempotent, inherited_deadline, state);
        *d_id = id;
        *d_class = class;
        *fallback_attempts = 0;
        *unsent_attempts = 0;
        *fell = None;
        *d_client = client;
        *d_intended = intended;
        *limited_since = None;
        Request { data }
    }

    /// Asks the policy for the request's next attempt and counts what it said: an attempt
    /// sent, or a refusal that ends the request.
    #[inline(always)]
    pub fn permit(&mut self, now: Now, mut req: Request) -> Step {
        if let Some(attempt) = self.ask_bare(now, &mut req) {
            return Step::Send(req, attempt);
        }
        match self.ask(now, &mut req) {
            Asked::Send(attempt) => Step::Send(req, attempt),
            Asked::Wait(after) => Step::Wait(req, after),
            Asked::Refused(reason) => self.finish(now, req, Ending::GaveUp(reason)),
            Asked::OpenCircuit => {
                let mut slot = Some(req);
                self.open_circuit(now, &mut slot).take_from(&mut slot)
            }
        }
    }

    /// [`Self::permit`] for the request kept in `slot` (see [`Next`]); `slot` must hold it.
    #[inline(always)]
    pub fn permit_in(&mut self, now: Now, slot: &mut Option<Request>) -> Next {
        let Some(req) = slot.as_mut() else {
            unreachable!("permit_in without a request in its slot");
        };
        if let Some(attempt) = self.ask_bare(now, req) {
            return Next::Send(attempt);
        }
        match self.ask(now, req) {
            Asked::Send(attempt) => Next::Send(attempt),
            Asked::Wait(after) => Next::Wait(after),
            Asked::Refused(reason) => {
                let Some(req) = slot.take() else {
                    unreachable!("the request left its slot");
                };
                self.finish(now, req, Ending::GaveUp(reason)).keep_in(slot)
            }
            Asked::OpenCircuit => self.open_circuit(now, slot),
        }
    }

    /// Takes the outcome of the attempt last sent for `req` (arrived at `now`, after
    /// `latency`) to the policy and counts its decision. A retry that needs no wait asks for
    /// its permit in the same step.
    #[inline(always)]
    pub fn outcome(
        &mut self,
        now: Now,
        mut req: Request,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
    ) -> Step {
        if let Some(fell) = req.fell {
            return self.fallback_answered(now, req, latency, outcome, fell);
        }
        match self.decide(now, &mut req, latency, outcome, rng) {
            Decided::RetryNow => self.permit(now, req),
            Decided::Wait(after) => Step::Wait(req, after),
            Decided::End(ending) => self.finish(now, req, ending),
        }
    }

    /// [`Self::outcome`] for the request kept in `slot` (see [`Next`]); `slot` must hold it.
    #[inline(always)]
    pub fn outcome_in(
        &mut self,
        now: Now,
        slot: &mut Option<Request>,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
    ) -> Next {
        let Some(req) = slot.as_mut() else {
            unreachable!("outcome_in without a request in its slot");
        };
        if let Some((rung, reason)) = req.fell {
            let Some(req) = slot.take() else {
                unreachable!("the request left its slot");
            };
            return self
                .fallback_answered(now, req, latency, outcome, (rung, reason))
                .keep_in(slot);
        }
        match self.decide(now, req, latency, outcome, rng) {
            Decided::RetryNow => self.permit_in(now, slot),
            Decided::Wait(after) => Next::Wait(after),
            Decided::End(ending) => {
                let Some(req) = slot.take() else {
                    unreachable!("the request left its slot");
                };
                self.finish(now, req, ending).keep_in(slot)
            }
        }
    }

    /// The policy's decision on the outcome of the request's attempt, counted and logged,
    /// with the request left where it is (shared by [`Self::outcome`] and
    /// [`Self::outcome_in`]).
    #[inline(always)]
    fn decide(
        &mut self,
        now: Now,
        req: &mut Request,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
    ) -> Decided {
        // The client is looked up once: the recorder is a field of its own beside it.
        let Session {
            clients,
            rec,
            relabel,
            ..
        } = self;
        let client = &mut clients[req.client as usize];
        // The bare way has no budget, breaker or event: nothing to chart or record.
        let bare = client.bare_for(&req.state);
        let d = if bare {
            client.on_bare_outcome(&mut req.state, outcome)
        } else {
            client.on_outcome(now, &mut req.state, outcome, rng)
        };
        let t = now.mono;
        let label = relabel
            .take()
            .unwrap_or_else(|| attempt_label(outcome, d.class()));
        rec.attempt_done(t, latency, label, req.state.attempts());
        // With a fleet, the level charted is that of the instance that just decided. A
        // config with neither a budget nor a breaker has nothing to chart.
        let (level, breaker, has_events) = if bare {
            (None, None, false)
        } else {
            (
                client.budget_level(),
                client.breaker_state().map(crate::metrics::breaker_level),
                // Asked now, with the client at hand, rather than looked up again at the end.
                client.has_events(),
            )
        };
        if level.is_some() || breaker.is_some() {
            rec.sample_policy(t, level, breaker);
        }
        if self.log.is_some() {
            // Worked out only for a log: a storm without one pays no time sum per attempt.
            let sent = t.saturating_sub(latency);
            self.log_row(
                req.id,
                req.state.attempts(),
                Some(sent),
                label.as_str(),
                level,
            );
            if let Decision::GiveUp {
                reason: GiveUpReason::BudgetRefused,
                ..
            } = d
            {
                // The retry the budget refused is an attempt that was asked for and never
                // sent: its row (no `sent_s`) is what a reader counting refusals in the log
                // looks for.
                self.log_row(req.id, req.state.attempts() + 1, None, "refused", level);
            }
        }
        if has_events {
            self.record_events(req.client);
        }
        // One match counts the decision and says what follows it (the counts above and
        // these touch apart counters, so their order is free).
        match d {
            Decision::Success => Decided::End(Ending::Succeeded),
            Decision::GiveUp { reason, .. } => {
                if reason == GiveUpReason::BudgetRefused {
                    self.rec.budget_refused(t);
                }
                Decided::End(Ending::GaveUp(reason))
            }
            Decision::Retry { after, class } => {
                self.rec.retry_scheduled(
                    t,
                    if class == OutcomeClass::Throttling {
                        RetryReason::Throttling
                    } else {
                        RetryReason::Transient
                    },
                );
                if after.is_zero() {
                    Decided::RetryNow
                } else {
                    Decided::Wait(after)
                }
            }
        }
    }

    /// [`Self::outcome_in`], the attempt counted and logged under `label` in place of its own
    /// when one is given: for what the engine knows better than the outcome says
    /// (`not-accepted`: the in-process target never read it). The policy decides on the
    /// outcome as it came.
    #[inline(always)]
    pub fn outcome_as_in(
        &mut self,
        now: Now,
        slot: &mut Option<Request>,
        latency: Duration,
        outcome: &AttemptOutcome<'_>,
        rng: &mut LazyRng,
        label: Option<AttemptLabel>,
    ) -> Next {
        self.relabel = label;
        self.outcome_in(now, slot, latency, outcome, rng)
    }

    /// [`Self::abandon`] for a request dropped while attempt `attempt` (sent at `sent`) was
    /// on the wire: that attempt is counted and logged under `label` (`unfinished`, or
    /// `not-accepted` when the target never read it), so every attempt has an outcome.
    pub fn abandon_on_wire(
        &mut self,
        now: Now,
        req: Request,
        attempt: u32,
        sent: Duration,
        label: AttemptLabel,
    ) {
        self.rec.attempt_unanswered(label);
        self.log_row(req.id, attempt, Some(sent), label.as_str(), None);
        self.abandon(now, req);
    }

    /// Ends a request its engine dropped because the caller went away (a layer whose caller
    /// closed the connection): the policy releases what the request held (a retry slot, a
    /// breaker probe, its place among the budget's active requests), so a cancelled request
    /// never leaks policy state. The recorder is not told: the request has no ending of its
    /// own to count, as nothing answered it.
    pub fn abandon(&mut self, now: Now, mut req: Request) {
        self.clients[req.client as usize].finish_in_place(now, &mut req.state);
    }

    /// Ends a request: the ladder for a request that gave up (which may send it to a model
    /// rung first), then the policy's bookkeeping and the recorder.
    #[inline(always)]
    fn finish(&mut self, now: Now, req: Request, ending: Ending) -> Step {
        match ending {
            Ending::GaveUp(reason)
                if self.ladders
                    && !self.clients[req.client as usize].config().ladder.is_empty() =>
            {
                self.fall(now, req, reason, 0)
            }
            other => self.end(now, req, other),
        }
    }

    /// The request's end: the policy releases what it held, the recorder counts it.
    #[inline(always)]
    fn end(&mut self, now: Now, mut req: Request, ending: Ending) -> Step {
        let attempts =
            (req.state.attempts() + req.fallback_attempts).saturating_sub(req.unsent_attempts);
        // `req`'s box goes back to the spares at the end: its state is finished in place.
        self.clients[req.client as usize].finish_in_place(now, &mut req.state);
        let latency = now.mono.saturating_sub(req.intended);
        if !self.classes.is_empty() {
            self.rec
                .class_finished(usize::from(req.class), ending_kind(ending), latency);
        }
        match ending {
            Ending::Degraded { rung, .. } => self
                .rec
                .upstream_degraded(now.mono, latency, rung, attempts),
            _ => self
                .rec
                .upstream_finished(now.mono, latency, ending.reason(), attempts),
        }
        if self.spare.len() < SPARE_MAX {
            self.spare.push(req.data);
        }
        Step::Done(ending)
    }

    #[inline]
    fn log_row(
        &mut self,
        request: u64,
        attempt: u32,
        sent: Option<Duration>,
        outcome: &'static str,
        level: Option<f64>,
    ) {
        if let Some(log) = self.log.as_mut() {
            log.push(AttemptRow {
                config: self.name.clone(),
                request,
                attempt,
                sent_s: sent.map(|d| d.as_secs_f64()),
                outcome,
                budget_after: level,
            });
        }
    }

    /// Takes client `c`'s policy events to the recorder, if it has any (the hedging and
    /// open-circuit steps; the common steps ask the client they hold).
    #[inline]
    fn drain_events(&mut self, c: u32) {
        if self.clients[c as usize].has_events() {
            self.record_events(c);
        }
    }

    /// Counts the policy events of client `c` (an index in [`Self::clients`]: a breaker
    /// that opened, a provider's breaker transition); called only when it has some (rare:
    /// a breaker moves a few times a run).
    #[cold]
    fn record_events(&mut self, c: u32) {
        for e in self.clients[c as usize].drain_events() {
            match e {
                PolicyEvent::Breaker {
                    to: BreakerState::Open,
                    ..
                } => self.rec.breaker_opened(),
                PolicyEvent::ProviderBreaker {
                    provider,
                    at,
                    from,
                    to,
                } => self.rec.routes.transition(provider, at, from, to),
                _ => {}
            }
        }
    }

    /// Counts an arrival dropped by the in-flight cap before it became a request.
    pub fn dropped(&mut self, t: Duration) {
        self.rec.dropped(t);
    }

    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    pub fn config(&self) -> &RetryConfig {
        self.clients[0].config()
    }

    /// Attempts sent with their per-try timeout cut short by the request's deadline.
    pub fn deadline_cut(&self) -> u64 {
        self.deadline_cut
    }

    /// The attempt log so far (empty when it is off).
    pub fn log(&self) -> &[AttemptRow] {
        self.log.as_deref().unwrap_or_default()
    }

    /// Takes the attempt log out (empty when it is off).
    pub fn take_log(&mut self) -> Vec<AttemptRow> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The recorder and the attempt log, once the run is over.
    pub fn into_parts(mut self) -> (Recorder, Vec<AttemptRow>) {
        // Readers then borrow the latency histograms instead of copying them.
        self.rec.flush();
        (self.rec, self.log.unwrap_or_default())
    }
}

/// How a request ended, as its class counts it.
fn ending_kind(e: Ending) -> crate::metrics::ClassEnding {
    match e {
        Ending::Succeeded => crate::metrics::ClassEnding::Succeeded,
        Ending::GaveUp(_) => crate::metrics::ClassEnding::Failed,
        Ending::Degraded { .. } => crate::metrics::ClassEnding::Degraded,
    }
}

#[cfg(test)]
mod tests;
