//! Concurrency slots with a bounded queue in front, whose slot count can change while the run
//! goes on (capacity faults), and the service's load shedding before and in the queue (the
//! rate limit, the cap on work in progress, the discipline: FIFO, LIFO or CoDel). A tokio
//! `Semaphore` cannot shrink below the permits already handed out, so this is a small slot
//! counter of its own: the capacity in force *at the moment a request asks for a slot* (or
//! when a slot frees up) decides; requests already being served when capacity drops finish
//! normally. The shedding rules are `crate::shed`'s, which the modeled target
//! (`sim::target`) applies at the same steps, to nanoseconds since its own start.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::scenario::shedding::{Discipline, Shedding};
use crate::shed::{self, Codel, Gate, Shed};

/// Why a request got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The service shed it (counted by the caller, by reason).
    Shed(Shed),
    /// The target is shutting down.
    Closed,
}

/// What a waiter is sent: the instant its slot became its own, or why it was shed instead.
type Grant = Result<Instant, Shed>;

/// A slot taken: when it became the request's own, and when the gate admitted the request
/// (earlier for a request that queued), which [`Slots::release_at`] is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) granted: Instant,
    pub(crate) admitted: Instant,
}

struct State {
    serving: u32,
    peak_serving: u32,
    next_id: u64,
    /// Each waiter, with the instant it began to wait, is sent its [`Grant`].
    waiters: VecDeque<(u64, oneshot::Sender<Grant>, Instant)>,
    /// The instant the shedding rules count their nanoseconds from.
    start: Instant,
    gate: Gate,
    lifo: bool,
    codel: Option<Codel>,
}

