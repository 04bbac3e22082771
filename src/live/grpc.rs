//! The client side of a gRPC unary call: the length-prefixed message, the headers a gRPC
//! server expects, `grpc-timeout` from the deadline, and the reply read back into the policy
//! core's vocabulary (`grpc-status` from the trailers, or from the headers of a
//! trailers-only answer; `grpc-retry-pushback-ms`).

use bytes::{BufMut, Bytes, BytesMut};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, TE};
use std::time::Duration;

use super::http::{Reply, ReplyHeader};
use crate::headers::GRPC_CONTENT_TYPE;
use crate::policy::{AttemptOutcome, GrpcStatus, Response};

/// The message as one gRPC length-prefixed frame: a compressed flag (0), the length as a
/// big-endian u32, the bytes.
pub fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + message.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(message.len()).expect("messages are validated to 64 KiB"));
    b.put_slice(message);
    b.freeze()
}

/// The headers every call carries besides the template's own.
pub fn call_headers(headers: &mut HeaderMap) {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(GRPC_CONTENT_TYPE));
    headers.insert(TE, HeaderValue::from_static("trailers"));
}

/// `grpc-timeout` for `d` (see [`crate::headers::grpc_timeout`]).
pub fn timeout_header(d: Duration) -> HeaderValue {
    crate::headers::grpc_timeout(d)
}

/// The policy's view of the reply to a gRPC call. A reply with `grpc-status` is what that
/// says; one without it is read by gRPC's HTTP-to-gRPC mapping (503 → UNAVAILABLE), and a
/// 200 without a status is INTERNAL, as gRPC's clients read a stream that ended without one.
/// The fault proxy's answer for a real server it could not reach (marked
/// `x-stormrig-upstream`, UNAVAILABLE) is the transport failure it stands for, as for
/// plain HTTP: a client talking to the server itself would have failed to connect.
pub fn to_outcome(reply: &Reply) -> AttemptOutcome<'_> {
    use crate::headers::{UPSTREAM_CONNECT_FAILED, UPSTREAM_TLS_HANDSHAKE};
    use crate::policy::TransportError;
    match reply {
        Reply::Failed(e) => AttemptOutcome::Transport(*e),
        Reply::Response { .. }
            if reply.header(ReplyHeader::Upstream) == Some(UPSTREAM_CONNECT_FAILED) =>
        {
            AttemptOutcome::Transport(TransportError::ConnectRefused)
        }
        Reply::Response { .. }
            if reply.header(ReplyHeader::Upstream) == Some(UPSTREAM_TLS_HANDSHAKE) =>
        {
            AttemptOutcome::Transport(TransportError::TlsHandshake)
        }
        Reply::Response { status, .. } => {
            let grpc_status = match reply.header(ReplyHeader::GrpcStatus) {
                Some(v) => GrpcStatus::from_header(v),
                None => GrpcStatus::from_http(*status).unwrap_or(GrpcStatus::Internal),
            };
            AttemptOutcome::Response(Response {
                status: *status,
                grpc_pushback_ms: reply.header(ReplyHeader::GrpcPushbackMs),
                grpc_status: Some(grpc_status),
                ..Response::default()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_length_prefixed() {
        assert_eq!(&frame(b"")[..], &[0, 0, 0, 0, 0]);
        assert_eq!(&frame(b"hi")[..], &[0, 0, 0, 0, 2, b'h', b'i']);
    }

    #[test]
    fn timeouts_take_the_finest_unit_that_fits_and_round_up() {
        let t = |d| timeout_header(d).to_str().unwrap().to_string();
        assert_eq!(t(Duration::from_millis(1500)), "1500000u");
        assert_eq!(t(Duration::from_nanos(99_999_999)), "99999999n");
        assert_eq!(t(Duration::from_secs(300)), "300000m");
        assert_eq!(t(Duration::from_nanos(100_000_001)), "100001u");
        assert_eq!(t(Duration::from_secs(200_000)), "200000S");
    }

    fn reply(status: u16, headers: &[(&'static str, &'static str)]) -> Reply {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(*k, HeaderValue::from_static(v));
        }
        Reply::Response {
            status,
            headers: crate::live::http::ReplyHeaders::from_map(&h),
            body: Bytes::new(),
        }
    }

    #[test]
    fn replies_are_read_by_their_grpc_status() {
        let g = |r: &Reply| match to_outcome(r) {
            AttemptOutcome::Response(r) => (r.grpc_status, r.grpc_pushback_ms.map(String::from)),
            AttemptOutcome::Transport(t) => panic!("{t:?}"),
        };
        assert_eq!(
            g(&reply(
                200,
                &[("grpc-status", "14"), ("grpc-retry-pushback-ms", "250")]
            )),
            (Some(GrpcStatus::Unavailable), Some("250".into()))
        );
        assert_eq!(
            g(&reply(200, &[("grpc-status", "0")])).0,
            Some(GrpcStatus::Ok)
        );
        assert_eq!(g(&reply(503, &[])).0, Some(GrpcStatus::Unavailable));
        assert_eq!(g(&reply(200, &[])).0, Some(GrpcStatus::Internal));
        let unreached = reply(
            200,
            &[
                ("grpc-status", "14"),
                ("x-stormrig-upstream", "connect-failed"),
            ],
        );
        assert!(matches!(
            to_outcome(&unreached),
            AttemptOutcome::Transport(crate::policy::TransportError::ConnectRefused)
        ));
    }
}
