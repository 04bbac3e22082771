//! The target's `Idempotency-Key` deduplication in virtual time, with the live target's
//! rules (`crate::server`'s dedup): the first write with a key executes and its status is
//! remembered for `retention` after it completes; a replay of a completed key gets that
//! status without executing; a duplicate while the first is still executing gets 409; an
//! execution shed before it ran forgets its key, so a retry may execute. The request body is
//! the scenario's, the same for every attempt, so a key is never reused with another body
//! (the live target's 422) here.

use std::collections::HashMap;

/// A key: the hop whose client sent the attempt, and that client's request id (live keys
/// are `<client name>-<request id>`).
pub(super) type Key = (u8, u64);

enum Entry {
    Running,
    Done { status: u16, at: u64 },
}

/// What to do with a keyed write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Begin {
    /// First use (or the old result expired): execute, then [`Store::complete`].
    Execute,
    /// Completed before: answer this status without executing.
    Replay(u16),
    /// Still executing: 409.
    Conflict,
}

pub(super) struct Store {
    retention: u64,
    map: HashMap<Key, Entry>,
}

impl Store {
    /// `retention` in virtual ns.
    pub(super) fn new(retention: u64) -> Store {
        Store {
            retention,
            map: HashMap::new(),
        }
    }

    /// Looks `key` up at time `t`; on [`Begin::Execute`] the key is marked executing.
    pub(super) fn begin(&mut self, key: Key, t: u64) -> Begin {
        match self.map.get(&key) {
            Some(Entry::Running) => Begin::Conflict,
            Some(Entry::Done { status, at }) if t.saturating_sub(*at) < self.retention => {
                Begin::Replay(*status)
            }
            _ => {
                self.map.insert(key, Entry::Running);
                Begin::Execute
            }
        }
    }

    /// The execution of `key` finished at `t` with `status`: remembered for replays.
    pub(super) fn complete(&mut self, key: Key, status: u16, t: u64) {
        self.map.insert(key, Entry::Done { status, at: t });
    }

    /// The execution of `key` was shed before it ran: the key is forgotten.
    pub(super) fn forget(&mut self, key: Key) {
        self.map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_conflict_replay_expiry_and_forget() {
        let mut s = Store::new(40);
        let k = (0, 7);
        assert_eq!(s.begin(k, 0), Begin::Execute);
        assert_eq!(s.begin(k, 5), Begin::Conflict);
        s.complete(k, 200, 10);
        assert_eq!(s.begin(k, 49), Begin::Replay(200));
        assert_eq!(
            s.begin(k, 50),
            Begin::Execute,
            "expired 40 ns after completion"
        );
        s.forget(k);
        assert_eq!(s.begin(k, 51), Begin::Execute);
        assert_eq!(s.begin((1, 7), 51), Begin::Execute, "another hop's key");
    }
}
