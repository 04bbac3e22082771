//! The built-in target answering gRPC calls as a gRPC server does: HTTP 200 whatever
//! happened, the outcome in `grpc-status`. A served call gets one (empty) message and the
//! trailers `grpc-status: 0`; a fault or a shed call gets a trailers-only answer (its
//! status and `grpc-retry-pushback-ms` in the one HEADERS frame that ends the stream),
//! which is how real servers fail a call before answering it.
//!
//! Every other step (arrival, fault verdict, service, counting) is the same as for plain
//! HTTP; only the answer's form changes here, at the very end. The fault proxy answers
//! through the same code: its faults and its own gateway answers take the trailers-only
//! form built here, while the real server's answer ([`Relayed`]) goes back as it came:
//! headers, DATA and trailers, or trailers-only.

use bytes::Bytes;
use http_body_util::Full;
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
pub(crate) fn is_call<B>(req: &Request<B>) -> bool {
    has_grpc_content(req.headers())
}

/// True when `headers` say the message is gRPC's (`content-type: application/grpc...`).
pub(crate) fn has_grpc_content(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(GRPC_CONTENT_TYPE.as_bytes()))
}

/// The real server's own answer to a call, relayed by the proxy: its trailers (where a
/// served call's `grpc-status` travels; `None` for a trailers-only answer, whose status is
/// in its headers). Carried as an extension of the relayed answer; [`answer`] writes them
/// back after its DATA.
#[derive(Clone, Debug)]
pub(crate) struct Relayed(pub(crate) Option<HeaderMap>);

/// The answer of a `grpc-status` fault (counted by the caller as HTTP 200, not served).
pub(crate) fn fault_response(status: GrpcStatus, pushback: Option<Duration>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::new()));
    set_status(r.headers_mut(), status, "stormrig fault");
    if let Some(p) = pushback {
        r.headers_mut()
            .insert(GRPC_PUSHBACK, HeaderValue::from(p.as_millis() as u64));
    }
    r
}

/// Gives an answer the proxy made itself (a gateway error) the gRPC status it stands for,
/// which [`answer`] then sends trailers-only: a gRPC client reads its call's outcome there,
/// never in the HTTP status.
pub(crate) fn gateway_status(resp: &mut Resp, status: GrpcStatus, why: &'static str) {
    set_status(resp.headers_mut(), status, why);
}

fn set_status(h: &mut HeaderMap, status: GrpcStatus, why: &'static str) {
    h.insert(GRPC_STATUS, HeaderValue::from(u16::from(status.code())));
    h.insert(GRPC_MESSAGE, HeaderValue::from_static(why));
}

/// Whether a relayed answer reports success: `grpc-status: 0` in its trailers (or, for a
/// trailers-only answer, its headers). A gRPC failure travels in an HTTP 200, so the proxy
/// counts a call served only when its status says so.
pub(crate) fn relayed_ok(resp: &Resp) -> bool {
    let in_trailers = resp
        .extensions()
        .get::<Relayed>()
        .and_then(|r| r.0.as_ref()?.get(GRPC_STATUS));
    resp.headers()
        .get(GRPC_STATUS)
        .or(in_trailers)
        .is_some_and(|v| v == "0")
}

/// How many length-prefixed messages `body` holds (`None` when its frames do not add up): a
/// unary call's answer holds one, a server-streaming call's any number.
pub(crate) fn messages(mut body: &[u8]) -> Option<usize> {
    let mut n = 0;
    while !body.is_empty() {
        let len = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
        body = body.get(5 + len..)?;
        n += 1;
    }
    Some(n)
}

/// The call's `grpc-timeout` once `spent` of it has gone by at the proxy: what remains, so
/// that the real server gives up when the client does, not later (gRPC's PROTOCOL-HTTP2:
/// the deadline travels as a remaining duration, which each hop must shorten by its own
/// time). An unreadable value is passed on as it came; a spent one as 1 ns.
pub(crate) fn shorten_timeout(headers: &mut HeaderMap, spent: Duration) {
    let Some(timeout) = headers
        .get(crate::headers::GRPC_TIMEOUT)
        .and_then(|v| crate::headers::parse_grpc_timeout(v.as_bytes()))
    else {
        return;
    };
    let left = timeout.saturating_sub(spent).max(Duration::from_nanos(1));
    headers.insert(
        crate::headers::GRPC_TIMEOUT,
        crate::headers::grpc_timeout(left),
    );
}

