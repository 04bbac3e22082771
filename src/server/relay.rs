//! The forward of one request to the real server behind the proxy, and the relay of its
//! answer: over a pooled keep-alive client (hyper-util legacy `Client`). Every header
//! but the hop-by-hop ones is passed on, so `x-stormrig-request`, `x-stormrig-attempt` and
//! `idempotency-key` reach the real server's logs. The upstream response (status,
//! headers, body, its own 5xx included) is relayed back; the body is buffered whole, so
//! that an upstream that closes mid-response is seen as a failure (502) instead of a
//! truncated 200. What is buffered is bounded: a body (request or response) longer than
//! [`MAX_BODY`] (1 MiB) is not relayed. A request body beyond it is answered 413; a
//! response body beyond it is cut off (the upstream connection closed) and answered 502
//! with `x-stormrig-upstream: body-too-large`, counted as `body_too_large`. Memory per
//! request is thus at most [`MAX_BODY`], whatever the upstream sends (an endless chunked
//! body included), and the proxy's at most that times the requests it has in flight.
//! Interim (1xx) answers are bounded too: past [`MAX_INFORMATIONAL`] of them before the
//! final answer, the exchange is abandoned (its upstream connection closed) and answered
//! 502 with `x-stormrig-upstream: protocol-error`, counted as `protocol_errors`. hyper's
//! HTTP/1 client skips 1xx answers in a loop of its own (`Client::parse` in
//! hyper-1.12.0 `src/proto/h1/role.rs`, "Loop to skip information status code headers")
//! with no limit, so an upstream that sends `100 Continue` without end would keep a core
//! busy until the upstream timeout; the proxy counts them with `hyper::ext::on_informational`.
//! Other upstream elements are bounded by hyper and h2 themselves: a response head by
//! hyper's read buffer (~400 KiB, then an error: 502), a head trickled byte by byte by the
//! upstream timeout; over HTTP/2, header blocks by h2's header list size limit and its
//! count of CONTINUATION frames (h2-0.4.20 `src/codec/framed_read.rs` lines 331-332), and
//! PING and SETTINGS floods by h2 holding one pending PONG or SETTINGS ACK at a time and
//! reading no further frame until it is written (`src/proto/ping_pong.rs` lines 97-132,
//! `src/proto/settings.rs`): a flood costs the upstream its own writes, not the proxy
//! unbounded memory.
//!
//! A gRPC call (`content-type: application/grpc...`, over HTTP/2) is relayed as one: the
//! upstream's trailers are kept with its body and written back after it by
//! [`super::grpc::answer`] (a trailers-only answer keeps its status in its headers);
//! `te: trailers` goes with the call, and `grpc-timeout` shortened by the time the call
//! spent at the proxy. Each gateway answer below carries, for a call, the gRPC status it
//! stands for, and goes back trailers-only: UNAVAILABLE for a connect or TLS failure or an
//! upstream that closed early, DEADLINE_EXCEEDED for the upstream timeout,
//! RESOURCE_EXHAUSTED for a body too large, INTERNAL for a protocol error, and UNIMPLEMENTED
//! for an answer of more than one message (a server-streaming method, not relayed).
//!
//! Counting: `forwarded` counts requests the upstream received: a forward that ended with
//! a response, a broken connection or a timeout after the connection was made. A connect
//! error (refused, unreachable) is not forwarded. `executions` counts forwarded non-GET/HEAD
//! requests (`duplicate_executions` per `x-stormrig-request`). A forward in progress at
//! [`super::TargetHandle::shutdown`] is abandoned and may be uncounted.
//!
//! Resets are relayed as resets ([`UpstreamReset`]): an upstream that resets the connection
//! or closes it before a whole response (HTTP/1.1) gets the client's connection closed
//! without an answer, an RST_STREAM or GOAWAY (HTTP/2) gets the client's stream reset with
//! the same code; each is forwarded and counted as an upstream reset, not as an answer.
//!
//! Gateway errors, counted in `responses_by_status` like any answer: connection refused,
//! or a response that does not parse → **502**; no complete response within
//! the upstream timeout ([`super::proxy::ProxyOptions::upstream_timeout`], default 30 s) → **504** with
//! `x-stormrig-upstream: timeout`, counted as `upstream_timeouts`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TE};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::counters::{Counters, Trouble};
use super::frame_budget::BudgetedConnector;
use super::grpc;
use super::Resp;
pub use crate::headers::MAX_INFORMATIONAL;
use crate::metrics::ProxyAnswer;
use crate::policy::GrpcStatus;
use crate::scenario::Protocol;

