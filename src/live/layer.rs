//! Layer proxies for multi-hop topologies: load generator → layer 1 → … → layer L → target.
//!
//! Each layer is a hyper HTTP/1.1 server on loopback (HTTP/2 in clear for a gRPC storm, whose
//! calls need HTTP/2's trailers) with its own [`ConfigRuntime`] (the layer's retry config, or
//! a pass-through one) whose `base_uri` is the next hop. Per request arriving at a layer, in
//! order:
//! 1. the arrival is counted and the request goes in flight (an RAII guard keeps the peak
//!    exact and takes it out of flight however the request ends);
//! 2. beyond the layer's `concurrency` the request is answered 503 at once (counted as
//!    rejected, never forwarded);
//! 3. the layer's own service time is waited (sampled per (request, attempt) from the seed);
//! 4. `x-stormrig-deadline-ms`, when present, is the inherited deadline (for a gRPC call,
//!    also its `grpc-timeout`, the shorter of the two): every layer honours it, so no attempt
//!    is started without time left and no attempt outlives it;
//! 5. one logical request is driven through the layer's retry config to the next hop, with
//!    request id `incoming_request × 1024 + incoming_attempt` (wrapping): unique per
//!    (incoming request, incoming attempt) as long as attempts stay below 1024, which the
//!    policy's attempt caps do;
//! 6. the final reply is relayed upstream: a response keeps its status, body and retry
//!    hints (`retry-after`, `x-amz-retry-after`, `x-amzn-errortype`,
//!    `grpc-retry-pushback-ms`); a transport failure becomes 504 (timeouts) or 502 (reset,
//!    refused, protocol); giving up before any attempt becomes 504 for the deadline, else 503.
//!    A gRPC call's reply goes back in gRPC's form ([`super::layer_grpc`]): the next hop's
//!    status, message and trailers as they came, the layer's own failures trailers-only.
//!    The layer's client reads a gRPC reply by its `grpc-status`, so its retry config
//!    retries the gRPC statuses it names, as the generator's does.
//!
//! Cancellation: a caller that gives up on an attempt (its per-try timeout, or its own
//! caller's cancellation) closes the connection, and the layer drops its work on that
//! attempt at once: the service wait, any retry not yet sent, and the attempt in flight
//! (whose connection closes in turn, so the cancellation runs down the chain to the target,
//! which alone finishes the work it accepted). The layer's policy is told that the dropped
//! request ended (the driver's guard abandons it), so what it held is given back; its
//! recorder counts no ending. This is hyper's behaviour for an HTTP/1 connection closed mid-request
//! without half-close (the handler's future is dropped), set explicitly below, and for an
//! HTTP/2 stream the caller resets (hyper's server drops the handler of a reset stream); the
//! simulator models the same (`crate::sim`'s `hop` module).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::clock::Epoch;
use super::driver::{ConfigRuntime, RequestTemplate};
use super::http::{Reply, ReplyHeader};
use super::layer_grpc::{self, LayerBody};
use crate::draws::{draw, SALT_LAYER_SERVICE};
use crate::headers;
use crate::metrics::LayerSummary;
use crate::policy::{GiveUpReason, TransportError};
use crate::scenario::timeline::sample;
use crate::scenario::Dist;

/// Multiplier of the incoming request id in the id a layer sends downstream.
pub const REQUEST_ID_STRIDE: u64 = 1024;

/// Headers never copied from the incoming request to the next hop: hop-by-hop ones and
/// stormrig's own, which the layer's client sets itself.
const NOT_FORWARDED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "te",
    "upgrade",
    "proxy-connection",
    headers::REQUEST,
    headers::ATTEMPT,
    headers::DEADLINE_MS,
    headers::IDEMPOTENCY_KEY,
    // A gRPC call's deadline is inherited; the layer's client sends what remains of it.
    headers::GRPC_TIMEOUT,
];

/// Response headers relayed upstream with a layer's final reply (the retry hints).
const RELAYED: &[ReplyHeader] = &[
    ReplyHeader::RetryAfter,
    ReplyHeader::AmzRetryAfter,
    ReplyHeader::ErrorType,
    ReplyHeader::GrpcPushbackMs,
    ReplyHeader::ContentType,
];