/// `resp`, the target's plain answer to a gRPC call, in gRPC's form: a fault's answer
/// (it carries `grpc-status`) trailers-only; 200 a message and `grpc-status: 0` trailers;
/// any other HTTP status trailers-only with the status gRPC maps it to (503 UNAVAILABLE).
/// The real server's answer relayed by the proxy ([`Relayed`]) goes back as it came.
pub(crate) async fn answer(mut resp: Resp) -> Response<Delivered> {
    if let Some(Relayed(trailers)) = resp.extensions_mut().remove::<Relayed>() {
        let (parts, body) = resp.into_parts();
        let data = match http_body_util::BodyExt::collect(body).await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let data = (!data.is_empty()).then_some(data);
        return Response::from_parts(parts, Delivered::Trailed { data, trailers });
    }
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
        let (status, headers, body, trailers) = frames(answer(plain(StatusCode::OK)).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[CONTENT_TYPE], "application/grpc");
        assert!(!headers.contains_key(GRPC_STATUS));
        assert_eq!(&body[..], EMPTY_MESSAGE);
        assert_eq!(trailers.unwrap()[GRPC_STATUS], "0");
    }

    #[tokio::test]
    async fn failures_are_trailers_only_with_http_200() {
        let (status, headers, body, trailers) =
            frames(answer(plain(StatusCode::SERVICE_UNAVAILABLE)).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[GRPC_STATUS], "14");
        assert!(body.is_empty() && trailers.is_none());
        let fault = fault_response(
            GrpcStatus::ResourceExhausted,
            Some(Duration::from_millis(250)),
        );
        let (status, headers, body, _) = frames(answer(fault).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[GRPC_STATUS], "8");
        assert_eq!(headers[GRPC_PUSHBACK], "250");
        assert!(body.is_empty());
    }

    #[tokio::test]
    async fn the_real_servers_answer_goes_back_as_it_came() {
        let mut trailers = HeaderMap::new();
        trailers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
        let mut r = Response::new(Full::new(Bytes::from_static(&[0, 0, 0, 0, 1, 7])));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/grpc+proto"),
        );
        r.extensions_mut().insert(Relayed(Some(trailers)));
        assert!(relayed_ok(&r));
        let (status, headers, body, trailers) = frames(answer(r).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[CONTENT_TYPE], "application/grpc+proto");
        assert_eq!(&body[..], &[0, 0, 0, 0, 1, 7]);
        assert_eq!(trailers.unwrap()[GRPC_STATUS], "0");

        // Trailers-only from the real server: its status in the headers, kept.
        let mut r = Response::new(Full::new(Bytes::new()));
        r.headers_mut()
            .insert(GRPC_STATUS, HeaderValue::from_static("14"));
        r.headers_mut()
            .insert(GRPC_PUSHBACK, HeaderValue::from_static("300"));
        r.extensions_mut().insert(Relayed(None));
        assert!(!relayed_ok(&r));
        let (_, headers, body, trailers) = frames(answer(r).await).await;
        assert_eq!(headers[GRPC_STATUS], "14");
        assert_eq!(headers[GRPC_PUSHBACK], "300");
        assert!(body.is_empty() && trailers.is_none());
    }

    #[tokio::test]
    async fn gateway_answers_take_the_status_they_stand_for() {
        let mut r = plain(StatusCode::GATEWAY_TIMEOUT);
        gateway_status(&mut r, GrpcStatus::DeadlineExceeded, "timed out");
        let (status, headers, body, _) = frames(answer(r).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[GRPC_STATUS], "4");
        assert!(body.is_empty());
    }

    #[test]
    fn messages_are_counted_by_their_length_prefixes() {
        assert_eq!(messages(b""), Some(0));
        assert_eq!(messages(EMPTY_MESSAGE), Some(1));
        assert_eq!(messages(&[0, 0, 0, 0, 1, 9, 0, 0, 0, 0, 0]), Some(2));
        assert_eq!(messages(&[0, 0, 0, 0, 2, 9]), None);
        assert_eq!(messages(&[0, 0, 0]), None);
    }

    #[test]
    fn the_deadline_goes_on_shortened_by_the_time_spent() {
        let t = |value: &'static str, spent_ms: u64| {
            let mut h = HeaderMap::new();
            h.insert(
                crate::headers::GRPC_TIMEOUT,
                HeaderValue::from_static(value),
            );
            shorten_timeout(&mut h, Duration::from_millis(spent_ms));
            h[crate::headers::GRPC_TIMEOUT]
                .to_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(t("1000m", 250), "750000u");
        assert_eq!(t("2S", 500), "1500000u");
        assert_eq!(t("100m", 250), "1n", "a spent deadline");
        assert_eq!(t("junk", 250), "junk", "unreadable: passed on");
        let mut none = HeaderMap::new();
        shorten_timeout(&mut none, Duration::from_millis(5));
        assert!(none.is_empty());
    }
}