/// An upstream answer read whole: its head, body and trailers.
type Exchanged = (hyper::http::response::Parts, Bytes, Option<HeaderMap>);
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The longest request or response body the proxy buffers to relay (bytes).
pub const MAX_BODY: usize = 1 << 20;

/// The HTTP version and TLS of the proxy's upstream side.
#[derive(Debug, Clone, Default)]
pub struct UpstreamWire {
    pub protocol: Protocol,
    /// TLS configuration and the name the certificate must carry (the url's host).
    pub tls: Option<(Arc<rustls::ClientConfig>, String)>,
}

/// The real server behind the proxy.
pub(crate) struct Upstream {
    client: Client<BudgetedConnector<HttpsConnector<HttpConnector>>, Full<Bytes>>,
    addr: SocketAddr,
    /// `http` or `https`.
    scheme: &'static str,
    /// Whether it speaks HTTP/2: a request's authority is then `:authority` alone.
    h2: bool,
    timeout: Duration,
}

/// A 502 the proxy made itself, marked (`x-stormrig-upstream: MARK`) so that the client and
/// the counts tell it from the service's own answers.
fn marked(why: &str, value: &'static str) -> Resp {
    let mut resp = gateway(StatusCode::BAD_GATEWAY, why);
    mark(&mut resp, value);
    resp
}

/// Marks an answer the proxy made itself: `x-stormrig-upstream: VALUE`.
fn mark(resp: &mut Resp, value: &'static str) {
    resp.headers_mut()
        .insert(crate::headers::UPSTREAM, HeaderValue::from_static(value));
}

/// The answer to an exchange that failed before a complete response: a connect or TLS
/// handshake that failed never reached the service (not forwarded); anything later did, and
/// an upstream reset is relayed as a reset.
fn failed_exchange(
    counters: &Counters,
    e: &(dyn std::error::Error + Send + Sync + 'static),
) -> (Resp, bool, Option<(GrpcStatus, &'static str)>) {
    let connect = e
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .is_some_and(|e| e.is_connect());
    // What a gRPC client makes of each when it talks to the server itself: UNAVAILABLE.
    let unavailable = |why| Some((GrpcStatus::Unavailable, why));
    if connect && crate::tls::is_handshake_failure(e) {
        counters.proxy_answered(ProxyAnswer::TlsHandshake);
        let why = format!("upstream TLS handshake failed: {}", crate::tls::describe(e));
        let resp = marked(&why, crate::headers::UPSTREAM_TLS_HANDSHAKE);
        (
            resp,
            false,
            unavailable("stormrig proxy: upstream TLS handshake failed"),
        )
    } else if connect {
        counters.proxy_answered(ProxyAnswer::ConnectFailed);
        let why = "upstream connect failed";
        let resp = marked(why, crate::headers::UPSTREAM_CONNECT_FAILED);
        (
            resp,
            false,
            unavailable("stormrig proxy: upstream connect failed"),
        )
    } else {
        counters.forward();
        let mut resp = gateway(
            StatusCode::BAD_GATEWAY,
            "upstream closed or reset before a complete response",
        );
        match UpstreamReset::of(e) {
            Some(reset) => {
                resp.extensions_mut().insert(reset);
            }
            // An answer that did not parse, or an HTTP/2 connection that broke the protocol
            // or spent its frame budget ([`super::frame_budget`]): the proxy answers for
            // it, marked and counted.
            None => {
                counters.trouble_seen(Trouble::ProtocolError);
                counters.proxy_answered(ProxyAnswer::ProtocolError);
                mark(&mut resp, crate::headers::UPSTREAM_PROTOCOL_ERROR);
            }
        }
        (
            resp,
            true,
            unavailable("stormrig proxy: upstream closed before a complete answer"),
        )
    }
}

/// Headers that belong to one connection, not to the message (RFC 9110 §7.6.1).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for n in named {
        headers.remove(n);
    }
    for n in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(n);
    }
    // The relayed body is whole: hyper writes its length.
    headers.remove(CONTENT_LENGTH);
}

fn gateway(status: StatusCode, why: &str) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(format!("stormrig proxy: {why}\n"))));
    *r.status_mut() = status;
    r
}

/// The upstream reset the request instead of answering: its connection was reset or cut
/// before a whole response head (HTTP/1.1), or its stream reset (RST_STREAM) or refused by a
/// GOAWAY (HTTP/2). The proxy does to its client what the upstream did to it: it closes the
/// client's connection without an answer (HTTP/1.1) or resets the client's stream with the
/// same code (HTTP/2), so the client's outcome is the one it would have had without the
/// proxy (`reset`, `stream-reset`). Carried as an extension of the gateway answer it stands
/// for, which is never sent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UpstreamReset(Option<h2::Reason>);

