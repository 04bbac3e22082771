//! A layer relaying gRPC calls: what it reads of an incoming call, and the answer it gives
//! back in gRPC's form (HTTP 200 whatever happened, the outcome in `grpc-status`).
//!
//! Inbound, the call's `grpc-timeout` is the deadline the layer inherits (its own client
//! then sends what remains of it with each attempt, shortened by the time spent: gRPC's
//! PROTOCOL-HTTP2, "Timeout"). Outbound, the next hop's answer goes back as it came: a
//! served call with its message and `grpc-status: 0` in the trailers, a failed one
//! trailers-only with its `grpc-status`, `grpc-message` and `grpc-retry-pushback-ms`. What
//! the layer answers itself (a transport failure at the next hop, no time left, its
//! concurrency limit) takes the gRPC status of the HTTP status it would answer a plain
//! request with, by gRPC's HTTP mapping (502, 503, 504 → UNAVAILABLE), as the simulator's
//! layers relay it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use super::http::{ReplyHeader, ReplyHeaders};
use crate::headers::{self, GRPC_CONTENT_TYPE};
use crate::policy::GrpcStatus;

/// What a layer writes back: a plain body, or a gRPC message and its trailers.
pub enum LayerBody {
    Whole(Option<Bytes>),
    Trailed {
        data: Option<Bytes>,
        trailers: Option<HeaderMap>,
    },
}

impl Body for LayerBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let frame = match self.get_mut() {
            LayerBody::Whole(data) => data.take().map(Frame::data),
            LayerBody::Trailed { data, trailers } => match data.take() {
                Some(d) => Some(Frame::data(d)),
                None => trailers.take().map(Frame::trailers),
            },
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            LayerBody::Whole(data) => data.is_none(),
            LayerBody::Trailed { data, trailers } => data.is_none() && trailers.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            LayerBody::Whole(Some(d)) => SizeHint::with_exact(d.len() as u64),
            LayerBody::Whole(None) => SizeHint::with_exact(0),
            LayerBody::Trailed { .. } => SizeHint::default(),
        }
    }
}

/// The deadline an incoming call carries in `grpc-timeout`, if it carries a readable one.
pub fn inherited(h: &HeaderMap) -> Option<Duration> {
    headers::parse_grpc_timeout(h.get(headers::GRPC_TIMEOUT)?.as_bytes())
}

/// The next hop's answer to a call, relayed as it came (see the module docs). An answer
/// without `grpc-status` is read as a gRPC client reads it: HTTP 200 is INTERNAL (the
/// stream ended without a status), another status by gRPC's HTTP mapping.
pub fn relayed(code: u16, h: &ReplyHeaders, body: Bytes) -> Response<LayerBody> {
    let status = match h.get(ReplyHeader::GrpcStatus) {
        Some(v) => GrpcStatus::from_header(v),
        None => GrpcStatus::from_http(code).unwrap_or(GrpcStatus::Internal),
    };
    let content = h
        .value(ReplyHeader::ContentType)
        .unwrap_or(HeaderValue::from_static(GRPC_CONTENT_TYPE));
    let mut status_headers = HeaderMap::new();
    status_headers.insert(
        headers::H_GRPC_STATUS,
        HeaderValue::from(u16::from(status.code())),
    );
    for header in [ReplyHeader::GrpcMessage, ReplyHeader::GrpcPushbackMs] {
        if let Some(v) = h.value(header) {
            status_headers.insert(HeaderName::from_static(header.name()), v);
        }
    }
    let mut r = if status == GrpcStatus::Ok {
        Response::new(LayerBody::Trailed {
            data: (!body.is_empty()).then_some(body),
            trailers: Some(status_headers),
        })
    } else {
        let mut r = Response::new(LayerBody::Trailed {
            data: None,
            trailers: None,
        });
        r.headers_mut().extend(status_headers);
        r
    };
    r.headers_mut().insert(CONTENT_TYPE, content);
    r
}

/// The layer's own failure answer to a call, trailers-only: `http` is the status it gives a
/// plain request in the same case, mapped as gRPC maps it; `why` goes in `grpc-message`.
pub fn failed(http: StatusCode, why: &'static str) -> Response<LayerBody> {
    let status = GrpcStatus::from_http(http.as_u16()).unwrap_or(GrpcStatus::Unknown);
    let mut r = Response::new(LayerBody::Trailed {
        data: None,
        trailers: None,
    });
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(GRPC_CONTENT_TYPE));
    h.insert(
        headers::H_GRPC_STATUS,
        HeaderValue::from(u16::from(status.code())),
    );
    h.insert(
        headers::H_GRPC_MESSAGE,
        HeaderValue::from_static(why.trim_end()),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn frames(r: Response<LayerBody>) -> (HeaderMap, Bytes, Option<HeaderMap>) {
        let (parts, body) = r.into_parts();
        let collected = body.collect().await.unwrap();
        let trailers = collected.trailers().cloned();
        (parts.headers, collected.to_bytes(), trailers)
    }

    fn reply(headers: &[(&'static str, &'static str)]) -> ReplyHeaders {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(*k, HeaderValue::from_static(v));
        }
        ReplyHeaders::from_map(&h)
    }

    #[tokio::test]
    async fn a_served_call_goes_back_with_its_message_and_ok_trailers() {
        let h = reply(&[
            ("grpc-status", "0"),
            ("content-type", "application/grpc+proto"),
        ]);
        let (headers, body, trailers) =
            frames(relayed(200, &h, Bytes::from_static(b"\0\0\0\0\x01z"))).await;
        assert_eq!(headers[CONTENT_TYPE], "application/grpc+proto");
        assert!(!headers.contains_key("grpc-status"));
        assert_eq!(&body[..], b"\0\0\0\0\x01z");
        assert_eq!(trailers.unwrap()["grpc-status"], "0");
    }

    #[tokio::test]
    async fn a_failed_call_goes_back_trailers_only_with_its_hints() {
        let h = reply(&[
            ("grpc-status", "14"),
            ("grpc-message", "stormrig fault"),
            ("grpc-retry-pushback-ms", "250"),
        ]);
        let (headers, body, trailers) = frames(relayed(200, &h, Bytes::new())).await;
        assert_eq!(headers["grpc-status"], "14");
        assert_eq!(headers["grpc-message"], "stormrig fault");
        assert_eq!(headers["grpc-retry-pushback-ms"], "250");
        assert_eq!(headers[CONTENT_TYPE], GRPC_CONTENT_TYPE);
        assert!(body.is_empty() && trailers.is_none());
        // No status at all: as a gRPC client reads it.
        let (headers, ..) = frames(relayed(200, &reply(&[]), Bytes::new())).await;
        assert_eq!(headers["grpc-status"], "13");
        let (headers, ..) = frames(relayed(503, &reply(&[]), Bytes::new())).await;
        assert_eq!(headers["grpc-status"], "14");
    }

    #[tokio::test]
    async fn the_layers_own_failures_take_the_mapped_status() {
        let (headers, body, trailers) =
            frames(failed(StatusCode::GATEWAY_TIMEOUT, "next hop timed out\n")).await;
        assert_eq!(headers["grpc-status"], "14");
        assert_eq!(headers["grpc-message"], "next hop timed out");
        assert!(body.is_empty() && trailers.is_none());
    }

    #[test]
    fn the_inherited_deadline_is_the_calls_timeout() {
        let mut h = HeaderMap::new();
        assert_eq!(inherited(&h), None);
        h.insert("grpc-timeout", HeaderValue::from_static("250m"));
        assert_eq!(inherited(&h), Some(Duration::from_millis(250)));
    }
}
