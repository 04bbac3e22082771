//! The built-in target answering gRPC calls as a gRPC server does: HTTP 200 whatever
//! happened, the outcome in `grpc-status`. A served call gets one (empty) message and the
//! trailers `grpc-status: 0`; a fault or a shed call gets a trailers-only answer (its
//! status and `grpc-retry-pushback-ms` in the one HEADERS frame that ends the stream),
//! which is how real servers fail a call before answering it.
//!
//! Every other step (arrival, fault verdict, service, counting) is the same as for plain
//! HTTP; only the answer's form changes here, at the very end.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use std::time::Duration;

use super::delivery::Delivered;
use super::Resp;
use crate::headers::{
    GRPC_CONTENT_TYPE, H_GRPC_MESSAGE as GRPC_MESSAGE, H_GRPC_PUSHBACK_MS as GRPC_PUSHBACK,
    H_GRPC_STATUS as GRPC_STATUS,
};
use crate::policy::GrpcStatus;

/// One empty message, length-prefixed: what a served call answers.
const EMPTY_MESSAGE: &[u8] = &[0, 0, 0, 0, 0];

/// True when `req` is a gRPC call (`content-type: application/grpc[+proto|...]`).
pub(crate) fn is_call(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(GRPC_CONTENT_TYPE.as_bytes()))
}

/// The answer of a `grpc-status` fault (counted by the caller as HTTP 200, not served).
pub(crate) fn fault_response(status: GrpcStatus, pushback: Option<Duration>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::new()));
    let h = r.headers_mut();
    h.insert(GRPC_STATUS, HeaderValue::from(u16::from(status.code())));
    h.insert(GRPC_MESSAGE, HeaderValue::from_static("stormrig fault"));
    if let Some(p) = pushback {
        h.insert(GRPC_PUSHBACK, HeaderValue::from(p.as_millis() as u64));
    }
    r
}

/// `resp`, the target's plain answer to a gRPC call, in gRPC's form: a fault's answer
/// (it carries `grpc-status`) trailers-only; 200 a message and `grpc-status: 0` trailers;
/// any other HTTP status trailers-only with the status gRPC maps it to (503 UNAVAILABLE).
pub(crate) fn answer(resp: Resp) -> Response<Delivered> {
    let (mut parts, _) = resp.into_parts();
    let grpc_content = HeaderValue::from_static(GRPC_CONTENT_TYPE);
    if !parts.headers.contains_key(GRPC_STATUS) {
        match GrpcStatus::from_http(parts.status.as_u16()) {
            None => {
                parts.headers.insert(CONTENT_TYPE, grpc_content);
                let mut trailers = HeaderMap::with_capacity(1);
                trailers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
                return Response::from_parts(
                    parts,
                    Delivered::Trailed {
                        data: Some(Bytes::from_static(EMPTY_MESSAGE)),
                        trailers: Some(trailers),
                    },
                );
            }
            Some(status) => {
                let why = parts.status.canonical_reason().unwrap_or("error");
                parts
                    .headers
                    .insert(GRPC_STATUS, HeaderValue::from(u16::from(status.code())));
                if let Ok(v) = HeaderValue::from_str(why) {
                    parts.headers.insert(GRPC_MESSAGE, v);
                }
            }
        }
    }
    parts.status = StatusCode::OK;
    parts.headers.insert(CONTENT_TYPE, grpc_content);
    Response::from_parts(parts, Delivered::Whole(Full::new(Bytes::new())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn frames(r: Response<Delivered>) -> (StatusCode, HeaderMap, Bytes, Option<HeaderMap>) {
        let (parts, body) = r.into_parts();
        let collected = body.collect().await.unwrap();
        let trailers = collected.trailers().cloned();
        (parts.status, parts.headers, collected.to_bytes(), trailers)
    }

    fn plain(status: StatusCode) -> Resp {
        let mut r = Response::new(Full::new(Bytes::from_static(b"ok\n")));
        *r.status_mut() = status;
        r
    }

    #[tokio::test]
    async fn served_calls_get_a_message_and_ok_trailers() {
        let (status, headers, body, trailers) = frames(answer(plain(StatusCode::OK))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[CONTENT_TYPE], "application/grpc");
        assert!(!headers.contains_key(GRPC_STATUS));
        assert_eq!(&body[..], EMPTY_MESSAGE);
        assert_eq!(trailers.unwrap()[GRPC_STATUS], "0");
    }

    #[tokio::test]
    async fn failures_are_trailers_only_with_http_200() {
        let (status, headers, body, trailers) =
            frames(answer(plain(StatusCode::SERVICE_UNAVAILABLE))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[GRPC_STATUS], "14");
        assert!(body.is_empty() && trailers.is_none());
        let fault = fault_response(
            GrpcStatus::ResourceExhausted,
            Some(Duration::from_millis(250)),
        );
        let (status, headers, body, _) = frames(answer(fault)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[GRPC_STATUS], "8");
        assert_eq!(headers[GRPC_PUSHBACK], "250");
        assert!(body.is_empty());
    }
}