impl UpstreamReset {
    /// The reset `e` stands for, if it is one. A response that did not parse stays a
    /// gateway error (502): the upstream answered, badly, and did not reset anything.
    fn of(e: &(dyn std::error::Error + 'static)) -> Option<UpstreamReset> {
        let mut next = Some(e);
        while let Some(e) = next {
            if let Some(h2e) = e.downcast_ref::<h2::Error>() {
                // The upstream's own RST_STREAM or GOAWAY; one h2 sent itself (the upstream
                // broke the protocol, as with an endless CONTINUATION) is a protocol error.
                if (h2e.is_reset() || h2e.is_go_away()) && h2e.is_remote() {
                    return Some(UpstreamReset(h2e.reason()));
                }
            }
            if let Some(he) = e.downcast_ref::<hyper::Error>() {
                if he.is_incomplete_message() {
                    return Some(UpstreamReset(None));
                }
                if he.is_parse() {
                    return None;
                }
            }
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
                if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe) {
                    return Some(UpstreamReset(None));
                }
            }
            next = e.source();
        }
        None
    }

    /// The RST_STREAM code to reset the client's stream with (HTTP/2).
    pub(crate) fn code(self) -> Option<h2::Reason> {
        self.0
    }
}

/// Counts the interim answers the upstream sends to `req`; the returned `Notify` is woken
/// (a permit is stored) once there are more than [`MAX_INFORMATIONAL`].
fn bound_interim_answers(req: &mut Request<Full<Bytes>>) -> Arc<tokio::sync::Notify> {
    let tripped = Arc::new(tokio::sync::Notify::new());
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let trip = tripped.clone();
    hyper::ext::on_informational(req, move |_| {
        if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == MAX_INFORMATIONAL {
            trip.notify_one();
        }
    });
    tripped
}

impl Upstream {
    pub(crate) fn new(addr: SocketAddr, timeout: Duration, wire: &UpstreamWire) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        // The connector's own address is the resolved one; the certificate is checked
        // against the url's host.
        connector.enforce_http(false);
        let (mut config, name) = match &wire.tls {
            Some((config, name)) => ((**config).clone(), crate::tls::server_name(name)),
            // Clear text: the TLS side is never used (the scheme is http).
            None => (
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
                None,
            ),
        };
        // The connector offers the ALPN names of the versions enabled below.
        config.alpn_protocols.clear();
        let mut builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http();
        if let Some(name) = name {
            builder =
                builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
        }
        let h2 = wire.protocol.is_h2();
        let https = if h2 {
            builder.enable_http2().wrap_connector(connector)
        } else {
            builder.enable_http1().wrap_connector(connector)
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http2_only(h2)
            .build(BudgetedConnector { inner: https, h2 });
        Upstream {
            client,
            addr,
            scheme: if wire.tls.is_some() { "https" } else { "http" },
            h2,
            timeout,
        }
    }

    /// Sends the request upstream and returns the answer to relay (or the gateway error
    /// standing for it) and whether the upstream received the request; counts `forwarded`.
    /// `arrived`: when the request reached the proxy, so that a gRPC call's `grpc-timeout`
    /// goes on shortened by the time spent here (faults' latency, slots).
    pub(crate) async fn forward(
        &self,
        counters: &Counters,
        parts: hyper::http::request::Parts,
        body: Bytes,
        arrived: tokio::time::Instant,
    ) -> (Resp, bool) {
        let call = grpc::has_grpc_content(&parts.headers);
        let (mut resp, forwarded, status) = self.exchange(counters, parts, body, arrived).await;
        if let (true, Some((status, why))) = (call, status) {
            grpc::gateway_status(&mut resp, status, why);
        }
        (resp, forwarded)
    }

