//! Waits that end at their instant, to well under a millisecond: how the built-in target
//! holds a slot for exactly the service time its model draws.
//!
//! tokio's timer cannot: it rounds a deadline up to the end of its millisecond tick
//! (tokio 1.54 `src/runtime/time/source.rs` lines 17-20, `deadline_to_tick` adds 999 999 ns),
//! parks for whole ticks counted from the current tick (`src/runtime/time/mod.rs` lines
//! 224-232), and mio rounds the epoll timeout up to the next millisecond again (mio 1.2
//! `src/sys/unix/selector/epoll.rs` lines 47-60). A 10 ms `sleep` therefore lasts 10-12 ms:
//! calibrating a 4-slot, 10 ms built-in target measured a hold of 11.27 ms per request and a
//! plateau of 355 req/s where the model (and the simulator, which serves the model exactly)
//! says 400. Capacity answers found on the simulator then did not hold live at their limit.
//!
//! Here one thread of the process keeps every pending instant in a heap and sleeps on a
//! condition variable to the earliest (a futex wait, whose hrtimer has nanosecond resolution;
//! the thread's timer slack is set to its least on Linux, otherwise 50 µs), then wakes the
//! tasks whose instant has come through a oneshot each. A registration costs a lock and a
//! heap push; the thread is woken early only by an instant earlier than all pending ones
//! (rare: equal service times arrive in deadline order).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::oneshot;

/// Returns at `at`, or at once when it has passed.
pub(crate) async fn until(at: Instant) {
    if Instant::now() >= at {
        return;
    }
    let rx = timer().register(at);
    // The sender never drops unsent (the thread lives as long as the process); an error
    // would only mean the wait ends now, which is what a broken timer should do.
    let _ = rx.await;
}

struct Entry {
    at: Instant,
    /// Registration order: equal instants are woken in the order they were asked for.
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: the earliest instant is the greatest, the top of `BinaryHeap`'s max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Pending {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

struct Timer {
    pending: Mutex<Pending>,
    earlier: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            pending: Mutex::new(Pending::default()),
            earlier: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("stormrig-deadline".into())
            .spawn(move || timer.run())
            .expect("the deadline thread starts");
        timer
    })
}

impl Timer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, at: Instant) -> oneshot::Receiver<()> {
        let (wake, rx) = oneshot::channel();
        let mut p = self.lock();
        let seq = p.next_seq;
        p.next_seq += 1;
        let first = p.heap.peek().is_none_or(|top| at < top.at);
        p.heap.push(Entry { at, seq, wake });
        drop(p);
        if first {
            self.earlier.notify_one();
        }
        rx
    }

    fn run(&self) {
        #[cfg(target_os = "linux")]
        {
            // 1 ns, the least the kernel takes: a futex wait then ends within microseconds
            // of its instant instead of up to 50 µs after it. A refusal keeps the default.
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        }
        let mut due = Vec::new();
        let mut p = self.lock();
        loop {
            let now = Instant::now();
            while p.heap.peek().is_some_and(|top| top.at <= now) {
                due.extend(p.heap.pop());
            }
            if !due.is_empty() {
                // Woken outside the lock, so registrations never wait behind the wake-ups.
                drop(p);
                for e in due.drain(..) {
                    // A receiver gone (its request cancelled) needs no wake-up.
                    let _ = e.wake.send(());
                }
                p = self.lock();
                continue;
            }
            p = match p.heap.peek().map(|top| top.at - now) {
                Some(left) => {
                    self.earlier
                        .wait_timeout(p, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.earlier.wait(p).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Never early, whatever the order of registration (latest first: every new instant is
    /// the earliest and must wake the thread), and an instant already past returns at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn wakes_each_wait_at_or_after_its_instant() {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for k in (1..=20u64).rev() {
            let at = start + Duration::from_micros(300 * k);
            tasks.push(tokio::spawn(async move {
                until(at).await;
                assert!(Instant::now() >= at, "wait {k} ended early");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        until(start).await;
    }

    /// A cancelled wait leaves nothing behind that wakes a later one early.
    #[tokio::test]
    async fn a_cancelled_wait_does_not_end_a_later_one() {
        let soon = Instant::now() + Duration::from_millis(1);
        tokio::select! {
            biased;
            _ = until(soon) => {}
            _ = std::future::ready(()) => {}
        }
        let later = Instant::now() + Duration::from_millis(3);
        until(later).await;
        assert!(Instant::now() >= later);
    }
}
