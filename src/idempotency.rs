//! The target's `Idempotency-Key` rules, after the IETF httpapi idempotency-key-header
//! draft, in one store that both the live target (`server::dedup`, behind a lock, timed by
//! the clock) and the simulator's modeled target (in virtual time) keep, so the two can never
//! apply different rules:
//!
//! * the first request with a key executes, and its status is remembered for `retention`
//!   after it completes;
//! * a replay of a completed key gets that status without executing;
//! * a duplicate while the first still executes gets 409 Conflict;
//! * the same key with another request body gets 422 Unprocessable Content;
//! * an execution that never completed (shed, or cancelled before it ran) forgets its key,
//!   so a retry may execute.
//!
//! Only the status is remembered (the built-in target's bodies carry nothing). Expired keys
//! are replaced when their key is used again; the map is not swept otherwise, which is fine
//! for the length of a run.

use std::collections::HashMap;
use std::hash::Hash;

enum Entry {
    Running { body: u64 },
    Done { body: u64, status: u16, at: u64 },
}

/// What to do with a request that carries a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// First use (or the old result expired): execute, then [`Store::complete`].
    Execute,
    /// Completed before: answer this status without executing.
    Replay(u16),
    /// Still executing: 409.
    Conflict,
    /// Same key, different body: 422.
    Mismatch,
}

/// The keys seen, with times in nanoseconds on the caller's clock.
pub struct Store<K> {
    retention_ns: u64,
    map: HashMap<K, Entry>,
}

impl<K: Hash + Eq> Store<K> {
    /// Completed keys are remembered for `retention_ns`.
    pub fn new(retention_ns: u64) -> Store<K> {
        Store {
            retention_ns,
            map: HashMap::new(),
        }
    }

    /// Looks `key` up at `now` for a request whose body hashes to `body`; on
    /// [`Begin::Execute`] the key is marked executing.
    pub fn begin(&mut self, key: K, body: u64, now: u64) -> Begin {
        let answer = match self.map.get(&key) {
            Some(Entry::Running { body: b }) if *b != body => Begin::Mismatch,
            Some(Entry::Running { .. }) => Begin::Conflict,
            Some(Entry::Done {
                body: b,
                status,
                at,
            }) if now.saturating_sub(*at) < self.retention_ns => {
                if *b != body {
                    Begin::Mismatch
                } else {
                    Begin::Replay(*status)
                }
            }
            _ => Begin::Execute,
        };
        if answer == Begin::Execute {
            self.map.insert(key, Entry::Running { body });
        }
        answer
    }

    /// The execution of `key` finished at `now` with `status`: remembered for replays.
    pub fn complete(&mut self, key: K, body: u64, status: u16, now: u64) {
        self.map.insert(
            key,
            Entry::Done {
                body,
                status,
                at: now,
            },
        );
    }

    /// The execution of `key` never completed: the key is forgotten.
    pub fn forget(&mut self, key: &K) {
        self.map.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_conflict_replay_mismatch_expiry_and_forget() {
        let mut s = Store::new(40);
        let k = (0u8, 7u64);
        assert_eq!(s.begin(k, 1, 0), Begin::Execute);
        assert_eq!(s.begin(k, 1, 5), Begin::Conflict);
        assert_eq!(s.begin(k, 2, 5), Begin::Mismatch);
        s.complete(k, 1, 200, 10);
        assert_eq!(s.begin(k, 1, 49), Begin::Replay(200));
        assert_eq!(s.begin(k, 2, 49), Begin::Mismatch);
        assert_eq!(
            s.begin(k, 2, 50),
            Begin::Execute,
            "expired 40 ns after completion"
        );
        s.forget(&k);
        assert_eq!(s.begin(k, 3, 51), Begin::Execute);
        assert_eq!(s.begin((1, 7), 3, 51), Begin::Execute, "another key");
    }
}