    /// [`Upstream::forward`] as HTTP sees it; with a gateway answer, the gRPC status it
    /// stands for (used when the request is a gRPC call).
    async fn exchange(
        &self,
        counters: &Counters,
        parts: hyper::http::request::Parts,
        body: Bytes,
        arrived: tokio::time::Instant,
    ) -> (Resp, bool, Option<(GrpcStatus, &'static str)>) {
        let path = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let uri: Uri = match format!("{}://{}{}", self.scheme, self.addr, path).parse() {
            Ok(u) => u,
            Err(_) => {
                counters.proxy_answered(ProxyAnswer::ProtocolError);
                let why = "bad request target";
                let status = Some((GrpcStatus::Internal, "stormrig proxy: bad request target"));
                return (gateway(StatusCode::BAD_GATEWAY, why), false, status);
            }
        };
        let call = grpc::has_grpc_content(&parts.headers);
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = parts.method;
        *req.uri_mut() = uri;
        *req.headers_mut() = parts.headers;
        strip_hop_by_hop(req.headers_mut());
        if self.h2 {
            // HTTP/2 names the authority in `:authority`, from the upstream's URI: a `host`
            // header passed on beside it is a second one, which servers refuse (nginx:
            // "client sent duplicate host header", 400).
            req.headers_mut().remove(hyper::header::HOST);
        }
        if call {
            // gRPC servers want `te: trailers` (the one TE value HTTP/2 carries), and the
            // call's deadline shortened by what the proxy spent of it.
            req.headers_mut()
                .insert(TE, HeaderValue::from_static("trailers"));
            grpc::shorten_timeout(req.headers_mut(), arrived.elapsed());
        }
        let too_many_interim = bound_interim_answers(&mut req);

        let exchange = async {
            let resp = self.client.request(req).await?;
            let (parts, body) = resp.into_parts();
            // Bounded: past MAX_BODY the body is dropped (and its connection with it).
            let collected = http_body_util::Limited::new(body, MAX_BODY)
                .collect()
                .await?;
            let trailers = collected.trailers().cloned();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((
                parts,
                collected.to_bytes(),
                trailers,
            ))
        };
        let bounded = async {
            tokio::select! {
                r = tokio::time::timeout(self.timeout, exchange) => Some(r),
                () = too_many_interim.notified() => None,
            }
        };
        let Some(result) = bounded.await else {
            // Dropping the exchange closes its upstream connection: hyper's connection task
            // sees its response receiver gone the next time it yields.
            counters.forward();
            counters.trouble_seen(Trouble::ProtocolError);
            counters.proxy_answered(ProxyAnswer::TooManyInterim);
            let why = format!("upstream sent more than {MAX_INFORMATIONAL} interim (1xx) answers");
            let resp = marked(&why, crate::headers::UPSTREAM_PROTOCOL_ERROR);
            let status = (
                GrpcStatus::Internal,
                "stormrig proxy: upstream protocol error",
            );
            return (resp, true, Some(status));
        };
        settle(counters, call, result)
    }
}

/// What the proxy answers once the exchange ended (or its timeout did): the upstream's
/// answer, or the gateway answer standing for what went wrong; whether the upstream
/// received the request; and, for a gateway answer, the gRPC status it stands for.
fn settle(
    counters: &Counters,
    call: bool,
    result: Result<Result<Exchanged, BoxError>, tokio::time::error::Elapsed>,
) -> (Resp, bool, Option<(GrpcStatus, &'static str)>) {
    match result {
        Ok(Ok((_, bytes, _))) if call && grpc::messages(&bytes).is_some_and(|n| n > 1) => {
            // A unary call has one answer message: an answer of several (a server-
            // streaming method) is refused, as the proxy buffers an answer whole to see
            // it end, which would deliver a stream's messages all at once, late, and
            // hold a long stream in memory up to MAX_BODY.
            counters.forward();
            counters.trouble_seen(Trouble::ProtocolError);
            counters.proxy_answered(ProxyAnswer::ProtocolError);
            let why = "the upstream answered a gRPC call with more than one message";
            let resp = marked(why, crate::headers::UPSTREAM_PROTOCOL_ERROR);
            let status = (
                GrpcStatus::Unimplemented,
                "stormrig proxy: server-streaming calls are not relayed, unary calls only",
            );
            (resp, true, Some(status))
        }
        Ok(Ok((mut parts, bytes, trailers))) => {
            counters.forward();
            strip_hop_by_hop(&mut parts.headers);
            let mut resp = Response::from_parts(parts, Full::new(bytes));
            if call {
                resp.extensions_mut().insert(grpc::Relayed(trailers));
            }
            (resp, true, None)
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            counters.forward();
            counters.trouble_seen(Trouble::BodyTooLarge);
            counters.proxy_answered(ProxyAnswer::BodyTooLarge);
            let why = format!("upstream response body longer than {MAX_BODY} bytes");
            let resp = marked(&why, crate::headers::UPSTREAM_BODY_TOO_LARGE);
            let status = (
                GrpcStatus::ResourceExhausted,
                "stormrig proxy: upstream answer too large to relay",
            );
            (resp, true, Some(status))
        }
        Ok(Err(e)) => failed_exchange(counters, e.as_ref()),
        Err(_) => {
            counters.forward();
            counters.trouble_seen(Trouble::Timeout);
            counters.proxy_answered(ProxyAnswer::Timeout);
            let mut resp = gateway(StatusCode::GATEWAY_TIMEOUT, "upstream timed out");
            mark(&mut resp, crate::headers::UPSTREAM_TIMEOUT);
            let status = (
                GrpcStatus::DeadlineExceeded,
                "stormrig proxy: upstream timed out",
            );
            (resp, true, Some(status))
        }
    }
}
