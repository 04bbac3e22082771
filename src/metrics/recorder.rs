//! The client-side recorder: what one retry config's client did, second by second.
//!
//! Both engines push the same events into it, so a figure means the same thing whether it
//! came from real sockets or virtual time. Counts are exact integers; latencies go into HDR
//! histograms (microseconds, 3 significant digits overall, 2 per second to keep the
//! per-second series small). Two recorders of the same config merge exactly, so a storm
//! split across load machines can be combined without re-measuring.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::labels::LabelCounts;
use super::runs::{clamped, RunHistogram};
use crate::policy::{AttemptLabel, BreakerState, GiveUpReason};

/// Why a retry was scheduled, for the per-reason counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    Transient,
    Throttling,
}

/// Breaker state as charted: closed 0, half-open 1, open 2.
pub type BreakerLevel = u8;

/// Breaker state as charted: closed 0, half-open 1, open 2.
pub fn breaker_level(s: BreakerState) -> BreakerLevel {
    match s {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    }
}

/// Failed first attempts by the class the config gave them. A drain threshold is a rate of
/// first-attempt failures of one class, so these are what a run compares with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstFailures {
    pub transient: u64,
    pub throttling: u64,
    pub timeout: u64,
    /// Failures the config does not retry (client errors, non-retryable statuses).
    pub other: u64,
}

impl FirstFailures {
    fn merge(&mut self, o: &FirstFailures) {
        self.transient += o.transient;
        self.throttling += o.throttling;
        self.timeout += o.timeout;
        self.other += o.other;
    }

    /// Every failed first attempt, whatever its class.
    pub fn total(&self) -> u64 {
        self.transient + self.throttling + self.timeout + self.other
    }
}

/// One second of one config's client activity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Second {
    pub started: u64,
    pub finished: u64,
    pub successes: u64,
    pub failures: u64,
    pub attempts: u64,
    pub retries: u64,
    pub retries_transient: u64,
    pub retries_throttling: u64,
    pub budget_refusals: u64,
    pub breaker_refusals: u64,
    pub dropped: u64,
    pub client_in_flight_peak: u64,
    /// First attempts whose outcome arrived in this second, and how many of them failed,
    /// by the class the config gave the failure: what a budget's drain threshold is about.
    pub first_attempts: u64,
    pub first_failed: FirstFailures,
    /// Retries of requests that finished in this second and succeeded / still failed.
    pub useful_retries: u64,
    pub wasted_retries: u64,
    /// Last budget level sampled in this second.
    pub budget_level: Option<f64>,
    /// Lowest budget level sampled in this second.
    pub budget_low: Option<f64>,
    /// Worst breaker state seen in this second.
    pub breaker: Option<BreakerLevel>,
    /// End-to-end latency of the requests that finished in this second ([`Self::latency_us`]).
    latency_us: RunHistogram<2>,
}

impl Second {
    fn new() -> Self {
        Second {
            started: 0,
            finished: 0,
            successes: 0,
            failures: 0,
            attempts: 0,
            retries: 0,
            retries_transient: 0,
            retries_throttling: 0,
            budget_refusals: 0,
            breaker_refusals: 0,
            dropped: 0,
            client_in_flight_peak: 0,
            first_attempts: 0,
            first_failed: FirstFailures::default(),
            useful_retries: 0,
            wasted_retries: 0,
            budget_level: None,
            budget_low: None,
            breaker: None,
            latency_us: RunHistogram::new(),
        }
    }

