//! The header names stormrig uses between its load generator, layers, targets and fault
//! proxy: one home for both sides of each header, so the client and the server can never
//! disagree on a name.

use hyper::header::{HeaderName, HeaderValue};

/// The most interim (1xx) answers read before the final one, by the live client and by the
/// fault proxy's upstream leg alike; one more is a protocol error. A real server sends one
/// `100 Continue` or a few `103 Early Hints`; a stream of them without end is a broken or
/// hostile server, and each one read is work with no end in sight.
pub const MAX_INFORMATIONAL: usize = 8;

/// Logical request id (u64), the same on every attempt of one upstream request.
pub const REQUEST: &str = "x-stormrig-request";
/// Attempt number (u32, 1-based).
pub const ATTEMPT: &str = "x-stormrig-attempt";
/// The name of the config whose client sent the attempt. Request ids count per config
/// (every config meets the same faults for the same id), so (config, request, attempt)
/// names one attempt of a run.
pub const CONFIG: &str = "x-stormrig-config";
/// The run's id (`run.id` in `summary.json`), the same on every attempt of one run.
pub const RUN: &str = "x-stormrig-run";
/// Remaining deadline in milliseconds, when a layer propagates it.
pub const DEADLINE_MS: &str = "x-stormrig-deadline-ms";
/// IETF httpapi idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// AWS-style error type sent with status faults that set `error_code`.
pub const ERROR_TYPE: &str = "x-amzn-errortype";
/// Token counts (u64) of an LLM-style request (absent: the provider's defaults).
pub const PROMPT_TOKENS: &str = "x-stormrig-prompt-tokens";
pub const COMPLETION_TOKENS: &str = "x-stormrig-completion-tokens";
/// Amount (u64) a write request debits per execution; 1 when absent or unreadable.
pub const AMOUNT: &str = "x-stormrig-amount";
/// Set by the fault proxy on a gateway answer whose request never reached the real
/// server, so the client can treat it as a failed connect (safe to retry, even a POST).
pub const UPSTREAM: &str = "x-stormrig-upstream";
/// The value of [`UPSTREAM`] for "could not connect to the real server".
pub const UPSTREAM_CONNECT_FAILED: &str = "connect-failed";
/// The value of [`UPSTREAM`] for "the TLS handshake with the real server failed".
pub const UPSTREAM_TLS_HANDSHAKE: &str = "tls-handshake";
/// The value of [`UPSTREAM`] for "the real server's body was longer than the proxy relays".
pub const UPSTREAM_BODY_TOO_LARGE: &str = "body-too-large";
/// The value of [`UPSTREAM`] for "the real server broke HTTP in a way the proxy bounds"
/// (more interim 1xx answers than the proxy reads before the final one).
pub const UPSTREAM_PROTOCOL_ERROR: &str = "protocol-error";
/// The value of [`UPSTREAM`] for "the real server sent no complete response within the
/// proxy's upstream timeout" (on a 504).
pub const UPSTREAM_TIMEOUT: &str = "timeout";
/// Retry-After in milliseconds, which LLM APIs send beside `Retry-After` and their SDKs
/// read first.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";
/// The server's own word on whether a failed request is worth retrying (`true` /
/// `false`), which the Stainless-generated LLM SDKs obey over the status.
pub const SHOULD_RETRY: &str = "x-should-retry";
/// gRPC's status of a call: in the trailers, or in the headers of a trailers-only answer.
pub const GRPC_STATUS: &str = "grpc-status";
/// gRPC's human-readable reason beside [`GRPC_STATUS`].
pub const GRPC_MESSAGE: &str = "grpc-message";
/// gRPC's server pushback (gRFC A6): milliseconds before a retry, negative = do not retry.
pub const GRPC_PUSHBACK_MS: &str = "grpc-retry-pushback-ms";
/// A gRPC call's deadline as what remains of it ([`grpc_timeout`], [`parse_grpc_timeout`]).
pub const GRPC_TIMEOUT: &str = "grpc-timeout";
/// `content-type` of a gRPC call and its answer (protobuf is the default subtype; stormrig
/// does not look inside the message).
pub const GRPC_CONTENT_TYPE: &str = "application/grpc";

