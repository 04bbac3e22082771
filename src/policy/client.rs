//! The per-config state machine the engines drive (sans-IO: time and randomness come in).
//!
//! One [`RetryClient`] per retry config per layer owns the shared state (budget, breaker,
//! global cost). Each logical request gets a [`RequestState`]. The engine loop is:
//!
//! ```text
//! let mut req = client.start(now, "GET", inherited_deadline);
//! loop {
//!     if let Some(wait) = client.rate_limit(now, &req) {    // no token yet: wait, ask again
//!         sleep(wait).await;
//!         continue;
//!     }
//!     match client.before_attempt(now, &mut req) {
//!         Permit::Refuse(reason) => break,                  // log "refused"
//!         Permit::Send { timeout, .. } => {
//!             let outcome = send(timeout).await;
//!             match client.on_outcome(now, &mut req, &outcome, &mut rng) {
//!                 Decision::Success | Decision::GiveUp { .. } => break,
//!                 Decision::Retry { after, .. } => sleep(after).await,
//!             }
//!         }
//!     }
//! }
//! client.finish(now, req);
//! ```
//!
//! Decision order on a failed attempt (first blocker wins; the budget is asked last so that a
//! retry that would not happen anyway costs nothing, except for gRPC, whose throttle counts
//! every retryable failure — it is told `final_attempt = true`):
//! 1. non-retryable class → `GiveUp(NonRetryable)`;
//! 2. the server said not to retry → `GiveUp(ServerPushback)`: a gRPC pushback "do not
//!    retry", a `retry-after` longer than the config's `refuse_above`, or
//!    `x-should-retry: false` where the config obeys it;
//! 3. non-idempotent method, request may have reached the server, no idempotency key, and
//!    `retry_non_idempotent = false` → `GiveUp(NotIdempotent)`;
//! 4. `attempts ≥ max_attempts` → `GiveUp(MaxAttempts)`;
//! 5. delay = Retry-After handling of jitter(backoff(n)); `now + delay ≥ deadline` →
//!    `GiveUp(Deadline)` (never wait past the deadline); without a deadline the delay
//!    cannot block, so it is computed after step 7, for granted retries only;
//! 6. cost caps → `GiveUp(CostCap)`;
//! 7. budget refuses → `GiveUp(BudgetRefused)` (+ an event the first time);
//! 8. otherwise `Retry { after: delay }`.

mod breaker_order;
mod grant;
mod hedge;
mod hedge_on_timeout;
mod places;
mod plain;
mod start;

pub use hedge::{HedgeDecision, HedgeDue};

use super::breaker::{BreakerState, CircuitBreaker};
use super::budget::{CostKind, RetryBudget};
use super::bulkhead::Bulkheads;
use super::concurrency_limit::ConcurrencyLimiter;
use super::config::RetryConfig;
use super::cost::{CostLedger, CostScope};
use super::deadline;
use super::duration;
pub use super::give_up::GiveUpReason;
use super::outcome::{is_idempotent_method, server_says_retry, AttemptOutcome, OutcomeClass};
use super::pipeline::BreakerPlace;
use super::provider_breakers::ProviderRouter;
use super::rate_limiter::RateLimiter;
use super::retry_after::Hint;
use super::status_classes::StatusClasses;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Injected time: monotonic since the run's epoch, plus the wall clock at that epoch. The
/// wall-clock present (for HTTP-date Retry-After) is only worked out when asked for: nearly
/// every decision needs `mono` alone, and a `SystemTime` sum costs more than the rest of
/// building a `Now`.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// Monotonic time since the run's epoch.
    pub mono: Duration,
    /// The wall-clock time of the run's epoch (`mono` zero).
    pub epoch_wall: SystemTime,
}

impl Now {
    /// A `Now` whose wall clock is `UNIX_EPOCH + mono` (simulations and tests).
    #[inline]
    pub fn virtual_at(mono: Duration) -> Now {
        Now {
            mono,
            epoch_wall: SystemTime::UNIX_EPOCH,
        }
    }

