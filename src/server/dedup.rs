//! The live target's `Idempotency-Key` store: the rules of [`crate::idempotency`] behind a
//! lock, timed from the store's creation, and a [`Ticket`] that forgets its key when a
//! request is dropped before its execution completed.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper::header::HeaderValue;
use tokio::time::Instant;

pub(crate) use crate::idempotency::Begin;
use crate::idempotency::Store;

pub(crate) struct Dedup {
    epoch: Instant,
    store: Mutex<Store<HeaderValue>>,
}

impl Dedup {
    pub(crate) fn new(retention: Duration) -> Self {
        Dedup {
            epoch: Instant::now(),
            store: Mutex::new(Store::new(nanos(retention))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store<HeaderValue>> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> u64 {
        nanos(self.epoch.elapsed())
    }

    /// Looks `key` up for a request whose body hashes to `body`; on [`Begin::Execute`] the
    /// key is now marked as executing.
    pub(crate) fn begin(&self, key: &HeaderValue, body: u64) -> Begin {
        let now = self.now();
        self.lock().begin(key.clone(), body, now)
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The right to finish a keyed execution. Dropped without [`Ticket::complete`] (the request
/// was shed, or cancelled before it executed), the key is forgotten so a retry may execute.
pub(crate) struct Ticket {
    dedup: Arc<Dedup>,
    key: HeaderValue,
    body: u64,
    done: bool,
}

impl Ticket {
    pub(crate) fn new(dedup: Arc<Dedup>, key: HeaderValue, body: u64) -> Self {
        Ticket {
            dedup,
            key,
            body,
            done: false,
        }
    }

    /// The execution finished with `status`: remember it for replays.
    pub(crate) fn complete(mut self, status: u16) {
        self.done = true;
        let now = self.dedup.now();
        self.dedup
            .lock()
            .complete(self.key.clone(), self.body, status, now);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.done {
            self.dedup.lock().forget(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ticket's part: completing remembers, dropping forgets (the rules themselves are
    /// tested with the store).
    #[test]
    fn a_ticket_completes_or_forgets_its_key() {
        let d = Arc::new(Dedup::new(Duration::from_secs(3600)));
        let k = HeaderValue::from_static("k1");
        assert_eq!(d.begin(&k, 1), Begin::Execute);
        Ticket::new(d.clone(), k.clone(), 1).complete(200);
        assert_eq!(d.begin(&k, 1), Begin::Replay(200));
        let k2 = HeaderValue::from_static("k2");
        assert_eq!(d.begin(&k2, 1), Begin::Execute);
        drop(Ticket::new(d.clone(), k2.clone(), 1));
        assert_eq!(d.begin(&k2, 1), Begin::Execute);
    }
}