/// One running layer of one compared config's chain.
pub struct Layer {
    pub name: String,
    /// The layer's client: its retry config, pointed at the next hop.
    pub rt: Arc<ConfigRuntime>,
    pub service_time: Option<Dist>,
    pub concurrency: Option<u32>,
    pub seed: u64,
    /// Requests that arrived at this layer's server.
    pub arrivals: AtomicU64,
    /// Requests answered 503 at once for the layer's concurrency limit.
    pub rejected: AtomicU64,
    pub in_flight: AtomicU64,
    pub peak_in_flight: AtomicU64,
    /// The storm's calls are gRPC's: served over HTTP/2 in clear, relayed in gRPC's form.
    pub grpc: bool,
}

impl Layer {
    pub fn new(
        name: String,
        rt: Arc<ConfigRuntime>,
        service_time: Option<Dist>,
        concurrency: Option<u32>,
        seed: u64,
    ) -> Self {
        Layer {
            name,
            rt,
            service_time,
            concurrency,
            seed,
            arrivals: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            peak_in_flight: AtomicU64::new(0),
            grpc: false,
        }
    }

    /// The same layer relaying gRPC calls (see the module docs).
    pub fn relaying_grpc(self, grpc: bool) -> Self {
        Layer { grpc, ..self }
    }

    /// This layer's counts; `upstream` = the generator's upstream requests.
    pub fn summary(&self, upstream: u64) -> LayerSummary {
        let arrivals = self.arrivals.load(Ordering::SeqCst);
        let (attempts, retries, budget_refusals, max_attempts) = self.rt.with(|g| {
            let (a, r, b) = totals(g.recorder());
            (a, r, b, g.config().max_attempts)
        });
        layer_summary(
            &self.name,
            arrivals,
            attempts,
            retries,
            budget_refusals,
            self.peak_in_flight.load(Ordering::SeqCst),
            upstream,
            max_attempts,
        )
    }
}

pub use crate::run_result::{layer_summary, totals};

/// A running layer proxy.
pub struct LayerHandle {
    addr: SocketAddr,
    pub layer: Arc<Layer>,
    shutdown: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
}

impl LayerHandle {
    /// The address the layer listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and drops every connection and request still in flight.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(a) = self.accept.take() {
            let _ = a.await;
        }
    }
}

impl Drop for LayerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// Binds `bind` (port 0 picks a free port) and serves `layer` in the background.
pub async fn start(
    bind: SocketAddr,
    layer: Arc<Layer>,
    epoch: Epoch,
) -> std::io::Result<LayerHandle> {
    let listener = TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = watch::channel(false);
    let accept = tokio::spawn(accept_loop(listener, Arc::clone(&layer), epoch, rx));
    Ok(LayerHandle {
        addr,
        layer,
        shutdown: tx,
        accept: Some(accept),
    })
}