    /// The wall-clock time corresponding to `mono`.
    pub fn wall(&self) -> SystemTime {
        self.epoch_wall + self.mono
    }
}

/// The answer to "may I send an attempt now?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permit {
    /// Send it.
    Send {
        /// 1-based attempt number.
        attempt: u32,
        /// `min(per-try timeout, remaining deadline)`.
        timeout: Option<Duration>,
        /// Remaining deadline, to propagate downstream.
        remaining_deadline: Option<Duration>,
        /// Attach an `Idempotency-Key` header (same key on every attempt of the request).
        idempotency_key: bool,
        /// With failover, the index in the config's provider list the attempt goes to.
        provider: Option<usize>,
    },
    /// Do not send; the request is over.
    Refuse(GiveUpReason),
}

/// What to do after an attempt. A tag of its own (`repr(u8)`, no larger: the class and
/// the tag fit the room the delay's alignment leaves): reading the class off a niche in the
/// delay's nanoseconds took twice the instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Decision {
    /// The request succeeded.
    Success,
    /// Wait `after`, then call `before_attempt` again.
    Retry {
        /// Delay before the next attempt (Retry-After handling included).
        after: Duration,
        /// Class of the failed attempt.
        class: OutcomeClass,
    },
    /// Stop; the request failed.
    GiveUp {
        /// Why.
        reason: GiveUpReason,
        /// Class of the last attempt.
        class: OutcomeClass,
    },
}

impl Decision {
    /// The class of the attempt this decision answers.
    pub fn class(&self) -> OutcomeClass {
        match self {
            Decision::Success => OutcomeClass::Success,
            Decision::Retry { class, .. } | Decision::GiveUp { class, .. } => *class,
        }
    }
}

/// Something a recorder may chart. `at` is monotonic time since the run's epoch.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum PolicyEvent {
    /// The circuit breaker changed state.
    Breaker {
        /// When.
        #[serde(with = "duration::serde")]
        at: Duration,
        /// Old state.
        from: BreakerState,
        /// New state.
        to: BreakerState,
    },
    /// The budget refused a retry for the first time.
    BudgetFirstRefusal {
        /// When.
        #[serde(with = "duration::serde")]
        at: Duration,
        /// Budget level at that moment.
        level: f64,
    },
    /// A provider's own breaker (failover with breakers) changed state.
    ProviderBreaker {
        /// The provider's index in the config's failover list.
        provider: usize,
        /// When.
        #[serde(with = "duration::serde")]
        at: Duration,
        /// Old state.
        from: BreakerState,
        /// New state.
        to: BreakerState,
    },
    /// A cost cap stopped a retry for the first time (per scope).
    CostCapReached {
        /// When.
        #[serde(with = "duration::serde")]
        at: Duration,
        /// Which cap.
        scope: CostScope,
    },
}

/// One logical request's state. Created by [`RetryClient::start`], consumed by `finish`.
#[derive(Clone, Debug, Default)]
pub struct RequestState {
    started: Duration,
    deadline_at: Option<Duration>,
    idempotent: bool,
    attempts: u32,
    retries_since_reset: u32,
    decorrelated_prev: Duration,
    last_charge: Option<f64>,
    holds_retry_slot: bool,
    awaiting_outcome: bool,
    is_probe: bool,
    /// The attempt in flight holds a bulkhead place.
    holds_bulkhead: bool,
    /// The bulkhead rejected the attempt about to be sent (its queue was full, or its wait
    /// ran out): `before_attempt` refuses it.
    bulkhead_rejected: bool,
    /// When the attempt about to be sent joined the bulkhead's queue (None: not queued).
    queued_since: Option<Duration>,
    /// With a bulkhead per provider: the provider whose bulkhead the attempt about to be
    /// sent last asked (whose queue it waits in, or which rejected it).
    bulkhead_slot: u8,
    /// The attempt in flight holds a place of the concurrency limiter: when it was
    /// admitted, and the in-flight count it was admitted with.
    limit_sample: Option<(Duration, u32)>,
    /// With the breaker outside the retry: the call was let through and its outcome is
    /// still to be recorded (once, when the call ends).
    breaker_admitted: bool,
    /// The provider (failover index) of the last attempt sent; later attempts go no
    /// further up the list.
    provider: usize,
    cost_spent: f64,
    ended: Option<GiveUpReason>,
    /// Hedging: copies sent and not yet answered, no more copies to follow, and when the
    /// armed timer of the next copy is due.
    outstanding: u32,
    hedge_frozen: bool,
    next_hedge_at: Option<Duration>,
    /// Hedging on the per-try timeout (Envoy): the call's record, out of line.
    per_try: Option<Box<hedge_on_timeout::PerTryHedge>>,
}

