//! Which of the load generator's attempts the in-process target (or proxy) read, settled per
//! attempt by whichever side gets there first, so that every attempt is either an arrival
//! the target counted or one it never read, never both and never neither.
//!
//! Why: the kernel completes a TCP handshake and queues the request bytes before the server
//! process accepts the connection. When the process cannot accept it (out of file
//! descriptors under a low `ulimit -n`, which the generator and the in-process target
//! share) or does not get to read it before the client gives up (a machine short of CPU),
//! the client sees a timeout that looks like the target's doing. With a claim per attempt,
//! the client knows at its give-up that the target never read the attempt and labels it
//! `not-accepted`; the target, should it read the attempt later, finds the client gone and
//! neither counts nor serves it (its caller has already counted it as never read).
//!
//! Memory: one small entry per attempt in flight, plus one per attempt the client gave up
//! on before the target read it, until the target reads it or the run ends.

use std::collections::HashMap;
use std::sync::Mutex;

/// Shards of the table: attempts of neighbouring requests take different locks.
const SHARDS: usize = 32;

/// Where one attempt stands between the two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stand {
    /// The client sent it; the target has not read it yet.
    Sent,
    /// The target read it (and counted it as an arrival).
    Read,
    /// The client gave up on it before the target read it.
    GivenUp,
}

/// What the client learns when its attempt ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The target read the attempt: it is one of its arrivals.
    Read,
    /// The target never read it, and now never will count it.
    NeverRead,
}

/// One shard: each attempt's stand, keyed by (request id, attempt number).
type Shard = HashMap<(u64, u32), Stand>;

/// The claims of one target's attempts.
#[derive(Debug)]
pub struct Claims {
    shards: Box<[Mutex<Shard>]>,
}

impl Default for Claims {
    fn default() -> Self {
        Claims {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl Claims {
    fn shard(&self, request: u64) -> std::sync::MutexGuard<'_, Shard> {
        // A panic while holding a shard would already have failed the run; keep counting.
        self.shards[(request % SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The client: attempt `attempt` of request `request` is about to leave.
    pub fn sent(&self, request: u64, attempt: u32) {
        self.shard(request).insert((request, attempt), Stand::Sent);
    }

    /// The target: it has just read this attempt's request head. True: count and serve it.
    /// False: its client gave up on it first (and counted it as never read); the target
    /// neither counts nor answers it. An attempt no client announced (external traffic) is
    /// always read.
    pub fn read(&self, request: u64, attempt: u32) -> bool {
        let mut shard = self.shard(request);
        match shard.get_mut(&(request, attempt)) {
            Some(s @ Stand::Sent) => {
                *s = Stand::Read;
                true
            }
            Some(Stand::GivenUp) => {
                shard.remove(&(request, attempt));
                false
            }
            Some(Stand::Read) | None => true,
        }
    }

    /// The client: the attempt ended (answered, failed, or dropped at the run's end).
    /// `may_arrive_later`: whether the request's bytes can still reach the target (false
    /// when no connection was ever made for it: the client's own socket failed).
    pub fn settle(&self, request: u64, attempt: u32, may_arrive_later: bool) -> Settled {
        let mut shard = self.shard(request);
        match shard.remove(&(request, attempt)) {
            Some(Stand::Sent) => {
                if may_arrive_later {
                    shard.insert((request, attempt), Stand::GivenUp);
                }
                Settled::NeverRead
            }
            // Read, or never announced (nothing to learn): as the target counted it.
            Some(Stand::Read) | Some(Stand::GivenUp) | None => Settled::Read,
        }
    }

    /// Entries held now (attempts in flight and those given up unread): for tests.
    pub fn held(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_attempt_is_read_on_both_sides() {
        let c = Claims::default();
        c.sent(7, 1);
        assert!(c.read(7, 1));
        assert_eq!(c.settle(7, 1, true), Settled::Read);
        assert_eq!(c.held(), 0);
    }

    #[test]
    fn an_attempt_given_up_unread_is_never_counted_by_the_target() {
        let c = Claims::default();
        c.sent(7, 2);
        assert_eq!(c.settle(7, 2, true), Settled::NeverRead);
        // The target reads it late: refused, and the entry is gone.
        assert!(!c.read(7, 2));
        assert_eq!(c.held(), 0);
        // Another attempt of the same request is its own claim.
        c.sent(7, 3);
        assert!(c.read(7, 3));
        assert_eq!(c.settle(7, 3, true), Settled::Read);
    }

    #[test]
    fn an_attempt_that_never_had_a_connection_leaves_nothing_behind() {
        let c = Claims::default();
        c.sent(1, 1);
        assert_eq!(c.settle(1, 1, false), Settled::NeverRead);
        assert_eq!(c.held(), 0);
    }

    #[test]
    fn traffic_no_client_announced_is_always_read() {
        let c = Claims::default();
        assert!(c.read(1 << 63, 1));
        assert_eq!(c.held(), 0);
    }

    #[test]
    fn exactly_one_side_wins_a_race() {
        use std::sync::Arc;
        let c = Arc::new(Claims::default());
        let n = 20_000u64;
        for r in 0..n {
            c.sent(r, 1);
        }
        let target = {
            let c = Arc::clone(&c);
            std::thread::spawn(move || (0..n).filter(|r| c.read(*r, 1)).count() as u64)
        };
        let never: u64 = (0..n)
            .filter(|r| c.settle(*r, 1, true) == Settled::NeverRead)
            .count() as u64;
        let read = target.join().unwrap();
        // Every attempt is an arrival or never read, exactly once.
        assert_eq!(read + never, n);
        assert_eq!(
            c.held(),
            0,
            "every given-up claim was read back by the target"
        );
    }
}