    /// End-to-end latency of the requests that finished in this second.
    pub fn latency_us(&self) -> Cow<'_, Histogram<u64>> {
        self.latency_us.view()
    }

    fn merge(&mut self, o: &Second) {
        self.started += o.started;
        self.finished += o.finished;
        self.successes += o.successes;
        self.failures += o.failures;
        self.attempts += o.attempts;
        self.retries += o.retries;
        self.retries_transient += o.retries_transient;
        self.retries_throttling += o.retries_throttling;
        self.budget_refusals += o.budget_refusals;
        self.breaker_refusals += o.breaker_refusals;
        self.dropped += o.dropped;
        self.client_in_flight_peak += o.client_in_flight_peak;
        self.first_attempts += o.first_attempts;
        self.first_failed.merge(&o.first_failed);
        self.useful_retries += o.useful_retries;
        self.wasted_retries += o.wasted_retries;
        // A budget is one client instance's, and instances never span recorders, so levels
        // do not add: the merged second keeps the lowest, how close to empty an instance came.
        self.budget_level = match (self.budget_level, o.budget_level) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.budget_low = match (self.budget_low, o.budget_low) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.breaker = self.breaker.max(o.breaker);
        self.latency_us.add(&o.latency_us);
    }
}

/// An empty histogram of end-to-end latencies (microseconds, three significant digits).
fn latency_histogram() -> RunHistogram<3> {
    RunHistogram::new()
}

/// Whole microseconds, clamped to the histograms' range.
#[inline(always)]
fn micros(d: Duration) -> u64 {
    clamped(raw_micros(d))
}

/// Whole microseconds, not clamped (a [`RunHistogram`] clamps as it records): `as_micros`
/// without its 128-bit product for any latency below half a million years (the same value:
/// the 64-bit sum cannot overflow there), and `as_micros` itself above.
#[inline(always)]
fn raw_micros(d: Duration) -> u64 {
    const SECS_64BIT: u64 = u64::MAX / 1_000_000 - 1;
    if d.as_secs() < SECS_64BIT {
        d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
    } else {
        d.as_micros() as u64
    }
}

/// Everything one config's client did in a run. It serializes whole (histograms in
/// HdrHistogram's V2 form), so a shard's recorder can be written out and merged later.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorder {
    seconds: Vec<Second>,
    /// End-to-end latency of finished logical requests, from their intended start
    /// ([`Self::latency_us`]).
    latency_us: RunHistogram<3>,
    /// Latency of single attempts that got an answer or an error
    /// ([`Self::attempt_latency_us`]).
    attempt_latency_us: RunHistogram<3>,
    /// [`Self::latency_us`] of the requests that succeeded, and of those that failed: one
    /// percentile over both mixes fast 503s with slow successes and describes neither.
    #[serde(default = "latency_histogram")]
    success_latency_us: RunHistogram<3>,
    #[serde(default = "latency_histogram")]
    failure_latency_us: RunHistogram<3>,
    pub first_budget_refusal: Option<Duration>,
    failures_by_reason: LabelCounts<GiveUpReason>,
    attempts_by_outcome: LabelCounts<AttemptLabel>,
    client_in_flight: u64,
    pub client_in_flight_peak: u64,
    pub breaker_opens: u64,
    /// Attempts the bulkhead and the concurrency limiter rejected.
    pub bulkhead_rejections: u64,
    pub limiter_rejections: u64,
    /// With failover: attempts sent to each provider and its breaker's transitions.
    pub routes: super::provider::Routes,
    /// Requests each rung of the ladder answered, by rung index.
    pub degraded: Vec<u64>,
    /// Latency of the degraded requests, from their intended start. Nothing is allocated
    /// for it until a request is degraded.
    pub degraded_latency_us: RunHistogram<3>,
    /// Per request class, by class index (empty for a load without classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<super::classes::ClassCounts>,
    /// Hedged copies: sent, cancelled in flight, wasted (all zero without hedging).
    #[serde(default)]
    pub hedges: HedgeCounts,
    /// Sends the config's rate limiter held back, and how long (none without a limiter).
    #[serde(default)]
    pub rate_limited: super::rate_limited::RateLimitWaits,
    /// The last policy sample taken ([`Self::sample_policy`]): a repeat of it in the same
    /// second changes nothing, and most attempts repeat it (a full budget, a closed breaker).
    #[serde(skip)]
    last_sample: Option<PolicySample>,
}