impl RequestState {
    /// Attempts sent so far (permits granted).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time left before the effective deadline (None = no deadline).
    pub fn remaining_deadline(&self, now: Now) -> Option<Duration> {
        deadline::remaining(self.deadline_at, now.mono)
    }

    /// When the request started (monotonic).
    pub fn started(&self) -> Duration {
        self.started
    }

    /// The absolute effective deadline (monotonic), if any.
    pub fn deadline_at(&self) -> Option<Duration> {
        self.deadline_at
    }

    /// Summed attempt cost of this request.
    pub fn cost_spent(&self) -> f64 {
        self.cost_spent
    }

    /// True when the method is idempotent.
    pub fn idempotent(&self) -> bool {
        self.idempotent
    }
}

/// The retry state machine of one config at one layer. `Send`, not shared: engines wrap it in a
/// `Mutex` if several tasks use it.
///
/// What every instance of a fleet has alike (the config and the tables derived from it) is
/// shared behind `Arc`s ([`RetryClient::sibling`]); only the state each instance learns on
/// its own (budget, breaker, router, ledger, limiter) is its own: a fleet of a million
/// instances must not hold a million copies of one config.
#[derive(Debug)]
pub struct RetryClient {
    /// The config and the tables derived from it, one allocation every instance of a fleet
    /// points to (one pointer per instance, not one per table).
    shared: Arc<Shared>,
    budget: Option<Box<dyn RetryBudget>>,
    /// Boxed, as the router: with its settings and window it is the largest part of an
    /// instance, and a config without a breaker should not carry its room in every instance.
    breaker: Option<Box<CircuitBreaker>>,
    /// Which side of the retry the breaker stands on (the config's pipeline).
    breaker_place: BreakerPlace,
    /// The bulkhead stands outside the retry: a call holds one place until it ends.
    bulkhead_outside: bool,
    /// With failover: where each attempt goes, and a breaker per provider (boxed, like the
    /// limiter: few configs have one, and every fleet instance would carry its size).
    router: Option<Box<ProviderRouter>>,
    ledger: CostLedger,
    /// The send-rate limiter every attempt passes (botocore's adaptive mode), if any.
    limiter: Option<Box<RateLimiter>>,
    /// The bulkhead and the adaptive concurrency limiter, if any (boxed, as the limiter).
    bulkhead: Option<Box<Bulkheads>>,
    concurrency: Option<Box<ConcurrencyLimiter>>,
    events: Vec<PolicyEvent>,
    budget_refused_once: bool,
    cost_cap_request_once: bool,
    cost_cap_global_once: bool,
}

/// What every instance of a config has alike: the config, and the tables built from it
/// once.
#[derive(Debug)]
struct Shared {
    config: RetryConfig,
    /// The config's `retry_on` answers for bare statuses, looked up per outcome.
    statuses: StatusClasses,
    /// The config's nominal backoff of the first retries, looked up per retry.
    nominals: super::backoff::Nominals,
    /// Which ways through the client the config's stages let it take (see `plain.rs`).
    paths: plain::Paths,
}