/// The one reading of an `x-stormrig-*` number (request id, attempt, amount, deadline):
/// ASCII digits only, at most 20 of them, no sign, no overflow; spaces around it are
/// ignored. Anything else is unreadable (`None`), and every reader falls back the same way,
/// so the live target, the layers and the simulator take the same value from the same text
/// (`+5` is unreadable everywhere, not 5 in one engine and 1 in the other).
pub fn parse_u64(value: &[u8]) -> Option<u64> {
    let b = value.trim_ascii();
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    b.iter().try_fold(0u64, |n, &c| {
        if c.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
        } else {
            None
        }
    })
}

/// `grpc-timeout` for `d`: at most 8 digits and a unit, the finest unit that fits, rounded
/// up so the server never sees a deadline earlier than the sender's (gRPC's PROTOCOL-HTTP2,
/// "Timeout → "grpc-timeout" TimeoutValue TimeoutUnit", TimeoutValue "at most 8 digits").
/// The client writes it from a call's deadline, the proxy again for what remains of it.
pub fn grpc_timeout(d: std::time::Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    let units: [(u128, &str); 6] = [
        (1, "n"),
        (1_000, "u"),
        (1_000_000, "m"),
        (1_000_000_000, "S"),
        (60_000_000_000, "M"),
        (3_600_000_000_000, "H"),
    ];
    for (per, unit) in units {
        let n = ns.div_ceil(per);
        if n <= MAX {
            return HeaderValue::from_str(&format!("{n}{unit}")).expect("digits and a letter");
        }
    }
    HeaderValue::from_static("99999999H")
}

/// The duration a `grpc-timeout` value stands for: 1 to 8 ASCII digits and one of the units
/// `H M S m u n`; anything else is unreadable (`None`).
pub fn parse_grpc_timeout(value: &[u8]) -> Option<std::time::Duration> {
    use std::time::Duration;
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = parse_u64(digits)?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

// Parsed at compile time: `HeaderName::from_static` at run time validates the name on
// every call, and these are set or read on every request.
pub(crate) const H_REQUEST: HeaderName = HeaderName::from_static(REQUEST);
pub(crate) const H_ATTEMPT: HeaderName = HeaderName::from_static(ATTEMPT);
pub(crate) const H_CONFIG: HeaderName = HeaderName::from_static(CONFIG);
pub(crate) const H_RUN: HeaderName = HeaderName::from_static(RUN);
pub(crate) const H_DEADLINE_MS: HeaderName = HeaderName::from_static(DEADLINE_MS);
pub(crate) const H_IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static(IDEMPOTENCY_KEY);
pub(crate) const H_ERROR_TYPE: HeaderName = HeaderName::from_static(ERROR_TYPE);
pub(crate) const H_AMOUNT: HeaderName = HeaderName::from_static(AMOUNT);
pub(crate) const H_GRPC_STATUS: HeaderName = HeaderName::from_static(GRPC_STATUS);
pub(crate) const H_GRPC_MESSAGE: HeaderName = HeaderName::from_static(GRPC_MESSAGE);
pub(crate) const H_RETRY_AFTER_MS: HeaderName = HeaderName::from_static(RETRY_AFTER_MS);
pub(crate) const H_SHOULD_RETRY: HeaderName = HeaderName::from_static(SHOULD_RETRY);
pub(crate) const H_GRPC_PUSHBACK_MS: HeaderName = HeaderName::from_static(GRPC_PUSHBACK_MS);

#[cfg(test)]
mod tests {
    use super::{grpc_timeout, parse_grpc_timeout, parse_u64};
    use std::time::Duration;

    #[test]
    fn grpc_timeouts_read_back_what_was_written_rounded_up() {
        for d in [
            Duration::from_nanos(1),
            Duration::from_millis(1500),
            Duration::from_nanos(100_000_001),
            Duration::from_secs(200_000),
        ] {
            let back = parse_grpc_timeout(grpc_timeout(d).as_bytes()).unwrap();
            assert!(
                back >= d && back - d < d / 1000 + Duration::from_micros(1),
                "{d:?}"
            );
        }
        assert_eq!(parse_grpc_timeout(b"2M"), Some(Duration::from_secs(120)));
        for bad in [&b"5"[..], b"m", b"123456789m", b"5x", b"-5m", b"5 m"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn one_rule_for_every_stormrig_number() {
        assert_eq!(parse_u64(b"5"), Some(5));
        assert_eq!(parse_u64(b" 42 "), Some(42));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b"+5"[..],
            b"-1",
            b"",
            b" ",
            b"5x",
            b"0x10",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_u64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
