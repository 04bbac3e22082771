//! The headers of a reply that stormrig reads, and only those.
//!
//! A reply's head is parsed whole (its framing read, every header validated), but of its
//! headers the client keeps only the few that anything downstream of the exchange looks
//! at: the retry hints the policy reads, the proxy's word on why an answer is a gateway
//! error, gRPC's status, and what a layer relays upstream. Building a `HeaderMap` of every
//! header (a name allocation or lookup, a hashed insert and a drop each) was about a fifth
//! of the generator's instructions per request, for values nobody read.

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue};

use crate::headers;

/// A reply header stormrig reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyHeader {
    RetryAfter,
    /// The LLM APIs' Retry-After in milliseconds.
    RetryAfterMs,
    /// The server's own word on whether to retry (`true` / `false`).
    ShouldRetry,
    AmzRetryAfter,
    ErrorType,
    GrpcPushbackMs,
    GrpcStatus,
    /// gRPC's words for a failed call's status, which a layer relays with it.
    GrpcMessage,
    /// stormrig's proxy: why an answer is a gateway error.
    Upstream,
    ContentType,
}

impl ReplyHeader {
    const ALL: [ReplyHeader; 10] = [
        ReplyHeader::RetryAfter,
        ReplyHeader::RetryAfterMs,
        ReplyHeader::ShouldRetry,
        ReplyHeader::AmzRetryAfter,
        ReplyHeader::ErrorType,
        ReplyHeader::GrpcPushbackMs,
        ReplyHeader::GrpcStatus,
        ReplyHeader::GrpcMessage,
        ReplyHeader::Upstream,
        ReplyHeader::ContentType,
    ];

    /// The header's name, lowercase.
    pub const fn name(self) -> &'static str {
        match self {
            ReplyHeader::RetryAfter => "retry-after",
            ReplyHeader::RetryAfterMs => headers::RETRY_AFTER_MS,
            ReplyHeader::ShouldRetry => headers::SHOULD_RETRY,
            ReplyHeader::AmzRetryAfter => "x-amz-retry-after",
            ReplyHeader::ErrorType => headers::ERROR_TYPE,
            ReplyHeader::GrpcPushbackMs => headers::GRPC_PUSHBACK_MS,
            ReplyHeader::GrpcStatus => headers::GRPC_STATUS,
            ReplyHeader::GrpcMessage => headers::GRPC_MESSAGE,
            ReplyHeader::Upstream => headers::UPSTREAM,
            ReplyHeader::ContentType => "content-type",
        }
    }

    /// The header `name` (any case) is, if stormrig reads it. The length decides before
    /// any byte is compared: most of a reply's headers are told apart by it alone.
    pub fn of(name: &[u8]) -> Option<ReplyHeader> {
        let is = |h: ReplyHeader| is_name(name, h.name().as_bytes());
        let candidates: &[ReplyHeader] = match name.len() {
            11 => &[ReplyHeader::RetryAfter, ReplyHeader::GrpcStatus],
            12 => &[ReplyHeader::ContentType, ReplyHeader::GrpcMessage],
            14 => &[ReplyHeader::RetryAfterMs, ReplyHeader::ShouldRetry],
            16 => &[ReplyHeader::ErrorType],
            17 => &[ReplyHeader::AmzRetryAfter],
            19 => &[ReplyHeader::Upstream],
            22 => &[ReplyHeader::GrpcPushbackMs],
            _ => &[],
        };
        candidates.iter().copied().find(|h| is(*h))
    }
}

/// True when the header name `name` (as httparse read it: a token) is `known` in any case.
/// `known` is lowercase letters and `-`, every byte with bit 0x20 set, so setting that bit
/// in `name` folds its letters and nothing else that can match (`\r`, 0x0D, which turns
/// into `-`, is no token byte). Eight bytes at a time: the names compared whole are the
/// ones that match, on every reply.
pub(super) fn is_name(name: &[u8], known: &[u8]) -> bool {
    if name.len() != known.len() {
        return false;
    }
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().expect("chunks of 8"));
    let (mut a, mut b) = (name.chunks_exact(8), known.chunks_exact(8));
    for (x, y) in (&mut a).zip(&mut b) {
        if word(x) | 0x2020_2020_2020_2020 != word(y) {
            return false;
        }
    }
    a.remainder()
        .iter()
        .zip(b.remainder())
        .all(|(x, y)| x | 0x20 == *y)
}

/// The values of the reply headers stormrig reads: the first of each, as a `HeaderMap`'s
/// `get` gives it. Values are places in the reply's head (no copy); the head is kept only
/// when one of them is in it.
#[derive(Debug, Clone, Default)]
pub struct ReplyHeaders {
    head: Bytes,
    spans: Spans,
}

/// Where each read header's value lies in a head.
#[derive(Debug, Clone, Copy)]
pub struct Spans([(u32, u32); ReplyHeader::ALL.len()]);

/// The span of a header absent from the head.
const ABSENT: (u32, u32) = (u32::MAX, u32::MAX);

impl Default for Spans {
    fn default() -> Spans {
        Spans([ABSENT; ReplyHeader::ALL.len()])
    }
}