impl RetryClient {
    /// Build the client of a validated config.
    pub fn new(config: &RetryConfig) -> RetryClient {
        let mut config = config.clone();
        if let Some(non_fatal) = config.hedging.as_ref().and_then(|h| h.non_fatal.clone()) {
            // A hedged config's non-fatal statuses are what its classifier calls retryable.
            config.retry_on.grpc_statuses = non_fatal;
            config.retry_on.grpc_throttling_statuses.clear();
        }
        RetryClient::fresh(Arc::new(Shared {
            statuses: StatusClasses::new(&config.retry_on),
            nominals: super::backoff::Nominals::new(&config.backoff),
            paths: plain::Paths::of(&config),
            config,
        }))
    }

    /// Another instance of the same config: the config and its tables shared with this
    /// one, the learnt state (budget, breaker, ledger, limiter) fresh.
    pub fn sibling(&self) -> RetryClient {
        RetryClient::fresh(Arc::clone(&self.shared))
    }

    /// A client with fresh learnt state over shared config and tables.
    fn fresh(shared: Arc<Shared>) -> RetryClient {
        let config = &shared.config;
        let client = RetryClient {
            budget: config.budget.build(),
            // With failover the breaker settings serve each provider (one provider's
            // outage must not shut the others), not the client as a whole.
            breaker: match config.failover {
                Some(_) => None,
                None => config
                    .breaker
                    .as_ref()
                    .map(|b| Box::new(CircuitBreaker::new(b))),
            },
            breaker_place: config
                .pipeline
                .as_ref()
                .map_or(BreakerPlace::PerAttempt, |p| p.breaker_place()),
            bulkhead_outside: config
                .pipeline
                .as_ref()
                .is_some_and(|p| p.bulkhead_outside()),
            router: config
                .failover
                .as_ref()
                .map(|f| Box::new(ProviderRouter::new(f, config.breaker.as_ref()))),
            ledger: CostLedger::default(),
            limiter: config.rate_limiter.build().map(Box::new),
            bulkhead: Bulkheads::build(
                config.bulkhead.as_ref(),
                config
                    .failover
                    .as_ref()
                    .and_then(|f| Some((f.bulkhead.as_ref()?, f.providers.len()))),
            )
            .map(Box::new),
            concurrency: config
                .concurrency_limit
                .as_ref()
                .map(|l| Box::new(ConcurrencyLimiter::new(l))),
            events: Vec::new(),
            budget_refused_once: false,
            cost_cap_request_once: false,
            cost_cap_global_once: false,
            shared,
        };
        client.paths_agree();
        client
    }

    /// The config.
    pub fn config(&self) -> &RetryConfig {
        &self.shared.config
    }

    /// Start a logical request. The effective deadline is `min(inherited, config.deadline)`.
    pub fn start(
        &mut self,
        now: Now,
        method: &str,
        inherited_deadline: Option<Duration>,
    ) -> RequestState {
        self.start_call(now, is_idempotent_method(method), inherited_deadline)
    }

    fn release_slot(&mut self, req: &mut RequestState) {
        if req.holds_retry_slot {
            req.holds_retry_slot = false;
            if let Some(b) = self.budget.as_mut() {
                b.on_retry_end();
            }
        }
    }

    fn refuse(&mut self, now: Now, req: &mut RequestState, reason: GiveUpReason) -> Permit {
        self.release_slot(req);
        // A call the outer breaker let through and that now stops failed.
        self.settle_outer(now, req, Some(true));
        req.ended = Some(reason);
        Permit::Refuse(reason)
    }

    fn cost_event(&mut self, now: Now, scope: CostScope) {
        let flag = match scope {
            CostScope::Request => &mut self.cost_cap_request_once,
            CostScope::Global => &mut self.cost_cap_global_once,
        };
        if !*flag {
            *flag = true;
            self.events.push(PolicyEvent::CostCapReached {
                at: now.mono,
                scope,
            });
        }
    }

