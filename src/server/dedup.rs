//! Server-side deduplication by `Idempotency-Key`, after the IETF httpapi
//! idempotency-key-header draft: the first request with a key executes and its result is
//! remembered for `retention`; a replay of a completed key gets the stored status without a
//! second execution; a duplicate while the first is still executing gets 409 Conflict; the
//! same key with a different request body gets 422 Unprocessable Content.
//!
//! Only the status is remembered (the built-in target's bodies carry nothing). Expired keys
//! are replaced when their key is used again; the map is not swept otherwise, which is fine
//! for the length of a run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::header::HeaderValue;
use tokio::time::Instant;

enum Entry {
    Running { body: u64 },
    Done { body: u64, status: u16, at: Instant },
}

/// What to do with a request that carries a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Begin {
    /// First use (or the old result expired): execute, then [`Ticket::complete`].
    Execute,
    /// Completed before: answer this status without executing.
    Replay(u16),
    /// Still executing: 409.
    Conflict,
    /// Same key, different body: 422.
    Mismatch,
}

pub(crate) struct Dedup {
    retention: Duration,
    map: Mutex<HashMap<HeaderValue, Entry>>,
}

impl Dedup {
    pub(crate) fn new(retention: Duration) -> Self {
        Dedup {
            retention,
            map: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HeaderValue, Entry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Looks `key` up for a request whose body hashes to `body`; on [`Begin::Execute`] the
    /// key is now marked as executing.
    pub(crate) fn begin(&self, key: &HeaderValue, body: u64) -> Begin {
        let now = Instant::now();
        let mut map = self.lock();
        match map.get(key) {
            Some(Entry::Running { body: b }) => {
                if *b != body {
                    Begin::Mismatch
                } else {
                    Begin::Conflict
                }
            }
            Some(Entry::Done {
                body: b,
                status,
                at,
            }) if now.saturating_duration_since(*at) < self.retention => {
                if *b != body {
                    Begin::Mismatch
                } else {
                    Begin::Replay(*status)
                }
            }
            _ => {
                map.insert(key.clone(), Entry::Running { body });
                Begin::Execute
            }
        }
    }
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
        let entry = Entry::Done {
            body: self.body,
            status,
            at: Instant::now(),
        };
        self.dedup.lock().insert(self.key.clone(), entry);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.done {
            self.dedup.lock().remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn execute_conflict_replay_mismatch_expiry() {
        let d = Arc::new(Dedup::new(Duration::from_millis(40)));
        let k = HeaderValue::from_static("k1");
        assert_eq!(d.begin(&k, 1), Begin::Execute);
        let t = Ticket::new(d.clone(), k.clone(), 1);
        assert_eq!(d.begin(&k, 1), Begin::Conflict);
        assert_eq!(d.begin(&k, 2), Begin::Mismatch);
        t.complete(200);
        assert_eq!(d.begin(&k, 1), Begin::Replay(200));
        assert_eq!(d.begin(&k, 2), Begin::Mismatch);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(d.begin(&k, 2), Begin::Execute);
        // An execution that never completed forgets its key.
        drop(Ticket::new(d.clone(), k.clone(), 2));
        assert_eq!(d.begin(&k, 3), Begin::Execute);
    }
}