impl Spans {
    /// Notes `head[start..end]` as `header`'s value unless an earlier one is noted.
    pub fn note(&mut self, header: ReplyHeader, start: u32, end: u32) {
        let span = &mut self.0[header as usize];
        if *span == ABSENT {
            *span = (start, end);
        }
    }

    fn any(&self) -> bool {
        self.0.iter().any(|s| *s != ABSENT)
    }
}

impl ReplyHeaders {
    /// The headers `spans` places in `head`.
    pub fn new(head: &Bytes, spans: Spans) -> ReplyHeaders {
        ReplyHeaders {
            // A head with none of them is let go at once.
            head: if spans.any() {
                head.clone()
            } else {
                Bytes::new()
            },
            spans,
        }
    }

    /// The headers of `map` that stormrig reads (a reply hyper read: TLS, HTTP/2).
    pub fn from_map(map: &HeaderMap) -> ReplyHeaders {
        let mut head = Vec::new();
        let mut spans = Spans::default();
        for h in ReplyHeader::ALL {
            if let Some(v) = map.get(h.name()) {
                let start = head.len() as u32;
                head.extend_from_slice(v.as_bytes());
                spans.note(h, start, head.len() as u32);
            }
        }
        ReplyHeaders {
            head: Bytes::from(head),
            spans,
        }
    }

    /// The header's raw value, when present.
    pub fn raw(&self, header: ReplyHeader) -> Option<&[u8]> {
        match self.spans.0[header as usize] {
            ABSENT => None,
            (start, end) => Some(&self.head[start as usize..end as usize]),
        }
    }

    /// The header's value as text, when present and visible ASCII (as `HeaderValue::to_str`
    /// reads it).
    pub fn get(&self, header: ReplyHeader) -> Option<&str> {
        let v = self.raw(header)?;
        if v.iter().all(|&b| b == b'\t' || (32..127).contains(&b)) {
            std::str::from_utf8(v).ok()
        } else {
            None
        }
    }

    /// The header as a `HeaderValue`, for a layer's answer upstream.
    pub fn value(&self, header: ReplyHeader) -> Option<HeaderValue> {
        let (start, end) = match self.spans.0[header as usize] {
            ABSENT => return None,
            span => span,
        };
        HeaderValue::from_maybe_shared(self.head.slice(start as usize..end as usize)).ok()
    }

    /// Every kept header with its name, in [`ReplyHeader`] order (what tests look at).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (hyper::header::HeaderName, HeaderValue)> + '_ {
        ReplyHeader::ALL.into_iter().filter_map(|h| {
            Some((
                hyper::header::HeaderName::from_static(h.name()),
                self.value(h)?,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_header_is_found_by_its_name_in_any_case_and_no_other_is() {
        for h in ReplyHeader::ALL {
            assert_eq!(ReplyHeader::of(h.name().as_bytes()), Some(h));
            let upper = h.name().to_ascii_uppercase();
            assert_eq!(ReplyHeader::of(upper.as_bytes()), Some(h));
        }
        for other in [
            "retry-afteR2",
            "content-length",
            "x-amz-retry-afte",
            "server",
            "",
        ] {
            assert_eq!(ReplyHeader::of(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn names_compare_in_any_case_and_only_letters_fold() {
        let framing = ["content-length", "transfer-encoding", "connection"];
        for known in ReplyHeader::ALL
            .map(ReplyHeader::name)
            .into_iter()
            .chain(framing)
        {
            assert!(known.bytes().all(|b| b & 0x20 != 0), "{known}");
            assert!(is_name(known.as_bytes(), known.as_bytes()));
            assert!(is_name(
                known.to_ascii_uppercase().as_bytes(),
                known.as_bytes()
            ));
            // Every other printable byte in every place is told apart.
            for i in 0..known.len() {
                for c in b'!'..=b'~' {
                    let mut other = known.as_bytes().to_vec();
                    other[i] = c;
                    let same = c.eq_ignore_ascii_case(&known.as_bytes()[i]);
                    assert_eq!(is_name(&other, known.as_bytes()), same, "{known} {i} {c}");
                }
            }
        }
    }

    #[test]
    fn the_first_value_is_kept_and_text_is_read_as_a_header_map_reads_it() {
        let mut map = HeaderMap::new();
        map.append("retry-after", HeaderValue::from_static("2"));
        map.append("retry-after", HeaderValue::from_static("9"));
        map.append(
            "x-amzn-errortype",
            HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        map.append("server", HeaderValue::from_static("nginx"));
        let h = ReplyHeaders::from_map(&map);
        assert_eq!(h.get(ReplyHeader::RetryAfter), Some("2"));
        // Not visible ASCII: no text, as HeaderValue::to_str, but the bytes relay whole.
        assert_eq!(
            h.get(ReplyHeader::ErrorType),
            map["x-amzn-errortype"].to_str().ok()
        );
        assert_eq!(h.raw(ReplyHeader::ErrorType), Some(&b"caf\xe9"[..]));
        assert_eq!(
            h.value(ReplyHeader::ErrorType).as_ref(),
            Some(&map["x-amzn-errortype"])
        );
        assert_eq!(h.get(ReplyHeader::GrpcStatus), None);
        let names: Vec<_> = h.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(names, ["retry-after", "x-amzn-errortype"]);
    }
}