async fn accept_loop(
    listener: TcpListener,
    layer: Arc<Layer>,
    epoch: Epoch,
    mut stop: watch::Receiver<bool>,
) {
    // Dropping the set at the end aborts every connection task still running.
    let mut conns = JoinSet::new();
    loop {
        let stream = tokio::select! {
            stream = crate::server::next_connection(&listener) => stream,
            _ = stop.changed() => break,
        };
        let _ = stream.set_nodelay(true);
        let layer = Arc::clone(&layer);
        conns.spawn(async move {
            let grpc = layer.grpc;
            let svc = service_fn(move |req| handle(Arc::clone(&layer), epoch, req));
            let io = TokioIo::new(stream);
            let _ = match grpc {
                true => {
                    http2::Builder::new(TokioExecutor::new())
                        .serve_connection(io, svc)
                        .await
                }
                false => {
                    http1::Builder::new()
                        .keep_alive(true)
                        // A caller that closes its side cancels the request (see the module docs).
                        .half_close(false)
                        .serve_connection(io, svc)
                        .await
                }
            };
        });
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// Keeps one request in flight at a layer, with an exact peak.
struct InFlight<'a>(&'a Layer);

impl<'a> InFlight<'a> {
    fn enter(layer: &'a Layer) -> (Self, u64) {
        let n = layer.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        layer.peak_in_flight.fetch_max(n, Ordering::SeqCst);
        (InFlight(layer), n)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn parse_u64(h: &HeaderMap, name: &str) -> Option<u64> {
    headers::parse_u64(h.get(name)?.as_bytes())
}

async fn handle(
    layer: Arc<Layer>,
    epoch: Epoch,
    req: Request<Incoming>,
) -> Result<Response<LayerBody>, Infallible> {
    let arrived = epoch.elapsed();
    layer.arrivals.fetch_add(1, Ordering::SeqCst);
    let (_guard, n) = InFlight::enter(&layer);
    let grpc = layer.grpc;
    let status = |code, why| status(grpc, code, why);
    if layer.concurrency.is_some_and(|c| n > u64::from(c)) {
        layer.rejected.fetch_add(1, Ordering::SeqCst);
        return Ok(status(
            StatusCode::SERVICE_UNAVAILABLE,
            "layer at its concurrency limit\n",
        ));
    }
    let (parts, body) = req.into_parts();
    let request = parse_u64(&parts.headers, headers::REQUEST).unwrap_or(0);
    let attempt = parse_u64(&parts.headers, headers::ATTEMPT).unwrap_or(1);
    let propagated = parse_u64(&parts.headers, headers::DEADLINE_MS).map(Duration::from_millis);
    let inherited = match (
        propagated,
        grpc.then(|| layer_grpc::inherited(&parts.headers)),
    ) {
        (Some(a), Some(Some(b))) => Some(a.min(b)),
        (a, b) => a.or(b.flatten()),
    };
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST, "unreadable body\n")),
    };
    if let Some(d) = &layer.service_time {
        let u = draw(layer.seed, request, attempt as u32, SALT_LAYER_SERVICE);
        let u2 = draw(layer.seed, request, attempt as u32, SALT_LAYER_SERVICE + 1);
        let t = sample(d, u, u2);
        if !t.is_zero() {
            tokio::time::sleep(t).await;
        }
    }
    let mut fwd = HeaderMap::new();
    for (k, v) in &parts.headers {
        if !NOT_FORWARDED.contains(&k.as_str()) {
            fwd.append(k.clone(), v.clone());
        }
    }
    if grpc {
        fwd.insert(hyper::header::TE, HeaderValue::from_static("trailers"));
    }
    let tmpl = RequestTemplate {
        method: parts.method,
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".into()),
        headers: fwd,
        body,
        grpc,
        class: None,
        tokens: None,
    };
    let id = request
        .wrapping_mul(REQUEST_ID_STRIDE)
        .wrapping_add(attempt.min(REQUEST_ID_STRIDE - 1));
    let fin = layer.rt.drive(&epoch, &tmpl, id, arrived, inherited).await;
    Ok(match fin.reply {
        Some(Reply::Response {
            status: code,
            headers: h,
            body,
        }) if grpc => layer_grpc::relayed(code, &h, body),
        Some(Reply::Response {
            status: code,
            headers: h,
            body,
        }) => {
            let mut r = Response::new(LayerBody::Whole(Some(body)));
            *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
            for header in RELAYED {
                if let Some(v) = h.value(*header) {
                    r.headers_mut()
                        .insert(HeaderName::from_static(header.name()), v);
                }
            }
            r
        }
        Some(Reply::Failed(e)) => match e {
            TransportError::PerTryTimeout
            | TransportError::ReadTimeout
            | TransportError::ConnectTimeout => {
                status(StatusCode::GATEWAY_TIMEOUT, "next hop timed out\n")
            }
            _ => status(StatusCode::BAD_GATEWAY, "next hop failed\n"),
        },
        None if fin.reason == Some(GiveUpReason::Deadline) => status(
            StatusCode::GATEWAY_TIMEOUT,
            "no time left before the deadline\n",
        ),
        None => status(StatusCode::SERVICE_UNAVAILABLE, "layer refused to send\n"),
    })
}

/// The layer's own answer: `code` with `body` as text, or for a gRPC call, trailers-only
/// with the gRPC status `code` maps to and `body` as its message.
fn status(grpc: bool, code: StatusCode, body: &'static str) -> Response<LayerBody> {
    if grpc {
        return layer_grpc::failed(code, body);
    }
    let mut r = Response::new(LayerBody::Whole(Some(Bytes::from_static(body.as_bytes()))));
    *r.status_mut() = code;
    r.headers_mut().insert(
        HeaderName::from_static("content-type"),
        HeaderValue::from_static("text/plain"),
    );
    r
}