/// A policy sample's second, budget level (its bits) and breaker level.
type PolicySample = (u64, Option<u64>, Option<BreakerLevel>);

/// What a hedging config's extra copies came to. A hedge is a copy of a call after its
/// first; it is an attempt like any other (the target counts it on arrival).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HedgeCounts {
    /// Copies sent after a call's first.
    pub sent: u64,
    /// Copies (the first included) still in flight when their call ended, closed by the
    /// client.
    pub cancelled: u64,
    /// Hedges of ended calls that did not carry the call's answer: every hedge of a failed
    /// call, every hedge but the winner of a successful one.
    pub wasted: u64,
}

impl HedgeCounts {
    fn merge(&mut self, o: &HedgeCounts) {
        self.sent += o.sent;
        self.cancelled += o.cancelled;
        self.wasted += o.wasted;
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder {
            seconds: Vec::new(),
            latency_us: RunHistogram::new(),
            attempt_latency_us: RunHistogram::new(),
            success_latency_us: latency_histogram(),
            failure_latency_us: latency_histogram(),
            first_budget_refusal: None,
            failures_by_reason: LabelCounts::new(),
            attempts_by_outcome: LabelCounts::new(),
            client_in_flight: 0,
            client_in_flight_peak: 0,
            breaker_opens: 0,
            bulkhead_rejections: 0,
            limiter_rejections: 0,
            routes: super::provider::Routes::default(),
            degraded: Vec::new(),
            degraded_latency_us: RunHistogram::new(),
            classes: Vec::new(),
            hedges: HedgeCounts::default(),
            rate_limited: Default::default(),
            last_sample: None,
        }
    }

    /// Counts per request class from now on, for `n` classes.
    pub fn count_classes(&mut self, n: usize) {
        self.classes.resize_with(n, Default::default);
    }

    /// A request of class `class` started.
    #[inline]
    pub fn class_started(&mut self, class: usize) {
        self.classes[class].started += 1;
    }

    /// Attempt `attempt` (1 = the first try) of a class `class` request left the client.
    #[inline]
    pub fn class_attempt(&mut self, class: usize, attempt: u32) {
        let c = &mut self.classes[class];
        c.attempts += 1;
        if attempt > 1 {
            c.retries += 1;
        }
    }

    /// A class `class` request ended as `ending`, `latency` after its intended start.
    #[inline]
    pub fn class_finished(
        &mut self,
        class: usize,
        ending: super::classes::ClassEnding,
        latency: Duration,
    ) {
        use super::classes::ClassEnding;
        let c = &mut self.classes[class];
        match ending {
            ClassEnding::Succeeded => c.succeeded += 1,
            ClassEnding::Failed => c.failed += 1,
            ClassEnding::Degraded => c.degraded += 1,
        }
        c.latency_us.saturating_record(micros(latency));
    }