    /// Would the request's next attempt fit the caps? Its cost is that of the provider the
    /// failover rule sends it to; a breaker that moves it on charges the provider it reaches.
    ///
    /// Inlined to the question whether the config has caps at all, so a config without
    /// any pays one test per attempt, not a call.
    #[inline(always)]
    fn cost_check(&mut self, now: Now, req: &RequestState) -> bool {
        self.shared.config.cost.is_none() || self.cost_check_caps(now, req)
    }

    /// [`Self::cost_check`] for a config with caps.
    fn cost_check_caps(&mut self, now: Now, req: &RequestState) -> bool {
        let Some(cost) = &self.shared.config.cost else {
            return true;
        };
        let slot = self
            .shared
            .config
            .failover
            .as_ref()
            .map_or(0, |f| f.slot(req.attempts + 1).max(req.provider));
        match cost.check(
            req.cost_spent,
            self.ledger.spent,
            self.shared.config.attempt_cost.at(slot),
        ) {
            None => true,
            Some(scope) => {
                self.cost_event(now, scope);
                false
            }
        }
    }

    /// Ask before EVERY send of `req`, first attempts and retries, before
    /// [`Self::before_attempt`]: `None` when the send may go now, or how long to wait before
    /// asking again while the config's rate limiter has no token for it. Always `None`
    /// without a limiter.
    ///
    /// Asked first, as botocore does (its limiter acquires on `before-send`, after the retry
    /// decision and its backoff): a token taken here is spent even if a check of
    /// `before_attempt` that botocore does not have (a breaker, a cost cap) then refuses.
    /// A deadline bounds the wait: no wait ends past it, and once it has passed no token is
    /// taken, so that `before_attempt` ends the request there.
    #[inline]
    pub fn rate_limit(&mut self, now: Now, req: &RequestState) -> Option<Duration> {
        let limiter = self.limiter.as_mut()?;
        let remaining = req.remaining_deadline(now);
        if remaining.is_some_and(|r| r.is_zero()) {
            return None;
        }
        let wait = limiter.acquire(now.mono)?;
        Some(remaining.map_or(wait, |r| wait.min(r)))
    }

