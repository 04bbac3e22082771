//! The live target's exact counts: the `TargetCounts` the simulator keeps too, read against
//! the run's clock. One `std::sync::Mutex` guards them all: every update is a few integer
//! operations, the lock is held for nanoseconds, and a single lock makes the snapshot
//! consistent (arrivals, in-flight and per-second series agree with each other).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::target_counts::{second_of, TargetCounts};
use crate::metrics::TargetStats;

pub(crate) struct Counters {
    epoch: Instant,
    inner: Mutex<TargetCounts>,
    /// Proxy: forwarded requests that met trouble upstream, by kind ([`Trouble::ALL`] order).
    trouble: [std::sync::atomic::AtomicU64; Trouble::ALL.len()],
}

/// What can go wrong with a forwarded request past the connect: the proxy answers for the
/// upstream (a marked 502 or 504) or relays its reset, and counts each kind apart from the
/// service's own answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// A response body longer than the proxy relays (502, `body-too-large`).
    BodyTooLarge,
    /// An answer that broke a bound of the protocol, such as endless interim answers (502,
    /// `protocol-error`).
    ProtocolError,
    /// No complete response within the upstream timeout (504, `timeout`).
    Timeout,
    /// The upstream reset the connection or stream; relayed to the client as a reset.
    Reset,
}

impl Trouble {
    pub const ALL: [Trouble; 4] = [
        Trouble::BodyTooLarge,
        Trouble::ProtocolError,
        Trouble::Timeout,
        Trouble::Reset,
    ];

    /// The metric that counts it, and what that metric means.
    pub fn metric(self) -> (&'static str, &'static str) {
        match self {
            Trouble::BodyTooLarge => (
                "stormrig_proxy_body_too_large_total",
                "Upstream responses not relayed because their body exceeded the proxy's limit (answered 502).",
            ),
            Trouble::ProtocolError => (
                "stormrig_proxy_protocol_errors_total",
                "Upstream answers not relayed because they broke a bound of the protocol (more interim 1xx answers than the proxy reads; answered 502).",
            ),
            Trouble::Timeout => (
                "stormrig_proxy_upstream_timeouts_total",
                "Forwarded requests with no complete response within the upstream timeout (answered 504).",
            ),
            Trouble::Reset => (
                "stormrig_proxy_upstream_resets_total",
                "Forwarded requests the upstream reset (connection reset, RST_STREAM, GOAWAY), relayed to the client as resets.",
            ),
        }
    }
}

