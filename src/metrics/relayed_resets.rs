//! The resets the fault proxy relayed from the service behind a `url` target: an upstream
//! that reset its connection, or an HTTP/2 stream (RST_STREAM, GOAWAY), has the proxy reset
//! its client the same way, so the client's outcome alone cannot tell them from stormrig's
//! own reset faults. Counted at the proxy, apart from those faults (`resets` of the target).

use serde::{Deserialize, Serialize};

/// Forwarded attempts the service reset instead of answering, relayed to the client as
/// resets; 0 for the built-in target and the simulator. Each also counts in
/// `target_forwarded` (the service received it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayedResets {
    /// Relayed over HTTP/1.1: the proxy closed its client's connection without an answer
    /// (the client's outcome `reset`).
    pub reset: u64,
    /// Relayed over HTTP/2: the proxy reset its client's stream, with the service's own
    /// RST_STREAM or GOAWAY code, INTERNAL_ERROR for a connection the service reset (the
    /// client's outcome `stream-reset`).
    pub stream_reset: u64,
}

impl RelayedResets {
    /// Counts one relayed reset: as an HTTP/2 stream's reset when `stream`, else as a
    /// connection's.
    pub fn count(&mut self, stream: bool) {
        if stream {
            self.stream_reset += 1;
        } else {
            self.reset += 1;
        }
    }

    pub fn total(&self) -> u64 {
        self.reset + self.stream_reset
    }

    pub fn merge(&mut self, o: &RelayedResets) {
        self.reset += o.reset;
        self.stream_reset += o.stream_reset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_and_stream_resets_are_counted_apart_and_merge() {
        let mut a = RelayedResets::default();
        a.count(false);
        a.count(true);
        a.count(true);
        let mut b = RelayedResets::default();
        b.count(false);
        a.merge(&b);
        assert_eq!((a.reset, a.stream_reset, a.total()), (2, 2, 4));
    }
}