    /// The rate limiter's state, if the config has one (reports and tests read it).
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.limiter.as_deref()
    }

    /// Ask before EVERY attempt (first and retries): deadline, attempt count, cost caps (retries
    /// only), then the breaker (last, so a refused attempt never takes a half-open probe slot).
    ///
    /// A config without the stages the short way leaves out (see `plain.rs`) takes it, out
    /// of line and apart from the long way: a small function saves and restores no
    /// registers it does not use.
    #[inline(always)]
    pub fn before_attempt(&mut self, now: Now, req: &mut RequestState) -> Permit {
        match self.shared.paths.plain_cost {
            Some(cost) => self.before_plain_attempt(now.mono, req, cost),
            None => self.before_attempt_at(now.mono, now.epoch_wall, req),
        }
    }

    /// [`Self::before_attempt`] with `now` in its two halves: a `Now` (32 bytes) passed to
    /// a call that is not inlined is copied into a stack slot of its own, field by field,
    /// and read back in wider loads that stall on store forwarding (a sixth of `bench
    /// policy` in the profile). Each half (16 bytes) goes in two registers.
    fn before_attempt_at(
        &mut self,
        mono: Duration,
        epoch_wall: SystemTime,
        req: &mut RequestState,
    ) -> Permit {
        let now = Now { mono, epoch_wall };
        let remaining = match self.permit_prelude(now, req) {
            Ok(remaining) => remaining,
            Err(refused) => return refused,
        };
        // A cap is a ceiling: no attempt, first or retry, takes the spend above it.
        if !self.cost_check(now, req) {
            return self.refuse(now, req, GiveUpReason::CostCap);
        }
        // Room is looked at here and taken after the breaker: nothing else moves between.
        if self.bulkhead_refuses(now, req) {
            return self.refuse(now, req, GiveUpReason::BulkheadFull);
        }
        if self.concurrency.as_ref().is_some_and(|l| !l.has_room()) {
            return self.refuse(now, req, GiveUpReason::LimitExceeded);
        }
        if let Some(br) = self.breaker.as_mut() {
            // Outside the retry the breaker is asked by the call's first attempt only.
            if self.breaker_place != BreakerPlace::OutsideRetry || req.attempts == 0 {
                let (allowed, probe) = br.allow(now.mono);
                self.collect_breaker_events();
                if !allowed {
                    if self.breaker_place == BreakerPlace::InsideRetry {
                        // A failed attempt of the retry loop, not the call's end: the
                        // session hands it to `on_open_circuit`.
                        req.attempts += 1;
                        return Permit::Refuse(GiveUpReason::BreakerOpen);
                    }
                    return self.refuse(now, req, GiveUpReason::BreakerOpen);
                }
                req.is_probe = probe;
                req.breaker_admitted = self.breaker_place == BreakerPlace::OutsideRetry;
            }
        }
        let provider = match self.router.as_mut() {
            None => None,
            Some(router) => {
                let route = router.route(now.mono, req.attempts + 1, req.provider);
                self.collect_breaker_events();
                let Some(route) = route else {
                    return self.refuse(now, req, GiveUpReason::BreakerOpen);
                };
                req.provider = route.slot;
                req.is_probe = route.probe;
                Some(route.slot)
            }
        };
        self.take_places(now, req, provider.unwrap_or(0));
        req.attempts += 1;
        req.outstanding += 1;
        req.awaiting_outcome = true;
        let cost = match self.shared.paths.fixed_cost {
            Some(c) => c,
            None => self.shared.config.attempt_cost.at(provider.unwrap_or(0)),
        };
        req.cost_spent += cost;
        self.ledger.spent += cost;
        Permit::Send {
            attempt: req.attempts,
            timeout: self.attempt_timeout(remaining),
            remaining_deadline: remaining,
            idempotency_key: self.shared.config.idempotency_key && !req.idempotent,
            provider,
        }
    }

    /// Most outcomes move no breaker: only then is there anything to collect.
    #[inline]
    fn collect_breaker_events(&mut self) {
        if self.router.is_some() || self.breaker.as_ref().is_some_and(|b| b.has_transitions()) {
            self.take_breaker_events();
        }
    }

    #[cold]
    fn take_breaker_events(&mut self) {
        if let Some(br) = self.breaker.as_mut() {
            for (at, from, to) in br.take_transitions() {
                self.events.push(PolicyEvent::Breaker { at, from, to });
            }
        }
        if let Some(router) = self.router.as_mut() {
            for (provider, at, from, to) in router.take_transitions() {
                self.events.push(PolicyEvent::ProviderBreaker {
                    provider,
                    at,
                    from,
                    to,
                });
            }
        }
    }

    /// A retry the budget refused at `at`, its level then: the first one is an event (when
    /// the budget first drained is a headline figure), later ones are only counted.
    fn note_budget_refusal(&mut self, at: Duration, level: f64) {
        if !self.budget_refused_once {
            self.budget_refused_once = true;
            self.events
                .push(PolicyEvent::BudgetFirstRefusal { at, level });
        }
    }

    fn give_up(
        &mut self,
        now: Now,
        req: &mut RequestState,
        reason: GiveUpReason,
        class: OutcomeClass,
    ) -> Decision {
        // The outer breaker learns the call's last outcome; a local resource says nothing
        // of the target, so it only gives a probe's place back.
        let failed = match class {
            OutcomeClass::LocalResource => None,
            c => Some(c.is_retryable()),
        };
        self.settle_outer(now, req, failed);
        req.ended = Some(reason);
        Decision::GiveUp { reason, class }
    }

    /// Feed an attempt's result; the decision says what to do next.
    ///
    /// Without a deadline the jitter is drawn only for a retry the budget granted, so `rng`
    /// sees no draw for a refused one. The engines give every request its own RNG, for which
    /// that changes nothing; a caller sharing one RNG across requests would see its later
    /// draws shift.
    ///
    /// Generic over the RNG so that an engine's own is passed as one pointer, not as a
    /// trait object of two words (the arguments past the sixth register go on the stack).
    #[inline(always)]
    pub fn on_outcome<R: rand::RngCore + ?Sized>(
        &mut self,
        now: Now,
        req: &mut RequestState,
        outcome: &AttemptOutcome<'_>,
        rng: &mut R,
    ) -> Decision {
        self.on_outcome_at(now.mono, now.epoch_wall, req, outcome, rng)
    }

    /// [`Self::on_outcome`] with `now` in its two halves (see [`Self::before_attempt_at`]).
    fn on_outcome_at<R: rand::RngCore + ?Sized>(
        &mut self,
        mono: Duration,
        epoch_wall: SystemTime,
        req: &mut RequestState,
        outcome: &AttemptOutcome<'_>,
        mut rng: &mut R,
    ) -> Decision {
        let now = Now { mono, epoch_wall };
        req.awaiting_outcome = false;
        self.release_slot(req);
        let c = self
            .shared
            .statuses
            .classify(&self.shared.config.retry_on, outcome);
        let paths = self.shared.paths;
        if paths.outcome_stages {
            if self.bulkhead.is_some() || self.concurrency.is_some() {
                let drop = match c.class {
                    OutcomeClass::LocalResource => None,
                    class => Some(class.is_retryable() || c.timeout),
                };
                self.release_places(now, req, drop);
            }
            if c.class == OutcomeClass::LocalResource {
                // Not the target's answer: no breaker, budget or backoff state learns from it.
                return self.give_up(now, req, GiveUpReason::LocalResource, c.class);
            }
            if let Some(l) = self.limiter.as_mut() {
                l.on_response(now.mono, c.class == OutcomeClass::Throttling);
            }
            if paths.watches_breaker {
                self.record_breakers(now, req, c.class.is_retryable());
            }
        }
        match c.class {
            OutcomeClass::Success => {
                if paths.watches_breaker {
                    self.settle_outer(now, req, Some(false));
                    self.collect_breaker_events();
                }
                if let Some(b) = self.budget.as_mut() {
                    b.on_success(now.mono, req.last_charge);
                }
                req.ended = Some(GiveUpReason::NonRetryable); // any later before_attempt refuses
                return Decision::Success;
            }
            OutcomeClass::NonRetryable => {
                return self.give_up(now, req, GiveUpReason::NonRetryable, c.class);
            }
            // Without the stages above a local resource's failure comes here: the same
            // give-up, none of them having anything to learn from it.
            OutcomeClass::LocalResource => {
                return self.give_up(now, req, GiveUpReason::LocalResource, c.class);
            }
            OutcomeClass::Transient | OutcomeClass::Throttling => {}
        }
        let hint = match outcome {
            _ if !paths.hints => Hint::Absent,
            AttemptOutcome::Response(r)
                if self.shared.config.retry_on.x_should_retry
                    && r.grpc_status.is_none()
                    && server_says_retry(r.should_retry) == Some(false) =>
            {
                Hint::DoNotRetry
            }
            // `move`: a copy of `now` for the rare HTTP-date, so that `now` itself need not
            // live on the stack for the closure to point to.
            AttemptOutcome::Response(r) => {
                self.shared.config.retry_after.hint(r, move || now.wall())
            }
            AttemptOutcome::Transport(_) => Hint::Absent,
        };
        let d = self.decide_failure(now, req, c.class, c.timeout, c.never_sent, hint, &mut rng);
        if paths.watches_breaker {
            self.collect_breaker_events();
        }
        d
    }

    /// The retry's answer to an attempt that failed retryably (class transient or
    /// throttling): the blockers in the order of the module's list, then the delay. Inlined
    /// into its callers: as a call, passing its eight arguments and saving registers cost
    /// some thirty instructions per failed attempt.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn decide_failure(
        &mut self,
        now: Now,
        req: &mut RequestState,
        class: OutcomeClass,
        timeout: bool,
        never_sent: bool,
        hint: Hint,
        rng: &mut dyn rand::RngCore,
    ) -> Decision {
        let throttling = class == OutcomeClass::Throttling;
        let kind = if throttling {
            CostKind::Throttling
        } else if timeout {
            CostKind::Timeout
        } else {
            CostKind::Transient
        };
        // The delay (a jitter draw, which seeds a request's lazy RNG) is computed before the
        // blockers only when a deadline may turn on it: not when even the longest wait the
        // jitter can give ends before the deadline. Otherwise it is computed only once the
        // retry is granted. The decisions are the same either way: cost caps and budgets do
        // not look at the delay, and a request that gives up never draws again. What changes
        // is that a storm's refused retries (a drained budget's whole traffic) draw nothing.
        let mut drawn = false;
        let mut blocker = None;
        let mut after = Duration::ZERO;
        if hint == Hint::DoNotRetry {
            blocker = Some(GiveUpReason::ServerPushback);
        } else if !req.idempotent
            && !never_sent
            && !self.shared.config.retry_non_idempotent
            && !self.shared.config.idempotency_key
        {
            blocker = Some(GiveUpReason::NotIdempotent);
        } else if req.attempts >= self.shared.config.max_attempts {
            blocker = Some(GiveUpReason::MaxAttempts);
        } else {
            if let Some(deadline) = req.deadline_at {
                let clear = self
                    .delay_at_most(req, throttling, hint)
                    .is_some_and(|most| now.mono.saturating_add(most) < deadline);
                if !clear {
                    after = self.delay(req, throttling, hint, rng);
                    drawn = true;
                    if now.mono.saturating_add(after) >= deadline {
                        blocker = Some(GiveUpReason::Deadline);
                    }
                }
            }
            if blocker.is_none() && !self.cost_check(now, req) {
                blocker = Some(GiveUpReason::CostCap);
            }
        }
        if let Some(reason) = blocker {
            if let Some(b) = self.budget.as_mut() {
                let _ = b.try_retry(now.mono, kind, true);
            }
            return self.give_up(now, req, reason, class);
        }
        if !self.budget_grants(now, req, kind) {
            return self.give_up(now, req, GiveUpReason::BudgetRefused, class);
        }
        if !drawn {
            after = self.delay(req, throttling, hint, rng);
        }
        Decision::Retry { after, class }
    }

    /// The budget's level (None when the config has no budget).
    pub fn budget_level(&self) -> Option<f64> {
        self.budget.as_ref().map(|b| b.level())
    }

    /// The budget's level bounds (None when the config has no budget).
    pub fn budget_bounds(&self) -> Option<(f64, f64)> {
        self.budget.as_ref().map(|b| b.bounds())
    }

    /// Overwrite the budget level (threshold sweeps start the bucket mid-range).
    pub fn set_budget_level(&mut self, level: f64) {
        if let Some(b) = self.budget.as_mut() {
            b.set_level(level);
        }
    }

    /// The breaker's state (None when no breaker).
    pub fn breaker_state(&self) -> Option<BreakerState> {
        self.breaker.as_ref().map(|b| b.state())
    }

    /// Total attempt cost spent by this client.
    pub fn cost_spent(&self) -> f64 {
        self.ledger.spent
    }

    /// Whether events were recorded since the last [`Self::drain_events`]: most calls have
    /// none, and checking is cheaper than taking the (empty) list.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Take the events recorded since the last call.
    pub fn drain_events(&mut self) -> Vec<PolicyEvent> {
        std::mem::take(&mut self.events)
    }
}