impl State {
    fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The slot count in force now.
pub(crate) type CapacityFn = Box<dyn Fn() -> u32 + Send + Sync>;

pub(crate) struct Slots {
    capacity: CapacityFn,
    queue: usize,
    queue_timeout: Option<Duration>,
    state: Mutex<State>,
}

impl Slots {
    pub(crate) fn new(
        capacity: CapacityFn,
        queue: u32,
        queue_timeout: Option<Duration>,
        shedding: &Shedding,
    ) -> Self {
        Slots {
            capacity,
            queue: queue as usize,
            queue_timeout,
            state: Mutex::new(State {
                serving: 0,
                peak_serving: 0,
                next_id: 0,
                waiters: VecDeque::new(),
                start: Instant::now(),
                gate: Gate::new(shedding),
                lifo: shedding.discipline == Discipline::Lifo,
                codel: shed::codel(shedding.discipline, 0),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot, past the rate limit and the cap on work in progress, waiting in the
    /// discipline's order when none is free. On `Ok`, the caller holds one slot and must
    /// call [`Slots::release`]; the instant is when the slot became its own (for a waiter,
    /// when the previous holder released it, not when the waiter's task got to run again),
    /// from which its service time runs, as in the modeled target.
    pub(crate) async fn acquire(&self) -> Result<Slot, Refused> {
        let (id, rx, admitted) = {
            let capacity = (self.capacity)();
            let mut st = self.lock();
            let now = Instant::now();
            let t = st.ns(now);
            let in_work = st.serving as usize + st.waiters.len();
            st.gate.admit(t, in_work).map_err(Refused::Shed)?;
            if st.waiters.is_empty() && st.serving < capacity {
                // A free slot at once: CoDel hears of a wait of zero (it never sheds it).
                if let Some(c) = st.codel.as_mut() {
                    c.shed(t, 0);
                }
                st.serving += 1;
                st.peak_serving = st.peak_serving.max(st.serving);
                return Ok(Slot {
                    granted: now,
                    admitted: now,
                });
            }
            if st.waiters.len() >= self.queue {
                // Admitted, then shed by the full queue at once: a sample of no latency.
                st.gate.left(t, t);
                return Err(Refused::Shed(Shed::QueueFull));
            }
            let (tx, rx) = oneshot::channel();
            let id = st.next_id;
            st.next_id += 1;
            st.waiters.push_back((id, tx, now));
            (id, rx, now)
        };
        // Removes our entry if we stop waiting for any reason (timeout or cancellation), so
        // that a dead waiter never holds a queue place.
        let mut cleanup = Cleanup {
            slots: self,
            id,
            rx,
            armed: true,
        };
        let granted = match self.queue_timeout {
            Some(limit) => match tokio::time::timeout(limit, &mut cleanup.rx).await {
                Ok(r) => r.ok(),
                Err(_) => {
                    let mut st = self.lock();
                    if let Some(pos) = st.waiters.iter().position(|(w, ..)| *w == id) {
                        st.waiters.remove(pos);
                        cleanup.armed = false;
                        let (t, since) = (st.ns(Instant::now()), st.ns(admitted));
                        st.gate.left(t, since);
                        return Err(Refused::Shed(Shed::QueueTimeout));
                    }
                    // Answered between the timer firing and taking the lock: the answer holds.
                    drop(st);
                    cleanup.rx.try_recv().ok()
                }
            },
            None => (&mut cleanup.rx).await.ok(),
        };
        cleanup.armed = false;
        match granted {
            Some(Ok(at)) => Ok(Slot {
                granted: at,
                admitted,
            }),
            Some(Err(why)) => Err(Refused::Shed(why)),
            None => Err(Refused::Closed),
        }
    }

    /// Gives a slot back and hands freed slots to waiters.
    pub(crate) fn release(&self, slot: Slot) {
        self.release_at(Instant::now(), slot);
    }

    /// Gives back a slot whose service ended at `ended` (not after now), and hands it to the
    /// next waiter as of that instant: the wake-up of the task that releases it, a few
    /// microseconds to a fraction of a millisecond on a loaded machine, is then not added to
    /// the next request's time in the slot, so the slot serves at the model's rate. The
    /// adaptive limit hears the request's time from admission to `ended`.
    pub(crate) fn release_at(&self, ended: Instant, slot: Slot) {
        let capacity = (self.capacity)();
        let mut st = self.lock();
        st.serving -= 1;
        let ended = ended.min(Instant::now());
        let (t, since) = (st.ns(ended), st.ns(slot.admitted));
        st.gate.left(t, since);
        Self::pump_locked_at(&mut st, capacity, ended);
    }

    /// Hands free slots to waiters (call when capacity may have grown).
    pub(crate) fn pump(&self) {
        let capacity = (self.capacity)();
        let mut st = self.lock();
        Self::pump_locked(&mut st, capacity);
    }

    fn pump_locked(st: &mut State, capacity: u32) {
        Self::pump_locked_at(st, capacity, Instant::now());
    }

    /// Hands free slots to waiters in the discipline's order, each granted as of `now`, or
    /// as of when it began to wait if that is later (a slot whose release was late is never
    /// handed to a request from before it arrived); under CoDel a waiter may be shed instead,
    /// and the slot goes on to the next.
    fn pump_locked_at(st: &mut State, capacity: u32, now: Instant) {
        while st.serving < capacity {
            let next = match st.lifo {
                true => st.waiters.pop_back(),
                false => st.waiters.pop_front(),
            };
            let Some((_, tx, waiting_since)) = next else {
                break;
            };
            let granted = now.max(waiting_since);
            let (t, since) = (st.ns(granted), st.ns(waiting_since));
            if let Some(c) = st.codel.as_mut() {
                if c.shed(t, t - since) {
                    st.gate.left(t, since);
                    let _ = tx.send(Err(Shed::Codel));
                    continue;
                }
            }
            // A waiter that went away (its receiver dropped) is skipped.
            if tx.send(Ok(granted)).is_ok() {
                st.serving += 1;
                st.peak_serving = st.peak_serving.max(st.serving);
            }
        }
    }

    pub(crate) fn peak_serving(&self) -> u64 {
        self.lock().peak_serving as u64
    }

    #[cfg(test)]
    pub(crate) fn serving(&self) -> u32 {
        self.lock().serving
    }
}

struct Cleanup<'a> {
    slots: &'a Slots,
    id: u64,
    rx: oneshot::Receiver<Grant>,
    armed: bool,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if self.armed {
            let capacity = (self.slots.capacity)();
            let mut st = self.slots.lock();
            if let Some(pos) = st.waiters.iter().position(|(w, ..)| *w == self.id) {
                st.waiters.remove(pos);
            } else if let Ok(Ok(_)) = self.rx.try_recv() {
                // We were granted a slot but are being cancelled before using it: pass it on.
                st.serving -= 1;
                Slots::pump_locked(&mut st, capacity);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    fn slots_with(queue: u32, timeout: Option<Duration>) -> (Arc<Slots>, Arc<AtomicU32>) {
        let cap = Arc::new(AtomicU32::new(1));
        let c = cap.clone();
        let g = Slots::new(
            Box::new(move || c.load(Ordering::SeqCst)),
            queue,
            timeout,
            &Shedding::default(),
        );
        (Arc::new(g), cap)
    }

    /// A slot to give back where the test does not keep the one it took (no adaptive limit
    /// reads its admission).
    fn any_slot() -> Slot {
        let now = Instant::now();
        Slot {
            granted: now,
            admitted: now,
        }
    }

    #[tokio::test]
    async fn fifo_queue_bound_timeout_and_capacity_change() {
        let (g, cap) = slots_with(2, Some(Duration::from_millis(50)));
        assert!(g.acquire().await.is_ok());
        let g1 = g.clone();
        let w1 = tokio::spawn(async move { g1.acquire().await });
        tokio::task::yield_now().await;
        let g2 = g.clone();
        let w2 = tokio::spawn(async move { g2.acquire().await });
        tokio::task::yield_now().await;
        // Queue of 2 is full.
        assert_eq!(g.acquire().await, Err(Refused::Shed(Shed::QueueFull)));
        // Capacity grows to 2: the first waiter (FIFO) gets a slot at once.
        cap.store(2, Ordering::SeqCst);
        g.pump();
        assert!(w1.await.unwrap().is_ok());
        assert_eq!(g.serving(), 2);
        // Capacity drops to 1: a release does not hand the slot on (2 → 1 serving).
        cap.store(1, Ordering::SeqCst);
        g.release(any_slot());
        assert_eq!(g.serving(), 1);
        // The second waiter waits past its timeout.
        assert_eq!(w2.await.unwrap(), Err(Refused::Shed(Shed::QueueTimeout)));
        g.release(any_slot());
        assert_eq!(g.serving(), 0);
        assert_eq!(g.peak_serving(), 2);
    }

    /// A waiter's slot is its own from the release that handed it over, not from when its
    /// task runs again: its service time is not lengthened by the wake-up.
    #[tokio::test(flavor = "current_thread")]
    async fn a_waiter_holds_its_slot_from_the_release() {
        let (g, _cap) = slots_with(1, None);
        assert!(g.acquire().await.is_ok());
        let g1 = g.clone();
        let w = tokio::spawn(async move { g1.acquire().await });
        tokio::task::yield_now().await;
        let before = Instant::now();
        g.release(any_slot());
        let after = Instant::now();
        // The waiter's task cannot run before this one yields.
        std::thread::sleep(Duration::from_millis(2));
        let granted = w.await.unwrap().unwrap().granted;
        assert!(before <= granted && granted <= after, "{granted:?}");
    }

    /// A slot released late (its task woke after the service's end) is handed over as of
    /// the end of the service, never as of a later instant nor a future one.
    #[tokio::test(flavor = "current_thread")]
    async fn a_late_release_hands_the_slot_over_as_of_the_service_end() {
        let (g, _cap) = slots_with(1, None);
        assert!(g.acquire().await.is_ok());
        let g1 = g.clone();
        let w = tokio::spawn(async move { g1.acquire().await });
        tokio::task::yield_now().await;
        let ended = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        g.release_at(ended, any_slot());
        assert_eq!(w.await.unwrap().map(|s| s.granted), Ok(ended));
        // A waiter that began to wait after the end of the service released late is granted
        // as of its own arrival, never before it.
        let ended = Instant::now();
        std::thread::sleep(Duration::from_millis(1));
        let g3 = g.clone();
        let w3 = tokio::spawn(async move { (Instant::now(), g3.acquire().await) });
        tokio::task::yield_now().await;
        g.release_at(ended, any_slot());
        let (asked, granted) = w3.await.unwrap();
        assert!(granted.unwrap().granted >= asked, "granted before it asked");
        let g2 = g.clone();
        let w2 = tokio::spawn(async move { g2.acquire().await });
        tokio::task::yield_now().await;
        g.release_at(Instant::now() + Duration::from_secs(1), any_slot());
        let granted = w2.await.unwrap().unwrap().granted;
        assert!(granted <= Instant::now(), "granted in the future");
    }

    /// The adaptive limit holds the work at `min_concurrency` while it measures the minRTT:
    /// past it an arrival is refused at once, and a release makes room again.
    #[tokio::test]
    async fn the_adaptive_limit_refuses_past_min_concurrency_while_it_measures() {
        let shedding = Shedding {
            adaptive_concurrency: Some(crate::scenario::shedding::AdaptiveConcurrency {
                update_interval_ms: 100,
                min_rtt_interval_ms: 10_000,
                min_rtt_requests: 50,
                min_concurrency: 2,
                jitter: 0.0,
                buffer: 0.25,
                percentile: 0.5,
                max_limit: 1000,
            }),
            ..Shedding::default()
        };
        let g = Slots::new(Box::new(|| 10), 10, None, &shedding);
        let first = g.acquire().await.unwrap();
        let _second = g.acquire().await.unwrap();
        assert_eq!(
            g.acquire().await,
            Err(Refused::Shed(Shed::AdaptiveConcurrency))
        );
        g.release(first);
        assert!(g.acquire().await.is_ok());
    }

    #[tokio::test]
    async fn cancelled_waiter_frees_its_place() {
        let (g, _cap) = slots_with(1, None);
        assert!(g.acquire().await.is_ok());
        let g1 = g.clone();
        let w = tokio::spawn(async move { g1.acquire().await });
        tokio::task::yield_now().await;
        assert_eq!(g.acquire().await, Err(Refused::Shed(Shed::QueueFull)));
        w.abort();
        let _ = w.await;
        // The aborted waiter's place is free again and the release does not leak a slot.
        let g2 = g.clone();
        let w2 = tokio::spawn(async move { g2.acquire().await });
        tokio::task::yield_now().await;
        g.release(any_slot());
        assert!(w2.await.unwrap().is_ok());
        assert_eq!(g.serving(), 1);
    }
}