impl Counters {
    pub(crate) fn new(epoch: Instant) -> Self {
        Counters {
            epoch,
            inner: Mutex::new(TargetCounts::new()),
            trouble: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TargetCounts> {
        // A panic while holding the lock cannot leave the counts half-updated in a way that
        // matters more than losing them all, so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run time now (zero before the epoch) and its whole second.
    pub(crate) fn now(&self) -> (Duration, usize) {
        let t = Instant::now().saturating_duration_since(self.epoch);
        (t, second_of(t))
    }

    /// Counts an arrival and puts it in flight. Returns its run time.
    #[cfg(test)]
    pub(crate) fn arrive(&self) -> Duration {
        let mut c = self.lock();
        // Read the clock under the lock so seconds only move forward.
        let (t, sec) = self.now();
        c.arrive(sec);
        t
    }

    /// Counts an arrival at whole second `sec` (from [`Counters::now`], read just before)
    /// and puts it in flight. A second already passed by another thread counts as that
    /// later second, so seconds only move forward: the second it was counted at is returned.
    pub(crate) fn arrive_at(&self, sec: usize) -> usize {
        self.lock().arrive(sec)
    }

    /// The fault proxy could not reach the real server for the arrival counted at second
    /// `arrived`: it leaves the arrivals and is counted unreached.
    pub(crate) fn unreached(&self, arrived: usize) {
        self.lock().unreached(arrived);
    }

    /// The fault proxy answered a request itself, for `reason`.
    pub(crate) fn proxy_answered(&self, reason: crate::metrics::ProxyAnswer) {
        self.lock().proxy_answered(reason);
    }

    /// The fault proxy relayed the service's reset (`stream`: as an HTTP/2 stream reset).
    pub(crate) fn relayed_reset(&self, stream: bool) {
        self.lock().relayed_reset(stream);
    }

    /// Tokens a provider charged an arrival of class `class` (`served`: of its 200 answer).
    pub(crate) fn class_tokens(&self, class: usize, tokens: u64, served: bool) {
        self.lock().class_tokens(class, tokens, served);
    }

    /// The arrival being counted belongs to request class `class`.
    pub(crate) fn class_arrived(&self, class: usize) {
        self.lock().class_arrived(class);
    }

    /// An arrival at whole second `sec` answered at once with `status` (not served): the
    /// arrival, the response and the leave under one lock, as if the answer took no time.
    /// Counts exactly what `arrive_at`, `respond(status, false)` and `leave` would.
    pub(crate) fn answer_at_once(&self, sec: usize, status: u16) {
        self.lock().answer_at_once(sec, status);
    }

    /// A request left flight (answered, or dropped with its connection).
    pub(crate) fn leave(&self) {
        let mut c = self.lock();
        let (_, sec) = self.now();
        c.leave(sec);
    }

    /// A response went out with `status`; `served` when it is a 2xx after real service.
    pub(crate) fn respond(&self, status: u16, served: bool) {
        let mut c = self.lock();
        c.respond(status, served.then(|| self.now().1));
    }

    pub(crate) fn reset(&self) {
        self.lock().reset();
    }

    pub(crate) fn hang(&self) {
        self.lock().hang();
    }

    pub(crate) fn shed(&self, reason: crate::metrics::ShedReason) {
        self.lock().shed(reason);
    }

    pub(crate) fn lost_response(&self) {
        self.lock().lost_response();
    }

    /// A request was handed to the real upstream server (fault proxy only).
    pub(crate) fn forward(&self) {
        self.lock().forward();
    }

    /// Counts one forwarded request that met `kind` of trouble upstream.
    pub(crate) fn trouble_seen(&self, kind: Trouble) {
        self.trouble[kind as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forwarded requests that met `kind` of trouble upstream so far.
    pub(crate) fn trouble(&self, kind: Trouble) -> u64 {
        self.trouble[kind as usize].load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The run's t = 0.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A write request of logical request `request` executed: its side effect happened,
    /// debiting `amount` from the account. The second execution of a logical request makes
    /// it a duplicate; every execution after the first is an extra side effect.
    pub(crate) fn execute(&self, request: u64, amount: u64) {
        self.lock().execute(request, amount);
    }

    /// A keyed request was answered from the dedup store without executing.
    pub(crate) fn dedup_replay(&self) {
        self.lock().dedup_replay();
    }

    /// A keyed request arrived while its key was still executing (answered 409).
    pub(crate) fn dedup_conflict(&self) {
        self.lock().dedup_conflict();
    }

    /// A used key arrived with another body (answered 422).
    pub(crate) fn dedup_mismatch(&self) {
        self.lock().dedup_mismatch();
    }

    /// Moves the epoch back by `d`: for tests, the same as `d` passing.
    #[cfg(test)]
    fn pass(&mut self, d: Duration) {
        self.epoch -= d;
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.lock().in_flight()
    }

    pub(crate) fn snapshot(&self, peak_serving: u64) -> TargetStats {
        let mut c = self.lock();
        let (_, sec) = self.now();
        c.snapshot(sec, peak_serving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn per_second_peaks_carry_the_level_held_across_seconds() {
        let mut c = Counters::new(Instant::now());
        c.arrive();
        c.arrive();
        c.pass(Duration::from_millis(2_500));
        c.arrive(); // second 2: 3 in flight
        c.leave();
        c.leave();
        c.pass(Duration::from_secs(1));
        let s = c.snapshot(0);
        assert_eq!(s.arrivals, 3);
        assert_eq!(s.arrivals_per_s, vec![2, 0, 1]);
        assert_eq!(s.peak_in_flight, 3);
        // Second 1 had no event but still held 2 in flight; second 3 holds 1.
        assert_eq!(s.peak_in_flight_per_s, vec![2, 2, 3, 1]);
    }
}