    /// The row of `t`'s second. Several times per attempt: inline, the growth out of line
    /// (and returning the row itself, so that the row read here is known to be in range).
    #[inline(always)]
    fn at(&mut self, t: Duration) -> &mut Second {
        let i = t.as_secs() as usize;
        if i >= self.seconds.len() {
            return self.grow_to(i);
        }
        &mut self.seconds[i]
    }

    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, i: usize) -> &mut Second {
        self.seconds.resize_with(i + 1, Second::new);
        &mut self.seconds[i]
    }

    /// Why requests failed: give-up reason label → requests.
    pub fn failures_by_reason(&self) -> BTreeMap<String, u64> {
        self.failures_by_reason.to_map()
    }

    /// Attempt outcomes: attempt-log label (ok, transient, throttle, timeout, ...) → attempts.
    pub fn attempts_by_outcome(&self) -> BTreeMap<String, u64> {
        self.attempts_by_outcome.to_map()
    }

    /// End-to-end latency of finished logical requests, from their intended start.
    pub fn latency_us(&self) -> Cow<'_, Histogram<u64>> {
        self.latency_us.view()
    }

    /// Latency of single attempts that got an answer or an error.
    pub fn attempt_latency_us(&self) -> Cow<'_, Histogram<u64>> {
        self.attempt_latency_us.view()
    }

    /// [`Self::latency_us`] of the requests that succeeded.
    pub fn success_latency_us(&self) -> Cow<'_, Histogram<u64>> {
        self.success_latency_us.view()
    }

    /// [`Self::latency_us`] of the requests that failed.
    pub fn failure_latency_us(&self) -> Cow<'_, Histogram<u64>> {
        self.failure_latency_us.view()
    }

    /// Puts the counts recorded so far into their histograms, so that the accessors read
    /// them without a copy (see [`RunHistogram`]); nothing read changes.
    pub fn flush(&mut self) {
        self.latency_us.flush();
        self.attempt_latency_us.flush();
        self.success_latency_us.flush();
        self.failure_latency_us.flush();
        self.degraded_latency_us.flush();
        self.rate_limited.wait_us.flush();
        for s in &mut self.seconds {
            s.latency_us.flush();
        }
    }

    /// Per-second rows recorded so far.
    pub fn seconds(&self) -> &[Second] {
        &self.seconds
    }

    /// A logical request started (its intended start time is `t`).
    pub fn upstream_started(&mut self, t: Duration) {
        self.client_in_flight += 1;
        let n = self.client_in_flight;
        self.client_in_flight_peak = self.client_in_flight_peak.max(n);
        let s = self.at(t);
        s.started += 1;
        s.client_in_flight_peak = s.client_in_flight_peak.max(n);
    }

    /// An arrival was dropped because the config's in-flight cap was reached.
    pub fn dropped(&mut self, t: Duration) {
        self.at(t).dropped += 1;
    }

    /// An attempt left the client (attempt 1 is the first try).
    #[inline(always)]
    pub fn attempt_sent(&mut self, t: Duration, attempt: u32) {
        let s = self.at(t);
        s.attempts += 1;
        if attempt > 1 {
            s.retries += 1;
        }
    }

    /// Attempt number `attempt` (1 = the first try) ended at `t` as `label` after `latency`.
    #[inline(always)]
    pub fn attempt_done(
        &mut self,
        t: Duration,
        latency: Duration,
        label: AttemptLabel,
        attempt: u32,
    ) {
        self.attempt_latency_us.record(raw_micros(latency));
        self.attempts_by_outcome.add(label, 1);
        if attempt == 1 {
            let s = self.at(t);
            s.first_attempts += 1;
            let f = &mut s.first_failed;
            match label {
                AttemptLabel::Ok => {}
                AttemptLabel::Transient => f.transient += 1,
                AttemptLabel::Throttle => f.throttling += 1,
                AttemptLabel::Timeout => f.timeout += 1,
                // The generator's own machine refused it: no budget learns from it, so it is
                // no drain class, but it is a failed first attempt.
                AttemptLabel::StreamReset | AttemptLabel::Goaway => f.transient += 1,
                AttemptLabel::ClientError
                | AttemptLabel::LocalResource
                | AttemptLabel::TlsHandshake => f.other += 1,
                // The client waited it out (or saw its queued connection reset): the policy
                // learnt from it as the timeout it saw.
                AttemptLabel::NotAccepted => f.timeout += 1,
                // No outcome: `attempt_unanswered` counts it, never here.
                AttemptLabel::Unfinished => f.other += 1,
            }
        }
    }

    /// An attempt dropped without an answer at the run's end (or a layer's caller hung
    /// up): counted under `label` so that every attempt has an outcome, with no latency
    /// (it never ended) and not among first attempts that succeeded or failed.
    pub fn attempt_unanswered(&mut self, label: AttemptLabel) {
        self.attempts_by_outcome.add(label, 1);
    }

    /// The policy decided to retry.
    pub fn retry_scheduled(&mut self, t: Duration, reason: RetryReason) {
        let s = self.at(t);
        match reason {
            RetryReason::Transient => s.retries_transient += 1,
            RetryReason::Throttling => s.retries_throttling += 1,
        }
    }

    /// The budget refused a retry the policy would otherwise have made.
    pub fn budget_refused(&mut self, t: Duration) {
        self.at(t).budget_refusals += 1;
        if self.first_budget_refusal.is_none() {
            self.first_budget_refusal = Some(t);
        }
    }

    /// The breaker refused an attempt before it was sent.
    pub fn breaker_refused(&mut self, t: Duration) {
        self.at(t).breaker_refusals += 1;
    }

    /// The breaker opened.
    pub fn breaker_opened(&mut self) {
        self.breaker_opens += 1;
    }

    /// A logical request ended at `t` after sending `attempts` attempts; `latency` runs from
    /// its intended start. `failure` is `None` on success, else why it gave up. Its retries
    /// count as useful when it succeeded and as wasted when it still failed, so useful plus
    /// wasted retries equal the retries of every finished request.
    #[inline(always)]
    pub fn upstream_finished(
        &mut self,
        t: Duration,
        latency: Duration,
        failure: Option<GiveUpReason>,
        attempts: u32,
    ) {
        self.client_in_flight = self.client_in_flight.saturating_sub(1);
        let us = raw_micros(latency);
        self.latency_us.record(us);
        let retries = u64::from(attempts.saturating_sub(1));
        let s = self.at(t);
        s.finished += 1;
        s.latency_us.record(us);
        match failure {
            None => {
                s.successes += 1;
                s.useful_retries += retries;
                self.success_latency_us.record(us);
            }
            Some(reason) => {
                s.failures += 1;
                s.wasted_retries += retries;
                self.failures_by_reason.add(reason, 1);
                self.failure_latency_us.record(us);
            }
        }
    }

    /// A hedged call that succeeded at `t` sent `n` copies after its first whose answers it
    /// did not use (its wasted hedges): among its retries they are wasted, not useful.
    pub fn hedges_unused(&mut self, t: Duration, n: u64) {
        let s = self.at(t);
        let n = n.min(s.useful_retries);
        s.useful_retries -= n;
        s.wasted_retries += n;
    }

    /// A logical request that gave up downstream was answered by rung `rung` of the ladder
    /// at `t`: neither a success nor a failure, so it is not among the finished requests of
    /// the second (nor its retries among the useful or wasted ones); its latency has its own
    /// histogram. `_attempts` is taken for symmetry with [`Self::upstream_finished`].
    pub fn upstream_degraded(
        &mut self,
        _t: Duration,
        latency: Duration,
        rung: usize,
        _attempts: u32,
    ) {
        self.client_in_flight = self.client_in_flight.saturating_sub(1);
        self.degraded_latency_us.record(raw_micros(latency));
        if self.degraded.len() <= rung {
            self.degraded.resize(rung + 1, 0);
        }
        self.degraded[rung] += 1;
    }

    /// Samples the policy's budget level and breaker state at `t`.
    pub fn sample_policy(
        &mut self,
        t: Duration,
        budget: Option<f64>,
        breaker: Option<BreakerLevel>,
    ) {
        // Only this method writes the sampled fields: the row already holds a repeat of the
        // last sample (its level last, its low at most it, its breaker at least it).
        let sample = (t.as_secs(), budget.map(f64::to_bits), breaker);
        if self.last_sample == Some(sample) {
            return;
        }
        self.last_sample = Some(sample);
        let s = self.at(t);
        if let Some(level) = budget {
            s.budget_level = budget;
            s.budget_low = Some(s.budget_low.map_or(level, |low| low.min(level)));
        }
        // `s.breaker.max(breaker)` by hand: through `Ord` on the options it cost some thirty
        // instructions on every attempt of a config with a breaker.
        if let Some(b) = breaker {
            if s.breaker.is_none_or(|worst| worst < b) {
                s.breaker = Some(b);
            }
        }
    }

    /// Requests started but not finished.
    pub fn in_flight(&self) -> u64 {
        self.client_in_flight
    }

    /// Adds another recorder of the same config exactly: counters sum, histograms add,
    /// seconds align by index.
    pub fn merge(&mut self, o: &Recorder) {
        // The rows may change below: the next sample is taken whole.
        self.last_sample = None;
        if self.seconds.len() < o.seconds.len() {
            self.seconds.resize_with(o.seconds.len(), Second::new);
        }
        for (a, b) in self.seconds.iter_mut().zip(&o.seconds) {
            a.merge(b);
        }
        self.latency_us.add(&o.latency_us);
        self.attempt_latency_us.add(&o.attempt_latency_us);
        self.success_latency_us.add(&o.success_latency_us);
        self.failure_latency_us.add(&o.failure_latency_us);
        self.first_budget_refusal = match (self.first_budget_refusal, o.first_budget_refusal) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.failures_by_reason.merge(&o.failures_by_reason);
        self.attempts_by_outcome.merge(&o.attempts_by_outcome);
        self.client_in_flight += o.client_in_flight;
        self.client_in_flight_peak += o.client_in_flight_peak;
        self.breaker_opens += o.breaker_opens;
        self.bulkhead_rejections += o.bulkhead_rejections;
        self.limiter_rejections += o.limiter_rejections;
        self.hedges.merge(&o.hedges);
        self.rate_limited.merge(&o.rate_limited);
        self.routes.merge(&o.routes);
        if self.degraded.len() < o.degraded.len() {
            self.degraded.resize(o.degraded.len(), 0);
        }
        for (mine, theirs) in self.degraded.iter_mut().zip(&o.degraded) {
            *mine += theirs;
        }
        self.degraded_latency_us.add(&o.degraded_latency_us);
        if self.classes.len() < o.classes.len() {
            self.classes.resize_with(o.classes.len(), Default::default);
        }
        for (mine, theirs) in self.classes.iter_mut().zip(&o.classes) {
            mine.merge(theirs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn counts_land_in_their_second() {
        let mut r = Recorder::new();
        r.upstream_started(s(0.5));
        r.attempt_sent(s(0.5), 1);
        r.attempt_sent(s(1.2), 2);
        r.retry_scheduled(s(1.1), RetryReason::Transient);
        r.upstream_finished(s(2.5), s(2.0), Some(GiveUpReason::MaxAttempts), 2);
        assert_eq!(r.seconds().len(), 3);
        assert_eq!(r.seconds()[0].started, 1);
        assert_eq!(r.seconds()[0].attempts, 1);
        assert_eq!(r.seconds()[1].retries, 1);
        assert_eq!(r.seconds()[1].retries_transient, 1);
        assert_eq!(r.seconds()[2].failures, 1);
        assert_eq!(r.failures_by_reason()["max-attempts"], 1);
        assert_eq!(r.seconds()[2].wasted_retries, 1);
        assert_eq!(r.seconds()[2].useful_retries, 0);
        assert_eq!(r.in_flight(), 0);
    }

    #[test]
    fn merge_is_exact() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for i in 0..100 {
            a.upstream_started(s(i as f64 * 0.01));
            a.upstream_finished(s(i as f64 * 0.01), Duration::from_millis(i + 1), None, 1);
        }
        for i in 0..50 {
            b.upstream_started(s(1.0 + i as f64 * 0.01));
            b.budget_refused(s(1.5));
            b.upstream_finished(
                s(1.9),
                Duration::from_millis(200),
                Some(GiveUpReason::BudgetRefused),
                1,
            );
        }
        let mut m = a.clone();
        m.merge(&b);
        assert_eq!(m.latency_us().len(), 150);
        assert_eq!(m.seconds()[0].started, 100);
        assert_eq!(m.seconds()[1].started, 50);
        assert_eq!(m.seconds()[1].budget_refusals, 50);
        assert_eq!(m.first_budget_refusal, Some(s(1.5)));
        assert_eq!(m.latency_us().max(), b.latency_us().max());
        assert_eq!(m.failures_by_reason()["budget-refused"], 50);
        // The split adds up to the whole, and each side merges as the whole does.
        assert_eq!(m.success_latency_us().len(), 100);
        assert_eq!(m.failure_latency_us().len(), 50);
        assert_eq!(m.success_latency_us().max(), a.latency_us().max());
        assert_eq!(m.failure_latency_us().min(), b.latency_us().min());
        assert_eq!(
            m.success_latency_us().len() + m.failure_latency_us().len(),
            m.latency_us().len()
        );
    }

    #[test]
    fn first_attempts_count_by_class_and_later_attempts_do_not() {
        let mut r = Recorder::new();
        let ms = Duration::from_millis(3);
        r.attempt_done(s(0.2), ms, AttemptLabel::Ok, 1);
        r.attempt_done(s(0.3), ms, AttemptLabel::Transient, 1);
        r.attempt_done(s(0.4), ms, AttemptLabel::Transient, 2);
        r.attempt_done(s(1.4), ms, AttemptLabel::Timeout, 1);
        r.attempt_done(s(1.5), ms, AttemptLabel::ClientError, 1);
        let (a, b) = (&r.seconds()[0], &r.seconds()[1]);
        assert_eq!((a.first_attempts, a.first_failed.transient), (2, 1));
        assert_eq!(
            (
                b.first_attempts,
                b.first_failed.timeout,
                b.first_failed.other
            ),
            (2, 1, 1)
        );
        assert_eq!(b.first_failed.total(), 2);
        assert_eq!(r.attempts_by_outcome()["transient"], 2);
    }

    #[test]
    fn budget_low_is_the_lowest_sample_of_its_second() {
        let mut r = Recorder::new();
        r.sample_policy(s(0.1), Some(400.0), None);
        r.sample_policy(s(0.2), Some(100.0), None);
        r.sample_policy(s(0.3), Some(300.0), None);
        assert_eq!(r.seconds()[0].budget_level, Some(300.0));
        assert_eq!(r.seconds()[0].budget_low, Some(100.0));
    }

    #[test]
    fn repeated_policy_samples_leave_the_rows_as_every_sample_would() {
        // (time, budget level, breaker level): repeats, a level that comes back, a breaker
        // that opens and closes, seconds that change, a repeat after a merge.
        let samples = [
            (0.1, Some(500.0), Some(0)),
            (0.2, Some(500.0), Some(0)),
            (0.3, Some(486.0), Some(0)),
            (0.4, Some(500.0), Some(0)),
            (0.5, Some(500.0), Some(2)),
            (0.6, Some(500.0), Some(0)),
            (0.7, Some(500.0), Some(0)),
            (1.1, Some(500.0), Some(0)),
            (1.2, Some(472.0), None),
            (1.3, Some(472.0), None),
        ];
        let mut r = Recorder::new();
        for &(t, level, breaker) in &samples {
            r.sample_policy(s(t), level, breaker);
        }
        // What every sample applied in full leaves.
        let mut want: Vec<(Option<f64>, Option<f64>, Option<u8>)> = vec![(None, None, None); 2];
        for &(t, level, breaker) in &samples {
            let w = &mut want[t as usize];
            w.0 = level;
            w.1 = Some(w.1.map_or(level.unwrap(), |low: f64| low.min(level.unwrap())));
            w.2 = w.2.max(breaker);
        }
        let got: Vec<_> = r
            .seconds()
            .iter()
            .map(|s| (s.budget_level, s.budget_low, s.breaker))
            .collect();
        assert_eq!(got, want);
        // A merge may change the rows: the same sample afterwards is applied again.
        let mut other = Recorder::new();
        other.sample_policy(s(1.5), Some(100.0), None);
        r.merge(&other);
        r.sample_policy(s(1.6), Some(472.0), None);
        assert_eq!(r.seconds()[1].budget_level, Some(472.0));
    }
}
