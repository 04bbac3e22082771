//! The attempts the fault proxy answered itself instead of the service behind a `url`
//! target, by reason: a dead or hostile upstream must show as what it did, not hide among
//! the service's own 5xx answers.

use serde::{Deserialize, Serialize};

/// Why the proxy answered an attempt itself (each answer carries the matching
/// `x-stormrig-upstream` mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyAnswer {
    /// The connect to the service failed (refused, unreachable, timed out): never reached it.
    ConnectFailed,
    /// The TLS handshake with the service failed: never reached it.
    TlsHandshake,
    /// No complete answer within the upstream timeout (504).
    Timeout,
    /// The service's answer body was longer than the proxy relays (502).
    BodyTooLarge,
    /// More interim (1xx) answers than the proxy reads before the final one (502).
    TooManyInterim,
    /// Any other answer that broke the protocol the proxy relays (an unparsable request
    /// target, a gRPC answer of more than one message; 502).
    ProtocolError,
}

/// The proxy's own answers by reason; 0 everywhere for the built-in target and the
/// simulator. `connect_failed` and `tls_handshake` never reached the service (they are in
/// `target_unreached`, not in `downstream_arrivals`); the others did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyAnswered {
    pub connect_failed: u64,
    pub tls_handshake: u64,
    pub timeout: u64,
    pub body_too_large: u64,
    pub too_many_interim: u64,
    pub protocol_error: u64,
}

impl ProxyAnswered {
    pub fn count(&mut self, reason: ProxyAnswer) {
        *self.slot(reason) += 1;
    }

    fn slot(&mut self, reason: ProxyAnswer) -> &mut u64 {
        match reason {
            ProxyAnswer::ConnectFailed => &mut self.connect_failed,
            ProxyAnswer::TlsHandshake => &mut self.tls_handshake,
            ProxyAnswer::Timeout => &mut self.timeout,
            ProxyAnswer::BodyTooLarge => &mut self.body_too_large,
            ProxyAnswer::TooManyInterim => &mut self.too_many_interim,
            ProxyAnswer::ProtocolError => &mut self.protocol_error,
        }
    }

    /// Each reason with its count, in a fixed order, under the name `summary.json` uses.
    pub fn by_reason(&self) -> [(&'static str, u64); 6] {
        [
            ("connect_failed", self.connect_failed),
            ("tls_handshake", self.tls_handshake),
            ("timeout", self.timeout),
            ("body_too_large", self.body_too_large),
            ("too_many_interim", self.too_many_interim),
            ("protocol_error", self.protocol_error),
        ]
    }

    pub fn total(&self) -> u64 {
        self.by_reason().iter().map(|(_, n)| n).sum()
    }

    /// The reasons that occurred, as `reason=N` joined by spaces (empty when none): the
    /// form of `summary.csv` and the console warning.
    pub fn described(&self) -> String {
        self.by_reason()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{r}={n}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn merge(&mut self, o: &ProxyAnswered) {
        self.connect_failed += o.connect_failed;
        self.tls_handshake += o.tls_handshake;
        self.timeout += o.timeout;
        self.body_too_large += o.body_too_large;
        self.too_many_interim += o.too_many_interim;
        self.protocol_error += o.protocol_error;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_describe_only_what_happened() {
        let mut a = ProxyAnswered::default();
        a.count(ProxyAnswer::Timeout);
        a.count(ProxyAnswer::Timeout);
        a.count(ProxyAnswer::ConnectFailed);
        let mut b = ProxyAnswered::default();
        b.count(ProxyAnswer::TooManyInterim);
        a.merge(&b);
        assert_eq!(a.total(), 4);
        assert_eq!(
            a.described(),
            "connect_failed=1 timeout=2 too_many_interim=1"
        );
        assert_eq!(ProxyAnswered::default().described(), "");
    }
}
